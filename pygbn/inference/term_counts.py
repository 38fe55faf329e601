"""Layer one's term-factor counts ``x_{v.k}`` of the blocked split, stored by term.

The blocked split adds each cell's latent counts to its term's row of the
statistics of Phi^(1).  For counts (the Poisson link) a term with ``n_v``
tokens in the data has at most ``min(n_v, K)`` non-zero entries, each at most
``n_v``, both known before the split: :class:`TermCounts` keeps the rows of the
terms with ``4 n_v >= K`` dense (int32 where the data's total fits, else int64)
and the others as ``n_v`` slots of 4 bytes, ``(k + 1) << 16 | count``, filled in
the order the split meets their factors (:func:`pygbn.inference._blocked.split_sparse`).
So the statistics take about ``4 min(n_v, K)`` bytes a term where the corpus
is small beside V x K (rare terms), instead of ``4 K``.

The latent counts of the Bernoulli-Poisson and PRG links are random, so no
slot count is proven: their rare terms (``4 c_v < K`` for ``c_v`` stored cells)
get :func:`latent_slots` slots, a generous guess, and a count that finds no
room goes to a spill row of the term (:func:`pygbn.inference._blocked.split_sparse`),
which :meth:`TermLayout.promote` then makes a dense row, for the rest of the fit.

The counts are the same integers as a dense array's; every reader forms from
them exactly what it formed from the dense array (the Phi draw reads them in
place, :func:`draw_phi_columns`; the posterior mean, the sums and the wire
format from :meth:`TermCounts.toarray` or :meth:`TermCounts.nonzero_flat`).
The slots' order within a row depends on the threads; nothing reads it.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import scipy.sparse as sp

from pygbn.inference import _blocked
from pygbn.inference.layer_one import start_stat_dtype
from pygbn.model.links import LATENT_COUNTS, MAX_COUNT_TOTAL, Link

__all__ = ["TermLayout", "TermCounts", "draw_phi_columns", "take_columns", "sum_counts",
           "check_summed_total", "split_target", "latent_slots"]

#: slots of a sparse row: factor index + 1 in the high 16 bits, the count in the low 16
_SHIFT, _COUNT = 16, 0xFFFF
#: a term's row is dense when ``DENSE_FRACTION * n_v >= K`` (its slots would be a
#: quarter of a dense int32 row or more; the scan of a sparse row stays under K/4)
DENSE_FRACTION = 4
#: the largest K the slots' 16-bit factor field holds (k + 1 <= 65535)
MAX_SLOT_K = 65534
#: slots of a rare term's row of random latent counts: ``a c_v + b`` for ``c_v`` stored cells
LATENT_SLOTS = (2, 2)
#: stored cells counted per step of :func:`term_cells` (no int64 copy of all the indices)
_CELL_CHUNK = 1 << 18


def latent_slots(cells: np.ndarray, K: int) -> np.ndarray:
    """The slots of each rare term's row of random latent counts, from its
    number of stored cells (each holds a latent count of at least 1, so that
    many factors at least; more are possible and then spill,
    :meth:`TermLayout.promote`): ``LATENT_SLOTS[0] * cells + LATENT_SLOTS[1]``,
    at most ``K``, 0 for a term with no cell."""
    a, b = LATENT_SLOTS
    return np.where(cells > 0, np.minimum(a * cells + b, K), 0)


def term_cells(indices: np.ndarray, n_terms: int) -> np.ndarray:
    """The number of stored cells of each term (int64), counted a chunk at a time."""
    out = np.zeros(n_terms, dtype=np.int64)
    for c0 in range(0, indices.size, _CELL_CHUNK):
        out += np.bincount(indices[c0:c0 + _CELL_CHUNK], minlength=n_terms)
    return out


class TermLayout:
    """Which terms' rows are dense and where the other terms' slots are, per K.

    Built from the data's term totals (``n_v``) for counts, from the terms'
    stored cells for the other links (latent counts unbounded: the slots are
    :func:`latent_slots`, and the terms whose slots did not suffice are made
    dense, :meth:`promote`).  :meth:`zeros` is a plain array where every row
    is dense.
    """

    def __init__(self, link: Link, Y: sp.csr_matrix):
        totals = None
        indices = np.ascontiguousarray(Y.indices, dtype=np.int32)
        values = np.ascontiguousarray(Y.data, dtype=np.float64)
        if link.latent_mode == LATENT_COUNTS and Y.nnz:
            totals = np.zeros(Y.shape[1], dtype=np.int64)
            _blocked.term_totals(indices, values, totals)
        elif Y.nnz:
            totals = term_cells(indices, int(Y.shape[1]))
        self._set(totals, int(Y.shape[1]), start_stat_dtype(link, Y))
        self.latent = link.latent_mode != LATENT_COUNTS
        #: the data arrays the layout was made from (its slots are as many as their tokens)
        self.source = (indices, values)

    @classmethod
    def of_sampler(cls, s) -> "TermLayout":
        """The layout of sampler ``s``'s data, made again when ``s`` was given other
        data since (its ``indices`` or ``values`` arrays replaced, as the Geweke
        test does): the slots must be as many as the tokens of the data split."""
        layout = getattr(s, "_term_layout", None)
        if layout is None or layout.source[0] is not s.indices or layout.source[1] is not s.values:
            layout = s._term_layout = cls(s.link, s.Y)
            layout.source = (s.indices, s.values)
        return layout

    @classmethod
    def from_totals(cls, totals: np.ndarray, dtype=np.int32) -> "TermLayout":
        """The layout of counts of tokens whose terms have ``totals`` tokens, dense
        rows of ``dtype`` (the token-level layer one: :mod:`pygbn.inference.partial`)."""
        layout = cls.__new__(cls)
        layout._set(np.asarray(totals, dtype=np.int64), int(np.size(totals)), np.dtype(dtype))
        layout.source = (None, None)
        layout.latent = False
        return layout

    def _set(self, totals: Optional[np.ndarray], n_terms: int, dtype) -> None:
        self.totals, self.n_terms, self.dtype = totals, n_terms, np.dtype(dtype)
        self._key: Optional[int] = None
        self._arrays: tuple = ()
        #: terms made dense for random latent counts (:meth:`promote`), and how often
        self.promoted = np.zeros(n_terms, dtype=bool)
        self.promotions = 0

    def arrays(self, K: int):
        """``(row_map, slot_start, n_dense)`` for ``K`` factors, or None where every row
        is dense (another link, K above :data:`MAX_SLOT_K`, or no sparse term)."""
        if self.totals is None or K > MAX_SLOT_K:
            return None
        if self._key != K:
            if self.latent:
                sparse = (DENSE_FRACTION * self.totals < K) & ~self.promoted
                sizes = latent_slots(self.totals, K)
            else:
                sparse = (DENSE_FRACTION * self.totals < K) & (self.totals <= _COUNT)
                sizes = self.totals
            if not sparse.any():
                self._key, self._arrays = K, None
                return None
            row_map = np.full(self.n_terms, -1, dtype=np.int32)
            dense = np.flatnonzero(~sparse)
            row_map[dense] = np.arange(dense.size, dtype=np.int32)
            slot_start = np.zeros(self.n_terms + 1, dtype=np.int64)
            np.cumsum(np.where(sparse, sizes, 0), out=slot_start[1:])
            self._key, self._arrays = K, (row_map, slot_start, dense.size)
        return self._arrays

    def spill(self, counts) -> Optional[np.ndarray]:
        """The spill addresses of :func:`pygbn.inference._blocked.split_sparse` for
        ``counts`` (V + 1 zeros), or None where they cannot spill (proven slots
        of counts, or no slots)."""
        if not self.latent or not isinstance(counts, TermCounts):
            return None
        return np.zeros(self.n_terms + 1, dtype=np.uintp)

    def promote(self, counts: "TermCounts", spill: np.ndarray):
        """The counts ``counts`` and the rows spilled by a split (``spill``, cleared
        here) in a layout where the terms that spilled are dense, for the rest of
        the fit: the same integers (dense rows wrap around as they would have)."""
        terms = np.flatnonzero(spill[:-1]).astype(np.int64)
        rows = np.empty((terms.size, counts.shape[1]), dtype=np.int64)
        _blocked.take_spill(spill, terms, rows)
        K = counts.shape[1]
        self.promoted[terms] = True
        self.promotions += 1
        self._key = None
        new = self.zeros(K)
        dense, new_map = (new, np.arange(self.n_terms)) if not isinstance(new, TermCounts) else (new.dense,
                                                                                                  new.row_map)
        old_dense = np.flatnonzero(counts.row_map >= 0)
        dense[new_map[old_dense]] = counts.dense[counts.row_map[old_dense]]
        t, f, c = counts.entries()
        now_dense = new_map[t] >= 0
        np.add.at(dense, (new_map[t[now_dense]], f[now_dense]), c[now_dense].astype(dense.dtype))
        dense[new_map[terms]] += rows.astype(dense.dtype)
        if isinstance(new, TermCounts):
            keep = ~now_dense
            new.slots[new.slot_start[t[keep]] + (np.flatnonzero(counts.slots)[keep] - counts.slot_start[t[keep]])] = \
                counts.slots[counts.slots != 0][keep]
        return new

    def zeros(self, K: int):
        """Empty statistics for ``K`` factors: a :class:`TermCounts`, or a dense
        (V, K) array of the statistics' type where every row is dense."""
        arrays = self.arrays(int(K))
        if arrays is None:
            return np.zeros((self.n_terms, int(K)), dtype=self.dtype)
        row_map, slot_start, n_dense = arrays
        return TermCounts(np.zeros((n_dense, int(K)), dtype=self.dtype), row_map, slot_start,
                          np.zeros(int(slot_start[-1]), dtype=np.uint32))


