# cython: language_level=3
"""Implementations of the C-level kernels declared in ``_kernels.pxd``.

Each kernel draws one variate (or one vector) from a numpy ``bitgen_t``
stream, trusts its arguments and never touches Python objects.  The
algorithms, their sources and the numerics that needed care are described
in ``docs/samplers.md``; the thresholds below select between exact
algorithms for speed only (every branch samples the exact distribution).
"""
from libc.math cimport log, log1p, exp, expm1, sqrt, floor, ceil, fabs, INFINITY, isinf, lgamma, M_LN2, ldexp
from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.stdint cimport int64_t, uint64_t, INT64_MAX
from libc.string cimport memcpy
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport (
    random_poisson, random_binomial, binomial_t, random_standard_exponential,
)

from pygbn.random._pcg64 cimport next_uniform, pcg64_fill_init

from pygbn.random._inline cimport (
    CRT_SMALL_N, crt_skip, crt_skip_from, crt_small, crt_sum, crt_sum16, crt_sum16_scalar,
    crt_band, crt_band_t, crt_sum_decide, gamma_mt, random_gamma_fast,
)
from pygbn.random._special cimport (
    log1mexp, log1pmx, poisson_logpmf, stirlerr,
)

#: whether numbers of the PCG64 streams are formed inline (numpy's numbers, checked at import)
FAST_UNIFORMS = pcg64_fill_init()


# ---------------------------------------------------------------------------
# Switch points (speed only; see tools/bench_samplers.py)
# ---------------------------------------------------------------------------
# numpy's Poisson (PTRS with an absolute-scale log-PMF; measurably wrong from
# lam ~ 1e14) is used below this value; above, our version with a
# relative-scale acceptance test takes over.  (Ours is 1-2.7 ns faster than numpy's
# for a fixed lam from about 1e3, but not inside the samplers that draw through this
# switch: docs/samplers.md.)  (Gamma variates are all ours: pygbn/random/_inline.pxd.)
cdef double POISSON_OWN_LAM = 1e10
# largest Poisson mean a kernel accepts (int64 output); larger means are clipped
cdef double POISSON_LAM_CAP = 9.0e18
# CRT: _inline.crt_small up to n = CRT_SMALL_N (its switches in _inline.pxd); above, for
# r <= 1 the sum then skips for CRT_SUM_SKIP_MIN_R <= r < CRT_SUM_SKIP_R1 and the skips
# otherwise (cheaper than thinning and blocks for every n measured, up to 10^12), the sum
# then skips for r > 1 up to CRT_SUM_SKIP_MAX_R or CRT_SUM_SKIP_MAX_N; beyond, the cheaper
# of the sum then skips and the blocks by a cost model (ns per customer of the sum, per
# point of the skips, per block; measured with tools/bench_samplers.py).  There the skips
# alone and the thinning are never cheaper by the same figures (their costs, 25 (1 + min(n,
# r (1 + log(1 + n / r)))) and 40 (2 + r log(1 + n / r)), exceed the sum's for r > 20 and
# n > 860), so neither is a choice; the inversion, cheaper than the sum for a few
# customers and fewer tables only, is crt_small's.
cdef double CRT_SUM_SKIP_MIN_R = 0.2
cdef double CRT_SUM_SKIP_R1 = 0.9
cdef double CRT_COST_SUM = 0.8
# crt_sum_skip: the sum over about this many customers per unit of r, then the skips
cdef double CRT_PREFIX_R = 16.0
# crt_sum_skip without the cost model for 1 < r <= this, and for r > 1 up to n = this (the
# model's bounds on the other methods' costs, for r > 20 and n >= 65, exceed the sum's there:
# thinning >= 40 (2 + n r / (n + r)), blocks >= 230 (1 + sqrt(5) 2), skips >= 25 (1 + n))
cdef double CRT_SUM_SKIP_MAX_R = 20.0
cdef int64_t CRT_SUM_SKIP_MAX_N = 860
cdef double CRT_COST_SKIP_R = 25.0
# CRT with r above CRT_COMPLEMENT_R_PER_N n + CRT_COMPLEMENT_R0: the customers who join a table,
# by skips (_crt_complement; about 14 ns a point and n^2 / (2 r) points, against the sum's
# 0.45 ns a customer: level at r = 30 n for n = 65 and at 16 n from n = 1,000 on)
cdef double CRT_COMPLEMENT_R_PER_N = 16.0
cdef double CRT_COMPLEMENT_R0 = 1024.0
# ... as long as its expected points, ~n^2 / (2 r), cost (about this many ns each) less
# than the blocks (checked from this n up: below it the complement always costs less)
cdef double CRT_COST_COMPLEMENT = 14.0
cdef int64_t CRT_COMPLEMENT_CHECK_N = 1 << 20
cdef double CRT_COST_BLOCK = 230.0
# CRT block method: expected number of thinning candidates per block
cdef double CRT_BLOCK_C = 4.0
# truncated Poisson: inversion from k = 1 below this lam, rejection of zeros above
cdef double TPOIS_INV_LAM = 1.5
# truncated Bessel: the chop-down below the end of its table (BESSEL_S_ALPHA, below), the
# halved-Poisson rejection above (the chop-down from n = 1 is the faster one up to about 55:
# docs/benchmarks.md, "Twentieth session")
# binomial: inversion (ours, with log1p) when n * min(p, 1-p) is below this
cdef double BINOM_INV_MEAN = 30.0
# binomial: numpy's BTPE up to this n.  Its last acceptance test forms
# (n - m + 1/2) log(z / w) with z, w near n, an error of about n 2^-52 in the log of the
# acceptance ratio (at n = 1e16-1e18 its means are 3-50 standard errors off in 4e5
# draws); above, the order-statistic recursion halves n first (_binomial_halving)
cdef int64_t BINOM_BTPE_MAX_N = 1 << 30
# negative binomial: inversion for means r p / (1 - p) up to this with p <= NB_INV_P (past
# the mode its terms shrink at rate about p: a u that rounding exhausts meets a zero term
# within some 70,000 steps), the gamma-Poisson mixture otherwise (the two cost the same
# at means of 13-20: docs/benchmarks.md, "Twenty-third session")
cdef double NB_INV_MEAN = 12.0
cdef double NB_INV_P = 0.99


cdef inline double _uniform_pos(bitgen_t *bitgen) noexcept nogil:
    """Uniform on (0, 1] (so that its log is finite)."""
    return 1.0 - next_uniform(bitgen)


# ---------------------------------------------------------------------------
# Poisson, gamma and binomial that stay exact for huge parameters
# ---------------------------------------------------------------------------

cdef struct _ptrs_t:
    # Hörmann's PTRS hat for one lam (random_poisson_ptrs, _bessel_poisson)
    double lam, b, a, vr, base, frac, log_invalpha
    int64_t kbase


cdef inline void _ptrs_init(_ptrs_t *p, double lam) noexcept nogil:
    p.lam = lam
    p.b = 0.931 + 2.53 * sqrt(lam)
    p.a = -0.059 + 0.02483 * p.b
    p.vr = 0.9277 - 3.6224 / (p.b - 2.0)
    p.base = floor(lam)
    p.frac = lam - p.base
    p.kbase = <int64_t> p.base
    p.log_invalpha = INFINITY             # formed by the first full test that needs it


