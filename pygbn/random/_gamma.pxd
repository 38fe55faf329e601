# cython: language_level=3
"""The row gamma kernel, inline (nogil, no validation): the library's one kernel for rows of gammas.

:c:func:`gamma_row` draws ``out[i] = max(G_i / rate, DBL_MIN)``,
``G_i ~ Gam(a[i], 1)`` independent, for a row of shapes, as the upper layers'
theta draws (eq:step4) and the Dirichlet draws of every Phi (eq:step2,
``pygbn.inference._blocked.dirichlet_columns``) need them: most
shapes far below 1 (a prior ``Phi theta`` of 0.001-0.1 with no count, or
``eta`` where a term has no count in a topic), a few at or above 1.  The
public row fill (``_kernel("gamma_row")``) draws through it too.  It is exact given ideal uniforms (up to the
rounding of a few floating-point operations per draw), like the other
kernels of :mod:`pygbn.random`, and draws from one numpy ``bitgen_t``
stream, so a row's draws depend only on its stream (and are the same
bits whichever instruction set's version of the vectorised passes runs).

Shapes below 1: Ahrens & Dieter's (1974) GS.  With ``b = 1 + a/e`` and
``P = b U``: ``P <= 1`` proposes ``x = P^(1/a)``, accepted with probability
``exp(-x)``; ``P > 1`` proposes ``x = -log((b - P)/a)``, accepted with
probability ``x^(a-1) = exp(-(1 - a) log x)``.  The row's shapes below 1 are
drawn in rounds; what makes it fast:

* a round's proposals are formed together: one 64-bit output per shape still
  to draw (the stream's ``next_uint64`` outputs, in order, four PCG64 states
  at a time: :func:`pygbn.random._pcg64.raw_fill`; the uniform and 11
  spare bits ``h`` for the test, :c:func:`accept_exp_neg`), then one
  vectorised pass (:c:func:`gs_lead`, with the vectorisable ``log``/``exp``
  of :mod:`pygbn.random._inline`) forms ``log x = log(P)/a`` and ``x`` for
  all and finishes every accepted ``P <= 1`` proposal; the ``P > 1``
  proposals (1 - 1/b of them: 10% at a = 0.3, 25% at 0.9) are gathered and
  finished by a second vectorised pass (:c:func:`gs_tail`: both logs, the
  test on ``y = (1 - a) log x``); the shapes of the rejected proposals make
  the next round (fresh proposals, vectorised again), and fewer than
  ``GS_VEC_MIN`` (8) are finished one at a time with libm;
* ``x`` is formed as ``exp(max(log x, -700))`` so that no operation of a
  pass has a subnormal result (on x86 each such operation costs a microcode
  assist of about a hundred cycles, and for shapes near 0.001 most ``x``
  underflow); ``y`` is 0 or above 1e-32;
* ``x <= 2^-53`` is accepted without a uniform (``exp(-x) >= 1 - 2^-53``, above
  every 53-bit uniform); otherwise the test ``V < exp(-y)`` (``y = x`` or
  ``(1 - a) log x``) is decided by ``1 - y + y^2/2 - y^3/6 <= exp(-y) <= 1 - y
  + y^2/2``: ``h`` below the lower bound accepts, ``h`` at or above the upper
  one rejects, and ``exp`` (libm) is called only for an ``h`` between the two;
* the quotient is ``x * (1 / rate)``, or ``exp(log x - log rate)`` where ``x``
  is below ``e^-700`` (floored at DBL_MIN without an ``exp`` when that is below
  it);
* the passes work on compacted arrays, padded to a multiple of 8 lanes where
  the row's scratch has room (no scalar remainder), and a mixed row lists its
  shapes below 1 and from 1 up without a branch.

Each shape's draw is the first accepted of an independent sequence of GS
proposals, whatever round it comes from: the same rejection sampler.  Shapes
from 1 up: Marsaglia & Tsang (:c:func:`pygbn.random._inline.gamma_mt`),
drawn first, in row order.

References
----------
Ahrens, J. H. & Dieter, U. (1974). Computer methods for sampling from gamma,
    beta, Poisson and binomial distributions. Computing 12, 223-246 (GS).
Marsaglia, G. & Tsang, W. W. (2000). A simple method for generating gamma
    variables. ACM TOMS 26, 363-372.
"""
from libc.float cimport DBL_MIN
from libc.math cimport log, exp
from libc.stdint cimport uint64_t
from libc.string cimport memcpy
from numpy.random cimport bitgen_t