class TermCounts:
    """The (V, K) term-factor counts as dense rows and slots (see the module).

    Attributes
    ----------
    dense : ndarray of shape (n_dense, K)
        The rows of the terms with ``row_map[v] >= 0``.
    row_map : ndarray of int32, shape (V,)
        Row of ``dense`` of each term, -1 where the term's counts are slots.
    slot_start : ndarray of int64, shape (V + 1,)
        Term v's slots are ``slots[slot_start[v]:slot_start[v + 1]]``.
    slots : ndarray of uint32
        ``(k + 1) << 16 | count``, 0 where empty; a row's filled slots come first.
    """

    def __init__(self, dense: np.ndarray, row_map: np.ndarray, slot_start: np.ndarray, slots: np.ndarray):
        self.dense, self.row_map, self.slot_start, self.slots = dense, row_map, slot_start, slots

    @property
    def shape(self) -> tuple:
        return (int(self.row_map.size), int(self.dense.shape[1]))

    @property
    def ndim(self) -> int:
        return 2

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.int64)

    @property
    def nbytes(self) -> int:
        return int(self.dense.nbytes + self.slots.nbytes)

    def clear(self) -> "TermCounts":
        """Set every count to 0 (to be filled again); returns self."""
        self.dense.fill(0)
        self.slots.fill(0)
        return self

    def sorted_args(self, n_threads: int = 1) -> dict:
        """:meth:`kernel_args` with each sparse row's slots sorted by factor first
        (what the Phi draws read: :func:`pygbn.inference._blocked.sort_slots`)."""
        if self.slots.size:
            _blocked.sort_slots(self.slot_start, self.slots, int(n_threads))
        return self.kernel_args()

    def kernel_args(self) -> dict:
        """The keyword arguments of the kernels that read or fill these counts."""
        return {"row_map": self.row_map, "slot_start": self.slot_start, "slots": self.slots}

    def entries(self):
        """The non-zero slot entries: ``(term, factor, count)`` (int64 arrays)."""
        idx = np.flatnonzero(self.slots)
        words = self.slots[idx].astype(np.int64)
        terms = np.searchsorted(self.slot_start, idx, side="right") - 1
        return terms, (words >> _SHIFT) - 1, words & _COUNT

    def toarray(self, dtype=np.int64) -> np.ndarray:
        """The dense (V, K) array of the counts in ``dtype``."""
        out = np.zeros(self.shape, dtype=dtype)
        dense_terms = np.flatnonzero(self.row_map >= 0)
        out[dense_terms] = self.dense[self.row_map[dense_terms]]
        terms, factors, counts = self.entries()
        out[terms, factors] = counts
        return out

    def __array__(self, dtype=None, copy=None):
        return self.toarray(np.int64 if dtype is None else dtype)

    def astype(self, dtype) -> np.ndarray:
        """A new dense array (what ``ndarray.astype`` gives for the dense counts)."""
        return self.toarray(dtype)

    def sum(self, axis=None):
        return self.toarray().sum(axis=axis)

    def nonzero_flat(self):
        """``(flat indices, values)`` of the non-zero entries of the (V, K) array,
        in increasing flat index (int64 arrays)."""
        K = self.shape[1]
        dense_terms = np.flatnonzero(self.row_map >= 0)
        rows = self.dense[self.row_map[dense_terms]]
        r, k = np.nonzero(rows)
        terms, factors, counts = self.entries()
        flat = np.concatenate([dense_terms[r] * K + k, terms * K + factors])
        vals = np.concatenate([rows[r, k].astype(np.int64), counts])
        order = np.argsort(flat, kind="stable")
        return flat[order], vals[order]

    def take_columns(self, keep: np.ndarray) -> "TermCounts":
        """The counts of the factors where ``keep`` is True (renumbered in order);
        each term keeps its layout (its slots still hold all its factors)."""
        keep = np.asarray(keep, dtype=bool)
        new_index = np.cumsum(keep) - 1
        terms, factors, counts = self.entries()
        kept = keep[factors]
        terms, factors, counts = terms[kept], new_index[factors[kept]], counts[kept]
        slots = np.zeros_like(self.slots)
        if terms.size:      # entries are in slot order, so grouped by term: refill from each row's start
            first = np.r_[0, np.flatnonzero(np.diff(terms)) + 1]
            rank = np.arange(terms.size) - np.repeat(first, np.diff(np.r_[first, terms.size]))
            slots[self.slot_start[terms] + rank] = (((factors + 1) << _SHIFT) | counts).astype(np.uint32)
        return TermCounts(np.ascontiguousarray(self.dense[:, keep]), self.row_map, self.slot_start, slots)


