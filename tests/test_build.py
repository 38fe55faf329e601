import numpy as np

import pygbn
from pygbn._utils import BlockStreams, check_random_state


def test_version():
    assert isinstance(pygbn.__version__, str)


def test_check_random_state_same_seed_same_draws():
    a = check_random_state(3).random(4)
    b = check_random_state(np.random.SeedSequence(3)).random(4)
    np.testing.assert_array_equal(a, b)
    g = np.random.default_rng(1)
    assert check_random_state(g) is g


def test_block_streams_deterministic():
    s1 = BlockStreams(np.random.default_rng(5), 4)
    s2 = BlockStreams(np.random.default_rng(5), 4)
    for g1, g2 in zip(s1.generators, s2.generators):
        assert g1.random() == g2.random()
    assert s1.addresses.dtype == np.uintp and len(s1) == 4


def test_bitgen_address_matches_ctypes():
    from pygbn._utils import bitgen_address
    g = np.random.default_rng(0)
    assert bitgen_address(g) == g.bit_generator.ctypes.bit_generator.value
    assert bitgen_address(g.bit_generator) == g.bit_generator.ctypes.bit_generator.value
