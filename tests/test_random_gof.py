"""Goodness of fit of every discrete sampler against its exact PMF.

Each grid runs from tiny to huge parameters and straddles every algorithm
switch point; single algorithms behind a switch are also tested on their
own (``pygbn.random._api._kernel``).  Draws: 10^6 per point for cheap
samplers (enough to catch a 1% error in a probability near the mode), 10^5
for the expensive ones.  Fixed seeds make the suite deterministic; the level
``ALPHA = 1e-5`` per check is a Bonferroni split of 1e-3 over the ~100
statistical checks of the suite.  Where nearly all mass sits on one value,
:func:`pygbn.testing.gof_discrete` switches to an exact binomial test.
"""
import zlib

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import pygbn.random as R
from pygbn import stats as S
from pygbn.random._api import _kernel
from pygbn.testing import assert_gof_discrete, gof_discrete

ALPHA = 1e-5
N_CHEAP = 10**6
N_DEAR = 10**5


def seed(*key):
    return zlib.crc32(repr(key).encode())


# --- truncated Poisson: inversion below lam = 1.5, rejection of zeros above -----

@pytest.mark.parametrize("lam", [1e-300, 1e-17, 3e-16, 1e-8, 1e-3, 0.1, 0.7, 1.4999, 1.5001,
                                 3.0, 9.99, 10.01, 47.0, 1e3, 1e5])
def test_truncated_poisson_gof(lam):
    x = R.truncated_poisson(lam, size=N_CHEAP, random_state=seed("tpois", lam))
    assert x.dtype == np.int64 and x.min() >= 1
    assert_gof_discrete(x, lambda k: S.truncated_poisson_logpmf(k, lam), alpha=ALPHA)


# --- logarithmic ---------------------------------------------------------------

@pytest.mark.parametrize("p", [1e-300, 1e-12, 1e-4, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999])
def test_logarithmic_gof(p):
    x = R.logarithmic(p, size=N_CHEAP, random_state=seed("log", p))
    assert x.min() >= 1
    assert_gof_discrete(x, lambda k: S.logarithmic_logpmf(k, p), alpha=ALPHA)


def test_logarithmic_p_zero_is_one():
    assert np.all(R.logarithmic(0.0, size=1000, random_state=1) == 1)


# --- truncated Bessel: chop-down below alpha = 50, halved-Poisson rejection above ---

@pytest.mark.parametrize("alpha", [1e-300, 1e-9, 2.2e-8, 1e-4, 0.01, 0.3, 1.0, 3.0, 8.0,
                                   19.99, 20.01, 45.0, 49.99, 50.01, 300.0, 1e4, 1e6])
def test_truncated_bessel_gof(alpha):
    x = R.truncated_bessel(alpha, size=N_CHEAP, random_state=seed("bessel", alpha))
    assert x.min() >= 1
    assert_gof_discrete(x, lambda k: S.truncated_bessel_logpmf(k, alpha), alpha=ALPHA)


@pytest.mark.parametrize("algorithm,alpha", [
    ("bessel_chopdown", 0.05), ("bessel_chopdown", 0.1249), ("bessel_chopdown", 5.0),
    ("bessel_chopdown", 33.3), ("bessel_chopdown", 49.95), ("bessel_chopdown", 60.0),
    ("bessel_chopdown", 2000.0),
    ("bessel_poisson", 0.8), ("bessel_poisson", 5.0), ("bessel_poisson", 9.99),
    ("bessel_poisson", 10.0), ("bessel_poisson", 12.0), ("bessel_poisson", 20.0),
    ("bessel_poisson", 60.0), ("bessel_poisson", 2000.0),
    ("bessel_logconcave", 5.0), ("bessel_logconcave", 60.0), ("bessel_logconcave", 2000.0),
])
def test_truncated_bessel_single_algorithms(algorithm, alpha):
    # the halved-Poisson rejection is cheap: 2 10^6 draws, enough to see PTRS's uniform
    # spent as the acceptance uniform without its scale 1 / vr at alpha = 10-20
    size = 2 * N_CHEAP if algorithm == "bessel_poisson" else N_DEAR * 3
    x = _kernel(algorithm, alpha, size=size, random_state=seed(algorithm, alpha))
    assert_gof_discrete(x, lambda k: S.truncated_bessel_logpmf(k, alpha), alpha=ALPHA)


