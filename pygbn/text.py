"""Text in, counts out: a minimal vectoriser and readers/writers for count matrices.

No dependency beyond numpy and scipy.  The recipe is the one used to build
the bundled Debian corpus (see ``pygbn/datasets/README.md``):

1. lowercase the text;
2. tokens are the maximal runs of the letters a-z (``[a-z]+``: digits,
   punctuation and non-ASCII letters split tokens); tokens shorter than
   ``min_length = 3`` letters are dropped;
3. English stop words are removed (the list shipped as
   ``pygbn/data/stopwords_en.txt``);
4. the vocabulary keeps the terms whose document frequency lies in
   ``[min_df, max_df]`` (ints count documents, floats are proportions, as in
   scikit-learn's ``CountVectorizer``), optionally only the ``max_features``
   most frequent, in alphabetical order.

Counts come out as ``scipy.sparse.csr_matrix`` of ints, documents x terms,
the orientation every pygbn estimator takes.

Readers and writers: :func:`read_lines` (one document per line),
:func:`read_folder` (one document per file), :func:`read_documents` (either),
:func:`load_counts` / :func:`save_counts` (Matrix Market ``.mtx`` or scipy
``.npz``), :func:`read_vocab` / :func:`write_vocab` (one term per line);
:func:`align_vocabulary` moves counts onto another vocabulary (e.g. a
fitted model's).
"""
from __future__ import annotations

import fnmatch
import logging
import numbers
import os
import re
from collections import Counter
from functools import lru_cache
from importlib import resources
from typing import Iterable, Sequence

import numpy as np
import scipy.io
import scipy.sparse as sp

from pygbn._utils import check_int

logger = logging.getLogger("pygbn")

__all__ = [
    "TOKEN_PATTERN",
    "tokenize",
    "english_stop_words",
    "CountVectorizer",
    "read_lines",
    "read_folder",
    "read_documents",
    "read_vocab",
    "write_vocab",
    "load_counts",
    "save_counts",
    "align_vocabulary",
]

#: Tokens are maximal runs of the lowercase letters a-z (after lowercasing).
TOKEN_PATTERN = r"[a-z]+"
_TOKEN_RE = re.compile(TOKEN_PATTERN)
_INT32_MAX = np.iinfo(np.int32).max


def tokenize(text: str, min_length: int = 3) -> list[str]:
    """Split a text into lowercase tokens.

    Parameters
    ----------
    text : str
    min_length : int, default 3
        Tokens shorter than this are dropped.

    Returns
    -------
    list of str
        The maximal runs of ``[a-z]`` in ``text.lower()``, in order.

    Examples
    --------
    >>> tokenize("GNU Emacs 29: an extensible, self-documenting editor!")
    ['gnu', 'emacs', 'extensible', 'self', 'documenting', 'editor']
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    min_length = check_int(min_length, "min_length", 1)
    return [tok for tok in _TOKEN_RE.findall(text.lower()) if len(tok) >= min_length]


@lru_cache(maxsize=1)
def english_stop_words() -> frozenset:
    """The English stop-word list shipped with pygbn (``pygbn/data/stopwords_en.txt``).

    About 340 function words (pronouns, determiners, prepositions,
    conjunctions, auxiliary verbs, number words, contraction fragments),
    written for pygbn; see the file's header for its provenance.
    """
    text = resources.files("pygbn.data").joinpath("stopwords_en.txt").read_text(encoding="utf-8")
    words = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            words.append(line)
    return frozenset(words)


def _check_documents(documents, name: str = "documents") -> list[str]:
    if isinstance(documents, (str, bytes)):
        raise ValueError(
            f"{name} must be an iterable of str (one per document), got a single {type(documents).__name__}"
        )
    try:
        docs = list(documents)
    except TypeError:
        raise ValueError(f"{name} must be an iterable of str, got {type(documents).__name__}") from None
    for i, d in enumerate(docs):
        if not isinstance(d, str):
            raise ValueError(f"{name}[{i}] must be a str, got {type(d).__name__}")
    return docs


def _doc_count(value, n_docs: int, name: str) -> float:
    """Turn min_df/max_df (int count or float proportion) into a document count."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an int >= 0 or a float in [0, 1], got {value!r}")
    if isinstance(value, (numbers.Integral, np.integer)):
        if value < 0:
            raise ValueError(f"{name} must be an int >= 0 or a float in [0, 1], got {value!r}")
        return float(value)
    if isinstance(value, (numbers.Real, np.floating)):
        if not 0.0 <= float(value) <= 1.0:
            raise ValueError(f"{name} as a float must be a proportion in [0, 1], got {value!r}")
        return float(value) * n_docs
    raise ValueError(f"{name} must be an int >= 0 or a float in [0, 1], got {value!r}")


