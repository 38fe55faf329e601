# cython: language_level=3
"""Partially collapsed, document-parallel sweep over the layer-one topic labels.

Phi^(1) is explicit and theta^(1) is integrated out.  Given Phi^(1) and the
document's prior shape ``a_j`` (``r`` when the network has one layer,
``Phi^(2) theta_j^(2)`` otherwise), the label of token ``i`` of document
``j`` (term ``v``) has the Polya-urn conditional

    pi(k)  ∝  phi_vk (n_jk + a_jk),                       (n_jk without token i)

and documents are independent of each other: blocks of documents are swept in
an OpenMP ``prange``, block ``b`` drawing only from its own stream, so the
result does not depend on the number of threads.

Proposal.  With a positive vector ``b`` shared by all documents (the prior
mean shape ``Phi^(2) ... Phi^(T) r``; ``r`` itself when T = 1) and
``lambda_j = sum_k a_jk / sum_k b_k``, every token draws a topic from

    q(k)  ∝  phi_vk n_jk  +  lambda_j phi_vk b_k

as a two-bucket mixture: the document bucket ``D = sum_{k: n_jk > 0} phi_vk n_jk``
(over the document's compact topic list, O(its topics) once per stored cell,
then updated as the cell's tokens move) and the prior bucket ``lambda_j Q_v``
with ``Q_v = sum_k phi_vk b_k``, drawn by inversion of its cumulative sums:
in O(1) expected steps from the term's indexed-search table
(:func:`build_prior_tables`, built once per sweep for the frequent terms),
else by an O(K) scan that forms the same sums (the same topic for the same
uniform).

Exactness.  When the prior is one row shared by all documents (T = 1),
``b = a`` and ``lambda = 1``: q is pi and the draw is the exact conditional.
Otherwise ``mh_steps`` independence Metropolis-Hastings steps follow, from
the token's current label ``s``: propose ``t ~ q`` and accept it with
probability ``min(1, w(t) / w(s))``, where

    w(k) = pi(k) / q(k)  ∝  (n_jk + a_jk) / (n_jk + lambda_j b_k)

(phi_vk and both normalisers cancel).  Each step leaves pi invariant, so the
label update does, and the sweep leaves the posterior invariant.

Uniforms.  A block takes its stream's uniforms in order, 256 at a time into a
buffer (``_uniform``; each number used once), and drops what is left of the
buffer when the block ends: the draws keep their laws, and the chain still
does not depend on the number of threads (a block's numbers come from its own
stream whatever thread sweeps it).
"""
cimport cython
from cython.parallel cimport parallel, prange
from libc.stdint cimport int16_t, int32_t, int64_t, uint16_t, uint32_t, uintptr_t
from libc.stdlib cimport malloc, calloc, free
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport random_standard_uniform_fill

from libc.math cimport nextafter

from pygbn.inference._shared cimport doc_count_t, topic_t, slot_add, shared_prefetch as prefetch


ctypedef fused nvk_t:
    # term-topic counts n_vk: int32 when the data hold fewer than 2^31 tokens (nvk_dtype in partial.py)
    int32_t
    int64_t


cdef enum:
    # guide cells per topic of a prior-bucket table (the cell of x = u Q_v is floor(u M), M = GUIDE_CELLS K)
    _GUIDE_CELLS = 2

#: guide cells per topic of a prior-bucket table
GUIDE_CELLS = _GUIDE_CELLS

cdef extern from *:
    """
    /* margins of the float32 inversion tables (see _cum_less): relative, then absolute */
    #define PYGBN_CUMF_REL 2.384185791015625e-07     /* 2^-22 */
    #define PYGBN_CUMF_ABS 7.174648137343064e-43     /* 2^-140 */
    """
    const double CUMF_REL "PYGBN_CUMF_REL"
    const double CUMF_ABS "PYGBN_CUMF_ABS"


cdef struct Doc:
    # one document's state while it is swept (per-thread scratch)
    Py_ssize_t n_topics_total   # K
    int32_t *nj                 # n_jk, dense (zero outside the document's topics)
    int32_t *pos                # position of topic k in the compact list (-1 if n_jk = 0)
    int32_t *topics             # compact list: the topics with n_jk > 0, in no order,
    double *cnt                 # their n_jk (as doubles)
    int32_t n_topics
    const double *a             # a_jk
    const double *b             # the proposal's shared shape b_k
    double lam                  # lambda_j
    double u_prior              # the uniform of the next prior-bucket draw


