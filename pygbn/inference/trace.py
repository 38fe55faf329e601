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
  ``n_vk``).

The rates are not summed over all K_1 factors at every cell: split by the two
parts of theta_hat,

``lambda_vj = [(Phi^(1) a_j)_v + sum_{k: m_jk > 0} phi_vk m_jk] / (c_j + 1)``,

and ``Phi^(1) a_j = Psi w_j`` with ``Psi = Phi^(1) r`` (one column, ``w_j = 1``)
in a one-layer network, ``Psi = Phi^(1) Phi^(2)`` (V x K_2, ``w_j =
theta^(2)_j``) below, formed once per evaluation (:func:`phi_product`; a
collapsed chain's Phi^(1) a few rows at a time from the counts).  A cell then
costs ``K_2 + nnz(m_j)`` multiply-adds (1 + nnz(m_j) at T = 1) instead of
``K_1``, and the documents' totals ``sum_k theta_hat_jk`` are
``(w_j . colsums(Phi^(2)) + sum_k m_jk) / (c_j + 1)`` (``sum_k r_k`` in place
of the first term at T = 1; :func:`pygbn.inference._trace.trace_rates`).  The
same sums in another order (the prior's floor at the smallest normal double
is left out of ``Psi w_j``: at most ``K_1`` times that number), so the same
values to rounding.  At T >= 2 Psi is used where it
is no larger than Phi^(1) and its operation count is the smaller
(:func:`_psi_cheaper`); otherwise the documents' priors ``Phi^(2) theta^(2)_j``
are formed block by block and each cell sums all K_1 factors
(:func:`pygbn.inference._blocked.heldout_accumulate`, or
:func:`~pygbn.inference._blocked.heldout_accumulate_counts` from the counts).
Every document's value is formed by one thread in a fixed order: the same
bits whatever the thread count or the chunks of documents.

:func:`loglik_per_token` divides the sum over documents by the link's token
count (:meth:`~pygbn.model.links.Link.n_tokens`: the count total for
Poisson data, the number of non-zero observations otherwise).
"""
from __future__ import annotations

import numpy as np

from pygbn._utils import block_bounds
from pygbn.inference import _blocked, _trace, _upper
from pygbn.inference.layer_one import posterior_column_sums

__all__ = ["document_loglik", "loglik_per_token"]

_TINY = np.finfo(np.float64).tiny
#: document blocks per chunk of :func:`document_loglik`
TRACE_CHUNK_BLOCKS = 8
#: rows of Phi^(1) per block of :func:`phi_product`
_PRODUCT_ROWS = 256


def document_loglik(sampler) -> np.ndarray:
    """The log-likelihood of each document of ``sampler`` (a training
    :class:`~pygbn.inference.gibbs.GibbsSampler`) at its current state.

    Computed a few document blocks at a time (the sampler's own blocks, so a
    document's value is the same whichever process holds it); see the
    module notes for the estimate of theta^(1) and Phi^(1) and for how the
    rates are formed.

    Returns
    -------
    ndarray of shape (n_docs,)
    """
    net = sampler.network
    layer = net.layers[0]
    link = net.link
    nt = sampler.n_threads
    if sampler.method == "collapsed":
        # the posterior mean of Phi^(1) formed entry by entry from the counts (the
        # same values, no (V, K) float64 array beside the chain's state)
        src, eta = layer.counts, float(layer.eta)
        if src.dtype not in (np.int32, np.int64) or not src.flags.c_contiguous:
            src = np.ascontiguousarray(src, dtype=np.int64)
        col_sums = posterior_column_sums(src, eta)
    else:
        src, eta, col_sums = np.ascontiguousarray(layer.phi), 0.0, np.ones(layer.width)
    bounds = sampler.bounds
    n_blocks = len(bounds) - 1
    out = np.zeros(sampler.n_docs)
    indptr, indices, values = sampler.indptr, sampler.indices, sampler.values
    aux = sampler.aux
    if net.depth == 1:
        a = np.maximum(net.r, _TINY)
        psi = phi_product(src, eta, col_sums, a[None, :], nt)
        w, wsum = np.ones((1, 1)), np.array([np.sum(a)])
    elif _psi_cheaper(sampler):
        upper = net.layers[1]
        psi = phi_product(src, eta, col_sums, np.ascontiguousarray(upper.phi.T), nt)
        w, wsum = np.ascontiguousarray(upper.theta), np.sum(upper.phi, axis=0)
    else:
        psi = None
        K = layer.width
        longest = int(np.max(np.diff(bounds))) if n_blocks else 0
        # one buffer for every chunk's theta, and small chunks: the temporaries of a
        # trace stay small beside the chain's state (a document's value does not
        # depend on the chunks)
        buf = np.empty((min(sampler.n_docs, TRACE_CHUNK_BLOCKS * longest), K))
    for b0 in range(0, n_blocks, TRACE_CHUNK_BLOCKS):
        b1 = min(b0 + TRACE_CHUNK_BLOCKS, n_blocks)
        lo, hi = int(bounds[b0]), int(bounds[b1])
        c0, c1 = int(indptr[lo]), int(indptr[hi])
        ptr = np.ascontiguousarray(indptr[lo:hi + 1] - c0)
        rates = np.zeros(c1 - c0)
        totals = np.zeros(hi - lo)
        if psi is not None:
            _trace.trace_rates(ptr, indices[c0:c1], sampler.m[0][lo:hi], layer.c[lo:hi], psi,
                               w if w.shape[0] == 1 else w[lo:hi], wsum, src, eta, col_sums, rates, totals, nt)
        else:
            theta = buf[:hi - lo]
            _upper.doc_prior(net.layers[1].theta, net.layers[1].phi, np.ascontiguousarray(bounds[b0:b1 + 1]),
                             theta, nt)
            theta += sampler.m[0][lo:hi]
            theta /= (layer.c[lo:hi] + 1.0)[:, None]
            if sampler.method == "collapsed":
                _blocked.heldout_accumulate_counts(ptr, indices[c0:c1], src, eta, col_sums, theta, rates, totals, nt)
            else:
                _blocked.heldout_accumulate(ptr, indices[c0:c1], src, theta, rates, totals, nt)
        doc = np.repeat(np.arange(hi - lo), np.diff(ptr))
        cell_aux = aux[lo:hi][doc] if aux.size else aux
        terms = link.log_density_shifted(values[c0:c1], np.maximum(rates, _TINY), cell_aux)
        out[lo:hi] = np.bincount(doc, weights=terms, minlength=hi - lo) - totals
    return out


def _psi_cheaper(sampler) -> bool:
    """Whether a T >= 2 trace is cheaper by ``Psi = Phi^(1) Phi^(2)`` (V x K2, formed once:
    ``V K1 K2`` multiply-adds, then ``K2 + nnz(m_j)`` a cell) than by the documents'
    priors ``Phi^(2) theta^(2)_j`` (``J K1 K2``, then ``K1`` a cell); never where
    Psi would be larger than Phi^(1) (``K2 > K1``)."""
    net, m = sampler.network, sampler.m[0]
    V, K1 = net.layers[0].phi.shape
    K2 = net.layers[1].width
    if K2 > K1:
        return False
    cells = np.diff(sampler.indptr)
    nnz = int(sampler.indptr[-1])
    sparse = 0      # sum_j cells_j nnz(m_j), a chunk of documents at a time
    step = max(1, (1 << 22) // max(K1, 1))
    for lo in range(0, sampler.n_docs, step):
        sparse += int(np.dot(cells[lo:lo + step], np.count_nonzero(m[lo:lo + step], axis=1)))
    return V * K1 * K2 + nnz * K2 + sparse < sampler.n_docs * K1 * K2 + nnz * K1


def phi_product(src, eta: float, col_sums: np.ndarray, b_t: np.ndarray, n_threads: int) -> np.ndarray:
    """``Phi^(1) B`` (V x K2) for ``b_t = B^T`` (K2 x K1), by the product kernel of
    :func:`pygbn.inference._upper.doc_prior` (each entry one fixed chain of
    multiply-adds, floored at the smallest normal double: the same bits whatever
    the thread count).  ``src`` is Phi^(1) (float64) or its counts ``n_vk``, whose
    posterior mean ``(eta + n_vk) / col_sums`` is formed a few rows at a time
    (no (V, K1) float64 array)."""
    V, K1 = src.shape
    out = np.empty((V, b_t.shape[0]))
    if src.dtype == np.float64:
        _upper.doc_prior(src, b_t, block_bounds(V, _PRODUCT_ROWS), out, n_threads)
        return out
    step = _PRODUCT_ROWS * max(1, n_threads)
    rows = np.empty((min(V, step), K1))
    for v0 in range(0, V, step):
        v1 = min(v0 + step, V)
        phi = rows[:v1 - v0]
        phi[:] = src[v0:v1]
        phi += eta
        phi /= col_sums
        _upper.doc_prior(phi, b_t, block_bounds(v1 - v0, _PRODUCT_ROWS), out[v0:v1], n_threads)
    return out


def loglik_per_token(doc_loglik: np.ndarray, n_tokens: float) -> float:
    """``sum(doc_loglik) / n_tokens`` (the documents' values summed in document order)."""
    return float(np.sum(doc_loglik) / n_tokens) if n_tokens > 0 else float("nan")
