"""The public checking helpers of :mod:`pygbn.testing`: validity and power.

A check that never fails proves nothing, so besides "correct samplers pass"
these tests show that the suite's settings (10^6 draws, level 1e-5) reject
a deliberately wrong truncated-Poisson PMF (``lam^k / k`` instead of
``lam^k / k!``), a sampler whose PMF is off by 1% near the mode, a shifted
mean, and mass moved off a concentrated value.
"""
import numpy as np
import pytest
from scipy import special
from scipy import stats as st

import pygbn.random as R
from pygbn import stats as S
from pygbn.testing import (
    GofResult, MomentResult, _check, assert_gof_binned, assert_gof_discrete, assert_moments, gof_binned,
    gof_discrete, moment_test, pooled_chisquare,
)

ALPHA = 1e-5


def wrong_truncated_poisson_logpmf(k, lam):
    """The known bug, as found in the wild: ``lam^k / (k (e^lam - 1))`` (k where k! belongs)."""
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(k >= 1, k * np.log(lam) - np.log(np.maximum(k, 1)) - np.log(np.expm1(lam)), -np.inf)


@pytest.mark.parametrize("lam", [0.8, 3.0])
def test_catches_truncated_poisson_divided_by_k(lam):
    x = R.truncated_poisson(lam, size=10**6, random_state=1)
    assert gof_discrete(x, lambda k: S.truncated_poisson_logpmf(k, lam)).pvalue > ALPHA
    bad = gof_discrete(x, lambda k: wrong_truncated_poisson_logpmf(k, lam))
    assert bad.pvalue < 1e-100
    # the error is visible at P(3): 3! = 6 against 3
    p3_true = np.exp(S.truncated_poisson_logpmf(3, lam))
    p3_bad = np.exp(wrong_truncated_poisson_logpmf(3, lam))
    assert p3_bad == pytest.approx(2 * p3_true)
    se = np.sqrt(p3_true / x.size)
    assert abs(np.mean(x == 3) - p3_true) < 5 * se
    assert abs(np.mean(x == 3) - p3_bad) > 50 * se


def _draws_from_pmf(p, size, seed):
    """Exact draws from a PMF on 0..len(p)-1 (numpy's categorical sampler)."""
    return np.random.default_rng(seed).choice(len(p), size=size, p=p / p.sum())


@pytest.mark.parametrize("seed", range(3))
def test_detects_one_percent_error_near_the_mode(seed):
    # Bessel_{-1}(6): move 1% of the mode's probability to its neighbour
    alpha = 6.0
    k = np.arange(0, 60)
    p = np.exp(S.truncated_bessel_logpmf(k, alpha))
    mode = int(np.argmax(p))
    q = p.copy()
    q[mode] *= 0.99
    q[mode + 1] += 0.01 * p[mode]
    x = _draws_from_pmf(q, 10**6, seed)
    assert gof_discrete(x, lambda v: S.truncated_bessel_logpmf(v, alpha)).pvalue < ALPHA
    y = _draws_from_pmf(p, 10**6, seed)
    assert gof_discrete(y, lambda v: S.truncated_bessel_logpmf(v, alpha)).pvalue > ALPHA


def test_detects_wrong_parameter():
    x = R.truncated_bessel(40.0, size=10**6, random_state=2)
    assert gof_discrete(x, lambda k: S.truncated_bessel_logpmf(k, 40.4)).pvalue < ALPHA
    assert gof_discrete(x, lambda k: S.truncated_bessel_logpmf(k, 40.0)).pvalue > ALPHA


def test_binomial_fallback_when_mass_concentrates():
    lam = 1e-3
    x = R.truncated_poisson(lam, size=10**6, random_state=3)
    res = gof_discrete(x, lambda k: S.truncated_poisson_logpmf(k, lam))
    assert res.method == "binomial" and res.pvalue > ALPHA
    # move all the off-mode mass to the mode: 500 missing 2s are detected
    y = np.ones_like(x)
    assert gof_discrete(y, lambda k: S.truncated_poisson_logpmf(k, lam)).pvalue < 1e-100
    # twice the off-mode mass is detected too
    z = x.copy()
    z[np.flatnonzero(z == 1)[:500]] = 2
    assert gof_discrete(z, lambda k: S.truncated_poisson_logpmf(k, lam)).pvalue < ALPHA


