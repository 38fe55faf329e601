# Declarations shared by the layer-one and upper-layer kernels
# (pygbn.inference._blocked, _fixed, _upper, _collapsed, _partial).

from libc.math cimport log, exp, INFINITY
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t

ctypedef fused count_t:
    # per-document counts m of a layer (uint8 / uint16 where every document's total fits;
    # the sampler picks the type, pygbn.inference.layer_one.count_dtype)
    uint8_t
    uint16_t
    int32_t
    int64_t

ctypedef fused topic_t:
    # a token's label: int16 when K <= 32767
    int16_t
    int32_t

ctypedef fused doc_count_t:
    # n_jk of a token-level layer one: uint8 / uint16 when no document holds more than
    # 255 / 65535 tokens (pygbn.inference.collapsed_state.doc_count_dtype)
    uint8_t
    uint16_t
    int32_t


cdef inline int64_t count_max(const count_t *like) noexcept nogil:
    """The largest count an array of ``count_t`` holds (the cap of the layer-one
    splits' overflow guard); ``like`` only selects the type (NULL is fine)."""
    if count_t is uint8_t:
        return 255
    elif count_t is uint16_t:
        return 65535
    elif count_t is int32_t:
        return 2147483647
    else:
        return 9223372036854775807


cdef inline double log_rescaled_weights(const double *phi_row, const double *theta_row, Py_ssize_t k,
                                        double *w) noexcept nogil:
    """Weights ``phi_i theta_i`` rescaled by their maximum in log space, for cells
    whose products underflow: ``w[i] = exp(log phi_i + log theta_i - max)`` (0
    where a factor is 0); returns their sum (at least 1), or, when every factor
    pair has a zero, sets every ``w[i] = 1`` and returns k."""
    cdef Py_ssize_t i
    cdef double mx = -INFINITY, lw, total = 0.0
    for i in range(k):
        if phi_row[i] > 0.0 and theta_row[i] > 0.0:
            lw = log(phi_row[i]) + log(theta_row[i])
            if lw > mx:
                mx = lw
    for i in range(k):
        if phi_row[i] > 0.0 and theta_row[i] > 0.0:
            w[i] = exp(log(phi_row[i]) + log(theta_row[i]) - mx)
        else:
            w[i] = 0.0
        total += w[i]
    if not total > 0.0:
        for i in range(k):
            w[i] = 1.0
        total = <double> k
    return total


# Slots of a sparse term row of layer one's term-factor counts
# (pygbn.inference.term_counts.TermCounts): factor k + 1 in the high 16 bits, its
# count in the low 16; 0 is an empty slot, and a row's slots fill in order.
cdef enum:
    SLOT_SHIFT = 16
    SLOT_COUNT = 0xFFFF


cdef inline bint slot_add(uint32_t *s, Py_ssize_t n_slots, uint32_t c, uint32_t n) noexcept nogil:
    """Add ``n`` to factor ``c``'s count in the ``n_slots`` slots ``s`` of one sparse
    term row (one writer: the threaded form is pygbn.inference._blocked._slot_add).
    The slot holding ``c`` is found by a scan from the first, else the first empty
    one is taken.  Returns False, having written nothing, where the row has no slot
    left for a new factor or the count would pass 65535 (never, where the caller
    has proven the layout: Poisson counts)."""
    cdef Py_ssize_t i = 0
    cdef uint32_t key = (c + 1) << SLOT_SHIFT
    while i < n_slots and s[i] != 0 and (s[i] & ~(<uint32_t> SLOT_COUNT)) != key:
        i += 1
    if i == n_slots or (s[i] & SLOT_COUNT) + n > <uint32_t> SLOT_COUNT:
        return False
    s[i] = (key | n) if s[i] == 0 else s[i] + n
    return True


cdef inline Py_ssize_t slot_gather(const uint32_t *s, Py_ssize_t n_slots, Py_ssize_t p, Py_ssize_t c0,
                                   Py_ssize_t nc, double eta, double *alpha, Py_ssize_t stride) noexcept nogil:
    """``alpha[(k - c0) * stride] = eta + count`` for the filled slots of one sparse
    term row whose factor k lies in ``c0:c0 + nc`` (the Dirichlet concentrations of a
    column block; the caller has set the others to ``eta + 0.0``), reading from
    slot ``p`` on; returns where the next block's factors begin.  The row's filled
    slots are sorted by factor (pygbn.inference._blocked.sort_slots) and ``p`` is
    at or before the first slot of a factor >= c0 (a cursor kept from an earlier
    block of the same draw, see slot_cursors): a draw of K / B column blocks reads
    each row's slots about once."""
    while p < n_slots and s[p] != 0 and <Py_ssize_t> (s[p] >> SLOT_SHIFT) - 1 < c0:
        p += 1
    while p < n_slots and s[p] != 0 and <Py_ssize_t> (s[p] >> SLOT_SHIFT) - 1 < c0 + nc:
        alpha[(<Py_ssize_t> (s[p] >> SLOT_SHIFT) - 1 - c0) * stride] = eta + <double> (s[p] & SLOT_COUNT)
        p += 1
    return p


