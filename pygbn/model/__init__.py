"""The object model of a gamma belief network: Network, Layer and Links."""
from pygbn.model.layer import Layer
from pygbn.model.links import (
    BernoulliPoissonLink,
    Link,
    PoissonLink,
    PoissonRandomizedGammaLink,
    get_link,
)
from pygbn.model.network import Hyperparameters, Network

__all__ = [
    "Network",
    "Layer",
    "Hyperparameters",
    "Link",
    "PoissonLink",
    "BernoulliPoissonLink",
    "PoissonRandomizedGammaLink",
    "get_link",
]
