"""Validated, broadcasting Python samplers (thin wrappers over the C kernels)."""
from __future__ import annotations

import numpy as np

from pygbn._utils import check_random_state
from pygbn.random import _generators


def crt(n, r, size=None, random_state=None):
    """Chinese restaurant table count ``l ~ CRT(n, r)``.

    PMF ``P(l) = Gamma(r) / Gamma(n + r) * |s(n, l)| * r**l`` for ``1 <= l <= n``;
    ``l = 0`` iff ``n = 0``.
    """
    rng = check_random_state(random_state)
    n_arr = np.asarray(n)
    r_arr = np.asarray(r, dtype=np.float64)
    if size is None:
        shape = np.broadcast_shapes(n_arr.shape, r_arr.shape)
    else:
        shape = tuple(np.atleast_1d(size))
    nb = np.ascontiguousarray(np.broadcast_to(n_arr, shape), dtype=np.int64).ravel()
    rb = np.ascontiguousarray(np.broadcast_to(r_arr, shape), dtype=np.float64).ravel()
    out = np.empty(nb.shape, dtype=np.int64)
    _generators.crt_loop(rng.bit_generator, nb, rb, out)
    out = out.reshape(shape)
    return out[()] if out.ndim == 0 else out
