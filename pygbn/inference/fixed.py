"""One iteration of the test-time chain, where every global parameter is fixed.

:func:`sweep_fixed` is :meth:`GibbsSampler.sweep` (``update_p_c=True``) of a
chain made by :meth:`GibbsSampler.for_inference`, draw for draw: the same
conditionals in the same order from the same streams, so the same chain.
It leaves out what only a training chain needs: layer one's split
(:func:`pygbn.inference._fixed.split_fixed`) forms no term-factor counts
(the statistic of Phi^(1)) but counts each document's latent total as it
goes (for a_j and p_j, no pass over ``m[0]``), no statistics of the top
layer or of any Phi are gathered, and the state is checked once per chain by the caller
(:func:`pygbn.inference.testchain.infer_local`), not every iteration.

:class:`FeatureAverage` keeps the running sum of ``theta_j^(1) / theta_.j^(1)``
without temporaries of the size of theta.
"""
from __future__ import annotations

import numpy as np

from pygbn.inference import _fixed
from pygbn.inference.latent_split import split_fixed_widening
from pygbn.inference.layer_one import after_split

__all__ = ["sweep_fixed", "FeatureAverage"]


def _latent_totals(s) -> np.ndarray:
    """The chain's buffer of layer one's latent totals per document (float64),
    made once per chain."""
    totals = getattr(s, "_fixed_totals", None)
    if totals is None or totals.shape != (s.n_docs,):
        totals = s._fixed_totals = np.zeros(s.n_docs)
    return totals


def split_layer_one_fixed(s) -> np.ndarray:
    """Layer one's latent counts and split with Phi^(1) fixed (eq:step1, and the
    link's latent counts: eq:Ber-PGBN, eq:Gam-PGBN), then the PRG link's a_j
    (eq:c_g): :meth:`GibbsSampler.sample_layer_one_blocked` of an inference
    chain, the same draws, without the term-factor counts.  Returns the
    documents' latent totals ``m^(1)(2)_.j`` (float64), which the kernel counts
    as it goes (no pass over ``m[0]``)."""
    layer = s.network.layers[0]
    bounds, streams = s._blocks(None)
    theta = layer.theta[:1] if layer.theta.strides[0] == 0 else layer.theta    # one shared row
    totals = _latent_totals(s)
    over = split_fixed_widening(s, bounds, streams, theta, totals)     # m[0] widened where outgrown
    after_split(s, over, bounds, streams, totals)
    return totals


def sweep_fixed(s, lap=None) -> None:
    """One iteration of the test-time chain ``s`` (a :meth:`GibbsSampler.for_inference`
    chain, whose state :meth:`GibbsSampler.check_state` has accepted).

    Upward: layer one's split (:func:`split_layer_one_fixed`), then eq:CRT and
    eq:step1 through every upper layer (:meth:`GibbsSampler.propagate_up`, which
    gathers no statistics when Phi is fixed); p_j and c_j (eq:step6); downward:
    theta^(T), ..., theta^(1) (eq:step4).  The order and the draws of
    :meth:`GibbsSampler.sweep`.  ``lap``, when given, is called with the name of
    each part as it ends ("split", "up", "p/c", "theta"; for timing them).
    """
    lap = lap or (lambda name: None)
    totals = split_layer_one_fixed(s)
    lap("split")
    for t in range(2, s.depth + 1):
        s.propagate_up(t)
    lap("up")
    s.sample_p_c(m_dot=totals)
    lap("p/c")
    for t in range(s.depth, 0, -1):
        s.sample_theta(t)
    s.iteration += 1
    lap("theta")


class FeatureAverage:
    """Running sum of the rows of theta^(1) normalised to sum to one.

    ``add(theta)`` adds ``theta / theta.sum(axis=1, keepdims=True)`` (the same
    float64 values: numpy's own row sums, then each quotient and sum as numpy's
    ``divide`` and ``add`` form them, in one pass without a temporary,
    :func:`pygbn.inference._fixed.add_normalised`); ``mean(n)`` is the sum over ``n``.
    """

    def __init__(self, n_samples: int, n_components: int):
        self.total = np.zeros((n_samples, n_components))
        self._sums = np.empty((n_samples, 1))

    def add(self, theta: np.ndarray) -> None:
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        np.sum(theta, axis=1, keepdims=True, out=self._sums)
        _fixed.add_normalised(theta, self._sums, self.total)

    def mean(self, n: int) -> np.ndarray:
        return self.total / n
