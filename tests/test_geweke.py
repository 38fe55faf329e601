"""Geweke "getting it right" tests of the upward-downward Gibbs sampler.

Marginal-conditional draws (prior, then data) and a successive-conditional
chain (Gibbs sweep, then fresh data) must agree on the means of a set of
statistics.  Hyper-parameters are chosen so that every statistic has finite
variance (e0 > 2, b0 > 2); pruning is off and p/c are updated every sweep.
"""
import numpy as np
import pytest

from pygbn.inference import geweke
from pygbn.model import Hyperparameters

HYPER = Hyperparameters(a0=3.0, b0=3.0, e0=3.0, f0=3.0)
# |z| above this for any statistic fails the test. geweke.compare's z is asymptotically N(0, 1)
# for a right sampler: P(|z| > 4.5) = 6.8e-6, below 1.2e-4 per configuration of at most 17
# statistics. A 5,000-iteration chain is short against the T = 3 networks' slowest excursions
# (tau about 170), which makes z heavier-tailed (its sd over seeds 1.1-1.3): seed sweeps of nine
# configurations (docs/engine.md, "Geweke's test: the standard error"; T = 1-3, collapsed, term
# lists, blocked, partial, PRG, Bernoulli) found max |z| above 4.5 in 1 of 456 seeds, 4.88
# (10 of 456 with the old 50 batch means, which assumed a t with 49 df).
Z_MAX = 4.5


def _run(method, widths, link, n, seed, hook=None):
    kw = dict(n_features=4, n_samples=3, widths=widths, eta=0.5, hyper=HYPER, link=link)
    mc = geweke.marginal_conditional(n, random_state=1000 + seed, **kw)
    sc = geweke.successive_conditional(n, random_state=2000 + seed, method=method,
                                       sampler_hook=hook, **kw)
    return geweke.compare(mc, sc)


CONFIGS = [
    ("collapsed", [3], "poisson"),
    ("blocked", [3], "poisson"),
    ("collapsed", [3, 2], "poisson"),
    ("blocked", [3, 2], "poisson"),
    # T = 3: the only depth with a c_j^(t), t >= 3, below the top and a Phi^(t) between two hidden layers
    ("collapsed", [3, 2, 2], "poisson"),
    ("blocked", [3, 2, 2], "poisson"),
    # the partially collapsed layer one: exact draws of each label, at T = 1 and below a hidden layer
    ("partial", [3], "poisson"),
    ("partial", [3, 2], "poisson"),
    ("partial", [3, 2, 2], "poisson"),
]
LINK_CONFIGS = [
    ("blocked", [3], "bernoulli"),
    ("blocked", [3, 2], "bernoulli"),
    ("blocked", [3], "prg"),
    ("blocked", [3, 2], "prg"),
]


def _ids(cfgs):
    return [f"{m}-T{len(w)}-{l}" for m, w, l in cfgs]


@pytest.mark.parametrize("method,widths,link", CONFIGS, ids=_ids(CONFIGS))
def test_geweke_pgbn(method, widths, link):
    # T = 3 chains run 20,000 iterations (autocorrelation time about 170): at 5,000 the blocked
    # chain gave max |z| > 4.5 in 2 of seeds 0-39 with the CRT's Bernoulli sum (4.51 at this
    # test's seed 3, 5.33 at seed 9) and in 1 of 40 with the kernels before it (4.72 at seed 18);
    # at 20,000 seeds 0-19 gave max |z| 1.1-3.7 (seed 3: 2.35, seed 9: 2.35).
    n = 20000 if len(widths) == 3 else 5000
    z = _run(method, widths, link, n, seed=len(widths))
    bad = {k: round(v, 2) for k, v in z.items() if abs(v) > Z_MAX}
    assert not bad, f"Geweke statistics disagree: {bad} (all: {z})"


@pytest.mark.parametrize("method,widths,link", LINK_CONFIGS, ids=_ids(LINK_CONFIGS))
def test_geweke_links(method, widths, link):
    z = _run(method, widths, link, 5000, seed=10 + len(widths))
    bad = {k: round(v, 2) for k, v in z.items() if abs(v) > Z_MAX}
    assert not bad, f"Geweke statistics disagree: {bad} (all: {z})"


