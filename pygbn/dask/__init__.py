"""Fitting gamma belief networks on a Dask cluster.

:class:`DaskGBN` is :class:`pygbn.GBN` with its documents spread over the
workers of a ``dask.distributed`` cluster: the data and every document's
state stay on the workers, only the global parameters go out and the
sufficient statistics come back each iteration, and for the same
``random_state`` the fitted networks are bit-identical to those of
:class:`pygbn.GBN` in one process with the method DaskGBN used, whatever
the partitioning: ``GBN(method="partial")`` for counts with the default
``method="auto"`` (or ``"partial"``), ``GBN(method="blocked")`` with
``method="blocked"`` and for the other links.  See docs/scaling.md.

Needs the optional dependencies ``dask`` and ``distributed``::

    pip install "augmentable-gbn[dask]"
"""
try:
    import dask  # noqa: F401
    import dask.array  # noqa: F401
    import distributed  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "pygbn.dask needs the optional dependencies dask and distributed; install them with "
        "pip install \"augmentable-gbn[dask]\" (or pip install \"dask[array]\" distributed)"
    ) from exc

from pygbn.dask._estimator import DaskGBN  # noqa: E402
from pygbn.dask._transport import PartitionLostError  # noqa: E402

__all__ = ["DaskGBN", "PartitionLostError"]
