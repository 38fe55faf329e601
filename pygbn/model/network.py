"""The gamma belief network: an ordered stack of layers under a top-layer shape r."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import List, Optional, Sequence

import numpy as np

from pygbn._utils import check_random_state
from pygbn.model.layer import Layer
from pygbn.model.links import Link, PoissonLink, get_link

_TINY = np.finfo(np.float64).tiny


@dataclass(frozen=True)
class Hyperparameters:
    """Hyper-parameters of the GBN priors (paper eq:Phi, eq:c_j).

    ``gamma0 ~ Gam(a0, 1/b0)``, ``c0 ~ Gam(e0, 1/f0)``,
    ``p_j^(2) ~ Beta(a0, b0)``, ``c_j^(t) ~ Gam(e0, 1/f0)`` for ``t >= 3``, and
    for the PRG link ``a_j ~ Gam(e0, 1/f0)``.  Defaults are the authors'.
    """

    a0: float = 0.01
    b0: float = 0.01
    e0: float = 1.0
    f0: float = 1.0

    def __post_init__(self):
        for k, v in asdict(self).items():
            if not (isinstance(v, (int, float, np.floating, np.integer)) and np.isfinite(v) and v > 0):
                raise ValueError(f"hyper-parameter {k} must be a positive finite number, got {v!r}")


@dataclass(eq=False)
class Network:
    """A gamma belief network with ``T = len(layers)`` hidden layers (paper eq:PGBN).

    ``theta_j^(T) ~ Gam(r, 1/c_j^(T+1))``,
    ``theta_j^(t) ~ Gam(Phi^(t+1) theta_j^(t+1), 1/c_j^(t+1))``, and the
    observations are linked to ``x_j^(1) ~ Pois(Phi^(1) theta_j^(1))`` by
    ``link``.

    Parameters
    ----------
    layers : list of Layer
        ``layers[t - 1]`` holds Phi^(t) of shape (K_{t-1}, K_t).
    r : ndarray of shape (K_T,)
        Gamma shapes of the top layer's hidden units.
    gamma0, c0 : float
        ``r_k ~ Gam(gamma0 / K_T, 1 / c0)``.
    hyper : Hyperparameters
    link : Link
    vocabulary : sequence of str, optional
        Names of the data features (terms), for exploration.
    """

    layers: List[Layer]
    r: np.ndarray
    gamma0: float = 1.0
    c0: float = 1.0
    hyper: Hyperparameters = field(default_factory=Hyperparameters)
    link: Link = field(default_factory=PoissonLink)
    vocabulary: Optional[Sequence[str]] = None

    def __post_init__(self):
        self.link = get_link(self.link)
        self.r = np.asarray(self.r, dtype=np.float64)
        self.check()

    # ------------------------------------------------------------------ shape
    @property
    def depth(self) -> int:
        """T, the number of hidden layers."""
        return len(self.layers)

    @property
    def widths(self) -> List[int]:
        """[K_1, ..., K_T]."""
        return [layer.width for layer in self.layers]

    @property
    def n_features(self) -> int:
        """V = K_0, the data dimension."""
        return self.layers[0].n_inputs

    @property
    def phis(self) -> List[np.ndarray]:
        """[Phi^(1), ..., Phi^(T)]."""
        return [layer.phi for layer in self.layers]

    def check(self) -> None:
        """Raise ValueError if the shapes do not chain or a parameter is invalid."""
        if not self.layers:
            raise ValueError("a Network needs at least one layer")
        for t, layer in enumerate(self.layers, start=1):
            phi = np.asarray(layer.phi)
            if phi.ndim != 2:
                raise ValueError(f"Phi^({t}) must be 2-D, got shape {phi.shape}")
            if t > 1 and phi.shape[0] != self.layers[t - 2].width:
                raise ValueError(
                    f"Phi^({t}) has {phi.shape[0]} rows but layer {t - 1} has width "
                    f"{self.layers[t - 2].width}"
                )
            if not np.isfinite(phi).all() or (phi < 0).any():
                raise ValueError(f"Phi^({t}) must be finite and nonnegative")
        if self.r.shape != (self.layers[-1].width,):
            raise ValueError(f"r must have shape ({self.layers[-1].width},), got {self.r.shape}")
        if not np.isfinite(self.r).all() or (self.r < 0).any():
            raise ValueError("r must be finite and nonnegative")

    def summary(self) -> "Network":
        """A copy without per-sample state, as kept in a fitted estimator."""
        return Network(
            layers=[layer.summary() for layer in self.layers],
            r=self.r.copy(),
            gamma0=float(self.gamma0),
            c0=float(self.c0),
            hyper=self.hyper,
            link=get_link(self.link.from_dict(self.link.to_dict())),
            vocabulary=None if self.vocabulary is None else list(self.vocabulary),
        )

    # ------------------------------------------------------------- generation
    def sample_hidden(self, n_samples: int, random_state=None, c=None) -> List[np.ndarray]:
        """Draw hidden units top-down from the prior (paper eq:PGBN).

        ``c`` gives the per-layer rates ``[c^(2), ..., c^(T+1)]`` (scalars or
        arrays of length ``n_samples``); by default each layer's training
        median ``Layer.c_median``.  Returns ``[theta^(1), ..., theta^(T)]``,
        each of shape (n_samples, K_t).
        """
        rng = check_random_state(random_state)
        n = _check_n(n_samples)
        if c is None:
            c = [layer.c_median for layer in self.layers]
        if len(c) != self.depth:
            raise ValueError(f"c must have one entry per layer ({self.depth}), got {len(c)}")
        thetas: List[Optional[np.ndarray]] = [None] * self.depth
        shape = np.broadcast_to(self.r, (n, self.layers[-1].width))
        for t in range(self.depth - 1, -1, -1):
            rate = np.broadcast_to(np.asarray(c[t], dtype=np.float64), (n,))[:, None]
            th = rng.standard_gamma(np.maximum(shape, _TINY)) / rate
            thetas[t] = np.maximum(th, _TINY)
            if t > 0:
                shape = thetas[t] @ self.layers[t].phi.T
        return thetas  # type: ignore[return-value]

    def generate(self, n_samples: int, random_state=None, return_hidden: bool = False):
        """Generate synthetic data top-down (paper eq:PGBN and Section 4.1).

        Each sample's rates ``c_j^(t)`` are set to the training medians; the
        observations are drawn through the link: counts (int64) for the
        Poisson link, 0/1 (int64) for the Bernoulli-Poisson link and
        nonnegative reals (float64) for the PRG link.

        Returns
        -------
        X : ndarray of shape (n_samples, V)
        thetas : list of ndarray, only if ``return_hidden``
        """
        rng = check_random_state(random_state)
        thetas = self.sample_hidden(n_samples, rng)
        rates = thetas[0] @ self.layers[0].phi.T
        X = self.link.sample_observations(rates, rng)
        return (X, thetas) if return_hidden else X

    def __repr__(self) -> str:
        return (f"Network(link={self.link.name!r}, n_features={self.n_features}, "
                f"widths={self.widths})")


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n_samples must be a nonnegative int, got {n!r}")
    return int(n)
