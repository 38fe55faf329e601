"""The command line, end to end through subprocess on the bundled corpus.

The subprocesses import the same ``pygbn`` as this test process (the source
tree with an in-place build, or an installed copy): ``PYTHONPATH`` is set to
the folder holding that package and the working directory is a temporary
folder, so a source checkout without compiled extensions never shadows an
installed package.
"""
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import pygbn
from pygbn import cli
from pygbn.datasets import load_demo
from pygbn.text import save_counts, write_vocab

from test_explore import parse_dot, unescape_label  # the DOT parser of the explore tests

PKG_PARENT = str(Path(pygbn.__file__).resolve().parent.parent)
FIT_SCHEDULE = ["--n-components", "8", "--layers", "3", "--burn-in", "4", "2", "--collect", "5"]
TEST_CHAIN = ["--burn-in", "3", "--collect", "5", "--seed", "2"]


def run(args, cwd, check=True):
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PYGBN_DEBUG", None)
    env["COLUMNS"] = "100"
    proc = subprocess.run([sys.executable, "-m", "pygbn", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"pygbn {' '.join(map(str, args))} failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def assert_one_line_error(proc, pattern, code=None):
    assert proc.returncode != 0
    if code is not None:
        assert proc.returncode == code
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("pygbn: error: "), lines[0]
    assert re.search(pattern, lines[0]), lines[0]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """Inputs written from the bundled corpus, and one small model fitted through the CLI."""
    d = tmp_path_factory.mktemp("cli")
    demo = load_demo()
    X = demo.counts[:600]
    save_counts(d / "train.npz", X, vocab=demo.vocab, vocab_path=d / "vocab.txt")
    save_counts(d / "new.mtx", demo.counts[3000:3060])
    # text: each document spelled out from its counts (the corpus's words survive the tokeniser)
    lines = []
    for row in demo.counts[3060:3100]:
        lines.append(" ".join(w for i, c in zip(row.indices, row.data) for w in [demo.vocab[i]] * int(c)))
    (d / "new.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = run(["fit", d / "train.npz", "--vocab", d / "vocab.txt", *FIT_SCHEDULE, "--seed", "1",
                "--heldout-fraction", "0.7", "-o", d / "model.npz"], cwd=d)
    return {"dir": d, "fit": proc, "demo": demo}


def test_fit_writes_a_model_and_reports(work):
    d, proc = work["dir"], work["fit"]
    assert "saved" in proc.stdout and "depth 3: widths" in proc.stdout
    assert "held-out perplexity" in proc.stdout
    assert "iteration" in proc.stderr  # progress on stderr
    model = pygbn.load(d / "model.npz")
    assert isinstance(model, pygbn.GBN) and len(model.networks_) == 3
    assert model.network_.vocabulary == work["demo"].vocab
    assert model.widths_[0] <= 8 and len(model.perplexity_) == 3
    assert all(np.isfinite(model.perplexity_))


def test_fit_text_input_quiet_and_reproducible(work, tmp_path):
    args = ["fit", work["dir"] / "new.txt", "--n-components", "5", "--layers", "2", "--burn-in", "3",
            "--collect", "2", "--seed", "4", "--quiet"]
    p1 = run(args + ["-o", tmp_path / "a.npz"], cwd=tmp_path)
    assert p1.stderr == ""
    run(args + ["-o", tmp_path / "b.npz"], cwd=tmp_path)
    a, b = pygbn.load(tmp_path / "a.npz"), pygbn.load(tmp_path / "b.npz")
    for na, nb in zip(a.networks_, b.networks_):
        for pa, pb in zip(na.phis, nb.phis):
            np.testing.assert_array_equal(pa, pb)
    vocab = a.network_.vocabulary
    assert vocab == sorted(vocab) and set(vocab) <= set(work["demo"].vocab)


def test_topics(work):
    proc = run(["topics", work["dir"] / "model.npz", "--n-words", "4"], cwd=work["dir"])
    out = proc.stdout
    assert "layer 1 (" in out and "layer 3 (" in out
    rows = [ln for ln in out.splitlines() if ln.strip().startswith("#")]
    assert rows and all(len(ln.split(")", 1)[1].split()) == 4 for ln in rows)
    vocab = set(work["demo"].vocab)
    assert all(w in vocab for ln in rows for w in ln.split(")", 1)[1].split())
    one = run(["topics", work["dir"] / "model.npz", "--layer", "2", "--n-topics", "2"], cwd=work["dir"]).stdout
    assert "layer 2 (" in one and "layer 1 (" not in one
    assert len([ln for ln in one.splitlines() if ln.strip().startswith("#")]) == 2


def test_tree_text_dot_svg(work):
    d = work["dir"]
    text = run(["tree", d / "model.npz", "--tau", "1"], cwd=d).stdout
    assert text.startswith("L3 #1")
    run(["tree", d / "model.npz", "--layer", "2", "--node", "1", "-o", d / "tree.dot"], cwd=d)
    name, nodes, edges = parse_dot((d / "tree.dot").read_text(encoding="utf-8"))
    assert name == "gbn" and "n2_0" in nodes
    assert unescape_label(nodes["n2_0"]["label"])[0] == "L2 #1"
    run(["tree", d / "model.npz", "--tau", "1", "--format", "svg", "-o", d / "tree.svg"], cwd=d)
    root = ET.parse(d / "tree.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"


def test_generate_text_and_matrix(work):
    d = work["dir"]
    out = run(["generate", d / "model.npz", "-n", "3", "--seed", "5", "--n-words", "6"], cwd=d).stdout
    docs = [ln for ln in out.splitlines() if re.match(r"^\d+: ", ln)]
    assert len(docs) == 3
    vocab = set(work["demo"].vocab)
    assert all(w in vocab for ln in docs for w in ln.split(": ", 1)[1].split())
    run(["generate", d / "model.npz", "-n", "4", "--seed", "5", "-o", d / "gen.npy"], cwd=d)
    G = np.load(d / "gen.npy")
    assert G.shape == (4, len(vocab)) and G.dtype.kind == "i" and (G >= 0).all()


def test_transform_counts_and_text(work):
    d = work["dir"]
    run(["transform", d / "model.npz", d / "new.mtx", "-o", d / "feats.npy", *TEST_CHAIN], cwd=d)
    F = np.load(d / "feats.npy")
    model = pygbn.load(d / "model.npz")
    assert F.shape == (60, model.widths_[0])
    np.testing.assert_allclose(F.sum(axis=1), 1.0, rtol=1e-9)
    run(["transform", d / "model.npz", d / "new.txt", "-o", d / "feats.csv", *TEST_CHAIN], cwd=d)
    C = np.loadtxt(d / "feats.csv", delimiter=",")
    assert C.shape == (40, model.widths_[0]) and np.all(C >= 0)


def test_perplexity(work):
    d = work["dir"]
    out = run(["perplexity", d / "model.npz", d / "new.mtx", *TEST_CHAIN], cwd=d).stdout
    m = re.search(r"held-out perplexity .*: ([0-9.]+)$", out.strip())
    assert m, out
    assert 1.0 < float(m.group(1)) < 1488.0 * 10


def test_demo_tiny(tmp_path):
    proc = run(["demo", "--n-components", "6", "--burn-in", "3", "2", "--collect", "2", "--quiet",
                "-o", tmp_path / "demo.npz"], cwd=tmp_path)
    out = proc.stdout
    assert "depth 3: widths" in out and "layer 3 (" in out and "tree rooted" in out
    assert re.search(r"^L3 #1 ", out, re.M)
    assert proc.stderr == ""
    assert len(pygbn.load(tmp_path / "demo.npz").networks_) == 3


# ---------------------------------------------------------------------------
# errors: one line, non-zero, no traceback
# ---------------------------------------------------------------------------


def test_errors_through_subprocess(work, tmp_path):
    d = work["dir"]
    assert_one_line_error(run(["topics", tmp_path / "missing.npz"], cwd=tmp_path, check=False),
                          "model file not found", code=1)
    assert_one_line_error(run(["fit", d / "train.npz", "--n-components", "many", "-o", "m.npz"],
                              cwd=tmp_path, check=False), "--n-components", code=2)
    assert_one_line_error(run(["fit", d / "train.npz", "--link", "bernoulli", "-o", tmp_path / "m.npz"],
                              cwd=tmp_path, check=False), "--binarize", code=1)
    assert_one_line_error(run(["frobnicate"], cwd=tmp_path, check=False), "invalid choice", code=2)


def _main(capsys, *args):
    code = cli.main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    "args, pattern",
    [
        (["fit", "{d}/nope.mtx", "-o", "{t}/m.npz"], "input not found"),
        (["fit", "{d}/train.npz", "-o", "{t}/m.txt"], r"must end in \.npz"),
        (["fit", "{d}/train.npz", "--link", "bernoulli", "-o", "{t}/m.npz"], "needs 0/1 data"),
        (["fit", "{d}/train.npz", "--link", "poisson", "--heldout-fraction", "0.5", "--vocab",
          "{d}/new.txt", "-o", "{t}/m.npz"], "terms but the counts"),
        (["fit", "{t}/reals.npz", "-o", "{t}/m.npz"], r"integer counts, found 0\.5 \(use --link prg"),
        (["fit", "{d}/train.npz", "--link", "prg", "--heldout-fraction", "0.5", "-o", "{t}/m.npz"],
         "needs count data"),
        (["topics", "{d}/train.npz"], "not a pygbn model"),
        (["topics", "{d}/vocab.txt"], "not a pygbn model"),
        (["topics", "{d}/model.npz", "--layer", "9"], "--layer must be between 1 and 3"),
        (["topics", "{d}/model.npz", "--depth", "7"], "--depth must be between 1 and 3"),
        (["tree", "{d}/model.npz", "--node", "999"], "--node must be a rank"),
        (["tree", "{d}/model.npz", "--tau", "1", "2"], "one value or one per layer"),
        (["tree", "{d}/model.npz", "-o", "{t}/tree.png"], "text, DOT or SVG"),
        (["transform", "{d}/model.npz", "{d}/train.npz", "-o", "{t}/f.xyz"], "must end in one of"),
        (["transform", "{d}/model.npz", "{t}/wide.npz", "-o", "{t}/f.npy"], "columns but the model has"),
        (["perplexity", "{d}/model.npz", "{t}/absent.txt"], "input not found"),
    ],
)
def test_user_errors_are_one_line(work, tmp_path, capsys, args, pattern):
    sp.save_npz(tmp_path / "reals.npz", sp.csr_matrix(np.array([[0.5, 1.0], [2.0, 0.0]])))
    sp.save_npz(tmp_path / "wide.npz", sp.csr_matrix(np.ones((2, 5), dtype=np.int64)))
    args = [a.format(d=work["dir"], t=tmp_path) for a in args]
    code, out, err = _main(capsys, *args)
    assert code == 1, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pygbn: error: "), err
    assert re.search(pattern, lines[0]), lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["fit"],
        ["fit", "x.npz"],  # -o is required
        ["fit", "x.npz", "-o", "m.npz", "--link", "gaussian"],
        ["fit", "x.npz", "-o", "m.npz", "--n-components", "0"],
        ["fit", "x.npz", "-o", "m.npz", "--heldout-fraction", "1.5"],
        ["tree", "m.npz", "--format", "png"],
        ["generate", "m.npz", "-n", "-1"],
        ["demo", "--no-such-option"],
        ["fit", "x.npz", "-o", "m.npz", "--jobs", "0"],
        ["transform", "m.npz", "x.txt", "-o", "f.npy", "--jobs", "two"],
        ["fit", "x.txt", "-o", "m.npz", "--encoding", "klingon"],
        ["fit", "x.txt", "-o", "m.npz", "--errors", "skip"],
        [],
    ],
)
def test_bad_command_lines_exit_2_with_one_line(capsys, args):
    code, out, err = _main(capsys, *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pygbn: error: "), err


def test_help_and_version(capsys):
    code, out, _ = _main(capsys, "--help")
    assert code == 0 and "demo" in out and "fit" in out
    code, out, _ = _main(capsys, "--version")
    assert code == 0 and pygbn.__version__ in out
    assert ("OpenMP kernels" in out) == pygbn.random.openmp_enabled()
    for cmd in ("fit", "topics", "tree", "generate", "transform", "perplexity", "demo"):
        code, out, _ = _main(capsys, cmd, "--help")
        assert code == 0 and out.startswith(f"usage: pygbn {cmd}")


def test_network_file_is_accepted(work, tmp_path, capsys):
    model = pygbn.load(work["dir"] / "model.npz")
    pygbn.save(model.networks_[1], tmp_path / "net2.npz")
    code, out, err = _main(capsys, "topics", tmp_path / "net2.npz", "--n-topics", "1")
    assert code == 0 and "layer 2 (" in out and "layer 3" not in out
    code, out, err = _main(capsys, "topics", tmp_path / "net2.npz", "--depth", "3")
    assert code == 1 and "one network of depth 2" in err


def test_library_warnings_are_pygbn_lines_and_quiet_silences_them(tmp_path, capsys):
    """A warning of the library (here: model terms the tokeniser never produces) is one
    'pygbn: ...' line on stderr, not a source location; --quiet silences it."""
    rng = np.random.default_rng(0)
    save_counts(tmp_path / "c.mtx", sp.csr_matrix(rng.poisson(1.0, size=(30, 4))))
    write_vocab(tmp_path / "v.txt", ["apple", "banana", "c++", "cherry"])
    (tmp_path / "new.txt").write_text("apple banana\ncherry apple\n", encoding="utf-8")
    code, _, err = _main(capsys, "fit", tmp_path / "c.mtx", "--vocab", tmp_path / "v.txt", "--n-components", "3",
                         "--layers", "1", "--burn-in", "3", "--collect", "2", "--seed", "0", "-q",
                         "-o", tmp_path / "m.npz")
    assert code == 0 and err == ""
    chain = ["--burn-in", "2", "--collect", "2", "-o", tmp_path / "f.npy"]
    code, _, err = _main(capsys, "transform", tmp_path / "m.npz", tmp_path / "new.txt", *chain)
    assert code == 0, err
    assert err.splitlines() == ["pygbn: 1 vocabulary term(s) can never be produced by the tokeniser "
                                "([a-z]+, length >= 3), e.g. 'c++': their columns stay zero"]
    code, _, err = _main(capsys, "transform", tmp_path / "m.npz", tmp_path / "new.txt", *chain, "-q")
    assert code == 0 and err == ""


def test_generate_matrix_for_a_model_without_vocabulary(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = (rng.random((30, 9)) < 0.3).astype(np.int64)
    sp.save_npz(tmp_path / "bin.npz", sp.csr_matrix(X))
    code, out, err = _main(capsys, "fit", tmp_path / "bin.npz", "--link", "bernoulli", "--n-components", "4",
                           "--layers", "1", "--burn-in", "3", "--collect", "2", "--seed", "0", "-q",
                           "-o", tmp_path / "bin_model.npz")
    assert code == 0, err
    code, out, err = _main(capsys, "generate", tmp_path / "bin_model.npz", "-n", "3", "--seed", "1")
    assert code == 0, err
    rows = np.loadtxt(out.splitlines(), delimiter=",", ndmin=2)
    assert rows.shape == (3, 9) and set(np.unique(rows)) <= {0.0, 1.0}
    code, out, err = _main(capsys, "generate", tmp_path / "bin_model.npz", "-n", "2", "-o", tmp_path / "g.mtx")
    assert code == 0 and (tmp_path / "g.mtx").exists()
    code, out, err = _main(capsys, "transform", tmp_path / "bin_model.npz", tmp_path / "bin.npz",
                           "-o", tmp_path / "f.npy", "--burn-in", "2", "--collect", "2")
    assert code == 0, err
    assert np.load(tmp_path / "f.npy").shape[0] == 30
    # text cannot be read by a model without a vocabulary
    (tmp_path / "docs.txt").write_text("some words here\n", encoding="utf-8")
    code, out, err = _main(capsys, "transform", tmp_path / "bin_model.npz", tmp_path / "docs.txt",
                           "-o", tmp_path / "f2.npy")
    assert code == 1 and "no vocabulary" in err


# ---------------------------------------------------------------------------
# seeds, output checks, standard input, encodings, Ctrl-C
# ---------------------------------------------------------------------------


def test_perplexity_and_transform_reproducible_without_seed(work, tmp_path, capsys):
    d = work["dir"]
    chain = ["--burn-in", "3", "--collect", "5"]
    runs = [_main(capsys, "perplexity", d / "model.npz", d / "new.mtx", *chain) for _ in range(2)]
    assert runs[0][0] == 0 and runs[0][1] == runs[1][1] and "seed" not in runs[0][2]
    # the model was fitted with --seed 1: that seed is the default
    assert _main(capsys, "perplexity", d / "model.npz", d / "new.mtx", *chain, "--seed", "1")[1] == runs[0][1]
    assert _main(capsys, "perplexity", d / "model.npz", d / "new.mtx", *chain, "--seed", "2")[1] != runs[0][1]
    # a bare network stores no seed: seed 0, said on stderr
    pygbn.save(pygbn.load(d / "model.npz").network_, tmp_path / "net.npz")
    bare = [_main(capsys, "perplexity", tmp_path / "net.npz", d / "new.mtx", *chain) for _ in range(2)]
    assert bare[0][1] == bare[1][1]
    assert "the model stores no seed: using seed 0" in bare[0][2]
    assert _main(capsys, "perplexity", tmp_path / "net.npz", d / "new.mtx", *chain, "--seed", "0")[1] == bare[0][1]
    for name in ("a.npy", "b.npy"):
        assert _main(capsys, "transform", tmp_path / "net.npz", d / "new.mtx", "-o", tmp_path / name, *chain)[0] == 0
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))


