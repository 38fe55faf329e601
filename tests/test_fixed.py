"""The test-time chain's own kernels (Phi fixed): the same chain as the general sweep.

:func:`pygbn.inference._fixed.split_fixed` must draw exactly what
:func:`pygbn.inference._blocked.split_sparse` draws (every link's latent
counts, the categorical and the binomial splits, underflowing weights, every
count type, any thread count), and :func:`pygbn.inference.fixed.sweep_fixed`
must be :meth:`GibbsSampler.sweep` of an inference chain, draw for draw, so
the stationary distribution of the test-time chain is the one the general
sweep's tests (Geweke's test among them) establish.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from pygbn import GBN
from pygbn._utils import BlockStreams
from pygbn.inference import GibbsSampler, _blocked, _fixed, infer_local
from pygbn.inference.fixed import FeatureAverage, sweep_fixed
from pygbn.model.links import LATENT_COUNTS, LATENT_CRT, LATENT_TRUNC_BESSEL, LATENT_TRUNC_POISSON, get_link

QUICK = dict(burn_in=(6, 6), n_collect=3, transform_iter=(3, 3))


def _inputs(mode, J=300, V=30, K=13, seed=0):
    """Data, Phi, theta, aux and block bounds that reach every path of the split:
    documents of 0 to 12 cells (full groups of four and remainders), cells of many
    units (the binomial split), cells whose products all underflow, and theta
    rows with entries at the floor of theta's draws."""
    rng = np.random.default_rng(seed)
    nnz = rng.integers(0, 13, size=J)
    indptr = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int64)
    indices = np.concatenate([np.sort(rng.choice(V, size=n, replace=False)) for n in nnz]).astype(np.int32)
    if mode in (LATENT_COUNTS, LATENT_CRT):
        data = rng.choice([1.0, 2.0, 5.0, 31.0, 32.0, 90.0], size=indices.size)
    elif mode == LATENT_TRUNC_POISSON:
        data = np.ones(indices.size)
    else:
        data = rng.gamma(1.0, 3.0, size=indices.size)
    phi = rng.dirichlet(np.full(V, 0.3), size=K).T.copy()
    theta = rng.gamma(0.5, 2.0, size=(J, K))
    phi[3] = 1e-170                 # every product of term 3 in documents 0-19 underflows
    theta[:20] = 1e-170
    theta[25, :5] = 0.0
    # entries at the floor of theta's draws (the smallest normal double): products below
    # the normal range, summed as zeros where they cannot change a cumulative weight
    tiny = np.finfo(np.float64).tiny
    theta[60:80, :4] = tiny         # the first factors tiny
    theta[80:90] = tiny             # every factor tiny
    theta[90:100, 5:] = tiny        # the last factors tiny
    theta[100:110, 4:] = tiny       # the first non-tiny product too small to absorb them:
    theta[100:110, :4] = 1e-300     # these documents' sums are the exact ones
    if mode in (LATENT_CRT, LATENT_TRUNC_POISSON):
        theta[30:40] *= 1000.0      # rates large enough for CRT and Pois_+ draws of 32 and more
    aux = rng.gamma(2.0, 1.0, size=J) if mode == LATENT_TRUNC_BESSEL else np.empty(0)
    if mode == LATENT_TRUNC_BESSEL:
        aux[40:60] *= 200.0         # Bessel draws of 32 and more
    Y = sp.csr_matrix((data, indices, indptr), shape=(J, V))
    bounds = np.array([0, 128, 256, J], dtype=np.int64)
    return Y, phi, theta, aux, bounds


def _split(kernel, Y, phi, theta, aux, mode, bounds, dtype, n_threads):
    streams = BlockStreams(np.random.default_rng(11), len(bounds) - 1)
    m = np.full((Y.shape[0], phi.shape[1]), 7, dtype=dtype)
    args = (Y.indptr.astype(np.int64), Y.indices, Y.data, phi, theta, aux, mode, bounds,
            streams.addresses)
    if kernel == "sparse":
        x = np.zeros(Y.nnz, dtype=np.int64)
        n = np.zeros(phi.shape, dtype=np.int64)
        over = _blocked.split_sparse(*args, m, n, x, n_threads)
    else:
        x = n = None
        over = _fixed.split_fixed(*args, m, n_threads)
    after = [g.random() for g in streams.generators]      # where every stream was left
    return m, over, after, x, n


