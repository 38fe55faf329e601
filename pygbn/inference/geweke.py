"""Geweke's "getting it right" test for the Gibbs sampler.

Geweke (2004, JASA 99:799-804) compares two ways of simulating the joint
distribution of parameters and data:

* *marginal-conditional*: parameters from the prior, data from the
  likelihood, independently many times;
* *successive-conditional*: one long chain that alternates a Gibbs sweep
  (parameters given data) with fresh data given the parameters.

If every conditional of the sampler is right, both simulate the same joint
distribution, so the means of any statistics agree.  A wrong conditional
(a missing term in a rate, a wrong count) shows up as a difference of many
standard errors.  This module provides both simulators for tiny networks;
``tests/test_geweke.py`` uses them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np
import scipy.sparse as sp

from pygbn._utils import check_int, check_random_state
from pygbn.inference.collapsed_state import CollapsedState
from pygbn.inference.gibbs import GibbsSampler, _as_kernel_csr
from pygbn.inference.partial import PartialState
from pygbn.model.layer import Layer, check_parameter
from pygbn.model.links import LATENT_COUNTS, LATENT_TRUNC_BESSEL, Link, get_link
from pygbn.model.network import Hyperparameters, Network

_TINY = np.finfo(np.float64).tiny

__all__ = ["PriorDraw", "sample_prior", "statistics", "marginal_conditional",
           "successive_conditional", "autocovariances", "autocorrelation_time", "compare"]


@dataclass
class PriorDraw:
    """One draw of every variable of a GBN and its data (layer-one split included)."""

    gamma0: float
    c0: float
    r: np.ndarray
    phis: List[np.ndarray]
    thetas: List[np.ndarray]
    cs: List[np.ndarray]          # [c^(2), ..., c^(T+1)]
    aux: np.ndarray               # a_j of the PRG link (empty otherwise)
    x_vjk: Optional[np.ndarray]   # (J, V, K1) split of the counts over the factors (counts only)
    Y: np.ndarray                 # observations (J, V)


def sample_prior(rng, n_features: int, n_samples: int, widths: Sequence[int], eta: float,
                 hyper: Hyperparameters, link="poisson") -> PriorDraw:
    """Draw all variables from the GBN prior (eq:PGBN, eq:Phi, eq:c_j) and data.

    ``n_features``, ``n_samples`` and each of the (at least one) ``widths`` are
    positive ints and ``eta`` a positive number (ValueError naming them otherwise).
    """
    rng = check_random_state(rng)
    link = get_link(link)
    h = hyper
    V, J = check_int(n_features, "n_features", 1), check_int(n_samples, "n_samples", 1)
    if np.ndim(widths) != 1 or len(widths) == 0:
        raise ValueError(f"widths must be a sequence of at least one layer width, got {widths!r}")
    widths, eta = [check_int(k, "widths", 1) for k in widths], check_parameter(eta, "eta")
    dims = [V] + list(widths)
    T = len(widths)
    gamma0 = max(rng.gamma(h.a0, 1.0 / h.b0), _TINY)
    c0 = max(rng.gamma(h.e0, 1.0 / h.f0), _TINY)
    r = np.maximum(rng.gamma(gamma0 / widths[-1], 1.0 / c0, size=widths[-1]), _TINY)
    phis = []
    for t in range(T):
        phi = rng.dirichlet(np.full(dims[t], eta), size=dims[t + 1]).T
        phis.append(np.ascontiguousarray(np.maximum(phi, _TINY)))
    p2 = rng.beta(h.a0, h.b0, size=J)
    c2 = np.clip((1.0 - p2) / np.maximum(p2, _TINY), 1e-300, 1e300)
    cs = [c2] + [rng.gamma(h.e0, 1.0 / h.f0, size=J) for _ in range(T - 1)]
    net = Network(layers=[Layer(phi=phi, eta=eta) for phi in phis], r=r, hyper=h, link=link)
    thetas = net.sample_hidden(J, rng, c=cs)
    aux = (np.maximum(rng.gamma(h.e0, 1.0 / h.f0, size=J), _TINY)
           if link.latent_mode == LATENT_TRUNC_BESSEL else np.empty(0))
    Y, x_vjk = _sample_data(link, phis[0], thetas[0], aux, rng)
    return PriorDraw(gamma0, c0, r, phis, thetas, cs, aux, x_vjk, Y)  # type: ignore[arg-type]


def _sample_data(link: Link, phi: np.ndarray, theta: np.ndarray, aux: np.ndarray, rng):
    """Data given layer one's parameters: ``(Y, x_vjk)``.

    For counts (the counts are the latent counts) the data are the sums of
    the per-factor counts ``x_vjk ~ Pois(theta_jk phi_vk)`` (eq:step1's
    augmentation, which the collapsed sampler's labels need).  The other
    links draw ``Y`` themselves (:meth:`Link.sample_observations` with the
    rates ``Phi^(1) theta^(1)``; a link with per-sample parameters, PRG's
    ``a_j``, draws each sample with its own) and ``x_vjk`` is ``None``: the
    blocked sampler draws their latent counts from ``Y``.
    """
    parts = theta[:, None, :] * phi[None, :, :]         # (J, V, K)
    if link.latent_mode == LATENT_COUNTS:
        x_vjk = rng.poisson(parts)
        return x_vjk.sum(axis=2).astype(np.float64), x_vjk
    rates = parts.sum(axis=2)
    if aux.size == 0:
        return np.asarray(link.sample_observations(rates, rng), dtype=np.float64), None
    rows = []
    for j in range(rates.shape[0]):
        link_j = link.from_dict(link.to_dict())
        link_j.summarize_aux(aux[j:j + 1])
        rows.append(link_j.sample_observations(rates[j:j + 1], rng))
    return np.vstack(rows).astype(np.float64), None


def statistics(draw: PriorDraw) -> Dict[str, float]:
    """Statistics of a joint draw that the test compares."""
    out = {
        "zero_cells": float((draw.Y == 0).mean()),
        "log_sum_r": float(np.log(draw.r.sum())),
        "gamma0": float(draw.gamma0),
        "c0": float(draw.c0),
        "phi1_sq": float((draw.phis[0] ** 2).sum() / draw.phis[0].shape[1]),
        "log_theta1_sum": float(np.log(draw.thetas[0].sum())),
        "log_c2": float(np.log(draw.cs[0]).mean()),
        "log1p_y_sum": float(np.log1p(draw.Y.sum())),
    }
    for t in range(2, len(draw.phis) + 1):  # every upper layer: theta^(t), Phi^(t), c^(t+1)
        out[f"log_theta{t}_sum"] = float(np.log(draw.thetas[t - 1].sum()))
        out[f"phi{t}_sq"] = float((draw.phis[t - 1] ** 2).sum() / draw.phis[t - 1].shape[1])
        out[f"c{t + 1}"] = float(draw.cs[t - 1].mean())
    if draw.aux.size:
        out["log_a"] = float(np.log(draw.aux).mean())
    x = draw.x_vjk
    if x is not None:  # counts: the split over the factors
        out["log1p_x_total"] = float(np.log1p(x.sum()))
        out["log1p_x_00"] = float(np.log1p(x[0, 0].sum()))
        out["x_00_k0"] = float(x[0, 0, 0] > 0)
    return out


def marginal_conditional(n_draws: int, random_state, **kw) -> Dict[str, np.ndarray]:
    """Statistics of ``n_draws`` (at least 1) independent draws from the prior and likelihood."""
    n_draws = check_int(n_draws, "n_draws", 1)
    rng = check_random_state(random_state)
    rows = [statistics(sample_prior(rng, **kw)) for _ in range(n_draws)]
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


def _load(sampler: GibbsSampler, draw: PriorDraw, rng: np.random.Generator) -> None:
    net = sampler.network
    for t, layer in enumerate(net.layers):
        layer.phi = draw.phis[t].copy()
        layer.theta = draw.thetas[t].copy()
        layer.c = draw.cs[t].copy()
    net.r = draw.r.copy()
    net.gamma0, net.c0 = draw.gamma0, draw.c0
    sampler.aux = draw.aux.copy()
    _set_data(sampler, draw.x_vjk, draw.Y, rng)


def _set_data(sampler: GibbsSampler, x_vjk: Optional[np.ndarray], Y: np.ndarray,
              rng: np.random.Generator) -> None:
    """Give the sampler new observations ``Y`` and, for counts, their split ``x[j, v, k]``.

    The collapsed (and partial) sampler's tokens and labels are rebuilt from the split: the
    labels of the ``Y[j, v]`` tokens of a cell are a uniformly random
    arrangement of its split (drawn from ``rng``), which is their distribution
    given ``x``.  The collapsed sweep visits a cell's tokens in a fixed order,
    so labels sorted by factor would not be a draw from that distribution, and
    the sweep is only stationary for inputs drawn from it;
    the blocked sampler gets ``m[0]`` and ``layers[0].counts`` from it (its
    next sweep redraws them from ``Y`` anyway).
    """
    Ys = sp.csr_matrix(Y)
    Ys.eliminate_zeros()
    Ys.sort_indices()
    sampler.Y = Ys
    sampler.indptr, sampler.indices, sampler.values = _as_kernel_csr(Ys)
    if x_vjk is None:
        return
    if sampler.method != "blocked":
        # tokens grouped by document, in CSR order, labels from x_vjk
        K = x_vjk.shape[2]
        labels = [rng.permutation(np.repeat(np.arange(K, dtype=np.int32), x_vjk[j, v]))
                  for j in range(Ys.shape[0]) for v in Ys.indices[Ys.indptr[j]:Ys.indptr[j + 1]]]
        lab = np.concatenate(labels) if labels else np.zeros(0, dtype=np.int32)
        state = PartialState if sampler.method == "partial" else CollapsedState
        sampler.set_tokens(state.from_counts(Ys, K, labels=lab))
    else:
        sampler.m[0] = np.ascontiguousarray(x_vjk.sum(axis=1), dtype=np.int64)
        sampler.network.layers[0].counts = np.ascontiguousarray(x_vjk.sum(axis=0), dtype=np.int64)


def successive_conditional(n_iter: int, random_state, *, method: str = "collapsed",
                           thin: int = 1, sampler_hook=None, **kw) -> Dict[str, np.ndarray]:
    """Statistics along a chain alternating a Gibbs sweep and fresh data.

    ``sampler_hook(sampler)`` may modify the sampler before the chain starts
    (the tests use it to plant a wrong conditional).  ``n_iter`` sweeps (at least 1);
    every ``thin``-th (from the first) is recorded.
    """
    n_iter = check_int(n_iter, "n_iter", 1)
    thin = check_int(thin, "thin", 1)
    rng = check_random_state(random_state)
    hyper = kw["hyper"]
    link = get_link(kw.get("link", "poisson"))
    first = sample_prior(rng, **kw)
    widths = list(kw["widths"])
    eta = kw["eta"]
    layers = [Layer(phi=first.phis[t].copy(), eta=eta) for t in range(len(widths))]
    net = Network(layers=layers, r=first.r.copy(), gamma0=first.gamma0, c0=first.c0,
                  hyper=hyper, link=link)
    sampler = GibbsSampler(net, sp.csr_matrix(first.Y), method=method, n_jobs=1,
                           random_state=rng, update_globals=True)
    _load(sampler, first, rng)
    if sampler_hook is not None:
        sampler_hook(sampler)
    rows = []
    for it in range(n_iter):
        sampler.sweep(update_p_c=True)
        phi1, theta1 = sampler.layer_one_sample()
        phi1, theta1 = phi1.copy(), theta1.copy()
        Y, x_vjk = _sample_data(link, phi1, theta1, sampler.aux, rng)
        _set_data(sampler, x_vjk, Y, rng)
        if sampler.method == "blocked":
            sampler.network.layers[0].phi = phi1
            sampler.network.layers[0].theta = theta1
        if it % thin == 0:
            net = sampler.network
            draw = PriorDraw(net.gamma0, net.c0, net.r, [phi1] + [l.phi for l in net.layers[1:]],
                             [theta1] + [l.theta for l in net.layers[1:]],
                             [l.c for l in net.layers], sampler.aux, x_vjk, Y)
            rows.append(statistics(draw))
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


def autocovariances(x: np.ndarray) -> np.ndarray:
    """Sample autocovariances ``gamma_k``, ``k = 0, ..., n - 1``, of a series.

    ``gamma_k = (1/n) sum_{i < n-k} (x_i - xbar)(x_{i+k} - xbar)`` (the biased
    form, whose sequence is positive semi-definite), by FFT with zero padding.
    ``x``: a 1-d series of at least one finite value (ValueError otherwise).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"x must be a 1-d series of at least one finite value, got shape {x.shape}"
                         + ("" if x.size == 0 or np.isfinite(x).all() else " with a non-finite value"))
    n = x.size
    f = np.fft.rfft(x - x.mean(), 2 * n)
    return np.fft.irfft(f * np.conj(f), 2 * n)[:n] / n


