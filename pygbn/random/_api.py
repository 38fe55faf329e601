"""Validated, broadcasting Python samplers (thin wrappers over the C kernels).

Every sampler takes its parameters as scalars or arrays (numpy broadcasting),
``size=`` (output shape; the parameters must broadcast to it),
``random_state=`` (None, int, SeedSequence, BitGenerator or Generator; a
Generator is advanced) and ``n_jobs=`` (threads; the draws never depend on
it).  A scalar result is returned as a numpy scalar.  A call whose parameters
are all valid scalars or 0-d arrays (and ``size=None``) skips the arrays and
blocks: the same kernel call on the generator, so the same draw and generator
state, in about 2 us instead of 15; so does a single row of :func:`dirichlet`
or :func:`multinomial_split` (7-8 us instead of 12-18).
"""
from __future__ import annotations

import math

import numpy as np

from pygbn._utils import first_index, scalar_or_array
from pygbn.random import _generators as _gen
from pygbn.random._validate import (
    as_count, as_real, broadcast, draw_one, flat, flat_param, rows, run_blocked,
)

__all__ = [
    "crt", "logarithmic", "truncated_poisson", "truncated_bessel",
    "poisson_randomized_gamma", "negative_binomial", "multinomial_split", "dirichlet",
]

#: Largest Poisson-type mean accepted (keeps int64 draws far from overflow).
LAM_MAX = 1e18
#: multinomial_split divides a row of weights by its max when their sum is below this:
#: the kernels compare u * sum with running sums, which would lose bits where
#: u * sum is subnormal (u >= 2^-100 keeps it normal)
_SPLIT_TINY_SUM = 2.0 ** -900

_SIZE = """Output shape.  Default: the broadcast shape of the parameters."""
#: multinomial_split and dirichlet draw a vector per parameter row
_SIZE_BATCH = """Batch shape: the output has shape ``size + (k,)``.  Default: the
        broadcast shape of the parameters' batch axes."""

_COMMON = """size : int or tuple of ints, optional
        {size}
    random_state : None, int, SeedSequence, BitGenerator or Generator, optional
        Source of randomness (see :func:`pygbn._utils.check_random_state`).
        A Generator is advanced; the same seed gives the same draws.
    n_jobs : int, optional
        Threads for large outputs (None: 1, -1: all cores).  The draws do
        not depend on it: work is cut into fixed blocks, each with its own
        stream spawned from ``random_state``."""


def _doc(f):
    size = _SIZE_BATCH if "{common_batch}" in f.__doc__ else _SIZE
    common = _COMMON.replace("{size}", size)
    f.__doc__ = f.__doc__.replace("{common_batch}", common).replace("{common}", common)
    return f


def _int_sampler(kind, name, params, size, random_state, n_jobs, min_block=None):
    """Shared body of the int64-valued samplers (params: list of (name, array, dtype)).

    A parameter with a single value is passed as one item (read by every
    draw), others as flat arrays of the output's size."""
    names = [p[0] for p in params]
    shape = broadcast(names, [p[1] for p in params], size)
    flats = [flat_param(a, shape, dt) for _, a, dt in params]
    out = np.empty(math.prod(shape), dtype=np.int64)
    fill = {"i_d": _gen.fill_i_d, "i_dd": _gen.fill_i_dd, "i_id": _gen.fill_i_id}[kind]
    kw = {} if min_block is None else {"min_block": min_block}
    run_blocked(lambda s, b, *a: fill(name, s, b, *a), out.shape[0], random_state, n_jobs,
                (*flats, out), **kw)
    return scalar_or_array(out, shape)


