"""Argument checking, broadcasting and blocked dispatch for :mod:`pygbn.random`.

Validation happens here, at the Python boundary, and only here: the kernels
trust their input.  Errors are :class:`ValueError` naming the argument and
the offending value (and its index for arrays).
"""
from __future__ import annotations

import math

import numpy as np

from pygbn._utils import (
    BlockStreams, bitgen_address, check_int, check_random_state, effective_n_jobs, first_index,
    in_range, real_array,
)

#: Largest int64 value; counts must not exceed it.
INT64_MAX = np.iinfo(np.int64).max

#: Items per block for cheap draws, and the most blocks one call spawns.
#: Block boundaries depend on the number of items only (never on n_jobs).
BLOCK_MIN = 16384
MAX_BLOCKS = 256


def _bad(name: str, arr: np.ndarray, mask: np.ndarray, requirement: str):
    idx = first_index(mask)
    value = arr[idx]
    value = value.item() if isinstance(value, np.generic) else value   # a Python int of an object array
    where = f" at index {idx}" if arr.ndim else ""
    raise ValueError(f"{name} must be {requirement}; got {value!r}{where}")


def as_real(name: str, x, *, low=None, low_open=False, high=None, high_open=False,
            allow_inf=False) -> np.ndarray:
    """Float64 array of ``x``, checked to be non-NaN, finite (unless allow_inf) and in range
    (the first bad value named in the error).

    A Python or numpy real scalar in range is checked in Python (no ufuncs) and returned
    as a 0-d array: the samplers' scalar calls are mostly this check.
    """
    v = _real_scalar(x)
    if v is not None and in_range(v, low, high, low_open=low_open, high_open=high_open,
                                  allow_inf=allow_inf):
        return np.array(v)
    arr = np.array(v) if v is not None else real_array(x)
    if arr is None:
        raise ValueError(f"{name} must be a real number or array of real numbers; got {x!r}")
    ok = in_range(arr, low, high, low_open=low_open, high_open=high_open, allow_inf=allow_inf)
    if ok.all():   # the common case
        return arr
    req = []
    if low is not None:
        req.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        req.append(f"{'<' if high_open else '<='} {high:g}")
    requirement = " and ".join(req) if req else "a number"
    if not allow_inf:
        requirement += " (finite)"
    nan = np.isnan(arr)
    if nan.any():
        _bad(name, arr, nan, requirement + ", not NaN")     # a NaN is named before other values
    _bad(name, arr, ~ok, requirement)


def as_count(name: str, x) -> np.ndarray:
    """Int64 array of ``x``: non-negative integers (integral floats accepted).

    Python ints beyond int64 (which numpy holds as objects, as in ``[1, 2**64]``)
    and object arrays of ints or real numbers are read as the real parameters'
    are (:func:`pygbn._utils.real_array`), so that the error names the bad value.
    """
    if (type(x) is int or isinstance(x, np.integer)) and 0 <= x <= INT64_MAX:
        return np.array(int(x), dtype=np.int64)          # a scalar count, without ufuncs
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a non-negative integer or array of them; got {x!r}") from None
    if arr.dtype == object and arr.size and all(type(e) is int or isinstance(e, np.integer)
                                                for e in arr.flat):
        neg = (arr < 0).astype(bool)                      # Python ints of any size, compared exactly
        if neg.any():
            _bad(name, arr, neg, "a non-negative integer")
        big = (arr > INT64_MAX).astype(bool)
        if big.any():
            _bad(name, arr, big, f"a non-negative integer <= {INT64_MAX}")
        return arr.astype(np.int64)
    if arr.dtype == object:
        real = real_array(arr)                           # ints and floats: checked as floats
        arr = arr if real is None else real
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int64)
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size and (arr > INT64_MAX).any():
            _bad(name, arr, arr > INT64_MAX, f"a non-negative integer <= {INT64_MAX}")
        neg = arr < 0
        if neg.any():
            _bad(name, arr, neg, "a non-negative integer")
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "f":
        if arr.dtype.itemsize < 4:
            arr = arr.astype(np.float64)                 # 2^63 overflows float16 (a warning)
        bad = ~np.isfinite(arr) | (arr < 0) | (arr != np.floor(arr)) | (arr >= 2.0**63)
        if bad.any():
            _bad(name, arr, bad, "a non-negative integer")
        return arr.astype(np.int64)
    raise ValueError(f"{name} must be a non-negative integer or array of them; got {x!r}")


def check_size(size) -> tuple:
    """``size`` as a shape tuple: an int or a tuple of ints (Python or numpy), each ``>= 0``.

    Anything else (floats such as ``2.5``, strings such as ``'3'``, bools,
    lists, arrays) raises a ValueError naming ``size`` and the value: numpy's
    coercion would have turned ``2.5`` into 2 draws and ``'3'`` into 3.
    """
    dims = size if isinstance(size, tuple) else (size,)
    try:
        shape = tuple(check_int(d, "size", 0) for d in dims)
    except ValueError:
        raise ValueError("size must be None, a non-negative int or a tuple of them "
                         f"(Python or numpy ints); got {size!r}") from None
    if math.prod(shape) > np.iinfo(np.intp).max:
        raise ValueError(f"size {shape} asks for {math.prod(shape)} draws, more than one array "
                         "can hold")
    return shape