@pytest.mark.slow
@pytest.mark.parametrize("method,widths,link", CONFIGS + LINK_CONFIGS, ids=_ids(CONFIGS + LINK_CONFIGS))
def test_geweke_long(method, widths, link):
    # T = 3 chains run 80,000 iterations: their autocorrelation time is about 170 iterations, and
    # at 40,000 the blocked T = 3 chain of this seed (103) made a long excursion that gave
    # log1p_x_00 z = 4.8 (5.63 under the old batch means, with the kernels of e166404 too), while
    # seeds 1-8 at 40,000 gave max |z| <= 2.6 and seed 103 at 80,000 gave log1p_x_00 0.3, max 1.6.
    n = 80000 if len(widths) == 3 else 40000
    z = _run(method, widths, link, n, seed=100 + len(widths))
    bad = {k: round(v, 2) for k, v in z.items() if abs(v) > Z_MAX}
    assert not bad, f"Geweke statistics disagree: {bad} (all: {z})"


@pytest.mark.parametrize("widths", [[3], [3, 2, 2]], ids=["T1", "T3"])
@pytest.mark.parametrize("dense_from", [2, 4], ids=["rows-and-lists", "lists-only"])
def test_geweke_collapsed_term_lists(widths, dense_from, monkeypatch):
    """The collapsed sweep's two word buckets (a term's sorted list, its dense
    row; the tests above, K = 3, use rows only) and the switch between them."""
    from pygbn.inference.collapsed_state import CollapsedState

    monkeypatch.setattr(CollapsedState, "DENSE_FROM", dense_from)
    # 5,000 iterations again (20,000 for a while: with the old 50 batch means the T = 3 chain's
    # rare long excursions gave max |z| > 4.5 in 2-3 of 41 seeds, 5.28 at this test's seed 25).
    # With compare's overlapping batch means, seeds 100-139 and the tests' own, 5,000 iterations:
    # rows-and-lists T = 3 (the same chain as the default, K = 3) 0 of 41, worst 3.82, seed 25
    # 3.28; lists-only T = 3 0 of 41, worst 4.25; T = 1 0 of 41 (worst 3.10 lists-only).
    z = _run("collapsed", widths, "poisson", 5000, seed=20 + dense_from + len(widths))
    bad = {k: round(v, 2) for k, v in z.items() if abs(v) > Z_MAX}
    assert not bad, f"Geweke statistics disagree: {bad} (all: {z})"


def test_autocorrelation_time_of_ar1():
    """Geyer's estimate of tau, and overlapping batch means over the variance,
    against an AR(1)'s (1 + rho) / (1 - rho)."""
    from scipy.signal import lfilter

    rng = np.random.default_rng(0)
    e = rng.standard_normal(100000)
    for rho in (0.0, 0.5, 0.9):
        x = lfilter([1.0], [1.0, -rho], e)
        tau = geweke.autocorrelation_time(x)
        assert abs(tau / ((1 + rho) / (1 - rho)) - 1) < 0.15, (rho, tau)
        tau = geweke.overlapping_batch_means(x, 400) / x.var()
        assert abs(tau / ((1 + rho) / (1 - rho)) - 1) < 0.15, (rho, tau)
    assert geweke.autocorrelation_time(np.ones(10)) == 1.0
    with pytest.raises(ValueError, match="se"):
        geweke.compare({"x": e}, {"x": e}, se="bogus")


def test_compare_z_is_standard_normal_for_a_right_chain():
    """compare's z for draws and a chain of the same law (iid normals against a stationary
    AR(1), rho = 0.9, tau = 19, 5,000 of each) over 2,000 replicates: mean 0 and sd near 1.
    Its standard error is estimated (tau by overlapping batch means), which makes the sd a
    little above 1: 1.05-1.09 over seeds 100-109, each estimate within 0.016.  The bounds
    0.98-1.18 are more than 5 of those from it; a standard error 20% too large (z / 1.2:
    every Geweke test above a fifth less powerful) passed every other test of this file."""
    from scipy.signal import lfilter

    rng = np.random.default_rng(104)
    rho, n = 0.9, 5000
    z = []
    for _ in range(2000):
        b = lfilter([1.0], [1.0, -rho], rng.standard_normal(n + 500))[500:]
        a = rng.standard_normal(n) / np.sqrt(1 - rho ** 2)
        z.append(geweke.compare({"x": a}, {"x": b})["x"])
    z = np.array(z)
    assert abs(z.mean()) < 0.12 and 0.98 < z.std() < 1.18, (z.mean(), z.std())


