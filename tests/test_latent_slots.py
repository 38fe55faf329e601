"""Slots for the rare terms' random latent counts (Bernoulli-Poisson and PRG
links, :mod:`pygbn.inference.term_counts`): a count a term's slots cannot take
spills to a row of its own and the term is made dense (``TermLayout.promote``),
so the chain is the dense int64 chain's, bit for bit.  The slots are planted
tiny (one a term) so that terms spill in the first split and in later ones,
with theta^(1) held and drawn lazily, on 1 and 2 threads, with one and two
layers, beside the int32 counts' widening, and in a partitioned chain.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from pygbn.inference import GibbsSampler, _blocked, gibbs, latent_split, term_counts
from pygbn.inference.latent_split import LayerOneSplit
from pygbn.inference.layerwise import Schedule, fit_layerwise
from pygbn.inference.term_counts import TermCounts
from pygbn.model.links import get_link
from test_latent_split import (_assert_states_equal, _state, assert_same_networks,  # the widening tests
                               two_part_fit)


def _rare_terms(link, J=300, V=500, seed=1):
    """Documents over terms of decreasing frequency (most of them rare beside K)."""
    rng = np.random.default_rng(seed)
    p = 0.6 / (1.0 + np.arange(V)) ** 0.8
    X = (rng.random((J, V)) < p).astype(np.float64)
    X[np.arange(J), rng.integers(0, 5, size=J)] = 1.0          # no empty document
    if link == "prg":
        X *= rng.gamma(2.0, 1.5, size=X.shape)
    return get_link(link).check_data(sp.csr_matrix(X))


def _dense_int64(mp):
    """Plant main's layout: every term's row dense, int64 counts and m[0]."""
    mp.setattr(term_counts.TermLayout, "arrays", lambda self, K: None)
    mp.setattr(term_counts, "start_stat_dtype", lambda link, Y: np.dtype(np.int64))
    mp.setattr(gibbs, "count_dtype", lambda link, Y: np.dtype(np.int64))


def _chain(link, n_threads, T, sweeps=4, K=40):
    """States after each sweep of a blocked training chain on :func:`_rare_terms`
    (the first split with theta^(1) held, the later ones drawing it lazily) and
    the number of splits that made rows dense."""
    s = GibbsSampler.for_training(_rare_terms(link), K, link=link, method="blocked", n_jobs=n_threads,
                                  random_state=4)
    states, promoting = [], 0
    for i in range(sweeps):
        if T == 2 and i == 1:
            s.add_layer(0.05)
        before = -1 if s._term_layout is None else s._term_layout.promotions
        s.sweep()
        promoting += s._term_layout.promotions > before >= 0
        states.append(_state(s))
    return s, states, promoting


def test_rare_terms_get_slots():
    s = GibbsSampler.for_training(_rare_terms("bernoulli"), 40, link="bernoulli", method="blocked",
                                  random_state=0)
    counts = LayerOneSplit(s).counts
    assert isinstance(counts, TermCounts) and counts.dense.dtype == np.int32
    assert 0 < counts.dense.shape[0] < counts.shape[0]


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("link,T", [("bernoulli", 1), ("prg", 1), ("bernoulli", 2), ("prg", 2)])
def test_spilled_slots_give_the_dense_int64_chain(monkeypatch, link, T, n_threads):
    # six sweeps: whether a later split spills is up to the draws (with four, the PRG
    # chain at T = 1 spilled in its first split only)
    with monkeypatch.context() as mp:
        _dense_int64(mp)
        ref_s, ref, _ = _chain(link, n_threads, T, sweeps=6)
        assert not isinstance(LayerOneSplit(ref_s).counts, TermCounts)
    monkeypatch.setattr(term_counts, "LATENT_SLOTS", (0, 1))
    s, got, promoting = _chain(link, n_threads, T, sweeps=6)
    layout = s._term_layout
    assert promoting >= 2                       # rows made dense in the first split and a lazy one
    assert 0 < layout.promoted.sum() < (layout.totals > 0).sum() - int((~layout.promoted).sum() == 0)
    assert isinstance(LayerOneSplit(s).counts, TermCounts)
    _assert_states_equal(ref, got)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_spilled_slots_and_widened_counts_give_the_int64_chain(monkeypatch, n_threads):
    """Tiny slots and the int32 bound planted at 1500: the dense rows widened
    to int64 (the slots kept), the chain unchanged."""
    with monkeypatch.context() as mp:
        _dense_int64(mp)
        _, ref, _ = _chain("prg", n_threads, 1)
    monkeypatch.setattr(term_counts, "LATENT_SLOTS", (0, 1))
    monkeypatch.setattr(latent_split, "_INT32_MAX", 1500)
    s, got, promoting = _chain("prg", n_threads, 1)
    assert s._term_layout.dtype == np.int64 and promoting >= 1
    _assert_states_equal(ref, got)


@pytest.mark.parametrize("link", ["bernoulli", "prg"])
def test_partitioned_chain_with_spilled_slots_is_the_int64_chain(monkeypatch, link):
    Y = _rare_terms(link)
    schedule = Schedule.for_layers(2, burn_in=(4, 3), n_collect=2)
    with monkeypatch.context() as mp:
        _dense_int64(mp)
        ref = fit_layerwise(Y, schedule, link=link, n_components=30, method="blocked", random_state=9)
    monkeypatch.setattr(term_counts, "LATENT_SLOTS", (0, 1))
    res, parts = two_part_fit(Y, link, 30, schedule)
    assert all(p.sampler._term_layout.promotions > 0 for p in parts)
    assert_same_networks(ref, res)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_split_spills_what_the_slots_cannot_take(n_threads):
    """A count above 65535 and a second factor for a one-slot row go to the
    term's spill row (nothing written outside the row); without a spill row
    they are an error."""
    K = 3
    phi = np.array([[1.0, 1e-300, 1e-300], [0.5, 0.5, 1e-300]])
    theta = np.ones((1, K))
    Y = sp.csr_matrix(np.array([[70000.0, 40.0]]))
    args = (np.ascontiguousarray(Y.indptr, dtype=np.int64), Y.indices.astype(np.int32), Y.data, phi, theta,
            np.empty(0), 0, np.array([0, 1], dtype=np.int64))
    row_map = np.array([-1, -1], dtype=np.int32)
    slot_start = np.array([0, 1, 2], dtype=np.int64)
    for spill in (np.zeros(3, dtype=np.uintp), None):
        rng = np.random.Generator(np.random.PCG64(0))
        streams = np.array([rng.bit_generator.ctypes.bit_generator.value], dtype=np.uintp)
        m = np.zeros((1, K), dtype=np.int64)
        slots = np.zeros(3, dtype=np.uint32)        # one past the rows: must stay 0
        if spill is None:
            with pytest.raises(RuntimeError, match="found no slot"):
                _blocked.split_sparse(*args, streams, m, np.zeros((0, K), dtype=np.int64),
                                      np.empty(0, dtype=np.int64), n_threads, row_map=row_map,
                                      slot_start=slot_start, slots=slots[:2])
            continue
        _blocked.split_sparse(*args, streams, m, np.zeros((0, K), dtype=np.int64), np.empty(0, dtype=np.int64),
                              n_threads, row_map=row_map, slot_start=slot_start, slots=slots[:2], spill=spill)
        assert spill[2] == 1 and spill[0] != 0 and spill[1] != 0 and slots[2] == 0
        rows = np.empty((2, K), dtype=np.int64)
        _blocked.take_spill(spill, np.array([0, 1], dtype=np.int64), rows)
        assert not spill.any()
        dense = rows.copy()
        for v in range(2):
            if slots[v]:
                dense[v, (slots[v] >> 16) - 1] += slots[v] & 0xFFFF
        np.testing.assert_array_equal(dense.sum(axis=1), [70000, 40])
        np.testing.assert_array_equal(dense.sum(axis=0), m[0])
        assert dense[0, 0] == 70000 and slots[0] == 0


def test_abandoned_split_frees_its_spill_rows():
    """A split that fails (a block's scratch memory could not be allocated) keeps no
    spill row: they are freed and the addresses cleared before the MemoryError."""
    K = 3
    phi = np.array([[1.0, 1e-300, 1e-300], [0.5, 0.5, 1e-300]])
    theta = np.ones((1, K))
    Y = sp.csr_matrix(np.array([[70000.0, 40.0], [70000.0, 40.0]]))
    rngs = [np.random.Generator(np.random.PCG64(s)) for s in (0, 1)]
    streams = np.array([g.bit_generator.ctypes.bit_generator.value for g in rngs], dtype=np.uintp)
    spill = np.zeros(3, dtype=np.uintp)
    slots = np.zeros(2, dtype=np.uint32)
    try:
        _blocked._fail_next_allocations(1)      # the first block's scratch: the second one spills
        with pytest.raises(MemoryError, match="scratch memory of 1 document block"):
            _blocked.split_sparse(np.ascontiguousarray(Y.indptr, dtype=np.int64), Y.indices.astype(np.int32),
                                  Y.data, phi, theta, np.empty(0), 0, np.array([0, 1, 2], dtype=np.int64),
                                  streams, np.zeros((2, K), dtype=np.int64), np.zeros((0, K), dtype=np.int64),
                                  np.empty(0, dtype=np.int64), 1, row_map=np.array([-1, -1], dtype=np.int32),
                                  slot_start=np.array([0, 1, 2], dtype=np.int64), slots=slots, spill=spill)
    finally:
        _blocked._fail_next_allocations(0)
    assert slots.any() and not spill.any()