cdef inline void slot_cursors(int32_t *cur, Py_ssize_t V, Py_ssize_t block) noexcept nogil:
    """A thread's cursors into the V sparse rows before it gathers column block
    ``block`` (cur[V] holds the last block it gathered): back to every row's
    first slot unless the blocks come in increasing order (so that every cursor
    is at or before the block's first factor)."""
    cdef Py_ssize_t v
    if cur[V] > block:
        for v in range(V):
            cur[v] = 0
    cur[V] = <int32_t> block


ctypedef fused term_count_t:
    # dense rows of layer one's term-factor counts (int32 where their range is proven)
    int32_t
    int64_t


cdef extern from *:
    """
    /* A hint that *p will be read (pygbn_shared_prefetch) or written (pygbn_shared_prefetch_w)
       soon; no effect on results.  The one prefetch of the layer-one kernels (_collapsed,
       _partial, _blocked). */
    #ifndef PYGBN_SHARED_PREFETCH
    #define PYGBN_SHARED_PREFETCH
    #if defined(__GNUC__) || defined(__clang__)
    #define pygbn_shared_prefetch(p) __builtin_prefetch((const void *) (p), 0)
    #define pygbn_shared_prefetch_w(p) __builtin_prefetch((const void *) (p), 1)
    #else
    #define pygbn_shared_prefetch(p) ((void) 0)
    #define pygbn_shared_prefetch_w(p) ((void) 0)
    #endif
    #endif
    """
    void shared_prefetch "pygbn_shared_prefetch"(const void *p) noexcept nogil
    void shared_prefetch_w "pygbn_shared_prefetch_w"(const void *p) noexcept nogil


cdef extern from *:
    """
    #ifndef PYGBN_SHARED_CUMULATIVE
    #define PYGBN_SHARED_CUMULATIVE
    /* The products and running sums below are rounded one by one (a product, then its
       sum): no contraction into fused multiply-adds, whatever the target, so that a
       cell's sums are the same bits whichever kernel (split_sparse, split_fixed) forms
       them. */
    #if defined(__GNUC__) && !defined(__clang__)
    #pragma GCC push_options
    #pragma GCC optimize ("fp-contract=off")
    #endif

    /* cw[q * k + i] = p_q[0] t[0] + ... + p_q[i] t[i] for the rows p_q (q < 4, the rows
       of four cells) and the theta row t, each running sum formed left to right as
       one cell alone forms it (pygbn_cumulative1); the four chains of additions are
       independent, so they overlap.  tot[q] = cw[q * k + k - 1]. */
    static inline void pygbn_cumulative4(const double *p0, const double *p1, const double *p2,
                                         const double *p3, const double *t, Py_ssize_t k,
                                         double *cw, double *tot) {
        #if defined(__clang__)
        #pragma clang fp contract(off)
        #endif
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, ti;
        double *c0 = cw, *c1 = cw + k, *c2 = cw + 2 * k, *c3 = cw + 3 * k;
        Py_ssize_t i;
        for (i = 0; i < k; i++) {
            ti = t[i];
            s0 += p0[i] * ti; c0[i] = s0;
            s1 += p1[i] * ti; c1[i] = s1;
            s2 += p2[i] * ti; c2[i] = s2;
            s3 += p3[i] * ti; c3[i] = s3;
        }
        tot[0] = s0; tot[1] = s1; tot[2] = s2; tot[3] = s3;
    }

    /* one row: cw[i] = p[0] t[0] + ... + p[i] t[i]; returns the total */
    static inline double pygbn_cumulative1(const double *p, const double *t, Py_ssize_t k, double *cw) {
        #if defined(__clang__)
        #pragma clang fp contract(off)
        #endif
        double s = 0.0;
        Py_ssize_t i;
        for (i = 0; i < k; i++) {
            s += p[i] * t[i];
            cw[i] = s;
        }
        return s;
    }

    #if defined(__GNUC__) && !defined(__clang__)
    #pragma GCC pop_options
    #endif

    /* A running sum of at least 2^-947 is left unchanged by adding anything below
       2^-1000 (half its unit in the last place or less); theta entries whose
       products with every Phi entry stay below 2^-1001 / k are "tiny". */
    #define PYGBN_SUM_ABSORBS 0x1p-947
    #define PYGBN_TINY_SUM 0x1p-1000

    /* The first i with cw[i] > u, given cw[n-1] > u and cw non-decreasing: the answer
       stays in [base, base + n) while n halves; a select, not a branch, picks the
       half (no mispredicted jumps). */
    static inline Py_ssize_t pygbn_lower_search(const double *cw, Py_ssize_t n, double u) {
        const double *base = cw;
        Py_ssize_t half;
        while (n > 1) {
            half = n >> 1;
            base = (base[half - 1] > u) ? base : base + half;
            n -= half;
        }
        return base - cw;
    }
    #endif
    """
    void cumulative4 "pygbn_cumulative4"(const double *p0, const double *p1, const double *p2,
                                         const double *p3, const double *t, Py_ssize_t k,
                                         double *cw, double *tot) noexcept nogil
    double cumulative1 "pygbn_cumulative1"(const double *p, const double *t, Py_ssize_t k,
                                           double *cw) noexcept nogil
    Py_ssize_t lower_search "pygbn_lower_search"(const double *cw, Py_ssize_t n, double u) noexcept nogil
    const double SUM_ABSORBS "PYGBN_SUM_ABSORBS"
    const double TINY_SUM "PYGBN_TINY_SUM"



