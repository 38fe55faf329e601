"""The engine's public boundaries: schedules, n_jobs, and network/data shapes before any kernel.

The Cython kernels do not check bounds; every public entry must refuse a
mismatch with a ValueError that names it (never read out of bounds).
"""
import os

import numpy as np
import pytest
import scipy.sparse as sp

from pygbn import GBN, random
from pygbn._utils import effective_n_jobs
from pygbn.inference import GibbsSampler, Schedule, fit_layerwise, infer_local
from pygbn.model import Layer, Network
from pygbn.model.links import get_link

QUICK = dict(burn_in=(4, 3), n_collect=3, transform_iter=(2, 3))


@pytest.fixture(scope="module")
def Y():
    rng = np.random.default_rng(0)
    return sp.csr_matrix(rng.poisson(1.5, size=(30, 12)).astype(np.float64))


@pytest.fixture(scope="module")
def fitted(Y):
    return GBN(n_components=5, n_layers=2, min_width=0, random_state=0, **QUICK).fit(Y)


# ---------------------------------------------------------------- schedules
@pytest.mark.parametrize("burn_in,n_collect,n_layers,bad_layer", [
    ((0,), 0, 1, 1),
    (0, 0, 3, 1),
    ((5, 0), (3, 0), 2, 2),
    ((4, 2, 0), (1, 1, 0), 3, 3),
])
def test_a_layer_without_iterations_is_refused(Y, burn_in, n_collect, n_layers, bad_layer):
    with pytest.raises(ValueError, match=f"at least one iteration.*layer {bad_layer} "):
        GBN(burn_in=burn_in, n_collect=n_collect, n_layers=n_layers).fit(Y)
    with pytest.raises(ValueError, match=f"layer {bad_layer} "):
        Schedule.for_layers(n_layers, burn_in=burn_in, n_collect=n_collect)


def test_one_iteration_per_layer_is_enough(Y):
    for burn_in, n_collect in ((0, 1), (1, 0)):
        m = GBN(n_components=4, n_layers=2, min_width=0, burn_in=burn_in, n_collect=n_collect,
                transform_iter=(1, 1), random_state=0).fit(Y)
        assert len(m.networks_) == 2 and m.transform(Y[:2]).shape == (2, m.widths_[0])


def test_fit_layerwise_takes_only_a_schedule(Y):
    with pytest.raises(ValueError, match="Schedule"):
        fit_layerwise(Y, (10, 5))


# ------------------------------------------------------------------- n_jobs
def test_effective_n_jobs():
    cores = os.cpu_count() or 1
    assert effective_n_jobs(None) == 1 and effective_n_jobs(3) == 3 and effective_n_jobs(np.int64(2)) == 2
    assert effective_n_jobs(-1) == cores and effective_n_jobs(-2) == max(1, cores - 1)
    assert effective_n_jobs(-10 * cores) == 1
    for bad in (0, True, False, 1.0, 2.5, "2", [1]):
        with pytest.raises(ValueError, match="n_jobs"):
            effective_n_jobs(bad)


def test_n_jobs_past_a_c_int_is_refused_by_name(Y, capsys):
    """n_jobs=2**31 reached the kernels and failed there with 'OverflowError: value too large
    to convert to int' (a traceback from 'pygbn fit --jobs 10000000000'); now a ValueError
    naming n_jobs, and the command line refuses --jobs by name."""
    assert effective_n_jobs(2**31 - 1) == 2**31 - 1 and effective_n_jobs(-2**40) == 1
    for bad in (2**31, np.int64(2**40), 10**12):
        with pytest.raises(ValueError, match=r"n_jobs must be at most 2\*\*31 - 1 \(threads\), got"):
            effective_n_jobs(bad)
        with pytest.raises(ValueError, match="n_jobs must be at most"):
            GBN(n_jobs=bad, method="partial", **QUICK).fit(Y)
    from pygbn.cli import main
    assert main(["fit", "absent.npz", "-o", "m.npz", "--jobs", "10000000000"]) == 2
    assert "argument --jobs: expected at most 2**31 - 1 threads, got '10000000000'" in capsys.readouterr().err


