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

import argparse
import json
import os
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

KINDS = ("auto", "rewards", "series", "sweep")


class PlotError(ValueError):
    """A result that cannot be drawn (the message names the file and the field)."""


def load(path: str) -> Dict[str, Any]:
    """A crawleval result JSON, checked enough to be drawn."""
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise PlotError(f"{path}: cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise PlotError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
    return check(data, path)


def check(data: Any, origin: str) -> Dict[str, Any]:
    if not isinstance(data, dict) or data.get("tool") != "crawleval":
        raise PlotError(f"{origin}: not a crawleval result (no \"tool\": \"crawleval\")")
    if data.get("command") not in ("run", "fresh run"):
        raise PlotError(f"{origin}: a '{data.get('command')}' result; crawleval plot draws the "
                        "results of 'run' and 'fresh run'")
    if not isinstance(data.get("policies"), list) or not data["policies"]:
        raise PlotError(f"{origin}: field 'policies' is missing or empty")
    for k, p in enumerate(data["policies"]):
        for key in ("name", "mean_reward", "reward_series", "warm_up"):
            if key not in p:
                raise PlotError(f"{origin}: policies[{k}] has no field '{key}' (a result of an "
                                "older crawleval? run it again)")
    data.setdefault("_origin", origin)
    return data


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


def _title(result: Dict[str, Any]) -> str:
    pop = result.get("population") or {}
    params = result.get("parameters") or {}
    n = pop.get("sources")
    text = f"{pop.get('origin', '?')}"
    if n is not None:
        text += f", N = {n:,}"
    if params.get("budget") is not None:
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
    x_lo, x_hi = min(values), max(values)
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

        if "matplotlib.pyplot" not in sys.modules and not os.environ.get("MPLBACKEND"):
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
    fig.suptitle(title if title is not None else _title(results[0]), fontsize=11)
    fig.tight_layout()
    return fig


def save(fig: Any, path: str, dpi: int = 120) -> None:
    """Writes the figure to a temporary beside `path`, then renames it: never half a file."""
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    if not ext:
        raise PlotError(f"{path}: give the image a name ending in .png, .svg or .pdf")
    fd, tmp = tempfile.mkstemp(prefix=".crawleval-plot-", suffix="." + ext,
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format=ext, dpi=dpi)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp made it private; a figure is not
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def main(argv: Optional[Sequence[str]] = None, prog: Optional[str] = None) -> int:
    ap = argparse.ArgumentParser(
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
        out = args.out or os.path.splitext(args.results[0])[0] + ".png"
        fig = figure(results, args.kind, args.title)
        save(fig, out, args.dpi)
    except ImportError as e:
        print(f"{me}: error: {e}", file=sys.stderr)
        return 2
    except PlotError as e:
        print(f"{me}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{me}: error: cannot write {out}: {e.strerror}", file=sys.stderr)
        return 2
    except ValueError as e:  # matplotlib: an unknown image format
        print(f"{me}: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], os.environ.get("CRAWLEVAL_PLOT_PROG")))
