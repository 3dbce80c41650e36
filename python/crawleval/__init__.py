"""crawleval from Python: evaluate crawl-scheduling policies, the built-in ones and your own.

The engine is the command-line tool's (C++, OpenMP, CUDA when a GPU is visible); this package
checks and converts arguments, and returns results with the same fields as ``crawleval run --json``.

    >>> import crawleval as ce
    >>> pop = ce.Population.synthetic(100_000, seed=1)
    >>> res = ce.evaluate(pop, budget=1_000, policies=["whittle", "greedy"], epochs=200)
    >>> res.to_dataframe()[["mean_reward", "ci95_low", "ci95_high"]]

A policy of your own is a function ``score(state, age, params) -> scores`` called once per epoch
(see :func:`evaluate`); the sources with the highest scores are crawled, ties by lower id, within
the budget, exactly as for the built-in policies. A policy with memory is an object with
``reset(params)``, or a :class:`PolicyFactory`: every run (pilot, replication) starts afresh.
"""

from __future__ import annotations

# Modules under private names: the package's namespace is its API (dir(crawleval), completion).
import contextlib as _contextlib
import json as _json
import re as _re
import sys as _sys
import warnings as _warnings
from dataclasses import dataclass as _dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as _np

from . import _environment
from . import _arrow  # noqa: E402  (pyarrow itself is imported only when used)

_environment.set_wait_policy()  # before _core loads libgomp, which reads it once
from . import _core  # noqa: E402
from ._core import InputError  # noqa: E402

_environment.warn_if_mpi()

try:  # the extension's exception, documented here
    InputError.__doc__ = (
        "Bad input: a setting, a column or a file's field. A ValueError whose message names "
        "the keyword (budget=), the column or the file, line and field."
    )
except (AttributeError, TypeError):
    pass

__all__ = [
    "InputError",
    "Population",
    "PolicyParams",
    "PolicyFactory",
    "Result",
    "evaluate",
    "bound",
    "optimal",
    "whittle_index",
    "resolve_backend",
    "SyncInstance",
    "sync_optimum",
    "sync_learn",
    "lspe_learn",
    "relaxed_policy",
    "BUILTIN_POLICIES",
    "PAPER_POLICIES",
    "fresh",
]

__version__ = _core.__version__  # CMakeLists.txt's project(VERSION), as `crawleval --version`

# Every policy evaluate() takes by name, as ``crawleval run --policy`` does: the engine's one
# registry (name, built in, description), so a policy added there is offered here too.
_REGISTERED = tuple(_core.policies())
#: The built-in policies (``crawleval run --policy``): they run on every backend.
BUILTIN_POLICIES = tuple(name for name, builtin, _ in _REGISTERED if builtin)
#: The papers' policies that run as score functions on the CPU (``crawleval run --policy``).
PAPER_POLICIES = tuple(name for name, builtin, _ in _REGISTERED if not builtin)

# The engine's messages name the command line's flags; from Python they name the keyword.
_RUN_KEYWORDS = {
    "--budget": "budget=", "--epochs": "epochs=", "--burn-in": "burn_in=",
    "--max-burn-in": "max_burn_in=", "--replications": "replications=",
    "--max-replications": "max_replications=", "--target-ci": "target_ci=", "--seed": "seed=",
    "--epoch-length": "epoch_length=", "--threads": "threads=", "--model": "model=",
    "--observe": "observe=", "--start": "start=", "--utility": "utility=",
    "--backend": "backend=", "--policy": "policies=", "--no-bound": "bound=False",
    "--index-grid": "index_grid=",
}


_FLAG = _re.compile(r"--[a-z][a-z0-9-]*( auto\b)?")
# A word setting's value after its flag ("--backend cpu" is backend="cpu").
_WORD_FLAG = _re.compile(r"(--(?:backend|model|observe|start)) ([a-z]+)\b")


def _keywords(text: str, mapping: Dict[str, str]) -> str:
    """The engine's text with the CLI's flags replaced by the Python keywords (``--burn-in
    auto`` by ``burn_in="auto"``, ``--backend cpu`` by ``backend="cpu"``)."""

    def word(m: Any) -> str:
        flag = mapping.get(m.group(1))
        return f'{flag}"{m.group(2)}"' if flag and flag.endswith("=") else m.group(0)

    def keyword(m: Any) -> str:
        flag, auto = m.group(0).split(" ")[0], m.group(1)
        if flag not in mapping:
            return m.group(0)
        if auto and mapping[flag].endswith("="):
            return mapping[flag] + '"auto"'
        return mapping[flag] + (auto or "")

    return _FLAG.sub(keyword, _WORD_FLAG.sub(word, text))


@_contextlib.contextmanager
def _python_keywords(mapping: Dict[str, str] = _RUN_KEYWORDS) -> Iterator[None]:
    """Re-raises the engine's InputError with the CLI's flags replaced by the Python keywords."""
    try:
        yield
    except InputError as e:
        text = str(e)
        new = _keywords(text, mapping)
        if new == text:
            raise
        raise InputError(new) from None


def _seed(value: Any, name: str = "seed") -> int:
    """A seed as the engine takes it: a whole number in [0, 2^64 - 1], None (fresh entropy), a
    numpy Generator (one draw from it) or SeedSequence (its first 64-bit word)."""
    if value is None:
        return int(_np.random.SeedSequence().generate_state(1, _np.uint64)[0])
    if isinstance(value, _np.random.SeedSequence):
        return int(value.generate_state(1, _np.uint64)[0])
    if isinstance(value, _np.random.Generator):
        return int(value.integers(0, 2**64 - 1, dtype=_np.uint64, endpoint=True))
    if isinstance(value, bool) or not isinstance(value, (int, _np.integer)):
        raise InputError(
            f"{name}= must be a whole number, None, a numpy Generator or SeedSequence; got "
            f"{value!r}"
        )
    if not 0 <= int(value) <= 2**64 - 1:
        raise InputError(f"{name}= must lie in [0, 2^64 - 1], got {value}")
    return int(value)

SyncInstance = _core.SyncInstance

_FLOAT_COLUMNS = ("lambda", "xi", "mu", "cost", "x0")


def _unmasked(name: str, values: Any) -> Any:
    """A numpy masked array's data, refused where an entry is masked (np.asarray would take the
    value under the mask)."""
    if isinstance(values, _np.ma.MaskedArray):
        mask = _np.ma.getmaskarray(values)
        if mask.any():
            bad = int(_np.flatnonzero(mask.reshape(-1))[0])
            raise InputError(f"{name}: entry {bad} is masked (give a value, or drop the entry)")
        return values.data
    return values


def _column(name: str, values: Any, n: Optional[int]) -> _np.ndarray:
    """One column as a 1-D numpy array of a numeric dtype, or a ValueError naming it."""
    a = _np.asarray(_unmasked(f"column '{name}'", values))
    if a.ndim != 1:
        raise InputError(f"column '{name}' must be one-dimensional, got shape {a.shape}")
    if n is not None and a.shape[0] != n:
        raise InputError(f"column '{name}' has {a.shape[0]} rows, 'lambda' has {n}")
    if a.dtype.kind not in "biuf":
        raise InputError(f"column '{name}' must be numeric, got dtype {a.dtype}")
    return a


def _float_column(name: str, values: Any, n: Optional[int]) -> _np.ndarray:
    # No copy when the column already is contiguous float64: the engine reads it in place.
    return _np.ascontiguousarray(_column(name, values, n), dtype=_np.float64)


def _id_column(values: Any, n: int) -> _np.ndarray:
    a = _column("id", values, n)
    if a.dtype.kind == "f":
        if not _np.all(_np.isfinite(a)) or _np.any(a != _np.floor(a)):
            bad = int(_np.flatnonzero(~_np.isfinite(a) | (a != _np.floor(a)))[0])
            raise InputError(f"column 'id': row {bad}: ids must be whole numbers, got {a[bad]!r}")
    if _np.any(a < 0):
        bad = int(_np.flatnonzero(a < 0)[0])
        raise InputError(f"column 'id': row {bad}: ids must be >= 0, got {a[bad]!r}")
    if a.dtype.kind == "f" and _np.any(a >= 2.0**64):
        bad = int(_np.flatnonzero(a >= 2.0**64)[0])
        raise InputError(f"column 'id': row {bad}: id {a[bad]!r} is too large")
    return _np.ascontiguousarray(a, dtype=_np.uint64)


