"""One hidden layer of a gamma belief network."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np


@dataclass(eq=False)
class Layer:
    """Hidden layer ``t`` of a GBN (paper eq:PGBN).

    Parameters
    ----------
    phi : ndarray of shape (K_{t-1}, K_t)
        The connection weights Phi^(t); every column lies on the simplex
        (paper eq:Phi).  For ``t = 1``, ``K_0 = V`` is the data dimension.
    eta : float
        Concentration of the Dirichlet prior on the columns of ``phi``.
    c_median : float
        Median over the training samples of ``c_j^(t+1)``, the gamma rate of
        ``theta_j^(t)`` (``c_j^(2) = (1 - p_j^(2)) / p_j^(2)``).  Used to start
        test-time chains and to generate data.

    Attributes
    ----------
    theta : ndarray of shape (J, K_t) or None
        Per-sample hidden units theta^(t) while a sampler runs on the layer.
    c : ndarray of shape (J,) or None
        Per-sample rates c_j^(t+1) while a sampler runs.
    counts : ndarray of shape (K_{t-1}, K_t), TermCounts or None
        The latest latent counts ``x^(t)_{v.k}`` that Phi^(t)'s conditional
        (eq:step2) is based on (layer one's counts of count data are stored by
        term while a blocked or partial chain runs:
        :class:`pygbn.inference.term_counts.TermCounts`, whose ``astype`` gives
        the dense array).
    """

    phi: np.ndarray
    eta: float = 0.05
    c_median: float = 1.0
    theta: Optional[np.ndarray] = None
    c: Optional[np.ndarray] = None
    counts: Optional[np.ndarray] = None

    @property
    def width(self) -> int:
        """K_t, the number of nodes (factors) of the layer."""
        return int(self.phi.shape[1])

    @property
    def n_inputs(self) -> int:
        """K_{t-1}, the width of the layer below (V for layer one)."""
        return int(self.phi.shape[0])

    def posterior_mean_phi(self) -> np.ndarray:
        """Posterior mean of Phi^(t) given ``counts``: ``(eta + counts) / column sums``."""
        if self.counts is None:
            return self.phi.copy()
        a = self.counts.astype(np.float64)   # one (K_{t-1}, K_t) array, updated in place
        a += self.eta
        a /= a.sum(axis=0, keepdims=True)
        return a

    def summary(self) -> "Layer":
        """A copy without per-sample state (what a fitted network keeps)."""
        return Layer(phi=np.array(self.phi, dtype=np.float64, copy=True), eta=float(self.eta),
                     c_median=float(self.c_median))

    def __repr__(self) -> str:
        return f"Layer(n_inputs={self.n_inputs}, width={self.width}, eta={self.eta:g})"
