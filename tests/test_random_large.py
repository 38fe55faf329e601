"""Huge parameters, continuous laws and distributional identities.

* binned chi-square against exact CDFs (scipy's incomplete gamma / beta
  functions, or our exact PMFs summed) where a PMF table is too long;
* z-tests of mean and variance where even that is out of reach;
* the identities ``m ~ NB(r, p), l ~ CRT(m, r) => l ~ Pois(-r log(1-p))`` and
  ``NB(r, p) = sum of Pois(-r log(1-p)) Log(p) variates`` (paper, Section 2.1);
* our own Poisson (PTRS) and gamma (Marsaglia-Tsang) kernels, which take over
  from numpy's for parameters >= 1e10, on both sides of that switch.

Per-check level ``ALPHA = 1e-5`` (Bonferroni over the suite); fixed seeds.
"""
import zlib

import numpy as np
import pytest
from scipy import special
from scipy import stats as st

import pygbn.random as R
from pygbn import stats as S
from pygbn.random._api import _kernel
from pygbn.testing import assert_gof_binned, assert_gof_discrete, assert_moments

ALPHA = 1e-5
N = 10**5


def seed(*key):
    return zlib.crc32(repr(key).encode())


def int_edges(mean, sd, lo=None, n_bins=40, width=5.0):
    """Half-integer edges covering mean +- width * sd (distinct)."""
    e = np.unique(np.round(mean + sd * np.linspace(-width, width, n_bins + 1)))
    if lo is not None:
        e = e[e >= lo]
    return e + 0.5


def summed_cdf(logpmf, lo, hi):
    """CDF on lo..hi from a log-PMF (mass below lo assumed negligible)."""
    k = np.arange(lo, hi + 1, dtype=np.int64)
    c = np.cumsum(np.exp(logpmf(k)))
    return lambda e: np.interp(np.floor(e), k, c, left=0.0, right=1.0)


# --- our Poisson and gamma kernels --------------------------------------------

@pytest.mark.parametrize("lam", [10.0, 37.5, 1e3, 1e6])
def test_poisson_ptrs_exact_pmf(lam):
    x = _kernel("poisson_ptrs", lam, size=10**6, random_state=seed("ptrs", lam))
    assert_gof_discrete(x, lambda k: S.poisson_logpmf(k, lam), alpha=ALPHA)


@pytest.mark.parametrize("lam", [9.99e9, 1.001e10, 1e12, 1e15, 1e18])
def test_poisson_huge_lam_against_incomplete_gamma(lam):
    x = _kernel("poisson", lam, size=4 * N, random_state=seed("pois", lam))
    sd = np.sqrt(lam)
    edges = np.unique(np.round(lam + sd * np.linspace(-5, 5, 41)))
    assert_gof_binned(x, edges, lambda e: special.pdtr(e, lam), alpha=ALPHA)
    assert_moments(x, lam, lam, alpha=ALPHA)


@pytest.mark.parametrize("kernel,a", [("gamma_mt", 1.0), ("gamma_mt", 3.3), ("gamma_mt", 1e3),
                                      ("gamma_mt", 1e8), ("gamma_mt", 1e15), ("gamma", 9.99e9),
                                      ("gamma", 1.001e10), ("gamma", 1e17)])
def test_gamma_kernels_against_incomplete_gamma(kernel, a):
    x = _kernel(kernel, a, size=4 * N, random_state=seed(kernel, a))
    qs = st.gamma.ppf(np.linspace(0.01, 0.99, 40), a) if a < 1e6 else \
        a + np.sqrt(a) * st.norm.ppf(np.linspace(0.01, 0.99, 40))
    assert_gof_binned(x, np.unique(qs), lambda e: special.gammainc(a, e), alpha=ALPHA)


# --- truncated Poisson and Bessel at huge parameters ----------------------------

@pytest.mark.parametrize("lam", [1e8, 3e10, 1e12, 1e15, 1e18])
def test_truncated_poisson_huge(lam):
    x = R.truncated_poisson(lam, size=4 * N, random_state=seed("tp", lam))
    edges = np.unique(np.round(lam + np.sqrt(lam) * np.linspace(-5, 5, 41)))
    # zero-truncation is invisible at these lam: P(0) = exp(-lam)
    assert_gof_binned(x, edges, lambda e: special.pdtr(e, lam), alpha=ALPHA)
    assert_moments(x, S.truncated_poisson_mean(lam), S.truncated_poisson_var(lam), alpha=ALPHA)