def split_target(n_out):
    """``(dense array, keyword arguments)`` of :func:`pygbn.inference._blocked.split_sparse`
    for the statistics ``n_out`` (a :class:`TermCounts` or a dense array)."""
    if isinstance(n_out, TermCounts):
        return n_out.dense, n_out.kernel_args()
    return n_out, {}


def draw_phi_columns(counts, eta: float, col_bounds: np.ndarray, addresses: np.ndarray,
                     out: np.ndarray, n_threads: int) -> None:
    """``out[:, k] ~ Dir(eta + counts[:, k])`` by column blocks (eq:step2,
    :func:`pygbn.inference._blocked.dirichlet_columns`), ``counts`` dense or a
    :class:`TermCounts` (the same draws from the same counts)."""
    if isinstance(counts, TermCounts):
        _blocked.dirichlet_columns(counts.dense, float(eta), col_bounds, addresses, out, n_threads,
                                   **counts.sorted_args(n_threads))
        return
    if counts.dtype not in (np.int32, np.int64) or not counts.flags.c_contiguous:
        counts = np.ascontiguousarray(counts, dtype=np.int64)
    _blocked.dirichlet_columns(counts, float(eta), col_bounds, addresses, out, n_threads)


def take_columns(counts, keep: np.ndarray):
    """``counts[:, keep]`` (a new C-ordered array, or a :class:`TermCounts`)."""
    if isinstance(counts, TermCounts):
        return counts.take_columns(keep)
    return np.ascontiguousarray(counts[:, keep])


