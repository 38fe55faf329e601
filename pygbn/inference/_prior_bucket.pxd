# The partial sweep's prior bucket (pygbn.inference._partial): the inversion of a term's
# cumulative sums C_k = sum_{i <= k} phi_vi b_i, from its float32 table and guide or by an
# O(K) scan, and the tables' build (see _partial's build_prior_tables).

cimport cython
from libc.math cimport nextafter
from libc.stdint cimport int32_t, int64_t, uint16_t

from pygbn.inference._shared cimport topic_t, shared_prefetch as prefetch


cdef enum:
    # guide cells per topic of a prior-bucket table (the cell of x = u Q_v is floor(u M), M = GUIDE_CELLS K;
    # a record of two entries a cell, see _pick_prior).
    # Speed and memory only (the guide picks where the exact search starts). 1 (2 until the
    # twenty-ninth session): the tables' build costs less than the comparisons of the draws that
    # land in a cell that is not pure add, 0.987 of the sweep at K = 100 and 0.991 at K = 400 on
    # the 5.2M-token benchmark corpus (docs/benchmarks.md, "Twenty-ninth session"); a table
    # takes 8 bytes a factor (float32 sums, and since the thirtieth session records of two
    # entries of the labels' type, int16 for K <= 32767)
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


cdef inline Py_ssize_t _guide_width(Py_ssize_t K) noexcept nogil:
    """Entries of a term's guide row: a record of two entries for each of its ``M =
    GUIDE_CELLS K`` cells, and one more record (topic K - 1) after them."""
    return 2 * _GUIDE_CELLS * K + 2


cdef inline int32_t _pick_prior(const double *phi_v, const double *b, Py_ssize_t K, double u, double Q,
                                const float *cumf, const topic_t *guide) noexcept nogil:
    """The prior bucket by inversion at ``x = u Q`` (``u`` uniform in [0, 1), ``Q = C_{K-1} > 0``):
    the first ``k`` with ``x < C_k``, ``C_k = sum_{i <= k} phi_vi b_i`` (``x``
    clamped below Q).  With the term's table (``cumf`` = C / Q in float32,
    ``guide``: a record of two entries for each of ``M = GUIDE_CELLS K`` cells)
    from the record of cell ``i = floor(u M)``: its topic ``g`` (stored as ``~g``
    when the cell is pure: its whole range lies inside topic g's interval), and
    where it is not, the cell's first and last boundaries to 1/256 of the cell
    (:c:func:`_prior_table`): for the position ``q = floor(256 (u M - i))``,
    ``q < A`` gives ``g`` and ``q > B`` gives the next record's topic (the
    topic after the cell's last boundary), each only where every ``x`` of such a
    ``u`` provably lies in that topic's interval; else (the ``u`` between the
    first and last boundary, or within the margins) the search from ``g``, each
    comparison exact (:c:func:`_cum_less`).  Without a table by an O(K) scan
    that forms the same sums in the same order: every way gives the same topic
    for the same ``u``."""
    cdef Py_ssize_t i, k, M = _GUIDE_CELLS * K
    cdef int32_t gk
    cdef int q
    cdef uint16_t ab
    cdef double c = 0.0, x, t
    if cumf != NULL:
        t = u * M
        i = <Py_ssize_t> t
        q = 0                                   # (i clamped: no quick answer)
        if i >= M:
            i = M - 1
        else:
            q = <int> ((t - <double> i) * 256.0)
        gk = guide[2 * i]
        if gk < 0:
            return ~gk
        if 1 <= q <= 254:
            ab = <uint16_t> guide[2 * i + 1]
            if q < <int> (ab & 255):
                return gk
            if q > <int> (ab >> 8):
                gk = guide[2 * i + 2]
                return ~gk if gk < 0 else gk
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
    """Prefetch the guide record that term v's next prior draw (at ``u_prior``) reads."""
    cdef int64_t t = table_row[v]
    cdef Py_ssize_t i, M = _GUIDE_CELLS * K
    if t >= 0:
        i = <Py_ssize_t> (u_prior * M)
        prefetch(guide + t * _guide_width(K) + 2 * (i if i < M else M - 1))


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


cdef enum:
    # the quick answers of the guide records are made for tables of at most this many cells
    # (the rounding of the cell positions, at most M 2^-50 of a cell, stays below the margin)
    _QUICK_CELLS_MAX = 1 << 24

