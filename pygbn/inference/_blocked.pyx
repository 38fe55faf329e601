# cython: language_level=3
"""Blocked, document-parallel Gibbs kernels (GIL released).

Every kernel here is a pure step over fixed blocks of documents: block ``b``
(documents ``bounds[b]:bounds[b+1]``) draws only from stream ``streams[b]``
(a ``bitgen_t*`` spawned from one SeedSequence, see
:class:`pygbn._utils.BlockStreams`).  Blocks are independent given the global
parameters, so the result does not depend on how many threads run them.
Count statistics that are summed across documents are integers: layer
one's term-factor counts go to one shared array by atomic integer additions
(:func:`split_sparse`), the upper layers' are accumulated per thread and
summed afterwards; integer sums are exact whatever the order.  The per-document
counts ``m`` may be uint8, uint16, int32 or int64 (the sampler picks the smallest
type their range allows).  A block whose scratch memory cannot be allocated
does no work and the kernel raises ``MemoryError`` after the loop.

The kernels trust their input (shapes, dtypes, positivity): the Python layer
in :mod:`pygbn.inference.gibbs` prepares it.
"""
from cython.parallel cimport parallel, prange, threadid
from libc.math cimport log, log1p, exp, isinf, INFINITY
from libc.float cimport DBL_MIN
from libc.stdint cimport INT64_MAX, int32_t, int64_t, uint16_t, uint32_t, uintptr_t
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport (random_standard_gamma,
                                           random_standard_exponential, binomial_t)
from pygbn.random._pcg64 cimport next_uniform, pcg64_fill_init

from pygbn.inference._alloc cimport block_malloc, fail_next_allocations
from pygbn.inference._shared cimport (SPLIT_GROUP, SPLIT_SMALL, count_t, count_max, search_split,
                                      slot_add, slot_cursors, split_products, split_rescaled, split_sums,
                                      tiny_bound, zero_tiny,
                                      gather_concentrations, shared_prefetch_w, GATHER_AHEAD,
                                      SLOT_SHIFT, SLOT_COUNT)
from pygbn.random._gamma cimport gamma_row
from pygbn.random._inline cimport random_gamma_fast
from pygbn.random._kernels cimport (
    random_crt, random_multinomial_split, random_dirichlet, random_binomial_exact,
)

# How the latent count of a cell is obtained from its observation
# (Link.latent_mode; the codes and latent_count, which draws it, are defined once,
# in pygbn/model/_latent.pxd).
from pygbn.model._latent cimport latent_count

#: whether numbers of the PCG64 streams are formed inline (numpy's numbers, checked at import)
FAST_UNIFORMS = pcg64_fill_init()


cdef extern from *:
    """
    /* Atomic integer additions (exact in any order, so the shared sums do not
       depend on the thread count). */
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline void pygbn_atomic_add_i64(int64_t *p, int64_t v) {
        _InterlockedExchangeAdd64((volatile __int64 *) p, (__int64) v);
    }
    static inline void pygbn_atomic_add_i32(int32_t *p, int32_t v) {
        _InterlockedExchangeAdd((volatile long *) p, (long) v);
    }
    static inline uint32_t pygbn_atomic_load_u32(uint32_t *p) {
        return *(volatile uint32_t *) p;
    }
    static inline int pygbn_cas_u32(uint32_t *p, uint32_t expected, uint32_t desired) {
        return (uint32_t) _InterlockedCompareExchange((volatile long *) p, (long) desired,
                                                      (long) expected) == expected;
    }
    static inline uintptr_t pygbn_load_ptr(uintptr_t *p) {
        return (uintptr_t) _InterlockedCompareExchangePointer((void *volatile *) p, NULL, NULL);
    }
    static inline int pygbn_cas_ptr(uintptr_t *p, uintptr_t desired) {
        return _InterlockedCompareExchangePointer((void *volatile *) p, (void *) desired, NULL) == NULL;
    }
    #elif defined(__GNUC__) || defined(__clang__)
    static inline void pygbn_atomic_add_i64(int64_t *p, int64_t v) {
        __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
    }
    static inline void pygbn_atomic_add_i32(int32_t *p, int32_t v) {
        __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
    }
    static inline uint32_t pygbn_atomic_load_u32(uint32_t *p) {
        return __atomic_load_n(p, __ATOMIC_RELAXED);
    }
    static inline int pygbn_cas_u32(uint32_t *p, uint32_t expected, uint32_t desired) {
        return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    }
    static inline uintptr_t pygbn_load_ptr(uintptr_t *p) {
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);
    }
    static inline int pygbn_cas_ptr(uintptr_t *p, uintptr_t desired) {
        uintptr_t expected = 0;
        return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    #elif defined(_OPENMP)
    static inline void pygbn_atomic_add_i64(int64_t *p, int64_t v) {
        #pragma omp atomic
        *p += v;
    }
    static inline void pygbn_atomic_add_i32(int32_t *p, int32_t v) {
        #pragma omp atomic
        *p += v;
    }
    static inline uint32_t pygbn_atomic_load_u32(uint32_t *p) {
        uint32_t v;
        #pragma omp atomic read
        v = *p;
        return v;
    }
    static inline int pygbn_cas_u32(uint32_t *p, uint32_t expected, uint32_t desired) {
        int done = 0;
        #pragma omp critical (pygbn_cas_u32)
        {
            if (*p == expected) { *p = desired; done = 1; }
        }
        return done;
    }
    static inline uintptr_t pygbn_load_ptr(uintptr_t *p) {
        uintptr_t v;
        #pragma omp critical (pygbn_cas_ptr)
        v = *p;
        return v;
    }
    static inline int pygbn_cas_ptr(uintptr_t *p, uintptr_t desired) {
        int done = 0;
        #pragma omp critical (pygbn_cas_ptr)
        {
            if (*p == 0) { *p = desired; done = 1; }
        }
        return done;
    }
    #else
    static inline void pygbn_atomic_add_i64(int64_t *p, int64_t v) { *p += v; }  /* serial build */
    static inline void pygbn_atomic_add_i32(int32_t *p, int32_t v) { *p += v; }
    static inline uint32_t pygbn_atomic_load_u32(uint32_t *p) { return *p; }
    static inline int pygbn_cas_u32(uint32_t *p, uint32_t expected, uint32_t desired) {
        if (*p != expected) return 0;
        *p = desired;
        return 1;
    }
    static inline uintptr_t pygbn_load_ptr(uintptr_t *p) { return *p; }
    static inline int pygbn_cas_ptr(uintptr_t *p, uintptr_t desired) {
        if (*p != 0) return 0;
        *p = desired;
        return 1;
    }
    #endif
    """
    void atomic_add_i64 "pygbn_atomic_add_i64"(int64_t *p, int64_t v) noexcept nogil
    void atomic_add_i32 "pygbn_atomic_add_i32"(int32_t *p, int32_t v) noexcept nogil
    uint32_t atomic_load_u32 "pygbn_atomic_load_u32"(uint32_t *p) noexcept nogil
    bint cas_u32 "pygbn_cas_u32"(uint32_t *p, uint32_t expected, uint32_t desired) noexcept nogil
    uintptr_t load_ptr "pygbn_load_ptr"(uintptr_t *p) noexcept nogil
    bint cas_ptr "pygbn_cas_ptr"(uintptr_t *p, uintptr_t desired) noexcept nogil