@_doc
def crt(n, r, size=None, random_state=None, n_jobs=None):
    r"""Chinese restaurant table count ``l ~ CRT(n, r)``.

    The number of tables occupied by ``n`` customers of a Chinese restaurant
    process with concentration ``r``; the same law as
    ``sum(u[i] < r / (r + i) for i in range(n))`` (paper, Section 2.1: with
    n ~ NB(r, p), l ~ CRT(n, r) is l ~ Pois(-r ln(1 - p)) with n a sum of l
    Log(p) variates, eq:CompoundPo and eq:Po-log).

    .. math:: P(l) = \frac{\Gamma(r)}{\Gamma(n + r)} |s(n, l)| r^l,
              \quad 1 \le l \le n,

    with ``|s(n, l)|`` unsigned Stirling numbers of the first kind;
    mean ``r (psi(n + r) - psi(r))``.

    Parameters
    ----------
    n : int or array_like of ints
        Customers, ``n >= 0`` (integral floats accepted).
    r : float or array_like of floats
        Concentration, ``0 <= r <= inf``.
    {common}

    Returns
    -------
    int64 or ndarray of int64

    Notes
    -----
    Boundary conventions: ``n = 0`` gives 0; ``r = inf`` gives ``n``;
    ``r = 0`` gives 1 for ``n >= 1`` (the limit ``r -> 0``).

    Algorithm: the cheapest, by measured costs, of exact ones: the sum of
    the customers' Bernoulli draws, 16 bits each and four to a vector
    instruction (``O(n)``, most of ``n <= 64``, and the first customers
    of larger n); thinning of a dominating process whose next point has a
    closed form (expected ``O(log n)`` candidates for ``r <= 1``, about
    ``r log n`` above; small r, and the customers after the sum's);
    inversion over the next new table (``O(n)``, small n and r); blocks of
    indices, each one binomial draw plus a thinned correction (expected
    ``O(sqrt(r) log n)``, large r and n); and for r far above n
    (``r > 16 n + 1024``) n less the customers who join a table, by thinned
    skips (expected ``O(1 + n^2 / r)``).  See ``docs/samplers.md``.

    References
    ----------
    Zhou, M. & Carin, L. (2015). Negative binomial process count and mixture
    modeling. IEEE TPAMI 37, 307-320 (the CRT distribution).
    Devroye, L. (1986). Non-Uniform Random Variate Generation, Section VI.3
    (thinning).
    """
    n_a = as_count("n", n)
    r_a = as_real("r", r, low=0, allow_inf=True)
    if size is None and n_a.ndim == 0 and r_a.ndim == 0:     # one draw: no arrays, no blocks
        return np.int64(draw_one(_gen.one_i_id, random_state, n_jobs, "crt", int(n_a), float(r_a)))
    return _int_sampler("i_id", "crt", [("n", n_a, np.int64), ("r", r_a, np.float64)],
                        size, random_state, n_jobs)


@_doc
def logarithmic(p, size=None, random_state=None, n_jobs=None):
    r"""Logarithmic (log-series) variates ``u ~ Log(p)``.

    .. math:: P(u) = \frac{-p^u}{u \ln(1 - p)}, \quad u = 1, 2, \dots

    Mean ``-p / ((1 - p) ln(1 - p))``.

    Parameters
    ----------
    p : float or array_like of floats
        ``0 <= p < 1``; ``p = 0`` gives 1 (the limit).
    {common}

    Returns
    -------
    int64 or ndarray of int64

    Notes
    -----
    Kemp's (1981) LK algorithm (as numpy's ``logseries``), with
    ``log q = log(1 - (1 - p)^U)`` computed by ``log1mexp`` so that draws stay
    exact as ``p -> 1`` (numpy rounds ``q`` first).

    References
    ----------
    Kemp, A. W. (1981). Efficient generation of logarithmically distributed
    pseudo-random variables. Applied Statistics 30, 249-253.
    """
    p_a = as_real("p", p, low=0, high=1, high_open=True)
    if size is None and p_a.ndim == 0:
        return np.int64(draw_one(_gen.one_i_d, random_state, n_jobs, "logarithmic", float(p_a)))
    return _int_sampler("i_d", "logarithmic", [("p", p_a, np.float64)], size, random_state, n_jobs)