class CountVectorizer:
    """Turn raw texts into a documents x terms matrix of counts.

    A small, dependency-free counterpart of scikit-learn's
    ``CountVectorizer`` with the recipe of the bundled corpus (module
    docstring).  The constructor only stores its arguments; :meth:`fit`
    validates them.

    Parameters
    ----------
    stop_words : "english", None or iterable of str, default "english"
        Words removed before counting: the shipped list
        (:func:`english_stop_words`), none, or your own.
    min_df : int or float, default 1
        Keep terms in at least this many documents (int) or this proportion
        of documents (float in [0, 1]).
    max_df : int or float, default 1.0
        Keep terms in at most this many documents (int) or this proportion of
        documents (float in [0, 1]).  Corpus-specific stop words are often
        removed with e.g. ``max_df=0.5``.
    max_features : int, optional
        Then keep only the ``max_features`` terms with the largest total
        counts (ties alphabetical).
    min_length : int, default 3
        Shortest token kept by the tokeniser.
    vocabulary : sequence of str, optional
        A fixed vocabulary, in column order (e.g. that of a fitted model).
        Every token equal to one of its terms is counted; ``stop_words``,
        ``min_df``, ``max_df`` and ``max_features`` are then not used, and
        :meth:`transform` works without :meth:`fit`.

    Attributes
    ----------
    vocab_ : list of str
        The terms, in column order (alphabetical unless ``vocabulary`` was
        given).
    vocabulary_ : dict
        Term -> column index.
    document_frequency_ : ndarray of int
        Number of training documents containing each term.
    n_documents_ : int
        Number of documents seen by :meth:`fit`.

    Examples
    --------
    >>> vec = CountVectorizer()
    >>> X = vec.fit_transform(["Sound mixer for ALSA", "A sound editor", "Text editor"])
    >>> vec.vocab_
    ['alsa', 'editor', 'mixer', 'sound', 'text']
    >>> X.toarray().tolist()
    [[1, 0, 1, 1, 0], [0, 1, 0, 1, 0], [0, 1, 0, 0, 1]]
    """

    def __init__(
        self,
        *,
        stop_words="english",
        min_df=1,
        max_df=1.0,
        max_features: int | None = None,
        min_length: int = 3,
        vocabulary: Sequence[str] | None = None,
    ):
        self.stop_words = stop_words
        self.min_df = min_df
        self.max_df = max_df
        self.max_features = max_features
        self.min_length = min_length
        self.vocabulary = vocabulary

    # -- parameter checks -------------------------------------------------
    def _stop_set(self) -> frozenset:
        sw = self.stop_words
        if sw is None:
            return frozenset()
        if isinstance(sw, str):
            if sw == "english":
                return english_stop_words()
            raise ValueError(f"stop_words must be 'english', None or an iterable of str, got {sw!r}")
        try:
            words = list(sw)
        except TypeError:
            raise ValueError(f"stop_words must be 'english', None or an iterable of str, got {sw!r}") from None
        for w in words:
            if not isinstance(w, str):
                raise ValueError(f"stop_words must hold str, got {w!r}")
        return frozenset(words)

    def _fixed_vocab(self) -> list[str] | None:
        if self.vocabulary is None:
            return None
        if isinstance(self.vocabulary, (str, bytes)):
            raise ValueError("vocabulary must be a sequence of str, got a single str")
        try:
            vocab = list(self.vocabulary)
        except TypeError:
            raise ValueError(f"vocabulary must be a sequence of str, got {self.vocabulary!r}") from None
        if not vocab:
            raise ValueError("vocabulary must not be empty")
        seen = set()
        for i, w in enumerate(vocab):
            if not isinstance(w, str) or not w:
                raise ValueError(f"vocabulary[{i}] must be a non-empty str, got {w!r}")
            if w in seen:
                raise ValueError(f"vocabulary holds the term {w!r} twice")
            seen.add(w)
        min_length = check_int(self.min_length, "min_length", 1)
        unreachable = [w for w in vocab if len(w) < min_length or _TOKEN_RE.fullmatch(w) is None]
        if unreachable:
            logger.warning(
                "%d vocabulary term(s) can never be produced by the tokeniser ([a-z]+, length >= %d), e.g. %r",
                len(unreachable),
                min_length,
                unreachable[0],
            )
        return vocab

    # -- core ---------------------------------------------------------------
    def _tokens(self, docs: list[str], stop: frozenset) -> list[list[str]]:
        min_length = check_int(self.min_length, "min_length", 1)
        if stop:
            return [[t for t in tokenize(d, min_length) if t not in stop] for d in docs]
        return [tokenize(d, min_length) for d in docs]

    def _learn_vocab(self, tokens: list[list[str]]) -> tuple[list[str], np.ndarray]:
        n_docs = len(tokens)
        min_c = _doc_count(self.min_df, n_docs, "min_df")
        max_c = _doc_count(self.max_df, n_docs, "max_df")
        if max_c < min_c:
            raise ValueError(
                f"max_df={self.max_df!r} corresponds to fewer documents ({max_c:g}) than "
                f"min_df={self.min_df!r} ({min_c:g})"
            )
        mf = self.max_features
        if mf is not None:
            mf = check_int(mf, "max_features", 1)
        df: Counter = Counter()
        tf: Counter = Counter()
        for toks in tokens:
            tf.update(toks)
            df.update(set(toks))
        terms = [w for w, c in df.items() if min_c <= c <= max_c]
        if mf is not None and len(terms) > mf:
            terms = sorted(terms, key=lambda w: (-tf[w], w))[: int(mf)]
        terms.sort()
        if not terms:
            raise ValueError(
                f"no terms are left (from {len(df)} distinct tokens in {n_docs} documents) after "
                f"min_df={self.min_df!r}, max_df={self.max_df!r} and stop words; loosen them or add documents"
            )
        return terms, np.array([df[w] for w in terms], dtype=np.int64)

    @staticmethod
    def _count(tokens: list[list[str]], index: dict) -> sp.csr_matrix:
        indptr = [0]
        indices: list[int] = []
        data: list[int] = []
        for toks in tokens:
            c = Counter(index[t] for t in toks if t in index)
            cols = sorted(c)
            indices.extend(cols)
            data.extend(c[k] for k in cols)
            indptr.append(len(indices))
        vals = np.asarray(data, dtype=np.int64)
        dtype = np.int32 if (vals.size == 0 or vals.max() <= _INT32_MAX) else np.int64
        idx_dtype = np.int32 if len(indices) <= _INT32_MAX else np.int64
        return sp.csr_matrix(
            (vals.astype(dtype), np.asarray(indices, dtype=idx_dtype), np.asarray(indptr, dtype=idx_dtype)),
            shape=(len(tokens), len(index)),
        )

    def _fit_tokens(self, docs: list[str]) -> list[list[str]] | None:
        fixed = self._fixed_vocab()
        if fixed is not None:
            self.vocab_ = fixed
            self.vocabulary_ = {w: i for i, w in enumerate(fixed)}
            tokens = self._tokens(docs, frozenset())
            df = np.zeros(len(fixed), dtype=np.int64)
            for toks in tokens:
                for w in set(toks):
                    j = self.vocabulary_.get(w)
                    if j is not None:
                        df[j] += 1
            self.document_frequency_ = df
            self.n_documents_ = len(docs)
            return tokens
        tokens = self._tokens(docs, self._stop_set())
        vocab, df = self._learn_vocab(tokens)
        self.vocab_ = vocab
        self.vocabulary_ = {w: i for i, w in enumerate(vocab)}
        self.document_frequency_ = df
        self.n_documents_ = len(docs)
        logger.info("CountVectorizer: %d documents, %d terms", len(docs), len(vocab))
        return tokens

    def fit(self, documents: Iterable[str]) -> "CountVectorizer":
        """Learn the vocabulary of ``documents`` (an iterable of str); return self."""
        docs = _check_documents(documents)
        self._fit_tokens(docs)
        return self

    def fit_transform(self, documents: Iterable[str]) -> sp.csr_matrix:
        """Learn the vocabulary and return the counts, shape (n_documents, n_terms)."""
        docs = _check_documents(documents)
        tokens = self._fit_tokens(docs)
        return self._count(tokens, self.vocabulary_)

    def transform(self, documents: Iterable[str]) -> sp.csr_matrix:
        """Count the vocabulary's terms in new documents.

        Tokens outside the vocabulary are dropped; a document without any
        vocabulary term gives an all-zero row.

        Returns
        -------
        scipy.sparse.csr_matrix of int, shape (n_documents, len(vocab_))
        """
        docs = _check_documents(documents)
        if not hasattr(self, "vocabulary_"):
            fixed = self._fixed_vocab()
            if fixed is None:
                raise ValueError(
                    "this CountVectorizer is not fitted yet: call fit or fit_transform first, "
                    "or pass vocabulary="
                )
            index = {w: i for i, w in enumerate(fixed)}
        else:
            index = self.vocabulary_
        return self._count(self._tokens(docs, frozenset()), index)

    def get_feature_names_out(self) -> np.ndarray:
        """The vocabulary as an array of str (scikit-learn's spelling)."""
        if not hasattr(self, "vocab_"):
            raise ValueError("this CountVectorizer is not fitted yet: call fit or fit_transform first")
        return np.asarray(self.vocab_, dtype=object)

    def __repr__(self) -> str:
        return (
            f"CountVectorizer(stop_words={self.stop_words!r}, min_df={self.min_df!r}, max_df={self.max_df!r}, "
            f"max_features={self.max_features!r}, min_length={self.min_length!r}, "
            f"vocabulary={'None' if self.vocabulary is None else '<%d terms>' % len(self.vocabulary)})"
        )