def _expiry_column(values: Any, n: int) -> _np.ndarray:
    """Content lifetimes in epochs: whole numbers >= 1, or 0 / inf for never."""
    raw = _column("expiry", values, n)
    a = raw.astype(_np.float64)
    never = _np.isinf(a) & (a > 0)
    a = _np.where(never, 0.0, a)
    # (At most 2**31 - 16, the age a full start has: belief observation cannot tell older copies.)
    ok = _np.isfinite(a) & (a >= 0) & (a == _np.floor(a)) & (a <= 2147483632)
    if not _np.all(ok):
        bad = int(_np.flatnonzero(~ok)[0])
        raise InputError(
            f"column 'expiry': row {bad}: must be a whole number of epochs from 1 to "
            f"2147483632, or 0 or inf for never, got {raw[bad]!r}"
        )
    return _np.ascontiguousarray(a, dtype=_np.uint32)


def _observe_column(values: Any, n: int) -> _np.ndarray:
    """Mixed observation per source: "full" or "belief" (any case), as the sources CSV has it."""
    a = _np.asarray(_unmasked("column 'observe'", values))
    if a.ndim != 1:
        raise InputError(f"column 'observe' must be one-dimensional, got shape {a.shape}")
    if a.shape[0] != n:
        raise InputError(f"column 'observe' has {a.shape[0]} rows, 'lambda' has {n}")
    if a.dtype.kind in "UO":  # (an object column's numbers and None read as text: refused)
        text = _np.char.lower(_np.char.strip(a.astype(str)))
        full = text == "full"
        ok = full | (text == "belief")
    else:
        full = ok = _np.zeros(n, dtype=bool)
    if not _np.all(ok):
        bad = int(_np.flatnonzero(~ok)[0])
        v = a[bad].item() if isinstance(a[bad], _np.generic) else a[bad]
        raise InputError(f"column 'observe': row {bad}: must be full or belief, got {v!r}")
    return full.astype(_np.uint8)


def _encoded_name(label: str) -> bytes:
    # A name read with errors="surrogateescape" gives its bytes back (not UTF-8: refused); any
    # other lone surrogate is not UTF-8 either.
    try:
        return label.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return label.encode("utf-8", "surrogatepass")


def _table_columns(model: str, df: Any, origin: str) -> Dict[str, Any]:
    """A DataFrame's columns by the rule of every reader of named columns (the CSV readers'):
    names in any case; a near miss of a known name ("costs", "Coût") or a name that is not UTF-8
    refused; other columns ignored with a warning. Returns the known columns' arrays by name."""
    labels = list(df.columns)
    names = [_encoded_name(c) if isinstance(c, str) else c if isinstance(c, bytes) else None
             for c in labels]
    shown = ["" if isinstance(c, (str, bytes)) else repr(c) for c in labels]  # (None's names)
    position, note = _core.match_columns(model, names, shown, origin)
    if note:
        _warnings.warn(note, UserWarning, stacklevel=3)
    return {name: df.iloc[:, k].to_numpy() for name, k in position.items()}


class Population(_arrow.ArrowColumns):
    """Sources as columns: ``lambda_`` (arrival rate), ``xi`` (mean initial utility), ``mu``
    (decay rate), ``cost`` (crawl cost), ``id``, and optionally ``x0`` (initial state) and
    ``expiry`` (content lifetime in epochs, 0 = never).

    Sources are stored in ascending id order (ties between equal scores go to the lower id).
    The column attributes are read-only numpy views of the engine's memory (no copy).
    """

    __slots__ = ("_pop",)

    def __init__(self, core: "_core.Population"):
        if not isinstance(core, _core.Population):
            raise TypeError(
                "use Population.from_arrays, from_dataframe, synthetic, paper_example or read"
            )
        self._pop = core

    # ---- constructors -------------------------------------------------------------------------
    @classmethod
    def from_arrays(
        cls,
        lambda_: Any,
        xi: Any,
        mu: Any,
        cost: Any = None,
        id: Any = None,  # noqa: A002 - the column's name
        x0: Any = None,
        expiry: Any = None,
        origin: str = "arrays",
        observe: Any = None,
    ) -> "Population":
        """A population from array-likes of equal length (numpy arrays, lists, pandas Series).

        float64 columns are read without conversion; other numeric dtypes are converted.
        ``observe``: "full" or "belief" per source (mixed observation, the sources CSV's column).
        Invalid values raise :class:`InputError` (a ValueError) naming the field and the source;
        so do masked entries of numpy masked arrays.
        """
        lam = _float_column("lambda", lambda_, None)
        n = lam.shape[0]
        core = _core.Population.from_columns(
            lam,
            _float_column("xi", xi, n),
            _float_column("mu", mu, n),
            None if cost is None else _float_column("cost", cost, n),
            None if id is None else _id_column(id, n),
            None if x0 is None else _float_column("x0", x0, n),
            None if expiry is None else _expiry_column(expiry, n),
            origin,
            None if observe is None else _observe_column(observe, n),
        )
        return cls(core)

    @classmethod
    def from_dataframe(cls, df: Any, origin: str = "DataFrame") -> "Population":
        """A population from a pandas DataFrame with columns ``lambda``, ``xi``, ``mu`` and
        optionally ``cost``, ``id``, ``x0``, ``expiry``, ``observe``, named in any case, as a
        sources CSV's header: a near miss of a name (``costs``, ``Coût``) raises
        :class:`InputError` ("did you mean 'cost'?"); other columns are ignored with a warning."""
        cols = _table_columns("sources", df, origin)
        return cls.from_arrays(
            cols["lambda"], cols["xi"], cols["mu"], cols.get("cost"), cols.get("id"),
            cols.get("x0"), cols.get("expiry"), origin=origin, observe=cols.get("observe"),
        )

    @classmethod
    def synthetic(cls, n: int, seed: int = 1, costs: str = "unit") -> "Population":
        """The CLI's ``--synthetic n`` population (``costs``: ``unit`` or ``lognormal``)."""
        # (int(n) took 2.5 as 2 and "10" as 10; a seed of 1.9 ran as 1)
        return cls(_core.Population.synthetic(_whole("n", n, 1, 4294967294), _seed(seed),
                                              _text("costs", costs)))

    @classmethod
    def paper_example(cls) -> "Population":
        """The papers' 4-source example (Table 1)."""
        return cls(_core.Population.paper_example())

    @classmethod
    def read(cls, path: str, strict_columns: bool = False) -> "Population":
        """A sources CSV (``crawleval run --sources``) or a ``.cpop`` columnar file. A CSV's
        columns that are no column of a population are ignored with a warning, or refused with
        ``strict_columns=True``; a near miss of a name (``costs``) is refused either way."""
        keywords = {"--strict-columns": "strict_columns=True"}
        with _python_keywords(keywords):
            core, notes = _core.Population.read(str(path), _flag("strict_columns", strict_columns))
        for note in notes:
            _warnings.warn(_keywords(note, keywords), UserWarning, stacklevel=2)
        return cls(core)

    def write(self, path: str) -> None:
        """Writes a sources CSV, or the columnar format when the name ends in ``.cpop`` (every
        column; a slice of a larger population keeps its first global id only in a ``.cpop``,
        and a CSV of it is refused, as ``crawleval convert`` refuses it)."""
        with _python_keywords({"--out": "path="}):
            self._pop.write(str(path))

    # ---- columns ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._pop)

    def __repr__(self) -> str:
        return f"<crawleval.Population of {len(self)} sources from {self.origin!r}>"

    @property
    def origin(self) -> str:
        """Where the sources came from (a file name, "synthetic(...)", "DataFrame")."""
        return self._pop.origin

    @property
    def unit_costs(self) -> bool:
        """True when every source costs 1 (the budget is then a number of crawls)."""
        return self._pop.unit_costs

    @property
    def total_cost(self) -> float:
        """The sum of the sources' crawl costs."""
        return self._pop.total_cost

    @property
    def lambda_(self) -> _np.ndarray:
        """Arrival rates, in id order (read-only view of the engine's column)."""
        return self._pop.lambda_

    @property
    def xi(self) -> _np.ndarray:
        """Mean initial utilities, in id order (read-only view)."""
        return self._pop.xi

    @property
    def mu(self) -> _np.ndarray:
        """Decay rates, in id order (read-only view)."""
        return self._pop.mu

    @property
    def cost(self) -> _np.ndarray:
        """Crawl costs, in id order (read-only view)."""
        return self._pop.cost

    @property
    def id(self) -> _np.ndarray:
        """Source ids, ascending (read-only view)."""
        return self._pop.id

    @property
    def x0(self) -> Optional[_np.ndarray]:
        """Initial states (read-only view), or None when the population has none."""
        return self._pop.x0

    @property
    def expiry(self) -> Optional[_np.ndarray]:
        """Content lifetimes in epochs (0: never; read-only view), or None."""
        return self._pop.expiry

    @property
    def first_id(self) -> int:
        """The global id of source 0: 0, or a slice's first (a ``.cpop`` of ``crawleval generate
        --slice``); source i draws as first_id + i."""
        return self._pop.first_id

    @property
    def observe(self) -> Optional[_np.ndarray]:
        """Mixed observation per source (1: full, 0: belief; read-only view), or None."""
        return self._pop.observe

    def to_dataframe(self) -> Any:
        """Every column as a pandas DataFrame (``lambda``, ``xi``, ``mu``, ``cost``, ``id``, and
        ``x0``, ``expiry``, ``observe`` when present: ``from_dataframe`` reads it back)."""
        import pandas as pd

        data = {"id": self.id, "lambda": self.lambda_, "xi": self.xi, "mu": self.mu,
                "cost": self.cost}
        if self.x0 is not None:
            data["x0"] = self.x0
        if self.expiry is not None:
            data["expiry"] = self.expiry
        if self.observe is not None:
            data["observe"] = _np.where(self.observe == 1, "full", "belief")
        return pd.DataFrame(data)