@pytest.mark.parametrize("seed", [np.random.SeedSequence(7), [7, 8]], ids=["SeedSequence", "list"])
def test_transform_and_perplexity_reuse_a_stored_seed_of_any_kind(work, tmp_path, capsys, seed):
    # a model file keeps a SeedSequence or a list of ints as its seed: without --seed the commands
    # draw what the loaded model's transform and score draw (they took seed 0 and said "stores no seed")
    X = work["demo"].counts[:200]
    model = pygbn.GBN(n_components=6, n_layers=1, burn_in=4, n_collect=2, transform_iter=(3, 4),
                      random_state=seed).fit(X)
    model.save(tmp_path / "m.npz")
    loaded = pygbn.load(tmp_path / "m.npz")
    new = work["dir"] / "new.mtx"
    code, _, err = _main(capsys, "transform", tmp_path / "m.npz", new, "-o", tmp_path / "f.npy")
    assert code == 0 and "seed" not in err
    _, perms = loaded.network_.relabel_by_popularity(return_perms=True)
    Y = work["demo"].counts[3000:3060]      # what new.mtx holds
    expect = loaded.transform(Y)[:, perms[0]]
    np.testing.assert_array_equal(np.load(tmp_path / "f.npy"), expect)
    code, out, err = _main(capsys, "perplexity", tmp_path / "m.npz", new)
    assert code == 0 and "seed" not in err
    Y = Y[np.asarray(Y.sum(axis=1)).ravel() >= 2]
    assert out.strip().endswith(f": {np.exp(-loaded.score(Y)):.2f}")


