"""Tests of the bundled demo corpus (pygbn.datasets) and of its build script."""
import hashlib
import importlib.util
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import pygbn.datasets as ds
from pygbn.text import english_stop_words, tokenize

REPO = Path(__file__).resolve().parent.parent
DEBIAN = Path("/work/shared/data/debian-descriptions")
SECTIONS = ("database", "fonts", "games", "graphics", "hamradio", "mail", "science", "sound")
DATA_FILES = ("demo_counts.npz", "demo_vocab.txt", "demo_docs.tsv", "demo_info.json", "README.md")


@pytest.fixture(scope="module")
def demo():
    return ds.load_demo()


def test_shape_and_types(demo):
    X = demo.counts
    assert sp.isspmatrix_csr(X) and X.dtype == np.int32 and X.has_sorted_indices
    assert X.shape == (3314, 1488)
    assert int(X.sum()) == 149326 and X.nnz == 82170
    assert 100_000 <= X.sum() <= 200_000  # the demo fits "in about a minute"
    assert len(demo) == 3314 and len(demo.vocab) == 1488
    for arr in (demo.labels, demo.names, demo.split, demo.target):
        assert arr.shape == (3314,)
    assert demo.label_names == SECTIONS
    assert set(demo.split) == {"train", "test"}
    np.testing.assert_array_equal(np.asarray(demo.label_names)[demo.target], demo.labels)
    assert demo["counts"] is demo.counts and "vocab" in demo.keys()
    with pytest.raises(KeyError):
        demo["nope"]
    assert "3314 documents" in repr(demo)


def test_bunch_like_access(demo):
    keys = ["counts", "vocab", "labels", "names", "split", "label_names", "target", "descr", "info"]
    assert demo.keys() == keys and list(demo) == keys
    assert "counts" in demo and "vocab" in demo and "nope" not in demo and 0 not in demo
    assert [k for k, _ in demo.items()] == keys and all(v is demo[k] for k, v in demo.items())
    assert all(v is getattr(demo, k) for k, v in zip(keys, demo.values()))
    assert dict(demo.items())["labels"] is demo.labels
    with pytest.raises(KeyError):
        demo[0]
    assert len(demo) == demo.counts.shape[0]  # documents, not keys


def test_equality(demo):
    train = demo.subset("train")
    assert train == demo.subset("train") and not (train != demo.subset("train"))
    assert train != demo.subset("test") and train != demo
    assert demo == ds.load_demo() and ds.load_demo("test") == demo.subset("test")
    assert demo != "demo"
    other = ds.load_demo("train")
    object.__setattr__(other, "labels", other.labels.copy())
    other.labels[0] = "zzz"
    assert other != train
    with pytest.raises(TypeError):
        hash(demo)


def test_content_follows_the_recipe(demo):
    X = demo.counts
    lengths = np.asarray(X.sum(axis=1)).ravel()
    assert lengths.min() >= 10 and lengths.max() <= 400
    df = np.diff(X.tocsc().indptr)
    assert df.min() >= 5 and df.max() <= 0.5 * X.shape[0]
    assert demo.vocab == sorted(demo.vocab) and len(set(demo.vocab)) == len(demo.vocab)
    assert all(tokenize(w) == [w] for w in demo.vocab)
    assert not set(demo.vocab) & english_stop_words()
    assert len(set(demo.names)) == len(demo.names)
    # the sections are recognisable from their most frequent words
    vocab = np.asarray(demo.vocab)
    for label, word in [("sound", "audio"), ("fonts", "font"), ("games", "game"), ("mail", "mail")]:
        top = vocab[np.argsort(-np.asarray(X[demo.labels == label].sum(axis=0)).ravel())[:5]]
        assert word in top
    # info agrees with the data
    st = demo.info["statistics"]
    assert st["documents"] == X.shape[0] and st["vocabulary"] == X.shape[1] and st["tokens"] == int(X.sum())
    assert st["train_documents"] == int((demo.split == "train").sum())
    assert st["labels"] == {s: int((demo.labels == s).sum()) for s in SECTIONS}
    assert "Debian" in demo.descr and "debian/copyright" in demo.descr


