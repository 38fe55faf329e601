"""Layer one's blocked split in compact integer types, for every link, exactly.

For counts (the Poisson link) the types of ``m[0]`` and of the term-factor
counts ``x_{v.k}`` are proven from the data before the chain starts
(:func:`pygbn.inference.layer_one.count_dtype`, ``stat_dtype``).  The latent
counts of the Bernoulli-Poisson and PRG links are random and unbounded, so
their types are a starting guess, widened when a split outgrows them:

* ``m[0]`` starts in the type of the data's longest document
  (:func:`~pygbn.inference.layer_one.count_dtype`).  When the split reports
  documents whose latent total outgrew it, ``m[0]`` is widened
  (uint8 -> uint16 -> int32 -> int64, its values kept) and the rows of the
  blocks just split are drawn again from the blocks' stream states saved before
  the split (:func:`pygbn.inference._fixed.split_fixed`: the same draws, no
  term-factor counts, which were right already).
* ``x_{v.k}`` starts int32 (:func:`~pygbn.inference.layer_one.start_stat_dtype`).
  Every entry is at most the split's latent total, known after each chunk of
  blocks from its ``m[0]`` rows; once that total passes 2**31 - 1 the chunk's
  additions may have wrapped around, so the chunk is split again from its saved
  states into int64 counts ``D`` alone, and the counts become
  ``((x - D) mod 2**32) + D`` in int64 (before the chunk every entry was below
  2**31, so the difference is exact), int64 from then on.

* ``x_{v.k}`` of rare terms are slots (:class:`~pygbn.inference.term_counts.TermCounts`,
  sized by :func:`~pygbn.inference.term_counts.latent_slots`).  A count a
  term's slots cannot take goes to a spill row of the term during the split
  and the term's row is made dense after the chunk
  (:meth:`~pygbn.inference.term_counts.TermLayout.promote`), so nothing is
  drawn again.  Where the int32 counts must be widened the slots stay as they
  are (at most 65535 each) and only the dense rows are recovered as above.

Either way the redrawn values are the ones the wider type would have held from
the start, and the streams end where they would have: the chain is the int64
chain, draw for draw, whatever the types, the layout and the thread count.
"""
from __future__ import annotations

import logging

import numpy as np

from pygbn.inference import _blocked, _fixed
from pygbn.inference.layer_one import after_split
from pygbn.inference.term_counts import TermCounts, TermLayout, split_target
from pygbn.model.links import LATENT_COUNTS, MAX_COUNT_TOTAL

__all__ = ["WIDER", "widen_rows", "LayerOneSplit", "split_fixed_widening"]

#: the next type of ``m[0]`` when its latent totals outgrow it
WIDER = {np.dtype(np.uint8): np.dtype(np.uint16), np.dtype(np.uint16): np.dtype(np.int32),
         np.dtype(np.int32): np.dtype(np.int64)}
_INT32_MAX = np.iinfo(np.int32).max
logger = logging.getLogger("pygbn")


def _states(s, b0: int, b1: int) -> list:
    """The stream states of the sampler's document blocks ``b0:b1``."""
    return [g.bit_generator.state for g in s.doc_streams.generators[b0:b1]]


def _restore(s, b0: int, b1: int, states: list) -> None:
    for g, state in zip(s.doc_streams.generators[b0:b1], states):
        g.bit_generator.state = state


def widen_rows(s, b0: int, b1: int, states: list, redraw, over: int = 1) -> None:
    """Widen ``s.m[0]`` one type and call ``redraw()`` (which returns the number of
    documents still too long) from the restored ``states`` of blocks ``b0:b1``,
    until no document is (``over``: the split's count of them).  ValueError when
    ``m[0]`` is int64 already: a latent total past 2**63 - 1, or a latent count the
    kernel would draw from a clipped parameter
    (:c:func:`pygbn.model._latent.latent_count`), means data of a scale the chain
    cannot follow."""
    while over:
        if s.m[0].dtype not in WIDER:
            raise _too_large(s, f"outgrew 64-bit integers in {over} document(s)")
        s.m[0] = s.m[0].astype(WIDER[s.m[0].dtype])
        _restore(s, b0, b1, states)
        over = redraw()


def _too_large(s, what: str) -> ValueError:
    """The error of random latent counts (of chain ``s``) past what the samplers'
    64-bit counters hold: ``what`` says how."""
    top = float(s.values.max()) if s.values.size else 0.0
    return ValueError(f"layer one's latent counts of link={s.link.name!r} {what}: the data are too large "
                      f"for the chain (largest value {top:g}); rescale them, e.g. divide them by their mean")


def _latent_total(rows: np.ndarray) -> int:
    """The sum of the rows ``rows`` of ``m[0]``, exactly (each row's total is below
    2**63: split_sparse counts a document past it as too long)."""
    t = rows.sum(axis=1, dtype=np.int64)
    return (int((t >> 32).sum()) << 32) + int((t & 0xFFFFFFFF).sum())