def _whole(name: str, value: Any, low: int, high: int = 2**64 - 1) -> int:
    """An integer setting in [low, high], or an InputError naming its keyword."""
    if isinstance(value, bool) or not isinstance(value, (int, _np.integer)):
        raise InputError(f"{name}= must be a whole number, got {value!r}")
    if not low <= int(value) <= high:
        raise InputError(f"{name}= must lie in [{low}, {high}], got {value}")
    return int(value)


def _flag(name: str, value: Any) -> bool:
    """A yes/no setting: True or False (bool(value) took learn="no" as True)."""
    if not isinstance(value, (bool, _np.bool_)):
        raise InputError(f"{name}= must be True or False, got {value!r}")
    return bool(value)


def _number(name: str, value: Any) -> float:
    """A real setting, or an InputError naming its keyword (the engine checks its range)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, _np.integer, _np.floating)):
        raise InputError(f"{name}= must be a number, got {value!r}")
    return float(value)


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InputError(f"{name}= must be a string, got {value!r}")
    return value


def _population(p: Any) -> "_core.Population":
    if isinstance(p, Population):
        return p._pop
    if hasattr(p, "columns") and hasattr(p, "to_numpy"):
        return Population.from_dataframe(p)._pop
    raise TypeError("population must be a crawleval.Population or a pandas DataFrame")


@_dataclass(frozen=True)
class PolicyParams:
    """What a user policy may read besides the state: per-source constants (numpy arrays, in
    id order, read-only) and where the run is.

    ``alpha = exp(-mu T)``, ``u = lambda xi (1 - alpha) / mu`` (the mean content arriving per
    epoch), ``u_star = lambda xi / mu`` (the state of a source never crawled), ``inv_cost = 1 /
    cost`` (the built-in greedy policy scores ``state * inv_cost``). ``collected``: what each
    source gave at the previous epoch's crawl (0 where it was not crawled, and at epoch 0): the
    rewards a learning policy learns from; ``collected.sum()`` is the previous epoch's reward.
    """

    lambda_: _np.ndarray
    xi: _np.ndarray
    mu: _np.ndarray
    cost: _np.ndarray
    inv_cost: _np.ndarray
    alpha: _np.ndarray
    u: _np.ndarray
    u_star: _np.ndarray
    id: _np.ndarray
    epoch_length: float
    budget: float
    epoch: int = 0
    replication: int = 0
    collected: Optional[_np.ndarray] = None


def _policy_params(pop: "_core.Population", epoch_length: float, budget: float) -> PolicyParams:
    # The engine's own constants (model.hpp, derive_params), bit for bit.
    derived = _core.source_params(pop, float(epoch_length))
    arrays = dict(lambda_=pop.lambda_, xi=pop.xi, mu=pop.mu, cost=pop.cost, id=pop.id, **derived)
    for a in arrays.values():
        a.flags.writeable = False
    return PolicyParams(epoch_length=float(epoch_length), budget=float(budget), **arrays)


_ScoreFunction = Callable[[_np.ndarray, _np.ndarray, PolicyParams], Any]


class PolicyFactory:
    """A policy with state, made afresh for every run: ``PolicyFactory(factory)`` calls
    ``factory(params)`` before the first epoch of every run of the policy (each warm-up pilot
    and each replication; ``params.epoch == 0``, ``params.replication`` set) and scores that run
    with the score function it returns. Keep per-source memory in the factory's closure::

        def nutch(params):
            fetched = np.zeros(len(params.id))          # this run's own memory
            def score(state, age, p):
                ...
            return score

        ce.evaluate(pop, 100, [ce.PolicyFactory(nutch)])

    ``name``: the policy's name (default the factory's ``__name__``).
    """

    def __init__(self, factory: Callable[[PolicyParams], _ScoreFunction],
                 name: Optional[str] = None):
        if not callable(factory):
            raise TypeError(f"PolicyFactory needs a callable factory(params), got "
                            f"{type(factory).__name__}")
        self.factory = factory
        self.__name__ = name if name is not None else (
            getattr(factory, "__name__", None) or type(factory).__name__)

    def __repr__(self) -> str:
        return f"crawleval.PolicyFactory({self.factory!r}, name={self.__name__!r})"


_PolicyLike = Union[str, _ScoreFunction, PolicyFactory, Tuple[str, Any]]


def _score_adapter(name: str, policy: Any, params: PolicyParams, n: int):
    """The engine's callback: (state, age, collected, replication, epoch) -> float64 scores.

    ``state``, ``age`` and ``collected`` are the engine's own arrays (it writes them in place
    every epoch), read-only for good (no flag makes them writable). Before the first epoch of
    every run (a warm-up pilot, a replication: epoch 0), a policy object's ``reset(params)`` is
    called, and a PolicyFactory makes the run's score function. float64 contiguous scores are
    read in place, others converted once.
    """
    import dataclasses

    scorer = _run_scorer(name, policy)

    def call(state: _np.ndarray, age: _np.ndarray, collected: _np.ndarray, replication: int,
             epoch: int) -> _np.ndarray:
        p = dataclasses.replace(params, epoch=int(epoch), replication=int(replication),
                                collected=collected)
        return _checked_scores(name, scorer(p)(state, age, p), n)

    return call


def _run_scorer(name: str, policy: Any) -> Callable[[Any], Callable]:
    """A user's policy as the engines' adapters call it (both models): ``scorer(params)`` returns
    the score function for this epoch; at epoch 0 (a new run: a warm-up pilot, a replication) it
    first calls a policy object's ``reset(params)``, or has a PolicyFactory make the run's
    function, so that every run starts from a fresh state."""
    factory = policy.factory if isinstance(policy, PolicyFactory) else None
    reset = None if factory is not None else getattr(policy, "reset", None)
    current = [policy if factory is None else None]

    def scorer(p: Any) -> Callable:
        if p.epoch == 0:
            if factory is not None:
                fn = factory(p)
                if not callable(fn):
                    raise TypeError(f"policy '{name}': its factory returned "
                                    f"{type(fn).__name__}, not a score function")
                current[0] = fn
            elif callable(reset):
                reset(p)
        return current[0]

    return scorer


def _checked_scores(name: str, out: Any, n: int) -> _np.ndarray:
    """A score function's result as float64 contiguous scores, one per source (the engines read
    them in place), or ValueError naming the policy."""
    if out is None:
        raise ValueError(f"policy '{name}' returned None; return one score per source (an array "
                         f"of shape ({n},))")
    if isinstance(out, _np.ma.MaskedArray):
        if _np.ma.getmaskarray(out).any():
            bad = int(_np.flatnonzero(_np.ma.getmaskarray(out).reshape(-1))[0])
            raise ValueError(f"policy '{name}' returned a masked score (entry {bad}); "
                             f"return a number for every source (NaN ranks last)")
        out = out.data
    if not isinstance(out, _np.ndarray):
        out = _np.asarray(out)
    if out.shape != (n,):
        raise ValueError(
            f"policy '{name}' returned scores of shape {out.shape}; expected ({n},), one "
            f"score per source"
        )
    if out.dtype.kind not in "biuf":
        raise ValueError(f"policy '{name}' returned scores of dtype {out.dtype}; expected numbers")
    if out.dtype != _np.float64 or not out.flags.c_contiguous:
        out = _np.ascontiguousarray(out, dtype=_np.float64)
    return out


# ---- Score functions on the GPU (backend="cuda"): device arrays through DLPack ---------------

_ARRAY_MODULES = ("cupy", "torch")


class _DeviceArrays:
    """How a score function on the GPU receives its arrays and returns its scores: the array
    module's DLPack import (no copy) of the engine's device arrays, its copy of the constant
    columns on the same device (made once per run), and its float64 contiguous scores."""

    def __init__(self, module: Any) -> None:
        self.xp = module
        self.name = getattr(module, "__name__", type(module).__name__)

    def wrap(self, view: Any) -> Any:
        return self.xp.from_dlpack(view)

    def copy(self, view: Any, as_float64: bool = False) -> Any:
        """A copy of a view the policy may keep (the engine rewrites the memory every epoch);
        `as_float64`: PyTorch's integer tensors as float64 (its uint32 lacks most operations,
        and its integer tensors times a Python float give float32, not numpy's float64)."""
        a = self.xp.from_dlpack(view)
        if self.name == "torch":
            return a.to(self.xp.float64) if as_float64 else a.clone()
        return a.copy()

    def upload(self, a: _np.ndarray, device: int) -> Any:
        if self.name == "torch":
            if a.dtype == _np.uint64:  # ids lie below 2^63; older PyTorch has no uint64
                a = a.astype(_np.int64)
            return self.xp.as_tensor(a, device=f"cuda:{device}")
        if self.name == "cupy":
            with self.xp.cuda.Device(device):
                return self.xp.asarray(a)
        return self.xp.asarray(a)

    def params(self, p: PolicyParams, device: int) -> PolicyParams:
        import dataclasses

        columns = {f.name: self.upload(getattr(p, f.name), device)
                   for f in dataclasses.fields(p) if isinstance(getattr(p, f.name), _np.ndarray)}
        return dataclasses.replace(p, **columns)

    def scores(self, out: Any, name: str) -> Any:
        """The module's own arrays as float64 contiguous (one conversion where they are not);
        anything else goes to the engine as it is, which names what it got (a numpy array on the
        CPU, a list, another shape)."""
        if self.name == "torch" and isinstance(out, self.xp.Tensor):
            if out.is_complex():
                raise ValueError(f"policy '{name}' returned scores of dtype {out.dtype}; "
                                 f"expected numbers")
            out = out.detach()  # a tensor that requires grad exports no DLPack capsule
            if out.dtype != self.xp.float64:
                out = out.to(self.xp.float64)
            return out.contiguous()
        ndarray = getattr(self.xp, "ndarray", None)  # CuPy's (numpy's in the tests)
        if isinstance(ndarray, type) and isinstance(out, ndarray):
            if out.dtype.kind not in "biuf":
                raise ValueError(f"policy '{name}' returned scores of dtype {out.dtype}; "
                                 f"expected numbers")
            return self.xp.ascontiguousarray(out, dtype=self.xp.float64)
        return out


