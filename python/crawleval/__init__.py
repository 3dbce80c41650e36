"""crawleval from Python: evaluate crawl-scheduling policies, the built-in ones and your own.

The engine is the command-line tool's (C++, OpenMP, CUDA when a GPU is visible); this package
checks and converts arguments, and returns results with the same fields as ``crawleval run --json``.

    >>> import crawleval as ce
    >>> pop = ce.Population.synthetic(100_000, seed=1)
    >>> res = ce.evaluate(pop, budget=1_000, policies=["whittle", "greedy"], epochs=200)
    >>> res.to_dataframe()[["mean_reward", "ci95_low", "ci95_high"]]

A policy of your own is a function ``score(state, age, params) -> scores`` called once per epoch
(see :func:`evaluate`); the sources with the highest scores are crawled, ties by lower id, within
the budget, exactly as for the built-in policies.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

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
    "Result",
    "evaluate",
    "bound",
    "optimal",
    "whittle_index",
    "resolve_backend",
    "SyncInstance",
    "sync_optimum",
    "sync_learn",
    "BUILTIN_POLICIES",
    "PAPER_POLICIES",
    "fresh",
]

__version__ = _core.__version__  # CMakeLists.txt's project(VERSION), as `crawleval --version`

#: The built-in policies (``crawleval run --policy``).
BUILTIN_POLICIES = ("whittle", "greedy", "round_robin", "random", "static")
#: The papers' policies that run as score functions on the CPU (``crawleval run --policy``).
PAPER_POLICIES = ("whittle_numerical", "whittle_expiry_paper", "adaptive_whittle")

# The engine's messages name the command line's flags; from Python they name the keyword.
_RUN_KEYWORDS = {
    "--budget": "budget=", "--epochs": "epochs=", "--burn-in": "burn_in=",
    "--max-burn-in": "max_burn_in=", "--replications": "replications=",
    "--max-replications": "max_replications=", "--target-ci": "target_ci=", "--seed": "seed=",
    "--epoch-length": "epoch_length=", "--threads": "threads=", "--model": "model=",
    "--observe": "observe=", "--start": "start=", "--utility": "utility=",
    "--backend": "backend=", "--policy": "policies=", "--no-bound": "bound=False",
}


@contextlib.contextmanager
def _python_keywords(mapping: Dict[str, str] = _RUN_KEYWORDS) -> Iterator[None]:
    """Re-raises the engine's InputError with the CLI's flags replaced by the Python keywords."""
    try:
        yield
    except InputError as e:
        text = str(e)
        pattern = re.compile(r"--[a-z][a-z0-9-]*")
        new = pattern.sub(lambda m: mapping.get(m.group(0), m.group(0)), text)
        if new == text:
            raise
        raise InputError(new) from None


def _seed(value: Any, name: str = "seed") -> int:
    """A seed as the engine takes it: a whole number in [0, 2^64 - 1], None (fresh entropy), a
    numpy Generator (one draw from it) or SeedSequence (its first 64-bit word)."""
    if value is None:
        return int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
    if isinstance(value, np.random.SeedSequence):
        return int(value.generate_state(1, np.uint64)[0])
    if isinstance(value, np.random.Generator):
        return int(value.integers(0, 2**64 - 1, dtype=np.uint64, endpoint=True))
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(
            f"{name}= must be a whole number, None, a numpy Generator or SeedSequence; got "
            f"{value!r}"
        )
    if not 0 <= int(value) <= 2**64 - 1:
        raise InputError(f"{name}= must lie in [0, 2^64 - 1], got {value}")
    return int(value)

SyncInstance = _core.SyncInstance

_FLOAT_COLUMNS = ("lambda", "xi", "mu", "cost", "x0")


def _column(name: str, values: Any, n: Optional[int]) -> np.ndarray:
    """One column as a 1-D numpy array of a numeric dtype, or a ValueError naming it."""
    a = np.asarray(values)
    if a.ndim != 1:
        raise InputError(f"column '{name}' must be one-dimensional, got shape {a.shape}")
    if n is not None and a.shape[0] != n:
        raise InputError(f"column '{name}' has {a.shape[0]} rows, 'lambda' has {n}")
    if a.dtype.kind not in "biuf":
        raise InputError(f"column '{name}' must be numeric, got dtype {a.dtype}")
    return a


def _float_column(name: str, values: Any, n: Optional[int]) -> np.ndarray:
    # No copy when the column already is contiguous float64: the engine reads it in place.
    return np.ascontiguousarray(_column(name, values, n), dtype=np.float64)


def _id_column(values: Any, n: int) -> np.ndarray:
    a = _column("id", values, n)
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)) or np.any(a != np.floor(a)):
            bad = int(np.flatnonzero(~np.isfinite(a) | (a != np.floor(a)))[0])
            raise InputError(f"column 'id': row {bad}: ids must be whole numbers, got {a[bad]!r}")
    if np.any(a < 0):
        bad = int(np.flatnonzero(a < 0)[0])
        raise InputError(f"column 'id': row {bad}: ids must be >= 0, got {a[bad]!r}")
    if a.dtype.kind == "f" and np.any(a >= 2.0**64):
        bad = int(np.flatnonzero(a >= 2.0**64)[0])
        raise InputError(f"column 'id': row {bad}: id {a[bad]!r} is too large")
    return np.ascontiguousarray(a, dtype=np.uint64)


def _expiry_column(values: Any, n: int) -> np.ndarray:
    """Content lifetimes in epochs: whole numbers >= 1, or 0 / inf for never."""
    raw = _column("expiry", values, n)
    a = raw.astype(np.float64)
    never = np.isinf(a) & (a > 0)
    a = np.where(never, 0.0, a)
    # (At most 2**31 - 16, the age a full start has: belief observation cannot tell older copies.)
    ok = np.isfinite(a) & (a >= 0) & (a == np.floor(a)) & (a <= 2147483632)
    if not np.all(ok):
        bad = int(np.flatnonzero(~ok)[0])
        raise InputError(
            f"column 'expiry': row {bad}: must be a whole number of epochs from 1 to "
            f"2147483632, or 0 or inf for never, got {raw[bad]!r}"
        )
    return np.ascontiguousarray(a, dtype=np.uint32)


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
    ) -> "Population":
        """A population from array-likes of equal length (numpy arrays, lists, pandas Series).

        float64 columns are read without conversion; other numeric dtypes are converted.
        Invalid values raise :class:`InputError` (a ValueError) naming the field and the source.
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
        )
        return cls(core)

    @classmethod
    def from_dataframe(cls, df: Any, origin: str = "DataFrame") -> "Population":
        """A population from a pandas DataFrame with columns ``lambda``, ``xi``, ``mu`` and
        optionally ``cost``, ``id``, ``x0``, ``expiry`` (other columns are ignored)."""
        columns = list(df.columns)
        missing = [c for c in ("lambda", "xi", "mu") if c not in columns]
        if missing:
            raise InputError(
                f"{origin}: missing column(s) {', '.join(missing)} (it has: "
                f"{', '.join(map(str, columns))})"
            )
        if "observe" in columns:  # dropping it would run full observation where it says belief
            raise InputError(
                f"{origin}: the 'observe' column (mixed observation) is read from a sources CSV "
                "(Population.read), not from a DataFrame yet; drop the column for the observation "
                "of evaluate(observe=...)"
            )

        def col(name: str) -> Any:
            return df[name].to_numpy() if name in columns else None

        return cls.from_arrays(
            col("lambda"), col("xi"), col("mu"), col("cost"), col("id"), col("x0"),
            col("expiry"), origin=origin,
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
    def read(cls, path: str) -> "Population":
        """A sources CSV (``crawleval run --sources``) or a ``.cpop`` columnar file."""
        return cls(_core.Population.read(str(path)))

    def write(self, path: str) -> None:
        """Writes a sources CSV, or the columnar format when the name ends in ``.cpop``."""
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
    def lambda_(self) -> np.ndarray:
        """Arrival rates, in id order (read-only view of the engine's column)."""
        return self._pop.lambda_

    @property
    def xi(self) -> np.ndarray:
        """Mean initial utilities, in id order (read-only view)."""
        return self._pop.xi

    @property
    def mu(self) -> np.ndarray:
        """Decay rates, in id order (read-only view)."""
        return self._pop.mu

    @property
    def cost(self) -> np.ndarray:
        """Crawl costs, in id order (read-only view)."""
        return self._pop.cost

    @property
    def id(self) -> np.ndarray:
        """Source ids, ascending (read-only view)."""
        return self._pop.id

    @property
    def x0(self) -> Optional[np.ndarray]:
        """Initial states (read-only view), or None when the population has none."""
        return self._pop.x0

    @property
    def expiry(self) -> Optional[np.ndarray]:
        """Content lifetimes in epochs (0: never; read-only view), or None."""
        return self._pop.expiry

    def to_dataframe(self) -> Any:
        """The columns as a pandas DataFrame (``lambda``, ``xi``, ``mu``, ``cost``, ``id``, and
        ``x0`` / ``expiry`` when present)."""
        import pandas as pd

        data = {"id": self.id, "lambda": self.lambda_, "xi": self.xi, "mu": self.mu,
                "cost": self.cost}
        if self.x0 is not None:
            data["x0"] = self.x0
        if self.expiry is not None:
            data["expiry"] = self.expiry
        return pd.DataFrame(data)


def _whole(name: str, value: Any, low: int, high: int = 2**64 - 1) -> int:
    """An integer setting in [low, high], or an InputError naming its keyword."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name}= must be a whole number, got {value!r}")
    if not low <= int(value) <= high:
        raise InputError(f"{name}= must lie in [{low}, {high}], got {value}")
    return int(value)


def _flag(name: str, value: Any) -> bool:
    """A yes/no setting: True or False (bool(value) took learn="no" as True)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name}= must be True or False, got {value!r}")
    return bool(value)


