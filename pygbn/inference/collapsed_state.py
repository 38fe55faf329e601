"""The token-level state of the collapsed layer-one sampler (paper eq:z).

With Phi^(1) and theta^(1) integrated out, layer one of a count model is the
factor label ``z`` of every token plus the counts those labels imply.
:class:`CollapsedState` holds both, builds the counts from the labels, keeps
them consistent when factors are pruned and runs the kernel
:func:`pygbn.inference._collapsed.collapsed_sweep` on them.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import scipy.sparse as sp

from pygbn.inference import _collapsed

__all__ = ["CollapsedState"]

#: the labels are int32 (so are the kernel's token indices)
_MAX_TOKENS = 2**31 - 1


class CollapsedState:
    """Tokens, their factor labels and the counts of the collapsed sampler.

    Build it with :meth:`from_counts`.  The counts are derived from the
    labels (:meth:`rebuild`); :meth:`sweep` updates labels and counts
    together.

    Attributes
    ----------
    words : ndarray of int32, shape (n_tokens,)
        The term of each token; tokens are grouped by document, in CSR order.
    labels : ndarray of int32, shape (n_tokens,)
        The factor ``z`` of each token.
    doc_ptr : ndarray of int64, shape (n_docs + 1,)
        Tokens of document j are ``doc_ptr[j]:doc_ptr[j + 1]``.
    term_counts : ndarray of int64, shape (n_terms, K)
        ``n_vk``, tokens of term v labelled k (layer one's ``counts``).
    totals : ndarray of int64, shape (K,)
        ``n_.k``.
    doc_counts : ndarray of int64, shape (n_docs, K)
        ``n_jk``, tokens of document j labelled k (the sampler's ``m[0]``).
    word_lists, word_len, word_pos : ndarray of int32
        The kernel's sparse per-term lists of the non-zero ``n_vk``.
    """

    def __init__(self, words: np.ndarray, labels: np.ndarray, doc_ptr: np.ndarray, n_terms: int,
                 n_components: int):
        self.words = words
        self.labels = np.ascontiguousarray(labels, dtype=np.int32)
        self.doc_ptr = doc_ptr
        self.n_terms = int(n_terms)
        self.n_components = int(n_components)
        self.rebuild()

    @classmethod
    def from_counts(cls, Y: sp.csr_matrix, n_components: int, labels: Optional[np.ndarray] = None,
                    rng: Optional[np.random.Generator] = None) -> "CollapsedState":
        """Expand the counts ``Y`` (documents x terms, canonical CSR) into tokens.

        ``labels`` gives each token's factor (tokens in CSR order); without
        it the labels are drawn uniformly from ``rng`` (the authors'
        initialisation).

        Raises
        ------
        ValueError
            If ``Y`` holds too many tokens for int32 labels.
        """
        counts = Y.data.astype(np.int64)
        n_tokens = int(counts.sum())
        if n_tokens >= _MAX_TOKENS:
            raise ValueError(
                f"X holds {n_tokens} tokens, too many for method='collapsed' "
                "(token-level labels); use method='blocked'"
            )
        K = int(n_components)
        words = np.repeat(Y.indices.astype(np.int32), counts)
        cum = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        doc_ptr = np.ascontiguousarray(cum[Y.indptr], dtype=np.int64)
        if labels is None:
            labels = rng.integers(0, K, size=n_tokens, dtype=np.int32)
        return cls(words, labels, doc_ptr, Y.shape[1], K)

    @property
    def n_docs(self) -> int:
        return self.doc_ptr.size - 1

    def rebuild(self) -> None:
        """Recount ``term_counts``, ``totals``, ``doc_counts`` and the word lists from the labels."""
        K, V, J = self.n_components, self.n_terms, self.n_docs
        z = self.labels
        doc_of = np.repeat(np.arange(J, dtype=np.int64), np.diff(self.doc_ptr))
        nwk = np.bincount(self.words.astype(np.int64) * K + z, minlength=V * K).reshape(V, K).astype(np.int64)
        self.doc_counts = np.bincount(doc_of * K + z, minlength=J * K).reshape(J, K).astype(np.int64)
        self.term_counts = nwk
        self.totals = nwk.sum(axis=0)
        self.word_lists = np.zeros((V, 2 * K), dtype=np.int32)
        self.word_len = np.zeros(V, dtype=np.int32)
        self.word_pos = np.zeros((V, K), dtype=np.int32)
        _collapsed.build_word_lists(nwk, self.word_lists, self.word_len, self.word_pos)

    def keep(self, keep: np.ndarray) -> None:
        """Drop the factors where the boolean mask ``keep`` is False (no token may carry them)
        and renumber the others in order; the counts are rebuilt."""
        new_index = np.cumsum(keep) - 1
        self.labels = new_index[self.labels].astype(np.int32)
        self.n_components = int(np.count_nonzero(keep))
        self.rebuild()

    def sweep(self, order: np.ndarray, prior: np.ndarray, eta: float, rng: np.random.Generator) -> None:
        """Relabel every token from eq:z, documents in ``order`` (see
        :func:`pygbn.inference._collapsed.collapsed_sweep`), then refresh ``term_counts``.

        ``prior`` holds the document prior ``a_jk`` (one shared row, or one
        row per document); the draws come from ``rng``.
        """
        _collapsed.collapsed_sweep(self.words, self.labels, self.doc_ptr, order, self.totals,
                                   self.doc_counts, self.word_lists, self.word_len, self.word_pos,
                                   prior, float(eta), rng.bit_generator)
        _collapsed.word_counts(self.word_lists, self.word_len, self.term_counts)

    def check(self) -> None:
        """Raise AssertionError if labels or totals are inconsistent (debug checks)."""
        z, K = self.labels, self.n_components
        if z.size and (z.min() < 0 or z.max() >= K):
            raise AssertionError("collapsed labels out of range")
        if not np.array_equal(self.totals, self.term_counts.sum(axis=0)):
            raise AssertionError("collapsed topic totals inconsistent")