cdef inline int64_t _ptrs_draw(bitgen_t *bitgen, _ptrs_t *p, double *v) noexcept nogil:
    """One Poisson(p.lam) variate by PTRS.  ``*v``: the uniform V of the accepted pair
    when the quick test (``us >= 0.07``, ``V <= vr``) accepted it, else -1.  On that
    path V is uniform on [0, vr) given the variate (V is independent of U, which alone
    forms k), so a caller may spend ``V / vr`` as a fresh uniform."""
    cdef double U, V, us, y
    cdef int64_t k, yi
    while True:
        U = next_uniform(bitgen) - 0.5
        V = next_uniform(bitgen)
        us = 0.5 - fabs(U)
        if us <= 0.0:
            continue
        y = floor((2.0 * p.a / us + p.b) * U + p.frac + 0.43)     # k - floor(lam)
        if y < -p.base or y > 4.0e18:
            continue                                         # k < 0, or y beyond a safe cast
        yi = <int64_t> y
        if yi > INT64_MAX - p.kbase:
            continue                                         # k = kbase + yi would overflow int64
        k = p.kbase + yi
        if us >= 0.07 and V <= p.vr:
            v[0] = V
            return k
        if us < 0.013 and V > us:
            continue
        if p.log_invalpha == INFINITY:
            p.log_invalpha = log(1.1239 + 1.1328 / (p.b - 3.4))
        if (log(V) + p.log_invalpha - log(p.a / (us * us) + p.b)
                <= poisson_logpmf(<double> k, p.lam, y - p.frac)):
            v[0] = -1.0
            return k


cdef int64_t random_poisson_ptrs(bitgen_t *bitgen, double lam) noexcept nogil:
    """Poisson(lam) for ``lam >= 10`` by transformed rejection (PTRS).

    Hörmann, W. (1993). The transformed rejection method for generating
    Poisson random variables.  Insurance: Math. Econ. 12, 39-45.  The hat is
    Hörmann's; the acceptance test uses the relative-scale log-PMF
    (``poisson_logpmf``, Loader 2000) and the candidate is formed as
    ``floor(lam) + offset`` in integer arithmetic, so it stays exact up to
    int64 range (numpy's version compares two ~lam*log(lam) sized numbers).
    Candidates beyond ``INT64_MAX`` (possible for lam above ~5e18) are
    rejected before ``floor(lam) + offset`` is formed: the draw is Poisson(lam)
    conditioned on ``k <= INT64_MAX``, which differs from Poisson(lam) by
    less than ``exp(-1e15)`` for every ``lam <= 9e18``.  Needs
    ``10 <= lam < 2**63``.  The log of Hörmann's 1/alpha is formed only when
    a candidate needs the full test (about one in seven).
    """
    cdef _ptrs_t p
    cdef double v
    _ptrs_init(&p, lam)
    return _ptrs_draw(bitgen, &p, &v)


cdef int64_t random_poisson_exact(bitgen_t *bitgen, double lam) noexcept nogil:
    """Poisson(lam) for any ``0 <= lam <= 9e18`` (larger lam is clipped).

    numpy's ``random_poisson`` (multiplication method below 10, PTRS above)
    for ``lam < 1e10``; :c:func:`random_poisson_ptrs` above.
    """
    if not lam > 0.0:
        return 0
    if lam < POISSON_OWN_LAM:
        return random_poisson(bitgen, lam)
    if lam > POISSON_LAM_CAP:
        lam = POISSON_LAM_CAP
    return random_poisson_ptrs(bitgen, lam)


cdef double random_gamma_mt(bitgen_t *bitgen, double a) noexcept nogil:
    """Gam(a, 1) for ``a >= 1`` by Marsaglia & Tsang (2000) with a cancellation-free
    test (:c:func:`pygbn.random._inline.gamma_mt`)."""
    return gamma_mt(bitgen, a)


cdef double random_gamma_exact(bitgen_t *bitgen, double a) noexcept nogil:
    """Gam(a, 1) for any ``a >= 0`` (0 for ``a = 0``): :c:func:`pygbn.random._inline.random_gamma_fast`."""
    return random_gamma_fast(bitgen, a)


cdef inline int64_t _chopdown(bitgen_t *bitgen, double p0, double f, double c, double s,
                              int64_t kmax) noexcept nogil:
    """Chop-down inversion from 0 for a law on 0..kmax with ``P(0) = p0`` and
    ``P(k) = P(k - 1) f (c + s (k - 1)) / k`` (binomial, negative binomial; ``c + s (k - 1)``
    is exact for the binomial's integers and is ``r`` itself at k = 1 for the NB's).

    Subtracts ``P(0), P(1), ...`` from one uniform until it falls below a term;
    draws again if rounding leaves u beyond every term (a term that underflows
    to 0, or k past kmax).
    """
    cdef double u, pk
    cdef int64_t k
    while True:
        u = next_uniform(bitgen)
        pk = p0
        k = 0
        while u > pk:
            u -= pk
            if k >= kmax:
                break
            k += 1
            pk *= f * (c + s * <double> (k - 1)) / <double> k
            if pk <= 0.0:
                break
        else:
            return k


cdef int64_t _binomial_inversion(bitgen_t *bitgen, int64_t n, double p) noexcept nogil:
    """Bin(n, p), ``0 < p <= 1/2``, small ``n p``: chop-down inversion from 0
    (``P(k) = P(k - 1) (p / (1 - p)) (n - (k - 1)) / k``).

    ``P(0) = exp(n log1p(-p))`` (numpy uses ``log(1 - p)``, which is 0 for
    ``p < 1e-16`` however large n is).  Restarts if rounding exhausts u.
    """
    return _chopdown(bitgen, exp(<double> n * log1p(-p)), p / (1.0 - p), <double> n, -1.0, n)


cdef int64_t random_binomial_exact(bitgen_t *bitgen, int64_t n, double p,
                                   binomial_t *state) noexcept nogil:
    """Bin(n, p) for ``n >= 0`` and ``p`` clipped to [0, 1].

    Our inversion (with ``log1p``) when ``n min(p, 1 - p) < 30``, numpy's
    BTPE (Kachitvichyanukul & Schmeiser 1988) otherwise, after
    :c:func:`_binomial_halving` has brought n down to 2^30.  For ``p > 1/2``
    it draws ``n - Bin(n, 1 - p)``; callers that know ``1 - p`` more
    accurately than ``1 - p`` computed in floating point should pass the
    complement themselves.  ``state`` is numpy's per-thread BTPE cache.
    """
    if n <= 0 or not p > 0.0:
        return 0
    if p >= 1.0:
        return n
    if p > 0.5:
        return n - random_binomial_exact(bitgen, n, 1.0 - p, state)
    if <double> n * p < BINOM_INV_MEAN:
        return _binomial_inversion(bitgen, n, p)
    if n > BINOM_BTPE_MAX_N:
        return _binomial_halving(bitgen, n, p, state)
    return random_binomial(bitgen, p, n, state)


cdef int64_t _binomial_halving(bitgen_t *bitgen, int64_t n, double p,
                               binomial_t *state) noexcept nogil:
    """Bin(n, p) for large n by the order-statistic recursion (Knuth, TAOCP 2, 3.4.1 F).

    Bin(n, p) counts n uniforms below p.  The a-th smallest, a = 1 + n // 2, is
    X ~ Beta(a, n + 1 - a) (two gammas); if X >= p the uniforms below p are among the
    a - 1 below X, uniform on (0, X): Bin(a - 1, p / X); else the a below X count,
    and the n - a above are uniform on (X, 1): a + Bin(n - a, (p - X) / (1 - X)).  Each
    step halves n, down to BINOM_BTPE_MAX_N, where :c:func:`random_binomial_exact`
    takes over.  Exact: only ratios of the draws are formed.
    """
    cdef int64_t acc = 0, a
    cdef double ga, gb, x
    while n > BINOM_BTPE_MAX_N:
        a = 1 + n // 2
        ga = random_gamma_exact(bitgen, <double> a)
        gb = random_gamma_exact(bitgen, <double> (n + 1 - a))
        x = ga / (ga + gb)
        if x >= p:
            n = a - 1
            p = p / x
        else:
            acc += a
            n = n - a
            p = (p - x) / (1.0 - x)
    return acc + random_binomial_exact(bitgen, n, p, state)