@_doc
def truncated_poisson(lam, size=None, random_state=None, n_jobs=None):
    r"""Zero-truncated Poisson variates ``k ~ Pois_+(lam)``.

    .. math:: P(k) = \frac{\lambda^k}{k!\,(e^\lambda - 1)}, \quad k = 1, 2, \dots

    Mean ``lam / (1 - exp(-lam))``.  Used by the Bernoulli-Poisson link
    (paper, eq. Ber-PGBN).

    Parameters
    ----------
    lam : float or array_like of floats
        ``0 <= lam <= 1e18``; ``lam = 0`` gives 1 (the limit).
    {common}

    Returns
    -------
    int64 or ndarray of int64

    Notes
    -----
    Chop-down inversion from ``k = 1`` with ``P(1) = lam / expm1(lam)`` for
    ``lam < 1.5`` (no underflow for ``lam = 1e-300``); rejection of the zeros
    of an exact Poisson draw above (acceptance ``>= 0.78``).  Poisson draws use
    numpy's PTRS up to ``lam = 1e10`` and our PTRS with a relative-scale
    log-PMF above.

    References
    ----------
    Hörmann, W. (1993). The transformed rejection method for generating
    Poisson random variables. Insurance: Math. Econ. 12, 39-45.
    Loader, C. (2000). Fast and accurate computation of binomial probabilities.
    """
    lam_a = as_real("lam", lam, low=0, high=LAM_MAX)
    if size is None and lam_a.ndim == 0:
        return np.int64(draw_one(_gen.one_i_d, random_state, n_jobs, "truncated_poisson",
                                 float(lam_a)))
    return _int_sampler("i_d", "truncated_poisson", [("lam", lam_a, np.float64)],
                        size, random_state, n_jobs)


@_doc
def truncated_bessel(alpha, size=None, random_state=None, n_jobs=None):
    r"""Truncated Bessel variates ``n ~ Bessel_{-1}(alpha)`` (paper, Appendix A).

    .. math:: P(n) = \frac{(\alpha/2)^{2n-1}}{I_1(\alpha)\, n!\, (n-1)!},
              \quad n = 1, 2, \dots

    Mean ``(alpha/2) I_0(alpha) / I_1(alpha)``; ``E[n(n-1)] = alpha^2/4``.
    It is ``1 +`` a Bessel(1, alpha) variate of Yuan & Kalbfleisch (2000).
    Used by the Poisson-randomized-gamma link (paper, eq. Gam-PGBN).

    Parameters
    ----------
    alpha : float or array_like of floats
        ``0 <= alpha <= 1e18``; ``alpha = 0`` gives 1 (the limit).
    {common}

    Returns
    -------
    int64 or ndarray of int64

    Notes
    -----
    ``alpha < 50``: chop-down inversion upwards from 1 on the weights
    ``(alpha/2)^(2n-2) / (n! (n-1)!)``, with a uniform on a tabulated upper
    bound of their sum (a uniform beyond the weights draws again; no Bessel
    function or factorial is evaluated).  Above: rejection from
    ``ceil(S / 2)`` with ``S ~ Poisson(alpha)``, using that
    ``P(n) ~ Pois(n; alpha/2) Pois(n - 1; alpha/2)``; the acceptance ratio
    ``Gamma(n + 1/2) / (Gamma(n) (n + alpha/2))`` is nearly flat, so almost
    every candidate is accepted by a squeeze, with the Poisson draw's own
    uniform as the acceptance uniform where its quick test accepted: the
    expected cost is about one Poisson(alpha) draw, O(1) for every alpha
    (derivation in ``docs/samplers.md``).  ``alpha < 2^-26`` gives 1, exactly what inversion
    gives for every 53-bit uniform.

    References
    ----------
    Devroye, L. (2002). Simulating Bessel random variables. Statistics &
    Probability Letters 57, 249-257.
    Yuan, L. & Kalbfleisch, J. D. (2000). On the Bessel distribution and
    related problems. Ann. Inst. Statist. Math. 52, 438-447.
    """
    a = as_real("alpha", alpha, low=0, high=LAM_MAX)
    if size is None and a.ndim == 0:
        return np.int64(draw_one(_gen.one_i_d, random_state, n_jobs, "truncated_bessel", float(a)))
    return _int_sampler("i_d", "truncated_bessel", [("alpha", a, np.float64)],
                        size, random_state, n_jobs)


