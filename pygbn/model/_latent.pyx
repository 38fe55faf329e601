# cython: language_level=3
"""The latent-count codes of the links, shared by Python and Cython.

:class:`LatentMode` (a Python ``IntEnum`` made from the ``cpdef enum`` in
``_latent.pxd``) names how the blocked kernel
(:func:`pygbn.inference._blocked.split_sparse`) obtains a cell's latent count
from its observation; :mod:`pygbn.model.links` exports the members as
``LATENT_COUNTS``, ``LATENT_CRT``, ``LATENT_TRUNC_POISSON`` and
``LATENT_TRUNC_BESSEL``.
"""