@pytest.mark.parametrize("output, pattern", [
    ("{t}/missing/dir/m.npz", "folder of output file .* does not exist"),
    ("{t}/folder.npz", "is a folder"),
    ("{t}/m.txt", r"must end in \.npz"),
])
def test_fit_checks_the_output_before_reading_or_fitting(tmp_path, capsys, output, pattern):
    (tmp_path / "folder.npz").mkdir()
    # the input does not even exist: the output is checked first
    code, out, err = _main(capsys, "fit", tmp_path / "absent.txt", "-o", output.format(t=tmp_path))
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and re.search(pattern, lines[0]), err
    code, out, err = _main(capsys, "demo", "-o", output.format(t=tmp_path))
    assert code == 1 and re.search(pattern, err) and "pygbn demo" not in out


def _stdin(data: bytes):
    import io as _io

    class Stdin:
        buffer = _io.BytesIO(data)

    return Stdin()


def test_standard_input(work, tmp_path, capsys, monkeypatch):
    d = work["dir"]
    text = (d / "new.txt").read_bytes()
    fit = ["--n-components", "4", "--layers", "1", "--burn-in", "3", "--collect", "2", "--seed", "2", "-q"]
    env = dict(os.environ, PYTHONPATH=PKG_PARENT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "pygbn", "fit", "-", *fit, "-o", tmp_path / "stdin.npz"],
                          input=text, capture_output=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert _main(capsys, "fit", d / "new.txt", *fit, "-o", tmp_path / "file.npz")[0] == 0
    a, b = pygbn.load(tmp_path / "stdin.npz"), pygbn.load(tmp_path / "file.npz")
    assert a.network_.vocabulary == b.network_.vocabulary
    np.testing.assert_array_equal(a.network_.layers[0].phi, b.network_.layers[0].phi)
    monkeypatch.setattr(sys, "stdin", _stdin(text))
    assert _main(capsys, "transform", tmp_path / "file.npz", "-", "-o", tmp_path / "s.npy", *TEST_CHAIN)[0] == 0
    assert _main(capsys, "transform", tmp_path / "file.npz", d / "new.txt", "-o", tmp_path / "f.npy",
                 *TEST_CHAIN)[0] == 0
    np.testing.assert_array_equal(np.load(tmp_path / "s.npy"), np.load(tmp_path / "f.npy"))
    monkeypatch.setattr(sys, "stdin", _stdin(b""))
    code, out, err = _main(capsys, "fit", "-", *fit, "-o", tmp_path / "empty.npz")
    assert code == 1 and "standard input holds no documents" in err


