# cython: language_level=3
"""Kernels of the upper layers (t >= 2), document-parallel, GIL released.

Like the kernels of :mod:`pygbn.inference._blocked`, every kernel runs over
fixed blocks of documents, block ``b`` drawing only from stream
``streams[b]``, so results do not depend on the number of threads.

* :func:`propagate_counts`: eq:CRT then eq:step1, only where counts are
  non-zero, without the K_t cumulative weights of each cell (chunk sums and
  a two-level search instead).
* :func:`sample_theta`: eq:step4 fused with its prior: the prior rows
  ``theta^(t+1) Phi^(t+1)^T`` of a document block are formed by BLAS into a
  per-block buffer (no J x K_t temporary) and the gamma draws are made by
  :c:func:`pygbn.random._gamma.gamma_row`; the row sums of theta come
  with it.
* :func:`doc_prior`: the same prior rows, for the collapsed layer-one sweep.

The products go through ``scipy.linalg.cython_blas.dgemm`` (imported on the first
product: a one-layer fit never loads ``scipy.linalg``) in calls of at
most ``PRODUCT_LIMIT`` = 2^18 multiply-adds: OpenBLAS (scipy's) runs a call
that small on the calling thread, so the library's thread count is the only
one in play, and a block's rows are always computed by the same calls (the
result does not depend on the threads, nor on how blocks are grouped).

A block whose scratch memory cannot be allocated (:mod:`pygbn.inference._alloc`)
does no work and the kernel raises ``MemoryError`` after the loop.

The kernels trust their input (shapes, dtypes, positivity).
"""
from cython.parallel cimport prange, threadid
from libc.float cimport DBL_MIN
from libc.math cimport log, exp, ldexp, INFINITY
from libc.stdint cimport int32_t, int64_t, uint16_t, uintptr_t
from libc.stdlib cimport malloc, free
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport random_standard_uniform
from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer

from pygbn.inference._alloc cimport block_malloc, fail_next_allocations
from pygbn.inference._shared cimport count_t, log_rescaled_weights
from pygbn.random._gamma cimport gamma_row, row_sum
from pygbn.random._inline cimport CRT_SMALL_N, crt_small
from pygbn.random._kernels cimport random_crt, random_multinomial_split


cdef enum:
    # weights are summed in chunks of this many cells (two-level search)
    CHUNK = 8
    # below this many tables a split is a sequence of categorical draws
    SMALL_SPLIT = 32
    # multiply-adds per BLAS call: OpenBLAS runs calls up to this size on one thread
    PRODUCT_LIMIT = 262144
    # rows are scaled by 2^S, S <= SCALE_MAX, so that their largest entry is at most 2^SCALE_TOP
    SCALE_TOP = 900
    SCALE_MAX = 1000


ctypedef void (*dgemm_t)(char *transa, char *transb, int *m, int *n, int *k, double *alpha, double *a,
                         int *lda, double *b, int *ldb, double *beta, double *c, int *ldc) noexcept nogil

# scipy.linalg.cython_blas.dgemm, taken on the first product (_load_blas): importing
# scipy.linalg costs about 6 MB resident, and a one-layer fit forms no product
cdef dgemm_t dgemm = NULL


cdef int _load_blas() except -1:
    """Set ``dgemm`` from ``scipy.linalg.cython_blas`` (imported here, once)."""
    global dgemm
    if dgemm == NULL:
        from scipy.linalg import cython_blas
        cap = cython_blas.__pyx_capi__["dgemm"]
        dgemm = <dgemm_t> PyCapsule_GetPointer(cap, PyCapsule_GetName(cap))
    return 0


def _fail_next_allocations(int n):
    """Test hook: the next ``n`` per-block scratch allocations fail (0 resets)."""
    fail_next_allocations(n)


