# The partial sweep's document bucket (pygbn.inference._partial): a document's state while it
# is swept (its dense n_jk row and its compact topic list), the list bucket's pass and search,
# each term's top set and bound with a stored cell's state for the rejection draw, and the
# switch between the two (see _partial's module docstring, "Proposal").

from libc.float cimport DBL_MIN
from libc.stdint cimport int32_t, int64_t, uint8_t

from pygbn.inference._shared cimport doc_count_t, shared_prefetch as prefetch

cdef extern from *:
    """
    /* the top sets' thinning bytes: 1 - 2^-50 (see _top_set) */
    #define PYGBN_QSCALE 0.9999999999999991118215802998747676610946655273437
    """
    const double QSCALE "PYGBN_QSCALE"


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
    double lam                  # lambda_j; with ``thin``, c_j = max_k a_jk / b_k
    bint thin                   # the prior bucket's draws are thinned by a_jk / (c_j b_k) (exact, T >= 2)
    double u_prior              # the uniform of the next prior-bucket draw
    int64_t n_prior             # prior-bucket draws made (a speed statistic: which terms get tables)


cdef struct Sweep:
    # what every document of a block reads
    const int32_t *indices
    const double *values
    const double *phi
    const int64_t *table_row
    const float *cumf
    const void *guide           # (topic_t: a struct field cannot be of a fused type)
    const double *word_mass
    const double *top           # the top sets (NULL: the list bucket for every document)
    Py_ssize_t W                # a top-set row's width
    Py_ssize_t m                # entries of a top set
    Py_ssize_t K
    int mh_steps                # (as partial_sweep's)
    bint exact                  # the proposal is the draw (shared prior, mh_steps <= 0): no MH step
    bint include_self


cdef inline void _add(Doc *d, int32_t k) noexcept nogil:
    """One more token of topic k."""
    cdef int32_t p = d.pos[k]
    if p < 0:
        p = d.n_topics
        d.pos[k] = p
        d.topics[p] = k
        d.cnt[p] = 0.0
        d.n_topics += 1
    d.cnt[p] += 1.0
    d.nj[k] += 1


cdef inline void _remove(Doc *d, int32_t k) noexcept nogil:
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
    """The list bucket's total ``D = sum_i phi_vk_i n_jk_i`` over the document's
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
    """The topic at ``u`` (in ``[0, D)``) of the list bucket, weights
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


cdef struct Cell:
    # the document bucket's pieces for one stored cell (term v) of the document
    Py_ssize_t m                # entries of the term's top set
    const double *tphi          # their excesses phi_vk - h over the bound, largest first
    const int32_t *tk           # their topics
    const uint8_t *sq           # q_k of every topic: 255 in the set (accepted), else q_k / 256 <= phi_vk / h (see _top_set)
    double h                    # bound: phi_vk <= h for every topic k outside the top set
    double inv_h                # 1 / h (0 when h = 0)
    double E                    # sum over the top set of (phi_vk - h) n_jk (formed at each token)
    int64_t n_doc               # its tokens
    int64_t self_pos            # the token's position among them
    int64_t n_other             # tokens that the R piece picks from (n_doc - 1, or n_doc with include_self)


