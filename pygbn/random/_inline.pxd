# cython: language_level=3
"""Inline sampling kernels for the small parameters of the upper layers (nogil, no validation).

These are compiled into every module that cimports them, so the hot loops of
the Gibbs kernels call them without going through a function pointer.
Each one is exact given ideal uniforms (``docs/samplers.md``, "Gamma" and
"CRT"); they draw from numpy's ``bitgen_t`` streams like the kernels of
:mod:`pygbn.random._kernels`.

* :c:func:`random_gamma_fast`: Gam(a, 1) for every ``a >= 0``: Ahrens &
  Dieter's GS for small shapes, the Marsaglia-Tsang draw of Gam(a + 1) times
  ``U^(1/a)`` up to 1, Marsaglia-Tsang with a cancellation-free test above.
* :c:func:`vexp_neg` and :c:func:`vlog_pos`: exp and log that vectorise in
  a loop, for the row gamma kernel of :mod:`pygbn.random._gamma`
  (:c:func:`pygbn.random._gamma.gamma_row`, every row of gamma draws: the
  theta draws of eq:step4 and the Dirichlet draws of Phi^(1), eq:step2).
* :c:func:`crt_inversion`: CRT(n, r) by inversion over the index of the next
  new table (one uniform per table, O(n) multiplications).
* :c:func:`crt_skip`: CRT(n, r) by thinning a dominating process whose next
  point is found in closed form (O(log n) candidates for r <= 1, no loop
  over the customers).
* :c:func:`crt_sum`: CRT(n, r) as its sum of Bernoulli draws, four customers
  to a 64-bit output and four to an SSE2 instruction in single precision
  (O(n), no branch per customer).

References
----------
Ahrens, J. H. & Dieter, U. (1974). Computer methods for sampling from gamma,
    beta, Poisson and binomial distributions. Computing 12, 223-246 (GS).
Marsaglia, G. & Tsang, W. W. (2000). A simple method for generating gamma
    variables. ACM TOMS 26, 363-372 (and its Section 6: G(a) = G(a+1) U^(1/a)).
"""
from libc.float cimport DBL_MIN
from libc.math cimport log, log1p, exp, expm1, sqrt
from libc.stdint cimport int64_t, uint32_t, uint64_t
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport (
    random_standard_normal, random_standard_exponential,
)

from pygbn.random._pcg64 cimport next_uniform, raw_fill

from pygbn.random._special cimport log1p_rem4