from pygbn.random._pcg64 cimport next_raw, next_uniform, raw_fill

# the vectorisable exp and log (and INV_E) are defined by _inline's C code
from pygbn.random._inline cimport INV_E, LOG_DBL_MIN, gamma_mt, vexp_neg, vlog_pos

cdef extern from *:
    """
    #include <stdint.h>
    #include <float.h>
    /* log(2^-53) rounded down: log x <= this means x <= 2^-53 */
    #define PYGBN_LOG_EPS53 -36.7368005696771
    /* x is formed as exp(max(log x, this)): e^-700 = 9.9e-305 is normal */
    #define PYGBN_LOG_X_MIN -700.0
    /* build-time knobs (CFLAGS): -DPYGBN_GS_LEAD_NO_AVX512 leaves out the AVX-512
       version, -DPYGBN_GS_LEAD_NO_CLONES builds the baseline version alone */
    #if defined(PYGBN_GS_LEAD_NO_AVX512)
    #define PYGBN_GS_LEAD_CLONES "avx2", "default"
    #else
    #define PYGBN_GS_LEAD_CLONES "avx512f", "avx2", "default"
    #endif
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) \
        && !defined(PYGBN_GS_LEAD_NO_CLONES)
    #define PYGBN_GS_LEAD_ATTR __attribute__((target_clones(PYGBN_GS_LEAD_CLONES)))
    #else
    #define PYGBN_GS_LEAD_ATTR
    #endif
    /* what the vectorised passes leave for the scalar loop (a finished quotient is >= DBL_MIN) */
    #define PYGBN_GS_REJECT -1.0
    #define PYGBN_GS_TEST -2.0
    #define PYGBN_GS_TAIL -3.0
    /* fewer proposals than this are made one at a time, with libm (speed only) */
    #ifndef PYGBN_GS_VEC_MIN
    #define PYGBN_GS_VEC_MIN 8
    #endif

    #if defined(__GNUC__) && !defined(__clang__)
    #pragma GCC push_options
    #pragma GCC optimize ("no-trapping-math")
    #endif
    /* Selects on the bits of doubles.  Where a select's result is multiplied, GCC
       may multiply both arms and select afterwards; with tiny arms that forms
       subnormals (each a microcode assist of about a hundred cycles on x86).
       A select between integers is left alone.  For doubles of one sign the
       order of their bits is their order (reversed for negative ones). */
    static inline double pygbn_bits_max(double x, double c) {     /* x, c >= 0 */
        uint64_t bx = pygbn_to_bits(x), bc = pygbn_to_bits(c);
        return pygbn_from_bits(bx > bc ? bx : bc);
    }
    static inline double pygbn_bits_floor(double x, double c) {   /* max(x, c), c < 0 */
        uint64_t bx = pygbn_to_bits(x), bc = pygbn_to_bits(c);
        return pygbn_from_bits((bx < bc) | ((int64_t) bx >= 0) ? bx : bc);
    }
    static inline double pygbn_bits_above(double x, double c) {   /* x > c ? x : 1, x, c >= 0 */
        uint64_t bx = pygbn_to_bits(x), bc = pygbn_to_bits(c);
        return pygbn_from_bits(bx > bc ? bx : 0x3FF0000000000000ULL);
    }
    /* GS's proposals of n shapes below 1, vectorised.  On entry p holds the
       uniforms U and h the 11 spare bits of each (as in accept_exp_neg).  P = (1 + a/e) U;
       where P <= 1, lx = log(P) / a and x = exp(max(lx, -700)).  On return val is
       the finished quotient max(exp(lx) / rate, DBL_MIN) of each proposal that is
       accepted and needs no more work, else a code: PYGBN_GS_REJECT (P <= 1 and
       h >= 2048 (1 - x + x^2/2) >= 2048 exp(-x): rejected), PYGBN_GS_TEST (P <= 1 and
       the test needs exp, or a draw below e^-700 whose quotient is not below
       DBL_MIN: formed from its log, one at a time) or PYGBN_GS_TAIL (P > 1: see
       pygbn_gs_tail); p is P and lx is log(P) / a (x is formed again from lx, with
       libm, for the few that need it: storing x costs more at small shapes).  x is formed as exp(max(lx, -700)), so no
       operation has a subnormal result.  lim is DBL_MIN rate.  With GCC on x86-64
       Linux an AVX-512 or AVX2 version is chosen at run time (target_clones).
       setup.py builds with -ffp-contract=off: no multiply-add is fused (AVX-512 has
       FMA), so every version gives the same results.  The optimize pragma is
       _inline's, so that its log and exp are inlined here. */
    static inline __attribute__((always_inline))
    void pygbn_gs_lead_body(const double *a, double *p, const double *h, double *lx, double *val,
                            Py_ssize_t n, double inv_rate, double log_rate, double lim) {
        Py_ssize_t i;
        /* two vectors' worth of lanes per iteration, so that their long chains (log, two
           divisions, exp) overlap: with the Estrin polynomials of _inline, gamma rows at
           a = 0.05-0.9 took 12% less time (unrolled alone, with Horner's, no change) */
        _Pragma("GCC unroll 2")
        for (i = 0; i < n; i++) {
            double ai = a[i], hv = h[i];
            double pi = (1.0 + ai * PYGBN_INV_E) * p[i];
            double li = pygbn_log_pos(pi) / ai;
            double xi = pygbn_exp_neg(pygbn_bits_floor(li, PYGBN_LOG_X_MIN));
            /* the test's bounds, needed only where x > 2^-53: x is raised to 2^-60
               first, so that x^2 and x^3 are never subnormal */
            double xt = pygbn_bits_max(xi, 8.673617379884035e-19);
            double x2 = xt * xt;
            double hi = 2048.0 * ((1.0 - xt) + 0.5 * x2);
            double lo = hi - 2048.0 * (1.0 / 6.0) * x2 * xt;
            /* | and & rather than || and &&: no branch (and h[i] read whatever li is),
               which GCC 13 needs to vectorise the loop ("control flow in loop") */
            int free = li <= PYGBN_LOG_EPS53;
            /* the quotient of an accepted draw (-1 where it needs more work) */
            double v = pygbn_bits_above(xi, lim) * inv_rate;
            v = xi > lim ? v : DBL_MIN;
            v = li < PYGBN_LOG_X_MIN ? DBL_MIN : v;
            v = v > DBL_MIN ? v : DBL_MIN;
            v = (free | (hv + 1.0 <= lo)) ? v : (hv >= hi ? PYGBN_GS_REJECT : PYGBN_GS_TEST);
            v = ((li < PYGBN_LOG_X_MIN) & (li - log_rate > PYGBN_LOG_DBL_MIN)) ? PYGBN_GS_TEST : v;
            v = pi <= 1.0 ? v : PYGBN_GS_TAIL;
            p[i] = pi;
            lx[i] = li;
            val[i] = v;
        }
    }

    /* GS's proposals with P = (1 + a/e) U > 1 (p holds P, h the 11 bits), vectorised:
       x = -log((1 + a/e - P) / a) >= 1, accepted with probability x^(a - 1) =
       exp(-y), y = (1 - a) log x, decided by the bounds of pygbn_gs_lead with y for x.
       On return p = x, lx = log x and val the finished quotient
       max(x / rate, DBL_MIN), PYGBN_GS_REJECT (h >= 2048 (1 - y + y^2/2)) or
       PYGBN_GS_TEST (the test needs exp).  y is 0 or above 1e-32 (1 - a >= 2^-53,
       |log x| >= 2^-53 where x != 1), so y^2 and y^3 are never subnormal. */
    static inline __attribute__((always_inline))
    void pygbn_gs_tail_body(const double *a, double *p, const double *h, double *lx, double *val,
                            Py_ssize_t n, double inv_rate, double lim) {
        Py_ssize_t i;
        _Pragma("GCC unroll 2")   /* as in pygbn_gs_lead_body */
        for (i = 0; i < n; i++) {
            double ai = a[i], hv = h[i];
            double xi = -pygbn_log_pos(((1.0 + ai * PYGBN_INV_E) - p[i]) / ai);
            double li = pygbn_log_pos(xi);
            double y = (1.0 - ai) * li;
            double y2 = y * y;
            double hi = 2048.0 * ((1.0 - y) + 0.5 * y2);
            double lo = hi - 2048.0 * (1.0 / 6.0) * y2 * y;
            double v = pygbn_bits_above(xi, lim) * inv_rate;
            v = xi > lim ? v : DBL_MIN;
            v = v > DBL_MIN ? v : DBL_MIN;
            v = hv >= hi ? PYGBN_GS_REJECT : (hv + 1.0 <= lo ? v : PYGBN_GS_TEST);
            p[i] = xi;
            lx[i] = li;
            val[i] = v;
        }
    }
    /* the passes as the kernel calls them: one version per instruction set, chosen at
       run time (target_clones) */
    #define PYGBN_GS_ARGS const double *a, double *p, const double *h, double *lx, double *val, \
        Py_ssize_t n, double inv_rate, double log_rate, double lim
    PYGBN_GS_LEAD_ATTR static void pygbn_gs_lead(PYGBN_GS_ARGS) {
        pygbn_gs_lead_body(a, p, h, lx, val, n, inv_rate, log_rate, lim);
    }
    PYGBN_GS_LEAD_ATTR static void pygbn_gs_tail(PYGBN_GS_ARGS) {
        pygbn_gs_tail_body(a, p, h, lx, val, n, inv_rate, lim);
    }

    /* tests: each instruction set's version called by name (isa 0: the baseline, 1: AVX2,
       2: AVX-512F), the lead pass (tail = 0) or the tail pass (tail = 1); returns 0 where
       this build or CPU has no such version */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    #define PYGBN_GS_ISA_TESTS 1
    __attribute__((target("avx512f"), unused)) static void pygbn_gs_both_avx512(int tail, PYGBN_GS_ARGS) {
        if (tail) pygbn_gs_tail_body(a, p, h, lx, val, n, inv_rate, lim);
        else pygbn_gs_lead_body(a, p, h, lx, val, n, inv_rate, log_rate, lim);
    }
    __attribute__((target("avx2"), unused)) static void pygbn_gs_both_avx2(int tail, PYGBN_GS_ARGS) {
        if (tail) pygbn_gs_tail_body(a, p, h, lx, val, n, inv_rate, lim);
        else pygbn_gs_lead_body(a, p, h, lx, val, n, inv_rate, log_rate, lim);
    }
    #endif
    __attribute__((unused)) static void pygbn_gs_both_plain(int tail, PYGBN_GS_ARGS) {
        if (tail) pygbn_gs_tail_body(a, p, h, lx, val, n, inv_rate, lim);
        else pygbn_gs_lead_body(a, p, h, lx, val, n, inv_rate, log_rate, lim);
    }
    __attribute__((unused)) static int pygbn_gs_pass_isa(int isa, int tail, PYGBN_GS_ARGS) {
        if (isa == 0) {
            pygbn_gs_both_plain(tail, a, p, h, lx, val, n, inv_rate, log_rate, lim);
            return 1;
        }
    #if defined(PYGBN_GS_ISA_TESTS)
        __builtin_cpu_init();
        if (isa == 1 && __builtin_cpu_supports("avx2")) {
            pygbn_gs_both_avx2(tail, a, p, h, lx, val, n, inv_rate, log_rate, lim);
            return 1;
        }
        if (isa == 2 && __builtin_cpu_supports("avx512f")) {
            pygbn_gs_both_avx512(tail, a, p, h, lx, val, n, inv_rate, log_rate, lim);
            return 1;
        }
    #endif
        return 0;
    }
    #if defined(__GNUC__) && !defined(__clang__)
    #pragma GCC pop_options
    #endif

    /* x[0] + ... + x[k-1] in four interleaved partial sums (cells i = 0, 1, 2, 3
       mod 4, the rest into the first), ((s0 + s1) + (s2 + s3)): a fixed order,
       a quarter of the dependent additions of a left-to-right sum */
    static inline double pygbn_row_sum(const double *x, Py_ssize_t k) {
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        Py_ssize_t i = 0;
        for (; i + 4 <= k; i += 4) {
            s0 += x[i];
            s1 += x[i + 1];
            s2 += x[i + 2];
            s3 += x[i + 3];
        }
        for (; i < k; i++)
            s0 += x[i];
        return (s0 + s1) + (s2 + s3);
    }

    /* the uniform (r >> 11) 2^-53 and the 11 bits below it, from one 64-bit output */
    static inline double pygbn_split_uniform(uint64_t r, double *low) {
        *low = (double) (r & 0x7FF);
        return (double) (r >> 11) * (1.0 / 9007199254740992.0);
    }
    """
    const double LOG_EPS53 "PYGBN_LOG_EPS53"
    const double LOG_X_MIN "PYGBN_LOG_X_MIN"
    const double GS_REJECT "PYGBN_GS_REJECT"
    const double GS_TEST "PYGBN_GS_TEST"
    const double GS_TAIL "PYGBN_GS_TAIL"
    const Py_ssize_t GS_VEC_MIN "PYGBN_GS_VEC_MIN"
    void gs_lead "pygbn_gs_lead"(const double *a, double *p, const double *h, double *lx,
                                 double *val, Py_ssize_t n, double inv_rate, double log_rate,
                                 double lim) noexcept nogil
    void gs_tail "pygbn_gs_tail"(const double *a, double *p, const double *h, double *lx,
                                 double *val, Py_ssize_t n, double inv_rate, double log_rate,
                                 double lim) noexcept nogil
    int gs_pass_isa "pygbn_gs_pass_isa"(int isa, int tail, const double *a, double *p, const double *h,
                                        double *lx, double *val, Py_ssize_t n, double inv_rate,
                                        double log_rate, double lim) noexcept nogil
    double split_uniform "pygbn_split_uniform"(uint64_t r, double *low) noexcept nogil
    double row_sum "pygbn_row_sum"(const double *x, Py_ssize_t k) noexcept nogil