@pytest.mark.parametrize("alpha", [10.0, 12.0, 20.0, 51.0, 300.0, 1e4, 1e8, 1e12, 1e18])
def test_bessel_squeeze_is_below_the_acceptance_ratio(alpha):
    # _bessel_poisson accepts n at once when its uniform is below the squeeze: the squeeze
    # must not exceed w(n) / w(n*), w(n) = Gamma(n + 1/2) / (Gamma(n) (n + h)), anywhere
    # it is formed (n >= 3 h / 4), else the draws lean towards the proposal (beyond the
    # rounding of 1 - 1e-22 to 1, below the 53-bit uniform's resolution)
    mpmath = pytest.importorskip("mpmath")
    from pygbn.random._kernels import _bessel_squeeze_bound
    h = alpha / 2
    nstar = np.floor(h) + 1
    sd = np.sqrt(h / 2)
    offsets = np.unique(np.concatenate([np.arange(-12, 13), np.round(sd * np.linspace(-12, 12, 49))]))
    ns = np.unique(np.concatenate([nstar + offsets, [np.ceil(0.75 * h), np.ceil(0.75 * h) - 1]]))
    ns = ns[ns >= 1]

    def ratio_to_mode(n):
        with mpmath.workdps(60):
            def logw(m):
                m = mpmath.mpf(int(m))
                return mpmath.loggamma(m + 0.5) - mpmath.loggamma(m) - mpmath.log(m + mpmath.mpf(h))
            return mpmath.exp(logw(n) - logw(nstar))

    formed = 0
    for n in ns:
        bound = _bessel_squeeze_bound(alpha, float(n))
        if 4 * n < 3 * h:
            assert bound == -1.0
            continue
        ratio = ratio_to_mode(n)
        assert bound <= ratio + 2.0**-53, (alpha, n, bound, ratio)
        if abs(n - nstar) <= 3 * sd:
            formed += 1
            # and where the draws fall it accepts nearly all of them (misses under 2 / h)
            assert bound >= 1 - 2 / h, (alpha, n, bound)
    assert formed >= 7
    assert _bessel_squeeze_bound(alpha, float(nstar)) == 1.0


def test_bessel_chopdown_bound_is_above_the_sum_and_close():
    # below alpha = 50 the chop-down draws u on [0, B) for B the chord of the tabulated
    # S(y) = I_1(alpha) / (alpha / 2): B must not fall below S (else the top of the law is cut
    # off) and its slack is the share of uniforms that draw again
    from scipy.special import ive
    from pygbn.random._kernels import _bessel_chopdown_bound
    alpha = np.concatenate([np.linspace(1e-3, 49.999, 20011), np.arange(1, 400) * 0.125,
                            [1e-8, 0.0625, 49.9999999]])
    exact = ive(1, alpha) * np.exp(alpha) / (alpha / 2)
    exact[alpha < 1e-6] = 1.0 + alpha[alpha < 1e-6] ** 2 / 8
    bound = np.array([_bessel_chopdown_bound(a) for a in alpha])
    ratio = bound / exact
    assert ratio.min() > 1.0 + 1e-13
    assert ratio.max() < 1.0025


# --- CRT: loop / thinning / blocks, chosen by a cost model -------------------