# the shared term-factor counts of layer one's split: int32 where their total is
# known to fit (Poisson counts, pygbn.inference.layer_one.stat_dtype), else int64
ctypedef fused stat_t:
    int32_t
    int64_t


cdef inline void _atomic_add(stat_t *p, int64_t v) noexcept nogil:
    if stat_t is int32_t:
        atomic_add_i32(p, <int32_t> v)
    else:
        atomic_add_i64(p, v)


def _fail_next_allocations(int n):
    """Test hook: the next ``n`` per-block scratch allocations fail (0 resets)."""
    fail_next_allocations(n)


# split_sparse sums a document's cells without its tiny theta entries (split_sums);
# a test turns that off to compare the draws with the sums of every product
cdef bint _skip_tiny = True


def _zero_tiny_entries(bint on):
    """Test hook: whether :func:`split_sparse` forms its sums without the tiny theta
    entries (the default) or from every product; returns the previous setting."""
    global _skip_tiny
    cdef bint before = _skip_tiny
    _skip_tiny = on
    return before


def tiny_theta(const double[:, ::1] phi):
    """The bound below which a theta entry is tiny for the split with ``phi`` (V x K):
    its products with every entry of ``phi`` stay below ``2^-1001 / K``
    (:c:func:`pygbn.inference._shared.split_sums`; ``inf`` when ``phi`` is empty or
    all 0).  One pass over ``phi``: computed once for the many calls of a sweep."""
    return tiny_bound(phi)


cdef inline bint _slot_add(uint32_t *s, Py_ssize_t n_slots, uint32_t c, uint32_t n, bint atomic) noexcept nogil:
    """Add ``n`` to factor ``c``'s count in the ``n_slots`` slots ``s`` of one sparse
    term row (as :c:func:`slot_add`, ``_shared.pxd``: the slot holding ``c``, else
    the first empty one), by compare-and-swap when ``atomic`` (threads share the
    row: a slot another thread changed first is looked at again).  Returns False,
    having written nothing, where the row has no slot left for a new factor or
    the count would pass 65535 (the caller's layout is then too small)."""
    cdef Py_ssize_t i = 0
    cdef uint32_t w, key = (c + 1) << SLOT_SHIFT
    if n > <uint32_t> SLOT_COUNT:
        return False
    if not atomic:
        return slot_add(s, n_slots, c, n)
    while i < n_slots:
        w = atomic_load_u32(&s[i])
        if w == 0:
            if cas_u32(&s[i], 0, key | n):
                return True
            continue          # another thread claimed slot i: look at it again
        if (w & ~(<uint32_t> SLOT_COUNT)) == key:
            if (w & SLOT_COUNT) + n > <uint32_t> SLOT_COUNT:
                return False
            if cas_u32(&s[i], w, w + n):
                return True
            continue          # another thread added first: again
        i += 1
    return False


cdef inline int _spill_add(uintptr_t *p, Py_ssize_t k, Py_ssize_t c, int64_t n, bint atomic) noexcept nogil:
    """Add ``n`` to entry ``c`` of one term's spill row ``*p`` (``k`` int64 counts,
    allocated zeroed by the first thread that needs it; 0 while there is none);
    returns 1 where it could not be allocated (nothing added), else 0."""
    cdef int64_t *row = <int64_t *> (load_ptr(p) if atomic else p[0])
    cdef int64_t *mine
    if row == NULL:
        mine = <int64_t *> calloc(k, sizeof(int64_t))
        if mine == NULL:
            return 1
        if not atomic:
            p[0] = <uintptr_t> mine
            row = mine
        elif cas_ptr(p, <uintptr_t> mine):
            row = mine
        else:           # another thread put its row there first
            free(mine)
            row = <int64_t *> load_ptr(p)
    if atomic:
        atomic_add_i64(&row[c], n)
    else:
        row[c] += n
    return 0


