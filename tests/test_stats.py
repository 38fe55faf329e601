"""The exact reference functions of :mod:`pygbn.stats`.

Checked against independent computations: exact integer Stirling numbers,
direct sums of the PMFs, scipy's distributions, quadrature, and (where
installed) mpmath at 50 digits for the huge-parameter forms.
"""
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, special
from scipy import stats as st

from pygbn import stats as S


def stirling1_unsigned(n):
    """Row n of the unsigned Stirling numbers of the first kind (exact ints)."""
    row = [1]
    for i in range(n):
        new = [0] * (len(row) + 1)
        for l, v in enumerate(row):
            new[l] += i * v
            new[l + 1] += v
        row = new
    return row


@pytest.mark.parametrize("n,r", [(1, 0.3), (6, 0.5), (25, 2.0), (60, 1e-3), (120, 40.0)])
def test_crt_pmf_matches_stirling_numbers(n, r):
    s = stirling1_unsigned(n)
    # P(l) = Gamma(r) / Gamma(n + r) |s(n, l)| r^l
    ref = np.array([math.log(s[l]) + l * math.log(r) + math.lgamma(r) - math.lgamma(n + r)
                    if s[l] else -np.inf for l in range(n + 1)])
    got = S.crt_pmf_table(n, r)
    fin = np.isfinite(ref)
    np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-11, atol=1e-11)
    assert np.all(np.isneginf(got[~fin]))


@pytest.mark.parametrize("n,r", [(1, 2.0), (40, 0.1), (400, 3.0), (3000, 50.0), (3000, 1e6)])
def test_crt_moments_match_pmf(n, r):
    p = np.exp(S.crt_pmf_table(n, r))
    l = np.arange(n + 1)
    assert abs(p.sum() - 1) < 1e-12
    mean = p @ l
    np.testing.assert_allclose(S.crt_mean(n, r), mean, rtol=1e-11)
    np.testing.assert_allclose(S.crt_var(n, r), p @ (l - mean) ** 2, rtol=1e-8)


@pytest.mark.parametrize("n,r", [(10**6, 0.5), (10**7, 1e3), (10**12, 1e6), (10**9, 1e14)])
def test_crt_moments_huge_n(n, r):
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    e = r * (mp.digamma(n + r) - mp.digamma(r))
    v = e - r * r * (mp.polygamma(1, r) - mp.polygamma(1, n + r))
    np.testing.assert_allclose(S.crt_mean(n, r), float(e), rtol=1e-12)
    np.testing.assert_allclose(S.crt_var(n, r), float(v), rtol=1e-8)


@pytest.mark.parametrize("n", [5, 1000, 10**6, 10**12])
def test_crt_moments_extreme_r(n):
    """Subnormal and huge r, without a warning: the mean is 1 + r H_{n-1} (customer 0's
    table apart, no 1 / r) and n - (n (n - 1) / 2) / r to first order; the variance
    r H_{n-1} and n (n - 1) / (2 r)."""
    import warnings
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for r in [5e-324, 1e-300, 1e300]:
            h = mp.harmonic(n - 1)
            if r < 1:
                mean, var = 1 + r * h, r * h - r * r * (mp.zeta(2) - mp.zeta(2, n))
            else:
                mean, var = mp.mpf(n) - mp.mpf(n) * (n - 1) / (2 * r), mp.mpf(n) * (n - 1) / (2 * r)
            np.testing.assert_allclose(S.crt_mean(n, r), float(mean), rtol=1e-13)
            if var > 1e-300:
                np.testing.assert_allclose(S.crt_var(n, r), float(var), rtol=1e-12)
            else:                                   # subnormal: absolute
                assert abs(S.crt_var(n, r) - float(var)) < 1e-320
            assert 1.0 <= S.crt_mean(n, r) <= n


def test_crt_conventions():
    assert S.crt_logpmf(0, 0, 3.0) == 0.0
    assert S.crt_logpmf(1, 5, 0.0) == 0.0 and S.crt_logpmf(2, 5, 0.0) == -np.inf
    assert S.crt_logpmf(5, 5, np.inf) == 0.0
    assert S.crt_mean(5, np.inf) == 5 and S.crt_var(5, np.inf) == 0
    np.testing.assert_allclose(np.exp(S.crt_logpmf([1, 2], [2, 2], 1.0)), [0.5, 0.5])