def test_value_of_probability_zero_fails():
    res = gof_discrete(np.array([1, 2, 3, 0]), lambda k: S.truncated_poisson_logpmf(k, 1.0))
    assert res.pvalue == 0.0 and "probability 0" in res.detail


def test_pooling():
    res = pooled_chisquare([10, 0, 0, 1, 9], [9.0, 0.5, 0.5, 1.0, 9.0], min_expected=5)
    assert isinstance(res, GofResult) and res.n_bins == 2 and res.dof == 1
    single = pooled_chisquare([3, 1], [2.0, 2.0], min_expected=5)
    assert single.pvalue == 1.0 and single.n_bins == 1
    with pytest.raises(ValueError):
        pooled_chisquare([1, 2], [1.0])


def test_outside_support_bin():
    lam = 4.0
    x = R.truncated_poisson(lam, size=10**5, random_state=4)
    res = gof_discrete(x, lambda k: S.truncated_poisson_logpmf(k, lam), support=(1, 6))
    assert res.pvalue > ALPHA and res.n_bins >= 6


def test_gof_binned_continuous_and_power():
    x = np.random.default_rng(5).gamma(3.0, size=10**6)
    edges = st.gamma.ppf(np.linspace(0.02, 0.98, 25), 3.0)
    assert gof_binned(x, edges, lambda e: special.gammainc(3.0, e)).pvalue > ALPHA
    assert gof_binned(x * 1.01, edges, lambda e: special.gammainc(3.0, e)).pvalue < ALPHA
    with pytest.raises(ValueError):
        gof_binned(x, [1.0, 0.5], lambda e: e)


def test_moment_test():
    x = np.random.default_rng(6).poisson(1e6, size=10**5)
    assert moment_test(x, 1e6, 1e6).pvalue > ALPHA
    assert moment_test(x, 1e6 + 30, 1e6).pvalue < ALPHA          # mean off by 1e-5 relative
    assert moment_test(x, 1e6, 1.05e6).pvalue < ALPHA            # variance off by 5%
    assert_moments(x, 1e6, 1e6, alpha=ALPHA)
    with pytest.raises(AssertionError, match="moment test"):
        assert_moments(x, 2e6, 1e6)
    with pytest.raises(AssertionError, match="goodness of fit"):
        assert_gof_discrete(np.ones(100, dtype=int) * 5, lambda k: S.truncated_poisson_logpmf(k, 1.0))


# --- draws of probability 0, invalid inputs, NaN (review fixes) ----------------------

def _bernoulli_logpmf(p):
    return lambda k: st.bernoulli.logpmf(k, p)


@pytest.mark.parametrize("extra", [[2], [-1], [2] * 100, [-1, 2]])
def test_impossible_draws_fail_when_one_value_holds_the_mass(extra):
    # P(0) = 0.995 > concentration: the binomial branch; 2 and -1 have probability 0
    x = np.r_[np.zeros(995, dtype=np.int64), np.ones(4, dtype=np.int64), extra]
    res = gof_discrete(x, _bernoulli_logpmf(0.005))
    assert res.pvalue == 0.0 and "probability 0" in res.detail
    with pytest.raises(AssertionError, match="goodness of fit"):
        assert_gof_discrete(x, _bernoulli_logpmf(0.005))
    # and with an explicit support that leaves them outside, where the law has no mass
    res = gof_discrete(x, _bernoulli_logpmf(0.005), support=(0, 1))
    assert res.pvalue == 0.0 and "probability 0" in res.detail
    # the same draws without the impossible ones pass
    assert gof_discrete(x[:999], _bernoulli_logpmf(0.005)).pvalue > 0.5


def test_impossible_draws_fail_in_the_chi_square_branch_too():
    x = np.r_[np.random.default_rng(0).binomial(1, 0.3, 1000), [2]]
    assert gof_discrete(x, _bernoulli_logpmf(0.3)).pvalue == 0.0
    assert gof_discrete(x, _bernoulli_logpmf(0.3), support=(0, 1)).pvalue == 0.0


def test_nan_p_values_never_pass():
    assert np.isnan(MomentResult(np.nan, 0.0, np.nan, 0.3).pvalue)
    assert np.isnan(MomentResult(0.0, np.nan, 0.3, np.nan).pvalue)
    for res in (MomentResult(np.nan, 0.0, np.nan, 0.3), GofResult(np.nan, 0.0, 1, "chi2", 2)):
        with pytest.raises(AssertionError, match="NaN"):
            _check(res, 1e-6, "check")