cdef inline int _split_add(bitgen_t *g, int64_t x, const double *w, const double *cw, bint exact,
                           const double *phi_row, const double *t_row, double *cw_true,
                           Py_ssize_t k, int64_t *tmp, count_t *m_row, stat_t *n_row,
                           uint32_t *slots, Py_ssize_t n_slots, uintptr_t *spill, bint atomic) noexcept nogil:
    """Multinomial split of x units over k cells (eq:step1): below SPLIT_SMALL units
    categorical draws on the cumulative weights ``cw`` (:c:func:`search_split`, with
    ``exact``, ``phi_row``, ``t_row`` and the scratch ``cw_true`` as
    :c:func:`split_sums` left them), else conditional binomials on the weights ``w``
    and their total ``cw[k - 1]``; adds to m_row and to the
    term's statistics: the dense row ``n_row`` when not NULL, else the ``n_slots``
    slots of the sparse row ``slots`` (by atomic additions when ``atomic``: they are
    shared by the threads).  A count the slots cannot take goes to the term's spill
    row ``*spill`` (:c:func:`_spill_add`) when ``spill`` is not NULL; returns the
    number of counts that went nowhere (no spill, or its row not allocated)."""
    cdef int64_t i
    cdef Py_ssize_t c
    cdef double total = cw[k - 1]
    cdef int lost = 0
    if x <= 0:
        return 0
    if x < SPLIT_SMALL:
        for i in range(x):
            c = search_split(cw, exact, next_uniform(g) * total, phi_row, t_row, k, cw_true)
            m_row[c] += 1
            if n_row == NULL:
                if not _slot_add(slots, n_slots, <uint32_t> c, 1, atomic):
                    lost += 1 if spill == NULL else _spill_add(spill, k, c, 1, atomic)
            elif atomic:
                _atomic_add(&n_row[c], 1)
            else:
                n_row[c] += 1
    else:
        random_multinomial_split(g, x, w, k, total, tmp)
        for c in range(k):
            if tmp[c] != 0:
                m_row[c] += <count_t> tmp[c]
                if n_row == NULL:
                    if tmp[c] > SLOT_COUNT or not _slot_add(slots, n_slots, <uint32_t> c,
                                                            <uint32_t> tmp[c], atomic):
                        lost += 1 if spill == NULL else _spill_add(spill, k, c, tmp[c], atomic)
                elif atomic:
                    _atomic_add(&n_row[c], tmp[c])
                else:
                    n_row[c] += <stat_t> tmp[c]
    return lost


