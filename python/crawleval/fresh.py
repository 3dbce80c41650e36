"""The freshness model from Python (``crawleval fresh`` and ``crawleval import``): sources that
change as Poisson processes, a crawler that keeps copies fresh within a budget and politeness
caps, the papers' crawl-rate schedulers (LambdaCrawl and its variants), the Lagrangian bound.

    >>> from crawleval import fresh
    >>> pop = fresh.Population.synthetic(10_000, seed=1)      # or from_dataframe, read, import_politecrawling
    >>> res = fresh.evaluate(pop, budget_fraction=0.2, epochs=200)
    >>> res.to_dataframe()[["freshness", "harmonic_penalty", "mean_cost_per_epoch"]]
    >>> fresh.lambda_crawl_rates(importance, rates, bandwidth=100.0).rho

Every number is the command line's (``crawleval fresh run --json``), from the same engine and the
same functions; docs/freshness.md describes the model, the policies and the files.
"""

from __future__ import annotations

import dataclasses as _dataclasses
from typing import Any, Callable, Dict, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as _np

from . import InputError as _InputError
from . import Result as _Result
from . import _Progress, _arrow, _core, _flag, _number, _python_keywords, _seed, _text, _whole
from . import _interval, _table_columns, _unmasked
from . import PolicyFactory as _PolicyFactory
from . import _checked_scores, _run_scorer
from . import _DeviceArrays, _device_arrays, _device_run

__all__ = [
    "Population",
    "FreshResult",
    "FreshPolicyParams",
    "index_scores",
    "Rates",
    "POLICIES",
    "DEFAULT_POLICIES",
    "import_politecrawling",
    "evaluate",
    "bound",
    "rates",
    "lambda_crawl_rates",
    "lambda_crawl_approx_rates",
    "binary_lambda_crawl_rates",
    "uniform_rates",
    "proportional_rates",
    "estimate_change_rate",
    "estimate_change_rate_complete",
]

#: The freshness policies (``crawleval fresh run --policy``): the engine's name table.
POLICIES = tuple(_core.fresh_policies())
#: What ``crawleval fresh run`` simulates when no policy is named.
DEFAULT_POLICIES = ("index", "lambda-crawl", "lambda-crawl-approx", "binary-lambda-crawl",
                    "uniform", "proportional")

_COLUMNS = ("id", "host", "importance", "rate", "rate_lo", "rate_hi", "cost", "complete",
            "constrained", "observations", "changes")

_FRESH_KEYWORDS = {
    "--budget": "budget=", "--budget-fraction": "budget_fraction=", "--epochs": "epochs=",
    "--burn-in": "burn_in=", "--max-burn-in": "max_burn_in=", "--replications": "replications=",
    "--epsilon": "epsilon=", "--start": "start=", "--learn": "learn=True",
    "--relearn": "relearn=", "--prior": "prior=", "--threads": "threads=",
    "--backend": "backend=", "--seed": "seed=", "--epoch-length": "epoch_length=",
    "--host-cap": "host_cap=", "--objective": "objective=", "--policy": "policies=",
    "--nutch-start": "nutch_start=", "--nutch-max": "nutch_max=", "--target-ci": "target_ci=",
    "--max-replications": "max_replications=",
}


def _array(name: str, values: Any, n: Optional[int], dtype) -> _np.ndarray:
    a = _np.asarray(_unmasked(f"column '{name}'", values))
    if a.ndim != 1:
        raise _InputError(f"column '{name}' must be one-dimensional, got shape {a.shape}")
    if n is not None and a.shape[0] != n:
        raise _InputError(f"column '{name}' has {a.shape[0]} rows, 'rate' has {n}")
    if a.dtype.kind not in "biuf":
        raise _InputError(f"column '{name}' must be numeric, got dtype {a.dtype}")
    if _np.dtype(dtype).kind in "ui":
        info = _np.iinfo(dtype)
        if a.dtype.kind == "f":
            # (float(info.max) rounds up to 2^64 for uint64: f < it + 1 keeps 2^64 itself out,
            # which the conversion turned into 0.)
            ok = _np.isfinite(a) & (a == _np.floor(a)) & (a >= 0) & (a < float(info.max) + 1.0)
        elif a.dtype.kind == "i":
            ok = a >= 0
            ok[ok] = a[ok].astype(_np.uint64) <= _np.uint64(info.max)
        else:  # unsigned and bool: compared as integers (2^64 - 1 is no float)
            ok = a.astype(_np.uint64) <= _np.uint64(info.max)
        if not _np.all(ok):
            bad = int(_np.flatnonzero(~ok)[0])
            raise _InputError(f"column '{name}': row {bad}: must be a whole number >= 0 (at most "
                              f"{info.max}), got {a[bad]!r}")
        if name in ("complete", "constrained") and _np.any(a > 1):
            bad = int(_np.flatnonzero(a > 1)[0])
            raise _InputError(f"column '{name}': row {bad}: must be 0 or 1, got {a[bad]!r}")
    return _np.ascontiguousarray(a, dtype=dtype)


