"""Smoke tests of tools/reproduce_*.py: presets, argument errors and a tiny end-to-end run of each.

The end-to-end runs use a synthetic stand-in for the shared data folder (a few dozen
documents), so they take seconds; the check on the real corpus files skips when
the shared data are absent. Skipped entirely where tools/ is not beside the tests.
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "tools"
pytestmark = pytest.mark.skipif(not (TOOLS / "reproduce_perplexity.py").exists(), reason="tools/ not beside the tests")
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))


@pytest.fixture(scope="module")
def fake_data(tmp_path_factory):
    """A tiny data folder with the layout of shared/data (Debian-like corpus and digits)."""
    root = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(0)
    J, V = 80, 40
    topics = rng.dirichlet(np.full(V, 0.1), size=4)
    lab = np.arange(J) % 4
    X = np.vstack([rng.multinomial(int(rng.integers(10, 40)), topics[k]) for k in lab])
    d = root / "debian-descriptions"
    d.mkdir()
    sp.save_npz(d / "counts-top2000.npz", sp.csr_matrix(X.astype(np.int32)))
    (d / "vocab-top2000.txt").write_text("\n".join(f"word{v:02d}" for v in range(V)) + "\n")
    rows = ["source\tlabel\tsplit"] + [f"pkg{j}\tsec{lab[j]}\t{'test' if j % 3 == 0 else 'train'}" for j in range(J)]
    (d / "docs.tsv").write_text("\n".join(rows) + "\n")
    g = root / "digits"
    g.mkdir()
    y = np.arange(60) % 3
    protos = rng.integers(0, 17, size=(3, 64))
    Xd = np.clip(protos[y] + rng.integers(-2, 3, size=(60, 64)), 0, 16) * (protos[y] > 6)
    np.savez(g / "digits.npz", X=Xd.astype(np.uint8), y=y.astype(np.uint8))
    m = root / "linux-manpages"  # longer documents, man sections 2, 3, 7 and a small section 5
    m.mkdir()
    sec = np.array(["2", "3", "7", "3", "5"])[np.arange(60) % 5]
    Xm = np.vstack([rng.multinomial(int(rng.integers(40, 120)), topics[j % 4]) for j in range(60)])
    sp.save_npz(m / "counts.npz", sp.csr_matrix(Xm.astype(np.int32)))
    (m / "vocab.txt").write_text("\n".join(f"term{v:02d}" for v in range(V)) + "\n")
    rows = ["page\tsection\tsplit"] + [f"man{sec[j]}/p{j}.{sec[j]}\t{sec[j]}\t{'test' if j % 3 == 0 else 'train'}"
                                       for j in range(60)]
    (m / "docs.tsv").write_text("\n".join(rows) + "\n")
    return root


TINY = ["--widths", "6", "--layers", "2", "--burn-in", "4", "2", "--collect", "5", "--seed", "1"]


def test_presets_and_overrides():
    import reproduce_classification as rcl
    import reproduce_perplexity as rp
    import reproduce_tree as rt

    a = rp.parse_args(["--quick"])
    assert (a.mode, a.widths, a.layers, a.burn_in, a.collect, a.name) == ("quick", [25, 50], 3, (60, 30), 30,
                                                                          "perplexity_quick")
    a = rp.parse_args([])
    assert (a.mode, a.n_docs, a.widths, a.layers, a.burn_in, a.collect) == ("full", 0, [25, 50, 100, 200], 5,
                                                                            (1000, 500), 500)
    a = rp.parse_args(["--mode", "medium", "--widths", "10,20", "--burn-in", "7", "3"])
    assert (a.n_docs, a.widths, a.burn_in) == (8000, [10, 20], (7, 3))
    a = rcl.parse_args(["--mode", "full", "--dataset", "digits"])
    s = rcl.settings(a, "digits")
    assert (s["burn_in"], s["collect"], s["transform_iter"], s["widths"]) == ((1000, 500), 500, (500, 500),
                                                                            [50, 100, 200])
    assert rt.parse_args(["--quick"]).width == 50
    assert rt.parse_root("5:1") == (5, 0)


@pytest.mark.parametrize("argv", [["--widths", "a,b"], ["--widths", "0"], ["--collect", "2"], ["--mode", "huge"]])
def test_perplexity_bad_arguments(argv):
    import reproduce_perplexity as rp

    with pytest.raises(SystemExit):
        rp.parse_args(argv)


def test_missing_data_is_a_clear_error(tmp_path, capsys):
    import reproduce_perplexity as rp

    with pytest.raises(SystemExit) as exc:
        rp.main(["--quick", "--data-dir", str(tmp_path), "--out-dir", str(tmp_path / "out"), "--no-lda"])
    assert "not found" in str(exc.value)


def test_perplexity_tiny_end_to_end(fake_data, tmp_path):
    import reproduce_perplexity as rp

    out = tmp_path / "out"
    argv = ["--quick", "--data-dir", str(fake_data), "--out-dir", str(out), "--n-docs", "0", "--control"] + TINY
    try:
        import tomotopy  # noqa: F401
    except ImportError:
        argv.append("--no-lda")
    assert rp.main(argv) == 0
    rec = json.loads((out / "perplexity_quick.json").read_text())
    run = rec["runs"][0]
    assert rec["n_docs"] == 80 and len(run["perplexity"]) == len(run["widths"]) >= 1
    assert all(np.isfinite(run["perplexity"])) and "control" in run
    md = (out / "perplexity_quick.md").read_text()
    assert "NOT the paper's protocol" in md and "python tools/reproduce_perplexity.py" in md
    assert (out / "perplexity_quick.svg").read_text().startswith("<?xml")


def test_classification_tiny_end_to_end(fake_data, tmp_path):
    pytest.importorskip("sklearn")
    import reproduce_classification as rcl

    out = tmp_path / "out"
    for ds in ("debian-binary", "digits"):
        argv = ["--quick", "--dataset", ds, "--no-raw", "--data-dir", str(fake_data), "--out-dir", str(out),
                "--n-train", "0",
                "--n-test", "0", "--transform-iter", "3", "3", "--cv", "2", "--c-grid", "-2", "2"] + TINY
        assert rcl.main(argv) == 0
        rec = json.loads((out / f"classification_{ds}_quick.json").read_text())
        assert 0.0 <= min(rec["runs"][0]["accuracy"]) <= max(rec["runs"][0]["accuracy"]) <= 1.0
        assert (out / f"classification_{ds}_quick.svg").exists()


@pytest.fixture
def centroid_classifier(monkeypatch):
    """reproduce_classification with a numpy nearest-centroid classifier instead of scikit-learn's.

    For tests of the script's bookkeeping (records, logs, partial records) where scikit-learn,
    an optional tool dependency, is not installed.
    """
    import reproduce_classification as rcl

    def classify(F_train, y_train, F_test, y_test, cv, seed, c_grid=(-10, 15)):
        F_train, F_test = (F.toarray() if sp.issparse(F) else F for F in (F_train, F_test))
        labels = np.unique(y_train)
        centres = np.stack([F_train[y_train == c].mean(axis=0) for c in labels])
        pred = labels[np.argmin(((F_test[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1)]
        return float(np.mean(pred == y_test)), 1.0

    monkeypatch.setattr(rcl, "classify", classify)
    monkeypatch.setattr(rcl, "need_sklearn", lambda: None)
    return rcl


def test_classification_partial_record_after_each_width(fake_data, tmp_path, monkeypatch, centroid_classifier):
    """A run over two widths leaves a partial record of the first while the second runs, then removes it."""
    import _repro_common as rc

    rcl = centroid_classifier

    written = []
    real = rc.write_json

    def spy(path, obj):
        written.append((Path(path).name, [r["K1max"] for r in obj["runs"]]))
        real(path, obj)

    monkeypatch.setattr(rc, "write_json", spy)
    out = tmp_path / "out"
    argv = ["--quick", "--dataset", "debian", "--no-raw", "--data-dir", str(fake_data), "--out-dir", str(out),
            "--n-train", "0", "--n-test", "0", "--transform-iter", "3", "3", "--cv", "2", "--c-grid", "-2", "2",
            "--widths", "4,6", "--layers", "1", "--burn-in", "4", "2", "--collect", "3", "--name", "two"]
    assert rcl.main(argv) == 0
    assert written == [("two.partial.json", [4]), ("two.json", [4, 6])]
    assert not (out / "two.partial.json").exists() and (out / "two.json").exists()


def test_tree_tiny_end_to_end(fake_data, tmp_path):
    import reproduce_tree as rt

    out = tmp_path / "out"
    argv = ["--quick", "--data-dir", str(fake_data), "--out-dir", str(out), "--n-docs", "0", "--width", "6",
            "--layers", "2", "--burn-in", "4", "2", "--collect", "2", "--tau", "1"]
    assert rt.main(argv) == 0
    assert (out / "tree_debian_quick_tree.svg").read_text().startswith("<?xml")
    assert "Subnetwork" in (out / "tree_debian_quick.md").read_text()


def test_count_argument_types_name_the_flag_and_the_value(capsys):
    """The benchmark tools' count flags: a bad value is argparse's error (status 2) naming the
    flag and the value, not a traceback or a table of inf and nan later on."""
    import argparse

    import _repro_common as rc

    ap = argparse.ArgumentParser(prog="tool")
    ap.add_argument("--K", type=rc.int_at_least(1))
    ap.add_argument("--late", type=rc.int_at_least(0))
    ap.add_argument("--jobs", type=rc.n_jobs_arg)
    a = ap.parse_args(["--K", "3", "--late", "0", "--jobs", "-1"])
    assert (a.K, a.late, a.jobs) == (3, 0, -1)
    for argv, message in [(["--K", "0"], "argument --K: expected an int >= 1, got '0'"),
                          (["--K", "2.5"], "argument --K: expected an int >= 1, got '2.5'"),
                          (["--late", "-1"], "argument --late: expected an int >= 0, got '-1'"),
                          (["--jobs", "0"], "argument --jobs: expected a non-zero int"),
                          (["--jobs", "x"], "argument --jobs: expected a non-zero int")]:
        with pytest.raises(SystemExit) as e:
            ap.parse_args(argv)
        assert e.value.code == 2 and message in capsys.readouterr().err


def test_real_corpus_files_load():
    import _repro_common as rc

    data = rc.default_data_dir()
    if not (data / "debian-descriptions" / "docs.tsv").exists():
        pytest.skip("shared data not present")
    X, words, labels, split = rc.load_debian(data)
    assert X.shape == (33821, 2000) and len(words) == 2000 and set(split) == {"train", "test"}
    Xd, y = rc.load_digits(data)
    assert Xd.shape == (1797, 64) and 0.0 <= Xd.min() and Xd.max() <= 1.0


def test_perplexity_spread_from_records_and_logs(fake_data, tmp_path, caplog):
    """Two seeds from JSON records, a third from the --verbose log of a run; paired changes are per seed."""
    import logging

    import perplexity_spread as ps
    import reproduce_perplexity as rp

    out = tmp_path / "out"
    base = ["--quick", "--data-dir", str(fake_data), "--out-dir", str(out), "--n-docs", "0", "--no-lda",
            "--widths", "6", "--layers", "2", "--burn-in", "4", "2", "--collect", "5"]
    for s in (1, 2):
        assert rp.main(base + ["--seed", str(s), "--name", f"run_seed{s}", "--control"]) == 0
    with caplog.at_level(logging.INFO, logger="pygbn"):
        assert rp.main(base + ["--seed", "3", "--name", "run_seed3", "--verbose", "100"]) == 0
    log = tmp_path / "run_seed3.log"
    # the log as the script writes it to stderr: its header line, then pygbn's per-depth lines
    rec3 = json.loads((out / "run_seed3.json").read_text())
    header = (f"[perplexity] {rec3['n_docs']} docs, {rec3['train_tokens']} training / "
              f"{rec3['heldout_tokens']} held-out tokens; widths [6], T<=2, B=(4, 2), C=5")
    depth_lines = [r.getMessage() for r in caplog.records if "held-out perplexity" in r.getMessage()]
    assert len(depth_lines) == len(rec3["runs"][0]["perplexity"])
    log.write_text("\n".join([header] + [f"pygbn: {m}" for m in depth_lines]) + "\n")
    (out / "run_seed3.json").unlink()

    table = ps.collect([out / "run_seed1.json", out / "run_seed2.json", log])
    assert sorted(table[6]) == [1, 2, 3]
    np.testing.assert_allclose(table[6][3]["perplexity"], rec3["runs"][0]["perplexity"], atol=0.0051)  # logged to 2 decimals
    assert table[6][3]["source"].endswith("(log)") and table[6][1]["control"] is not None

    assert ps.main([str(out / "run_seed1.json"), str(out / "run_seed2.json"), str(log),
                    "--out-dir", str(tmp_path / "pages"), "--name", "spread"]) == 0
    md = (tmp_path / "pages" / "spread.md").read_text()
    d = [table[6][s]["perplexity"][1] - table[6][s]["perplexity"][0] for s in (1, 2, 3)]
    assert f"{np.mean(d):+.2f} ± {np.std(d, ddof=1) / np.sqrt(3):.2f}" in md
    assert (tmp_path / "pages" / "spread.svg").read_text().startswith("<?xml")
    assert "draws its own document subset" in md  # a log does not say how many documents the corpus has
    # records of runs on every document: the page says that a seed draws only the split and the chains
    assert ps.main([str(out / "run_seed1.json"), str(out / "run_seed2.json"),
                    "--out-dir", str(tmp_path / "pages"), "--name", "whole"]) == 0
    whole = (tmp_path / "pages" / "whole.md").read_text()
    assert f"Every run uses all {rec3['n_docs']} documents" in whole and "document subset" not in whole
    with pytest.raises(SystemExit, match="no seed"):
        ps.runs_from_log(tmp_path / "pages" / "spread.md")


def test_perplexity_merge_and_control_from(fake_data, tmp_path):
    """Separate runs (one width each, and a long single-layer control) merge into one page."""
    import reproduce_perplexity as rp

    out = tmp_path / "out"
    base = ["--quick", "--data-dir", str(fake_data), "--out-dir", str(out), "--n-docs", "0", "--no-lda",
            "--layers", "2", "--collect", "5", "--seed", "1"]
    assert rp.main(base + ["--widths", "6", "--burn-in", "4", "2", "--name", "a"]) == 0
    assert rp.main(base + ["--widths", "4", "--burn-in", "4", "2", "--name", "b"]) == 0
    assert rp.main(base + ["--widths", "6", "--layers", "1", "--burn-in", "11", "2", "--name", "c"]) == 0
    assert rp.main(["--merge", str(out / "a.json"), str(out / "b.json"), "--control-from", str(out / "c.json"),
                    "--out-dir", str(out), "--name", "m"]) == 0
    rec = json.loads((out / "m.json").read_text())
    c = json.loads((out / "c.json").read_text())
    assert [r["K1max"] for r in rec["runs"]] == [4, 6]
    assert rec["runs"][1]["control"]["perplexity"] == c["runs"][0]["perplexity"][0]
    assert rec["runs"][1]["control"]["iterations"] == 16 and "control" not in rec["runs"][0]
    assert len(rec["merged_commands"]) == 3
    md = (out / "m.md").read_text()
    assert "merged from" in md and "(16 it.)" in md
    # a record with another seed or schedule is refused, naming the key
    assert rp.main(base + ["--widths", "5", "--burn-in", "4", "3", "--name", "d"]) == 0
    with pytest.raises(SystemExit, match="burn_in"):
        rp.main(["--merge", str(out / "a.json"), str(out / "d.json"), "--out-dir", str(out), "--name", "x"])
    with pytest.raises(SystemExit, match="twice"):
        rp.main(["--merge", str(out / "a.json"), str(out / "a.json"), "--out-dir", str(out), "--name", "x"])
    with pytest.raises(SystemExit, match="needs --merge"):
        rp.main(["--control-from", str(out / "c.json"), "--data-dir", str(fake_data)])


def test_perplexity_chain_seed(fake_data, tmp_path):
    """--chain-seed reseeds the chains alone: the same split, another chain; records differing in it
    do not merge, and a record from before the option counts its seed as its chain seed."""
    import reproduce_perplexity as rp

    out = tmp_path / "out"
    base = ["--quick", "--data-dir", str(fake_data), "--out-dir", str(out), "--n-docs", "0", "--no-lda",
            "--layers", "1", "--burn-in", "4", "2", "--collect", "5", "--seed", "1"]
    assert rp.parse_args(base).chain_seed == 1
    assert rp.main(base + ["--widths", "6", "--name", "a"]) == 0
    assert rp.main(base + ["--widths", "6", "--name", "b", "--chain-seed", "1"]) == 0
    assert rp.main(base + ["--widths", "6", "--name", "c", "--chain-seed", "2"]) == 0
    a, b, c = (json.loads((out / f"{n}.json").read_text()) for n in "abc")
    assert a["chain_seed"] == b["chain_seed"] == 1 and c["chain_seed"] == 2 and c["seed"] == 1
    assert a["train_tokens"] == c["train_tokens"] and a["heldout_tokens"] == c["heldout_tokens"]
    assert a["runs"][0]["perplexity"] == b["runs"][0]["perplexity"] != c["runs"][0]["perplexity"]
    assert "chain seed" in (out / "c.md").read_text() and "chain seed" not in (out / "a.md").read_text()
    assert rp.main(base + ["--widths", "4", "--name", "d", "--chain-seed", "2"]) == 0
    with pytest.raises(SystemExit, match="chain_seed"):
        rp.main(["--merge", str(out / "a.json"), str(out / "d.json"), "--out-dir", str(out), "--name", "x"])
    old = dict(json.loads((out / "d.json").read_text()), chain_seed=None)
    del old["chain_seed"]
    old["seed"] = 2
    (out / "old.json").write_text(json.dumps(old))
    with pytest.raises(SystemExit, match="seed"):  # an old record of seed 2 against a split of seed 1
        rp.main(["--merge", str(out / "c.json"), str(out / "old.json"), "--out-dir", str(out), "--name", "x"])
    old["seed"] = 1
    old["runs"][0]["K1max"] = 5
    (out / "old.json").write_text(json.dumps(old))
    with pytest.raises(SystemExit, match="chain_seed"):  # its chains ran from seed 1, not 2
        rp.main(["--merge", str(out / "c.json"), str(out / "old.json"), "--out-dir", str(out), "--name", "x"])
    assert rp.main(["--merge", str(out / "a.json"), str(out / "old.json"), "--out-dir", str(out), "--name", "y"]) == 0


def test_classification_spread_from_records_and_logs(fake_data, tmp_path, capsys, centroid_classifier):
    """Two seeds from JSON records, a third from the script's stderr log; paired changes are per seed."""
    import classification_spread as cs

    rcl = centroid_classifier

    out = tmp_path / "out"
    base = ["--quick", "--dataset", "debian", "--data-dir", str(fake_data), "--out-dir", str(out),
            "--n-train", "0", "--n-test", "0", "--transform-iter", "3", "3", "--cv", "2", "--c-grid", "-2", "2",
            "--widths", "6", "--layers", "2", "--burn-in", "4", "2", "--collect", "3"]
    for s in (1, 2, 3):
        capsys.readouterr()
        assert rcl.main(base + ["--seed", str(s), "--name", f"cls_seed{s}"]) == 0
    log = tmp_path / "cls_seed3.log"
    log.write_text(capsys.readouterr().err)
    rec3 = json.loads((out / "cls_seed3.json").read_text())
    (out / "cls_seed3.json").unlink()

    table = cs.collect([out / "cls_seed1.json", out / "cls_seed2.json", log])
    runs = table[("debian", 6)]
    assert sorted(runs) == [1, 2, 3] and runs[3]["source"].endswith("(log)")
    np.testing.assert_allclose(runs[3]["accuracy"], rec3["runs"][0]["accuracy"], atol=5.1e-5)  # logged to 4 decimals
    assert runs[3]["raw"] == pytest.approx(rec3["raw"]["accuracy"], abs=5.1e-5)
    assert runs[3]["widths"] == rec3["runs"][0]["widths"][-1]

    assert cs.main([str(out / "cls_seed1.json"), str(out / "cls_seed2.json"), str(log),
                    "--out-dir", str(tmp_path / "pages"), "--name", "spread"]) == 0
    md = (tmp_path / "pages" / "spread.md").read_text()
    d = [100 * (runs[s]["accuracy"][1] - runs[s]["accuracy"][0]) for s in (1, 2, 3)]
    assert f"{np.mean(d):+.2f} ± {np.std(d, ddof=1) / np.sqrt(3):.2f}" in md
    assert (tmp_path / "pages" / "spread.svg").read_text().startswith("<?xml")
    assert "draws its own training and test samples" in md  # a log does not say which split the run used
    # records of runs on the whole docs.tsv split: the page says that a seed draws only chains and folds
    assert cs.main([str(out / "cls_seed1.json"), str(out / "cls_seed2.json"),
                    "--out-dir", str(tmp_path / "pages"), "--name", "whole"]) == 0
    whole = (tmp_path / "pages" / "whole.md").read_text()
    assert "whole fixed `docs.tsv` training/test split" in whole and "test samples" not in whole
    with pytest.raises(SystemExit, match="no seed"):
        cs.runs_from_log(tmp_path / "pages" / "spread.md")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"script": "reproduce_perplexity"}))
    with pytest.raises(SystemExit, match="not a reproduce_classification record"):
        cs.collect([other])