CRT_GRID = [(1, 0.5), (2, 1e-300), (2, 0.3), (5, 1e-3), (16, 2.0), (17, 2.0), (17, 1e4),
            (40, 0.05), (40, 1.0), (40, 30.0), (200, 0.5), (200, 8.0), (200, 200.0),
            (1000, 1e-2), (1000, 3.0), (1000, 60.0), (1000, 1e5), (2500, 1.0), (2500, 400.0),
            # either side of r = 1 (crt_skip / the sum then skips or the cost model) and of n = 1000
            (20, 1.0), (20, 1.0 - 2.0**-52), (20, 1.0 + 2.0**-52), (100, 1.5), (1000, 0.999),
            (1001, 0.999), (2500, 1e-3),
            # either side of n = 860 for r > 20 (the sum then skips / the cost model)
            (860, 30.0), (861, 30.0),
            # either side of r = 16 n + 1024 (the cost model or the sum / the complement)
            (65, 2064.0), (65, 2064.5), (1000, 17024.0), (1000, 17030.0), (300, 1e6),
            (2500, 1e8), (200, 1e300)]


@pytest.mark.parametrize("n,r", CRT_GRID)
def test_crt_gof(n, r):
    x = R.crt(n, r, size=N_DEAR * 3, random_state=seed("crt", n, r))
    assert x.min() >= 1 and x.max() <= n
    table = S.crt_pmf_table(n, r)
    assert_gof_discrete(x, lambda l: table[np.clip(l, 0, n)] + np.where(l > n, -np.inf, 0),
                        support=(0, n), alpha=ALPHA)


@pytest.mark.parametrize("algorithm", ["crt_loop", "crt_inversion", "crt_thinning", "crt_blocks",
                                       "crt_skip", "crt_sum", "crt_sum_skip"])
@pytest.mark.parametrize("n,r", [(2, 0.7), (9, 1e-3), (30, 1.0), (30, 500.0), (300, 0.2),
                                 (300, 12.0), (1500, 2.0), (1500, 90.0)])
def test_crt_single_algorithms(algorithm, n, r):
    size = N_DEAR if not (algorithm in ("crt_loop", "crt_inversion") and n > 1000) else N_DEAR // 2
    x = _kernel(algorithm, n, r, size=size, random_state=seed(algorithm, n, r))
    table = S.crt_pmf_table(n, r)
    assert_gof_discrete(x, lambda l: table[np.clip(l, 0, n)], support=(0, n), alpha=ALPHA)


@pytest.mark.parametrize("n,r", [(2, 0.7), (30, 1.0), (30, 30.0), (300, 300.0), (300, 1e4),
                                 (1500, 1e5), (5000, 1e9)])
def test_crt_complement(n, r):
    """n less the customers who join a table, by thinned cells of the intensity x / r
    process: exact for every r (its points are n^2 / (2 r), so only tested where few)."""
    x = _kernel("crt_complement", n, r, size=N_DEAR * 3, random_state=seed("crt_complement", n, r))
    table = S.crt_pmf_table(n, r)
    assert_gof_discrete(x, lambda l: table[np.clip(l, 0, n)], support=(0, n), alpha=ALPHA)


@pytest.mark.parametrize("n,r", [(10**9, 1e15), (10**8, 1e12), (10**12, 1e22)])
def test_crt_huge_r_by_moments(n, r):
    # r far above n: a few joiners among n customers, each draw O(1 + n^2 / r) (was O(n))
    x = R.crt(n, r, size=N_DEAR, random_state=seed("crt_huge_r", n, r))
    joined = n - x
    m, v = n - S.crt_mean(n, r), S.crt_var(n, r)
    assert abs(joined.mean() - m) < 5 * np.sqrt(v / x.size)
    assert abs(joined.var() / v - 1) < 5 * np.sqrt(2 / x.size) + 0.01


@pytest.mark.parametrize("n,r", [(2, 1.0), (7, 1.0), (64, 1.0), (64, 0.999999), (64, 0.31),
                                 (64, 0.29), (3, 1e-3), (64, 0.02), (1000, 0.05),
                                 (64, 1.000001), (12, 3.0), (64, 1.2), (64, 40.0)])