def split_sparse(const int64_t[::1] indptr, const int32_t[::1] indices, const double[::1] values,
                 const double[:, ::1] phi, const double[:, ::1] theta, const double[::1] aux,
                 int mode, const int64_t[::1] bounds, const uintptr_t[::1] streams,
                 count_t[:, ::1] m_out, stat_t[:, ::1] n_out, int64_t[::1] x_out,
                 int n_threads, const int32_t[::1] row_map=None, const int64_t[::1] slot_start=None,
                 uint32_t[::1] slots=None, uintptr_t[::1] spill=None, tiny=None):
    """Latent counts and their split for a sparse documents x rows layer.

    For each document ``j`` and stored cell ``(v, obs)`` of row ``j`` of the
    CSR matrix (``indptr``, ``indices``, ``values``):
    ``w_k = phi[v, k] * theta[j, k]``, latent count ``x`` from ``obs`` by
    ``mode`` (identity, truncated Poisson with rate ``sum(w)``, eq:Ber-PGBN,
    truncated Bessel with ``alpha = 2 sqrt(aux[j] obs sum(w))``, eq:Gam-PGBN:
    :c:func:`pygbn.model._latent.latent_count`; ``theta`` may be one
    row shared by all documents), then
    ``x ~> Mult(x, w / sum(w))`` (eq:step1), added to ``m_out[j, :]`` and to
    ``n_out[v, :]`` (one array shared by the threads, atomic integer
    additions); ``x_out[cell] = x`` when ``x_out`` is not empty.  The
    cumulative weights of four cells are formed at once and a document's
    cells are summed without its tiny theta entries (products below the
    normal range, slow on many processors) wherever they cannot change a draw
    (:c:func:`pygbn.inference._shared.split_sums`, :c:func:`search_split`):
    the draws of the sums of every product.  ``tiny`` is :func:`tiny_theta` of
    ``phi`` (formed here when None: one pass over ``phi``).  ``m_out``
    rows of the documents are overwritten; ``n_out`` is added to.  ``m_out``
    may be uint8, uint16, int32 or int64; ``n_out`` int32 (the caller has proven that
    no entry can pass 2**31 - 1: Poisson counts of fewer tokens than that,
    :func:`pygbn.inference.layer_one.stat_dtype`) or int64.  Returns the number of documents whose
    latent total exceeds what ``m_out`` holds (their rows are then wrong), a document with a
    cell that :c:func:`~pygbn.model._latent.latent_count` could not draw (-1) or whose total
    passes 2**63 - 1 among them whatever the type (no type holds it).

    With ``row_map``, ``slot_start`` and ``slots`` (a
    :class:`pygbn.inference.term_counts.TermCounts`) term ``v``'s statistics
    are row ``row_map[v]`` of ``n_out`` when that is >= 0, else the slots
    ``slots[slot_start[v]:slot_start[v + 1]]`` (``(k + 1) << 16 | count`` each,
    filled in order).  The draws are the same either way.  For Poisson counts
    the slots are as many as the term's tokens, so never too few.  For random
    latent counts they may be too few: with ``spill`` (V + 1 zeros) a count that
    term ``v``'s slots cannot take (no slot left for a new factor, or a slot
    count that would pass 65535) is added to its spill row instead, ``K`` int64
    counts allocated here, at address ``spill[v]``, and ``spill[V]`` is set to
    1; the caller takes the rows (:func:`take_spill`) and makes those terms'
    rows dense (:meth:`pygbn.inference.term_counts.TermLayout.promote`).  The
    counts are exact either way; without ``spill`` such a count is an error.
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1
    cdef Py_ssize_t k = phi.shape[1]
    cdef Py_ssize_t b, j, c, i, q, n_q, c_end, first
    cdef bint keep_x = x_out.shape[0] > 0
    cdef bint atomic = n_threads > 1
    cdef bint shared_theta = theta.shape[0] == 1
    cdef double *w
    cdef double *cw
    cdef double *cw_q
    cdef double *cw_true
    cdef double *tot
    cdef double *t_zeroed
    cdef bint *exact
    cdef const double *t_row
    cdef const double *u_row
    cdef const double *phi_row
    cdef int64_t *tmp
    cdef double total, a, t_bound
    cdef int64_t x
    cdef int n_failed = 0
    cdef Py_ssize_t n_over = 0
    cdef int64_t total_x, cap
    cdef bint unheld
    cdef bitgen_t *g
    cdef bint use_slots = row_map is not None and row_map.shape[0] > 0
    cdef const int32_t *rmap = &row_map[0] if use_slots else NULL
    cdef const int64_t *sstart = &slot_start[0] if use_slots else NULL
    cdef uint32_t *sl = &slots[0] if use_slots and slots.shape[0] > 0 else NULL
    cdef Py_ssize_t v, row
    cdef bint spilling = spill is not None and spill.shape[0] > 0
    cdef uintptr_t *sp = &spill[0] if spilling else NULL
    cdef Py_ssize_t n_terms = spill.shape[0] - 1 if spilling else 0
    cdef Py_ssize_t n_lost = 0
    cdef int lost
    cap = count_max(<const count_t *> NULL)
    t_bound = (tiny_theta(phi) if tiny is None else tiny) if _skip_tiny else 0.0
    for b in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        g = <bitgen_t *> streams[b]
        # w, cw_true: k each; the document's theta row with its tiny entries 0 (k); the
        # cumulative weights of SPLIT_GROUP cells, then their totals and flags (split_sums)
        w = <double *> block_malloc((3 * k + SPLIT_GROUP * (k + 2)) * sizeof(double))
        tmp = <int64_t *> block_malloc(k * sizeof(int64_t))
        if w == NULL or tmp == NULL:
            n_failed += 1
        else:
            cw_true = w + k
            t_zeroed = cw_true + k
            cw = t_zeroed + k
            tot = cw + SPLIT_GROUP * k
            exact = <bint *> (tot + SPLIT_GROUP)
            for j in range(bounds[b], bounds[b + 1]):
                for i in range(k):
                    m_out[j, i] = 0
                total_x = 0
                unheld = False
                a = aux[j] if aux.shape[0] > 0 else 1.0
                t_row = &theta[0 if shared_theta else j, 0]
                u_row = zero_tiny(t_row, k, t_bound, t_zeroed, &first)
                c = indptr[j]
                c_end = indptr[j + 1]
                while c < c_end:
                    # the cumulative weights of the next SPLIT_GROUP cells (or of one), then
                    # each cell's draws, in the order of the cells
                    n_q = split_sums(&phi[0, 0], &indices[c], c_end - c, k, t_row, u_row, first, cw, tot, exact)
                    for q in range(n_q):
                        v = indices[c + q]
                        phi_row = &phi[v, 0]
                        cw_q = cw + q * k
                        total = tot[q]
                        if not total > 0.0:
                            # every product underflows: w and cw rescaled in log space, total 0
                            split_rescaled(phi_row, t_row, k, w, cw_q)
                        x = latent_count(g, mode, values[c + q], total, a)
                        if x < 0 or x > INT64_MAX - total_x:
                            # no draw (latent_count), or a total past 2**63 - 1: a document
                            # no count type holds (counted as too long; its rows are wrong)
                            unheld = True
                            x = 0
                        if keep_x:
                            x_out[c + q] = x
                        total_x = total_x + x
                        if x >= SPLIT_SMALL and total > 0.0:
                            split_products(phi_row, t_row, k, w)
                        row = rmap[v] if use_slots else v
                        if row >= 0:
                            _split_add(g, x, w, cw_q, exact[q], phi_row, t_row, cw_true, k, tmp, &m_out[j, 0],
                                       &n_out[row, 0], NULL, 0, NULL, atomic)
                        else:
                            lost = _split_add(g, x, w, cw_q, exact[q], phi_row, t_row, cw_true, k, tmp,
                                              &m_out[j, 0], <stat_t *> NULL,
                                              &sl[sstart[v]] if sl != NULL else NULL, sstart[v + 1] - sstart[v],
                                              &sp[v] if spilling else NULL, atomic)
                            n_lost += lost
                            if spilling and sp[n_terms] == 0 and load_ptr(&sp[v]) != 0:
                                sp[n_terms] = 1     # the same value from any thread
                    c = c + n_q
                if unheld or total_x > cap:
                    n_over += 1
        free(w)
        free(tmp)
    if spilling and (n_failed or n_lost):      # the split is abandoned: no spill row is kept
        _free_spill(sp, n_terms)
    if n_failed:
        raise MemoryError(f"split_sparse: scratch memory of {n_failed} document block(s) could not be allocated")
    if n_lost and spilling:
        raise MemoryError(f"split_sparse: {n_lost} count(s) found no slot and no spill row could be allocated")
    if n_lost:
        raise RuntimeError(f"split_sparse: {n_lost} count(s) found no slot (the layout is too small for them)")
    return n_over


cdef void _free_spill(uintptr_t *spill, Py_ssize_t n_terms) noexcept:
    """Free every spill row of ``spill`` (``n_terms`` addresses and the flag) and clear it."""
    cdef Py_ssize_t v
    for v in range(n_terms):
        free(<void *> spill[v])
        spill[v] = 0
    spill[n_terms] = 0


def take_spill(uintptr_t[::1] spill, const int64_t[::1] terms, int64_t[:, ::1] out):
    """Move the spill rows of ``terms`` (:func:`split_sparse`: those with
    ``spill[v] != 0``) into the rows of ``out``, free them and clear ``spill``."""
    cdef Py_ssize_t i, c, K = out.shape[1], V = spill.shape[0] - 1
    cdef int64_t *row
    for i in range(terms.shape[0]):
        row = <int64_t *> spill[terms[i]]
        for c in range(K):
            out[i, c] = row[c]
        free(row)
        spill[terms[i]] = 0
    spill[V] = 0


# Top-layer CRT sums (top_crt): counts below TOP_HIST_CAP go to a per-block
# histogram and are drawn level by level; a level whose expected number of new
# tables (at most its hazard D(i) h_i) exceeds TOP_BINOMIAL_HAZARD is drawn as
# one binomial, the others by exponential skips.
DEF TOP_HIST_CAP = 64
cdef double TOP_BINOMIAL_HAZARD = 4.0


def top_crt(const count_t[:, ::1] m, const double[::1] r, const int64_t[::1] bounds,
            const uintptr_t[::1] streams, int64_t[:, ::1] out, int n_threads):
    """``out[b, k] = sum_{j in block b} CRT(m[j, k], r[k])`` (eq:CRT at the top layer).

    Only these per-block sums are drawn, by the law of the sum rather than
    one CRT per count.  ``CRT(n, r)`` is the sum of independent
    ``Bernoulli(r / (r + i - 1))``, ``i = 1..n``; grouping the Bernoullis of
    all the documents of block b by ``i``,

    ``sum_j CRT(m_jk, r_k) = D(1) + sum_{i >= 2} Binomial(D(i), r_k / (r_k + i - 1))``,

    with ``D(i)`` the number of documents of the block with ``m_jk >= i``.
    ``D`` comes from a histogram of the block's counts (per topic, counts
    below ``TOP_HIST_CAP``; a larger count is drawn alone by ``random_crt``).
    The binomials are drawn walking the levels ``i`` from the largest count
    down to 2, with a unit exponential ``E`` (memoryless, carried over
    levels and topics): each Bernoulli of level ``i`` has hazard
    ``h_i = -ln(1 - p_i) = ln(1 + r_k / (i - 1))``, so the ``D(i)`` trials
    of a level hold no success when ``E >= D(i) h_i`` (then ``E -= D(i) h_i``),
    else the first success is trial ``floor(E / h_i) + 1`` and a fresh ``E``
    continues after it.  A level with ``D(i) h_i > TOP_BINOMIAL_HAZARD``
    (many expected successes) is one ``random_binomial_exact`` draw instead
    (decided before ``E`` is compared, so that ``E`` stays a unit exponential
    independent of the draws so far; it is untouched).  The cost is the block's counts scanned once plus
    O(levels + tables) per block and topic, rather than one CRT per count.
    Conventions as ``random_crt``: ``r = inf`` counts every trial, ``r <= 0``
    only ``D(1)``.
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1
    cdef Py_ssize_t k = m.shape[1]
    cdef Py_ssize_t b, kk, lev
    cdef double *hz
    cdef int n_failed = 0
    if n_blocks <= 0 or k == 0:
        return
    # hazards hz[kk, lev] = ln(1 + r_kk / (lev - 1)) of the levels lev = 2..TOP_HIST_CAP - 1
    hz = <double *> malloc(k * TOP_HIST_CAP * sizeof(double))
    if hz == NULL:
        raise MemoryError("top_crt: the hazard table could not be allocated")
    for kk in range(k):
        for lev in range(TOP_HIST_CAP):
            if lev < 2 or not r[kk] > 0.0:
                hz[kk * TOP_HIST_CAP + lev] = 0.0
            elif isinf(r[kk]):
                hz[kk * TOP_HIST_CAP + lev] = INFINITY
            else:
                hz[kk * TOP_HIST_CAP + lev] = log1p(r[kk] / <double> (lev - 1))
    for b in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        if _top_crt_block(<bitgen_t *> streams[b], m, r, hz, bounds[b], bounds[b + 1], &out[b, 0]):
            n_failed += 1
    free(hz)
    if n_failed:
        raise MemoryError(f"top_crt: scratch memory of {n_failed} document block(s) could not be allocated")


