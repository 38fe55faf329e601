"""Convergence traces: the training log-likelihood recorded during fit (pygbn.inference.trace)."""
import json
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats
from scipy.special import gammaln

import pygbn
from pygbn.datasets import load_demo
from pygbn.inference import GibbsSampler
from pygbn.inference.layerwise import Schedule, fit_layerwise
from pygbn.inference.trace import document_loglik
from pygbn.model.links import get_link


def _data(link, n_docs=300):
    X = load_demo().counts[:n_docs].tocsr().astype(np.float64)
    X = X[:, np.asarray(X.sum(axis=0)).ravel() > 0].tocsr()
    if link == "bernoulli":
        X.data[:] = 1.0
    elif link == "prg":
        X.data = X.data * 0.37 + 0.05
    return get_link(link).check_data(X)


def _dense_loglik(s):
    """The trace's log-likelihood computed from dense arrays, independently of the kernels."""
    net, layer = s.network, s.network.layers[0]
    phi = layer.posterior_mean_phi() if s.method == "collapsed" else layer.phi
    prior = net.r[None, :] if net.depth == 1 else net.layers[1].theta @ net.layers[1].phi.T
    theta = (prior + s.m[0]) / (layer.c[:, None] + 1.0)
    lam = theta @ phi.T
    Y = s.Y.toarray()
    link = net.link.name
    if link == "poisson":
        return stats.poisson.logpmf(Y, lam).sum() / Y.sum()
    if link == "bernoulli":
        return np.where(Y > 0, np.log(-np.expm1(-lam)), -lam).sum() / s.Y.nnz
    # PRG: p(y) = sum_n Pois(n; lam) Gam(y; n, 1/a) for y > 0, exp(-lam) at 0 (a truncated series)
    a = s.aux[:, None] * np.ones_like(Y)
    pos = Y > 0
    y, l, aa = Y[pos], lam[pos], a[pos]
    n = np.arange(1, 400)[:, None]
    logs = (stats.poisson.logpmf(n, l) + stats.gamma.logpdf(y, n, scale=1 / aa))
    top = logs.max(axis=0)
    dens = top + np.log(np.exp(logs - top).sum(axis=0))
    return (dens.sum() - lam[~pos].sum()) / s.Y.nnz


@pytest.mark.parametrize("link,method", [("poisson", "collapsed"), ("poisson", "blocked"),
                                         ("bernoulli", "blocked"), ("prg", "blocked")])
def test_loglik_is_the_link_likelihood_at_the_state(link, method):
    Y = _data(link)
    s = GibbsSampler.for_training(Y, 15, link=link, method=method, random_state=3)
    for depth in (1, 2):
        if depth == 2:
            s.add_layer(0.05)
        for _ in range(4):
            s.sweep()
        ll = document_loglik(s).sum() / s.link.n_tokens(Y)
        assert ll == pytest.approx(_dense_loglik(s), rel=1e-10)


def test_poisson_terms_and_token_counts():
    link = get_link("poisson")
    np.testing.assert_allclose(link.log_density_shifted(np.array([3.0]), np.array([2.0]), np.empty(0)),
                               [3 * np.log(2) - gammaln(4)])
    Y = sp.csr_matrix(np.array([[2.0, 0], [0, 3]]))
    assert link.n_tokens(Y) == 5 and get_link("bernoulli").n_tokens(Y) == 2
    assert get_link("prg").n_tokens(Y) == 2


@pytest.mark.parametrize("method", ["collapsed", "blocked"])
def test_traces_do_not_change_the_chain(method):
    """The traces draw nothing: a fit with and without them is the same, bit for bit, and
    the callback sees each traced value."""
    X = load_demo().counts[:200]
    seen = []
    fits = [pygbn.GBN(n_components=12, n_layers=2, burn_in=8, n_collect=6, method=method, random_state=5,
                      trace_every=every, callback=lambda i: seen.append(i["loglikelihood"])).fit(X)
            for every in (0, 1, 3)]
    for g in fits[1:]:
        for na, nb in zip(fits[0].networks_, g.networks_):
            for la, lb in zip(na.layers, nb.layers):
                np.testing.assert_array_equal(la.phi, lb.phi)
            np.testing.assert_array_equal(na.r, nb.r)
    assert fits[0].loglikelihoods_ == [[], []] and fits[0].trace_iterations_ == [[], []]
    assert fits[1].trace_iterations_ == [list(range(1, 15))] * 2
    assert fits[2].trace_iterations_ == [[3, 6, 9, 12]] * 2
    np.testing.assert_array_equal(fits[2].loglikelihoods_[0], fits[1].loglikelihoods_[0][2::3])
    assert [w for w in fits[1].trace_widths_[1]][0] == [12, 12]
    assert fits[1].trace_widths_[1][-1] == fits[1].widths_
    traced = [v for v in seen if v is not None]
    assert traced == [v for g in fits for d in g.loglikelihoods_ for v in d]
    assert all(-20 < v < 0 for v in traced)