def test_crt_skip_branches(n, r):
    """crt_skip's branches: r = 1 (every point kept, no uniform), 0.3 <= r < 1 (points
    of the r = 1 law thinned), r < 0.3 (cells of the intensity r / (x - 1 + r) process),
    r > 1 (cells of the intensity r / x process); in the last two, small cells are
    decided by the squeeze and by the exact acceptance test."""
    x = _kernel("crt_skip", n, r, size=N_DEAR * 2, random_state=seed("crt_skip", n, r))
    table = S.crt_pmf_table(n, r)
    assert_gof_discrete(x, lambda l: table[np.clip(l, 0, n)], support=(0, n), alpha=ALPHA)


@pytest.mark.parametrize("n,r", [(2, 0.2), (5, 3.0), (9, 0.6), (10, 1e6), (17, 1e-300), (64, 10.0),
                                 (65, 2.0), (66, 0.25), (130, 7.0), (131, 1.5)])
def test_crt_sum_blocks(n, r):
    """crt_sum: customers alone (n <= 8) and eight at a time, a partial group, whole and
    partial blocks of 64; r so large that every draw succeeds and so small that every
    threshold is below one (each zero draw is undecided and draws a uniform)."""
    x = _kernel("crt_sum", n, r, size=N_DEAR * 2, random_state=seed("crt_sum", n, r))
    table = S.crt_pmf_table(n, r)
    assert_gof_discrete(x, lambda l: table[np.clip(l, 0, n)], support=(0, n), alpha=ALPHA)


@pytest.mark.parametrize("n,r", [(66, 0.5), (129, 0.25), (200, 4.0), (400, 3.0), (1000, 10.0),
                                 (5000, 0.5), (5000, 0.1), (5000, 2.5)])
def test_crt_sum_skip(n, r):
    """crt_sum_skip: the sum over customers 0..m (whole blocks of 64, about 16 r, or all of
    them where the rest is short: n = 200, r = 4), then the skips from customer m + 1 (one
    customer only at n = 66; each branch of crt_skip_from started past 1: r > 1,
    0.3 <= r <= 1, r < 0.3)."""
    x = _kernel("crt_sum_skip", n, r, size=N_DEAR * 2, random_state=seed("crt_sum_skip", n, r))
    table = S.crt_pmf_table(n, r)
    assert_gof_discrete(x, lambda l: table[np.clip(l, 0, n)], support=(0, n), alpha=ALPHA)


