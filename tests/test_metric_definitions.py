"""The numbers a fit is judged by, against independent implementations of their definitions.

Held-out perplexity (the paper, Section 4.1, with Eq. (34) of Zhou & Carin's NB process
paper): from the samples (Phi_s, theta_s) collected every 5th iteration after burn-in,
``q_vj = sum_s (Phi_s theta_s)_vj / sum_s sum_v (Phi_s theta_s)_vj`` (sums over samples,
normalised per document) and ``exp(-sum y ln q / sum y)`` over the held-out tokens ``y``;
documents without held-out tokens add nothing.  The token split: per document,
``floor(0.3 n + 0.5)`` tokens drawn without replacement (hypergeometric marginals).
"""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from pygbn.evaluation import effective_sample_size, rhat, split_tokens
from pygbn.inference import layerwise
from pygbn.inference import testchain
from pygbn.inference.layerwise import Schedule, fit_layerwise
from pygbn.inference.testchain import infer_local


def _corpus():
    rng = np.random.default_rng(0)
    J, V, K = 40, 60, 5
    X = rng.poisson(rng.gamma(0.5, 20, (J, K)) @ rng.dirichlet(np.full(V, 0.1), K))
    X[3] = 0
    X[3, 7] = 1          # one token: observed, nothing held out
    X[5] = 0             # an empty document
    return split_tokens(X, 0.3, random_state=1)


def _reference_perplexity(samples, heldout):
    """The formula, dense and from scratch (the normaliser summed over the terms, not assumed)."""
    H = heldout.toarray().astype(float)
    rate = sum(theta @ phi.T for phi, theta in samples)           # (J, V): sum over samples
    q = rate / rate.sum(axis=1, keepdims=True)
    m = H > 0
    return float(np.exp(-np.sum(H[m] * np.log(q[m])) / H.sum()))


@pytest.fixture
def recorder(monkeypatch):
    """Record every sample added to a held-out predictive, with its depth and iteration."""
    rec, where = [], {"depth": 0, "it": 0}
    add, start, sweep = (testchain.HeldoutPredictive.add, layerwise.SamplerChain.start_heldout,
                         layerwise.SamplerChain.sweep)

    def rec_add(self, phi, theta):
        rec.append((where["depth"], where["it"], np.array(phi), np.array(theta)))
        return add(self, phi, theta)

    def rec_start(self):
        where["depth"] += 1
        where["it"] = 0
        return start(self)

    def rec_sweep(self, update_p_c):
        where["it"] += 1
        return sweep(self, update_p_c)

    monkeypatch.setattr(testchain.HeldoutPredictive, "add", rec_add)
    monkeypatch.setattr(layerwise.SamplerChain, "start_heldout", rec_start)
    monkeypatch.setattr(layerwise.SamplerChain, "sweep", rec_sweep)
    return rec


@pytest.mark.parametrize("method", ["collapsed", "blocked"])
def test_training_perplexity_is_the_formula_of_the_collected_samples(recorder, method):
    Xtr, Xho = _corpus()
    assert (np.diff(Xho.indptr) == 0).sum() == 2          # documents without held-out tokens
    sched = Schedule.for_layers(2, burn_in=(13, 7), n_collect=(17, 3), heldout_every=5, min_width=0)
    res = fit_layerwise(Xtr, sched, n_components=8, method=method, random_state=3, heldout=Xho)
    # depth 1: every 5th of the 17 collected iterations (14..30); depth 2 collected only 3,
    # so its last state is the one sample
    assert [(d, it) for d, it, _, _ in recorder] == [(1, 18), (1, 23), (1, 28), (2, 10)]
    for T in (1, 2):
        samples = [(phi, theta) for d, _, phi, theta in recorder if d == T]
        assert res.perplexity[T - 1] == pytest.approx(_reference_perplexity(samples, Xho), rel=1e-10)