cdef enum:
    # the cells of a document whose cumulative weights are formed together (cumulative4)
    SPLIT_GROUP = 4
    # below this many units layer one's split (split_sparse, split_fixed: the same draws)
    # is a sequence of categorical draws (search_split), above it conditional binomials
    SPLIT_SMALL = 32

cdef inline Py_ssize_t search_cumulative(const double *cw, Py_ssize_t k, double u) noexcept nogil:
    """First index i with ``cw[i] > u`` (``cw`` the k cumulative weights of a split,
    non-decreasing); the last cell with positive weight when rounding put ``u`` at
    the very top.  The categorical draw of the layer-one splits (eq:step1)."""
    cdef Py_ssize_t hi = k - 1
    if u >= cw[hi]:
        while hi > 0 and cw[hi] <= cw[hi - 1]:
            hi -= 1
        return hi
    return lower_search(cw, k, u)


cdef inline void split_products(const double *phi_row, const double *t_row, Py_ssize_t k,
                                double *w) noexcept nogil:
    """``w[i] = phi_row[i] t_row[i]``: the products a cell's sums were formed from, for its
    binomial split (SPLIT_SMALL units or more)."""
    cdef Py_ssize_t i
    for i in range(k):
        w[i] = phi_row[i] * t_row[i]


cdef inline double split_rescaled(const double *phi_row, const double *t_row, Py_ssize_t k,
                                  double *w, double *cw) noexcept nogil:
    """A cell whose products all underflow: ``w`` its weights rescaled in log space
    (:c:func:`log_rescaled_weights`), ``cw`` their running sums left to right; returns
    their total (what the split searches and divides; its latent count sees 0)."""
    cdef Py_ssize_t i
    cdef double s = 0.0
    log_rescaled_weights(phi_row, t_row, k, w)
    for i in range(k):
        s += w[i]
        cw[i] = s
    return s


cdef inline double tiny_bound(const double[:, ::1] phi) noexcept nogil:
    """The theta entries below this are tiny for the split with ``phi`` (V x K): their
    products with every entry stay below ``2^-1001 / K`` (INFINITY where phi is empty or
    all 0).  One pass over ``phi``."""
    cdef Py_ssize_t i, c
    cdef double phi_max = 0.0
    for i in range(phi.shape[0]):
        for c in range(phi.shape[1]):
            if phi[i, c] > phi_max:
                phi_max = phi[i, c]
    return TINY_SUM / (2.0 * <double> phi.shape[1] * phi_max) if phi_max > 0.0 else INFINITY


cdef inline const double *zero_tiny(const double *t_row, Py_ssize_t k, double tiny, double *t_zeroed,
                                    Py_ssize_t *first) noexcept nogil:
    """The theta row the split's sums are formed from: ``t_row`` itself when none of its
    entries is tiny (below ``tiny``), else ``t_zeroed``, the row with its tiny entries 0,
    and ``first[0]`` the first entry that is not (-1 when all are)."""
    cdef Py_ssize_t i
    cdef bint any_tiny = False
    first[0] = -1
    for i in range(k):
        if t_row[i] < tiny:
            t_zeroed[i] = 0.0
            any_tiny = True
        else:
            t_zeroed[i] = t_row[i]
            if first[0] < 0:
                first[0] = i
    return <const double *> t_zeroed if any_tiny else t_row


