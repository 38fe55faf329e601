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


def test_check_random_state_says_what_to_pass_instead_of_a_random_state():
    """A scikit-learn user's RandomState is refused with what to pass instead (the message only
    listed what is accepted), and the accepted sequences of ints are in the list."""
    import pytest
    with pytest.raises(ValueError, match=r"random_state .*got the legacy RandomState\(MT19937\).*"
                                         r"numpy\.random\.default_rng\(seed\)"):
        check_random_state(np.random.RandomState(0))
    with pytest.raises(ValueError, match=r"non-negative int \(or a sequence of them\).* got 1\.5"):
        check_random_state(1.5)
    with pytest.raises(ValueError, match="legacy RandomState"):
        pygbn.GBN(random_state=np.random.RandomState(0)).fit(np.ones((2, 3), dtype=int))


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


def test_an_unbuilt_checkout_says_what_to_do(tmp_path):
    """Python started in a source checkout that was not built in place imports it, not the
    installed pygbn: the error says so (it was 'cannot import name _generators ... circular
    import')."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import pygbn

    src = Path(pygbn.__file__).resolve().parent
    shutil.copytree(src, tmp_path / "pygbn", ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c",
                                                                           "__pycache__"))
    res = subprocess.run([sys.executable, "-c", "import pygbn"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode != 0
    assert "compiled extensions are missing" in res.stderr and "build_ext --inplace" in res.stderr
