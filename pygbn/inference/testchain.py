"""Held-out evaluation and the test-time chain for new samples.

:class:`HeldoutPredictive` accumulates the held-out predictive of the
paper's perplexity protocol (Section 4.1) over posterior samples of
(Phi^(1), theta^(1)); both the training chain (:func:`fit_layerwise` with
``heldout``) and the test-time chain use it.

:func:`infer_local` is the test-time chain: a fitted network stays fixed
and only the per-sample variables of new samples are drawn (the blocked
sampler of :meth:`GibbsSampler.for_inference`).  ``GBN.transform`` and
``GBN.perplexity`` are this function.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import scipy.sparse as sp

from pygbn._utils import check_int, check_random_state, effective_n_jobs
from pygbn.evaluation import heldout_log_terms, perplexity_from_sums
from pygbn.inference import _blocked
from pygbn.inference.fixed import FeatureAverage, sweep_fixed
from pygbn.inference.gibbs import GibbsSampler, _as_kernel_csr
from pygbn.inference.invariants import check_chain_input
from pygbn.model.links import get_link
from pygbn.model.network import Network

__all__ = ["HELDOUT_EVERY", "HeldoutPredictive", "LocalInference", "infer_local", "check_heldout"]

#: a sample enters the held-out predictive every this many collected iterations
#: (the authors' protocol)
HELDOUT_EVERY = 5


def check_heldout(heldout, Y, link="poisson") -> Optional[sp.csr_matrix]:
    """``heldout`` as the canonical CSR matrix of the shape of ``Y`` (None stays None).

    The held-out part of the same samples and features, in any sparse format
    or as an array, validated by the chain's ``link`` as its data are
    (:meth:`Link.check_data`: counts, 0/1 values or nonnegative reals; the
    predictive weighs each held-out entry by its value).  ValueError for
    another shape or other values.
    """
    if heldout is None:
        return None
    H = get_link(link).check_data(heldout, "heldout")
    if H.shape != Y.shape:
        raise ValueError(f"heldout must have the shape of Y {Y.shape}, got {H.shape}")
    return H


class HeldoutPredictive:
    """Running sums of the held-out predictive over posterior samples (Section 4.1).

    Parameters
    ----------
    heldout : csr_matrix of shape (n_docs, n_terms)
        Held-out counts of the chain's documents (canonical CSR).
    n_threads : int, default=1
        Threads of the accumulation kernel (the sums do not depend on it).
    """

    def __init__(self, heldout: sp.csr_matrix, n_threads: int = 1):
        if not (sp.issparse(heldout) and heldout.format == "csr" and heldout.has_canonical_format):
            raise ValueError("heldout must be a canonical CSR matrix (see check_heldout)")
        self.shape = heldout.shape
        self.indptr, self.indices, self.values = _as_kernel_csr(heldout)
        self.rate_sums = np.zeros(self.values.size)
        self.norm_sums = np.zeros(heldout.shape[0])
        self.n_threads = max(1, int(n_threads))
        #: number of samples added so far
        self.n_samples = 0

    def add(self, phi: np.ndarray, theta: np.ndarray) -> None:
        """Add one sample of Phi^(1) (terms x K) and theta^(1) (documents x K): arrays of
        numbers in any layout (read as C-ordered float64, copied only where they are not)."""
        J, V = self.shape
        ps, ts = np.shape(phi), np.shape(theta)     # as given (ascontiguousarray makes a scalar 1-d)
        if len(ps) != 2 or len(ts) != 2 or ps[0] != V or ts[0] != J or ps[1] != ts[1]:
            raise ValueError(f"phi must be ({V}, K) and theta ({J}, K) with one K, got {ps} and {ts}")
        phi, theta = (np.ascontiguousarray(a, dtype=np.float64) for a in (phi, theta))
        _blocked.heldout_accumulate(self.indptr, self.indices, phi, theta, self.rate_sums,
                                    self.norm_sums, self.n_threads)
        self.n_samples += 1

    def perplexity(self) -> float:
        """The perplexity of the held-out counts under the averaged predictive
        (:func:`pygbn.evaluation.perplexity_from_sums`); NaN before any sample."""
        if self.n_samples == 0:
            return float("nan")
        return perplexity_from_sums(self.values, self.indptr, self.rate_sums, self.norm_sums)

    def log_terms(self) -> np.ndarray:
        """The per-cell terms ``y ln q`` of the perplexity
        (:func:`pygbn.evaluation.heldout_log_terms`), for combining the cells of
        documents spread over several machines."""
        return heldout_log_terms(self.values, self.indptr, self.rate_sums, self.norm_sums)


@dataclass
class LocalInference:
    """What :func:`infer_local` returns.

    Attributes
    ----------
    features : ndarray of shape (n_samples, K_1)
        The average over the collected iterations of ``theta_j^(1) / theta_.j^(1)``.
    perplexity : float
        Held-out perplexity (NaN without ``heldout``).
    """

    features: np.ndarray
    perplexity: float


def infer_local(network: Network, Y: sp.csr_matrix, *, burn_in: int, n_collect: int,
                heldout: Optional[sp.csr_matrix] = None, heldout_every: int = HELDOUT_EVERY,
                n_jobs: int = 1, random_state=None) -> LocalInference:
    """Run the test-time chain on new samples under a fixed fitted network.

    The per-sample state starts as in :meth:`GibbsSampler.for_inference`;
    each iteration is a blocked upward-downward sweep with the global
    parameters (every Phi^(t), r) fixed, p and c updated
    (:func:`pygbn.inference.fixed.sweep_fixed`: the draws of
    :meth:`GibbsSampler.sweep`, without the statistics of Phi).  After ``burn_in``
    iterations, ``n_collect`` more are averaged.

    Parameters
    ----------
    network : Network
        The fitted network (not modified).
    Y : csr_matrix of shape (n_samples, n_features)
        New observations, validated by the network's link.
    burn_in : int
        Iterations discarded.
    n_collect : int
        Iterations averaged (at least 1).
    heldout : csr_matrix, optional
        Held-out counts of the same samples (Poisson link): every
        ``heldout_every``-th collected iteration adds (Phi^(1), theta^(1)) to
        the held-out predictive; with fewer collected iterations than that,
        the last one is used.
    heldout_every : int, default=5
    n_jobs : int or None, default=1
        Threads of the document-parallel kernels (None: 1, -1: all cores;
        results do not depend on it).
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    LocalInference
        ``features`` and ``perplexity``.
    """
    burn_in = check_int(burn_in, "burn_in", 0)
    n_collect = check_int(n_collect, "n_collect", 1)
    heldout_every = check_int(heldout_every, "heldout_every", 1)
    n_jobs = effective_n_jobs(n_jobs)
    heldout = check_heldout(heldout, Y, network.link)
    rng = check_random_state(random_state)
    J, K1 = Y.shape[0], network.layers[0].width
    if J == 0:
        check_chain_input(network, Y)   # what the chain would check of the data (its width)
        return LocalInference(np.zeros((0, K1)), float("nan"))
    sampler = GibbsSampler.for_inference(network, Y, n_jobs=n_jobs, random_state=rng)
    sampler.check_state()       # once: the iterations change no shape
    layer_one = sampler.network.layers[0]
    predictive = None if heldout is None else HeldoutPredictive(heldout, sampler.n_threads)
    features = FeatureAverage(J, K1)
    for it in range(burn_in + n_collect):
        sweep_fixed(sampler)    # GibbsSampler.sweep's draws, without what only training needs
        if it >= burn_in:
            th = layer_one.theta
            features.add(th)
            if predictive is not None and (it - burn_in + 1) % heldout_every == 0:
                predictive.add(layer_one.phi, th)
    ppl = float("nan")
    if predictive is not None:
        if predictive.n_samples == 0:  # fewer collected iterations than heldout_every: the last sample
            predictive.add(layer_one.phi, layer_one.theta)
        ppl = predictive.perplexity()
    return LocalInference(features.mean(n_collect), ppl)