# ---------------------------------------------------------------------------
# Phi theta products by row blocks
# ---------------------------------------------------------------------------

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* the exponent e of frexp (max x = f 2^e, f in [0.5, 1)) of a row of
       non-negative doubles, from the largest bit pattern (their order);
       -1023 for a row of zeros */
    static inline int pygbn_row_max_exponent(const double *x, Py_ssize_t n) {
        uint64_t m = 0, b;
        Py_ssize_t i;
        for (i = 0; i < n; i++) {
            memcpy(&b, x + i, 8);
            m = b > m ? b : m;
        }
        return m == 0 ? -1023 : (int) (m >> 52) - 1022;
    }
    """
    int _row_max_exponent "pygbn_row_max_exponent"(const double *x, Py_ssize_t n) noexcept nogil


cdef inline int _row_scale(const double *x, Py_ssize_t n) noexcept nogil:
    """The exponent ``S`` in ``[0, SCALE_MAX]`` that brings ``max(x)`` to at most ``2^SCALE_TOP``
    (0 for a row of zeros; ``x >= 0``).

    Multiplying a row by ``2^S`` is exact, and keeps products with it out of
    the subnormal range where the unscaled products would fall there (a
    theta floored at DBL_MIN times a Phi entry below 1): on x86 every
    operation with a subnormal result or operand takes a microcode assist
    (about 100 cycles), which made the products and the upward pass several
    times slower on the upper layers' rows (15% of whose theta are DBL_MIN).
    """
    cdef int e = _row_max_exponent(x, n)
    if e == -1023:
        return 0
    e = SCALE_TOP - e
    return 0 if e < 0 else (SCALE_MAX if e > SCALE_MAX else e)


cdef void _product_rows(const double *theta, const double *phi, int kin, int kup, int nrows,
                        double *out, double *scratch) noexcept nogil:
    """``out[j, v] = max(sum_k theta[j, k] phi[v, k], DBL_MIN)`` for ``nrows`` rows (all row-major).

    Each theta row is first multiplied by its own ``2^S`` (:c:func:`_row_scale`,
    into ``scratch``, ``nrows * (kup + 1)`` doubles) and each output row by
    ``2^-S`` afterwards: exact scalings, so every entry is what the unscaled
    product gives wherever that product has no subnormal term, and the same
    or more accurate otherwise (an entry below DBL_MIN is DBL_MIN either way).

    In BLAS's column-major terms ``out^T = phi (kin x kup) theta^T``; calls are
    cut to at most PRODUCT_LIMIT multiply-adds by rows (and by output columns
    when a single row is that large), never along k, so every entry is one
    dot product in BLAS's own order.
    """
    cdef int rows = PRODUCT_LIMIT // (kin * kup) if kin * kup > 0 else nrows
    cdef int cols = kin, j0, v0, m, nv, j, i, sc
    cdef double one = 1.0, zero = 0.0, f, lim, y
    cdef double *ts = scratch
    cdef double *down = scratch + <Py_ssize_t> nrows * kup
    cdef double *row
    cdef char tr = b'T', nt = b'N'
    for j in range(nrows):
        sc = _row_scale(theta + <Py_ssize_t> j * kup, kup)
        f = ldexp(1.0, sc)
        down[j] = ldexp(1.0, -sc)
        for i in range(kup):
            ts[<Py_ssize_t> j * kup + i] = theta[<Py_ssize_t> j * kup + i] * f
    if rows < 1:
        rows = 1
        cols = PRODUCT_LIMIT // kup if kup < PRODUCT_LIMIT else 1
    if rows > nrows:
        rows = nrows
    j0 = 0
    while j0 < nrows:
        m = rows if j0 + rows <= nrows else nrows - j0
        v0 = 0
        while v0 < kin:
            nv = cols if v0 + cols <= kin else kin - v0
            dgemm(&tr, &nt, &nv, &m, &kup, &one, <double *> phi + <Py_ssize_t> v0 * kup, &kup,
                  ts + <Py_ssize_t> j0 * kup, &kup, &zero, out + <Py_ssize_t> j0 * kin + v0, &kin)
            v0 += nv
        j0 += m
    for j in range(nrows):
        # y * 2^-S > DBL_MIN exactly when y > DBL_MIN * 2^S (no subnormal is formed)
        lim = DBL_MIN / down[j]
        row = out + <Py_ssize_t> j * kin
        for i in range(kin):
            y = row[i]
            row[i] = y * down[j] if y > lim else DBL_MIN


def doc_prior(const double[:, ::1] theta_up, const double[:, ::1] phi_up, const int64_t[::1] bounds,
              double[:, ::1] out, int n_threads):
    """``out[j - bounds[0], :] = max(theta_up[j] Phi_up^T, DBL_MIN)`` for the documents of the blocks.

    ``theta_up`` is theta^(t+1) (J x K_{t+1}), ``phi_up`` Phi^(t+1)
    (K_t x K_{t+1}); ``out`` has ``bounds[-1] - bounds[0]`` rows.  Block ``b``'s
    rows are formed by the same BLAS calls whatever the thread count
    (:c:func:`_product_rows`).
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1
    cdef int kin = phi_up.shape[0], kup = phi_up.shape[1]
    cdef Py_ssize_t b, off = bounds[0]
    cdef double *work
    cdef int n_failed = 0
    if n_blocks <= 0 or kin == 0:
        return
    _load_blas()
    for b in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        if bounds[b + 1] > bounds[b]:
            work = <double *> block_malloc((bounds[b + 1] - bounds[b]) * (kup + 1) * sizeof(double))
            if work == NULL:
                n_failed += 1
            else:
                _product_rows(&theta_up[bounds[b], 0], &phi_up[0, 0], kin, kup,
                              <int> (bounds[b + 1] - bounds[b]), &out[bounds[b] - off, 0], work)
            free(work)
    if n_failed:
        raise MemoryError(f"doc_prior: scratch memory of {n_failed} document block(s) "
                          "could not be allocated")


