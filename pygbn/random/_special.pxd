# cython: language_level=3
"""Inline numerical helpers for the sampling kernels (nogil, no validation).

Everything here is about computing logs of probabilities without losing
precision when parameters are tiny or huge; see ``docs/samplers.md``.

References
----------
Loader, C. (2000). Fast and accurate computation of binomial probabilities.
    (``stirlerr`` and ``bd0``: the saddle-point form of the Poisson log-PMF.)
Maechler, M. (2012). Accurately computing log(1 - exp(-|a|)).  (``log1mexp``)
"""
from libc.math cimport log, log1p, exp, expm1, lgamma, fabs, M_LN2

# 0.5 * log(2 pi)
cdef extern from *:
    """
    #define PYGBN_LOG_SQRT_2PI 0.91893853320467274178
    """
    const double LOG_SQRT_2PI "PYGBN_LOG_SQRT_2PI"


cdef inline double log1mexp(double x) noexcept nogil:
    """``log(1 - exp(x))`` for ``x <= 0``, accurate for every x (Maechler 2012)."""
    if x > -M_LN2:
        return log(-expm1(x))
    return log1p(-exp(x))


cdef inline double log1pmx(double x) noexcept nogil:
    """``log(1 + x) - x`` for ``x > -1``, accurate for small ``|x|``.

    For ``|x| <= 1/8``: with ``t = x / (2 + x)``, ``log1p(x) = 2 atanh(t)``, so
    ``log1p(x) - x = -x^2 / (2 + x) + 2 (t^3/3 + t^5/5 + ... + t^15/15)``
    (``|t| <= 1/15``: truncation error below 1e-19 relative).
    """
    cdef double t, t2
    if fabs(x) > 0.125:
        return log1p(x) - x
    t = x / (2.0 + x)
    t2 = t * t
    return -x * x / (2.0 + x) + 2.0 * t * t2 * (
        1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 * (1.0 / 9 + t2 * (
            1.0 / 11 + t2 * (1.0 / 13 + t2 / 15))))))


cdef inline double log1p_rem4(double y) noexcept nogil:
    """``log(1 + y) - (y - y^2/2 + y^3/3)``, accurate for small ``|y|`` (``y > -1``).

    Equals ``-y^4/4 + y^5/5 - ...``; used by the Marsaglia-Tsang acceptance test.
    """
    cdef double term, s, yk
    cdef int k
    if fabs(y) > 0.125:
        return log1p(y) - y + 0.5 * y * y - y * y * y / 3.0
    s = 0.0
    yk = y * y * y
    for k in range(4, 60):
        yk = -yk * y
        term = yk / k
        s += term
        if fabs(term) <= 1e-17 * fabs(s):
            break
    return s


cdef inline double stirlerr(double y) noexcept nogil:
    """Stirling-series remainder ``lgamma(y) - (y - 1/2) log(y) + y - log(sqrt(2 pi))``, y > 0.

    Equivalently ``log(y!) - log(sqrt(2 pi y) (y/e)^y)`` (Loader 2000).  Series
    for ``y > 15`` (error < 1e-17), direct evaluation below.
    """
    cdef double y2
    if y > 15.0:
        y2 = 1.0 / (y * y)
        return (1.0 / 12 - (1.0 / 360 - (1.0 / 1260 - (1.0 / 1680 - y2 / 1188) * y2) * y2) * y2) / y
    return lgamma(y) - (y - 0.5) * log(y) + y - LOG_SQRT_2PI


cdef inline double bd0(double x, double mu, double d) noexcept nogil:
    """Deviance term ``x log(x / mu) + mu - x`` for ``x, mu > 0`` with ``d = x - mu`` given exactly.

    Uses Loader's (2000) series in ``v = d / (x + mu)`` when ``|d|`` is small
    relative to ``x + mu``, which avoids the cancellation of the direct form.
    """
    cdef double v, s, s1, ej, v2
    cdef int j
    if fabs(d) < 0.1 * (x + mu):
        v = d / (x + mu)
        s = d * v
        ej = 2.0 * x * v
        v2 = v * v
        for j in range(1, 1000):
            ej *= v2
            s1 = s + ej / (2 * j + 1)
            if s1 == s:
                return s1
            s = s1
        return s
    return x * log(x / mu) - d


cdef inline double poisson_logpmf(double k, double lam, double d) noexcept nogil:
    """``log P(K = k)`` for ``K ~ Poisson(lam)``, ``d = k - lam`` given exactly.

    Saddle-point form ``-stirlerr(k) - bd0(k, lam) - log(2 pi k)/2`` (Loader
    2000): relative accuracy independent of the size of ``lam``.
    """
    if k <= 0.0:
        return -lam
    return -stirlerr(k) - bd0(k, lam, d) - LOG_SQRT_2PI - 0.5 * log(k)
