"""Tests of pygbn.text: tokeniser, stop words, CountVectorizer, readers and writers."""
import gzip
import os
import re
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from pygbn import text as tx

SETTINGS = settings(derandomize=True, max_examples=40, deadline=None)
SHARED = Path("/work/shared/data")
DEBIAN = SHARED / "debian-descriptions"

# Real text: short Debian-style package descriptions (paraphrased from the archive).
DESCRIPTIONS = [
    "Audacity is a free, easy-to-use multi-track audio editor and recorder. It can record "
    "live audio, convert tapes and records into digital recordings, and edit Ogg Vorbis, MP3 and WAV files.",
    "Hydrogen is an advanced drum machine for GNU/Linux. Its main goal is to bring professional yet "
    "simple and intuitive pattern-based drum programming; it supports JACK audio and MIDI.",
    "PostgreSQL is a fully featured object-relational database management system. It supports a large "
    "part of the SQL standard and is designed to be extensible by users.",
    "SQLite is a C library that implements an SQL database engine. Programs that link with the SQLite "
    "library can have SQL database access without running a separate RDBMS process.",
    "FreeCiv is a free turn-based multiplayer strategy game, in which each player becomes the leader of "
    "a civilisation, fighting to obtain the ultimate goal: the extinction of all other civilisations.",
    "Wesnoth is a fantasy turn-based strategy game. Battle for control of villages, using variety of "
    "units which have advantages and disadvantages in different types of terrains.",
]


# ---------------------------------------------------------------------------
# tokeniser and stop words
# ---------------------------------------------------------------------------


def test_tokenize_recipe():
    assert tx.tokenize("GNU/Linux multi-track MP3 x86_64 Café, naïve ÉCOLE it's") == [
        "gnu",
        "linux",
        "multi",
        "track",
        "caf",
        "cole",
    ]
    assert tx.tokenize("a an the of", min_length=1) == ["a", "an", "the", "of"]
    assert tx.tokenize("") == []
    with pytest.raises(ValueError, match="text must be a str"):
        tx.tokenize(b"bytes")
    with pytest.raises(ValueError, match="min_length"):
        tx.tokenize("abc", min_length=0)


@given(st.text(max_size=200), st.integers(1, 5))
@SETTINGS
def test_tokenize_properties(text, min_length):
    toks = tx.tokenize(text, min_length)
    assert all(re.fullmatch(r"[a-z]+", t) and len(t) >= min_length for t in toks)
    assert toks == [t for t in re.findall(r"[a-z]+", text.lower()) if len(t) >= min_length]


def test_stop_words_shipped():
    words = tx.english_stop_words()
    assert isinstance(words, frozenset)
    assert 250 <= len(words) <= 400
    assert {"the", "and", "which", "would", "yourselves", "doesn"} <= words
    assert all(re.fullmatch(r"[a-z]+", w) for w in words)
    # content words are not stop words
    assert not {"audio", "game", "database", "font", "mail", "science"} & words
    raw = (Path(tx.__file__).parent.parent / "data" / "stopwords_en.txt").read_text(encoding="utf-8")  # pygbn/data
    header = [ln for ln in raw.splitlines() if ln.startswith("#")]
    assert any("Provenance" in ln for ln in header)
    body = [ln for ln in raw.splitlines() if ln and not ln.startswith("#")]
    assert len(body) == len(set(body)) == len(words)


# ---------------------------------------------------------------------------
# CountVectorizer
# ---------------------------------------------------------------------------


def manual_counts(docs, stop, min_length=3):
    return [Counter(t for t in tx.tokenize(d, min_length) if t not in stop) for d in docs]


def test_vectorizer_on_real_text():
    vec = tx.CountVectorizer()
    X = vec.fit_transform(DESCRIPTIONS)
    assert sp.isspmatrix_csr(X) and X.dtype.kind == "i"
    assert X.shape == (len(DESCRIPTIONS), len(vec.vocab_))
    assert vec.vocab_ == sorted(vec.vocab_)
    stop = tx.english_stop_words()
    assert not set(vec.vocab_) & stop
    assert {"audio", "database", "sql", "game", "strategy"} <= set(vec.vocab_)
    for j, c in enumerate(manual_counts(DESCRIPTIONS, stop)):
        row = X.getrow(j)
        got = {vec.vocab_[k]: int(v) for k, v in zip(row.indices, row.data)}
        assert got == dict(c)
    assert vec.vocabulary_["sql"] == vec.vocab_.index("sql")
    assert vec.n_documents_ == 6
    assert vec.document_frequency_[vec.vocabulary_["database"]] == 2
    assert list(vec.get_feature_names_out()) == vec.vocab_
    # transform of the training documents equals fit_transform
    assert (vec.transform(DESCRIPTIONS) != X).nnz == 0
    # new documents: out-of-vocabulary words are dropped, empty rows are kept
    Y = vec.transform(["A new SQL database for audio games", "zzz qqq", ""])
    assert Y.shape == (3, len(vec.vocab_))
    assert {vec.vocab_[k] for k in Y.getrow(0).indices} == {"sql", "database", "audio"}
    assert Y.getrow(1).nnz == 0 and Y.getrow(2).nnz == 0


def test_document_frequency_rules():
    docs = ["apple banana cherry", "apple banana", "apple durian", "apple"]
    # df: apple 4, banana 2, cherry 1, durian 1
    assert tx.CountVectorizer(min_df=2).fit(docs).vocab_ == ["apple", "banana"]
    assert tx.CountVectorizer(max_df=3).fit(docs).vocab_ == ["banana", "cherry", "durian"]
    assert tx.CountVectorizer(max_df=0.5).fit(docs).vocab_ == ["banana", "cherry", "durian"]  # <= 2 docs
    assert tx.CountVectorizer(min_df=0.5).fit(docs).vocab_ == ["apple", "banana"]  # >= 2 docs
    assert tx.CountVectorizer(min_df=0.26).fit(docs).vocab_ == ["apple", "banana"]  # >= 1.04 docs
    assert tx.CountVectorizer(max_df=1).fit(docs).vocab_ == ["cherry", "durian"]  # int 1: one document
    assert tx.CountVectorizer(max_df=1.0).fit(docs).vocab_ == ["apple", "banana", "cherry", "durian"]
    # max_features: by total count, ties alphabetical, then sorted
    docs2 = ["kiwi kiwi kiwi lime lime mango", "mango nut"]
    assert tx.CountVectorizer(max_features=2).fit(docs2).vocab_ == ["kiwi", "lime"]  # lime 2 == mango 2
    assert tx.CountVectorizer(max_features=1).fit(docs2).vocab_ == ["kiwi"]
    # stop words: none, custom, english
    assert "the" in tx.CountVectorizer(stop_words=None).fit(["the cat"]).vocab_
    assert tx.CountVectorizer(stop_words=["cat"]).fit(["the cat sat"]).vocab_ == ["sat", "the"]  # replaces the list
    assert tx.CountVectorizer(min_length=4).fit(["cats sat"]).vocab_ == ["cats"]