def test_n_jobs_is_resolved_the_same_at_every_entry(Y, fitted):
    cores = os.cpu_count() or 1
    net = fitted.network_
    for n_jobs, threads in ((None, 1), (-1, cores), (2, 2)):
        s = GibbsSampler.for_training(Y, 4, method="blocked", n_jobs=n_jobs, random_state=0)
        assert s.n_threads == threads
        s = GibbsSampler.for_inference(net, Y, n_jobs=n_jobs, random_state=0)
        assert s.n_threads == threads
    sched = Schedule.for_layers(1, burn_in=2, n_collect=2)
    a = fit_layerwise(Y, sched, n_components=4, n_jobs=None, random_state=1)
    b = fit_layerwise(Y, sched, n_components=4, n_jobs=-1, random_state=1)
    np.testing.assert_array_equal(a.networks[0].layers[0].phi, b.networks[0].layers[0].phi)
    f1 = infer_local(net, Y, burn_in=1, n_collect=2, n_jobs=None, random_state=0).features
    f2 = infer_local(net, Y, burn_in=1, n_collect=2, n_jobs=-1, random_state=0).features
    np.testing.assert_array_equal(f1, f2)
    np.testing.assert_array_equal(
        random.crt(np.full(50, 7), 0.5, random_state=0, n_jobs=None),
        random.crt(np.full(50, 7), 0.5, random_state=0, n_jobs=-1))
    for bad in (0, True, 1.5, "4"):
        with pytest.raises(ValueError, match="n_jobs"):
            GibbsSampler.for_training(Y, 4, n_jobs=bad)
        with pytest.raises(ValueError, match="n_jobs"):
            GibbsSampler.for_inference(net, Y, n_jobs=bad)
        with pytest.raises(ValueError, match="n_jobs"):
            fit_layerwise(Y, sched, n_components=4, n_jobs=bad)
        with pytest.raises(ValueError, match="n_jobs"):
            infer_local(net, Y, burn_in=1, n_collect=1, n_jobs=bad)
        with pytest.raises(ValueError, match="n_jobs"):
            GBN(n_jobs=bad, **QUICK).fit(Y)
        with pytest.raises(ValueError, match="n_jobs"):
            fitted.set_params(n_jobs=bad).transform(Y)
        with pytest.raises(ValueError, match="n_jobs"):
            random.crt(np.full(3, 2), 0.5, n_jobs=bad)
        with pytest.raises(ValueError, match="n_jobs"):
            random.dirichlet(np.ones((4, 3)), n_jobs=bad)
    fitted.set_params(n_jobs=1)


# ------------------------------------------------- network against the data
def _live(net, J, with_theta=True):
    """A copy of ``net`` with per-sample state for J samples."""
    live = net.summary()
    for layer in live.layers:
        layer.c = np.ones(J)
        layer.theta = np.full((J, layer.width), 0.5) if with_theta else None
    return live


def test_sampler_refuses_data_of_another_width(Y, fitted):
    net = fitted.network_
    with pytest.raises(ValueError, match="Y has 7 columns but the network has 12 features"):
        GibbsSampler(_live(net, Y.shape[0]), Y[:, :7].tocsr(), method="blocked")
    with pytest.raises(ValueError, match="Y has 7 features"):
        GibbsSampler.for_inference(net, Y[:, :7].tocsr())
    with pytest.raises(ValueError, match="CSR"):
        GibbsSampler(_live(net, Y.shape[0]), Y.toarray(), method="blocked")
    with pytest.raises(ValueError, match="CSR"):
        GibbsSampler(_live(net, Y.shape[0]), Y.tocsc(), method="blocked")


def test_sampler_refuses_layers_that_do_not_chain(Y, fitted):
    live = _live(fitted.network_, Y.shape[0])
    top = live.layers[1]
    top.phi = np.full((top.n_inputs + 2, top.width), 1.0 / (top.n_inputs + 2))
    top.counts = None
    with pytest.raises(ValueError, match=r"Phi\^\(2\) has .* rows but layer 1 has width"):
        GibbsSampler(live, Y, method="blocked")


@pytest.mark.parametrize("what", ["theta", "c", "counts"])
def test_sampler_refuses_per_sample_state_of_another_size(Y, fitted, what):
    J = Y.shape[0]
    live = _live(fitted.network_, J)
    layer = live.layers[1]
    bad = {"theta": np.ones((J + 3, layer.width)), "c": np.ones(J - 1),
           "counts": np.zeros((layer.n_inputs, layer.width + 1), dtype=np.int64)}[what]
    setattr(layer, what, bad)
    with pytest.raises(ValueError, match=f"layer 2's {what} has shape"):
        GibbsSampler(live, Y, method="blocked")