cdef inline void _add(Doc *d, int32_t k, double phik) noexcept nogil:
    """One more token of topic k (``phik = phi_vk`` of the current term)."""
    cdef int32_t p = d.pos[k]
    if p < 0:
        p = d.n_topics
        d.pos[k] = p
        d.topics[p] = k
        d.cnt[p] = 0.0
        d.n_topics += 1
    d.cnt[p] += 1.0
    d.nj[k] += 1


cdef inline void _remove(Doc *d, int32_t k, double phik) noexcept nogil:
    """One token of topic k fewer (swap-removal from the list when n_jk reaches 0)."""
    cdef int32_t p = d.pos[k], last
    d.nj[k] -= 1
    if d.nj[k] == 0:
        last = d.n_topics - 1
        if p != last:
            d.topics[p] = d.topics[last]
            d.cnt[p] = d.cnt[last]
            d.pos[d.topics[p]] = p
        d.pos[k] = -1
        d.n_topics = last
    else:
        d.cnt[p] -= 1.0


cdef inline double _cell_weights(Doc *d, const double *phi_v, const double *phi_next) noexcept nogil:
    """The document bucket's total ``D = sum_i phi_vk_i n_jk_i`` over the document's
    topics ``k_i``.  ``phi_next`` (the next cell's row of Phi, or NULL): its
    entries at the same topics are prefetched."""
    cdef double s = 0.0
    cdef Py_ssize_t i
    cdef const int32_t *tp = d.topics
    cdef const double *cn = d.cnt
    if phi_next != NULL:
        for i in range(d.n_topics):
            prefetch(phi_next + tp[i])
            s += phi_v[tp[i]] * cn[i]
        return s
    for i in range(d.n_topics):
        s += phi_v[tp[i]] * cn[i]
    return s


cdef inline int32_t _pick_doc(const Doc *d, const double *phi_v, double u) noexcept nogil:
    """The topic at ``u`` (in ``[0, D)``) of the document bucket, weights
    ``phi_vk n_jk`` in the list's order; the last topic of positive weight if
    rounding overshoots."""
    cdef Py_ssize_t i, last = 0
    cdef double t
    cdef const int32_t *tp = d.topics
    cdef const double *cn = d.cnt
    for i in range(d.n_topics):
        t = phi_v[tp[i]] * cn[i]
        if t > 0.0:
            last = i
            if u < t:
                return tp[i]
            u -= t
    return tp[last]


cdef inline bint _cum_less(const double *phi_v, const double *b, Py_ssize_t k, double u, double Q,
                           const float *cumf) noexcept nogil:
    """``x < C_k`` exactly, where ``x = u Q`` (clamped below ``Q``) and
    ``C_k = sum_{i <= k} phi_vi b_i`` (left to right), from the float32 table
    ``cumf[k] = C_k / Q``: decided by ``cumf`` when ``u`` is outside
    ``cumf[k] (1 +- 2^-22) +- 2^-140`` (then the rounding of ``cumf``
    (2^-24 relative, 2^-150 absolute), of ``C_k / Q`` and of ``u Q`` (2^-53
    each) cannot change the answer), else by forming ``C_k`` and ``x`` as the
    scan of :c:func:`_pick_prior` does (about ``k 2^-21`` of the draws)."""
    cdef double c = cumf[k], x, s = 0.0
    cdef Py_ssize_t i
    if u < c * (1.0 - CUMF_REL) - CUMF_ABS:
        return True
    if u > c * (1.0 + CUMF_REL) + CUMF_ABS:
        return False
    x = u * Q
    if not (x < Q):
        x = nextafter(Q, 0.0)
    for i in range(k + 1):
        s += phi_v[i] * b[i]
    return x < s


cdef inline int32_t _pick_prior(const double *phi_v, const double *b, Py_ssize_t K, double u, double Q,
                                const float *cumf, const topic_t *guide) noexcept nogil:
    """The prior bucket by inversion at ``x = u Q`` (``u`` uniform in [0, 1), ``Q = C_{K-1} > 0``):
    the first ``k`` with ``x < C_k``, ``C_k = sum_{i <= k} phi_vi b_i`` (``x``
    clamped below Q).  With the term's table (``cumf`` = C / Q in float32,
    ``guide`` of ``M = GUIDE_CELLS K`` cells) from guide entry
    ``floor(u M)`` in O(1) expected steps (none when the entry is pure,
    stored as ``~k``: its whole cell lies inside topic k's interval), each
    comparison exact (:c:func:`_cum_less`); else by an O(K) scan that forms the
    same sums in the same order: both give the same topic for the same ``u``."""
    cdef Py_ssize_t i, k, M = _GUIDE_CELLS * K
    cdef int32_t gk
    cdef double c = 0.0, x
    if cumf != NULL:
        i = <Py_ssize_t> (u * M)
        if i >= M:
            i = M - 1
        gk = guide[i]
        if gk < 0:
            return ~gk
        k = gk
        while k > 0 and _cum_less(phi_v, b, k - 1, u, Q, cumf):
            k -= 1
        while k < K - 1 and not _cum_less(phi_v, b, k, u, Q, cumf):
            k += 1
        return <int32_t> k
    x = u * Q
    if not (x < Q):
        x = nextafter(Q, 0.0)
    for k in range(K - 1):
        c += phi_v[k] * b[k]
        if x < c:
            return <int32_t> k
    return <int32_t> (K - 1)