def test_fixed_vocabulary():
    vocab = ["sql", "audio", "the", "game"]
    vec = tx.CountVectorizer(vocabulary=vocab)
    X = vec.transform(["The audio of the game, the SQL"])  # no fit needed
    np.testing.assert_array_equal(X.toarray(), [[1, 1, 3, 1]])  # stop words are not applied
    vec.fit(DESCRIPTIONS)
    assert vec.vocab_ == vocab
    assert vec.document_frequency_.tolist() == [2, 2, 3, 2]
    with pytest.warns(UserWarning, match="never be produced"):
        tx.CountVectorizer(vocabulary=["ok", "C++"]).fit(["ok"])
    with pytest.raises(ValueError, match="twice"):
        tx.CountVectorizer(vocabulary=["a", "a"]).fit(["a"])
    with pytest.raises(ValueError, match="empty"):
        tx.CountVectorizer(vocabulary=[]).fit(["a"])


def test_unreachable_vocabulary_warns_at_the_users_line():
    """A vocabulary term the tokeniser never produces is a UserWarning (shown without any logging
    set up), naming the caller's line whichever method found it, once per line by default."""
    vec = tx.CountVectorizer(vocabulary=["apple", "x", "c3po"])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        vec.transform(["apple"])        # not fitted: the vocabulary is checked here
        vec.fit_transform(["apple x"])
    assert [w.category for w in seen] == [UserWarning, UserWarning]
    assert all(w.filename == __file__ for w in seen)
    assert "2 vocabulary term(s)" in str(seen[0].message) and "'x'" in str(seen[0].message)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")
        for _ in range(3):
            tx.CountVectorizer(vocabulary=["apple", "x"]).transform(["apple"])
    assert len(seen) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tx.CountVectorizer(vocabulary=["apple", "pear"]).fit_transform(["apple"])   # all reachable


@pytest.mark.parametrize(
    "kwargs, docs, match",
    [
        ({}, "one string", "single str"),
        ({}, ["ok", 3], r"documents\[1\] must be a str"),
        ({}, 5, "iterable of str"),
        ({"min_df": -1}, ["abc"], "min_df"),
        ({"max_df": 1.5}, ["abc"], "max_df as a float"),
        ({"min_df": True}, ["abc"], "min_df"),
        ({"min_df": "2"}, ["abc"], "min_df"),
        ({"min_df": 3, "max_df": 2}, ["abc"] * 4, r"max_df=2 corresponds to fewer documents \(2\) than min_df=3"),
        ({"min_df": 2}, ["abc def", "ghi"], "no terms are left"),
        # more documents asked of a term than there are: min_df is to blame, not max_df
        ({"min_df": 2}, ["abc def"], r"min_df=2 is more than the number of documents \(1\)"),
        ({"min_df": 500}, ["abc"] * 120, r"^min_df=500 is more than the number of documents \(120\)"),
        ({"max_features": 0}, ["abc"], "max_features"),
        ({"stop_words": "french"}, ["abc"], "stop_words"),
        ({"stop_words": [1]}, ["abc"], "stop_words must hold str"),
        ({"min_length": 0}, ["abc"], "min_length"),
    ],
)
def test_vectorizer_validation(kwargs, docs, match):
    with pytest.raises(ValueError, match=match):
        tx.CountVectorizer(**kwargs).fit_transform(docs)


def test_transform_before_fit():
    with pytest.raises(ValueError, match="not fitted"):
        tx.CountVectorizer().transform(["abc"])
    with pytest.raises(ValueError, match="not fitted"):
        tx.CountVectorizer().get_feature_names_out()
    assert "CountVectorizer(" in repr(tx.CountVectorizer(vocabulary=["abc"]))


def test_an_unfitted_vectorizer_raises_not_fitted_error():
    """CountVectorizer().transform(...) raised a plain ValueError where GBN and scikit-learn raise
    NotFittedError (both a ValueError and an AttributeError): ``except NotFittedError`` missed it."""
    from pygbn import NotFittedError

    vec = tx.CountVectorizer()
    for call in (lambda: vec.transform(["abc"]), vec.get_feature_names_out, lambda: vec.sequences(["abc"])):
        with pytest.raises(NotFittedError, match="CountVectorizer is not fitted yet"):
            call()
    assert not hasattr(vec, "vocabulary_")
    np.testing.assert_array_equal(tx.CountVectorizer(vocabulary=["abc"]).get_feature_names_out(), ["abc"])


@given(
    docs=st.lists(
        st.lists(st.sampled_from(["alpha", "beta", "gamma", "the", "and", "delta", "x", "Omega!"]), max_size=12).map(
            " ".join
        ),
        min_size=1,
        max_size=8,
    ),
    min_df=st.integers(1, 3),
)
@SETTINGS
def test_vectorizer_properties(docs, min_df):
    vec = tx.CountVectorizer(min_df=min_df)
    try:
        X = vec.fit_transform(docs)
    except ValueError as exc:
        assert "no terms are left" in str(exc) or "is more than the number of documents" in str(exc)
        return
    stop = tx.english_stop_words()
    df = Counter(w for d in docs for w in set(tx.tokenize(d)) if w not in stop)
    assert vec.vocab_ == sorted(w for w, c in df.items() if c >= min_df)
    lengths = [sum(1 for t in tx.tokenize(d) if t in vec.vocabulary_) for d in docs]
    assert np.asarray(X.sum(axis=1)).ravel().tolist() == lengths
    assert (vec.transform(docs) != X).nnz == 0
    np.testing.assert_array_equal(np.diff(X.tocsc().indptr), vec.document_frequency_)


