"""Layer one's term-factor counts stored by term (rare terms' rows as slots) hold
exactly the counts of the dense array, whatever the threads, and every reader
forms from them what it forms from the dense array."""
import numpy as np
import pytest
import scipy.sparse as sp

from test_layer_one import _split_inputs, split_once

from pygbn._utils import BlockStreams, block_bounds
from pygbn.inference import _blocked, term_counts
from pygbn.inference.gibbs import GibbsSampler
from pygbn.inference.sufficient import SufficientStats
from pygbn.inference.term_counts import (TermCounts, TermLayout, draw_phi_columns, latent_slots, sum_counts,
                                         take_columns)
from pygbn.model.links import get_link


def _sparse_corpus(J=300, V=500, seed=2):
    """Short documents over many terms: most terms have fewer tokens than K / 4."""
    rng = np.random.default_rng(seed)
    X = sp.random(J, V, density=0.03, random_state=seed, format="csr",
                  data_rvs=lambda n: rng.integers(1, 4, n)).astype(np.float64).tolil()
    X[:, :3] = rng.integers(20, 60, size=(J, 3))      # a few frequent terms: dense rows
    return get_link("poisson").check_data(X.tocsr())


def _layout(Y, fraction, monkeypatch):
    monkeypatch.setattr(term_counts, "DENSE_FRACTION", fraction)
    return TermLayout(get_link("poisson"), Y)


def _split_into(n_out, Y, phi, theta, bounds, n_threads):
    streams = BlockStreams(np.random.default_rng(7), len(bounds) - 1)
    m = np.empty((Y.shape[0], phi.shape[1]), dtype=np.uint16)
    dense, kw = term_counts.split_target(n_out)
    _blocked.split_sparse(Y.indptr.astype(np.int64), Y.indices, Y.data, phi, theta, np.empty(0), 0,
                          bounds, streams.addresses, m, dense, np.empty(0, np.int64), n_threads, **kw)
    return m


def _sparse_inputs(K=60, seed=4):
    Y = _sparse_corpus()
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.ones(Y.shape[1]), size=K).T.copy()
    theta = rng.gamma(1.0, size=(Y.shape[0], K))
    return Y, phi, theta, block_bounds(Y.shape[0], 64)


@pytest.mark.parametrize("fraction", [0, 4])       # every row in slots (where it fits); the default
@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("inputs", [_split_inputs, _sparse_inputs])
def test_split_into_slots_gives_the_dense_counts(fraction, n_threads, inputs, monkeypatch):
    Y, phi, theta, bounds = inputs()
    n_out = _layout(Y, fraction, monkeypatch).zeros(phi.shape[1])
    if fraction == 4 and inputs is _split_inputs:
        assert isinstance(n_out, np.ndarray)        # every term frequent: the dense array
    else:
        assert isinstance(n_out, TermCounts)
    m = _split_into(n_out, Y, phi, theta, bounds, n_threads)
    m_ref, n_ref = split_once(Y, phi, theta, bounds, 1)
    np.testing.assert_array_equal(m, m_ref)
    np.testing.assert_array_equal(np.asarray(n_out), n_ref)
    assert n_out.shape == n_ref.shape


def test_default_layout_keeps_frequent_terms_dense_and_rare_ones_in_slots():
    Y = _sparse_corpus()
    layout = TermLayout(get_link("poisson"), Y)
    totals = np.asarray(Y.sum(axis=0)).ravel()
    row_map, slot_start, n_dense = layout.arrays(60)
    np.testing.assert_array_equal(row_map >= 0, 4 * totals >= 60)
    np.testing.assert_array_equal(np.diff(slot_start), np.where(row_map >= 0, 0, totals))
    n = layout.zeros(60)
    assert n.nbytes == 4 * (n_dense * 60 + totals[row_map < 0].sum()) < 500 * 60 * 4
    assert TermLayout(get_link("bernoulli"), (Y > 0).astype(np.float64)).zeros(60).shape == (500, 60)
    # random latent counts (the Bernoulli-Poisson link): the rule on the stored cells, latent_slots slots
    cells = np.diff((Y > 0).astype(np.float64).tocsc().indptr)
    latent = TermLayout(get_link("bernoulli"), (Y > 0).astype(np.float64))
    row_map, slot_start, n_dense = latent.arrays(60)
    np.testing.assert_array_equal(row_map >= 0, 4 * cells >= 60)
    np.testing.assert_array_equal(np.diff(slot_start), np.where(row_map >= 0, 0, latent_slots(cells, 60)))
    assert latent.zeros(60).nbytes < 500 * 60 * 4


def _filled(monkeypatch, fraction=4, n_threads=2):
    Y, phi, theta, bounds = _sparse_inputs()
    n_out = _layout(Y, fraction, monkeypatch).zeros(phi.shape[1])
    _split_into(n_out, Y, phi, theta, bounds, n_threads)
    return n_out