cdef extern from *:
    """
    /* the margin of the guide records' quick answers, in cells (2^-24) */
    #define PYGBN_QUICK_MARGIN 5.9604644775390625e-08
    /* floor(256 y) clamped to [0, 255], for |y| < 2^40 (truncation is floor from 0 up, and
       the negative values clamp to 0; integer selects, not branches: GCC turns the clamps of
       a double into branches, which the build of the tables mispredicts) */
    static inline Py_ssize_t pygbn_quarter(double y) {
        int64_t t = (int64_t) (256.0 * y);
        t = t > 0 ? t : 0;
        return (Py_ssize_t) (t < 255 ? t : 255);
    }
    /* The second entry of cell i's guide record (see _prior_table): A | B << 8 from the
       boundaries' positions C_k M / Q (cs[k] scale, scale = M / Q), the cell's topic k and the next cell's
       topic ka (the topic after the cell's last boundary).  q < A answers k where
       1 <= q (the draw's condition): C_k lies above q's range by the margin (C_{k-1}
       lies below the cell's start, up to rounding, so below q's range from q = 1);
       q > B answers ka where q <= 254: C_{ka-1} lies below q's range by the margin
       (C_ka lies above the cell's end up to rounding, so above q's range to q = 254).
       Selects, not branches (where a boundary lies in a cell is data, and mispredicts). */
    static inline uint16_t pygbn_quick_record(const double *cs, double scale, Py_ssize_t k, Py_ssize_t ka,
                                              Py_ssize_t K, double di) {
        Py_ssize_t a = pygbn_quarter(cs[k] * scale - di - PYGBN_QUICK_MARGIN);
        Py_ssize_t e = pygbn_quarter(cs[ka - (ka > 0)] * scale - di + PYGBN_QUICK_MARGIN);
        a = k == K - 1 ? 255 : a;
        e = ka == 0 ? 0 : e;
        return (uint16_t) (a | (e << 8));
    }
    """
    uint16_t _quick_record "pygbn_quick_record"(const double *cs, double scale, Py_ssize_t k, Py_ssize_t ka,
                                                Py_ssize_t K, double di) noexcept nogil


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
    every two cells, was most of the table build's time).

    Each cell's record is that topic k (``~k`` when pure) and its quick bytes A | B << 8
    (``pygbn_quick_record``): the cell's first boundary C_k and last boundary
    C_{ka-1} (ka the next record's topic, K - 1 after the last cell; the cell holds
    the boundaries k..ka-1) as positions in 256ths of the cell, rounded so that a
    draw at position q (``1 <= q <= 254``) with ``q < A`` lies below C_k and one with
    ``q > B`` above C_{ka-1}, by a margin of 2^-24 cells over every rounding of the
    positions and of the draw's ``u M`` (:c:func:`_pick_prior`)."""
    cdef Py_ssize_t k, i, e, ka, M = _GUIDE_CELLS * K
    cdef double Q = cs[K - 1], inv = 0.0, lo, hi, margin, c, dM = <double> M, step, scale
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
    # the records' quick bytes from C_k M / Q = C_k scale, to 4 2^-53 M cells where 1 / Q and
    # scale are normal and M <= 2^24 (with the draw's rounding of u M - i, M 2^-52, below the
    # margin 2^-24), else A = 0, B = 255: no quick answers
    scale = inv * dM if (Q >= 1e-290) & (Q <= 1e290) & (M <= _QUICK_CELLS_MAX) else 0.0
    k = cnt[0]
    for i in range(M):
        ka = k + cnt[i + 1]                     # the next cell's topic (after the last: K - 1)
        lo = edge[i]
        hi = edge[i + 1]
        # pure: every x = u Q with floor(u M) = i lies in topic k's interval
        pure = ((k == 0) | (cs[k - (k > 0)] <= lo - margin)) & ((k == K - 1) | (cs[k] > hi + margin))
        guide[2 * i] = <topic_t> (k ^ (-(<Py_ssize_t> pure)))
        guide[2 * i + 1] = <topic_t> (_quick_record(cs, scale, k, ka, K, <double> i) if scale > 0.0 else 0xFF00)
        k = ka
    guide[2 * M] = <topic_t> (K - 1)            # the topic after the last cell's boundaries
    guide[2 * M + 1] = <topic_t> 0xFF00