def _device_arrays(array_module: Any) -> _DeviceArrays:
    """array_module= as the engine uses it: a module (or its name) with from_dlpack; None picks
    CuPy, else PyTorch, whichever is installed."""
    import importlib

    if array_module is None:
        for name in _ARRAY_MODULES:
            try:
                return _DeviceArrays(importlib.import_module(name))
            except ImportError:
                continue
        raise InputError("array_module=: a score function on the GPU (backend='cuda') gets its "
                         "arrays from CuPy or PyTorch, and neither is installed (pip install "
                         "cupy-cuda12x, or torch); or give array_module= a module with "
                         "from_dlpack")
    module = array_module
    if isinstance(array_module, str):
        try:
            module = importlib.import_module(array_module)
        except ImportError as e:
            raise InputError(f"array_module='{array_module}' cannot be imported ({e})") from None
    if not callable(getattr(module, "from_dlpack", None)):
        raise InputError(f"array_module={array_module!r} has no from_dlpack(): give CuPy, "
                         f"PyTorch or another module of the DLPack protocol")
    return _DeviceArrays(module)


def _device_run(cache: Dict[str, Any], arrays_of: Callable[[], "_DeviceArrays"], params: Any,
                view: Any) -> Tuple["_DeviceArrays", Any]:
    """A device adapter's array module (found at its first call, after the engine has found its
    device) and its params with the columns on the device of `view` (made once per device)."""
    if "arrays" not in cache:
        cache["arrays"] = arrays_of()
    device = int(view.__dlpack_device__()[1])
    if cache.get("device") != device:
        cache["device"], cache["params"] = device, cache["arrays"].params(params, device)
    return cache["arrays"], cache["params"]


def _device_adapter(name: str, policy: Any, params: PolicyParams, n: int,
                    arrays_of: Callable[[], _DeviceArrays]):
    """The engine's callback on the GPU: (state, age, collected, replication, epoch), each array
    a DLPack view of the engine's device memory, valid during the call, -> the policy's scores
    on the same device (read in place by the engine). The policy sees the array module's arrays
    and a PolicyParams whose columns are that module's copies on the device. The module is
    found at the first call (after the engine has found its device)."""
    import dataclasses

    scorer = _run_scorer(name, policy)
    cache: Dict[str, Any] = {}

    def call(state: Any, age: Any, collected: Any, replication: int, epoch: int) -> Any:
        arrays, on_device = _device_run(cache, arrays_of, params, state)
        s, a, c = arrays.wrap(state), arrays.wrap(age), arrays.wrap(collected)
        p = dataclasses.replace(on_device, epoch=int(epoch), replication=int(replication),
                                collected=c)
        out = scorer(p)(s, a, p)
        if out is None:
            raise ValueError(f"policy '{name}' returned None; return one score per source (an "
                             f"array of shape ({n},) on the GPU)")
        return arrays.scores(out, name)

    return call


def _is_policy(p: Any) -> bool:
    """A score function, a policy object (callable, with reset) or a PolicyFactory."""
    return callable(p) or isinstance(p, PolicyFactory)