class Population(_arrow.ArrowColumns):
    """Sources of the freshness model as columns (the CSV of ``crawleval import politecrawling``
    and ``crawleval fresh generate``): ``rate`` (changes per unit time) and ``importance``, and
    optionally ``id`` (default the row), ``host`` (default a host of its own), ``cost`` (1),
    ``complete`` (1: every change is observed), ``constrained`` (1: the host is politeness-capped),
    ``rate_lo``/``rate_hi`` (the rate's 95% interval, NaN unknown), ``observations`` and
    ``changes`` (the history the rate was estimated from). Stored in ascending id order.
    """

    __slots__ = ("_pop",)

    def __init__(self, core: "_core.FreshPopulation"):
        if not isinstance(core, _core.FreshPopulation):
            raise TypeError("use fresh.Population.from_dataframe, from_arrays, synthetic or read")
        self._pop = core

    @classmethod
    def from_arrays(cls, importance: Any, rate: Any, *, id: Any = None, host: Any = None,  # noqa: A002
                    cost: Any = None, complete: Any = None, constrained: Any = None,
                    rate_lo: Any = None, rate_hi: Any = None, observations: Any = None,
                    changes: Any = None, origin: str = "arrays") -> "Population":
        """A population from array-likes of equal length; invalid values raise
        :class:`~crawleval.InputError` naming the source and the field."""
        r = _array("rate", rate, None, _np.float64)
        n = r.shape[0]

        def opt(name, v, dtype):
            return None if v is None else _array(name, v, n, dtype)

        return cls(_core.FreshPopulation.from_columns(
            _array("importance", importance, n, _np.float64), r, opt("id", id, _np.uint64),
            opt("host", host, _np.uint64), opt("cost", cost, _np.float64),
            opt("complete", complete, _np.uint8), opt("constrained", constrained, _np.uint8),
            opt("rate_lo", rate_lo, _np.float64), opt("rate_hi", rate_hi, _np.float64),
            opt("observations", observations, _np.uint32), opt("changes", changes, _np.uint32),
            origin))

    @classmethod
    def from_dataframe(cls, df: Any, origin: str = "DataFrame") -> "Population":
        """A population from a pandas DataFrame with the CSV's columns (``rate`` and
        ``importance`` required), named in any case: a near miss of a name (``rates``,
        ``Importanc``) raises :class:`~crawleval.InputError` ("did you mean 'rate'?"); other
        columns are ignored with a warning."""
        kw = _table_columns("fresh", df, origin)
        return cls.from_arrays(kw.pop("importance"), kw.pop("rate"), origin=origin, **kw)

    @classmethod
    def read(cls, path: str) -> "Population":
        """A freshness population CSV (``crawleval fresh run --population``)."""
        return cls(_core.FreshPopulation.read(str(path)))

    @classmethod
    def synthetic(cls, n: int, seed: int = 1, estimate: bool = True,
                  slice: Optional[Tuple[int, int]] = None) -> "Population":
        """``crawleval fresh run --synthetic n --seed seed [--slice first:count]``:
        PoliteCrawling's shape; rates estimated from simulated 14-week histories
        (``estimate=False``: the true rates). ``slice=(first, count)``: only URLs
        [first, first + count) of a population of up to 2**63, with their global ids (hosts and
        draws as in the whole); one process holds at most 4294967294 URLs."""
        if slice is None:
            return cls(_core.FreshPopulation.synthetic(_whole("n", n, 1, 4294967294),
                                                       _seed(seed), _flag("estimate", estimate)))
        n = _whole("n", n, 1, 2**63)
        if not isinstance(slice, (tuple, list)) or len(slice) != 2:
            raise _InputError(f"slice= must be (first, count), got {slice!r}")
        first = _whole("slice first", slice[0], 0, 2**63)
        count = _whole("slice count", slice[1], 1, 4294967294)
        if first >= n or count > n - first:
            raise _InputError(f"slice=({first}, {count}): sources [{first}, {first} + {count}) "
                             f"pass the end of n={n}")
        return cls(_core.FreshPopulation.synthetic_slice(n, _seed(seed), _flag("estimate", estimate), first,
                                                         count))

    @property
    def first(self) -> int:
        """The global id of the first URL: 0, or a slice's first (row i draws as first + i). A
        DataFrame or CSV has no field for it: a population made from one draws as rows 0, 1, ...
        (``write`` refuses a slice)."""
        return self._pop.first

    def write(self, path: str) -> None:
        """Writes the CSV (every column, reading back bit for bit)."""
        with _python_keywords({"--out": "path="}):
            self._pop.write(str(path))

    def __len__(self) -> int:
        return len(self._pop)

    @property
    def origin(self) -> str:
        """Where the sources came from (a file, "synthetic-fresh(...)", "DataFrame")."""
        return self._pop.origin

    def __getattr__(self, name: str) -> _np.ndarray:
        if name in _COLUMNS:
            return self._pop.columns[name]  # read-only views, no copy
        raise AttributeError(name)

    def to_dataframe(self) -> Any:
        """Every column as a pandas DataFrame (the CSV's columns)."""
        import pandas as pd

        return pd.DataFrame({c: _np.array(v) for c, v in self._pop.columns.items()})

    def __repr__(self) -> str:
        cols = self._pop.columns
        return (f"<crawleval.fresh.Population of {len(self)} sources from {self.origin!r}: "
                f"{int(cols['complete'].sum())} completely observed, "
                f"{int(cols['constrained'].sum())} on constrained hosts>")