# ---------------------------------------------------------------------------
# document readers
# ---------------------------------------------------------------------------


def test_read_lines(tmp_path):
    p = tmp_path / "docs.txt"
    p.write_bytes(b"first doc\r\nsecond doc\n\n   \nlast doc\n")
    assert tx.read_lines(p) == ["first doc", "second doc", "", "   ", "last doc"]
    assert tx.read_lines(p, skip_empty=True) == ["first doc", "second doc", "last doc"]
    q = tmp_path / "noeol.txt"
    q.write_text("one\ntwo", encoding="utf-8")
    assert tx.read_lines(q) == ["one", "two"]
    latin = tmp_path / "latin.txt"
    latin.write_bytes("café\n".encode("latin-1"))
    with pytest.raises(ValueError, match="could not decode"):
        tx.read_lines(latin)
    assert tx.read_lines(latin, encoding="latin-1") == ["café"]
    assert tx.read_lines(latin, errors="replace") == ["caf\ufffd"]
    with pytest.raises(FileNotFoundError, match="not found"):
        tx.read_lines(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="folder"):
        tx.read_lines(tmp_path)


def test_read_folder_and_dispatch(tmp_path):
    (tmp_path / "b.txt").write_text("audio editor", encoding="utf-8")
    (tmp_path / "a.txt").write_text("sql database\nsecond line", encoding="utf-8")
    (tmp_path / "c.md").write_text("markdown", encoding="utf-8")
    (tmp_path / ".hidden.txt").write_text("secret", encoding="utf-8")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "d.txt").write_text("strategy game", encoding="utf-8")
    names, docs = tx.read_folder(tmp_path)
    assert names == ["a.txt", "b.txt", "c.md"]
    assert docs[0] == "sql database\nsecond line"
    names, docs = tx.read_folder(tmp_path, pattern="*.txt", recursive=True)
    assert names == ["a.txt", "b.txt", "sub/d.txt"]
    assert tx.read_documents(tmp_path, pattern="*.md") == (["c.md"], ["markdown"])
    assert tx.read_documents(tmp_path / "a.txt") == (["1", "2"], ["sql database", "second line"])
    with pytest.raises(ValueError, match="no files matching"):
        tx.read_folder(tmp_path, pattern="*.csv")
    with pytest.raises(ValueError, match="got the file"):
        tx.read_folder(tmp_path / "a.txt")
    with pytest.raises(FileNotFoundError):
        tx.read_folder(tmp_path / "nope")
    with pytest.raises(FileNotFoundError):
        tx.read_documents(tmp_path / "nope")
    with pytest.raises(ValueError, match="unexpected keyword"):
        tx.read_documents(tmp_path / "a.txt", pattern="*")
    # end to end: a folder of documents to counts
    names, docs = tx.read_folder(tmp_path, pattern="*.txt", recursive=True)
    X = tx.CountVectorizer().fit_transform(docs)
    assert X.shape[0] == 3 and X.sum() == 7


def test_bytes_paths_are_taken_as_str_paths_are(tmp_path):
    """os.fspath keeps a bytes path bytes: read_folder(b"dir") failed with 'startswith first arg
    must be bytes', save_counts(b"x.npz", ...) with 'endswith first arg must be bytes' (read_lines,
    read_vocab and write_vocab took bytes)."""
    (tmp_path / "a.txt").write_text("sql database", encoding="utf-8")
    folder = os.fsencode(tmp_path)
    assert tx.read_folder(folder) == (["a.txt"], ["sql database"])
    assert tx.read_documents(folder) == (["a.txt"], ["sql database"])
    path = tx.save_counts(os.path.join(folder, b"x.npz"), np.eye(2, dtype=int), vocab=["a", "b"],
                          vocab_path=os.path.join(folder, b"v.txt"))
    assert path == str(tmp_path / "x.npz")
    X, vocab = tx.load_counts(os.path.join(folder, b"x.npz"), os.path.join(folder, b"v.txt"))
    assert vocab == ["a", "b"] and X.toarray().tolist() == [[1, 0], [0, 1]]


# ---------------------------------------------------------------------------
# count matrices and vocabularies
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".mtx", ".npz"])
def test_counts_roundtrip(tmp_path, suffix):
    rng = np.random.default_rng(0)
    X = sp.random(7, 5, density=0.4, format="csr", random_state=1, data_rvs=lambda n: rng.integers(1, 9, n))
    vocab = ["alpha", "beta", "gamma", "delta", "épsilon"]
    path = tx.save_counts(tmp_path / f"c{suffix}", X, vocab=vocab, vocab_path=tmp_path / "v.txt")
    Y, v = tx.load_counts(path, tmp_path / "v.txt")
    assert sp.isspmatrix_csr(Y) and Y.dtype == np.int32 and Y.has_sorted_indices
    np.testing.assert_array_equal(Y.toarray(), X.toarray())
    assert v == vocab
    # transpose: the file stores terms x documents
    tx.save_counts(tmp_path / f"t{suffix}", X.T)
    Z, none = tx.load_counts(tmp_path / f"t{suffix}", transpose=True)
    assert none is None
    np.testing.assert_array_equal(Z.toarray(), X.toarray())
    # real values
    F = X.astype(float) * 0.5
    tx.save_counts(tmp_path / f"f{suffix}", F)
    G, _ = tx.load_counts(tmp_path / f"f{suffix}", integer=False)
    np.testing.assert_allclose(G.toarray(), F.toarray())
    with pytest.raises(ValueError, match="integer counts"):
        tx.load_counts(tmp_path / f"f{suffix}")