def test_traces_are_saved_and_old_files_load(tmp_path):
    X = load_demo().counts[:150]
    g = pygbn.GBN(n_components=10, n_layers=2, burn_in=6, n_collect=4, random_state=1, trace_every=2).fit(X)
    path = tmp_path / "m.npz"
    g.save(path)
    h = pygbn.load(path)
    assert h.loglikelihoods_ == g.loglikelihoods_ and h.trace_iterations_ == g.trace_iterations_
    assert h.trace_widths_ == g.trace_widths_ and h.trace_every == 2
    # a file written before the traces existed: no trace_every parameter, no trace attributes
    with zipfile.ZipFile(path) as z:
        arrays = {n[:-4]: np.load(z.open(n)) for n in z.namelist()}
    meta = json.loads(arrays["__meta__"].tobytes())
    del meta["params"]["trace_every"]
    for key in ("loglikelihoods_", "trace_iterations_", "trace_widths_"):
        del meta["fitted"][key]
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    old = tmp_path / "old.npz"
    np.savez(old, **arrays)
    o = pygbn.load(old)
    assert o.loglikelihoods_ == [[], []] and o.trace_widths_ == [[], []] and o.trace_every == 25
    np.testing.assert_array_equal(o.network_.layers[0].phi, g.network_.layers[0].phi)
    # inconsistent traces are refused with one message
    meta["fitted"]["loglikelihoods_"] = [[1.0], []]
    meta["fitted"]["trace_iterations_"] = [[], []]
    meta["fitted"]["trace_widths_"] = [[], []]
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(old, **arrays)
    with pytest.raises(ValueError, match="loglikelihoods_"):
        pygbn.load(old)


def test_trace_every_is_validated():
    with pytest.raises(ValueError, match="trace_every"):
        pygbn.GBN(trace_every=-1).fit(load_demo().counts[:20])
    with pytest.raises(ValueError, match="trace_every"):
        Schedule.for_layers(2, trace_every=1.5)
    res = fit_layerwise(_data("poisson", 100), Schedule.for_layers(1, burn_in=3, n_collect=2, trace_every=0),
                        n_components=5, random_state=0)
    assert res.loglikelihoods == [[]]


def test_trace_chains_discard_burn_in_keeps_the_draws_after_each_depths_pruning():
    """discard="burn_in" drops each model's iterations 1..B_T of the depth (B_T from its
    own burn_in), whatever the share; a number drops that share (numpy scalars too)."""
    from pygbn.evaluation import trace_chains, trace_diagnostics

    X = load_demo().counts[:120]
    kw = dict(n_components=6, n_layers=2, n_collect=4, trace_every=1, min_width=1)
    a = pygbn.GBN(burn_in=(8, 4), random_state=0, **kw).fit(X)      # depth 1: 12 iterations, pruned at 8
    b = pygbn.GBN(burn_in=(6, 5), random_state=1, **kw).fit(X)      # depth 1: 10 iterations, pruned at 6
    assert a.trace_iterations_[0] == list(range(1, 13)) and b.trace_iterations_[1] == list(range(1, 10))
    depth1 = trace_chains([a, b], depth=1, discard="burn_in")
    np.testing.assert_array_equal(depth1, [a.loglikelihoods_[0][8:], b.loglikelihoods_[0][6:]])
    depth2 = trace_chains([a, b], depth=2, discard="burn_in")
    np.testing.assert_array_equal(depth2, [a.loglikelihoods_[1][4:], b.loglikelihoods_[1][5:]])
    # the share: the second half of 12 and of 10, cut to the shortest (the last 5 of each)
    half = trace_chains([a, b], depth=1)
    np.testing.assert_array_equal(half, [a.loglikelihoods_[0][7:], b.loglikelihoods_[0][5:]])
    np.testing.assert_array_equal(trace_chains([a, b], depth=1, discard=np.float32(0.5)), half)
    assert trace_diagnostics([a, b], depth=1, discard="burn_in")["n_draws"] == 4
    for bad in ("pruning", 1.0, -0.1, True, None):
        with pytest.raises(ValueError, match="discard must be a number in \\[0, 1\\) or 'burn_in'"):
            trace_chains([a, b], discard=bad)