cdef inline Py_ssize_t split_sums(const double *phi, const int32_t *cells, Py_ssize_t n_left, Py_ssize_t k,
                                  const double *t_row, const double *u_row, Py_ssize_t first,
                                  double *sums, double *tot, bint *exact) noexcept nogil:
    """The cumulative weights (``sums``, ``k`` a cell) and totals (``tot``) of the next
    SPLIT_GROUP cells of a document (all four chains at once), or of the next one when
    fewer are left (``n_left``); returns how many.  ``cells`` are their rows of ``phi``
    (C-ordered, ``k`` columns).

    The sums are formed from ``u_row`` (:c:func:`zero_tiny`).  Tiny theta entries make
    products below the normal range, whose arithmetic is slow on many processors (a
    microcode assist per operation), and they cannot change a cumulative weight once
    the sum has reached ``2^-947``; so a cell whose first product of a non-tiny entry
    is at least that keeps the sums without them (``exact[q]`` False): the true sums
    from that factor on, 0 before it instead of below ``2^-1001``, which no search
    point of ``2^-1000`` or more can tell apart (:c:func:`search_split`), and the
    true total.  Any other cell's sums are formed again from ``t_row`` (``exact[q]``).
    """
    cdef Py_ssize_t q, n_q = SPLIT_GROUP if n_left >= SPLIT_GROUP else 1
    cdef const double *row
    if n_q == SPLIT_GROUP:
        cumulative4(phi + cells[0] * k, phi + cells[1] * k, phi + cells[2] * k, phi + cells[3] * k,
                    u_row, k, sums, tot)
    else:
        tot[0] = cumulative1(phi + cells[0] * k, u_row, k, sums)
    for q in range(n_q):
        exact[q] = u_row == t_row
        if not exact[q]:
            row = phi + cells[q] * k
            if not (first >= 0 and row[first] * t_row[first] >= SUM_ABSORBS):
                tot[q] = cumulative1(row, t_row, k, sums + q * k)
                exact[q] = True
    return n_q


cdef inline Py_ssize_t search_split(const double *sums, bint exact, double point, const double *phi_row,
                                    const double *t_row, Py_ssize_t k, double *cw) noexcept nogil:
    """The cell of the search ``point`` in a cell's sums from :c:func:`split_sums`: the same
    cell as the true sums give (a point below ``2^-1000`` in sums that are not ``exact``
    searches the true sums, formed into ``cw``)."""
    if exact or point >= TINY_SUM:
        return search_cumulative(sums, k, point)
    cumulative1(phi_row, t_row, k, cw)
    return search_cumulative(cw, k, point)


cdef enum:
    # rows ahead whose entries the column-block passes of the Dirichlet draws prefetch
    # (gather_concentrations, pygbn.inference._blocked.dirichlet_columns): a block reads
    # and writes a few entries of every row, each row a cache line or two of its own
    GATHER_AHEAD = 16


cdef inline void gather_concentrations(const term_count_t *dense, Py_ssize_t K, Py_ssize_t V,
                                       const int32_t *rmap, const int64_t *sstart, const uint32_t *sl,
                                       int32_t *cur, Py_ssize_t c0, Py_ssize_t nc, double eta,
                                       double *alpha) noexcept nogil:
    """``alpha[j * V + v] = eta + counts[v, c0 + j]`` for the column block ``c0:c0 + nc``
    of the (V, K) counts: the C-ordered array ``dense`` when ``rmap`` is NULL, else a
    TermCounts (term v's row ``rmap[v]`` of ``dense`` when that is >= 0, else its
    sorted slots from ``sstart[v]``, read from the thread's cursor ``cur[v]``:
    slot_gather, slot_cursors).  The dense row ``GATHER_AHEAD`` terms ahead is
    prefetched (each row is read a cache line or two at a time, a miss apiece)."""
    cdef Py_ssize_t v, j, row, ahead
    for v in range(V):
        if v + GATHER_AHEAD < V:
            ahead = rmap[v + GATHER_AHEAD] if rmap != NULL else v + GATHER_AHEAD
            if ahead >= 0:
                shared_prefetch(&dense[ahead * K + c0])
                shared_prefetch(&dense[ahead * K + c0 + nc - 1])
        row = rmap[v] if rmap != NULL else v
        if row >= 0:
            for j in range(nc):
                alpha[j * V + v] = eta + <double> dense[row * K + c0 + j]
        else:
            for j in range(nc):
                alpha[j * V + v] = eta + 0.0
            cur[v] = <int32_t> slot_gather(&sl[sstart[v]], sstart[v + 1] - sstart[v], cur[v], c0, nc, eta,
                                           &alpha[v], V)