def test_sweep_refuses_missing_or_mismatched_state(Y, fitted):
    J = Y.shape[0]
    s = GibbsSampler(_live(fitted.network_, J, with_theta=False), Y, method="blocked")
    with pytest.raises(ValueError, match="layer 1 has no theta"):
        s.sweep()
    s = GibbsSampler(_live(fitted.network_, J), Y, method="collapsed")
    with pytest.raises(ValueError, match="token labels"):
        s.sweep()
    s = GibbsSampler(_live(fitted.network_, J), Y, method="blocked")
    s.network.layers[0].theta = np.ones((J - 1, s.network.layers[0].width))
    with pytest.raises(ValueError, match="layer 1's theta"):
        s.sweep()
    s = GibbsSampler(_live(fitted.network_, J), Y, method="blocked")
    s.m[1] = np.zeros((J, 1), dtype=np.int64)
    with pytest.raises(ValueError, match="m must hold"):
        s.local_upward()
    # a link with per-sample parameters needs one per sample
    prg = fitted.network_.summary()
    prg.link = get_link("prg")
    s = GibbsSampler(_live(prg, J), Y, method="blocked")
    with pytest.raises(ValueError, match="aux"):
        s.sweep()
    s.aux = np.ones(J)
    s.sweep()  # complete state: runs


def test_heldout_must_match_the_data(Y, fitted):
    sched = Schedule.for_layers(1, burn_in=1, n_collect=1)
    with pytest.raises(ValueError, match="heldout"):
        fit_layerwise(Y, sched, n_components=3, heldout=Y[:5])
    with pytest.raises(ValueError, match="heldout"):
        fit_layerwise(Y, sched, n_components=3, heldout=Y.toarray()[:, :5])
    with pytest.raises(ValueError, match="heldout"):
        infer_local(fitted.network_, Y, burn_in=1, n_collect=1, heldout=Y[:, :4])


def test_hand_built_network_against_data():
    net = Network(layers=[Layer(np.full((6, 2), 1 / 6))], r=np.ones(2))
    m = GBN.from_networks(net, transform_iter=(1, 2), random_state=0)
    assert m.transform(np.ones((3, 6))).shape == (3, 2)
    with pytest.raises(ValueError, match="X has 5 features, but GBN is expecting 6"):
        m.transform(np.ones((3, 5)))


# ------------------------------------------- held-out counts, eta, K, snapshots (review, 2026-11-28)
def test_heldout_in_any_format_is_canonical_counts(Y):
    """A CSC heldout had its column pointers read as row pointers (out of bounds: a crash),
    a COO one failed on .indptr, negative counts passed: all are now converted or refused."""
    H = sp.csr_matrix(np.random.default_rng(1).poisson(1.0, size=Y.shape))
    sched = Schedule.for_layers(1, burn_in=3, n_collect=5)
    ref = fit_layerwise(Y, sched, n_components=4, random_state=0, heldout=H).perplexity
    for fmt in (H.tocsc(), H.tocoo(), H.toarray()):
        got = fit_layerwise(Y, sched, n_components=4, random_state=0, heldout=fmt).perplexity
        assert got == ref and np.isfinite(got).all()
    with pytest.raises(ValueError, match="heldout"):
        fit_layerwise(Y, sched, n_components=4, heldout=-H)
    with pytest.raises(ValueError, match="heldout"):
        fit_layerwise(Y, sched, n_components=4, heldout=H[:, :5])
    with pytest.raises(ValueError, match="heldout must be binary"):
        fit_layerwise((Y > 0).astype(float), sched, link="bernoulli", method="blocked",
                      n_components=4, heldout=H * 2)


def test_heldout_predictive_checks_its_samples(fitted, Y):
    from pygbn.inference.testchain import HeldoutPredictive

    pred = HeldoutPredictive(sp.csr_matrix(Y), 1)
    phi = fitted.network_.layers[0].phi
    with pytest.raises(ValueError, match="phi must be"):
        pred.add(phi[:3], np.ones((Y.shape[0], phi.shape[1])))
    with pytest.raises(ValueError, match="phi must be"):
        pred.add(phi, np.ones((5, phi.shape[1])))
    # the shapes as given: a scalar phi was reported as shape (1,) (its contiguous copy's)
    with pytest.raises(ValueError, match=r"got \(\) and"):
        pred.add(1.0, np.ones((Y.shape[0], phi.shape[1])))
    with pytest.raises(ValueError, match="canonical CSR"):
        HeldoutPredictive(sp.csc_matrix(Y), 1)