cdef inline bint accept_exp_neg(bitgen_t *g, double y, double h) noexcept nogil:
    """``V < exp(-y)`` (``y >= 0``) for ``V = (h + W) / 2048``, ``h`` an integer in
    [0, 2048) (11 spare random bits of a proposal's 64-bit output) and ``W`` a
    uniform on [0, 1) drawn only when ``h`` alone does not decide.

    ``2048 exp(-y)`` is bracketed by ``2048 (1 - y + y^2/2 - y^3/6)`` and
    ``2048 (1 - y + y^2/2)`` (alternating Taylor series, y >= 0); ``exp`` is
    called only when ``h`` falls between the two, ``W`` only when ``h`` is the
    integer part of ``2048 exp(-y)`` (probability 1/2048).
    """
    cdef double y2 = y * y
    cdef double hi = 2048.0 * ((1.0 - y) + 0.5 * y2)
    cdef double t
    if h >= hi:
        return False
    if h + 1.0 <= hi - 2048.0 * (1.0 / 6.0) * y2 * y:
        return True
    t = 2048.0 * exp(-y)
    if h + 1.0 <= t:
        return True
    if h >= t:
        return False
    return h + next_uniform(g) < t


cdef inline double gs_tail_one(bitgen_t *g, double a, double p, double h, double *log_x) noexcept nogil:
    """GS's proposal for ``P = (1 + a/e) U > 1``: ``x = -log((b - P)/a) >= 1``, accepted with
    probability ``x^(a - 1)`` (``h`` as in :c:func:`accept_exp_neg`); the draw
    (``log_x[0]`` its log) or -1."""
    cdef double x = -log(((1.0 + a * INV_E) - p) / a)
    cdef double lx = log(x)
    if accept_exp_neg(g, (1.0 - a) * lx, h):
        log_x[0] = lx
        return x
    return -1.0