# ---------------------------------------------------------------------------
# CRT(n, r)
# ---------------------------------------------------------------------------

cdef int64_t _crt_loop(bitgen_t *bitgen, int64_t n, double r) noexcept nogil:
    """CRT(n, r), ``n >= 1``: sum of Bernoulli(r / (r + i)), i = 0..n-1 (O(n))."""
    cdef int64_t i, l = 1
    for i in range(1, n):
        if next_uniform(bitgen) * (r + <double> i) < r:
            l += 1
    return l


cdef int64_t _crt_thinning(bitgen_t *bitgen, int64_t n, double r) noexcept nogil:
    """CRT(n, r), ``n >= 1``, by thinning with geometric skips.

    The Bernoulli probabilities ``p_i = r / (r + i)`` decrease in i.  From
    position i, candidates form a Bernoulli(p_i) process (geometric skips);
    a candidate j is kept with probability ``p_j / p_i`` and the bound is
    refreshed to ``p_{j+1}`` (Devroye 1986, Section VI.3: thinning of
    non-homogeneous processes).  Expected O(1 + r log(n)) candidates.  Never
    cheaper than the sum then skips or the blocks by the cost model's figures,
    so :c:func:`random_crt` does not pick it: kept as an independent check in
    the tests (``_kernel("crt_thinning")``).
    """
    cdef int64_t i = 1, l = 1, j
    cdef double skip
    while i < n:
        # G ~ Geometric(q = r/(r+i)) failures; log(1 - q) = -log1p(r/i)
        skip = log(_uniform_pos(bitgen)) / (-log1p(r / <double> i))
        if skip >= <double> (n - i):
            break
        j = i + <int64_t> skip
        if next_uniform(bitgen) * (r + <double> j) < r + <double> i:
            l += 1
        i = j + 1
    return l


cdef int64_t _crt_complement(bitgen_t *bitgen, int64_t n, double r) noexcept nogil:
    """CRT(n, r), ``n >= 1``, for r far above n: n less the customers who join a table.

    Customer i >= 1 joins an occupied table with probability ``q_i = i / (r + i)``,
    independently.  The cells ``[i, i + 1)`` that hold a point of a Poisson process of
    intensity ``x / r`` on ``x >= 1`` dominate them: a cell holds one with probability
    ``q'_i = 1 - exp(-(2 i + 1) / (2 r)) >= 1 - exp(-i / r) >= (i / r) / (1 + i / r) = q_i``
    (``e^-t <= 1 / (1 + t)``).  The process's next point after x is
    ``sqrt(x^2 + 2 r E)``, E ~ Exp(1); its cell i is kept with probability
    ``q_i / q'_i`` (thinning, Devroye 1986, Section VI.3), at once when
    ``U (2 i + 1) (r + i) < 2 r i`` (as ``q'_i <= (2 i + 1) / (2 r)``), and the search
    goes on from i + 1.  Expected about ``1 + n^2 / (2 r)`` points: O(1) for
    r >= n^2, where the other methods cost O(n) or O(sqrt(r)).
    """
    cdef int64_t joined = 0, i
    cdef double fn = <double> n, x = 1.0, y, fi, u, two_r = 2.0 * r
    while True:
        y = sqrt(x * x + two_r * random_standard_exponential(bitgen))
        if not y < fn:
            return n - joined
        i = <int64_t> y
        if i >= n:
            return n - joined
        fi = <double> i
        u = next_uniform(bitgen) * (r + fi)            # keep when u q'_i < i
        if u * (2.0 * fi + 1.0) < two_r * fi or u * -expm1(-(2.0 * fi + 1.0) / two_r) < fi:
            joined += 1
        x = fi + 1.0


cdef int64_t _crt_blocks(bitgen_t *bitgen, int64_t n, double r) noexcept nogil:
    """CRT(n, r), ``n >= 2``, for large r: binomial blocks with a thinned correction.

    Over a block of indices ``i0 <= i < i1`` write each Bernoulli(p_i) as
    ``a_i OR c_i`` with independent ``a_i ~ Bernoulli(p_lo)``,
    ``p_lo = p_{i1-1}``, and ``c_i ~ Bernoulli(g_i)``,
    ``g_i = (p_i - p_lo) / (1 - p_lo) = r (i1-1-i) / ((r+i)(i1-1))``.
    The c-process is drawn by thinning (few candidates: blocks are sized so
    that ``sum g_i`` is about CRT_BLOCK_C); its set C counts fully, and the
    a's outside C add ``Bin(|block| - |C|, p_lo)``.  Exact; expected
    O(sqrt(r) log(n)) binomial draws.
    """
    cdef int64_t l = 1, i0 = 1, i1, m, c, j, pos, mm
    cdef double rr = r, fi0, t, gmax, skip, disc
    cdef binomial_t state
    state.has_binomial = 0
    while i0 < n:
        fi0 = <double> i0
        # largest block with r m^2 / ((r + i0)(i0 + m)) <= C
        t = CRT_BLOCK_C * (rr + fi0)
        disc = t * t + 4.0 * rr * t * fi0
        mm = <int64_t> ((t + sqrt(disc)) / (2.0 * rr))
        if mm < 2:
            mm = 2
        if mm > n - i0:
            mm = n - i0
        i1 = i0 + mm
        m = mm
        c = 0
        if m >= 2:
            # thinning of c_i over i0 <= i <= i1 - 2 (g_{i1-1} = 0)
            gmax = rr * <double> (i1 - 1 - i0) / ((rr + fi0) * <double> (i1 - 1))
            pos = i0
            while True:
                skip = log(_uniform_pos(bitgen)) / log1p(-gmax)
                if skip >= <double> (i1 - 1 - pos):
                    break
                j = pos + <int64_t> skip
                # keep with g_j / gmax = (i1-1-j)(r+i0) / ((r+j)(i1-1-i0))
                if (next_uniform(bitgen) * (rr + <double> j) * <double> (i1 - 1 - i0)
                        < <double> (i1 - 1 - j) * (rr + fi0)):
                    c += 1
                pos = j + 1
        # a's outside C: Bin(m - c, p_lo), p_lo = r / (r + i1 - 1); near 1 draw the complement
        if rr >= <double> (i1 - 1):
            l += m - random_binomial_exact(bitgen, m - c, <double> (i1 - 1) / (rr + <double> (i1 - 1)),
                                           &state)
        else:
            l += c + random_binomial_exact(bitgen, m - c, rr / (rr + <double> (i1 - 1)), &state)
        i0 = i1
    return l


cdef inline int64_t _crt_prefix(int64_t n, double r) noexcept nogil:
    """Customers 1..m that :c:func:`_crt_sum_skip` gives to the sum: about
    ``CRT_PREFIX_R r`` (where one more customer of the sum costs what the skips'
    expected ``r / m`` points there cost), in whole blocks of 64, at most ``n - 1``;
    for r > 1 all ``n - 1`` when the sum over the rest costs less than the skips'
    expected ``1 + r log(n / m)`` points there (by the cost model's figures, the
    logarithm bounded below by ``(n - m) / n``)."""
    cdef double m = CRT_PREFIX_R * r
    cdef int64_t k
    if m >= <double> (n - 1):
        return n - 1
    k = (<int64_t> (m / 64.0) + 1) * 64
    if k >= n - 1 or (r > 1.0 and CRT_COST_SUM * <double> (n - 1 - k)
                      < CRT_COST_SKIP_R * (1.0 + r * <double> (n - k) / <double> n)):
        return n - 1
    return k


