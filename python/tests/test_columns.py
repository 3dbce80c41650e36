"""One column rule for every reader: a DataFrame is read as the CSV with the same header is
(names in any case, near misses refused, other columns ignored with a warning), and every writer
keeps every column the population has."""

import io
import warnings

import numpy as np
import pandas as pd
import pytest

import crawleval as ce
from crawleval import fresh

TABLE1 = "lambda,xi,mu,Cost\n250,1.0,0.7,1\n250,0.7,0.35,2\n250,0.2,0.7,1\n250,0.08,0.21,3\n"


def test_a_dataframe_reads_its_names_as_the_csv_does(tmp_path):
    path = tmp_path / "costs.csv"
    path.write_text(TABLE1)
    from_csv = ce.Population.read(path)
    from_df = ce.Population.from_dataframe(pd.read_csv(path))
    assert from_csv.cost.tolist() == from_df.cost.tolist() == [1, 2, 1, 3]
    a = ce.evaluate(from_csv, 2, "whittle", epochs=300)
    b = ce.evaluate(from_df, 2, "whittle", epochs=300)
    assert a["whittle"]["mean_reward"] == b["whittle"]["mean_reward"]


@pytest.mark.parametrize("name, meant", [
    ("costs", "cost"), ("COSTS", "cost"), ("Coût", "cost"), ("cots", "cost"), ("lamda", "lambda"),
    ("Expiries", "expiry"), ("x_0", "x0"), ("observes", "observe"),
])
def test_near_misses_are_refused_with_the_name_meant(tmp_path, name, meant):
    df = pd.read_csv(io.StringIO(TABLE1.replace("Cost", name, 1)))
    if meant == "lambda":
        df = pd.read_csv(io.StringIO(TABLE1.replace("lambda", name, 1)))
    with pytest.raises(ce.InputError, match=f"DataFrame: unknown column '{name}'; did you mean "
                                            f"'{meant}'"):
        ce.Population.from_dataframe(df)
    # The CSV with the same header says the same.
    path = tmp_path / "t.csv"
    path.write_text(TABLE1.replace("Cost", name, 1) if meant != "lambda"
                    else TABLE1.replace("lambda", name, 1), encoding="utf-8")
    with pytest.raises(ce.InputError, match=f"did you mean '{meant}'"):
        ce.Population.read(path)


def test_a_name_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(TABLE1.replace("Cost", "co\xfbt").encode("latin-1"))
    with pytest.raises(ce.InputError, match=r"not valid UTF-8.*did you mean 'cost'"):
        ce.Population.read(path)
    # The same name decoded with surrogateescape (its bytes kept): the same refusal.
    df = pd.read_csv(io.StringIO(TABLE1))
    df.columns = pd.Index(["lambda", "xi", "mu", b"co\xfbt".decode("utf-8", "surrogateescape")],
                          dtype=object)
    with pytest.raises(ce.InputError, match=r"not valid UTF-8.*did you mean 'cost'"):
        ce.Population.from_dataframe(df)


def test_unrelated_columns_are_ignored_with_a_warning():
    df = pd.read_csv(io.StringIO(TABLE1)).assign(url="http://x", host=1)
    df[7] = 0.0  # a label that is no string
    with pytest.warns(UserWarning, match=r"DataFrame: ignoring columns 'url', 'host', '7' \(not one "
                                         r"of lambda, xi, mu, cost, id, x0, expiry, observe\)"):
        pop = ce.Population.from_dataframe(df)
    assert pop.cost.tolist() == [1, 2, 1, 3]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ce.Population.from_dataframe(pd.read_csv(io.StringIO(TABLE1)))  # nothing to say


def test_a_csv_read_from_python_warns_as_the_cli_notes(tmp_path):
    path = tmp_path / "url.csv"
    path.write_text("url,lambda,xi,mu\nhttp://a,250,1.0,0.7\n")
    with pytest.warns(UserWarning, match=r"url.csv: ignoring column 'url' \(not one of lambda, "
                                         r"xi, mu, cost, id, x0, expiry, observe; "
                                         r"strict_columns=True refuses them\)"):
        assert len(ce.Population.read(path)) == 1
    with pytest.raises(ce.InputError, match=r"url.csv:1: unknown column 'url'"):
        ce.Population.read(path, strict_columns=True)


def test_a_column_named_twice_and_a_missing_one():
    df = pd.read_csv(io.StringIO(TABLE1)).assign(cost=1.0)
    with pytest.raises(ce.InputError, match="column 'cost' appears twice"):
        ce.Population.from_dataframe(df)
    with pytest.raises(ce.InputError, match=r"missing column\(s\) mu \(the columns must be named "
                                            r"lambda, xi, mu and optionally .*; it has: lambda, "
                                            r"xi\)"):
        ce.Population.from_dataframe(pd.DataFrame({"lambda": [1.0], "xi": [1.0]}))


def test_the_freshness_model_has_its_own_names():
    df = pd.DataFrame({"Importance": [1.0, 2.0], "RATE": [0.5, 0.25], "Host": [3, 3]})
    pop = fresh.Population.from_dataframe(df)
    assert pop.host.tolist() == [3, 3]
    with pytest.raises(ce.InputError, match="unknown column 'rates'; did you mean 'rate'"):
        fresh.Population.from_dataframe(df.rename(columns={"RATE": "rates"}))
    with pytest.raises(ce.InputError, match="did you mean 'host'"):
        fresh.Population.from_dataframe(df.rename(columns={"Host": "hosts"}))
    with pytest.warns(UserWarning, match=r"ignoring column 'lambda' \(not one of id, host, "):
        fresh.Population.from_dataframe(df.assign(**{"lambda": 1.0}))