@pytest.mark.parametrize("alpha", [1e7, 3e10])
def test_truncated_bessel_huge_binned(alpha):
    x = R.truncated_bessel(alpha, size=4 * N, random_state=seed("tb", alpha))
    m, sd = S.truncated_bessel_mean(alpha), np.sqrt(S.truncated_bessel_var(alpha))
    lo, hi = int(m - 9 * sd), int(m + 9 * sd)
    cdf = summed_cdf(lambda k: S.truncated_bessel_logpmf(k, alpha), lo, hi)
    assert_gof_binned(x, int_edges(m, sd), cdf, alpha=ALPHA)


@pytest.mark.parametrize("alpha", [1e9, 1e12, 1e15, 1e18])
def test_truncated_bessel_huge_moments(alpha):
    x = R.truncated_bessel(alpha, size=4 * N, random_state=seed("tbm", alpha))
    assert_moments(x, S.truncated_bessel_mean(alpha), S.truncated_bessel_var(alpha), alpha=ALPHA)


def test_truncated_bessel_mean_offset_is_resolved():
    # mean - alpha/2 -> 1/4 + 3/(16 alpha): a 1e6-draw sample sees the 1/4
    alpha = 1e6
    x = R.truncated_bessel(alpha, size=10**6, random_state=5)
    z = (x.mean() - S.truncated_bessel_mean(alpha)) / np.sqrt(S.truncated_bessel_var(alpha) / x.size)
    assert abs(z) < 4.5


# --- logarithmic with p near 1 -------------------------------------------------

@pytest.mark.parametrize("p", [1 - 1e-6, 1 - 1e-10, 1 - 1e-14, 1 - 2.0**-53])
def test_logarithmic_near_one(p):
    x = R.logarithmic(p, size=2 * N, random_state=seed("lg", p))
    assert x.min() >= 1
    edges = np.unique(np.floor(np.geomspace(1, np.quantile(x, 0.999), 30))) + 0.5
    assert_gof_binned(x, edges, lambda e: 1 - S.logarithmic_sf(np.floor(e), p), alpha=ALPHA)


# --- CRT at huge n -------------------------------------------------------------

@pytest.mark.parametrize("n,r", [(10**7, 1e-3), (10**7, 0.5), (10**7, 9.0), (10**7, 150.0),
                                 (10**5, 3e3), (10**12, 1.0), (10**12, 30.0), (10**18, 0.4),
                                 (2**62, 2.0)])
def test_crt_huge_n_moments(n, r):
    size = N if r <= 10 else N // 5
    x = R.crt(n, r, size=size, random_state=seed("crtm", n, r))
    assert x.min() >= 1 and x.max() <= n
    assert_moments(x, S.crt_mean(n, r), S.crt_var(n, r), alpha=ALPHA)


