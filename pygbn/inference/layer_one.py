"""Layer one's data layout and the blocked sampler's lazily drawn theta^(1).

* :func:`kernel_csr` is the kernels' one view of the data (no copy where the
  types already match); :func:`count_dtype` the smallest integer type of
  layer one's per-document counts ``m[0]``, :func:`stat_dtype` that of the
  blocked split's term-factor counts.
* :func:`posterior_column_sums` and :func:`phi_from_labels`: the posterior
  mean of Phi^(1) (:meth:`pygbn.model.layer.Layer.posterior_mean_phi`) in
  parts, to the bit, without a (V, K) float64 array beside the counts.
* :class:`LazyThetaOne`: a blocked training chain does not keep theta^(1), a
  (J, K_1) float64 array, between iterations.  Each document block's rows are
  drawn from its own stream just before the block's split in the next sweep,
  with exactly the draws :meth:`GibbsSampler.sample_theta` would have made at
  the end of the previous one (eq:step4; nothing it depends on changes in
  between), so the chain is the same, draw for draw.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from pygbn.inference import _blocked, _upper
from pygbn.model.links import LATENT_COUNTS, Link

__all__ = ["kernel_csr", "count_dtype", "stat_dtype", "start_stat_dtype", "posterior_column_sums", "phi_from_labels",
           "after_split", "LazyThetaOne"]

#: document blocks per kernel call when rows are made for a few blocks at a time
#: (theta^(1) and the collapsed prior): a (32 x 128, K) buffer instead of (J, K)
CHUNK_BLOCKS = 32
#: document blocks per chunk of the blocked split with a pending theta^(1) on one thread
#: (8 per thread on several, for their balance): a (2 x 128, K) buffer, small beside the
#: (V, K) Phi^(1)
SPLIT_CHUNK_BLOCKS = 2
#: where a document block's theta^(1) is
HELD, PENDING, USED = 0, 1, 2


def kernel_csr(Y: sp.csr_matrix):
    """The kernels' view of ``Y``: int64 row pointers, int32 indices, float64
    values (the indices and values are ``Y``'s own arrays when their types
    already match: no copy)."""
    return (
        np.ascontiguousarray(Y.indptr, dtype=np.int64),
        np.ascontiguousarray(Y.indices, dtype=np.int32),
        np.ascontiguousarray(Y.data, dtype=np.float64),
    )


def count_dtype(link: Link, Y: sp.csr_matrix) -> np.dtype:
    """The smallest integer type of layer one's per-document counts ``m[0]``.

    For counts (the Poisson link) a document's latent counts add up to its
    total, known from the data: uint8 up to 255, uint16 up to 65535, int32 up
    to 2**31 - 1.
    The latent counts of the other links are random and unbounded (each stored
    cell's at least 1): the type their totals start in, from the longest
    document's ``sum(max(y, 1))``, widened when a split outgrows it
    (:mod:`pygbn.inference.latent_split`).
    """
    if Y.shape[0] == 0 or Y.nnz == 0:
        return np.dtype(np.int64)
    data = Y.data if link.latent_mode == LATENT_COUNTS else np.maximum(Y.data, 1.0)
    longest = float(np.max(np.add.reduceat(data, Y.indptr[:-1][np.diff(Y.indptr) > 0])))
    if longest <= np.iinfo(np.uint8).max:
        return np.dtype(np.uint8)
    if longest <= np.iinfo(np.uint16).max:
        return np.dtype(np.uint16)
    return np.dtype(np.int32 if longest <= np.iinfo(np.int32).max else np.int64)


def start_stat_dtype(link: Link, Y: sp.csr_matrix) -> np.dtype:
    """The type layer one's term-factor counts start in: :func:`stat_dtype`'s for
    counts; int32 for the random latent counts of the other links, widened to
    int64 when a split's latent total passes 2**31 - 1
    (:class:`pygbn.inference.latent_split.LayerOneSplit`)."""
    return stat_dtype(link, Y) if link.latent_mode == LATENT_COUNTS else np.dtype(np.int32)


def stat_dtype(link: Link, Y: sp.csr_matrix) -> np.dtype:
    """The integer type of layer one's term-factor counts ``x_{v.k}`` (the blocked
    split's shared statistics).

    For counts (the Poisson link) every entry is at most the data's total,
    known in advance: int32 when that total is at most 2**31 - 1 (a
    partition's total bounds its own sums; sums over partitions are formed in
    int64).  The latent counts of the other links are random and unbounded: int64
    (their counts start int32 and are widened when needed: :func:`start_stat_dtype`).
    """
    if link.latent_mode == LATENT_COUNTS and float(np.sum(Y.data)) <= np.iinfo(np.int32).max:
        return np.dtype(np.int32)
    return np.dtype(np.int64)


def posterior_column_sums(counts: np.ndarray, eta: float) -> np.ndarray:
    """``(eta + counts.astype(float64)).sum(axis=0)`` to the bit, without the
    (V, K) float64 array (the column sums of :meth:`Layer.posterior_mean_phi
    <pygbn.model.layer.Layer.posterior_mean_phi>`).

    numpy adds the rows of a C-ordered (V, K) array one after another when
    K >= 2 (:func:`pygbn.inference._blocked.column_sums` does the same) and
    sums a single column pairwise (done here by numpy on that column).
    """
    V, K = counts.shape
    if K == 1:
        return np.array([np.sum(counts[:, 0].astype(np.float64) + eta)])
    out = np.empty(K)
    if counts.dtype not in (np.int32, np.int64) or not counts.flags.c_contiguous:
        counts = np.ascontiguousarray(counts, dtype=np.int64)
    _blocked.column_sums(counts, float(eta), out)
    return out


def after_split(s, over: int, bounds: np.ndarray, streams: np.ndarray, totals=None) -> None:
    """What follows the blocked split of layer one (training or test-time chain ``s``):
    ``over``, the split's count of documents whose latent total outgrew ``m[0]``'s
    type, must be 0; then the PRG link's ``a_j`` of the documents of ``bounds``
    (eq:c_g, :meth:`Link.aux_conditional <pygbn.model.links.Link.aux_conditional>`),
    given the latent totals ``totals`` (``m[0].sum(axis=1)`` when None)."""
    if over:     # count_dtype's bound is a proof: a wrong m[0] was set from outside
        raise OverflowError(f"{over} document(s) hold more latent counts than m[0] ({s.m[0].dtype}) holds")
    if s.aux.size:
        shape, rate = s.link.aux_conditional(s.Y, s.m[0].sum(axis=1) if totals is None else totals, s.hyper)
        _blocked.sample_gamma_per_sample(np.ascontiguousarray(shape), np.ascontiguousarray(rate),
                                         bounds, streams, s.aux, s.n_threads)


#: tokens per chunk of :func:`phi_from_labels`
_LABEL_CHUNK = 1 << 18


def phi_from_labels(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, doc_ptr: np.ndarray,
                    labels: np.ndarray, n_terms: int, n_components: int, eta: float) -> np.ndarray:
    """The posterior mean of a collapsed Phi^(1), ``(eta + n_vk) / sum_v (eta + n_vk)``,
    from the token labels.

    The same array as ``Layer(counts=n_vk).posterior_mean_phi()`` (the counts
    are whole numbers, exact in float64, and the sums are formed alike),
    counted straight into the float64 result a chunk of documents at a time,
    so that the int32 ``n_vk`` need not be held beside it.  The tokens of
    document j are its CSR cells in order, ``values[c]`` tokens of term
    ``indices[c]``, labelled ``labels[doc_ptr[j]:doc_ptr[j + 1]]``.
    """
    K = int(n_components)
    phi = np.zeros((int(n_terms), K))
    flat = phi.reshape(-1)
    J = doc_ptr.size - 1
    lo = 0
    while lo < J:
        hi = int(np.searchsorted(doc_ptr, doc_ptr[lo] + _LABEL_CHUNK, side="right")) - 1
        hi = min(max(hi, lo + 1), J)
        c0, c1 = int(indptr[lo]), int(indptr[hi])
        terms = np.repeat(indices[c0:c1].astype(np.int64), values[c0:c1].astype(np.int64))
        terms *= K
        terms += labels[doc_ptr[lo]:doc_ptr[hi]]
        np.add.at(flat, terms, 1.0)
        lo = hi
    phi += eta
    phi /= phi.sum(axis=0, keepdims=True)
    return phi


class LazyThetaOne:
    """Where each document block's theta^(1) is: ``HELD`` in ``layers[0].theta``,
    ``PENDING`` (to be drawn by the next split) or ``USED`` (drawn and used by
    this iteration's split, until the downward half makes it pending again).

    The methods take the :class:`~pygbn.inference.gibbs.GibbsSampler` whose
    state they read.
    """

    def __init__(self, n_blocks: int):
        self.state = np.full(max(1, n_blocks), HELD, dtype=np.int8)

    def held_anywhere(self) -> bool:
        return bool((self.state == HELD).any())

    def mark_pending(self, s, b0: int, b1: int) -> None:
        """Blocks ``b0:b1`` have had their upper layers drawn: theta^(1) is due;
        ``layers[0].theta`` is dropped once no block holds it."""
        self.state[b0:b1] = PENDING
        if not self.held_anywhere():
            s.network.layers[0].theta = None

    def draw(self, s, b0: int, b1: int, out: np.ndarray) -> np.ndarray:
        """theta^(1) of the documents of blocks ``b0:b1`` into ``out`` (their rows),
        drawn from the blocks' streams exactly as ``sample_theta(1)`` draws it
        (eq:step4, :func:`pygbn.inference._upper.sample_theta`)."""
        lo, hi = int(s.bounds[b0]), int(s.bounds[b1])
        net = s.network
        rate = np.ascontiguousarray(net.layers[0].c[lo:hi] + 1.0)   # c^(2) + L^(1), L^(1) = 1
        if net.depth == 1:
            up_theta = up_phi = np.empty((0, 0))
            prior_row = np.ascontiguousarray(np.maximum(net.r, np.finfo(np.float64).tiny))
        else:
            up_theta, up_phi, prior_row = net.layers[1].theta[lo:hi], net.layers[1].phi, np.empty(0)
        _upper.sample_theta(up_theta, up_phi, prior_row, s.m[0][lo:hi], rate,
                            s.bounds[b0:b1 + 1] - lo, s.doc_streams.addresses[b0:b1], out,
                            np.empty(0), s.n_threads)
        return out

    def _check_not_used(self, b0: int, b1: int) -> None:
        if (self.state[b0:b1] == USED).any():
            raise RuntimeError(f"theta^(1) of document blocks {b0}:{b1} was used by this iteration's "
                               "split already; run local_downward first")

    def materialize(self, s) -> np.ndarray:
        """Draw the pending blocks' theta^(1) into ``layers[0].theta`` and return it."""
        self._check_not_used(0, self.state.size)
        layer = s.network.layers[0]
        todo = np.flatnonzero(self.state == PENDING)
        if todo.size:
            if layer.theta is None:
                layer.theta = np.empty((s.n_docs, layer.width))
            for b in todo:
                self.draw(s, b, b + 1, layer.theta[s.bounds[b]:s.bounds[b + 1]])
            self.state[:] = HELD
        return layer.theta

    def split(self, s, b0: int, b1: int, split_chunk):
        """The split of blocks ``b0:b1`` (eq:step1) with their pending theta^(1),
        drawn a chunk of blocks at a time just before the chunk's split (each
        block's stream: theta^(1)'s draws, then the split's), which is
        ``split_chunk(c0, c1, theta_rows)`` (returning the number of documents whose
        latent total outgrew ``m[0]``'s type:
        :meth:`pygbn.inference.latent_split.LayerOneSplit.chunk`).  Returns the sum
        of those numbers, or None, having drawn nothing, unless every block of the
        range is pending (the caller then splits with ``layers[0].theta``, made
        complete here)."""
        self._check_not_used(b0, b1)
        pending = self.state[b0:b1] == PENDING
        if not pending.all() or b1 <= b0:
            if pending.any():
                self.materialize(s)
            return None
        layer, nt = s.network.layers[0], s.n_threads
        step = SPLIT_CHUNK_BLOCKS if nt == 1 else 8 * nt
        longest_block = int(np.max(np.diff(s.bounds)))
        buf = np.empty((min(s.n_docs, step * longest_block), layer.width))
        over = 0
        for c0 in range(b0, b1, step):
            c1 = min(c0 + step, b1)
            lo, hi = int(s.bounds[c0]), int(s.bounds[c1])
            over += split_chunk(c0, c1, self.draw(s, c0, c1, buf[:hi - lo]))
        self.state[b0:b1] = USED
        return over