@pytest.mark.parametrize("mode", [LATENT_COUNTS, LATENT_CRT, LATENT_TRUNC_POISSON, LATENT_TRUNC_BESSEL])
@pytest.mark.parametrize("dtype", [np.uint16, np.int32, np.int64])
def test_split_fixed_draws_what_split_sparse_draws(mode, dtype):
    Y, phi, theta, aux, bounds = _inputs(mode)
    ref_m, ref_over, ref_after, x, _ = _split("sparse", Y, phi, theta, aux, mode, bounds, dtype, 1)
    # the paths the inputs were made to reach
    assert (x >= 32).any() and (x == 1).any()
    for n_threads in (1, 2):
        m, over, after, _, _ = _split("fixed", Y, phi, theta, aux, mode, bounds, dtype, n_threads)
        np.testing.assert_array_equal(m, ref_m)
        assert over == ref_over
        assert after == ref_after
    # one theta row shared by every document
    ref = _split("sparse", Y, phi, theta[20:21].copy(), aux, mode, bounds, dtype, 1)
    got = _split("fixed", Y, phi, theta[20:21].copy(), aux, mode, bounds, dtype, 1)
    np.testing.assert_array_equal(got[0], ref[0])
    assert got[2] == ref[2]


@pytest.mark.parametrize("mode", [LATENT_COUNTS, LATENT_CRT, LATENT_TRUNC_POISSON, LATENT_TRUNC_BESSEL])
def test_split_sparse_without_tiny_entries_draws_what_every_product_draws(mode):
    """split_sparse's sums without the tiny theta entries (the floor of theta's draws)
    give the draws, the latent counts and the statistics of the sums of every product."""
    Y, phi, theta, aux, bounds = _inputs(mode)
    before = _blocked._zero_tiny_entries(False)
    try:
        ref = _split("sparse", Y, phi, theta, aux, mode, bounds, np.int64, 1)
    finally:
        _blocked._zero_tiny_entries(before)
    assert before
    for n_threads in (1, 2):
        got = _split("sparse", Y, phi, theta, aux, mode, bounds, np.int64, n_threads)
        np.testing.assert_array_equal(got[0], ref[0])
        np.testing.assert_array_equal(got[3], ref[3])
        np.testing.assert_array_equal(got[4], ref[4])
        assert got[1:3] == ref[1:3]


def test_tiny_theta_bound_given_once_draws_what_each_call_forms():
    """The bound of the tiny theta entries, formed once for a sweep's calls (as layer one's
    split passes it), gives the draws of the bound each call forms."""
    Y, phi, theta, aux, bounds = _inputs(LATENT_TRUNC_BESSEL)
    K = phi.shape[1]
    tiny = _blocked.tiny_theta(phi)
    assert tiny == 2.0**-1000 / (2.0 * K * phi.max())
    assert _blocked.tiny_theta(np.zeros((3, 4))) == np.inf
    assert _blocked.tiny_theta(np.zeros((0, 4))) == np.inf
    args = (Y.indptr.astype(np.int64), Y.indices, Y.data, phi, theta, aux, LATENT_TRUNC_BESSEL, bounds)
    out = []
    for kw in ({}, {"tiny": tiny}):
        streams = BlockStreams(np.random.default_rng(11), len(bounds) - 1)
        m = np.zeros((Y.shape[0], K), dtype=np.int64)
        n = np.zeros(phi.shape, dtype=np.int64)
        _blocked.split_sparse(*args, streams.addresses, m, n, np.empty(0, dtype=np.int64), 2, **kw)
        streams = BlockStreams(np.random.default_rng(11), len(bounds) - 1)
        m2 = np.zeros_like(m)
        _fixed.split_fixed(*args, streams.addresses, m2, 2, **kw)
        np.testing.assert_array_equal(m2, m)
        out.append((m, n))
    np.testing.assert_array_equal(out[1][0], out[0][0])
    np.testing.assert_array_equal(out[1][1], out[0][1])


def test_split_fixed_counts_overflow_like_split_sparse():
    Y, phi, theta, aux, bounds = _inputs(LATENT_COUNTS)
    Y = Y.copy()
    Y.data[:3] = 70000.0            # document 0's total passes what uint16 holds
    Y.data[3:] = 1.0
    ref = _split("sparse", Y, phi, theta, aux, LATENT_COUNTS, bounds, np.uint16, 1)
    got = _split("fixed", Y, phi, theta, aux, LATENT_COUNTS, bounds, np.uint16, 1)
    assert got[1] == ref[1] >= 1
    np.testing.assert_array_equal(got[0], ref[0])


