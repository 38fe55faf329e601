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
:func:`load_counts` (Matrix Market ``.mtx``, ``.npz``, ``.npy``, ``.csv``,
``.tsv``) / :func:`save_counts` (``.mtx`` or ``.npz``), :func:`read_vocab` /
:func:`write_vocab` (one term per line); :func:`align_vocabulary` moves counts onto another vocabulary (e.g. a
fitted model's); they live in :mod:`pygbn.text.files`.
"""
from __future__ import annotations

import itertools
import logging
import numbers
import re
from array import array
from collections import defaultdict
from functools import lru_cache
from importlib import resources
from typing import Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from pygbn._utils import check_int, check_terms, get_params, set_params, warn_user
from pygbn.text.files import (COUNT_SUFFIXES, DecodeError, align_vocabulary, load_counts, read_documents,
                              read_folder, read_lines, read_stop_words, read_vocab, save_counts, write_vocab)

logger = logging.getLogger("pygbn")

__all__ = [
    "TOKEN_PATTERN",
    "tokenize",
    "english_stop_words",
    "CountVectorizer",
    "read_lines",
    "read_folder",
    "DecodeError",
    "read_documents",
    "read_vocab",
    "write_vocab",
    "read_stop_words",
    "load_counts",
    "save_counts",
    "COUNT_SUFFIXES",
    "align_vocabulary",
]

#: Tokens are maximal runs of the lowercase letters a-z (after lowercasing).
TOKEN_PATTERN = r"[a-z]+"
_TOKEN_RE = re.compile(TOKEN_PATTERN)
_INT32_MAX = np.iinfo(np.int32).max
#: tokens (or documents) CountVectorizer tokenises before turning them into (document, term) pairs
_CHUNK_TOKENS = 1 << 18


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
    return _tokens(text, min_length)


def _tokens(text: str, min_length: int) -> list[str]:
    """:func:`tokenize` of a str with a checked ``min_length`` (CountVectorizer's loop)."""
    toks = _TOKEN_RE.findall(text.lower())
    return [t for t in toks if len(t) >= min_length] if min_length > 1 else toks


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
    validates them.  It follows scikit-learn's transformer protocol
    (``get_params``/``set_params``, ``fit(X, y=None)``,
    ``get_feature_names_out``) without importing scikit-learn, so it can be
    the first step of a ``Pipeline`` (e.g. before :class:`pygbn.GBN`).

    Parameters
    ----------
    stop_words : "english", None or iterable of str, default "english"
        Words removed before counting: the shipped list
        (:func:`english_stop_words`), none, or your own (matched
        case-insensitively: they are lowercased like the text).
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
    vocabulary : sequence of str, mapping or set of str, optional
        A fixed vocabulary, in column order (e.g. that of a fitted model).
        As in scikit-learn, a mapping gives each term its column (the
        columns must be 0 .. n-1, each once) and a set is taken in sorted
        order.  Every token equal to one of its terms is counted;
        ``stop_words``, ``min_df``, ``max_df`` and ``max_features`` are then
        not used, and :meth:`transform` and :meth:`get_feature_names_out`
        work without :meth:`fit`.  A term the tokeniser never produces (not
        ``[a-z]+`` of at least ``min_length`` letters) is kept, with a
        ``UserWarning``: its column stays zero.

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

    # -- parameters (scikit-learn's convention) ---------------------------
    def get_params(self, deep: bool = True) -> dict:
        """The constructor's arguments (scikit-learn convention: ``clone``, ``GridSearchCV``)."""
        return get_params(self, deep)

    def set_params(self, **params) -> "CountVectorizer":
        """Set constructor arguments (scikit-learn convention); checked by ``fit``, not here."""
        set_params(self, params)
        return self

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
        # tokens are lowercase (the text is lowercased before tokenising): so are stop words
        return frozenset(w.lower() for w in words)

    def _fixed_vocab(self) -> list[str] | None:
        if self.vocabulary is None:
            return None
        # as scikit-learn: a mapping gives each term its column, a set is sorted
        vocab = check_terms(self.vocabulary, "vocabulary", mappings=True, sort_sets=True, unique=True,
                            allow_empty=False)
        min_length = check_int(self.min_length, "min_length", 1)
        unreachable = [w for w in vocab if len(w) < min_length or _TOKEN_RE.fullmatch(w) is None]
        if unreachable:
            warn_user(f"{len(unreachable)} vocabulary term(s) can never be produced by the tokeniser "
                      f"([a-z]+, length >= {min_length}), e.g. {unreachable[0]!r}: their columns stay zero")
        return vocab

    # -- core ---------------------------------------------------------------
    # The documents are tokenised one at a time into int ids; every _CHUNK_TOKENS tokens the
    # ids become distinct (document, id) pairs with their counts.  The corpus is never held
    # as lists of token strings (about 70 bytes a token: 12 times the text of a corpus of
    # short documents), nor as one array of all its tokens.
    def _token_pairs(self, docs: list[str], stop: frozenset, index: dict | None):
        """``(rows, ids, counts, words)``: the distinct (document, id) pairs of the tokens of
        ``docs`` (``stop`` removed), sorted by document then id, and their counts (int32
        arrays, int64 where needed).
        With ``index`` (term -> column) the ids are columns and tokens outside it are dropped
        (``words`` is None); without it a token's id is its place among the distinct tokens
        in order of first appearance, ``words`` (a list)."""
        min_length = check_int(self.min_length, "min_length", 1)
        if index is None:
            known: dict = defaultdict(itertools.count().__next__)
            lookup = known.__getitem__
        else:
            lookup = index.get
        parts: tuple = ([], [], [])    # rows, ids, counts of each chunk (int32 where they fit)
        ids = array("q")
        lengths: list[int] = []
        first = 0                       # the document of lengths[0]

        def flush():
            nonlocal ids, lengths, first
            if len(ids):
                # key = (document within the chunk) * 2^32 + id: ids and chunk rows stay below 2^31
                keys = np.repeat(np.arange(len(lengths), dtype=np.int64) << 32, lengths)
                keys += np.frombuffer(ids, dtype=np.int64)
                keys.sort()
                new = np.empty(keys.size, dtype=bool)
                new[0] = True
                np.not_equal(keys[1:], keys[:-1], out=new[1:])
                at = np.flatnonzero(new)
                counts = np.diff(np.append(at, keys.size))
                keys = keys[at]
                for part, a in zip(parts, ((keys >> 32) + first, keys & 0xFFFFFFFF, counts)):
                    part.append(a.astype(np.int32) if a.max() <= _INT32_MAX else a)
            first += len(lengths)
            ids, lengths = array("q"), []

        for d in docs:
            toks = _tokens(d, min_length)
            if stop:
                toks = [t for t in toks if t not in stop]
            before = len(ids)
            if index is None:
                ids.extend(map(lookup, toks))
            else:
                ids.extend(c for c in map(lookup, toks) if c is not None)
            lengths.append(len(ids) - before)
            if len(ids) >= _CHUNK_TOKENS or len(lengths) >= _CHUNK_TOKENS:
                flush()
        flush()
        words = list(known) if index is None else None    # insertion order: id order
        out = []
        for part in parts:             # one at a time: the chunks and one concatenation at most
            out.append(np.concatenate(part) if part else np.zeros(0, np.int32))
            part.clear()
        return (*out, words)

    def _learn_vocab(self, n_docs: int, words: list[str], tf: np.ndarray, df: np.ndarray):
        """The kept terms (alphabetical) and their ids, from every token's ``tf`` and ``df``."""
        if n_docs == 0:
            raise ValueError("documents is empty: there is no vocabulary to learn")
        min_c = _doc_count(self.min_df, n_docs, "min_df")
        max_c = _doc_count(self.max_df, n_docs, "max_df")
        if min_c > n_docs:
            raise ValueError(
                f"min_df={self.min_df!r} is more than the number of documents ({n_docs}): no term can "
                f"be in that many; lower min_df (an int counts documents, a float is a proportion)"
            )
        if max_c < min_c:
            raise ValueError(
                f"max_df={self.max_df!r} corresponds to fewer documents ({max_c:g}) than "
                f"min_df={self.min_df!r} ({min_c:g})"
            )
        mf = self.max_features
        if mf is not None:
            mf = check_int(mf, "max_features", 1)
        kept = np.flatnonzero((df >= min_c) & (df <= max_c))
        if mf is not None and kept.size > mf:
            kept = np.array(sorted(kept.tolist(), key=lambda i: (-tf[i], words[i]))[: int(mf)], dtype=np.int64)
        kept = np.array(sorted(kept.tolist(), key=words.__getitem__), dtype=np.int64)
        if not kept.size:
            raise ValueError(
                f"no terms are left (from {len(words)} distinct tokens in {n_docs} documents) after "
                f"min_df={self.min_df!r}, max_df={self.max_df!r} and stop words; loosen them or add documents"
            )
        return [words[i] for i in kept], kept

    @staticmethod
    def _matrix(rows: np.ndarray, cols: np.ndarray, counts: np.ndarray, n_docs: int, n_terms: int) -> sp.csr_matrix:
        """The CSR counts of the (document, column) pairs, sorted by document then column."""
        dtype = np.int32 if (counts.size == 0 or counts.max() <= _INT32_MAX) else np.int64
        idx_dtype = np.int32 if counts.size <= _INT32_MAX else np.int64
        indptr = np.zeros(n_docs + 1, dtype=idx_dtype)
        np.cumsum(np.bincount(rows, minlength=n_docs), out=indptr[1:])
        return sp.csr_matrix((counts.astype(dtype, copy=False), cols.astype(idx_dtype, copy=False), indptr),
                             shape=(n_docs, n_terms))

    def _count(self, docs: list[str], index: dict) -> tuple[sp.csr_matrix, np.ndarray]:
        """The counts of ``index``'s terms in ``docs`` (no stop words removed) and their
        document frequencies."""
        rows, cols, counts, _ = self._token_pairs(docs, frozenset(), index)
        return (self._matrix(rows, cols, counts, len(docs), len(index)),
                np.bincount(cols, minlength=len(index)).astype(np.int64))

    def _fit_counts(self, docs: list[str]) -> sp.csr_matrix:
        """Learn (or take) the vocabulary and set the fitted attributes; return the counts."""
        fixed = self._fixed_vocab()
        if fixed is not None:
            self.vocab_ = fixed
            self.vocabulary_ = {w: i for i, w in enumerate(fixed)}
            X, df = self._count(docs, self.vocabulary_)
            self.document_frequency_ = df
            self.n_documents_ = len(docs)
            return X
        rows, uid, counts, words = self._token_pairs(docs, self._stop_set(), None)
        tf = np.bincount(uid, weights=counts, minlength=len(words)).astype(np.int64)
        df = np.bincount(uid, minlength=len(words))
        vocab, kept = self._learn_vocab(len(docs), words, tf, df)
        column = np.full(len(words), -1, dtype=np.int32 if kept.size <= _INT32_MAX else np.int64)
        column[kept] = np.arange(kept.size)
        cols = column[uid]
        del uid
        keep = cols >= 0
        X = self._matrix(rows[keep], cols[keep], counts[keep], len(docs), len(vocab))
        X.sort_indices()           # each row's columns in alphabetical, not first-seen, order
        self.vocab_ = vocab
        self.vocabulary_ = {w: i for i, w in enumerate(vocab)}
        self.document_frequency_ = df[kept].astype(np.int64)
        self.n_documents_ = len(docs)
        logger.info("CountVectorizer: %d documents, %d terms", len(docs), len(vocab))
        return X

    def fit(self, documents: Iterable[str], y=None) -> "CountVectorizer":
        """Learn the vocabulary of ``documents`` (an iterable of str); return self.

        ``y`` is ignored (there for scikit-learn's ``Pipeline``, which passes it)."""
        docs = _check_documents(documents)
        self._fit_counts(docs)
        return self

    def fit_transform(self, documents: Iterable[str], y=None) -> sp.csr_matrix:
        """Learn the vocabulary and return the counts, shape (n_documents, n_terms).

        ``y`` is ignored (there for scikit-learn's ``Pipeline``, which passes it)."""
        docs = _check_documents(documents)
        return self._fit_counts(docs)

    def transform(self, documents: Iterable[str]) -> sp.csr_matrix:
        """Count the vocabulary's terms in new documents.

        Tokens outside the vocabulary are dropped; a document without any
        vocabulary term gives an all-zero row.

        Returns
        -------
        scipy.sparse.csr_matrix of int, shape (n_documents, len(vocab_))
        """
        docs = _check_documents(documents)
        return self._count(docs, self._index())[0]

    def sequences(self, documents: Iterable[str]) -> list[np.ndarray]:
        """Each document as the sequence of its tokens' term indices, in reading order.

        For the sliding windows of topic coherence
        (``pygbn.evaluation.coherence(topics, texts=...)``): a token outside
        the vocabulary is -1 (it keeps its place in a window but is not
        counted), as in the token stream that ``transform`` counts.

        Returns
        -------
        list of ndarray of int64
        """
        docs = _check_documents(documents)
        index = self._index()
        min_length = check_int(self.min_length, "min_length", 1)
        return [np.array([index.get(t, -1) for t in tokenize(d, min_length)], dtype=np.int64) for d in docs]

    def _index(self) -> dict:
        """Term -> column of the fitted (or given) vocabulary."""
        if hasattr(self, "vocabulary_"):
            return self.vocabulary_
        fixed = self._fixed_vocab()
        if fixed is None:
            raise _not_fitted()
        return {w: i for i, w in enumerate(fixed)}

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """The vocabulary as an array of str (scikit-learn's spelling).

        ``input_features`` is ignored (the input is text, which has no
        feature names; scikit-learn's ``Pipeline`` passes it)."""
        if hasattr(self, "vocab_"):
            return np.asarray(self.vocab_, dtype=object)
        fixed = self._fixed_vocab()
        if fixed is None:
            raise _not_fitted()
        return np.asarray(fixed, dtype=object)

    def __repr__(self) -> str:
        return (
            f"CountVectorizer(stop_words={self.stop_words!r}, min_df={self.min_df!r}, max_df={self.max_df!r}, "
            f"max_features={self.max_features!r}, min_length={self.min_length!r}, "
            f"vocabulary={_vocab_repr(self.vocabulary)})"
        )


def _not_fitted():
    """The error of a CountVectorizer used before ``fit`` without a ``vocabulary``:
    :class:`pygbn.NotFittedError` (a ValueError and an AttributeError, as
    scikit-learn's), as GBN raises."""
    from pygbn.estimator import NotFittedError     # here: pygbn.estimator needs no text

    return NotFittedError("this CountVectorizer is not fitted yet: call fit or fit_transform first, "
                          "or pass vocabulary=")


def _vocab_repr(vocabulary) -> str:
    if vocabulary is None:
        return "None"
    try:
        return "<%d terms>" % len(vocabulary)
    except TypeError:  # an iterator: its length is not known without consuming it
        return "<%s>" % type(vocabulary).__name__
