"""Layer one's random latent counts (Bernoulli-Poisson and PRG links) in compact
types (:mod:`pygbn.inference.latent_split`): ``m[0]`` starts small and the
term-factor counts int32; where a split outgrows them they are widened and
redrawn from the saved stream states, so the chain is the int64 chain, bit for
bit, on 1 and 2 threads, in the test-time chain and in a partitioned chain.
The widening is planted: a start type too small for the data (every document's
latent total passes 255) and a small int32 bound (the counts' path), plus one
real wrap-around of int32 counts.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from pygbn.inference import GibbsSampler, gibbs, latent_split, term_counts
from pygbn.inference.fixed import sweep_fixed
from pygbn.inference.latent_split import LayerOneSplit
from pygbn.inference.layerwise import Schedule, fit_layerwise, run_layerwise
from pygbn.inference.partition import LocalPart, PartitionedChain
from pygbn.model.links import get_link


def _long_docs(link, J=300, V=400, seed=0):
    """Documents of at least 256 stored cells each (so every latent total passes 255)."""
    rng = np.random.default_rng(seed)
    X = (rng.random((J, V)) < 0.7).astype(np.float64)
    X[:, :260] = 1.0
    if link == "prg":
        X *= rng.gamma(2.0, 0.5, size=X.shape)
    return get_link(link).check_data(sp.csr_matrix(X))


def _int64_types(monkeypatch):
    """Plant main's types: m[0] and the term-factor counts int64 from the start."""
    monkeypatch.setattr(gibbs, "count_dtype", lambda link, Y: np.dtype(np.int64))
    monkeypatch.setattr(term_counts, "start_stat_dtype", lambda link, Y: np.dtype(np.int64))


def _state(s):
    net = s.network
    out = [layer.phi.copy() for layer in net.layers] + [net.r.copy(), s.aux.copy()]
    out += [m.astype(np.int64) for m in s.m]
    theta = s.theta_one() if s.depth == 1 else net.layers[-1].theta
    return out + [theta.copy()]


def _chain(link, n_threads, T, sweeps=4, narrow=None):
    """States after each sweep of a blocked training chain on :func:`_long_docs`;
    ``narrow``: the type ``m[0]`` is cast to before each sweep (its values wrapped
    around where they do not fit, in both chains compared)."""
    s = GibbsSampler.for_training(_long_docs(link), 6, link=link, method="blocked", n_jobs=n_threads,
                                  random_state=3)
    states = []
    for i in range(sweeps):
        if T == 2 and i == 1:
            s.add_layer(0.05)
        if narrow is not None:
            s.m[0] = s.m[0].astype(narrow[0]).astype(narrow[1])
        s.sweep()
        states.append(_state(s))
    return s, states


def _assert_states_equal(a, b):
    for sa, sb in zip(a, b):
        for x, y in zip(sa, sb):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("link", ["bernoulli", "prg"])
def test_random_latent_counts_start_compact(link):
    s = GibbsSampler.for_training(_long_docs(link, V=300, J=40)[:, :100], 4, link=link, method="blocked",
                                  random_state=0)
    assert s.m[0].dtype == np.uint8
    assert LayerOneSplit(s).counts.dtype == np.int32


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("link,T", [("bernoulli", 1), ("prg", 1), ("bernoulli", 2)])
def test_widened_m_gives_the_int64_chain(monkeypatch, link, T, n_threads):
    """m[0] planted uint8 before every sweep (the first split with theta^(1)
    held, the later ones drawing it lazily by chunks): each split widens it and
    redraws, and the chain is the int64 chain's."""
    s, got = _chain(link, n_threads, T, narrow=(np.uint8, np.uint8))
    assert s.m[0].dtype == np.uint16            # widened at every sweep
    with monkeypatch.context() as mp:
        _int64_types(mp)
        ref_s, ref = _chain(link, n_threads, T, narrow=(np.uint8, np.int64))
    assert ref_s.m[0].dtype == np.int64
    _assert_states_equal(ref, got)


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("link", ["bernoulli", "prg"])
def test_widened_counts_give_the_int64_chain(monkeypatch, link, n_threads):
    """The term-factor counts' int32 bound planted at 5000 (the split passes it
    within its first chunks): they are redrawn into int64, the chain unchanged."""
    with monkeypatch.context() as mp:
        _int64_types(mp)
        _, ref = _chain(link, n_threads, 1)
    monkeypatch.setattr(latent_split, "_INT32_MAX", 5000)
    s, got = _chain(link, n_threads, 1)
    assert s._term_layout.dtype == np.int64
    _assert_states_equal(ref, got)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_int32_counts_that_wrap_around_are_recovered(n_threads):
    """int32 counts that really pass 2**31 - 1 within a split: the result is the
    int64 one."""
    Y = _long_docs("bernoulli")
    start = np.iinfo(np.int32).max - 20
    out = []
    for dtype in (np.int64, np.int32):
        s = GibbsSampler.for_training(Y, 6, link="bernoulli", method="blocked", n_jobs=n_threads,
                                      random_state=5)
        split = LayerOneSplit(s)
        split.counts = np.full(split.counts.shape, start, dtype=dtype)
        split.total = start
        out.append((split.run(0, len(s.bounds) - 1), s.m[0].astype(np.int64)))
    (ref, ref_m), (got, got_m) = out
    assert got.dtype == np.int64 and ref.max() > np.iinfo(np.int32).max
    np.testing.assert_array_equal(ref, got)
    np.testing.assert_array_equal(ref_m, got_m)