def _fresh_population(p: Any) -> "_core.FreshPopulation":
    if isinstance(p, Population):
        return p._pop
    if hasattr(p, "columns") and hasattr(p, "to_numpy"):
        return Population.from_dataframe(p)._pop
    raise TypeError("population must be a crawleval.fresh.Population or a pandas DataFrame")


def import_politecrawling(directory: str, max_bad_rows: int = 0) -> Any:
    """The PoliteCrawling dataset (Kolobov et al. 2019) in ``directory`` (its five .txt files,
    docs/freshness.md) as a DataFrame with the freshness population's columns, as
    ``crawleval import politecrawling DIR --out FILE.csv`` writes them. ``df.attrs["report"]``:
    what was read, dropped and skipped (``max_bad_rows`` malformed rows are skipped and listed
    under ``skipped``; more raise InputError naming the file and line)."""
    max_bad_rows = _whole("max_bad_rows", max_bad_rows, 0)
    with _python_keywords({"--max-bad-rows": "max_bad_rows="}):
        core, report = _core.FreshPopulation.import_politecrawling(str(directory), max_bad_rows)
    df = Population(core).to_dataframe()
    df.attrs["report"] = dict(report)
    df.attrs["origin"] = core.origin
    return df


class FreshResult(_Result):
    """The results of :func:`evaluate`: the fields of ``crawleval fresh run --json``. The reward is
    the objective (the freshness, or minus the harmonic penalty); ``to_dataframe()`` adds the
    freshness and the penalty with their intervals; each policy's ``replication_freshness``,
    ``replication_penalty``, ``replication_cost`` are arrays."""

    _ARRAYS = ("replication_freshness", "replication_penalty", "replication_cost")
    _KEYWORDS = _FRESH_KEYWORDS

    def to_dict(self) -> Dict[str, Any]:
        """Everything as ``crawleval fresh run --json`` has it."""
        out = super().to_dict()
        for p in out.get("policies", []):
            for key in self._ARRAYS:
                p.pop(key, None)
        return out

    def to_dataframe(self, kind: str = "policies") -> Any:
        """As :meth:`Result.to_dataframe`; ``"policies"`` adds ``freshness`` and
        ``harmonic_penalty`` with their 95% intervals."""
        df = super().to_dataframe(kind)
        if kind != "policies":
            return df
        for metric in ("freshness", "harmonic_penalty"):
            for field in ("mean", "ci95_low", "ci95_high"):
                col = metric if field == "mean" else f"{metric}_{field}"
                df[col] = [(p["metrics"].get(metric) or {}).get(field) for p in self.policies]
        return df

    def _header(self) -> str:
        p = self.parameters
        return (f"crawleval.fresh.FreshResult: {self._data['population']['sources']} sources, "
                f"budget {p['budget']:g}, {p['epochs']} epochs, objective {p['objective']}, "
                f"seed {self.seed}, backend {self.backend}")

    def __repr__(self) -> str:
        harmonic = self.parameters.get("objective") == "harmonic"
        main, other = (("harmonic_penalty", "freshness") if harmonic
                       else ("freshness", "harmonic_penalty"))
        words = {"harmonic_penalty": "penalty", "freshness": "freshness"}
        lines = [f"<{self._header()}>",
                 "  (harmonic penalty: lower is better; freshness: higher is better)"]
        for p in self.policies:
            m = p["metrics"]
            a, b = m.get(main) or {}, m.get(other) or {}
            line = (f"  {p['name']:<20} {words[main]} {a.get('mean', float('nan')):.4f}  "
                    f"{_interval(a.get('ci95_low'), a.get('ci95_high'), a.get('no_interval'), 4)}"
                    f"  {words[other]} {b.get('mean', float('nan')):.4f}")
            gap = p.get("relative_gap_to_bound")
            if gap is not None:
                line += f"  gap to the bound {100 * gap:.2f}%"
            lines.append(line)
        bound = self.bound
        if bound and bound.get("applicable") and bound.get("value") is not None:
            if harmonic:  # the JSON states the bound on the reward, minus the penalty
                lines.append(f"  {'bound':<20} penalty at least {-bound['value']:.4f}")
            else:
                lines.append(f"  {'bound':<20} freshness at most {bound['value']:.4f}")
        return "\n".join(lines)