# ------------------------------------------------------------ the Linux man pages (--dataset linux-manpages)
MAN = ["--dataset", "linux-manpages"]


def test_manpages_presets():
    import reproduce_classification as rcl
    import reproduce_perplexity as rp
    import reproduce_tree as rt

    a = rp.parse_args(MAN)
    assert (a.mode, a.n_docs, a.widths, a.layers, a.burn_in, a.collect, a.name) == (
        "full", 0, [25, 50, 100, 200, 400], 5, (1000, 500), 500, "perplexity_manpages_full")
    a = rp.parse_args(MAN + ["--mode", "medium"])
    assert (a.n_docs, a.widths, a.burn_in, a.collect, a.name) == (0, [25, 100], (400, 200), 200,
                                                                  "perplexity_manpages_medium")
    a = rp.parse_args(MAN + ["--quick", "--widths", "7"])
    assert (a.n_docs, a.widths, a.layers, a.name) == (0, [7], 3, "perplexity_manpages_quick")
    assert rp.parse_args(["--quick"]).name == "perplexity_quick"  # the Debian corpus stays the default
    assert rp.schedule_iterations(5, (1000, 500), 500) == 5500
    with pytest.raises(SystemExit):
        rp.parse_args(MAN + ["--control", "--control-only"])
    a = rcl.parse_args(MAN + ["--mode", "full"])
    s = rcl.settings(a, "linux-manpages")
    assert (s["widths"], s["burn_in"], s["collect"], s["transform_iter"], s["n_train"], a.c_grid, a.sections) == (
        [25, 100], (1000, 500), 500, (500, 500), 0, (-10, 15), ["2", "3", "7"])
    s = rcl.settings(rcl.parse_args(MAN + ["--mode", "medium"]), "linux-manpages")
    assert (s["burn_in"], s["collect"], s["transform_iter"], s["n_test"]) == ((400, 200), 200, (100, 100), 0)
    assert rcl.settings(rcl.parse_args(["--mode", "medium"]), "debian")["burn_in"] == (200, 100)
    a = rt.parse_args(MAN + ["--quick"])
    assert (a.n_docs, a.width, a.name) == (0, 50, "tree_manpages_quick")


