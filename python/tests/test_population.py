"""Populations from numpy arrays and DataFrames: zero-copy views, id order, and input errors that
name the field and the source, as the command line does."""

import numpy as np
import pandas as pd
import pytest

import crawleval as ce


def test_from_arrays_sorts_by_id_and_views_are_read_only():
    pop = ce.Population.from_arrays(
        lambda_=[1.0, 2.0, 3.0], xi=[0.5, 0.6, 0.7], mu=[1.0, 2.0, 3.0], cost=[1, 2, 3],
        id=[30, 10, 20], x0=[0.1, 0.2, 0.3], expiry=[0, 5, np.inf])
    np.testing.assert_array_equal(pop.id, [10, 20, 30])
    np.testing.assert_array_equal(pop.lambda_, [2.0, 3.0, 1.0])
    np.testing.assert_array_equal(pop.cost, [2.0, 3.0, 1.0])
    np.testing.assert_array_equal(pop.x0, [0.2, 0.3, 0.1])
    np.testing.assert_array_equal(pop.expiry, [5, 0, 0])
    assert pop.id.dtype == np.uint64 and pop.expiry.dtype == np.uint32
    with pytest.raises(ValueError):
        pop.lambda_[0] = 5.0  # a view of the engine's memory, read-only
    # Two views share memory (no copy per access).
    assert np.shares_memory(pop.mu, pop.mu)
    assert len(pop) == 3 and not pop.unit_costs and pop.total_cost == 6.0


def test_defaults_and_dataframe_roundtrip():
    df = pd.DataFrame({"lambda": [250.0] * 4, "xi": [1.0, 0.7, 0.2, 0.08],
                       "mu": [0.7, 0.35, 0.7, 0.21], "url": ["a", "b", "c", "d"]})
    with pytest.warns(UserWarning, match="ignoring column 'url'"):
        pop = ce.Population.from_dataframe(df)
    np.testing.assert_array_equal(pop.id, [0, 1, 2, 3])
    np.testing.assert_array_equal(pop.cost, 1.0)
    assert pop.x0 is None and pop.expiry is None
    back = pop.to_dataframe()
    assert list(back.columns) == ["id", "lambda", "xi", "mu", "cost"]
    # A DataFrame is accepted wherever a population is.
    with pytest.warns(UserWarning, match="ignoring column 'url'"):
        a = ce.evaluate(df, 1, ["whittle"], epochs=500)["whittle"]["mean_reward"]
    paper = ce.Population.paper_example()
    b = ce.evaluate(paper, 1, ["whittle"], epochs=500)["whittle"]["mean_reward"]
    assert a == b


def test_integer_columns_are_converted():
    pop = ce.Population.from_arrays(np.array([1, 2], dtype=np.int32), [1, 1], [1, 1],
                                    id=np.array([5, 3], dtype=np.int64))
    assert pop.lambda_.dtype == np.float64
    np.testing.assert_array_equal(pop.id, [3, 5])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(mu=[1.0, -1.0, 1.0]), "arrays: source with id 1, field 'mu' must be a finite number > 0"),
        (dict(lambda_=[1.0, 1.0, np.nan]), "arrays: source with id 2, field 'lambda' must be a finite number >= 0"),
        (dict(cost=[1.0, 0.0, 1.0]), "arrays: source with id 1, field 'cost' must be a finite number > 0"),
        (dict(id=[4, 7, 4]), "arrays: row 2: field 'id': id 4 already used in row 0"),
        (dict(id=[4, -7, 5]), "column 'id': row 1: ids must be >= 0"),
        (dict(id=[1.5, 2, 3]), "column 'id': row 0: ids must be whole numbers"),
        (dict(xi=[1.0, 1.0]), "column 'xi' has 2 rows, 'lambda' has 3"),
        (dict(mu=[[1.0, 1.0, 1.0]]), r"column 'mu' must be one-dimensional, got shape \(1, 3\)"),
        (dict(xi=["a", "b", "c"]), "column 'xi' must be numeric, got dtype <U1"),
        (dict(expiry=[1, 2.5, 3]), "column 'expiry': row 1: must be a whole number of epochs"),
        (dict(lambda_=[]), "arrays: the population is empty"),
    ],
)
def test_bad_columns_raise_value_error_naming_field_and_source(kwargs, message):
    cols = dict(lambda_=[1.0, 1.0, 1.0], xi=[1.0, 1.0, 1.0], mu=[1.0, 1.0, 1.0])
    cols.update(kwargs)
    if "lambda_" in kwargs and len(kwargs["lambda_"]) == 0:
        cols = dict(lambda_=[], xi=[], mu=[])
    with pytest.raises(ValueError, match=message):
        ce.Population.from_arrays(**cols)