cdef int64_t _crt_sum_skip(bitgen_t *bitgen, int64_t n, double r) noexcept nogil:
    """CRT(n, r), ``n >= 1``, ``0 < r < inf``: customers 0..m by their Bernoulli sum
    (:c:func:`pygbn.random._inline.crt_sum`), where p_i = r / (r + i) is large, and the
    tables of customers m + 1 .. n - 1, where few open one, by the skips of a dominating
    process (:c:func:`pygbn.random._inline.crt_skip_from`); m from :c:func:`_crt_prefix`.
    The customers are independent, so the two counts add."""
    cdef int64_t m = _crt_prefix(n, r)
    return crt_sum(bitgen, m + 1, r) + crt_skip_from(bitgen, n, r, m + 1)


cdef int64_t random_crt(bitgen_t *bitgen, int64_t n, double r) noexcept nogil:
    """l ~ CRT(n, r): number of tables after n customers, concentration r.

    Equals ``sum(rand(n) < r / (r + arange(n)))``.  Conventions: ``n <= 0 -> 0``;
    ``r = +inf -> n``; ``r <= 0`` (the limit r -> 0) ``-> 1``.  Picks the
    cheapest exact algorithm by expected cost.  For n <= 64,
    :c:func:`pygbn.random._inline.crt_small`: the sum of its Bernoulli draws, 16
    bits each (:c:func:`pygbn.random._inline.crt_sum`, most of r >= 0.1),
    inversion over the next new table (n <= 16 with r < 0.2 and r n <= 1.6) or
    closed-form skips of a dominating process, thinned (r < n / 640).  Above:
    for 0.2 <= r < 0.9, for 1 < r <= 20, for r > 1 up to n = 860, and where the
    cost model says so, the sum over the first customers (one block of 64, or
    ~16 r) and the skips after them (:c:func:`_crt_sum_skip`); the skips alone
    for the rest of r <= 1; binomial blocks (large r and n), by the cost model;
    for r > 16 n + 1024, n less the customers who join a table, by skips
    (:c:func:`_crt_complement`), unless its ~n^2 / (2 r) points would cost more than
    the blocks (from n = 2^20 on).  So the expected time is
    O(min(n, log n + r log n, sqrt(r) log n, 1 + n^2 / r)).
    """
    if n <= 0:
        return 0
    if not r > 0.0:
        return 1
    if isinf(r):
        return n
    if n <= CRT_SMALL_N:
        return crt_small(bitgen, n, r)
    if r > CRT_COMPLEMENT_R_PER_N * <double> n + CRT_COMPLEMENT_R0:
        if n < CRT_COMPLEMENT_CHECK_N or _crt_complement_cheaper(n, r):
            return _crt_complement(bitgen, n, r)
        return _crt_by_cost(bitgen, n, r)
    if r <= 1.0:
        if CRT_SUM_SKIP_MIN_R <= r < CRT_SUM_SKIP_R1:
            return _crt_sum_skip(bitgen, n, r)
        return crt_skip(bitgen, n, r)
    if r <= CRT_SUM_SKIP_MAX_R or n <= CRT_SUM_SKIP_MAX_N:
        # the cost model's choice for every n up to this r (the blocks' cost grows slower in
        # n, but overtakes only above it), and for every r up to this n, without its
        # logarithms (20-30 ns)
        return _crt_sum_skip(bitgen, n, r)
    return _crt_by_cost(bitgen, n, r)


cdef inline double _crt_blocks_cost(int64_t n, double r) noexcept nogil:
    """Expected cost of :c:func:`_crt_blocks` by the cost model: ~sqrt(r / C) (2 + log(1 + n/r)) blocks."""
    return CRT_COST_BLOCK * (1.0 + sqrt(r / CRT_BLOCK_C) * (2.0 + log1p(<double> n / r)))


cdef bint _crt_complement_cheaper(int64_t n, double r) noexcept nogil:
    """Whether :c:func:`_crt_complement` (about ``1 + n^2 / (2 r)`` points) is expected to
    cost less than the blocks for this large n (r > 16 n: the sum then skips costs more)."""
    cdef double fn = <double> n
    return CRT_COST_COMPLEMENT * (1.0 + fn * fn / (2.0 * r)) <= _crt_blocks_cost(n, r)


cdef int64_t _crt_by_cost(bitgen_t *bitgen, int64_t n, double r) noexcept nogil:
    """:c:func:`random_crt` for r > 20 and n > 860: the cheaper, by expected cost, of the
    sum then skips (m customers of the sum and ~1 + r log(n / m) points of the skips after
    them) and the blocks (~sqrt(r / C) (2 + log(1 + n/r)) of them)."""
    cdef int64_t m = _crt_prefix(n, r)
    cdef double c_sum = CRT_COST_SUM * <double> m
    if m < n - 1:
        c_sum += CRT_COST_SKIP_R * (1.0 + r * log(<double> n / <double> m))
    if c_sum <= _crt_blocks_cost(n, r):
        return _crt_sum_skip(bitgen, n, r)
    return _crt_blocks(bitgen, n, r)


# ---------------------------------------------------------------------------
# Logarithmic, truncated Poisson, truncated Bessel, PRG, NB
# ---------------------------------------------------------------------------

cdef int64_t random_logarithmic(bitgen_t *bitgen, double p) noexcept nogil:
    """u ~ Log(p), ``P(u) = -p^u / (u log(1 - p))``, by Kemp's (1981) LK algorithm.

    Kemp, A. W. (1981). Efficient generation of logarithmically distributed
    pseudo-random variables.  Appl. Statist. 30, 249-253.  With
    ``q = 1 - (1-p)^U``: ``V >= q`` gives 1, ``q^2 < V < q`` gives 2, and
    otherwise ``floor(1 + log V / log q)``, with ``log q`` computed as
    ``log1mexp(U log1p(-p))``, exact when q is within rounding of 1 (p -> 1);
    so the logs are formed only for the draws above 2.  ``p <= 0`` gives 1
    (the limit).
    """
    cdef double r, V, x, q, e = 0.0, res
    cdef bint small
    if not p > 0.0:
        return 1
    r = log1p(-p)
    while True:
        V = next_uniform(bitgen)
        if V >= p:
            return 1
        if V <= 0.0:
            continue
        x = r * next_uniform(bitgen)
        # q = 1 - e^x and, below, log q as log1mexp(x) forms it (exact when q is within
        # rounding of 1), reusing expm1(x) or exp(x)
        small = x > -M_LN2
        if small:
            q = -expm1(x)
        else:
            e = exp(x)
            q = 1.0 - e
        if V <= q * q:
            # u = floor(1 + log V / log q), which is also right for V > q^2 (where a q
            # rounded to 1 sends it)
            res = floor(1.0 + log(V) / (log(q) if small else log1p(-e)))
            if res >= 9.0e18:
                continue
            return <int64_t> res
        if V >= q:
            return 1
        return 2


cdef int64_t random_truncated_poisson(bitgen_t *bitgen, double lam) noexcept nogil:
    """k ~ Pois_+(lam): ``P(k) = lam^k / (k! (e^lam - 1))``, k >= 1.

    Chop-down inversion from k = 1 with ``P(1) = lam / expm1(lam)`` for
    ``lam < 1.5`` (expected < 2 steps; no underflow for tiny lam), rejection
    of zeros of Poisson(lam) above (acceptance ``1 - e^-lam >= 0.78``).
    ``lam <= 0`` gives 1 (the limit lam -> 0), and so does ``lam < 2^-52``
    (exactly what inversion returns for every 53-bit uniform).
    """
    cdef double u, pk
    cdef int64_t k
    if not lam > 2.220446049250313e-16:
        return 1            # P(k >= 2) < lam / 2 < 2^-53: what inversion returns
    if lam < TPOIS_INV_LAM:
        while True:
            u = next_uniform(bitgen)
            k = 1
            pk = lam / expm1(lam)
            while u > pk:
                u -= pk
                k += 1
                pk *= lam / <double> k
                if pk <= 0.0:
                    break
            else:
                return k
    while True:
        k = random_poisson_exact(bitgen, lam)
        if k > 0:
            return k


