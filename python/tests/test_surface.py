"""What a Python user sees: the package's namespace, reprs that say why an interval is missing and
how far the bound is, warnings in Python keywords, progress that a log file can hold, and the
settings the deterministic model cannot use."""

import io
import sys

import numpy as np
import pytest

import crawleval as ce
from crawleval import fresh, plot


@pytest.mark.parametrize("module", [ce, fresh, plot])
def test_the_namespace_is_the_api(module):
    public = {n for n in dir(module) if not n.startswith("_")}
    # Submodules of the package may appear once imported.
    assert public <= set(module.__all__) | {"fresh", "plot"}, public - set(module.__all__)
    for name in module.__all__:
        assert hasattr(module, name), name


def test_repr_says_why_an_interval_is_missing_and_the_gap():
    res = ce.evaluate(ce.Population.synthetic(1000, seed=1), 10, ["whittle", "random"],
                      epochs=30, burn_in=0)
    text = repr(res)
    assert "whittle        175.048  95% CI n/a: 30 measured epochs are too few for batch means " \
           "over one replication  gap to the bound 5.89%" in text, text
    assert "(upper bound: no policy does better)" in text
    ok = repr(ce.evaluate(ce.Population.paper_example(), 1, "whittle", epochs=300))
    assert "95% CI [" in ok and "gap to the bound" in ok


def test_fresh_repr_shows_the_bound_and_which_way_is_better():
    pop = fresh.Population.synthetic(500)
    text = repr(fresh.evaluate(pop, budget_fraction=0.2, epochs=50, policies=["index"]))
    assert "(harmonic penalty: lower is better; freshness: higher is better)" in text
    assert "  index                penalty 0.4534" in text and "gap to the bound 2.78%" in text
    assert "  bound                penalty at least 0.4411" in text
    text = repr(fresh.evaluate(pop, budget_fraction=0.2, epochs=50, policies=["index"],
                               objective="binary"))
    assert "  index                freshness " in text and "freshness at most" in text


def test_warnings_name_the_python_keywords_and_the_json_keeps_the_cli_text():
    res = ce.evaluate(ce.Population.synthetic(1000, seed=1), 10, "whittle", epochs=30, burn_in=0)
    assert res.warnings and 'burn_in="auto" measures the transient' in res.warnings[0]
    assert not any("--" in w for w in res.warnings)
    assert "--burn-in auto measures the transient" in res.to_dict()["warnings"][0]


def test_progress_in_a_log_file_is_lines(monkeypatch):
    log = io.StringIO()  # not a terminal
    monkeypatch.setattr(sys, "stderr", log)
    bar = ce._Progress(interval=0.0)
    for done in range(0, 101, 10):
        bar("whittle", done, 100)
    bar.close()
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert lines[-1] == "  whittle: 100/100 epochs (100%)"
    assert all(line.startswith("  whittle: ") for line in lines)
    # Throttled: with the default interval, one line at the end.
    log.seek(0), log.truncate()
    ce.evaluate(ce.Population.paper_example(), 1, ["whittle", "greedy"], epochs=50,
                progress=True)
    lines = log.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["  whittle", "  greedy"], lines
    assert all(line.endswith("epochs (100%)") for line in lines), lines


def test_a_utility_law_is_refused_by_the_deterministic_model():
    pop = ce.Population.paper_example()
    with pytest.raises(ce.InputError, match=r"utility= applies to the stochastic model only; the "
                                            r"deterministic model uses each source's mean xi"):
        ce.evaluate(pop, 1, "whittle", epochs=10, utility="lognormal:2")
    with pytest.raises(ce.InputError, match=r"utility= applies to the stochastic model only"):
        ce.bound(pop, 1, utility="pareto:3")
    ce.evaluate(pop, 1, "whittle", epochs=10, burn_in=0, utility="lognormal:2",
                model="stochastic")
    ce.evaluate(pop, 1, "whittle", epochs=10, burn_in=0, utility="exponential")


def test_a_history_without_a_finite_rate_is_refused_as_the_importer_refuses_it():
    with pytest.raises(ce.InputError, match=r"intervals=, changed=: the history gives no finite "
                                            r"change rate \(intervals too long or too short\)"):
        fresh.estimate_change_rate([1e200, 1e200], [1, 1])
    e = fresh.estimate_change_rate([1.0, 2.0], [1, 0])
    assert 0 < e["rate"] < np.inf
    assert fresh.estimate_change_rate([1e200, 1e200], [0, 0])["rate"] == 0.0  # no change seen
