"""Upward-downward Gibbs sampling for the gamma belief network.

:class:`GibbsSampler` holds the state of one chain (a :class:`Network` with
per-sample hidden units, plus the latent counts) and runs one iteration of the
sampler of the paper's Appendix B with :meth:`GibbsSampler.sweep`.  Each
conditional is one method whose docstring names the equation it implements:

==========================  ==========================================
paper                       method
==========================  ==========================================
eq:z (collapsed layer one)  :meth:`GibbsSampler.sample_layer_one_collapsed`
eq:step1, eq:Ber-PGBN,      :meth:`GibbsSampler.sample_layer_one_blocked`
eq:Gam-PGBN, eq:c_g
eq:CRT + eq:step1           :meth:`GibbsSampler.propagate_up`
eq:step2                    :meth:`GibbsSampler.sample_phi`
eq:step5 (r, gamma0, c0)    :meth:`GibbsSampler.sample_top`
eq:step6, eq:p              :meth:`GibbsSampler.sample_p_c`
eq:step4                    :meth:`GibbsSampler.sample_theta`
==========================  ==========================================

The layer-wise schedule of Algorithms 1 and 2 (burn-in, pruning of the new
top layer, collection, one network per depth) is
:func:`pygbn.inference.layerwise.fit_layerwise`; the test-time chain for new
samples is :func:`pygbn.inference.testchain.infer_local`.

Parallelism and reproducibility: every document-parallel kernel works on
fixed blocks of ``BLOCK_SIZE`` documents, block ``b`` drawing from its own
stream (:class:`pygbn._utils.BlockStreams`), so a fixed seed gives the same
chain for any ``n_jobs``.  The collapsed layer-one sweep and the global
updates are serial and draw from one private stream.
"""
from __future__ import annotations

import logging
from typing import List, Optional, Sequence

import numpy as np
import scipy.sparse as sp

from pygbn._utils import (BlockStreams, block_bounds, check_int, check_random_state, effective_n_jobs,
                          spawn_generators, trim_heap)
from pygbn.inference import _blocked, _upper
from pygbn.inference.collapsed_state import CollapsedState
from pygbn.inference.invariants import check_chain_input, check_keep, check_layer_index
from pygbn.inference.partial import PartialState, dirichlet_phi_one, sample_layer_one_partial
from pygbn.inference.streams import ChainSeeds
from pygbn.inference.sufficient import SufficientStats
from pygbn.inference.latent_split import LayerOneSplit
from pygbn.inference.layer_one import LazyThetaOne, count_dtype, kernel_csr, phi_from_labels
from pygbn.inference.term_counts import draw_phi_columns, take_columns
from pygbn.model.layer import Layer, check_parameter
from pygbn.model.links import Link, get_link
from pygbn.model.network import Hyperparameters, Network
from pygbn.random import crt

logger = logging.getLogger("pygbn")

__all__ = ["GibbsSampler", "SufficientStats", "check_chain_input", "BLOCK_SIZE"]

#: documents per block of the parallel kernels (fixed: independent of n_jobs)
BLOCK_SIZE = 128
#: Phi columns per block of the parallel Dirichlet draws
COLUMN_BLOCK = 8
_TINY = np.finfo(np.float64).tiny
#: the kernels' view of the data (kept under this name for pygbn.inference's other modules)
_as_kernel_csr = kernel_csr


def _placeholder(shape) -> np.ndarray:
    """A read-only Phi of ``shape`` with uniform columns and no memory (where the
    chain holds no draw of it: a collapsed layer one, or while a new one is made)."""
    return np.broadcast_to(np.float64(1.0 / shape[0]), shape)