cdef double _bessel_logratio(double alpha, int64_t m, int64_t k) noexcept nogil:
    """``log P(k) - log P(m)`` for Bessel_{-1}(alpha), k, m >= 1, stable for huge alpha.

    ``log P(n) = (2n-1) log(alpha/2) - lgamma(n+1) - lgamma(n) - log I_1(alpha)``.
    With ``j = k - m`` and ``h = alpha/2`` it is written as
    ``j [log1p((h-m-1-j)/(m+1+j)) + log1p((h-m-j)/(m+j))] + (j/2)(1/(m+1) + 1/m)
    - (m+1/2) log1pmx(j/(m+1)) - (m-1/2) log1pmx(j/m) - [stirlerr terms]``,
    a sum of small terms (no O(alpha log alpha) cancellation).
    """
    cdef double h = 0.5 * alpha
    cdef double fm = <double> m, fj = <double> (k - m)
    cdef double out
    if m < 64 and k < 64:
        return (2.0 * fj * log(h) - (lgamma(<double> k + 1.0) - lgamma(fm + 1.0))
                - (lgamma(<double> k) - lgamma(fm)))
    out = fj * (log1p((h - fm - 1.0 - fj) / (fm + 1.0 + fj)) + log1p((h - fm - fj) / (fm + fj)))
    out += 0.5 * fj * (1.0 / (fm + 1.0) + 1.0 / fm)
    out -= (fm + 0.5) * log1pmx(fj / (fm + 1.0)) + (fm - 0.5) * log1pmx(fj / fm)
    out -= (stirlerr(fm + 1.0 + fj) - stirlerr(fm + 1.0)) + (stirlerr(fm + fj) - stirlerr(fm))
    return out


cdef int64_t _bessel_mode(double alpha) noexcept nogil:
    """Mode of Bessel_{-1}(alpha): smallest n >= 1 with n (n + 1) > alpha^2 / 4."""
    cdef double h = 0.5 * alpha
    cdef double m = floor(0.5 * (1.0 + sqrt(1.0 + alpha * alpha)))
    if m < 1.0:
        m = 1.0
    # guard against rounding: P(n+1)/P(n) = h^2 / (n (n+1))
    while m > 1.0 and (m - 1.0) * m > h * h:
        m -= 1.0
    while m * (m + 1.0) <= h * h:
        m += 1.0
    return <int64_t> m


# 1 / (k (k - 1)) for 2 <= k < 128: the chop-down multiplies instead of dividing
cdef double _RECIP_KK1[128]
_RECIP_KK1[0] = 0.0
_RECIP_KK1[1] = 0.0
for _k in range(2, 128):
    _RECIP_KK1[_k] = 1.0 / (<double> _k * <double> (_k - 1))


cdef inline double _recip_kk1(int64_t k) noexcept nogil:
    """``1 / (k (k - 1))`` (table below 128)."""
    if k < 128:
        return _RECIP_KK1[k]
    return 1.0 / (<double> k * <double> (k - 1))


# Chop-down normaliser bound: S(y) = sum_{n >= 1} y^(n-1) / (n! (n-1)!) (= I_1(alpha) / (alpha/2)
# at y = (alpha/2)^2), tabulated at alpha = i * BESSEL_S_STEP, i = 0..BESSEL_S_CELLS + 1.  S is a
# power series in y with positive coefficients, so S(alpha^2 / 4) is convex in alpha (a convex
# nondecreasing function of a convex one) and the chord over a cell bounds it from above, by at
# most (step^2 / 8) max S'' / S, about 0.2% of it.
DEF BESSEL_S_CELLS = 400
cdef double BESSEL_S_STEP = 0.125
cdef double BESSEL_S_INV_STEP = 1.0 / BESSEL_S_STEP
# alpha below this use the table
cdef double BESSEL_S_ALPHA = BESSEL_S_CELLS * BESSEL_S_STEP
# relative margin over the rounding of the table and of the chord (a few 2^-53 each): the bound
# stays above the sum of the weights as the search forms them
cdef double BESSEL_S_MARGIN = 1.0 + 2.0 ** -40
cdef double _BESSEL_S[BESSEL_S_CELLS + 2]


cdef double _bessel_series(double y) noexcept nogil:
    """``S(y) = sum_{n >= 1} y^(n-1) / (n! (n-1)!)`` to full precision (positive terms)."""
    cdef double t = 1.0, total = 1.0
    cdef double n = 1.0
    while True:
        t *= y / (n * (n + 1.0))
        n += 1.0
        total += t
        if t <= 1e-18 * total and n * n > y:
            return total


for _k in range(BESSEL_S_CELLS + 2):
    _BESSEL_S[_k] = _bessel_series(0.25 * (_k * BESSEL_S_STEP) ** 2)


def _crt_sum_block(const uint64_t[::1] words, double i0, int64_t m, double r, bit_generator=None,
                   bint scalar=False):
    """The block test of :c:func:`pygbn.random._inline.crt_sum` for customers
    ``i0 + 1 .. i0 + m`` (``m <= 4 len(words)``) whose 16-bit draws are in ``words``
    (tests): ``(sure successes, tie)``; with a numpy ``bit_generator``, the block's
    whole count instead (its undecided draws decided by that stream's uniforms).
    ``scalar``: by the scalar loop alone (what a build without SSE2 runs)."""
    cdef int tie = 0
    cdef int64_t t = 0, u = 0
    cdef bitgen_t *g
    cdef crt_band_t b
    if m > 4 * words.shape[0]:
        raise ValueError(f"m = {m} needs {(m + 3) // 4} words, got {words.shape[0]}")
    if m <= 0:
        if bit_generator is None:
            return 0, False
        return 0
    if scalar:
        crt_band(r, i0, m, &b)
        crt_sum16_scalar(&words[0], i0, 1, m, r, &b, &t, &u)
        tie = u > t
    else:
        t = crt_sum16(&words[0], i0, m, r, &tie)
    if bit_generator is None:
        return t, bool(tie)
    g = <bitgen_t *> PyCapsule_GetPointer(bit_generator.capsule, "BitGenerator")
    if tie:
        t = crt_sum_decide(g, &words[0], i0, m, r)
    return t


def _bessel_chopdown_bound(double alpha):
    """The bound of ``S((alpha/2)^2)`` that :c:func:`_bessel_chopdown` uses for
    ``alpha < BESSEL_S_ALPHA`` (tests)."""
    return _bessel_s_bound(alpha)


cdef inline double _bessel_s_bound(double alpha) noexcept nogil:
    """The chord of the tabulated ``S`` over the cell of alpha, times the margin (``>= S``)."""
    cdef double x = alpha * BESSEL_S_INV_STEP
    cdef int64_t i = <int64_t> x
    cdef double f = x - <double> i
    return (_BESSEL_S[i] + f * (_BESSEL_S[i + 1] - _BESSEL_S[i])) * BESSEL_S_MARGIN


