"""Exact log-PMFs, log-densities and moments of the distributions in :mod:`pygbn.random`.

These are the references the samplers are tested against, usable on their
own.  Every function broadcasts its arguments (except where noted) and is
written to keep its relative accuracy for tiny and huge parameters: the
Poisson-type and negative binomial log-PMFs use the saddle-point form of
Loader (2000), the Bessel log-PMF is expanded around ``alpha / 2``, the CRT
PMF comes from a log-space recursion.

Conventions, as in :mod:`scipy.stats`: values outside the support (negative,
non-integer or infinite counts, points off the simplex) give ``-inf`` (log) or
0; a NaN value gives NaN; parameters outside their range give NaN (no
warning).  A parameter at the end of its range where a sampler of
:mod:`pygbn.random` returns the limit law gives that law too: a point mass
at 1 for ``logarithmic_*`` at ``p = 0``, ``truncated_poisson_*`` at
``lam = 0`` and ``truncated_bessel_*`` at ``alpha = 0``; at 0 for
``negative_binomial_*`` at ``r = 0`` or ``p = 0``; CRT's at ``n = 0``,
``r = 0`` and ``r = inf``; zero-weight cells and zero concentrations fixed
at 0.

Parametrisations follow the paper (Zhou, Cong & Chen 2016, Section 2.1);
``negative_binomial_*`` uses the paper's ``p`` (mean ``r p / (1 - p)``).
"""
from __future__ import annotations

import numpy as np
from scipy import special

from pygbn._utils import in_range, scalar_or_array

__all__ = [
    "poisson_logpmf",
    "crt_logpmf", "crt_pmf_table", "crt_mean", "crt_var",
    "logarithmic_logpmf", "logarithmic_sf", "logarithmic_mean", "logarithmic_var",
    "truncated_poisson_logpmf", "truncated_poisson_mean", "truncated_poisson_var",
    "truncated_bessel_logpmf", "truncated_bessel_mean", "truncated_bessel_var",
    "prg_logpdf", "prg_log_p0", "prg_cdf", "prg_mean", "prg_var", "PRG_CDF_MAX_LAM",
    "negative_binomial_logpmf", "negative_binomial_mean", "negative_binomial_var",
    "multinomial_logpmf",
    "dirichlet_logpdf", "dirichlet_mean", "dirichlet_var",
]

_LOG_2PI = np.log(2 * np.pi)
_TINY = np.finfo(np.float64).tiny


# ---------------------------------------------------------------------------
# numerical helpers (numpy versions of pygbn/random/_special.pxd)
# ---------------------------------------------------------------------------

def _count_mask(k, low):
    """``(on, nan)``: where ``k`` (float array) is a finite integer ``>= low``, and where it is NaN."""
    with np.errstate(invalid="ignore"):
        on = (k >= low) & (k == np.floor(k)) & (k < np.inf)
    return on, np.isnan(k)


def _log1pmx(x):
    """``log(1 + x) - x``, accurate for small ``|x|``."""
    x = np.asarray(x, dtype=np.float64)
    shape = x.shape
    x = x.reshape(-1)
    out = np.log1p(x) - x
    small = np.abs(x) <= 0.125
    if small.any():
        xs = x[small]
        s = np.zeros_like(xs)
        xk = xs.copy()
        for k in range(2, 40):
            xk = -xk * xs
            s += xk / k
        out[small] = s
    return scalar_or_array(out, shape)


