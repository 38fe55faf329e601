"""The gamma belief network: an ordered stack of layers under a top-layer shape r."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import List, Optional, Sequence

import numpy as np

from pygbn import explore
from pygbn.evaluation.coherence import coherence_from_counts, cooccurrence, window_for
from pygbn.evaluation.coherence import diversity as topic_diversity
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
            if isinstance(v, (bool, np.bool_)) or not (
                    isinstance(v, (int, float, np.floating, np.integer)) and np.isfinite(v) and v > 0):
                raise ValueError(f"hyper-parameter {k} must be a positive finite number, got {v!r}")
            object.__setattr__(self, k, float(v))   # a Python float (numpy scalars too)


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
            # min and max are reductions: no (K_{t-1}, K_t) temporary (a freed one stays resident);
            # a NaN fails both comparisons
            if phi.size and not (phi.min() >= 0 and phi.max() < np.inf):
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

    # ------------------------------------------------------------ exploration
    # Thin wrappers around :mod:`pygbn.explore` (paper Section 2.3).

    def _vocab_or(self, vocab, required: bool):
        words = self.vocabulary if vocab is None else vocab
        if words is None and required:
            raise ValueError(
                "vocab must be given: this network has no vocabulary "
                "(fit with vocabulary=... or pass vocab=; top_term_indices needs none)")
        return words

    def project(self, t: int) -> np.ndarray:
        """The ``V x K_t`` projection ``Phi^(1) ... Phi^(t)`` of layer t (eq:projection).

        Parameters
        ----------
        t : int
            Layer number, ``1 <= t <= T``.

        Returns
        -------
        ndarray of shape (V, K_t)
            Column k is node k's distribution over the data dimensions.

        See Also
        --------
        pygbn.explore.project
        """
        return explore.project(self.phis, t)

    def projections(self) -> List[np.ndarray]:
        """The projections of every layer, ``[Phi^(1), Phi^(1) Phi^(2), ...]`` (eq:projection).

        See Also
        --------
        pygbn.explore.projections
        """
        return explore.projections(self.phis)

    def node_weights(self, t: int) -> np.ndarray:
        """Node weights ``r^(t) = [Phi^(t+1) ... Phi^(T)] r`` of layer t (eq:weight).

        Parameters
        ----------
        t : int
            Layer number, ``1 <= t <= T``.

        Returns
        -------
        ndarray of shape (K_t,)
            The popularity of each node of layer t; ``r^(T) = r``.

        See Also
        --------
        pygbn.explore.node_weights
        """
        return explore.node_weights(self.phis, self.r, t)

    def layer_weights(self) -> List[np.ndarray]:
        """The node weights of every layer, ``[r^(1), ..., r^(T)]`` (eq:weight).

        See Also
        --------
        pygbn.explore.layer_weights
        """
        return explore.layer_weights(self.phis, self.r)

    def relabel_by_popularity(self, return_perms: bool = False):
        """A copy whose nodes are renumbered by weight, most popular first (Section 2.3.1).

        Node k of layer t of the new network is node ``perms[t-1][k]`` of this
        one; node 0 of every layer is its most popular node (largest
        ``r^(t)_k``, eq:weight), ties keeping their order.  The distribution
        the network defines is unchanged; ``eta``, ``c_median``, ``gamma0``,
        ``c0``, the hyper-parameters, the link and the vocabulary are copied;
        per-sample state (theta, c, counts) is not kept.

        Parameters
        ----------
        return_perms : bool, default False
            Also return the permutations.

        Returns
        -------
        Network
            The relabelled network (this one is not modified).
        perms : list of ndarray of int, only if ``return_perms``
            ``perms[t-1][k]`` is the old index of the new node k of layer t.

        See Also
        --------
        pygbn.explore.relabel_by_popularity
        """
        phis, r, perms = explore.relabel_by_popularity(self.phis, self.r)
        layers = [Layer(phi=np.ascontiguousarray(phi), eta=float(layer.eta),
                        c_median=float(layer.c_median))
                  for phi, layer in zip(phis, self.layers)]
        net = Network(layers=layers, r=r, gamma0=float(self.gamma0), c0=float(self.c0),
                      hyper=self.hyper, link=get_link(self.link.from_dict(self.link.to_dict())),
                      vocabulary=None if self.vocabulary is None else list(self.vocabulary))
        return (net, perms) if return_perms else net

    def top_term_indices(self, t: int, n: int = 10) -> np.ndarray:
        """Indices of the n most probable data dimensions of each node of layer t.

        Returns
        -------
        ndarray of int, shape (K_t, min(n, V))

        See Also
        --------
        pygbn.explore.top_term_indices
        """
        return explore.top_term_indices(self.phis, t, n)

    def coherence(self, X=None, *, layer: Optional[int] = None, measure: str = "c_v", n: int = 10,
                  texts: Optional[Sequence] = None, window_size: Optional[int] = None):
        """Coherence of the projected topics (eq:projection) of each layer on a reference corpus.

        Node k of layer t is the topic of the n most probable terms of column
        k of ``Phi^(1) ... Phi^(t)`` (:meth:`top_term_indices`), scored by
        :func:`pygbn.evaluation.coherence`.

        Parameters
        ----------
        X : array-like or sparse of shape (n_docs, n_features), optional
            Reference counts in this network's vocabulary (usually the
            training counts): document co-occurrence.
        layer : int, optional
            Only this layer (default: every layer).
        measure : {"c_v", "u_mass", "c_uci", "c_npmi"}, default="c_v"
        n : int, default=10
            Top terms per topic, at least 2 (a network with fewer than n
            features uses all of them).
        texts, window_size
            Instead of ``X``: documents as term-index sequences, for sliding
            windows (see :func:`pygbn.evaluation.coherence`).

        Returns
        -------
        ndarray of shape (K_t,), or a list of them (one per layer)
            One value per node, in node order.

        Raises
        ------
        ValueError
            For ``n`` not an integer of at least 2, an ``X`` whose number of
            columns is not ``n_features``, or bad arguments of
            :func:`pygbn.evaluation.coherence`.
        """
        layers = self._layers_of(layer)
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 2:
            raise ValueError(f"n (top terms per topic) must be an integer of at least 2, got {n!r}")
        if self.n_features < 2:
            raise ValueError(f"coherence needs at least 2 features (pairs of top terms); "
                             f"this network has {self.n_features}")
        if X is not None:
            from pygbn.model.links import as_csr

            X = as_csr(X, "X")
            if X.shape[1] != self.n_features:
                raise ValueError(f"X has {X.shape[1]} columns but the network has n_features="
                                 f"{self.n_features}: the reference counts must be in the network's "
                                 f"vocabulary")
        topics = [self.top_term_indices(t, n) for t in layers]
        counts = cooccurrence(np.concatenate(topics, axis=None), X, texts=texts,
                              window_size=window_for(measure, texts, window_size))
        out = [coherence_from_counts(top, counts, measure) for top in topics]
        return out[0] if layer is not None else out

    def diversity(self, layer: Optional[int] = None, n: int = 25):
        """Topic diversity of the projected topics of each layer (:func:`pygbn.evaluation.diversity`):
        the share of unique terms among the top-n terms of the layer's nodes.

        Returns
        -------
        float, or a list of floats (one per layer, when ``layer`` is None)
        """
        out = [topic_diversity(self.top_term_indices(t, n)) for t in self._layers_of(layer)]
        return out[0] if layer is not None else out

    def _layers_of(self, layer) -> List[int]:
        if layer is None:
            return list(range(1, self.depth + 1))
        if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 1 <= layer <= self.depth:
            raise ValueError(f"layer must be between 1 and {self.depth}, got {layer!r}")
        return [int(layer)]

    def top_terms(self, t: int, n: int = 10, vocab: Optional[Sequence[str]] = None) -> List[List[str]]:
        """The top-n terms of every node of layer t (Section 2.3.1).

        Parameters
        ----------
        t : int
            Layer number, ``1 <= t <= T``.
        n : int, default 10
            Terms per node.
        vocab : sequence of str, optional
            Names of the V data dimensions; default ``self.vocabulary``.

        Returns
        -------
        list of list of str
            Element k: node k's terms by probability under its projection
            (eq:projection), most probable first.

        Raises
        ------
        ValueError
            If neither ``vocab`` nor ``self.vocabulary`` is set.

        See Also
        --------
        pygbn.explore.top_terms
        """
        return explore.top_terms(self.phis, t, self._vocab_or(vocab, True), n=n)

    def subnetwork(self, roots, tau=3.0, n_terms: int = 12, vocab: Optional[Sequence[str]] = None):
        """The union of the trees rooted at ``roots`` (Sections 2.3.2-2.3.3).

        Parameters
        ----------
        roots : sequence of (int, int)
            ``(layer, node)`` pairs; layer in 1..T, node 0-based.
        tau : float, sequence of T floats or mapping {layer: float}, default 3.0
            Edge thresholds: keep ``Phi^(t)(k', k) > tau_t / K_{t-1}``.
        n_terms : int, default 12
            Top terms stored per node.
        vocab : sequence of str, optional
            Default ``self.vocabulary``; without either, nodes carry the
            indices of their top dimensions as strings.

        Returns
        -------
        pygbn.explore.Subnetwork
            Render with ``.to_text()``, ``.to_dot()`` or ``.to_svg()``.

        See Also
        --------
        pygbn.explore.subnetwork
        """
        return explore.subnetwork(self.phis, self.r, roots, tau=tau,
                                  vocab=self._vocab_or(vocab, False), n_terms=n_terms)

    def tree(self, layer: int, node: int, tau=3.0, n_terms: int = 12,
             vocab: Optional[Sequence[str]] = None):
        """The tree rooted at node ``node`` of layer ``layer`` (Section 2.3.2).

        Parameters
        ----------
        layer : int
            Layer of the root, ``1 <= layer <= T``.
        node : int
            0-based index of the root (after :meth:`relabel_by_popularity`,
            node 0 is the most popular).
        tau, n_terms, vocab
            As in :meth:`subnetwork`.

        Returns
        -------
        pygbn.explore.Subnetwork

        See Also
        --------
        pygbn.explore.tree
        """
        return explore.tree(self.phis, self.r, layer, node, tau=tau,
                            vocab=self._vocab_or(vocab, False), n_terms=n_terms)

    def generate_top_terms(self, n_samples: int, n: int = 10, random_state=None,
                           vocab: Optional[Sequence[str]] = None) -> List[List[str]]:
        """Generate documents top-down and return the top-n terms of each.

        Equivalent to ``explore.generated_top_terms(self.generate(n_samples,
        random_state), vocab, n)`` (paper Section 4.1, "Generating synthetic
        documents").

        Parameters
        ----------
        n_samples : int
            Number of documents.
        n : int, default 10
            Terms per document (fewer if a document has fewer distinct terms).
        random_state : None, int, SeedSequence or Generator
        vocab : sequence of str, optional
            Default ``self.vocabulary``.

        Returns
        -------
        list of list of str
            Each document's terms, largest count first.
        """
        words = self._vocab_or(vocab, True)
        X = self.generate(n_samples, random_state=random_state)
        return explore.generated_top_terms(X, words, n=n)

    def save_factor_grid(self, t: int, shape, path, **kwargs) -> str:
        """Write the projected factors of layer t as one PNG or SVG image grid.

        For image data (``shape = (height, width)`` with ``height * width == V``);
        keyword arguments go to :func:`pygbn.explore.save_factor_grid`.

        Returns
        -------
        str
            The path written.
        """
        return explore.save_factor_grid(self.phis, t, shape, path, **kwargs)

    def __repr__(self) -> str:
        return (f"Network(link={self.link.name!r}, n_features={self.n_features}, "
                f"widths={self.widths})")


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n_samples must be a nonnegative int, got {n!r}")
    return int(n)