def check_summed_total(grand: int, n_parts: int, what: str = "counts", parts: str = "parts") -> None:
    """ValueError when the counts of ``n_parts`` parts, each adding up to less than 2**63,
    add up to ``grand`` (a Python int) >= 2**63: their int64 sum would wrap (data, or a
    link's latent counts, of a scale the chain cannot follow)."""
    if grand >= MAX_COUNT_TOTAL:
        raise ValueError(f"{what} of the {n_parts} {parts} add up to {grand} (2**63 or more, past the "
                         "samplers' 64-bit counters): the data are too large for the chain; rescale them, "
                         "e.g. divide them by their mean")


def sum_counts(parts: Sequence, what: str = "counts") -> np.ndarray:
    """The sum of several parts' counts (dense arrays or :class:`TermCounts`), int64
    (ValueError where it would pass 2**63 - 1: :func:`check_summed_total`, ``what`` naming
    the counts)."""
    total = np.zeros(parts[0].shape, dtype=np.int64)
    grand = 0
    for c in parts:
        if isinstance(c, TermCounts):
            flat, vals = c.nonzero_flat()
            total.reshape(-1)[flat] += vals
        else:
            total += c
            vals = c
        grand += int(vals.sum(dtype=np.int64))
    check_summed_total(grand, len(parts), what)
    return total
