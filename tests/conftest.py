"""Helpers shared by several test modules."""
import sys
import types

import pytest


def pytest_configure(config):
    # registered here, not in pyproject.toml, so that tests copied out of the checkout (run
    # against an installed package, without its pytest settings) know the marker too
    config.addinivalue_line(
        "markers", "slow: heavier statistical sweeps and real-corpus fits (run with -m slow)")


class FakeFrame:
    """Stands in for pandas.DataFrame / polars.DataFrame where neither is installed: it keeps
    the data and the keyword arguments it was built with."""

    def __init__(self, data, **kwargs):
        self.data, self.kwargs = data, kwargs


@pytest.fixture
def fake_frame_module(monkeypatch):
    """``install(name)`` puts a stand-in module ``name`` ("pandas" or "polars") whose
    ``DataFrame`` is :class:`FakeFrame` in ``sys.modules`` for the test, and returns
    :class:`FakeFrame`."""
    def install(name: str) -> type:
        monkeypatch.setitem(sys.modules, name, types.SimpleNamespace(DataFrame=FakeFrame))
        return FakeFrame

    return install
