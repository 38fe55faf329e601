"""The global/local split of a blocked chain (pygbn.inference.partition), in one
process: what DaskGBN runs on workers, without Dask."""
import numpy as np
import pytest

import pygbn
from pygbn._utils import draw_entropy, generators_from_entropy, spawn_generators
from pygbn.datasets import load_demo
from pygbn.inference.gibbs import BLOCK_SIZE, GibbsSampler
from pygbn.inference.sufficient import SufficientStats
from pygbn.inference.layerwise import SamplerChain, Schedule, fit_layerwise, run_layerwise
from pygbn.inference.partition import LocalPart, PartitionedChain, combine_encoded, encode_stats
from pygbn.model.links import get_link

# traces every 10 iterations (the default, 25, is longer than these stages): the traces are compared too
SCHEDULE = Schedule.for_layers(3, burn_in=(12, 6), n_collect=10, trace_every=10)


def test_streams_rebuilt_from_entropy_are_the_spawned_ones():
    """Block b's stream rebuilt from the family's entropy alone is the b-th spawned
    child, and drawing the entropy advances the parent as spawning does."""
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    spawned = spawn_generators(a, 10)
    rebuilt = generators_from_entropy(draw_entropy(b), 4, 9)
    for g, h in zip(spawned[4:9], rebuilt):
        np.testing.assert_array_equal(g.random(5), h.random(5))
    assert a.bit_generator.state == b.bit_generator.state


def _data(link):
    X = load_demo().counts[:513].tocsr()   # 4 whole blocks and one of a single document
    X = X[:, np.asarray(X.sum(axis=0)).ravel() > 0].tocsr()
    obs, held = pygbn.split_tokens(X, 0.7, random_state=4)
    if link == "bernoulli":
        obs = X.copy()
        obs.data[:] = 1.0
    elif link == "prg":
        obs = X.astype(np.float64)
        obs.data = obs.data * 0.37 + 0.05
    Y = get_link(link).check_data(obs)
    return Y, (held if link == "poisson" else None)