def autocorrelation_time(x: np.ndarray) -> float:
    """Integrated autocorrelation time ``tau = 1 + 2 sum_{k >= 1} rho_k`` of a chain.

    Geyer's (1992) initial monotone sequence estimator: the sums of adjacent
    autocovariances ``Gamma_m = gamma_{2m} + gamma_{2m+1}`` are positive and
    decreasing for a reversible chain, so the sum is cut before the first
    ``Gamma_m <= 0`` and each ``Gamma_m`` is replaced by the least of
    ``Gamma_0, ..., Gamma_m``; then ``tau = (-gamma_0 + 2 sum_m Gamma_m) /
    gamma_0``, and ``gamma_0 tau / n`` estimates the variance of the chain's
    mean.  The estimate is clamped at ``1`` from below (conservative: no
    chain counts as better than independent draws); a constant series gives 1.

    Parameters
    ----------
    x : ndarray of shape (n,)
        The chain's values of one statistic (finite, at least one; ValueError
        otherwise, as :func:`autocovariances`).

    Returns
    -------
    float
        The estimate of tau (the chain's length over its effective sample size).

    References
    ----------
    Geyer, C. J. (1992). Practical Markov chain Monte Carlo. *Statistical
    Science* 7(4), 473-483, Section 3.3.
    """
    g = autocovariances(x)
    if not g[0] > 0:
        return 1.0
    m = g.size // 2
    pairs = g[0:2 * m:2] + g[1:2 * m:2]
    stop = np.flatnonzero(pairs <= 0)
    pairs = np.minimum.accumulate(pairs[:stop[0]] if stop.size else pairs)
    return max((2.0 * pairs.sum() - g[0]) / g[0], 1.0)