def test_assert_checks_reject_a_bad_alpha():
    """alpha=nan failed every check with 'p-value 1 < nan', alpha=2 failed every check and
    alpha='a' raised a TypeError from the comparison: each is now a ValueError naming alpha."""
    x = np.random.default_rng(22).poisson(3.0, 2000)
    lp = lambda k: st.poisson.logpmf(k, 3.0)     # noqa: E731
    for bad in (np.nan, np.inf, -0.1, 1.5, 2, "a", None, [0.1]):
        with pytest.raises(ValueError, match="alpha"):
            assert_gof_discrete(x, lp, alpha=bad)
        with pytest.raises(ValueError, match="alpha"):
            assert_gof_binned(x, [2.5], lambda e: st.poisson.cdf(e, 3.0), alpha=bad)
        with pytest.raises(ValueError, match="alpha"):
            assert_moments(x, 3.0, 3.0, alpha=bad)
    for ok in (0, 0.0, np.float32(1e-3), 1e-6):
        assert_gof_discrete(x, lp, alpha=ok)
        assert_gof_binned(x, [2.5], lambda e: st.poisson.cdf(e, 3.0), alpha=ok)
        assert_moments(x, 3.0, 3.0, alpha=ok)


def test_moment_test_rejects_bad_input():
    x = np.random.default_rng(21).normal(size=1000)
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="sample"):
            assert_moments(np.r_[x, bad], 0.0, 1.0)
        with pytest.raises(ValueError, match="mean"):
            assert_moments(x, bad, 1.0)
        with pytest.raises(ValueError, match="var"):
            assert_moments(x, 0.0, bad)
    with pytest.raises(ValueError, match="var must be >= 0"):
        moment_test(x, 0.0, -1.0)
    assert moment_test(x, 0.0, 1.0).pvalue > 0.01


def test_gof_discrete_rejects_bad_logpmf():
    x = np.random.default_rng(8).poisson(3.0, 1000)
    with pytest.raises(ValueError, match="logpmf"):
        gof_discrete(x, lambda k: np.full(k.shape, np.nan))
    with pytest.raises(ValueError, match="logpmf"):
        gof_discrete(x, lambda k: np.where(k == 2, np.nan, st.poisson.logpmf(k, 3.0)))
    with pytest.raises(ValueError, match="logpmf"):
        gof_discrete(x, lambda k: np.where(k == 2, np.inf, st.poisson.logpmf(k, 3.0)))
    with pytest.raises(ValueError, match="logpmf"):
        gof_discrete(x, lambda k: st.poisson.logpmf(k, 3.0)[:-1])


def test_gof_discrete_rejects_bad_sample_and_support():
    lp = lambda k: st.poisson.logpmf(k, 3.0)     # noqa: E731
    x = np.random.default_rng(9).poisson(3.0, 1000)
    with pytest.raises(ValueError, match="sample"):
        gof_discrete(np.r_[x, np.nan], lp)
    with pytest.raises(ValueError, match="sample"):
        gof_discrete(np.r_[x, np.inf], lp)
    with pytest.raises(ValueError, match="sample must hold integers"):
        gof_discrete(np.r_[x, 2.5], lp)
    with pytest.raises(ValueError, match="sample is empty"):
        gof_discrete([], lp)
    # integer-valued floats, bools and unsigned ints are taken as they are
    assert gof_discrete(x.astype(np.float64), lp) == gof_discrete(x, lp)
    assert gof_discrete(x.astype(np.uint16), lp) == gof_discrete(x, lp)
    assert gof_discrete(x > 2, lambda k: np.log(np.where(k == 1, st.poisson.sf(2, 3.0),
                                                         st.poisson.cdf(2, 3.0)))).pvalue > 0.01
    for support in [(5, 0), (0.5, 6), (0, np.nan), 5, (1, 2, 3)]:
        with pytest.raises(ValueError, match="support"):
            gof_discrete(x, lp, support=support)


