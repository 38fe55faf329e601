"""One hidden layer of a gamma belief network."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from pygbn._utils import LOOSE_SIMPLEX_TOLERANCE, MAX_PARAMETER, SIMPLEX_TOLERANCE, first_index, positive_real


def check_parameter(value, name: str, bounded: bool = True) -> float:
    """``value`` as a float after checking it is a real number in ``(0, MAX_PARAMETER]``
    (the range :func:`pygbn.io.read_model` accepts), or with ``bounded=False`` a finite
    positive one; else ValueError naming ``name`` and the value."""
    upper = MAX_PARAMETER if bounded else np.finfo(np.float64).max
    f = positive_real(value, upper)
    if f is None:
        limit = f" (at most {upper:g})" if bounded else ""
        raise ValueError(f"{name} must be a finite positive number{limit}, got {value!r}")
    return f


def as_phi(phi, name: str = "phi") -> np.ndarray:
    """``phi`` as a float64 array after checking it is a non-empty 2-D array of numbers
    (values are checked by :meth:`pygbn.model.Network.check`)."""
    try:
        a = np.asarray(phi)
    except Exception as exc:  # ragged nested lists and the like
        raise ValueError(f"{name} must be a 2-D array of numbers: {exc}") from None
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be a 2-D array of numbers, got dtype {a.dtype}")
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D (K_(t-1), K_t), got shape {a.shape}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{name} must be non-empty, got shape {a.shape}")
    return np.asarray(a, dtype=np.float64)


def check_simplex(phi: np.ndarray, name: str, renormalise: bool = False) -> np.ndarray:
    """``phi`` (a 2-D float64 array) after checking that its entries are finite and
    nonnegative and its columns sum to 1 within :data:`pygbn.io.SIMPLEX_TOLERANCE` (paper
    eq:Phi); else ValueError naming ``name`` and the first bad entry or column.

    With ``renormalise``, a ``phi`` whose column sums are all within
    ``LOOSE_SIMPLEX_TOLERANCE`` (1e-4) of 1 but not all within ``SIMPLEX_TOLERANCE`` (a
    Phi made in float32, or rounded) is returned divided by its sums (a new array)
    instead of being refused.  Reads ``phi`` three times (reductions only: no temporary
    of its size, as a freed one stays resident) unless it is refused.
    """
    if phi.size and not (phi.min() >= 0 and phi.max() < np.inf):    # a NaN fails both
        at = first_index(~((phi >= 0) & (phi < np.inf)))
        v = float(phi[at])
        kind = "a negative" if v < 0 and np.isfinite(v) else "a non-finite"
        raise ValueError(f"{name} must be finite and nonnegative, got {kind} entry {v!r} at {at}")
    sums = phi.sum(axis=0)
    off = np.flatnonzero(np.abs(sums - 1.0) > SIMPLEX_TOLERANCE)
    if off.size and renormalise and np.abs(sums - 1.0).max() <= LOOSE_SIMPLEX_TOLERANCE:
        return phi / sums
    if off.size:
        raise ValueError(f"{name} column {int(off[0])} sums to {sums[off[0]]:.17g}, not 1: the columns "
                         f"must lie on the simplex (paper eq:Phi; tolerance {SIMPLEX_TOLERANCE:g})")
    return phi


@dataclass(eq=False)
class Layer:
    """Hidden layer ``t`` of a GBN (paper eq:PGBN).

    Parameters
    ----------
    phi : array_like of shape (K_{t-1}, K_t)
        The connection weights Phi^(t), stored as float64; every column lies on
        the simplex (paper eq:Phi; checked by :meth:`Network.check`).  For
        ``t = 1``, ``K_0 = V`` is the data dimension.
    eta : float, default=0.05
        Concentration of the Dirichlet prior on the columns of ``phi``:
        positive and at most :data:`pygbn.io.MAX_PARAMETER` (as in a model
        file).
    c_median : float, default=1.0
        Median over the training samples of ``c_j^(t+1)``, the gamma rate of
        ``theta_j^(t)`` (``c_j^(2) = (1 - p_j^(2)) / p_j^(2)``): positive and
        finite.  Used to start test-time chains and to generate data.
    theta, c, counts : optional
        The per-sample state of the same names below (None by default).

    Raises
    ------
    ValueError
        If ``phi`` is not a non-empty 2-D array of numbers, or ``eta`` or
        ``c_median`` is out of range.

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

    def __post_init__(self):
        # shapes and scalars here; the values of phi (finite, nonnegative, columns on
        # the simplex) are checked with the network's (Network.check)
        self.phi = as_phi(self.phi)
        self.eta = check_parameter(self.eta, "eta")
        # not bounded above: where most samples are empty a fitted median is huge (the
        # sampler keeps rates in [1e-300, 1e300])
        self.c_median = check_parameter(self.c_median, "c_median", bounded=False)

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
