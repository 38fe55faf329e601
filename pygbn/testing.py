"""Statistical checks of samplers against exact distributions.

The tools pygbn's own tests use, public so that users can check their own
samplers the same way:

* :func:`gof_discrete` — goodness of fit of integer draws against any
  log-PMF: Pearson's chi-square on bins pooled to an expected count of at
  least 5, or, when almost all mass sits on one value, an exact binomial
  test of the number of draws off that value;
* :func:`gof_binned` — chi-square of real (or integer) draws against a CDF
  on given bin edges (for densities, point masses and huge discrete ranges);
* :func:`moment_test` — z-tests of the sample mean and variance against
  exact values.

Each returns a small result object with a ``pvalue``; the ``assert_*``
variants raise :class:`AssertionError` with a readable report when the
p-value is below ``alpha``.  With fixed seeds the checks are deterministic;
choose ``alpha`` by Bonferroni over the number of checks in a suite.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

__all__ = [
    "GofResult", "MomentResult", "pooled_chisquare",
    "gof_discrete", "gof_binned", "moment_test",
    "assert_gof_discrete", "assert_gof_binned", "assert_moments",
]


@dataclass
class GofResult:
    """Outcome of a goodness-of-fit test.

    Attributes
    ----------
    pvalue : float
    statistic : float
        Chi-square statistic, or the off-mode count for the binomial test.
    dof : int
        Degrees of freedom (chi-square) or 0.
    method : str
        ``"chi2"`` or ``"binomial"``.
    n_bins : int
        Bins after pooling (chi-square) or 2.
    detail : str
        Human-readable summary of the worst bins.
    """

    pvalue: float
    statistic: float
    dof: int
    method: str
    n_bins: int
    detail: str = ""


@dataclass
class MomentResult:
    """Outcome of :func:`moment_test` (z-scores and two-sided p-values)."""

    z_mean: float
    z_var: float
    pvalue_mean: float
    pvalue_var: float

    @property
    def pvalue(self) -> float:
        """Bonferroni-combined p-value of the two z-tests."""
        return min(1.0, 2 * min(self.pvalue_mean, self.pvalue_var))


def pooled_chisquare(observed, expected, min_expected: float = 5.0, labels=None) -> GofResult:
    """Pearson's chi-square after pooling adjacent bins to ``expected >= min_expected``.

    Bins are pooled left to right in the given order; a remainder below
    ``min_expected`` joins the last pooled bin.  Bins with zero expectation
    and non-zero observation make the p-value 0.

    Parameters
    ----------
    observed, expected : array_like
        Counts and expected counts per bin (same length, same total ideally).
    min_expected : float
        Minimum expected count per pooled bin.
    labels : sequence, optional
        Names of the bins, for the report.
    """
    obs = np.asarray(observed, dtype=np.float64)
    exp = np.asarray(expected, dtype=np.float64)
    if obs.shape != exp.shape or obs.ndim != 1:
        raise ValueError("observed and expected must be 1-d arrays of the same length")
    labels = list(range(len(obs))) if labels is None else list(labels)
    if np.any((exp <= 0) & (obs > 0)):
        i = int(np.flatnonzero((exp <= 0) & (obs > 0))[0])
        return GofResult(0.0, np.inf, 0, "chi2", 0,
                         f"{int(obs[i])} draws in bin {labels[i]!r} of probability 0")
    po, pe, pl = [], [], []
    acc_o = acc_e = 0.0
    start = None
    for i in range(len(obs)):
        if start is None:
            start = labels[i]
        acc_o += obs[i]
        acc_e += exp[i]
        if acc_e >= min_expected:
            po.append(acc_o)
            pe.append(acc_e)
            pl.append((start, labels[i]))
            acc_o = acc_e = 0.0
            start = None
    if acc_e > 0 or acc_o > 0:
        if pe:
            po[-1] += acc_o
            pe[-1] += acc_e
            pl[-1] = (pl[-1][0], labels[-1])
        else:
            po.append(acc_o)
            pe.append(acc_e)
            pl.append((start, labels[-1]))
    po, pe = np.array(po), np.array(pe)
    if len(pe) < 2:
        return GofResult(1.0, 0.0, 0, "chi2", len(pe), "a single pooled bin: nothing to test")
    contrib = (po - pe) ** 2 / pe
    stat = float(contrib.sum())
    dof = len(pe) - 1
    pval = float(_st.chi2.sf(stat, dof))
    worst = np.argsort(contrib)[::-1][:3]
    detail = "; ".join(f"bin {pl[i][0]}..{pl[i][1]}: observed {po[i]:.0f}, expected {pe[i]:.1f}"
                       for i in worst)
    return GofResult(pval, stat, dof, "chi2", len(pe), detail)


def gof_discrete(sample, logpmf, *, support=None, min_expected: float = 5.0,
                 concentration: float = 0.99) -> GofResult:
    """Goodness of fit of integer draws against a log-PMF.

    Parameters
    ----------
    sample : array_like of ints
        The draws.
    logpmf : callable
        ``logpmf(k)`` for an int64 array ``k``, returning ``log P(k)``.
    support : (int, int), optional
        Values ``lo..hi`` at which to evaluate the PMF.  Default: the range
        of the sample.  The law inside ``lo..hi`` is tested by chi-square
        conditionally on the number of draws there, and that number by an
        exact binomial test against ``1 - sum P`` (p-values combined by
        Bonferroni), so a PMF that puts its mass elsewhere is caught too.
    min_expected : float
        Pool adjacent values until each bin expects at least this many draws.
    concentration : float
        If one value carries more than this probability, use the exact
        binomial test of the number of draws off that value instead of the
        chi-square (which has no power there).

    Returns
    -------
    GofResult
    """
    x = np.asarray(sample).reshape(-1)
    if x.size == 0:
        raise ValueError("sample is empty")
    n = x.size
    lo, hi = (int(x.min()), int(x.max())) if support is None else (int(support[0]), int(support[1]))
    if hi - lo > 50_000_000:
        raise ValueError(f"support {lo}..{hi} is too wide; use gof_binned with a CDF")
    values = np.arange(lo, hi + 1, dtype=np.int64)
    prob = np.exp(np.asarray(logpmf(values), dtype=np.float64))
    p_out = max(0.0, 1.0 - float(prob.sum()))
    inside = (x >= lo) & (x <= hi)
    counts = np.bincount((x[inside] - lo).astype(np.int64), minlength=values.size).astype(np.float64)
    n_out = float(n - inside.sum())
    top = int(np.argmax(prob))
    if prob[top] > concentration:
        off_p = max(p_out + float(prob.sum() - prob[top]), 0.0)
        off = int(n - counts[top])
        if off_p <= 0.0:
            pval = 1.0 if off == 0 else 0.0
        else:
            pval = float(_st.binomtest(off, n, min(off_p, 1.0)).pvalue)
        return GofResult(pval, float(off), 0, "binomial", 2,
                         f"{off} of {n} draws off the value {values[top]} (expected {n * off_p:.3g})")
    # (1) the law inside lo..hi, conditionally on the number of draws there;
    # (2) the number of draws outside lo..hi, exactly; Bonferroni over both
    n_in = n - n_out
    p_in = float(prob.sum())
    if n_in > 0 and p_in > 0:
        chi = pooled_chisquare(counts, n_in * prob / p_in, min_expected, list(values))
    else:
        chi = GofResult(1.0, 0.0, 0, "chi2", 0, "no draws inside the support")
    if n_out == 0 and p_out == 0.0:
        return chi
    p_bin = float(_st.binomtest(int(n_out), n, min(p_out, 1.0)).pvalue) if p_out > 0 else 0.0
    detail = f"{int(n_out)} draws outside {lo}..{hi} (expected {n * p_out:.3g}); " + chi.detail
    return GofResult(min(1.0, 2 * min(chi.pvalue, p_bin)), chi.statistic, chi.dof, "chi2+binomial",
                     chi.n_bins, detail)


def gof_binned(sample, edges, cdf, *, min_expected: float = 5.0) -> GofResult:
    """Chi-square of draws against a CDF on bins ``(-inf, e0], (e0, e1], ..., (e_last, inf)``.

    Parameters
    ----------
    sample : array_like
        The draws (real or integer).
    edges : array_like
        Increasing bin edges.  For integer draws use half-integers, for a
        point mass at ``a`` put an edge at ``a`` (bins are closed on the right).
    cdf : callable
        ``cdf(x) = P(X <= x)`` for an array of edges.
    min_expected : float
        Pool adjacent bins to at least this expected count.
    """
    x = np.asarray(sample, dtype=np.float64).reshape(-1)
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim != 1 or np.any(np.diff(e) <= 0):
        raise ValueError("edges must be a strictly increasing 1-d array")
    c = np.clip(np.asarray(cdf(e), dtype=np.float64), 0.0, 1.0)
    probs = np.diff(np.concatenate([[0.0], c, [1.0]]))
    probs = np.maximum(probs, 0.0)
    idx = np.searchsorted(e, x, side="left")      # x <= e[i] -> bin i
    obs = np.bincount(idx, minlength=len(probs)).astype(np.float64)
    labels = [f"<= {e[0]:.6g}"] + [f"({e[i]:.6g}, {e[i + 1]:.6g}]" for i in range(len(e) - 1)] \
        + [f"> {e[-1]:.6g}"]
    return pooled_chisquare(obs, x.size * probs, min_expected, labels)


def moment_test(sample, mean: float, var: float) -> MomentResult:
    """z-tests of the sample mean and variance against exact values.

    The mean's z-score uses the exact variance; the variance's uses the
    sample's fourth central moment (``Var(s^2) ~ (m4 - var^2) / n``).
    Suited to large samples (``n >= 1e4``).
    """
    x = np.asarray(sample, dtype=np.float64).reshape(-1)
    n = x.size
    if n < 2:
        raise ValueError("moment_test needs at least two draws")
    m = float(x.mean())
    z_mean = (m - mean) / np.sqrt(var / n) if var > 0 else (0.0 if m == mean else np.inf)
    d = x - m
    s2 = float(np.mean(d * d)) * n / (n - 1)
    m4 = float(np.mean(d ** 4))
    v4 = max(m4 - s2 * s2, 0.0) / n
    if v4 > 0:
        z_var = (s2 - var) / np.sqrt(v4)
    else:
        z_var = 0.0 if abs(s2 - var) <= 1e-12 * max(var, 1e-300) else np.inf
    p_m = float(2 * _st.norm.sf(abs(z_mean)))
    p_v = float(2 * _st.norm.sf(abs(z_var)))
    return MomentResult(float(z_mean), float(z_var), p_m, p_v)


def _check(result, alpha, what):
    if not result.pvalue >= alpha:
        raise AssertionError(f"{what}: p-value {result.pvalue:.3g} < {alpha:.3g} ({result})")
    return result


def assert_gof_discrete(sample, logpmf, alpha: float = 1e-6, **kwargs) -> GofResult:
    """:func:`gof_discrete`, raising AssertionError when ``pvalue < alpha``."""
    return _check(gof_discrete(sample, logpmf, **kwargs), alpha, "discrete goodness of fit")


def assert_gof_binned(sample, edges, cdf, alpha: float = 1e-6, **kwargs) -> GofResult:
    """:func:`gof_binned`, raising AssertionError when ``pvalue < alpha``."""
    return _check(gof_binned(sample, edges, cdf, **kwargs), alpha, "binned goodness of fit")


def assert_moments(sample, mean: float, var: float, alpha: float = 1e-6) -> MomentResult:
    """:func:`moment_test`, raising AssertionError when its combined ``pvalue < alpha``."""
    return _check(moment_test(sample, mean, var), alpha, "moment test")
