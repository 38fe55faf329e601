"""The kernels' uniforms and raw outputs (pygbn/random/_pcg64.pxd) are numpy's own numbers.

The partial sweep fills its buffers, the collapsed sweep and the samplers'
kernels draw their uniforms one at a time, and the gamma rows take raw 64-bit
outputs in blocks, by an inline PCG64 step where the import-time check of the
layout passed; for every bit generator the numbers, and the state the
stream is left in, must be exactly what numpy's ``random_standard_uniform_fill``,
``random_standard_uniform`` and ``next_uint64`` give, so the chains do not
depend on the path.
"""
import numpy as np
import pytest

from pygbn.inference import _blocked, _collapsed, _fixed, _partial, _upper
from pygbn.random import _gamma, _generators, _kernels

SIZES = [0, 1, 3, 4, 5, 8, 255, 256, 257, 1001]
BIT_GENERATORS = [np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox, np.random.SFC64]


def _same_state(a, b):
    """Two bit generators' ``state`` dicts equal (arrays compared by value)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def _next_uint64(gen, n):
    """numpy's ``next_uint64`` outputs (64-bit integers over the whole range take them
    as they are; ``random_raw`` is the native output, 32 bits for MT19937)."""
    return gen.integers(0, 2 ** 64 - 1, size=n, dtype=np.uint64, endpoint=True)


def _pair(kind, seed=12345, used=7):
    """Two bit generators of ``kind`` in the same, used, state."""
    a, b = kind(seed), kind(seed)
    a.random_raw(used)
    b.random_raw(used)
    return a, b


@pytest.mark.parametrize("one_at_a_time", [False, True], ids=["fill", "one-at-a-time"])
@pytest.mark.parametrize("raw", [False, True], ids=["uniforms", "raw"])
@pytest.mark.parametrize("kind", BIT_GENERATORS, ids=lambda k: k.__name__)
def test_numbers_are_numpys_and_leave_numpys_state(one_at_a_time, raw, kind):
    ours, ref = _pair(kind)
    ref_gen = np.random.Generator(ref)
    for n in SIZES:
        got = _gamma._stream_numbers(ours, n, raw, one_at_a_time)
        want = _next_uint64(ref_gen, n) if raw else ref_gen.random(n)
        np.testing.assert_array_equal(got, want, err_msg=f"{kind.__name__}, n = {n}")
    # the state left behind: numpy's next numbers from both, and the whole state where readable
    np.testing.assert_array_equal(ours.random_raw(5), ref.random_raw(5))
    assert _same_state(ours.state, ref.state)


def test_uniforms_and_raw_outputs_interleaved():
    """Blocks of uniforms, raw outputs and single steps in turn: numpy's sequence."""
    ours, ref = _pair(np.random.PCG64)
    ref_gen = np.random.Generator(ref)
    for n in (3, 8, 1, 13):
        np.testing.assert_array_equal(_gamma._stream_numbers(ours, n), ref_gen.random(n))
        np.testing.assert_array_equal(_gamma._stream_numbers(ours, n, True), _next_uint64(ref_gen, n))
        np.testing.assert_array_equal(_gamma._stream_numbers(ours, 2, True, True), _next_uint64(ref_gen, 2))
        np.testing.assert_array_equal(_gamma._stream_numbers(ours, 2, False, True), ref_gen.random(2))
    assert _same_state(ours.state, ref.state)


def test_pcg64_after_a_jump_and_a_set_state():
    """States numpy reaches other than by drawing (advance, jumped, the state setter)."""
    base = np.random.PCG64(2016)
    for make in (lambda: np.random.PCG64(2016).advance(2 ** 70 + 3),
                 lambda: np.random.PCG64(2016).jumped(5)):
        ours, ref = make(), make()
        np.testing.assert_array_equal(_gamma._stream_numbers(ours, 300), np.random.Generator(ref).random(300))
        np.testing.assert_array_equal(_gamma._stream_numbers(ours, 9, False, True), np.random.Generator(ref).random(9))
    ours, ref = np.random.PCG64(), np.random.PCG64()
    ours.state = ref.state = base.state
    np.testing.assert_array_equal(_gamma._stream_numbers(ours, 64), np.random.Generator(ref).random(64))


def test_fast_path_flag_is_the_checked_one():
    """The flag each module reports is a bool (True where the inline step is in
    use; the numbers above are numpy's either way)."""
    modules = (_partial, _collapsed, _blocked, _fixed, _upper, _gamma, _generators, _kernels)
    for module in modules:
        assert module.FAST_UNIFORMS in (True, False)
    # one layout check: the same answer in every module
    assert len({module.FAST_UNIFORMS for module in modules}) == 1