def test_missing_dataframe_column():
    with pytest.raises(ValueError, match=r"DataFrame: missing column\(s\) mu \(.*; it has: lambda, xi\)"):
        ce.Population.from_dataframe(pd.DataFrame({"lambda": [1.0], "xi": [1.0]}))


def test_dataframe_observe_column_is_read_not_dropped():
    # Dropping it ran full observation where the sources CSV with the same column refuses.
    df = pd.DataFrame({"lambda": [1.0, 2.0], "xi": [1.0, 1.0], "mu": [0.5, 0.5],
                       "observe": ["full", "BELIEF"]})
    pop = ce.Population.from_dataframe(df)
    assert pop.observe.tolist() == [1, 0]
    with pytest.raises(ValueError, match="has an observe column"):
        ce.evaluate(pop, 1, "greedy", epochs=5)
    with pytest.raises(ValueError, match=r"column 'observe': row 0: must be full or belief, got 1"):
        ce.Population.from_dataframe(df.assign(observe=[1, 0]))


def test_csv_error_is_the_cli_message(tmp_path, cli):
    bad = tmp_path / "bad.csv"
    bad.write_text("lambda,xi,mu\n1,1,1\n2,1,-1\n")
    rc, _, stderr = cli("run", "--sources", bad, "--budget", 1)
    assert rc == 2
    with pytest.raises(ValueError) as e:
        ce.Population.read(bad)
    assert stderr.strip() == f"crawleval: error: {e.value}"
    assert f"{bad}:3: field 'mu'" in str(e.value)


def test_settings_errors_are_the_cli_messages(cli):
    pop = ce.Population.paper_example()
    rc, _, stderr = cli("run", "--paper-example", "--budget", 9)
    assert rc == 2
    with pytest.raises(ValueError) as e:
        ce.evaluate(pop, 9)
    # The same message, naming the Python keyword where the CLI names its flag.
    assert stderr.strip() == f"crawleval: error: {e.value}".replace("budget= ", "--budget ")
    assert "budget=" in str(e.value)
    with pytest.raises(ValueError, match="model 'exact' is not one of: deterministic, stochastic"):
        ce.evaluate(pop, 1, model="exact")
    with pytest.raises(ValueError, match="epochs= must be at least 1"):
        ce.evaluate(pop, 1, epochs=0)
    with pytest.raises(ValueError, match="target_ci must be a relative half-width"):
        ce.evaluate(pop, 1, target_ci=2)
    with pytest.raises(ValueError, match=r"replications= must lie in \[1, 4294967295\], got -1"):
        ce.evaluate(pop, 1, replications=-1)
    with pytest.raises(ValueError, match="epochs= must be a whole number, got 2.5"):
        ce.evaluate(pop, 1, epochs=2.5)
    with pytest.raises(TypeError, match="population must be"):
        ce.evaluate([1, 2, 3], 1)


def test_synthetic_and_columnar_roundtrip(tmp_path, cli):
    path = tmp_path / "pop.cpop"
    rc, _, err = cli("generate", "--synthetic", 1000, "--seed", 4, "--costs", "lognormal",
                     "--out", path)
    assert rc == 0, err
    from_cli = ce.Population.read(path)
    here = ce.Population.synthetic(1000, seed=4, costs="lognormal")
    for col in ("lambda_", "xi", "mu", "cost", "id"):
        np.testing.assert_array_equal(getattr(from_cli, col), getattr(here, col))
    out = tmp_path / "again.cpop"
    here.write(out)
    assert out.read_bytes() == path.read_bytes()


def test_synthetic_checks_its_arguments():
    # A hostile pass: int(n) ran n=2.5 with 2 sources and took "10" and True; a seed of 1.9 ran as 1;
    # n=-1 was nanobind's TypeError naming no keyword.
    for bad in (2.5, "10", True):
        with pytest.raises(ValueError, match="n= must be a whole number"):
            ce.Population.synthetic(bad)
    with pytest.raises(ValueError, match=r"n= must lie in \[1, 4294967294\], got -1"):
        ce.Population.synthetic(-1)
    with pytest.raises(ValueError, match="seed= must be a whole number"):
        ce.Population.synthetic(10, seed=1.9)
    with pytest.raises(ValueError, match=r"seed= must lie in \[0, 2\^64 - 1\]"):
        ce.Population.synthetic(10, seed=2**64)
    a = ce.Population.synthetic(10, seed=np.random.SeedSequence(7))
    b = ce.Population.synthetic(10, seed=int(np.random.SeedSequence(7).generate_state(1, np.uint64)[0]))
    assert np.array_equal(a.lambda_, b.lambda_)