@pytest.mark.parametrize("lam", [1e-300, 1e-5, 0.4, 3.0, 70.0, 1e5])
def test_poisson_logpmf_matches_scipy(lam):
    k = np.arange(0, int(lam + 20 * np.sqrt(lam) + 30))
    # scipy's direct form has absolute error ~ eps * lam log(lam); ours does not
    tol = 1e-14 * max(1.0, lam * np.log1p(lam))
    np.testing.assert_allclose(S.poisson_logpmf(k, lam), st.poisson.logpmf(k, lam), rtol=1e-12, atol=tol)


@pytest.mark.parametrize("lam", [1e10, 1e15, 1e18])
def test_poisson_logpmf_huge_lam(lam):
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    for z in (-4.0, -0.3, 0.0, 2.5):
        k = float(round(lam + z * math.sqrt(lam)))
        ref = -mp.mpf(lam) + mp.mpf(k) * mp.log(lam) - mp.loggamma(mp.mpf(k) + 1)
        assert abs(S.poisson_logpmf(k, lam) - float(ref)) < 1e-9


@pytest.mark.parametrize("lam", [1e-300, 1e-9, 0.02, 1.0, 7.5, 300.0])
def test_truncated_poisson(lam):
    k = np.arange(1, int(lam + 30 * np.sqrt(lam) + 40))
    p = np.exp(S.truncated_poisson_logpmf(k, lam))
    assert abs(p.sum() - 1) < 1e-12
    np.testing.assert_allclose(S.truncated_poisson_mean(lam), p @ k, rtol=1e-12)
    var = p @ (k - p @ k) ** 2
    np.testing.assert_allclose(S.truncated_poisson_var(lam), var, rtol=1e-8, atol=1e-300)
    # the known bug in the wild: lam^k / (k (e^lam - 1)) instead of k!
    if lam == 1.0:
        assert abs(np.exp(S.truncated_poisson_logpmf(3, 1.0)) - 1 / (6 * math.expm1(1.0))) < 1e-15
    assert S.truncated_poisson_logpmf(0, lam) == -np.inf


def test_truncated_poisson_huge_lam_variance():
    np.testing.assert_allclose(S.truncated_poisson_var([1e12, 1e18]), [1e12, 1e18], rtol=1e-12)
    np.testing.assert_allclose(S.truncated_poisson_var(1e-8), 5e-9, rtol=1e-7)


@pytest.mark.parametrize("p", [1e-9, 0.05, 0.5, 0.95])
def test_logarithmic(p):
    k = np.arange(1, 3000)
    pm = np.exp(S.logarithmic_logpmf(k, p))
    assert abs(pm.sum() - 1) < 1e-10
    np.testing.assert_allclose(S.logarithmic_mean(p), pm @ k, rtol=1e-9)
    np.testing.assert_allclose(S.logarithmic_var(p), pm @ (k - pm @ k) ** 2, rtol=1e-7)
    ref = st.logser.logpmf(k[:50], p)
    fin = np.isfinite(ref)
    # scipy's direct form loses relative accuracy for tiny p (ours matches mpmath there)
    np.testing.assert_allclose(S.logarithmic_logpmf(k[:50], p)[fin], ref[fin], rtol=1e-12 if p > 1e-3 else 1e-6)
    if p < 1e-6:
        np.testing.assert_allclose(S.logarithmic_logpmf(1, p), -p / 2 - 5 * p * p / 24, rtol=1e-12)
    sf = S.logarithmic_sf([1, 3, 10], p)
    np.testing.assert_allclose(sf, 1 - np.cumsum(pm)[[0, 2, 9]], rtol=1e-8, atol=1e-15)


def test_logarithmic_sf_of_a_real_k_is_that_of_its_floor():
    """X is integer: P(X > 1.5) = P(X > 1) = 1 - P(1) (scipy 1.17's logser.sf(1.5) gives
    its closed form at 1.5, 0.1628, between P(X > 1) and P(X > 2))."""
    p = 0.5
    L = -math.log1p(-p)
    np.testing.assert_allclose(S.logarithmic_sf([1.5, 1.0, 1.999], p), 1 - p / L, rtol=1e-12)
    np.testing.assert_allclose(S.logarithmic_sf([2.5, 2.0], p), 1 - (p + p * p / 2) / L, rtol=1e-12)
    np.testing.assert_array_equal(S.logarithmic_sf([0.5, 0.0, -3.2], p), 1.0)
    k = np.array([1.0, 1.25, 3.7, 9.99])
    np.testing.assert_allclose(S.logarithmic_sf(k, p), st.logser.sf(np.floor(k), p), rtol=1e-10)