def _manpages_perplexity(fake_data, out, *extra):
    import reproduce_perplexity as rp

    argv = MAN + ["--quick", "--data-dir", str(fake_data), "--out-dir", str(out), "--no-lda", "--widths", "6",
                  "--layers", "3", "--burn-in", "4", "2", "--collect", "5"] + list(extra)
    assert rp.main(argv) == 0


def test_manpages_perplexity_control_only_merges(fake_data, tmp_path):
    """A --control-only run repeats the --control chain exactly; --merge and the spread attach it."""
    import perplexity_spread as ps
    import reproduce_perplexity as rp

    out = tmp_path / "out"
    _manpages_perplexity(fake_data, out, "--seed", "1", "--name", "both_seed1", "--control")
    _manpages_perplexity(fake_data, out, "--seed", "1", "--name", "lw_seed1")
    _manpages_perplexity(fake_data, out, "--seed", "1", "--name", "ctl_seed1", "--control-only")
    both, lw, ctl = (json.loads((out / f"{n}_seed1.json").read_text()) for n in ("both", "lw", "ctl"))
    assert both["dataset"] == "linux-manpages" and both["n_docs"] == 60
    assert lw["runs"][0]["perplexity"] == both["runs"][0]["perplexity"]
    assert len(both["runs"][0]["perplexity"]) == 3
    assert ctl["control_of"] == {"layers": 3, "burn_in": [4, 2], "collect": 5, "iterations": 23}
    assert ctl["runs"][0]["perplexity"][0] == both["runs"][0]["control"]["perplexity"]
    assert ctl["runs"][0]["total_iterations"] == both["runs"][0]["control"]["iterations"] == 23
    assert "control run" in (out / "ctl_seed1.md").read_text()
    assert "Linux man pages" in (out / "lw_seed1.md").read_text()

    assert rp.main(["--merge", str(out / "lw_seed1.json"), str(out / "ctl_seed1.json"), "--out-dir", str(out),
                    "--name", "merged"]) == 0
    merged = json.loads((out / "merged.json").read_text())
    assert merged["runs"][0]["control"]["perplexity"] == both["runs"][0]["control"]["perplexity"]
    assert merged["dataset"] == "linux-manpages" and "(23 it.)" in (out / "merged.md").read_text()
    table = ps.collect([out / "lw_seed1.json", out / "ctl_seed1.json"])
    assert table[6][1]["control"] == both["runs"][0]["control"]["perplexity"]
    assert table[6][1]["control_iterations"] == 23

    # a control of another schedule, or a record of the other corpus, is refused
    _manpages_perplexity(fake_data, out, "--seed", "1", "--name", "ctl2_seed1", "--control-only", "--layers", "2")
    with pytest.raises(SystemExit, match="another schedule"):
        rp.merge_records([out / "lw_seed1.json", out / "ctl2_seed1.json"])
    deb = json.loads((out / "lw_seed1.json").read_text())
    del deb["dataset"]
    (out / "deb_seed1.json").write_text(json.dumps(deb))
    with pytest.raises(SystemExit, match="another corpus"):
        rp.merge_records([out / "lw_seed1.json", out / "deb_seed1.json"])
    with pytest.raises(SystemExit, match="mix corpora"):
        ps.collect([out / "deb_seed1.json", out / "ctl_seed1.json"])