cdef int _top_crt_block(bitgen_t *g, const count_t[:, ::1] m, const double[::1] r, const double *hz,
                        int64_t j0, int64_t j1, int64_t *out) noexcept nogil:
    """The sums of one block for :func:`top_crt` (``out`` its row); 1 if its scratch
    memory could not be allocated, else 0."""
    cdef Py_ssize_t k = m.shape[1]
    cdef Py_ssize_t j, i, lev
    cdef int64_t c, d, rem, used, tables
    cdef int32_t *hist = <int32_t *> block_malloc(k * (TOP_HIST_CAP + 1) * sizeof(int32_t))
    cdef int32_t *mx
    cdef int32_t *hk
    cdef const double *hzk
    cdef double e, x, h, p
    cdef binomial_t bstate
    if hist == NULL:
        return 1
    memset(hist, 0, k * (TOP_HIST_CAP + 1) * sizeof(int32_t))
    mx = hist + k * TOP_HIST_CAP
    bstate.has_binomial = 0
    for i in range(k):
        out[i] = 0
    for j in range(j0, j1):
        for i in range(k):
            c = <int64_t> m[j, i]
            if c < TOP_HIST_CAP:
                hist[i * TOP_HIST_CAP + c] += 1
                if c > mx[i]:
                    mx[i] = <int32_t> c
            else:
                out[i] += random_crt(g, c, r[i])
    e = random_standard_exponential(g)
    for i in range(k):
        hk = hist + i * TOP_HIST_CAP
        hzk = hz + i * TOP_HIST_CAP
        d = 0
        tables = 0
        for lev in range(mx[i], 1, -1):
            d = d + hk[lev]
            h = hzk[lev]
            x = <double> d * h
            if x > TOP_BINOMIAL_HAZARD:
                # decided before e is looked at, so that e stays a fresh unit exponential
                p = 1.0 if isinf(r[i]) else r[i] / (r[i] + <double> (lev - 1))
                tables = tables + random_binomial_exact(g, d, p, &bstate)
            elif x <= e:
                e = e - x
            else:
                used = 0
                while used < d:
                    # the next success is trial floor(e / h) + 1 of the rest, if it lies among them
                    rem = d - used
                    x = e / h
                    if x >= <double> rem:
                        x = e - <double> rem * h
                        e = x if x > 0.0 else 0.0
                        break
                    used = used + <int64_t> x + 1
                    tables = tables + 1
                    e = random_standard_exponential(g)
        out[i] += tables + d + hk[1]
    free(hist)
    return 0


