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
  exact values (large samples; the variance's needs light tails).

Each returns a small result object with a ``pvalue``; the ``assert_*``
variants raise :class:`AssertionError` with a readable report when the
p-value is below ``alpha`` (or NaN).  A draw on a value of probability 0
gives a p-value of 0.  Invalid input (NaN draws, non-integer draws for
:func:`gof_discrete`, non-finite parameters or edges, a PMF or CDF that
returns NaN, a decreasing CDF, a negative variance or expected count)
raises :class:`ValueError` naming the argument.  With fixed seeds the checks are deterministic;
choose ``alpha`` by Bonferroni over the number of checks in a suite.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

from pygbn._utils import first_index, in_range, real_array

__all__ = [
    "GofResult", "MomentResult", "pooled_chisquare",
    "gof_discrete", "gof_binned", "moment_test",
    "assert_gof_discrete", "assert_gof_binned", "assert_moments",
]

# slack for rounding in a CDF's values and increments
_CDF_TOL = 1e-9


def _first_bad(mask):
    """Index (a tuple, or an int for 1-d arrays) of the first True entry of ``mask``."""
    i = first_index(mask)
    return i[0] if len(i) == 1 else i


def _finite_array(value, name, *, allow_inf=False):
    """``value`` as a float64 array (real numbers as :mod:`pygbn.random` takes them), or
    ValueError naming ``name`` (and its first NaN, or infinity, and where it is)."""
    a = real_array(value)
    if a is None:
        raise ValueError(f"{name} must be real numbers; got {value!r:.80}")
    bad = ~in_range(a, allow_inf=allow_inf)
    if bad.any():
        i = _first_bad(bad)
        what = "must not hold NaN" if allow_inf else "must be finite"
        raise ValueError(f"{name} {what}; got {float(a[i])} at index {i}")
    return a


def _finite_scalar(value, name):
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError) as exc:     # OverflowError: ints past 1e308
        raise ValueError(f"{name} must be a real number; got {value!r:.80}") from exc
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite; got {v}")
    return v


def _integer_sample(sample):
    """The draws of :func:`gof_discrete` as a flat int64 array (ValueError naming ``sample``)."""
    x = np.asarray(sample).reshape(-1)
    if x.size == 0:
        raise ValueError("sample is empty")
    if x.dtype.kind == "b":
        return x.astype(np.int64)
    if x.dtype.kind == "u":
        if x.max() > np.iinfo(np.int64).max:
            raise ValueError(f"sample must fit in int64; got {x.max()}")
        return x.astype(np.int64)
    if x.dtype.kind == "i":
        return x.astype(np.int64, copy=False)
    if x.dtype.kind == "f" or x.dtype == object:
        f = _finite_array(x, "sample")
        bad = (f != np.floor(f)) | (np.abs(f) >= 2.0 ** 63)
        if bad.any():
            i = _first_bad(bad)
            raise ValueError(f"sample must hold integers (in the int64 range); "
                             f"got {float(f[i])!r} at index {i}")
        return f.astype(np.int64)
    raise ValueError(f"sample must hold integers; got dtype {x.dtype}")


def _integer(value, name):
    v = _finite_scalar(value, name)
    if v != np.floor(v) or abs(v) >= 2.0 ** 63:
        raise ValueError(f"{name} must be an integer; got {value!r}")
    return int(value) if isinstance(value, (int, np.integer)) else int(v)