@_doc
def poisson_randomized_gamma(lam, c, size=None, random_state=None, n_jobs=None):
    r"""Poisson-randomized gamma variates ``x ~ PRG(lam, c)`` (paper, Appendix A).

    ``n ~ Pois(lam)``, ``x ~ Gam(n, 1/c)`` (shape n, rate c), ``x = 0`` iff
    ``n = 0``: a point mass ``exp(-lam)`` at 0 and, for ``x > 0``, the density

    .. math:: f(x) = e^{-\lambda - c x} \sqrt{\lambda c / x}\;
              I_1\!\left(2\sqrt{\lambda c x}\right).

    Mean ``lam / c``, variance ``2 lam / c^2``.

    Parameters
    ----------
    lam : float or array_like of floats
        ``0 <= lam <= 1e18``; ``lam = 0`` gives 0.
    c : float or array_like of floats
        Rate, ``0 < c < inf``.
    {common}

    Returns
    -------
    float64 or ndarray of float64

    Notes
    -----
    By its mixture; Poisson draws of mean ``>= 1e10`` use our PTRS with a
    relative-scale log-PMF, gamma draws of shape ``>= 1e10`` Marsaglia & Tsang
    (2000) with a cancellation-free acceptance test.

    References
    ----------
    Zhou, M., Cong, Y. & Chen, B. (2016). Augmentable gamma belief networks.
    JMLR 17, Appendix A.
    """
    lam_a = as_real("lam", lam, low=0, high=LAM_MAX)
    c_a = as_real("c", c, low=0, low_open=True)
    if size is None and lam_a.ndim == 0 and c_a.ndim == 0:
        return np.float64(draw_one(_gen.one_prg, random_state, n_jobs, float(lam_a), float(c_a)))
    shape = broadcast(["lam", "c"], [lam_a, c_a], size)
    lf, cf = flat_param(lam_a, shape, np.float64), flat_param(c_a, shape, np.float64)
    out = np.empty(math.prod(shape), dtype=np.float64)
    run_blocked(lambda s, b, *a: _gen.fill_d_dd("prg", s, b, *a), out.shape[0], random_state,
                n_jobs, (lf, cf, out))
    return scalar_or_array(out, shape)


def _nb_too_big(r, p, sqrt):
    """Whether NB(r, p) draws could pass int64: ``p / (1 - p) (r + 10 sqrt(r) + 50) > 9e18``
    (floats with ``math.sqrt``, or arrays with ``np.sqrt``; ``0 <= p < 1``, r finite)."""
    return p / (1.0 - p) * (r + 10 * sqrt(r) + 50) > 9e18