cdef int64_t _bessel_chopdown(bitgen_t *bitgen, double alpha) noexcept nogil:
    """Bessel_{-1}(alpha) by chop-down (sequential) inversion.

    Devroye (1986), Section III.2.  Works on weights, not probabilities:
    ``P(n) / P(n - 1) = (alpha/2)^2 / (n (n - 1))``, and a uniform u on
    ``[0, B)`` for a bound B of their sum; a u beyond the weights (the
    bound's slack; terms below 1e-18 of B dropped) draws again, so the
    result has the law of the weights exactly, whatever the slack.

    * ``alpha < BESSEL_S_ALPHA`` (50): the weights ``y^(n-1) / (n! (n-1)!)``,
      ``y = (alpha/2)^2``, searched upwards from n = 1 (about alpha/2 + 1
      steps, one multiplication each), with B the chord of the tabulated
      convex sum ``S(y)`` (``_bessel_s_bound``): no loop forms the sum and
      no mode is located; about 0.2% of the uniforms draw again.
    * Above: weights relative to the mode, searched alternately outwards
      from it (m, m+1, m-1, m+2, ...), with B their sum, formed upwards
      then downwards from the mode (O(sqrt(alpha)) terms).

    Neither ``I_1`` nor a factorial of the argument is evaluated.  When
    ``(alpha/2)^2 < 2^-53`` the result is 1 (what the search returns for
    every 53-bit uniform).  O(1 + alpha) time below 50, O(1 + sqrt(alpha))
    above: :c:func:`random_truncated_bessel` uses it below ``BESSEL_S_ALPHA``.
    """
    cdef double h2 = 0.25 * alpha * alpha
    cdef double ih2, total, t, u, pu, pl, floor_
    cdef int64_t m, k, ku, kl
    if h2 < 1.1102230246251565e-16:
        return 1
    if alpha < BESSEL_S_ALPHA:
        total = _bessel_s_bound(alpha)
        floor_ = 1e-18 * total
        while True:
            u = next_uniform(bitgen) * total
            pu = 1.0
            ku = 1
            while True:
                if u < pu:
                    return ku
                u -= pu
                ku += 1
                pu *= h2 * _recip_kk1(ku)
                # past the mode the weights decrease: stop below the floor
                if pu <= floor_ and <double> ku * <double> (ku - 1) > h2:
                    break
            # u beyond the weights: draw again
    ih2 = 1.0 / h2
    m = _bessel_mode(alpha)
    # pass 1: the normaliser, upwards then downwards from the mode
    total = 1.0
    t = 1.0
    k = m
    while True:
        k += 1
        t *= h2 * _recip_kk1(k)
        total += t
        if t <= 1e-17 * total:
            break
    t = 1.0
    k = m
    while k > 1:
        t *= (<double> k * <double> (k - 1)) * ih2
        k -= 1
        total += t
        if t <= 1e-17 * total:
            break
    floor_ = 1e-18 * total
    # pass 2: search m, m+1, m-1, m+2, m-2, ...
    while True:
        u = next_uniform(bitgen) * total
        if u < 1.0:
            return m
        u -= 1.0
        pu = 1.0
        pl = 1.0
        ku = m
        kl = m
        while pu > floor_ or (kl > 1 and pl > floor_):
            ku += 1
            pu *= h2 * _recip_kk1(ku)
            if u < pu:
                return ku
            u -= pu
            if kl > 1:
                pl *= (<double> kl * <double> (kl - 1)) * ih2
                kl -= 1
                if u < pl:
                    return kl
                u -= pl
        # rounding left u unused (probability ~1e-16): draw again


cdef inline double _phi_half(double x) noexcept nogil:
    """``lgamma(x + 1/2) - lgamma(x) - log(x) / 2`` for ``x >= 1`` (about ``-1/(8x)``).

    Equals ``x log1pmx(1/(2x)) + stirlerr(x + 1/2) - stirlerr(x)``: no cancellation.
    """
    if x < 16.0:
        return lgamma(x + 0.5) - lgamma(x) - 0.5 * log(x)
    return x * log1pmx(0.5 / x) + stirlerr(x + 0.5) - stirlerr(x)


cdef inline double _bessel_squeeze_c(double h) noexcept nogil:
    """The constant ``c = 1 / (20 h^2)`` of :c:func:`_bessel_squeeze` (formed once a draw)."""
    return 0.05 / (h * h)


cdef inline double _bessel_squeeze(double fn, double nstar, double h, double c) noexcept nogil:
    """A lower bound of ``w(n) / w(n*)`` for :c:func:`_bessel_poisson`: with
    ``j = |n - n*|`` and ``c = 1 / (20 h^2)`` (:c:func:`_bessel_squeeze_c`),
    ``1 - j (4 j + 5) c`` for ``n >= 3 h / 4`` (-1, no bound, below).

    ``log w`` has derivative ``psi(x + 1/2) - psi(x) - 1/(x + h)``, and
    ``1/(2x) <= psi(x + 1/2) - psi(x) <= 1/(2x) + 1/(8x^2)`` for ``x >= 1``.  Right of
    n* (> h) the derivative is at least ``-(x - h) / (4 h^2)``, so
    ``log w(n)/w(n*) >= -j (j + 2) / (8 h^2)``; left of it, integrating the upper
    bound from n to n* gives ``>= -(j^2 / (4 n (n + h)) + j / (8 n n*))``, at least
    ``-(4 j^2 / 21 + j / 6) / h^2`` once ``n >= 3 h / 4``.  Both are at least
    ``-(j^2 / 5 + j / 4) / h^2``, and ``e^L >= 1 + L``.  One formula for both sides:
    a branch on the side, which a random n mispredicts, cost more than the rest.
    """
    cdef double j = fabs(fn - nstar)
    if 4.0 * fn < 3.0 * h:
        return -1.0
    return 1.0 - j * (4.0 * j + 5.0) * c


def _bessel_squeeze_bound(double alpha, double n):
    """The squeeze of :c:func:`_bessel_poisson` at ``n`` for ``alpha`` (tests)."""
    cdef double h = 0.5 * alpha
    return _bessel_squeeze(n, floor(h) + 1.0, h, _bessel_squeeze_c(h))


cdef int64_t _bessel_poisson(bitgen_t *bitgen, double alpha) noexcept nogil:
    """Bessel_{-1}(alpha) by rejection from ``n = ceil(S / 2)``, ``S ~ Poisson(alpha)``.

    With ``h = alpha/2``, ``P(n) ~ h^(2n-1) / (n! (n-1)!)`` is proportional to
    ``Pois(n; h) Pois(n - 1; h)``, the law of X given X - Y = 1 for X, Y iid
    Pois(h) (Yuan & Kalbfleisch 2000, Section 3).  The proposal
    ``q(n) = Pois(2n-1; alpha) + Pois(2n; alpha)`` gives the ratio
    ``P(n) / q(n) ~ w(n) = Gamma(n + 1/2) / (Gamma(n) (n + h))``, which is
    unimodal with maximum at ``n* = floor(h) + 1`` and flat near it
    (``w(n)/w(n*) = 1 - O((n - h)^2 / h^2)``), so the acceptance rate tends
    to 1 as alpha grows (derivation in docs/samplers.md).  The squeeze
    :c:func:`_bessel_squeeze` accepts almost every candidate without a log.

    For ``alpha >= 10`` S is drawn by PTRS here (:c:func:`_ptrs_draw`, the hat
    formed once per call), and when its quick test accepted S, its uniform
    ``V`` (uniform on [0, vr) given S) is the acceptance uniform ``V / vr``:
    one pair of uniforms a draw.  Expected cost about one Poisson(alpha) draw:
    O(1) for every alpha.
    """
    cdef double h = 0.5 * alpha
    cdef double nstar = floor(h) + 1.0
    cdef double c = _bessel_squeeze_c(h)
    cdef double phistar = 0.0, lr, fn, u, v, scale
    cdef bint have_phistar = False
    cdef bint ptrs = alpha >= 10.0
    cdef _ptrs_t p
    cdef int64_t s, n
    if ptrs:
        _ptrs_init(&p, alpha)
    while True:
        v = -1.0
        if ptrs:
            s = _ptrs_draw(bitgen, &p, &v)
        else:
            s = random_poisson_exact(bitgen, alpha)
        if s <= 0:
            continue
        if v >= 0.0:
            scale = p.vr
        else:
            v = next_uniform(bitgen)
            scale = 1.0
        n = (s + 1) // 2
        fn = <double> n
        if v <= scale * _bessel_squeeze(fn, nstar, h, c):
            return n
        u = v / scale
        if not have_phistar:
            phistar = _phi_half(nstar)
            have_phistar = True
        lr = (0.5 * log1p((fn - nstar) / nstar) - log1p((fn - nstar) / (nstar + h))
              + _phi_half(fn) - phistar)
        if log(u) <= lr:
            return n


