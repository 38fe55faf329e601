# cython: language_level=3
"""Implementations of the C-level kernels declared in ``_kernels.pxd``."""
from libc.math cimport log, exp, sqrt, floor, INFINITY, isinf, lgamma, expm1, fabs
from libc.stdint cimport int64_t
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport (
    random_standard_uniform, random_poisson, random_standard_gamma,
    random_logseries, random_binomial, binomial_t,
)
from scipy.special.cython_special cimport i1e


cdef int64_t random_crt(bitgen_t *bitgen, int64_t n, double r) noexcept nogil:
    cdef int64_t i, l
    if n <= 0:
        return 0
    if isinf(r):
        return n
    if r <= 0.0:
        return 1
    l = 1
    for i in range(1, n):
        if random_standard_uniform(bitgen) * (r + i) < r:
            l += 1
    return l


cdef int64_t random_logarithmic(bitgen_t *bitgen, double p) noexcept nogil:
    return random_logseries(bitgen, p)


cdef int64_t random_truncated_poisson(bitgen_t *bitgen, double lam) noexcept nogil:
    cdef double u, pk, cdf
    cdef int64_t k
    if lam < 1.0:
        # inversion from k = 1: P(1) = lam / expm1(lam)
        u = random_standard_uniform(bitgen)
        k = 1
        pk = lam / expm1(lam)
        cdf = pk
        while u > cdf and pk > 0.0:
            k += 1
            pk *= lam / k
            cdf += pk
        return k
    while True:
        k = random_poisson(bitgen, lam)
        if k > 0:
            return k


cdef int64_t random_truncated_bessel(bitgen_t *bitgen, double alpha) noexcept nogil:
    # chop-down inversion from n = 1 (simple reference version)
    cdef double log_half = log(0.5 * alpha)
    cdef double log_norm = log(i1e(alpha)) + alpha
    cdef double logp = log_half - log_norm     # n = 1: (alpha/2)^1 / (I1 * 1! * 0!)
    cdef double u = random_standard_uniform(bitgen)
    cdef int64_t n = 1
    cdef double pk = exp(logp)
    while u > pk:
        u -= pk
        # P(n+1)/P(n) = (alpha/2)^2 / ((n+1) n)
        logp += 2.0 * log_half - log(<double>(n + 1)) - log(<double>n)
        n += 1
        pk = exp(logp)
        if n > 100000000:
            break
    return n


cdef double random_prg(bitgen_t *bitgen, double lam, double c) noexcept nogil:
    cdef int64_t n = random_poisson(bitgen, lam)
    if n == 0:
        return 0.0
    return random_standard_gamma(bitgen, <double>n) / c


cdef int64_t random_nb(bitgen_t *bitgen, double r, double p) noexcept nogil:
    if p <= 0.0 or r <= 0.0:
        return 0
    return random_poisson(bitgen, random_standard_gamma(bitgen, r) * p / (1.0 - p))


cdef void random_multinomial_split(bitgen_t *bitgen, int64_t n, const double *w,
                                   Py_ssize_t k, double total, int64_t *out) noexcept nogil:
    cdef Py_ssize_t i
    cdef int64_t left = n, x
    cdef double rest = total, pr, u, acc
    cdef binomial_t binom
    binom.has_binomial = 0
    for i in range(k):
        out[i] = 0
    if n <= 0 or k <= 0:
        return
    for i in range(k - 1):
        if left == 0:
            return
        if rest <= 0.0:
            break
        pr = w[i] / rest
        if pr >= 1.0:
            out[i] = left
            return
        if pr > 0.0:
            x = random_binomial(bitgen, pr, left, &binom)
            out[i] = x
            left -= x
        rest -= w[i]
    # remaining mass goes to the last cell with positive weight
    i = k - 1
    while i > 0 and w[i] <= 0.0:
        i -= 1
    out[i] += left


cdef double random_log_gamma(bitgen_t *bitgen, double a) noexcept nogil:
    # log G(a) = log G(a + 1) + log(U) / a for small a (Marsaglia & Tsang 2000, note 7)
    cdef double g
    if a >= 0.1:
        g = random_standard_gamma(bitgen, a)
        if g > 0.0:
            return log(g)
    g = random_standard_gamma(bitgen, a + 1.0)
    return log(g) + log(random_standard_uniform(bitgen)) / a


cdef void random_dirichlet(bitgen_t *bitgen, const double *alpha, Py_ssize_t k,
                           double *out) noexcept nogil:
    cdef Py_ssize_t i
    cdef double s = 0.0, m
    for i in range(k):
        out[i] = random_standard_gamma(bitgen, alpha[i])
        s += out[i]
    if s > 1e-280:
        for i in range(k):
            out[i] /= s
        return
    # every gamma underflowed: redo in log space and normalise with log-sum-exp
    m = -INFINITY
    for i in range(k):
        out[i] = random_log_gamma(bitgen, alpha[i])
        if out[i] > m:
            m = out[i]
    s = 0.0
    for i in range(k):
        out[i] = exp(out[i] - m)
        s += out[i]
    for i in range(k):
        out[i] /= s