@dataclass
class GofResult:
    """Outcome of a goodness-of-fit test.

    Attributes
    ----------
    pvalue : float
    statistic : float
        Chi-square statistic, the off-mode count for the binomial test, or
        ``inf`` for draws of probability 0.
    dof : int
        Degrees of freedom (chi-square) or 0.
    method : str
        ``"chi2"``; ``"chi2+binomial"`` (with the exact test of the draws
        outside an explicit support) or ``"chi2+range"`` (with the test of the
        law's mass outside the sample's range); ``"binomial"``; or
        ``"impossible"`` (draws on values of probability 0: p-value 0).
    n_bins : int
        Bins after pooling (chi-square), 2 (binomial) or 0.
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
        """Bonferroni-combined p-value of the two z-tests (NaN if either is NaN)."""
        if np.isnan(self.pvalue_mean) or np.isnan(self.pvalue_var):
            return float("nan")
        return min(1.0, 2 * min(self.pvalue_mean, self.pvalue_var))


def pooled_chisquare(observed, expected, min_expected: float = 5.0, labels=None) -> GofResult:
    """Pearson's chi-square after pooling adjacent bins to ``expected >= min_expected``.

    Bins are pooled left to right in the given order; a remainder below
    ``min_expected`` joins the last pooled bin.  Bins with zero expectation
    and non-zero observation make the p-value 0.

    Parameters
    ----------
    observed, expected : array_like
        Counts and expected counts per bin (same length, same total ideally;
        finite and ``>= 0``, else ValueError).
    min_expected : float
        Minimum expected count per pooled bin (finite, ``> 0``).
    labels : sequence, optional
        Names of the bins, for the report (one per bin).
    """
    obs = _finite_array(observed, "observed")
    exp = _finite_array(expected, "expected")
    if obs.shape != exp.shape or obs.ndim != 1:
        raise ValueError("observed and expected must be 1-d arrays of the same length")
    for a, name in ((obs, "observed"), (exp, "expected")):
        if np.any(a < 0):
            i = _first_bad(a < 0)
            raise ValueError(f"{name} must be >= 0; got {float(a[i])} at index {i}")
    min_expected = _finite_scalar(min_expected, "min_expected")
    if min_expected <= 0:
        raise ValueError(f"min_expected must be > 0; got {min_expected}")
    if labels is None:
        labels = range(len(obs))
    elif not isinstance(labels, (list, tuple, range, np.ndarray)):
        labels = list(labels)
    if len(labels) != len(obs):
        raise ValueError(f"labels must name every bin: {len(labels)} labels for {len(obs)} bins")
    if np.any((exp == 0) & (obs > 0)):
        i = int(np.flatnonzero((exp == 0) & (obs > 0))[0])
        return GofResult(0.0, np.inf, 0, "chi2", 0,
                         f"{obs[i]:.0f} draws in bin {labels[i]!r} of probability 0")
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

    Any draw on a value of probability 0 (inside ``lo..hi``, or outside it
    when the PMF puts all its mass there) gives a p-value of 0.

    Parameters
    ----------
    sample : array_like of ints
        The draws: integers, or floats holding integers (NaN, infinities and
        non-integers raise ValueError).
    logpmf : callable
        ``logpmf(k)`` for an int64 array ``k``, returning ``log P(k)``
        (``-inf`` for impossible values; NaN or ``+inf`` raise ValueError).
    support : (int, int), optional
        Values ``lo..hi`` (``lo <= hi``) at which to evaluate the PMF.
        Default: the range of the sample.  The law inside ``lo..hi`` is
        tested by chi-square conditionally on the number of draws there, and
        the mass outside by a second test (p-values combined by Bonferroni),
        so a PMF that puts its mass elsewhere (a sampler that misses a tail)
        is caught too.  With an explicit support that test is the exact
        binomial test of the number of draws outside ``lo..hi`` against
        ``1 - sum P``; with the default one, whose range is the sample's own,
        it is the exact test of the mass ``T`` the law puts outside the
        sample's range: ``T`` is at most ``Beta(2, n - 1)``-distributed (a
        sum of two uniform spacings), so ``P(Beta(2, n - 1) >= T)`` is a
        valid p-value.
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
    x = _integer_sample(sample)
    n = x.size
    concentration = _finite_scalar(concentration, "concentration")
    if not 0.0 <= concentration <= 1.0:
        raise ValueError(f"concentration must be in [0, 1]; got {concentration}")
    if support is None:
        lo, hi = int(x.min()), int(x.max())
    else:
        try:
            s_lo, s_hi = support
        except (TypeError, ValueError) as exc:
            raise ValueError(f"support must be a pair (lo, hi) of integers; got {support!r}") from exc
        lo, hi = _integer(s_lo, "support[0]"), _integer(s_hi, "support[1]")
        if lo > hi:
            raise ValueError(f"support must be (lo, hi) with lo <= hi; got ({lo}, {hi})")
    if hi - lo > 50_000_000:
        raise ValueError(f"support {lo}..{hi} is too wide; use gof_binned with a CDF")
    values = np.arange(lo, hi + 1, dtype=np.int64)
    lp = np.asarray(logpmf(values), dtype=np.float64)
    if lp.shape != values.shape:
        raise ValueError(f"logpmf must return one value per k: shape {lp.shape} for {values.shape}")
    bad = np.isnan(lp) | (lp == np.inf)
    if bad.any():
        i = _first_bad(bad)
        raise ValueError(f"logpmf must return log-probabilities (not NaN or +inf); "
                         f"got {float(lp[i])} at k = {int(values[i])}")
    prob = np.exp(lp)
    total = float(prob.sum())
    p_out = max(0.0, 1.0 - total)
    inside = (x >= lo) & (x <= hi)
    counts = np.bincount(x[inside] - lo, minlength=values.size).astype(np.float64)
    n_out = int(n - inside.sum())
    # draws the law cannot produce fail outright, whatever test follows
    zero = (counts > 0) & (prob == 0)
    if zero.any():
        i = _first_bad(zero)
        return GofResult(0.0, np.inf, 0, "impossible", 0,
                         f"{int(counts[zero].sum())} draws on values of probability 0, "
                         f"{int(counts[i])} at k = {int(values[i])}")
    if n_out > 0 and p_out == 0.0:
        return GofResult(0.0, np.inf, 0, "impossible", 0,
                         f"{n_out} draws outside {lo}..{hi}, where the law has probability 0")
    top = int(np.argmax(prob))
    if prob[top] > concentration:
        off_p = max(p_out + float(total - prob[top]), 0.0)
        off = int(n - counts[top])
        if off_p <= 0.0:
            pval = 1.0 if off == 0 else 0.0
        else:
            pval = float(_st.binomtest(off, n, min(off_p, 1.0)).pvalue)
        return GofResult(pval, float(off), 0, "binomial", 2,
                         f"{off} of {n} draws off the value {int(values[top])} "
                         f"(expected {n * off_p:.3g})")
    # (1) the law inside lo..hi, conditionally on the number of draws there;
    # (2) the mass outside lo..hi, exactly; Bonferroni over both
    n_in = n - n_out
    if n_in > 0:
        chi = pooled_chisquare(counts, n_in * prob / total, min_expected, values)
    else:
        chi = GofResult(1.0, 0.0, 0, "chi2", 0, "no draws inside the support")
    if p_out == 0.0:
        return chi
    if support is None:
        # n_out is 0 by construction: test the law's mass outside the sample's range
        p_bin = float(_st.beta.sf(p_out, 2, n - 1)) if n >= 2 else 1.0
        method = "chi2+range"
        detail = f"law's mass {p_out:.3g} outside the sample's range {lo}..{hi}; " + chi.detail
    else:
        p_bin = float(_st.binomtest(n_out, n, min(p_out, 1.0)).pvalue)
        method = "chi2+binomial"
        detail = f"{n_out} draws outside {lo}..{hi} (expected {n * p_out:.3g}); " + chi.detail
    return GofResult(min(1.0, 2 * min(chi.pvalue, p_bin)), chi.statistic, chi.dof, method,
                     chi.n_bins, detail)


def gof_binned(sample, edges, cdf, *, min_expected: float = 5.0) -> GofResult:
    """Chi-square of draws against a CDF on bins ``(-inf, e0], (e0, e1], ..., (e_last, inf)``.

    Parameters
    ----------
    sample : array_like
        The draws (real or integer; non-empty).  NaN raises ValueError;
        ``-inf`` and ``+inf`` fall in the first and last bins.
    edges : array_like
        Finite, strictly increasing bin edges (at least one).  For integer
        draws use half-integers, for a point mass at ``a`` put an edge at
        ``a`` (bins are closed on the right).
    cdf : callable
        ``cdf(x) = P(X <= x)`` for an array of edges: one value per edge, in
        ``[0, 1]`` and non-decreasing (up to rounding, 1e-9), else ValueError.
    min_expected : float
        Pool adjacent bins to at least this expected count.
    """
    x = _finite_array(sample, "sample", allow_inf=True).reshape(-1)
    if x.size == 0:
        raise ValueError("sample is empty")
    e = _finite_array(edges, "edges")
    if e.ndim != 1 or e.size == 0 or np.any(np.diff(e) <= 0):
        raise ValueError("edges must be a strictly increasing, non-empty 1-d array")
    c = np.asarray(cdf(e), dtype=np.float64)
    if c.shape != e.shape:
        raise ValueError(f"cdf must return one value per edge: shape {c.shape} for {e.shape}")
    bad = ~np.isfinite(c) | (c < -_CDF_TOL) | (c > 1 + _CDF_TOL)
    if bad.any():
        i = _first_bad(bad)
        raise ValueError(f"cdf must return probabilities in [0, 1]; "
                         f"got {float(c[i])!r} at edge {float(e[i])!r}")
    drop = np.diff(c) < -_CDF_TOL
    if drop.any():
        i = _first_bad(drop)
        raise ValueError(f"cdf must be non-decreasing; got {float(c[i])!r} at edge {float(e[i])!r} "
                         f"but {float(c[i + 1])!r} at edge {float(e[i + 1])!r}")
    c = np.clip(c, 0.0, 1.0)
    probs = np.diff(np.concatenate([[0.0], c, [1.0]]))
    probs = np.maximum(probs, 0.0)                # rounding only, after the checks above
    idx = np.searchsorted(e, x, side="left")      # x <= e[i] -> bin i
    obs = np.bincount(idx, minlength=len(probs)).astype(np.float64)
    labels = [f"<= {e[0]:.6g}"] + [f"({e[i]:.6g}, {e[i + 1]:.6g}]" for i in range(len(e) - 1)] \
        + [f"> {e[-1]:.6g}"]
    return pooled_chisquare(obs, x.size * probs, min_expected, labels)


def moment_test(sample, mean: float, var: float) -> MomentResult:
    """z-tests of the sample mean and variance against exact values.

    The mean's z-score uses the exact variance; the variance's uses the
    sample's fourth central moment (``Var(s^2) ~ (m4 - var^2) / n``).  Both
    are normal approximations, valid for large samples only.  The mean's
    needs a finite variance and is accurate once ``n`` is large against the
    law's squared skewness (``n >= 1e4`` covers the usual laws).  The
    variance's needs a finite fourth moment (and eighth, for its own
    variance to be estimated well) and is accurate only once ``n`` is large
    against the squared skewness of ``(X - mu)^2``, which grows with the
    kurtosis and the sixth moment.  It is anti-conservative for heavy
    tails: lognormal(0, 1) draws (kurtosis 114) give ``pvalue_var < 0.01``
    in about 6% of exact samples of ``n = 1e4``.  Test such laws
    (lognormal, gamma or NB of small shape, ...) with :func:`gof_binned`
    instead, or with a much larger ``n``.

    The sample must be finite and hold at least two draws; ``mean`` must
    be finite and ``var`` finite and ``>= 0`` (else ValueError).
    """
    x = _finite_array(sample, "sample").reshape(-1)
    mean = _finite_scalar(mean, "mean")
    var = _finite_scalar(var, "var")
    if var < 0:
        raise ValueError(f"var must be >= 0; got {var}")
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
    # the last guard: a NaN p-value fails (``not nan >= alpha``), it never passes
    if np.isnan(result.pvalue):
        raise AssertionError(f"{what}: p-value is NaN ({result})")
    if not result.pvalue >= alpha:
        raise AssertionError(f"{what}: p-value {result.pvalue:.3g} < {alpha:.3g} ({result})")
    return result


def _alpha(alpha) -> float:
    """The level ``alpha`` of an ``assert_*`` check: a real number in ``[0, 1]``, else ValueError."""
    a = _finite_scalar(alpha, "alpha")
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"alpha must be in [0, 1]; got {alpha!r}")
    return a


def assert_gof_discrete(sample, logpmf, alpha: float = 1e-6, **kwargs) -> GofResult:
    """:func:`gof_discrete`, raising AssertionError when ``pvalue < alpha`` (or is NaN);
    ValueError for an ``alpha`` outside ``[0, 1]``."""
    alpha = _alpha(alpha)
    return _check(gof_discrete(sample, logpmf, **kwargs), alpha, "discrete goodness of fit")


def assert_gof_binned(sample, edges, cdf, alpha: float = 1e-6, **kwargs) -> GofResult:
    """:func:`gof_binned`, raising AssertionError when ``pvalue < alpha`` (or is NaN);
    ValueError for an ``alpha`` outside ``[0, 1]``."""
    alpha = _alpha(alpha)
    return _check(gof_binned(sample, edges, cdf, **kwargs), alpha, "binned goodness of fit")


def assert_moments(sample, mean: float, var: float, alpha: float = 1e-6) -> MomentResult:
    """:func:`moment_test`, raising AssertionError when its combined ``pvalue < alpha`` (or is NaN);
    ValueError for an ``alpha`` outside ``[0, 1]``."""
    alpha = _alpha(alpha)
    return _check(moment_test(sample, mean, var), alpha, "moment test")