# ---------------------------------------------------------------------------
# theta^(t) (eq:step4), fused with its prior
# ---------------------------------------------------------------------------

def sample_theta(const double[:, ::1] theta_up, const double[:, ::1] phi_up,
                 const double[::1] prior_row, const count_t[:, ::1] m, const double[::1] rate,
                 const int64_t[::1] bounds, const uintptr_t[::1] streams, double[:, ::1] out,
                 double[::1] row_sums, int n_threads):
    """``out[j, k] ~ Gam(prior[j, k] + m[j, k], 1 / rate[j])`` and ``row_sums[j] = sum_k out[j, k]``.

    The prior is ``max(theta_up[j] Phi_up^T, DBL_MIN)`` (eq:step4 below the top,
    formed per block, see :func:`doc_prior`), or ``prior_row`` shared by all
    documents when ``theta_up`` has no rows (the top layer's r, floored by
    the caller).  Draws are ``max(G / rate, DBL_MIN)``, a row at a time
    (:c:func:`pygbn.random._gamma.gamma_row`).  ``row_sums`` (eq:step6's
    theta^(t)_.j) is skipped when empty.  Only the documents of the blocks
    are written.
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1
    cdef Py_ssize_t k = out.shape[1]
    cdef int kup = phi_up.shape[1]
    cdef bint shared = theta_up.shape[0] == 0
    cdef bint sums = row_sums.shape[0] > 0
    cdef Py_ssize_t b, j, i, nrows, max_rows = 0
    cdef double *buf
    cdef double *work
    cdef const double *prior
    cdef double s
    cdef int n_failed = 0
    cdef bitgen_t *g
    for b in range(n_blocks):
        if bounds[b + 1] - bounds[b] > max_rows:
            max_rows = bounds[b + 1] - bounds[b]
    if n_blocks <= 0 or k == 0:
        return
    if not shared:
        _load_blas()
    for b in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        g = <bitgen_t *> streams[b]
        nrows = bounds[b + 1] - bounds[b]
        # the row's shapes and the row kernel's scratch (8 k), then the block's prior rows
        # and the product's scratch
        work = <double *> block_malloc((8 * k + (0 if shared else max_rows * (k + kup + 1)))
                                       * sizeof(double))
        if work == NULL:
            n_failed += 1
        else:
            buf = work + 8 * k
            if not shared:
                _product_rows(&theta_up[bounds[b], 0], &phi_up[0, 0], <int> k, kup, <int> nrows, buf,
                              buf + max_rows * k)
            for j in range(bounds[b], bounds[b + 1]):
                prior = &prior_row[0] if shared else buf + (j - bounds[b]) * k
                for i in range(k):
                    work[i] = (prior[i] if prior[i] > DBL_MIN else DBL_MIN) + m[j, i]
                s = gamma_row(g, work, k, rate[j], &out[j, 0], work + k)
                if sums:
                    row_sums[j] = s
        free(work)
    if n_failed:
        raise MemoryError(f"sample_theta: scratch memory of {n_failed} document block(s) "
                          "could not be allocated")


# ---------------------------------------------------------------------------
# upward propagation (eq:CRT then eq:step1)
# ---------------------------------------------------------------------------

cdef extern from *:
    """
    #include <string.h>
    /* cs[c] = sum of p[i] t[i] over chunk c (8 cells); returns the total.  A full
       chunk is summed as (p0 t0 + p4 t4) + (p2 t2 + p6 t6) plus the same for the odd
       cells: with GCC and Clang in pairs of lanes (vector extensions), elsewhere
       the same operations one at a time; the last, partial chunk left to right. */
    #if defined(__GNUC__)
    typedef double pygbn_v2d __attribute__((vector_size(16)));
    static inline pygbn_v2d pygbn_load2(const double *x) { pygbn_v2d v; memcpy(&v, x, 16); return v; }
    static inline double pygbn_chunk8(const double *p, const double *t) {
        pygbn_v2d e = pygbn_load2(p) * pygbn_load2(t) + pygbn_load2(p + 4) * pygbn_load2(t + 4);
        pygbn_v2d f = pygbn_load2(p + 2) * pygbn_load2(t + 2) + pygbn_load2(p + 6) * pygbn_load2(t + 6);
        pygbn_v2d g = e + f;
        return g[0] + g[1];
    }
    #else
    static inline double pygbn_chunk8(const double *p, const double *t) {
        double e0 = p[0] * t[0] + p[4] * t[4], e1 = p[1] * t[1] + p[5] * t[5];
        double f0 = p[2] * t[2] + p[6] * t[6], f1 = p[3] * t[3] + p[7] * t[7];
        return (e0 + f0) + (e1 + f1);
    }
    #endif
    static inline double pygbn_chunk_sums(const double *p, const double *t, Py_ssize_t k,
                                          double *cs) {
        Py_ssize_t c, i, n_full = k / 8;
        double total = 0.0, s;
        for (c = 0; c < n_full; c++) {
            s = pygbn_chunk8(p + 8 * c, t + 8 * c);
            cs[c] = s;
            total += s;
        }
        if (n_full * 8 < k) {
            s = 0.0;
            for (i = n_full * 8; i < k; i++)
                s += p[i] * t[i];
            cs[n_full] = s;
            total += s;
        }
        return total;
    }
    """
    double _chunk_sums "pygbn_chunk_sums"(const double *p, const double *t, Py_ssize_t k,
                                          double *cs) noexcept nogil


cdef inline Py_ssize_t _pick(const double *phi_row, const double *theta_row, Py_ssize_t k,
                             const double *cs, double u) noexcept nogil:
    """The cell of ``u`` in ``[0, total)`` under the weights ``phi_row * theta_row``.

    The chunk by its sum, then the cell inside it; a ``u`` that rounding puts
    past the last weight goes to the last cell with positive weight.
    """
    cdef Py_ssize_t n_chunks = (k + CHUNK - 1) // CHUNK
    cdef Py_ssize_t c = 0, last_c = -1, i, lo, hi, last_i
    cdef double w
    while c < n_chunks:
        if cs[c] > 0.0:
            if u < cs[c]:
                break
            last_c = c
            u -= cs[c]
        c += 1
    if c == n_chunks:           # rounding: the last chunk with positive weight, at its top
        c = last_c
        u = INFINITY
    lo = c * CHUNK
    hi = lo + CHUNK if lo + CHUNK <= k else k
    last_i = lo
    for i in range(lo, hi):
        w = phi_row[i] * theta_row[i]
        if w > 0.0:
            if u < w:
                return i
            u -= w
            last_i = i
    return last_i


cdef inline Py_ssize_t _search_linear(const double *w, Py_ssize_t k, double u) noexcept nogil:
    """First cell whose cumulative weight exceeds ``u`` (the last positive one if none)."""
    cdef Py_ssize_t i, last = 0
    for i in range(k):
        if w[i] > 0.0:
            if u < w[i]:
                return i
            u -= w[i]
            last = i
    return last


cdef inline int64_t _crt(bitgen_t *g, int64_t n, double r) noexcept nogil:
    # inline for the small counts (most cells), else random_crt's choice; the same draws
    # as random_crt
    if n <= CRT_SMALL_N:
        return crt_small(g, n, r)
    return random_crt(g, n, r)


cdef inline void _propagate_cell(bitgen_t *g, int64_t m, const double *p, const double *t,
                                 const double *ts, double down, Py_ssize_t k, double *cs, double *w,
                                 int64_t *tmp, int64_t *m_row, int64_t *n_row) noexcept nogil:
    """One cell of :func:`propagate_counts`: ``x ~ CRT(m, p . t)`` split by ``p * t``,
    added to ``m_row`` and (unless NULL) ``n_row``.

    ``ts = t * 2^S`` and ``down = 2^-S`` (:c:func:`_row_scale`): the weights
    are formed as ``p * ts``, which keeps them out of the subnormal range
    (slow) and scales every weight, partial sum and search point by the same
    power of two (the same cells as ``p * t`` where that has no subnormal).
    """
    cdef double total = _chunk_sums(p, ts, k, cs)
    cdef double r = total * down
    cdef int64_t x, u
    cdef Py_ssize_t i
    if not r > 0.0:
        # the concentration underflows: one table (CRT with r -> 0), split by the
        # scaled weights, or in log space where even those underflow
        if total > 0.0:
            i = _pick(p, ts, k, cs, random_standard_uniform(g) * total)
        else:
            total = log_rescaled_weights(p, t, k, w)
            i = _search_linear(w, k, random_standard_uniform(g) * total)
        m_row[i] += 1
        if n_row != NULL:
            n_row[i] += 1
        return
    x = _crt(g, m, r)
    if x < SMALL_SPLIT:
        for u in range(x):
            i = _pick(p, ts, k, cs, random_standard_uniform(g) * total)
            m_row[i] += 1
            if n_row != NULL:
                n_row[i] += 1
        return
    total = 0.0
    for i in range(k):
        w[i] = p[i] * ts[i]
        total = total + w[i]
    random_multinomial_split(g, x, w, k, total, tmp)
    for i in range(k):
        if tmp[i] != 0:
            m_row[i] += tmp[i]
            if n_row != NULL:
                n_row[i] += tmp[i]


def row_sums(const double[:, ::1] x, double[::1] out):
    """``out[j] = sum_i x[j, i]`` summed as :func:`sample_theta` sums
    (:c:func:`pygbn.random._gamma.row_sum`)."""
    cdef Py_ssize_t j
    if x.shape[1] == 0:
        out[:] = 0.0
        return
    with nogil:
        for j in range(x.shape[0]):
            out[j] = row_sum(&x[j, 0], x.shape[1])


def propagate_counts(const count_t[:, ::1] m_in, const double[:, ::1] phi,
                     const double[:, ::1] theta, const int64_t[::1] bounds,
                     const uintptr_t[::1] streams, int64_t[:, ::1] m_out,
                     int64_t[:, :, ::1] n_out, int n_threads):
    """Upward propagation through one layer (eq:CRT then eq:step1).

    For every document ``j`` and row ``v`` with ``m = m_in[j, v] > 0``:
    ``x ~ CRT(m, sum_k phi[v, k] theta[j, k])`` and
    ``x ~> Mult(x, phi[v, :] * theta[j, :] / sum)``, added to ``m_out[j, :]``
    (overwritten per document) and to ``n_out[thread, v, :]`` (zero on entry;
    skipped when ``n_out`` has no rows: the statistics of Phi are not needed
    when Phi is fixed).  Cells with ``m = 0`` cost nothing beyond the scan.
    A split of fewer than SMALL_SPLIT tables is a sequence of categorical
    draws by a two-level search over chunk sums (the K weights are never
    stored); larger ones are conditional binomials
    (:c:func:`random_multinomial_split`).  Where every product of a cell
    underflows the weights are formed in log space (and the CRT's
    concentration, 0 in floating point, gives one table).
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1
    cdef Py_ssize_t k = phi.shape[1]
    cdef Py_ssize_t kin = m_in.shape[1]
    cdef Py_ssize_t n_chunks = (k + CHUNK - 1) // CHUNK
    cdef bint stats = n_out.shape[0] > 0
    cdef Py_ssize_t b, j, v, i, c
    cdef int tid
    cdef double *cs
    cdef double *w
    cdef double *ts
    cdef double down, f
    cdef int64_t *tmp
    cdef int64_t *m_row
    cdef const count_t *in_row
    cdef int n_failed = 0
    cdef bitgen_t *g
    if n_blocks <= 0:
        return
    for b in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        tid = threadid()
        g = <bitgen_t *> streams[b]
        cs = <double *> block_malloc((n_chunks + 1) * sizeof(double))
        w = <double *> block_malloc(2 * (k + 1) * sizeof(double))
        tmp = <int64_t *> block_malloc((k + 1) * sizeof(int64_t))
        if cs == NULL or w == NULL or tmp == NULL:
            n_failed += 1
        else:
            ts = w + k + 1
            for j in range(bounds[b], bounds[b + 1]):
                m_row = &m_out[j, 0]
                for i in range(k):
                    m_row[i] = 0
                in_row = &m_in[j, 0]
                down = 0.0                      # theta row not scaled yet
                for v in range(kin):
                    if in_row[v] != 0:
                        if down == 0.0:
                            c = _row_scale(&theta[j, 0], k)
                            down = ldexp(1.0, <int> -c)
                            f = ldexp(1.0, <int> c)
                            for i in range(k):
                                ts[i] = theta[j, i] * f
                        _propagate_cell(g, <int64_t> in_row[v], &phi[v, 0], &theta[j, 0], ts, down, k,
                                        cs, w, tmp, m_row, &n_out[tid, v, 0] if stats else NULL)
        free(cs)
        free(w)
        free(tmp)
    if n_failed:
        raise MemoryError(f"propagate_counts: scratch memory of {n_failed} document block(s) "
                          "could not be allocated")