@_dataclasses.dataclass(frozen=True)
class FreshPolicyParams:
    """What a freshness score function ``score(age, changes, params)`` is handed besides the
    ages and the missed changes: the population's columns in row order (read-only views of the
    engine's own: ``rate``, the change rate per unit time, or with ``learn=True`` the rates the
    learning variant estimates from the crawls so far, as the built-in policies believe them;
    ``importance``, ``cost``,
    ``complete``, 1 for a completely observed source; ``host``; ``id``), the run's
    ``epoch_length``, ``budget`` (crawl cost per epoch), ``host_cap`` and ``objective``, and the
    current ``epoch`` and ``replication``."""

    rate: _np.ndarray
    importance: _np.ndarray
    cost: _np.ndarray
    complete: _np.ndarray
    host: _np.ndarray
    id: _np.ndarray
    epoch_length: float
    budget: float
    host_cap: int
    objective: str
    epoch: int = 0
    replication: int = 0


def index_scores(age: Any, changes: Any, params: FreshPolicyParams) -> _np.ndarray:
    """The built-in ``index`` policy's scores (docs/freshness.md), bit for bit the engine's: the
    Whittle-type index of every source at its age, or of a completely observed one at its missed
    changes, for ``params.objective``. A score function returning them runs ``index``."""
    return _core.fresh_index_scores(
        _np.ascontiguousarray(params.rate, dtype=_np.float64),
        _np.ascontiguousarray(params.importance, dtype=_np.float64),
        _np.ascontiguousarray(params.cost, dtype=_np.float64),
        _np.ascontiguousarray(params.complete, dtype=_np.uint8),
        _counts("age", age), _counts("changes", changes),
        params.objective, float(params.epoch_length))


def _counts(name: str, values: Any) -> _np.ndarray:
    """A column of whole numbers in [0, 2^32 - 1] as uint32, or InputError naming it (numpy's cast
    would wrap -1 to 2^32 - 1 and cut 3.9 to 3 without a word)."""
    a = _np.asarray(values)
    if a.ndim != 1:
        raise _InputError(f"index_scores: {name} must be one-dimensional, got shape {a.shape}")
    if a.dtype == _np.uint32:
        return _np.ascontiguousarray(a)
    if a.dtype.kind not in "biuf":
        raise _InputError(f"index_scores: {name} must hold whole numbers, got dtype {a.dtype}")
    if a.size:
        as_float = a.astype(_np.float64) if a.dtype.kind == "f" else None
        bad = _np.zeros(a.shape, dtype=bool)
        if as_float is not None:
            bad |= ~_np.isfinite(as_float) | (as_float != _np.floor(as_float))
        bad |= (a < 0) | (a > 4294967295)
        if bad.any():
            k = int(_np.flatnonzero(bad)[0])
            raise _InputError(f"index_scores: {name}[{k}] = {a[k]!r} is not a whole number in "
                              f"[0, 4294967295]")
    return _np.ascontiguousarray(a, dtype=_np.uint32)