cdef enum:
    # uniforms a block's buffer holds (its stream's next _UBUF numbers, taken in order)
    _UBUF = 256

cdef struct Uni:
    # one document block's uniforms: its stream and the numbers drawn from it ahead of use
    bitgen_t *gen
    Py_ssize_t pos              # the next unused entry of buf (_UBUF: empty)
    double buf[_UBUF]


cdef inline double _uniform(Uni *g) noexcept nogil:
    """The block stream's next uniform in [0, 1): the stream's numbers in order,
    ``_UBUF`` at a time (``random_standard_uniform_fill``: the numbers of
    ``random_standard_uniform``), so the draws pipeline instead of each waiting
    on a call of the bit generator (the sweep kernel took 8-10% less CPU time
    with the buffer, eleventh session).  Every number is used at most once and
    in the order drawn, so the labels' draws keep their laws exactly; the
    numbers left in the buffer when the block ends are dropped (they are
    independent of everything drawn), so the stream's position after a sweep,
    and with it the chain for a given seed, differs from a call per number."""
    if g.pos == _UBUF:
        random_standard_uniform_fill(g.gen, _UBUF, g.buf)
        g.pos = 0
    g.pos += 1
    return g.buf[g.pos - 1]


cdef inline int32_t _propose(Uni *g, Doc *d, const double *phi_v, double D, double Q,
                             double P, const float *cumf, const topic_t *guide) noexcept nogil:
    """A draw from ``q(k) ∝ phi_vk n_jk + lambda_j phi_vk b_k``: a uniform picks
    the document bucket ``D`` (weights ``w``) or the prior bucket
    ``P = lambda_j Q_v`` (``Q = Q_v``); the prior bucket's position is the
    uniform ``d.u_prior`` drawn at the previous prior draw (so that its table
    entry can be prefetched), then replaced (:c:func:`_pick_prior`)."""
    cdef double u = _uniform(g) * (D + P)
    cdef double up
    if u < D and d.n_topics > 0:
        return _pick_doc(d, phi_v, u)
    if P > 0.0:
        up = d.u_prior
        d.u_prior = _uniform(g)
        return _pick_prior(phi_v, d.b, d.n_topics_total, up, Q, cumf, guide)
    return _pick_doc(d, phi_v, _uniform(g) * D)


cdef inline void _prefetch_prior(const Doc *d, const int64_t *table_row, const topic_t *guide,
                                 int32_t v, Py_ssize_t K) noexcept nogil:
    """Prefetch the guide entry that term v's next prior draw reads."""
    cdef int64_t t = table_row[v]
    cdef Py_ssize_t i, M = _GUIDE_CELLS * K
    if t >= 0:
        i = <Py_ssize_t> (d.u_prior * M)
        prefetch(guide + t * M + (i if i < M else M - 1))


cdef inline int32_t _direct(Uni *g, const Doc *d, const double *phi_v) noexcept nogil:
    """The exact conditional ``phi_vk (n_jk + a_jk)`` by an O(K) scan (fallback when
    both buckets vanish by underflow); uniform if every weight is zero."""
    cdef Py_ssize_t k, K = d.n_topics_total
    cdef double total = 0.0, u, t
    for k in range(K):
        total += phi_v[k] * (d.nj[k] + d.a[k])
    if not (total > 0.0):
        k = <Py_ssize_t> (_uniform(g) * K)
        return <int32_t> (k if k < K else K - 1)
    u = _uniform(g) * total
    for k in range(K - 1):
        t = phi_v[k] * (d.nj[k] + d.a[k])
        if u < t:
            return <int32_t> k
        u -= t
    return <int32_t> (K - 1)


cdef inline double _weight(const Doc *d, int32_t k) noexcept nogil:
    """``w(k) = (n_jk + a_jk) / (n_jk + lambda_j b_k)``: pi / q up to constants."""
    return (d.nj[k] + d.a[k]) / (d.nj[k] + d.lam * d.b[k])