def test_manpages_perplexity_partial_record_survives_a_kill(fake_data, tmp_path, monkeypatch):
    """The partial record holds every finished depth; killed during T=3 it keeps T=1, 2 for merge and spread."""
    import _repro_common as rc
    import perplexity_spread as ps
    import reproduce_perplexity as rp

    out = tmp_path / "out"
    _manpages_perplexity(fake_data, out, "--seed", "2", "--name", "full_seed2")
    full = json.loads((out / "full_seed2.json").read_text())
    real = rc.write_json
    seen = []

    def killed_at_depth_3(path, obj):
        real(path, obj)
        runs = obj["runs"]
        seen.append((Path(path).name, [len(r["perplexity"]) for r in runs]))
        if runs and len(runs[-1]["perplexity"]) == 2:
            raise KeyboardInterrupt  # the process is killed while depth 3 runs

    monkeypatch.setattr(rc, "write_json", killed_at_depth_3)
    with pytest.raises(KeyboardInterrupt):
        _manpages_perplexity(fake_data, out, "--seed", "2", "--name", "cut_seed2")
    monkeypatch.setattr(rc, "write_json", real)
    assert seen == [("cut_seed2.partial.json", [1]), ("cut_seed2.partial.json", [2])]
    assert not (out / "cut_seed2.json").exists()
    part = json.loads((out / "cut_seed2.partial.json").read_text())
    run = part["runs"][0]
    assert part["partial"] and run["partial"] and run["total_iterations"] == 9 + 7
    np.testing.assert_allclose(run["perplexity"], full["runs"][0]["perplexity"][:2], atol=0.0051)  # logged, 2 dp
    assert run["widths"] == full["runs"][0]["widths"][:2]

    _manpages_perplexity(fake_data, out, "--seed", "2", "--name", "ctl_seed2", "--control-only")
    assert rp.main(["--merge", str(out / "cut_seed2.partial.json"), str(out / "ctl_seed2.json"),
                    "--out-dir", str(out), "--name", "m"]) == 0
    md = (out / "m.md").read_text()
    assert "PARTIAL" in md and "stopped after T = 2" in md
    assert ps.main([str(out / "cut_seed2.partial.json"), str(out / "ctl_seed2.json"), str(out / "full_seed2.json"),
                    "--out-dir", str(out), "--name", "spread"]) == 0
    table = ps.collect([out / "cut_seed2.partial.json", out / "ctl_seed2.json"])
    assert len(table[6][2]["perplexity"]) == 2 and table[6][2]["control"] is not None


