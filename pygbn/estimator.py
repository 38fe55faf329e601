"""scikit-learn style estimator for gamma belief networks, and its model files.

:class:`GBN` validates its parameters and data, drives the layer-wise
training (:func:`pygbn.inference.fit_layerwise`) and the test-time chain
(:func:`pygbn.inference.infer_local`), and owns its fitted state
(``networks_`` and the attributes derived from them): :meth:`GBN._set_state`
is the one place that sets it, whether after ``fit``, around given networks
(:meth:`GBN.from_networks`) or from a model file (:func:`load`).
:func:`save` and :func:`load` write and read that state through
:mod:`pygbn.io`.
"""
from __future__ import annotations

import logging
import numbers
import os
import time
from typing import Callable, Optional, Sequence, Union

import numpy as np

from pygbn import io
from pygbn._sklearn import TransformerProtocol
from pygbn._utils import (Progress, check_array, check_feature_names, check_fit_vocabulary, check_int,
                          check_random_state, column_names, effective_n_jobs, get_params, param_names,
                          positive_per_layer, set_params, verbose_logging)
from pygbn.evaluation.heldout import SPLIT_SEED_TAG, score_split  # noqa: F401 (SPLIT_SEED_TAG: its old home)
from pygbn.inference import Schedule, fit_layerwise, infer_local
from pygbn.model.links import Link, PoissonLink, get_link
from pygbn.model.network import Network, as_hyperparameters

logger = logging.getLogger("pygbn")

__all__ = ["GBN", "NotFittedError", "save", "load"]

#: the layer-one methods (``method`` besides "auto")
METHODS = ("collapsed", "blocked", "partial")
#: fraction of each sample's tokens observed by :meth:`GBN.score` (the rest is held out)
SCORE_TRAIN_FRACTION = 0.3


def resolve_auto(link: Link, n_jobs) -> str:
    """The layer-one method that ``method="auto"`` stands for.

    "blocked" for the binary and real links (Algorithm 2); for counts
    "collapsed" when ``n_jobs`` is 1 or None (the paper's sweep, the best
    mixing per iteration) and "partial" for any other ``n_jobs``, -1
    included, so that the choice follows the arguments, not the machine
    (on 4-16 threads the partial chain reaches the collapsed chain's
    held-out perplexity in a quarter to a half of its wall time:
    docs/benchmarks.md, "Held-out perplexity against wall time on 16 cores").
    """
    if not link.collapsible:
        return "blocked"
    return "collapsed" if n_jobs is None or int(n_jobs) == 1 else "partial"


class NotFittedError(ValueError, AttributeError):
    """A method that needs a fitted model was called before ``fit``.

    Both a ``ValueError`` and an ``AttributeError``, as scikit-learn's own
    ``NotFittedError``: ``hasattr(GBN(), "network_")`` is False and
    ``sklearn.utils.validation.check_is_fitted`` works.
    """