def _log1mexp(x):
    """``log(1 - exp(x))`` for ``x <= 0``."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(x > -np.log(2), np.log(-np.expm1(x)), np.log1p(-np.exp(np.minimum(x, 0))))


def _stirlerr(y):
    """``lgamma(y) - (y - 1/2) log(y) + y - log(2 pi) / 2`` for ``y > 0``."""
    y = np.asarray(y, dtype=np.float64)
    out = np.empty_like(y)
    big = y > 15
    yb = y[big]
    with np.errstate(over="ignore"):      # y * y is inf for y > 1e154 (y2 = 0, as it should)
        y2 = 1.0 / (yb * yb)
    out[big] = (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - y2 / 1188) * y2) * y2) * y2) / yb
    ys = y[~big]
    # log Gamma(y) = -log y - euler y + ... below 1e-300 (scipy's gammaln is inf for a subnormal y)
    out[~big] = (np.where(ys < 1e-300, -np.log(ys), special.gammaln(ys)) - (ys - 0.5) * np.log(ys)
                 + ys - 0.5 * _LOG_2PI)
    return out


def _bd0(x, mu, d, log_mu=None):
    """``x log(x / mu) + mu - x`` with ``d = x - mu`` (Loader 2000); ``log_mu``, if given, is
    ``log mu`` to full accuracy (a subnormal ``mu`` formed as a product holds few bits)."""
    x, mu, d = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (x, mu, d)))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        ratio = x / mu
        # log x - log mu where x / mu or mu is not a normal float (|log(x / mu)| > 708 there)
        log_ratio = np.where((ratio >= _TINY) & (ratio < np.inf) & (mu >= _TINY), np.log(ratio),
                             np.log(x) - (np.log(mu) if log_mu is None else log_mu))
        out = x * log_ratio - d
    small = np.abs(d) < 0.1 * (x + mu)
    if small.any():
        xs, ds, ms = x[small], d[small], mu[small]
        v = ds / (xs + ms)
        s = ds * v
        ej = 2 * xs * v
        v2 = v * v
        for j in range(1, 200):
            ej = ej * v2
            s1 = s + ej / (2 * j + 1)
            if np.all(s1 == s):
                break
            s = s1
        out[small] = s
    return out


def poisson_logpmf(k, lam):
    """``log P(K = k)`` for ``K ~ Poisson(lam)``, accurate for every ``lam >= 0``.

    Saddle-point form ``-stirlerr(k) - bd0(k, lam) - log(2 pi k) / 2``
    (Loader 2000), so huge ``lam`` (1e15) loses no accuracy.  A rate
    outside ``[0, inf)`` (negative, infinite or NaN) gives NaN, as in
    ``scipy.stats.poisson`` (and :func:`truncated_poisson_logpmf`).
    """
    k, lam = np.broadcast_arrays(np.asarray(k, dtype=np.float64), np.asarray(lam, dtype=np.float64))
    out = np.full(k.shape, -np.inf)
    ok = in_range(lam, 0)
    on, nan = _count_mask(k, 0)
    zero = on & ok & (k == 0)
    out[zero] = -lam[zero]
    pos = on & ok & (k >= 1) & (lam > 0)
    if pos.any():
        kp, lp = k[pos], lam[pos]
        out[pos] = -_stirlerr(kp) - _bd0(kp, lp, kp - lp) - 0.5 * (_LOG_2PI + np.log(kp))
    out[~ok | nan] = np.nan
    return scalar_or_array(out)


# ---------------------------------------------------------------------------
# CRT(n, r)
# ---------------------------------------------------------------------------

def crt_pmf_table(n: int, r: float) -> np.ndarray:
    """``log P(l)`` for ``l = 0..n`` of CRT(n, r) (array of length n + 1).

    Log-space recursion over customers: with ``P_i`` the law after ``i``
    customers, ``P_{i+1}(l) = P_i(l) i / (i + r) + P_i(l - 1) r / (i + r)``,
    which is the Stirling recursion ``|s(i+1, l)| = i |s(i, l)| + |s(i, l-1)|``
    normalised.  O(n^2); fine for n up to a few thousand.

    Raises
    ------
    ValueError
        Unless ``n`` is a non-negative integer (an integral float is accepted)
        and ``0 <= r <= inf``.
    """
    params = _crt_params(n, r)
    if params is None:
        raise ValueError(f"crt_pmf_table needs an integer n >= 0 and 0 <= r <= inf; "
                         f"got n={n!r}, r={r!r}")
    n, r = params
    out = np.full(n + 1, -np.inf)
    if n == 0:
        out[0] = 0.0
        return out
    if r == 0:
        out[1] = 0.0
        return out
    if np.isinf(r):
        out[n] = 0.0
        return out
    logp = np.full(n + 1, -np.inf)
    logp[1] = 0.0
    for i in range(1, n):
        stay = -np.log1p(r / i)          # log(i / (i + r))
        new = -np.log1p(i / r)           # log(r / (i + r))
        nxt = np.full(n + 1, -np.inf)
        nxt[1:i + 2] = np.logaddexp(logp[1:i + 2] + stay, logp[0:i + 1] + new)
        logp = nxt
    return logp


def _crt_n(n):
    """``int(n)`` when ``n`` is a non-negative integer (or integral float, or bool), else None."""
    if isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_)):
        ni = int(n)
    else:
        try:
            nf = float(n)
        except (TypeError, ValueError):
            return None
        if not (nf == nf and abs(nf) < np.inf and nf.is_integer()):
            return None
        ni = int(nf)
    return ni if ni >= 0 else None


def _crt_params(n, r):
    """``(int n, float r)`` when ``n`` is a non-negative integer (or integral float) and
    ``0 <= r <= inf``, else None (CRT's parameter range)."""
    ni = _crt_n(n)
    try:
        rf = float(r)
    except (TypeError, ValueError):
        return None
    if ni is None or not rf >= 0:
        return None
    return ni, rf


def _crt_arrays(n, r):
    """``(n, r, ok)`` broadcast, ``ok`` where ``(n, r)`` is in CRT's parameter range (as
    :func:`_crt_params` has it), checked once for the whole arrays; ``int(n[i])`` and
    ``float(r[i])`` are then :func:`_crt_params`'s values wherever ``ok``."""
    n, r = np.broadcast_arrays(np.asarray(n), np.asarray(r, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        if n.dtype.kind in "biu":
            ok = n >= 0
        elif n.dtype.kind == "f":
            ok = _count_mask(n, 0)[0]
        else:                   # Python ints past int64, strings, ...: as float() reads them
            vals = [_crt_n(v) for v in n.flat]
            ok = np.array([v is not None for v in vals], dtype=bool).reshape(n.shape)
            n = np.array([0 if v is None else v for v in vals], dtype=object).reshape(n.shape)
        ok = ok & (r >= 0)
    return n, r, ok


def crt_logpmf(l, n, r):
    """``log P(l)`` for ``l ~ CRT(n, r)``; see :func:`crt_pmf_table` (n up to a few thousand).

    ``n`` not a non-negative integer, or ``r`` outside ``[0, inf]``, gives NaN."""
    l, n, r = np.broadcast_arrays(np.asarray(l, dtype=np.float64), np.asarray(n),
                                  np.asarray(r, dtype=np.float64))
    n, r, ok = _crt_arrays(n, r)
    on, nan = _count_mask(l, 0)
    out = np.where(ok & ~nan, -np.inf, np.nan)
    tables = {}
    for idx in map(tuple, np.argwhere(ok & on)):
        key = (int(n[idx]), float(r[idx]))
        if l[idx] <= key[0]:
            if key not in tables:
                tables[key] = crt_pmf_table(*key)
            out[idx] = tables[key][int(l[idx])]
    return scalar_or_array(out)


def _psi_diff(r, n):
    """``psi(r + n) - psi(r)`` (= sum_{i<n} 1 / (r + i)) without cancellation."""
    r = float(r)
    n = int(n)
    if n <= 100000:
        return float(np.sum(1.0 / (r + np.arange(n, dtype=np.float64))))
    if r >= 1000:
        # psi(x) ~ log x - 1/(2x) - 1/(12x^2) + 1/(120x^4) - 1/(252x^6), in powers of 1/x
        # (no overflow for huge r)
        u, v = 1.0 / r, 1.0 / (r + n)
        return (np.log1p(n / r) + (u - v) / 2 + (u * u - v * v) / 12 - (u ** 4 - v ** 4) / 120)
    return float(special.psi(r + n) - special.psi(r))


def _trigamma_diff(r, n):
    """``psi_1(r) - psi_1(r + n)`` (= sum_{i<n} 1 / (r + i)^2) without cancellation."""
    r = float(r)
    n = int(n)
    if n <= 100000:
        return float(np.sum(1.0 / (r + np.arange(n, dtype=np.float64)) ** 2))
    if r >= 1000:
        # psi_1(x) ~ 1/x + 1/(2x^2) + 1/(6x^3) - 1/(30x^5), in powers of 1/x
        u, v = 1.0 / r, 1.0 / (r + n)
        return (n * u * v + n * (u + v) * u * v / 2 + (u ** 3 - v ** 3) / 6 - (u ** 5 - v ** 5) / 30)
    return float(special.polygamma(1, r) - special.polygamma(1, r + n))


def crt_mean(n, r):
    """Mean ``r (psi(n + r) - psi(r))`` of CRT(n, r) (``= sum_i r / (r + i)``), formed as
    ``1 + r (psi(n + r) - psi(1 + r))`` (customer 0's table apart: no ``1 / r``)."""
    return _crt_map(_crt_mean1, n, r)


def _crt_map(f, n, r):
    """``f(int n, float r)`` where ``(n, r)`` (broadcast) is in CRT's range, NaN elsewhere."""
    n, r, ok = _crt_arrays(n, r)
    out = np.full(n.shape, np.nan)
    out[ok] = [float(f(int(ni), ri)) for ni, ri in zip(n[ok].tolist(), r[ok].tolist())]
    return scalar_or_array(out)


def _crt_mean1(ni, ri):
    if ni == 0:
        return 0.0
    if ri == 0:
        return 1.0
    if np.isinf(ri):
        return ni
    # at most n (the sum of n - 1 terms near one may round above)
    return min(float(ni), 1.0 + (ri * _psi_diff(ri + 1.0, ni - 1) if ni > 1 else 0.0))


def crt_var(n, r):
    """Variance ``mean - r^2 (psi_1(r) - psi_1(n + r))`` of CRT(n, r) (``= sum_i p_i (1 - p_i)``)."""
    return _crt_map(_crt_var1, n, r)


def _crt_var1(ni, ri):
    if ni == 0 or ri == 0 or np.isinf(ri):
        return 0.0
    if ni <= 100000:
        i = np.arange(ni, dtype=np.float64)
        return float(np.sum((ri / (ri + i)) * (i / (ri + i))))
    if ri > 1e150:
        # sum_i r i / (r + i)^2 = sum_i i / r to a relative 2 n / r (r^2 would overflow)
        return (ni * (ni - 1.0) / 2.0) / ri
    if ri < 1.0:
        # customer 0 (p = 1) adds nothing: left out, so no 1 / r
        return ri * _psi_diff(ri + 1.0, ni - 1) - ri * ri * _trigamma_diff(ri + 1.0, ni - 1)
    return ri * _psi_diff(ri, ni) - ri * ri * _trigamma_diff(ri, ni)


# ---------------------------------------------------------------------------
# Logarithmic(p)
# ---------------------------------------------------------------------------

def logarithmic_logpmf(k, p):
    """``log P(k) = k log p - log k - log(-log(1 - p))`` for ``k >= 1``, ``0 < p < 1``.

    Written as ``(k - 1) log p - log k - log1p(-log1pmx(-p) / p)`` so that
    tiny p keeps its relative accuracy (``P(1) = 1 - p/2 + ...``).  At
    ``p = 0`` the limit, the point mass at 1 (what
    :func:`pygbn.random.logarithmic` draws there); ``p`` outside ``[0, 1)``
    gives NaN.
    """
    k, p = np.broadcast_arrays(np.asarray(k, dtype=np.float64), np.asarray(p, dtype=np.float64))
    on, nan = _count_mask(k, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (k - 1) * np.log(p) - np.log(k) - np.log1p(-_log1pmx(-p) / p)
    out = np.where(on, out, -np.inf)
    out = np.where(p == 0, np.where(k == 1, 0.0, -np.inf), out)
    out = np.where(in_range(p, 0, 1, high_open=True) & ~nan, out, np.nan)
    return scalar_or_array(out)


def logarithmic_sf(k, p):
    """``P(X > k)`` for X ~ Log(p) (k and p broadcast), exact for p near 1.

    X takes integer values, so for a real ``k`` ``P(X > k) = P(X > floor(k))``:
    the function is a step function of ``k``, constant on ``[j, j + 1)``
    (``scipy.stats.logser.sf`` up to at least scipy 1.17 instead evaluates
    its closed form at the real ``k``, between ``P(X > j)`` and
    ``P(X > j + 1)``; both agree at integers).  For integer ``k >= 1``,
    ``P(X > k) = (1/L) integral_0^L (1 - exp(-u))^k du`` with ``L = -log(1-p)``
    (from ``sum_{j>k} p^j / j = integral_0^p t^k / (1 - t) dt``), by quadrature.
    At ``p = 0`` the point mass at 1; NaN for ``p`` outside ``[0, 1)`` or a NaN ``k``.
    """
    from scipy import integrate

    k, p = np.broadcast_arrays(np.floor(np.asarray(k, dtype=np.float64)),
                               np.asarray(p, dtype=np.float64))
    out = np.empty(k.shape)
    for idx in np.ndindex(k.shape):
        kk, pp = k[idx], p[idx]
        if not (0 <= pp < 1) or kk != kk:
            out[idx] = np.nan
            continue
        if kk < 1:
            out[idx] = 1.0
            continue
        if pp == 0 or kk == np.inf:
            out[idx] = 0.0
            continue
        L = -np.log1p(-pp)
        # the integrand rises from ~0 to ~1 around u = log(k)
        brk = [b for b in (np.log(kk) - 3, np.log(kk), np.log(kk) + 3) if 0 < b < L]
        val, _ = integrate.quad(lambda u: np.exp(kk * _log1mexp(-u)) if u > 0 else 0.0, 0, L,
                                points=brk or None, limit=200, epsabs=0, epsrel=1e-11)
        out[idx] = val / L
    return scalar_or_array(out)


def logarithmic_mean(p):
    """Mean ``-p / ((1 - p) log(1 - p))`` (1 at ``p = 0``; NaN outside ``[0, 1)``)."""
    p = np.asarray(p, dtype=np.float64)
    ok = in_range(p, 0, 1, high_open=True)
    q = np.where(ok & (p > 0), p, 0.5)
    return scalar_or_array(np.where(ok, np.where(p > 0, -q / ((1 - q) * np.log1p(-q)), 1.0), np.nan))


def logarithmic_var(p):
    """Variance ``-p (p + log(1 - p)) / ((1 - p)^2 log(1 - p)^2)``, formed as the product of
    ``-p / log(1 - p)`` and ``(p + log(1 - p)) / log(1 - p)`` (``p / 2 (1 + p / 6)`` below
    p = 1e-8) over ``(1 - p)^2``, so that tiny p neither underflows nor gives 0 / 0."""
    p = np.asarray(p, dtype=np.float64)
    ok = in_range(p, 0, 1, high_open=True)
    p = np.where(ok, p, 0.5)
    lq = np.log1p(-p)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(p > 0, -p / lq, 1.0)
        t2 = np.where(p < 1e-8, p / 2 * (1 + p / 6), _log1pmx(-p) / lq)
    return scalar_or_array(np.where(ok, t1 * t2 / ((1 - p) * (1 - p)), np.nan))


# ---------------------------------------------------------------------------
# Zero-truncated Poisson(lam)
# ---------------------------------------------------------------------------

def truncated_poisson_logpmf(k, lam):
    """``log P(k) = log Pois(k; lam) - log(1 - exp(-lam))`` for ``k >= 1``.

    At ``lam = 0`` the limit as ``lam -> 0``: the point mass at 1 (``0`` at
    ``k = 1``, ``-inf`` elsewhere), which is also where the mean (1) and the
    variance (0) of :func:`truncated_poisson_mean` and
    :func:`truncated_poisson_var` are taken.  A ``lam`` outside ``[0, inf)``
    (negative, infinite or NaN) gives NaN.
    """
    k, lam = np.broadcast_arrays(np.asarray(k, dtype=np.float64), np.asarray(lam, dtype=np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.asarray(poisson_logpmf(k, lam), dtype=np.float64) - _log1mexp(-lam)
    out = np.where(k >= 1, out, -np.inf)
    out = np.where(lam == 0, np.where(k == 1, 0.0, -np.inf), out)
    out = np.where(in_range(lam, 0) & ~np.isnan(k), out, np.nan)
    return scalar_or_array(out)


def truncated_poisson_mean(lam):
    """Mean ``mu = lam / (1 - exp(-lam))`` (1 at ``lam = 0``; NaN outside ``[0, inf)``)."""
    lam = np.asarray(lam, dtype=np.float64)
    ok = in_range(lam, 0)
    pos = np.where(ok & (lam > 0), lam, 1.0)
    return scalar_or_array(np.where(ok, np.where(lam > 0, pos / -np.expm1(-pos), 1.0), np.nan))


def truncated_poisson_var(lam):
    """Variance ``mu (1 + lam - mu) = mu (1 - lam / expm1(lam))`` (series for tiny lam;
    0 at ``lam = 0``; NaN outside ``[0, inf)``)."""
    lam = np.asarray(lam, dtype=np.float64)
    ok = in_range(lam, 0)
    mu = truncated_poisson_mean(lam)
    lam = np.where(ok, lam, 1.0)
    # 1 - x / (e^x - 1) = x/2 - x^2/12 + x^4/720 - ...
    small = np.where(lam < 1e-3, lam, 0.0)
    series = small / 2 - small ** 2 / 12 + small ** 4 / 720
    with np.errstate(over="ignore"):
        direct = 1 - lam / np.expm1(np.where(lam > 0, lam, 1.0))
    return scalar_or_array(np.where(ok, mu * np.where(lam < 1e-3, series, direct), np.nan))


# ---------------------------------------------------------------------------
# Truncated Bessel Bessel_{-1}(alpha)
# ---------------------------------------------------------------------------

def truncated_bessel_logpmf(n, alpha):
    """``log P(n) = (2n - 1) log(alpha/2) - log n! - log (n-1)! - log I_1(alpha)``, ``n >= 1``.

    Evaluated as ``(2n-1) log1p((alpha/2 - n)/n) + 2n - alpha - log(2 pi)
    - 2 stirlerr(n) - log n - log(i1e(alpha))``, a sum of terms of size
    O(log alpha) instead of O(alpha log alpha) (``log(h / n)`` as
    ``log h - log n`` where ``n > alpha``: ``1 + (h - n) / n`` would lose its
    bits, and round to 0 for ``n > 2^53 h``).  At ``alpha = 0`` the limit,
    the point mass at 1 (what :func:`pygbn.random.truncated_bessel` draws
    there); ``alpha`` outside ``[0, inf)`` gives NaN.
    """
    n, alpha = np.broadcast_arrays(np.asarray(n, dtype=np.float64), np.asarray(alpha, dtype=np.float64))
    out = np.full(n.shape, -np.inf)
    on, nan = _count_mask(n, 1)
    par = in_range(alpha, 0)
    ok = on & par & (alpha > 0)
    nn, aa = n[ok], alpha[ok]
    h = aa / 2
    tiny = aa < 1e-6
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):   # each branch overflows where unused
        log_ratio = np.where(h < nn / 2, np.log(h) - np.log(nn), np.log1p((h - nn) / nn))
        val = ((2 * nn - 1) * log_ratio + (2 * nn - aa) - _LOG_2PI
               - 2 * _stirlerr(nn) - np.log(nn) - np.log(special.i1e(aa)))
        # tiny alpha: log I1 = log h + h^2/2 (i1e underflows towards subnormals); log h as
        # log alpha - log 2 (alpha / 2 may round to 0 for subnormal alpha)
        lh = np.log(aa) - np.log(2.0)
        small = (2 * nn - 1) * lh - special.gammaln(nn + 1) - special.gammaln(nn) - (lh + h * h / 2)
    out[ok] = np.where(tiny, small, val)
    out[par & (alpha == 0) & (n == 1)] = 0.0
    out[~par | nan] = np.nan
    return scalar_or_array(out)


def _bessel_ratio_excess(alpha):
    """``delta = mean - alpha/2 = (alpha/2) (I_0 - I_1) / I_1``, accurate for large alpha."""
    alpha = np.asarray(alpha, dtype=np.float64)
    out = np.empty(alpha.shape)
    direct = alpha <= 1e4
    a = alpha[direct]
    out[direct] = (a / 2) * (special.i0e(a) - special.i1e(a)) / special.i1e(a)
    a = alpha[~direct]
    if a.size:
        # Hankel expansions I_nu(x) ~ e^x / sqrt(2 pi x) sum_k (-1)^k c_k(nu) / x^k
        def coeffs(nu, kmax=10):
            c, out_c = 1.0, [1.0]
            for k in range(1, kmax):
                c *= (4 * nu * nu - (2 * k - 1) ** 2) / (k * 8)
                out_c.append((-1) ** k * c)
            return np.array(out_c)
        c0, c1 = coeffs(0), coeffs(1)
        powers = a[:, None] ** -np.arange(len(c0))[None, :]
        s1 = powers @ c1
        diff = powers[:, 1:] @ (c0[1:] - c1[1:])
        out[~direct] = (a / 2) * diff / s1
    return out


def _bessel_small_moments(alpha):
    """Mean and variance of ``n - 1`` for alpha < 1 by summing the PMF (no cancellation)."""
    n = np.arange(1, 61, dtype=np.float64)
    p = np.exp(truncated_bessel_logpmf(n[None, :], np.asarray(alpha, dtype=np.float64)[:, None]))
    b = n - 1
    m1 = p @ b
    return m1, (p * (b[None, :] - m1[:, None]) ** 2).sum(axis=1)


def truncated_bessel_mean(alpha):
    """Mean ``(alpha/2) I_0(alpha) / I_1(alpha)`` (1 at alpha = 0; NaN outside ``[0, inf)``)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    ok = in_range(alpha, 0).reshape(-1)
    pos = ok & (alpha.reshape(-1) > 0)
    a = np.where(pos, alpha.reshape(-1), 1.0)
    out = a / 2 + _bessel_ratio_excess(a)
    small = (a < 1) & pos
    if small.any():
        out[small] = 1 + _bessel_small_moments(a[small])[0]
    out = np.where(pos, out, np.where(ok, 1.0, np.nan)).reshape(alpha.shape)
    return scalar_or_array(out)


def truncated_bessel_var(alpha):
    """Variance ``alpha^2/4 + mean - mean^2``, evaluated as ``mean - delta (alpha + delta)``.

    ``delta = mean - alpha/2`` comes from the Hankel expansions for large
    alpha; for alpha < 1 the PMF is summed directly.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    ok = in_range(alpha, 0).reshape(-1)
    pos = ok & (alpha.reshape(-1) > 0)
    a = np.where(pos, alpha.reshape(-1), 1.0)
    d = _bessel_ratio_excess(a)
    out = np.asarray((a / 2 + d) - d * (a + d), dtype=np.float64)
    small = pos & (a < 1)
    if small.any():
        out[small] = _bessel_small_moments(a[small])[1]
    out = np.where(pos, out, np.where(ok, 0.0, np.nan)).reshape(alpha.shape)
    return scalar_or_array(out)


# ---------------------------------------------------------------------------
# Poisson-randomized gamma PRG(lam, c)
# ---------------------------------------------------------------------------

def _prg_ok(lam, c):
    """PRG's parameter range: ``0 <= lam < inf``, ``0 < c < inf``."""
    return in_range(lam, 0) & in_range(c, 0, low_open=True)


def prg_log_p0(lam):
    """``log P(x = 0) = -lam`` (NaN for ``lam`` outside ``[0, inf)``)."""
    lam = np.asarray(lam, dtype=np.float64)
    return scalar_or_array(np.where(in_range(lam, 0), -lam, np.nan))


def prg_logpdf(x, lam, c):
    """Log-density of the continuous part of PRG(lam, c) at ``x > 0`` (it integrates to 1 - e^-lam).

    ``f(x) = exp(-lam - c x) sqrt(lam c / x) I_1(2 sqrt(lam c x))`` (sum over
    ``n >= 1`` of ``Pois(n; lam) Gam(x; n, rate c)``), with ``I_1`` scaled.
    ``-inf`` for ``x <= 0`` (the atom at 0 is :func:`prg_log_p0`), ``x = inf``
    and ``lam = 0``; NaN for a NaN ``x`` or parameters outside ``0 <= lam < inf``,
    ``0 < c < inf``.
    """
    x, lam, c = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (x, lam, c)))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        z = 2 * np.sqrt(lam * c * x)
        out = -lam - c * x + 0.5 * np.log(lam * c / x) + np.log(special.i1e(z)) + z
        out = np.where((x > 0) & (x < np.inf) & (lam > 0), out, -np.inf)
    out = np.where(_prg_ok(lam, c) & ~np.isnan(x), out, np.nan)
    return scalar_or_array(out)


#: the largest lam :func:`prg_cdf` sums for (about 24 sqrt(lam) terms per value of x)
PRG_CDF_MAX_LAM = 1e10


def prg_cdf(x, lam: float, c: float):
    """``P(X <= x)`` for X ~ PRG(lam, c) (scalar lam and c; x any shape).

    ``exp(-lam) + sum_n Pois(n; lam) P(Gam(n, rate c) <= x)``, the sum taken
    over the n carrying all but ~1e-20 of the Poisson mass, about
    ``24 sqrt(lam)`` terms for each value of x (lam up to
    :data:`PRG_CDF_MAX_LAM`).  NaN for a NaN ``x`` or parameters outside
    ``0 <= lam < inf``, ``0 < c < inf``.

    Raises
    ------
    ValueError
        If ``lam`` or ``c`` is not a scalar, or ``lam`` is finite and above
        :data:`PRG_CDF_MAX_LAM` (the sum would need too many terms).
    """
    x = np.asarray(x, dtype=np.float64)
    for name, v in (("lam", lam), ("c", c)):
        if np.ndim(v) != 0:
            raise ValueError(f"prg_cdf takes a scalar {name}; got an array of shape {np.shape(v)}")
    lam, c = float(lam), float(c)
    if not _prg_ok(lam, c):
        return scalar_or_array(np.full(x.shape, np.nan))
    if lam > PRG_CDF_MAX_LAM:
        raise ValueError(f"prg_cdf sums about 24 sqrt(lam) Poisson terms and takes lam up to "
                         f"{PRG_CDF_MAX_LAM:g}, got lam={lam:g}")
    sd = np.sqrt(lam)
    lo = max(1, int(lam - 12 * sd - 30))
    hi = int(lam + 12 * sd + 30)
    n = np.arange(lo, hi + 1, dtype=np.float64)
    w = np.exp(np.asarray(poisson_logpmf(n, lam)))
    cx = np.maximum(c * x.reshape(-1), 0.0)
    out = np.empty(cx.shape)
    step = max(1, (1 << 22) // n.size)            # values of x at a time: at most ~2^22 terms
    for i in range(0, cx.size, step):
        out[i:i + step] = np.exp(-lam) + special.gammainc(n[None, :], cx[i:i + step, None]) @ w
    out = np.where(x.reshape(-1) < 0, 0.0, np.minimum(out, 1.0)).reshape(x.shape)
    return scalar_or_array(np.where(np.isnan(x), np.nan, out))


def prg_mean(lam, c):
    """Mean ``lam / c`` (NaN outside ``0 <= lam < inf``, ``0 < c < inf``)."""
    lam, c = np.asarray(lam, dtype=np.float64), np.asarray(c, dtype=np.float64)
    ok = _prg_ok(lam, c)
    with np.errstate(over="ignore"):         # a mean beyond the float range is inf, not a warning
        return scalar_or_array(np.where(ok, lam / np.where(ok, c, 1.0), np.nan))


def prg_var(lam, c):
    """Variance ``2 lam / c^2`` (NaN outside ``0 <= lam < inf``, ``0 < c < inf``)."""
    lam, c = np.asarray(lam, dtype=np.float64), np.asarray(c, dtype=np.float64)
    ok = _prg_ok(lam, c)
    c = np.where(ok, c, 1.0)
    with np.errstate(over="ignore"):
        # divided by c twice: c * c underflows to 0 for c < ~1e-162 (lam = 0 gave NaN, a tiny lam inf)
        return scalar_or_array(np.where(ok, 2 * lam / c / c, np.nan))


# ---------------------------------------------------------------------------
# Negative binomial NB(r, p), paper's parametrisation
# ---------------------------------------------------------------------------

def _nb_ok(r, p):
    """NB's parameter range: ``0 <= r < inf``, ``0 <= p < 1``."""
    return in_range(r, 0) & in_range(p, 0, 1, high_open=True)


def negative_binomial_logpmf(k, r, p):
    """``log P(k) = log Gamma(k + r) - log k! - log Gamma(r) + k log p + r log(1 - p)``.

    In Loader's (2000) saddle-point form, as R's ``dnbinom`` (terms of size
    O(log): huge ``k`` or ``r`` lose no accuracy).  ``r = 0`` or ``p = 0``: the point
    mass at 0; parameters outside ``0 <= r < inf``, ``0 <= p < 1`` give NaN.
    """
    k, r, p = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (k, r, p)))
    on, nan = _count_mask(k, 0)
    ok = _nb_ok(r, p) & ~nan
    out = np.full(k.shape, -np.inf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        live = ok & on & (r > 0) & (p > 0)
        out[live & (k == 0)] = (r * np.log1p(-p))[live & (k == 0)]
        # k < 1e-10 r: Pois(k; r p) (1 - p)^r e^(r p) Gamma(k + r) / (Gamma(r) r^k), the last expanded
        near = live & (k >= 1) & (k < 1e-10 * r)
        kn, rn, pn = k[near], r[near], p[near]
        lam, log_lam = rn * pn, np.log(rn) + np.log(pn)
        out[near] = (-_stirlerr(kn) - _bd0(kn, lam, kn - lam, log_lam) - 0.5 * (_LOG_2PI + np.log(kn))
                     + rn * _log1pmx(-pn) + (kn / rn) * (kn - 1) * (0.5 - (2 * kn - 1) / (12 * rn)))
        pos = live & (k >= 1) & ~near
        kp, rp, pp = k[pos], r[pos], p[pos]
        n, q = kp + rp, 1.0 - pp
        d = rp * pp - kp * q                             # r - n (1 - p) = n p - k
        log_n = np.log(n)
        log_r_over_n = np.where(rp < kp, np.log(rp) - log_n, -np.log1p(kp / rp))
        out[pos] = (log_r_over_n + _stirlerr(n) - _stirlerr(rp) - _stirlerr(kp)
                    - _bd0(rp, n * q, d, log_n + np.log1p(-pp)) - _bd0(kp, n * pp, -d, log_n + np.log(pp))
                    - 0.5 * (_LOG_2PI + np.log(rp) + np.log(kp) - log_n))
    mass0 = ok & ((r == 0) | (p == 0))
    out[mass0] = np.where(k[mass0] == 0, 0.0, -np.inf)
    out[~ok] = np.nan
    return scalar_or_array(out)


def negative_binomial_mean(r, p):
    """Mean ``r p / (1 - p)`` (NaN outside ``0 <= r < inf``, ``0 <= p < 1``)."""
    r, p = np.asarray(r, dtype=np.float64), np.asarray(p, dtype=np.float64)
    ok = _nb_ok(r, p)
    p = np.where(ok, p, 0.5)
    with np.errstate(over="ignore"):         # a mean beyond the float range is inf, not a warning
        return scalar_or_array(np.where(ok, r * p / (1 - p), np.nan))


def negative_binomial_var(r, p):
    """Variance ``r p / (1 - p)^2`` (NaN outside ``0 <= r < inf``, ``0 <= p < 1``)."""
    r, p = np.asarray(r, dtype=np.float64), np.asarray(p, dtype=np.float64)
    ok = _nb_ok(r, p)
    p = np.where(ok, p, 0.5)
    with np.errstate(over="ignore"):
        return scalar_or_array(np.where(ok, r * p / (1 - p) ** 2, np.nan))


# ---------------------------------------------------------------------------
# Multinomial split and Dirichlet
# ---------------------------------------------------------------------------

def multinomial_logpmf(x, weights):
    """``log P(x)`` for ``x ~ Mult(sum(x), w / sum(w))`` along the last axis.

    ``-inf`` unless every cell of ``x`` is a non-negative integer (and 0
    where its weight is 0).  NaN for a NaN in ``x``, or weights that are
    negative, infinite or NaN, or that sum to 0 in a row with ``sum(x) > 0``
    (a row of zero weights splits only ``n = 0``, as
    :func:`pygbn.random.multinomial_split`).
    """
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    x, w = np.broadcast_arrays(x, w)
    on, nan = _count_mask(x, 0)
    w_in = in_range(w, 0)
    w_ok = w_in.all(axis=-1)
    total = np.where(w_in, w, 0.0).sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        prob = w / np.where(total > 0, total, 1.0)
        xs = np.where(on, x, 0.0)
        n = xs.sum(axis=-1)
        out = (special.gammaln(n + 1) - special.gammaln(xs + 1).sum(axis=-1)
               + special.xlogy(xs, prob).sum(axis=-1))
    out = np.where(on.all(axis=-1), out, -np.inf)
    ok = w_ok & ((total[..., 0] > 0) | (n == 0)) & ~nan.any(axis=-1)
    return scalar_or_array(np.where(ok, out, np.nan))


def _dirichlet_alpha(alpha):
    """``(a, ok)``: the concentrations as floats, and per row whether they are in
    range (finite, ``>= 0``, one positive at least; the samplers' rule)."""
    a = np.asarray(alpha, dtype=np.float64)
    good = in_range(a, 0)
    ok = good.all(axis=-1) & (a > 0).any(axis=-1)
    return a, ok


def dirichlet_logpdf(x, alpha):
    """``log f(x) = log Gamma(sum a) - sum log Gamma(a) + sum (a - 1) log x`` (last axis).

    The density of the components with ``a > 0`` on their simplex: ``-inf``
    off it (a negative ``x``, a row not summing to 1 within
    ``max(1e-10, 8 k eps)``, with ``eps`` that of ``x``'s float type, or a
    positive ``x`` where ``a = 0``; :func:`pygbn.random.dirichlet` draws 0
    there).  NaN for a NaN in ``x`` or concentrations outside the samplers'
    range (negative, infinite, NaN, or a row with no positive entry).
    """
    xin = np.asarray(x)
    eps = np.finfo(xin.dtype).eps if xin.dtype.kind == "f" else np.finfo(np.float64).eps
    x, (a, a_ok) = xin.astype(np.float64), _dirichlet_alpha(alpha)
    x, a = np.broadcast_arrays(x, a)
    a_ok = np.broadcast_to(a_ok, x.shape[:-1])
    k = x.shape[-1]
    live = a > 0
    with np.errstate(invalid="ignore"):
        on = ((x >= 0) & (live | (x == 0))).all(axis=-1)
        on &= np.abs(x.sum(axis=-1) - 1) <= max(1e-10, 8 * k * eps)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        av = np.where(live & in_range(a, 0), a, 1.0)
        out = (special.gammaln(np.where(live, av, 0.0).sum(axis=-1))
               - np.where(live, special.gammaln(av), 0.0).sum(axis=-1)
               + np.where(live, special.xlogy(av - 1, np.where(x >= 0, x, 1.0)), 0.0).sum(axis=-1))
    out = np.where(on, out, -np.inf)
    return scalar_or_array(np.where(a_ok & ~np.isnan(x).any(axis=-1), out, np.nan))


def dirichlet_mean(alpha):
    """Mean ``alpha / sum(alpha)`` (NaN in rows outside the range of :func:`dirichlet_logpdf`)."""
    a, ok = _dirichlet_alpha(alpha)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = a / a.sum(axis=-1, keepdims=True)
    return np.where(ok[..., None], out, np.nan)


def dirichlet_var(alpha):
    """Marginal variances ``a (a0 - a) / (a0^2 (a0 + 1))``, formed as
    ``(a / a0) ((a0 - a) / a0) / (a0 + 1)`` (no a0^2 to underflow or overflow;
    NaN in rows outside the range of :func:`dirichlet_logpdf`)."""
    a, ok = _dirichlet_alpha(alpha)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a0 = a.sum(axis=-1, keepdims=True)
        out = (a / a0) * ((a0 - a) / a0) / (a0 + 1)
    return np.where(ok[..., None], out, np.nan)
