"""pygbn: exact, fast inference for the augmentable gamma belief network.

Zhou, Cong & Chen, "Augmentable Gamma Belief Networks", JMLR 17 (2016).

Main entry points: :class:`pygbn.GBN` (fit / transform), :func:`pygbn.load`,
the samplers in :mod:`pygbn.random`, the object model in :mod:`pygbn.model`,
exploration of fitted networks in :mod:`pygbn.explore`, text input in
:mod:`pygbn.text` and the bundled demo corpus in :mod:`pygbn.datasets`.
"""
import logging

from pygbn._version import __version__

logging.getLogger("pygbn").addHandler(logging.NullHandler())

from pygbn import datasets, explore, random, text  # noqa: E402
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

__all__ = [
    "GBN",
    "NotFittedError",
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