def broadcast(names: list[str], arrays: list[np.ndarray], size) -> tuple:
    """Common shape of ``arrays`` (or ``size``, which they must broadcast to)."""
    shapes = [a.shape for a in arrays]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        desc = ", ".join(f"{n} {s}" for n, s in zip(names, shapes))
        raise ValueError(f"shapes do not broadcast: {desc}") from None
    if size is None:
        return shape
    size = check_size(size)
    if len(shape) > len(size) or any(s != 1 and s != z for s, z in zip(shape[::-1], size[::-1])):
        desc = ", ".join(f"{n} {s}" for n, s in zip(names, shapes))
        raise ValueError(f"size {size} is not compatible with the parameter shapes {desc}")
    return size


def flat(arr: np.ndarray, shape: tuple, dtype) -> np.ndarray:
    """C-contiguous 1-d array of ``arr`` broadcast to ``shape`` (a copy unless already so)."""
    if arr.ndim == 0:
        return np.full(math.prod(shape), arr, dtype=dtype)
    if arr.shape == tuple(shape) and arr.dtype == dtype and arr.flags.c_contiguous:
        return arr.reshape(-1)
    return np.ascontiguousarray(np.broadcast_to(arr, shape), dtype=dtype).reshape(-1)


def flat_param(arr: np.ndarray, shape: tuple, dtype) -> np.ndarray:
    """Like :func:`flat`, but a single value stays one item (length 1): the fill
    loops of :mod:`pygbn.random._generators` read a length-1 parameter as shared
    by every draw, so a scalar parameter is never copied out to the output size."""
    if arr.size == 1:
        return np.asarray(arr, dtype=dtype).reshape(1)
    return flat(arr, shape, dtype)


def rows(arr: np.ndarray, batch: tuple) -> np.ndarray:
    """``arr`` (shape ``(..., k)``) broadcast to ``batch + (k,)`` as a 2-d array of rows.

    Each row is contiguous.  A single row for the whole batch is not copied
    (stride 0 between rows), so one weight vector for many counts costs
    nothing; the kernels take rows a fixed stride apart, so rows of a
    several-row ``arr`` that broadcasting repeats (``(m, k)`` against a batch
    ``(j, m)``) are copied out to the batch.
    """
    k = arr.shape[-1]
    base = np.ascontiguousarray(arr, dtype=np.float64)
    out = np.broadcast_to(base, tuple(batch) + (k,)).reshape(-1, k)
    if out.shape[0] and k > 1 and out.strides[1] != out.itemsize:
        out = np.ascontiguousarray(out)
    return out


def block_size(n_items: int, min_block: int = BLOCK_MIN) -> int:
    """Items per block: a function of the number of items only."""
    return max(int(min_block), -(-int(n_items) // MAX_BLOCKS), 1)


def run_blocked(fill, n_items: int, random_state, n_jobs, args: tuple, min_block: int = BLOCK_MIN):
    """Call ``fill(streams, block, *args, n_threads)`` over fixed blocks of items.

    One block draws straight from ``random_state``'s generator (advancing it);
    several blocks each get a child stream of a :class:`BlockStreams` seeded
    from it.  Either way the draws depend on the seed and the number of items
    only, never on ``n_jobs``.
    """
    rng = check_random_state(random_state)
    n_threads = effective_n_jobs(n_jobs)
    block = block_size(n_items, min_block)
    n_blocks = max(1, -(-n_items // block))
    if n_blocks == 1:
        bg = rng.bit_generator
        addr = np.array([bitgen_address(bg)], dtype=np.uintp)
        with bg.lock:
            fill(addr, block, *args, 1)
        return
    streams = BlockStreams(rng, n_blocks)  # keeps the generators alive during the fill
    fill(streams.addresses, block, *args, min(n_threads, n_blocks))


def _real_scalar(x):
    """``float(x)`` when ``x`` is a real Python or numpy scalar (a float or an int, of any
    size below the largest double; not a bool), else None."""
    if isinstance(x, (float, np.floating)):
        return float(x)
    if type(x) is int or isinstance(x, np.integer):
        try:
            return float(x)
        except OverflowError:
            return None
    return None


def draw_one(draw, random_state, n_jobs, *args):
    """``draw(stream, *args)`` on ``random_state``'s generator, under its lock: one draw,
    the same as :func:`run_blocked` makes for one item (one block, straight from the
    generator), without the arrays.  ``n_jobs`` is checked as there."""
    rng = check_random_state(random_state)
    effective_n_jobs(n_jobs)
    bg = rng.bit_generator
    with bg.lock:
        return draw(bitgen_address(bg), *args)
