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
    GofResult, assert_gof_discrete, assert_moments, gof_binned, gof_discrete, moment_test,
    pooled_chisquare,
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
