"""Exact samplers for the distributions of the augmentable gamma belief network.

Python functions (numpy broadcasting, ``size=``, ``random_state=``,
``n_jobs=``) over nogil C kernels that other Cython code can ``cimport``
from the public ``pygbn/random/kernels.pxd`` (``docs/cython_api.md``).  Exact log-PMFs and moments of every
distribution are in :mod:`pygbn.stats`; ``docs/samplers.md`` describes the
algorithms.
"""
from pygbn.random._generators import openmp_enabled
from pygbn.random._api import (
    crt,
    dirichlet,
    logarithmic,
    multinomial_split,
    negative_binomial,
    poisson_randomized_gamma,
    truncated_bessel,
    truncated_poisson,
)

__all__ = [
    "crt",
    "logarithmic",
    "truncated_poisson",
    "truncated_bessel",
    "poisson_randomized_gamma",
    "negative_binomial",
    "multinomial_split",
    "dirichlet",
    "openmp_enabled",
]