def _policies(policies: Union[_PolicyLike, Iterable[_PolicyLike]], params_of, n: int,
              device: Optional[Callable[[], _DeviceArrays]] = None) -> list:
    """(name, adapter) per user policy, names for the registry's; `device`: the user policies
    run on the GPU, with the array module it returns (called at their first call)."""
    single_pair = (isinstance(policies, tuple) and len(policies) == 2
                   and isinstance(policies[0], str) and _is_policy(policies[1]))
    if isinstance(policies, str) or _is_policy(policies) or single_pair:
        policies = [policies]
    out: list = []
    names = set()
    for p in policies:
        if isinstance(p, str):
            out.append(p)
            name = p
        else:
            if isinstance(p, tuple):
                if len(p) != 2 or not isinstance(p[0], str) or not _is_policy(p[1]):
                    raise TypeError("a policy given as a tuple must be (name, score function), "
                                    "(name, policy object) or (name, PolicyFactory)")
                name, fn = p
            elif _is_policy(p):
                fn = p
                name = getattr(p, "__name__", None) or type(p).__name__
            else:
                raise TypeError(
                    f"a policy must be a name ({', '.join(BUILTIN_POLICIES + PAPER_POLICIES)}), "
                    f"a score function, a policy object, a PolicyFactory or (name, policy); "
                    f"got {type(p).__name__}"
                )
            if isinstance(fn, type):  # (its reset would be called unbound)
                raise TypeError(f"policy '{name}' is the class {fn.__name__}: pass an instance, "
                                f"{fn.__name__}()")
            out.append((name, _device_adapter(name, fn, params_of(), n, device) if device
                           else _score_adapter(name, fn, params_of(), n)))
        if name in names:
            raise InputError(f"policy '{name}' is given twice")
        names.add(name)
    return out


class _Progress:
    """progress=True: on a terminal (or in Jupyter), a tqdm bar per policy when tqdm is
    installed, else a line on stderr rewritten in place; elsewhere (a log file, a pipe), a full
    line at most every `interval` seconds and one at each policy's end, so a log stays lines."""

    def __init__(self, interval: float = 10.0) -> None:
        import time

        stream = _sys.stderr
        try:
            self._tty = bool(stream.isatty())
        except (AttributeError, ValueError):
            self._tty = False
        self._tqdm = None
        if self._tty or "ipykernel" in _sys.modules:
            try:
                from tqdm.auto import tqdm  # type: ignore

                self._tqdm = tqdm
            except ImportError:
                pass
        self._clock = time.monotonic
        self._interval = interval
        self._bar = None
        self._label = None
        self._done = self._total = 0
        self._last = 0.0

    def _line(self) -> str:
        pct = 100.0 * self._done / max(self._total, 1)
        return f"  {self._label}: {self._done}/{self._total} epochs ({pct:.0f}%)"

    def __call__(self, label: str, done: int, total: int) -> None:
        if label != self._label:
            self.close()
            self._label = label
            self._last = self._clock()
            if self._tqdm is not None:
                self._bar = self._tqdm(total=total, desc=label, unit="epoch", leave=False)
        self._done, self._total = done, total
        if self._bar is not None:
            self._bar.n = done
            self._bar.refresh()
        elif self._tty:
            _sys.stderr.write("\r" + self._line() + "   ")
            _sys.stderr.flush()
        elif self._clock() - self._last >= self._interval:
            self._last = self._clock()
            _sys.stderr.write(self._line() + "\n")
            _sys.stderr.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self._label is not None:
            _sys.stderr.write("\r" + " " * 72 + "\r" if self._tty else self._line() + "\n")
            _sys.stderr.flush()
        self._label = None


# The fields of a result that hold the engine's sentences (which name the CLI's flags).
_TEXT_FIELDS = frozenset({"warnings", "warning", "no_interval", "note", "why_absent"})


def _to_keywords(obj: Any, mapping: Dict[str, str], path: Tuple[Any, ...],
                 originals: List[Tuple[Tuple[Any, ...], str]], text: bool = False) -> None:
    """Rewrites, in place, the sentences of a result's data with the Python keywords (a warning
    says burn_in=, not --burn-in), keeping each original text and where it was."""
    items = (list(obj.items()) if isinstance(obj, dict)
             else list(enumerate(obj)) if isinstance(obj, list) else [])
    for key, v in items:
        is_text = text or key in _TEXT_FIELDS
        if isinstance(v, str) and is_text:
            new = _keywords(v, mapping)
            if new != v:
                obj[key] = new
                originals.append((path + (key,), v))
        elif isinstance(v, (dict, list)):
            _to_keywords(v, mapping, path + (key,), originals,
                         is_text and isinstance(v, list))


def _interval(lo: Any, hi: Any, why: Any, digits: int = 6) -> str:
    """A 95% interval for a repr, or why there is none (the summary's reason, cut short)."""
    if lo is not None and hi is not None:
        return f"95% CI [{lo:.{digits}g}, {hi:.{digits}g}]"
    if not why:
        return "95% CI n/a"
    reason = _re.split(r" \(|; |: ", str(why), maxsplit=1)[0]
    if len(reason) > 70:
        reason = reason[:67] + "..."
    return f"95% CI n/a: {reason}"


