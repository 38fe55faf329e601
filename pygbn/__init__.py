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

from pygbn import random  # noqa: E402
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
