"""The gamma belief network: an ordered stack of layers under a top-layer shape r."""
from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass, field, fields
from typing import List, Optional, Sequence

import numpy as np

from pygbn import explore
from pygbn.evaluation.coherence import coherence_from_counts, cooccurrence, window_for
from pygbn.evaluation.coherence import diversity as topic_diversity
from pygbn._utils import MAX_PARAMETER, MAX_PRIOR_MASS, check_int, check_random_state, check_vocab, positive_real
from pygbn.model.layer import Layer, as_phi, check_parameter, check_simplex
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
            f = positive_real(v)
            if f is None:
                raise ValueError(f"hyper-parameter {k} must be a positive finite number, got {v!r}")
            object.__setattr__(self, k, f)   # a Python float (numpy scalars too)


def as_hyperparameters(hyper, name: str = "hyper") -> Hyperparameters:
    """``hyper`` as :class:`Hyperparameters`: one as is, None as the defaults, or a dict
    with keys among a0, b0, e0, f0 (as ``GBN(hyperparameters=...)`` takes them)."""
    if hyper is None:
        return Hyperparameters()
    if isinstance(hyper, Hyperparameters):
        return hyper
    if isinstance(hyper, dict):
        unknown = set(hyper) - {"a0", "b0", "e0", "f0"}
        if unknown:
            raise ValueError(f"{name} has unknown keys {sorted(map(str, unknown))}; valid: a0, b0, e0, f0")
        return Hyperparameters(**hyper)
    raise ValueError(f"{name} must be a Hyperparameters, a dict or None, got {hyper!r}")


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
        ``layers[t - 1]`` holds Phi^(t) of shape (K_{t-1}, K_t), its columns on
        the simplex; columns within 1e-4 of it (a Phi made in float32, or
        rounded) are divided by their sums in float64 when the network is built.
    r : ndarray of shape (K_T,)
        Gamma shapes of the top layer's hidden units.
    gamma0, c0 : float
        ``r_k ~ Gam(gamma0 / K_T, 1 / c0)`` (paper eq:Phi).
    hyper : Hyperparameters or dict
        A dict (keys among a0, b0, e0, f0, as ``GBN(hyperparameters=...)``
        takes them) is converted.
    link : Link or str
    vocabulary : sequence of str, optional
        Names of the data features (terms), for exploration: one per row of
        Phi^(1), in order.

    Raises
    ------
    ValueError
        From :meth:`check`, for anything a model file could not hold.
    """

    layers: List[Layer]
    r: np.ndarray
    gamma0: float = 1.0
    c0: float = 1.0
    hyper: Hyperparameters = field(default_factory=Hyperparameters)
    link: Link = field(default_factory=PoissonLink)
    vocabulary: Optional[Sequence[str]] = None

    def __post_init__(self):
        self._setup(renormalise=True)

    @classmethod
    def _strict(cls, **parts) -> "Network":
        """The network of ``parts`` (every field, by name), built as by the constructor
        except that a Phi whose columns are off the simplex is refused, never renormalised
        (what :func:`pygbn.io.read_model` builds: a file holds what ``write_model`` checked)."""
        names = {f.name for f in fields(cls)}
        if set(parts) != names:
            raise TypeError(f"Network._strict takes the fields {sorted(names)}, got {sorted(parts)}")
        net = cls.__new__(cls)
        vars(net).update(parts)
        net._setup(renormalise=False)
        return net

    def _setup(self, renormalise: bool) -> None:
        """The constructor's conversions, then :meth:`check`."""
        if isinstance(self.layers, tuple):
            self.layers = list(self.layers)
        self.link = get_link(self.link)
        self.hyper = as_hyperparameters(self.hyper)
        r = np.asarray(self.r)
        if r.dtype.kind not in "biuf":
            raise ValueError(f"r must be an array of numbers, got {self.r!r}")
        self.r = r.astype(np.float64, copy=False)
        self.gamma0 = check_parameter(self.gamma0, "gamma0")
        self.c0 = check_parameter(self.c0, "c0")
        self.check(renormalise=renormalise)

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

    def check(self, renormalise: bool = False) -> None:
        """Raise ValueError unless the network could be written to a model file and read back.

        Checks what :func:`pygbn.io.read_model` checks of a network: ``layers``
        a non-empty list of :class:`Layer`; each Phi^(t) a non-empty 2-D array
        of finite nonnegative numbers whose columns sum to 1 within
        :data:`pygbn.io.SIMPLEX_TOLERANCE` (paper eq:Phi), with as many rows as
        layer t-1 has nodes; ``r`` one finite nonnegative entry per top node;
        each layer's ``eta``, ``gamma0``, ``c0``, the hyper-parameters and the
        link's parameters positive and at most :data:`pygbn.io.MAX_PARAMETER`
        (r at most that too); each layer's ``c_median`` positive and finite
        (a fitted one is huge where most samples are empty); the prior's
        expected count per sample ``sum(r) / prod(c_median)`` at most
        :data:`pygbn.io.MAX_PRIOR_MASS`; the vocabulary, if any, a sequence of
        ``n_features`` strings.  Called when a network is built and where a
        chain starts (not per iteration): it reads each Phi three times.

        With ``renormalise`` (when the network is built), a Phi whose column
        sums are all within ``LOOSE_SIMPLEX_TOLERANCE`` (1e-4) of 1 but not
        all within ``SIMPLEX_TOLERANCE`` (a Phi made in float32, or rounded)
        has its columns divided by their sums instead of being refused.
        """
        layers = self.layers
        if not isinstance(layers, list):
            raise ValueError(f"layers must be a list of Layer objects, got {type(layers).__name__}")
        if not layers:
            raise ValueError("a Network needs at least one layer")
        for t, layer in enumerate(layers, start=1):
            if not isinstance(layer, Layer):
                raise ValueError(f"layers[{t - 1}] must be a Layer (e.g. Layer(phi=...)), got "
                                 f"{type(layer).__name__}")
        for t, layer in enumerate(layers, start=1):
            phi = as_phi(layer.phi, f"Phi^({t})")
            if t > 1 and phi.shape[0] != layers[t - 2].width:
                raise ValueError(
                    f"Phi^({t}) has {phi.shape[0]} rows but layer {t - 1} has width "
                    f"{layers[t - 2].width}"
                )
            checked = check_simplex(phi, f"Phi^({t})", renormalise)
            if checked is not phi:
                layer.phi = checked
            check_parameter(layer.eta, f"layer {t}'s eta")
            check_parameter(layer.c_median, f"layer {t}'s c_median", bounded=False)
        r = np.asarray(self.r)
        if r.shape != (layers[-1].width,):
            K = layers[-1].width
            raise ValueError(f"r has {r.size} entries but the top layer has width {K}: r must have shape "
                             f"({K},)" if r.ndim == 1 else f"r must have shape ({K},), got {r.shape}")
        if not (np.isfinite(r).all() and (r >= 0).all() and (r <= MAX_PARAMETER).all()):
            k = int(np.flatnonzero(~((r >= 0) & (r <= MAX_PARAMETER)))[0])     # a NaN fails both
            raise ValueError(f"r must be finite and nonnegative (at most {MAX_PARAMETER:g}), got "
                             f"{float(r[k])!r} at index {k}")
        check_parameter(self.gamma0, "gamma0")
        check_parameter(self.c0, "c0")
        if not isinstance(self.hyper, Hyperparameters):
            raise ValueError(f"hyper must be a Hyperparameters, got {self.hyper!r}")
        for k, v in asdict(self.hyper).items():
            check_parameter(v, f"hyper-parameter {k}")
        if not isinstance(self.link, Link):
            raise ValueError(f"link must be a Link, got {self.link!r}")
        for k, v in self.link.to_dict().items():
            if k != "name":
                check_parameter(v, f"the link's {k}")
        medians = np.array([layer.c_median for layer in layers], dtype=np.float64)
        mass = float(np.exp(np.log(max(float(r.sum()), _TINY)) - np.log(medians).sum()))
        if mass > MAX_PRIOR_MASS:
            raise ValueError(f"the prior's expected count per sample, sum(r) / prod(c_median) = {mass:.3g}, "
                             f"exceeds {MAX_PRIOR_MASS:g} (r too large or c_median too small)")
        if self.vocabulary is not None:
            check_vocab(self.vocabulary, self.n_features, "vocabulary")

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

        Parameters
        ----------
        n_samples : int
        random_state : None, int, SeedSequence or Generator
        c : float or sequence of T entries, optional
            The gamma rates ``[c^(2), ..., c^(T+1)]`` of ``[theta^(1), ...,
            theta^(T)]``: one entry per layer, each a number (every sample) or
            an array of length ``n_samples`` (one rate per sample); a single
            number is every layer's rate.  Rates must be finite and positive.
            Default: each layer's training median ``Layer.c_median``.

        Returns
        -------
        list of ndarray
            ``[theta^(1), ..., theta^(T)]``, each of shape (n_samples, K_t).

        Raises
        ------
        ValueError
            For a bad ``n_samples`` or ``c`` (the message names the entry).
        """
        rng = check_random_state(random_state)
        n = _check_n(n_samples)
        rates = self._check_rates(c, n)
        thetas: List[Optional[np.ndarray]] = [None] * self.depth
        shape = np.broadcast_to(self.r, (n, self.layers[-1].width))
        for t in range(self.depth - 1, -1, -1):
            rate = np.broadcast_to(rates[t], (n,))[:, None]
            th = rng.standard_gamma(np.maximum(shape, _TINY)) / rate
            thetas[t] = np.maximum(th, _TINY)
            if t > 0:
                shape = thetas[t] @ self.layers[t].phi.T
        return thetas  # type: ignore[return-value]

    def _check_rates(self, c, n: int) -> List[np.ndarray]:
        """The rates ``c`` of :meth:`sample_hidden` as T float64 arrays of shape () or (n,)."""
        T = self.depth
        if c is None:
            return [np.float64(layer.c_median) for layer in self.layers]
        if isinstance(c, (str, bytes)):
            raise ValueError(f"c must be a number or a sequence of {T} rates (one per layer), got {c!r}")
        if (isinstance(c, (numbers.Real, np.number)) and not isinstance(c, (bool, np.bool_))) \
                or (isinstance(c, np.ndarray) and c.ndim == 0):
            c = [c] * T                     # one number: every layer's rate
        try:
            n_entries = len(c)
        except TypeError:
            raise ValueError(f"c must be a number or a sequence of {T} rates (one per layer), "
                             f"got {c!r}") from None
        if n_entries != T:
            raise ValueError(f"c must have one entry per layer ({T}), got {n_entries}")
        out = []
        for t in range(T):
            v = c[t]
            where = f"c[{t}] (the rates c^({t + 2}) of theta^({t + 1}))"
            a = np.asarray(v)
            if a.dtype.kind not in "iuf" or a.shape not in ((), (n,)):
                raise ValueError(f"{where} must be a number or an array of n_samples={n} numbers, got "
                                 f"{'shape ' + str(a.shape) if a.dtype.kind in 'biuf' else repr(v)}")
            a = a.astype(np.float64, copy=False)
            if not (a.size == 0 or (np.isfinite(a).all() and a.min() > 0)):
                bad = a.ravel()[~(np.isfinite(a.ravel()) & (a.ravel() > 0))][0]
                raise ValueError(f"{where} must be finite and positive, got {bad!r}")
            out.append(a)
        return out

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
            columns is not ``n_features``, ``texts`` holding a term index of
            at least ``n_features`` (a negative index is a token outside the
            vocabulary), or bad arguments of
            :func:`pygbn.evaluation.coherence`.
        """
        layers = self._layers_of(layer)
        self._check_top_n(n, "coherence", "pairs of top terms")
        if X is not None:
            from pygbn.model.links import as_csr

            X = as_csr(X, "X")
            if X.shape[1] != self.n_features:
                raise ValueError(f"X has {X.shape[1]} columns but the network has n_features="
                                 f"{self.n_features}: the reference counts must be in the network's "
                                 f"vocabulary")
        if texts is not None:
            texts = _in_vocabulary(texts, self.n_features)
        topics = list(explore.top_term_indices_by_layer(self.phis, layers, n).values())
        counts = cooccurrence(np.concatenate(topics, axis=None), X, texts=texts,
                              window_size=window_for(measure, texts, window_size), topics=np.vstack(topics))
        out = [coherence_from_counts(top, counts, measure) for top in topics]
        return out[0] if layer is not None else out

    def diversity(self, layer: Optional[int] = None, n: int = 25):
        """Topic diversity of the projected topics of each layer (:func:`pygbn.evaluation.diversity`):
        the share of unique terms among the top-n terms of the layer's nodes.

        Parameters
        ----------
        layer : int, optional
            Only this layer (default: every layer).
        n : int, default=25
            Top terms per topic, at least 2 (a network with fewer than n
            features uses all of them).

        Returns
        -------
        float, or a list of floats (one per layer, when ``layer`` is None)

        Raises
        ------
        ValueError
            For a bad ``layer``, ``n`` not an integer of at least 2, or a
            network of fewer than 2 features.
        """
        layers = self._layers_of(layer)
        self._check_top_n(n, "diversity", "topics of at least 2 terms")
        tops = explore.top_term_indices_by_layer(self.phis, layers, n)
        out = [topic_diversity(top) for top in tops.values()]
        return out[0] if layer is not None else out

    def _check_top_n(self, n, what: str, why: str) -> None:
        """Check the ``n`` top terms per topic of :meth:`coherence` and :meth:`diversity`."""
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 2:
            raise ValueError(f"n (top terms per topic) must be an integer of at least 2, got {n!r}")
        if self.n_features < 2:
            raise ValueError(f"{what} needs at least 2 features ({why}); this network has {self.n_features}")

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
                           vocab: Optional[Sequence[str]] = None, return_samples: bool = False):
        """Generate documents top-down and return the top-n terms of each.

        As the paper's Section 4.1 ("Generating synthetic documents"), a
        document's terms are ranked by their Poisson rates
        ``Phi^(1) theta^(1)_j`` (eq:PGBN), with ``theta^(1)_j`` drawn top-down
        as :meth:`generate` draws it: ``explore.generated_top_terms(rates,
        vocab, n)`` with the rates of the documents ``generate(n_samples,
        random_state)`` returns (the same draws).

        Parameters
        ----------
        n_samples : int
            Number of documents.
        n : int, default 10
            Terms per document (fewer only if fewer terms have a positive rate).
        random_state : None, int, SeedSequence or Generator
        vocab : sequence of str, optional
            Default ``self.vocabulary``.
        return_samples : bool, default False
            Also return the generated samples (the matrix :meth:`generate`
            gives for the same ``random_state``).

        Returns
        -------
        list of list of str
            Each document's terms, largest rate first (ties by lower column).
        X : ndarray of shape (n_samples, V), only if ``return_samples``

        Raises
        ------
        ValueError
            For a bad ``n_samples``, ``n`` or ``vocab`` (none given and the
            network has none, or not ``n_features`` strings), before any
            document is drawn.
        """
        words = check_vocab(self._vocab_or(vocab, True), self.n_features, "vocab")
        n = check_int(n, "n", 1)        # before drawing the documents, not after
        if not isinstance(return_samples, (bool, np.bool_)):
            raise ValueError(f"return_samples must be a bool, got {return_samples!r}")
        X, thetas = self.generate(n_samples, random_state=random_state, return_hidden=True)
        rates = thetas[0] @ self.layers[0].phi.T
        terms = explore.generated_top_terms(rates, words, n=n)
        return (terms, X) if return_samples else terms

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


def _in_vocabulary(texts, n_features: int):
    """``texts`` (term-index sequences), each checked, as it is read, to hold no index of
    ``n_features`` or more (texts of another vocabulary would be counted as this one's)."""
    for d, doc in enumerate(texts):
        tok = np.asarray(doc)
        if tok.ndim == 1 and tok.size and tok.dtype.kind in "iu" and tok.max() >= n_features:
            raise ValueError(f"texts[{d}] holds the term index {tok.max()} but the network has "
                             f"n_features={n_features}: the reference texts must be in the network's "
                             f"vocabulary (a negative index marks a token outside it)")
        yield doc