cdef int _sweep_block(bitgen_t *gen, Py_ssize_t j0, Py_ssize_t j1, const int64_t *indptr,
                      const int32_t *indices, const double *values, const int64_t *doc_ptr,
                      topic_t *labels, const double *phi, const double *prior, bint shared,
                      const double *b, double bsum, const int64_t *table_row, const float *cumf,
                      const topic_t *guide, const double *word_mass, doc_count_t *njk,
                      Py_ssize_t K, int mh_steps, bint include_self, int64_t *counters) noexcept nogil:
    """The documents ``j0:j1`` (one block), in order, from one stream; -1 if out of memory."""
    cdef Doc d
    cdef Py_ssize_t j, i, c, k
    cdef int64_t tok, n, t_i, c_end = indptr[j1]
    cdef int32_t v, s, z, t, step
    cdef double asum, D, P, Q, ws, wt
    cdef const double *phi_v
    cdef const float *cum_v
    cdef const topic_t *guide_v
    cdef Py_ssize_t M = _GUIDE_CELLS * K
    cdef doc_count_t *row
    cdef Uni uni
    cdef Uni *g = &uni
    uni.gen = gen
    uni.pos = _UBUF
    d.n_topics_total = K
    d.n_topics = 0
    d.b = b
    d.nj = <int32_t *> calloc(K, sizeof(int32_t))
    d.pos = <int32_t *> malloc(K * sizeof(int32_t))
    d.topics = <int32_t *> malloc(K * sizeof(int32_t))
    d.cnt = <double *> malloc(K * sizeof(double))
    if d.nj == NULL or d.topics == NULL or d.pos == NULL or d.cnt == NULL:
        free(d.nj); free(d.topics); free(d.pos); free(d.cnt)
        return -1
    for k in range(K):
        d.pos[k] = -1
    d.u_prior = _uniform(g)
    for j in range(j0, j1):
        tok = doc_ptr[j]
        if doc_ptr[j + 1] <= tok:
            continue
        row = njk + j * K
        for t_i in range(tok, doc_ptr[j + 1]):
            s = labels[t_i]
            if d.nj[s] == 0:
                row[s] = 0
            _add(&d, s, 0.0)
        d.a = prior if shared else prior + j * K
        if shared:
            d.lam = 1.0
        else:
            asum = 0.0
            for i in range(K):
                asum += d.a[i]
            d.lam = asum / bsum
        for c in range(indptr[j], indptr[j + 1]):
            v = indices[c]
            phi_v = phi + v * K
            Q = word_mass[v]
            P = d.lam * Q
            if table_row[v] >= 0:
                cum_v = cumf + table_row[v] * K
                guide_v = guide + table_row[v] * M
            else:
                cum_v = NULL
                guide_v = NULL
            D = _cell_weights(&d, phi_v, phi + indices[c + 1] * K if c + 1 < indptr[j + 1] else NULL)
            n = <int64_t> values[c]
            if c + 1 < c_end:
                # the guide entry of the next cell's first prior draw, should this cell make none
                # (issued now, a cell earlier than the prefetch after this cell's last draw)
                _prefetch_prior(&d, table_row, guide, indices[c + 1], K)
            for i in range(n):
                s = labels[tok]
                if not include_self:
                    _remove(&d, s, phi_v[s])
                    D -= phi_v[s]
                    if D < 0.0 or d.n_topics == 0:
                        D = _cell_weights(&d, phi_v, NULL)
                if not (D + P > 0.0) or mh_steps == -2:
                    z = _direct(g, &d, phi_v)
                elif shared or mh_steps < 0:
                    z = _propose(g, &d, phi_v, D, Q, P, cum_v, guide_v)
                else:
                    # independence Metropolis-Hastings from the current label
                    z = s
                    ws = _weight(&d, s)
                    for step in range(mh_steps):
                        t = _propose(g, &d, phi_v, D, Q, P, cum_v, guide_v)
                        counters[0] += 1
                        if t == z:
                            counters[1] += 1
                            continue
                        wt = _weight(&d, t)
                        if wt >= ws or _uniform(g) * ws < wt:
                            z = t
                            ws = wt
                            counters[1] += 1
                if include_self:
                    _remove(&d, s, phi_v[s])
                    D -= phi_v[s]
                _add(&d, z, phi_v[z])
                D += phi_v[z]
                labels[tok] = <topic_t> z
                tok += 1
                # the guide entry of the next token's prior draw (should it make one)
                if i + 1 < n:
                    _prefetch_prior(&d, table_row, guide, v, K)
                elif c + 1 < c_end:
                    _prefetch_prior(&d, table_row, guide, indices[c + 1], K)
        for i in range(d.n_topics):
            z = d.topics[i]
            row[z] = <doc_count_t> d.nj[z]
            d.nj[z] = 0
            d.pos[z] = -1
        d.n_topics = 0
    free(d.nj); free(d.topics); free(d.pos); free(d.cnt)
    return 0


