"""The partially collapsed layer one of a count model (``method="partial"``).

Phi^(1) is explicit and theta^(1) is integrated out.  Given Phi^(1) and the
prior shape ``a_j`` of document j (``r`` when T = 1, ``Phi^(2) theta_j^(2)``
otherwise), the topic labels of one document follow a Polya urn,

    p(z_ji = k | -)  ∝  phi_{v_ji k} (n_jk^(-ji) + a_jk),

and documents are independent of each other.  So the labels are swept by
document block in parallel (:func:`pygbn.inference._partial.partial_sweep`,
block b drawing from its own stream: the chain does not depend on the
thread count), their term-topic counts ``n_vk`` are the statistic of
Phi^(1) (drawn from its Dirichlet by the global update, as for the blocked
method), and ``m^(1) = n_jk`` feeds the upper layers exactly as the collapsed
method's counts do (no conditional of the upper layers needs theta^(1):
p_j^(2) is drawn with it integrated out, eq:step6).  This is a partially
collapsed Gibbs sampler (Magnusson, Jonsson, Villani & Broman 2018, for LDA);
it targets the same posterior as the collapsed and blocked samplers.

A token's draw costs O(topics of its document) or O(1) expected steps, not
O(K): it draws the proposal ``q(k) ∝ phi_vk n_jk + lambda_j phi_vk b_k`` (b a
shape shared by all documents) exactly, as a prior bucket over ``phi_v. b``
drawn by inversion (from indexed-search tables for the terms with at least
``TABLE_MIN_TOKENS`` tokens and at least K / 16 (``TABLE_DENSE_FRACTION``)
whose expected prior draws a sweep pay for a table
(:meth:`PartialState.table_rows`), and by a scan of Phi's row for the others:
the same topic for the same uniform) plus a document bucket ``phi_vk n_jk`` drawn in one of two exact
ways, chosen per document from its state at the start of its sweep
(:attr:`PartialState.REJECTION_WORK`): a pass over the document's topic list
(few topics, several tokens a stored cell: the real corpora after burn-in), or
by rejection from the term's top set (its m largest phi_vk,
:func:`default_top_size`: 8 at K = 100, 16 at K = 400; their excess over h_v,
the term's next largest phi_vk) and a uniformly chosen other token of the
document, accepted when its topic is in the set and else thinned by
phi_vk / h_v (many topics a token: the first sweeps of long documents,
bench_scale's synthetic corpus).  q is the exact conditional when T = 1;
when the documents' priors differ (T >= 2) the prior bucket is drawn with
mass ``c_j Q_v``, ``c_j = max_k a_jk / b_k``, and its topic kept with
probability ``a_jk / (c_j b_k)`` (a rejected draw starts afresh), so the
label is again drawn from the exact conditional; see the kernel module and
``docs/engine.md``.

Memory (N tokens, J documents, V terms, K factors): labels 2 bytes a token
(int16 when K <= 32767), ``n_jk`` (J, K) uint8 (uint16 for documents of more
than 255 tokens, int32 beyond 65535) = the sampler's ``m[0]``, ``n_vk`` counted after each
sweep and stored by term (:class:`~pygbn.inference.term_counts.TermCounts`:
int32 rows for the terms with at least K / 4 tokens, a token state holding
fewer than 2^31 tokens, and 4 bytes a token for the others) into the last
sweep's counts when nothing else holds them, Phi^(1) (V, K) float64 drawn
into the memory of the one it replaces when nothing else holds that
(:meth:`PartialState.buffer`), and the prior
tables, (K,) float32 + (2 GUIDE_CELLS K + 2,) labels' type (8 bytes a factor
for int16 labels) for each term that has one, dropped when Phi^(1) is redrawn in
place (:attr:`PartialState.phi_stamp`), and a top set for every term, 8 (2 + m +
ceil(m / 2) + ceil(K / 8)) bytes (216 at m = 8, K = 100), kept across draws
(its bounds speed up the next selection) once a sweep has built some (each
sweep builds those of its rejection documents' terms).
"""
from __future__ import annotations

import logging
import sys
import weakref
from typing import Optional

import numpy as np
import scipy.sparse as sp

from pygbn.inference import _collapsed, _partial, _upper
from pygbn.inference.collapsed_state import (TokenLabels, check_token_count, doc_count_dtype, initial_labels,
                                             label_dtype, token_arrays)