def test_poisson_logpmf_of_a_negative_rate_is_nan():
    """A negative (or NaN) rate is outside the parameter range: NaN, as scipy and
    truncated_poisson_logpmf (k = 0 gave +1 at lam = -1)."""
    out = S.poisson_logpmf([0, 1, 2, 1.5], -1.0)
    assert np.isnan(out).all()
    np.testing.assert_array_equal(np.isnan(st.poisson.logpmf([0, 1, 2], -1.0)), True)
    assert np.isnan(S.poisson_logpmf(0, np.nan)) and np.isnan(S.truncated_poisson_logpmf(1, -1.0))
    np.testing.assert_array_equal(S.poisson_logpmf([0, 3], [-1.0, 0.0]), [np.nan, -np.inf])
    assert S.poisson_logpmf(0, 0.0) == 0.0 and S.poisson_logpmf(2, 0.0) == -np.inf


def test_truncated_poisson_at_zero_is_the_limit_point_mass_at_one():
    np.testing.assert_array_equal(S.truncated_poisson_logpmf([1, 2, 5, 0, 1.5], 0.0),
                                  [0.0, -np.inf, -np.inf, -np.inf, -np.inf])
    assert S.truncated_poisson_logpmf(1, 0.0) == 0.0
    assert S.truncated_poisson_mean(0.0) == 1.0 and S.truncated_poisson_var(0.0) == 0.0
    # the limit: at tiny lam P(1) = 1 - lam/2 + ... and P(2) ~ lam / 2
    np.testing.assert_allclose(S.truncated_poisson_logpmf(1, 1e-12), -5e-13, rtol=0, atol=1e-14)
    np.testing.assert_allclose(S.truncated_poisson_logpmf(2, 1e-12), np.log(5e-13), rtol=1e-12)
    np.testing.assert_array_equal(S.truncated_poisson_logpmf(1, [0.0, 0.0]), [0.0, 0.0])


def test_logarithmic_sf_near_one():
    # P(X > k) for p = 1 - 1e-12 against the series sum_{j>k} p^j / j, via exact Fractions for k = 1
    p = 1 - 1e-12
    L = -math.log1p(-p)
    np.testing.assert_allclose(S.logarithmic_sf(1, p), 1 - p / L, rtol=1e-9)
    np.testing.assert_allclose(S.logarithmic_mean(p), p / ((1 - p) * L), rtol=1e-12)