def test_manpages_classification_and_tree(fake_data, tmp_path, centroid_classifier):
    import reproduce_tree as rt

    rcl = centroid_classifier
    out = tmp_path / "out"
    argv = MAN + ["--quick", "--data-dir", str(fake_data), "--out-dir", str(out), "--transform-iter", "3", "3",
                  "--cv", "2", "--c-grid", "-2", "2"] + TINY
    assert rcl.main(argv) == 0
    rec = json.loads((out / "classification_linux-manpages_quick.json").read_text())
    assert rec["dataset"] == "linux-manpages" and rec["link"] == "poisson" and rec["n_classes"] == 3
    assert "32 training / 16 test pages" in rec["data"]  # sections 2, 3, 7 only (not 5), the docs.tsv split
    assert rec["majority"]["label"] == "3" and rec["majority"]["accuracy"] == pytest.approx(0.5)
    assert rec["raw"] is not None and 0.0 <= min(rec["runs"][0]["accuracy"]) <= 1.0
    md = (out / "classification_linux-manpages_quick.md").read_text()
    assert "Man-page sections" in md and "most frequent training label (3): 50.00%" in md
    argv = MAN + ["--quick", "--data-dir", str(fake_data), "--out-dir", str(out), "--width", "6",
                  "--layers", "2", "--burn-in", "4", "2", "--collect", "2", "--tau", "1"]
    assert rt.main(argv) == 0
    assert (out / "tree_manpages_quick_subnetwork.svg").read_text().startswith("<?xml")
    md = (out / "tree_manpages_quick.md").read_text()
    assert "on the Linux man pages" in md and "all 60 documents" in md