cdef int64_t _bessel_logconcave(bitgen_t *bitgen, double alpha) noexcept nogil:
    """Bessel_{-1}(alpha) by rejection from a hat built on its log-concavity.

    The PMF is log-concave in n (Devroye 2002, Section 2), so the line through
    ``(b, g(b))`` with slope ``g(b) - g(b-1)`` (b right of the mode) and the
    line through ``(a, g(a))`` with slope ``g(a+1) - g(a)`` (a left of it)
    bound ``g = log P - log P(mode)`` from above (Devroye 1987, "A simple
    generator for discrete log-concave distributions"; Hörmann, Leydold &
    Derflinger 2004, Ch. 10).  The hat is ``min(0, line)`` on each side: a flat
    centre and two geometric tails.  With ``a, b = mode -/+ 1.4 sd`` the
    acceptance rate is about 0.85 for every large alpha (O(1) expected time,
    but four log-PMF evaluations of set-up per call: :c:func:`_bessel_poisson`
    is several times faster and is the one :c:func:`random_truncated_bessel`
    uses; this one is kept as an independent check in the tests).
    """
    cdef int64_t m = _bessel_mode(alpha)
    cdef double sd = 0.5 * sqrt(alpha + 1.0)
    cdef int64_t s = <int64_t> (1.4 * sd + 1.0)
    cdef int64_t a = m - s, b = m + s
    cdef double ga, ga1, gb, gb1, dl, dr, xl, xr, tl, tr, flat, total, u, gk, hk
    cdef int64_t kl, kr, k
    if a < 1:
        a = 1
    gb = _bessel_logratio(alpha, m, b)
    gb1 = _bessel_logratio(alpha, m, b - 1)
    dr = gb - gb1                         # < 0
    xr = b - gb / dr                      # right line crosses 0 here (>= m)
    kr = <int64_t> floor(xr)
    if kr < m:
        kr = m
    if a < m:
        ga = _bessel_logratio(alpha, m, a)
        ga1 = _bessel_logratio(alpha, m, a + 1)
        dl = ga1 - ga                     # > 0
        xl = a - ga / dl
        kl = <int64_t> ceil(xl)
        if kl > m:
            kl = m
        tl = exp(ga + (<double> (kl - 1 - a)) * dl) / (-expm1(-dl))
    else:
        kl = m
        dl = 1.0
        ga = 0.0
        tl = 0.0
    if not (dr < 0.0 and dl > 0.0):
        return _bessel_chopdown(bitgen, alpha)
    tr = exp(gb + (<double> (kr + 1 - b)) * dr) / (-expm1(dr))
    flat = <double> (kr - kl + 1)
    total = flat + tl + tr
    while True:
        u = next_uniform(bitgen) * total
        if u < flat:
            k = kl + <int64_t> u
            if k > kr:
                k = kr
            hk = 0.0
        elif u < flat + tr:
            k = kr + 1 + <int64_t> floor(log(_uniform_pos(bitgen)) / dr)
            hk = gb + (<double> (k - b)) * dr
        else:
            k = kl - 1 - <int64_t> floor(log(_uniform_pos(bitgen)) / (-dl))
            if k < 1:
                continue
            hk = ga + (<double> (k - a)) * dl
        gk = _bessel_logratio(alpha, m, k)
        if log(_uniform_pos(bitgen)) <= gk - hk:
            return k


cdef int64_t random_truncated_bessel(bitgen_t *bitgen, double alpha) noexcept nogil:
    """n ~ Bessel_{-1}(alpha): ``P(n) = (alpha/2)^(2n-1) / (I_1(alpha) n! (n-1)!)``, n >= 1.

    Chop-down inversion from n = 1 for small alpha, rejection from a
    halved Poisson(alpha) draw above (O(1) expected for every alpha).
    ``alpha <= 0`` gives 1 (the limit); alpha above 9e18 (the Poisson
    draw's cap, ``POISSON_LAM_CAP``) is clipped, as the Poisson kernel's mean is.
    """
    if not alpha > 0.0:
        return 1
    if alpha < BESSEL_S_ALPHA:
        return _bessel_chopdown(bitgen, alpha)
    if alpha > POISSON_LAM_CAP:
        alpha = POISSON_LAM_CAP
    return _bessel_poisson(bitgen, alpha)


cdef double random_prg(bitgen_t *bitgen, double lam, double c) noexcept nogil:
    """x ~ PRG(lam, c): ``n ~ Pois(lam)``, ``x ~ Gam(n, 1/c)`` (x = 0 iff n = 0).

    Mass ``exp(-lam)`` at 0; mean ``lam/c``, variance ``2 lam/c^2``.
    """
    cdef int64_t n = random_poisson_exact(bitgen, lam)
    if n == 0:
        return 0.0
    return random_gamma_exact(bitgen, <double> n) / c


cdef inline int64_t _nb_mix(bitgen_t *bitgen, double r, double p) noexcept nogil:
    # the gamma-Poisson mixture Pois(Gam(r, p/(1-p))) (random_nb, _nb_mixture)
    return random_poisson_exact(bitgen, random_gamma_exact(bitgen, r) * (p / (1.0 - p)))


cdef int64_t _nb_inversion(bitgen_t *bitgen, double r, double p) noexcept nogil:
    """NB(r, p), ``r > 0``, ``0 < p < 1``: chop-down inversion from 0.

    ``P(0) = exp(r log1p(-p))``, ``P(k) = P(k - 1) p (r + (k - 1)) / k``; about
    ``1 + r p / (1 - p)`` steps.  Restarts if rounding exhausts u (the terms
    underflow to 0 past the mode, geometrically at rate about p).
    """
    return _chopdown(bitgen, exp(r * log1p(-p)), p, r, 1.0, INT64_MAX)


cdef int64_t random_nb(bitgen_t *bitgen, double r, double p) noexcept nogil:
    """n ~ NB(r, p), paper's parametrisation (mean ``r p / (1 - p)``).

    ``P(n) = Gamma(n + r) / (n! Gamma(r)) p^n (1 - p)^r``.  Chop-down
    inversion (:c:func:`_nb_inversion`) for means up to ``NB_INV_MEAN`` with
    ``p <= NB_INV_P``; otherwise the gamma-Poisson mixture
    ``Pois(Gam(r, p/(1-p)))``.  ``p <= 0`` or ``r <= 0`` gives 0.  (numpy's
    negative_binomial uses ``1 - p``.)
    """
    if not (p > 0.0 and r > 0.0):
        return 0
    if p <= NB_INV_P and r * p <= NB_INV_MEAN * (1.0 - p):
        return _nb_inversion(bitgen, r, p)
    return _nb_mix(bitgen, r, p)


