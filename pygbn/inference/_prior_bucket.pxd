# The partial sweep's prior bucket (pygbn.inference._partial): the inversion of a term's
# cumulative sums C_k = sum_{i <= k} phi_vi b_i, from its float32 table and guide or by an
# O(K) scan, and the tables' build (see _partial's build_prior_tables).

cimport cython
from libc.math cimport nextafter
from libc.stdint cimport int32_t, int64_t

from pygbn.inference._shared cimport topic_t, shared_prefetch as prefetch


cdef enum:
    # guide cells per topic of a prior-bucket table (the cell of x = u Q_v is floor(u M), M = GUIDE_CELLS K).
    # Speed and memory only (the guide picks where the exact search starts). 1 (2 until the
    # twenty-ninth session): the tables' build costs less than the comparisons of the draws that
    # land in a cell that is not pure add, 0.987 of the sweep at K = 100 and 0.991 at K = 400 on
    # the 5.2M-token benchmark corpus, and a table takes 6 bytes a factor instead of 8
    # (docs/benchmarks.md, "Twenty-ninth session")
    _GUIDE_CELLS = 1


cdef extern from *:
    """
    /* margins of the float32 inversion tables (see _cum_less): relative, then absolute */
    #define PYGBN_CUMF_REL 2.384185791015625e-07     /* 2^-22 */
    #define PYGBN_CUMF_ABS 7.174648137343064e-43     /* 2^-140 */
    """
    const double CUMF_REL "PYGBN_CUMF_REL"
    const double CUMF_ABS "PYGBN_CUMF_ABS"


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


cdef inline void _prefetch_prior(double u_prior, const int64_t *table_row, const topic_t *guide,
                                 int32_t v, Py_ssize_t K) noexcept nogil:
    """Prefetch the guide entry that term v's next prior draw (at ``u_prior``) reads."""
    cdef int64_t t = table_row[v]
    cdef Py_ssize_t i, M = _GUIDE_CELLS * K
    if t >= 0:
        i = <Py_ssize_t> (u_prior * M)
        prefetch(guide + t * M + (i if i < M else M - 1))


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

    The guide entry of cell i (lower end ``lo_i = (Q / M) i``, rounded) is the first k with
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
    cdef double Q = cs[K - 1], inv, lo, hi, margin, c, dM = <double> M, step
    cdef bint pure
    if Q >= 1e-290:
        inv = 1.0 / Q
        for k in range(K):
            cum[k] = <float> (cs[k] * inv)
    else:                                      # 1 / Q would lose precision or overflow
        for k in range(K):
            cum[k] = <float> (cs[k] / Q) if Q > 0.0 else 0.0
    margin = Q * 9.094947017729282e-13          # Q 2^-40, far above the rounding of u Q
    # the cells' ends Q i / M (to a few ulps: a product, not a division a cell; the
    # entries, the purity margin and the draws do not depend on those ulps), no counts yet
    step = Q / dM
    for i in range(M + 1):
        # (i through int32: a conversion the loop vectorises; from the 64-bit index the build took
        # 23.4-23.6 ms against 20.4-20.6, V = 20,000, K = 100)
        edge[i] = step * <double> <int32_t> i
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