def _crt_words(draws):
    """The raw words of a block's 16-bit draws, four to a word, in order."""
    words = np.zeros((len(draws) + 3) // 4, dtype=np.uint64)
    for q, x in enumerate(draws):
        words[q // 4] |= np.uint64(int(x) << (16 * (q % 4)))
    return words


def _crt_sum_exact(x, r, i):
    """1 (sure success), 0 (sure failure) or None (undecided) for the 16-bit draw x of
    customer i with concentration r (a double): ``s = r + i`` and ``c = r 2^16`` in exact
    rational arithmetic."""
    from fractions import Fraction
    s, c = Fraction(r) + i, Fraction(r) * 65536
    return 1 if (x + 1) * s <= c else 0 if x * s >= c else None


def test_crt_sum_block_test_is_exact():
    """crt_sum's block test against exact rational arithmetic, customer by customer: a
    counted success is sure, an uncounted draw without the tie flag is a sure failure, and
    every undecided draw sets the flag.  Draws at, next to and far from each threshold,
    for several r and first indices (single and double precision); then whole blocks (the SSE2 groups of eight and the masked tail, and the
    scalar loop of builds without SSE2) count what the customers alone count."""
    from pygbn.random._kernels import _crt_sum_block
    rng = np.random.default_rng(seed("crt-sum-exact"))
    # single precision (r in [1e-30, 1e30], indices up to 2^23) and double (beyond)
    cases = [(r, float(rng.integers(0, 200))) for r in [0.2, 1.0 / 3.0, 0.7, 1.0, np.pi, 12.5, 1e3, 1e-9]]
    cases += [(1e-40, 3.0), (1e35, 7.0), (2.5, 2.0 ** 23 + 100.0), (0.3, 2.0 ** 40)]
    for r, i0 in cases:
        xs, decided, undecided = [], 0, 0
        for q in range(1, 65):
            s = r + (i0 + q)
            t = r * 65536.0 / s
            cand = [int(np.floor(t)) + d for d in (-1, 0, 1)] + [int(v) for v in rng.integers(0, 65536, 2)]
            for x in [v for v in cand if 0 <= v < 65536]:
                got, tie = _crt_sum_block(np.array([x], dtype=np.uint64), i0 + q - 1, 1, r)
                want = _crt_sum_exact(x, r, int(i0) + q)
                if got == 1:
                    assert want == 1, (r, q, x)
                elif not tie:
                    assert want == 0, (r, q, x)
                if want is None:
                    assert tie, (r, q, x)
                    undecided += 1
                decided += want is not None
            xs.append(min(max(cand[1], 0), 65535))
        assert undecided > 0 and decided > 0
        # a block of 64 customers whose draws are the thresholds' floors, then random draws
        for block in (np.array(xs), rng.integers(0, 65536, 64)):
            words = _crt_words(block)
            for m in (64, 63, 57, 16, 9, 8, 7, 1):
                got, tie = _crt_sum_block(words, i0, m, r)
                alone = [_crt_sum_block(np.array([block[q]], dtype=np.uint64), i0 + q, 1, r)
                         for q in range(m)]
                assert got == sum(a[0] for a in alone)
                assert tie == any(a[1] for a in alone)
                # the scalar loop alone (builds without SSE2) counts the same
                assert _crt_sum_block(words, i0, m, r, scalar=True) == (got, tie)


def _crt_lone_customer(x, q, filler):
    """Words of a block of 8 customers (single precision where r allows): its q-th
    customer draws x, the others ``filler``."""
    return _crt_words([x if k == q - 1 else filler for k in range(8)])


@settings(derandomize=True, deadline=None, max_examples=400)
@given(x=st.integers(1, 65534), i=st.integers(1, 2**23 - 8), delta=st.floats(-1e-6, 1e-6),
       q=st.integers(1, 8), near=st.sampled_from([-1, 0, 1]))
def test_crt_sum_single_precision_test_is_exact(x, i, delta, q, near):
    """The single-precision block test (blocks of 8 customers and more) at draws whose
    product lands within a few ulps of the threshold: r is chosen so that c / s,
    ``c = r 2^16``, ``s = r + i``, is within 10^-6 of the integer x, and the draw is
    x - 1, x or x + 1.  A counted success must be sure, an uncounted draw without the tie
    flag a sure failure, an undecided draw must set the flag (exact rationals)."""
    from fractions import Fraction
    from pygbn.random._kernels import _crt_sum_block
    r = float((x + delta) * i / (65536.0 - x - delta))
    assume(1e-30 <= r <= 1e30)
    i0 = i - q
    assume(i0 >= 0)
    rr = Fraction(r)
    c = rr * 65536
    # the other seven customers: sure failures (65535) or sure successes (0) with a margin
    # far beyond the band, whichever holds for all of them
    s_lo, s_hi = rr + i0 + 1, rr + i0 + 8
    if 65535 * s_lo >= c * (1 + Fraction(1, 2**16)):
        filler, others = 65535, 0
    elif s_hi <= c * (1 - Fraction(1, 2**16)):
        filler, others = 0, 7
    else:
        assume(False)
    draw = x + near
    got, tie = _crt_sum_block(_crt_lone_customer(draw, q, filler), float(i0), 8, r)
    want = _crt_sum_exact(draw, r, i0 + q)
    if got - others == 1:
        assert want == 1, (r, i0, q, draw)
    else:
        assert got == others, (r, i0, q, draw, got)
        if not tie:
            assert want == 0, (r, i0, q, draw)
    if want is None:
        assert tie, (r, i0, q, draw)
    assert _crt_sum_block(_crt_lone_customer(draw, q, filler), float(i0), 8, r,
                          scalar=True) == (got, tie)


def test_crt_sum_undecided_draws_follow_their_share():
    """An undecided draw (x = floor(c / s)) succeeds with probability frac(c / s): the
    share of U in [0, 1) with (x + U) s < c."""
    from pygbn.random._kernels import _crt_sum_block
    bg = np.random.PCG64(seed("crt-sum-ties"))
    for r, i in [(0.3, 1), (2.5, 7), (1e-300, 3)]:
        s = r + i
        t = r * 65536.0 / s
        x = int(np.floor(t))
        words = np.array([x], dtype=np.uint64)
        n = 20000
        wins = sum(_crt_sum_block(words, i - 1.0, 1, r, bg) for _ in range(n))
        p = t - x
        assert abs(wins - n * p) <= 5.0 * np.sqrt(n * p * (1 - p)) + 1e-9, (r, i, wins, p)


def _upper_crt(ns, rs, n_docs, key):
    """CRT draws of the upper layers' inline dispatch (``_upper._crt``: ``crt_small`` up to
    n = 64, ``random_crt`` above) through ``propagate_counts`` with one factor per row:
    row v of every document holds count ``ns[v]`` with concentration ``rs[v]``, so the
    document's factor-v count is the table count.  Rows one after another share the
    block's stream, as in a chain.  Returns (n_docs, len(ns)) draws."""
    from pygbn._utils import BlockStreams
    from pygbn.inference import _upper

    kin = len(ns)
    m_in = np.tile(np.asarray(ns, dtype=np.int64), (n_docs, 1))
    phi = np.diag(np.asarray(rs, dtype=np.float64))
    theta = np.ones((n_docs, kin))
    bounds = np.linspace(0, n_docs, 5).astype(np.int64)
    streams = BlockStreams(np.random.default_rng(seed(*key)), 4)
    m_out = np.empty((n_docs, kin), dtype=np.int64)
    _upper.propagate_counts(m_in, phi, theta, bounds, streams.addresses, m_out,
                            np.zeros((0, kin, kin), dtype=np.int64), 1)
    return m_out


# the switches of the inline dispatch (each side): crt_small's inversion (r < 0.2, n <= 16,
# r n <= 1.6: n = 8 / 9 and 16 / 17 with r = 0.2 and 0.1) and skips (640 r < n: r = 0.05 at
# n = 32 / 33, r = 0.1 at n = 64); random_crt's r = 0.2, 0.9 and 1 (n = 65, 200) and crt_skip's
# r = 0.3; the sum's groups of 8 customers (n = 9 / 10)
UPPER_N = [1, 2, 3, 8, 9, 10, 16, 17, 32, 33, 64, 65, 200]
UPPER_R = [1e-3, np.nextafter(0.05, 0.0), 0.05, np.nextafter(0.1, 0.0), 0.1, np.nextafter(0.1, 1.0),
           np.nextafter(0.2, 0.0), 0.2, np.nextafter(0.3, 0.0), 0.3, 0.5, np.nextafter(0.9, 0.0), 0.9,
           np.nextafter(1.0, 0.0), 1.0, np.nextafter(1.0, 2.0), 3.0]


@pytest.mark.parametrize("n", UPPER_N)
def test_crt_of_the_upper_layers(n):
    """The upper layers' CRT (``_upper._crt``, inline) against the exact PMF on both sides
    of every switch of its dispatch; a document's rows are drawn in turn from one stream."""
    x = _upper_crt([n] * len(UPPER_R), UPPER_R, N_DEAR, ("upper-crt", n))
    assert x.min() >= 1 and x.max() <= n
    for v, r in enumerate(UPPER_R):
        table = S.crt_pmf_table(n, r)
        assert_gof_discrete(x[:, v], lambda l: table[np.clip(l, 0, n)], support=(0, n), alpha=ALPHA)


@pytest.mark.parametrize("a,b", [((5, 0.5), (40, 0.1)), ((40, 0.1), (3, 2.0)), ((64, 1.0), (33, 0.29))])
def test_crt_of_the_upper_layers_draws_are_independent(a, b):
    """Two inline CRT draws in a row from one stream (rows of a document, crossing the
    dispatch's branches) follow the product of their exact PMFs."""
    (n1, r1), (n2, r2) = a, b
    x = _upper_crt([n1, n2], [r1, r2], N_DEAR * 2, ("upper-crt-pairs", a, b))
    t1, t2 = S.crt_pmf_table(n1, r1), S.crt_pmf_table(n2, r2)
    code = x[:, 0] * (n2 + 1) + x[:, 1]
    assert_gof_discrete(code, lambda c: t1[np.clip(c // (n2 + 1), 0, n1)] + t2[c % (n2 + 1)],
                        support=(0, (n1 + 1) * (n2 + 1) - 1), alpha=ALPHA)


def test_crt_boundary_conventions():
    assert R.crt(0, 3.0) == 0
    assert R.crt(0, 0.0) == 0
    np.testing.assert_array_equal(R.crt(7, 0.0, size=50, random_state=1), 1)
    np.testing.assert_array_equal(R.crt(7, np.inf, size=50, random_state=1), 7)
    np.testing.assert_array_equal(R.crt(10**15, np.inf, size=5, random_state=1), 10**15)
    # the C kernel (unvalidated): r <= 0, -inf included, is the limit r -> 0
    from pygbn.random._api import _kernel
    np.testing.assert_array_equal(_kernel("crt", 100, [-np.inf, -1.0, 0.0], random_state=1), 1)
    np.testing.assert_array_equal(R.crt(1, 5.0, size=50, random_state=1), 1)
    # r -> 0: all but the first customer almost surely join the first table
    assert np.all(R.crt(10**6, 1e-300, size=1000, random_state=1) == 1)


# --- negative binomial (paper's p) --------------------------------------------

@pytest.mark.parametrize("r,p", [(1e-3, 0.5), (0.2, 1e-6), (0.5, 0.3), (1.0, 0.9), (3.7, 0.5),
                                 (25.0, 0.97), (1e4, 0.2), (1e6, 0.5), (1e12, 1e-12),
                                 # either side of the inversion's switches: mean 12, p = 0.99
                                 (12.0, 0.5), (12.01, 0.5), (0.12, 0.99), (0.1, 0.9901),
                                 (1188.0, 0.01)])
def test_negative_binomial_gof(r, p):
    x = R.negative_binomial(r, p, size=N_CHEAP, random_state=seed("nb", r, p))
    assert x.min() >= 0
    assert_gof_discrete(x, lambda k: S.negative_binomial_logpmf(k, r, p), alpha=ALPHA)


@pytest.mark.parametrize("algorithm", ["nb_inversion", "nb_mixture"])
@pytest.mark.parametrize("r,p", [(1e-3, 0.5), (0.5, 0.5), (4.0, 0.75), (0.3, 0.98), (200.0, 0.05),
                                 (40.0, 0.5)])
def test_negative_binomial_single_algorithms(algorithm, r, p):
    x = _kernel(algorithm, r, p, size=N_CHEAP, random_state=seed(algorithm, r, p))
    assert_gof_discrete(x, lambda k: S.negative_binomial_logpmf(k, r, p), alpha=ALPHA)


def test_negative_binomial_matches_numpy_convention():
    # ours(r, p) has mean r p / (1 - p); numpy's negative_binomial(r, 1 - p) has the same law
    r, p = 2.5, 0.8
    x = R.negative_binomial(r, p, size=N_CHEAP, random_state=3)
    y = np.random.default_rng(4).negative_binomial(r, 1 - p, size=N_CHEAP)
    assert abs(x.mean() - y.mean()) < 6 * np.sqrt(2 * r * p / (1 - p) ** 2 / N_CHEAP)
    assert_gof_discrete(y, lambda k: S.negative_binomial_logpmf(k, r, p), alpha=ALPHA)


# --- multinomial split: sorted categorical (n <= k) / conditional binomials ---

def _compositions(n, k):
    if k == 1:
        yield (n,)
        return
    for i in range(n + 1):
        for rest in _compositions(n - i, k - 1):
            yield (i,) + rest


@pytest.mark.parametrize("name", ["multinomial_split", "split_sorted", "split_binomial"])
@pytest.mark.parametrize("n,w", [(1, [0.2, 0.5, 0.3]), (3, [1.0, 0.0, 2.0, 1e-3]),
                                 (4, [5.0, 1.0, 1.0, 3.0]), (12, [0.1, 0.6, 0.3]),
                                 (40, [1e-9, 2.0, 1.0, 0.0])])
def test_multinomial_split_gof(name, n, w):
    w = np.array(w)
    rows = N_DEAR * 3
    if name == "multinomial_split":
        x = R.multinomial_split(n, w, size=rows, random_state=seed(name, n, tuple(w)))
    else:
        x = _kernel(name, n, w, size=rows, random_state=seed(name, n, tuple(w)))
    assert x.shape == (rows, len(w))
    assert np.all(x.sum(axis=1) == n) and np.all(x[:, w == 0] == 0)
    comps = np.array(list(_compositions(n, len(w))))
    logp = S.multinomial_logpmf(comps, w)
    keep = np.isfinite(logp)
    comps, logp = comps[keep], logp[keep]
    # label each row by its composition (mixed-radix code -> index of comps)
    radix = (n + 1) ** np.arange(len(w))
    codes = comps @ radix
    order = np.argsort(codes)
    labels = order[np.searchsorted(codes[order], x @ radix)]
    assert np.all(comps[labels] == x)
    assert_gof_discrete(labels, lambda i: logp[i], support=(0, len(comps) - 1), alpha=ALPHA)


@pytest.mark.parametrize("name", ["split_sorted", "split_binomial"])
def test_multinomial_split_marginals_many_cells(name):
    rng = np.random.default_rng(11)
    w = rng.gamma(0.3, size=60)
    w[[3, 17]] = 0.0
    n = 45
    x = _kernel(name, n, w, size=N_DEAR * 2, random_state=seed(name, "marg"))
    assert np.all(x.sum(axis=1) == n) and np.all(x[:, [3, 17]] == 0)
    p = w / w.sum()
    from scipy import stats as st
    for cell in (int(np.argmax(w)), 0, 59):
        assert_gof_discrete(x[:, cell], lambda k: st.binom.logpmf(k, n, p[cell]), alpha=ALPHA)


# --- heavier sweeps (pytest -m slow) ------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", ["truncated_poisson", "truncated_bessel", "logarithmic"])
def test_dense_sweep_ten_million_draws(name):
    """10^7 draws at 25 parameter values each: power for errors well below 1%."""
    grid = {"truncated_poisson": np.geomspace(1e-6, 1e4, 25),
            "truncated_bessel": np.geomspace(1e-6, 1e5, 25),
            "logarithmic": np.linspace(1e-4, 0.995, 25)}[name]
    logpmf = {"truncated_poisson": S.truncated_poisson_logpmf,
              "truncated_bessel": S.truncated_bessel_logpmf,
              "logarithmic": S.logarithmic_logpmf}[name]
    f = getattr(R, name)
    for v in grid:
        x = f(v, size=10**7, random_state=seed("dense", name, v), n_jobs=-1)
        assert_gof_discrete(x, lambda k: logpmf(k, v), alpha=ALPHA / 25)


@pytest.mark.slow
@pytest.mark.parametrize("n,r", [(3000, 0.01), (3000, 1.0), (3000, 30.0), (3000, 3000.0),
                                 # the Bernoulli sum (crt_small), and the sum then skips
                                 (20, 0.5), (48, 0.6), (64, 3.0), (1000, 10.0)])
def test_crt_gof_slow(n, r):
    x = R.crt(n, r, size=2 * 10**6, random_state=seed("crt-slow", n, r), n_jobs=-1)
    table = S.crt_pmf_table(n, r)
    assert_gof_discrete(x, lambda l: table[np.clip(l, 0, n)], support=(0, n), alpha=ALPHA)