def test_splits(demo):
    train, test = ds.load_demo("train"), ds.load_demo("test")
    assert train.counts.shape[0] + test.counts.shape[0] == demo.counts.shape[0]
    assert set(train.split) == {"train"} and set(test.split) == {"test"}
    assert (train.counts.shape[0], test.counts.shape[0]) == (2144, 1170)
    assert int(train.counts.sum()) + int(test.counts.sum()) == int(demo.counts.sum())
    mask = demo.split == "test"
    assert (demo.counts[mask] != test.counts).nnz == 0
    np.testing.assert_array_equal(test.names, demo.names[mask])
    # each split holds every section
    assert set(test.labels) == set(SECTIONS) == set(train.labels)
    with pytest.raises(ValueError, match="split must be"):
        ds.load_demo("validation")
    with pytest.raises(ValueError, match="split must be"):
        demo.subset("all")


def test_files_are_package_data_and_small():
    pkg = resources.files("pygbn.datasets")
    total = 0
    for name in DATA_FILES:
        f = pkg.joinpath(name)
        assert f.is_file(), name
        total += len(f.read_bytes())
    assert total < 2_000_000
    # the loader reads the package's copy, readable by plain scipy too
    with resources.as_file(pkg.joinpath("demo_counts.npz")) as p:
        assert Path(p).parent == Path(ds.__file__).parent
        X = sp.load_npz(p)
    assert X.shape == (3314, 1488)
    # and the checksums recorded at build time still hold
    info = json.loads(pkg.joinpath("demo_info.json").read_text(encoding="utf-8"))
    for name, digest in info["outputs_sha256"].items():
        assert hashlib.sha256(pkg.joinpath(name).read_bytes()).hexdigest() == digest, name


@pytest.mark.skipif(not (REPO / "pyproject.toml").is_file(), reason="pyproject.toml not beside the tests")
def test_pyproject_ships_the_data_suffixes():
    """pyproject.toml ships these suffixes as package data (the files above are in the wheel)."""
    pyproject = (REPO / "pyproject.toml").read_text()
    for suffix in ("*.npz", "*.txt", "*.tsv", "*.json", "*.md"):
        assert f'"{suffix}"' in pyproject


@pytest.mark.skipif(not (DEBIAN / "counts.npz").is_file(), reason="shared Debian corpus absent")
@pytest.mark.skipif(not (REPO / "tools" / "build_demo_corpus.py").is_file(), reason="tools/ not beside the tests")
def test_build_script_reproduces_the_bundled_files(tmp_path):
    spec = importlib.util.spec_from_file_location("build_demo_corpus", REPO / "tools" / "build_demo_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    info = mod.build(DEBIAN, tmp_path)
    pkg = Path(ds.__file__).parent
    for name in ("demo_counts.npz", "demo_vocab.txt", "demo_docs.tsv", "demo_info.json"):
        assert (tmp_path / name).read_bytes() == (pkg / name).read_bytes(), name
    assert info["statistics"]["documents"] == 3314
    # rows are the shared corpus's rows, restricted to the demo vocabulary
    full = sp.load_npz(DEBIAN / "counts.npz").tocsr()
    vocab = (DEBIAN / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
    sources = [ln.split("\t")[0] for ln in (DEBIAN / "docs.tsv").read_text(encoding="utf-8").split("\n")[1:] if ln]
    demo = ds.load_demo()
    row_of = {s: i for i, s in enumerate(sources)}
    col_of = {w: j for j, w in enumerate(vocab)}
    rows = [row_of[n] for n in demo.names[:50]]
    cols = [col_of[w] for w in demo.vocab]
    assert (full[rows][:, cols] != demo.counts[:50]).nnz == 0


def test_each_load_is_a_fresh_copy():
    # no cache behind load_demo: changing what one call returned leaves the next call intact
    first = ds.load_demo("train")
    first.counts.data[:] = 0
    first.vocab[0] = "changed"
    first.labels[:] = "x"
    first.info["name"] = "changed"
    again = ds.load_demo("train")
    assert int(again.counts.sum()) == 97967 and again.vocab[0] != "changed"
    assert "x" not in set(again.labels) and again.info["name"] != "changed"