def _parts(Y, H, cuts):
    bounds = [0] + [c * BLOCK_SIZE for c in cuts] + [Y.shape[0]]
    return [LocalPart(Y[a:b], first_block=a // BLOCK_SIZE, heldout=None if H is None else H[a:b])
            for a, b in zip(bounds[:-1], bounds[1:])]


def _assert_same(ref, res):
    assert ref.widths == res.widths and ref.perplexity == res.perplexity
    # the training log-likelihood traces too (each document's value summed in document order)
    assert ref.loglikelihoods == res.loglikelihoods and ref.trace_iterations == res.trace_iterations
    assert ref.trace_widths == res.trace_widths and all(len(t) for t in ref.loglikelihoods)
    for na, nb in zip(ref.networks, res.networks):
        for la, lb in zip(na.layers, nb.layers):
            np.testing.assert_array_equal(la.phi, lb.phi)
            assert la.c_median == lb.c_median
        np.testing.assert_array_equal(na.r, nb.r)
        assert (na.gamma0, na.c0, na.link) == (nb.gamma0, nb.c0, nb.link)


@pytest.mark.parametrize("link,cuts", [("poisson", (2,)), ("poisson", (1, 3, 4)),
                                       ("bernoulli", (1, 3, 4)), ("prg", (2, 4))])
def test_partitioned_chain_is_the_one_process_chain(link, cuts):
    """The global part with its documents in 2 or 4 local parts (the last one a
    single document) gives the networks, widths (pruning included) and held-out
    perplexities (and log-likelihood traces) of fit_layerwise, bit for bit."""
    Y, H = _data(link)
    ref = fit_layerwise(Y, SCHEDULE, link=link, n_components=40, method="blocked", random_state=9,
                        heldout=H)
    parts = _parts(Y, H, cuts)
    chain = PartitionedChain.for_training(lambda m: [p.run(m) for p in parts], Y.shape[1], 40,
                                          link=get_link(link), random_state=9)
    res = run_layerwise(chain, SCHEDULE, [0.05] * 3, heldout=H is not None, check=True)
    _assert_same(ref, res)


def _drop_every_fifth_from_one(sampler):
    """Make pruning drop factors 1, 6, 11, ... of every new top layer (a short chain
    on small data rarely leaves a factor unused)."""
    sampler.top_keep = lambda used=None: np.arange(sampler.network.layers[-1].width) % 5 != 1


def test_pruning_is_the_same():
    Y, H = _data("poisson")
    s = GibbsSampler.for_training(Y, 20, method="blocked", random_state=9)
    _drop_every_fifth_from_one(s)
    ref = run_layerwise(SamplerChain(s, H), SCHEDULE, [0.05] * 3, heldout=True)
    parts = _parts(Y, H, (1, 3))
    chain = PartitionedChain.for_training(lambda m: [p.run(m) for p in parts], Y.shape[1], 20,
                                          link=get_link("poisson"), random_state=9)
    _drop_every_fifth_from_one(chain.glob)
    _assert_same(ref, run_layerwise(chain, SCHEDULE, [0.05] * 3, heldout=True))
    assert ref.widths == [[16], [16, 13], [16, 13, 10]]


@pytest.mark.parametrize("method", ["blocked", "partial"])
def test_a_local_part_restored_from_a_checkpoint_replays_exactly(method):
    """A local part lost after message 17 and rebuilt from its state after
    message 9 (data again, get_state/set_state, messages 9..16 replayed) leaves
    the chain unchanged."""
    Y, H = _data("poisson")
    ref = fit_layerwise(Y, SCHEDULE, n_components=20, method=method, random_state=2, heldout=H)
    parts = _parts(Y, H, (2,))
    log, saved = [], {}

    def send(message):
        if len(log) == 9:
            saved["state"] = parts[1].get_state()
        if len(log) == 17:
            fresh = LocalPart(parts[1].Y, first_block=2, heldout=parts[1].heldout)
            fresh.set_state(saved["state"])
            for m in log[9:]:
                fresh.run(m)
            parts[1] = fresh
        log.append(message)
        return [p.run(message) for p in parts]

    chain = PartitionedChain.for_training(send, Y.shape[1], 20, link=get_link("poisson"),
                                          random_state=2, method=method)
    _assert_same(ref, run_layerwise(chain, SCHEDULE, [0.05] * 3, heldout=True))
    assert len(log) > 17


def test_sparse_statistics_combine_like_dense_ones():
    Y, _ = _data("poisson")
    s = GibbsSampler.for_training(Y, 6, method="blocked", random_state=0)
    s.add_layer(0.05)
    parts = [s.local_upward(blocks=(2, 5)), s.local_upward(blocks=(0, 2))]
    dense = SufficientStats.combine(parts)
    sparse = combine_encoded([encode_stats(p) for p in parts])
    for a, b in zip(dense.counts, sparse.counts):
        np.testing.assert_array_equal(a, b)
        assert b.dtype == np.int64
    np.testing.assert_array_equal(dense.x_top, sparse.x_top)
    np.testing.assert_array_equal(dense.sum_L_blocks, sparse.sum_L_blocks)
    assert encode_stats(parts[0])["counts"][0][1].dtype == np.int32  # compact on the wire


def test_combined_counts_past_int64_are_refused():
    # each part holds its counts below 2**63; their sum must not wrap in the int64 sum
    def part(first_block, value):
        return {"counts": [((2, 3), np.array([4]), np.array([value], dtype=np.int64)), None],
                "x_top": None, "sum_L_blocks": np.zeros(1), "first_block": first_block}

    top = 2**63 - 1
    ok = combine_encoded([part(0, 2**62), part(1, top - 2**62)])
    assert ok.counts[0].reshape(-1)[4] == top and ok.counts[1] is None
    with pytest.raises(ValueError, match=r"^layer 1's counts of the 2 partitions add up to 9223372036854775808 "
                                         r"\(2\*\*63 or more"):
        combine_encoded([part(1, 2**62), part(0, 2**62)])


@pytest.mark.parametrize("cuts", [(2,), (1, 3, 4)])
def test_partitioned_partial_chain_is_the_one_process_chain(cuts):
    """method="partial" (labels drawn per document block) split over 2 or 4 local
    parts gives fit_layerwise's networks, widths and perplexities bit for bit."""
    Y, H = _data("poisson")
    ref = fit_layerwise(Y, SCHEDULE, n_components=40, method="partial", random_state=9, heldout=H)
    parts = _parts(Y, H, cuts)
    chain = PartitionedChain.for_training(lambda m: [p.run(m) for p in parts], Y.shape[1], 40,
                                          link=get_link("poisson"), random_state=9, method="partial")
    res = run_layerwise(chain, SCHEDULE, [0.05] * 3, heldout=True, check=True)
    _assert_same(ref, res)