def test_gof_binned_rejects_bad_input():
    x = np.random.default_rng(10).normal(size=2000)
    e = np.linspace(-2, 2, 9)
    assert gof_binned(x, e, st.norm.cdf).pvalue > 0.01
    with pytest.raises(ValueError, match="cdf"):
        gof_binned(x, e, lambda z: np.full(z.shape, np.nan))
    with pytest.raises(ValueError, match="cdf"):
        gof_binned(x, e, lambda z: np.where(z == 0, np.nan, st.norm.cdf(z)))
    with pytest.raises(ValueError, match="cdf must be non-decreasing"):
        gof_binned(x, e, st.norm.sf)
    with pytest.raises(ValueError, match="cdf"):
        gof_binned(x, e, lambda z: 2 * st.norm.cdf(z))
    with pytest.raises(ValueError, match="edges"):
        gof_binned(x, [-1.0, np.nan, 1.0], st.norm.cdf)
    with pytest.raises(ValueError, match="edges"):
        gof_binned(x, [-1.0, np.inf], st.norm.cdf)
    with pytest.raises(ValueError, match="edges"):
        gof_binned(x, [], st.norm.cdf)
    with pytest.raises(ValueError, match="sample is empty"):
        gof_binned([], e, st.norm.cdf)
    with pytest.raises(ValueError, match="sample"):
        gof_binned(np.r_[x, np.nan], e, st.norm.cdf)
    # infinities fall in the outer bins
    y = np.r_[np.full(50, -np.inf), np.full(50, np.inf)]
    assert gof_binned(y, [0.0], lambda z: np.full(z.shape, 0.5)).pvalue == 1.0
    assert gof_binned(y, [0.0], lambda z: np.full(z.shape, 0.9)).pvalue < 1e-10


def test_pooled_chisquare_rejects_bad_input():
    with pytest.raises(ValueError, match="expected"):
        pooled_chisquare([10, 10], [np.nan, 10.0])
    with pytest.raises(ValueError, match="observed"):
        pooled_chisquare([np.nan, 10], [10.0, 10.0])
    with pytest.raises(ValueError, match="expected must be >= 0"):
        pooled_chisquare([10, 10, 10], [12.0, -2.0, 10.0])
    with pytest.raises(ValueError, match="observed must be >= 0"):
        pooled_chisquare([10, -1], [10.0, 10.0])
    with pytest.raises(ValueError, match="labels"):
        pooled_chisquare([10, 10, 10], [10.0, 10.0, 10.0], labels=["a"])
    with pytest.raises(ValueError, match="min_expected"):
        pooled_chisquare([10, 10], [10.0, 10.0], min_expected=0)
    res = pooled_chisquare([10, 1], [11.0, 0.0], labels=["a", "b"])
    assert res.pvalue == 0.0 and "'b'" in res.detail


def test_default_support_range_test_is_valid():
    """With the default support the range is the sample's own, so no draw lies outside
    it; what is tested is the law's mass outside it, ``T <= Beta(2, n - 1)`` under the
    law.  The exact binomial test of 0 draws against ``T`` used before rejected exact
    samples about twice as often as its level (0.096 at 0.05 here)."""
    m = 2000
    lp = lambda k: np.where((k >= 0) & (k < m), -np.log(m), -np.inf)     # noqa: E731
    xs = np.random.default_rng(12).integers(0, m, size=(1000, 20))
    p = np.array([gof_discrete(x, lp).pvalue for x in xs])
    assert np.mean(p < 0.05) <= 0.065 and np.mean(p < 0.01) <= 0.02
    # and it still catches a sampler that misses a tail (8% of the mass above 5)
    x = np.random.default_rng(13).poisson(3.0, 10**4)
    res = gof_discrete(x[x <= 5], lambda k: st.poisson.logpmf(k, 3.0))
    assert res.method == "chi2+range" and res.pvalue < 1e-100