class GBN(TransformerProtocol):
    """Augmentable gamma belief network (Zhou, Cong & Chen, JMLR 2016).

    Fits a stack of gamma-distributed hidden layers to count, binary or
    nonnegative real data with the upward-downward Gibbs sampler and the
    layer-wise training of the paper's Algorithms 1 and 2, which infers the
    width of every layer.

    Parameters
    ----------
    link : {"poisson", "bernoulli", "prg"} or Link, default="poisson"
        Observation type: counts (Poisson GBN), binary (Bernoulli-Poisson GBN)
        or nonnegative reals (Poisson randomized gamma GBN).
    n_components : int, default=100
        Upper bound ``K_1max`` of the first layer's width.
    n_layers : int, default=5
        Maximum depth ``T_max``; one network is kept per depth.
    eta : float or sequence of float, default=0.05
        Dirichlet concentration of each layer's connection weights (one value,
        or one per layer).
    burn_in : int or sequence of int, default=(1000, 500)
        Burn-in iterations ``B_T`` before the new top layer is pruned (a depth
        with ``B_T = 0`` is not pruned).
        ``(B_1, B_t)`` gives ``B_1`` for the first layer and ``B_t`` for all
        later ones; a sequence of length ``n_layers`` gives each layer its own.
    n_collect : int or sequence of int, default=500
        Iterations ``C_T`` after pruning at each depth.
    method : {"auto", "collapsed", "blocked", "partial"}, default="auto"
        Layer-one update for counts: "collapsed" (token labels with Phi^(1)
        and theta^(1) integrated out, eq:z; the paper's choice; serial),
        "blocked" (explicit Phi^(1), theta^(1) and a multinomial split of
        every non-zero count, eq:step1; parallel over documents) or
        "partial" (token labels with theta^(1) integrated out and Phi^(1)
        explicit: exact, parallel over documents, a token's cost independent
        of K).  "auto" is "collapsed" for counts with ``n_jobs`` 1 or None
        and "partial" for counts with any other ``n_jobs``; the binary and
        real links are always blocked (Algorithm 2).
    n_jobs : int or None, default=1
        Threads for the document-parallel kernels (-1: all cores).  For a
        given layer-one method results do not depend on it; ``method="auto"``
        picks "partial" instead of "collapsed" when it is not 1 or None.
    random_state : None, int, SeedSequence, BitGenerator or numpy.random.Generator, default=None
        Seed of the training chain and of the test-time chain of
        :meth:`transform`, :meth:`perplexity` and :meth:`score` (and of
        :meth:`generate`).  An int (or a sequence of ints) or a
        ``SeedSequence`` makes every call reproducible: two fits give the
        same networks, two ``transform`` calls the same features.  A
        ``Generator`` (or a ``BitGenerator``) is used as it is and advanced
        by every call, so repeated calls draw anew (as scikit-learn does
        with a ``RandomState`` instance); a model file does not keep it (see
        :meth:`save`).  None: fresh OS entropy at every call.  The legacy
        ``numpy.random.RandomState`` is refused (pass an int, or
        ``numpy.random.default_rng(seed)``).
    verbose : bool or int, default=False
        Show progress (depth, iteration, widths, seconds per iteration)
        through the ``"pygbn"`` logger at level INFO; an int sets how many
        iterations between lines (True: 50).  Where logging is configured
        (a handler on ``"pygbn"`` or on the root logger, e.g. by
        ``logging.basicConfig``) the lines go through that configuration,
        once each; otherwise to stderr for the duration of the fit.
    callback : callable, optional
        ``callback(info)`` after every training iteration; ``info`` is a dict
        with ``depth``, ``iteration``, ``n_iterations``, ``widths``,
        ``seconds``, ``sampler`` and ``loglikelihood`` (the training
        log-likelihood per token at a ``trace_every``-th iteration, else
        None).  Returning ``False`` stops training.
    prune : bool, default=True
        Prune the inactive factors of each new top layer at iteration ``B_T``.
    min_width : int, default=4
        Stop adding layers once a layer's width is at most this.
    hyperparameters : dict or Hyperparameters, optional
        ``a0, b0, e0, f0`` of the priors (default 0.01, 0.01, 1, 1).
    transform_iter : (int, int), default=(500, 500)
        Burn-in and collected iterations of the test-time chain of
        :meth:`transform` and :meth:`perplexity` (the paper's protocol;
        shorter chains cost proportionally less but gave measurably higher
        perplexities: see the user guide, "How long a test-time chain?").
    check : bool, default=False
        Debug mode: verify the sampler's invariants after every iteration.
    trace_every : int, default=25
        Record the training log-likelihood per token every this many
        iterations of each depth (0: never); see ``loglikelihoods_``.  It
        draws no random numbers: the chain is the same whatever its value.

    Attributes
    ----------
    networks_ : list of Network
        The jointly trained network of each depth T = 1, 2, ... .
    network_ : Network
        The deepest network.
    widths_ : list of int
        Inferred layer widths ``[K_1, ..., K_T]`` (of the deepest network).
    perplexity_ : list of float
        Held-out perplexity of each depth (only when ``fit`` got ``heldout``).
    seconds_per_iteration_ : list of float
        Mean wall time of a training iteration at each depth.
    loglikelihoods_ : list of list of float
        Per depth, the training log-likelihood per token of the observed data
        at every ``trace_every``-th iteration of that depth's stage (the
        estimate of :mod:`pygbn.inference.trace`); empty lists for a model
        fitted with ``trace_every=0`` or loaded from a file without traces.
    trace_iterations_ : list of list of int
        Per depth, the iterations (from 1 within the depth) of those values.
    trace_widths_ : list of list of list of int
        Per depth, the layer widths at those iterations.
    n_features_in_ : int
        Number of features (terms) seen in ``fit``.
    feature_names_in_ : ndarray of str (dtype object)
        Names of the features seen in ``fit``: the ``vocabulary`` given to
        ``fit``, or the column names of a DataFrame-like ``X`` (an object with
        string ``.columns``).  Only defined when the networks have a
        vocabulary.  ``transform`` and ``score`` reject a DataFrame whose
        columns differ from these (other names, or another order).

    Notes
    -----
    ``GBN`` follows scikit-learn's estimator protocol without depending on
    scikit-learn: ``get_params``/``set_params``, the tags
    (``__sklearn_tags__``, imported lazily, and the older ``_more_tags``)
    declaring a transformer of nonnegative, possibly sparse data,
    :class:`NotFittedError`, ``score(X, y=None)``, ``feature_names_in_``,
    :meth:`get_feature_names_out` and :meth:`set_output`; it works in ``Pipeline``,
    ``GridSearchCV`` and ``cross_val_score``.
    """

    def __init__(self, link="poisson", n_components: int = 100, n_layers: int = 5, eta=0.05,
                 burn_in=(1000, 500), n_collect=500, method: str = "auto", n_jobs: Optional[int] = 1,
                 random_state=None, verbose=False, callback: Optional[Callable] = None,
                 prune: bool = True, min_width: int = 4, hyperparameters=None,
                 transform_iter=(500, 500), check: bool = False, trace_every: int = 25):
        self.link = link
        self.n_components = n_components
        self.n_layers = n_layers
        self.eta = eta
        self.burn_in = burn_in
        self.n_collect = n_collect
        self.method = method
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback
        self.prune = prune
        self.min_width = min_width
        self.hyperparameters = hyperparameters
        self.transform_iter = transform_iter
        self.check = check
        self.trace_every = trace_every

    # --------------------------------------------------------------- params
    def get_params(self, deep: bool = True) -> dict:
        """Parameters of the estimator: the constructor's arguments (scikit-learn convention)."""
        return get_params(self, deep)

    def set_params(self, **params) -> "GBN":
        """Set parameters (scikit-learn convention); checked by ``fit``, not here."""
        set_params(self, params)
        return self

    def __repr__(self) -> str:
        defaults = GBN()
        changed = [f"{k}={getattr(self, k)!r}" for k in _PARAM_NAMES
                   if _differs(getattr(self, k), getattr(defaults, k))]
        return f"GBN({', '.join(changed)})"

    def _validated(self) -> dict:
        link = get_link(self.link)
        K = check_int(self.n_components, "n_components", 1)
        T = check_int(self.n_layers, "n_layers", 1)
        etas = positive_per_layer(self.eta, T, "eta")
        schedule = Schedule.for_layers(T, burn_in=self.burn_in, n_collect=self.n_collect,
                                       prune=self.prune, min_width=self.min_width,
                                       trace_every=self.trace_every)
        for name in ("prune", "check"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        n_jobs = effective_n_jobs(self.n_jobs)
        method = self.method
        if method not in ("auto",) + METHODS:
            raise ValueError(f"method must be 'auto', 'collapsed', 'blocked' or 'partial', got {method!r}")
        if method == "auto":
            method = resolve_auto(link, self.n_jobs)
        if method != "blocked" and not link.collapsible:
            raise ValueError(
                f"method={method!r} needs count data (link='poisson'); link={link.name!r} "
                "is sampled with method='blocked'")
        hyper = as_hyperparameters(self.hyperparameters, "hyperparameters")
        ti = self.transform_iter
        if np.ndim(ti) != 1 or len(ti) != 2:
            raise ValueError(f"transform_iter must be (burn_in, n_collect), got {ti!r}")
        t_burn = check_int(ti[0], "transform_iter[0]", 0)
        t_coll = check_int(ti[1], "transform_iter[1]", 1)
        if self.callback is not None and not callable(self.callback):
            raise ValueError(f"callback must be callable, got {self.callback!r}")
        verbose = self.verbose
        if isinstance(verbose, (bool, np.bool_)) or verbose is None:
            every = 50 if verbose else 0
        else:
            every = check_int(verbose, "verbose", 0)
        return dict(link=link, K=K, etas=etas, schedule=schedule, method=method, n_jobs=n_jobs,
                    hyper=hyper, t_burn=t_burn, t_coll=t_coll, verbose_every=every)

    # ----------------------------------------------------------------- fit
    def fit(self, X, y=None, *, heldout=None, vocabulary: Optional[Sequence[str]] = None) -> "GBN":
        """Fit networks of depth 1..n_layers to ``X`` (samples x features).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Counts (link="poisson"; integral floats accepted; each below
            2**53, adding up to less than 2**63), 0/1 values
            (link="bernoulli") or nonnegative reals (link="prg"; of a scale
            whose latent counts stay below 2**63, else ValueError during the
            fit: rescale such data).  Never densified.
        y : ignored
        heldout : array-like or sparse, same shape as X, optional
            Held-out counts of the same documents (Poisson link only): the
            held-out perplexity of each depth is recorded in ``perplexity_``
            (see :func:`pygbn.evaluation.split_tokens`), from a sample every
            5th collected iteration, or from the depth's last iteration when
            it collected fewer.
        vocabulary : sequence of str or mapping, optional
            Feature names in column order, kept on the fitted networks for
            exploration and as ``feature_names_in_`` (default: the column
            names of a DataFrame-like ``X``, if any).  A mapping term ->
            column, such as scikit-learn's ``CountVectorizer.vocabulary_``,
            is read by its columns; a set (no order), a term that is not a
            str and a repeated term are refused.
        """
        p = self._validated()
        link = p["link"]
        Y, names = _check_data(X, link, "X", min_samples=1)
        J, V = Y.shape
        if Y.nnz == 0:
            raise ValueError("X has no non-zero entry: there is nothing to fit")
        H = None
        if heldout is not None:
            if not isinstance(link, PoissonLink):
                raise ValueError(f"heldout perplexity is defined for counts (link='poisson'), not link={link.name!r}")
            H, h_names = _check_data(heldout, link, "heldout")
            if H.shape != Y.shape:
                raise ValueError(f"heldout must have the shape of X {Y.shape}, got {H.shape}")
            _check_heldout_names(names, h_names)
        vocabulary = check_fit_vocabulary(vocabulary, V, names)
        rng = check_random_state(self.random_state)
        res = self._run_training(p, lambda callback: fit_layerwise(
            Y, p["schedule"], link=link, n_components=p["K"], eta=p["etas"], method=p["method"],
            n_jobs=p["n_jobs"], random_state=rng, hyper=p["hyper"], heldout=H,
            callback=callback, check=self.check, keep_state=False))
        for net in res.networks:
            net.vocabulary = vocabulary
        return self._state_from_fit(res, p["method"], heldout=H is not None)

    def _state_from_fit(self, res, method: str, heldout: bool) -> "GBN":
        """:meth:`_set_state` from a layer-wise fit's ``FitResult``."""
        return self._set_state(res.networks, method=method, seconds_per_iteration=res.seconds_per_iteration,
                               perplexity=res.perplexity if heldout else None,
                               traces=(res.loglikelihoods, res.trace_iterations, res.trace_widths))

    def _run_training(self, p: dict, train: Callable):
        """``train(callback)`` (a layer-wise fit returning a ``FitResult``) with the
        progress display of ``verbose`` and the user's ``callback`` wired in."""
        progress = Progress(p["verbose_every"]) if p["verbose_every"] else None
        user_cb = self.callback

        def cb(info):
            if progress is not None:
                progress(info)
            if user_cb is not None:
                return user_cb(info)
            return None

        with verbose_logging(progress is not None):
            t0 = time.perf_counter()
            res = train(cb if (progress or user_cb) else None)
            logger.info("fit done in %.1f s: widths %s", time.perf_counter() - t0,
                        res.networks[-1].widths if res.networks else [])
        return res

    @classmethod
    def from_networks(cls, networks, **params) -> "GBN":
        """A fitted estimator around given networks (e.g. hand-built or loaded ones).

        Parameters
        ----------
        networks : Network or sequence of Network
            The networks of depth 1, 2, ... (or just one); they must share the
            data dimension and the link.
        **params
            Estimator parameters (``random_state``, ``transform_iter``,
            ``n_jobs``, ...) for :meth:`transform`, :meth:`perplexity` and
            :meth:`generate`; ``link`` defaults to the networks' link.

        Returns
        -------
        GBN
            With ``networks_``, ``widths_``, ``n_features_in_`` set, as after ``fit``.
        """
        nets = [networks] if isinstance(networks, Network) else list(networks)
        if not nets or not all(isinstance(n, Network) for n in nets):
            raise ValueError("networks must be a Network or a non-empty sequence of Networks")
        V = nets[0].n_features
        for n in nets:
            n.check()
            if n.n_features != V:
                raise ValueError(f"all networks must have the same n_features, got {n.n_features} and {V}")
            if n.link != nets[0].link:
                raise ValueError("all networks must have the same link")
        params.setdefault("link", nets[0].link.name)
        model = cls(**params)
        model._check_link(nets[0].link)
        return model._set_state(nets, method="blocked")

    def _check_link(self, link) -> None:
        """The parameters validated, and ``link`` their link (the networks'): else ValueError."""
        mine = self._validated()["link"]
        if mine.name != link.name:
            raise ValueError(f"link={mine.name!r} is not the networks' link {link.name!r}")

    # --------------------------------------------------------- fitted state
    def _set_state(self, networks: Sequence[Network], *, method: str,
                   seconds_per_iteration: Sequence[float] = (),
                   perplexity: Optional[Sequence[float]] = None, traces=None) -> "GBN":
        """Set the fitted state: ``networks_`` and the attributes that go with them.

        The one writer of the fitted attributes (``fit``, ``from_networks``
        and :func:`load` all come here).  ``widths_``, ``n_features_in_`` and
        ``feature_names_in_`` (when the networks have a vocabulary) are read
        off the networks; ``perplexity_`` exists only when given; ``traces``
        is ``(loglikelihoods_, trace_iterations_, trace_widths_)`` (default:
        no traces, one empty list per network).
        """
        self.networks_ = list(networks)
        self.widths_ = list(self.networks_[-1].widths)
        self.n_features_in_ = self.networks_[0].n_features
        vocab = self.networks_[0].vocabulary
        if vocab is None:
            self.__dict__.pop("feature_names_in_", None)
        else:
            self.feature_names_in_ = np.array([str(v) for v in vocab], dtype=object)
        self.seconds_per_iteration_ = [float(s) for s in seconds_per_iteration]
        self.method_ = method
        if perplexity is None:
            self.__dict__.pop("perplexity_", None)
        else:
            self.perplexity_ = [float(x) for x in perplexity]
        empty = [[] for _ in self.networks_]
        ll, its, ws = traces if traces is not None else (empty, empty, empty)
        self.loglikelihoods_ = [[float(v) for v in d] for d in ll]
        self.trace_iterations_ = [[int(v) for v in d] for d in its]
        self.trace_widths_ = [[[int(k) for k in w] for w in d] for d in ws]
        return self

    def _get_state(self) -> dict:
        """The fitted attributes other than the networks, as a plain dict
        (what a model file stores beside the networks)."""
        self._check_fitted()
        state = {"widths_": list(self.widths_), "n_features_in_": int(self.n_features_in_),
                 "seconds_per_iteration_": list(self.seconds_per_iteration_), "method_": self.method_}
        if hasattr(self, "perplexity_"):
            state["perplexity_"] = list(self.perplexity_)
        for key in _TRACE_KEYS:
            state[key] = getattr(self, key)
        return state

    @classmethod
    def _from_state(cls, networks: Sequence[Network], params: dict, state: dict) -> "GBN":
        """Rebuild a fitted estimator from stored parameters and :meth:`_get_state`'s dict.

        Both are checked against the networks and against each other (what a
        model file may hold): ValueError names the first inconsistency.
        """
        if not isinstance(params, dict) or not set(params) <= set(_PARAM_NAMES):
            raise ValueError(f"'params' must be an object with keys among {list(_PARAM_NAMES)}")
        if not isinstance(state, dict) or state.get("method_") not in METHODS:
            raise ValueError("'fitted' must be an object whose method_ is 'collapsed', 'blocked' or 'partial'")
        nets = list(networks)
        V, link = nets[0].n_features, nets[0].link.name
        if any(n.n_features != V or n.link.name != link for n in nets):
            raise ValueError("the networks must share the number of features and the link")
        params = dict(params)
        for k in ("burn_in", "transform_iter", "eta", "n_collect"):
            if isinstance(params.get(k), list):
                params[k] = tuple(params[k])
        stored_link = params.get("link", link)
        name = stored_link.get("name") if isinstance(stored_link, dict) else stored_link
        if not isinstance(name, str) or get_link(name).name != link:
            raise ValueError(f"the stored link {name!r} is not the networks' link {link!r}")
        params["link"] = nets[0].link if isinstance(stored_link, dict) else stored_link
        if isinstance(params.get("random_state"), dict):
            params["random_state"] = io.seed_sequence_from_json(params["random_state"])
        model = cls(**params)
        model._validated()
        check_random_state(model.random_state)     # a stored seed must seed the test-time chain
        expect = {"widths_": nets[-1].widths, "n_features_in_": V}
        for key, value in expect.items():
            if state.get(key) != value:
                raise ValueError(f"the stored {key} {state.get(key)!r} does not match the networks ({value!r})")
        lists = {k: state.get(k, []) for k in ("seconds_per_iteration_", "perplexity_")}
        for key, values in lists.items():
            if not isinstance(values, list) or len(values) > len(nets) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                raise ValueError(f"the stored {key} must be a list of at most {len(nets)} numbers")
        return model._set_state(nets, method=state["method_"],
                                seconds_per_iteration=lists["seconds_per_iteration_"],
                                perplexity=state.get("perplexity_"), traces=_stored_traces(state, len(nets)))

    @property
    def network_(self) -> Network:
        """The deepest fitted network."""
        self._check_fitted()
        return self.networks_[-1]

    def _check_fitted(self):
        if "networks_" not in self.__dict__:
            raise NotFittedError(f"this {type(self).__name__} instance is not fitted yet; call fit first")

    def __sklearn_is_fitted__(self) -> bool:
        """Whether ``fit`` (or :func:`load`, :meth:`from_networks`) has set the fitted state."""
        return "networks_" in self.__dict__

    def _network(self, depth) -> Network:
        self._check_fitted()
        if depth is None:
            return self.networks_[-1]
        d = check_int(depth, "depth", 1)
        if d > len(self.networks_):
            raise ValueError(f"depth must be between 1 and {len(self.networks_)}, got {depth}")
        return self.networks_[d - 1]

    # ------------------------------------------------------------ transform
    def transform(self, X, *, depth: Optional[int] = None) -> np.ndarray:
        """Features of new samples: the average of ``theta_j^(1) / theta_.j^(1)``.

        The fitted network (Phi's, r) stays fixed; each sample's chain starts
        from the prior with c_j at the training medians and is updated with
        the blocked sampler for ``transform_iter[0]`` burn-in and
        ``transform_iter[1]`` collected iterations.

        Parameters
        ----------
        X : array-like or sparse of shape (n_samples, n_features)
            Data of the fitted link, validated as in :meth:`fit`.
        depth : int, optional
            Network depth (default: the deepest).

        Returns
        -------
        ndarray of shape (n_samples, K_1)
            Each row sums to one (K_1 of the network of that depth); a
            DataFrame after :meth:`set_output` with "pandas" or "polars".
        """
        feats, _ = self._infer(X, depth, heldout=None)
        return self._wrap_output(feats, X)

    def fit_transform(self, X, y=None, **fit_params) -> np.ndarray:
        """``fit(X)`` then ``transform(X)``."""
        return self.fit(X, y, **fit_params).transform(X)

    def perplexity(self, X, heldout, *, depth: Optional[int] = None) -> float:
        """Held-out perplexity of new documents (document completion).

        ``X`` holds the observed part of each document, ``heldout`` the rest;
        the test-time chain on ``X`` yields samples of theta^(1) (every 5th
        collected iteration) with Phi^(1) fixed, and the perplexity is
        ``exp(-sum y ln(sum_s rate_s / sum_s norm_s) / sum y)``: NaN when
        ``heldout`` holds no token.  ``heldout`` is validated as ``X`` is
        (counts of the same shape, and the same column names when both have
        them).  ``depth`` picks the network of that depth (default: the
        deepest).
        """
        _, ppl = self._infer(X, depth, heldout=heldout)
        return ppl

    def score(self, X, y=None, *, heldout=None, depth: Optional[int] = None,
              train_fraction: float = SCORE_TRAIN_FRACTION) -> float:
        """Held-out log-likelihood per token of document completion (higher is better).

        Without ``heldout`` (scikit-learn's ``score(X, y=None)``), ``X`` is
        scored alone: each row's tokens are split with
        :func:`pygbn.split_tokens` (``train_fraction`` observed, the rest held
        out; for ``link="prg"`` each non-zero entry is observed or held out
        whole), the test-time chain runs on the observed part and the score
        is ``sum y ln q / sum y`` over the held-out part ``y``, with ``q`` the
        predictive of :meth:`perplexity`, i.e. ``-ln`` of the held-out
        perplexity.  For binary data every 1 is a token; for nonnegative
        reals ``y`` weighs each held-out entry by its value.  The split draws
        from ``random_state``: an int seed ``s`` splits with
        ``numpy.random.default_rng([s, SPLIT_SEED_TAG])`` (as ``pygbn
        perplexity --seed s``) and runs the chain with ``s``, so a fixed seed
        gives a fixed score.

        Parameters
        ----------
        X : array-like or sparse of shape (n_samples, n_features)
        y : ignored
            Present for scikit-learn (unsupervised convention).  A ``y`` with
            the shape of ``X`` is refused: held-out counts go to ``heldout``.
        heldout : array-like or sparse, same shape as X, optional
            Score these held-out counts of the documents whose observed part
            is ``X`` instead of splitting ``X``: ``-ln perplexity(X, heldout)``
            (counts only).
        depth : int, optional
            Network depth (default: the deepest).
        train_fraction : float in (0, 1), default=0.3
            Fraction of each row's tokens observed when ``X`` is split.

        Returns
        -------
        float
            The average held-out log-likelihood per token.
        """
        if heldout is not None:
            return -float(np.log(self.perplexity(X, heldout, depth=depth)))
        if y is not None and len(np.shape(y)) == 2 and tuple(np.shape(y)) == tuple(np.shape(X)):
            raise ValueError("score ignores y (scikit-learn's convention for unsupervised models) and "
                             "this y has the shape of X: pass held-out counts as "
                             "score(X, heldout=...) or use perplexity(X, heldout)")
        if isinstance(train_fraction, (bool, np.bool_)) or not isinstance(train_fraction, numbers.Real) \
                or not 0.0 < float(train_fraction) < 1.0:
            raise ValueError(f"train_fraction must be in (0, 1) (a part of each row is held out), "
                             f"got {train_fraction!r}")
        net = self._network(depth)
        Y = self._check_input(X, net)
        observed, held = score_split(Y, net.link, train_fraction, self.random_state)
        if held.nnz == 0:
            unit = "non-zero entries" if net.link.name == "prg" else "tokens"
            sizes = np.diff(Y.indptr) if net.link.name == "prg" else np.asarray(Y.sum(axis=1)).ravel()
            if sizes.size == 0 or sizes.max() < 2:
                raise ValueError(f"no sample of X has two or more {unit}: nothing to hold out, so X "
                                 f"cannot be scored alone")
            raise ValueError(f"with train_fraction={train_fraction!r} no sample of X holds out any of its "
                             f"{unit} (a sample of n keeps floor(train_fraction * n + 0.5) observed): "
                             f"nothing to hold out, so X cannot be scored alone; lower train_fraction")
        exponent = int(np.frexp(held.data.max())[1])
        if exponent < 0:
            # real values only weigh their cells, and the score does not depend on their scale: a
            # power of two brings the largest to [0.5, 1) exactly, so that subnormal values (below
            # 2**-1022) are not rounded to a few multiples of 2**-1074 in sum(y ln q) / sum(y)
            held = held.copy()
            held.data = np.ldexp(held.data, -exponent)
        _, ppl = self._infer(observed, depth, heldout=held, checked=True)
        return -float(np.log(ppl))

    def _check_input(self, X, net: Network, name: str = "X"):
        """New data for ``net``: validated by its link, its columns checked against the fit."""
        Y, names = _check_data(X, net.link, name)
        fitted = self.__dict__.get("feature_names_in_")
        if names is not None and fitted is not None:
            check_feature_names(names, [str(v) for v in fitted])
        if Y.shape[1] != net.n_features:
            raise ValueError(f"{name} has {Y.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{net.n_features} features as input")
        return Y

    def _infer(self, X, depth, heldout, checked: bool = False):
        net = self._network(depth)
        p = self._validated()
        Y = X if checked else self._check_input(X, net)
        H = None
        if heldout is not None:
            if checked:
                H = heldout
            elif not isinstance(net.link, PoissonLink):
                raise ValueError(f"perplexity is defined for counts (link='poisson'), not "
                                 f"link={net.link.name!r}")
            else:
                H = self._check_input(heldout, net, "heldout")
                _check_heldout_names(column_names(X), column_names(heldout))
            if H.shape != Y.shape:
                raise ValueError(f"heldout must have the shape of X {Y.shape}, got {H.shape}")
        res = infer_local(net, Y, burn_in=p["t_burn"], n_collect=p["t_coll"], heldout=H,
                          n_jobs=p["n_jobs"], random_state=self.random_state)
        return res.features, res.perplexity

    # ------------------------------------------------------------- generate
    def generate(self, n_samples: int, *, depth: Optional[int] = None, random_state=None):
        """Synthetic samples drawn top-down from the fitted network (paper eq:PGBN; see Network.generate).

        Parameters
        ----------
        n_samples : int
        depth : int, optional
            Network depth (default: the deepest).
        random_state : None, int, SeedSequence, BitGenerator or Generator, optional
            Default: the estimator's ``random_state`` (so with an int seed
            ``generate(n)`` gives the same samples at every call).
        """
        net = self._network(depth)
        rs = self.random_state if random_state is None else random_state
        return net.generate(n_samples, random_state=rs)

    # ---------------------------------------------------------------- io
    def save(self, path) -> None:
        """Save the fitted estimator to one ``.npz`` file (no pickle); see :func:`pygbn.load`.

        The file holds the networks, the parameters and the fitted
        attributes.  Parameters that hold state rather than data (a
        ``Generator`` or ``BitGenerator`` as ``random_state``, a ``callback``)
        are saved as ``None``; an int, a list of ints or a ``SeedSequence`` as
        ``random_state`` is kept, so the loaded model's ``transform`` draws
        what this one's does.  A new file gets the permissions ``open`` would
        give it; an existing one keeps its own.

        Raises
        ------
        ValueError
            If a parameter would make the file fail to load (one changed by
            ``set_params`` since the fit, e.g. ``eta=inf``, or a ``link``
            other than the networks'); nothing is written.
        """
        state = self._get_state()
        try:     # what load checks of the parameters, so that a file save writes loads back
            self._check_link(self.networks_[0].link)
            if not isinstance(self.random_state, (np.random.Generator, np.random.BitGenerator)):
                check_random_state(self.random_state)     # those two are saved as None
        except ValueError as exc:
            raise ValueError(f"cannot save a model that load would refuse: {exc}") from None
        io.write_model(path, self.networks_, kind="GBN",
                       fields={"params": self.get_params(deep=False), "fitted": state})


_PARAM_NAMES = tuple(param_names(GBN))
#: the fitted attributes of the convergence traces (absent from files written before them)
_TRACE_KEYS = ("loglikelihoods_", "trace_iterations_", "trace_widths_")


def _stored_traces(state: dict, n_nets: int):
    """The traces of a model file's fitted state, checked (None when the file has none)."""
    if not any(k in state for k in _TRACE_KEYS):
        return None
    ll, its, ws = (state.get(k) for k in _TRACE_KEYS)
    ok = all(isinstance(x, list) and len(x) == n_nets and all(isinstance(d, list) for d in x)
             for x in (ll, its, ws))
    ok = ok and all(len(a) == len(b) == len(c) for a, b, c in zip(ll, its, ws))
    ok = ok and all(isinstance(v, (int, float)) and not isinstance(v, bool) for d in ll for v in d)
    ok = ok and all(isinstance(v, int) and not isinstance(v, bool) for d in its for v in d)
    ok = ok and all(isinstance(w, list) and all(isinstance(k, int) for k in w) for d in ws for w in d)
    if not ok:
        raise ValueError(f"the stored {', '.join(_TRACE_KEYS)} must be {n_nets} lists each (one per "
                         "network), of numbers, iterations and width lists of equal lengths")
    return ll, its, ws


def _check_data(X, link: Link, name: str, min_samples: int = 0):
    """``(Y, names)``: ``X`` as the link's canonical CSR matrix (:meth:`Link.check_data`,
    after :func:`pygbn._utils.check_array`), and its column names (or None)."""
    requirement = {"counts": "nonnegative counts", "binary": "binary (0/1)"}.get(link.data_kind, "nonnegative")
    M, names = check_array(X, name, min_samples=min_samples, who="GBN", requirement=requirement)
    return link.check_data(M, name), names


def _check_heldout_names(names, h_names) -> None:
    """ValueError when X and heldout both have column names (:func:`~pygbn._utils.column_names`)
    and they differ: the held-out counts would be scored against other columns."""
    if h_names is not None and names is not None and h_names != names:
        raise ValueError("heldout's column names differ from those of X (other names, or another order)")


def _differs(a, b) -> bool:
    try:
        return bool(np.any(np.asarray(a, dtype=object) != np.asarray(b, dtype=object)))
    except Exception:  # pragma: no cover
        return a is not b


def save(obj, path: Union[str, os.PathLike]) -> None:
    """Save a fitted :class:`GBN` or a :class:`~pygbn.model.Network` to one ``.npz`` file.

    No pickle: arrays and JSON (see :mod:`pygbn.io`).  Parameters of a GBN
    that hold state rather than data (a ``Generator`` or ``BitGenerator`` as
    ``random_state``, a ``callback``) are saved as ``None`` (see
    :meth:`GBN.save`).
    """
    if isinstance(obj, GBN):
        obj.save(path)
    elif isinstance(obj, Network):
        io.write_model(path, [obj], kind="Network")
    else:
        raise ValueError(f"can only save a fitted GBN or a Network, got {type(obj).__name__}")


def load(path: Union[str, os.PathLike]):
    """Load a model saved by :func:`save` (or ``GBN.save``); never unpickles.

    Returns
    -------
    GBN or Network
        What was saved: a fitted estimator, or a bare network.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    TypeError
        If ``path`` is not a file name (str, bytes or path-like; a file
        object, say).
    ValueError
        For any other failure, with one message saying what is wrong: the
        file is not a pygbn model (corrupted, foreign, from a newer format
        version) or its content is inconsistent (see
        :func:`pygbn.io.read_model`; for a GBN also its parameters and
        fitted attributes against the networks).
    """
    saved = io.read_model(path)
    where = f"{os.fspath(path)!r} is not a pygbn model file, or a damaged one"
    try:
        if saved.kind == "Network" and len(saved.networks) == 1 and not saved.fields:
            return saved.networks[0]
        if saved.kind == "GBN":
            return GBN._from_state(saved.networks, saved.fields.get("params"), saved.fields.get("fitted"))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where}: {' '.join(str(exc).split())}") from None
    raise ValueError(f"{where}: it holds a model of kind {saved.kind!r} with {len(saved.networks)} "
                     "network(s); pygbn writes kind 'GBN', or 'Network' with one network")