# ---------------------------------------------------------------------------
# reading documents
# ---------------------------------------------------------------------------


def _read_text(path: str, encoding: str, errors: str) -> str:
    try:
        with open(path, encoding=encoding, errors=errors, newline=None) as fh:
            return fh.read()
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"could not decode {path!r} as {encoding}: {exc.reason} at byte {exc.start}; "
            f"pass encoding= or errors='replace'"
        ) from None
    except LookupError:
        raise ValueError(f"unknown encoding or errors handler: encoding={encoding!r}, errors={errors!r}") from None


def read_lines(path, *, encoding: str = "utf-8", errors: str = "strict", skip_empty: bool = False) -> list[str]:
    """Read a text file holding one document per line.

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r``; the line breaks are removed.

    Parameters
    ----------
    path : str or path-like
    encoding : str, default "utf-8"
    errors : str, default "strict"
        How to handle undecodable bytes (``"replace"`` to keep going).
    skip_empty : bool, default False
        Drop lines that hold only whitespace.

    Returns
    -------
    list of str

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If ``path`` is a folder or cannot be decoded.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"documents file not found: {path!r}")
    if os.path.isdir(path):
        raise ValueError(f"path must be a text file with one document per line, got the folder {path!r}")
    text = _read_text(path, encoding, errors)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if skip_empty:
        lines = [ln for ln in lines if ln.strip()]
    return lines


def read_folder(
    path, *, pattern: str = "*", recursive: bool = False, encoding: str = "utf-8", errors: str = "strict"
) -> tuple[list[str], list[str]]:
    """Read a folder holding one document per file.

    Parameters
    ----------
    path : str or path-like
    pattern : str, default "*"
        Shell-style pattern the file names must match, e.g. ``"*.txt"``.
    recursive : bool, default False
        Also read the files of sub-folders.
    encoding, errors : str
        As in :func:`read_lines`.

    Returns
    -------
    names : list of str
        Paths relative to ``path`` (with ``/`` separators), sorted.
    documents : list of str
        The files' contents, in the same order.

    Hidden files and folders (name starting with ``.``) are skipped.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"documents folder not found: {path!r}")
    if not os.path.isdir(path):
        raise ValueError(f"path must be a folder with one document per file, got the file {path!r}")
    found = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if recursive else []
        for f in files:
            full = os.path.join(root, f)
            if f.startswith(".") or not fnmatch.fnmatch(f, pattern) or not os.path.isfile(full):
                continue
            found.append(os.path.relpath(full, path).replace(os.sep, "/"))
    found.sort()
    if not found:
        raise ValueError(f"no files matching {pattern!r} in {path!r}")
    docs = [_read_text(os.path.join(path, name), encoding, errors) for name in found]
    return found, docs