def test_device_script_commands_parse(tmp_path):
    """tools/device_manpages.sh DRY_RUN=1: every command it would launch is a valid reproduce_perplexity call."""
    import os
    import shlex
    import shutil
    import subprocess

    import reproduce_perplexity as rp

    script = TOOLS / "device_manpages.sh"
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    env = dict(os.environ, DRY_RUN="1", OUT=str(tmp_path / "out"))
    res = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    cmds = [line.split("reproduce_perplexity.py", 1)[1] for line in res.stdout.splitlines()
            if "reproduce_perplexity.py" in line]
    assert 1 <= len(cmds) <= 16
    names = set()
    for c in cmds:
        args = shlex.split(c)
        args = args[:args.index(">")] if ">" in args else args
        a = rp.parse_args(args)
        assert a.dataset == "linux-manpages" and a.mode == "full" and len(a.widths) == 1 and a.n_jobs == 1
        assert a.name not in names and f"seed{a.seed}" in a.name and a.verbose > 0
        names.add(a.name)


def test_real_manpages_files_load():
    import _repro_common as rc

    data = rc.default_data_dir()
    if not (data / "linux-manpages" / "docs.tsv").exists():
        pytest.skip("shared data (linux-manpages) not present")
    X, words, labels, split = rc.load_manpages(data)
    assert X.shape == (2533, 7735) and len(words) == 7735 and int(X.sum()) == 1192044
    keep = np.isin(labels, ["2", "3", "7"])
    assert (int(np.sum(keep & (split == "train"))), int(np.sum(keep & (split == "test")))) == (1632, 804)
    assert rc.load_corpus("linux-manpages", data)[0].shape == X.shape