def _break_theta_rate(sampler):
    """Plant a wrong conditional: theta's gamma rate with -2 ln(1 - p) for -ln(1 - p)."""
    import types

    def wrong_sample_theta(self, t, blocks=None):
        layer = self.network.layers[t - 1]
        rate = np.ascontiguousarray(layer.c + 2.0 * self.log_rates()[t - 1])  # should be 1 x L^(t)
        out = np.empty((self.n_docs, layer.width))
        self._draw_theta(t, rate, self.bounds, self.doc_streams.addresses, out, np.empty(0))
        layer.theta = out

    sampler.sample_theta = types.MethodType(wrong_sample_theta, sampler)


def _break_p(sampler):
    """Plant a wrong conditional: p_j^(2) ~ Beta(a0 + m, b0), forgetting theta^(2)."""
    import types

    original = sampler.sample_p_c

    def wrong_sample_p_c(self, blocks=None):
        original(blocks)
        h = self.hyper
        g1 = self.rng.standard_gamma(h.a0 + self.m[0].sum(axis=1))
        g2 = self.rng.standard_gamma(h.b0, size=self.n_docs)
        self.network.layers[0].c = np.clip(g2 / g1, 1e-300, 1e300)

    sampler.sample_p_c = types.MethodType(wrong_sample_p_c, sampler)


@pytest.mark.parametrize("hook,method", [(_break_theta_rate, "collapsed"), (_break_p, "blocked")],
                         ids=["theta-rate", "p2-beta"])
def test_geweke_detects_a_broken_conditional(hook, method):
    z = _run(method, [3, 2], "poisson", 5000, seed=7, hook=hook)
    # the same criterion as the tests above must fire
    assert max(abs(v) for v in z.values()) > Z_MAX, z


def _top_of_one(monkeypatch, work):
    """The partial sampler's top sets of one topic per term: with K = 3 the other
    two topics' urn mass is drawn by the rejection piece (h times the other tokens,
    thinned), which the default top sets (all K topics) never use; the rejection
    bucket for every document (``work`` 0) or as the switch chooses (``work`` 0.5: the
    documents with n_t n_cells / n_doc >= p / 2, the others by the list, both in
    about 10-35% of the sweeps at T = 1-3; the default threshold gives these tiny
    documents the list), with the top sets whenever a document takes rejection."""
    from pygbn.inference.partial import PartialState

    monkeypatch.setattr(PartialState, "TOP_SIZE", 1)
    monkeypatch.setattr(PartialState, "REJECTION_WORK", work)


@pytest.mark.parametrize("work", [0.0, 0.5], ids=["rejection", "switch"])
@pytest.mark.parametrize("widths", [[3], [3, 2]], ids=["T1", "T2"])
def test_geweke_partial_rejection_piece(widths, work, monkeypatch):
    _top_of_one(monkeypatch, work)
    z = _run("partial", widths, "poisson", 5000, seed=20 + len(widths))
    bad = {k: round(v, 2) for k, v in z.items() if abs(v) > Z_MAX}
    assert not bad, f"Geweke statistics disagree: {bad} (all: {z})"


@pytest.mark.slow
@pytest.mark.parametrize("work", [0.0, 0.5], ids=["rejection", "switch"])
@pytest.mark.parametrize("widths", [[3], [3, 2], [3, 2, 2]], ids=["T1", "T2", "T3"])
def test_geweke_long_partial_rejection_piece(widths, work, monkeypatch):
    _top_of_one(monkeypatch, work)
    n = 80000 if len(widths) == 3 else 40000
    z = _run("partial", widths, "poisson", n, seed=120 + len(widths))
    bad = {k: round(v, 2) for k, v in z.items() if abs(v) > Z_MAX}
    assert not bad, f"Geweke statistics disagree: {bad} (all: {z})"