def read_documents(path, **kwargs) -> tuple[list[str], list[str]]:
    """Read documents from a text file (one per line) or a folder (one per file).

    Returns
    -------
    names : list of str
        Line numbers (1-based, as str) for a file; relative file names for a
        folder.
    documents : list of str

    Keyword arguments go to :func:`read_lines` (``encoding``, ``errors``) or
    :func:`read_folder` (``pattern``, ``recursive``, ``encoding``,
    ``errors``).
    """
    p = os.fspath(path)
    if not os.path.exists(p):
        raise FileNotFoundError(f"documents path not found: {p!r}")
    if os.path.isdir(p):
        return read_folder(p, **kwargs)
    bad = set(kwargs) - {"encoding", "errors"}
    if bad:
        raise ValueError(f"unexpected keyword arguments for a documents file: {sorted(bad)}")
    lines = read_lines(p, **kwargs)
    return [str(i) for i in range(1, len(lines) + 1)], lines


# ---------------------------------------------------------------------------
# vocabulary and count matrices
# ---------------------------------------------------------------------------


def read_vocab(path, *, encoding: str = "utf-8") -> list[str]:
    """Read a vocabulary file: one term per line, in column order.

    Surrounding whitespace is stripped; empty lines and repeated terms are
    errors (a final line break is fine).
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"vocabulary file not found: {path!r}")
    if os.path.isdir(path):
        raise ValueError(f"vocabulary path must be a text file, got the folder {path!r}")
    lines = _read_text(path, encoding, "strict").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    seen: dict = {}
    vocab = []
    for i, line in enumerate(lines, start=1):
        term = line.strip()
        if not term:
            raise ValueError(f"line {i} of the vocabulary file {path!r} is empty")
        if term in seen:
            raise ValueError(f"the vocabulary file {path!r} repeats {term!r} (lines {seen[term]} and {i})")
        seen[term] = i
        vocab.append(term)
    if not vocab:
        raise ValueError(f"the vocabulary file {path!r} is empty")
    return vocab


def write_vocab(path, vocab: Sequence[str]) -> str:
    """Write ``vocab`` one term per line (UTF-8); return the path."""
    if isinstance(vocab, (str, bytes)):
        raise ValueError("vocab must be a sequence of str, got a single str")
    terms = list(vocab)
    for i, t in enumerate(terms):
        if not isinstance(t, str) or not t.strip() or t != t.strip() or "\n" in t or "\r" in t:
            raise ValueError(
                f"vocab[{i}] must be a non-empty str without line breaks or surrounding whitespace, got {t!r}"
            )
    if len(set(terms)) != len(terms):
        raise ValueError("vocab must not repeat a term")
    path = os.fspath(path)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for t in terms:
            fh.write(t + "\n")
    return path


_MTX_SUFFIXES = (".mtx", ".mtx.gz", ".mtx.bz2", ".mm")


def _format_of(path: str) -> str:
    low = path.lower()
    if low.endswith(_MTX_SUFFIXES):
        return "mtx"
    if low.endswith(".npz"):
        return "npz"
    raise ValueError(
        f"unsupported counts file {path!r}: expected a Matrix Market file (.mtx, .mtx.gz) or a "
        f".npz archive (scipy.sparse.save_npz, or numpy.savez of one 2-D array)"
    )


def _load_npz(path: str, key: str | None):
    try:
        z = np.load(path, allow_pickle=False)
    except Exception as exc:  # zipfile/pickle/format errors all mean "not an npz we can read"
        raise ValueError(f"could not read {path!r} as a .npz archive: {exc}") from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise ValueError(f"{path!r} is a .npy array, not a .npz archive")
    with z:
        files = set(z.files)
        if key is None and {"format", "shape", "data"} <= files:
            pass  # a scipy.sparse archive, read below
        else:
            if key is not None:
                if key not in files:
                    raise ValueError(f"key {key!r} not in {path!r}; it holds {sorted(files)}")
                name = key
            elif len(files) == 1:
                name = next(iter(files))
            elif "X" in files:
                name = "X"
            elif "counts" in files:
                name = "counts"
            else:
                raise ValueError(
                    f"{path!r} holds several arrays {sorted(files)} and none is a scipy.sparse matrix; "
                    f"pass key= to pick one"
                )
            try:
                return np.asarray(z[name])
            except Exception as exc:
                raise ValueError(f"could not read array {name!r} of {path!r}: {exc}") from None
    try:
        return sp.load_npz(path)
    except Exception as exc:
        raise ValueError(f"could not read {path!r} as a scipy.sparse .npz archive: {exc}") from None


def _validated_counts(mat, integer: bool, what: str) -> sp.csr_matrix:
    if sp.issparse(mat):
        X = sp.csr_matrix(mat, copy=True)
    else:
        a = np.asarray(mat)
        if a.ndim != 2:
            raise ValueError(f"{what} must be a 2-D matrix (documents x terms), got shape {a.shape}")
        if a.dtype.kind not in "biuf":
            raise ValueError(f"{what} must be numeric, got dtype {a.dtype}")
        X = sp.csr_matrix(a)
    if X.ndim != 2:
        raise ValueError(f"{what} must be a 2-D matrix (documents x terms), got shape {X.shape}")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{what} must be numeric, got dtype {X.dtype}")
    X.sum_duplicates()
    data = X.data
    if data.dtype.kind == "f":
        if not np.isfinite(data).all():
            raise ValueError(f"{what} must be finite")
    if data.size and data.min() < 0:
        raise ValueError(f"{what} must be non-negative, found {data.min()!r}")
    if integer:
        if data.dtype.kind == "f":
            if not np.array_equal(data, np.round(data)):
                bad = data[data != np.round(data)][0]
                raise ValueError(
                    f"{what} must hold integer counts, found {bad!r} (pass integer=False for non-negative reals)"
                )
        top = data.max() if data.size else 0
        dtype = np.int32 if top <= _INT32_MAX else np.int64
        X = sp.csr_matrix((data.astype(dtype), X.indices, X.indptr), shape=X.shape)
    else:
        X = sp.csr_matrix((data.astype(np.float64), X.indices, X.indptr), shape=X.shape)
    X.eliminate_zeros()
    X.sort_indices()
    return X


def load_counts(
    path, vocab_path=None, *, transpose: bool = False, integer: bool = True, key: str | None = None
) -> tuple[sp.csr_matrix, list[str] | None]:
    """Read a count matrix (and optionally its vocabulary) from disk.

    Parameters
    ----------
    path : str or path-like
        ``.mtx`` / ``.mtx.gz`` (Matrix Market, read with
        :func:`scipy.io.mmread`) or ``.npz`` (written by
        :func:`scipy.sparse.save_npz`, or by :func:`numpy.savez` with one 2-D
        array, or with arrays named ``X`` or ``counts``, or any ``key``).
    vocab_path : str or path-like, optional
        Text file with one term per line, one per column.
    transpose : bool, default False
        Set when the file stores terms x documents (as many Matrix Market
        corpora do); the result is always documents x terms.
    integer : bool, default True
        Require integer counts (stored as int32, or int64 if needed).  With
        False, non-negative reals are kept as float64 (for the
        Poisson-randomized-gamma link).
    key : str, optional
        Array to read from a ``.npz`` holding several dense arrays.

    Returns
    -------
    counts : scipy.sparse.csr_matrix, shape (n_documents, n_terms)
    vocab : list of str or None

    Raises
    ------
    FileNotFoundError
        A file does not exist.
    ValueError
        Unknown suffix, unreadable content, negative / non-integer /
        non-finite values, or a vocabulary whose length differs from the
        number of columns.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"counts file not found: {path!r}")
    if os.path.isdir(path):
        raise ValueError(f"counts path must be a file, got the folder {path!r}")
    fmt = _format_of(path)
    if fmt == "mtx":
        try:
            mat = scipy.io.mmread(path)
        except Exception as exc:
            raise ValueError(f"could not read {path!r} as a Matrix Market file: {exc}") from None
    else:
        mat = _load_npz(path, key)
    X = _validated_counts(mat, integer, f"the counts in {path!r}")
    if transpose:
        X = X.T.tocsr()
        X.sort_indices()
    vocab = None
    if vocab_path is not None:
        vocab = read_vocab(vocab_path)
        if len(vocab) != X.shape[1]:
            raise ValueError(
                f"the vocabulary {os.fspath(vocab_path)!r} has {len(vocab)} terms but the counts in "
                f"{path!r} have {X.shape[1]} columns (documents x terms{'' if transpose else '; pass transpose=True if the file is terms x documents'})"
            )
    logger.info("loaded counts %s from %s (%d non-zeros)", X.shape, path, X.nnz)
    return X, vocab