def _number(name: str, value: Any) -> float:
    """A real setting, or an InputError naming its keyword (the engine checks its range)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
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


@dataclass(frozen=True)
class PolicyParams:
    """What a user policy may read besides the state: per-source constants (numpy arrays, in
    id order, read-only) and where the run is.

    ``alpha = exp(-mu T)``, ``u = lambda xi (1 - alpha) / mu`` (the mean content arriving per
    epoch), ``u_star = lambda xi / mu`` (the state of a source never crawled), ``inv_cost = 1 /
    cost`` (the built-in greedy policy scores ``state * inv_cost``). ``collected``: what each
    source gave at the previous epoch's crawl (0 where it was not crawled, and at epoch 0): the
    rewards a learning policy learns from; ``collected.sum()`` is the previous epoch's reward.
    """

    lambda_: np.ndarray
    xi: np.ndarray
    mu: np.ndarray
    cost: np.ndarray
    inv_cost: np.ndarray
    alpha: np.ndarray
    u: np.ndarray
    u_star: np.ndarray
    id: np.ndarray
    epoch_length: float
    budget: float
    epoch: int = 0
    replication: int = 0
    collected: Optional[np.ndarray] = None


def _policy_params(pop: "_core.Population", epoch_length: float, budget: float) -> PolicyParams:
    # The engine's own constants (model.hpp, derive_params), bit for bit.
    derived = _core.source_params(pop, float(epoch_length))
    arrays = dict(lambda_=pop.lambda_, xi=pop.xi, mu=pop.mu, cost=pop.cost, id=pop.id, **derived)
    for a in arrays.values():
        a.flags.writeable = False
    return PolicyParams(epoch_length=float(epoch_length), budget=float(budget), **arrays)


ScoreFunction = Callable[[np.ndarray, np.ndarray, PolicyParams], Any]
PolicyLike = Union[str, ScoreFunction, Tuple[str, ScoreFunction]]


def _score_adapter(name: str, fn: ScoreFunction, params: PolicyParams, n: int):
    """The engine's callback: (state, age, collected, replication, epoch) -> float64 scores.

    ``state`` and ``age`` are the engine's own arrays (it writes them in place every epoch),
    handed on as read-only; float64 contiguous scores are read in place, others converted once.
    """
    import dataclasses

    views: Dict[int, np.ndarray] = {}

    def read_only(a: np.ndarray) -> np.ndarray:
        v = views.get(id(a))
        if v is None or v.base is not a:
            v = a.view()
            v.flags.writeable = False
            views[id(a)] = v
        return v

    def call(state: np.ndarray, age: np.ndarray, collected: np.ndarray, replication: int,
             epoch: int) -> np.ndarray:
        p = dataclasses.replace(params, epoch=int(epoch), replication=int(replication),
                                collected=read_only(collected))
        out = fn(read_only(state), read_only(age), p)
        if not isinstance(out, np.ndarray):
            out = np.asarray(out)
        if out.shape != (n,):
            raise ValueError(
                f"policy '{name}' returned scores of shape {out.shape}; expected ({n},), one "
                f"score per source"
            )
        if out.dtype.kind not in "biuf":
            raise ValueError(f"policy '{name}' returned scores of dtype {out.dtype}; expected numbers")
        if out.dtype != np.float64 or not out.flags.c_contiguous:
            out = np.ascontiguousarray(out, dtype=np.float64)
        return out

    return call


def _policies(policies: Union[PolicyLike, Iterable[PolicyLike]], params_of, n: int) -> list:
    single_pair = (isinstance(policies, tuple) and len(policies) == 2
                   and isinstance(policies[0], str) and callable(policies[1]))
    if isinstance(policies, str) or callable(policies) or single_pair:
        policies = [policies]
    out: list = []
    names = set()
    for p in policies:
        if isinstance(p, str):
            out.append(p)
            name = p
        else:
            if isinstance(p, tuple):
                if len(p) != 2 or not isinstance(p[0], str) or not callable(p[1]):
                    raise TypeError("a policy given as a tuple must be (name, score function)")
                name, fn = p
            elif callable(p):
                fn = p
                name = getattr(p, "__name__", None) or type(p).__name__
            else:
                raise TypeError(
                    f"a policy must be a name ({', '.join(BUILTIN_POLICIES)}), a score function "
                    f"or (name, score function); got {type(p).__name__}"
                )
            out.append((name, _score_adapter(name, fn, params_of(), n)))
        if name in names:
            raise InputError(f"policy '{name}' is given twice")
        names.add(name)
    return out


class _Progress:
    """progress=True: a tqdm bar per policy when tqdm is installed, else a line on stderr."""

    def __init__(self) -> None:
        try:
            from tqdm.auto import tqdm  # type: ignore

            self._tqdm = tqdm
        except ImportError:
            self._tqdm = None
        self._bar = None
        self._label = None

    def __call__(self, label: str, done: int, total: int) -> None:
        if label != self._label:
            self.close()
            self._label = label
            if self._tqdm is not None:
                self._bar = self._tqdm(total=total, desc=label, unit="epoch", leave=False)
        if self._bar is not None:
            self._bar.n = done
            self._bar.refresh()
        else:
            sys.stderr.write(f"\r  {label}: {done}/{total} epochs ({100.0 * done / max(total, 1):.0f}%)   ")
            sys.stderr.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self._label is not None:
            sys.stderr.write("\r" + " " * 72 + "\r")
            sys.stderr.flush()
        self._label = None


def _jsonable(value: Any) -> Any:
    """A deep copy with numpy arrays and scalars as lists and Python numbers (json.dumps takes it)."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
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

    def __init__(self, data: Dict[str, Any]):
        self._record: Dict[str, Dict[str, Any]] = {}
        for p in data.get("policies", []):
            rec = p.pop("record", None)
            if rec is not None:
                for key in ("reward", "cost"):
                    rec[key].flags.writeable = False
                self._record[p["name"]] = rec
            reps = p.get("replication_rewards")
            if isinstance(reps, np.ndarray):
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

    def replication_rewards(self, name: str) -> np.ndarray:
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
        for p in out.get("policies", []):
            if "replication_rewards" in (p.get("absent") or {}):
                p["replication_rewards"] = None  # as the CLI: more than 100000 replications
        return out

    def to_json(self, path: Optional[str] = None, indent: int = 2) -> str:
        """The CLI's JSON text; ``path``: also write it."""
        text = json.dumps(self.to_dict(), indent=indent)
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
                             if not isinstance(v, (list, dict, np.ndarray))})
            df = pd.DataFrame(rows).set_index("name")
            b = self.bound
            if b and b.get("applicable"):
                df["bound"] = b.get("value")
            return df
        if kind == "replications":
            frames = [pd.DataFrame({"policy": p["name"],
                                    "replication": np.arange(len(p["replication_rewards"])),
                                    "reward": np.asarray(p["replication_rewards"])})
                      for p in self.policies]
            return pd.concat(frames, ignore_index=True)
        if kind == "epochs":
            if not self._record:
                raise ValueError("no epochs recorded: evaluate(..., record=True)")
            frames = []
            for name, rec in self._record.items():
                reps, epochs = rec["reward"].shape
                epoch = np.tile(np.arange(epochs), reps)
                frames.append(pd.DataFrame({
                    "policy": name,
                    "replication": np.repeat(np.arange(reps), epochs),
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
            lo, hi = p.get("ci95_low"), p.get("ci95_high")
            ci = f"[{lo:.6g}, {hi:.6g}]" if lo is not None and hi is not None else "n/a"
            mean = p.get("mean_reward")
            shown = f"{mean:.6g}" if mean is not None else "n/a"
            lines.append(f"  {p['name']:<14} {shown}  95% CI {ci}")
        b = self.bound
        if b and b.get("applicable"):
            lines.append(f"  {'bound':<14} {b['value']:.6g}")
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
    policies: Union[PolicyLike, Sequence[PolicyLike]] = ("whittle", "greedy", "round_robin", "random"),
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
) -> Result:
    """Simulates each policy and returns their mean rewards per epoch with 95% CIs, and the
    Lagrangian upper bound, as ``crawleval run`` does with the same settings.

    policies: built-in names (``whittle``, ``greedy``, ``round_robin``, ``random``, ``static``),
      or your own policies: a function ``score(state, age, params)`` or a ``(name, function)``
      pair. It is called once per epoch (and replication) with
        - ``state``: what the policy observes per source (the utility waiting; under
          ``observe="belief"`` its expected value given the age), float64, read-only;
        - ``age``: epochs of content since each source's last crawl (1 right after a crawl;
          before its first crawl: ``epoch`` with ``start="empty"``, ``epoch + 1`` with the
          other starts), float64, read-only;
        - ``params``: a :class:`PolicyParams` (per-source constants, ``epoch``, ``replication``,
          and ``collected``, the previous epoch's reward per source);
      ``state``, ``age`` and ``collected`` are the engine's own arrays, handed over without a
      copy and rewritten in place every epoch: ``np.copy`` what you keep across epochs. Scores
      returned as a float64 contiguous array are read in place (no copy) before the next call.
      and returns one score per source. The sources with the highest scores are crawled, ties by
      lower id, up to the budget (the longest prefix whose cost fits); NaN ranks last. The rest
      (rewards, replications, CIs, bound) is exactly as for the built-in policies. User policies
      run on the CPU engine whatever ``backend`` says.
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

    specs = _policies(policies, params_of, n)
    bar = _Progress() if progress is True else None
    callback = bar if bar is not None else (progress if callable(progress) else None)
    try:
        with _python_keywords():
            data = _core.evaluate(
                pop, budget, specs, model, observe, start, utility, int(epochs), int(burn_in),
                burn_in_auto, int(max_burn_in), int(replications), target_ci,
                int(max_replications), backend, seed, epoch_length, int(threads),
                _flag("bound", bound), callback, _flag("record", record),
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
) -> Dict[str, Any]:
    """The exact optimum of a small deterministic instance (at most 6 sources, unit costs,
    integer budget) by relative value iteration (``crawleval optimal --json``)."""
    max_states = _whole("max_states", max_states, 1)
    threads = _whole("threads", threads, 0, 2**31 - 1)
    pop = _population(population)
    budget, epoch_length = _number("budget", budget), _number("epoch_length", epoch_length)
    with _python_keywords():
        return _core.optimal(pop, budget, epoch_length, int(max_states),
                             _number("tolerance", tolerance), int(threads))


def whittle_index(x: Any, lambda_: Any, xi: Any, mu: Any, cost: Any = 1.0,
                  T: float = 1.0) -> np.ndarray:
    """The Whittle index gamma(x) of Theorem 1, element-wise with numpy broadcasting (the
    engine's function, bit for bit)."""
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (x, lambda_, xi, mu, cost)))
    shape = arrays[0].shape
    flat = [np.ascontiguousarray(a.reshape(-1)) for a in arrays]
    return _core.whittle_index(*flat, float(T)).reshape(shape)


def resolve_backend(backend: str = "auto") -> str:
    """The backend ``backend`` resolves to on this machine (``auto``: ``cuda`` or ``cpu``)."""
    return _core.resolve_backend(backend)


def sync_optimum(instance: SyncInstance, epsilon: float = 0.0) -> Tuple[float, np.ndarray]:
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
) -> Any:
    """A sync-bandit learner (``mirrorsync``, ``async-mirrorsync``, ``async-psgd``) on
    ``instance``. ``eta`` and ``cycle`` default to the public code's tuned values for the
    algorithm and the instance's family (as ``crawleval learn`` does).

    Without ``runs``: one run (number ``run``), the policy cost J(r) after every update as an
    array (index 0: the initial policy). With ``runs=R``: R independent runs on the instance, as
    ``crawleval learn ALGORITHM --instance FILE --runs R``: a DataFrame indexed by update with the
    columns of its ``--curve`` (``round``, ``mean_j`` and its ``ci95_low``/``ci95_high`` over runs,
    the regrets with theirs); ``df.attrs`` holds ``j_star``, ``j_star_epsilon``,
    ``exploration_gap``, ``runs``, ``epsilon``, ``learning_rate``, ``cycle``, ``rounds``.
    """
    seed = _seed(seed)
    epsilon = _number("epsilon", epsilon)
    rounds = _whole("rounds", rounds, 1, 2**32 - 1)
    eta = None if eta is None else _number("eta", eta)
    cycle = None if cycle is None else _number("cycle", cycle)
    keywords = {"--epsilon": "epsilon=", "--learning-rate": "eta=", "--cycle": "cycle=",
                "--rounds": "rounds=", "--seed": "seed=", "--runs": "runs="}
    if runs is None:
        run = _whole("run", run, 0, 2**32 - 1)
        with _python_keywords(keywords):
            return _core.sync_learn(instance, _text("algorithm", algorithm), epsilon, eta, cycle,
                                    rounds, seed, run)
    import pandas as pd

    runs = _whole("runs", runs, 1, 2**32 - 1)
    with _python_keywords(keywords):
        e = _core.sync_experiment(instance, _text("algorithm", algorithm), epsilon, eta, cycle,
                                  rounds, seed, runs)
    columns = ("round", "mean_j", "ci95_low", "ci95_high", "regret_mean", "regret_ci95_low",
               "regret_ci95_high", "in_policy_regret_mean", "in_policy_ci95_low",
               "in_policy_ci95_high")
    df = pd.DataFrame({c: e[c] for c in columns})
    df.index.name = "update"
    df.attrs.update({k: v for k, v in e.items() if k not in columns})
    return df


from . import fresh  # noqa: E402  (the freshness model; it uses the helpers above)
