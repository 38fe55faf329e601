"""The memory-lean forms of layer one's arrays give the same numbers as the plain ones.

The blocked split's int32 statistics, Phi drawn column by column from the
counts, the collapsed trace's Phi formed entry by entry, the posterior Phi
counted from the labels and the state released at a fit's last snapshot:
each is compared, to the bit, with the numpy expression it replaces.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import pygbn
from test_layer_one import split_once  # the blocked split of the layer-one tests

from pygbn._utils import BlockStreams, block_bounds
from pygbn.inference import _blocked
from pygbn.inference.collapsed_state import CollapsedState
from pygbn.inference.layer_one import phi_from_labels, posterior_column_sums, stat_dtype
from pygbn.inference.layerwise import Schedule, fit_layerwise
from pygbn.model.layer import Layer
from pygbn.model.links import get_link


def _counts(V=300, K=7, seed=0, dtype=np.int32):
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 50, size=(V, K)).astype(dtype)
    c[rng.random((V, K)) < 0.5] = 0
    return c


def _corpus(J=200, V=150, seed=1):
    rng = np.random.default_rng(seed)
    X = sp.random(J, V, density=0.08, random_state=seed, format="csr",
                  data_rvs=lambda n: rng.integers(1, 5, n)).astype(np.float64)
    return get_link("poisson").check_data(X)


@pytest.mark.parametrize("K", [1, 2, 3, 8, 37])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_posterior_column_sums_match_numpy(K, dtype):
    c = _counts(V=5000, K=K, dtype=dtype)
    expected = (0.05 + c.astype(np.float64)).sum(axis=0)
    np.testing.assert_array_equal(posterior_column_sums(c, 0.05), expected)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_dirichlet_columns_draw_what_dirichlet_rows_draws(dtype, n_threads):
    c = _counts(V=400, K=19, dtype=dtype)
    eta = 0.05
    bounds = block_bounds(c.shape[1], 8)
    streams = BlockStreams(np.random.default_rng(3), len(bounds) - 1)
    alpha_t = np.ascontiguousarray((eta + c.astype(np.float64)).T)
    out_t = np.empty_like(alpha_t)
    _blocked.dirichlet_rows(alpha_t, bounds, streams.addresses, out_t, 1)
    streams = BlockStreams(np.random.default_rng(3), len(bounds) - 1)
    out = np.empty(c.shape)
    _blocked.dirichlet_columns(c, eta, bounds, streams.addresses, out, n_threads)
    np.testing.assert_array_equal(out, out_t.T)


def test_dirichlet_columns_failed_scratch_allocation_raises_memory_error():
    c = _counts()
    bounds = block_bounds(c.shape[1], 8)
    streams = BlockStreams(np.random.default_rng(3), len(bounds) - 1)
    try:
        _blocked._fail_next_allocations(1)
        with pytest.raises(MemoryError, match="dirichlet_columns"):
            _blocked.dirichlet_columns(c, 0.05, bounds, streams.addresses, np.empty(c.shape), 1)
    finally:
        _blocked._fail_next_allocations(0)


@pytest.mark.parametrize("K", [1, 5])
def test_heldout_accumulate_counts_matches_the_posterior_phi(K):
    Y = _corpus()
    V = Y.shape[1]
    c = _counts(V=V, K=K)
    phi = Layer(phi=np.full((V, K), 1.0 / V), eta=0.05, counts=c).posterior_mean_phi()
    theta = np.random.default_rng(2).gamma(1.0, size=(Y.shape[0], K))
    indptr = Y.indptr.astype(np.int64)
    expected = (np.zeros(Y.nnz), np.zeros(Y.shape[0]))
    _blocked.heldout_accumulate(indptr, Y.indices, phi, theta, *expected, 1)
    got = (np.zeros(Y.nnz), np.zeros(Y.shape[0]))
    _blocked.heldout_accumulate_counts(indptr, Y.indices, c, 0.05, posterior_column_sums(c, 0.05), theta,
                                       *got, 2)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])


@pytest.mark.parametrize("K", [1, 6, 40])
def test_phi_from_labels_is_the_posterior_mean_of_the_counts(K, monkeypatch):
    from pygbn.inference import layer_one

    monkeypatch.setattr(layer_one, "_LABEL_CHUNK", 97)      # many chunks
    Y = _corpus()
    st = CollapsedState.from_counts(Y, K, rng=np.random.default_rng(4))
    expected = Layer(phi=np.full((Y.shape[1], K), 1.0 / Y.shape[1]), eta=0.05,
                     counts=st.term_counts).posterior_mean_phi()
    got = phi_from_labels(st.indptr, st.indices, st.values, st.doc_ptr, st.labels, Y.shape[1], K, 0.05)
    np.testing.assert_array_equal(got, expected)


def test_split_sparse_int32_statistics_equal_int64():
    Y = _corpus()
    K = 6
    rng = np.random.default_rng(5)
    phi = rng.dirichlet(np.ones(Y.shape[1]), size=K).T.copy()
    theta = rng.gamma(1.0, size=(Y.shape[0], K))
    bounds = block_bounds(Y.shape[0], 16)
    out = []
    for dtype, n_threads in ((np.int64, 1), (np.int32, 1), (np.int32, 2)):
        out.append(split_once(Y, phi, theta, bounds, n_threads, dtype))
    for m, n in out[1:]:
        np.testing.assert_array_equal(m, out[0][0])
        np.testing.assert_array_equal(n, out[0][1])


def test_stat_dtype_is_int32_only_for_counts_of_a_proven_range():
    Y = _corpus()
    assert stat_dtype(get_link("poisson"), Y) == np.int32
    assert stat_dtype(get_link("bernoulli"), (Y > 0).astype(np.float64)) == np.int64
    big = Y.copy()
    big.data[0] = 2.0**31
    assert stat_dtype(get_link("poisson"), big) == np.int64


@pytest.mark.parametrize("method", ["collapsed", "blocked", "partial"])
def test_releasing_the_state_at_the_last_snapshot_keeps_the_networks(method):
    Y = _corpus()
    sched = Schedule.for_layers(2, burn_in=(4, 4), n_collect=2, trace_every=3)
    kept = fit_layerwise(Y, sched, n_components=8, method=method, random_state=3)
    released = fit_layerwise(Y, sched, n_components=8, method=method, random_state=3, keep_state=False)
    assert kept.sampler is not None and released.sampler is None
    assert kept.widths == released.widths
    assert kept.loglikelihoods == released.loglikelihoods
    for a, b in zip(kept.networks, released.networks):
        for la, lb in zip(a.layers, b.layers):
            np.testing.assert_array_equal(la.phi, lb.phi)
            assert la.c_median == lb.c_median
        np.testing.assert_array_equal(a.r, b.r)


def test_import_pygbn_leaves_text_io_and_optional_packages_unloaded(tmp_path):
    code = ("import sys, pygbn; bad = [m for m in ('pygbn.text', 'pygbn.datasets', 'scipy.io', 'dask', "
            "'distributed', 'sklearn') if m in sys.modules]; print(bad); "
            "assert not bad; assert pygbn.text.__name__ == 'pygbn.text'; assert 'text' in dir(pygbn)")
    # the pygbn under test (in-place build or installed copy), imported away from the source tree
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(pygbn.__file__).resolve().parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, env=env)


def test_one_layer_fit_leaves_scipy_linalg_unloaded(tmp_path):
    """Import pygbn and a one-layer fit never load scipy.linalg (about 6 MB resident);
    nor do a second layer's Phi theta products (pygbn's own kernel, no BLAS)."""
    code = ("import sys, numpy as np, pygbn\n"
            "from pygbn._utils import trim_heap\n"
            "X = np.random.default_rng(0).poisson(1.0, size=(40, 30))\n"
            "assert 'scipy.linalg' not in sys.modules\n"
            "for m in ('collapsed', 'blocked', 'partial'):\n"
            "    pygbn.GBN(n_components=4, n_layers=1, burn_in=3, n_collect=1, method=m, random_state=0).fit(X)\n"
            "trim_heap()\n"
            "assert 'scipy.linalg' not in sys.modules, 'one layer'\n"
            "from pygbn.inference import GibbsSampler\n"
            "import scipy.sparse as sp\n"
            "s = GibbsSampler.for_training(sp.csr_matrix(X.astype(float)), 4, method='partial', random_state=0)\n"
            "s.sweep()\n"
            "assert 'scipy.linalg' not in sys.modules, 'one layer (sampler)'\n"
            "s.add_layer(0.05)\n"
            "s.sweep()\n"
            "assert 'scipy.linalg' not in sys.modules, 'two layers'\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(pygbn.__file__).resolve().parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, env=env)
