"""Figures of crawleval results: ``crawleval plot RESULT.json [...]`` and ``Result.plot()``.

Three kinds, from the JSON of ``crawleval run`` or ``crawleval fresh run`` (the same schema):

- ``rewards``: each policy's mean reward with its 95% interval, against the Lagrangian bound;
- ``series``: replication 0's reward per epoch, the discarded warm-up shaded, the bound as a line;
- ``sweep``: several results that differ in their budget, one curve per policy (with its
  interval) and the bound's curve.

``auto`` draws ``rewards`` and ``series`` side by side for one result and ``sweep`` for several.
This module needs only the standard library and matplotlib (``pip install crawleval[plot]``);
the command line runs it with ``python3`` (or ``$CRAWLEVAL_PYTHON``).
"""

from __future__ import annotations

# Modules under private names: the module's namespace is its API.
import argparse as _argparse
import json as _json
import math as _math
import os as _os
import stat as _stat
import sys as _sys
import tempfile as _tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = ["KINDS", "PlotError", "load", "check", "figure", "save", "main", "draw_rewards",
           "draw_series", "draw_sweep"]

KINDS = ("auto", "rewards", "series", "sweep")


class PlotError(ValueError):
    """A result that cannot be drawn (the message names the file and the field)."""


def load(path: str) -> Dict[str, Any]:
    """A crawleval result JSON, checked enough to be drawn."""
    try:
        with open(path) as f:
            data = _json.load(f)
    except OSError as e:
        raise PlotError(f"{path}: cannot read: {e.strerror}") from None
    except _json.JSONDecodeError as e:
        raise PlotError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
    return check(data, path)