def partial_sweep(const int64_t[::1] indptr, const int32_t[::1] indices, const double[::1] values,
                  const int64_t[::1] doc_ptr, topic_t[::1] labels, const double[:, ::1] phi,
                  const double[:, ::1] prior, const double[::1] b, const int64_t[::1] table_row,
                  const float[:, ::1] cum, const topic_t[:, ::1] guide, const double[::1] word_mass,
                  const int64_t[::1] bounds, const uintptr_t[::1] streams, doc_count_t[:, ::1] njk,
                  int mh_steps, int n_threads, bint include_self=False,
                  bint shared_prior=False):
    """One partially collapsed sweep over the documents of ``bounds`` (see the module).

    Parameters
    ----------
    indptr, indices, values : int64, int32, float64 arrays
        The documents' rows as CSR: row ``j`` is ``indptr[j]:indptr[j + 1]``
        (``indptr`` may be a slice of the whole data's: its entries index
        ``indices`` and ``values``).
    doc_ptr : int64 array
        Labels of row ``j`` are ``labels[doc_ptr[j]:doc_ptr[j + 1]]`` (same rows
        as ``indptr``).
    labels : int16 or int32 array
        The topic of every token, updated in place.
    phi : float64 (V, K)
        Phi^(1) (columns on the simplex, entries > 0).
    prior : float64 (n_rows, K) or (1, K)
        ``a_jk`` of each row, or (``shared_prior``) one row shared by all; > 0.
    b : float64 (K,)
        The proposal's shared shape (> 0).
    table_row, cum, guide, word_mass : (V,), (n_tables, K), (n_tables, GUIDE_CELLS K), (V,)
        The prior bucket's tables (:func:`build_prior_tables`; ``cum`` float32,
        ``guide`` of the labels' type): term v's row of ``cum`` and ``guide``
        (-1: no table, an O(K) scan) and its total ``Q_v = sum_k phi_vk b_k``.
    bounds, streams
        Document blocks (row indices) and one stream address per block (the
        block's uniforms, taken from it 256 at a time; the rest of the last
        batch is dropped).
    njk : uint16 or int32 (n_rows, K)
        ``n_jk`` of the rows, consistent with ``labels`` (updated).
    mh_steps : int
        Metropolis-Hastings steps per token when the prior has a row per document
        (test hooks: -1 takes every proposal, a wrong conditional when the
        documents' priors differ; -2 draws every label exactly by an O(K) scan).
    include_self : bool, default=False
        Test hook only: do not take the token out of ``n_jk`` before its draw
        (a wrong conditional that the tests must catch).
    shared_prior : bool, default=False
        ``prior`` is one row shared by all documents and equal to ``b``: the
        proposal is the exact conditional and no Metropolis-Hastings step is
        made (T = 1).  (Not inferred from ``prior``'s shape: a chunk of one
        document also has one row.)

    Returns
    -------
    (proposals, accepted) : (int, int)
        Metropolis-Hastings proposals made and accepted (0, 0 when exact).
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1, K = phi.shape[1], blk, i
    cdef bint shared = shared_prior
    cdef double bsum = 0.0
    cdef int n_failed = 0
    cdef int64_t[:, ::1] counters = None
    if n_blocks <= 0:
        return 0, 0
    import numpy as np
    counters = np.zeros((n_blocks, 2), dtype=np.int64)
    for i in range(K):
        bsum += b[i]
    for blk in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        if _sweep_block(<bitgen_t *> streams[blk], bounds[blk], bounds[blk + 1], &indptr[0],
                        &indices[0] if indices.shape[0] else NULL, &values[0] if values.shape[0] else NULL,
                        &doc_ptr[0], &labels[0] if labels.shape[0] else NULL, &phi[0, 0], &prior[0, 0],
                        shared, &b[0], bsum, &table_row[0],
                        &cum[0, 0] if cum.shape[0] else NULL, &guide[0, 0] if guide.shape[0] else NULL,
                        &word_mass[0],
                        &njk[0, 0] if njk.shape[0] else NULL, K, mh_steps,
                        include_self, &counters[blk, 0]) < 0:
            n_failed += 1
    if n_failed:
        raise MemoryError(f"partial_sweep: scratch memory of {n_failed} document block(s) could not be allocated")
    tot = np.asarray(counters).sum(axis=0)
    return int(tot[0]), int(tot[1])


cdef enum:
    # terms whose prior sums are formed side by side in build_prior_tables
    _SUM_ROWS = 4


cdef inline void _prior_sums(const double *phi_v, const double *b, Py_ssize_t K, Py_ssize_t rows,
                             double *cs) noexcept nogil:
    """``cs[r K + k] = C_k`` of the terms of the ``rows`` (at most ``_SUM_ROWS``) rows of
    Phi from ``phi_v``: ``C_k = sum_{i <= k} phi_vi b_i``, added left to right.  Four
    rows' sums are formed side by side (four independent chains of additions, each
    the same operations in the same order as one row's, so the same bits)."""
    cdef Py_ssize_t k, r
    cdef double c0 = 0.0, c1 = 0.0, c2 = 0.0, c3 = 0.0, c
    if rows == _SUM_ROWS:
        for k in range(K):
            c0 = c0 + phi_v[k] * b[k]
            c1 = c1 + phi_v[K + k] * b[k]
            c2 = c2 + phi_v[2 * K + k] * b[k]
            c3 = c3 + phi_v[3 * K + k] * b[k]
            cs[k] = c0
            cs[K + k] = c1
            cs[2 * K + k] = c2
            cs[3 * K + k] = c3
        return
    for r in range(rows):
        c = 0.0
        for k in range(K):
            c = c + phi_v[r * K + k] * b[k]
            cs[r * K + k] = c