def _jsonable(value: Any) -> Any:
    """A deep copy with numpy arrays and scalars as lists and Python numbers (json.dumps takes it)."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, _np.ndarray):
        return value.tolist()
    if isinstance(value, _np.generic):
        return value.item()
    return value


class Result:
    """The results of :func:`evaluate`: the fields of ``crawleval run --json``, as Python objects.

    ``result.policies`` is a list of dicts (one per policy, in the order given),
    ``result["whittle"]`` one of them (its ``replication_rewards`` a numpy array),
    ``result.bound`` the Lagrangian bound (or None), ``result.seed`` the seed used,
    ``result.warnings`` what the run warns about, ``result.to_dict()`` everything as the CLI's JSON,
    ``result.to_dataframe()`` one row per policy (``"replications"``: one per replication,
    ``"epochs"``: one per recorded epoch), ``result.record(name)`` the per-epoch arrays of a run
    with ``record=True``, ``result.plot()`` a figure.
    """

    _KEYWORDS = _RUN_KEYWORDS

    def __init__(self, data: Dict[str, Any]):
        self._cli_texts: List[Tuple[Tuple[Any, ...], str]] = []
        _to_keywords(data, self._KEYWORDS, (), self._cli_texts)
        self._record: Dict[str, Dict[str, Any]] = {}
        for p in data.get("policies", []):
            rec = p.pop("record", None)
            if rec is not None:
                for key in ("reward", "cost"):
                    rec[key].flags.writeable = False
                self._record[p["name"]] = rec
            reps = p.get("replication_rewards")
            if isinstance(reps, _np.ndarray):
                reps.flags.writeable = False
        self._data = data

    @property
    def policies(self) -> List[Dict[str, Any]]:
        """One dict per policy, the fields of the CLI's JSON (``replication_rewards`` as an array)."""
        return self._data["policies"]

    @property
    def bound(self) -> Optional[Dict[str, Any]]:
        """The Lagrangian bound's fields (``value``, ``lambda``, ``applicable``...), or None."""
        return self._data.get("bound")

    @property
    def backend(self) -> str:
        """The backend the run resolved to (``cpu``, ``cuda``, ``reference``)."""
        return self._data["backend"]

    @property
    def seed(self) -> int:
        """The seed the run used (with ``seed=None``, the one drawn): pass it to repeat the run."""
        return int(self._data["parameters"]["seed"])

    @property
    def parameters(self) -> Dict[str, Any]:
        """The run's settings as the CLI's JSON reports them."""
        return self._data["parameters"]

    @property
    def warnings(self) -> List[str]:
        """The run's warnings (a transient left in the measured epochs, a capped burn-in)."""
        return list(self._data.get("warnings") or [])

    def plot(self, kind: str = "auto", path: Optional[str] = None, title: Optional[str] = None):
        """A matplotlib Figure, drawn as ``crawleval plot`` draws the same JSON: each policy's
        mean reward with its 95% interval against the bound, and replication 0's reward per
        epoch with the discarded warm-up shaded (``kind``: ``auto``, ``rewards``, ``series``).
        ``path``: also write it (.png, .svg, .pdf). Needs matplotlib."""
        from . import plot as _plot

        fig = _plot.figure([_plot.check(self.to_dict(), "result")], kind, title)
        if path is not None:
            _plot.save(fig, str(path))
        return fig

    def __getitem__(self, name: str) -> Dict[str, Any]:
        for p in self.policies:
            if p["name"] == name:
                return p
        raise KeyError(f"no policy named {name!r} (have: {', '.join(self.names())})")

    def names(self) -> List[str]:
        """The policies' names, in the order given."""
        return [p["name"] for p in self.policies]

    def mean_reward(self, name: str) -> float:
        """A policy's mean reward per epoch."""
        return self[name]["mean_reward"]

    def replication_rewards(self, name: str) -> _np.ndarray:
        """Each replication's mean reward per measured epoch (read-only float64 array)."""
        return self[name]["replication_rewards"]

    def record(self, name: str) -> Dict[str, Any]:
        """With ``record=True``: ``reward`` and ``cost``, (replications, burn_in + epochs) float64
        arrays of every epoch's reward and crawl cost (burn-in included; the first ``burn_in``
        columns are discarded from the statistics), and ``burn_in``. With ``target_ci``, the
        replications first run (not the batches added)."""
        self[name]  # a KeyError naming the policies
        if name not in self._record:
            raise KeyError(f"policy {name!r} was not recorded: evaluate(..., record=True)")
        return self._record[name]

    def to_dict(self) -> Dict[str, Any]:
        """Everything as the CLI's JSON has it (lists, numbers, strings): ``crawleval run --json``."""
        out = _jsonable(self._data)
        for path, text in self._cli_texts:  # the CLI's sentences, as its JSON has them
            node = out
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = text
        for p in out.get("policies", []):
            if "replication_rewards" in (p.get("absent") or {}):
                p["replication_rewards"] = None  # as the CLI: more than 100000 replications
        return out

    def to_json(self, path: Optional[str] = None, indent: int = 2) -> str:
        """The CLI's JSON text; ``path``: also write it."""
        text = _json.dumps(self.to_dict(), indent=indent)
        if path is not None:
            with open(path, "w") as f:
                f.write(text + "\n")
        return text

    def to_dataframe(self, kind: str = "policies") -> Any:
        """A pandas DataFrame.

        ``"policies"`` (default): one row per policy, indexed by name, every scalar field of the
        policy's JSON (and ``bound``). ``"replications"``: columns ``policy``, ``replication``,
        ``reward``. ``"epochs"`` (``record=True``): columns ``policy``, ``replication``,
        ``epoch``, ``reward``, ``cost``, ``measured`` (False in the burn-in).
        """
        import pandas as pd

        if kind == "policies":
            rows = []
            for p in self.policies:
                rows.append({k: v for k, v in p.items()
                             if not isinstance(v, (list, dict, _np.ndarray))})
            df = pd.DataFrame(rows).set_index("name")
            b = self.bound
            if b and b.get("applicable"):
                df["bound"] = b.get("value")
            return df
        if kind == "replications":
            frames = [pd.DataFrame({"policy": p["name"],
                                    "replication": _np.arange(len(p["replication_rewards"])),
                                    "reward": _np.asarray(p["replication_rewards"])})
                      for p in self.policies]
            return pd.concat(frames, ignore_index=True)
        if kind == "epochs":
            if not self._record:
                raise ValueError("no epochs recorded: evaluate(..., record=True)")
            frames = []
            for name, rec in self._record.items():
                reps, epochs = rec["reward"].shape
                epoch = _np.tile(_np.arange(epochs), reps)
                frames.append(pd.DataFrame({
                    "policy": name,
                    "replication": _np.repeat(_np.arange(reps), epochs),
                    "epoch": epoch,
                    "reward": rec["reward"].reshape(-1),
                    "cost": rec["cost"].reshape(-1),
                    "measured": epoch >= rec["burn_in"],
                }))
            return pd.concat(frames, ignore_index=True)
        raise ValueError(f"kind must be 'policies', 'replications' or 'epochs', got {kind!r}")

    def to_arrow(self, kind: str = "policies") -> Any:
        """:meth:`to_dataframe` as a pyarrow Table (the policies' names as a column)."""
        from . import _arrow

        return _arrow.dataframe_to_table(self.to_dataframe(kind), index=kind == "policies")

    def to_parquet(self, path: str, kind: str = "policies") -> None:
        """:meth:`to_dataframe` written as a Parquet file (needs pyarrow)."""
        from . import _arrow

        _arrow.write_parquet(self.to_dataframe(kind), path, index=kind == "policies")

    def _header(self) -> str:
        return (f"crawleval.Result: {self._data['population']['sources']} sources, budget "
                f"{self._data['parameters']['budget']:g}, {self._data['parameters']['epochs']} "
                f"epochs, seed {self.seed}, backend {self.backend}")

    def __repr__(self) -> str:
        lines = [f"<{self._header()}>"]
        for p in self.policies:
            mean = p.get("mean_reward")
            shown = f"{mean:.6g}" if mean is not None else "n/a"
            reward = (p.get("metrics") or {}).get("reward") or {}
            line = (f"  {p['name']:<14} {shown}  "
                    f"{_interval(p.get('ci95_low'), p.get('ci95_high'), reward.get('no_interval'))}")
            gap = p.get("relative_gap_to_bound")
            if gap is not None:
                line += f"  gap to the bound {100 * gap:.2f}%"
                if gap < 0:
                    line += " (above an upper bound: the estimate's noise)"
            lines.append(line)
        b = self.bound
        if b and b.get("applicable"):
            lines.append(f"  {'bound':<14} {b['value']:.6g} (upper bound: no policy does better)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        cols = [c for c in ("mean_reward", "ci95_low", "ci95_high", "mean_cost_per_epoch",
                            "relative_gap_to_bound", "replications", "burn_in")
                if c in self.to_dataframe().columns]
        table = self.to_dataframe()[cols].to_html(float_format=lambda v: f"{v:.6g}")
        warn = "".join(f"<p>warning: {html.escape(w)}</p>" for w in self.warnings)
        bound = ""
        if self.bound and self.bound.get("applicable"):
            bound = f"<p>Lagrangian bound {self.bound['value']:.6g}</p>"
        return f"<p><b>{html.escape(self._header())}</b></p>{table}{bound}{warn}"