cdef inline double _dirichlet_gammas(bitgen_t *g, const double *alpha, Py_ssize_t k, double *out,
                                     double *scratch) noexcept nogil:
    """A Dir(alpha) draw (``alpha > 0``) as ``out * factor``, the factor returned.

    The gammas by the row kernel :c:func:`pygbn.random._gamma.gamma_row`
    (floored at the smallest normal double, ``scratch`` of ``7 k`` doubles) and
    the factor ``1 / sum``; if the sum is below 1e-280 (tiny concentrations
    make gammas underflow) the draw is made again by
    :c:func:`pygbn.random._kernels.random_dirichlet` (log space) and the factor
    is 1.  Redrawing is exact: ``G / sum(G)`` is independent of ``sum(G)``.
    """
    cdef double tot = gamma_row(g, alpha, k, 1.0, out, scratch)
    if tot >= 1e-280:
        return 1.0 / tot
    random_dirichlet(g, alpha, k, out)
    return 1.0


def dirichlet_rows(const double[:, ::1] alpha, const int64_t[::1] bounds,
                   const uintptr_t[::1] streams, double[:, ::1] out, int n_threads):
    """``out[i, :] ~ Dirichlet(alpha[i, :])`` for each row (eq:step2 on Phi transposed), ``alpha > 0``.

    Rows are grouped in fixed blocks, block ``b`` drawing from ``streams[b]``,
    each row by :c:func:`_dirichlet_gammas`.  Entries are floored at the
    smallest normal double (then the row is still on the simplex to within
    one ulp).
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1
    cdef Py_ssize_t k = alpha.shape[1]
    cdef Py_ssize_t b, j, i
    cdef bitgen_t *g
    cdef double *scratch
    cdef double f, x
    cdef int n_failed = 0
    if n_blocks <= 0 or k == 0:
        return
    for b in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        g = <bitgen_t *> streams[b]
        scratch = <double *> block_malloc(7 * k * sizeof(double))
        if scratch == NULL:
            n_failed += 1
        else:
            for j in range(bounds[b], bounds[b + 1]):
                f = _dirichlet_gammas(g, &alpha[j, 0], k, &out[j, 0], scratch)
                for i in range(k):
                    x = out[j, i] * f
                    out[j, i] = x if x > DBL_MIN else DBL_MIN
        free(scratch)
    if n_failed:
        raise MemoryError("dirichlet_rows: scratch memory could not be allocated")


def dirichlet_columns(const stat_t[:, ::1] counts, double eta, const int64_t[::1] bounds,
                      const uintptr_t[::1] streams, double[:, ::1] out, int n_threads,
                      const int32_t[::1] row_map=None, const int64_t[::1] slot_start=None,
                      const uint32_t[::1] slots=None):
    """``out[:, j] ~ Dirichlet(eta + counts[:, j])`` for each column (eq:step2), ``eta > 0``.

    Equivalent to ``dirichlet_rows(eta + counts.T.astype(float64), bounds,
    streams, out_t)`` followed by ``out[:] = out_t.T``, draw for draw (the
    same concentrations, ``eta + counts[v, j]``, the same streams, the same
    floor), without the two (K, V) float64 arrays: block ``b`` (columns
    ``bounds[b]:bounds[b+1]``) gathers its columns' concentrations into a
    per-thread scratch of ``columns x V`` doubles in one pass over the rows,
    draws them column by column from ``streams[b]`` (:c:func:`_dirichlet_gammas`:
    the row gamma kernel, normalised) and writes the block's columns of
    ``out`` in one pass over its rows (both passes prefetch the row
    ``GATHER_AHEAD`` ahead: a block's columns are a cache line or two of each
    row).  The draw does not depend on the
    thread count.  With ``row_map``, ``slot_start`` and ``slots`` the counts
    are a :class:`pygbn.inference.term_counts.TermCounts` (dense rows in
    ``counts``, the other terms' in their slots: see :func:`split_sparse`); an
    entry in no slot is 0, so its concentration is ``eta + 0.0``, as from a
    dense array.  Each sparse row's filled slots must be sorted by factor
    (:func:`pygbn.inference._blocked.sort_slots`).
    """
    cdef bint use_slots = row_map is not None and row_map.shape[0] > 0
    cdef Py_ssize_t V = row_map.shape[0] if use_slots else counts.shape[0]
    cdef Py_ssize_t K = counts.shape[1], n_blocks = bounds.shape[0] - 1
    cdef const int32_t *rmap = &row_map[0] if use_slots else NULL
    cdef const int64_t *sstart = &slot_start[0] if use_slots else NULL
    cdef const uint32_t *sl = &slots[0] if use_slots and slots.shape[0] > 0 else NULL
    cdef Py_ssize_t blk, k, v, k0, nk, width = 0
    cdef const stat_t *dense = &counts[0, 0] if counts.shape[0] > 0 else NULL
    cdef int32_t *cur
    cdef double *work
    cdef double *a
    cdef double *draw
    cdef double *fac
    cdef double x
    cdef bitgen_t *g
    cdef int n_failed = 0
    if V == 0 or n_blocks <= 0:
        return
    for blk in range(n_blocks):
        width = max(width, bounds[blk + 1] - bounds[blk])
    cur = NULL   # both set by every thread below (Cython copies them in as firstprivate)
    work = NULL
    with nogil, parallel(num_threads=n_threads):
        # one scratch per thread: a block's concentrations and draws column by column, the
        # row kernel's scratch, the columns' factors
        work = <double *> block_malloc((2 * width * V + 7 * V + width) * sizeof(double))
        # and its cursors into the sparse rows (its blocks come in increasing order)
        cur = <int32_t *> malloc((V + 1) * sizeof(int32_t)) if use_slots else NULL
        if cur != NULL:
            cur[V] = 2147483647
        for blk in prange(n_blocks, schedule="dynamic"):
            if work == NULL or (use_slots and cur == NULL):
                n_failed += 1
            else:
                if use_slots:
                    slot_cursors(cur, V, blk)
                g = <bitgen_t *> streams[blk]
                k0 = bounds[blk]
                nk = bounds[blk + 1] - k0
                a = work
                draw = work + width * V
                fac = work + 2 * width * V + 7 * V
                gather_concentrations(dense, K, V, rmap, sstart, sl, cur, k0, nk, eta, a)
                for k in range(nk):
                    fac[k] = _dirichlet_gammas(g, a + k * V, V, draw + k * V, work + 2 * width * V)
                for v in range(V):
                    if v + GATHER_AHEAD < V:
                        shared_prefetch_w(&out[v + GATHER_AHEAD, k0])
                        shared_prefetch_w(&out[v + GATHER_AHEAD, k0 + nk - 1])
                    for k in range(nk):
                        x = draw[k * V + v] * fac[k]
                        out[v, k0 + k] = x if x > DBL_MIN else DBL_MIN
        free(work)
        free(cur)
    if n_failed:
        raise MemoryError(f"dirichlet_columns: scratch memory of {n_failed} column block(s) could not be allocated")


def column_sums(const stat_t[:, ::1] counts, double eta, double[::1] out):
    """``out[k] = sum_v (eta + counts[v, k])``, added row after row in float64.

    Equivalent to ``(eta + counts.astype(float64)).sum(axis=0)`` when
    ``counts`` has at least two columns (numpy then adds the rows of a
    C-ordered array one after another, in this order), without the
    (V, K) float64 array.
    """
    cdef Py_ssize_t V = counts.shape[0], K = counts.shape[1]
    cdef Py_ssize_t v, k
    with nogil:
        for k in range(K):
            out[k] = eta + <double> counts[0, k] if V > 0 else 0.0
        for v in range(1, V):
            for k in range(K):
                out[k] = out[k] + (eta + <double> counts[v, k])


def heldout_accumulate_counts(const int64_t[::1] indptr, const int32_t[::1] indices,
                              const stat_t[:, ::1] counts, double eta, const double[::1] col_sums,
                              const double[:, ::1] theta, double[::1] rate_acc, double[::1] norm_acc,
                              int n_threads):
    """:func:`heldout_accumulate` with ``phi = (eta + counts) / col_sums`` formed on the fly.

    Equivalent to ``heldout_accumulate(indptr, indices, phi, theta, rate_acc,
    norm_acc)`` with ``phi = (counts.astype(float64) + eta) / col_sums``
    (each entry the same float64 value, so the sums are the same to the
    bit), without the (V, K) float64 array: the posterior mean of Phi^(1)
    of a collapsed chain (:meth:`pygbn.model.layer.Layer.posterior_mean_phi`,
    ``col_sums`` from :func:`column_sums`).
    """
    cdef Py_ssize_t n_docs = indptr.shape[0] - 1
    cdef Py_ssize_t k = counts.shape[1]
    cdef Py_ssize_t j, c, i, v
    cdef double s
    for j in prange(n_docs, nogil=True, num_threads=n_threads, schedule="dynamic", chunksize=64):
        s = 0.0
        for i in range(k):
            s = s + theta[j, i]
        norm_acc[j] += s
        for c in range(indptr[j], indptr[j + 1]):
            v = indices[c]
            s = 0.0
            for i in range(k):
                s = s + ((<double> counts[v, i] + eta) / col_sums[i]) * theta[j, i]
            rate_acc[c] += s


def heldout_accumulate(const int64_t[::1] indptr, const int32_t[::1] indices,
                       const double[:, ::1] phi, const double[:, ::1] theta,
                       double[::1] rate_acc, double[::1] norm_acc, int n_threads):
    """Add one posterior sample to the held-out accumulators.

    ``rate_acc[c] += sum_k phi[v, k] theta[j, k]`` for every stored held-out
    cell ``c = (j, v)`` and ``norm_acc[j] += sum_k theta[j, k]``.  No random
    numbers; documents are independent, so any thread count gives the same sums.
    """
    cdef Py_ssize_t n_docs = indptr.shape[0] - 1
    cdef Py_ssize_t k = phi.shape[1]
    cdef Py_ssize_t j, c, i, v
    cdef double s
    for j in prange(n_docs, nogil=True, num_threads=n_threads, schedule="dynamic", chunksize=64):
        s = 0.0
        for i in range(k):
            s = s + theta[j, i]
        norm_acc[j] += s
        for c in range(indptr[j], indptr[j + 1]):
            v = indices[c]
            s = 0.0
            for i in range(k):
                s = s + phi[v, i] * theta[j, i]
            rate_acc[c] += s


def sample_rates(const double[::1] m_dot, const double[:, ::1] theta_dot, double a0, double b0,
                 double e0, double f0, const int64_t[::1] bounds, const uintptr_t[::1] streams,
                 double[:, ::1] c_out, int n_threads):
    """Per-sample rates of every layer (eq:step6), one block per stream.

    ``theta_dot[j, i]`` is ``theta^(i+2)_.j`` (the last column ``sum_k r_k``).
    Column 0 of ``c_out`` is ``c_j^(2) = (1 - p)/p`` with
    ``p ~ Beta(a0 + m_dot[j], b0 + theta_dot[j, 0])``, drawn as ``G2 / G1``
    (``G1 ~ Gam(a0 + m_dot[j])``, ``G2 ~ Gam(b0 + theta_dot[j, 0])``), so that
    no cancellation occurs; column ``i >= 1`` is
    ``c_j^(i+2) ~ Gam(e0 + theta_dot[j, i], 1 / (f0 + theta_dot[j, i-1]))``.
    Rates are kept in [1e-300, 1e300].
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1
    cdef Py_ssize_t T = c_out.shape[1]
    cdef Py_ssize_t b, j, i
    cdef double g1, g2, c
    cdef bitgen_t *g
    for b in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        g = <bitgen_t *> streams[b]
        for j in range(bounds[b], bounds[b + 1]):
            g1 = random_gamma_fast(g, a0 + m_dot[j])
            g2 = random_gamma_fast(g, b0 + theta_dot[j, 0])
            if g1 <= 0.0:
                c = 1e300
            else:
                c = g2 / g1
            c_out[j, 0] = _clip_rate(c)
            for i in range(1, T):
                c = random_gamma_fast(g, e0 + theta_dot[j, i]) / (f0 + theta_dot[j, i - 1])
                c_out[j, i] = _clip_rate(c)


cdef inline double _clip_rate(double c) noexcept nogil:
    if not (c >= 1e-300):   # also catches NaN
        return 1e-300
    if c > 1e300:
        return 1e300
    return c


def sample_gamma_per_sample(const double[::1] shape, const double[::1] rate,
                            const int64_t[::1] bounds, const uintptr_t[::1] streams,
                            double[::1] out, int n_threads):
    """``out[j] ~ Gam(shape[j], 1 / rate[j])``, floored at the smallest normal double (eq:c_g)."""
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1
    cdef Py_ssize_t b, j
    cdef double v
    cdef bitgen_t *g
    for b in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        g = <bitgen_t *> streams[b]
        for j in range(bounds[b], bounds[b + 1]):
            v = random_standard_gamma(g, shape[j]) / rate[j]
            out[j] = v if v > DBL_MIN else DBL_MIN


def term_totals(const int32_t[::1] indices, const double[::1] values, int64_t[::1] out):
    """``out[v] += sum of values[c]`` over the cells ``c`` with ``indices[c] == v`` (the
    data's total of each term; whole numbers, exact in int64), without the int64
    copy of the indices that ``numpy.bincount`` makes."""
    cdef Py_ssize_t c
    with nogil:
        for c in range(indices.shape[0]):
            out[indices[c]] += <int64_t> values[c]


def sort_slots(const int64_t[::1] slot_start, uint32_t[::1] slots, int n_threads):
    """Sort the filled slots of every sparse term row by factor (in place; the
    empty slots stay at the end): what :c:func:`slot_gather` reads.  The counts
    are the same; only their order within a row changes (which nothing else reads)."""
    cdef Py_ssize_t V = slot_start.shape[0] - 1, v, i, j
    cdef uint32_t w
    cdef uint32_t *s
    for v in prange(V, nogil=True, num_threads=n_threads, schedule="static", chunksize=256):
        s = &slots[slot_start[v]] if slot_start[v + 1] > slot_start[v] else NULL
        if s != NULL:
            i = 1
            while i < slot_start[v + 1] - slot_start[v] and s[i] != 0:     # insertion sort: rows are short
                w = s[i]
                j = i - 1
                while j >= 0 and s[j] > w:
                    s[j + 1] = s[j]
                    j = j - 1
                s[j + 1] = w
                i = i + 1
