"""Convergence diagnostics of several chains: split-R-hat and the effective sample size.

Both take ``chains``, an array of shape ``(m, n)``: m chains (e.g. fits of
the same data with m seeds) of n draws of one scalar, such as the training
log-likelihood per token that :class:`pygbn.GBN` records (``loglikelihoods_``,
every ``trace_every`` iterations).  With layer-wise training only the draws
of one depth's stage are draws of one target: at each new depth the model
changes (a layer is added, and the new top layer is pruned at iteration
``B_T``), so compare chains depth by depth, after the pruning, as
:func:`trace_chains` does.

The formulas (Gelman et al., *Bayesian Data Analysis*, 3rd ed., Section 11.4
and 11.5; Vehtari et al., *Bayesian Analysis* 16, 2021, without the rank
normalisation):

* **split-R-hat.**  Each chain is cut into its first and second halves
  (the middle draw of an odd n dropped), giving ``M = 2m`` chains of
  ``N = floor(n/2)`` draws ``psi_ij``.  With ``B = N/(M-1) sum_j (psi_.j -
  psi_..)^2`` (between chains), ``W = 1/M sum_j s_j^2`` (within, ``s_j^2``
  the sample variance of chain j) and ``var+ = (N-1)/N W + B/N``,
  ``R-hat = sqrt(var+ / W)``.  Near 1 when the chains agree with one
  another and with themselves over time; values above about 1.01 (strict)
  or 1.1 (lenient) say the chains have not mixed.
* **Effective sample size.**  On the same split chains (M = 2m halves of
  N draws; BDA3 Section 11.5, Stan's and arviz's split ESS): with the
  autocovariances ``c_j(t)`` of each half (divisor N) the combined
  autocorrelation is ``rho(t) = 1 - (W - mean_j c_j(t)) / var+`` (W and
  var+ as above); Geyer's initial monotone sequence truncates the sum: the
  pair sums ``P_k = rho(2k) + rho(2k+1)`` are kept while positive and made
  non-increasing, ``tau = -1 + 2 sum_k P_k`` and ``ESS = M N / max(tau,
  1 / log10(max(M N, 10)))`` (Stan's cap, reached only by strongly
  anticorrelated draws: ESS is at most ``M N log10(M N)``).  For
  independent draws ESS is about m n; for an AR(1) chain with coefficient
  phi about ``m n (1 - phi) / (1 + phi)``; a trend within a chain lowers
  it, as it raises the split-R-hat.  Unlike Stan and arviz, no rank
  normalisation and no extra tail term ``rho`` after the last pair.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from pygbn._utils import per_layer

__all__ = ["rhat", "effective_sample_size", "trace_chains", "trace_diagnostics"]


def _check_chains(chains, min_draws: int) -> np.ndarray:
    try:
        arr = np.asarray(chains, dtype=np.float64)
    except (ValueError, TypeError) as exc:     # ragged rows, or values that are not numbers
        raise ValueError(f"chains must be a numeric array of shape (n_chains, n_draws), with chains of "
                         f"equal length (trace_chains cuts them to one): {' '.join(str(exc).split())}"[:300]) from None
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < min_draws:
        raise ValueError(f"chains must have shape (n_chains, n_draws) with at least one chain and "
                         f"{min_draws} draws, got shape {np.shape(chains)}")
    if not np.isfinite(arr).all():
        raise ValueError("chains must hold finite values only")
    return arr


def _split(arr: np.ndarray) -> np.ndarray:
    half = arr.shape[1] // 2
    return np.concatenate([arr[:, :half], arr[:, arr.shape[1] - half:]], axis=0)


def _variances(arr: np.ndarray):
    """``(W, var+)`` of the chains ``arr`` (m, n): within-chain and pooled variance."""
    m, n = arr.shape
    W = float(np.mean(np.var(arr, axis=1, ddof=1)))
    B = n * float(np.var(arr.mean(axis=1), ddof=1)) if m > 1 else 0.0
    return W, (n - 1) / n * W + B / n


def rhat(chains, split: bool = True) -> float:
    """Gelman-Rubin potential scale reduction factor (split-R-hat by default).

    Parameters
    ----------
    chains : array-like of shape (n_chains, n_draws)
        One row per chain; a 1-D array is one chain (meaningful with
        ``split=True`` only).
    split : bool, default=True
        Cut every chain into halves first (split-R-hat, which also sees a
        trend within a chain); False gives the original R-hat of Gelman &
        Rubin (1992) on whole chains (needs two chains or more).

    Returns
    -------
    float
        ``sqrt(var+ / W)`` (see the module notes).  When every (split)
        chain is constant (``W = 0``): ``inf`` if they are not all at the
        same value (chains stuck apart have not mixed, and ``inf > 1.01``
        says so), NaN only when every draw is identical.
    """
    arr = _check_chains(chains, 4 if split else 2)
    if split:
        arr = _split(arr)
    elif arr.shape[0] < 2:
        raise ValueError("rhat(split=False) needs two chains or more")
    W, var_plus = _variances(arr)
    if W == 0.0:
        return float("inf") if var_plus > 0.0 else float("nan")
    return float(np.sqrt(var_plus / W))


def _autocovariance(arr: np.ndarray) -> np.ndarray:
    """Autocovariances of each row at lags 0..n-1 (divisor n), by FFT."""
    n = arr.shape[1]
    x = arr - arr.mean(axis=1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(x, size, axis=1)
    return np.fft.irfft(f * np.conj(f), size, axis=1)[:, :n] / n


def effective_sample_size(chains) -> float:
    """Effective sample size of the draws of several chains (split chains, Geyer's initial monotone sequence).

    Parameters
    ----------
    chains : array-like of shape (n_chains, n_draws)
        One row per chain (a 1-D array is one chain), at least 4 draws each.

    Returns
    -------
    float
        ``M N / tau`` over the split chains (see the module notes); NaN when
        every draw is the same.  Chains each constant at a different value
        are perfectly autocorrelated: their ESS is about ``m`` (each half a
        chain of its own; their R-hat is inf).
    """
    arr = _split(_check_chains(chains, 4))
    m, n = arr.shape
    W, var_plus = _variances(arr)
    if var_plus == 0.0:
        return float("nan")
    acov = _autocovariance(arr).mean(axis=0)
    rho = 1.0 - (W - acov) / var_plus
    rho[0] = 1.0
    n_pairs = n // 2
    pairs = rho[:2 * n_pairs].reshape(n_pairs, 2).sum(axis=1)
    bad = np.flatnonzero(pairs <= 0)
    pairs = pairs[:bad[0]] if bad.size else pairs
    pairs = np.minimum.accumulate(pairs)
    tau = -1.0 + 2.0 * float(np.sum(pairs))
    return float(m * n / max(tau, 1.0 / np.log10(max(m * n, 10))))


def trace_chains(models: Sequence, depth: Optional[int] = None, discard=0.5) -> np.ndarray:
    """The traced log-likelihoods of one depth of several fits, as an (m, n) array of chains.

    Parameters
    ----------
    models : sequence of fitted GBN
        Fits of the same data and settings with different seeds (each with
        ``loglikelihoods_``; one chain per model).
    depth : int, optional
        The depth whose stage is compared (default: the deepest depth every
        model reached).
    discard : float in [0, 1) or "burn_in", default=0.5
        The warm-up dropped from the start of the depth's traced draws: a
        number is the share of them (``floor(discard * n)`` draws; the
        default keeps the second half).  ``"burn_in"`` drops the draws of
        the depth's burn-in, iterations 1 to ``B_T`` (the model's
        ``burn_in`` at that depth, where the new top layer is pruned), and
        keeps those of its ``n_collect`` iterations.  The second half is
        the draws after the pruning only when ``B_T`` and ``C_T`` are equal:
        with the defaults ``burn_in=(1000, 500)``, ``n_collect=500`` it is
        so at depths 2 and up, but at depth 1 (1500 iterations, pruned at
        1000) the second half covers iterations 751 to 1500, a third of them
        before the pruning.

    Returns
    -------
    ndarray of shape (n_models, n)
        Chains cut to the length of the shortest one (its last n draws).
    """
    models = list(models)
    if not models or not all(hasattr(g, "loglikelihoods_") for g in models):
        raise ValueError("models must be fitted GBN estimators with loglikelihoods_ (fit with trace_every)")
    by_burn_in = isinstance(discard, str) and discard == "burn_in"
    number = (int, float, np.integer, np.floating)
    if not by_burn_in and (isinstance(discard, (bool, np.bool_)) or not isinstance(discard, number)
                           or not 0 <= discard < 1):
        raise ValueError(f"discard must be a number in [0, 1) or 'burn_in', got {discard!r}")
    reached = min(len(g.loglikelihoods_) for g in models)
    d = reached if depth is None else depth
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 1 <= d <= reached:
        raise ValueError(f"depth must be between 1 and {reached} (the depth every model reached), got {depth!r}")
    rows = []
    for g in models:
        ll = np.asarray(g.loglikelihoods_[d - 1], dtype=np.float64)
        if by_burn_in:
            burn = per_layer(g.burn_in, int(g.n_layers), "burn_in", first_and_rest=True)[d - 1]
            its = np.asarray(g.trace_iterations_[d - 1], dtype=np.int64)
            rows.append(ll[its > int(burn)])
        else:
            rows.append(ll[int(np.floor(discard * ll.size)):])
    n = min(r.size for r in rows)
    return np.array([r[r.size - n:] for r in rows]).reshape(len(rows), n)


def trace_diagnostics(models: Sequence, depth: Optional[int] = None, discard=0.5) -> dict:
    """Split-R-hat and ESS of the training log-likelihood per token of several fits at one depth.

    Parameters
    ----------
    models, depth, discard
        As in :func:`trace_chains`.

    Returns
    -------
    dict
        ``depth``, ``n_chains``, ``n_draws`` (per chain), ``rhat`` (split),
        ``ess`` and ``mean`` (of all kept draws); R-hat and ESS are NaN
        when fewer than 4 draws per chain are kept.
    """
    chains = trace_chains(models, depth, discard)
    d = depth if depth is not None else min(len(g.loglikelihoods_) for g in models)
    enough = chains.shape[1] >= 4
    return {"depth": int(d), "n_chains": int(chains.shape[0]), "n_draws": int(chains.shape[1]),
            "rhat": rhat(chains) if enough else float("nan"),
            "ess": effective_sample_size(chains) if enough else float("nan"),
            "mean": float(chains.mean()) if chains.size else float("nan")}