from pygbn.inference.layer_one import CHUNK_BLOCKS
from pygbn.inference.term_counts import TermCounts, TermLayout, draw_phi_columns, split_target

logger = logging.getLogger("pygbn")

__all__ = ["PartialState", "MH_STEPS", "dirichlet_phi_one", "new_prior_tables", "sample_layer_one_partial",
           "proposal_shape", "default_top_size"]

#: when the documents' priors differ (T >= 2): 0 draws each label exactly (the prior
#: bucket thinned by a_jk / (c_j b_k)); n > 0 makes n independence Metropolis-Hastings
#: steps with the proposal q instead (the method until the twentieth session: its chain
#: moves more slowly at T >= 2, docs/benchmarks.md, "Twentieth session")
MH_STEPS = 0
_TINY = np.finfo(np.float64).tiny


class PartialState(TokenLabels):
    """Topic labels of the tokens and their document-topic counts (method "partial").

    The tokens of document j are its stored cells in CSR order, ``Y[j, v]``
    tokens of term v one after another (the layout of
    :class:`~pygbn.inference.collapsed_state.CollapsedState`, without its
    term lists).

    Attributes
    ----------
    indptr, indices, values : ndarray
        The data as canonical CSR arrays (shared with the sampler).
    labels : ndarray of int16 or int32, shape (n_tokens,)
    doc_ptr : ndarray of int64, shape (n_docs + 1,)
        Labels of document j are ``labels[doc_ptr[j]:doc_ptr[j + 1]]``.
    doc_counts : ndarray of uint8, uint16 or int32, shape (n_docs, K)
        ``n_jk`` (the sampler's ``m[0]``).
    term_counts : TermCounts or ndarray of int32, shape (n_terms, K)
        ``n_vk`` of the labels, counted when read (each sweep returns its own).
    acceptance : float
        Share of the last sweep's Metropolis-Hastings proposals accepted
        (NaN when the draws were exact: always with the default ``MH_STEPS = 0``).
    """

    #: test hooks planting a wrong conditional: the token is not taken out of n_jk
    #: (INCLUDE_SELF), every proposal is taken without its Metropolis-Hastings test (MH_STEPS = -1)
    INCLUDE_SELF = False
    MH_STEPS = MH_STEPS
    #: test hook planting a wrong conditional: the urn without Phi^(1) (a uniform Phi in its place)
    IGNORE_PHI = False
    #: terms with at least this many tokens, and at least K / TABLE_DENSE_FRACTION, get a
    #: prior-bucket table (speed and memory only: the others scan their row of Phi^(1) and
    #: draw the same topics)
    TABLE_MIN_TOKENS = 16
    #: and only when ``rate n_v >= TABLE_PRIOR_DRAWS``, ``rate`` the prior-bucket draws a
    #: token of the last sweep (:attr:`prior_rate`, rounded down to a power of two; 1 before
    #: the first sweep): a table is built for the term's expected prior draws of a sweep.
    #: Speed only, the same topics.  4: on the 5.2M-token benchmark corpus (K = 100, a
    #: third of the draws from the prior bucket) 16 left terms to scans that cost more
    #: than their tables; on the man pages after burn-in (0.14% prior draws) no term of
    #: 7,735 then pays for one (docs/benchmarks.md, "Fourteenth session")
    TABLE_PRIOR_DRAWS = 4.0
    #: a term gets a table only when ``TABLE_DENSE_FRACTION n_v >= K`` (memory: a table is
    #: 8 K bytes since the thirtieth session (6 K before), the size of the term's row of Phi^(1),
    #: where its counts take 4 n_v).  16
    #: (4 until the twenty-seventh session): at 5.2M tokens and K = 400 the terms of 25-99
    #: tokens (8% of the tokens, most of their draws from the prior bucket) got tables
    #: instead of scanning their rows, and the sweep took 0.934 of its time (+23 MB at
    #: V = 20,000); the real corpora and K = 100: 0.99-1.00 (docs/benchmarks.md,
    #: "Twenty-seventh session")
    TABLE_DENSE_FRACTION = 16
    #: entries of each term's top set for the document bucket's rejection draw (None:
    #: :func:`default_top_size` of K; speed only, the draws have the same law for any size)
    TOP_SIZE = None
    #: the switch between the document buckets (speed only: both draw the proposal
    #: exactly): a document of n_doc tokens in n_cells stored cells with n_t topics at the
    #: start of its sweep takes the rejection bucket when ``n_t n_cells / n_doc >=
    #: REJECTION_WORK p`` (p proposals a token: 1, or MH_STEPS > 0 at T >= 2), else the list
    #: (0: always rejection; inf: always the list).  20: bench_scale's corpus (36 topics,
    #: 1.25 tokens a cell) by rejection, the real corpora after a few sweeps by the list
    #: (docs/benchmarks.md, "Thirteenth session")
    REJECTION_WORK = 20.0

    def __init__(self, indptr, indices, values, labels, n_terms: int, n_components: int):
        super().__init__(indptr, indices, values, labels, n_terms, n_components)
        self.acceptance = float("nan")
        self._tables = None
        self._top = None
        #: tokens in the last sweep's cells that the switch gave the rejection bucket (None: no sweep yet)
        self.rejection_tokens = None
        #: prior-bucket draws a swept token made in the last sweep (None: no sweep yet); a
        #: speed statistic (which terms get prior tables), never read by a draw
        self.prior_rate = None
        self._table_row = None
        self._pool = {}
        self._layout = TermLayout.from_totals(self.term_tokens, np.int32)
        self._phi_stamp = 0
        self._split = {}
        self.rebuild()

    @classmethod
    def from_counts(cls, Y: sp.csr_matrix, n_components: int, labels: Optional[np.ndarray] = None,
                    rng: Optional[np.random.Generator] = None, *, arrays=None) -> "PartialState":
        """The tokens of the counts ``Y`` (documents x terms, canonical CSR), with
        ``labels`` (tokens in CSR order) or labels drawn uniformly from ``rng``.

        Raises
        ------
        ValueError
            If ``Y`` holds too many tokens or ``labels`` does not fit it.
        """
        indptr, indices, values = token_arrays(Y, arrays)
        labels = initial_labels(values, n_components, labels, rng, "partial")
        return cls(indptr, indices, values, labels, Y.shape[1], n_components)

    @classmethod
    def for_sampler(cls, sampler, n_components: int) -> "PartialState":
        """The tokens of ``sampler``'s data with uniform initial labels, those of
        document block b drawn from the block's own stream (so that the local
        part of a chain draws exactly the labels its blocks get in one process)."""
        K = int(n_components)
        indptr, indices, values = sampler.indptr, sampler.indices, sampler.values
        doc_tokens = np.empty(indptr.size, dtype=np.int64)
        _partial.doc_token_offsets(indptr, values, doc_tokens)
        # refused before the labels are made (they would take 2 bytes a token, and a draw each)
        n_tokens = check_token_count(int(doc_tokens[-1]) if doc_tokens.size else 0, "partial")
        labels = np.empty(n_tokens, dtype=label_dtype(K))
        bounds = sampler.bounds
        for b, g in enumerate(sampler.doc_streams.generators[:max(len(bounds) - 1, 0)]):
            lo, hi = doc_tokens[bounds[b]], doc_tokens[bounds[b + 1]]
            labels[lo:hi] = g.integers(0, K, size=hi - lo, dtype=labels.dtype)
        # labels made here: one per token, in [0, K) (initial_labels would count and scan again)
        return cls(indptr, indices, values, labels, sampler.n_features, K)

    @property
    def phi_stamp(self) -> int:
        """Bumped when Phi^(1) is drawn into the memory of the last one: the prior
        tables made from it are then stale, and setting it drops them (their
        memory is free again before the draw's scratch is taken; the next sweep
        builds new ones)."""
        return self._phi_stamp

    @phi_stamp.setter
    def phi_stamp(self, value: int) -> None:
        self._phi_stamp = int(value)
        self._tables = None

    @property
    def n_docs(self) -> int:
        return self.doc_ptr.size - 1

    def rebuild(self) -> None:
        """Recount ``doc_counts`` from the labels."""
        K = self.n_components
        self.doc_counts = np.empty((self.n_docs, K), dtype=doc_count_dtype(self.max_doc_tokens))
        _partial.count_doc_labels(self.doc_ptr, self.labels, self.doc_counts)
        self._tables = None

    @property
    def term_counts(self):
        """``n_vk`` of the labels ((n_terms, K): a :class:`~pygbn.inference.term_counts.TermCounts`,
        rare terms' rows as slots, dense rows int32), counted on each access: the
        state keeps no copy (the sampler's ``layers[0].counts`` is the one in use)."""
        out = self.new_term_counts()
        dense, kw = split_target(out)
        _partial.add_term_labels(0, self.indices.shape[0], 0, self.indices, self.values, self.labels, dense, 1, **kw)
        return out

    def term_split(self, n_threads: int) -> Optional[np.ndarray]:
        """Bounds of the terms each of ``n_threads`` threads counts in the ``n_vk``
        pass (:func:`pygbn.inference._partial.add_term_labels`): contiguous runs of
        terms holding about equal shares of the data's tokens (None for one
        thread).  Speed only: the counts are the same integers for any bounds."""
        nt = int(n_threads)
        if nt <= 1:
            return None
        split = self._split.get(nt)
        if split is None:
            cum = np.cumsum(self.term_tokens)
            total = int(cum[-1]) if cum.size else 0
            split = np.searchsorted(cum, total * np.arange(nt + 1) // nt, side="left").astype(np.int64)
            split[0], split[-1] = 0, self.n_terms
            split = self._split[nt] = np.maximum.accumulate(split)
        return split

    def new_term_counts(self, current=None):
        """Zero ``n_vk`` for this state's K: ``current`` (the counts it replaces,
        cleared) when nothing but its holder and the caller hold it, else new
        (:meth:`~pygbn.inference.term_counts.TermLayout.zeros`)."""
        K = self.n_components
        # references: the caller's, ``current`` and getrefcount's argument (the holder let it go)
        if isinstance(current, TermCounts) and current.shape == (self.n_terms, K) and sys.getrefcount(current) <= 3:
            return current.clear()
        return self._layout.zeros(K)

    def keep(self, keep: np.ndarray) -> None:
        """Drop the factors where ``keep`` is False (no token may carry them), renumber
        the others in order and rebuild the counts."""
        _collapsed.relabel(self.labels, (np.cumsum(keep) - 1).astype(np.int64))
        self.n_components = int(np.count_nonzero(keep))
        self.labels = self.labels.astype(label_dtype(self.n_components), copy=False)
        self.rebuild()

    def check(self) -> None:
        """Raise AssertionError if the labels and ``doc_counts`` disagree (debug checks)."""
        z, K = self.labels, self.n_components
        if z.size and (z.min() < 0 or z.max() >= K):
            raise AssertionError("partial labels out of range")
        totals = np.bincount(z.astype(np.int64), minlength=K)
        if not np.array_equal(totals, self.doc_counts.sum(axis=0)):
            raise AssertionError("partial document-topic counts inconsistent with the labels")

    def buffer(self, name: str, shape, dtype, current: Optional[np.ndarray] = None) -> np.ndarray:
        """An array for a per-sweep (V, K) result (``n_vk``, Phi^(1)): ``current``
        (the result it replaces) when only its holder and the caller's
        references are left to it, else one of two kept per ``name`` that
        nothing else references any more, else a new one.  Reusing memory
        that is already mapped spares the page faults of a fresh allocation
        each sweep, and drawing into ``current`` keeps one array instead of
        two; the contents are undefined."""
        if current is not None and current.shape == tuple(shape) and current.dtype == dtype \
                and current.flags.c_contiguous and current.flags.writeable and current.base is None:
            # references: its holder's, ``current``, getrefcount's argument and the pool's if pooled
            pooled = sum(buf is current for buf in self._pool.values())
            if sys.getrefcount(current) <= 3 + pooled:
                return current
        for slot in (name + "0", name + "1"):
            buf = self._pool.get(slot)
            # references: the pool's, ``buf`` and getrefcount's argument
            if buf is not None and buf.shape == tuple(shape) and buf.dtype == dtype and sys.getrefcount(buf) <= 3:
                return buf
        for slot in (name + "0", name + "1"):
            buf = self._pool.get(slot)
            if buf is None or sys.getrefcount(buf) <= 3:
                out = self._pool[slot] = np.empty(shape, dtype=dtype)
                return out
        return np.empty(shape, dtype=dtype)

    def table_rows(self, V: int, K: int) -> np.ndarray:
        """Term v's row of the prior tables, -1 for none (int64, one entry for each of
        the first ``V`` terms):
        the terms with ``n_v >= TABLE_MIN_TOKENS``, ``TABLE_DENSE_FRACTION n_v >= K``
        and ``rate n_v >= TABLE_PRIOR_DRAWS`` (``rate``: :attr:`prior_rate` rounded
        down to a power of two, 1 before the first sweep).  Speed only: a term
        without a table scans its row of Phi^(1) and draws the same topic."""
        rate = 1.0 if self.prior_rate is None else float(self.prior_rate)
        rate = 2.0 ** np.floor(np.log2(rate)) if rate > 0 else 0.0
        key = (self.TABLE_MIN_TOKENS, self.TABLE_DENSE_FRACTION, self.TABLE_PRIOR_DRAWS, rate, int(V), int(K))
        if self._table_row is None or self._table_row[1] != key:
            n_v = self.term_tokens[:V]
            has = (n_v >= self.TABLE_MIN_TOKENS) & (self.TABLE_DENSE_FRACTION * n_v >= K) \
                & (rate * n_v >= self.TABLE_PRIOR_DRAWS)
            rows = np.full(n_v.size, -1, dtype=np.int64)
            rows[has] = np.arange(int(has.sum()), dtype=np.int64)
            self._table_row = (rows, key)
        return self._table_row[0]

    def prior_tables(self, phi: np.ndarray, b: np.ndarray, n_threads: int, with_top=True):
        """The prior bucket's tables over ``phi_v. b`` and the top sets (no
        randomness): ``(table_row, cum, guide, mass, top)`` for
        :func:`pygbn.inference._partial.partial_sweep`, built when Phi^(1), ``b``
        or :meth:`table_rows` changed since the last call or top sets are wanted
        that were not built (then all again: the same tables from the same Phi,
        in their memory).  The terms of :meth:`table_rows` get an inversion
        table; the others' prior draws scan their row of Phi (the same topic for
        the same uniform, so the chain does not depend on which terms have
        tables).  ``with_top``: True for every term's top set, a uint8 array
        (one entry per term) for those of the terms with a non-zero entry (each
        a function of its row of Phi alone: the sweep reads only those of its
        rejection documents' terms), False for none (``top`` with no rows)."""
        V, K = phi.shape
        rows = self.table_rows(V, K)
        need = None if with_top is False else (np.ones(V, dtype=bool) if with_top is True
                                               else np.asarray(with_top[:V], dtype=bool))
        cached = self._tables
        if cached is not None and cached[0]() is phi and cached[1] == self.phi_stamp \
                and np.array_equal(cached[2], b) and cached[3][0] is rows \
                and (need is None or (cached[4] is not None and not np.any(need & ~cached[4]))):
            return cached[3]
        old = cached[3] if cached is not None else (None, None, None, None, None)
        if self._top is not None:
            # the top sets outlive the tables dropped with the last Phi: their bounds speed up the next selection
            old = old[:4] + (self._top,)
        self._tables = None
        tables = new_prior_tables(phi, b, rows, n_threads, self.labels.dtype, old, self.TOP_SIZE,
                                  need is not None, None if need is None or with_top is True else need.view(np.uint8))
        self._tables = (weakref.ref(phi), self.phi_stamp, b.copy(), tables, None if need is None else need.copy())
        if tables[4].shape[0]:
            self._top = tables[4]
        return tables


def default_top_size(n_components: int) -> int:
    """Entries m of a term's top set for K factors: ``max(8, K // 25)``, at most
    64 and K.  Speed only: the kernel's trials per token fall with m (about 2.3
    at m = 8, K = 100, on bench_scale's corpus after 40 sweeps) while its work
    per token grows with m; measured best (tools/ab_partial_kernel.py,
    docs/benchmarks.md "Twelfth session", and again with the top set's excess,
    "Eighteenth session") at m = 8 for K = 100 (6, 12 and 16 no better) and
    16-24 for K = 400 (8 and 12 slower)."""
    K = int(n_components)
    return min(64, K, max(8, K // 25))


def new_prior_tables(phi: np.ndarray, b: np.ndarray, rows: np.ndarray, n_threads: int, dtype,
                     old=None, top_size: Optional[int] = None, with_top: bool = True,
                     top_terms: Optional[np.ndarray] = None):
    """The prior bucket's tables of ``phi_v. b`` for the terms with ``rows[v] >= 0``
    and every term's top set of ``m = min(top_size, K)`` entries (None: :func:`default_top_size`)
    (:func:`pygbn.inference._partial.build_prior_tables`): ``(rows, cum, guide,
    mass, top)``, ``cum`` (n_tables, K) float32, ``guide`` (n_tables,
    ``_partial.guide_width(K)``) of the labels' ``dtype`` and ``top`` (V, 2 + m + ceil(m / 2)
    + ceil(K / 8)) float64, or with no rows when ``with_top`` is False
    (``top_terms``, uint8 (V,): the top sets of the terms with a non-zero entry
    alone); the arrays of ``old`` are reused (its ``cum`` and ``guide`` when
    they have at least as many rows: the first rows, as views)."""
    V, K = phi.shape
    m = min(int(default_top_size(K) if top_size is None else top_size), K)
    if not 0 <= m <= 64:
        raise ValueError(f"top_size must be in [0, 64], got {top_size}")
    width = 2 + m + (m + 1) // 2 + (K + 7) // 8
    n_tab = int(rows.max()) + 1 if V else 0
    G = _partial.guide_width(K)
    if old is not None and old[1] is not None and old[1].base is not None:
        # views of the first rows: their arrays
        old = (old[0], old[1].base, old[2].base) + tuple(old[3:])
    if old is not None and old[1] is not None and old[1].shape[0] >= n_tab and old[1].shape[1:] == (K,) \
            and old[2].shape[0] >= n_tab and old[2].shape[1:] == (G,) and old[2].dtype == dtype:
        cum, guide = old[1][:n_tab], old[2][:n_tab]
    else:
        cum, guide = np.empty((n_tab, K), dtype=np.float32), np.empty((n_tab, G), dtype=dtype)
    mass = old[3] if old is not None and old[3] is not None and old[3].shape == (V,) else np.empty(V)
    top = old[4] if old is not None else None
    hint = top is not None and top.shape == (V, width)
    if not with_top:
        top, hint = np.empty((0, width)), False
    elif not hint:
        top = np.empty((V, width))
    _partial.build_prior_tables(phi, b, rows, cum, guide, mass, top, n_threads, hint,
                                top_terms if with_top else None)
    return rows, cum, guide, mass, top


def proposal_shape(network) -> np.ndarray:
    """The proposal's shape b shared by all documents: the prior mean shape of
    a_j, ``Phi^(2) ... Phi^(T) r`` (``r`` when T = 1), floored positive."""
    b = np.maximum(network.r, _TINY)
    for layer in reversed(network.layers[1:]):
        b = layer.phi @ b
    return np.ascontiguousarray(np.maximum(b, _TINY))


def dirichlet_phi_one(layer, col_bounds: np.ndarray, streams, n_threads: int,
                      tokens: Optional[PartialState] = None) -> np.ndarray:
    """Phi^(1) of the partial method from its Dirichlet (eq:step2),
    ``Phi_:k ~ Dir(eta + n_:k)`` given ``layer.counts = n_vk``, column block b
    drawing from ``streams`` b (:func:`pygbn.inference.term_counts.draw_phi_columns`, as
    for every other Phi: the (V, K) counts are read and Phi written directly, no
    transposed copies).
    With ``tokens`` (a draw of the chain that replaces ``layer.phi``) into
    ``layer.phi``'s own memory when nothing else holds it (else one of
    ``tokens``' buffers): the old Phi^(1) is not needed once the new one is
    drawn, and the tables made from it are marked stale."""
    shape = layer.counts.shape
    if tokens is None:
        phi = np.empty(shape)
    else:
        phi = tokens.buffer("phi", shape, np.float64, layer.phi)
        tokens.phi_stamp += 1
    draw_phi_columns(layer.counts, layer.eta, np.ascontiguousarray(col_bounds, dtype=np.int64),
                     streams.addresses, phi, n_threads)
    return phi


def sample_layer_one_partial(sampler, blocks=None) -> np.ndarray:
    """The partially collapsed update of layer one's labels (eq:z with Phi^(1) given).

    Each label of the documents of ``blocks`` is drawn from
    ``phi_vk (n_jk^(-ji) + a_jk)`` exactly (at T >= 2 through the thinned prior
    bucket; by Metropolis-Hastings steps that leave it invariant when
    ``PartialState.MH_STEPS > 0``), with ``a_j = r`` at T = 1 and
    ``Phi^(2) theta_j^(2)`` below (made a few document blocks at a time by
    :func:`pygbn.inference._upper.doc_prior`, the same bits per row
    wherever the block is).  Updates ``m[0] = n_jk`` in place and returns the
    blocks' term-topic counts ``n_vk`` (the statistic of Phi^(1), stored by
    term: :meth:`PartialState.new_term_counts`; for all blocks into the counts
    of ``layers[0].counts``, the last sweep's, when nothing else holds them:
    it then holds the new counts).
    """
    net = sampler.network
    tokens: PartialState = sampler.tokens
    phi = np.ascontiguousarray(net.layers[0].phi)
    if tokens.IGNORE_PHI:
        phi = np.full(phi.shape, 1.0 / phi.shape[0])
    nt = sampler.n_threads
    bounds, streams = sampler._blocks(blocks)
    b = proposal_shape(net)
    work = float(tokens.REJECTION_WORK)
    njk = tokens.doc_counts
    # the top sets (a pass over Phi^(1)) for this sweep exactly when the switch gives one of its
    # documents rejection: a function of these documents alone, so a document's bucket does not
    # depend on how the documents are divided (block ranges, Dask partitions)
    # (those of its rejection documents' terms alone, when these hold at most V cells)
    lo, hi = (int(bounds[0]), int(bounds[-1])) if len(bounds) > 1 else (0, 0)
    terms = np.zeros(phi.shape[0], dtype=np.uint8)
    found = _partial.rejection_ahead(tokens.indptr[lo:hi + 1], tokens.doc_ptr[lo:hi + 1], njk[lo:hi],
                                     net.depth == 1, tokens.MH_STEPS, work, tokens.indices, terms, phi.shape[0])
    tables = tokens.prior_tables(phi, b, nt, True if found < 0 else (terms if found else False))
    args = (tokens.indices, tokens.values)
    # MH proposals, accepted, rejection tokens, prior-bucket draws
    totals = np.zeros(4, dtype=np.int64)
    if net.depth == 1:
        totals += _partial.partial_sweep(tokens.indptr, *args, tokens.doc_ptr, tokens.labels, phi, b[None, :],
                                         b, *tables, bounds, streams, njk, tokens.MH_STEPS, nt,
                                         tokens.INCLUDE_SELF, True, work)
    else:
        upper = net.layers[1]
        theta_up, phi_up = np.ascontiguousarray(upper.theta), np.ascontiguousarray(upper.phi)
        step = max(CHUNK_BLOCKS, 8 * nt)
        nb = len(bounds) - 1
        longest = int(np.max(np.diff(bounds))) if nb else 0
        buf = np.empty((min(sampler.n_docs, step * longest), phi.shape[1]))
        for c0 in range(0, nb, step):
            c1 = min(c0 + step, nb)
            r0, r1 = int(bounds[c0]), int(bounds[c1])
            prior = buf[:r1 - r0]
            # a row's prior does not depend on the block it is in (_upper.doc_prior)
            _upper.doc_prior(theta_up, phi_up, np.ascontiguousarray(bounds[c0:c1 + 1]), prior, nt)
            totals += _partial.partial_sweep(tokens.indptr[r0:r1 + 1], *args, tokens.doc_ptr[r0:r1 + 1],
                                             tokens.labels, phi, prior, b, *tables,
                                             np.ascontiguousarray(bounds[c0:c1 + 1] - r0), streams[c0:c1],
                                             njk[r0:r1], tokens.MH_STEPS, nt, tokens.INCLUDE_SELF, False, work)
    prop, acc, rej, n_prior = (int(x) for x in totals)
    tokens.acceptance = acc / prop if prop else float("nan")
    tokens.rejection_tokens = rej
    swept = int(tokens.doc_ptr[hi] - tokens.doc_ptr[lo])
    if swept:
        tokens.prior_rate = n_prior / swept
    if prop:
        logger.debug("partial layer one: %d Metropolis-Hastings proposals, %.3f accepted", prop,
                     tokens.acceptance)
    # n_vk of the blocks' new labels, counted after the sweep (a pass of its own: an
    # increment inside the token loop waits on a cache miss of the (V, K) array)
    # the whole chain's n_vk into the memory of the last one when nothing else holds that
    if blocks is None:
        current, net.layers[0].counts = net.layers[0].counts, None
        n_vk = tokens.new_term_counts(current)
        net.layers[0].counts = n_vk if n_vk is current else current
        del current
    else:
        n_vk = tokens.new_term_counts()
    dense, kw = split_target(n_vk)
    _partial.add_term_labels(int(tokens.indptr[lo]), int(tokens.indptr[hi]), int(tokens.doc_ptr[lo]),
                             tokens.indices, tokens.values, tokens.labels, dense, nt,
                             term_split=tokens.term_split(nt), **kw)
    return n_vk