cdef inline double gamma_gs_log(bitgen_t *g, double a, double *log_x) noexcept nogil:
    """Gam(a, 1) for ``0 < a < 1`` by GS, one proposal at a time.

    Returns ``exp(max(log x, -700))`` and sets ``log_x[0] = log x`` (exact
    where the draw underflows).
    """
    cdef double p, lx, x, h
    while True:
        p = (1.0 + a * INV_E) * split_uniform(next_raw(g), &h)
        if p <= 1.0:
            lx = log(p) / a
            x = exp(lx if lx > LOG_X_MIN else LOG_X_MIN)
            if lx <= LOG_EPS53 or accept_exp_neg(g, x, h):
                log_x[0] = lx
                return x
        else:
            x = gs_tail_one(g, a, p, h, log_x)
            if x >= 0.0:
                return x


cdef inline double quotient(double x, double lx, double inv_rate, double log_rate) noexcept nogil:
    """``max(exp(lx) / rate, DBL_MIN)`` given ``x = exp(max(lx, -700))``."""
    cdef double v
    if lx >= LOG_X_MIN:
        v = x * inv_rate
    else:
        v = lx - log_rate
        if not v > LOG_DBL_MIN:
            return DBL_MIN
        v = exp(v)
    return v if v > DBL_MIN else DBL_MIN