def test_a_file_that_is_no_numpy_file_is_not_called_pickled(tmp_path):
    """A .npy/.npz of other bytes (a text file renamed, a damaged download) got numpy's message
    'This file contains pickled (object) data. If you trust the file you can load it unsafely
    using the allow_pickle= keyword argument': wrong, and advice pygbn never takes."""
    for suffix, what in ((".npy", "a .npy array"), (".npz", "a .npz archive")):
        (tmp_path / f"g{suffix}").write_bytes(b"1,2,3\n4,5,6\n")
        (tmp_path / f"e{suffix}").write_bytes(b"")
        with pytest.raises(ValueError) as info:
            tx.load_counts(tmp_path / f"g{suffix}")
        msg = str(info.value)
        assert f"as {what}: it starts with neither numpy's .npy header nor a zip archive's" in msg, msg
        assert "allow_pickle" not in msg and "pickled (object) data" not in msg
        with pytest.raises(ValueError, match=f"as {what}: it is empty$"):
            tx.load_counts(tmp_path / f"e{suffix}")
    # a .npy of an object array is still numpy's own refusal, and real files still load
    np.save(tmp_path / "o.npy", np.array([None, 1], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="Object arrays cannot be loaded"):
        tx.load_counts(tmp_path / "o.npy")
    np.save(tmp_path / "a.npy", np.eye(2, dtype=int))
    np.testing.assert_array_equal(tx.load_counts(tmp_path / "a.npy")[0].toarray(), np.eye(2))


def test_counts_from_other_writers(tmp_path):
    A = np.array([[0, 2, 0], [1, 0, 3]])
    scipy.io.mmwrite(tmp_path / "dense.mtx", A)  # array (dense) Matrix Market format
    np.testing.assert_array_equal(tx.load_counts(tmp_path / "dense.mtx")[0].toarray(), A)
    with gzip.open(tmp_path / "gz.mtx.gz", "wb") as fh:
        scipy.io.mmwrite(fh, sp.coo_matrix(A))
    np.testing.assert_array_equal(tx.load_counts(tmp_path / "gz.mtx.gz")[0].toarray(), A)
    np.savez(tmp_path / "dense.npz", X=A.astype(np.uint8), y=np.arange(2))  # like the digits data
    np.testing.assert_array_equal(tx.load_counts(tmp_path / "dense.npz")[0].toarray(), A)
    np.savez(tmp_path / "one.npz", A)
    np.testing.assert_array_equal(tx.load_counts(tmp_path / "one.npz")[0].toarray(), A)
    np.savez(tmp_path / "two.npz", a=A, b=A + 1)
    with pytest.raises(ValueError, match=r"none of them .* named 'X' or 'counts'.*key="):
        tx.load_counts(tmp_path / "two.npz")
    np.testing.assert_array_equal(tx.load_counts(tmp_path / "two.npz", key="b")[0].toarray(), A + 1)
    with pytest.raises(ValueError, match="key 'c' not in"):
        tx.load_counts(tmp_path / "two.npz", key="c")


def test_count_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="counts file not found"):
        tx.load_counts(tmp_path / "missing.npz")
    (tmp_path / "x.json").write_text("[[1, 2]]\n")
    with pytest.raises(ValueError, match="unsupported counts file"):
        tx.load_counts(tmp_path / "x.json")
    (tmp_path / "words.csv").write_text("apple,banana\n")
    with pytest.raises(ValueError, match="as a numeric matrix"):
        tx.load_counts(tmp_path / "words.csv")
    (tmp_path / "empty.tsv").write_text("")
    with pytest.raises(ValueError, match="holds no numbers"):
        tx.load_counts(tmp_path / "empty.tsv")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="as a .npy array"):
        tx.load_counts(tmp_path / "obj.npy")
    np.savez(tmp_path / "z.npz", X=np.ones((2, 2)))
    os.replace(tmp_path / "z.npz", tmp_path / "z.npy")
    with pytest.raises(ValueError, match="not a .npy array"):
        tx.load_counts(tmp_path / "z.npy")
    (tmp_path / "bad.npz").write_bytes(b"this is not a zip archive")
    with pytest.raises(ValueError, match="could not read"):
        tx.load_counts(tmp_path / "bad.npz")
    (tmp_path / "bad.mtx").write_text("%%MatrixMarket nonsense\n1 2 3\n")
    with pytest.raises(ValueError, match="Matrix Market"):
        tx.load_counts(tmp_path / "bad.mtx")
    np.save(tmp_path / "arr.npy", np.ones((2, 2)))
    os.replace(tmp_path / "arr.npy", tmp_path / "arr.npz")
    with pytest.raises(ValueError, match="not a .npz archive"):
        tx.load_counts(tmp_path / "arr.npz")
    np.savez(tmp_path / "neg.npz", X=np.array([[1, -1]]))
    with pytest.raises(ValueError, match="non-negative"):
        tx.load_counts(tmp_path / "neg.npz")
    np.savez(tmp_path / "nan.npz", X=np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="finite"):
        tx.load_counts(tmp_path / "nan.npz", integer=False)
    np.savez(tmp_path / "vec.npz", X=np.array([1, 2]))
    with pytest.raises(ValueError, match="2-D"):
        tx.load_counts(tmp_path / "vec.npz")
    np.savez(tmp_path / "ok.npz", X=np.ones((2, 3), dtype=int))
    (tmp_path / "v2.txt").write_text("a\nb\n")
    with pytest.raises(ValueError, match="has 2 terms but the counts"):
        tx.load_counts(tmp_path / "ok.npz", tmp_path / "v2.txt")
    with pytest.raises(ValueError, match="must end in .mtx or .npz"):
        tx.save_counts(tmp_path / "out.txt", np.ones((2, 2)))
    with pytest.raises(ValueError, match="both vocab and vocab_path"):
        tx.save_counts(tmp_path / "out.npz", np.ones((2, 2)), vocab=["a", "b"])
    with pytest.raises(ValueError, match="vocab has 1 terms"):
        tx.save_counts(tmp_path / "out.npz", np.ones((2, 2)), vocab=["a"], vocab_path=tmp_path / "v.txt")
    with pytest.raises(ValueError, match="non-negative"):
        tx.save_counts(tmp_path / "out.npz", -np.ones((2, 2)))