@_doc
def negative_binomial(r, p, size=None, random_state=None, n_jobs=None):
    r"""Negative binomial variates ``n ~ NB(r, p)`` in the paper's parametrisation.

    .. math:: P(n) = \frac{\Gamma(n + r)}{n!\,\Gamma(r)}\, p^n (1 - p)^r,
              \quad n = 0, 1, \dots

    Mean ``r p / (1 - p)``, variance ``r p / (1 - p)^2``.  numpy's
    ``negative_binomial(n, p)`` uses the other ``p``: ours equals numpy's
    with ``p -> 1 - p``.

    Parameters
    ----------
    r : float or array_like of floats
        Dispersion, ``0 <= r < inf``; ``r = 0`` gives 0.
    p : float or array_like of floats
        ``0 <= p < 1``; ``p = 0`` gives 0.
    {common}

    Returns
    -------
    int64 or ndarray of int64

    Raises
    ------
    ValueError
        Also when ``p / (1 - p) * (r + 10 sqrt(r) + 50) > 9e18`` (draws could
        overflow int64).

    Notes
    -----
    Chop-down inversion from 0 (``P(k) = P(k - 1) p (k - 1 + r) / k``) for
    means up to 12 with ``p <= 0.99``; otherwise the gamma-Poisson mixture
    ``Pois(Gam(r, p / (1 - p)))``, with the exact Poisson and gamma kernels
    described in ``docs/samplers.md``.

    References
    ----------
    Zhou, M., Cong, Y. & Chen, B. (2016). Augmentable gamma belief networks.
    JMLR 17, Section 2.1.
    """
    r_a = as_real("r", r, low=0)
    p_a = as_real("p", p, low=0, high=1, high_open=True)
    if size is None and r_a.ndim == 0 and p_a.ndim == 0:
        rv, pv = float(r_a), float(p_a)
        if not _nb_too_big(rv, pv, math.sqrt):
            return np.int64(draw_one(_gen.one_i_dd, random_state, n_jobs, "negative_binomial",
                                     rv, pv))
    shape = broadcast(["r", "p"], [r_a, p_a], None)
    with np.errstate(over="ignore"):             # an infinite bound is too big, not a warning
        too_big = np.broadcast_to(_nb_too_big(r_a, p_a, np.sqrt), shape)
    if too_big.any():
        i = first_index(too_big)
        rv, pv = np.broadcast_to(r_a, too_big.shape)[i], np.broadcast_to(p_a, too_big.shape)[i]
        raise ValueError(f"r and p must keep NB(r, p) within int64 range; got r={float(rv)!r}, "
                         f"p={float(pv)!r}")
    return _int_sampler("i_dd", "negative_binomial",
                        [("r", r_a, np.float64), ("p", p_a, np.float64)], size, random_state, n_jobs)


def _row_batch(name, arr, k_name):
    if arr.ndim == 0:
        raise ValueError(f"{name} must have at least one dimension (the {k_name} axis); got {arr!r}")
    if arr.shape[-1] == 0:
        raise ValueError(f"{name} must have a non-empty last axis; got shape {arr.shape}")