def evaluate(
    population: Union[Population, Any],
    budget: float,
    policies: Union[_PolicyLike, Sequence[_PolicyLike]] = ("whittle", "greedy", "round_robin"),
    *,
    model: str = "deterministic",
    observe: str = "full",
    start: Optional[str] = None,
    utility: str = "exponential",
    epochs: int = 1000,
    burn_in: Union[int, str] = "auto",
    max_burn_in: int = 5000,
    replications: int = 1,
    target_ci: float = 0.0,
    max_replications: int = 100000,
    backend: str = "auto",
    seed: Any = 1,
    epoch_length: float = 1.0,
    threads: int = 0,
    bound: bool = True,
    progress: Union[bool, Callable[[str, int, int], Any], None] = False,
    record: bool = False,
    index_grid: int = 800,
    array_module: Any = None,
) -> Result:
    """Simulates each policy and returns their mean rewards per epoch with 95% CIs, and the
    Lagrangian upper bound, as ``crawleval run`` does with the same settings.

    policies: names, the ones ``crawleval run --policy`` takes (``BUILTIN_POLICIES``:
      ``whittle``, ``greedy``, ``round_robin``, ``random``, ``static``, ``lip``;
      ``PAPER_POLICIES``: the papers' policies run as score functions, ``whittle_numerical``,
      ``whittle_expiry_paper``, ``whittle_mixed``, ``greedy_mixed``, ``adaptive_whittle``), or
      your own policies: a score function ``score(state, age, params)``, a policy object, a
      :class:`PolicyFactory`, or a ``(name, policy)`` pair. A score function is called once per
      epoch (and replication) with
        - ``state``: what the policy observes per source (the utility waiting; under
          ``observe="belief"`` its expected value given the age), float64;
        - ``age``: epochs of content since each source's last crawl (1 right after a crawl;
          before its first crawl: ``epoch`` with ``start="empty"``, ``epoch + 1`` with the
          other starts), float64;
        - ``params``: a :class:`PolicyParams` (per-source constants, ``epoch``, ``replication``,
          and ``collected``, the previous epoch's reward per source);
      and returns one score per source. The arrays are read-only (no flag makes them writable):
      ``state``, ``age`` and ``collected`` are the engine's own, rewritten in place every epoch
      (``np.copy`` what you keep). Scores returned as a float64 contiguous array are read in
      place (no copy) before the next call. The sources with the highest scores are crawled,
      ties by lower id, up to the budget (the longest prefix whose cost fits); NaN ranks last.
      The rest (rewards, replications, CIs, bound) is exactly as for the built-in policies. User
      policies run on the CPU engine unless ``backend="cuda"`` (below).

      Policies with state: a score function must keep nothing between calls, since the engine
      runs it for several independent runs (the warm-up pilot, every replication). A policy
      that needs memory is a policy object (``__call__(state, age, params)`` and
      ``reset(params)``; ``reset`` is called before the first epoch of every run, each pilot and
      each replication, ``params.epoch == 0``) or ``PolicyFactory(factory)`` (``factory(params)``
      makes the run's score function, afresh before every run): every run starts from a fresh
      state, so replications stay independent.

      With ``backend="cuda"`` user policies run on the GPU: ``state``, ``age``, ``collected`` and
      the ``params`` columns arrive as ``array_module``'s device arrays (CuPy or PyTorch: see
      array_module), and the policy returns its scores as a device array of that module, read in
      place. ``state``, ``age`` and ``collected`` are copies made for the call (writable; the
      engine never reads them back), valid during the call. A policy written with the array API
      (``xp = type(state)``'s namespace) runs on either backend. ``backend="auto"`` keeps user
      policies on the CPU: the GPU path has not yet run on a device.
    backend: ``auto`` (the GPU when one is visible, else the CPU), ``cpu``, ``reference``, ``cuda``.
    burn_in: epochs each replication runs before measuring: ``"auto"`` (MSER-5 on a pilot run of
      replication 0, per policy, at most ``max_burn_in``; the result says which epochs were
      discarded and why, under ``warm_up``) or a number.
    target_ci: add replications until the 95% half-width is at most this fraction of the mean.
    seed: a whole number, None (fresh entropy), a numpy ``Generator`` or ``SeedSequence``; the
      seed used is ``result.seed``.
    progress: True for a progress bar (tqdm when installed), or a function ``(label, done,
      total)`` called a few times a second. Ctrl-C stops the run and raises KeyboardInterrupt.
    record: keep every epoch's reward and crawl cost of every replication
      (``result.record(name)``, ``result.to_dataframe("epochs")``).
    index_grid: ``whittle_numerical``'s lattice states per class (8 to 4000; the solve is
      O(G^3)), as ``--index-grid``.
    array_module: with ``backend="cuda"``, the module whose device arrays a user policy gets and
      returns: ``"cupy"``, ``"torch"`` or the module itself (any with ``from_dlpack``). Default:
      CuPy, else PyTorch, whichever is installed.

    A bad setting raises :class:`InputError` (a ValueError) naming its keyword (``budget=``).
    """
    pop = _population(population)
    n = len(pop)
    budget = _number("budget", budget)
    epochs = _whole("epochs", epochs, 0)  # 0: the engine says "epochs= must be at least 1"
    burn_in_auto = isinstance(burn_in, str) and burn_in == "auto"
    if isinstance(burn_in, str) and not burn_in_auto:
        raise InputError(f"burn_in= must be 'auto' or a whole number, got {burn_in!r}")
    burn_in = 0 if burn_in_auto else _whole("burn_in", burn_in, 0)
    max_burn_in = _whole("max_burn_in", max_burn_in, 1, 2**31 - 1)
    replications = _whole("replications", replications, 1, 2**32 - 1)
    max_replications = _whole("max_replications", max_replications, 1, 2**32 - 1)
    seed = _seed(seed)
    threads = _whole("threads", threads, 0, 2**31 - 1)
    index_grid = _whole("index_grid", index_grid, 8, 4000)
    epoch_length = _number("epoch_length", epoch_length)
    target_ci = _number("target_ci", target_ci)
    for name, value in (("model", model), ("observe", observe), ("utility", utility),
                        ("backend", backend)):
        _text(name, value)
    if start is not None:
        _text("start", start)
    cache: Dict[str, PolicyParams] = {}

    def params_of() -> PolicyParams:
        if "p" not in cache:
            cache["p"] = _policy_params(pop, epoch_length, budget)
        return cache["p"]

    on_device = isinstance(backend, str) and backend == "cuda"
    if array_module is not None and not on_device:
        raise InputError("array_module= is for user policies on the GPU: give it with "
                         "backend='cuda'")
    if array_module is not None and on_device:
        _device_arrays(array_module)  # a bad module fails here, before any work
    specs = _policies(policies, params_of, n,
                      (lambda: _device_arrays(array_module)) if on_device else None)
    bar = _Progress() if progress is True else None
    callback = bar if bar is not None else (progress if callable(progress) else None)
    try:
        with _python_keywords():
            data = _core.evaluate(
                pop, budget, specs, model, observe, start, utility, int(epochs), int(burn_in),
                burn_in_auto, int(max_burn_in), int(replications), target_ci,
                int(max_replications), backend, seed, epoch_length, int(threads),
                _flag("bound", bound), callback, _flag("record", record), int(index_grid),
            )
    finally:
        if bar is not None:
            bar.close()
    return Result(data)


def bound(
    population: Union[Population, Any],
    budget: float,
    *,
    model: str = "deterministic",
    observe: str = "full",
    start: Optional[str] = None,
    utility: str = "exponential",
    epoch_length: float = 1.0,
    backend: str = "auto",
) -> Dict[str, Any]:
    """The Lagrangian upper bound on any policy's long-run reward per epoch (``crawleval bound
    --json``): ``value``, ``lambda``, ``crawl_rate``; ``applicable`` is False (with a ``note``)
    for the stochastic model under full observation."""
    pop = _population(population)
    budget, epoch_length = _number("budget", budget), _number("epoch_length", epoch_length)
    with _python_keywords():
        return _core.bound(pop, budget, _text("model", model), _text("observe", observe),
                           None if start is None else _text("start", start),
                           _text("utility", utility), epoch_length, _text("backend", backend))


def optimal(
    population: Union[Population, Any],
    budget: float,
    *,
    epoch_length: float = 1.0,
    max_states: int = 2_000_000,
    tolerance: float = 1e-9,
    threads: int = 0,
    max_work: float = 1e11,
) -> Dict[str, Any]:
    """The exact optimum of a small deterministic instance (at most 6 sources, unit costs,
    integer budget), as ``crawleval optimal --json`` gives it: ``optimal_reward`` only where the
    lower and upper capped programmes agree (``closed``), else ``None`` and the bracket
    ``[optimal_reward_low, optimal_reward_high]`` (raise ``max_states``); see docs/model.md.
    ``tolerance``: the relative width of each programme's gain bracket. ``max_work``: at most
    this many state-action evaluations over every solve (past it, ``stopped_by_work_limit`` and
    the bracket reached)."""
    max_states = _whole("max_states", max_states, 1)
    threads = _whole("threads", threads, 0, 2**31 - 1)
    pop = _population(population)
    budget, epoch_length = _number("budget", budget), _number("epoch_length", epoch_length)
    with _python_keywords():
        return _core.optimal(pop, budget, epoch_length, int(max_states),
                             _number("tolerance", tolerance), int(threads),
                             _number("max_work", max_work))


def whittle_index(x: Any, lambda_: Any, xi: Any, mu: Any, cost: Any = 1.0,
                  T: float = 1.0) -> _np.ndarray:
    """The Whittle index gamma(x) of Theorem 1, element-wise with numpy broadcasting (the
    engine's function, bit for bit)."""
    arrays = _np.broadcast_arrays(*(_np.asarray(a, dtype=_np.float64) for a in (x, lambda_, xi, mu, cost)))
    shape = arrays[0].shape
    flat = [_np.ascontiguousarray(a.reshape(-1)) for a in arrays]
    return _core.whittle_index(*flat, float(T)).reshape(shape)