@cython.cdivision(True)
cdef inline void _prior_table(const double *cs, Py_ssize_t K, float *cum, topic_t *guide, double *edge,
                              int32_t *cnt) noexcept nogil:
    """One term's inversion table from its sums ``cs`` (``C_k``, ``Q = C_{K-1}``):
    ``cum`` and ``guide`` as :func:`build_prior_tables` describes them, with
    ``edge`` (M + 1 doubles) and ``cnt`` (M + 1 int32) as scratch.

    The guide entry of cell i (lower end ``lo_i = Q i / M``) is the first k with
    ``C_k > lo_i``, at most K - 1: since C and lo are non-decreasing, that is
    ``#{k < K - 1: C_k <= lo_i}``, the number of k < K - 1 whose first cell
    with ``lo >= C_k`` is at or before i.  Each k's first cell is found from its
    estimate ``floor(C_k M / Q)`` and settled by comparisons with the same
    ``lo`` values (exact; the estimate only decides where the comparisons
    start, so it is read off ``cum``, which no Q overflows), counted in
    ``cnt``, and the entries are their running sums: the same entries as a merge of C with the cells, without its
    data-dependent branch per cell (the merge's advance of k, taken about once
    every two cells, was most of the table build's time)."""
    cdef Py_ssize_t k, i, e, M = _GUIDE_CELLS * K
    cdef double Q = cs[K - 1], inv, lo, hi, margin, c, dM = <double> M
    cdef bint pure
    if Q >= 1e-290:
        inv = 1.0 / Q
        for k in range(K):
            cum[k] = <float> (cs[k] * inv)
    else:                                      # 1 / Q would lose precision or overflow
        for k in range(K):
            cum[k] = <float> (cs[k] / Q) if Q > 0.0 else 0.0
    margin = Q * 9.094947017729282e-13          # Q 2^-40, far above the rounding of u Q
    # the cells' ends Q i / M, no counts yet
    for i in range(M + 1):
        # (i through int32: a conversion the loop vectorises; from the 64-bit index the build took
        # 23.4-23.6 ms against 20.4-20.6, V = 20,000, K = 100)
        edge[i] = Q * <double> <int32_t> i / dM
        cnt[i] = 0
    for k in range(K - 1):
        c = cs[k]
        e = <Py_ssize_t> (cum[k] * dM)          # the estimate (C_k / Q to float32, times M; any Q)
        if e > M:
            e = M
        while e > 0 and edge[e - 1] >= c:
            e = e - 1
        while e < M and edge[e] < c:
            e = e + 1
        cnt[e] += 1                             # cell e is the first with lo >= C_k (M: none)
    k = 0
    for i in range(M):
        k = k + cnt[i]
        lo = edge[i]
        hi = edge[i + 1]
        # pure: every x = u Q with floor(u M) = i lies in topic k's interval
        pure = ((k == 0) | (cs[k - (k > 0)] <= lo - margin)) & ((k == K - 1) | (cs[k] > hi + margin))
        guide[i] = <topic_t> (k ^ (-(<Py_ssize_t> pure)))