def _fresh_adapter(name: str, policy: Any, params: FreshPolicyParams, n: int):
    """The engine's callback: (age, changes, replication, epoch, rate) -> float64 scores, where
    rate is the learning variant's estimated rates (None without it), handed to the policy as
    ``params.rate``. Before the first epoch of every run (a warm-up pilot, the measured run, a
    --target-ci batch: epoch 0), a policy object's ``reset(params)`` is called, and a
    PolicyFactory makes the run's function."""
    scorer = _run_scorer(name, policy)

    def call(age: _np.ndarray, changes: _np.ndarray, replication: int, epoch: int,
             rate: Optional[_np.ndarray] = None) -> _np.ndarray:
        p = _dataclasses.replace(params, epoch=int(epoch), replication=int(replication),
                                 **({} if rate is None else {"rate": rate}))
        return _checked_scores(name, scorer(p)(age, changes, p), n)

    return call


def _fresh_device_adapter(name: str, policy: Any, params: FreshPolicyParams, n: int,
                          arrays_of: Callable[[], _DeviceArrays]):
    """The engine's callback on the GPU: (age, changes, replication, epoch), DLPack views of the
    engine's device copies (uint32, valid during the call), -> the policy's scores on the same
    device, read in place. The policy sees copies it may keep, as on the CPU (in PyTorch as
    float64: see _DeviceArrays.copy), and a FreshPolicyParams whose columns are the array
    module's copies on the device (made at the first call)."""
    scorer = _run_scorer(name, policy)
    cache: Dict[str, Any] = {}

    def call(age: Any, changes: Any, replication: int, epoch: int) -> Any:
        arrays, on_device = _device_run(cache, arrays_of, params, age)
        p = _dataclasses.replace(on_device, epoch=int(epoch), replication=int(replication))
        a, c = arrays.copy(age, as_float64=True), arrays.copy(changes, as_float64=True)
        out = scorer(p)(a, c, p)
        if out is None:
            raise ValueError(f"policy '{name}' returned None; return one score per source (an "
                             f"array of shape ({n},) on the GPU)")
        return arrays.scores(out, name)

    return call


def _fresh_policies(policies: Any, pop: "_core.FreshPopulation", params: Callable[[], Any],
                    device: Optional[Callable[[], _DeviceArrays]] = None):
    if isinstance(policies, str) or callable(policies) or isinstance(policies, _PolicyFactory):
        policies = [policies]
    elif (isinstance(policies, tuple) and len(policies) == 2 and isinstance(policies[0], str)
          and (callable(policies[1]) or isinstance(policies[1], _PolicyFactory))):
        policies = [policies]
    out: list = []
    names: set = set()
    for p in policies:
        if isinstance(p, str):
            name = _text("policies", p)
            out.append(name)
        else:
            if isinstance(p, tuple):
                if (len(p) != 2 or not isinstance(p[0], str)
                        or not (callable(p[1]) or isinstance(p[1], _PolicyFactory))):
                    raise TypeError("a policy given as a tuple must be (name, score function), "
                                    "(name, policy object) or (name, PolicyFactory)")
                name, fn = p
            elif callable(p) or isinstance(p, _PolicyFactory):
                fn = p
                name = getattr(p, "__name__", None) or type(p).__name__
            else:
                raise TypeError(f"a policy must be a name ({', '.join(POLICIES)}), a score "
                                f"function score(age, changes, params), a policy object, a "
                                f"PolicyFactory or (name, policy); got {type(p).__name__}")
            if isinstance(fn, type):  # (its reset would be called unbound)
                raise TypeError(f"policy '{name}' is the class {fn.__name__}: pass an instance, "
                                f"{fn.__name__}()")
            n = len(pop.columns["id"])
            out.append((name, _fresh_device_adapter(name, fn, params(), n, device) if device
                        else _fresh_adapter(name, fn, params(), n)))
        if name in names:  # (as evaluate: one result per name)
            raise _InputError(f"policy '{name}' is given twice")
        names.add(name)
    return out