def save_counts(path, counts, vocab: Sequence[str] | None = None, vocab_path=None) -> str:
    """Write a documents x terms count matrix as ``.mtx`` or ``.npz``.

    Parameters
    ----------
    path : str or path-like
        Ends in ``.mtx`` (Matrix Market coordinate format, via
        :func:`scipy.io.mmwrite`) or ``.npz`` (compressed,
        :func:`scipy.sparse.save_npz`).
    counts : array_like or sparse matrix
        Non-negative counts (integers are written as integers).
    vocab : sequence of str, optional
        Column names, written to ``vocab_path`` one per line.
    vocab_path : str or path-like, optional
        Required when ``vocab`` is given.

    Returns
    -------
    str
        ``path``.
    """
    path = os.fspath(path)
    low = path.lower()
    if not (low.endswith(".mtx") or low.endswith(".npz")):
        raise ValueError(f"path must end in .mtx or .npz, got {path!r}")
    X = _validated_counts(counts, integer=False, what="counts")
    is_int = np.array_equal(X.data, np.round(X.data))
    if is_int:
        X = _validated_counts(X, integer=True, what="counts")
    if (vocab is None) != (vocab_path is None):
        raise ValueError("pass both vocab and vocab_path, or neither")
    if vocab is not None:
        terms = list(vocab)
        if len(terms) != X.shape[1]:
            raise ValueError(f"vocab has {len(terms)} terms but counts have {X.shape[1]} columns")
    if low.endswith(".mtx"):
        scipy.io.mmwrite(path, X.tocoo(), field="integer" if is_int else "real")
    else:
        sp.save_npz(path, X, compressed=True)
    if vocab is not None:
        write_vocab(vocab_path, terms)
    return path