cdef inline Py_ssize_t pad_lanes(double *a, double *p, double *h, Py_ssize_t n, Py_ssize_t k,
                                  double p_pad) noexcept nogil:
    """``n`` rounded up to a multiple of 8 where the ``k`` slots allow it (else ``n``), the
    added slots filled with shape 1/2, ``P = p_pad`` and ``h = 0``: the vectorised
    passes then run no scalar remainder (the added lanes' results are not used)."""
    cdef Py_ssize_t q, m = (n + 7) & ~(<Py_ssize_t> 7)
    if m > k:
        return n
    for q in range(n, m):
        a[q] = 0.5
        p[q] = p_pad
        h[q] = 0.0
    return m


cdef inline double gamma_row(bitgen_t *g, const double *a, Py_ssize_t k, double rate,
                             double *out, double *scratch) noexcept nogil:
    """``out[i] = max(G_i / rate, DBL_MIN)``, ``G_i ~ Gam(a[i], 1)`` independent; returns
    ``sum(out)`` (:c:func:`row_sum`).

    ``a[i] > 0`` and ``0 < rate < inf``; ``scratch`` holds ``7 k`` doubles.
    Shapes from 1 up are drawn as they come (Marsaglia-Tsang).  The shapes
    below 1 are drawn in rounds: one 64-bit output per shape still to draw, in
    order (the uniform of a GS proposal and 11 bits for its test), one
    vectorised pass over them (:c:func:`gs_lead`), one over those whose
    ``P > 1`` (:c:func:`gs_tail`), each followed by a scalar loop, in order,
    that finishes the tests the bounds do not decide (``exp``, and a further
    uniform with probability 1/2048); the rejected proposals' shapes make the
    next round.
    """
    cdef double *ac = scratch
    cdef double *p = scratch + k
    cdef double *h = scratch + 2 * k
    cdef double *lx = scratch + 3 * k
    cdef double *val = scratch + 4 * k
    cdef Py_ssize_t *idx = <Py_ssize_t *> (scratch + 5 * k)
    cdef Py_ssize_t *redo = <Py_ssize_t *> (scratch + 6 * k)
    cdef Py_ssize_t *swap
    cdef Py_ssize_t i, q, w, n = 0, n_work, n_tail, n_redo
    cdef double v, li
    cdef uint64_t r
    cdef double inv_rate = 1.0 / rate, log_rate = log(rate), lim = DBL_MIN * rate
    # Marsaglia-Tsang for the shapes from 1 up, in order; the others' places to idx and
    # their shapes to ac (both lists in one pass, without a branch)
    for i in range(k):
        idx[n] = i
        ac[n] = a[i]
        redo[i - n] = i
        n += a[i] < 1.0
    for w in range(k - n):
        i = redo[w]
        v = gamma_mt(g, a[i]) * inv_rate
        out[i] = v if v > DBL_MIN else DBL_MIN
    while n >= GS_VEC_MIN:
        # a proposal for each shape still to draw, in order
        raw_fill(g, n, <uint64_t *> p)
        for q in range(n):
            memcpy(&r, &p[q], 8)
            p[q] = split_uniform(r, &h[q])
        gs_lead(ac, p, h, lx, val, pad_lanes(ac, p, h, n, k, 0.5), inv_rate, log_rate, lim)
        # every quotient out (-1 where not finished: overwritten below); the
        # others' positions in redo, which is then overwritten in place (n_redo <= w)
        n_work = 0
        for q in range(n):
            out[idx[q]] = val[q]
            redo[n_work] = q
            n_work += val[q] < 0.0
        # P > 1 to the front (in place: n_tail <= w <= q), the rejected shapes to redo
        # (in place: n_redo <= w), without a branch but for the tests the bounds left
        n_tail = n_redo = 0
        for w in range(n_work):
            q = redo[w]
            v = val[q]
            i = idx[q]
            ac[n_tail] = ac[q]
            p[n_tail] = p[q]
            h[n_tail] = h[q]
            idx[n_tail] = i
            n_tail += v == GS_TAIL
            redo[n_redo] = i
            n_redo += v == GS_REJECT
            if v == GS_TEST:
                # x again (libm); a quotient below e^-700 from lx
                li = lx[q]
                v = exp(li if li > LOG_X_MIN else LOG_X_MIN)
                if li <= LOG_EPS53 or accept_exp_neg(g, v, h[q]):
                    out[i] = quotient(v, li, inv_rate, log_rate)
                else:
                    redo[n_redo] = i
                    n_redo += 1
        if n_tail >= GS_VEC_MIN:
            gs_tail(ac, p, h, lx, val, pad_lanes(ac, p, h, n_tail, k, 1.1), inv_rate, log_rate, lim)
            for q in range(n_tail):
                v = val[q]
                i = idx[q]
                out[i] = v
                redo[n_redo] = i
                n_redo += v == GS_REJECT
                if v == GS_TEST:
                    if accept_exp_neg(g, (1.0 - ac[q]) * lx[q], h[q]):
                        out[i] = quotient(p[q], lx[q], inv_rate, log_rate)
                    else:
                        redo[n_redo] = i
                        n_redo += 1
        else:
            for q in range(n_tail):
                i = idx[q]
                v = gs_tail_one(g, ac[q], p[q], h[q], &li)
                if v >= 0.0:
                    out[i] = quotient(v, li, inv_rate, log_rate)
                else:
                    redo[n_redo] = i
                    n_redo += 1
        # the next round: a fresh proposal for every rejected one, in the order above
        swap = idx
        idx = redo
        redo = swap
        n = n_redo
        for q in range(n):
            ac[q] = a[idx[q]]
    # the last few, one at a time
    for q in range(n):
        i = idx[q]
        v = gamma_gs_log(g, a[i], &li)
        out[i] = quotient(v, li, inv_rate, log_rate)
    return row_sum(out, k)