def evaluate(
    population: Union[Population, Any],
    budget: Optional[float] = None,
    *,
    budget_fraction: Optional[float] = None,
    policies: Any = DEFAULT_POLICIES,
    epochs: int = 100,
    burn_in: Union[int, str] = "auto",
    max_burn_in: int = 5000,
    replications: int = 1,
    epsilon: float = 0.4,
    start: str = "steady",
    learn: bool = False,
    relearn: int = 1,
    prior: float = 0.5,
    host_cap: int = 0,
    objective: str = "harmonic",
    epoch_length: float = 1.0,
    threads: int = 0,
    backend: str = "auto",
    seed: Any = 1,
    bound: bool = True,
    nutch_start: float = 30.0,
    nutch_max: float = 365.0,
    target_ci: float = 0.0,
    max_replications: int = 1000,
    progress: Union[bool, Any] = False,
    array_module: Any = None,
) -> FreshResult:
    """Simulates freshness policies, as ``crawleval fresh run`` with the same settings.

    budget: crawl cost per epoch, or budget_fraction: that as a fraction of every source's cost
      per epoch (the papers' R = 0.2 N per day is 0.2 with ``epoch_length=1`` day).
    policies: names from :data:`POLICIES`.
    host_cap: crawls per epoch of a politeness-constrained host (0: no cap).
    objective: ``harmonic`` (the harmonic staleness penalty) or ``binary`` (freshness): what the
      index and greedy policies pursue and what the reward is.
    start: ``steady`` (ages spread as in the long run) or ``fresh`` (every copy fetched at 0).
    learn, relearn, prior: the learning variant (rates estimated online from the crawls).
    nutch_start, nutch_max: the ``nutch-adaptive`` policy's first and longest re-crawl interval, in
      epochs (``--nutch-start``, ``--nutch-max``; 1 <= start <= max).
    seed: a whole number, None, a numpy Generator or SeedSequence (``result.seed``: the one used).
    policies may also hold your own: a score function ``score(age, changes, params)`` (numpy
      arrays: the epochs since each source's last crawl, uint32; the changes a completely
      observed source has missed, 0 for the others, uint32; a :class:`FreshPolicyParams`) that
      returns one score per source, a policy object (``__call__`` and ``reset(params)``), a
      ``crawleval.PolicyFactory`` or a ``(name, policy)`` pair. They run on the CPU engine (or
      ``backend="reference"``), in one process; with ``learn=True`` ``params.rate`` holds the
      estimated rates (re-estimated every ``relearn`` epochs). The engine ranks and crawls by
      their scores as by a built-in policy's (``index_scores`` returns ``index``'s, bit for bit,
      with ``learn`` too).
      With ``backend="cuda"`` they run on the GPU: ``age``, ``changes`` and the ``params`` columns
      arrive as ``array_module``'s device arrays (CuPy or PyTorch, as ``crawleval.evaluate``'s
      array_module) and the scores are returned as one; not yet run on a device.
    target_ci: add replications (each with draws of its own) until the objective's 95% half-width
      over the replications is at most this fraction of its mean, or ``max_replications`` are run
      (each policy's ``target_ci_reached`` says which); 0: ``replications`` exactly.
    """
    pop = _fresh_population(population)

    def params() -> FreshPolicyParams:
        c = pop.columns
        try:  # (a bad budget is refused by the engine's checks, with the field named)
            # The engine's total cost: added one source after the other (numpy's sum is pairwise).
            total = float(_np.cumsum(c["cost"])[-1]) if len(c["cost"]) else 0.0
            b = float(budget) if budget is not None else float(budget_fraction) * total
        except (TypeError, ValueError):
            b = float("nan")
        return FreshPolicyParams(
            rate=c["rate"], importance=c["importance"], cost=c["cost"], complete=c["complete"],
            host=c["host"], id=c["id"], epoch_length=_number("epoch_length", epoch_length),
            budget=b, host_cap=_whole("host_cap", host_cap, 0, 2**32 - 1),
            objective=_text("objective", objective))

    on_device = isinstance(backend, str) and backend == "cuda"
    if array_module is not None and not on_device:
        raise _InputError("array_module= is for user policies on the GPU: give it with "
                          "backend='cuda'")
    if array_module is not None:
        _device_arrays(array_module)  # a bad module fails here, before any work
    policies = _fresh_policies(policies, pop, params,
                               (lambda: _device_arrays(array_module)) if on_device else None)
    burn_in_auto = isinstance(burn_in, str) and burn_in == "auto"
    if isinstance(burn_in, str) and not burn_in_auto:
        raise _InputError(f"burn_in= must be 'auto' or a whole number, got {burn_in!r}")
    bar = _Progress() if progress is True else None
    callback = bar if bar is not None else (progress if callable(progress) else None)
    try:
        with _python_keywords(_FRESH_KEYWORDS):
            data = _core.fresh_evaluate(
                pop, None if budget is None else _number("budget", budget),
                None if budget_fraction is None else _number("budget_fraction", budget_fraction),
                policies, _whole("epochs", epochs, 1, 4294967294),
                0 if burn_in_auto else _whole("burn_in", burn_in, 0, 4294967294), burn_in_auto,
                _whole("max_burn_in", max_burn_in, 1, 2**31 - 1),
                _whole("replications", replications, 1, 2**32 - 1), _number("epsilon", epsilon),
                _text("start", start), _flag("learn", learn), _whole("relearn", relearn, 1, 2**32 - 1),
                _number("prior", prior), _whole("threads", threads, 0, 2**31 - 1),
                _text("backend", backend), _seed(seed), _number("epoch_length", epoch_length),
                _whole("host_cap", host_cap, 0, 2**32 - 1), _text("objective", objective),
                _flag("bound", bound), _number("nutch_start", nutch_start),
                _number("nutch_max", nutch_max), _number("target_ci", target_ci),
                _whole("max_replications", max_replications, 1, 2**32 - 1), callback)
    finally:
        if bar is not None:
            bar.close()
    for p in data["policies"]:
        for key in ("replication_freshness", "replication_penalty", "replication_cost"):
            p[key].flags.writeable = False
    return FreshResult(data)