def build_prior_tables(const double[:, ::1] phi, const double[::1] b, const int64_t[::1] table_row,
                       float[:, ::1] cum, topic_t[:, ::1] guide, double[::1] mass, int n_threads):
    """The prior bucket's totals and tables: ``mass[v] = Q_v = sum_k phi_vk b_k``
    for every term, and for a term with ``table_row[v] = t >= 0`` the
    inversion table of ``w_k = phi_vk b_k``: ``cum[t, k] = C_k / Q_v`` in
    float32, ``C_k = sum_{i <= k} w_i`` (left to right, the sums an O(K) scan
    of the sweep forms; the sweep's comparisons with it are exact, see
    ``_cum_less``) and the guide over ``M = GUIDE_CELLS K`` cells:
    ``guide[t, i]`` = the first k with ``C_k > i Q_v / M`` (Chen & Asau's
    indexed search: the topic of ``x = u Q_v`` is found from
    ``guide[t, floor(u M)]`` in O(1) expected steps), stored as ``~k`` (pure)
    when topic k's interval covers the whole cell ``[i Q_v / M, (i + 1) Q_v / M]``
    with a margin of ``2^-40 Q_v`` (then every such x lies in it, whatever the
    rounding of ``u Q_v`` and ``u M``, and the draw reads nothing else).  No randomness:
    parallel over groups of ``_SUM_ROWS`` (4) terms, whose sums are formed side by
    side (:c:func:`_prior_sums`: each term's the same bits as alone), the same
    tables for any thread count.
    ``guide``'s type is the labels' (``K <= 32767`` for int16).
    """
    cdef Py_ssize_t V = phi.shape[0], K = phi.shape[1], grp, r, v0, rows
    cdef Py_ssize_t n_groups = (V + _SUM_ROWS - 1) // _SUM_ROWS
    cdef int64_t t
    cdef double *cs
    cdef double *edge
    cdef int32_t *cnt
    cdef int n_failed = 0
    if V == 0:
        return
    if K == 0:
        mass[:] = 0.0
        return
    cs = NULL   # set by every thread below (Cython copies them in as firstprivate)
    edge = NULL
    cnt = NULL
    with nogil, parallel(num_threads=n_threads):
        # per thread: the rows' sums C_k, and the guide's cell ends and counts
        cs = <double *> malloc((_SUM_ROWS * K + _GUIDE_CELLS * K + 1) * sizeof(double))
        edge = cs + _SUM_ROWS * K if cs != NULL else NULL
        cnt = <int32_t *> malloc((_GUIDE_CELLS * K + 1) * sizeof(int32_t))
        for grp in prange(n_groups, schedule="dynamic", chunksize=16):
            if cs == NULL or cnt == NULL:
                n_failed += 1
            else:
                v0 = grp * _SUM_ROWS
                rows = V - v0 if V - v0 < _SUM_ROWS else _SUM_ROWS
                _prior_sums(&phi[v0, 0], &b[0], K, rows, cs)
                for r in range(rows):
                    mass[v0 + r] = cs[r * K + K - 1]
                    t = table_row[v0 + r]
                    if t >= 0:
                        _prior_table(cs + r * K, K, &cum[t, 0], &guide[t, 0], edge, cnt)
        free(cs)
        free(cnt)
    if n_failed:
        raise MemoryError("build_prior_tables: scratch memory could not be allocated")


def prior_topics(const double[:, ::1] phi, const double[::1] b, const int64_t[::1] table_row,
                 const float[:, ::1] cum, const topic_t[:, ::1] guide, const double[::1] mass,
                 const int64_t[::1] terms, const double[::1] u, int32_t[::1] out):
    """``out[i]``: the prior bucket's topic for the uniform ``u[i]`` (in [0, 1)) and
    term ``terms[i]``, as the sweep draws it (its table when it has one, else
    the scan).  For the tests."""
    cdef Py_ssize_t i, K = phi.shape[1]
    cdef int64_t v, t
    for i in range(u.shape[0]):
        v = terms[i]
        t = table_row[v]
        out[i] = _pick_prior(&phi[v, 0], &b[0], K, u[i], mass[v],
                             &cum[t, 0] if t >= 0 else NULL, &guide[t, 0] if t >= 0 else NULL)


def count_doc_labels(const int64_t[::1] doc_ptr, const topic_t[::1] labels, doc_count_t[:, ::1] njk):
    """``njk`` (J, K) overwritten with the documents' label counts."""
    cdef Py_ssize_t J = njk.shape[0], K = njk.shape[1], j, k
    cdef int64_t i
    with nogil:
        for j in range(J):
            for k in range(K):
                njk[j, k] = 0
            for i in range(doc_ptr[j], doc_ptr[j + 1]):
                njk[j, labels[i]] += 1


def count_term_labels(const int64_t[::1] indptr, const int32_t[::1] indices, const double[::1] values,
                      const topic_t[::1] labels, nvk_t[:, ::1] nvk):
    """``nvk`` (V, K) overwritten with the term-topic counts of the labels (tokens in CSR order)."""
    nvk[:, :] = 0
    add_term_labels(0, indices.shape[0], 0, indices, values, labels, nvk, 1)