class LayerOneSplit:
    """The blocked split of layer one (eq:step1 with the link's latent counts,
    eq:Ber-PGBN, eq:Gam-PGBN) over the documents of some blocks, a chunk of
    blocks at a time, into one set of term-factor counts shared by the threads.

    ``counts`` holds them (a dense array or a
    :class:`~pygbn.inference.term_counts.TermCounts`); ``total`` is the latent
    total split so far (random latent counts only).
    """

    def __init__(self, s):
        self.s = s
        self.layout = TermLayout.of_sampler(s)
        self.counts = self.layout.zeros(s.network.layers[0].width)
        self.widening = s.link.latent_mode != LATENT_COUNTS
        self.total = 0
        self.spill = self.layout.spill(self.counts)     # where a term's slots may run out
        self.tiny = _blocked.tiny_theta(s.network.layers[0].phi)    # once for the chunks

    def chunk(self, c0: int, c1: int, theta: np.ndarray) -> int:
        """Split the documents of blocks ``c0:c1`` with their theta^(1) rows
        ``theta`` (or one row shared by all); returns the number of documents whose
        latent total outgrew ``m[0]`` (0 for random latent counts: widened here)."""
        s = self.s
        lo, hi = int(s.bounds[c0]), int(s.bounds[c1])
        saved = _states(s, c0, c1) if self.widening else None

        def split(m_rows, counts):
            dense, kw = split_target(counts)
            spill = self.spill if isinstance(counts, TermCounts) else None     # cleared after each use
            if spill is not None:
                kw["spill"] = spill
            over = _blocked.split_sparse(s.indptr[lo:hi + 1], s.indices, s.values, s.network.layers[0].phi,
                                         theta, s.aux[lo:hi], int(s.link.latent_mode),
                                         s.bounds[c0:c1 + 1] - lo, s.doc_streams.addresses[c0:c1], m_rows,
                                         dense, np.empty(0, dtype=np.int64), s.n_threads, tiny=self.tiny, **kw)
            return over, (counts if spill is None or not spill[-1] else self._promote(counts, spill))

        over, self.counts = split(s.m[0][lo:hi], self.counts)
        if not self.widening:
            return over
        if over:
            widen_rows(s, c0, c1, saved, lambda: _fixed.split_fixed(
                s.indptr[lo:hi + 1], s.indices, s.values, s.network.layers[0].phi, theta, s.aux[lo:hi],
                int(s.link.latent_mode), s.bounds[c0:c1 + 1] - lo, s.doc_streams.addresses[c0:c1],
                s.m[0][lo:hi], s.n_threads, tiny=self.tiny), over)
        self.total += _latent_total(s.m[0][lo:hi])
        if self.total >= MAX_COUNT_TOTAL:       # the term-factor counts and the upper layers' hold it
            raise _too_large(s, "add up to 2**63 or more")
        if split_target(self.counts)[0].dtype == np.int32:
            if self.total > _INT32_MAX:            # every entry was below 2**31 before this chunk
                _restore(s, c0, c1, saved)
                self.layout.dtype = np.dtype(np.int64)      # from now on
                # the same rows again, and the chunk's counts alone (its slots, at most the
                # counts' own, never spill; nor do they wrap around: only the dense rows are mended)
                _, D = split(s.m[0][lo:hi], self.layout.zeros(self.counts.shape[1]))
                self.counts = _unwrap(self.counts, D)
        return 0

    def _promote(self, counts, spill: np.ndarray):
        new = self.layout.promote(counts, spill)
        logger.debug("layer one's split: %d term row(s) made dense (spilled slots)", int(self.layout.promoted.sum()))
        return new

    def run(self, b0: int, b1: int) -> object:
        """Split blocks ``b0:b1`` (theta^(1) drawn there when pending, else
        ``layers[0].theta``), then the overflow guard and the PRG link's a_j
        (:func:`~pygbn.inference.layer_one.after_split`); returns the counts."""
        s = self.s
        over = s._theta_one.split(s, b0, b1, self.chunk)       # theta^(1) pending: drawn there
        if over is None:
            theta = s.network.layers[0].theta
            lo, hi = int(s.bounds[b0]), int(s.bounds[b1])
            theta = theta[:1] if theta.strides[0] == 0 else theta[lo:hi]      # one shared row
            over = self.chunk(b0, b1, theta)
        after_split(s, over, np.ascontiguousarray(s.bounds[b0:b1 + 1]),
                    np.ascontiguousarray(s.doc_streams.addresses[b0:b1]))
        return self.counts


def _unwrap(counts, D):
    """The int64 counts whose chunk's part is ``D`` (int64) and which ``counts``
    held in int32, wrapped around (every entry below 2**31 before the chunk):
    ``((x - D) mod 2**32) + D``, on the dense rows of a
    :class:`~pygbn.inference.term_counts.TermCounts` (its slots are exact)."""
    if isinstance(counts, TermCounts):
        return TermCounts(_unwrap(counts.dense, D.dense), counts.row_map, counts.slot_start, counts.slots)
    return ((counts.astype(np.int64) - D) % (1 << 32)) + D


def split_fixed_widening(s, bounds: np.ndarray, streams: np.ndarray, theta: np.ndarray,
                         totals: np.ndarray) -> int:
    """:func:`pygbn.inference._fixed.split_fixed` of every document of the
    test-time chain ``s`` into ``m[0]`` (widened and redrawn from the saved
    stream states where a random latent total outgrew it); returns the kernel's
    count of documents too long (0 once widened)."""
    nb = len(s.bounds) - 1
    saved = _states(s, 0, nb) if s.link.latent_mode != LATENT_COUNTS else None

    def split():
        return _fixed.split_fixed(s.indptr, s.indices, s.values, s.network.layers[0].phi, theta, s.aux,
                                  int(s.link.latent_mode), bounds, streams, s.m[0], s.n_threads, totals)

    over = split()
    if over and saved is not None:
        widen_rows(s, 0, nb, saved, split, over)
        over = 0
    return over
