"""The theta gamma kernel (``pygbn/random/_gamma.pxd``) against the exact gamma law.

Binned chi-square on the scale ``a log x`` against the exact CDF (scipy's
regularised incomplete gamma and its series below 1, as in
``test_random_large``) for shapes from 1e-3 to 1e3, chosen so that every
branch is reached often: proposals accepted without a test (x <= 2^-53),
tests decided by the 11 spare bits, by ``exp`` and by a further uniform,
GS's second proposal (P > 1), rejections and their further proposals, draws
below e^-700 whose quotient is formed from their log, the floor at DBL_MIN,
and Marsaglia-Tsang from 1 up.  Level ``ALPHA = 1e-5`` per check, fixed seeds.
"""
import zlib

import numpy as np
import pytest
from scipy import special

from pygbn._utils import BlockStreams
from pygbn.random import _gamma
from test_random_large import ALPHA, _assert_gamma_gof

N = 4 * 10**5
TINY = np.finfo(float).tiny


def seed(*key):
    return zlib.crc32(repr(key).encode())


def draw(shapes, rate=1.0, n_rows=None, n_threads=1, key=0):
    """``gamma_rows`` on ``n_rows`` rows of ``shapes`` (rate per row), blocks of 100 rows."""
    shapes = np.atleast_1d(np.asarray(shapes, dtype=np.float64))
    n_rows = n_rows or N // shapes.size
    a = np.ascontiguousarray(np.broadcast_to(shapes, (n_rows, shapes.size)))
    rate = np.ascontiguousarray(np.broadcast_to(np.asarray(rate, dtype=np.float64), (n_rows,)))
    bounds = np.arange(0, n_rows + 100, 100, dtype=np.int64)
    bounds[-1] = n_rows
    streams = BlockStreams(np.random.default_rng(seed("rows", key)), len(bounds) - 1)
    out, sums = np.empty(a.shape), np.empty(n_rows)
    _gamma.gamma_rows(a, rate, bounds, streams.addresses, out, sums, n_threads)
    return out, sums


SHAPES = [1e-3, 0.015, 0.1, 0.3, 0.5, 0.7, 0.9, 0.9999, 1.0, 1.5, 7.0, 1e3]


@pytest.mark.parametrize("a", SHAPES)
def test_gamma_rows_match_the_gamma_law(a):
    out, sums = draw([a], key=a)
    assert np.all(out >= TINY) and np.all(np.isfinite(out))
    _assert_gamma_gof(out[:, 0], a)


def test_mixed_rows_each_draw_follows_its_own_shape():
    shapes = [1e-3, 0.02, 0.3, 0.8, 1.0, 4.0, 0.05, 2e-4]
    out, sums = draw(shapes, n_rows=N // 2, key="mixed")
    for i, a in enumerate(shapes):
        _assert_gamma_gof(out[:, i], a)
    # the row sums are the sums of the rows (the kernel's fixed order)
    np.testing.assert_allclose(sums, out.sum(axis=1), rtol=1e-13)


@pytest.mark.parametrize("a,rate", [(2e-3, 1e-280), (0.02, 1e-30), (0.3, 1e5), (0.02, 1e200), (3.0, 1e-100)])
def test_rate_scales_and_tiny_draws_keep_their_precision(a, rate):
    """P(out <= q) = P(a, q rate) at quantiles spread over the floor at DBL_MIN and
    the draws below e^-700 that are formed from their log."""
    out, _ = draw([a], rate=rate, key=("rate", a, rate))
    out = out[:, 0]
    assert np.all(out >= TINY)
    log_x = np.log(np.quantile(out, [0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98])) + np.log(rate)
    log_x = log_x[np.log(np.exp(log_x - np.log(rate)).clip(TINY)) > np.log(TINY) + 1.0]   # above the floor
    expected = np.where(log_x < np.log(1e-30), np.exp(a * log_x - special.gammaln(a + 1)),
                        special.gammainc(a, np.exp(np.maximum(log_x, -700.0))))
    observed = (out[:, None] <= np.exp(log_x - np.log(rate))[None, :]).mean(axis=0)
    assert np.all(np.abs(observed - expected) < 5 * np.sqrt(expected * (1 - expected) / out.size) + 1e-12), \
        (observed, expected)
    # the floor: P(G / rate < DBL_MIN) = P(a, DBL_MIN rate)
    p_floor = special.gammainc(a, TINY * rate) if TINY * rate > 1e-300 else \
        np.exp(a * (np.log(TINY) + np.log(rate)) - special.gammaln(a + 1))
    n_floor = np.sum(out == TINY)
    assert abs(n_floor - out.size * p_floor) < 6 * np.sqrt(out.size * p_floor * (1 - p_floor)) + 1, \
        (n_floor, out.size * p_floor)


def test_draws_do_not_depend_on_the_thread_count():
    shapes = [1e-3, 0.3, 0.9, 2.0, 0.01]
    one, s1 = draw(shapes, rate=np.linspace(0.5, 2.0, 20000), n_rows=20000, n_threads=1, key="nt")
    three, s3 = draw(shapes, rate=np.linspace(0.5, 2.0, 20000), n_rows=20000, n_threads=3, key="nt")
    np.testing.assert_array_equal(one, three)
    np.testing.assert_array_equal(s1, s3)


@pytest.mark.parametrize("y", [0.0, 1e-12, 2e-4, 0.01, 0.3, 0.7, 1.0, 2.5, 30.0])
def test_accept_exp_neg_is_the_exact_test(y):
    """V = (h + W) / 2048 < exp(-y): every h below T = 2048 exp(-y) whose cell lies
    below T always accepts, every h >= T never, the cell holding T with
    probability frac(T) (decided by W)."""
    streams = BlockStreams(np.random.default_rng(seed("accept", y)), 1)
    repeat = 2000
    counts = _gamma.accept_counts(y, streams.addresses, repeat)
    t = 2048.0 * np.exp(-y)
    h = np.arange(2048)
    always, never = h + 1 <= t, h >= t
    assert np.all(counts[always] == repeat) and np.all(counts[never] == 0)
    edge = ~(always | never)
    assert edge.sum() <= 1
    if edge.any():
        p = t - np.floor(t)
        c = counts[edge][0]
        assert abs(c - repeat * p) <= 5 * np.sqrt(repeat * p * (1 - p)) + 1, (c, p)