cdef extern from *:
    """
    /* 2^-53: for x <= this, exp(-x) >= 1 - 2^-53, above every 53-bit uniform in [0, 1) */
    #define PYGBN_EPS53 1.1102230246251565e-16
    #define PYGBN_INV_E 0.36787944117144233
    /* shapes below this use GS, shapes in [this, 1) the Marsaglia-Tsang boost (speed only) */
    #define PYGBN_GS_MAX_SHAPE 0.5
    /* log(DBL_MIN): below it a quotient is floored without being formed */
    #define PYGBN_LOG_DBL_MIN -708.3964185322641
    /* 2^600 and 2^-600: exact rescaling of the CRT inversion's running products */
    #define PYGBN_TWO600 4.149515568880993e+180
    #define PYGBN_TWO_M600 2.409919865102884e-181
    /* crt_skip: below this r the dominating process of intensity r / (x - 1 + r) (speed only) */
    #define PYGBN_CRT_SKIP_LOW_R 0.3
    /* counts up to this go to crt_small (no cost model) */
    #define PYGBN_CRT_SMALL_N 64
    /* crt_small (speed only): the inversion for r < PYGBN_CRT_INV_MAX_R, n <=
       PYGBN_CRT_INV_N and r n <= PYGBN_CRT_INV_RN (few customers, fewer tables); the skips
       for r < n / PYGBN_CRT_SKIP_N_PER_R (few points, r < 0.1); else the Bernoulli sum */
    #define PYGBN_CRT_INV_MAX_R 0.2
    #define PYGBN_CRT_INV_N 16
    #define PYGBN_CRT_INV_RN 1.6
    #define PYGBN_CRT_SKIP_N_PER_R 640.0
    """
    const double EPS53 "PYGBN_EPS53"
    const double INV_E "PYGBN_INV_E"
    const double GS_MAX_SHAPE "PYGBN_GS_MAX_SHAPE"
    const double LOG_DBL_MIN "PYGBN_LOG_DBL_MIN"
    const double TWO600 "PYGBN_TWO600"
    const double TWO_M600 "PYGBN_TWO_M600"
    const double CRT_SKIP_LOW_R "PYGBN_CRT_SKIP_LOW_R"
    const int64_t CRT_SMALL_N "PYGBN_CRT_SMALL_N"
    const double CRT_INV_MAX_R "PYGBN_CRT_INV_MAX_R"
    const int64_t CRT_INV_N "PYGBN_CRT_INV_N"
    const double CRT_INV_RN "PYGBN_CRT_INV_RN"
    const double CRT_SKIP_N_PER_R "PYGBN_CRT_SKIP_N_PER_R"


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>

    #if defined(__GNUC__) && !defined(__clang__)
    /* FP exceptions are never trapped here; saying so lets GCC turn the selects
       below into vector blends (the results do not change) */
    #pragma GCC push_options
    #pragma GCC optimize ("no-trapping-math")
    #endif

    /* exp and log written so that a loop over an array vectorises (no calls, no
       tables, no branches; bit casts by memcpy).  Both are within about one ulp
       (tests/test_random_large.py checks them against mpmath). */
    static inline double pygbn_from_bits(uint64_t b) { double d; memcpy(&d, &b, 8); return d; }
    static inline uint64_t pygbn_to_bits(double d) { uint64_t b; memcpy(&b, &d, 8); return b; }

    /* exp(x) for x <= 0: exp(r) 2^k with x = k ln2 + r, |r| <= ln2/2 (Cody-Waite
       reduction, ln2 in two parts), exp(r) = 1 + r + r^2 (1/2! + ... + r^11/13!)
       (truncation below 5e-18; the polynomial by Estrin's scheme), 2^k applied as two normal factors so that a
       subnormal result is rounded once.  x < -746 (and -inf) gives 0. */
    static inline double pygbn_exp_neg(double x) {
        const double shift = 6755399441055744.0;             /* 1.5 * 2^52 */
        double xc = x < -746.0 ? -746.0 : (x > 0.0 ? 0.0 : x);
        double kd = xc * 1.4426950408889634 + shift;
        int64_t k = (int64_t) (pygbn_to_bits(kd) - pygbn_to_bits(shift));
        int64_t k1, k2;
        double r, q;
        kd -= shift;
        r = (xc - kd * 0.6931471803691238) - kd * 1.9082149292705877e-10;
        {   /* Estrin's scheme: four levels of dependent operations instead of Horner's
               eleven (the passes that inline this wait on that chain); no FMA, so the
               same bits on every instruction set */
            double r2 = r * r, r4, r8;
            double p0 = 0.5 + r * (1.0 / 6.0);
            double p1 = 1.0 / 24.0 + r * (1.0 / 120.0);
            double p2 = 1.0 / 720.0 + r * (1.0 / 5040.0);
            double p3 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
            double p4 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0);
            double p5 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);
            r4 = r2 * r2;
            r8 = r4 * r4;
            q = ((p0 + p1 * r2) + (p2 + p3 * r2) * r4) + (p4 + p5 * r2) * r8;
        }
        q = 1.0 + (r + r * r * q);
        k1 = (int64_t) ((uint64_t) (k + 2048) >> 1) - 1024;  /* floor(k / 2) */
        k2 = k - k1;
        q *= pygbn_from_bits((uint64_t) (k1 + 1023) << 52);
        return q * pygbn_from_bits((uint64_t) (k2 + 1023) << 52);
    }

    /* log(x) for normal x > 0, -inf for x = 0: x = 2^e m, m in [sqrt(1/2), sqrt(2)),
       log m = log(1 + f) = 2 atanh(s), s = f / (2 + f), evaluated as
       f - s (f - 2 T), T = s^2/3 + s^4/5 + ... + s^20/21 (|s| <= 0.172: truncation
       below 1e-18; Estrin's scheme in z = s^2); e ln2 in two parts. */
    static inline double pygbn_log_pos(double x) {
        uint64_t bx = pygbn_to_bits(x);
        int64_t e = (int64_t) (bx >> 52) - 1023;
        double m = pygbn_from_bits((bx & 0x000FFFFFFFFFFFFFULL) | 0x3FF0000000000000ULL);
        double f, s, z, t, ed, y;
        int big = m > 1.4142135623730951;
        m = big ? 0.5 * m : m;
        e = big ? e + 1 : e;
        f = m - 1.0;
        s = f / (2.0 + f);
        z = s * s;
        {   /* Estrin's scheme, as in pygbn_exp_neg */
            double z2 = z * z, z4, z8;
            double p0 = 1.0 / 3.0 + z * (1.0 / 5.0);
            double p1 = 1.0 / 7.0 + z * (1.0 / 9.0);
            double p2 = 1.0 / 11.0 + z * (1.0 / 13.0);
            double p3 = 1.0 / 15.0 + z * (1.0 / 17.0);
            double p4 = 1.0 / 19.0 + z * (1.0 / 21.0);
            z4 = z2 * z2;
            z8 = z4 * z4;
            t = ((p0 + p1 * z2) + (p2 + p3 * z2) * z4) + p4 * z8;
        }
        t *= z;
        ed = pygbn_from_bits(0x4330000000000000ULL | (uint64_t) (e + 1048576)) - 4503599628419072.0;
        y = ed * 0.6931471803691238 + (ed * 1.9082149292705877e-10 + (f - s * (f - 2.0 * t)));
        return x > 0.0 ? y : -1.0 / 0.0;
    }

    #if defined(__GNUC__) && !defined(__clang__)
    #pragma GCC pop_options
    #endif
    """
    double vexp_neg "pygbn_exp_neg"(double x) noexcept nogil
    double vlog_pos "pygbn_log_pos"(double x) noexcept nogil


cdef inline double gamma_mt(bitgen_t *g, double a) noexcept nogil:
    """Gam(a, 1) for ``a >= 1`` by Marsaglia & Tsang (2000).

    The log acceptance test ``log U < Z^2/2 + d (1 - v + log v)`` is written
    as ``log U < 3 d R4(cZ)`` with ``R4(y) = log1p(y) - y + y^2/2 - y^3/3``
    (:c:func:`log1p_rem4`), which does not cancel for huge ``a``; the squeeze
    ``U < 1 - 0.0331 Z^4`` accepts about 98% of the draws without a log.
    """
    cdef double d = a - 1.0 / 3.0
    cdef double c = 1.0 / sqrt(9.0 * d)
    cdef double z, y, v, u
    while True:
        while True:
            z = random_standard_normal(g)
            y = c * z
            if y > -1.0:
                break
        v = (1.0 + y) * (1.0 + y) * (1.0 + y)
        u = next_uniform(g)
        if u < 1.0 - 0.0331 * (z * z) * (z * z):
            return d * v
        if log(u) < 3.0 * d * log1p_rem4(y):
            return d * v


cdef inline double _gs_try(bitgen_t *g, double a, double p, double lx, double x,
                          double *log_x) noexcept nogil:
    """One proposal of GS (see :c:func:`gamma_gs`) from ``P = b U``, given
    ``lx = log(P) / a`` and ``x = exp(lx)`` (used when ``P <= 1``): the draw
    (``log_x[0]`` = its log) if accepted, else -1."""
    if p <= 1.0:
        if x <= EPS53 or random_standard_exponential(g) >= x:
            log_x[0] = lx
            return x
        return -1.0
    x = -log(((1.0 + a * INV_E) - p) / a)
    lx = log(x)
    if random_standard_exponential(g) >= (1.0 - a) * lx:
        log_x[0] = lx
        return x
    return -1.0


cdef inline double gamma_gs(bitgen_t *g, double a, double *log_x) noexcept nogil:
    """Gam(a, 1) for ``0 < a < 1`` by Ahrens & Dieter's (1974) GS; ``log_x[0]`` = its log.

    Envelope ``x^(a-1)`` on (0, 1] and ``e^-x`` above, mixed with weights
    ``1/b`` and ``1 - 1/b``, ``b = 1 + a/e``: with ``P = b U``, ``P <= 1``
    proposes ``x = P^(1/a)``, accepted when an Exp(1) variate ``E >= x``;
    ``P > 1`` proposes ``x = -log((b - P)/a) >= 1``, accepted when
    ``E >= (1 - a) log x``.  Acceptance ``Gamma(a + 1)/b`` (0.99 at
    a = 0.01, 0.75 at a = 0.5).  ``x <= 2^-53`` is accepted without drawing
    E: ``exp(-x) >= 1 - 2^-53`` is above every 53-bit uniform, so the test
    ``U <= exp(-x)`` it stands for accepts whatever U is.  ``x`` is computed
    as ``exp(log(P) / a)`` and its log is returned too, so a draw that
    underflows keeps its exact log.
    """
    cdef double p, lx, x
    while True:
        p = (1.0 + a * INV_E) * next_uniform(g)
        lx = log(p) / a
        x = _gs_try(g, a, p, lx, exp(lx) if p <= 1.0 else 0.0, log_x)
        if x >= 0.0:
            return x


cdef inline double gamma_boost(bitgen_t *g, double a, double *log_x) noexcept nogil:
    """Gam(a, 1) for ``0 < a < 1`` as ``G(a + 1) U^(1/a)`` (Marsaglia & Tsang 2000, Section 6).

    ``U`` is uniform on (0, 1]; ``log_x[0]`` = the log of the draw, formed as
    ``log G(a + 1) + log(U) / a`` (exact even where the draw underflows).
    """
    cdef double y = gamma_mt(g, a + 1.0)
    cdef double lu = log(1.0 - next_uniform(g)) / a
    log_x[0] = log(y) + lu
    return y * exp(lu)


cdef inline double gamma_small(bitgen_t *g, double a, double *log_x) noexcept nogil:
    """Gam(a, 1) for ``0 < a < 1`` (GS below GS_MAX_SHAPE, the boost above); ``log_x[0]`` = its log."""
    if a < GS_MAX_SHAPE:
        return gamma_gs(g, a, log_x)
    return gamma_boost(g, a, log_x)


cdef inline double random_gamma_fast(bitgen_t *g, double a) noexcept nogil:
    """Gam(a, 1) for every ``a >= 0`` (0 for ``a <= 0``)."""
    cdef double lx = 0.0
    if not a > 0.0:
        return 0.0
    if a < 1.0:
        return gamma_small(g, a, &lx)
    return gamma_mt(g, a)


cdef inline int64_t crt_inversion(bitgen_t *g, int64_t n, double r) noexcept nogil:
    """CRT(n, r) for ``n >= 1``, ``0 < r < inf``, by inversion over the next new table.

    Customer 0 opens the first table; from customer i the probability that
    none of customers i..k opens one is ``prod_{l=i}^{k} l / (r + l)``.  With
    ``V`` uniform on (0, 1], the next table is opened by the first k at which
    that product falls below V, tested as ``prod l < V prod (r + l)`` (two
    running products, no division; both rescaled by 2^-600, exactly, when
    they grow large).  One uniform per table and O(n) multiplications.
    """
    cdef int64_t tables = 1, i = 1
    cdef double num, den, fi
    while i < n:
        num = 1.0
        den = 1.0 - next_uniform(g)
        fi = <double> i
        while True:
            num *= fi
            den *= r + fi
            i += 1
            fi += 1.0
            if num < den:
                tables += 1
                break
            if i >= n:
                return tables
            if num > TWO600:
                num *= TWO_M600
                den *= TWO_M600
    return tables


cdef inline int64_t crt_skip_from(bitgen_t *g, int64_t n, double r, int64_t start) noexcept nogil:
    """The tables that customers ``start .. n - 1`` open (``start >= 1``) in CRT(n, r),
    ``0 < r < inf``, by thinning a process with closed-form skips.

    Customer l >= 1 opens a table with probability ``p_l = r / (r + l)``,
    independently (customer 0 always does).  A dominating Bernoulli process
    ``q_l >= p_l`` whose next point after position i has a closed form is
    drawn, and its point k is kept with probability ``p_k / q_k`` (thinning;
    Devroye 1986, Section VI.3); the search restarts at k + 1 either way.

    * ``CRT_SKIP_LOW_R <= r <= 1``: ``q_l = 1 / (1 + l)`` (the law of r = 1).
      From i, no point in i..k has probability
      ``prod_{l=i}^{k} l / (l + 1) = i / (k + 1)``, so with V uniform on
      (0, 1] the next point is ``k = floor(i / V)``; it is kept when
      ``U (r + k) < r (k + 1)`` (always, so no U is drawn, for r = 1).
      ``p_l <= q_l`` since ``r (1 + l) <= r + l``.  Expected ``H_n - 1``
      points.
    * ``r < CRT_SKIP_LOW_R``: the cells ``[l, l + 1)`` that hold a point of a
      Poisson process of intensity ``r / (x - 1 + r)`` on ``x >= 1``:
      ``q_l = 1 - ((l - 1 + r) / (l + r))^r``.  ``q_l >= p_l``: with
      ``g(r) = r log((l + r) / (l - 1 + r)) - log((l + r) / l)``, ``g(0) = g(1) = 0``
      and ``g'' <= 0`` on [0, 1] (``g'' A^2 B^2 = r - B^2 - 2 B (1 - r) <= 0``,
      ``A = l + r``, ``B = l - 1 + r >= r``).  The next point after x = i is
      ``(i - 1 + r) exp(E / r) + 1 - r``, E ~ Exp(1); its cell k is kept when
      ``U (r + k) q_k < r``, accepted without forming q_k when
      ``U (k + r) < k - 1 + r`` (as ``q_k <= r / (k - 1 + r)``).  Expected
      about ``r log(n / r)`` points, so mostly one exponential draw for small r.
    * ``r > 1``: the cells that hold a point of a Poisson process of intensity
      ``r / x``: ``q_l = 1 - (l / (l + 1))^r``, which is ``>= p_l`` and
      ``<= r / (l + 1)`` by Bernoulli's inequality.  Its next point after
      x = i is ``i exp(E / r)``, in cell ``k = floor(i exp(E / r))``; it is
      kept when ``U (r + k) q_k < r``, accepted without forming q_k when
      ``U (r + k) < k + 1``.  Expected about ``r log(n)`` points.

    Exact given ideal uniforms (up to the rounding of one quotient or
    product per point).
    """
    cdef int64_t tables = 0, k
    cdef double fn = <double> n, fi = <double> start, x, fk, u, a, b, e
    if start >= n:
        return 0
    if CRT_SKIP_LOW_R <= r <= 1.0:
        while True:
            x = fi / (1.0 - next_uniform(g))
            if not x < fn:
                return tables
            k = <int64_t> x
            if k >= n:
                return tables
            fk = <double> k
            if r == 1.0 or next_uniform(g) * (r + fk) < r * (fk + 1.0):
                tables += 1
            fi = fk + 1.0
    # both Poisson processes at once: intensity r / (x - a + b) with a = 1, b = r (r < 0.3)
    # or a = b = 0 (r > 1); cell k has B = (k - a) + b (formed so, without cancellation) and
    # q_k = 1 - (B / (B + 1))^r, at most r / (B + e), e = 0 (r < 0.3) or 1 (r > 1)
    a = 1.0 if r < 1.0 else 0.0
    b = r if r < 1.0 else 0.0
    e = 1.0 - a
    while True:
        x = ((fi - a) + b) * exp(random_standard_exponential(g) / r) + (a - b)
        if not x < fn:
            return tables
        k = <int64_t> x
        if k >= n:
            return tables
        fk = (<double> k - a) + b
        u = next_uniform(g) * (r + <double> k)
        if u < fk + e or u * -expm1(-r * log1p(1.0 / fk)) < r:
            tables += 1
        fi = <double> k + 1.0


cdef inline int64_t crt_skip(bitgen_t *g, int64_t n, double r) noexcept nogil:
    """CRT(n, r) for ``n >= 1``, ``0 < r < inf``, by thinning a process with closed-form
    skips: customer 0's table and :c:func:`crt_skip_from` from customer 1."""
    if n <= 1:
        return 1
    return 1 + crt_skip_from(g, n, r, 1)


