"""Checks of a Gibbs chain: its input, before any kernel runs (:func:`check_chain_input`,
ValueError), and its state in the sampler's ``debug`` mode.

Each debug check raises AssertionError on the first violation.  :func:`check_invariants`
runs both halves; the distributed chain checks its global part
(:func:`check_global_invariants`) and each local part
(:func:`check_local_invariants`) where they live.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from pygbn.model.links import LATENT_COUNTS
from pygbn.model.network import Network

__all__ = ["check_chain_input", "check_layer_index", "check_keep", "check_invariants", "check_global_invariants",
           "check_local_invariants"]


def check_chain_input(network: Network, Y, values: bool = True) -> None:
    """Raise ValueError unless ``network`` and the data ``Y`` fit together.

    ``Y`` must be a scipy.sparse CSR matrix with ``network.n_features``
    columns; the network must pass :meth:`Network.check` (shapes that chain,
    Phi^(t) finite, nonnegative and on the simplex, the parameters in range,
    the vocabulary); every per-sample array present on a layer must have one
    row per sample of ``Y`` (``theta`` (J, K_t), ``c`` (J,)) and ``counts``
    the shape of Phi^(t).  The message names the mismatch.  This runs before
    any kernel, since the kernels do not check bounds.  With ``values=False``
    only the shapes are checked (each Phi^(t) has as many rows as layer t-1
    has nodes, r one entry per top node), as between iterations.
    """
    if not (sp.issparse(Y) and Y.format == "csr"):
        raise ValueError(f"Y must be a scipy.sparse CSR matrix (validated by the link's check_data), "
                         f"got {type(Y).__name__}")
    if values:
        network.check()
    else:
        for t in range(2, network.depth + 1):
            if network.layers[t - 1].n_inputs != network.layers[t - 2].width:
                raise ValueError(f"Phi^({t}) has {network.layers[t - 1].n_inputs} rows but layer {t - 1} "
                                 f"has width {network.layers[t - 2].width}")
        if np.shape(network.r) != (network.layers[-1].width,):
            raise ValueError(f"r must have shape ({network.layers[-1].width},), got {np.shape(network.r)}")
    J, V = Y.shape
    if V != network.n_features:
        raise ValueError(f"Y has {V} columns but the network has {network.n_features} features "
                         f"(Phi^(1) has {network.n_features} rows)")
    for t, layer in enumerate(network.layers, start=1):
        K = layer.width
        for name, arr, shape in (("theta", layer.theta, (J, K)), ("c", layer.c, (J,)),
                                 ("counts", layer.counts, (layer.n_inputs, K))):
            if arr is not None and np.shape(arr) != shape:
                raise ValueError(f"layer {t}'s {name} has shape {np.shape(arr)} but Y has {J} rows and the "
                                 f"layer is {layer.n_inputs} x {K}: expected {shape}")


def check_layer_index(t, depth: int, lowest: int = 1) -> int:
    """``t`` as an int after checking that it names a layer, ``lowest <= t <= depth``
    (1-based: a 0 or a negative index would reach another layer through Python's
    wrap-around); else ValueError naming ``t`` and the range."""
    if not (isinstance(t, (int, np.integer)) and not isinstance(t, bool) and lowest <= t <= depth):
        raise ValueError(f"t must be an int in [{lowest}, {depth}] (a layer of this {depth}-layer chain), got {t!r}")
    return int(t)


def check_keep(keep, width: int) -> np.ndarray:
    """``keep`` as a bool array after checking that it is a mask of the ``width`` top
    factors keeping at least one; else ValueError naming ``keep`` (an int array would
    select columns by index, and an empty mask leave a layer of no factors)."""
    mask = np.asarray(keep)
    if mask.dtype != np.bool_ or mask.shape != (width,) or not mask.any():
        raise ValueError(f"keep must be a boolean mask of the {width} top factors with at least one True, "
                         f"got {keep!r}")
    return mask


def check_invariants(sampler: "GibbsSampler") -> None:
    """Debug checks of the chain state; raises AssertionError on the first violation.

    Phi columns sum to 1; every parameter finite and positive; the split of
    the layer-one counts adds up to the data (Poisson link) or to the
    latent counts; counts propagated up never exceed the counts below
    (``1 <= CRT(m) <= m``); the collapsed counts agree with the labels.
    :func:`check_global_invariants` then :func:`check_local_invariants`.
    """
    sampler._check_not_released()
    check_global_invariants(sampler)
    check_local_invariants(sampler)


def check_global_invariants(sampler: "GibbsSampler") -> None:
    """The checks of :func:`check_invariants` on the global part: Phi^(t), r,
    gamma0, c0, and (when the chain holds documents) the layer-one term counts
    against the data."""
    net = sampler.network
    for t, layer in enumerate(net.layers, start=1):
        phi = layer.phi
        if not np.isfinite(phi).all() or (phi < 0).any():
            raise AssertionError(f"Phi^({t}) not finite/nonnegative")
        if not (sampler.method == "collapsed" and t == 1):
            err = np.abs(phi.sum(axis=0) - 1.0).max()
            if err > 1e-9:
                raise AssertionError(f"Phi^({t}) columns do not sum to 1 (max error {err:g})")
    if not np.isfinite(net.r).all() or (net.r <= 0).any():
        raise AssertionError("r not finite and positive")
    for name, v in (("gamma0", net.gamma0), ("c0", net.c0)):
        if not (np.isfinite(v) and v > 0):
            raise AssertionError(f"{name} = {v} not finite and positive")
    if sampler.link.latent_mode == LATENT_COUNTS and sampler.n_docs \
            and (sampler.update_globals or sampler.method == "collapsed"):
        col = np.asarray(_integer_counts(sampler.Y).sum(axis=0)).ravel()
        if not np.array_equal(net.layers[0].counts.sum(axis=1), col):
            raise AssertionError("layer-one term counts do not add up to the data")


def _integer_counts(Y):
    """Count data ``Y`` with int64 values, whose sums are exact (float64 sums round above 2**53;
    the link keeps every total below 2**63)."""
    return sp.csr_matrix((Y.data.astype(np.int64), Y.indices, Y.indptr), shape=Y.shape)


def check_local_invariants(sampler: "GibbsSampler") -> None:
    """The checks of :func:`check_invariants` on the local part: theta^(t), c^(t)
    and the counts m^(t) of the chain's documents, and the collapsed tokens."""
    net = sampler.network
    for t, layer in enumerate(net.layers, start=1):
        if layer.theta is not None and not (sampler.method == "collapsed" and t == 1):
            if not np.isfinite(layer.theta).all() or (layer.theta <= 0).any():
                raise AssertionError(f"theta^({t}) not finite and positive")
        if layer.c is not None and (not np.isfinite(layer.c).all() or (layer.c <= 0).any()):
            raise AssertionError(f"c^({t + 1}) not finite and positive")
    m1 = sampler.m[0]
    if sampler.link.latent_mode == LATENT_COUNTS:
        row = np.asarray(_integer_counts(sampler.Y).sum(axis=1)).ravel()
        if not np.array_equal(m1.sum(axis=1), row):
            raise AssertionError("sum_k x_vjk != x_vj (layer-one split does not add up)")
    for t in range(2, net.depth + 1):
        below, here = sampler.m[t - 2], sampler.m[t - 1]
        tot_below = below.sum(axis=1)
        tot_here = here.sum(axis=1)
        if (tot_here > tot_below).any():
            raise AssertionError(f"layer {t} holds more counts than layer {t - 1} (CRT > m)")
        nnz_below = (below > 0).sum(axis=1)
        if (tot_here < nnz_below).any():
            raise AssertionError(f"layer {t}: CRT gave 0 tables for a positive count")
    if sampler.method != "blocked":
        sampler.tokens.check()