def test_encoding_and_errors_options(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(6):
        (folder / f"{i}.txt").write_text(f"apple banana cherry {'date ' * i} elderberry", encoding="utf-8")
    (folder / "latin.txt").write_bytes("caf\xe9 cr\xe8me banana apple r\xe9sum\xe9".encode("latin-1"))
    fit = ["--n-components", "3", "--layers", "1", "--burn-in", "2", "--collect", "2", "--seed", "0", "-q"]
    code, out, err = _main(capsys, "fit", folder, *fit, "-o", tmp_path / "m.npz")
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, err
    assert "latin.txt" in lines[0] and "at byte" in lines[0] and "--encoding" in lines[0] and "--errors" in lines[0]
    assert "encoding=" not in lines[0]  # no advice about the Python API's keywords
    code, out, err = _main(capsys, "fit", folder, *fit, "--encoding", "latin-1", "-o", tmp_path / "l.npz")
    assert code == 0, err
    assert "caf" in pygbn.load(tmp_path / "l.npz").network_.vocabulary  # tokens are runs of [a-z]
    code, out, err = _main(capsys, "fit", folder, *fit, "--errors", "replace", "-o", tmp_path / "r.npz")
    assert code == 0, err
    assert {"banana", "caf"} <= set(pygbn.load(tmp_path / "r.npz").network_.vocabulary)
    monkeypatch.setattr(sys, "stdin", _stdin("caf\xe9 apple banana\n".encode("latin-1")))
    code, out, err = _main(capsys, "fit", "-", *fit, "-o", tmp_path / "s.npz")
    assert code == 1 and "could not decode standard input as utf-8" in err


def test_compressed_text_input_is_refused(tmp_path, capsys, monkeypatch):
    """A gzip-compressed corpus (docs.txt.gz, or a .csv.gz of counts) was read as text: 'could not
    decode ... give its encoding (e.g. --encoding latin-1)', advice that fitted a model of noise
    words (exit 0); now one line naming the compression, whatever --encoding and --errors say."""
    import gzip

    docs = "apple banana cherry elderberry\nbanana cherry grape\n" * 5
    (tmp_path / "docs.txt.gz").write_bytes(gzip.compress(docs.encode()))
    (tmp_path / "counts.csv.gz").write_bytes(gzip.compress(b"1,0,2\n0,3,1\n"))
    (tmp_path / "named.csv").write_bytes(gzip.compress(b"1,0,2\n0,3,1\n"))
    fit = ["--n-components", "3", "--layers", "1", "--burn-in", "2", "--collect", "2", "--seed", "0", "-q"]
    for name in ("docs.txt.gz", "counts.csv.gz", "named.csv"):
        for extra in ([], ["--encoding", "latin-1"], ["--errors", "replace"]):
            code, out, err = _main(capsys, "fit", tmp_path / name, *fit, *extra, "-o", tmp_path / "m.npz")
            assert code == 1 and len(err.strip().splitlines()) == 1, err
            assert f"{name}' is gzip-compressed, not text: decompress it first" in err, err
            assert "--encoding" not in err and not (tmp_path / "m.npz").exists()
    monkeypatch.setattr(sys, "stdin", _stdin(gzip.compress(docs.encode())))
    code, out, err = _main(capsys, "fit", "-", *fit, "--errors", "replace", "-o", tmp_path / "s.npz")
    assert code == 1 and "gzip-compressed" in err, err


def _sigint_as_from_a_terminal():  # pragma: no cover - runs in the child, between fork and exec
    """In the child, between fork and exec: SIGINT as an interactive shell hands it to a
    foreground command, at its default disposition (Python then installs its KeyboardInterrupt
    handler) and not blocked.  Otherwise the child inherits the test process's: a
    non-interactive shell starts a command run with '&' with SIGINT ignored (POSIX), so the
    suite run as 'pytest tests &' would start pygbn with SIGINT ignored, Python would leave it
    so (as any program does), and the fit would run on through the test's Ctrl-C."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


@pytest.mark.parametrize("parent", ["default", "sigint-ignored", "sigint-blocked"])
def test_ctrl_c_during_fit(work, tmp_path, parent):
    import signal

    d = work["dir"]
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=PKG_PARENT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYGBN_DEBUG", None)
    # the test's process as a background run of the suite leaves it (see _sigint_as_from_a_terminal)
    old_handler = signal.signal(signal.SIGINT, signal.SIG_IGN) if parent == "sigint-ignored" else None
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT]) if parent == "sigint-blocked" else None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pygbn", "fit", d / "train.npz", "--vocab", d / "vocab.txt",
             "--n-components", "20", "--layers", "2", "--burn-in", "1000000", "--collect", "1",
             "--progress-every", "1", "-o", out / "m.npz"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=_sigint_as_from_a_terminal)
    finally:
        if old_handler is not None:
            signal.signal(signal.SIGINT, old_handler)
        if old_mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    seen = []
    try:
        for line in proc.stderr:  # wait until the fit has started
            seen.append(line)
            if "iteration" in line:
                break
        proc.send_signal(signal.SIGINT)
        stdout, rest = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # pragma: no cover - only if the interrupt was not handled
            proc.kill()
            proc.communicate()
    assert any("iteration" in line for line in seen), "".join(seen)
    assert proc.returncode == 130
    err = "".join(seen) + rest
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    others = [ln for ln in err.splitlines() if "| iteration " not in ln]
    assert others == ["pygbn: error: interrupted"], err
    assert os.listdir(out) == []  # no model, no temporary file
    assert "saved" not in stdout


# ---------------------------------------------------------------------------
# docs/cli.md holds the current usage text
# ---------------------------------------------------------------------------

CLI_MD = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


@pytest.mark.skipif(not CLI_MD.exists(), reason="docs/cli.md is not beside the tests")
def test_cli_reference_matches_argparse():
    doc = CLI_MD.read_text(encoding="utf-8")
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert set(sub.choices) == set(cli.COMMANDS)
    for name, p in sub.choices.items():
        assert f"## pygbn {name}" in doc
        for action in p._actions:
            for opt in action.option_strings:
                assert opt in doc, f"pygbn {name} {opt} is not documented in docs/cli.md"
    # argparse's layout differs between Python versions: compare verbatim on the generating one
    m = re.search(r"generated with Python (\d+\.\d+)", doc)
    assert m, "docs/cli.md must say which Python generated it"
    if m.group(1) != f"{sys.version_info[0]}.{sys.version_info[1]}":
        pytest.skip(f"docs/cli.md was generated with Python {m.group(1)}")
    for name in (None, *cli.COMMANDS):
        assert cli.help_text(name) in doc, f"the usage of 'pygbn {name or ''}' is stale: run tools/gen_docs.py"


def test_topics_coherence(work):
    """--coherence scores each node's top words on a reference corpus: the values of
    Network.coherence on the relabelled network, with each layer's mean and diversity."""
    d = work["dir"]
    out = run(["topics", d / "model.npz", "--n-words", "5", "--coherence", d / "train.npz",
               "--measure", "all", "--layer", "2"], cwd=d).stdout
    header = [ln for ln in out.splitlines() if ln.startswith("layer 2")][0]
    assert "mean coherence u_mass" in header and "c_v" in header and "diversity" in header
    net = pygbn.load(d / "model.npz").network_.relabel_by_popularity()
    X = work["demo"].counts[:600]
    first = [ln for ln in out.splitlines() if ln.strip().startswith("#1 ")][0]
    for measure in ("u_mass", "c_uci", "c_npmi", "c_v"):
        value = float(re.search(measure + r"=(\S+)", first).group(1))
        assert value == pytest.approx(net.coherence(X, layer=2, measure=measure, n=5)[0], abs=1e-4)
    assert f"diversity {net.diversity(layer=2):.3f}" in header
    proc = run(["topics", d / "model.npz", "--coherence", d / "new.mtx", "--n-words", "1"], cwd=d, check=False)
    assert_one_line_error(proc, "n-words of at least 2")


def test_trace(work, tmp_path):
    fits = []
    for seed in (1, 2):
        run(["fit", work["dir"] / "train.npz", "--vocab", work["dir"] / "vocab.txt", "--n-components", "6",
             "--layers", "2", "--burn-in", "6", "4", "--collect", "6", "--seed", seed, "--trace-every", "1",
             "--quiet", "-o", tmp_path / f"m{seed}.npz"], cwd=tmp_path)
        fits.append(pygbn.load(tmp_path / f"m{seed}.npz"))
    out = run(["trace", tmp_path / "m1.npz", tmp_path / "m2.npz", "-o", tmp_path / "t.svg"], cwd=tmp_path).stdout
    assert "every 1 iterations" in out and "depth 2: 10 values (iterations 1..10)" in out
    assert f"last {fits[0].loglikelihoods_[0][-1]:.4f}" in out
    r = pygbn.evaluation.trace_diagnostics(fits, depth=1)
    assert f"depth 1: R-hat {r['rhat']:.3f}, ESS {r['ess']:.1f} of 12 values" in out
    root = ET.parse(tmp_path / "t.svg").getroot()
    assert root.tag.endswith("svg") and len(root.findall(".//{http://www.w3.org/2000/svg}polyline")) == 4
    out = run(["trace", tmp_path / "m1.npz", tmp_path / "m2.npz", "--discard", "burn_in"], cwd=tmp_path).stdout
    r = pygbn.evaluation.trace_diagnostics(fits, depth=2, discard="burn_in")
    assert "after the burn-in" in out and f"depth 2: R-hat {r['rhat']:.3f}, ESS {r['ess']:.1f}" in out
    assert_one_line_error(run(["trace", tmp_path / "m1.npz", "--discard", "burn"], cwd=tmp_path, check=False),
                          "discard")
    # the module's model was fitted with stages shorter than trace_every: no trace
    assert_one_line_error(run(["trace", work["dir"] / "model.npz"], cwd=tmp_path, check=False),
                          "no convergence traces")
    assert_one_line_error(run(["trace", tmp_path / "m1.npz", "-o", tmp_path / "t.png"], cwd=tmp_path,
                              check=False), "svg")


def test_fit_method_partial(work, tmp_path):
    """``--method partial`` reaches the estimator and is stored with the model."""
    run(["fit", work["dir"] / "train.npz", "--n-components", "5", "--layers", "2", "--burn-in", "3",
         "--collect", "2", "--seed", "4", "--quiet", "--method", "partial", "--jobs", "2",
         "-o", tmp_path / "p.npz"], cwd=tmp_path)
    model = pygbn.load(tmp_path / "p.npz")
    assert model.method_ == "partial" and model.get_params()["method"] == "partial"
    assert_one_line_error(run(["fit", work["dir"] / "train.npz", "--link", "bernoulli", "--binarize", "--method", "partial",
                               "-o", tmp_path / "q.npz"], cwd=tmp_path, check=False), "partial")


# ---------------------------------------------------------------------------
# review findings: outputs, vocabularies, matrix inputs, wording
# ---------------------------------------------------------------------------


def test_generate_and_tree_check_the_output_before_any_work(work, tmp_path, capsys):
    d = work["dir"]
    for cmd, name in (("generate", "g.mtx"), ("generate", "g.npz"), ("generate", "g.npy"),
                      ("tree", "t.svg"), ("tree", "t.txt")):
        out_path = tmp_path / "missing" / name
        code, out, err = _main(capsys, cmd, d / "model.npz", "--seed", "1", "-o", out_path) if cmd == "generate" \
            else _main(capsys, cmd, d / "model.npz", "-o", out_path)
        assert code == 1 and out == "", (cmd, out)
        assert re.search(r"the folder of output file .* does not exist: '.*missing'", err), err
        assert not out_path.exists()
    # the output is checked before the model is even read
    code, out, err = _main(capsys, "generate", tmp_path / "absent.npz", "-o", tmp_path / "g.xyz")
    assert code == 1 and "must end in one of" in err
    code, out, err = _main(capsys, "tree", tmp_path / "absent.npz", "-o", tmp_path / "no" / "t.dot")
    assert code == 1 and "does not exist" in err and "model file" not in err


def test_topics_vocab_names_the_reference_columns_not_the_labels(work, tmp_path, capsys):
    d, demo = work["dir"], work["demo"]
    # the reference corpus with its columns reversed, named by a reversed vocabulary
    X = demo.counts[:600]
    rev = X[:, ::-1].tocsr()
    save_counts(tmp_path / "rev.npz", rev, vocab=demo.vocab[::-1], vocab_path=tmp_path / "rev.txt")
    args = ["topics", d / "model.npz", "--n-words", "5", "--layer", "2", "--measure", "u_mass"]
    code, plain, _ = _main(capsys, *args, "--coherence", d / "train.npz")
    assert code == 0
    code, out, err = _main(capsys, *args, "--coherence", tmp_path / "rev.npz", "--vocab", tmp_path / "rev.txt")
    assert code == 0, err
    # the same words (the model's own labels) and the same coherence as the unreversed corpus
    assert out.replace(repr(str(tmp_path / "rev.npz")), "REF") == plain.replace(repr(str(d / "train.npz")), "REF")
    assert err == ""
    # without --coherence, a --vocab cannot relabel a model that has a vocabulary: ignored, with a warning
    code, out, err = _main(capsys, "topics", d / "model.npz", "--n-words", "5", "--layer", "2",
                           "--vocab", tmp_path / "rev.txt")
    assert code == 0 and "--vocab" in err and "own vocabulary" in err
    assert out == _main(capsys, "topics", d / "model.npz", "--n-words", "5", "--layer", "2")[1]
    code, out, err = _main(capsys, "tree", d / "model.npz", "--vocab", tmp_path / "rev.txt")
    assert code == 0 and "own vocabulary" in err
    assert out == _main(capsys, "tree", d / "model.npz")[1]


def test_column_mismatch_hint_only_when_names_can_match(work, tmp_path, capsys):
    d = work["dir"]
    sp.save_npz(tmp_path / "wide.npz", sp.csr_matrix(np.ones((2, 5), dtype=np.int64)))
    code, _, err = _main(capsys, "transform", d / "model.npz", tmp_path / "wide.npz", "-o", tmp_path / "f.npy")
    assert code == 1 and "pass --vocab to match terms by name" in err
    # a model without a vocabulary cannot match by name: no such hint
    rng = np.random.default_rng(0)
    sp.save_npz(tmp_path / "bin.npz", sp.csr_matrix((rng.random((20, 6)) < 0.4).astype(np.int64)))
    assert _main(capsys, "fit", tmp_path / "bin.npz", "--link", "bernoulli", "--n-components", "3", "--layers",
                 "1", "--burn-in", "2", "--collect", "2", "--seed", "0", "-q", "-o", tmp_path / "b.npz")[0] == 0
    code, _, err = _main(capsys, "transform", tmp_path / "b.npz", tmp_path / "wide.npz", "-o", tmp_path / "f.npy")
    assert code == 1 and "columns but the model has 6 features" in err and "--vocab" not in err


def test_npy_csv_tsv_inputs_are_count_matrices(work, tmp_path, capsys):
    d = work["dir"]
    # what generate writes can be read back
    for name in ("g.npy", "g.csv", "g.tsv"):
        code, out, err = _main(capsys, "generate", d / "model.npz", "-n", "6", "--seed", "3", "-o", tmp_path / name)
        assert code == 0, err
        code, out, err = _main(capsys, "transform", d / "model.npz", tmp_path / name, "-o", tmp_path / f"{name}.f.npy",
                               "--burn-in", "2", "--collect", "2", "--seed", "0")
        assert code == 0, err
    F = [np.load(tmp_path / f"{name}.f.npy") for name in ("g.npy", "g.csv", "g.tsv")]
    np.testing.assert_array_equal(F[0], F[1])
    np.testing.assert_array_equal(F[0], F[2])
    code, out, err = _main(capsys, "perplexity", d / "model.npz", tmp_path / "g.npy", *TEST_CHAIN)
    assert code == 0 and "held-out perplexity" in out, err
    # a .csv of words is text (one document per line), a .csv of numbers a matrix
    from pygbn.cli.commands import _input_kind

    (tmp_path / "words.csv").write_text("apple,banana\ncherry,date\n", encoding="utf-8")
    assert _input_kind(str(tmp_path / "words.csv")) == "lines"
    assert _input_kind(str(tmp_path / "g.csv")) == "counts" and _input_kind(str(tmp_path / "g.tsv")) == "counts"
    # a model file is not data
    code, out, err = _main(capsys, "fit", d / "model.npz", "-o", tmp_path / "m.npz")
    assert code == 1 and "is a pygbn model file, not a count matrix" in err
    # a binary .npy is never decoded as text
    np.save(tmp_path / "obj.npy", np.array([[0.5, 1.0]]))
    code, out, err = _main(capsys, "fit", tmp_path / "obj.npy", "-o", tmp_path / "m.npz")
    assert code == 1 and "integer counts" in err and "--link prg" in err and "decode" not in err


def test_jobs_help_says_auto_depends_on_it():
    sub = next(a for a in cli.build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in ("fit", "demo"):
        jobs = next(a for a in sub.choices[name]._actions if "--jobs" in a.option_strings)
        assert "do not depend" not in jobs.help and "partial" in jobs.help and "collapsed" in jobs.help
    if not CLI_MD.exists():  # the help above is checked everywhere; the page only beside a checkout
        pytest.skip("docs/cli.md is not beside the tests")
    doc = " ".join(CLI_MD.read_text(encoding="utf-8").split())
    never = doc.index("changes the speed, never the result")
    assert doc[never - 60:never].endswith("For a given layer-one update `--jobs` ")
    assert "collapsed on one job, partial on any other `--jobs`" in doc


@pytest.mark.parametrize("cmd", [
    ["fit", "x.npz", "-o", "m.npz"], ["generate", "m.npz"], ["transform", "m.npz", "x.txt", "-o", "f.npy"],
    ["perplexity", "m.npz", "x.txt"], ["demo"],
])
def test_negative_seed_is_a_bad_command_line(capsys, cmd):
    code, out, err = _main(capsys, *cmd, "--seed", "-1")
    assert code == 2 and "--seed" in err and "expected an int >= 0" in err


def test_cli_wording_names_options_not_python_keywords(work, tmp_path, capsys):
    d = work["dir"]
    (tmp_path / "short.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    code, _, err = _main(capsys, "fit", d / "train.npz", "--vocab", tmp_path / "short.txt", "-o", tmp_path / "m.npz")
    assert code == 1 and "--transpose" in err and "transpose=True" not in err
    np.savez(tmp_path / "two.npz", a=np.ones((2, 2)), b=np.ones((2, 2)))
    code, _, err = _main(capsys, "fit", tmp_path / "two.npz", "-o", tmp_path / "m.npz")
    assert code == 1 and "'X'" in err and "pass key=" not in err
    (tmp_path / "latin.txt").write_bytes("caf\xe9\nbar\n".encode("latin-1"))
    for opt in ("--vocab", "--stop-words"):
        code, _, err = _main(capsys, "fit", d / "new.txt", opt, tmp_path / "latin.txt", "-o", tmp_path / "m.npz")
        assert code == 1 and f"the {opt} file" in err and "UTF-8" in err, err
        assert "encoding=" not in err and "errors=" not in err


def test_stop_words_file_is_a_word_list(tmp_path, capsys):
    docs = ["apple banana cherry", "apple banana durian", "banana cherry durian", "apple cherry"]
    (tmp_path / "docs.txt").write_text("\n".join(docs) + "\n", encoding="utf-8")
    # a BOM, a comment, blank lines, a repeated word and uppercase words
    (tmp_path / "stop.txt").write_bytes("\ufeffBanana\n# fruit we do not want\n\n  CHERRY \nbanana\n".encode("utf-8"))
    code, out, err = _main(capsys, "fit", tmp_path / "docs.txt", "--stop-words", tmp_path / "stop.txt",
                           "--n-components", "2", "--layers", "1", "--burn-in", "2", "--collect", "2",
                           "--seed", "0", "-q", "-o", tmp_path / "m.npz")
    assert code == 0, err
    assert pygbn.load(tmp_path / "m.npz").network_.vocabulary == ["apple", "durian"]


def test_vocab_file_with_a_bom(work, tmp_path, capsys):
    d, demo = work["dir"], work["demo"]
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbf" + "\n".join(demo.vocab).encode("utf-8") + b"\n")
    code, out, err = _main(capsys, "fit", d / "train.npz", "--vocab", tmp_path / "bom.txt", "--n-components", "3",
                           "--layers", "1", "--burn-in", "2", "--collect", "2", "--seed", "0", "-q",
                           "-o", tmp_path / "m.npz")
    assert code == 0, err
    assert pygbn.load(tmp_path / "m.npz").network_.vocabulary == demo.vocab


def _network_with_vocab(path, vocab, r=None):
    from pygbn.model.layer import Layer
    from pygbn.model.network import Network

    phi = np.random.default_rng(0).dirichlet(np.ones(len(vocab)), size=3).T
    net = Network(layers=[Layer(phi=phi, eta=0.05, c_median=20.0)],
                  r=np.ones(3) if r is None else np.asarray(r, dtype=float), vocabulary=list(vocab))
    pygbn.save(net, path)


def test_topics_and_generate_print_terms_on_one_line(tmp_path, capsys):
    weird = ["line\nbreak", "tab\there", "esc\x1b[31mape", "cr\rret", "nel\x85x", "sep\u2028y", "\x1b", "plain"]
    _network_with_vocab(tmp_path / "w.npz", weird, r=np.full(3, 500.0))  # long generated documents
    code, out, err = _main(capsys, "topics", tmp_path / "w.npz", "--n-words", str(len(weird)))
    assert code == 0, err
    rows = [ln for ln in out.splitlines() if ln.strip().startswith("#")]
    assert len(rows) == 3 and len(out.splitlines()) == 5
    code, gen, err = _main(capsys, "generate", tmp_path / "w.npz", "-n", "3", "--seed", "0",
                           "--n-words", str(len(weird)))
    assert code == 0, err
    assert [ln.split(":")[0] for ln in gen.splitlines()] == ["1", "2", "3"]
    for text_ in (out, gen):
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]", text_), repr(text_)
        assert "line break" in text_ and "tab here" in text_ and "esc[31mape" in text_


def test_topics_with_all_zero_weights(tmp_path, capsys):
    import warnings

    _network_with_vocab(tmp_path / "z.npz", ["aa", "bb", "cc", "dd"], r=np.zeros(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out, err = _main(capsys, "topics", tmp_path / "z.npz", "--n-words", "2")
    assert code == 0, err
    assert "nan" not in out and out.count("(0.000)") == 3


def test_transform_names_the_topics_command_of_its_depth(work, tmp_path, capsys):
    d = work["dir"]
    code, out, err = _main(capsys, "transform", d / "model.npz", d / "new.mtx", "--depth", "2",
                           "-o", tmp_path / "f.npy", "--burn-in", "2", "--collect", "2")
    assert code == 0, err
    assert "'pygbn topics --depth 2 --layer 1'" in out
    F = np.load(tmp_path / "f.npy")
    assert F.shape[1] == pygbn.load(d / "model.npz").networks_[1].widths[0]


def test_min_df_above_the_number_of_documents(work, tmp_path, capsys):
    code, out, err = _main(capsys, "fit", work["dir"] / "new.txt", "--min-df", "500", "-o", tmp_path / "m.npz")
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, err
    assert "--min-df 500 is more than the number of documents (40)" in lines[0]
    assert "max_df" not in lines[0] and "--max-df" not in lines[0]
    code, out, err = _main(capsys, "fit", work["dir"] / "new.txt", "--min-df", "5", "--max-df", "2",
                           "-o", tmp_path / "m.npz")
    assert code == 1 and "--max-df 2 corresponds to fewer documents (2) than --min-df 5" in err


def test_trace_says_why_there_is_no_trace(work, tmp_path, capsys):
    code, out, err = _main(capsys, "trace", work["dir"] / "model.npz")
    assert code == 1 and "trace_every=0" not in err
    # the module's fit: burn-in 4 2, collect 5, so stages of 9, 7 and 7 iterations, trace every 25
    assert "fewer iterations (at most 9) than --trace-every 25" in err
    assert _main(capsys, "fit", work["dir"] / "new.txt", "--n-components", "3", "--layers", "1", "--burn-in",
                 "30", "--collect", "2", "--trace-every", "0", "--seed", "0", "-q", "-o", tmp_path / "t0.npz")[0] == 0
    code, out, err = _main(capsys, "trace", tmp_path / "t0.npz")
    assert code == 1 and "fitted with --trace-every 0" in err


def test_text_kept_in_csv_or_tsv_is_read_as_text(tmp_path):
    """.csv/.tsv became count-matrix suffixes; a text corpus under these names (read as text
    before) is still text: the first line that is not numbers decides."""
    lines = ["the cat sat on the mat\tdog barks", "a cat and a dog", "mat and cat and mat"] * 10
    (tmp_path / "d.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    run(["fit", tmp_path / "d.tsv", "--n-components", "2", "--layers", "1", "--burn-in", "2", "1",
         "--collect", "1", "--min-df", "1", "--quiet", "-o", tmp_path / "m.npz"], cwd=tmp_path)
    assert pygbn.load(tmp_path / "m.npz").network_.vocabulary is not None
    np.savetxt(tmp_path / "x.csv", np.random.default_rng(0).poisson(1.0, size=(20, 6)), delimiter=",", fmt="%d")
    run(["fit", tmp_path / "x.csv", "--n-components", "2", "--layers", "1", "--burn-in", "2", "1",
         "--collect", "1", "--quiet", "-o", tmp_path / "c.npz"], cwd=tmp_path)
    assert pygbn.load(tmp_path / "c.npz").n_features_in_ == 6


def test_an_output_file_that_is_an_input_is_refused(work, tmp_path, capsys):
    """-o naming the model or the data the command reads replaced it (generate m.npz -o m.npz
    wrote the samples over the model; tree wrote text over it; transform x.npy -o x.npy)."""
    d = work["dir"]
    model = tmp_path / "m.npz"
    model.write_bytes((d / "model.npz").read_bytes())
    data = tmp_path / "x.npy"
    np.save(data, work["demo"].counts[:5].toarray())
    cases = [["generate", model, "-n", "2", "--seed", "1", "-o", model],
             ["tree", model, "-o", model],
             ["transform", model, data, "-o", data, *TEST_CHAIN],
             ["transform", model, tmp_path / "." / "x.npy", "-o", data, *TEST_CHAIN],
             ["fit", model, "-o", model]]
    before = {p: p.read_bytes() for p in (model, data)}
    for args in cases:
        code, out, err = _main(capsys, *args)
        assert code == 1 and out == "", args
        assert re.fullmatch(r"pygbn: error: output file .* is the input .*: writing it would replace what "
                            r"the command reads; give another output file\n", err), err
    assert {p: p.read_bytes() for p in (model, data)} == before
    assert sorted(os.listdir(tmp_path)) == ["m.npz", "x.npy"]
    # another file in the same place is written as before
    assert _main(capsys, "generate", model, "-n", "2", "--seed", "1", "-o", tmp_path / "g.npz")[0] == 0


def test_outputs_are_written_whole_or_not_at_all(work, tmp_path, capsys, monkeypatch):
    """Ctrl-C (or any failure) while a matrix or a text output was written left a half-written
    file in place of the old one; docs/cli.md promises none."""
    d = work["dir"]
    old = tmp_path / "g.csv"
    old.write_text("old\n")
    real_savetxt = np.savetxt

    def interrupted(fname, X, *args, **kwargs):
        real_savetxt(fname, X[:1], *args, **kwargs)    # one row written, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savetxt", interrupted)
    code, out, err = _main(capsys, "generate", d / "model.npz", "-n", "4", "--seed", "1", "-o", old)
    assert code == 130 and err == "pygbn: error: interrupted\n"
    code, out, err = _main(capsys, "transform", d / "model.npz", d / "new.mtx", "-o", tmp_path / "f.csv",
                           *TEST_CHAIN)
    assert code == 130
    monkeypatch.undo()
    assert old.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["g.csv"]    # no temporary file left either
    # a successful write replaces the old file and keeps its permission bits
    os.chmod(old, 0o640)
    assert _main(capsys, "generate", d / "model.npz", "-n", "4", "--seed", "1", "-o", old)[0] == 0
    assert np.loadtxt(old, delimiter=",").shape == (4, 1488)
    assert os.stat(old).st_mode & 0o777 == 0o640
    assert sorted(os.listdir(tmp_path)) == ["g.csv"]


def test_upper_case_output_suffixes_name_the_file_written(work, tmp_path, capsys):
    """-o F.NPY wrote F.NPY.npy (numpy appends .npy to a name not ending in exactly '.npy')
    while saying it wrote F.NPY."""
    d = work["dir"]
    assert _main(capsys, "generate", d / "model.npz", "-n", "3", "--seed", "1", "-o", tmp_path / "G.NPY")[0] == 0
    assert _main(capsys, "generate", d / "model.npz", "-n", "3", "--seed", "1", "-o", tmp_path / "G.npy")[0] == 0
    assert _main(capsys, "transform", d / "model.npz", d / "new.mtx", "-o", tmp_path / "F.NPY", *TEST_CHAIN)[0] == 0
    assert sorted(os.listdir(tmp_path)) == ["F.NPY", "G.NPY", "G.npy"]
    np.testing.assert_array_equal(np.load(tmp_path / "G.NPY"), np.load(tmp_path / "G.npy"))
    assert np.load(tmp_path / "F.NPY").shape[0] == 60


def test_topics_coherence_with_one_word_fails_before_any_output(work, capsys):
    code, out, err = _main(capsys, "topics", work["dir"] / "model.npz", "--n-words", "1",
                           "--coherence", work["dir"] / "new.txt")
    assert code == 1 and out == ""
    assert "--n-words of at least 2, got 1" in err and len(err.splitlines()) == 1


def test_text_with_no_word_of_the_vocabulary_is_an_error(work, tmp_path, capsys, monkeypatch):
    """transform wrote features of empty documents and topics --coherence printed scores of 0
    for text none of whose words the model knows (a count matrix with no known term was
    already an error)."""
    d = work["dir"]
    (tmp_path / "foreign.txt").write_text("qwertyuiop zxcvbnm\nasdfghjkl qwertyuiop\n", encoding="utf-8")
    for args in (["transform", d / "model.npz", tmp_path / "foreign.txt", "-o", tmp_path / "f.npy", *TEST_CHAIN],
                 ["topics", d / "model.npz", "--coherence", tmp_path / "foreign.txt"],
                 ["perplexity", d / "model.npz", tmp_path / "foreign.txt", *TEST_CHAIN],
                 ["fit", tmp_path / "foreign.txt", "--vocab", d / "vocab.txt", "-o", tmp_path / "m.npz"]):
        code, out, err = _main(capsys, *args)
        assert code == 1 and out == "", args
        assert re.fullmatch(r"pygbn: error: none of the words of '.*foreign.txt' is in (the model's vocabulary "
                            r"\(1488 terms\)|the --vocab file '.*vocab.txt' \(1488 terms\))\n", err), err
    monkeypatch.setattr(sys, "stdin", _stdin(b"qwertyuiop\n"))
    code, out, err = _main(capsys, "transform", d / "model.npz", "-", "-o", tmp_path / "f.npy", *TEST_CHAIN)
    assert code == 1 and "none of the words of standard input" in err
    assert os.listdir(tmp_path) == ["foreign.txt"]
    # text with a single known word is read as before
    (tmp_path / "one.txt").write_text("qwertyuiop game\n", encoding="utf-8")
    assert _main(capsys, "transform", d / "model.npz", tmp_path / "one.txt", "-o", tmp_path / "f.npy",
                 *TEST_CHAIN)[0] == 0


def test_data_errors_in_command_line_words(tmp_path, capsys):
    """Errors about the data spoke numpy 2's reprs (found np.float64(-1.0)) and the Python API's
    keywords (link='bernoulli') on the command line."""
    np.save(tmp_path / "neg.npy", -np.ones((2, 2)))
    np.save(tmp_path / "two.npy", np.full((2, 2), 2.0))
    code, _, err = _main(capsys, "fit", tmp_path / "neg.npy", "-o", tmp_path / "m.npz")
    assert code == 1 and "must be non-negative, found -1.0\n" in err, err
    code, _, err = _main(capsys, "fit", tmp_path / "two.npy", "--link", "bernoulli", "-o", tmp_path / "m.npz")
    assert code == 1 and "for --link bernoulli, found 2.0" in err and "--binarize" in err, err
    assert "np." not in err and "link=" not in err


@pytest.mark.parametrize("args, where", [(["topics", "m.npz", "--bogus"], "pygbn topics --help"),
                                         (["fit", "x.txt", "-o", "m.npz", "--depth", "2"], "pygbn fit --help"),
                                         (["trace", "a.npz", "--discard", "0.3", "b.npz"], "pygbn trace --help")])
def test_an_unknown_option_points_to_the_help_of_its_command(capsys, args, where):
    """'pygbn topics m.npz --bogus' said (see 'pygbn --help'), whose text lists no option of topics."""
    code, out, err = _main(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith("pygbn: error: unrecognized arguments: ") and err.endswith(f"(see '{where}')\n"), err


def test_trace_warns_when_the_fits_differ(work, tmp_path, capsys):
    """R-hat and ESS of fits of different data, links or trace points were printed without a word
    (the chains are aligned at their last values, whatever iterations those are)."""
    d = work["dir"]
    fit = ["--n-components", "4", "--layers", "1", "--burn-in", "8", "--collect", "4", "-q"]
    for name, extra in (("a", ["--seed", "1", "--trace-every", "1"]), ("b", ["--seed", "2", "--trace-every", "1"]),
                        ("c", ["--seed", "3", "--trace-every", "2"]),
                        ("d", ["--seed", "4", "--trace-every", "1", "--link", "bernoulli", "--binarize"])):
        assert _main(capsys, "fit", d / "train.npz", "--vocab", d / "vocab.txt", *fit, *extra,
                     "-o", tmp_path / f"{name}.npz")[0] == 0
    code, out, err = _main(capsys, "trace", tmp_path / "a.npz", tmp_path / "b.npz")
    assert code == 0 and "R-hat" in out and err == ""
    code, out, err = _main(capsys, "trace", tmp_path / "a.npz", tmp_path / "c.npz", tmp_path / "d.npz")
    assert code == 0 and "R-hat" in out
    assert err == ("pygbn: the models differ in link (poisson, poisson, bernoulli); --trace-every (1, 2, 1): R-hat "
                   "and ESS are meant for fits of the same data with the same settings and different seeds\n"), err
    code, out, err = _main(capsys, "trace", tmp_path / "a.npz", tmp_path / "c.npz", "-q")
    assert code == 0 and err == ""


def test_trace_refuses_one_chain_counted_twice(work, tmp_path, capsys):
    """'pygbn trace a.npz a.npz' (or a.npz and a link to it) compared a chain with itself and
    printed an R-hat near 1, as if converged; a copy of a fit (or a refit with the same seed)
    too. The same file twice is now an error, identical traces a warning."""
    d = work["dir"]
    fit = ["--n-components", "4", "--layers", "1", "--burn-in", "8", "--collect", "4", "-q", "--trace-every", "1"]
    for name, seed in (("a", "1"), ("b", "2"), ("c", "1")):
        assert _main(capsys, "fit", d / "train.npz", "--vocab", d / "vocab.txt", *fit, "--seed", seed,
                     "-o", tmp_path / f"{name}.npz")[0] == 0
    os.symlink(tmp_path / "a.npz", tmp_path / "link.npz")
    for twice in ("a.npz", "link.npz", "./a.npz"):
        code, out, err = _main(capsys, "trace", tmp_path / "a.npz", tmp_path / "b.npz", tmp_path / twice)
        assert code == 1 and out == "", out
        assert err.startswith("pygbn: error: the model file ") and "is given twice" in err and len(err.splitlines()) == 1
    code, out, err = _main(capsys, "trace", tmp_path / "a.npz", tmp_path / "b.npz")
    assert code == 0 and err == "", err
    code, out, err = _main(capsys, "trace", tmp_path / "a.npz", tmp_path / "b.npz", tmp_path / "c.npz")
    assert code == 0 and "R-hat" in out
    assert err == (f"pygbn: {str(tmp_path / 'a.npz')!r} and {str(tmp_path / 'c.npz')!r} have the same traces (fits "
                   "with the same seed?): R-hat and ESS are meant for independent chains\n"), err


def test_text_matrices_read_back_as_the_same_numbers(work, tmp_path, capsys):
    """transform -o f.csv (and .tsv, and generate's CSV of reals) printed 8 significant digits
    ('%.8g'): read back, the features differed from those of -o f.npy (by up to 5e-9 relative).
    Floats are now written in their shortest form that reads back exactly."""
    d = work["dir"]
    for name in ("f.npy", "f.csv", "f.tsv"):
        assert _main(capsys, "transform", d / "model.npz", d / "new.mtx", "-o", tmp_path / name,
                     *TEST_CHAIN)[0] == 0
    F = np.load(tmp_path / "f.npy")
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "f.csv", delimiter=","), F)
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "f.tsv", delimiter="\t"), F)
    X = np.random.default_rng(0).gamma(0.5, 2.0, size=(20, 7))
    np.save(tmp_path / "reals.npy", X)
    assert _main(capsys, "fit", tmp_path / "reals.npy", "--link", "prg", "--n-components", "3", "--layers", "1",
                 "--burn-in", "2", "--collect", "2", "--seed", "0", "-q", "-o", tmp_path / "prg.npz")[0] == 0
    code, out, err = _main(capsys, "generate", tmp_path / "prg.npz", "-n", "4", "--seed", "1")
    assert code == 0, err
    G = pygbn.load(tmp_path / "prg.npz").network_.generate(4, random_state=1)
    G = G.toarray() if sp.issparse(G) else np.asarray(G)
    np.testing.assert_array_equal(np.loadtxt(out.splitlines(), delimiter=",", ndmin=2), G)


