"""Boundaries of the samplers (issue 12, point 6): ``size`` must be integral; PTRS never overflows."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pygbn.random as R
from pygbn.random._api import LAM_MAX, _kernel

#: every public sampler with valid scalar parameters
SAMPLERS = {
    "crt": (R.crt, (3, 1.0)),
    "logarithmic": (R.logarithmic, (0.5,)),
    "truncated_poisson": (R.truncated_poisson, (2.0,)),
    "truncated_bessel": (R.truncated_bessel, (2.0,)),
    "poisson_randomized_gamma": (R.poisson_randomized_gamma, (1.0, 1.0)),
    "negative_binomial": (R.negative_binomial, (2.0, 0.5)),
    "multinomial_split": (R.multinomial_split, (5, [1.0, 2.0])),
    "dirichlet": (R.dirichlet, ([1.0, 2.0],)),
}
SETTINGS = settings(derandomize=True, max_examples=40, deadline=None)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("size", [2.5, "3", (2, 2.5), (2, "3"), True, (True,), [2, 3],
                                  np.array([2]), np.float64(3.0), 3.0, -1, (3, -1), b"3"])
def test_non_integer_size_is_refused(name, size):
    f, args = SAMPLERS[name]
    with pytest.raises(ValueError, match=r"^size must be .*; got ") as info:
        f(*args, size=size, random_state=0)
    assert repr(size) in str(info.value)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("size, shape", [(3, (3,)), (np.int64(3), (3,)), ((2, np.int32(3)), (2, 3)),
                                         ((np.uint8(2),), (2,)), ((), ()), (0, (0,))])
def test_integer_sizes_are_accepted(name, size, shape):
    f, args = SAMPLERS[name]
    out = np.asarray(f(*args, size=size, random_state=0))
    k = {"multinomial_split": (2,), "dirichlet": (2,)}.get(name, ())
    assert out.shape == shape + k


@SETTINGS
@given(x=st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: v != int(v)
                                                                 if np.isfinite(v) else True))
def test_float_sizes_never_round(x):
    with pytest.raises(ValueError, match="size"):
        R.crt(3, 1.0, size=x, random_state=0)
    with pytest.raises(ValueError, match="size"):
        R.dirichlet([1.0, 1.0], size=(1, x), random_state=0)


@SETTINGS
@given(shape=st.lists(st.integers(0, 4), max_size=3).map(tuple),
       numpy_ints=st.booleans())
def test_integer_shapes_give_that_shape(shape, numpy_ints):
    size = tuple(np.int64(d) for d in shape) if numpy_ints else shape
    assert np.shape(R.logarithmic(0.3, size=size, random_state=1)) == shape


@pytest.mark.parametrize("lam", [5.3e18, 9e18, 9.2e18])
def test_ptrs_near_int64_max_gives_valid_counts(lam):
    """Candidates floor(lam) + y beyond INT64_MAX are rejected, never wrapped negative."""
    k = _kernel("poisson_ptrs", np.full(3000, lam), random_state=7)
    sd = np.sqrt(lam)
    assert k.dtype == np.int64 and (k > 0).all()
    assert (np.abs(k.astype(np.float64) - lam) < 8 * sd + 1e4).all()
    z = (k.astype(np.float64) - np.floor(lam)).mean() / (sd / np.sqrt(k.size))
    assert abs(z) < 5


def test_poisson_exact_clips_its_mean_at_9e18():
    k = _kernel("poisson", np.full(200, 9.2e18), random_state=3)
    assert (np.abs(k.astype(np.float64) - 9e18) < 8 * 3e9 + 1e4).all()


def test_truncated_bessel_kernel_clips_alpha_at_9e18():
    # the C kernel (cimport-able, unvalidated) clips alpha as its Poisson proposal's mean is:
    # Bessel_{-1}(9e18) has mean 4.5e18 and sd 1.5e9
    k = _kernel("truncated_bessel", np.repeat([9e18, 9.2e18, 1e300, np.inf], 100), random_state=3)
    assert k.dtype == np.int64 and (k > 0).all()
    assert (np.abs(k.astype(np.float64) - 4.5e18) < 8 * 1.5e9 + 1e4).all()


@pytest.mark.parametrize("f, args, name", [
    (R.truncated_poisson, (1.5 * LAM_MAX,), "lam"),
    (R.truncated_bessel, (1.5 * LAM_MAX,), "alpha"),
    (R.poisson_randomized_gamma, (1.5 * LAM_MAX, 1.0), "lam"),
])
def test_python_api_refuses_means_past_its_limit(f, args, name):
    """The Python samplers stop at 1e18 (docs/samplers.md), well inside int64 range."""
    with pytest.raises(ValueError, match=rf"^{name} must be .*<= 1e\+18"):
        f(*args)
    f(LAM_MAX, *args[1:], random_state=0)                 # the limit itself is fine


def test_python_ints_beyond_int64_are_real_parameters():
    """A real parameter given as a Python int past int64 (numpy holds it, or a list of
    such, as an object array) was refused as 'must be a real number'; numpy's samplers
    read it as a float, and so do ours now (then range-checked as any float)."""
    assert R.crt(5, 2**70, random_state=0) == R.crt(5, float(2**70), random_state=0)
    np.testing.assert_array_equal(R.crt(5, [2**70, 1], random_state=0),
                                  R.crt(5, [float(2**70), 1.0], random_state=0))
    assert R.poisson_randomized_gamma(1.0, 2**70, random_state=0) == \
        R.poisson_randomized_gamma(1.0, float(2**70), random_state=0)
    with pytest.raises(ValueError, match=r"^lam must be >= 0 and <= 1e\+18 \(finite\); got 1\.18"):
        R.truncated_poisson(2**70)
    with pytest.raises(ValueError, match="r must be a real number"):
        R.crt(5, np.array([1, None]))
