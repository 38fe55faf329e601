"""scikit-learn style estimator for gamma belief networks."""
from __future__ import annotations

import logging
import numbers
import sys
import time
from typing import Callable, List, Optional, Sequence

import numpy as np
import scipy.sparse as sp

from pygbn._utils import check_random_state, effective_n_jobs
from pygbn.inference import _blocked
from pygbn.inference.gibbs import GibbsSampler, _as_kernel_csr, _perplexity, fit_layerwise, per_layer
from pygbn.model.links import PoissonLink, get_link
from pygbn.model.network import Hyperparameters, Network

logger = logging.getLogger("pygbn")

__all__ = ["GBN"]


class GBN:
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
        Burn-in iterations ``B_T`` before the new top layer is pruned.
        ``(B_1, B_t)`` gives ``B_1`` for the first layer and ``B_t`` for all
        later ones; a sequence of length ``n_layers`` gives each layer its own.
    n_collect : int or sequence of int, default=500
        Iterations ``C_T`` after pruning at each depth.
    method : {"auto", "collapsed", "blocked"}, default="auto"
        Layer-one update for counts: "collapsed" (token labels with Phi^(1)
        and theta^(1) integrated out, eq:z; the paper's choice) or "blocked"
        (explicit Phi^(1), theta^(1) and a multinomial split of every non-zero
        count, eq:step1; parallel over documents).  "auto" is "collapsed" for
        counts; the binary and real links are always blocked (Algorithm 2).
    n_jobs : int or None, default=1
        Threads for the document-parallel kernels (-1: all cores).  Results do
        not depend on it.
    random_state : None, int, SeedSequence or numpy.random.Generator
        Seed of the chain (and of ``transform``).
    verbose : bool or int, default=False
        Show progress on stderr (depth, iteration, widths, seconds per
        iteration) through the ``"pygbn"`` logger; an int sets how many
        iterations between lines (True: 50).
    callback : callable, optional
        ``callback(info)`` after every training iteration; ``info`` is a dict
        with ``depth``, ``iteration``, ``n_iterations``, ``widths``,
        ``seconds`` and ``sampler``.  Returning ``False`` stops training.
    prune : bool, default=True
        Prune the inactive factors of each new top layer at iteration ``B_T``.
    min_width : int, default=4
        Stop adding layers once a layer's width is at most this.
    hyperparameters : dict or Hyperparameters, optional
        ``a0, b0, e0, f0`` of the priors (default 0.01, 0.01, 1, 1).
    transform_iter : (int, int), default=(500, 500)
        Burn-in and collected iterations of the test-time chain of
        :meth:`transform` and :meth:`perplexity`.
    check : bool, default=False
        Debug mode: verify the sampler's invariants after every iteration.

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
    n_features_in_ : int
        Number of features (terms) seen in ``fit``.
    """

    def __init__(self, link="poisson", n_components: int = 100, n_layers: int = 5, eta=0.05,
                 burn_in=(1000, 500), n_collect=500, method: str = "auto", n_jobs: Optional[int] = 1,
                 random_state=None, verbose=False, callback: Optional[Callable] = None,
                 prune: bool = True, min_width: int = 4, hyperparameters=None,
                 transform_iter=(500, 500), check: bool = False):
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

    # --------------------------------------------------------------- params
    def get_params(self, deep: bool = True) -> dict:
        """Parameters of the estimator (scikit-learn convention)."""
        return {k: getattr(self, k) for k in _PARAM_NAMES}

    def set_params(self, **params) -> "GBN":
        """Set parameters (scikit-learn convention)."""
        for k, v in params.items():
            if k not in _PARAM_NAMES:
                raise ValueError(f"invalid parameter {k!r} for GBN; valid: {sorted(_PARAM_NAMES)}")
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        defaults = GBN()
        changed = [f"{k}={getattr(self, k)!r}" for k in _PARAM_NAMES
                   if _differs(getattr(self, k), getattr(defaults, k))]
        return f"GBN({', '.join(changed)})"

    def _validated(self) -> dict:
        link = get_link(self.link)
        K = _check_int(self.n_components, "n_components", 1)
        T = _check_int(self.n_layers, "n_layers", 1)
        etas = _check_positive_seq(self.eta, "eta", T)
        burn_l = [_check_int(b, "burn_in", 0)
                  for b in per_layer(self.burn_in, T, "burn_in", first_and_rest=True)]
        coll_l = [_check_int(c, "n_collect", 0) for c in per_layer(self.n_collect, T, "n_collect")]
        method = self.method
        if method not in ("auto", "collapsed", "blocked"):
            raise ValueError(f"method must be 'auto', 'collapsed' or 'blocked', got {method!r}")
        if method == "auto":
            method = "collapsed" if link.collapsible else "blocked"
        if method == "collapsed" and not link.collapsible:
            raise ValueError(
                f"method='collapsed' needs count data (link='poisson'); link={link.name!r} "
                "is sampled with method='blocked'")
        n_jobs = effective_n_jobs(self.n_jobs)
        hyper = self.hyperparameters
        if hyper is None:
            hyper = Hyperparameters()
        elif isinstance(hyper, dict):
            unknown = set(hyper) - {"a0", "b0", "e0", "f0"}
            if unknown:
                raise ValueError(f"hyperparameters has unknown keys {sorted(unknown)}; valid: a0, b0, e0, f0")
            hyper = Hyperparameters(**hyper)
        elif not isinstance(hyper, Hyperparameters):
            raise ValueError(f"hyperparameters must be a dict or Hyperparameters, got {hyper!r}")
        min_width = _check_int(self.min_width, "min_width", 0)
        ti = self.transform_iter
        if np.ndim(ti) != 1 or len(ti) != 2:
            raise ValueError(f"transform_iter must be (burn_in, n_collect), got {ti!r}")
        t_burn = _check_int(ti[0], "transform_iter[0]", 0)
        t_coll = _check_int(ti[1], "transform_iter[1]", 1)
        if self.callback is not None and not callable(self.callback):
            raise ValueError(f"callback must be callable, got {self.callback!r}")
        verbose = self.verbose
        if isinstance(verbose, bool) or verbose is None:
            every = 50 if verbose else 0
        elif isinstance(verbose, numbers.Integral) and verbose >= 0:
            every = int(verbose)
        else:
            raise ValueError(f"verbose must be a bool or a nonnegative int, got {verbose!r}")
        return dict(link=link, K=K, T=T, etas=etas, burn=burn_l, coll=coll_l, method=method,
                    n_jobs=n_jobs, hyper=hyper, min_width=min_width, t_burn=t_burn,
                    t_coll=t_coll, verbose_every=every)

    # ----------------------------------------------------------------- fit
    def fit(self, X, y=None, *, heldout=None, vocabulary: Optional[Sequence[str]] = None) -> "GBN":
        """Fit networks of depth 1..n_layers to ``X`` (samples x features).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Counts (link="poisson"; integral floats accepted), 0/1 values
            (link="bernoulli") or nonnegative reals (link="prg").  Never
            densified.
        y : ignored
        heldout : array-like or sparse, same shape as X, optional
            Held-out counts of the same documents (Poisson link only): the
            held-out perplexity of each depth is recorded in ``perplexity_``
            (see :func:`pygbn.evaluation.split_tokens`).
        vocabulary : sequence of str, optional
            Feature names, kept on the fitted networks for exploration.
        """
        p = self._validated()
        link = p["link"]
        Y = link.check_data(X, "X")
        J, V = Y.shape
        if J == 0 or V == 0:
            raise ValueError(f"X must have at least one sample and one feature, got shape {Y.shape}")
        if Y.nnz == 0:
            raise ValueError("X has no non-zero entry: there is nothing to fit")
        H = None
        if heldout is not None:
            if not isinstance(link, PoissonLink):
                raise ValueError(f"heldout perplexity is defined for counts (link='poisson'), not link={link.name!r}")
            H = PoissonLink().check_data(heldout, "heldout")
            if H.shape != Y.shape:
                raise ValueError(f"heldout must have the shape of X {Y.shape}, got {H.shape}")
        if vocabulary is not None:
            vocabulary = [str(v) for v in vocabulary]
            if len(vocabulary) != V:
                raise ValueError(f"vocabulary has {len(vocabulary)} entries but X has {V} features")
        rng = check_random_state(self.random_state)
        progress = _Progress(p["verbose_every"]) if p["verbose_every"] else None
        user_cb = self.callback

        def cb(info):
            if progress is not None:
                progress(info)
            if user_cb is not None:
                return user_cb(info)
            return None

        with _verbose_logging(progress is not None):
            t0 = time.perf_counter()
            res = fit_layerwise(
                Y, link=link, n_components=p["K"], n_layers=p["T"], eta=p["etas"],
                burn_in=p["burn"], n_collect=p["coll"], method=p["method"], n_jobs=p["n_jobs"],
                random_state=rng, hyper=p["hyper"], prune=self.prune, min_width=p["min_width"],
                heldout=H, callback=cb if (progress or user_cb) else None, check=self.check)
            logger.info("fit done in %.1f s: widths %s", time.perf_counter() - t0,
                        res.networks[-1].widths if res.networks else [])
        for net in res.networks:
            net.vocabulary = vocabulary
        self.networks_ = res.networks
        self.widths_ = list(res.networks[-1].widths)
        self.seconds_per_iteration_ = res.seconds_per_iteration
        if H is not None:
            self.perplexity_ = res.perplexity
        self.n_features_in_ = V
        self.method_ = p["method"]
        return self

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
        model._validated()
        model.networks_ = nets
        model.widths_ = list(nets[-1].widths)
        model.n_features_in_ = V
        model.seconds_per_iteration_ = []
        model.method_ = "blocked"
        return model

    @property
    def network_(self) -> Network:
        """The deepest fitted network."""
        self._check_fitted()
        return self.networks_[-1]

    def _check_fitted(self):
        if not hasattr(self, "networks_"):
            raise ValueError("this GBN instance is not fitted yet; call fit first")

    def _network(self, depth) -> Network:
        self._check_fitted()
        if depth is None:
            return self.networks_[-1]
        d = _check_int(depth, "depth", 1)
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

        Returns
        -------
        ndarray of shape (n_samples, K_1)
        """
        feats, _ = self._infer(X, depth, heldout=None)
        return feats

    def fit_transform(self, X, y=None, **fit_params) -> np.ndarray:
        """``fit(X)`` then ``transform(X)``."""
        return self.fit(X, y, **fit_params).transform(X)

    def perplexity(self, X, heldout, *, depth: Optional[int] = None) -> float:
        """Held-out perplexity of new documents (document completion).

        ``X`` holds the observed part of each document, ``heldout`` the rest;
        the test-time chain on ``X`` yields samples of theta^(1) (every 5th
        collected iteration) with Phi^(1) fixed, and the perplexity is
        ``exp(-sum y ln(sum_s rate_s / sum_s norm_s) / sum y)``.
        """
        _, ppl = self._infer(X, depth, heldout=heldout)
        return ppl

    def score(self, X, heldout, *, depth: Optional[int] = None) -> float:
        """Average held-out log-likelihood per token, ``-ln perplexity`` (higher is better)."""
        return -float(np.log(self.perplexity(X, heldout, depth=depth)))

    def _infer(self, X, depth, heldout):
        net = self._network(depth)
        p = self._validated()
        Y = net.link.check_data(X, "X")
        if Y.shape[1] != net.n_features:
            raise ValueError(f"X has {Y.shape[1]} features but the network was fitted with {net.n_features}")
        H = None
        if heldout is not None:
            if not isinstance(net.link, PoissonLink):
                raise ValueError("perplexity is defined for counts (link='poisson')")
            H = PoissonLink().check_data(heldout, "heldout")
            if H.shape != Y.shape:
                raise ValueError(f"heldout must have the shape of X {Y.shape}, got {H.shape}")
        rng = check_random_state(self.random_state)
        J = Y.shape[0]
        K1 = net.layers[0].width
        if J == 0:
            return np.zeros((0, K1)), float("nan")
        sampler = GibbsSampler.for_inference(net, Y, n_jobs=p["n_jobs"], random_state=rng)
        acc = np.zeros((J, K1))
        if H is not None:
            h_indptr, h_indices, h_values = _as_kernel_csr(H)
            rate_acc = np.zeros(h_values.size)
            norm_acc = np.zeros(J)
            n_eval = 0
        for it in range(p["t_burn"] + p["t_coll"]):
            sampler.sweep(update_p_c=True)
            if it >= p["t_burn"]:
                th = sampler.network.layers[0].theta
                acc += th / th.sum(axis=1, keepdims=True)
                if H is not None and (it - p["t_burn"] + 1) % 5 == 0:
                    _blocked.heldout_accumulate(h_indptr, h_indices, sampler.network.layers[0].phi,
                                                th, rate_acc, norm_acc, sampler._n_threads())
                    n_eval += 1
        feats = acc / p["t_coll"]
        ppl = float("nan")
        if H is not None:
            if n_eval == 0:  # fewer than 5 collected iterations: use the last sample
                _blocked.heldout_accumulate(h_indptr, h_indices, sampler.network.layers[0].phi,
                                            sampler.network.layers[0].theta, rate_acc, norm_acc,
                                            sampler._n_threads())
                n_eval = 1
            ppl = _perplexity(h_values, h_indptr, rate_acc, norm_acc, n_eval)
        return feats, ppl

    # ------------------------------------------------------------- generate
    def generate(self, n_samples: int, *, depth: Optional[int] = None, random_state=None):
        """Synthetic samples drawn top-down from the fitted network (see Network.generate)."""
        net = self._network(depth)
        rs = self.random_state if random_state is None else random_state
        return net.generate(n_samples, random_state=rs)

    # ---------------------------------------------------------------- io
    def save(self, path) -> None:
        """Save the fitted estimator to one ``.npz`` file (no pickle); see :func:`pygbn.load`."""
        from pygbn.io import save

        save(self, path)


_PARAM_NAMES = ("link", "n_components", "n_layers", "eta", "burn_in", "n_collect", "method",
                "n_jobs", "random_state", "verbose", "callback", "prune", "min_width",
                "hyperparameters", "transform_iter", "check")


def _differs(a, b) -> bool:
    try:
        return bool(np.any(np.asarray(a, dtype=object) != np.asarray(b, dtype=object)))
    except Exception:  # pragma: no cover
        return a is not b


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def _check_positive_seq(value, name: str, n: int) -> List[float]:
    out = []
    for v in per_layer(value, n, name):
        if isinstance(v, bool) or not isinstance(v, (numbers.Real, np.floating, np.integer)) \
                or not np.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be positive and finite, got {value!r}")
        out.append(float(v))
    return out


class _Progress:
    """Progress lines through the "pygbn" logger every ``every`` iterations."""

    def __init__(self, every: int):
        self.every = max(1, int(every))
        self._times: List[float] = []

    def __call__(self, info):
        self._times.append(info["seconds"])
        it, n = info["iteration"], info["n_iterations"]
        if it % self.every == 0 or it == n or it == 1:
            recent = self._times[-self.every:]
            logger.info("layer %d | iteration %d/%d | widths %s | %.4f s/iteration",
                        info["depth"], it, n, info["widths"], float(np.mean(recent)))
        if it == n:
            self._times = []


class _verbose_logging:
    """Attach a stderr handler to the "pygbn" logger for the duration (opt-in progress)."""

    def __init__(self, on: bool):
        self.on = on
        self.handler = None

    def __enter__(self):
        if self.on:
            lg = logging.getLogger("pygbn")
            self.old_level = lg.level
            if lg.level == logging.NOTSET or lg.level > logging.INFO:
                lg.setLevel(logging.INFO)
            if not any(isinstance(h, logging.StreamHandler) and not isinstance(h, logging.NullHandler)
                       for h in lg.handlers):
                self.handler = logging.StreamHandler(sys.stderr)
                self.handler.setFormatter(logging.Formatter("pygbn: %(message)s"))
                lg.addHandler(self.handler)
        return self

    def __exit__(self, *exc):
        if self.on:
            lg = logging.getLogger("pygbn")
            if self.handler is not None:
                lg.removeHandler(self.handler)
            lg.setLevel(self.old_level)
        return False
