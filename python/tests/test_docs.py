"""docs/python.md's examples run as written: every ```python block is executed, each in a fresh
namespace (a reader copies one block), in a scratch folder that holds what the page says the
reader has: a PoliteCrawling-format folder ("PoliteCrawling/")."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)

# A few URLs in the dataset's five files (docs/freshness.md describes them).
POLITECRAWLING = {
    "host_hostid_isconstrained.txt": "http://a.example\t10\t1\nhttp://b.example\t11\t0\n",
    "url_urlid_hostid.txt": "http://a.example/x\t5\t10\nhttp://a.example/y\t7\t10\n"
                            "http://b.example/z\t2\t11\n",
    "urlid_imp.txt": "5\t120\n7\t3\n2\t48\n",
    "urlid_offset_history.txt": "5\t5.5\t[[1.10397, 0], [1.47311, 1], [0.9, 1], [1.0, 0]]\n"
                                "7\t0.25\t[[1.0, 0], [1.0, 0], [2.0, 0]]\n",
    "urlid_chrate_compl_obs_hist.txt": "2\t0.75\n",
}


def test_the_page_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("k", range(len(BLOCKS)))
def test_every_example_runs_as_written(k, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib").use("Agg")
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "PoliteCrawling"
    folder.mkdir()
    for name, text in POLITECRAWLING.items():
        (folder / name).write_text(text)
    code = BLOCKS[k]
    if 'backend="cuda"' in code:  # the GPU's examples run where a GPU and their module are
        pytest.importorskip("torch" if "torch" in code else "cupy")
        import crawleval as ce

        try:
            ce.evaluate(ce.Population.synthetic(10), 1, ["greedy"], epochs=1, backend="cuda",
                        bound=False)
        except ce.InputError as e:
            pytest.skip(f"no usable GPU here: {e}")
    exec(compile(code, f"{DOC.name}, block {k + 1}", "exec"), {"__name__": f"doc_block_{k}"})