@pytest.mark.parametrize("alpha", [1e-300, 1e-7, 0.2, 1.0, 9.0, 40.0, 800.0])
def test_truncated_bessel(alpha):
    n = np.arange(1, int(alpha / 2 + 30 * np.sqrt(alpha + 1) + 30))
    lp = S.truncated_bessel_logpmf(n, alpha)
    if alpha > 1e-100:
        direct = ((2 * n - 1) * np.log(alpha / 2) - special.gammaln(n + 1) - special.gammaln(n)
                  - np.log(special.iv(1, alpha)))
        fin = direct > -700
        np.testing.assert_allclose(lp[fin], direct[fin], rtol=1e-10, atol=1e-10)
    p = np.exp(lp)
    assert abs(p.sum() - 1) < 1e-12
    mean = p @ n
    np.testing.assert_allclose(S.truncated_bessel_mean(alpha), mean, rtol=1e-12)
    np.testing.assert_allclose(S.truncated_bessel_var(alpha), p @ (n - mean) ** 2, rtol=1e-7, atol=1e-300)
    # E[n (n - 1)] = alpha^2 / 4
    np.testing.assert_allclose(p @ (n * (n - 1)), alpha ** 2 / 4, rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("alpha", [5e3, 1e5, 1e9, 1e15])
def test_truncated_bessel_huge_alpha(alpha):
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    a = mp.mpf(alpha)
    m = math.floor((1 + math.sqrt(1 + alpha * alpha)) / 2)
    for k in (m, m + int(3 * math.sqrt(alpha)), max(1, m - int(2 * math.sqrt(alpha)))):
        ref = (2 * k - 1) * mp.log(a / 2) - mp.loggamma(k + 1) - mp.loggamma(k) - mp.log(mp.besseli(1, a))
        assert abs(S.truncated_bessel_logpmf(k, alpha) - float(ref)) < 1e-8
    e = a / 2 * mp.besseli(0, a) / mp.besseli(1, a)
    np.testing.assert_allclose(S.truncated_bessel_mean(alpha), float(e), rtol=1e-14)
    np.testing.assert_allclose(S.truncated_bessel_var(alpha), float(a * a / 4 + e - e * e), rtol=1e-9)


@pytest.mark.parametrize("lam,c", [(0.3, 1.0), (4.0, 0.5), (60.0, 3.0)])
def test_prg_density_and_cdf(lam, c):
    f = lambda x: np.exp(S.prg_logpdf(x, lam, c))  # noqa: E731
    mass, _ = integrate.quad(f, 0, np.inf, limit=400)
    np.testing.assert_allclose(mass, -math.expm1(-lam), rtol=1e-8)
    m1, _ = integrate.quad(lambda x: x * f(x), 0, np.inf, limit=400)
    m2, _ = integrate.quad(lambda x: x * x * f(x), 0, np.inf, limit=400)
    np.testing.assert_allclose(m1, S.prg_mean(lam, c), rtol=1e-7)
    np.testing.assert_allclose(m2 - m1 ** 2, S.prg_var(lam, c), rtol=1e-7)
    x = S.prg_mean(lam, c) * 0.7
    part, _ = integrate.quad(f, 0, x, limit=400)
    np.testing.assert_allclose(S.prg_cdf(x, lam, c), math.exp(-lam) + part, rtol=1e-8)
    assert S.prg_cdf(0.0, lam, c) == pytest.approx(math.exp(-lam)) and S.prg_cdf(-1.0, lam, c) == 0
    assert S.prg_log_p0(lam) == -lam


@pytest.mark.parametrize("r,p", [(0.01, 0.5), (1.0, 0.3), (7.5, 0.9), (100.0, 0.05)])
def test_negative_binomial(r, p):
    k = np.arange(0, 20000)
    lp = S.negative_binomial_logpmf(k, r, p)
    # the paper's p is numpy/scipy's 1 - p
    np.testing.assert_allclose(lp[:200], st.nbinom.logpmf(k[:200], r, 1 - p), rtol=1e-10)
    pm = np.exp(lp)
    assert abs(pm.sum() - 1) < 1e-10
    np.testing.assert_allclose(S.negative_binomial_mean(r, p), pm @ k, rtol=1e-9)
    np.testing.assert_allclose(S.negative_binomial_var(r, p), pm @ (k - pm @ k) ** 2, rtol=1e-7)
    assert S.negative_binomial_logpmf(0, 0.0, 0.5) == 0.0 and S.negative_binomial_logpmf(0, 2.0, 0.0) == 0.0


def test_multinomial_and_dirichlet():
    x = np.array([[2, 0, 3], [1, 1, 3]])
    w = np.array([1.0, 2.0, 7.0])
    np.testing.assert_allclose(S.multinomial_logpmf(x, w), st.multinomial.logpmf(x, 5, w / w.sum()))
    a = np.array([0.5, 2.0, 3.0])
    y = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(S.dirichlet_logpdf(y, a), st.dirichlet.logpdf(y, a))
    np.testing.assert_allclose(S.dirichlet_mean(a), st.dirichlet.mean(a))
    np.testing.assert_allclose(S.dirichlet_var(a), st.dirichlet.var(a))


def test_helpers_exact_rationals():
    # log1pmx and stirlerr against exact/independent values
    from pygbn.stats import _log1pmx, _stirlerr
    for x in (1e-8, -0.1, 0.12, 0.5, -0.9):
        exact = float(sum(Fraction(-1) ** (k + 1) * Fraction(x) ** k / k for k in range(2, 200))) \
            if abs(x) < 0.6 else math.log1p(x) - x
        assert abs(_log1pmx(x) - exact) <= 1e-15 * abs(exact)
    for y in (0.5, 3.0, 15.5, 1e3, 1e12):
        exact = math.lgamma(y) - (y - 0.5) * math.log(y) + y - 0.5 * math.log(2 * math.pi) \
            if y < 100 else 1 / (12 * y) - 1 / (360 * y ** 3)
        assert abs(float(_stirlerr(np.array([y]))[0]) - exact) < 1e-13


def test_moments_at_extreme_parameters():
    """Tiny and huge parameters, without a warning where the value is a double: the
    logarithmic variance ~ p / 2 (was 0 / 0), the zero-truncated Poisson variance ~ lam
    at lam = 1e300, the truncated Bessel at subnormal alpha (alpha / 2 rounds to 0), the
    Dirichlet variance with a0^2 below the smallest double."""
    import warnings
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for p in [1e-300, 1e-9, 1e-8, 2e-8, 0.5, 0.999]:
            q = mp.mpf(p)
            lq = mp.log1p(-q)
            # q + log(1 - q) = -sum_{k >= 2} q^k / k (its series where the sum would cancel)
            qlq = -mp.nsum(lambda k: q ** k / k, [2, mp.inf]) if p < 1e-3 else q + lq
            want = -q * qlq / ((1 - q) ** 2 * lq ** 2)
            np.testing.assert_allclose(S.logarithmic_var(p), float(want), rtol=1e-13)
        np.testing.assert_allclose(S.truncated_poisson_var(1e300), 1e300, rtol=1e-15)
        np.testing.assert_allclose(S.truncated_poisson_var(1e-300), 5e-301, rtol=1e-15)
        assert S.truncated_bessel_logpmf(1, 5e-324) == 0.0
        assert S.truncated_bessel_mean(5e-324) == 1.0 and S.truncated_bessel_var(5e-324) == 0.0
        np.testing.assert_allclose(S.dirichlet_var(np.array([1e-300, 1e-300])), [0.25, 0.25], rtol=1e-15)
        np.testing.assert_allclose(S.dirichlet_var(np.array([1.0, 2.0])), [1 / 18, 1 / 18], rtol=1e-15)


def test_moments_and_log_pmfs_at_extreme_parameters_without_a_warning():
    """prg_var(0, 1e-300) gave NaN and prg_var(1e-300, 1e-300) inf (c * c underflowed to 0;
    they are 0 and 2e300); prg_mean, negative_binomial_mean (as their variances already did)
    and truncated_bessel_logpmf at a huge alpha (in its unused small-alpha branch) warned of
    an overflow."""
    assert _quiet(S.prg_var, 0.0, 1e-300) == 0.0
    np.testing.assert_allclose(_quiet(S.prg_var, 1e-300, 1e-300), 2e300, rtol=1e-15)
    np.testing.assert_allclose(_quiet(S.prg_var, 3.0, 0.5), 24.0, rtol=1e-15)
    assert _quiet(S.prg_var, 0.3, 1e-300) == np.inf
    assert _quiet(S.prg_mean, 1e300, 1e-12) == np.inf
    assert _quiet(S.negative_binomial_mean, 1e300, 1 - 1e-16) == np.inf
    lp = _quiet(S.truncated_bessel_logpmf, [1.0, 3.0], 1e300)
    assert np.isfinite(lp).all() and (lp < -1e299).all()


def _quiet(f, *args):
    """f(*args) with every numpy warning an error."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            return f(*args)


@pytest.mark.parametrize("f,args", [
    (S.poisson_logpmf, (1, [-1.0, np.inf, np.nan])),
    (S.truncated_poisson_logpmf, (1, [-1.0, np.inf, np.nan])),
    (S.truncated_poisson_mean, ([-1.0, np.inf, np.nan],)),
    (S.truncated_poisson_var, ([-1.0, np.inf, np.nan],)),
    (S.logarithmic_logpmf, (1, [-0.1, 1.0, 1.5, np.nan])),
    (S.logarithmic_mean, ([-0.1, 1.0, 1.5, np.nan],)),
    (S.logarithmic_var, ([-0.1, 1.0, 1.5, np.nan],)),
    (S.logarithmic_sf, (2, [-0.1, 1.0, 1.5, np.nan])),
    (S.truncated_bessel_logpmf, (1, [-1.0, np.inf, np.nan])),
    (S.truncated_bessel_mean, ([-1.0, np.inf, np.nan],)),
    (S.truncated_bessel_var, ([-1.0, np.inf, np.nan],)),
    (S.crt_logpmf, (1, [2.5, -1, 2, 2], [1.0, 1.0, -1.0, np.nan])),
    (S.crt_mean, ([2.5, -1, 3, 3], [1.0, 1.0, -1.0, np.nan])),
    (S.crt_var, ([2.5, -1, 3, 3], [1.0, 1.0, -1.0, np.nan])),
    (S.negative_binomial_logpmf, (0, [-1.0, np.inf, np.nan, 2.0, 2.0, 2.0], [0.5, 0.5, 0.5, -0.1, 1.0, np.nan])),
    (S.negative_binomial_mean, ([-1.0, np.inf, np.nan, 2.0, 2.0, 2.0], [0.5, 0.5, 0.5, -0.1, 1.0, np.nan])),
    (S.negative_binomial_var, ([-1.0, np.inf, np.nan, 2.0, 2.0, 2.0], [0.5, 0.5, 0.5, -0.1, 1.0, np.nan])),
    (S.prg_logpdf, (1.0, [-1.0, np.inf, np.nan, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0, -1.0, np.inf])),
    (S.prg_log_p0, ([-1.0, np.inf, np.nan],)),
    (S.prg_mean, ([-1.0, np.inf, np.nan, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0, -1.0])),
    (S.prg_var, ([-1.0, np.inf, np.nan, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0, -1.0])),
    (S.multinomial_logpmf, ([1, 2], [[-1.0, 1.0], [np.inf, 1.0], [np.nan, 1.0], [0.0, 0.0]])),
    (S.dirichlet_logpdf, ([0.5, 0.5], [[-1.0, 1.0], [np.inf, 1.0], [np.nan, 1.0], [0.0, 0.0]])),
    (S.dirichlet_mean, ([[-1.0, 1.0], [np.inf, 1.0], [np.nan, 1.0], [0.0, 0.0]],)),
    (S.dirichlet_var, ([[-1.0, 1.0], [np.inf, 1.0], [np.nan, 1.0], [0.0, 0.0]],)),
])
def test_parameters_outside_their_range_give_nan(f, args):
    """As scipy.stats, and without a warning: they gave numbers (logarithmic_mean(-0.1)
    0.95, its variance and truncated_poisson_var(-1) negative, NB's log P(0) at p = -0.1
    +0.19, crt_mean(3, nan) 3, truncated_poisson_mean(nan) 1), silently read n = 2.5 as 2
    in the CRT functions, or raised (crt_logpmf, prg_cdf's 'cannot convert float NaN')."""
    assert np.isnan(_quiet(f, *args)).all()
    if f is S.prg_logpdf:
        assert np.isnan(_quiet(S.prg_cdf, 1.0, -1.0, 1.0)) and np.isnan(_quiet(S.prg_cdf, [1.0], 1.0, 0.0)).all()


@pytest.mark.parametrize("f,args", [
    (S.poisson_logpmf, (2.0,)), (S.truncated_poisson_logpmf, (2.0,)), (S.logarithmic_logpmf, (0.5,)),
    (S.truncated_bessel_logpmf, (2.0,)), (S.crt_logpmf, (3, 1.0)), (S.negative_binomial_logpmf, (2.0, 0.3)),
])
def test_log_pmfs_off_the_support_and_at_nan(f, args):
    """-inf at -1, 0.5, +-inf (k = inf gave NaN with a RuntimeWarning); NaN at a NaN k
    (gave -inf; scipy gives NaN)."""
    out = _quiet(f, [-1.0, 0.5, np.inf, -np.inf, np.nan], *args)
    np.testing.assert_array_equal(out, [-np.inf] * 4 + [np.nan])


def test_limit_laws_where_the_samplers_draw_them():
    """logarithmic(p=0) and truncated_bessel(alpha=0) draw 1 (the limits): the log-PMFs gave
    NaN there (so gof_discrete refused them), logarithmic_mean/var/sf NaN."""
    from pygbn import random as R
    from pygbn.testing import assert_gof_discrete
    for lp, draw in [(lambda k: S.logarithmic_logpmf(k, 0.0), R.logarithmic(0.0, size=1000, random_state=0)),
                     (lambda k: S.truncated_bessel_logpmf(k, 0.0), R.truncated_bessel(0.0, size=1000, random_state=0))]:
        np.testing.assert_array_equal(_quiet(lp, [1, 2, 0]), [0.0, -np.inf, -np.inf])
        assert_gof_discrete(draw, lp)
    assert _quiet(S.logarithmic_mean, 0.0) == 1.0 and _quiet(S.logarithmic_var, 0.0) == 0.0
    np.testing.assert_array_equal(_quiet(S.logarithmic_sf, [0, 1, 5], 0.0), [1.0, 0.0, 0.0])
    assert S.truncated_bessel_mean(0.0) == 1.0 and S.truncated_bessel_var(0.0) == 0.0


def test_logarithmic_sf_broadcasts_p():
    """p was a scalar only (an array p raised numpy's 'only 0-dimensional arrays')."""
    got = S.logarithmic_sf([[1], [3]], [0.2, 0.5])
    want = [[S.logarithmic_sf(k, p) for p in (0.2, 0.5)] for k in (1, 3)]
    np.testing.assert_allclose(got, want, rtol=1e-15)
    assert np.isnan(S.logarithmic_sf(np.nan, 0.5))


def test_crt_pmf_table_refuses_a_non_integer_n():
    with pytest.raises(ValueError, match="n=2.5"):
        S.crt_pmf_table(2.5, 1.0)
    np.testing.assert_array_equal(S.crt_pmf_table(2.0, 0.0), S.crt_pmf_table(2, 0.0))


def test_prg_cdf_names_an_array_parameter():
    with pytest.raises(ValueError, match="scalar lam"):
        S.prg_cdf(1.0, [1.0, 2.0], 1.0)


def test_truncated_bessel_logpmf_far_in_the_tail():
    """n > 2^53 alpha/2: log1p((alpha/2 - n) / n) rounded to log1p(-1) = -inf."""
    n = np.array([1e3, 1e10, 1e17, 1e20])
    want = (2 * n - 1) * np.log(1.0) - special.gammaln(n + 1) - special.gammaln(n) - np.log(special.iv(1, 2.0))
    np.testing.assert_allclose(S.truncated_bessel_logpmf(n, 2.0), want, rtol=1e-13)


def test_multinomial_logpmf_support():
    """Non-integer counts gave a finite value (scipy: -inf); a zero-weight row splits n = 0
    (as multinomial_split), and gave NaN."""
    assert S.multinomial_logpmf([1.5, 1.5], [1.0, 1.0]) == -np.inf
    assert S.multinomial_logpmf([-1, 2], [1.0, 1.0]) == -np.inf
    assert _quiet(S.multinomial_logpmf, [0, 0], [0.0, 0.0]) == 0.0
    assert np.isnan(S.multinomial_logpmf([np.nan, 1], [1.0, 1.0]))
    np.testing.assert_allclose(S.multinomial_logpmf([[0, 3], [1, 2]], [0.0, 1.0]), [0.0, -np.inf])


def test_dirichlet_logpdf_support():
    """Points off the simplex gave finite densities ([0.2, 0.2] and [-0.5, 1.5] gave 0.0);
    a zero concentration (a component multinomial_split and dirichlet fix at 0) gave NaN."""
    a = np.array([1.0, 1.0])
    np.testing.assert_array_equal(S.dirichlet_logpdf([[0.2, 0.2], [-0.5, 1.5], [0.5, 0.5]], a),
                                  [-np.inf, -np.inf, 0.0])
    # zero concentrations: the density of the others on their face
    np.testing.assert_allclose(_quiet(S.dirichlet_logpdf, [0.0, 0.3, 0.7], [0.0, 2.0, 3.0]),
                               st.dirichlet.logpdf([0.3, 0.7], [2.0, 3.0]), rtol=1e-13)
    assert S.dirichlet_logpdf([0.1, 0.2, 0.7], [0.0, 2.0, 3.0]) == -np.inf
    assert _quiet(S.dirichlet_logpdf, [0.0, 1.0], [0.0, 1.0]) == 0.0
    # the samplers' rows (which sum to 1 to rounding) and float32 rows are on it
    from pygbn import random as R
    x = R.dirichlet(np.full(1000, 0.3), size=5, random_state=0)
    np.testing.assert_allclose(S.dirichlet_logpdf(x, np.full(1000, 0.3)),
                               st.dirichlet.logpdf(x.T / x.sum(axis=1), np.full(1000, 0.3)), rtol=1e-9)
    assert np.isfinite(S.dirichlet_logpdf(np.float32([0.1, 0.2, 0.7]), [1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(S.dirichlet_mean([0.0, 2.0]), [0.0, 1.0])


def test_prg_cdf_large_lam():
    """Beyond its range prg_cdf summed one term (lam - 12 sd rounds to lam at 1e300: 4e-151
    instead of about 1) or would build an array of 24 sqrt(lam) terms per x (2.4e9 at 1e16):
    now a ValueError naming lam.  Up to the limit the sum is right: at lam = 1e9 the PRG is
    nearly normal (mean lam / c, variance 2 lam / c^2), and x in blocks gives the values of x one at a time."""
    with pytest.raises(ValueError, match=r"takes lam up to 1e\+10, got lam=1e\+300"):
        S.prg_cdf(1.0, 1e300, 1.0)
    with pytest.raises(ValueError, match="lam=2e\\+10"):
        S.prg_cdf([1.0, 2.0], 2e10, 3.0)
    lam, c = 1e9, 2.0
    mean, sd = lam / c, math.sqrt(2 * lam) / c
    got = S.prg_cdf([mean - sd, mean, mean + sd], lam, c)
    np.testing.assert_allclose(got, [0.15865525, 0.5, 0.84134475], atol=2e-4)
    x = np.linspace(0, 30, 3000).reshape(30, 100)     # more values of x than one block at lam = 1e7
    big = S.prg_cdf(x, 1e7, 1e6)
    one = np.array([S.prg_cdf(v, 1e7, 1e6) for v in x.ravel()[::97]])
    assert big.shape == x.shape
    np.testing.assert_allclose(big.ravel()[::97], one, rtol=1e-12, atol=1e-300)


def test_poisson_logpmf_at_a_tiny_rate_is_finite_and_quiet():
    """k / lam overflowed for a tiny rate (lam = 5e-324, or 1e-300 with k = 1e17), so
    poisson_logpmf gave -inf for log-probabilities as large as -744 (k log lam - lam - log k!),
    and truncated_poisson_logpmf(1, 5e-324) -inf instead of 0; k > 1e154 warned of an overflow."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    k = np.array([1.0, 2.0, 7.0, 1e3, 1e17, 1e17, 1e300, 1e300, 1e300])
    lam = np.array([5e-324, 5e-324, 5e-324, 5e-324, 5e-324, 1e-300, 1e-300, 1e-20, 0.5])
    ref = [float(mp.mpf(kk) * mp.log(mp.mpf(ll)) - mp.mpf(ll) - mp.loggamma(mp.mpf(kk) + 1))
           for kk, ll in zip(k, lam)]
    np.testing.assert_allclose(_quiet(S.poisson_logpmf, k, lam), ref, rtol=1e-13)
    assert _quiet(S.truncated_poisson_logpmf, 1.0, 5e-324) == 0.0
    np.testing.assert_allclose(_quiet(S.truncated_poisson_logpmf, 2.0, 5e-324), float(mp.log(mp.mpf(5e-324) / 2)),
                               rtol=1e-14)


def test_negative_binomial_logpmf_at_huge_and_tiny_parameters():
    """log Gamma(k + r) - log Gamma(r) - log k! lost its digits for huge k or r (NB(1e17, 0.5)
    at k = 1e17 gave -320 for -20.84, at k = 1 with r = 1e17, p = 1e-8 an error of 39), and
    scipy's gammaln is inf for a subnormal r (NaN at k = 0, -inf for k >= 1): Loader's
    saddle-point form, as R's dnbinom, is accurate to ~1e-13 there."""
    mp = pytest.importorskip("mpmath")
    cases = [(1e17, 1e17, 0.5), (1.0, 1e17, 1e-8), (7.0, 1e17, 1e-300), (1e8, 1e8, 0.5),
             (1e8, 0.5, 1 - 1e-16), (1e17, 3.0, 1 - 1e-6), (1e3, 1e300, 1e-300), (0.0, 5e-324, 0.5),
             (1.0, 5e-324, 0.5), (1e3, 5e-324, 1e-8), (7.0, 0.5, 5e-324), (1e300, 5e-324, 0.5),
             (3.0, 2.5, 0.3), (150.0, 0.01, 0.9), (1e8, 1e19, 1e-11), (1e5, 1e16, 1e-11), (1.0, 1e11, 0.3)]
    k, r, p = (np.array(v) for v in zip(*cases))
    got = _quiet(S.negative_binomial_logpmf, k, r, p)
    with mp.workdps(700):
        ref = [float(mp.loggamma(mp.mpf(kk) + mp.mpf(rr)) - mp.loggamma(mp.mpf(kk) + 1) - mp.loggamma(mp.mpf(rr))
                     + mp.mpf(kk) * mp.log(mp.mpf(pp)) + mp.mpf(rr) * mp.log1p(-mp.mpf(pp)))
               for kk, rr, pp in cases]
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-13)