def overlapping_batch_means(x: np.ndarray, size: int) -> float:
    """The overlapping batch means estimate of ``n var(mean(x))`` for a chain.

    ``size n / ((n - size) (n - size + 1)) sum_i (m_i - xbar)^2`` over the
    ``n - size + 1`` means ``m_i`` of the batches ``x[i:i + size]`` (Flegal &
    Jones 2010, eq. 9), by cumulative sums.

    References
    ----------
    Flegal, J. M. and Jones, G. L. (2010). Batch means and spectral variance
    estimators in Markov chain Monte Carlo. *Annals of Statistics* 38(2),
    1034-1070.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    c = np.concatenate(([0.0], np.cumsum(x - x.mean())))
    m = (c[size:] - c[:-size]) / size
    return float(n * size * (m * m).sum() / ((n - size) * (n - size + 1)))


SE_METHODS = ("obm", "batch")


def compare(marginal: Dict[str, np.ndarray], successive: Dict[str, np.ndarray],
            n_batches: int = 50, se: str = "obm") -> Dict[str, float]:
    """z-scores of the difference of means, statistic by statistic.

    ``z = (mean(a) - mean(b)) / sqrt(var(mean(a)) + var(mean(b)))``, ``a`` the
    marginal-conditional draws and ``b`` the successive-conditional chain
    (Geweke 2004, Section 3).  The draws ``a`` are independent:
    ``var(mean(a)) = s_a^2 / n_a``.  If the sampler is right (the null
    hypothesis) the chain is stationary with the same distribution as ``a``,
    so ``var(mean(b)) = sigma^2 tau / n_b``, ``sigma^2`` their common
    variance and ``tau = 1 + 2 sum_k rho_k`` the chain's integrated
    autocorrelation time, and ``z`` is asymptotically standard normal.
    ``se`` picks the estimate of ``var(mean(b))``:

    * ``"obm"`` (default): ``sigma^2`` by ``s_a^2``, its estimate under the
      null from ``n_a`` independent draws (a short chain that has not yet
      visited the tail of a heavy-tailed statistic, such as the rare large
      counts of the tiny networks at T = 3, has too small a variance of its
      own, and a wrong chain may have any), and ``tau`` by overlapping
      batch means (:func:`overlapping_batch_means`, over the chain's own
      variance) with one batch size for all statistics: 4 times the
      largest of their :func:`autocorrelation_time` (Geyer's initial
      monotone sequence), at most ``n_b / 4``, at least 1 (``tau`` is
      clamped at 1 from below).  A statistic that is a noisy function of
      the chain's slowest part has small autocorrelations over many lags,
      which its own Geyer sequence, cut at the first non-positive pair,
      misses; batch means are consistent when the batch size grows with the
      chain (Flegal & Jones 2010).
    * ``"batch"``: ``n_batches`` non-overlapping batches,
      ``var(batch means) / n_batches`` (the estimator before 2026-11; batches
      of a fixed count are too short for a long chain's rare excursions).

    Either is an estimate from one chain: where the chain is short against
    its slowest excursions (T = 3 at 5,000 iterations: ``tau`` about 170 for
    the count statistics) the z are heavier-tailed than normal (see
    ``docs/engine.md``, "Geweke's test: the standard error").

    Parameters
    ----------
    marginal, successive : dict of str to ndarray
        Each statistic's draws (:func:`marginal_conditional`,
        :func:`successive_conditional`); the keys of ``marginal`` are compared.
    n_batches : int, default 50
        Batches of ``se="batch"``.
    se : {"obm", "batch"}, default "obm"
        The chain's standard error, as above.

    Returns
    -------
    dict of str to float
        ``z`` by statistic; where the standard error is 0 (both sets of draws
        constant) ``z`` is 0 if their means agree and +-inf if they differ.

    Raises
    ------
    ValueError
        If a statistic holds a non-finite draw, a set of draws is shorter
        than 4 (and than ``n_batches`` for ``se="batch"``), the statistics of
        ``successive`` differ in length, ``marginal`` is empty, or
        ``n_batches`` is below 2.

    References
    ----------
    Geweke, J. (2004). Getting it right: joint distribution tests of
    posterior simulators. *JASA* 99(467), 799-804.
    Geyer, C. J. (1992). Practical Markov chain Monte Carlo. *Statistical
    Science* 7(4), 473-483.
    Flegal, J. M. and Jones, G. L. (2010). Batch means and spectral variance
    estimators in Markov chain Monte Carlo. *Annals of Statistics* 38(2),
    1034-1070.
    """
    if se not in SE_METHODS:
        raise ValueError(f"se must be one of {SE_METHODS}, got {se!r}")
    n_batches = check_int(n_batches, "n_batches", 2)
    if not marginal:
        raise ValueError("marginal holds no statistics to compare")
    missing = set(marginal) - set(successive)
    if missing:
        raise ValueError(f"successive lacks the statistics {sorted(missing)} of marginal")
    chains = {k: np.asarray(successive[k], dtype=np.float64) for k in marginal}
    draws = {k: np.asarray(a, dtype=np.float64) for k, a in marginal.items()}
    lengths = {k: np.shape(v)[:1] for k, v in chains.items()}
    if len(set(lengths.values())) > 1:     # one chain: every statistic has a value per recorded sweep
        raise ValueError(f"successive's statistics must all hold the same number of draws (one chain), "
                         f"got {lengths}")
    n = len(next(iter(chains.values())))
    least = max(4, n_batches) if se == "batch" else 4
    for name, group in (("marginal", draws), ("successive", chains)):
        for k, v in group.items():
            if v.ndim != 1 or v.size < least:
                raise ValueError(f"{name}[{k!r}] must hold at least {least} draws, got shape {v.shape}")
            if not np.isfinite(v).all():
                raise ValueError(f"{name}[{k!r}] holds a non-finite draw")
    tau_max = max(autocorrelation_time(b) for b in chains.values())
    size = int(max(min(4 * tau_max, n // 4), 1))
    z = {}
    for k, a in draws.items():
        b = chains[k]
        var_a, var_b = a.var(ddof=1), b.var()
        if se == "batch":
            nb = n // n_batches
            batch_means = b[: nb * n_batches].reshape(n_batches, nb).mean(axis=1)
            var_mean_b = batch_means.var(ddof=1) / n_batches
        else:
            tau = overlapping_batch_means(b, size) / var_b if var_b > 0 else 1.0
            var_mean_b = var_a * max(tau, 1.0) / n
        se2 = var_a / len(a) + var_mean_b
        diff = a.mean() - b.mean()
        if se2 > 0:
            z[k] = float(diff / np.sqrt(se2))
        else:   # both constant: equal, or apart with no spread at all
            z[k] = 0.0 if diff == 0 else float(np.copysign(np.inf, diff))
    return z