def test_fit_parameter_errors_name_the_options(work, tmp_path, capsys):
    """The estimator's parameter errors reached the command line in Python keywords
    ('method='collapsed' needs count data (link='poisson')', 'layer 1 has burn_in=0 and n_collect=0')."""
    d = work["dir"]
    fit = ["fit", d / "train.npz", "--vocab", d / "vocab.txt", "--n-components", "3", "-o", tmp_path / "m.npz"]
    cases = [(["--link", "prg", "--method", "collapsed"],
              "--method collapsed needs count data (--link poisson); --link prg is sampled with --method blocked"),
             (["--layers", "2", "--burn-in", "0", "--collect", "0"],
              "every layer needs at least one iteration (--burn-in + --collect >= 1); layer 1 has --burn-in 0 "
              "and --collect 0"),
             (["--layers", "3", "--burn-in", "1", "--collect", "1", "1"],
              "--collect must be one value or one value per layer (3), got (1, 1)")]
    for extra, message in cases:
        code, out, err = _main(capsys, *fit, *extra)
        assert code == 1 and err == f"pygbn: error: {message}\n", err
        # checked before the data are read (or split: nothing on stdout)
        code, out, err = _main(capsys, "fit", tmp_path / "absent.npz", "-o", tmp_path / "m.npz", *extra)
        assert code == 1 and err == f"pygbn: error: {message}\n", err
        code, out, err = _main(capsys, *fit, "--heldout-fraction", "0.5", *extra)
        assert code == 1 and out == "" and len(err.splitlines()) == 1, err
    assert os.listdir(tmp_path) == []