def test_test_chain_perplexity_is_the_formula_of_the_collected_samples(recorder):
    Xtr, Xho = _corpus()
    net = fit_layerwise(Xtr, Schedule.for_layers(1, burn_in=10, n_collect=5), n_components=8,
                        random_state=3).networks[-1]
    recorder.clear()
    out = infer_local(net, Xtr, burn_in=4, n_collect=12, heldout=Xho, random_state=5)
    samples = [(phi, theta) for _, _, phi, theta in recorder]
    assert len(samples) == 2                               # collected iterations 5 and 10
    assert out.perplexity == pytest.approx(_reference_perplexity(samples, Xho), rel=1e-10)


def test_split_tokens_marginals_are_hypergeometric():
    """Each cell's training count is Hypergeom(n, count, k) with k = floor(0.3 n + 0.5),
    and each row is an independent draw: a chi-squared test on the exact pmf (pooled to
    expected counts >= 5) per cell, at a level that fails a correct split about once in 10**6."""
    row = np.array([5, 3, 12, 1, 0, 7])
    n, R = int(row.sum()), 20000
    k = int(np.floor(0.3 * n + 0.5))
    train, held = split_tokens(np.tile(row, (R, 1)), 0.3, random_state=123)
    T = train.toarray()
    np.testing.assert_array_equal(T + held.toarray(), np.tile(row, (R, 1)))
    assert (T.sum(axis=1) == k).all()
    for c in row[row > 0]:
        col = T[:, np.flatnonzero(row == c)[0]]
        expected = R * stats.hypergeom(n, c, k).pmf(np.arange(c + 1))
        observed = np.bincount(col, minlength=c + 1)
        small = expected < 5
        e = np.r_[expected[~small], expected[small].sum()] if small.any() else expected
        o = np.r_[observed[~small], observed[small].sum()] if small.any() else observed
        keep = e > 0
        chi2 = float(np.sum((o[keep] - e[keep]) ** 2 / e[keep]))
        assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-6, (c, observed, expected)


def test_split_tokens_rounds_half_up():
    """0.3 * 15 = 4.5 keeps 5 tokens (the authors' MATLAB round), not Python's round(4.5) = 4."""
    for n, k in ((5, 2), (15, 5), (35, 11), (2, 1), (1, 1)):
        train, _ = split_tokens(sp.csr_matrix(np.array([[n - 1, 1]] if n > 1 else [[1, 0]])), 0.3,
                                random_state=0)
        assert train.sum() == k, n


def test_ess_of_constant_chains():
    """NaN only when every draw is the same; chains each stuck at its own value are perfectly
    autocorrelated: over the M = 2m split halves of N draws ESS is M N / (2 N - 1), about m
    (R-hat inf)."""
    assert np.isnan(effective_sample_size(np.ones((3, 10))))
    apart = np.repeat(np.arange(4.0)[:, None], 100, axis=1)
    assert effective_sample_size(apart) == pytest.approx(400 / 99)
    assert rhat(apart) == np.inf


def test_ess_cap_of_anticorrelated_draws():
    """tau is kept at least 1 / log10(m n) (Stan's cap): ESS <= m n log10(m n)."""
    x = np.tile([1.0, -1.0], (2, 50))
    assert effective_sample_size(x) == pytest.approx(200 * np.log10(200))


def test_ess_is_computed_on_split_chains():
    """As BDA3 11.5, Stan and arviz: ESS over the split halves, so a trend within a chain lowers
    it (on whole chains the trend was read as between-draw spread: ESS about twice as high)."""
    rng = np.random.default_rng(4)
    trend = np.linspace(0, 3, 400)[None, :] + rng.standard_normal((4, 400))
    swapped = np.concatenate([trend[:, 200:], trend[:, :200]], axis=1)   # the same halves
    assert effective_sample_size(swapped) == pytest.approx(effective_sample_size(trend), rel=1e-12)
    iid = rng.standard_normal((4, 400))
    assert effective_sample_size(iid) == pytest.approx(1600, rel=0.15)
    assert effective_sample_size(trend) < 0.2 * 1600