def bound(population: Union[Population, Any], budget: Optional[float] = None, *,
          budget_fraction: Optional[float] = None, epoch_length: float = 1.0, host_cap: int = 0,
          objective: str = "harmonic") -> Dict[str, Any]:
    """The Lagrangian bound of the freshness model (``crawleval fresh bound``, and the ``bound``
    of ``fresh run --json``): ``value`` (the freshness at most, or the harmonic penalty at least;
    None with ``why_absent``), ``multiplier``, ``note``, and ``period``: each source's crawl period
    in epochs in the relaxed optimum (0: never crawled)."""
    pop = _fresh_population(population)
    with _python_keywords(_FRESH_KEYWORDS):
        return _core.fresh_bound(
            pop, None if budget is None else _number("budget", budget),
            None if budget_fraction is None else _number("budget_fraction", budget_fraction),
            _number("epoch_length", epoch_length), _whole("host_cap", host_cap, 0, 2**32 - 1),
            _text("objective", objective))


class Rates(NamedTuple):
    """A rate-based scheduler's allocation: ``rho`` crawls per unit time per source (for the
    sources scheduled by age), ``p`` the probability of crawling a completely observed source at
    a change (LambdaCrawl's CO sources; 0 elsewhere), the Lagrange ``multiplier``, and the papers'
    closed-form costs of the allocation per unit of importance under Poisson crawling."""

    rho: _np.ndarray
    p: _np.ndarray
    multiplier: float
    harmonic_penalty: float
    binary_staleness: float


def rates(population: Union[Population, Any], policy: str, budget: float, *,
          epoch_length: float = 1.0, epsilon: float = 0.4) -> Rates:
    """The crawl rates of a rate-based policy (``lambda-crawl``, ``lambda-crawl-approx``,
    ``binary-lambda-crawl``, ``uniform``, ``proportional``) for a population, at a crawl cost of
    ``budget`` per epoch of ``epoch_length`` (R = budget / epoch_length per unit time), as the
    simulation uses them."""
    pop = _fresh_population(population)
    with _python_keywords(_FRESH_KEYWORDS):
        d = _core.fresh_rates(pop, _text("policy", policy), _number("budget", budget),
                              _number("epoch_length", epoch_length), _number("epsilon", epsilon))
    for key in ("rho", "p"):
        d[key].flags.writeable = False
    return Rates(d["rho"], d["p"], d["multiplier"], d["harmonic_penalty"], d["binary_staleness"])


