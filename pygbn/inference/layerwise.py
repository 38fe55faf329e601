"""Layer-wise training of the paper's Algorithms 1 and 2.

One Gibbs chain grows the network a layer at a time: at depth T it runs
``B_T`` burn-in iterations, prunes the new top layer's inactive factors,
runs ``C_T`` more and keeps the network of that depth.  :class:`Schedule`
holds those numbers; :func:`run_layerwise` runs them on any chain that has
the methods of :class:`LayerwiseChain` (:class:`SamplerChain`: one process;
:class:`pygbn.inference.partition.PartitionedChain`: documents spread over
workers); :func:`fit_layerwise` is the one-process fit.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Protocol, Tuple

import numpy as np
import scipy.sparse as sp

from pygbn._utils import check_int, effective_n_jobs, per_layer, positive_per_layer
from pygbn.inference.gibbs import GibbsSampler
from pygbn.inference.invariants import check_invariants
from pygbn.inference.testchain import HELDOUT_EVERY, HeldoutPredictive, check_heldout
from pygbn.inference.trace import document_loglik, loglik_per_token
from pygbn.model.network import Hyperparameters, Network

logger = logging.getLogger("pygbn")

__all__ = ["Schedule", "FitResult", "fit_layerwise", "run_layerwise", "LayerwiseChain",
           "SamplerChain", "per_layer", "TRACE_EVERY"]

#: default of ``trace_every``: the training log-likelihood is recorded every this many
#: iterations (its cost, about that of one split of the data, is then a few percent)
TRACE_EVERY = 25


@dataclass(frozen=True)
class Schedule:
    """The iteration schedule of layer-wise training (Algorithms 1 and 2).

    Build it per layer with :meth:`for_layers`; the constructor takes the
    expanded per-layer tuples and validates every field.

    Parameters
    ----------
    burn_in : tuple of int
        ``B_T``: iterations at depth T before the new top layer is pruned.
        Its length is the maximum depth ``T_max``.
    n_collect : tuple of int
        ``C_T``: iterations at depth T after pruning (same length).
        ``B_T + C_T`` must be at least 1 at every depth (a depth without an
        iteration would keep an untrained layer).
    prune : bool, default=True
        Prune the inactive factors of each new top layer at iteration ``B_T``
        (a depth with ``B_T = 0`` has no such iteration and is not pruned).
    min_width : int, default=4
        Stop adding layers once the top layer's width is at most this.
    pc_start : int, default=10
        p_j and c_j are updated from iteration ``pc_start + 1`` of each depth
        on (the authors' code; the first iterations let the counts settle).
    heldout_every : int, default=5
        With held-out counts, every this many collected iterations add a
        sample to the held-out predictive (a depth that collected fewer,
        or was stopped by the callback before one, adds its last state).
    trace_every : int, default=25
        Record the training log-likelihood per token
        (:mod:`pygbn.inference.trace`) at every iteration of a depth that is
        a multiple of this (0: never).  No random numbers are drawn, so the
        chain does not depend on it.
    """

    burn_in: Tuple[int, ...]
    n_collect: Tuple[int, ...]
    prune: bool = True
    min_width: int = 4
    pc_start: int = 10
    heldout_every: int = HELDOUT_EVERY
    trace_every: int = TRACE_EVERY

    def __post_init__(self):
        for name in ("burn_in", "n_collect"):
            value = getattr(self, name)
            try:
                ndim = np.ndim(value)
            except ValueError:      # a ragged sequence ([1, [2]]): its entries are checked below
                ndim = 1
            if isinstance(value, (str, bytes)) or ndim != 1:
                raise ValueError(f"{name} must be a sequence of one int per layer (Schedule.for_layers "
                                 f"expands a single value), got {value!r}")
        burn = tuple(check_int(b, "burn_in", 0) for b in self.burn_in)
        coll = tuple(check_int(c, "n_collect", 0) for c in self.n_collect)
        if not burn or len(burn) != len(coll):
            raise ValueError(f"burn_in and n_collect must hold one value per layer (at least one), "
                             f"got {self.burn_in!r} and {self.n_collect!r}")
        for t, (b, c) in enumerate(zip(burn, coll), start=1):
            if b + c == 0:
                raise ValueError(f"every layer needs at least one iteration (burn_in + n_collect >= 1); "
                                 f"layer {t} has burn_in={b} and n_collect={c}")
        object.__setattr__(self, "burn_in", burn)
        object.__setattr__(self, "n_collect", coll)
        if not isinstance(self.prune, (bool, np.bool_)):
            raise ValueError(f"prune must be True or False, got {self.prune!r}")
        object.__setattr__(self, "prune", bool(self.prune))
        object.__setattr__(self, "min_width", check_int(self.min_width, "min_width", 0))
        object.__setattr__(self, "pc_start", check_int(self.pc_start, "pc_start", 0))
        object.__setattr__(self, "heldout_every", check_int(self.heldout_every, "heldout_every", 1))
        object.__setattr__(self, "trace_every", check_int(self.trace_every, "trace_every", 0))

    @classmethod
    def for_layers(cls, n_layers: int = 5, burn_in=(1000, 500), n_collect=500, **options) -> "Schedule":
        """A schedule for up to ``n_layers`` layers.

        Parameters
        ----------
        n_layers : int, default=5
            Maximum depth ``T_max``.
        burn_in : int or sequence of int, default=(1000, 500)
            One value for every layer, ``(B_1, B_t)`` (first layer, every later
            one) or one value per layer.
        n_collect : int or sequence of int, default=500
            One value for every layer or one per layer.
        **options
            ``prune``, ``min_width``, ``pc_start``, ``heldout_every``, ``trace_every``.
        """
        T = check_int(n_layers, "n_layers", 1)
        return cls(burn_in=tuple(per_layer(burn_in, T, "burn_in", first_and_rest=True)),
                   n_collect=tuple(per_layer(n_collect, T, "n_collect")), **options)

    @property
    def n_layers(self) -> int:
        """The maximum depth ``T_max``."""
        return len(self.burn_in)


@dataclass
class FitResult:
    """What :func:`fit_layerwise` returns.

    ``loglikelihoods[d]``, ``trace_iterations[d]`` and ``trace_widths[d]``
    hold, for depth ``d + 1``, the training log-likelihood per token at
    every ``schedule.trace_every``-th iteration, those iterations (counted
    from 1 within the depth) and the widths there.
    """

    networks: List[Network] = field(default_factory=list)
    widths: List[List[int]] = field(default_factory=list)
    perplexity: List[float] = field(default_factory=list)
    seconds_per_iteration: List[float] = field(default_factory=list)
    sampler: Optional[GibbsSampler] = None
    loglikelihoods: List[List[float]] = field(default_factory=list)
    trace_iterations: List[List[int]] = field(default_factory=list)
    trace_widths: List[List[List[int]]] = field(default_factory=list)


def fit_layerwise(Y: sp.csr_matrix, schedule: Optional[Schedule] = None, *, link="poisson",
                  n_components: int = 100, eta=0.05, method: str = "collapsed", n_jobs: int = 1,
                  random_state=None, hyper: Optional[Hyperparameters] = None,
                  heldout: Optional[sp.csr_matrix] = None, callback: Optional[Callable] = None,
                  check: bool = False, keep_state: bool = True) -> FitResult:
    """Layer-wise training of Algorithms 1 and 2 of the paper.

    For T = 1, ..., ``schedule.n_layers``: (T > 1) add a layer whose width
    bound is the width of the layer below; run ``B_T`` iterations, prune the
    new top layer's inactive factors once (if ``schedule.prune``), run
    ``C_T`` more; keep the network (posterior-mean Phi's).  Stop adding
    layers once a layer's width is at most ``schedule.min_width``.

    Parameters
    ----------
    Y : csr_matrix of shape (n_samples, n_features)
        Observations, already validated by the link (``link.check_data``).
    schedule : Schedule, optional
        Iterations per depth and their options (default:
        ``Schedule.for_layers()``).
    link : str or Link, default="poisson"
    n_components : int, default=100
        Width bound ``K_1max`` of the first layer.
    eta : float or sequence of float, default=0.05
        Dirichlet concentration of each layer's Phi (one value, or one per layer).
    method : {"collapsed", "blocked", "partial"}, default="collapsed"
        Layer-one update (see :class:`GibbsSampler`).
    n_jobs : int or None, default=1
        Threads of the document-parallel kernels (None: 1, -1: all cores;
        results do not depend on it).
    random_state : None, int, SeedSequence or Generator
    hyper : Hyperparameters, optional
    heldout : csr_matrix, optional
        Held-out counts of the same samples: every ``schedule.heldout_every``-th
        collected iteration adds a sample of Phi^(1) theta^(1) to the held-out
        predictive and each depth's perplexity is recorded (the authors'
        protocol, see :class:`HeldoutPredictive`; with fewer collected
        iterations, the depth's last state).
    callback : callable, optional
        ``callback(info)`` after every iteration with a dict holding
        ``depth``, ``iteration``, ``n_iterations``, ``widths``, ``seconds``,
        ``sampler`` and ``loglikelihood`` (the training log-likelihood per
        token when this iteration recorded one, else None); if it returns
        ``False`` training stops after that depth's current iteration (the
        partial depth is kept).
    check : bool, default=False
        Verify the chain's invariants after every iteration
        (:func:`check_invariants`).
    keep_state : bool, default=True
        False: the chain's per-document state is dropped at the snapshot of
        depth ``schedule.n_layers`` (:meth:`GibbsSampler.snapshot` with
        ``release``: the same networks at a lower peak memory) and
        ``FitResult.sampler`` is None; what :class:`pygbn.GBN` does.

    Returns
    -------
    FitResult
        One network per depth, the widths, the held-out perplexities and the
        mean seconds per iteration of each depth, and the sampler.
    """
    sched = Schedule.for_layers() if schedule is None else schedule
    if not isinstance(sched, Schedule):
        raise ValueError(f"schedule must be a Schedule (Schedule.for_layers(...)), got {schedule!r}")
    n_jobs = effective_n_jobs(n_jobs)
    heldout = check_heldout(heldout, Y, link)
    etas = positive_per_layer(eta, sched.n_layers, "eta")
    sampler = GibbsSampler.for_training(Y, n_components, link=link, eta=float(etas[0]), hyper=hyper,
                                        method=method, n_jobs=n_jobs, random_state=random_state)
    chain = SamplerChain(sampler, heldout, release_at=None if keep_state else sched.n_layers)
    result = run_layerwise(chain, sched, etas, heldout=heldout is not None, callback=callback, check=check)
    if not keep_state:
        result.sampler = None
    return result


class LayerwiseChain(Protocol):
    """What :func:`run_layerwise` needs of a chain (one process or distributed).

    Attributes
    ----------
    sampler : GibbsSampler or None
        The chain's sampler when it lives in this process (given to callbacks).
    widths : list of int
        The current widths ``[K_1, ..., K_T]``.
    """

    sampler: Optional[GibbsSampler]

    @property
    def widths(self) -> List[int]: ...

    def add_layer(self, eta: float) -> None:
        """:meth:`GibbsSampler.add_layer`."""

    def sweep(self, update_p_c: bool) -> None:
        """One iteration, :meth:`GibbsSampler.sweep`."""

    def prune_top(self) -> int:
        """:meth:`GibbsSampler.prune_top`; returns the new width."""

    def check(self) -> None:
        """:func:`check_invariants` on the whole state."""

    def start_heldout(self) -> None:
        """Start a new held-out predictive (:class:`HeldoutPredictive`)."""

    def add_heldout(self) -> None:
        """Add the current sample of (Phi^(1), theta^(1)) to the predictive."""

    def heldout_perplexity(self) -> float:
        """The predictive's held-out perplexity."""

    def snapshot(self) -> Network:
        """:meth:`GibbsSampler.snapshot` of all documents."""

    def loglik_per_token(self) -> float:
        """The training log-likelihood per token of the current state (:mod:`pygbn.inference.trace`)."""


class SamplerChain:
    """The chain of one process: a :class:`GibbsSampler` holding the global part
    of the state and the local part of every document (see :class:`LayerwiseChain`).

    Parameters
    ----------
    sampler : GibbsSampler
    heldout : csr_matrix, optional
        Held-out counts of the sampler's documents.
    release_at : int, optional
        The depth whose snapshot is the chain's last: its per-document state
        is dropped there (:meth:`GibbsSampler.snapshot` with ``release``).
    """

    def __init__(self, sampler: GibbsSampler, heldout: Optional[sp.csr_matrix] = None,
                 release_at: Optional[int] = None):
        self.sampler = sampler
        self.heldout = heldout
        self.release_at = release_at
        self.predictive: Optional[HeldoutPredictive] = None
        self.n_tokens = sampler.link.n_tokens(sampler.Y)

    @property
    def widths(self) -> List[int]:
        return self.sampler.network.widths

    def add_layer(self, eta: float) -> None:
        self.sampler.add_layer(eta)

    def sweep(self, update_p_c: bool) -> None:
        self.sampler.sweep(update_p_c=update_p_c)

    def prune_top(self) -> int:
        return self.sampler.prune_top()

    def check(self) -> None:
        check_invariants(self.sampler)

    def start_heldout(self) -> None:
        self.predictive = HeldoutPredictive(self.heldout, self.sampler.n_threads)

    def add_heldout(self) -> None:
        self.predictive.add(*self.sampler.layer_one_sample())

    def heldout_perplexity(self) -> float:
        return self.predictive.perplexity()

    def snapshot(self) -> Network:
        release = self.release_at is not None and self.sampler.depth >= self.release_at
        return self.sampler.snapshot(release=release)

    def loglik_per_token(self) -> float:
        return loglik_per_token(document_loglik(self.sampler), self.n_tokens)


def run_layerwise(chain: LayerwiseChain, schedule: Schedule, etas: List[float], *,
                  heldout: bool = False, callback: Optional[Callable] = None,
                  check: bool = False) -> FitResult:
    """Run the layer-wise schedule of Algorithms 1 and 2 on ``chain``.

    The loop of :func:`fit_layerwise` (which see), for any
    :class:`LayerwiseChain`: add a layer (T > 1, unless the top layer is
    already at most ``schedule.min_width`` wide), ``B_T`` sweeps, pruning,
    ``C_T`` sweeps with a held-out sample every ``schedule.heldout_every``
    (when ``heldout``), the training log-likelihood every
    ``schedule.trace_every``, a snapshot per depth.

    Parameters
    ----------
    chain : LayerwiseChain
        A chain on a one-layer network (e.g. :meth:`GibbsSampler.for_training`
        in a :class:`SamplerChain`).
    schedule : Schedule
    etas : list of float
        The Dirichlet concentration of each layer (one per layer of the schedule).
    heldout : bool, default=False
        Record each depth's held-out perplexity.
    callback : callable, optional
        As in :func:`fit_layerwise`; ``info["sampler"]`` is ``chain.sampler``.
    check : bool, default=False
        Call ``chain.check()`` after every iteration.

    Returns
    -------
    FitResult
    """
    sched = schedule
    result = FitResult(sampler=getattr(chain, "sampler", None))
    stop = False
    for T in range(1, sched.n_layers + 1):
        if T > 1:
            width = chain.widths[-1]
            if width <= sched.min_width:
                logger.info("stopping at %d layers: width %d <= min_width %d", T - 1, width,
                            sched.min_width)
                break
            chain.add_layer(float(etas[T - 1]))
        burn = sched.burn_in[T - 1]
        n_iter = burn + sched.n_collect[T - 1]
        if heldout:
            chain.start_heldout()
        t_start = time.perf_counter()
        n_done = n_heldout = 0
        traces: Tuple[List[float], List[int], List[List[int]]] = ([], [], [])
        for trace, kept in zip(traces, (result.loglikelihoods, result.trace_iterations, result.trace_widths)):
            kept.append(trace)
        for it in range(1, n_iter + 1):
            t0 = time.perf_counter()
            chain.sweep(update_p_c=it > sched.pc_start)
            if sched.prune and it == burn:
                chain.prune_top()
            if check:
                chain.check()
            if heldout and it > burn and (it - burn) % sched.heldout_every == 0:
                chain.add_heldout()
                n_heldout += 1
            n_done = it
            ll = None
            if sched.trace_every and it % sched.trace_every == 0:
                ll = chain.loglik_per_token()
                for trace, value in zip(traces, (ll, it, list(chain.widths))):
                    trace.append(value)
            if callback is not None:
                ret = callback({"depth": T, "iteration": it, "n_iterations": n_iter,
                                "widths": chain.widths, "seconds": time.perf_counter() - t0,
                                "sampler": result.sampler, "loglikelihood": ll})
                if ret is False or ret is np.False_:
                    stop = True
                    break
        result.seconds_per_iteration.append((time.perf_counter() - t_start) / max(n_done, 1))
        if heldout and n_heldout == 0:  # fewer collected iterations than heldout_every: the last state
            chain.add_heldout()
        result.networks.append(chain.snapshot())
        result.widths.append(chain.widths)
        if heldout:
            result.perplexity.append(chain.heldout_perplexity())
        ppl = "" if not heldout else ", held-out perplexity %.2f" % result.perplexity[-1]
        logger.info("depth %d done: widths %s, %.4f s/iteration%s", T, chain.widths,
                    result.seconds_per_iteration[-1], ppl)
        if stop:
            break
    return result