def test_fresh_dataframe_takes_every_uint64_host(tmp_path):
    top = 2**64 - 1
    path = tmp_path / "hosts.csv"
    path.write_text(f"importance,rate,host\n1,0.5,{top}\n2,0.25,0\n")
    read = fresh.Population.read(path)
    df = pd.read_csv(path, dtype={"host": np.uint64})
    assert df["host"].dtype == np.uint64
    pop = fresh.Population.from_dataframe(df)
    assert pop.host.tolist() == read.host.tolist() == [top, 0]
    # Out of range or negative: refused, naming the row.
    with pytest.raises(ce.InputError, match=r"column 'host': row 0: must be a whole number >= 0"):
        fresh.Population.from_arrays([1.0], [0.5], host=np.array([-1], dtype=np.int64))
    with pytest.raises(ce.InputError, match=r"column 'observations': row 0: .*at most 4294967295"):
        fresh.Population.from_arrays([1.0], [0.5], observations=np.array([2**32], dtype=np.uint64))


def test_masked_entries_are_refused():
    lam = np.ma.array([250.0, 250.0], mask=[False, True])
    with pytest.raises(ce.InputError, match="column 'lambda': entry 1 is masked"):
        ce.Population.from_arrays(lam, [1.0, 1.0], [1.0, 1.0])
    ok = np.ma.array([250.0, 250.0], mask=[False, False])
    assert ce.Population.from_arrays(ok, [1.0, 1.0], [1.0, 1.0]).lambda_.tolist() == [250, 250]
    with pytest.raises(ce.InputError, match="column 'rate': entry 0 is masked"):
        fresh.Population.from_arrays([1.0], np.ma.array([0.5], mask=[True]))


def _mixed(tmp_path):
    path = tmp_path / "mixed.csv"
    path.write_text("lambda,xi,mu,observe\n250,1.0,0.7,belief\n250,0.7,0.35,Full\n"
                    "250,0.2,0.7,belief\n250,0.08,0.21,full\n")
    return ce.Population.read(path)


def test_every_writer_keeps_the_observe_column(tmp_path):
    pop = _mixed(tmp_path)
    assert pop.observe.tolist() == [0, 1, 0, 1]
    df = pop.to_dataframe()
    assert df["observe"].tolist() == ["belief", "full", "belief", "full"]
    back = ce.Population.from_dataframe(df)
    assert back.observe.tolist() == [0, 1, 0, 1]
    # Read back, it refuses what the original refuses (the engines' whittle does not read it).
    for p in (pop, back):
        with pytest.raises(ce.InputError, match="has an observe column"):
            ce.evaluate(p, 1, "whittle", epochs=10)
    pop.write(tmp_path / "again.csv")
    assert ce.Population.read(tmp_path / "again.csv").observe.tolist() == [0, 1, 0, 1]
    with pytest.raises(ce.InputError, match="the .cpop format has no observe column"):
        pop.write(tmp_path / "mixed.cpop")
    assert not (tmp_path / "mixed.cpop").exists()
    with pytest.raises(ce.InputError, match=r"column 'observe': row 1: must be full or belief"):
        ce.Population.from_arrays([1.0, 1.0], [1.0, 1.0], [1.0, 1.0], observe=["full", "some"])
    pyarrow = pytest.importorskip("pyarrow")
    assert isinstance(pop.to_arrow(), pyarrow.Table)
    assert ce.Population.from_arrow(pop.to_arrow()).observe.tolist() == [0, 1, 0, 1]
    pop.write_parquet(tmp_path / "mixed.parquet")
    assert ce.Population.read_parquet(tmp_path / "mixed.parquet").observe.tolist() == [0, 1, 0, 1]


def test_a_slice_is_written_with_its_first_id_or_refused(tmp_path, cli):
    rc, _, err = cli("generate", "--synthetic", 100, "--slice", "40:10", "--out",
                     tmp_path / "slice.cpop")
    assert rc == 0, err
    sl = ce.Population.read(tmp_path / "slice.cpop")
    assert sl.first_id == 40
    with pytest.raises(ce.InputError, match=r"path= .*x\.csv: a CSV cannot keep a slice's first "
                                            r"global id \(40"):
        sl.write(tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()
    sl.write(tmp_path / "copy.cpop")
    again = ce.Population.read(tmp_path / "copy.cpop")
    assert again.first_id == 40
    a = ce.evaluate(sl, 2, "random", epochs=50, burn_in=0)
    b = ce.evaluate(again, 2, "random", epochs=50, burn_in=0)
    assert a["random"]["mean_reward"] == b["random"]["mean_reward"]


def test_a_missing_directory_is_bad_input(tmp_path):
    with pytest.raises(ce.InputError, match=r"path= .*: cannot create files in"):
        ce.Population.paper_example().write(tmp_path / "no" / "such" / "dir.csv")
    with pytest.raises(ce.InputError, match=r"cannot create files in"):
        fresh.Population.synthetic(10).write(tmp_path / "no" / "such.csv")
