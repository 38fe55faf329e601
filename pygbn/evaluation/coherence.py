"""Topic quality: coherence (UMass, UCI, NPMI, C_V) and diversity of topics.

A *topic* here is the list of its top-n terms (column indices of the
vocabulary), most probable first, e.g. a row of
:meth:`pygbn.model.Network.top_term_indices` of any layer (the projected
topics of eq:projection).  Coherence measures how often a topic's top terms
occur together in a *reference corpus*; every measure below is the one of
Röder, Both & Hinneburg (WSDM 2015), in the form gensim's ``CoherenceModel``
computes it (the tests check the values against gensim), with
``eps = 1e-12``.

Counting (the "probability estimation" step).  The reference corpus is split
into *windows*; ``N`` is the number of windows, ``D(w)`` the number of
windows holding term w and ``D(w, w')`` the number holding both.  Then
``P(w) = D(w) / N`` and ``P(w, w') = D(w, w') / N``.

* Document co-occurrence (a count matrix ``X``, documents x terms): each
  document is one window (every row counts, empty rows too).
* Sliding windows (``texts``: each document as its sequence of term indices,
  in reading order, e.g. :meth:`pygbn.text.CountVectorizer.sequences`; a
  negative index is a token outside the vocabulary, which takes a place in
  the windows but is not counted): a document of ``L >= s`` tokens gives the
  ``L - s + 1`` windows ``tokens[i:i + s]``; a shorter one is one window.  A
  term is counted once per window however often it occurs there.

Measures, for a topic with top terms ``w_1, ..., w_n`` (most probable first):

* ``"u_mass"`` (Mimno et al. 2011): the mean over ``i > j`` of
  ``log((P(w_i, w_j) + eps) / P(w_j))``; document co-occurrence.
* ``"c_uci"`` (Newman et al. 2010, PMI): the mean over ordered pairs
  ``i != j`` of ``PMI = log((P(w_i, w_j) + eps) / (P(w_i) P(w_j)))``.
* ``"c_npmi"`` (Aletras & Stevenson 2013): the mean of
  ``NPMI = PMI / -log(P(w_i, w_j) + eps)`` over the same pairs.
* ``"c_v"`` (Röder et al. 2015): with ``v_i = (NPMI(w_i, w_1), ...,
  NPMI(w_i, w_n))`` (the diagonal included: ``P(w, w) = P(w)``) and
  ``v = sum_i v_i``, the mean over i of the cosine of ``v_i`` and ``v``.

A pair whose conditioning term never occurs in the reference corpus
(``P(w_j) = 0`` for UMass, ``P(w_i) P(w_j) = 0`` for the others) scores 0
(gensim gives 0 for UMass and an infinite or undefined value for the others),
and so does a cosine with a zero vector.  gensim's default windows are 10
tokens for ``c_uci``/``c_npmi`` and 110 for ``c_v``; pygbn uses them when
``texts`` is given without ``window_size``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Optional, Sequence

import numpy as np
import scipy.sparse as sp

from pygbn.model.links import as_csr

__all__ = ["MEASURES", "EPSILON", "DEFAULT_WINDOWS", "Cooccurrence", "cooccurrence", "coherence",
           "coherence_from_counts", "window_for", "diversity", "check_topics"]

#: the coherence measures :func:`coherence` knows
MEASURES = ("u_mass", "c_uci", "c_npmi", "c_v")
#: the small constant that keeps the logarithms finite (gensim's)
EPSILON = 1e-12
#: sliding-window sizes used with ``texts`` when none is given (gensim's defaults)
DEFAULT_WINDOWS = {"c_uci": 10, "c_npmi": 10, "c_v": 110}


def check_topics(topics, n_terms: Optional[int] = None, name: str = "topics") -> np.ndarray:
    """``topics`` as a 2-D int64 array (one row of term indices per topic), validated.

    Raises ValueError naming ``name`` unless it is a non-empty (K, n) array
    of integers in ``[0, n_terms)`` with ``n >= 2`` and no repeated term in
    a row.
    """
    arr = np.asarray(topics)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 2 or arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be a 2-D integer array with one row of at least 2 term indices "
                         f"per topic, got shape {arr.shape} and dtype {arr.dtype}")
    top = n_terms if n_terms is not None else 2**63
    if arr.min() < 0 or arr.max() >= top:      # before the cast: a uint64 past int64 would wrap
        where = f"[0, {n_terms})" if n_terms is not None else "the nonnegative int64 range"
        raise ValueError(f"{name} holds term indices outside {where}: [{arr.min()}, {arr.max()}]")
    arr = arr.astype(np.int64)
    srt = np.sort(arr, axis=1)
    if (srt[:, 1:] == srt[:, :-1]).any():
        raise ValueError(f"{name} repeats a term within a topic")
    return arr


@dataclass(frozen=True)
class Cooccurrence:
    """Window counts of a set of terms in a reference corpus.

    Attributes
    ----------
    terms : ndarray of int64, shape (R,)
        The counted terms (vocabulary indices, sorted).
    n_windows : int
        ``N``, the number of windows.
    joint : ndarray of int64, or scipy.sparse.csr_matrix of int64, shape (R, R)
        ``D(w, w')`` for the terms in ``terms``'s order; the diagonal is ``D(w)``.
        A CSR matrix when only the pairs of some topics were counted
        (:func:`cooccurrence` with ``topics``): its stored entries, zeros
        included, are exactly the counted pairs and the whole diagonal.
    """

    terms: np.ndarray
    n_windows: int
    joint: np.ndarray

    @property
    def occurrences(self) -> np.ndarray:
        """``D(w)`` of each term (the diagonal of ``joint``)."""
        if sp.issparse(self.joint):
            return np.asarray(self.joint.diagonal(), dtype=np.int64)
        return np.diagonal(self.joint).copy()

    def positions(self, words: np.ndarray) -> np.ndarray:
        """Positions in ``terms`` of the vocabulary indices ``words`` (all counted)."""
        return np.searchsorted(self.terms, words)

    @cached_property
    def _pair_keys(self):
        """``(keys, values)``: ``i * R + j`` of the stored entries of a sparse ``joint``
        (sorted) and their counts."""
        J = self.joint.tocsr()
        if not J.has_sorted_indices:
            J = J.copy()
            J.sort_indices()
        rows = np.repeat(np.arange(J.shape[0], dtype=np.int64), np.diff(J.indptr))
        return rows * J.shape[1] + J.indices.astype(np.int64), np.asarray(J.data, dtype=np.int64)

    def blocks(self, topics: np.ndarray) -> np.ndarray:
        """``D(w_i, w_j)`` within each topic: an int64 array of shape (K, n, n) for
        ``topics`` (K, n) of counted terms; ValueError if a sparse ``joint`` lacks a pair."""
        idx = self.positions(topics)
        if not sp.issparse(self.joint):
            return self.joint[idx[:, :, None], idx[:, None, :]]
        keys, values = self._pair_keys
        want = idx[:, :, None].astype(np.int64) * self.joint.shape[1] + idx[:, None, :]
        at, found = _lookup(keys, want)
        if not found.all():
            raise ValueError("counts does not hold every pair of terms of the topics (count them with "
                             "cooccurrence(..., topics=) of topics that include these)")
        return values[at]


#: entries (windows x terms) of the blocks of windows :func:`_window_blocks` hands on at a time
_WINDOW_ENTRIES = 1 << 18
#: entries (at most) of the groups of short documents :func:`_window_blocks` reads at a time
_GROUP_ENTRIES = 1 << 14


def _window_blocks(texts, terms: np.ndarray, window_size: Optional[int], counts) -> int:
    """Validate ``texts``, hand each block of their windows to ``counts`` and return the
    number of windows.

    ``counts`` is called with ``Bt``, the window-by-term presence of a block of windows
    transposed: a CSR 0/1 int32 matrix, (positions in ``terms``) x windows, each term
    counted once per window however often it occurs there.  Documents are read in groups
    of at most ``_GROUP_ENTRIES`` entries (a longer document alone) and a group's windows
    are handed on in blocks of about ``_WINDOW_ENTRIES`` entries, so memory stays bounded
    whatever the corpus and the documents' lengths."""
    n_windows, group, entries = 0, [], 0
    for d, doc in enumerate(texts):
        tok = np.asarray(doc)
        if tok.ndim != 1 or (tok.size and tok.dtype.kind not in "iu"):
            raise ValueError(f"texts[{d}] must be a 1-D sequence of term indices, got {doc!r}"[:200])
        L = tok.size
        size = L + 1 if window_size is None else int(window_size)
        more = L * min(size, L - size + 1 if L >= size else 1)     # at most this many entries
        if group and entries + more > _GROUP_ENTRIES:
            n_windows += _group_blocks(group, terms, window_size, counts)
            group, entries = [], 0
        group.append(tok.astype(np.int64, copy=False) if L else np.zeros(0, dtype=np.int64))
        entries += more
    if group:
        n_windows += _group_blocks(group, terms, window_size, counts)
    return n_windows


def _group_blocks(group, terms: np.ndarray, window_size: Optional[int], counts) -> int:
    """:func:`_window_blocks` of one group of documents (int64 token arrays): the windows are
    numbered across the group, and each counted term's windows are found as ranges of
    windows (one per occurrence, less the windows an earlier occurrence reached)."""
    R = terms.size
    lengths = np.array([t.size for t in group], dtype=np.int64)
    sizes = lengths + 1 if window_size is None else np.full(lengths.size, int(window_size), dtype=np.int64)
    long = lengths >= sizes
    n_win = np.where(long, lengths - sizes + 1, 1)
    win_off = np.concatenate([[0], np.cumsum(n_win)[:-1]])
    tokens = np.concatenate(group)
    at, found = _lookup(terms, tokens)
    doc = np.repeat(np.arange(lengths.size), lengths)[found]
    p = (np.arange(tokens.size) - np.repeat(np.cumsum(lengths) - lengths, lengths))[found]
    col = at[found]
    L, s, lg, off = lengths[doc], sizes[doc], long[doc], win_off[doc]
    # token p lies in windows max(0, p-s+1) .. min(p, L-s) of its document (window 0 if L < s)
    first = off + np.where(lg, np.maximum(p - s + 1, 0), 0)
    last = off + np.where(lg, np.minimum(p, L - s), 0)
    order = np.lexsort((first, col))
    col, first, last = col[order], first[order], last[order]
    # a term's later occurrence counts only in windows its earlier ones did not reach
    same = np.zeros(col.size, dtype=bool)
    same[1:] = col[1:] == col[:-1]
    start = first.copy()
    start[1:][same[1:]] = np.maximum(first[1:][same[1:]], last[:-1][same[1:]] + 1)
    keep = last >= start
    col, start, last = col[keep], start[keep], last[keep]
    # blocks of windows of about _WINDOW_ENTRIES entries; a block's ranges are those that
    # start at most `longest - 1` windows before it (found in start order), clipped to it
    total_win = int(n_win.sum())
    per_window = np.bincount(start, minlength=total_win + 1) - np.bincount(last + 1, minlength=total_win + 1)
    cum = np.cumsum(np.cumsum(per_window[:-1]))           # entries up to each window
    cuts = np.unique(np.concatenate([[0], np.searchsorted(cum, np.arange(1, cum[-1] // _WINDOW_ENTRIES + 1)
                                                                * _WINDOW_ENTRIES, side="right"), [total_win]]))
    by_start = np.argsort(start, kind="stable")
    sorted_start = start[by_start]
    longest = int((last - start).max()) + 1 if start.size else 1
    for w0, w1 in zip(cuts[:-1], cuts[1:]):
        lo, hi = np.searchsorted(sorted_start, [w0 - longest + 1, w1])
        sel = np.sort(by_start[lo:hi])                  # back in (term, start) order
        sel = sel[last[sel] >= w0]
        a, b, c = np.maximum(start[sel], w0) - w0, np.minimum(last[sel], w1 - 1) - w0 + 1, col[sel]
        n = b - a
        ends = np.cumsum(n)
        windows = np.arange(ends[-1] if ends.size else 0, dtype=np.int64) - np.repeat(ends - n - a, n)
        indptr = np.zeros(R + 1, dtype=np.int64)
        np.cumsum(np.bincount(c, weights=n, minlength=R).astype(np.int64), out=indptr[1:])
        counts(sp.csr_matrix((np.ones(windows.size, dtype=np.int32), windows, indptr), shape=(R, int(w1 - w0))))
    return total_win


def cooccurrence(terms, X=None, *, texts: Optional[Sequence] = None,
                 window_size: Optional[int] = None, topics=None) -> Cooccurrence:
    """Count the windows of a reference corpus that hold the terms ``terms`` and their pairs.

    Parameters
    ----------
    terms : array-like of int
        Vocabulary indices to count (duplicates are ignored).
    X : array-like or sparse of shape (n_docs, n_terms), optional
        Document-term counts: document co-occurrence (each row a window).
    texts : sequence of sequences of int, optional
        Instead of ``X``: each document's term indices in reading order.
        Without ``window_size`` each document is one window; with it,
        sliding windows of ``window_size`` tokens (see the module notes).
    window_size : int, optional
        Sliding-window length (``texts`` only), at least 1.
    topics : array-like of int, shape (K, n), optional
        Count only the pairs of terms within a topic (the pairs
        :func:`coherence_from_counts` reads for these topics, or for any of
        them) and each term's ``D(w)``: ``joint`` is then a sparse matrix
        of about ``K n^2 + R`` entries instead of a dense ``R x R`` one (for
        the topics of a whole network, R is in the tens of thousands and a
        dense ``joint`` takes gigabytes).  Every term of ``topics`` must be
        in ``terms``.  The counts are the same.

    Returns
    -------
    Cooccurrence
    """
    terms = np.unique(np.asarray(terms, dtype=np.int64).ravel())
    if (X is None) == (texts is None):
        raise ValueError("give the reference corpus as exactly one of X (counts) and texts (token lists)")
    R = terms.size
    wanted = None
    if topics is not None:
        topics = check_topics(topics)
        pos, found = _lookup(terms, topics)
        if not found.all():
            raise ValueError("topics holds a term that is not in terms")
        # the keys i * R + j of the counted pairs: every ordered pair within a topic, and the diagonal
        wanted = np.unique(np.concatenate([(pos[:, :, None] * R + pos[:, None, :]).ravel(),
                                           np.arange(R, dtype=np.int64) * (R + 1)]))
    if X is not None:
        if window_size is not None:
            raise ValueError(f"window_size needs texts (token order); X gives document co-occurrence, "
                             f"got window_size={window_size!r}")
        M = as_csr(X, "X")
        if M.data.size and (M.data < 0).any():
            raise ValueError(f"X must hold nonnegative counts, found {M.data[M.data < 0][0]:g}")
        if R and terms[-1] >= M.shape[1]:
            raise ValueError(f"the topics use term {terms[-1]} but X has {M.shape[1]} columns")
        B = (M[:, terms] > 0).astype(np.int64)
        joint = np.zeros((R, R) if wanted is None else wanted.size, dtype=np.int64)
        _add_products(joint, B.T.tocsr(), B, wanted, R)
        if wanted is not None:
            joint = _sparse_joint(wanted, joint, R)
        return Cooccurrence(terms=terms, n_windows=int(M.shape[0]), joint=joint)
    if window_size is not None and (isinstance(window_size, bool) or not isinstance(
            window_size, (int, np.integer)) or window_size < 1):
        raise ValueError(f"window_size must be a positive integer, got {window_size!r}")
    joint = np.zeros((R, R) if wanted is None else wanted.size, dtype=np.int64)
    n_windows = _window_blocks(texts, terms, window_size,
                               lambda Bt: _add_products(joint, Bt, Bt.T.tocsr(), wanted, R))
    if wanted is not None:
        joint = _sparse_joint(wanted, joint, R)
    return Cooccurrence(terms=terms, n_windows=n_windows, joint=joint)


def _lookup(keys: np.ndarray, queries: np.ndarray):
    """``(at, found)``: where each of ``queries`` is in the sorted ``keys`` (an index into
    ``keys``, meaningful where ``found``), and whether it is there."""
    at = np.minimum(np.searchsorted(keys, queries), max(keys.size - 1, 0))
    found = keys[at] == queries if keys.size else np.zeros(np.shape(queries), dtype=bool)
    return at, found


#: entries of the (rows x R) block products of :func:`_add_products` (bounds their memory)
_BLOCK_ENTRIES = 1 << 22


def _add_products(out: np.ndarray, Bt, B, wanted: Optional[np.ndarray], R: int) -> None:
    """Add ``B.T @ B`` (``B``: a 0/1 CSR windows x R matrix, ``Bt``: its transpose as CSR)
    to ``out``: to the dense (R, R) ``out`` when ``wanted`` is None, else its entries at
    the sorted keys ``wanted = i * R + j`` to ``out`` (one per key).  By blocks of rows i
    (each block product has at most ``_BLOCK_ENTRIES`` entries), never all R x R at once."""
    step = max(1, _BLOCK_ENTRIES // max(R, 1))
    for a0 in range(0, R, step):
        a1 = min(R, a0 + step)
        S = (Bt[a0:a1] @ B).tocsr()
        if wanted is not None:
            S.sort_indices()
        keys = np.repeat(np.arange(a0, a1, dtype=np.int64), np.diff(S.indptr)) * R + S.indices
        if wanted is None:
            out.reshape(-1)[keys] += S.data       # a product has one entry per (row, column)
            continue
        lo, hi = np.searchsorted(wanted, [a0 * R, a1 * R])     # never empty: the diagonal is wanted
        if keys.size == 0:
            continue
        at, hit = _lookup(keys, wanted[lo:hi])
        out[lo:hi][hit] += S.data[at[hit]]


def _sparse_joint(wanted: np.ndarray, values: np.ndarray, R: int) -> sp.csr_matrix:
    """The (R, R) CSR matrix holding ``values`` at the sorted keys ``wanted`` (zeros kept)."""
    rows, cols = np.divmod(wanted, R)
    indptr = np.zeros(R + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=R), out=indptr[1:])
    return sp.csr_matrix((values, cols, indptr), shape=(R, R))


def _pmi(joint: np.ndarray, occ: np.ndarray, n: int, normalize: bool, eps: float) -> np.ndarray:
    """PMI (or NPMI) of every pair of a topic's terms from their window counts (0 where undefined)."""
    p_joint = joint / n + eps
    p = occ / n
    prod = np.outer(p, p)
    out = np.zeros(joint.shape)
    ok = prod > 0
    out[ok] = np.log(p_joint[ok] / prod[ok])
    if normalize:
        out[ok] /= -np.log(p_joint[ok])
    return out


def _topic_coherence(block: np.ndarray, n_windows: int, measure: str, eps: float) -> float:
    """A topic's coherence from ``block``, the window counts ``D(w_i, w_j)`` of its terms."""
    joint = block.astype(np.float64)
    occ = np.diagonal(joint).copy()
    n = float(n_windows)
    k = block.shape[0]
    if measure == "u_mass":
        i, j = np.tril_indices(k, -1)          # pairs (w_i, w_j) with j < i: conditioned on w_j
        vals = np.zeros(i.size)
        ok = occ[j] > 0
        vals[ok] = np.log((joint[i[ok], j[ok]] / n + eps) / (occ[j[ok]] / n))
        return float(np.mean(vals))
    npmi = _pmi(joint, occ, n_windows, measure != "c_uci", eps)
    if measure in ("c_uci", "c_npmi"):
        off = ~np.eye(k, dtype=bool)
        return float(np.mean(npmi[off]))
    total = npmi.sum(axis=0)                   # c_v: each v_i against v = sum_i v_i
    norms = np.sqrt((npmi ** 2).sum(axis=1)) * np.sqrt((total ** 2).sum())
    cos = np.zeros(k)
    ok = norms > 0
    cos[ok] = (npmi @ total)[ok] / norms[ok]
    return float(np.mean(cos))


def coherence(topics, X=None, *, measure: str = "c_v", texts: Optional[Sequence] = None,
              window_size: Optional[int] = None, eps: float = EPSILON) -> np.ndarray:
    """Coherence of each topic on a reference corpus (see the module notes for the formulas).

    Parameters
    ----------
    topics : array-like of int, shape (K, n)
        Each topic's top-n term indices, most probable first (the order
        matters for ``"u_mass"`` only).
    X : array-like or sparse of shape (n_docs, n_terms), optional
        Reference counts in the topics' vocabulary: document co-occurrence.
    measure : {"c_v", "u_mass", "c_uci", "c_npmi"}, default="c_v"
    texts : sequence of sequences of int, optional
        Instead of ``X``: the documents as term-index sequences in reading
        order, for sliding windows (``"u_mass"`` always uses whole documents).
    window_size : int, optional
        Sliding-window length with ``texts`` (default: 10 for ``c_uci`` and
        ``c_npmi``, 110 for ``c_v``, as gensim).  With ``texts`` and
        ``window_size`` at least the longest document, every document is one
        window (document co-occurrence).
    eps : float in (0, 1), default=1e-12
        Added to the joint probabilities inside the logarithms (positive:
        a pair that never co-occurs scores ``log(eps / ...)``, finite).

    Returns
    -------
    ndarray of shape (K,)
        One value per topic (their mean is the usual model-level figure).
        Higher is more coherent; UMass and PMI are at most 0 and about 0
        respectively for unrelated terms, NPMI lies in [-1, 1], C_V in [-1, 1].
    """
    topics = check_topics(topics)
    counts = cooccurrence(topics, X, texts=texts, window_size=window_for(measure, texts, window_size),
                          topics=topics)
    return coherence_from_counts(topics, counts, measure, eps)


def window_for(measure: str, texts, window_size: Optional[int]) -> Optional[int]:
    """The window :func:`coherence` uses: none for ``"u_mass"`` or without ``texts``,
    else ``window_size`` or the measure's default (:data:`DEFAULT_WINDOWS`)."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    if texts is None:
        return window_size          # cooccurrence refuses a window without texts
    if measure == "u_mass":
        return None
    return DEFAULT_WINDOWS[measure] if window_size is None else window_size


def coherence_from_counts(topics, counts: Cooccurrence, measure: str = "c_v", eps: float = EPSILON) -> np.ndarray:
    """:func:`coherence` from window counts already made (:func:`cooccurrence` of a set
    of terms that holds every topic's, with ``topics=`` topics that include these to
    count only their pairs), e.g. to score several layers with one count.

    ``measure`` and ``eps`` (a number in (0, 1), numpy scalars included) as for
    :func:`coherence`; raises ValueError naming the bad argument."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    if (isinstance(eps, (bool, np.bool_)) or not isinstance(eps, (int, float, np.integer, np.floating))
            or not 0 < eps < 1):
        # eps = 0 would give log(0) = -inf (NaN for NPMI and C_V) for a pair that never co-occurs
        raise ValueError(f"eps must be a number in (0, 1) (it keeps log(P(w_i, w_j) + eps) finite "
                         f"for pairs that never co-occur), got {eps!r}")
    topics = check_topics(topics)
    if not np.isin(topics, counts.terms).all():
        raise ValueError("counts does not hold every term of the topics")
    if counts.n_windows == 0:
        raise ValueError("the reference corpus has no document")
    blocks = counts.blocks(topics)
    return np.array([_topic_coherence(b, counts.n_windows, measure, float(eps)) for b in blocks])


def diversity(topics) -> float:
    """Topic diversity: the share of unique terms among all topics' top-n terms.

    ``|union of the topics' top terms| / (K n)`` (Dieng, Ruiz & Blei, TACL
    2020): 1 when no two topics share a top term, ``1/K`` when all topics
    have the same ones.

    Parameters
    ----------
    topics : array-like of int, shape (K, n)

    Returns
    -------
    float
    """
    topics = check_topics(topics)
    return float(np.unique(topics).size / topics.size)