def test_a_csv_matrix_with_a_header_line_is_refused(tmp_path, capsys):
    """A .csv of counts under a header of column names (pandas, R) was read as text: the header a
    document of 5 words, the rows empty documents, and fit made a model of it without a word."""
    X = np.random.default_rng(0).poisson(1.0, size=(30, 5))
    for name, delim in (("h.csv", ","), ("h.tsv", "\t")):
        with open(tmp_path / name, "w") as f:
            f.write("# made by hand\n" + delim.join(["apple", "banana", "cherry", "dates", "elder"]) + "\n")
            np.savetxt(f, X, fmt="%d", delimiter=delim)
        code, out, err = _main(capsys, "fit", tmp_path / name, "-o", tmp_path / "m.npz")
        assert code == 1 and out == "" and len(err.splitlines()) == 1, err
        assert "looks like a matrix with a header line" in err and "apple" in err and "--vocab" in err
    # text (words on the first two lines) and one line of words are text as before
    (tmp_path / "t.csv").write_text("apple banana, cherry\n2048 is a game, of numbers\n", encoding="utf-8")
    (tmp_path / "one.csv").write_text("apple,banana\n", encoding="utf-8")
    from pygbn.cli.commands import _input_kind
    assert _input_kind(str(tmp_path / "t.csv")) == "lines" and _input_kind(str(tmp_path / "one.csv")) == "lines"
    np.savetxt(tmp_path / "n.csv", X, fmt="%d", delimiter=",")
    assert _input_kind(str(tmp_path / "n.csv")) == "counts"