cdef extern from *:
    """
    #include <stdint.h>
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif

    /* crt_sum's blocks: the draws of customers i0 + 1 .. i0 + m are tested in single
       precision where r and the customers' indices allow (pygbn_crt_f32), else in double.
       A draw is decided without a further uniform when its product is more than the band
       (relative) away from the threshold: 2^-20 in single precision, where the roundings of
       r, of r + i, of x s, of x s + s and of the band's ends move a comparison by under
       2^-21.6 (five roundings of 2^-24); 2^-50 in double precision (four of 2^-53) */
    #define PYGBN_CRT_BAND_F 9.5367431640625e-07
    #define PYGBN_CRT_BAND 8.881784197001252e-16

    /* single precision for blocks of 8 customers and more (the SSE2 groups; the few
       customers of a smaller block are tested as fast in double): r and r 2^16 normal,
       x s below FLT_MAX, every index (and the masked lanes' up to 7 beyond) an integer a
       float holds exactly */
    static inline int pygbn_crt_f32(double r, double i0, int64_t m) {
        return m >= 8 && r >= 1e-30 && r <= 1e30 && i0 + (double) m <= 8388608.0;
    }

    /* the 16-bit draw of customer i0 + q (q >= 1) of a block: bits 16 ((q - 1) mod 4) up of
       w[(q - 1) / 4] */
    static inline uint32_t pygbn_crt_x16(const uint64_t *w, int64_t q) {
        return (uint32_t) ((w[(q - 1) >> 2] >> (16 * ((q - 1) & 3))) & 0xffffULL);
    }

    /* which precision a block of customers i0 + 1 .. i0 + m takes, the threshold c = r 2^16,
       and the band [lo, hi] in that precision (with r in single precision; the count,
       its scalar loop and the recount of a block with undecided draws all take them from
       here) */
    typedef struct { int f32; float rf, lof, hif; double c, lo, hi; } pygbn_crt_band_t;
    static inline void pygbn_crt_band(double r, double i0, int64_t m, pygbn_crt_band_t *b) {
        b->f32 = pygbn_crt_f32(r, i0, m);
        b->c = r * 65536.0;
        if (b->f32) {
            b->rf = (float) r;
            b->lof = (float) (b->c * (1.0 - PYGBN_CRT_BAND_F));
            b->hif = (float) (b->c * (1.0 + PYGBN_CRT_BAND_F));
        } else {
            b->lo = b->c * (1.0 - PYGBN_CRT_BAND);
            b->hi = b->c * (1.0 + PYGBN_CRT_BAND);
        }
    }

    /* the block test of customer i0 + q, s = r + i0 + q: bit 0 set when its draw is a sure
       success, x s + s <= lo, bit 1 when it is not a sure failure, x s < hi (so 3 a sure
       success, 0 a sure failure, 2 undecided); in single precision the same operations as
       the SSE2 lanes of pygbn_crt_sum16 */
    static inline int pygbn_crt_test(const uint64_t *w, double i0, int64_t q, double r,
                                     const pygbn_crt_band_t *b) {
        uint32_t x = pygbn_crt_x16(w, q);
        if (b->f32) {
            float xf = (float) x, s = b->rf + (float) (i0 + (double) q), a = xf * s;
            return (a + s <= b->lof) | ((a < b->hif) << 1);
        }
        double xd = (double) x, s = r + (i0 + (double) q), a = xd * s;
        return (a + s <= b->lo) | ((a < b->hi) << 1);
    }

    /* the scalar loop of pygbn_crt_sum16 over customers i0 + q .. i0 + m of a block of m
       whose band is b: adds the sure successes to *t and the draws that are not sure
       failures to *u */
    static inline void pygbn_crt_sum16_scalar(const uint64_t *w, double i0, int64_t q, int64_t m,
                                              double r, const pygbn_crt_band_t *b, int64_t *t,
                                              int64_t *u) {
        for (; q <= m; q++) {
            int k = pygbn_crt_test(w, i0, q, r, b);
            *t += k & 1;
            *u += k >> 1;
        }
    }

    /* Customers i0 + 1 .. i0 + m of CRT(., r), customer i a Bernoulli(r / s), s = r + i, from
       16-bit draws x (pygbn_crt_x16; w holds (m + 3) / 4 words): the number of sure
       successes, (x + 1) s <= c = r 2^16 (then x + U < c / s for every U in [0, 1)); *tie is
       set when some draw is neither that nor a sure failure, x s >= c, within the band (see
       crt_sum).  i0 + m < 2^53.  In single precision four customers to an SSE2 instruction
       where the compiler targets it and m >= 8, the last 1..7 with the lanes beyond m
       masked; the scalar loop serves the rest. */
    static inline int64_t pygbn_crt_sum16(const uint64_t *w, double i0, int64_t m, double r, int *tie) {
        /* t: sure successes, b <= lo; u: draws that are not sure failures, a < hi (a sure
           success is one: a <= b <= lo < hi); undecided draws exist when u > t */
        int64_t t = 0, u = 0, q = 1;
        pygbn_crt_band_t bd;
        pygbn_crt_band(r, i0, m, &bd);
    #if defined(__SSE2__)
        if (bd.f32) {
            const __m128i z = _mm_setzero_si128();
            const __m128 rv = _mm_set1_ps(bd.rf), lov = _mm_set1_ps(bd.lof), hiv = _mm_set1_ps(bd.hif),
                         eight = _mm_set1_ps(8.0f);
            const float f = (float) i0;
            __m128 f0 = _mm_set_ps(f + 4.0f, f + 3.0f, f + 2.0f, f + 1.0f),
                   f1 = _mm_set_ps(f + 8.0f, f + 7.0f, f + 6.0f, f + 5.0f);
            __m128i cnt = _mm_setzero_si128(), und = _mm_setzero_si128();
            const uint64_t *p = w;
            int32_t c4[4];
            __m128i v;
            __m128 x, s, a, b;
            /* four customers: their draws (32-bit lanes of xi), their indices fv;
               KEEP(mask, fv) the lanes that count (all of them but in a block's last group) */
    #define PYGBN_CRT_QUAD(xi, fv, KEEP) \
            x = _mm_cvtepi32_ps(xi); \
            s = _mm_add_ps(rv, fv); a = _mm_mul_ps(x, s); b = _mm_add_ps(a, s); \
            cnt = _mm_sub_epi32(cnt, _mm_castps_si128(KEEP(_mm_cmple_ps(b, lov), fv))); \
            und = _mm_sub_epi32(und, _mm_castps_si128(KEEP(_mm_cmplt_ps(a, hiv), fv)));
    #define PYGBN_CRT_ALL(mask, fv) (mask)
    #define PYGBN_CRT_UPTO(mask, fv) _mm_and_ps((mask), _mm_cmple_ps((fv), last))
            /* eight customers: their 16-bit draws in v, widened to 32-bit lanes in customer
               order, four at a time to floats (exact) */
    #define PYGBN_CRT_GROUP(KEEP) \
            PYGBN_CRT_QUAD(_mm_unpacklo_epi16(v, z), f0, KEEP) \
            PYGBN_CRT_QUAD(_mm_unpackhi_epi16(v, z), f1, KEEP)
            for (; q + 7 <= m; q += 8, p += 2) {
                v = _mm_loadu_si128((const __m128i *) p);
                PYGBN_CRT_GROUP(PYGBN_CRT_ALL)
                f0 = _mm_add_ps(f0, eight);
                f1 = _mm_add_ps(f1, eight);
            }
            if (q <= m) {
                /* the last 1..7 customers: their words (a second one may not exist: zeros),
                   lanes beyond customer i0 + m masked out */
                const __m128 last = _mm_set1_ps((float) (i0 + (double) m));
                v = _mm_set_epi64x((long long) (q + 4 <= m ? p[1] : 0), (long long) p[0]);
                PYGBN_CRT_GROUP(PYGBN_CRT_UPTO)
                q = m + 1;
            }
    #undef PYGBN_CRT_GROUP
    #undef PYGBN_CRT_QUAD
    #undef PYGBN_CRT_ALL
    #undef PYGBN_CRT_UPTO
            _mm_storeu_si128((__m128i *) c4, cnt);
            t = (int64_t) c4[0] + c4[1] + c4[2] + c4[3];
            _mm_storeu_si128((__m128i *) c4, und);
            u = (int64_t) c4[0] + c4[1] + c4[2] + c4[3];
        }
    #endif
        pygbn_crt_sum16_scalar(w, i0, q, m, r, &bd, &t, &u);
        *tie = u > t;
        return t;
    }
    """
    ctypedef struct crt_band_t "pygbn_crt_band_t":
        double c
    void crt_band "pygbn_crt_band"(double r, double i0, int64_t m, crt_band_t *b) noexcept nogil
    int crt_test "pygbn_crt_test"(const uint64_t *w, double i0, int64_t q, double r,
                                  const crt_band_t *b) noexcept nogil
    uint32_t crt_x16 "pygbn_crt_x16"(const uint64_t *w, int64_t q) noexcept nogil
    int64_t crt_sum16 "pygbn_crt_sum16"(const uint64_t *w, double i0, int64_t m, double r,
                                        int *tie) noexcept nogil
    void crt_sum16_scalar "pygbn_crt_sum16_scalar"(const uint64_t *w, double i0, int64_t q, int64_t m,
                                                   double r, const crt_band_t *b, int64_t *t,
                                                   int64_t *u) noexcept nogil