@pytest.mark.slow
@pytest.mark.parametrize("n,r", [(10**7, 1e4), (10**9, 1e6), (10**15, 300.0)])
def test_crt_huge_n_huge_r_moments(n, r):
    x = R.crt(n, r, size=N // 10, random_state=seed("crtM", n, r), n_jobs=-1)
    assert_moments(x, S.crt_mean(n, r), S.crt_var(n, r), alpha=ALPHA)


@pytest.mark.parametrize("r,p", [(2.0, 0.9), (1e-3, 0.99), (0.5, 1 - 1e-9), (50.0, 0.999),
                                 (1e3, 0.5), (30.0, 0.2)])
def test_crt_of_negative_binomial_is_poisson(r, p):
    """m ~ NB(r, p), l ~ CRT(m, r)  =>  l ~ Pois(-r log(1 - p))  (paper, Section 2.1)."""
    s = seed("nbcrt", r, p)
    m = R.negative_binomial(r, p, size=N * 2, random_state=s)
    l = R.crt(m, r, random_state=s + 1)
    assert np.all((l >= 1) | (m == 0)) and np.all(l <= m)
    lam = -r * np.log1p(-p)
    assert_gof_discrete(l, lambda k: S.poisson_logpmf(k, lam), alpha=ALPHA)


@pytest.mark.parametrize("r,p", [(2.0, 0.7), (0.3, 0.99), (10.0, 0.2), (1e-2, 0.5)])
def test_negative_binomial_is_compound_poisson_logarithmic(r, p):
    """NB(r, p) = sum of l ~ Pois(-r log(1-p)) iid Log(p) variates (paper, Section 2.1)."""
    rng = np.random.default_rng(seed("cpl", r, p))
    l = rng.poisson(-r * np.log1p(-p), size=N * 5)
    u = R.logarithmic(p, size=int(l.sum()), random_state=rng)
    ends = np.cumsum(l)
    total = np.concatenate([[0], np.cumsum(u)])[ends] - np.concatenate([[0], np.cumsum(u)])[ends - l]
    assert_gof_discrete(total, lambda k: S.negative_binomial_logpmf(k, r, p), alpha=ALPHA)


# --- negative binomial and PRG at huge parameters --------------------------------

@pytest.mark.parametrize("r,p", [(1e12, 0.5), (1.0, 1 - 1e-12), (1e8, 1e-9), (3.0, 0.999)])
def test_negative_binomial_moments(r, p):
    x = R.negative_binomial(r, p, size=4 * N, random_state=seed("nbm", r, p))
    assert_moments(x, S.negative_binomial_mean(r, p), S.negative_binomial_var(r, p), alpha=ALPHA)


@pytest.mark.parametrize("lam", [1e-3, 0.5, 4.0, 150.0, 1e4])
def test_prg_against_exact_cdf(lam):
    c = 2.0
    x = R.poisson_randomized_gamma(lam, c, size=4 * N, random_state=seed("prg", lam))
    assert x.dtype == np.float64 and x.min() >= 0
    # zero iff n = 0: P(0) = exp(-lam)
    mean, sd = lam / c, np.sqrt(2 * lam) / c
    inner = mean + sd * np.linspace(-4, 5, 40)
    edges = np.unique(np.concatenate([[0.0], inner[inner > 0],
                                      np.geomspace(1e-6, max(mean, 1e-3) * 30, 12)]))
    assert_gof_binned(x, edges, lambda e: S.prg_cdf(e, lam, c), alpha=ALPHA)


@pytest.mark.parametrize("lam,c", [(1e12, 0.5), (1e15, 3.0), (1e18, 1e-6)])
def test_prg_huge_moments(lam, c):
    x = R.poisson_randomized_gamma(lam, c, size=4 * N, random_state=seed("prgm", lam))
    assert_moments(x, S.prg_mean(lam, c), S.prg_var(lam, c), alpha=ALPHA)


def test_prg_zero_iff_poisson_zero():
    x = R.poisson_randomized_gamma(np.array([0.0, 1e-300, 5.0]), 1.0, size=(20000, 3), random_state=1)
    assert np.all(x[:, 0] == 0) and np.all(x[:, 1] == 0)
    assert_gof_discrete((x[:, 2] == 0).astype(np.int64),
                        lambda k: np.where(k == 1, -5.0, np.log(-np.expm1(-5.0))), alpha=ALPHA)


# --- Dirichlet and the log-gamma trick --------------------------------------------

@pytest.mark.parametrize("alpha", [[0.3, 1.0, 5.0], [50.0, 2.0], [0.02] * 6])
def test_dirichlet_marginal_beta(alpha):
    alpha = np.array(alpha)
    x = R.dirichlet(alpha, size=2 * N, random_state=seed("dir", tuple(alpha)))
    assert np.all(np.isfinite(x)) and np.allclose(x.sum(axis=1), 1.0, atol=1e-12)
    a0 = alpha.sum()
    # every component's Beta(alpha_i, a0 - alpha_i) marginal: with the first one alone, the
    # draws of components 1.. with their concentrations rotated (alpha [0.3, 5, 1] for
    # [0.3, 1, 5]) passed every Dirichlet test whose concentrations are not tiny
    for i, a in enumerate(alpha):
        edges = np.unique(st.beta.ppf(np.linspace(0.02, 0.98, 30), a, a0 - a))
        assert_gof_binned(x[:, i], edges, lambda e: special.betainc(a, a0 - a, e), alpha=ALPHA)


@pytest.mark.parametrize("alpha", [[1e-4, 2e-4, 5e-4], [1e-4] * 10, [1e-4, 1e-4, 2.0], [1e-8, 3e-8]])
def test_dirichlet_tiny_concentrations(alpha):
    alpha = np.array(alpha)
    x = R.dirichlet(alpha, size=2 * N, random_state=seed("dirt", tuple(alpha)))
    assert np.all(np.isfinite(x)) and np.all(x >= 0)
    np.testing.assert_allclose(x.sum(axis=1), 1.0, atol=1e-12)
    a0 = alpha.sum()
    # which component (if any) exceeds 1/2: P(X_i > 1/2) = 1 - I_{1/2}(a_i, a0 - a_i)
    big = x > 0.5
    label = np.where(big.any(axis=1), np.argmax(big, axis=1), len(alpha))
    p = 1 - special.betainc(alpha, a0 - alpha, 0.5)
    p = np.append(p, max(1 - p.sum(), 0.0))
    assert_gof_discrete(label, lambda k: np.log(p[k]), support=(0, len(alpha)), alpha=ALPHA)


def test_dirichlet_subnormal_and_zero_concentrations():
    x = R.dirichlet([1e-310, 3e-310, 0.0], size=20000, random_state=7)
    assert np.all(np.isfinite(x)) and np.all(x[:, 2] == 0)
    np.testing.assert_allclose(x.sum(axis=1), 1.0)
    # the limit puts all mass on one vertex, chosen with probability alpha_i / sum(alpha)
    assert np.all(np.isin(x[:, :2], [0.0, 1.0]))
    assert_gof_discrete(x[:, 1].astype(np.int64), lambda k: np.log(np.where(k == 1, 0.75, 0.25)),
                        alpha=ALPHA)


def _log_gamma_cdf(a):
    """CDF of Y = a log G, G ~ Gam(a): P(G <= e^(y/a)) = P(a, x), by its series for small x."""
    def cdf(y):
        y = np.asarray(y, dtype=np.float64)
        logx = y / a
        x = np.exp(np.minimum(logx, 700))
        # P(a, x) = x^a e^-x / Gamma(a+1) * sum_k x^k / ((a+1)...(a+k))
        xs = np.minimum(x, 1.0)          # the series is only used where x < 1
        s, term = np.ones_like(x), np.ones_like(x)
        for k in range(1, 60):
            term = term * xs / (a + k)
            s = s + term
        series = np.exp(np.minimum(y, 0.0) - xs - special.gammaln(a + 1)) * s
        return np.where(x < 1.0, series, special.gammainc(a, x))
    return cdf


@pytest.mark.parametrize("a", [1e-4, 0.3, 0.99, 1.0, 2.5])
def test_log_gamma_kernel(a):
    y = a * _kernel("log_gamma", a, size=4 * N, random_state=seed("lgam", a))
    assert np.all(np.isfinite(y))
    cdf = _log_gamma_cdf(a)
    grid = np.linspace(-12, 2.5, 4000)
    c = cdf(grid)
    edges = np.unique(np.interp(np.linspace(0.01, 0.99, 40), c, grid))
    assert_gof_binned(y, edges, cdf, alpha=ALPHA)


# --- our gamma kernels for every shape (pygbn/random/_inline.pxd) -----------------

SMALL_SHAPES = [1e-3, 0.015, 0.1, 0.3, 0.4999, 0.5001, 0.7, 0.9, 0.9999]


def _assert_gamma_gof(x, a):
    """Binned chi-square of Gam(a, 1) draws, on the scale of a log(x) (draws that
    underflow to 0 fall in the lowest bin)."""
    with np.errstate(divide="ignore"):
        y = a * np.log(x)
    cdf = _log_gamma_cdf(a)
    grid = np.linspace(-30 * max(a, 0.05), np.log(a + 30) * a, 6000)
    c = cdf(grid)
    edges = np.unique(np.interp(np.linspace(0.01, 0.99, 40), c, grid))
    edges = edges[edges > a * np.log(1e-300)]      # a bin edge above the underflow
    assert_gof_binned(y, edges, cdf, alpha=ALPHA)


@pytest.mark.parametrize("kernel", ["gamma_gs", "gamma_boost"])
@pytest.mark.parametrize("a", SMALL_SHAPES)
def test_gamma_small_shape_algorithms(kernel, a):
    x = _kernel(kernel, a, size=4 * N, random_state=seed(kernel, a))
    assert np.all(x >= 0) and np.all(np.isfinite(x))
    _assert_gamma_gof(x, a)


@pytest.mark.parametrize("kernel", ["gamma_fast", "gamma_row", "gamma"])
@pytest.mark.parametrize("a", SMALL_SHAPES[::2] + [1.0, 1.5, 7.0, 1e3, 1e12])
def test_gamma_kernels_every_shape(kernel, a):
    x = _kernel(kernel, a, size=4 * N, random_state=seed(kernel, a))
    if kernel == "gamma_row":
        assert np.all(x >= np.finfo(float).tiny)     # floored, as theta is
    if a < 1e6:
        _assert_gamma_gof(x, a)
    else:
        qs = a + np.sqrt(a) * st.norm.ppf(np.linspace(0.01, 0.99, 40))
        assert_gof_binned(x, np.unique(qs), lambda e: special.gammainc(a, e), alpha=ALPHA)


def test_gamma_row_mixed_shapes_match_their_laws():
    """A row kernel draw depends only on its own shape, whatever the row holds."""
    shapes = np.tile([1e-3, 0.3, 0.8, 1.0, 4.0], 4 * N // 5)
    x = _kernel("gamma_row", shapes, random_state=seed("row-mixed"))
    for i, a in enumerate([1e-3, 0.3, 0.8, 1.0, 4.0]):
        _assert_gamma_gof(x[i::5], a)


def test_vector_exp_log_within_one_ulp():
    mpmath = pytest.importorskip("mpmath")
    from pygbn.random import _generators as gen

    with mpmath.workprec(113):
        _check_vector_exp_log(mpmath, gen)


def _check_vector_exp_log(mpmath, gen):
    rng = np.random.default_rng(seed("vmath"))
    x = np.concatenate([-rng.random(4000) * 745.0, -rng.random(2000), -rng.random(500) * 1e-12,
                        [0.0, -1e-300, -708.39, -708.4, -745.1, -745.2, -746.0, -1e4, -np.inf]])
    out = np.empty_like(x)
    gen.vector_math("exp_neg", x, out)
    ref = np.array([float(mpmath.exp(mpmath.mpf(v))) if np.isfinite(v) else 0.0 for v in x])
    # within one ulp of the correctly rounded value (one unit of the smallest subnormal below)
    err = np.abs(out - ref) / np.maximum(np.spacing(np.abs(ref)), 5e-324)
    assert err.max() <= 1.0, (x[np.argmax(err)], err.max())
    u = np.concatenate([rng.random(4000), 0.6 + 0.8 * rng.random(2000), 1 + rng.random(500) * 1e-9,
                        1 - rng.random(500) * 1e-9, 2.0 ** -rng.integers(1, 1000, 1000),
                        [1.0, 2.0 ** -53, np.sqrt(0.5), np.sqrt(2.0), 1.9999999999999998]])
    out = np.empty_like(u)
    gen.vector_math("log_pos", u, out)
    ref = np.array([float(mpmath.log(mpmath.mpf(v))) for v in u])
    err = np.abs(out - ref) / np.spacing(np.maximum(np.abs(ref), 1e-300))
    assert err.max() <= 1.0, (u[np.argmax(err)], err.max())
    gen.vector_math("log_pos", np.zeros(1), out[:1])
    assert out[0] == -np.inf


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [1e12])
def test_truncated_bessel_huge_binned_slow(alpha):
    x = R.truncated_bessel(alpha, size=10**6, random_state=seed("tbs", alpha), n_jobs=-1)
    m, sd = S.truncated_bessel_mean(alpha), np.sqrt(S.truncated_bessel_var(alpha))
    cdf = summed_cdf(lambda k: S.truncated_bessel_logpmf(k, alpha), int(m - 8 * sd), int(m + 8 * sd))
    assert_gof_binned(x, int_edges(m, sd, width=4.5), cdf, alpha=ALPHA)


# --- rounding at the ends of the weights' and counts' ranges (review, 2026-11-28) ---------
def test_dirichlet_overflowing_concentrations():
    """Gammas that overflow their sum (concentrations near 1e308) are normalised by their
    largest first: rows finite and on the simplex (all zeros before)."""
    x = R.dirichlet([9e307, 9e307], size=50, random_state=3)
    np.testing.assert_allclose(x, 0.5, rtol=1e-12)
    y = R.dirichlet([1e308, 1e308, 1e308], random_state=3)
    np.testing.assert_allclose(y, 1 / 3, rtol=1e-12)


def test_dirichlet_vertex_limit_with_subnormal_concentrations():
    """The one-vertex limit picks vertex i with probability alpha_i / sum(alpha) even where
    u * sum(alpha) is subnormal (alphas of 5e-324 and 1e-323 gave 0.75 / 0.25 odds, not 1/3)."""
    x = R.dirichlet([5e-324, 1e-323], size=40000, random_state=seed("dirsub"))
    assert np.all(np.isin(x, [0.0, 1.0]))
    assert_gof_discrete(x[:, 1].astype(np.int64), lambda k: np.log(np.where(k == 1, 2 / 3, 1 / 3)),
                        alpha=ALPHA)


@pytest.mark.parametrize("n", [1, 10**5])
def test_multinomial_split_subnormal_weights(n):
    """Rows whose sum is subnormal keep their proportions (both the sorted and the
    binomial paths; the sorted one gave 0.75 / 0.25 for equal weights of 5e-324)."""
    x = R.multinomial_split(n, [5e-324, 1e-323, 0.0], size=40000 if n == 1 else 20,
                            random_state=seed("splitsub", n))
    assert np.all(x[:, 2] == 0) and np.all(x.sum(axis=1) == n)
    share = x[:, 1].sum() / x.sum()
    sd = np.sqrt(2 / 9 / x.sum())
    assert abs(share - 2 / 3) < 6 * sd, (share, sd)


@pytest.mark.parametrize("order", ["huge_first", "huge_last"])
def test_multinomial_split_cells_beside_a_huge_weight(order):
    """Cells of weight 1 beside one of 1e16, with n = 1e18: each gets about 100 (the
    running remainder rounded to 0 after the huge cell, and 1 - ratio above 1/2 was
    11% off: 0 or 111 per cell before)."""
    w = [1e16, 1, 1, 1, 1] if order == "huge_first" else [1, 1, 1, 1, 1e16]
    x = R.multinomial_split(10**18, w, size=4000, random_state=seed("splithuge", order))
    small = x[:, 1:] if order == "huge_first" else x[:, :4]
    mean = 1e18 / (1e16 + 4)
    assert_moments(small.ravel(), mean, mean, alpha=ALPHA)


@pytest.mark.parametrize("n,mean", [(2**31 + 7, 100.0), (10**16, 100.0), (10**18, 100.0),
                                    (2**63 - 1, 1e4), (10**18, 3e17)])
def test_binomial_huge_n_moments(n, mean):
    """numpy's BTPE is biased for huge n (mean 49 standard errors off at n = 1e18, p = 1e-16
    in 4e5 draws): above 2^30 the order-statistic recursion halves n first."""
    p = mean / n
    x = _kernel("binomial", n, p, size=4 * N, random_state=seed("binhuge", n, mean))
    assert_moments(x.astype(np.float64) - round(n * p), n * p - round(n * p), n * p * (1 - p),
                   alpha=ALPHA)


def test_crt_large_n_above_the_complement_line_takes_the_cheaper_method():
    """For r > 16 n + 1024 the complement costs ~n^2 / (2 r) points: from n = 2^20 on the
    blocks take over where they cost less (n = 1e11, r = 1.7e12 ran for minutes)."""
    for n, r, kernel in [(10**11, 1.7e12, "crt_blocks"), (10**9, 1e15, "crt_complement"),
                         (10**6, 1e9, "crt_complement")]:
        got = R.crt(n, r, size=3, random_state=5)
        np.testing.assert_array_equal(got, _kernel(kernel, n, r, size=3, random_state=5))