@pytest.mark.parametrize("eta", [(0.05, float("nan")), (0.05, -1.0), 0.0])
def test_eta_is_checked_before_the_chain_starts(Y, eta):
    """eta = nan at a later layer hung in the Dirichlet kernel (GIL released) after the first
    depth had trained; now every layer's value is checked up front."""
    with pytest.raises(ValueError, match="eta must be positive"):
        fit_layerwise(Y, Schedule.for_layers(2, burn_in=3, n_collect=2), n_components=4, eta=eta)


@pytest.mark.parametrize("K", [2.5, True, "5", 0, -1])
def test_n_components_is_a_positive_int(Y, K):
    with pytest.raises(ValueError, match="n_components"):
        GibbsSampler.for_training(Y, K)


def test_schedule_prune_must_be_a_bool_and_callbacks_may_return_numpy_false(Y):
    with pytest.raises(ValueError, match="prune must be True or False"):
        Schedule.for_layers(1, prune="False")
    calls = []

    def stop(info):
        calls.append(info["iteration"])
        return np.False_

    fit_layerwise(Y, Schedule.for_layers(2, burn_in=3, n_collect=2), n_components=4, callback=stop)
    assert calls == [1]


def test_snapshot_checks_c_and_refuses_a_released_sampler(Y):
    res = fit_layerwise(Y, Schedule.for_layers(2, burn_in=3, n_collect=2, min_width=0), n_components=4,
                        random_state=0, method="collapsed")
    sampler = res.sampler
    with pytest.raises(ValueError, match="one 1-d array per layer"):
        sampler.snapshot(c=[sampler.network.layers[0].c])
    sampler.snapshot(release=True)
    for call in (sampler.snapshot, lambda: sampler.sweep(True)):
        with pytest.raises(ValueError, match="released"):
            call()


# ------------------------------------------------------- the sampler's own methods
def _chain(Y, method="collapsed", K=4, depth=1):
    s = GibbsSampler.for_training(Y, K, method=method, random_state=0)
    s.sweep()
    for _ in range(depth - 1):
        s.add_layer(0.1)
        s.sweep()
    return s


@pytest.mark.parametrize("method", ["collapsed", "blocked", "partial"])
def test_prune_and_keep_top_refuse_masks_that_are_not_of_the_top_factors(Y, method):
    """keep_top(int array) selected columns by index, then raised IndexError half-way (widths
    and m left apart); an all-False mask left a layer of no factors (ZeroDivisionError at the
    next sweep); a mask or `used` of another length returned its length as the new width while
    nothing was pruned."""
    s = _chain(Y, method)
    for keep in (np.array([1, 0, 1, 0]), np.zeros(4, bool), np.ones(3, bool), [True] * 5):
        with pytest.raises(ValueError, match="keep must be a boolean mask of the 4 top factors"):
            s.keep_top(keep)
    for used in (np.ones(3), np.array([-1, 0, 0, 0]), np.ones((4, 1))):
        with pytest.raises(ValueError, match="used must hold a nonnegative count for each of the 4"):
            s.prune_top(used=used)
    assert s.network.widths == [4] and [m.shape for m in s.m] == [(Y.shape[0], 4)]
    assert s.keep_top([True, False, True, True]) == 3 and s.network.widths == [3]
    s.sweep()


def test_conditionals_refuse_a_layer_outside_the_chain(Y):
    """sample_theta(0) drew the top layer's theta with layer one's rates (Python's index -1),
    silently; propagate_up(1) and sample_phi(T + 1) failed deep in a kernel or a list."""
    s = _chain(Y, "blocked", depth=2)
    top = s.network.layers[-1].theta.copy()
    for call in (lambda: s.sample_theta(0), lambda: s.sample_theta(3), lambda: s.sample_phi(-1),
                 lambda: s.propagate_up(1), lambda: s.theta_sums(0), lambda: s.sample_theta(1.0)):
        with pytest.raises(ValueError, match=r"t must be an int in \[[12], 2\]"):
            call()
    np.testing.assert_array_equal(s.network.layers[-1].theta, top)


