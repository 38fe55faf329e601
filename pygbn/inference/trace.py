"""The training log-likelihood of a chain's current state (the convergence traces).

:func:`document_loglik` evaluates, without drawing anything (the chain and
its streams are untouched), the log-likelihood of each document's observed
data under a point estimate of the layer-one rates at the chain's current
state:

``ln p(y_j) = sum_v ln p(y_vj | lambda_vj)``, ``lambda_vj = sum_k phi_vk theta_hat_jk``,

with the link's ``p`` (Poisson counts, Bernoulli-Poisson ones and zeros, or
the PRG density of a real value, see
:meth:`pygbn.model.links.Link.log_density_shifted`) and

* ``theta_hat_j = (a_j + m_j) / (c_j^(2) + 1)``, the mean of theta_j^(1)'s
  conditional given everything else (eq:step4 with ``-ln(1 - p_j^(1)) = 1``):
  ``a_j = r`` in a one-layer network, else ``Phi^(2) theta_j^(2)``, and
  ``m_j`` the layer-one latent counts of document j by factor.  The collapsed
  sampler integrates theta^(1) out (and a blocked chain draws it only when
  the next sweep needs it), so both use this estimate;
* ``Phi^(1)`` the chain's current sample (blocked) or, for the collapsed
  sampler, which integrates it out too, its posterior mean given the token
  labels, ``(eta + n_vk) / (V eta + n_.k)`` (formed entry by entry from
  ``n_vk``, :func:`pygbn.inference._blocked.heldout_accumulate_counts`).

:func:`loglik_per_token` divides the sum over documents by the link's token
count (:meth:`~pygbn.model.links.Link.n_tokens`: the count total for
Poisson data, the number of non-zero observations otherwise).
"""
from __future__ import annotations

import numpy as np

from pygbn.inference import _blocked, _upper
from pygbn.inference.layer_one import posterior_column_sums

__all__ = ["document_loglik", "loglik_per_token"]

_TINY = np.finfo(np.float64).tiny
#: document blocks per chunk of :func:`document_loglik`
TRACE_CHUNK_BLOCKS = 8


def document_loglik(sampler) -> np.ndarray:
    """The log-likelihood of each document of ``sampler`` (a training
    :class:`~pygbn.inference.gibbs.GibbsSampler`) at its current state.

    Computed a few document blocks at a time (the sampler's own blocks, so a
    document's value is the same whichever process holds it); see the
    module notes for the estimate of theta^(1) and Phi^(1).

    Returns
    -------
    ndarray of shape (n_docs,)
    """
    net = sampler.network
    layer = net.layers[0]
    link = net.link
    if sampler.method == "collapsed":
        # the posterior mean of Phi^(1) formed entry by entry from the counts (the
        # same values, no (V, K) float64 array beside the chain's state)
        counts, eta = layer.counts, float(layer.eta)
        col_sums = posterior_column_sums(counts, eta)

        def accumulate(ptr, idx, theta, rates, totals):
            _blocked.heldout_accumulate_counts(ptr, idx, counts, eta, col_sums, theta, rates, totals,
                                               sampler.n_threads)
    else:
        phi = np.ascontiguousarray(layer.phi)

        def accumulate(ptr, idx, theta, rates, totals):
            _blocked.heldout_accumulate(ptr, idx, phi, theta, rates, totals, sampler.n_threads)
    K = layer.width
    bounds = sampler.bounds
    n_blocks = len(bounds) - 1
    out = np.zeros(sampler.n_docs)
    indptr, indices, values = sampler.indptr, sampler.indices, sampler.values
    aux = sampler.aux
    # one buffer for every chunk's theta, and small chunks: the temporaries of a
    # trace stay small beside the chain's state (a document's value does not
    # depend on the chunks)
    step = TRACE_CHUNK_BLOCKS
    longest = int(np.max(np.diff(bounds))) if n_blocks else 0
    buf = np.empty((min(sampler.n_docs, step * longest), K))
    for b0 in range(0, n_blocks, step):
        b1 = min(b0 + step, n_blocks)
        lo, hi = int(bounds[b0]), int(bounds[b1])
        theta = buf[:hi - lo]
        if net.depth == 1:
            theta[:] = np.maximum(net.r, _TINY)
        else:
            upper = net.layers[1]
            _upper.doc_prior(upper.theta, upper.phi, np.ascontiguousarray(bounds[b0:b1 + 1]), theta,
                             sampler.n_threads)
        theta += sampler.m[0][lo:hi]
        theta /= (layer.c[lo:hi] + 1.0)[:, None]
        c0, c1 = int(indptr[lo]), int(indptr[hi])
        rates = np.zeros(c1 - c0)
        totals = np.zeros(hi - lo)
        accumulate(np.ascontiguousarray(indptr[lo:hi + 1] - c0), indices[c0:c1], theta, rates, totals)
        doc = np.repeat(np.arange(hi - lo), np.diff(indptr[lo:hi + 1]))
        cell_aux = aux[lo:hi][doc] if aux.size else aux
        terms = link.log_density_shifted(values[c0:c1], np.maximum(rates, _TINY), cell_aux)
        out[lo:hi] = np.bincount(doc, weights=terms, minlength=hi - lo) - totals
    return out


def loglik_per_token(doc_loglik: np.ndarray, n_tokens: float) -> float:
    """``sum(doc_loglik) / n_tokens`` (the documents' values summed in document order)."""
    return float(np.sum(doc_loglik) / n_tokens) if n_tokens > 0 else float("nan")
