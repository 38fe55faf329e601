"""The token-level state of the collapsed layer-one sampler (paper eq:z).

With Phi^(1) and theta^(1) integrated out, layer one of a count model is the
factor label ``z`` of every token plus the counts those labels imply.
:class:`CollapsedState` holds both, builds the counts from the labels, keeps
them consistent when factors are pruned and runs the kernel
:func:`pygbn.inference._collapsed.collapsed_sweep` on them.

Memory (N tokens, J documents, V terms, K factors): the labels take 2 bytes
a token (4 when K > 32767); the tokens' terms are not stored, the data's own
CSR arrays say them.  ``n_jk`` is one (J, K) array of 2 bytes an entry (4 when
a document holds more than 65535 tokens), ``n_vk`` a dense (V, K) int32
array, and the term-topic lists 8 bytes per slot (``min(K, tokens of the
term)`` slots a term).
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import scipy.sparse as sp

from pygbn.inference import _collapsed, _upper
from pygbn.inference.layer_one import CHUNK_BLOCKS

__all__ = ["CollapsedState", "TokenLabels", "initial_labels", "token_arrays"]

#: the kernel's token offsets and the label count are bounded by int32 (n_vk is int32)
_MAX_TOKENS = 2**31 - 1
#: largest K whose labels and list positions fit int16
_MAX_SMALL_K = 2**15 - 1
#: largest document whose n_jk fit uint16
_MAX_SMALL_DOC = 2**16 - 1


def label_dtype(n_components: int) -> np.dtype:
    """dtype of the labels (and list positions) for K factors: int16 when K <= 32767."""
    return np.dtype(np.int16 if n_components <= _MAX_SMALL_K else np.int32)


def doc_count_dtype(max_doc_tokens: int) -> np.dtype:
    """dtype of ``n_jk`` when no document holds more than ``max_doc_tokens`` tokens:
    uint8 up to 255, uint16 up to 65535, else int32."""
    if max_doc_tokens <= np.iinfo(np.uint8).max:
        return np.dtype(np.uint8)
    return np.dtype(np.uint16 if max_doc_tokens <= _MAX_SMALL_DOC else np.int32)


def token_arrays(Y: sp.csr_matrix, arrays=None):
    """``arrays`` (the caller's ``(indptr, indices, values)`` kernel arrays of ``Y``)
    or those arrays made from ``Y``: int64, int32, float64."""
    if arrays is not None:
        return arrays
    return (Y.indptr.astype(np.int64), Y.indices.astype(np.int32, copy=False),
            Y.data.astype(np.float64, copy=False))


def check_token_count(n_tokens, method: str) -> int:
    """``n_tokens`` as an int, or ValueError (naming ``method``) when the token-level
    states cannot hold that many tokens (2**31 - 1 or more)."""
    if n_tokens >= _MAX_TOKENS:
        raise ValueError(
            f"X holds {int(n_tokens)} tokens, too many for method={method!r} "
            "(token-level labels); use method='blocked'"
        )
    return int(n_tokens)


def initial_labels(values: np.ndarray, n_components: int, labels: Optional[np.ndarray],
                   rng: Optional[np.random.Generator], method: str) -> np.ndarray:
    """The tokens' labels: ``labels`` checked against the token count of the
    data ``values`` (CSR values), or drawn uniformly from ``rng``.  ValueError
    (naming ``method``) when there are too many tokens or ``labels`` does not fit."""
    n_tokens = check_token_count(values.sum(), method)
    K = int(n_components)
    if labels is None:
        return rng.integers(0, K, size=n_tokens, dtype=label_dtype(K))
    labels = np.asarray(labels)
    if labels.shape != (n_tokens,):
        raise ValueError(f"labels must hold one label per token ({n_tokens}), got shape {labels.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= K):
        raise ValueError(f"labels must lie in [0, {K}), got [{labels.min()}, {labels.max()}]")
    return labels


class TokenLabels:
    """The tokens of CSR data and one factor label each: the layout both
    token-level layer-one states (:class:`CollapsedState`,
    :class:`pygbn.inference.partial.PartialState`) build on.

    The tokens of document j are its stored cells in CSR order, ``values[c]``
    tokens of term ``indices[c]`` for cell ``c``; ``labels[doc_ptr[j]:doc_ptr[j + 1]]``
    are its labels (int16 when K <= 32767), ``term_tokens[v]`` the tokens of
    term v and ``max_doc_tokens`` the longest document's.
    """

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
                 labels: np.ndarray, n_terms: int, n_components: int):
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(indices, dtype=np.int32)
        self.values = np.ascontiguousarray(values, dtype=np.float64)
        self.n_terms = int(n_terms)
        self.n_components = int(n_components)
        self.doc_ptr = np.empty(self.indptr.size, dtype=np.int64)
        self.term_tokens = np.empty(self.n_terms, dtype=np.int64)
        self.max_doc_tokens = _collapsed.token_layout(self.indptr, self.indices, self.values,
                                                      self.doc_ptr, self.term_tokens)
        self.labels = np.ascontiguousarray(labels, dtype=label_dtype(self.n_components))


class CollapsedState(TokenLabels):
    """Factor labels of the tokens and the counts of the collapsed sampler.

    Build it with :meth:`from_counts`.  The counts are derived from the
    labels (:meth:`rebuild`); :meth:`sweep` updates labels and counts
    together.  The tokens of document j are its stored cells in CSR order,
    ``Y[j, v]`` tokens of term v one after another.

    Attributes
    ----------
    indptr, indices, values : ndarray
        The data (documents x terms) as canonical CSR arrays: int64 row
        pointers, int32 term indices and float64 integral counts (shared with
        the sampler, not copied).
    labels : ndarray of int16 or int32, shape (n_tokens,)
        The factor ``z`` of each token (int16 when K <= 32767).
    doc_ptr : ndarray of int64, shape (n_docs + 1,)
        Labels of document j are ``labels[doc_ptr[j]:doc_ptr[j + 1]]``.
    term_counts : ndarray of int32, shape (n_terms, K)
        ``n_vk``, tokens of term v labelled k (layer one's ``counts``).
    totals : ndarray of int64, shape (K,)
        ``n_.k``.
    doc_counts : ndarray of uint8, uint16 or int32, shape (n_docs, K)
        ``n_jk``, tokens of document j labelled k (the sampler's ``m[0]``;
        uint8 / uint16 when no document holds more than 255 / 65535 tokens).
    word_ptr, word_lists, word_len, word_dense : ndarray
        The kernel's sorted per-term lists of the non-zero ``n_vk``, kept for
        the terms that use few factors (``word_dense[v] = 0``).
    """

    #: default of ``dense_from`` (-1: the kernel's, ``ceil(K / 3)``)
    DENSE_FROM = -1

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
                 labels: np.ndarray, n_terms: int, n_components: int,
                 dense_from: Optional[int] = None):
        self.dense_from = int(self.DENSE_FROM if dense_from is None else dense_from)
        super().__init__(indptr, indices, values, labels, n_terms, n_components)
        # room for min(K, tokens of the term) topics per term
        self.word_ptr = np.zeros(self.n_terms + 1, dtype=np.int64)
        np.cumsum(np.minimum(self.term_tokens, self.n_components), out=self.word_ptr[1:])
        self.term_counts = np.empty((self.n_terms, self.n_components), dtype=np.int32)
        self.rebuild()

    @classmethod
    def from_counts(cls, Y: sp.csr_matrix, n_components: int, labels: Optional[np.ndarray] = None,
                    rng: Optional[np.random.Generator] = None, *, arrays=None,
                    dense_from: Optional[int] = None) -> "CollapsedState":
        """The tokens of the counts ``Y`` (documents x terms, canonical CSR).

        ``labels`` gives each token's factor (tokens in CSR order); without
        it the labels are drawn uniformly from ``rng`` (the authors'
        initialisation).  ``arrays`` are the ``(indptr, indices, values)``
        kernel arrays of ``Y`` when the caller already holds them.
        ``dense_from`` is the kernel's switch between a term's list and its
        dense row (see :func:`pygbn.inference._collapsed.collapsed_sweep`;
        any value samples the same distribution; default :attr:`DENSE_FROM`).

        Raises
        ------
        ValueError
            If ``Y`` holds too many tokens for the collapsed sampler, or
            ``labels`` has the wrong length or a label outside ``[0, K)``.
        """
        indptr, indices, values = token_arrays(Y, arrays)
        labels = initial_labels(values, n_components, labels, rng, "collapsed")
        return cls(indptr, indices, values, labels, Y.shape[1], int(n_components), dense_from)

    @property
    def n_docs(self) -> int:
        return self.doc_ptr.size - 1

    @property
    def n_tokens(self) -> int:
        return int(self.doc_ptr[-1])

    def rebuild(self) -> None:
        """Recount ``term_counts``, ``totals``, ``doc_counts`` and the word lists from the labels."""
        K, V, J = self.n_components, self.n_terms, self.n_docs
        self.totals = np.zeros(K, dtype=np.int64)
        self.doc_counts = np.empty((J, K), dtype=doc_count_dtype(self.max_doc_tokens))
        if self.term_counts.shape != (V, K):
            self.term_counts = np.empty((V, K), dtype=np.int32)
        _collapsed.count_labels(self.indptr, self.indices, self.values, self.labels,
                                self.term_counts, self.doc_counts, self.totals)
        self.word_lists = np.empty(2 * int(self.word_ptr[-1]), dtype=np.int32)
        self.word_len = np.zeros(V, dtype=np.int32)
        self.word_dense = np.zeros(V, dtype=np.uint8)
        _collapsed.build_word_lists(self.term_counts, self.word_ptr, self.word_lists, self.word_len,
                                    self.word_dense, self.dense_from)

    def keep(self, keep: np.ndarray) -> None:
        """Drop the factors where the boolean mask ``keep`` is False (no token may carry them)
        and renumber the others in order; the counts are rebuilt."""
        new_index = (np.cumsum(keep) - 1).astype(np.int64)
        _collapsed.relabel(self.labels, new_index)
        self.n_components = int(np.count_nonzero(keep))
        np.cumsum(np.minimum(self.term_tokens, self.n_components), out=self.word_ptr[1:])
        dt = label_dtype(self.n_components)
        if self.labels.dtype != dt:
            self.labels = self.labels.astype(dt)
        self.term_counts = np.empty((self.n_terms, self.n_components), dtype=np.int32)
        self.rebuild()

    def sweep(self, prior: np.ndarray, eta: float, rng: np.random.Generator, first: int = 0,
              stop: Optional[int] = None, **options) -> None:
        """Relabel the tokens of documents ``first:stop`` (default: all) from
        eq:z, in order (see :func:`pygbn.inference._collapsed.collapsed_sweep`).

        ``prior`` holds the documents' prior ``a_jk``: one shared row, or one
        row per swept document; the draws come from ``rng``.  ``term_counts``
        and the other counts stay consistent with the labels.  ``options`` go
        to the kernel (``refresh``).
        """
        stop = self.n_docs if stop is None else stop
        _collapsed.collapsed_sweep(self.indptr, self.indices, self.values, self.doc_ptr, self.labels,
                                   first, stop, self.totals, self.doc_counts, self.term_counts,
                                   self.word_ptr, self.word_lists, self.word_len, self.word_dense,
                                   prior, float(eta), rng.bit_generator,
                                   dense_from=self.dense_from, **options)

    def sweep_blocks(self, theta_up: np.ndarray, phi_up: np.ndarray, bounds: np.ndarray, eta: float,
                     rng: np.random.Generator) -> None:
        """A sweep of all documents (:meth:`sweep`) under the prior
        ``a_j = theta_up[j] @ phi_up.T`` (floored positive), made for a few
        document blocks (``bounds``) at a time, no (J, K) array.

        The rows come from :func:`pygbn.inference._upper.doc_prior`: pygbn's
        own product kernel, on the calling thread (one
        ``np.matmul`` per block woke OpenBLAS's worker threads, whose
        busy-waiting between the calls took the CPU from this serial sweep:
        3-6x its time at T >= 2 on two cores).
        """
        step = CHUNK_BLOCKS
        longest = int(np.max(np.diff(bounds))) if len(bounds) > 1 else 0
        buf = np.empty((min(self.n_docs, step * longest), self.n_components))
        theta_up = np.ascontiguousarray(theta_up)
        phi_up = np.ascontiguousarray(phi_up)
        for c in range(0, len(bounds) - 1, step):
            b = np.ascontiguousarray(bounds[c:c + step + 1], dtype=np.int64)
            lo, hi = int(b[0]), int(b[-1])
            prior = buf[:hi - lo]
            _upper.doc_prior(theta_up, phi_up, b, prior, 1)
            self.sweep(prior, eta, rng, lo, hi)

    def check(self) -> None:
        """Raise AssertionError if labels or totals are inconsistent (debug checks)."""
        z, K = self.labels, self.n_components
        if z.size and (z.min() < 0 or z.max() >= K):
            raise AssertionError("collapsed labels out of range")
        if not np.array_equal(self.totals, self.term_counts.sum(axis=0)):
            raise AssertionError("collapsed topic totals inconsistent")
        if not np.array_equal(self.totals, self.doc_counts.sum(axis=0)):
            raise AssertionError("collapsed document-topic counts inconsistent")