@pytest.mark.parametrize("method", ["collapsed", "blocked"])
def test_add_layer_checks_eta_and_phi_before_changing_the_chain(Y, method):
    """add_layer(phi of another shape) appended a layer that did not chain (the next sweep
    refused it); a bad eta failed after a draw of the chain's stream (and, for a string, with a
    message that did not name eta)."""
    s = _chain(Y, method)
    state = s.rng.bit_generator.state
    with pytest.raises(ValueError, match=r"phi must have shape \(4, 4\)"):
        s.add_layer(0.1, phi=np.full((3, 3), 1 / 3))
    for eta in ("x", float("nan"), [0.1]):
        with pytest.raises(ValueError, match="eta must be a finite positive number"):
            s.add_layer(eta)
    with pytest.raises(ValueError, match="eta must be a finite positive number"):
        GibbsSampler.for_training(Y, 4, eta="x")
    assert s.network.widths == [4] and len(s.m) == 1 and s.rng.bit_generator.state == state
    s.add_layer(0.1)
    s.sweep()


def test_a_released_sampler_refuses_every_draw_and_change(Y):
    """layer_one_sample raised AttributeError and prune_top IndexError after
    snapshot(release=True); add_layer appended a layer to the released chain."""
    s = _chain(Y, "collapsed")
    s.snapshot(release=True)
    for call in (s.layer_one_sample, lambda: s.add_layer(0.1), s.prune_top, s.top_usage,
                 lambda: s.keep_top(np.ones(4, bool))):
        with pytest.raises(ValueError, match="released"):
            call()
    assert s.network.widths == [4]


def test_heldout_predictive_reads_any_layout_of_its_samples(fitted, Y):
    """float32, Fortran-ordered, integer or read-only broadcast samples failed in the kernel
    ('Buffer dtype mismatch', 'ndarray is not C-contiguous')."""
    from pygbn.inference.testchain import HeldoutPredictive

    phi = fitted.network_.layers[0].phi
    theta = np.random.default_rng(0).gamma(1.0, size=(Y.shape[0], phi.shape[1]))
    ref, other = HeldoutPredictive(Y), HeldoutPredictive(Y)
    ref.add(phi, theta)
    ref.add(phi, np.ones_like(theta))
    other.add(np.asfortranarray(phi), theta.tolist())
    other.add(phi, np.broadcast_to(np.ones(phi.shape[1], dtype=np.int64), theta.shape))
    assert other.perplexity() == ref.perplexity()
    half = HeldoutPredictive(Y)
    half.add(phi.astype(np.float32), theta)
    assert np.isfinite(half.perplexity())


def test_infer_local_checks_the_width_of_no_samples(fitted):
    """No samples returned an empty result for data of any width (and any format)."""
    with pytest.raises(ValueError, match="Y has 3 columns but the network has 12 features"):
        infer_local(fitted.network_, sp.csr_matrix((0, 3)), burn_in=1, n_collect=1)
    assert infer_local(fitted.network_, sp.csr_matrix((0, 12)), burn_in=1, n_collect=1).features.shape == (0, 5)


@pytest.mark.parametrize("burn_in,n_collect", [(3, (1,)), ((1,), 2), ("12", "12"), (np.ones((1, 1), int), (1,))])
def test_schedule_names_a_field_that_is_not_per_layer(burn_in, n_collect):
    """Schedule(3, 2), whose docstring says it validates every field, raised TypeError
    ('int' object is not iterable); a string was read as its characters."""
    with pytest.raises(ValueError, match="must be a sequence of one int per layer"):
        Schedule(burn_in, n_collect)
    assert Schedule((3,), [2]).burn_in == (3,)


def test_schedule_names_an_entry_of_a_ragged_field():
    """A ragged burn_in ([1, [2]]) raised numpy's 'inhomogeneous shape' ValueError naming no field."""
    with pytest.raises(ValueError, match=r"burn_in must be a nonnegative int, got \[2\]"):
        Schedule([1, [2]], [1, 1])
    with pytest.raises(ValueError, match=r"n_collect must be a nonnegative int, got \(1, 2\)"):
        Schedule([1, 1], [1, (1, 2)])