@pytest.mark.parametrize("widths,n", [([3], 10000)], ids=["T1"])
def test_geweke_detects_a_broken_partial_urn(widths, n, monkeypatch):
    """The partial sampler's urn without Phi^(1) (labels drawn as if every
    term were equally likely under every factor) must fail the same test.
    (The tiny networks hold about one token per document, so the test is
    weak on layer one's labels: the -ji exclusion and the Metropolis-Hastings
    correction are checked against the exact conditional in test_partial.py.)"""
    from pygbn.inference.partial import PartialState

    monkeypatch.setattr(PartialState, "IGNORE_PHI", True)
    z = _run("partial", widths, "poisson", n, seed=7)
    assert max(abs(v) for v in z.values()) > Z_MAX, z


def test_compare_refuses_what_it_cannot_judge():
    """NaN draws gave z = nan (|nan| > 4.5 is False: a pass) or 0, and a chain shorter than
    n_batches a z of 0; constant sets of draws apart now give an infinite z."""
    rng = np.random.default_rng(0)
    a = {"s": rng.normal(size=200)}
    bad = rng.normal(size=200)
    bad[7] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        geweke.compare(a, {"s": bad})
    with pytest.raises(ValueError, match="at least 50 draws"):
        geweke.compare(a, {"s": rng.normal(size=30) + 5}, se="batch")
    with pytest.raises(ValueError, match="n_batches"):
        geweke.compare(a, {"s": rng.normal(size=200)}, n_batches=0, se="batch")
    z = geweke.compare({"s": np.zeros(10)}, {"s": np.ones(10)})
    assert z["s"] == -np.inf
    assert geweke.compare({"s": np.ones(10)}, {"s": np.ones(10)})["s"] == 0.0
    with pytest.raises(ValueError, match="thin"):
        geweke.successive_conditional(5, 0, thin=0)
    with pytest.raises(ValueError, match="n_draws"):
        geweke.marginal_conditional(0, 0)


def test_compare_refuses_statistics_of_different_chain_lengths_and_no_statistics():
    """compare took the chain length n from the first statistic: a second one of another
    length got var(mean) divided by the wrong n (a silently wrong z); no statistics at all
    raised StopIteration."""
    rng = np.random.default_rng(0)
    a = {"s": rng.normal(size=200), "t": rng.normal(size=200)}
    with pytest.raises(ValueError, match="same number of draws"):
        geweke.compare(a, {"s": rng.normal(size=50), "t": rng.normal(size=400)})
    with pytest.raises(ValueError, match="no statistics"):
        geweke.compare({}, {"s": rng.normal(size=50)})
    assert set(geweke.compare(a, {"s": rng.normal(size=50), "t": rng.normal(size=50), "u": [1.0]})) == {"s", "t"}


@pytest.mark.parametrize("x", [[1.0, np.nan, 2.0, 3.0], [1.0, np.inf, 0.0], [], np.ones((3, 3))])
def test_autocorrelation_time_refuses_what_is_not_a_finite_series(x):
    """A NaN series gave tau = 1 (as a constant one), an empty one an IndexError after a
    RuntimeWarning, a 2-d one 'truth value of an array is ambiguous'."""
    with pytest.raises(ValueError, match="x must be a 1-d series of at least one finite value"):
        geweke.autocorrelation_time(np.asarray(x))


@pytest.mark.parametrize("bad,match", [
    (dict(widths=[]), "widths must be a sequence"), (dict(widths=[2, 0]), "widths must be a positive int"),
    (dict(n_features=2.5), "n_features"), (dict(n_samples=0), "n_samples"), (dict(eta=-1.0), "eta")])
def test_sample_prior_checks_its_sizes(bad, match):
    """widths=[] raised IndexError, widths=[0] ZeroDivisionError, n_features=2.5 was truncated
    to 2, n_samples=0 gave NaN statistics and eta=-1 numpy's 'alpha < 0'."""
    kw = dict(n_features=4, n_samples=3, widths=[2], eta=0.5, hyper=HYPER)
    kw.update(bad)
    with pytest.raises(ValueError, match=match):
        geweke.marginal_conditional(2, 0, **kw)