def resolve_backend(backend: str = "auto") -> str:
    """The backend ``backend`` resolves to on this machine (``auto``: ``cuda`` or ``cpu``)."""
    return _core.resolve_backend(backend)


def sync_optimum(instance: SyncInstance, epsilon: float = 0.0) -> Tuple[float, _np.ndarray]:
    """Problem 1's optimum J* of a sync-bandit instance and the optimal rates (with epsilon > 0
    the optimum over K_eps, what a learner probing a fraction epsilon can reach)."""
    return _core.sync_optimum(instance, float(epsilon))


def sync_learn(
    instance: SyncInstance,
    algorithm: str = "mirrorsync",
    *,
    epsilon: float = 0.05,
    eta: Optional[float] = None,
    cycle: Optional[float] = None,
    rounds: int = 240,
    seed: Any = 0,
    run: int = 0,
    runs: Optional[int] = None,
    gradient: str = "mean",
    local_budget: str = "public-code",
    reschedule: str = "public-code",
) -> Any:
    """A sync-bandit learner (``mirrorsync``, ``async-mirrorsync``, ``async-psgd``) on
    ``instance``. ``eta`` and ``cycle`` default to the public code's tuned values for the
    algorithm and the instance's family (as ``crawleval learn`` does).

    Without ``runs``: one run (number ``run``), the policy cost J(r) after every update as an
    array (index 0: the initial policy). With ``runs=R``: R independent runs on the instance, as
    ``crawleval learn ALGORITHM --instance FILE --runs R``: a DataFrame indexed by update with the
    columns of its ``--curve`` (``round``, ``mean_j`` and its ``ci95_low``/``ci95_high`` over runs,
    the regrets with theirs); ``df.attrs`` holds ``j_star``, ``j_star_epsilon``,
    ``exploration_gap``, ``runs``, ``epsilon``, ``learning_rate``, ``cycle``, ``rounds`` and
    ``regret_exponent`` (the slope of log regret against log rounds from round 10 on).

    Where crawleval departs from the paper's pseudo-code, the pseudo-code's rule is selectable (as
    ``--gradient``, ``--local-budget``, ``--reschedule``): ``gradient="first"`` keeps a
    MirrorSync round's first gradient sample (Algorithm 1, lines 14-18) instead of averaging
    them; ``local_budget="paper"`` and ``reschedule="paper"`` run Algorithm 2's line 35 and lines
    37-40 as printed instead of the authors' public code's rules.
    """
    seed = _seed(seed)
    epsilon = _number("epsilon", epsilon)
    rounds = _whole("rounds", rounds, 1, 2**32 - 1)
    eta = None if eta is None else _number("eta", eta)
    cycle = None if cycle is None else _number("cycle", cycle)
    keywords = {"--epsilon": "epsilon=", "--learning-rate": "eta=", "--cycle": "cycle=",
                "--rounds": "rounds=", "--seed": "seed=", "--runs": "runs="}
    rules = (_text("gradient", gradient), _text("local_budget", local_budget),
             _text("reschedule", reschedule))
    if runs is None:
        run = _whole("run", run, 0, 2**32 - 1)
        with _python_keywords(keywords):
            return _core.sync_learn(instance, _text("algorithm", algorithm), epsilon, eta, cycle,
                                    rounds, seed, run, *rules)
    import pandas as pd

    runs = _whole("runs", runs, 1, 2**32 - 1)
    with _python_keywords(keywords):
        e = _core.sync_experiment(instance, _text("algorithm", algorithm), epsilon, eta, cycle,
                                  rounds, seed, runs, *rules)
    columns = ("round", "mean_j", "ci95_low", "ci95_high", "regret_mean", "regret_ci95_low",
               "regret_ci95_high", "in_policy_regret_mean", "in_policy_ci95_low",
               "in_policy_ci95_high")
    df = pd.DataFrame({c: e[c] for c in columns})
    df.index.name = "update"
    df.attrs.update({k: v for k, v in e.items() if k not in columns})
    return df


def lspe_learn(
    population: Union[Population, Any, None] = None,
    *,
    steps: int = 10000,
    kappa: float = 2.0,
    gamma: float = 0.05,
    start: float = 0.5,
    operating: str = "randomised",
    top: int = 1,
    critic: str = "crawled",
    replications: int = 20,
    seed: Any = 1,
    trace: bool = False,
) -> Dict[str, Any]:
    """The LSPE(0) Whittle learner of the learning paper (section V), as ``crawleval learn lspe
    --json`` gives it, on ``population`` (default: the papers' 4-source example).

    ``operating="randomised"`` crawls each source with its logit probability (the paper's
    experiment, one crawl per step only on average); ``"top"`` crawls exactly ``top`` sources per
    step, those with the largest margin over their learned thresholds (the policy the paper
    operates). ``critic="crawled"`` puts the crawled utility in the critic's iterates (the
    objective); ``"paper"`` the sum of every state, as the paper's iterates print it. ``start``
    places the thresholds in [u_i, u*_i]. With ``trace=True`` the result's ``trace`` holds
    replication 0's ``state``, ``learned`` and ``exact`` thresholds and ``crawled`` flags, step
    by step (step-major, the sources in order).
    """
    pop = _core.Population.paper_example() if population is None else _population(population)
    keywords = {"--steps": "steps=", "--kappa": "kappa=", "--gamma": "gamma=",
                "--start-thresholds": "start=", "--top": "top=", "--replications": "replications=",
                "--seed": "seed="}
    with _python_keywords(keywords):
        return _core.lspe_learn(pop, _whole("steps", steps, 2, 2**32 - 1), _number("kappa", kappa),
                                _number("gamma", gamma), _number("start", start),
                                _text("operating", operating), _whole("top", top, 1, 64),
                                _text("critic", critic),
                                _whole("replications", replications, 1, 2**32 - 1), _seed(seed),
                                _flag("trace", trace))


def relaxed_policy(
    population: Union[Population, Any],
    budget: float,
    *,
    epochs: int = 10000,
    burn_in: int = 1000,
    replications: int = 20,
    seed: Any = 1,
    dual_descent: bool = False,
    step: float = 1.0,
    lambda0: float = 0.0,
    every: int = 1,
) -> Dict[str, Any]:
    """The relaxed problem's own policies, as ``crawleval relaxed --json`` gives them (deterministic
    model): the average-budget policy, which crawls every source whose index exceeds the bound's
    multiplier ``lambda`` and randomises at its ties so that the spend averages exactly
    ``budget`` (its exact long-run ``reward`` equals the ``bound``; the simulation's
    ``simulated_reward``, ``simulated_spend`` and ``worst_epoch_spend``), and with
    ``dual_descent=True`` the online dual descent over ``epochs`` epochs (``dual_descent``'s
    summary, and ``curve``: ``epoch``, ``lambda``, ``lambda_average``, ``spend_average``,
    ``reward_average`` every ``every`` epochs). See docs/model.md.
    """
    pop = _population(population)
    keywords = {"--budget": "budget=", "--epochs": "epochs=", "--burn-in": "burn_in=",
                "--replications": "replications=", "--seed": "seed=", "--step": "step=",
                "--lambda0": "lambda0=", "--every": "every="}
    with _python_keywords(keywords):
        return _core.relaxed_policy(pop, _number("budget", budget),
                                    _whole("epochs", epochs, 2, 2**32 - 1),
                                    _whole("burn_in", burn_in, 0, 2**32 - 1),
                                    _whole("replications", replications, 1, 100000), _seed(seed),
                                    _flag("dual_descent", dual_descent), _number("step", step),
                                    _number("lambda0", lambda0),
                                    _whole("every", every, 1, 2**32 - 1))


from . import fresh  # noqa: E402  (the freshness model; it uses the helpers above)

# The typing names served the annotations above (strings, from __future__): out of the namespace.
del annotations, Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union