cdef inline void _add_cell(nvk_t *out, Py_ssize_t K, const int32_t *rmap, const int64_t *sstart, uint32_t *sl,
                           int32_t v, const topic_t *lab, int64_t n) noexcept nogil:
    """Add the ``n`` tokens of one cell of term v (labels ``lab``) to v's row of n_vk:
    its dense row (``rmap[v]``, or v where ``rmap`` is NULL) or, where that is -1, its slots."""
    cdef int32_t row = rmap[v] if rmap != NULL else v
    cdef int64_t i
    if row >= 0:
        for i in range(n):
            out[row * K + lab[i]] += 1
    else:
        for i in range(n):
            slot_add(&sl[sstart[v]], sstart[v + 1] - sstart[v], <uint32_t> lab[i], 1)


def add_term_labels(int64_t c0, int64_t c1, int64_t tok0, const int32_t[::1] indices,
                    const double[::1] values, const topic_t[::1] labels, nvk_t[:, ::1] nvk,
                    int n_threads, const int32_t[::1] row_map=None, const int64_t[::1] slot_start=None,
                    uint32_t[::1] slots=None, const int64_t[::1] term_split=None):
    """Add the term-topic counts of the tokens of cells ``c0:c1`` (the first at
    ``labels[tok0]``, tokens in CSR order) into ``nvk`` (V, K), or, with
    ``row_map``, ``slot_start`` and ``slots``, into a
    :class:`pygbn.inference.term_counts.TermCounts`: term v's row ``row_map[v]``
    of ``nvk`` when that is >= 0, else its slots.

    With ``n_threads`` > 1, thread t counts the terms ``term_split[t] <= v <
    term_split[t + 1]`` (``term_split``: n_threads + 1 increasing bounds from 0 to
    V; by default V / n_threads terms each), each reading all the cells: no two
    threads write the same entry (nor, but at the bounds, the same cache line),
    integer counts are the same in any order, and a document's cells, sorted by
    term, change owner at most n_threads - 1 times (a predictable branch).
    :meth:`pygbn.inference.partial.PartialState.term_split` balances the
    threads' tokens."""
    cdef Py_ssize_t K = nvk.shape[1], t, nt = max(n_threads, 1)
    cdef Py_ssize_t V = row_map.shape[0] if row_map is not None and row_map.shape[0] > 0 else nvk.shape[0]
    cdef int64_t c, tok, n, lo, hi
    cdef int32_t v
    cdef bint use_slots = row_map is not None and row_map.shape[0] > 0
    cdef const int32_t *rmap = &row_map[0] if use_slots else NULL
    cdef const int64_t *sstart = &slot_start[0] if use_slots else NULL
    cdef uint32_t *sl = &slots[0] if use_slots and slots.shape[0] > 0 else NULL
    cdef nvk_t *out = &nvk[0, 0] if nvk.shape[0] else NULL
    cdef const topic_t *lab = &labels[0] if labels.shape[0] else NULL
    cdef const int64_t[::1] split
    if c1 <= c0 or (out == NULL and sl == NULL):
        return
    if nt > 1:
        if term_split is None:
            import numpy as np
            term_split = np.arange(nt + 1, dtype=np.int64) * V // nt
        split = term_split
    if nt == 1:
        with nogil:
            tok = tok0
            for c in range(c0, c1):
                n = <int64_t> values[c]
                _add_cell(out, K, rmap, sstart, sl, indices[c], lab + tok, n)
                tok = tok + n
        return
    for t in prange(nt, nogil=True, num_threads=nt, schedule="static", chunksize=1):
        lo = split[t]
        hi = split[t + 1]
        tok = tok0
        for c in range(c0, c1):
            v = indices[c]
            n = <int64_t> values[c]
            if v >= lo and v < hi:
                _add_cell(out, K, rmap, sstart, sl, v, lab + tok, n)
            tok = tok + n


def doc_token_offsets(const int64_t[::1] indptr, const double[::1] values, int64_t[::1] out):
    """``out[j]`` = the tokens of the documents before j (``out`` has one entry per
    row pointer): the offsets of the documents' labels, without the float64
    cumulative sums of every cell that numpy would make."""
    cdef Py_ssize_t j, c
    cdef int64_t total = 0
    with nogil:
        for j in range(indptr.shape[0]):
            out[j] = total
            if j + 1 < indptr.shape[0]:
                for c in range(indptr[j], indptr[j + 1]):
                    total += <int64_t> values[c]
