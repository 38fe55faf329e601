"""pygbn: exact, fast inference for the augmentable gamma belief network.

Zhou, Cong & Chen, "Augmentable Gamma Belief Networks", JMLR 17 (2016).

Main entry points: :class:`pygbn.GBN` (fit / transform), :func:`pygbn.load`,
the samplers in :mod:`pygbn.random`, the object model in :mod:`pygbn.model`,
exploration of fitted networks in :mod:`pygbn.explore`, text input in
:mod:`pygbn.text` and the bundled demo corpus in :mod:`pygbn.datasets`.
"""
import logging
import os

from pygbn._version import __version__

logging.getLogger("pygbn").addHandler(logging.NullHandler())


def _missing_extensions_error(exc: ImportError) -> ImportError:
    """The ImportError to raise when ``import pygbn.random`` failed with ``exc``: one saying
    what to do when the Cython extensions are missing (typically a source checkout on
    ``sys.path``, Python started in the repository root, shadowing the installed package),
    else ``exc`` itself."""
    from importlib.machinery import EXTENSION_SUFFIXES

    where = os.path.dirname(os.path.abspath(__file__))
    if any(os.path.exists(os.path.join(where, "random", "_kernels" + suffix)) for suffix in EXTENSION_SUFFIXES):
        return exc
    return ImportError(
        f"pygbn's compiled extensions are missing in {where}: this is a source checkout that was "
        "not built in place. Run Python from another folder to use the installed pygbn, or build "
        "here with 'python setup.py build_ext --inplace'.")


try:
    from pygbn import random  # noqa: E402
except ImportError as _exc:
    if _missing_extensions_error(_exc) is _exc:
        raise
    raise _missing_extensions_error(_exc) from _exc

from pygbn.estimator import GBN, NotFittedError, load, save  # noqa: E402
from pygbn.evaluation import split_tokens  # noqa: E402
from pygbn.model import (  # noqa: E402
    BernoulliPoissonLink,
    Hyperparameters,
    Layer,
    Network,
    PoissonLink,
    PoissonRandomizedGammaLink,
)

#: subpackages a fit does not need, imported on first use (``pygbn.text`` brings scipy.io)
_LAZY = ("datasets", "explore", "text")


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"pygbn.{name}")
    raise AttributeError(f"module 'pygbn' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def get_include() -> str:
    """Directory to put on Cython's include path to ``cimport`` pygbn's public ``.pxd`` files.

    The directory that holds the ``pygbn`` package: with it on the include
    path, ``from pygbn.random.kernels cimport random_crt`` resolves to the
    ``pygbn/random/kernels.pxd`` shipped in the wheel.  Cython also finds the
    file through ``sys.path`` when pygbn is importable at build time, so this
    is needed only where the build does not run in pygbn's environment.

    Returns
    -------
    str
        An absolute path.

    Examples
    --------
    >>> from Cython.Build import cythonize                       # doctest: +SKIP
    >>> cythonize(extensions, include_path=[pygbn.get_include()])  # doctest: +SKIP

    See ``docs/cython_api.md`` for a complete downstream build.
    """
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


__all__ = [
    "GBN",
    "NotFittedError",
    "get_include",
    "Network",
    "Layer",
    "Hyperparameters",
    "PoissonLink",
    "BernoulliPoissonLink",
    "PoissonRandomizedGammaLink",
    "load",
    "save",
    "split_tokens",
    "random",
    "explore",
    "text",
    "datasets",
    "__version__",
]