cdef inline int64_t crt_sum_decide(bitgen_t *g, const uint64_t *w, double i0, int64_t m,
                                   double r) noexcept nogil:
    """The successes of a :c:func:`crt_sum` block that holds undecided draws (rare), customer
    by customer: the sure ones by the block test's own operations, and each undecided draw,
    in order, by ``(x + U) s < r 2^16`` for one more uniform U (in double precision, ``s``
    within 2^-53 of ``r + i``).  The whole block is recounted here, so which draws the count
    called sure need not be known."""
    cdef crt_band_t b
    cdef int64_t q, t = 0
    cdef int k
    crt_band(r, i0, m, &b)
    for q in range(1, m + 1):
        k = crt_test(w, i0, q, r, &b)
        if k == 3:
            t += 1
        elif k == 2:
            t += (<double> crt_x16(w, q) + next_uniform(g)) * (r + (i0 + <double> q)) < b.c
    return t


cdef inline int64_t crt_sum(bitgen_t *g, int64_t n, double r) noexcept nogil:
    """CRT(n, r) for ``n >= 1``, ``0 < r < inf``, as its sum of Bernoulli draws, 16 bits each.

    Customer ``i >= 1`` opens a table with probability ``p_i = r / s``,
    ``s = r + i`` (customer 0 always does).  Its draw is a uniform integer
    ``x`` in [0, 2^16) (four to a raw 64-bit output, in order), standing for
    the uniform ``(x + U) / 2^16`` with U uniform on [0, 1) drawn only if
    needed: with ``c = r 2^16`` the customer succeeds for every U when
    ``(x + 1) s <= c`` and fails for every U when ``x s >= c``; in between
    (one x in 2^16, at most) U is drawn and decides, ``(x + U) s < c``
    (:c:func:`crt_sum_decide`).  So ``P(success) = (c / s) / 2^16 = p_i``.
    The two tests are made on rounded products (``x s`` and ``x s + s``, in
    single precision within four roundings of 2^-24 of their values relative,
    in double four of 2^-53; ``pygbn_crt_f32`` says which): a draw is taken as sure only
    beyond a band of 2^-20 (2^-50) around c, and one inside the band draws U,
    so no draw is decided wrongly.  Blocks of 64 customers; expected
    ``(n - 1) / 4`` raw outputs and about ``(n - 1) 2^-16`` uniforms, and no
    branch that depends on a draw (four customers to an SSE2 instruction).
    """
    cdef uint64_t w[16]
    cdef int64_t t = 1, i0 = 0, m, q
    cdef int tie
    while i0 < n - 1:
        m = n - 1 - i0
        if m > 64:
            m = 64
        raw_fill(g, (m + 3) >> 2, w)
        q = crt_sum16(w, <double> i0, m, r, &tie)
        if tie:
            q = crt_sum_decide(g, w, <double> i0, m, r)
        t += q
        i0 += m
    return t


cdef inline int64_t crt_small(bitgen_t *g, int64_t n, double r) noexcept nogil:
    """CRT(n, r) for ``1 <= n <= CRT_SMALL_N``, ``0 < r < inf`` (speed only):
    :c:func:`crt_inversion` for ``r < CRT_INV_MAX_R``, ``n <= CRT_INV_N`` and
    ``r n <= CRT_INV_RN`` (a few customers and fewer tables: one uniform covers many
    customers), :c:func:`crt_skip` for ``r CRT_SKIP_N_PER_R < n`` (r below 0.1: few
    points), else :c:func:`crt_sum`."""
    if r < CRT_INV_MAX_R and n <= CRT_INV_N and r * <double> n <= CRT_INV_RN:
        return crt_inversion(g, n, r)
    if r * CRT_SKIP_N_PER_R < <double> n:
        return crt_skip(g, n, r)
    return crt_sum(g, n, r)