def _rates_of(policy: str, importance: Any, change_rates: Any, bandwidth: float,
              complete: Any, cost: Any, epsilon: float) -> Rates:
    pop = Population.from_arrays(importance, change_rates, complete=complete, cost=cost)
    return rates(pop, policy, _number("bandwidth", bandwidth), epoch_length=1.0, epsilon=epsilon)


def lambda_crawl_rates(importance: Any, rates: Any, bandwidth: float, *, complete: Any = None,
                       cost: Any = None) -> Rates:
    """LambdaCrawl (Kolobov et al., NeurIPS 2019, Algorithms 1-3): the harmonic-penalty optimum
    for sources with importance ``importance`` and change ``rates``, at ``bandwidth`` crawl cost
    per unit time; ``complete`` flags the completely observed sources (their ``p``)."""
    return _rates_of("lambda-crawl", importance, rates, bandwidth, complete, cost, 0.4)


def lambda_crawl_approx_rates(importance: Any, rates: Any, bandwidth: float, *,
                              complete: Any = None, cost: Any = None) -> Rates:
    """LambdaCrawlApprox: IO rates proportional to importance (Prop. 9), CO probabilities as
    LambdaCrawl's, the split of the bandwidth by a golden-section search."""
    return _rates_of("lambda-crawl-approx", importance, rates, bandwidth, complete, cost, 0.4)


def binary_lambda_crawl_rates(importance: Any, rates: Any, bandwidth: float, *,
                              epsilon: float = 0.4, cost: Any = None) -> Rates:
    """Azar et al.'s binary-freshness optimum, every source treated as incompletely observed,
    with the floor ``epsilon`` x the uniform rate (0: Azar et al.'s own)."""
    return _rates_of("binary-lambda-crawl", importance, rates, bandwidth, None, cost, epsilon)


def uniform_rates(importance: Any, rates: Any, bandwidth: float, *, cost: Any = None) -> Rates:
    """Every source crawled at bandwidth / (the sources' total cost)."""
    return _rates_of("uniform", importance, rates, bandwidth, None, cost, 0.4)


def proportional_rates(importance: Any, rates: Any, bandwidth: float, *,
                       cost: Any = None) -> Rates:
    """Crawl rates proportional to the change rates."""
    return _rates_of("proportional", importance, rates, bandwidth, None, cost, 0.4)


def estimate_change_rate(intervals: Any, changed: Any) -> Dict[str, Any]:
    """A source's change rate from a history of crawl ``intervals`` (> 0, in time units) and
    whether each showed a change (0/1): the penalised maximum-likelihood estimate the importer
    uses (change_rate.hpp), with its 95% likelihood-ratio interval: ``rate``, ``rate_lo``,
    ``rate_hi`` (inf: unbounded), ``observations``, ``changes``, ``observed_time``. A PoliteCrawling
    history ``[[interval, changed], ...]`` is ``estimate_change_rate(*zip(*history))``."""
    iv = _np.ascontiguousarray(_np.asarray(intervals, dtype=_np.float64).reshape(-1))
    ch = _np.asarray(changed).reshape(-1)
    if ch.shape != iv.shape:
        raise _InputError(f"intervals= and changed= have different lengths ({iv.shape[0]} and "
                         f"{ch.shape[0]})")
    if not _np.all((ch == 0) | (ch == 1)):
        bad = int(_np.flatnonzero((ch != 0) & (ch != 1))[0])
        raise _InputError(f"changed=: element {bad} must be 0 or 1, got {ch[bad]!r}")
    return dict(_core.estimate_change_rate(iv, _np.ascontiguousarray(ch, dtype=_np.uint8)))


def estimate_change_rate_complete(changes: float, time: float) -> Dict[str, Any]:
    """A completely observed source's change rate: ``changes`` changes seen in ``time`` units,
    with the Poisson 95% interval (as the importer gives the dataset's CO URLs)."""
    return dict(_core.estimate_change_rate_complete(_number("changes", changes),
                                                    _number("time", time)))


# The typing names served the annotations above (strings, from __future__): out of the namespace.
del annotations, Any, Callable, Dict, NamedTuple, Optional, Sequence, Tuple, Union