cdef inline Py_ssize_t top_size(Py_ssize_t width, Py_ssize_t K) noexcept nogil:
    """Entries m of a top-set row of ``width = 2 + m + ceil(m / 2) + ceil(K / 8)`` doubles."""
    return (2 * (width - 2 - (K + 7) // 8)) // 3


cdef inline void _cell_start(Cell *cl, const double *top_v, Py_ssize_t m) noexcept nogil:
    """Read term v's top set (``top_v``, see :func:`build_prior_tables`) for a cell."""
    cl.m = m
    cl.h = top_v[0]
    cl.inv_h = top_v[1]
    cl.tphi = top_v + 2
    cl.tk = <const int32_t *> (top_v + 2 + m)
    cl.sq = <const uint8_t *> (top_v + 2 + m + (m + 1) // 2)


cdef inline double _top_mass(const Cell *cl, const Doc *d) noexcept nogil:
    """``E = sum_{k in top} (phi_vk - h) n_jk`` from the counts (two chains of additions)."""
    cdef Py_ssize_t i
    cdef double e0 = 0.0, e1 = 0.0
    for i in range(0, cl.m - 1, 2):
        e0 += cl.tphi[i] * d.nj[cl.tk[i]]
        e1 += cl.tphi[i + 1] * d.nj[cl.tk[i + 1]]
    if cl.m % 2:
        e0 += cl.tphi[cl.m - 1] * d.nj[cl.tk[cl.m - 1]]
    return e0 + e1


cdef inline int32_t _pick_top(const Cell *cl, const Doc *d, double u) noexcept nogil:
    """The topic at ``u`` (in ``[0, E)``) of the top set's weights ``(phi_vk - h) n_jk``,
    largest phi first: the first whose running sum exceeds ``u`` (the count of the
    running sums at or below ``u``, without branches: they never decrease); the
    last of positive weight if rounding overshoots (-1 if none has, which a sum
    of products that are all 0 cannot give)."""
    cdef Py_ssize_t i, below = 0, last = -1
    cdef double s = 0.0
    for i in range(cl.m):
        s = s + cl.tphi[i] * d.nj[cl.tk[i]]
        below += s <= u
    if below < cl.m:
        return cl.tk[below]
    for i in range(cl.m):
        if cl.tphi[i] * d.nj[cl.tk[i]] > 0.0:
            last = i
    return cl.tk[last] if last >= 0 else -1


cdef inline bint _thin(double u, double h, uint8_t q, const double *phi_v, int32_t k) noexcept nogil:
    """``u h < phi_vk`` (``u`` uniform: true with probability ``phi_vk / h``), decided
    by the byte ``q`` (``q / 256 < phi_vk / h`` with a margin, and ``(q + 2) / 256 >
    phi_vk / h`` by nearly 1/256 unless q is capped at 254: :c:func:`_top_set`)
    without reading ``phi_vk`` unless ``256 u`` is in ``[q, q + 2)``: the same
    answer for every u."""
    cdef double x = u * 256.0
    if x < q:
        return True
    if x >= q + 2:
        return False
    return u * h < phi_v[k]


cdef inline void _keep_largest(const double *phi_v, const int32_t *ks, Py_ssize_t n, Py_ssize_t L,
                               double *vals, int32_t *idx) noexcept nogil:
    """The ``L`` (<= n) largest ``phi_vk`` over the topics ``ks[0:n]`` (increasing),
    largest first, the earlier topic first among equal ones (insertion)."""
    cdef Py_ssize_t t, i, kept = 0
    cdef int32_t k
    cdef double x
    for t in range(n):
        k = ks[t] if ks != NULL else <int32_t> t
        x = phi_v[k]
        if kept < L:
            i = kept
            kept += 1
        elif x > vals[L - 1]:
            i = L - 1
        else:
            continue
        while i > 0 and vals[i - 1] < x:
            vals[i] = vals[i - 1]
            idx[i] = idx[i - 1]
            i -= 1
        vals[i] = x
        idx[i] = k


cdef inline void _top_set(const double *phi_v, Py_ssize_t K, Py_ssize_t m, double hint, double *out,
                          double *vals, int32_t *idx, int32_t *cand) noexcept nogil:
    """Term v's top set for the document bucket (``m <= K``): its ``m`` largest
    ``phi_vk``, largest first (the earlier topic first among equal ones), and the
    bound ``h`` = the (m+1)-th largest (0 when ``K = m``), so that
    ``phi_vk <= h`` for every topic outside the set.  ``out`` (``2 + m + ceil(m / 2)
    + ceil(K / 8)`` doubles) = ``[h, 1 / h (0 when h = 0), the m excesses phi_vk - h
    (>= 0; exact when phi_vk <= 2 h, else rounded once), their m topics as int32,
    K bytes q_k]``: 255 for the set's topics, else ``q_k =
    min(floor(y_k), 254)`` with ``y_k = 256 (phi_vk / h) (1 - 2^-50)`` (formed
    with at most three roundings of 2^-53, so ``q_k <= y_k < 256 phi_vk / h``,
    and ``q_k > 256 phi_vk / h - 2`` unless capped: the bounds :c:func:`_thin`
    decides by; 0 when h = 0).

    ``hint`` (> 0: the last h of the term) only saves time: when at least m + 1
    entries are at or above ``hint / 2``, those entries (in topic order) hold
    every entry at or above the (m+1)-th largest, so selecting among them gives
    the same set, order and h as selecting among all K.  ``vals``, ``idx`` (m + 1
    each) and ``cand`` (K) are scratch."""
    cdef Py_ssize_t k, i, n = 0, L = m + 1 if K > m else K
    cdef double h, sc, x, thr = 0.5 * hint
    cdef int32_t *tk = <int32_t *> (out + 2 + m)
    cdef uint8_t *sq = <uint8_t *> (out + 2 + m + (m + 1) // 2)
    if thr > 0.0 and K > m:
        for k in range(K):
            cand[n] = <int32_t> k
            n += phi_v[k] >= thr
    if n >= L and n > 0:
        _keep_largest(phi_v, cand, n, L, vals, idx)
    else:
        _keep_largest(phi_v, NULL, K, L, vals, idx)
    h = vals[m] if K > m else 0.0
    out[0] = h
    out[1] = 1.0 / h if h > 0.0 else 0.0
    for i in range(m):
        out[2 + i] = vals[i] - h                 # the excess over the bound (h <= vals[i])
        tk[i] = idx[i]
    if m % 2:
        tk[m] = 0                                # padding (the row's bytes all set)
    for k in range(K, 8 * ((K + 7) // 8)):
        sq[k] = 0
    if h >= DBL_MIN:                             # 1 / h finite: a multiplication per topic
        sc = (256.0 * out[1]) * QSCALE
        for k in range(K):
            x = phi_v[k] * sc
            sq[k] = <uint8_t> (x if x < 254.0 else 254.0)
    elif h > 0.0:
        for k in range(K):
            x = (phi_v[k] / h) * 256.0 * QSCALE
            sq[k] = <uint8_t> (x if x < 254.0 else 254.0)
    else:
        for k in range(K):
            sq[k] = 0
    for i in range(m):
        sq[tk[i]] = 255                          # the set's own topics: the R piece rejects them


cdef inline bint _use_rejection(const doc_count_t *row, Py_ssize_t K, int64_t n_doc, int64_t n_cells,
                                double p, double work) noexcept nogil:
    """The switch between the buckets for a document of ``n_doc`` tokens in ``n_cells``
    stored cells, counts ``row`` (n_jk) at the start of its sweep and ``p`` proposals a
    token: rejection when ``n_t n_cells / n_doc >= work p``, n_t its topics (the list's pass
    over them once a cell, per token, against the rejection draw's work per proposal), else
    the list; n_t counted only when the rule could hold with n_t = min(n_doc, K)."""
    cdef double bound = work * p * <double> n_doc
    cdef int64_t nz = 0
    cdef Py_ssize_t k
    if not <double> (n_doc if n_doc < K else K) * <double> n_cells >= bound:
        return False
    for k in range(K):
        nz += row[k] != 0
    return <double> nz * <double> n_cells >= bound