def test_a_csv_of_numbers_with_another_separator_is_refused(tmp_path, capsys):
    """Numbers separated by tabs in a .csv (or semicolons, spaces; commas in a .tsv) were read as
    text of no word: fit said only 'no terms are left (from 0 distinct tokens ...)'.  Now the error
    names the separator.  A ragged .csv no longer passes on numpy's advice to use ``usecols``."""
    X = np.random.default_rng(0).poisson(1.0, size=(4, 3))
    cases = [("t.csv", "\t", "tabs", ", or name it .tsv"), ("s.csv", ";", "semicolons", ""),
             ("b.csv", " ", "spaces", ""), ("c.tsv", ",", "commas", ""), ("one.csv", ";", "semicolons", "")]
    for name, sep, words, hint in cases:
        np.savetxt(tmp_path / name, X[:1] if name == "one.csv" else X, fmt="%d", delimiter=sep)
        own = "tabs" if name.endswith(".tsv") else "commas"
        code, out, err = _main(capsys, "fit", tmp_path / name, "-o", tmp_path / "m.npz")
        assert code == 1 and out == "" and len(err.splitlines()) == 1, err
        assert f"holds numbers separated by {words}" in err and err.endswith(f"write it with {own}{hint}\n"), err
    # text whose first line only is numbers stays text
    (tmp_path / "x.csv").write_text("1;2\napple banana cherry\n", encoding="utf-8")
    from pygbn.cli.commands import _input_kind
    assert _input_kind(str(tmp_path / "x.csv")) == "lines"
    (tmp_path / "r.csv").write_text("1,2,3\n4,5\n", encoding="utf-8")
    code, out, err = _main(capsys, "fit", tmp_path / "r.csv", "-o", tmp_path / "m.npz")
    assert code == 1 and "the number of columns changed from 3 to 2 at row 2\n" in err and "usecols" not in err, err
    assert not (tmp_path / "m.npz").exists()