cdef int64_t _nb_mixture(bitgen_t *bitgen, double r, double p) noexcept nogil:
    """NB(r, p), ``r > 0``, ``0 < p < 1``, as the gamma-Poisson mixture ``Pois(Gam(r, p/(1-p)))``
    (:c:func:`random_nb`'s other branch, for tests)."""
    return _nb_mix(bitgen, r, p)


# ---------------------------------------------------------------------------
# Categorical, multinomial split, Dirichlet
# ---------------------------------------------------------------------------

cdef Py_ssize_t random_categorical(bitgen_t *bitgen, const double *w, Py_ssize_t k,
                                   double total) noexcept nogil:
    """Index i with probability ``w[i] / total`` (linear search; rounding -> last positive cell)."""
    cdef double u = next_uniform(bitgen) * total
    cdef double acc = 0.0
    cdef Py_ssize_t i, last = -1
    for i in range(k):
        if w[i] > 0.0:
            acc += w[i]
            last = i
            if u < acc:
                return i
    return last if last >= 0 else 0


cdef void _split_sorted(bitgen_t *bitgen, int64_t n, const double *w, Py_ssize_t k,
                        double total, int64_t *out) noexcept nogil:
    """n categorical draws merged in one pass against the cumulative weights.

    The n uniforms are generated already sorted (ascending order statistics
    by successive ``1 - U^(1/j)`` spacings; Bentley & Saxe 1980), so the cost
    is O(n + k) without a buffer.
    """
    cdef Py_ssize_t i = 0, last = k - 1
    cdef int64_t j
    cdef double v = 0.0, x, acc
    while last > 0 and not w[last] > 0.0:
        last -= 1
    acc = w[0] if w[0] > 0.0 else 0.0
    for j in range(n, 0, -1):
        v += (1.0 - v) * (-expm1(log(_uniform_pos(bitgen)) / <double> j))
        x = v * total
        while x >= acc and i < last:
            i += 1
            if w[i] > 0.0:
                acc += w[i]
        out[i] += 1


cdef void _split_binomial(bitgen_t *bitgen, int64_t n, const double *w, Py_ssize_t k,
                          double total, int64_t *out) noexcept nogil:
    """Conditional binomials: ``out[i] ~ Bin(left, w[i] / rest_i)``, ``rest_i = sum_{j>=i} w[j]``;
    needs ``out`` zeroed (``total`` is not read).

    The ``rest_i`` are summed from the last cell (positive terms, no cancellation), each
    held in the 8 bytes of ``out[i]`` until that cell is drawn: taking the weights off a
    total one by one would lose the cells after a huge weight (``rest`` rounds to 0).  A
    ratio above 1/2 is drawn as ``left - Bin(left, rest_{i+1} / rest_i)``, not through
    ``1 - ratio``, which rounding makes up to 11% wrong for cells of weight 1 after 1e16.
    """
    cdef Py_ssize_t i, j, last = k - 1
    cdef int64_t left = n, x
    cdef double rest = 0.0, after
    cdef binomial_t state
    state.has_binomial = 0
    while last > 0 and not w[last] > 0.0:
        last -= 1
    for i in range(last, -1, -1):
        if w[i] > 0.0:
            rest += w[i]
        memcpy(&out[i], &rest, sizeof(double))
    for i in range(last):
        memcpy(&rest, &out[i], sizeof(double))
        out[i] = 0
        if left == 0:
            for j in range(i + 1, last + 1):
                out[j] = 0
            return
        if w[i] > 0.0:
            memcpy(&after, &out[i + 1], sizeof(double))
            if w[i] <= after:
                x = random_binomial_exact(bitgen, left, w[i] / rest, &state)
            else:   # the ratio above 1/2: its complement from the cells after, not 1 - ratio
                x = left - random_binomial_exact(bitgen, left, after / rest, &state)
            out[i] = x
            left -= x
    out[last] = left


cdef void random_multinomial_split(bitgen_t *bitgen, int64_t n, const double *w,
                                   Py_ssize_t k, double total, int64_t *out) noexcept nogil:
    """``out ~ Multinomial(n, w / total)``; writes all k cells (sum == n).

    Sorted categorical draws when ``n <= k`` (against ``u * total``), conditional
    binomials otherwise (which sum the weights themselves).  Cells with
    ``w[i] <= 0`` get 0; mass lost to rounding goes to the last cell with
    positive weight.  Needs ``total = sum(w) > 0`` unless ``n == 0``, and not so
    small that ``u * total`` is subnormal (the Python sampler rescales such rows).
    """
    cdef Py_ssize_t i
    for i in range(k):
        out[i] = 0
    if n <= 0 or k <= 0:
        return
    if n <= k:
        _split_sorted(bitgen, n, w, k, total, out)
    else:
        _split_binomial(bitgen, n, w, k, total, out)


cdef double random_log_gamma(bitgen_t *bitgen, double a) noexcept nogil:
    """log of a Gam(a, 1) variate, finite for tiny a (``-inf`` for ``a <= 0``).

    ``a >= 1``: ``log(G)``.  ``a < 1``: ``log G(a+1) + log(U) / a``, exact by
    ``G(a) = G(a+1) U^(1/a)`` (Stuart 1962; Marsaglia & Tsang 2000, Section 6).
    """
    if not a > 0.0:
        return -INFINITY
    if a >= 1.0:
        return log(random_gamma_exact(bitgen, a))
    return log(random_gamma_exact(bitgen, a + 1.0)) + log(_uniform_pos(bitgen)) / a


cdef void random_dirichlet(bitgen_t *bitgen, const double *alpha, Py_ssize_t k,
                           double *out) noexcept nogil:
    """``out ~ Dirichlet(alpha)`` (``alpha >= 0``, some positive); finite and on the simplex.

    Normalised gammas; if their sum is below 1e-280 (tiny concentrations make
    gammas underflow) it redraws in log space with :c:func:`random_log_gamma`
    and normalises by log-sum-exp.  Redrawing is exact: ``G / sum(G)`` is
    independent of ``sum(G)`` (Lukacs 1955).  If the sum overflows (concentrations
    near 1e308) the gammas are divided by their largest before they are normalised.
    Components with alpha = 0 are 0.
    """
    cdef Py_ssize_t i, j
    cdef double s = 0.0, mx, atot
    for i in range(k):
        out[i] = random_gamma_exact(bitgen, alpha[i])
        s += out[i]
    if s >= 1e-280:
        if isinf(s):
            # the sum overflowed (concentrations near 1e308): divide by the largest first
            mx = 0.0
            for i in range(k):
                if out[i] > mx:
                    mx = out[i]
            s = 0.0
            for i in range(k):
                out[i] /= mx
                s += out[i]
        for i in range(k):
            out[i] /= s
        return
    mx = -INFINITY
    for i in range(k):
        out[i] = random_log_gamma(bitgen, alpha[i])
        if out[i] > mx:
            mx = out[i]
    if mx == -INFINITY:
        # every log-gamma overflowed to -inf (alpha below ~1e-306): the limit puts all
        # mass on one vertex, chosen with probability alpha[i] / sum(alpha), from the
        # alphas times 2^1000 (exact; u * sum must not be subnormal, which loses bits)
        atot = 0.0
        for i in range(k):
            out[i] = ldexp(alpha[i], 1000)
            atot += out[i]
        i = random_categorical(bitgen, out, k, atot)
        for j in range(k):
            out[j] = 0.0
        out[i] = 1.0
        return
    s = 0.0
    for i in range(k):
        out[i] = exp(out[i] - mx)
        s += out[i]
    for i in range(k):
        out[i] /= s