def test_counts_from_numpy_and_delimited_text(tmp_path):
    A = np.array([[0, 2, 0], [1, 0, 3]])
    np.save(tmp_path / "a.npy", A)
    np.savetxt(tmp_path / "a.csv", A, fmt="%d", delimiter=",")
    np.savetxt(tmp_path / "a.tsv", A, fmt="%d", delimiter="\t", header="a comment line")
    for name in ("a.npy", "a.csv", "a.tsv"):
        X, vocab = tx.load_counts(tmp_path / name)
        assert sp.isspmatrix_csr(X) and X.dtype == np.int32 and vocab is None
        np.testing.assert_array_equal(X.toarray(), A)
    np.savetxt(tmp_path / "one_row.csv", A[:1], fmt="%d", delimiter=",")
    assert tx.load_counts(tmp_path / "one_row.csv")[0].shape == (1, 3)
    np.testing.assert_array_equal(tx.load_counts(tmp_path / "a.npy", transpose=True)[0].toarray(), A.T)
    np.save(tmp_path / "vec.npy", np.arange(3))
    with pytest.raises(ValueError, match="2-D"):
        tx.load_counts(tmp_path / "vec.npy")
    # a UTF-8 byte order mark (a spreadsheet's "CSV UTF-8" export) is dropped, as in text files:
    # it was read as part of the first number ("could not convert string '\ufeff0'")
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + (tmp_path / "a.csv").read_bytes())
    np.testing.assert_array_equal(tx.load_counts(tmp_path / "bom.csv")[0].toarray(), A)


@pytest.mark.parametrize("suffix", [".mtx", ".npz"])
def test_counts_too_large_for_int64_are_refused_not_wrapped(tmp_path, suffix):
    """Integer counts were cast to int64 without a range check: a count of 2**63 or more
    (1e30 in a .csv, a large uint64) came back negative from load_counts, with only numpy's
    RuntimeWarning, and save_counts wrote it negative into the file.  save_counts also
    passed integers through float64, so 2**53 + 1 was written as 2**53."""
    (tmp_path / "big.csv").write_text("1e30,2\n3,4\n")
    with pytest.raises(ValueError, match=r"too large for a 64-bit integer, found 1e\+30"):
        tx.load_counts(tmp_path / "big.csv")
    np.testing.assert_array_equal(tx.load_counts(tmp_path / "big.csv", integer=False)[0].toarray(),
                                  [[1e30, 2], [3, 4]])
    np.save(tmp_path / "big.npy", np.array([[2**63, 1]], dtype=np.uint64))
    with pytest.raises(ValueError, match="too large for a 64-bit integer"):
        tx.load_counts(tmp_path / "big.npy")
    path = tmp_path / f"x{suffix}"
    tx.save_counts(path, np.array([[2**53 + 1, 1], [0, 2**62]]))    # exact, as integers
    X = tx.load_counts(path)[0]
    assert X.dtype == np.int64 and X[0, 0] == 2**53 + 1 and X[1, 1] == 2**62
    tx.save_counts(path, np.array([[1e30, 1.0]]))                     # a real, not a wrapped integer
    with pytest.raises(ValueError, match="too large"):
        tx.load_counts(path)
    np.testing.assert_array_equal(tx.load_counts(path, integer=False)[0].toarray(), [[1e30, 1]])


def test_float16_counts_are_read_and_written(tmp_path):
    """numpy's float16 (a dtype scipy.sparse does not take) failed with scipy's message, which
    names neither the file nor the argument."""
    np.save(tmp_path / "h.npy", np.array([[1, 0], [2, 3]], dtype=np.float16))
    X = tx.load_counts(tmp_path / "h.npy")[0]
    assert X.dtype == np.int32
    np.testing.assert_array_equal(X.toarray(), [[1, 0], [2, 3]])
    path = tx.save_counts(tmp_path / "h.npz", np.array([[0.5, 0], [2, 0]], dtype=np.float16))
    np.testing.assert_array_equal(tx.load_counts(path, integer=False)[0].toarray(), [[0.5, 0], [2, 0]])


@pytest.mark.parametrize("suffix", [".mtx", ".npz"])
def test_save_counts_to_a_missing_folder_raises(tmp_path, suffix):
    with pytest.raises(FileNotFoundError):
        tx.save_counts(tmp_path / "missing" / f"x{suffix}", np.ones((2, 2)))
    assert not (tmp_path / "missing").exists()
    # and the file that is written is complete (Matrix Market given a file handle)
    path = tx.save_counts(tmp_path / f"x{suffix}", np.array([[1, 0], [0, 4]]))
    np.testing.assert_array_equal(tx.load_counts(path)[0].toarray(), [[1, 0], [0, 4]])


def test_utf8_byte_order_mark_is_dropped(tmp_path):
    import io

    bom = b"\xef\xbb\xbf"
    (tmp_path / "v.txt").write_bytes(bom + b"arcade\nboard\n")
    assert tx.read_vocab(tmp_path / "v.txt") == ["arcade", "board"]
    (tmp_path / "d.txt").write_bytes(bom + b"first doc\nsecond\n")
    assert tx.read_lines(tmp_path / "d.txt") == ["first doc", "second"]
    assert tx.read_lines(io.BytesIO(bom + b"x\n"), encoding="UTF8") == ["x"]
    assert tx.read_folder(tmp_path, pattern="d.txt")[1] == ["first doc\nsecond\n"]
    # other encodings keep the bytes as they decode; offsets of decode errors count the BOM
    assert tx.read_lines(io.BytesIO(bom + b"x\n"), encoding="latin-1") == ["\xef\xbb\xbfx"]
    with pytest.raises(tx.DecodeError) as info:
        tx.read_lines(io.BytesIO(bom + b"ab\xff\n"))
    assert info.value.position == 5