def test_an_output_through_a_link_or_a_pipe_is_written_in_place(work, tmp_path, capsys):
    """-o naming a symbolic link or a named pipe (as /dev/stdout is) writes through it, as open()
    does; the whole-or-nothing rename must not replace the link or the pipe by a regular file."""
    import threading

    d = work["dir"]
    target = tmp_path / "real.txt"
    target.write_text("old\n")
    os.symlink(target.name, tmp_path / "link.txt")
    assert _main(capsys, "tree", d / "model.npz", "-o", tmp_path / "link.txt")[0] == 0
    assert os.path.islink(tmp_path / "link.txt") and target.read_text().startswith("L3 #1")
    np.save(tmp_path / "g.npy", np.zeros(1))
    os.symlink("g.npy", tmp_path / "glink.npy")
    assert _main(capsys, "generate", d / "model.npz", "-n", "2", "--seed", "1", "-o", tmp_path / "glink.npy")[0] == 0
    assert os.path.islink(tmp_path / "glink.npy") and np.load(tmp_path / "g.npy").shape == (2, 1488)
    fifo = tmp_path / "pipe.dot"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    code = _main(capsys, "tree", d / "model.npz", "-o", fifo)[0]
    reader.join(timeout=30)
    assert code == 0 and got and got[0].startswith("digraph")
    assert not os.path.isfile(fifo) and os.path.exists(fifo)     # still the pipe
    assert sorted(os.listdir(tmp_path)) == ["g.npy", "glink.npy", "link.txt", "pipe.dot", "real.txt"]


def test_a_split_that_holds_out_no_token_is_an_error(work, tmp_path, capsys):
    """perplexity --train-fraction 0.999 (or short documents) and fit --heldout-fraction 0.001 held
    out no token and printed a perplexity of nan with exit status 0."""
    d = work["dir"]
    code, out, err = _main(capsys, "perplexity", d / "model.npz", d / "new.txt", "--train-fraction", "0.999",
                           *TEST_CHAIN)
    assert code == 1 and out == "" and "--train-fraction 0.999 leaves no held-out token" in err, err
    (tmp_path / "two.txt").write_text("game puzzle\n", encoding="utf-8")
    code, out, err = _main(capsys, "perplexity", d / "model.npz", tmp_path / "two.txt", "--train-fraction", "0.9",
                           *TEST_CHAIN)
    assert code == 1 and "--train-fraction 0.9 leaves no held-out token" in err, err
    code, out, err = _main(capsys, "fit", d / "train.npz", "--heldout-fraction", "0.001", "--n-components", "3",
                           "--layers", "1", "--burn-in", "2", "--collect", "2", "-o", tmp_path / "m.npz")
    assert code == 1 and out == "" and "--heldout-fraction 0.001 holds out no token" in err, err
    assert not (tmp_path / "m.npz").exists()
    # documents of one token each keep it whatever the fraction: the error said 'raise it'
    (tmp_path / "one.txt").write_text("game\npuzzle\nplayer\n", encoding="utf-8")
    for fraction in ("0.5", "0.9"):
        code, out, err = _main(capsys, "fit", tmp_path / "one.txt", "--heldout-fraction", fraction, "--layers", "1",
                               "--burn-in", "2", "--collect", "2", "-o", tmp_path / "m.npz")
        assert code == 1 and out == "" and "raise it" not in err, err
        assert "holds out no token" in err and "no document of it has two or more tokens" in err, err
    assert not (tmp_path / "m.npz").exists()
    code, out, err = _main(capsys, "perplexity", d / "model.npz", tmp_path / "two.txt", "--train-fraction", "0.3",
                           *TEST_CHAIN)
    assert code == 0 and "nan" not in out