@pytest.mark.parametrize("link", ["bernoulli", "prg"])
def test_test_time_chain_widens_m(monkeypatch, link):
    """The test-time chain (sweep_fixed) widens a planted uint8 m[0] and stays the
    int64 chain."""
    Y = _long_docs(link, J=200)
    s, _ = _chain(link, 1, 2, sweeps=2)
    runs = []
    for dtype in (np.int64, np.uint8):
        t = GibbsSampler.for_inference(s.network, Y, random_state=5)
        t.m[0] = t.m[0].astype(dtype)
        t.check_state()
        for _ in range(3):
            sweep_fixed(t)
        runs.append([t.m[0].astype(np.int64), t.aux, t.network.layers[0].theta] + t.m[1:])
    assert t.m[0].dtype == np.uint16
    _assert_states_equal([runs[0]], [runs[1]])


@pytest.mark.parametrize("link", ["bernoulli", "prg"])
def test_partitioned_chain_with_widening_is_the_int64_chain(monkeypatch, link):
    """Two local parts with m[0] planted uint8 and a small int32 bound: the
    networks of the one-process int64 chain."""
    Y = _long_docs(link)
    schedule = Schedule.for_layers(2, burn_in=(4, 3), n_collect=2)
    with monkeypatch.context() as mp:
        _int64_types(mp)
        ref = fit_layerwise(Y, schedule, link=link, n_components=8, method="blocked", random_state=9)
    monkeypatch.setattr(gibbs, "count_dtype", lambda link, Y: np.dtype(np.uint8))
    monkeypatch.setattr(latent_split, "_INT32_MAX", 5000)
    res, _ = two_part_fit(Y, link, 8, schedule)
    assert_same_networks(ref, res)


def two_part_fit(Y, link, K, schedule):
    """The fit of a partitioned chain of two local parts (documents 0:128 and the
    rest) and its parts."""
    parts = [LocalPart(Y[:128], first_block=0), LocalPart(Y[128:], first_block=1)]
    chain = PartitionedChain.for_training(lambda m: [p.run(m) for p in parts], Y.shape[1], K,
                                          link=get_link(link), random_state=9)
    return run_layerwise(chain, schedule, [0.05] * 2, heldout=False, check=True), parts


def assert_same_networks(ref, res):
    assert ref.widths == res.widths
    for na, nb in zip(ref.networks, res.networks):
        for la, lb in zip(na.layers, nb.layers):
            np.testing.assert_array_equal(la.phi, lb.phi)
        np.testing.assert_array_equal(na.r, nb.r)


def _scaled_prg(scale, J=20, V=12):
    rng = np.random.default_rng(0)
    return rng.poisson(1.0, size=(J, V)) * scale


def test_prg_data_too_large_for_int64_latent_counts_are_refused():
    """PRG data of a huge scale: the first sweep's latent counts (a_j starts at 1) passed
    2**63 - 1 in a document, the int64 totals wrapped around to negative counts and
    the CRT of the top layer wrote out of bounds (a segmentation fault at 1e50; from
    1e37 negative counts, silently).  Now the split counts such a document, and one
    whose Bessel parameter passes the sampler's cap, as one no type holds: ValueError."""
    from pygbn import GBN

    kw = dict(n_components=4, n_layers=2, burn_in=(3, 2), n_collect=2, random_state=0,
              transform_iter=(2, 2), min_width=0, link="prg")
    for scale in (1e40, 1e300):
        with pytest.raises(ValueError, match=r"outgrew 64-bit integers in \d+ document.*too large"):
            GBN(**kw).fit(_scaled_prg(scale))
    # the test-time chain (a_j from the training median): the same check
    m = GBN(**kw).fit(_scaled_prg(1.0))
    assert np.isfinite(m.transform(_scaled_prg(1e30))).all()
    with pytest.raises(ValueError, match="outgrew 64-bit integers"):
        m.transform(_scaled_prg(1e300))


def test_prg_latent_counts_adding_up_past_int64_are_refused():
    """Each document's latent total fits int64 but their sum does not: the term-factor
    counts (and the int32 counts' wrap-around check, whose int64 sum wrapped too) went
    negative.  Now ValueError; a scale whose counts fit still fits, all counts >= 0."""
    Y = get_link("prg").check_data(_scaled_prg(1e35, J=200))
    s = GibbsSampler.for_training(Y, 4, method="blocked", random_state=0, link="prg")
    with pytest.raises(ValueError, match=r"add up to 2\*\*63 or more.*too large"):
        s.sample_layer_one_blocked()
    Y = get_link("prg").check_data(_scaled_prg(1e20, J=2000))
    s = GibbsSampler.for_training(Y, 4, method="blocked", random_state=0, link="prg")
    counts = s.sample_layer_one_blocked()
    assert counts.dtype == np.int64 and counts.min() >= 0 and s.m[0].min() >= 0
    assert int(counts.sum()) == int(s.m[0].sum(dtype=np.int64)) > 2**31