@pytest.mark.parametrize("n_threads", [1, 2])
def test_split_fixed_failed_scratch_allocation_raises_memory_error(n_threads):
    Y, phi, theta, aux, bounds = _inputs(LATENT_COUNTS)
    try:
        _fixed._fail_next_allocations(2)
        with pytest.raises(MemoryError, match="split_fixed"):
            _split("fixed", Y, phi, theta, aux, LATENT_COUNTS, bounds, np.int64, n_threads)
    finally:
        _fixed._fail_next_allocations(0)
    _split("fixed", Y, phi, theta, aux, LATENT_COUNTS, bounds, np.int64, n_threads)   # all is well again


def _fitted(link, J=400):
    rng = np.random.default_rng(4)
    X = rng.poisson(rng.gamma(0.3, 3, size=(J, 4)) @ rng.dirichlet(np.full(30, 0.2), size=4)).astype(float)
    if link == "bernoulli":
        X = (X > 0).astype(float)
    elif link == "prg":
        X = X * 0.37
    m = GBN(link=link, n_components=8, n_layers=3, method="blocked", random_state=1, **QUICK).fit(X[:200])
    return m.network_, get_link(link).check_data(sp.csr_matrix(X[200:]))


@pytest.mark.parametrize("link", ["poisson", "bernoulli", "prg"])
def test_sweep_fixed_is_the_general_sweep(link):
    net, Y = _fitted(link)
    a = GibbsSampler.for_inference(net, Y, random_state=5)
    b = GibbsSampler.for_inference(net, Y, random_state=5)
    b.check_state()
    for _ in range(4):
        a.sweep(update_p_c=True)
        sweep_fixed(b)
        for la, lb in zip(a.network.layers, b.network.layers):
            np.testing.assert_array_equal(la.theta, lb.theta)
            np.testing.assert_array_equal(la.c, lb.c)
        for ma, mb in zip(a.m, b.m):
            np.testing.assert_array_equal(ma, mb)
        np.testing.assert_array_equal(a.aux, b.aux)
    assert a.iteration == b.iteration == 4


@pytest.mark.parametrize("link", ["poisson", "prg"])
def test_infer_local_does_not_depend_on_threads(link):
    net, Y = _fitted(link)          # 200 new samples: two document blocks
    held = Y.copy() if link == "poisson" else None
    out = [infer_local(net, Y, burn_in=3, n_collect=4, heldout=held, heldout_every=2, n_jobs=n,
                       random_state=9) for n in (1, 2)]
    np.testing.assert_array_equal(out[0].features, out[1].features)
    assert out[0].perplexity == out[1].perplexity or np.isnan(out[0].perplexity)


def test_feature_average_adds_normalised_rows():
    rng = np.random.default_rng(0)
    f = FeatureAverage(5, 3)
    acc = np.zeros((5, 3))
    for _ in range(3):
        th = rng.gamma(0.5, size=(5, 3))
        f.add(th)
        acc += th / th.sum(axis=1, keepdims=True)
    np.testing.assert_array_equal(f.mean(3), acc / 3)


@pytest.mark.parametrize("mode", [LATENT_COUNTS, LATENT_TRUNC_POISSON, LATENT_TRUNC_BESSEL])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_split_fixed_counts_each_documents_latent_total(mode, n_threads):
    Y, phi, theta, aux, bounds = _inputs(mode)
    streams = BlockStreams(np.random.default_rng(11), len(bounds) - 1)
    args = (Y.indptr.astype(np.int64), Y.indices, Y.data, phi, theta, aux, mode, bounds, streams.addresses)
    m = np.zeros((Y.shape[0], phi.shape[1]), dtype=np.int64)
    totals = np.full(Y.shape[0], -1.0)
    _fixed.split_fixed(*args, m, n_threads, totals)
    np.testing.assert_array_equal(totals, m.sum(axis=1).astype(np.float64))
    # the same draws as without the totals
    ref = _split("fixed", Y, phi, theta, aux, mode, bounds, np.int64, n_threads)
    np.testing.assert_array_equal(m, ref[0])


def test_feature_average_of_a_shared_row_and_of_floats_of_every_size():
    f = FeatureAverage(4, 3)
    row = np.array([1e-300, 2.0, 3.5])
    f.add(np.broadcast_to(row, (4, 3)))          # a read-only shared row, as at a chain's start
    th = np.array([[1.0, 1.0, 1.0], [1e300, 1e300, 1.0], [5e-324, 1e-310, 2.2e-308], [0.1, 0.2, 0.3]])
    f.add(th)
    want = row / row.sum() + th / th.sum(axis=1, keepdims=True)
    np.testing.assert_array_equal(f.total, want)