@_doc
def multinomial_split(n, weights, size=None, random_state=None, n_jobs=None):
    r"""Split counts by rows of unnormalised probabilities: ``x ~ Mult(n, w / sum(w))``.

    .. math:: P(x) = \frac{n!}{\prod_i x_i!} \prod_i \left(\frac{w_i}{\sum_j w_j}\right)^{x_i},
              \quad \sum_i x_i = n.

    Parameters
    ----------
    n : int or array_like of ints
        Counts to split, ``n >= 0``; broadcast against ``weights.shape[:-1]``.
    weights : array_like of floats, shape (..., k)
        Non-negative, finite; each row needs a positive sum where ``n > 0``.
    {common_batch}

    Returns
    -------
    ndarray of int64, shape (..., k)
        Every row sums to its ``n``; cells with zero weight get 0.

    Notes
    -----
    ``n <= k``: ``n`` categorical draws generated as sorted uniforms and
    merged against the cumulative weights in one pass (O(n + k)).  ``n > k``:
    conditional binomials ``x_i ~ Bin(n - x_<i, w_i / sum(w_>=i))`` with the
    ratio clipped to [0, 1] (O(k) binomial draws; numpy's BTPE for large
    means, our ``log1p`` inversion for small ones).  One row of ``weights``
    for every count (1-d ``weights``) is not copied; rows that broadcasting
    repeats in a batch of several rows are (as much memory as the output).

    References
    ----------
    Bentley, J. L. & Saxe, J. B. (1980). Generating sorted lists of random
    numbers. ACM TOMS 6, 359-364.
    Kachitvichyanukul, V. & Schmeiser, B. W. (1988). Binomial random variate
    generation. CACM 31, 216-222.
    """
    n_a = as_count("n", n)
    w_a = as_real("weights", weights, low=0)
    _row_batch("weights", w_a, "category")
    k = w_a.shape[-1]
    with np.errstate(over="ignore"):         # an overflowed sum is rescaled, not a warning
        sums = w_a.sum(axis=-1)
    # rows whose sum overflowed, or is so small that u * sum loses bits (subnormal
    # products), are divided by their max: the same proportions, in a safe range
    rescale = np.isinf(sums) | ((sums > 0) & (sums < _SPLIT_TINY_SUM))
    if rescale.any():
        with np.errstate(invalid="ignore"):  # 0 / 0 in all-zero rows that keep their weights
            w_a = np.where(rescale[..., None], w_a / w_a.max(axis=-1, keepdims=True), w_a)
        sums = w_a.sum(axis=-1)
    if size is None and n_a.ndim == 0 and w_a.ndim == 1 and (sums > 0 or n_a == 0):
        out = np.empty(k, dtype=np.int64)         # one row: its kernel call, no blocks
        draw_one(_gen.one_split, random_state, n_jobs, int(n_a), np.ascontiguousarray(w_a),
                 float(sums), out)
        return out
    shape = broadcast(["n", "weights[..., 0]"], [n_a, w_a[..., 0]], size)
    nf = flat(n_a, shape, np.int64)
    wf = rows(w_a, shape)
    total = flat(sums, shape, np.float64)
    bad = (total <= 0) & (nf > 0)
    if bad.any():
        idx = first_index(bad.reshape(shape))
        raise ValueError(f"weights must have a positive sum in every row with n > 0; "
                         f"row {idx} sums to 0 (n={int(nf.reshape(shape)[idx])})")
    out = np.empty((nf.shape[0], k), dtype=np.int64)
    run_blocked(lambda s, b, *a: _gen.fill_split("multinomial_split", s, b, *a), out.shape[0],
                random_state, n_jobs, (nf, wf, total, out), min_block=max(1, 65536 // k))
    return out.reshape(shape + (k,))


@_doc
def dirichlet(alpha, size=None, random_state=None, n_jobs=None):
    r"""Dirichlet vectors ``x ~ Dir(alpha)`` that stay finite and on the simplex.

    .. math:: f(x) = \frac{\Gamma(\sum_i \alpha_i)}{\prod_i \Gamma(\alpha_i)}
              \prod_i x_i^{\alpha_i - 1}.

    Parameters
    ----------
    alpha : array_like of floats, shape (..., k)
        Concentrations, ``0 <= alpha < inf``, each row with a positive entry;
        components with ``alpha = 0`` are 0.
    {common_batch}

    Returns
    -------
    ndarray of float64, shape (..., k)
        Rows are non-negative and sum to 1 (to rounding).

    Notes
    -----
    Normalised gamma variates.  With tiny concentrations (say ``1e-4``) all
    gammas can underflow to 0 and ``0/0`` would follow; then the row is
    redrawn in log space, ``log G(a) = log G(a + 1) + log(U) / a``, and
    normalised by log-sum-exp.  The redraw is exact because ``G / sum(G)``
    is independent of ``sum(G)``.  If even the logs overflow (concentrations
    below ~1e-307) the row is the limit law: one vertex, chosen with
    probability ``alpha_i / sum(alpha)``.

    References
    ----------
    Marsaglia, G. & Tsang, W. W. (2000). A simple method for generating gamma
    variables. ACM TOMS 26, 363-372 (Section 6: shapes below 1).
    Lukacs, E. (1955). A characterization of the gamma distribution. Ann.
    Math. Statist. 26, 319-324.
    """
    a = as_real("alpha", alpha, low=0)
    _row_batch("alpha", a, "component")
    k = a.shape[-1]
    zero_rows = ~(a > 0).any(axis=-1)
    if zero_rows.any():
        idx = first_index(zero_rows)
        raise ValueError(f"alpha must have a positive entry in every row; row {idx} is all zero")
    if size is None and a.ndim == 1:          # one row: its kernel call on the generator
        out = np.empty(k, dtype=np.float64)
        draw_one(_gen.one_dirichlet, random_state, n_jobs, np.ascontiguousarray(a), out)
        return out
    shape = broadcast(["alpha[..., 0]"], [a[..., 0]], size)
    af = rows(a, shape)
    out = np.empty(af.shape, dtype=np.float64)
    run_blocked(lambda s, b, *x: _gen.fill_dirichlet(s, b, *x), out.shape[0], random_state,
                n_jobs, (af, out), min_block=max(1, 65536 // k))
    return out.reshape(shape + (k,))


# ---------------------------------------------------------------------------
# Direct access to single kernels and algorithms (tests and benchmarks only)
# ---------------------------------------------------------------------------

def _kernel(name, *params, size=None, random_state=None, n_jobs=None):
    """Draw from one named kernel with no validation (for tests and benchmarks).

    Names: ``poisson``, ``poisson_ptrs``, ``gamma``, ``gamma_mt``,
    ``gamma_gs``, ``gamma_boost``, ``gamma_fast``, ``gamma_row``, ``log_gamma``,
    ``bessel_chopdown``, ``bessel_poisson``, ``bessel_logconcave`` (one
    parameter); ``crt_loop``, ``crt_inversion``, ``crt_thinning``,
    ``crt_blocks``, ``crt_skip``, ``crt_sum``, ``crt_sum_skip``, ``crt_complement``,
    ``binomial`` (params n, p);
    ``nb_inversion``, ``nb_mixture`` (params r, p); ``split_sorted`` /
    ``split_binomial`` (params n, weights); plus the one-parameter public
    kernels and ``crt`` / ``multinomial_split`` by their sampler names.
    """
    if name in ("split_sorted", "split_binomial", "multinomial_split"):
        n_a = np.asarray(params[0], dtype=np.int64)
        w = np.asarray(params[1], dtype=np.float64)
        k = w.shape[-1]
        shape = np.broadcast_shapes(n_a.shape, w.shape[:-1]) if size is None else tuple(np.atleast_1d(size))
        nf = flat(n_a, shape, np.int64)
        wf = rows(w, shape)
        out = np.empty((nf.shape[0], k), dtype=np.int64)
        run_blocked(lambda s, b, *a: _gen.fill_split(name, s, b, *a), out.shape[0], random_state,
                    n_jobs, (nf, wf, flat(w.sum(axis=-1), shape, np.float64), out),
                    min_block=max(1, 65536 // k))
        return out.reshape(shape + (k,))
    arrays = [np.asarray(p) for p in params]
    shape = np.broadcast_shapes(*[a.shape for a in arrays]) if size is None else tuple(np.atleast_1d(size))
    if name in ("gamma", "gamma_mt", "gamma_gs", "gamma_boost", "gamma_fast", "gamma_row", "log_gamma"):
        af = flat(arrays[0], shape, np.float64)
        out = np.empty(af.shape[0], dtype=np.float64)
        run_blocked(lambda s, b, *a: _gen.fill_d_d(name, s, b, *a), out.shape[0], random_state,
                    n_jobs, (af, out))
        return scalar_or_array(out, shape)
    if name in ("crt", "crt_loop", "crt_inversion", "crt_thinning", "crt_blocks", "crt_skip", "crt_sum",
                "crt_sum_skip", "crt_complement", "binomial"):
        return _int_sampler("i_id", name, [("n", arrays[0], np.int64), ("r", arrays[1], np.float64)],
                            shape, random_state, n_jobs)
    if name in ("negative_binomial", "nb_inversion", "nb_mixture"):
        return _int_sampler("i_dd", name, [("r", arrays[0], np.float64), ("p", arrays[1], np.float64)],
                            shape, random_state, n_jobs)
    return _int_sampler("i_d", name, [("a", arrays[0], np.float64)], shape, random_state, n_jobs)