def _dense_document_loglik(s):
    """Each document's trace value from dense arrays: theta_hat and Phi^(1) formed
    explicitly, ``lambda = theta_hat Phi^T`` at every (j, v), the link's terms at
    the stored cells."""
    net, layer = s.network, s.network.layers[0]
    phi = layer.posterior_mean_phi() if s.method == "collapsed" else np.asarray(layer.phi)
    tiny = np.finfo(np.float64).tiny
    prior = (np.maximum(net.r, tiny)[None, :] if net.depth == 1
             else np.maximum(net.layers[1].theta @ net.layers[1].phi.T, tiny))
    theta = (prior + s.m[0]) / (layer.c[:, None] + 1.0)
    lam = theta @ phi.T
    Y = s.Y.tocoo()
    rates = np.maximum(lam[Y.row, Y.col], tiny)
    aux = s.aux[Y.row] if s.aux.size else s.aux
    terms = s.link.log_density_shifted(Y.data.astype(np.float64), rates, aux)
    return np.bincount(Y.row, weights=terms, minlength=s.n_docs) - theta.sum(axis=1)


_METHOD_LINKS = [("poisson", "collapsed"), ("poisson", "blocked"), ("poisson", "partial"),
                 ("bernoulli", "blocked"), ("prg", "blocked")]


@pytest.mark.parametrize("link,method", _METHOD_LINKS)
def test_document_loglik_is_the_dense_value_on_every_route(link, method, monkeypatch):
    """Per document, to rounding, the dense value: T = 1 (Phi^(1) r once, then the
    non-zero latent counts), T = 2, 3 by Psi = Phi^(1) Phi^(2) and by the documents'
    priors (both routes forced); the same bits with 1 or 2 threads and whatever the
    chunks of documents."""
    from pygbn.inference import trace

    def check(s):
        expected = _dense_document_loglik(s)
        for psi in [None] if s.depth == 1 else [True, False]:
            if psi is not None:
                monkeypatch.setattr(trace, "_psi_cheaper", lambda sampler, psi=psi: psi)
            values = {}
            for n_jobs, chunk in ((1, 8), (2, 8), (2, 1), (1, 3)):
                s.n_jobs = n_jobs
                monkeypatch.setattr(trace, "TRACE_CHUNK_BLOCKS", chunk)
                values[n_jobs, chunk] = document_loglik(s)
            s.n_jobs = 1
            first = values[1, 8]
            np.testing.assert_allclose(first, expected, rtol=1e-12, atol=0)
            for v in values.values():
                np.testing.assert_array_equal(v, first)

    Y = _data(link, n_docs=400)
    s = GibbsSampler.for_training(Y, 17, link=link, method=method, random_state=11)
    for depth in (1, 2, 3):
        if depth > 1:
            s.add_layer(0.05)
        for _ in range(3):
            s.sweep()
        check(s)
        if depth == 2:      # a narrower top layer (K_2 = 11 < K_1 = 17), as after pruning
            s.keep_top(np.arange(17) % 3 != 0)
            s.sweep()
            assert s.network.layers[1].phi.shape == (17, 11)
            check(s)


def test_psi_route_is_chosen_by_operation_counts():
    """Psi = Phi^(1) Phi^(2) when it is cheaper than the documents' priors, never
    when it would be larger than Phi^(1) (K2 > K1)."""
    from pygbn.inference.trace import _psi_cheaper

    Y = _data("poisson", n_docs=300)
    s = GibbsSampler.for_training(Y, 12, method="blocked", random_state=0)
    s.sweep()
    s.add_layer(0.05)
    s.sweep()
    V, K1 = s.network.layers[0].phi.shape
    K2 = s.network.layers[1].width
    nnz = int(s.indptr[-1])
    sparse = int(np.dot(np.diff(s.indptr), np.count_nonzero(s.m[0], axis=1)))
    assert _psi_cheaper(s) == (V * K1 * K2 + nnz * K2 + sparse < s.n_docs * K1 * K2 + nnz * K1)
    s.network.layers[1].phi = np.full((K1, K1 + 1), 1.0 / K1)
    assert not _psi_cheaper(s)


def test_trace_rates_scratch_failure_raises_memory_error():
    from pygbn.inference import _trace

    Y = _data("poisson", n_docs=50)
    s = GibbsSampler.for_training(Y, 5, method="blocked", random_state=0)
    s.sweep()
    _trace._fail_next_allocations(1)
    try:
        with pytest.raises(MemoryError, match="trace_rates"):
            document_loglik(s)
    finally:
        _trace._fail_next_allocations(0)
    assert np.all(np.isfinite(document_loglik(s)))