def align_vocabulary(X, vocab: Sequence[str], target: Sequence[str], name: str = "X") -> sp.csr_matrix:
    """Move the columns of counts ``X`` (named by ``vocab``) onto the vocabulary ``target``.

    A term of both vocabularies goes to its column in ``target`` (e.g. a
    fitted model's vocabulary); terms missing from ``target`` are dropped and
    terms of ``target`` missing from ``vocab`` get zero columns.  ``name``
    names ``X`` in errors.  Returns a csr_matrix of shape
    ``(n_documents, len(target))``.

    Raises
    ------
    ValueError
        If ``vocab`` does not name every column of ``X``, or no term of
        ``vocab`` is in ``target``.
    """
    vocab, target = list(vocab), list(target)
    X = sp.csr_matrix(X)
    if X.shape[1] != len(vocab):
        raise ValueError(f"{name} has {X.shape[1]} columns but its vocabulary {len(vocab)} terms")
    index = {w: i for i, w in enumerate(target)}
    cols = np.array([index.get(w, -1) for w in vocab], dtype=np.int64)
    keep = cols >= 0
    if not keep.any():
        raise ValueError(f"none of the terms of {name} is in the vocabulary to align to ({len(target)} terms)")
    C = sp.csr_matrix((np.ones(int(keep.sum())), (np.flatnonzero(keep), cols[keep])),
                      shape=(len(vocab), len(target)))
    logger.debug("matched %d of %d terms of %s to the model's vocabulary", int(keep.sum()), len(vocab), name)
    return (X @ C).tocsr()