def test_real_inputs_read_as_the_samplers_read_them():
    # strings, bytes and dates are not numbers (numpy would parse '1.5' and turn a date
    # into days), and an int past the float range is a ValueError naming the argument,
    # not an OverflowError
    x = np.random.default_rng(3).normal(size=100)
    cdf = lambda e: st.norm.cdf(e)     # noqa: E731
    for bad in (["1.5", "2.5", "3.5"], [b"1", b"2"], np.array(["2020", "2021"], dtype="datetime64[D]"),
                [10**400, 1.0], [None, 1.0]):
        with pytest.raises(ValueError, match="sample must be real numbers"):
            moment_test(bad, 0.0, 1.0)
        with pytest.raises(ValueError, match="sample must be real numbers"):
            gof_binned(bad, [0.0], cdf)
    with pytest.raises(ValueError, match="edges must be real numbers"):
        gof_binned(x, ["0.5"], cdf)
    with pytest.raises(ValueError, match="observed must be real numbers"):
        pooled_chisquare(["4", "6"], [5.0, 5.0])
    with pytest.raises(ValueError, match="mean must be a real number"):
        moment_test(x, 10**400, 1.0)
    with pytest.raises(ValueError, match="support.1. must be a real number"):
        gof_discrete([0, 1, 2], lambda k: st.poisson.logpmf(k, 1.0), support=(0, 10**400))
    # Python ints past int64 are numbers
    assert 0 < moment_test([2**70, 2**70 + 2**20], 2.0**70, 2.0**39).pvalue <= 1


# --- calibration: checks that pass too easily lose their power silently (review, session 31) ---

def test_pooled_chisquare_is_pearsons_test():
    """Where no bin needs pooling the statistic, degrees of freedom and p-value are
    scipy's ``chisquare``'s.  The pass/fail tests above still passed with the statistic
    scaled by 0.7 or the p-value read at 2 extra degrees of freedom: checks that reject
    too rarely, which weakens every goodness-of-fit test of the suite."""
    rng = np.random.default_rng(31)
    for k in (2, 5, 12, 40):
        p = rng.dirichlet(np.full(k, 5.0))
        obs = rng.multinomial(2000, p).astype(np.float64)
        exp = 2000 * p
        assert exp.min() >= 5                         # nothing pooled
        res = pooled_chisquare(obs, exp)
        ref = st.chisquare(obs, exp)
        assert res.n_bins == k and res.dof == k - 1
        assert res.statistic == pytest.approx(ref.statistic, rel=1e-12)
        assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-9)
    # pooled bins are tested as one: [0.5, 0.5, 9] against [2, 2, 6] pools the first two
    res = pooled_chisquare([1, 0, 0, 9], [2.5, 2.5, 0.0, 5.0], min_expected=5)
    ref = st.chisquare([1, 9], [5.0, 5.0])
    assert res.dof == 1 and res.pvalue == pytest.approx(ref.pvalue, rel=1e-12)


def test_moment_z_scores_are_standard_normal_for_exact_draws():
    """z_mean and z_var over 1000 samples of 1000 normal draws: mean 0 and sd 1.  The
    power test above (mean off by 30 sd of the sample mean, variance off by 5%) still
    passed with either z halved.  The sd of 1000 z-scores has sd 1 / sqrt(2000) = 0.022:
    the bounds 0.88-1.12 are 5.4 of them (z_var's own normal approximation at n = 1000,
    skewness sqrt(8 / n) = 0.09, moves its sd by far less); the mean's sd is 0.032."""
    rng = np.random.default_rng(32)
    z = np.array([[moment_test(x, 2.0, 9.0).z_mean, moment_test(x, 2.0, 9.0).z_var]
                  for x in rng.normal(2.0, 3.0, size=(1000, 1000))])
    assert np.all(np.abs(z.mean(axis=0)) < 0.16), z.mean(axis=0)
    assert np.all((z.std(axis=0) > 0.88) & (z.std(axis=0) < 1.12)), z.std(axis=0)


def test_draws_outside_an_explicit_support_are_tested():
    """With ``support=(lo, hi)`` the number of draws outside it is tested against the
    law's mass there (exact binomial): a sampler that never leaves 0..5 (Poisson(3) has
    8.4% of its mass above 5) fails, and so does one that leaves it too often, however
    well the draws inside fit.  Dropping that test left every check above passing."""
    lp = lambda k: st.poisson.logpmf(k, 3.0)     # noqa: E731
    x = np.random.default_rng(33).poisson(3.0, 10**4)
    assert gof_discrete(x, lp, support=(0, 5)).pvalue > ALPHA
    res = gof_discrete(x[x <= 5], lp, support=(0, 5))        # the tail cut off
    assert res.method == "chi2+binomial" and res.pvalue < 1e-100
    heavy = np.r_[x, np.full(400, 9)]                          # 4% too many above 5
    assert gof_discrete(heavy, lp, support=(0, 5)).pvalue < ALPHA