class GibbsSampler:
    """State of one upward-downward Gibbs chain.

    Use :meth:`for_training` (a fresh single-layer network, as in the first
    step of Algorithm 1) or :meth:`for_inference` (a fitted network whose
    global parameters stay fixed, for features of new samples).

    Attributes
    ----------
    network : Network
        The live network: ``layers[t-1].theta`` (J, K_t), ``layers[t-1].c``
        (c_j^(t+1)) and ``layers[t-1].counts`` are the chain's current values
        (theta^(1) of a blocked training chain: see ``lazy_theta_one``).
    m : list of ndarray
        ``m[t-1]`` is m^(t)(t+1), shape (J, K_t): how often factor k of
        layer t is used by sample j.
    method : {"collapsed", "blocked", "partial"}
    tokens : CollapsedState, PartialState or None
        The token labels of the collapsed or partially collapsed layer one
        (:mod:`pygbn.inference.partial`); ``m[0]`` is their ``n_jk``.
    seeds : ChainSeeds
        Entropy of the chain's streams (drawn from ``random_state`` unless given).
    first_block : int
        Index of the chain's first document block in the whole corpus (0 unless
        the chain holds the local part of a larger one, see
        :mod:`pygbn.inference.partition`).
    lazy_theta_one : bool
        True for a blocked training chain: theta^(1) of a document block is
        drawn when the next sweep's split needs it, with the same draws in the
        same order (so the chain is the same), and ``layers[0].theta`` is None
        between iterations instead of a (J, K_1) array; :meth:`theta_one`
        draws and returns it.

    Notes
    -----
    The state splits into a *global* part (each Phi^(t) and its counts, r,
    gamma0, c0, the serial and column streams) and a *local* part (the rows
    of the data, theta^(t), c^(t), m^(t), the link's aux and the block
    streams of the chain's documents).  One process holds both for all
    documents; a distributed driver holds the global part on a chain of no
    documents and one local part per range of blocks elsewhere
    (:mod:`pygbn.inference.partition`).

    The constructor checks the network against the data
    (:func:`check_chain_input`: shapes; ``Y`` must already be validated by
    the link, ``link.check_data``: canonical CSR of valid values, which every
    constructor takes as given, so a fractional or negative count or a
    duplicate entry is not refused here) and
    resolves ``n_jobs`` (None: 1, -1: all cores); :meth:`sweep` and :meth:`local_upward` check that the per-sample
    state they hand to the kernels is complete (:meth:`check_state`), so
    that a mismatch raises ValueError instead of reaching the kernels, which
    do not check bounds.
    """

    def __init__(self, network: Network, Y: sp.csr_matrix, *, method: str = "collapsed",
                 n_jobs: int = 1, random_state=None, update_globals: bool = True,
                 seeds: Optional[ChainSeeds] = None, first_block: int = 0):
        check_chain_input(network, Y)
        n_jobs = effective_n_jobs(n_jobs)
        self.network = network
        self.link: Link = network.link
        self.hyper: Hyperparameters = network.hyper
        self.Y = Y
        self.n_docs, self.n_features = Y.shape
        if method not in ("collapsed", "blocked", "partial"):
            raise ValueError(f"method must be 'collapsed', 'blocked' or 'partial', got {method!r}")
        if method != "blocked" and not self.link.collapsible:
            raise ValueError(f"method={method!r} needs count data; link {self.link.name!r} is blocked only")
        self.method = method
        self.n_jobs = int(n_jobs)
        self.update_globals = bool(update_globals)
        #: set by snapshot(release=True): the per-document state is gone
        self.released = False
        # random streams: one private serial stream, per-block streams for documents
        # and for Phi columns, and separate streams for evaluation draws (so that
        # measuring held-out perplexity does not change the chain)
        self.seeds = ChainSeeds.draw(check_random_state(random_state)) if seeds is None else seeds
        self.first_block = int(first_block)
        self.bounds = block_bounds(self.n_docs, BLOCK_SIZE)
        n_blocks = max(1, len(self.bounds) - 1)
        n_col_blocks = -(-max(network.widths) // COLUMN_BLOCK) + 1
        (self.rng, self.doc_streams, self.col_streams, self.eval_streams,
         self.eval_col_streams) = self.seeds.streams(self.first_block, n_blocks, n_col_blocks)
        self.indptr, self.indices, self.values = _as_kernel_csr(Y)
        self.aux = np.empty(0, dtype=np.float64)
        # m[0] in the smallest type its range allows (layer_one.count_dtype); the upper layers int64
        self.m: List[np.ndarray] = [
            np.zeros((self.n_docs, k), dtype=count_dtype(self.link, Y) if t == 0 else np.int64)
            for t, k in enumerate(network.widths)]
        # blocked training draws theta^(1) of a document block when its split needs it
        # (same draws, same order): no (J, K_1) array between iterations
        self.lazy_theta_one = method == "blocked" and self.update_globals
        self._term_layout = None    # of the blocked split's term-factor counts (TermLayout.of_sampler)
        self._theta_one = LazyThetaOne(len(self.bounds) - 1)
        self.iteration = 0
        self.tokens: Optional[CollapsedState] = None
        self._theta_sums: dict = {}     # t -> (theta^(t), its row sums); see theta_sums
        self._log_rates: Optional[tuple] = None

    # ------------------------------------------------------------ construction
    @classmethod
    def for_training(cls, Y: sp.csr_matrix, n_components: int, *, link="poisson",
                     eta: float = 0.05, hyper: Optional[Hyperparameters] = None,
                     method: str = "collapsed", n_jobs: int = 1, random_state=None) -> "GibbsSampler":
        """A chain on a one-layer network with ``n_components`` factors.

        Initial values follow the authors' code: layer-one labels (collapsed)
        uniformly at random, or Phi^(1) with uniform(0, 1) entries and
        normalised columns and theta^(1) = 1/K (blocked); r_k = 1/K,
        gamma0 = 1, c0 = 1 and all c_j^(2) = 1 (p_j^(2) = 1/2).  ``Y``: the
        data as ``get_link(link).check_data`` returns them (canonical CSR).
        """
        rng = check_random_state(random_state)
        link = get_link(link)
        hyper = hyper or Hyperparameters()
        K = check_int(n_components, "n_components", 1)
        V = Y.shape[1]
        init_rng = spawn_generators(rng, 1)[0]
        if method == "collapsed":
            # Phi^(1) and theta^(1) are integrated out by the collapsed sampler:
            # a read-only placeholder of Phi^(1)'s shape (uniform columns, no memory)
            phi = _placeholder((V, K))
        else:
            phi = init_rng.random((V, K))
            phi /= phi.sum(axis=0, keepdims=True)
        # the counts of a collapsed layer one are its tokens' (set_tokens)
        counts = None if method == "collapsed" else np.zeros((V, K), dtype=np.int64)
        layer = Layer(phi=phi, eta=check_parameter(eta, "eta"), counts=counts)
        net = Network(layers=[layer], r=np.full(K, 1.0 / K), gamma0=1.0, c0=1.0,
                      hyper=hyper, link=link)
        return cls.starting_from(net, Y, method=method, n_jobs=n_jobs, random_state=rng)

    @classmethod
    def starting_from(cls, network: Network, Y: sp.csr_matrix, *, method: str = "blocked",
                      n_jobs: int = 1, random_state=None, seeds: Optional[ChainSeeds] = None,
                      first_block: int = 0) -> "GibbsSampler":
        """A training chain on the one-layer ``network`` (its globals as given), with
        the documents' state at the authors' initial values: theta^(1) = 1/K
        (blocked; the collapsed sampler integrates it out, its labels are drawn
        uniformly), c_j^(2) = 1 and the link's initial aux.

        :meth:`for_training` draws the network; the local part of a distributed
        chain passes the global part's network, its ``seeds`` and its
        ``first_block`` (:mod:`pygbn.inference.partition`).
        """
        J = Y.shape[0]
        layer = network.layers[0]
        K = layer.width
        # theta^(1) = 1/K for every document: one read-only row (no (J, K) array)
        layer.theta = None if method != "blocked" else np.broadcast_to(np.full(K, 1.0 / K), (J, K))
        layer.c = np.ones(J)
        s = cls(network, Y, method=method, n_jobs=n_jobs, random_state=random_state,
                update_globals=True, seeds=seeds, first_block=first_block)
        s.aux = network.link.init_aux(Y, s.rng, network.hyper)
        if method == "partial":     # labels drawn per document block: a local part draws its own
            s.set_tokens(PartialState.for_sampler(s, K))
        elif method == "collapsed":
            s.set_tokens(CollapsedState.from_counts(Y, K, rng=s.rng, arrays=(s.indptr, s.indices, s.values)))
        return s

    @classmethod
    def for_inference(cls, network: Network, Y: sp.csr_matrix, *, n_jobs: int = 1,
                      random_state=None) -> "GibbsSampler":
        """A blocked chain for new samples under a fitted ``network`` (kept fixed).

        Per-sample state starts as in the authors' test-time code: each
        c_j^(t+1) at the layer's training median and theta drawn top-down from
        its prior (floored at the smallest normal double).
        """
        rng = check_random_state(random_state)
        J = Y.shape[0]
        if Y.shape[1] != network.n_features:
            raise ValueError(
                f"Y has {Y.shape[1]} features but the network was fitted with {network.n_features}"
            )
        live = network.summary()
        for layer in live.layers:
            layer.phi = np.ascontiguousarray(layer.phi, dtype=np.float64)
            layer.c = np.full(J, layer.c_median, dtype=np.float64)
        s = cls(live, Y, method="blocked", n_jobs=n_jobs, random_state=rng, update_globals=False)
        thetas = live.sample_hidden(J, s.rng, c=[layer.c for layer in live.layers])
        for layer, th in zip(live.layers, thetas):
            layer.theta = np.ascontiguousarray(th)
        s.aux = live.link.test_aux(J)
        return s

    # ------------------------------------------------------------------ helpers
    def check_state(self) -> None:
        """Raise ValueError unless the chain's state has the shapes the kernels assume.

        Every layer needs ``theta`` (J, K_t) (not a collapsed layer one) and
        ``c`` (J,); ``m[t-1]`` is (J, K_t); a collapsed chain needs its
        token labels and a link with per-sample parameters their J values.
        """
        self._check_not_released()
        check_chain_input(self.network, self.Y, values=False)
        J = self.n_docs
        for t, layer in enumerate(self.network.layers, start=1):
            # theta^(1) is integrated out (collapsed) or may be pending (lazy_theta_one)
            no_theta_one = t == 1 and (self.method != "blocked" or not self._theta_one.held_anywhere())
            if layer.theta is None and not no_theta_one:
                raise ValueError(f"layer {t} has no theta: set it (shape ({J}, {layer.width})) or build the "
                                 "sampler with GibbsSampler.for_training / for_inference")
            if layer.c is None:
                raise ValueError(f"layer {t} has no c: set it (shape ({J},))")
        if len(self.m) != self.depth or any(m.shape != (J, k) for m, k in zip(self.m, self.network.widths)):
            raise ValueError(f"m must hold one ({J}, K_t) array per layer for widths {self.network.widths}, "
                             f"got shapes {[m.shape for m in self.m]}")
        if self.method != "blocked" and self.tokens is None:
            raise ValueError(f"a {self.method} chain needs its token labels (set_tokens)")
        n_aux = self.link.test_aux(J).size
        if self.aux.shape != (n_aux,):
            raise ValueError(f"aux must have shape ({n_aux},) for link {self.link.name!r}, got {self.aux.shape}")

    @property
    def depth(self) -> int:
        return self.network.depth

    @property
    def n_threads(self) -> int:
        """Threads of the document-parallel kernels (``n_jobs``, at least 1)."""
        return max(1, self.n_jobs)

    def log_rates(self) -> List[np.ndarray]:
        """``[L^(1), ..., L^(T+1)]`` with ``L^(t) = -ln(1 - p_j^(t))`` (paper eq:p).

        ``L^(1) = 1`` (``p^(1) = 1 - e^-1``) and
        ``L^(t+1) = ln(1 + L^(t) / c^(t+1))``, which is eq:p written so that it
        stays accurate for p near 0 or 1.  Kept until some ``c^(t)`` array is replaced.
        """
        cs = [layer.c for layer in self.network.layers]
        cached = self._log_rates
        if cached is not None and len(cached[0]) == len(cs) and all(a is b for a, b in zip(cached[0], cs)):
            return cached[1]
        L = [np.ones(self.n_docs)]
        for c in cs:
            L.append(np.log1p(L[-1] / c))
        self._log_rates = (cs, L)
        return L

    def theta_sums(self, t: int) -> np.ndarray:
        """``theta^(t)_.j`` (eq:step6), summed left to right: kept from the layer's last
        :meth:`sample_theta`, summed again only if ``layers[t-1].theta`` was replaced."""
        theta = self.network.layers[check_layer_index(t, self.depth) - 1].theta
        kept = self._theta_sums.get(t)
        if kept is None or kept[0] is not theta:
            kept = self._theta_sums[t] = (theta, np.empty(theta.shape[0]))
            _upper.row_sums(np.ascontiguousarray(theta), kept[1])
        return kept[1]

    def set_tokens(self, tokens: CollapsedState) -> None:
        """Use ``tokens`` as the collapsed layer-one state: ``m[0]`` becomes its
        ``n_jk`` and ``layers[0].counts`` its ``n_vk``."""
        self.tokens = tokens
        self.m[0] = tokens.doc_counts
        self.network.layers[0].counts = tokens.term_counts

    def theta_one(self) -> np.ndarray:
        """theta^(1) of every document (blocked method), drawn now where it is
        pending (see ``lazy_theta_one``: the draws the next sweep would make).
        Structure changes (:meth:`prune_top`, :meth:`add_layer`) call it first,
        since a pending draw is due under the current prior; so must any other
        change to the network, ``c`` or ``m[0]`` between two sweeps."""
        return self._theta_one.materialize(self)

    def _doc_prior(self, t: int) -> np.ndarray:
        """Prior shapes of theta^(t): ``r`` (one shared row) at the top, else
        ``theta^(t+1) Phi^(t+1)^T`` (one row per sample), floored positive
        (formed block by block, :func:`pygbn.inference._upper.doc_prior`)."""
        net = self.network
        if t == net.depth:
            return np.maximum(net.r, _TINY)[None, :]
        upper = net.layers[t]
        # a row's prior does not depend on whatever else the chain holds (_upper's kernel), so a
        # part of the documents on another machine gets exactly the rows it gets here
        prior = np.empty((self.n_docs, upper.n_inputs))
        _upper.doc_prior(upper.theta, upper.phi, self.bounds, prior, self.n_threads)
        return prior

    # ----------------------------------------------------------- doc blocks
    def _blocks(self, blocks):
        """Bounds and stream addresses of the document blocks ``blocks``
        (``None``: all, else a ``(first, stop)`` pair of block indices)."""
        nb = len(self.bounds) - 1
        b0, b1 = (0, nb) if blocks is None else blocks
        if not (0 <= b0 <= b1 <= nb):
            raise ValueError(f"blocks must lie in [0, {nb}], got {blocks!r}")
        return (np.ascontiguousarray(self.bounds[b0:b1 + 1]),
                np.ascontiguousarray(self.doc_streams.addresses[b0:b1]))

    # --------------------------------------------------------- the conditionals
    def sample_layer_one_collapsed(self) -> None:
        """Collapsed update of the layer-one labels (paper eq:z).

        Phi^(1) and theta^(1) are integrated out; the document prior is
        ``a_jk = r_k`` when T = 1 and ``(Phi^(2) theta_j^(2))_k`` otherwise
        (computed for a few document blocks at a time, never for all
        documents at once).  Documents are visited in order, and the tokens of
        each document in the order of the data.  Sets ``m[0] = n_jk`` and
        ``layers[0].counts = n_vk``.  Serial: the counts are shared by all
        documents.
        """
        layer = self.network.layers[0]
        if self.depth == 1:
            self.tokens.sweep(np.maximum(self.network.r, _TINY)[None, :], layer.eta, self.rng)
        else:
            upper = self.network.layers[1]
            self.tokens.sweep_blocks(upper.theta, upper.phi, self.bounds, layer.eta, self.rng)
        layer.counts = self.tokens.term_counts

    def sample_layer_one_blocked(self, blocks=None) -> np.ndarray:
        """Blocked update of layer one's latent counts and their split.

        Latent counts ``x_vj`` come from the link: the counts themselves
        (Poisson), ``b_vj Pois_+(sum_k phi_vk theta_kj)`` (eq:Ber-PGBN), or
        ``Bessel_{-1}(2 sqrt(a_j y_vj sum_k phi_vk theta_kj))`` (eq:Gam-PGBN);
        each is split over the factors with probabilities proportional to
        ``phi_vk theta_kj`` (eq:step1).  For the PRG link ``a_j`` is then
        updated (eq:c_g).  Sets ``m[0]`` for the documents of ``blocks`` and
        returns their term-factor counts (the statistic of Phi^(1)).
        """
        self._blocks(blocks)        # one set of (V, K) counts shared by the threads, compact types
        b0, b1 = (0, len(self.bounds) - 1) if blocks is None else blocks
        return LayerOneSplit(self).run(b0, b1)

    def propagate_up(self, t: int, blocks=None) -> np.ndarray:
        """Propagate the counts of layer t-1 into layer t (eq:CRT then eq:step1).

        ``x^(t)_vj ~ CRT(m^(t-1)(t)_vj, phi^(t)_v: theta^(t)_j)`` and its split
        over the K_t factors in proportion to ``phi^(t)_vk theta^(t)_kj``;
        sets ``m[t-1]`` for the documents of ``blocks`` and returns their
        counts ``x^(t)_{v.k}`` (the statistic of Phi^(t); ``None`` when the
        chain's global parameters are fixed).
        """
        layer = self.network.layers[check_layer_index(t, self.depth, 2) - 1]
        bounds, streams = self._blocks(blocks)
        nt = self.n_threads
        # the statistics of Phi^(t) are gathered only when Phi^(t) is drawn
        n_out = np.zeros((nt if self.update_globals else 0, layer.n_inputs, layer.width), dtype=np.int64)
        _upper.propagate_counts(self.m[t - 2], layer.phi, layer.theta, bounds, streams,
                                self.m[t - 1], n_out, nt)
        return None if not self.update_globals else n_out.sum(axis=0) if nt > 1 else n_out[0]

    def top_tables(self, blocks=None) -> np.ndarray:
        """``x^(T+1)_k = sum_j CRT(m^(T)(T+1)_kj, r_k)`` over the documents of
        ``blocks`` (eq:CRT at the top, with r in place of Phi theta)."""
        net = self.network
        bounds, streams = self._blocks(blocks)
        out = np.zeros((max(len(bounds) - 1, 0), net.layers[-1].width), dtype=np.int64)
        if out.shape[0]:
            _blocked.top_crt(self.m[-1], np.ascontiguousarray(net.r), bounds, streams, out,
                             self.n_threads)
        return out.sum(axis=0)

    def sample_phi(self, t: int, streams: Optional[BlockStreams] = None) -> np.ndarray:
        """Draw Phi^(t) column by column from ``Dir(eta + x^(t)_{:.k})`` (eq:step2).

        Robust to tiny concentrations (log-space gammas when they underflow).
        Returns the draw (and stores it in the layer unless ``streams`` is given,
        which is how evaluation draws are made without touching the chain).
        """
        layer = self.network.layers[check_layer_index(t, self.depth) - 1]
        st = streams if streams is not None else self.col_streams
        if t == 1 and self.method == "partial":
            phi = dirichlet_phi_one(layer, block_bounds(layer.counts.shape[1], COLUMN_BLOCK), st, self.n_threads,
                                    self.tokens if streams is None else None)
        else:
            counts = layer.counts
            if streams is None:         # the chain's last draw goes before the new one is made
                layer.phi = _placeholder(layer.phi.shape)
            phi = np.empty(counts.shape)
            # column by column from the counts (no (K, V) float64 concentrations or draws)
            draw_phi_columns(counts, layer.eta, block_bounds(counts.shape[1], COLUMN_BLOCK), st.addresses, phi,
                             self.n_threads)
        if streams is None:
            layer.phi = phi
        return phi

    def sample_top(self, x_top: np.ndarray, sum_L: float) -> None:
        """Update the top layer's ``c0``, ``gamma0`` and ``r`` (eq:step5).

        Given ``x_top = x^(T+1)_k.`` (:meth:`top_tables`) and
        ``sum_L = sum_j L_j^(T+1)``, with the current r and gamma0:
        ``c0 ~ Gam(e0 + gamma0, 1/(f0 + sum_k r_k))``; with
        ``-ln(1 - p') = ln(1 + sum_L / c0)``:
        ``gamma0 ~ Gam(a0 + sum_k CRT(x_k., gamma0/K_T), 1/(b0 - ln(1 - p')))``;
        ``r_k ~ Gam(gamma0/K_T + x_k., 1/(c0 + sum_L))`` (Zhou & Carin 2015).
        """
        net, h, rng = self.network, self.hyper, self.rng
        K = net.layers[-1].width
        c0 = rng.standard_gamma(h.e0 + net.gamma0) / (h.f0 + net.r.sum())
        c0 = max(c0, _TINY)
        ell = int(np.sum(crt(x_top, net.gamma0 / K, random_state=rng)))
        gamma0 = rng.standard_gamma(h.a0 + ell) / (h.b0 + np.log1p(sum_L / c0))
        gamma0 = max(gamma0, _TINY)
        r = rng.standard_gamma(gamma0 / K + x_top) / (c0 + sum_L)
        net.c0, net.gamma0 = float(c0), float(gamma0)
        net.r = np.maximum(r, _TINY)

    def sample_p_c(self, blocks=None, m_dot=None) -> None:
        """Update ``p_j^(2)`` and ``c_j^(t)``, t >= 3 (eq:step6); eq:p follows in :meth:`log_rates`.

        ``p_j^(2) ~ Beta(a0 + m^(1)(2)_.j, b0 + theta^(2)_.j)`` (drawn as
        ``G1 / (G1 + G2)`` so that ``c_j^(2) = G2 / G1`` has no cancellation) and
        ``c_j^(t) ~ Gam(e0 + theta^(t)_.j, 1/(f0 + theta^(t-1)_.j))`` with
        ``theta^(T+1)_.j = sum_k r_k``; local to each document
        (:func:`pygbn.inference._blocked.sample_rates`).  ``m_dot``: the float64
        latent totals ``m^(1)(2)_.j`` where the caller has them (else summed here).
        """
        net, h = self.network, self.hyper
        T = net.depth
        theta_dot = np.empty((self.n_docs, T))
        for t in range(2, T + 1):
            theta_dot[:, t - 2] = self.theta_sums(t)
        theta_dot[:, T - 1] = float(net.r.sum())
        if m_dot is None:
            m0 = self.m[0]
            # a 32-bit sum where the counts are uint8/uint16 (n_jk of the collapsed and partial
            # states: each row's total is its document's tokens, below 65536 for those types;
            # numpy would add them in 64 bits, at twice the time): the same integers
            wide = np.uint32 if m0.dtype in (np.uint8, np.uint16) else None
            m_dot = m0.sum(axis=1, dtype=wide).astype(np.float64)
        c = np.empty((self.n_docs, T))
        for t, layer in enumerate(net.layers):
            c[:, t] = layer.c
        bounds, streams = self._blocks(blocks)
        _blocked.sample_rates(m_dot, theta_dot, h.a0, h.b0, h.e0, h.f0, bounds, streams, c,
                              self.n_threads)
        for t, layer in enumerate(net.layers):
            layer.c = np.ascontiguousarray(c[:, t])

    def sample_theta(self, t: int, blocks=None) -> None:
        """Draw theta^(t) (eq:step4).

        ``theta_j^(t) ~ Gam(prior_j + m^(t)(t+1)_j, 1/(c_j^(t+1) - ln(1 - p_j^(t))))``
        with ``prior_j = r`` at the top and ``Phi^(t+1) theta_j^(t+1)`` below.
        The rate's ``-ln(1 - p_j^(t))`` is ``L_j^(t)`` of the augmented layer
        ``x_j^(t) ~ Pois(Phi^(t) theta_j^(t) L_j^(t))`` (eq:deepPFA_aug; its
        split, eq:PoAug, and the counts' NB marginal, eq:NBAug, give the
        conditional).  Parallel over document blocks.
        """
        layer = self.network.layers[check_layer_index(t, self.depth) - 1]
        rate = np.ascontiguousarray(layer.c + self.log_rates()[t - 1])
        if (layer.theta is None or layer.theta.shape != (self.n_docs, layer.width)
                or not layer.theta.flags.writeable):
            layer.theta = np.empty((self.n_docs, layer.width), dtype=np.float64)
        bounds, streams = self._blocks(blocks)
        self._draw_theta(t, rate, bounds, streams, layer.theta, self.theta_sums(t) if t > 1 else np.empty(0))

    def _draw_theta(self, t, rate, bounds, streams, out, row_sums) -> None:
        """eq:step4 for the blocks ``bounds`` into ``out`` (row sums too unless ``row_sums`` is empty)."""
        net = self.network
        if t == net.depth:
            up_theta = up_phi = np.empty((0, 0))
            prior_row = np.ascontiguousarray(np.maximum(net.r, _TINY))
        else:
            up_theta, up_phi, prior_row = net.layers[t].theta, net.layers[t].phi, np.empty(0)
        _upper.sample_theta(up_theta, up_phi, prior_row, self.m[t - 1], rate, bounds, streams,
                            out, row_sums, self.n_threads)

    # ---------------------------------------------------------------- one sweep
    def local_upward(self, blocks=None, update_p_c: bool = True) -> "SufficientStats":
        """The per-document upward half of an iteration, for the documents of ``blocks``.

        Given the global parameters (every Phi^(t), r), it draws the blocks'
        latent counts layer by layer (blocked layer one when the method is
        "blocked", eq:CRT + eq:step1 above it), their top-layer tables, and
        their rates p_j, c_j (eq:step6); it returns the sufficient statistics
        the global update needs.  Each block draws only from its own stream,
        so calling this on disjoint sets of blocks (on several workers) and
        summing the statistics gives exactly the result of one call on all.
        """
        self.check_state()
        T = self.depth
        counts: List[Optional[np.ndarray]] = [None] * T
        if self.method == "blocked":
            counts[0] = self.sample_layer_one_blocked(blocks)
        elif self.method == "partial":
            counts[0] = sample_layer_one_partial(self, blocks)
        for t in range(2, T + 1):
            counts[t - 1] = self.propagate_up(t, blocks)
        x_top = self.top_tables(blocks) if self.update_globals else None
        if update_p_c:
            self.sample_p_c(blocks)
        bounds, _ = self._blocks(blocks)
        L_top = self.log_rates()[-1]
        sum_L = np.array([L_top[bounds[i]:bounds[i + 1]].sum() for i in range(len(bounds) - 1)])
        first = self.first_block + (0 if blocks is None else blocks[0])
        return SufficientStats(counts=counts, x_top=x_top, sum_L_blocks=sum_L, first_block=first)

    def update_globals_from(self, stats: "SufficientStats") -> None:
        """The global half: Phi^(t) from the summed counts (eq:step2), then
        c0, gamma0 and r (eq:step5).  ``stats`` may be the sum of several
        workers' :meth:`local_upward` results (:meth:`SufficientStats.combine`)."""
        for t, cnt in enumerate(stats.counts, start=1):
            if cnt is not None:
                self.network.layers[t - 1].counts = cnt
                self.sample_phi(t)
        self.sample_top(stats.x_top, float(np.sum(stats.sum_L_blocks)))

    def local_downward(self, blocks=None) -> None:
        """The per-document downward half: theta^(T), ..., theta^(2) (theta^(1)
        too for the blocked method: drawn here, or left pending for the next
        split with ``lazy_theta_one``) for the documents of ``blocks`` (eq:step4)."""
        lowest = 2 if self.method != "blocked" or self.lazy_theta_one else 1
        for t in range(self.depth, lowest - 1, -1):
            self.sample_theta(t, blocks)
        if self.method == "blocked" and self.lazy_theta_one:
            b0, b1 = (0, len(self.bounds) - 1) if blocks is None else blocks
            self._theta_one.mark_pending(self, b0, b1)      # drawn by the next split (or theta_one)

    def sweep(self, update_p_c: bool = True) -> None:
        """One upward-downward iteration (Algorithm 1, lines 4-11; Algorithm 2).

        Collapsed layer one (serial) for the collapsed method; then
        :meth:`local_upward` over all document blocks, the global update
        :meth:`update_globals_from` and :meth:`local_downward`.  The order is
        the paper's: p and c before r, and r right before theta^(T) (r is drawn
        with theta^(T) integrated out, so nothing that conditions on theta^(T)
        may come between the two; Geweke's test confirms it).
        """
        self.check_state()
        if self.method == "collapsed":
            self.sample_layer_one_collapsed()
        elif self.method == "blocked" and self.update_globals:
            self.network.layers[0].counts = None    # the split makes this iteration's
        stats = self.local_upward(update_p_c=update_p_c)
        if self.update_globals:
            self.update_globals_from(stats)
        self.local_downward()
        self.iteration += 1

    # -------------------------------------------------------- structure changes
    def top_usage(self) -> np.ndarray:
        """``sum_j m^(T)(T+1)_kj`` over the chain's documents (int64, one entry per top factor)."""
        self._check_not_released()
        return self.m[-1].sum(axis=0)

    def prune_top(self, used: Optional[np.ndarray] = None) -> int:
        """Remove the top layer's inactive factors (Algorithm 1, line 13).

        A factor is inactive when no count is assigned to it
        (``sum_j m^(T)(T+1)_kj = 0``; ``used`` gives those sums when the
        documents live elsewhere, default :meth:`top_usage`; one nonnegative count
        per top factor, else ValueError).  Its column of
        Phi^(T), row of theta^(T) and entry of r are removed, and gamma0 is
        scaled by the kept fraction (:meth:`keep_top`).  At least one factor
        is kept.  Returns the new width.
        """
        return self.keep_top(self.top_keep(used))

    def top_keep(self, used: Optional[np.ndarray] = None) -> np.ndarray:
        """The top factors :meth:`prune_top` keeps: those with ``used > 0``, or
        the one with the largest r_k when none is used (bool mask)."""
        K = self.network.layers[-1].width
        if used is not None and (np.shape(used) != (K,) or (np.asarray(used) < 0).any()):
            raise ValueError(f"used must hold a nonnegative count for each of the {K} top factors, got {used!r}")
        keep = (self.top_usage() if used is None else np.asarray(used)) > 0
        if not keep.any():
            keep[int(np.argmax(self.network.r))] = True
        return keep

    def keep_top(self, keep: np.ndarray) -> int:
        """Keep the top layer's factors where ``keep`` (a bool mask of the top layer's
        width, at least one True; else ValueError) is True (both parts of the
        state); nothing changes when all are kept.  Returns the new width."""
        self._check_not_released()
        net = self.network
        T = net.depth
        top = net.layers[-1]
        K = top.width
        keep = check_keep(keep, K)
        n_keep = int(keep.sum())
        if n_keep == K:
            return K
        if self.method == "blocked":
            self.theta_one()      # a pending theta^(1) is drawn under the prior it was due under
        if T == 1 and self.method != "blocked":
            # the labels are renumbered and every count rebuilt from them; a collapsed
            # Phi^(1) stays a placeholder (integrated out)
            top.phi = (np.ascontiguousarray(top.phi[:, keep]) if self.method == "partial" else
                       _placeholder((top.n_inputs, n_keep)))
            self.tokens.keep(keep)
            self.set_tokens(self.tokens)
        else:
            top.phi = np.ascontiguousarray(top.phi[:, keep])
            if top.counts is not None:
                top.counts = take_columns(top.counts, keep)
            if top.theta is not None:
                top.theta = np.ascontiguousarray(top.theta[:, keep])
            self.m[-1] = np.ascontiguousarray(self.m[-1][:, keep])
        net.r = np.ascontiguousarray(net.r[keep])
        net.gamma0 = float(net.gamma0 * n_keep / K)
        logger.debug("pruned layer %d from %d to %d factors", T, K, n_keep)
        return n_keep

    def add_layer(self, eta: float, phi: Optional[np.ndarray] = None) -> None:
        """Add a hidden layer on top (Algorithm 1, line 2).

        Its width bound is the width of the current top layer; Phi^(T+1) has
        uniform(0, 1) entries with normalised columns (drawn from the serial
        stream unless given: the local part of a chain gets the global part's
        draw), theta^(T+1) = 1/K, r_k = 1/K, gamma0 = K / K_1, c0 = 1 and
        c_j^(T+2) = 1.  ``eta`` and a given ``phi`` (shape (K, K)) are checked
        before anything changes (ValueError naming them).
        """
        self._check_not_released()
        net = self.network
        eta, K = check_parameter(eta, "eta"), net.layers[-1].width
        if phi is not None and np.shape(phi) != (K, K):
            raise ValueError(f"phi must have shape ({K}, {K}) (the top layer's width), got {np.shape(phi)}")
        if self.method == "blocked":
            self.theta_one()      # a pending theta^(1) is drawn under the prior it was due under
        if phi is None:
            phi = self.rng.random((K, K))
            phi /= phi.sum(axis=0, keepdims=True)
        net.layers.append(Layer(phi=np.ascontiguousarray(phi), eta=eta,
                                theta=np.full((self.n_docs, K), 1.0 / K), c=np.ones(self.n_docs),
                                counts=np.zeros((K, K), dtype=np.int64)))
        net.r = np.full(K, 1.0 / K)
        net.gamma0 = K / net.layers[0].width
        net.c0 = 1.0
        self.m.append(np.zeros((self.n_docs, K), dtype=np.int64))

    # ----------------------------------------------------------------- outputs
    def snapshot(self, c: Optional[Sequence[np.ndarray]] = None,
                 aux: Optional[np.ndarray] = None, release: bool = False) -> Network:
        """The fitted network at this point of the chain (Algorithm 1, output).

        Each Phi^(t) is the posterior mean given the last sample's counts,
        ``(eta + x^(t)_{:.k}) / sum``; r, gamma0 and c0 are the last sample;
        each layer keeps the median over samples of c_j^(t+1) (and the link
        its summary of the aux).  ``c`` (one array per layer) and ``aux`` give
        the per-sample values of all documents when they live elsewhere
        (default: the chain's own).  With ``release`` (the chain ends here)
        the per-document state (``m``, every theta, the collapsed tokens'
        counts, a blocked chain's Phi^(1) draw) is dropped before the
        posterior means are made, so that they do not add to it; the network
        is the same, and the sampler cannot sweep again.
        """
        self._check_not_released()
        net = self.network
        if c is None:
            c = [layer.c for layer in net.layers]
        elif len(c) != net.depth or any(c_t is not None and np.ndim(c_t) != 1 for c_t in c):
            raise ValueError(f"c must hold one 1-d array per layer ({net.depth}), got "
                             f"{[np.shape(c_t) for c_t in c]}")
        phi_one = self._release() if release and self.update_globals else None
        layers = []
        for t, (layer, c_t) in enumerate(zip(net.layers, c)):
            if t == 0 and phi_one is not None:
                phi = phi_one
            else:
                phi = layer.posterior_mean_phi() if (self.update_globals and layer.counts is not None) \
                    else layer.phi.copy()
            c_med = float(np.median(c_t)) if c_t is not None and c_t.size else layer.c_median
            layers.append(Layer(phi=np.ascontiguousarray(phi), eta=layer.eta, c_median=c_med))
        link = net.link.from_dict(net.link.to_dict())
        link.summarize_aux(self.aux if aux is None else aux)
        return Network(layers=layers, r=net.r.copy(), gamma0=net.gamma0, c0=net.c0,
                       hyper=net.hyper, link=link,
                       vocabulary=None if net.vocabulary is None else list(net.vocabulary))

    def _release(self) -> Optional[np.ndarray]:
        """Drop the per-document state before the last snapshot (see :meth:`snapshot`);
        returns the posterior mean of a collapsed Phi^(1), made from the token
        labels once their counts are gone (:func:`~pygbn.inference.layer_one.phi_from_labels`),
        else None."""
        net = self.network
        self.released = True
        tokens, self.tokens = self.tokens, None
        self.m = []
        self._theta_sums, self._log_rates = {}, None
        for layer in net.layers:
            layer.theta = None
        layer = net.layers[0]
        if self.method == "collapsed" and tokens is not None:
            layer.counts = None
            arrays = (tokens.indptr, tokens.indices, tokens.values, tokens.doc_ptr, tokens.labels)
            V, K = tokens.n_terms, tokens.n_components
            del tokens      # its counts and word lists go with it
            trim_heap()     # (freed below glibc's mmap threshold, they would stay resident)
            return phi_from_labels(*arrays, V, K, layer.eta)
        del tokens
        if layer.counts is not None:      # the chain's last draw: the snapshot is the posterior mean
            layer.phi = _placeholder(layer.phi.shape)
        trim_heap()
        return None

    def _check_not_released(self) -> None:
        if self.released:
            raise ValueError("this sampler's per-document state was released by snapshot(release=True) "
                             "(the chain's last snapshot): it cannot sweep, draw, change shape or snapshot again")

    def layer_one_sample(self, streams: Optional[BlockStreams] = None,
                         col_streams: Optional[BlockStreams] = None):
        """A draw of (Phi^(1), theta^(1)) given the current state.

        For the blocked sampler these are the chain's current values.  For
        the collapsed sampler they are drawn from their conditionals
        ``Phi^(1)_k ~ Dir(eta + n_:k)`` (the partial sampler's Phi^(1) is its own) and
        ``theta_j^(1) ~ Gam(a_j + n_j:, 1/(c_j^(2) + 1))`` (the scale is p_j^(2)),
        using the evaluation streams so that the chain is not disturbed.
        """
        self._check_not_released()
        layer = self.network.layers[0]
        if self.method == "blocked":
            return layer.phi, self.theta_one()
        streams = streams or self.eval_streams
        col_streams = col_streams or self.eval_col_streams
        phi = layer.phi if self.method == "partial" else self.sample_phi(1, streams=col_streams)
        rate = np.ascontiguousarray(layer.c + 1.0)
        theta = np.empty((self.n_docs, layer.width))
        self._draw_theta(1, rate, self.bounds, streams.addresses, theta, np.empty(0))
        return phi, theta