def _is_number(v: Any) -> bool:
    """A finite JSON number (Python's json reads NaN and Infinity, which crawleval never writes
    and matplotlib cannot place)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and _math.isfinite(v)


def _expect(ok: bool, origin: str, field: str, what: str, value: Any) -> None:
    if not ok:
        shown = _json.dumps(value) if not isinstance(value, float) else repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        raise PlotError(f"{origin}: field '{field}' must be {what}, got {shown}")


def check(data: Any, origin: str) -> Dict[str, Any]:
    """`data` if it is a result that can be drawn; PlotError naming `origin` and the field
    otherwise (every field the figures read, with its type)."""
    if not isinstance(data, dict) or data.get("tool") != "crawleval":
        raise PlotError(f"{origin}: not a crawleval result (no \"tool\": \"crawleval\")")
    if data.get("command") not in ("run", "fresh run"):
        raise PlotError(f"{origin}: a '{data.get('command')}' result; crawleval plot draws the "
                        "results of 'run' and 'fresh run'")
    if not isinstance(data.get("policies"), list) or not data["policies"]:
        raise PlotError(f"{origin}: field 'policies' is missing or empty")
    for key in ("parameters", "population"):
        _expect(isinstance(data.get(key, {}), dict), origin, key, "an object", data.get(key))
    params = data.get("parameters") or {}
    _expect(params.get("budget") is None or _is_number(params["budget"]), origin,
            "parameters.budget", "a number", params.get("budget"))
    pop = data.get("population") or {}
    _expect(pop.get("sources") is None or _is_number(pop["sources"]), origin,
            "population.sources", "a number", pop.get("sources"))
    b = data.get("bound")
    _expect(b is None or isinstance(b, dict), origin, "bound", "an object or null", b)
    if isinstance(b, dict):
        _expect(b.get("value") is None or _is_number(b["value"]), origin, "bound.value",
                "a number or null", b.get("value"))
    for k, p in enumerate(data["policies"]):
        where = f"policies[{k}]"
        _expect(isinstance(p, dict), origin, where, "an object", p)
        for key in ("name", "mean_reward", "reward_series", "warm_up"):
            if key not in p:
                raise PlotError(f"{origin}: {where} has no field '{key}' (a result of an "
                                "older crawleval? run it again)")
        _expect(isinstance(p["name"], str), origin, f"{where}.name", "a string", p["name"])
        for key in ("mean_reward", "ci95_low", "ci95_high", "relative_gap_to_bound"):
            v = p.get(key)
            _expect(v is None or _is_number(v), origin, f"{where}.{key}", "a finite number or null",
                v)
        warm = p["warm_up"]
        _expect(warm is None or isinstance(warm, dict), origin, f"{where}.warm_up",
                "an object or null", warm)
        if isinstance(warm, dict):
            v = warm.get("burn_in")
            _expect(v is None or (_is_number(v) and v >= 0), origin, f"{where}.warm_up.burn_in",
                    "a number >= 0 or null", v)
        s = p["reward_series"]
        _expect(s is None or isinstance(s, dict), origin, f"{where}.reward_series",
                "an object or null", s)
        if isinstance(s, dict):
            values = s.get("values")
            _expect(values is None or (isinstance(values, list)
                                       and all(v is None or _is_number(v) for v in values)),
                    origin, f"{where}.reward_series.values", "a list of numbers", values)
            for key in ("first_epoch", "epochs_per_point"):
                v = s.get(key)
                _expect(v is None or (_is_number(v) and v >= 0), origin,
                        f"{where}.reward_series.{key}", "a number >= 0", v)
    data.setdefault("_origin", origin)
    return data


def _kind_of(result: Dict[str, Any]) -> str:
    """What a result measures, in words: results of different kinds are not one sweep."""
    if result.get("command") == "fresh run":
        objective = (result.get("parameters") or {}).get("objective")
        return "a freshness run (" + ("harmonic penalty" if objective == "harmonic"
                                      else "freshness") + ")"
    return "a run (reward)"


def _measure(result: Dict[str, Any]) -> Tuple[float, str, bool]:
    """(sign, label, higher_is_better): the freshness model's harmonic objective is drawn as the
    penalty it is (the JSON's reward is minus it)."""
    params = result.get("parameters") or {}
    if result.get("command") == "fresh run":
        if params.get("objective") == "harmonic":
            return -1.0, "harmonic penalty per epoch (lower is better)", False
        return 1.0, "freshness (fraction of importance fresh)", True
    return 1.0, "mean reward per epoch", True


def _bound(result: Dict[str, Any]) -> Optional[float]:
    b = result.get("bound")
    if isinstance(b, dict) and b.get("applicable") and b.get("value") is not None:
        return float(b["value"])
    return None


def _title(result: Dict[str, Any], budgets: Optional[Sequence[float]] = None) -> str:
    """Population and budget; for a sweep (`budgets`: every result's), the budgets' range."""
    pop = result.get("population") or {}
    params = result.get("parameters") or {}
    n = pop.get("sources")
    text = f"{pop.get('origin', '?')}"
    if _is_number(n):
        text += f", N = {n:,}"
    if budgets:
        text += (f", budgets {min(budgets):g} to {max(budgets):g} ({len(budgets)} results)")
    elif params.get("budget") is not None:
        text += f", budget {params['budget']:g}"
    if params.get("model"):
        text += f", {params['model']} model"
    return text


def draw_rewards(ax: Any, result: Dict[str, Any]) -> None:
    """Mean reward with its 95% interval per policy, against the bound."""
    sign, label, higher = _measure(result)
    policies = result["policies"]
    names = [p["name"] for p in policies]
    ys = list(range(len(policies)))[::-1]
    bound = _bound(result)
    # Where a value sits between the smallest and the largest drawn: its label goes to the side
    # with room.
    values = [sign * p["mean_reward"] for p in policies if p.get("mean_reward") is not None]
    values += [sign * bound] if bound is not None else []
    x_lo, x_hi = (min(values), max(values)) if values else (0.0, 0.0)
    for y, p in zip(ys, policies):
        m = p.get("mean_reward")
        if m is None:
            continue
        v = sign * m
        lo, hi = p.get("ci95_low"), p.get("ci95_high")
        if lo is not None and hi is not None:
            a, b = sorted((sign * lo, sign * hi))
            ax.errorbar([v], [y], xerr=[[v - a], [b - v]], fmt="o", color="C0", capsize=4)
        else:
            ax.plot([v], [y], "o", color="C0", mfc="white")
        note = ""
        if bound is not None and p.get("relative_gap_to_bound") is not None:
            note = f"  {100 * p['relative_gap_to_bound']:.2f}% from the bound"
        if p.get("ci95_low") is None:
            note += "  (no interval)"
        if (p.get("warm_up") or {}).get("warning"):
            note += "  (warning)"
        ax.annotate(f"{v:.6g}{note}", (v, y), textcoords="offset points", xytext=(0, 9),
                    ha="right" if v - x_lo > 0.6 * (x_hi - x_lo) else "left", fontsize=8)
    if bound is not None:
        ax.axvline(sign * bound, color="k", ls="--", lw=1)
        ax.annotate("bound", (sign * bound, 1.0), xycoords=("data", "axes fraction"),
                    ha="center", va="bottom", fontsize=8)
    ax.set_yticks(ys, names)
    ax.set_ylim(-0.7, len(policies) - 0.2)
    ax.set_xlabel(label)
    ax.margins(x=0.15)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("95% intervals", fontsize=10)


def draw_series(ax: Any, result: Dict[str, Any], policy: Optional[Dict[str, Any]] = None,
                color: str = "C0") -> None:
    """Replication 0's reward per epoch of one policy (default: the first), its discarded warm-up
    shaded, the bound as a line."""
    sign, label, _ = _measure(result)
    p = policy if policy is not None else result["policies"][0]
    s = p.get("reward_series") or {}
    values = s.get("values") or []
    first, stride = int(s.get("first_epoch", 0)), int(s.get("epochs_per_point", 1) or 1)
    xs = [first + stride * i + (stride - 1) / 2 for i in range(len(values))]
    pts = [(x, sign * v) for x, v in zip(xs, values) if v is not None]
    if pts:
        ax.plot([x for x, _ in pts], [y for _, y in pts], color=color, lw=1)
    warm = p.get("warm_up") or {}
    burn = int(warm.get("burn_in") or 0)
    if burn > 0:
        how = "automatic" if warm.get("automatic") else "given"
        ax.axvspan(0, burn, color="0.6", alpha=0.25, lw=0,
                   label=f"discarded warm-up ({burn} epochs, {how})")
    bound = _bound(result)
    if bound is not None:
        ax.axhline(sign * bound, color="k", ls="--", lw=1, label="bound")
    stride_text = f", means of {stride} epochs" if stride > 1 else ""
    ax.set_title(f"{p['name']}: replication 0{stride_text}"
                 + ("  (warning: see the JSON)" if warm.get("warning") else ""), fontsize=9)
    ax.set_ylabel(label if len(label) < 24 else label.split(" (")[0], fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best", framealpha=0.85)


def draw_sweep(ax: Any, results: Sequence[Dict[str, Any]], gap_ax: Any = None) -> None:
    """One curve per policy over the budget, with its interval, and the bound's curve; on
    `gap_ax` (when given) each policy's relative gap to the bound, with its interval."""
    sign, label, higher = _measure(results[0])
    rows = sorted(results, key=lambda r: float((r.get("parameters") or {}).get("budget", 0)))
    budgets = [float(r["parameters"]["budget"]) for r in rows]
    if len(set(budgets)) != len(budgets):
        raise PlotError("a sweep needs results with different budgets; two have the same")
    names: List[str] = []
    for r in rows:
        for p in r["policies"]:
            if p["name"] not in names:
                names.append(p["name"])
    for k, name in enumerate(names):
        xs, ys, lo, hi, gx, gap, glo, ghi = [], [], [], [], [], [], [], []
        for x, r in zip(budgets, rows):
            bound = _bound(r)
            for p in r["policies"]:
                if p["name"] != name or p.get("mean_reward") is None:
                    continue
                m = p["mean_reward"]
                a = m if p.get("ci95_low") is None else p["ci95_low"]
                b = m if p.get("ci95_high") is None else p["ci95_high"]
                xs.append(x)
                ys.append(sign * m)
                lo.append(min(sign * a, sign * b))
                hi.append(max(sign * a, sign * b))
                if bound is not None and bound != 0:
                    # The gap of the reward, in % of the bound: its interval is the reward's.
                    gx.append(x)
                    gap.append(100 * (bound - m) / abs(bound))
                    glo.append(100 * (bound - b) / abs(bound))
                    ghi.append(100 * (bound - a) / abs(bound))
        color = f"C{k % 10}"
        ax.plot(xs, ys, "o-", color=color, lw=1.2, ms=3, label=name)
        ax.fill_between(xs, lo, hi, color=color, alpha=0.2, lw=0)
        if gap_ax is not None and gx:
            gap_ax.plot(gx, gap, "o-", color=color, lw=1.2, ms=3, label=name)
            gap_ax.fill_between(gx, glo, ghi, color=color, alpha=0.2, lw=0)
    bx = [(x, _bound(r)) for x, r in zip(budgets, rows) if _bound(r) is not None]
    if bx:
        ax.plot([x for x, _ in bx], [sign * b for _, b in bx], "k--", lw=1, label="bound")
    wide = budgets[0] > 0 and budgets[-1] / budgets[0] >= 10
    for a in (ax, gap_ax):
        if a is None:
            continue
        if wide:
            a.set_xscale("log")
        a.set_xlabel("budget per epoch")
        a.grid(alpha=0.3, which="both")
        a.legend(fontsize=8)
    ax.set_ylabel(label)
    ax.set_title("budget sweep (shaded: 95% intervals)", fontsize=10)
    if gap_ax is not None:
        gap_ax.axhline(0, color="k", ls="--", lw=1)
        gap_ax.set_ylabel("gap to the bound, % of the bound")
        gap_ax.set_title("distance from the bound (shaded: 95% intervals)", fontsize=10)


def figure(results: Sequence[Dict[str, Any]], kind: str = "auto", title: Optional[str] = None):
    """A matplotlib Figure of `results` (dicts as loaded from crawleval's JSON)."""
    try:
        import matplotlib

        if "matplotlib.pyplot" not in _sys.modules and not _os.environ.get("MPLBACKEND"):
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install matplotlib "
                          "(or pip install 'crawleval[plot]')") from None
    if kind not in KINDS:
        raise PlotError(f"kind '{kind}' is not one of: {', '.join(KINDS)}")
    if not results:
        raise PlotError("nothing to plot")
    results = [check(r, r.get("_origin", "result") if isinstance(r, dict) else "result")
               for r in results]
    if kind == "auto":
        kind = "sweep" if len(results) > 1 else "both"
    if kind in ("rewards", "series", "both") and len(results) > 1:
        raise PlotError(f"--kind {kind} draws one result; {len(results)} were given "
                        "(--kind sweep draws several)")
    for r in results[1:]:  # one quantity on one axis
        if _kind_of(r) != _kind_of(results[0]):
            raise PlotError(f"{r.get('_origin', 'result')} is {_kind_of(r)} and "
                            f"{results[0].get('_origin', 'result')} {_kind_of(results[0])}: "
                            "a sweep draws results of one kind")
    if kind in ("both", "series"):
        policies = results[0]["policies"]
        n = len(policies)
        fig = plt.figure(figsize=(12 if kind == "both" else 7, max(3.6, 1.2 + 1.6 * n)))
        grid = fig.add_gridspec(n, 2 if kind == "both" else 1,
                                width_ratios=[1, 1.3] if kind == "both" else None)
        if kind == "both":
            draw_rewards(fig.add_subplot(grid[:, 0]), results[0])
        col = 1 if kind == "both" else 0
        first = None
        for k, p in enumerate(policies):
            ax = fig.add_subplot(grid[k, col], sharex=first)
            first = first or ax
            draw_series(ax, results[0], p, f"C{k % 10}")
            if k + 1 < n:
                ax.tick_params(labelbottom=False)
        ax.set_xlabel("epoch")
    elif kind == "rewards":
        fig, ax = plt.subplots(figsize=(7, 4.2))
        draw_rewards(ax, results[0])
    else:
        if len(results) < 2:
            raise PlotError("--kind sweep needs two or more results (one per budget)")
        fig, (ax, gap_ax) = plt.subplots(1, 2, figsize=(12, 4.4))
        draw_sweep(ax, results, gap_ax if any(_bound(r) is not None for r in results) else None)
        if not gap_ax.has_data():
            gap_ax.remove()
    budgets = None
    if kind == "sweep":
        budgets = [float((r.get("parameters") or {}).get("budget", 0)) for r in results]
    fig.suptitle(title if title is not None else _title(results[0], budgets), fontsize=11)
    fig.tight_layout()
    return fig


def _target(path: str) -> Tuple[str, Optional[int], bool]:
    """Where `path` is written, as the command line's other outputs are (output_file.hpp): a
    symbolic link's file is replaced and the link stays; a device or a FIFO is written in place;
    a directory, a dangling link or a read-only file is refused. Returns (the file to replace or
    write, its mode to keep or None, whether to write in place)."""
    if _os.path.islink(path):
        if not _os.path.exists(path):
            raise PlotError(f"{path} is a symbolic link to a missing file")
        real = _os.path.realpath(path)
        if _os.path.isfile(real):
            path = real
    try:
        st = _os.stat(path)
    except FileNotFoundError:
        return path, None, False
    if _stat.S_ISDIR(st.st_mode):
        raise PlotError(f"{path} is a directory")
    if not _stat.S_ISREG(st.st_mode):
        return path, None, True
    if st.st_mode & 0o222 == 0:
        raise PlotError(f"{path} is read-only; it is not replaced")
    return path, _stat.S_IMODE(st.st_mode), False


def save(fig: Any, path: str, dpi: int = 120) -> None:
    """Writes the figure to a temporary beside `path` (beside a symbolic link's file), then
    renames it: never half a file."""
    ext = _os.path.splitext(path)[1].lstrip(".").lower()
    if not ext:
        raise PlotError(f"{path}: give the image a name ending in .png, .svg or .pdf")
    target, mode, in_place = _target(path)
    if in_place:
        with open(target, "wb") as f:
            fig.savefig(f, format=ext, dpi=dpi)
        return
    fd, tmp = _tempfile.mkstemp(prefix=".crawleval-plot-", suffix="." + ext,
                               dir=_os.path.dirname(_os.path.abspath(target)))
    try:
        with _os.fdopen(fd, "wb") as f:
            fig.savefig(f, format=ext, dpi=dpi)
        if mode is None:
            umask = _os.umask(0)
            _os.umask(umask)
            mode = 0o666 & ~umask  # mkstemp made it private; a figure is not
        _os.chmod(tmp, mode)
        _os.replace(tmp, target)
    except BaseException:
        try:
            _os.unlink(tmp)
        except OSError:
            pass
        raise


def main(argv: Optional[Sequence[str]] = None, prog: Optional[str] = None) -> int:
    ap = _argparse.ArgumentParser(
        prog=prog or "python -m crawleval.plot",
        description="Draw crawleval results (run / fresh run JSON) with matplotlib.")
    ap.add_argument("results", nargs="+", metavar="RESULT.json")
    ap.add_argument("--out", "-o", help="image to write (.png, .svg, .pdf; default: the first "
                                        "result's name with .png)")
    ap.add_argument("--kind", default="auto", choices=KINDS,
                    help="auto: rewards and series for one result, sweep for several")
    ap.add_argument("--title", help="the figure's title (default: population and budget)")
    ap.add_argument("--dpi", type=int, default=120)
    args = ap.parse_args(argv)
    me = ap.prog
    try:
        results = [load(p) for p in args.results]
        out = args.out or _os.path.splitext(args.results[0])[0] + ".png"
        fig = figure(results, args.kind, args.title)
        save(fig, out, args.dpi)
    except ImportError as e:
        print(f"{me}: error: {e}", file=_sys.stderr)
        return 2
    except PlotError as e:
        print(f"{me}: error: {e}", file=_sys.stderr)
        return 2
    except OSError as e:
        print(f"{me}: error: cannot write {out}: {e.strerror}", file=_sys.stderr)
        return 2
    except ValueError as e:  # matplotlib: an unknown image format
        print(f"{me}: error: {e}", file=_sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


# The typing names served the annotations above (strings, from __future__): out of the namespace.
del annotations, Any, Dict, List, Optional, Sequence, Tuple

if __name__ == "__main__":
    _sys.exit(main(_sys.argv[1:], _os.environ.get("CRAWLEVAL_PLOT_PROG")))