@pytest.mark.parametrize("n_threads", [1, 2])
def test_phi_drawn_from_slots_is_the_draw_from_the_dense_counts(n_threads, monkeypatch):
    n = _filled(monkeypatch)
    dense = n.toarray().astype(np.int32)
    bounds = block_bounds(n.shape[1], 8)
    draws = []
    for counts in (n, dense):
        streams = BlockStreams(np.random.default_rng(3), len(bounds) - 1)
        out = np.empty(n.shape)
        draw_phi_columns(counts, 0.05, bounds, streams.addresses, out, n_threads)
        draws.append(out)
    np.testing.assert_array_equal(draws[0], draws[1])


def test_readers_form_what_they_form_from_the_dense_counts(monkeypatch):
    n = _filled(monkeypatch)
    d = n.toarray()
    np.testing.assert_array_equal(n.astype(np.float64), d.astype(np.float64))
    np.testing.assert_array_equal(n.sum(axis=1), d.sum(axis=1))
    flat, vals = n.nonzero_flat()
    np.testing.assert_array_equal(flat, np.flatnonzero(d))
    np.testing.assert_array_equal(vals, d.ravel()[np.flatnonzero(d)])
    keep = np.zeros(n.shape[1], dtype=bool)
    keep[::3] = True
    kept = take_columns(n, keep)
    np.testing.assert_array_equal(kept.toarray(), d[:, keep])
    np.testing.assert_array_equal(take_columns(d, keep), d[:, keep])
    # the kept slots are still filled from each row's start: a split can add to them
    assert all(np.all(np.diff((kept.slots[a:b] != 0).astype(int)) <= 0)
               for a, b in zip(kept.slot_start[:-1], kept.slot_start[1:]))
    np.testing.assert_array_equal(sum_counts([n, d, n]), 3 * d)


def test_summed_counts_past_int64_are_refused():
    # each part holds its total below 2**63; their int64 sum must not wrap (SufficientStats.combine)
    a = np.zeros((2, 3), dtype=np.int64)
    a[1, 2] = 2**62
    b = a.copy()
    b[1, 2] = 2**62 - 1
    assert sum_counts([a, b])[1, 2] == 2**63 - 1
    with pytest.raises(ValueError, match=r"^layer 2's counts of the 2 parts add up to 9223372036854775808 "
                                         r"\(2\*\*63 or more"):
        sum_counts([a, a], "layer 2's counts")
    parts = [SufficientStats(counts=[a], x_top=None, sum_L_blocks=np.zeros(1), first_block=i) for i in (0, 1)]
    with pytest.raises(ValueError, match=r"^layer 1's counts of the 2 parts add up to"):
        SufficientStats.combine(parts)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_blocked_chain_with_slots_is_the_chain_with_dense_counts(n_jobs, monkeypatch):
    Y = _sparse_corpus()
    nets = []
    for fraction in (0, 4, 10**9):       # every row in slots, the default, every row dense
        monkeypatch.setattr(term_counts, "DENSE_FRACTION", fraction)
        s = GibbsSampler.for_training(Y, 40, method="blocked", n_jobs=n_jobs, random_state=5)
        for it in range(4):
            s.sweep()
        keep = np.ones(40, dtype=bool)
        keep[::4] = False
        s.keep_top(keep)
        s.sweep()
        parts = SufficientStats.combine([s.local_upward(blocks=(0, 1)), s.local_upward(blocks=(1, 3))])
        nets.append((s.snapshot(), parts.counts[0]))
    for net, counts in nets[1:]:
        np.testing.assert_array_equal(net.layers[0].phi, nets[0][0].layers[0].phi)
        np.testing.assert_array_equal(net.r, nets[0][0].r)
        np.testing.assert_array_equal(counts, nets[0][1])


def test_layout_is_made_again_when_the_sampler_gets_other_data():
    """The slots are as many as the data's tokens: a sampler given other data (as
    the Geweke test gives it) splits into a layout of the new data."""
    from pygbn.inference.layer_one import kernel_csr

    Y = _sparse_corpus()
    s = GibbsSampler.for_training(Y, 40, method="blocked", random_state=5)
    s.sweep()
    first = TermLayout.of_sampler(s)
    assert TermLayout.of_sampler(s) is first
    Y2 = _sparse_corpus(seed=9)
    Y2.data *= 3.0
    s.Y = Y2
    s.indptr, s.indices, s.values = kernel_csr(Y2)
    # m[0]'s type was proven for the first data's totals: the Geweke test sets an int64 m[0] with its data
    s.m[0] = s.m[0].astype(np.int64)
    s.sweep()
    assert TermLayout.of_sampler(s) is not first
    np.testing.assert_array_equal(np.asarray(s.network.layers[0].counts).sum(axis=1),
                                  np.asarray(Y2.sum(axis=0)).ravel())