def test_stop_word_files_and_case(tmp_path):
    from pygbn.text import read_stop_words

    (tmp_path / "s.txt").write_bytes("\ufeffThe\n\n# comment\n  AND \nthe\n".encode("utf-8"))
    assert read_stop_words(tmp_path / "s.txt") == ["the", "and"]
    (tmp_path / "none.txt").write_text("\n\n")
    assert read_stop_words(tmp_path / "none.txt") == []
    # stop words match case-insensitively, as the text is lowercased before tokenising
    assert tx.CountVectorizer(stop_words=["CAT", "Sat"]).fit(["The cat sat on mats"]).vocab_ == ["mats", "the"]
    (tmp_path / "l.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(tx.DecodeError, match="stop-word file") as info:
        read_stop_words(tmp_path / "l.txt")
    assert "errors=" not in str(info.value)
    with pytest.raises(tx.DecodeError, match="vocabulary file") as info:
        tx.read_vocab(tmp_path / "l.txt")
    assert "errors=" not in str(info.value)  # read_vocab has no errors= argument
    assert tx.read_vocab(tmp_path / "l.txt", encoding="latin-1") == ["café"]


def test_vocab_files(tmp_path):
    p = tx.write_vocab(tmp_path / "v.txt", ["audio", "sql", "naïve"])
    assert Path(p).read_bytes() == "audio\nsql\nnaïve\n".encode("utf-8")
    assert tx.read_vocab(p) == ["audio", "sql", "naïve"]
    (tmp_path / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    assert tx.read_vocab(tmp_path / "crlf.txt") == ["a", "b"]
    (tmp_path / "empty_line.txt").write_text("a\n\nb\n")
    with pytest.raises(ValueError, match="line 2 .* is empty"):
        tx.read_vocab(tmp_path / "empty_line.txt")
    (tmp_path / "dup.txt").write_text("a\nb\na\n")
    with pytest.raises(ValueError, match="repeats 'a'"):
        tx.read_vocab(tmp_path / "dup.txt")
    (tmp_path / "none.txt").write_text("")
    with pytest.raises(ValueError, match="is empty"):
        tx.read_vocab(tmp_path / "none.txt")
    with pytest.raises(FileNotFoundError, match="vocabulary file not found"):
        tx.read_vocab(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="line breaks"):
        tx.write_vocab(tmp_path / "w.txt", ["ok", "two\nlines"])
    with pytest.raises(ValueError, match="repeat"):
        tx.write_vocab(tmp_path / "w.txt", ["ok", "ok"])


# ---------------------------------------------------------------------------
# the shared corpus (only where /work/shared is present)
# ---------------------------------------------------------------------------


@pytest.mark.skipif(not (DEBIAN / "counts-top2000.npz").is_file(), reason="shared Debian corpus absent")
def test_shared_corpus_reads_and_matches_the_tokeniser():
    X, vocab = tx.load_counts(DEBIAN / "counts-top2000.npz", DEBIAN / "vocab-top2000.txt")
    assert X.shape == (33821, 2000) and len(vocab) == 2000 and X.dtype == np.int32
    assert int(X.sum()) == 1779138
    # every term of the corpus is one token of the same recipe
    assert all(tx.tokenize(w) == [w] for w in vocab)
    # a fixed-vocabulary vectoriser counts exactly these terms in new text
    vec = tx.CountVectorizer(vocabulary=vocab)
    Y = vec.transform(["A Python library to read and write audio files"])
    assert {vocab[k] for k in Y.indices} <= {"python", "library", "read", "write", "audio", "files"}
    assert {"python", "library", "audio"} <= {vocab[k] for k in Y.indices}


@pytest.mark.skipif(not (SHARED / "debian-descriptions" / "README.md").is_file(), reason="shared data absent")
def test_vectorizer_on_shared_readmes():
    docs = [(p / "README.md").read_text(encoding="utf-8") for p in sorted(SHARED.iterdir()) if (p / "README.md").is_file()]
    vec = tx.CountVectorizer()
    X = vec.fit_transform(docs)
    assert X.shape[0] == len(docs) >= 2
    assert {"debian", "alpaydin", "bookworm", "handwritten"} <= set(vec.vocab_)
    names = [p.name for p in sorted(SHARED.iterdir()) if (p / "README.md").is_file()]
    row = X.getrow(names.index("debian-descriptions")).toarray().ravel()
    assert row[vec.vocabulary_["debian"]] >= 5 and row[vec.vocabulary_["alpaydin"]] == 0


@pytest.mark.skipif(not (SHARED / "digits" / "digits.npz").is_file(), reason="shared digits data absent")
def test_shared_digits_reads_as_dense_npz():
    X, vocab = tx.load_counts(SHARED / "digits" / "digits.npz")
    assert X.shape == (1797, 64) and vocab is None and X.dtype == np.int32
    assert X.max() == 16 and X.nnz == 58736


@pytest.mark.parametrize("fmt", ["gzip", "bzip2", "xz", "zip"])
def test_compressed_text_is_refused_whatever_the_encoding(tmp_path, fmt):
    """Compressed bytes read as text were a DecodeError advising another encoding, and with
    encoding='latin-1' or errors='replace' a corpus of noise words; now a ValueError naming the
    format, for a file, a stream, a folder and a word list."""
    import bz2
    import gzip
    import io
    import lzma
    import zipfile

    data = "apple banana cherry\n".encode() * 50
    if fmt == "zip":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("docs.txt", data)
        packed = buf.getvalue()
    else:
        packed = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}[fmt](data)
    p = tmp_path / "docs.txt.z"
    p.write_bytes(packed)
    for kwargs in ({}, {"encoding": "latin-1"}, {"errors": "replace"}):
        with pytest.raises(ValueError, match=f"docs.txt.z' is {fmt}-compressed, not text") as info:
            tx.read_lines(p, **kwargs)
        assert not isinstance(info.value, tx.DecodeError)
        with pytest.raises(ValueError, match=f"is {fmt}-compressed"):
            tx.read_lines(io.BytesIO(packed), **kwargs)
    with pytest.raises(ValueError, match=f"is {fmt}-compressed"):
        tx.read_folder(tmp_path, errors="replace")
    with pytest.raises(ValueError, match=f"is {fmt}-compressed"):
        tx.read_vocab(p)
    # text that merely starts like a signature is text
    for start in (b"BZh9 apple\n", b"BZh91AY apple\n", b"PK apple\n"):
        assert tx.read_lines(io.BytesIO(start)) == [start.decode().strip()]


def test_utf16_text_starting_like_a_signature_is_text():
    """The compression check refused UTF-16 text whose first character's bytes are a signature
    (U+8B1F in UTF-16-LE is 1f 8b, gzip's; U+4B50 U+0403 is 'PK\\x03\\x04', zip's): those bytes
    are characters there, so only ASCII-compatible encodings are checked."""
    import io

    for enc, first in (("utf-16-le", "\u8b1f"), ("utf-16-be", "\u1f8b"), ("utf-16-le", "\u4b50\u0403"),
                       ("utf-32-le", "\u8b1f")):
        data = (first + " doc\nsecond doc\n").encode(enc)
        assert tx.read_lines(io.BytesIO(data), encoding=enc) == [first + " doc", "second doc"]
    with pytest.raises(ValueError, match="gzip-compressed"):      # latin-1 still checked
        tx.read_lines(io.BytesIO(b"\x1f\x8b\x08\x00 noise"), encoding="latin-1")


def test_read_lines_from_a_stream_and_decode_errors(tmp_path):
    import io

    data = "première ligne\r\nsecond\rthird\n".encode("latin-1")
    assert tx.read_lines(io.BytesIO(data), encoding="latin-1") == ["première ligne", "second", "third"]
    assert tx.read_lines(io.StringIO("a\nb\n")) == ["a", "b"]
    with pytest.raises(tx.DecodeError) as info:
        tx.read_lines(io.BytesIO(data))
    err = info.value
    assert isinstance(err, ValueError) and err.encoding == "utf-8" and err.position == 5
    assert "at byte 5" in str(err) and "errors='replace'" in str(err)
    assert tx.read_lines(io.BytesIO(data), errors="replace")[0] == "premi\ufffdre ligne"
    (tmp_path / "a.txt").write_bytes(data)
    with pytest.raises(tx.DecodeError, match="a.txt"):
        tx.read_folder(tmp_path)
    assert tx.read_folder(tmp_path, encoding="latin-1")[1] == ["première ligne\nsecond\nthird\n"]
    with pytest.raises(ValueError, match="unknown encoding"):
        tx.read_lines(io.BytesIO(data), encoding="klingon")


def test_no_documents_says_so():
    with pytest.raises(ValueError, match="documents is empty"):
        tx.CountVectorizer().fit_transform([])


def test_fixed_vocabulary_as_a_mapping_or_a_set():
    # a mapping gives each term its column (scikit-learn's meaning), whatever its order
    vec = tx.CountVectorizer(vocabulary={"sql": 1, "audio": 0})
    X = vec.fit_transform(["sql sql audio", "nothing"])
    assert vec.vocab_ == ["audio", "sql"] and vec.vocabulary_ == {"audio": 0, "sql": 1}
    np.testing.assert_array_equal(X.toarray(), [[1, 2], [0, 0]])
    np.testing.assert_array_equal(tx.CountVectorizer(vocabulary={"sql": np.int64(1), "audio": np.int64(0)})
                                  .transform(["sql sql audio"]).toarray(), [[1, 2]])
    for bad, match in [({"sql": 0, "audio": 2}, r"column 0 \.\. 1, got 'audio': 2"),
                       ({"sql": 0, "audio": 0}, "both 'sql' and 'audio' to column 0"),
                       ({"sql": 0, "audio": 1.0}, "got 'audio': 1.0"),
                       ({"sql": 0, "audio": True}, "got 'audio': True")]:
        with pytest.raises(ValueError, match=match):
            tx.CountVectorizer(vocabulary=bad).fit(["sql"])
    # a set has no order: sorted, so the columns do not depend on the run's str hashing
    words = {"zeta", "alpha", "mid", "beta", "omega", "gamma"}
    vec = tx.CountVectorizer(vocabulary=words)
    assert list(vec.get_feature_names_out()) == sorted(words)  # no fit needed, as in scikit-learn
    assert vec.fit(["alpha"]).vocab_ == sorted(words)
    assert tx.CountVectorizer(vocabulary=frozenset(words)).fit(["alpha"]).vocab_ == sorted(words)


def test_fixed_vocabulary_from_an_iterator():
    vec = tx.CountVectorizer(vocabulary=iter(["beta", "alpha"]))
    assert "vocabulary=<list_iterator>" in repr(vec)  # its length is unknown: repr does not fail
    vec.fit(["alpha beta beta"])
    assert vec.vocab_ == ["beta", "alpha"]
    np.testing.assert_array_equal(vec.transform(["alpha beta beta"]).toarray(), [[2, 1]])


def test_save_counts_checks_the_vocabulary_before_writing(tmp_path):
    X = np.array([[1, 2], [0, 3]])
    for vocab, match in [(["a", "a"], "repeat"), ("ab", "single str"), (["a", " b"], r"vocab\[1\]")]:
        with pytest.raises(ValueError, match=match):
            tx.save_counts(tmp_path / "c.npz", X, vocab=vocab, vocab_path=tmp_path / "v.txt")
        assert not (tmp_path / "c.npz").exists() and not (tmp_path / "v.txt").exists()


def test_write_vocab_takes_a_vocabulary_as_fit_and_the_vectorizer_do(tmp_path):
    """write_vocab / save_counts follow the one vocabulary rule: a mapping term -> column
    (scikit-learn's vocabulary_) is written by its columns (was: in its insertion order, so the
    file named the wrong columns), a set is refused (was: written in an order that changes
    between runs), an empty vocabulary is refused (was: written, then refused by read_vocab),
    None or a non-iterable is a ValueError naming vocab (was: a TypeError)."""
    path = tmp_path / "v.txt"
    tx.write_vocab(path, {"sql": 1, "audio": 0, "game": 2})
    assert tx.read_vocab(path) == ["audio", "sql", "game"]
    X = np.array([[1, 2], [0, 3]])
    tx.save_counts(tmp_path / "c.npz", X, vocab={"b": 1, "a": 0}, vocab_path=path)
    assert tx.read_vocab(path) == ["a", "b"]
    for vocab, match in [({"a", "b"}, "vocab must be an ordered sequence of strings .*got a set"),
                         ([], "vocab must not be empty"), (None, "vocab must be a sequence of strings, got None"),
                         (2, "vocab must be a sequence of strings, got int 2"),
                         ({"a": 0, "b": 2}, r"vocab as a mapping must map each term to a column 0 \.\. 1")]:
        with pytest.raises(ValueError, match=match):
            tx.write_vocab(tmp_path / "w.txt", vocab)
        assert not (tmp_path / "w.txt").exists()
    with pytest.raises(ValueError, match="got a frozenset, which has no order"):
        tx.save_counts(tmp_path / "d.npz", X, vocab=frozenset("ab"), vocab_path=tmp_path / "w.txt")
    assert not (tmp_path / "d.npz").exists()


def test_vocabulary_terms_from_numpy_arrays_are_str():
    """The items of a numpy str array (np.str_) come back as str, as fit gives them: the
    vectorizer's vocab_ and the explorers' terms printed as np.str_('...') with numpy 2."""
    vec = tx.CountVectorizer(vocabulary=np.array(["sql", "audio"]))
    assert [type(w) for w in vec.fit(["sql audio"]).vocab_] == [str, str]
    from pygbn import explore
    terms = explore.top_terms([np.full((2, 1), 0.5)], 1, np.array(["sql", "audio"]), n=2)
    assert terms == [["sql", "audio"]] and all(type(w) is str for w in terms[0])


def test_align_vocabulary_keeps_the_dtype():
    for dtype in (np.int32, np.int64, np.float64):
        X = sp.csr_matrix(np.array([[1, 2], [0, 3]], dtype=dtype))
        Y = tx.align_vocabulary(X, ["a", "b"], ["b", "c", "a"])
        assert Y.dtype == dtype and Y.has_canonical_format
        np.testing.assert_array_equal(Y.toarray(), [[2, 0, 1], [3, 0, 0]])
    with pytest.raises(ValueError, match="none of the terms"):
        tx.align_vocabulary(X, ["a", "b"], ["c"])
    with pytest.raises(ValueError, match=r"X must be a 2-D matrix \(documents x terms\), got shape \(2,\)"):
        tx.align_vocabulary(sp.coo_array(np.array([1, 2])), ["a", "b"], ["b"])   # was IndexError


def test_align_vocabulary_checks_both_vocabularies():
    """align_vocabulary takes its vocabularies by the one rule: a target repeating a term left
    the first of its columns zero, silently; a mapping (CountVectorizer.vocabulary_) named X's
    columns in its insertion order, not by its columns; a str target was split into letters."""
    X = sp.csr_matrix(np.array([[1, 2]]))
    np.testing.assert_array_equal(tx.align_vocabulary(X, {"b": 1, "a": 0}, ["a", "b"]).toarray(), [[1, 2]])
    np.testing.assert_array_equal(tx.align_vocabulary(X, ["b", "a"], {"a": 1, "b": 0}).toarray(), [[1, 2]])
    for vocab, target, match in [(["a", "b"], ["a", "b", "a"], "target must not repeat a term, got 'a' twice"),
                                 (["a", "a"], ["a"], "vocab must not repeat a term"),
                                 (["a", "b"], "ab", "target must be a sequence of strings, got a single str 'ab'"),
                                 (["a", "b"], {"a", "b"}, "target must be an ordered sequence"),
                                 (["a", 2], ["a"], r"vocab\[1\] must be a str, got 2"),
                                 (["a"], ["a"], "'{x}' has 2 columns but its vocabulary 1 terms")]:
        with pytest.raises(ValueError, match=match):
            tx.align_vocabulary(X, vocab, target, name="'{x}'")


@pytest.mark.parametrize("kwargs", [dict(), dict(stop_words=None, min_length=1), dict(max_features=7),
                                    dict(min_df=2, max_df=0.9), dict(vocabulary=["audio", "game", "sql", "zzz"])])
def test_vectorizer_counts_by_chunks_of_tokens(monkeypatch, kwargs):
    """The documents are counted a chunk of tokens at a time: any chunk size gives the same
    matrix, vocabulary and document frequencies, equal to counting each document's tokens."""
    import pygbn.text

    docs = DESCRIPTIONS + ["", "Audio AUDIO audio game", "the of and"] + DESCRIPTIONS[:2]
    results = []
    for chunk in (1, 3, 50, 1 << 18):
        monkeypatch.setattr(pygbn.text, "_CHUNK_TOKENS", chunk)
        vec = tx.CountVectorizer(**kwargs)
        X = vec.fit_transform(docs)
        results.append((X, vec.vocab_, vec.document_frequency_, vec.transform(docs[::-1])))
    X, vocab, df, T = results[-1]
    stop = set() if kwargs.get("stop_words", "english") is None or "vocabulary" in kwargs \
        else tx.english_stop_words()
    for j, d in enumerate(docs):           # each row: the Counter of the document's kept tokens
        c = Counter(t for t in tx.tokenize(d, kwargs.get("min_length", 3)) if t not in stop and t in vec.vocabulary_)
        assert dict(zip((vocab[i] for i in X[j].indices), X[j].data.tolist())) == dict(c)
    assert X.has_sorted_indices and X.dtype == np.int32 and X.indices.dtype == np.int32
    np.testing.assert_array_equal(df, (X > 0).sum(axis=0).A1)
    for X2, vocab2, df2, T2 in results[:-1]:
        assert vocab2 == vocab
        np.testing.assert_array_equal(df2, df)
        for A, B in ((X2, X), (T2, T)):
            for name in ("data", "indices", "indptr"):
                np.testing.assert_array_equal(getattr(A, name), getattr(B, name))
                assert getattr(A, name).dtype == getattr(B, name).dtype


def test_vectorizer_does_not_hold_the_corpus_as_token_strings():
    """fit_transform held every document's tokens as lists of str until it had counted
    them: about 12 times the bytes of a corpus of short documents (387 MiB for 200000
    documents of 20 words, 30 MiB of text); now about 4 times (124 MiB)."""
    import tracemalloc

    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = np.array(["".join(rng.choice(letters, size=rng.integers(4, 9))) for _ in range(5000)], dtype=object)
    docs = [" ".join(row) for row in words[rng.zipf(1.3, size=(20000, 20)) % 5000]]
    n_chars = sum(map(len, docs))
    tracemalloc.start()
    try:
        X = tx.CountVectorizer(min_df=2).fit_transform(docs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * n_chars, (peak, n_chars)
    assert X.shape[0] == 20000 and X.sum() > 0
