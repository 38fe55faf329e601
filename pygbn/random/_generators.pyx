# cython: language_level=3
"""Blocked, parallel fill loops behind the Python samplers of :mod:`pygbn.random`.

Every loop fills a flat output in fixed blocks: block ``b`` covers items
``b * block .. min((b + 1) * block, n_items)`` and draws only from stream
``streams[b]`` (a ``bitgen_t*`` address), so the result does not depend on
the number of threads.  Inputs are validated, broadcast, contiguous arrays
prepared by :mod:`pygbn.random._api`; nothing here checks them.
"""
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uintptr_t
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport binomial_t
from cpython.pycapsule cimport PyCapsule_GetPointer

import numpy as np

from pygbn.random cimport _kernels as K

ctypedef int64_t (*kern_i_d)(bitgen_t *, double) noexcept nogil
ctypedef int64_t (*kern_i_dd)(bitgen_t *, double, double) noexcept nogil
ctypedef int64_t (*kern_i_id)(bitgen_t *, int64_t, double) noexcept nogil
ctypedef double (*kern_d_d)(bitgen_t *, double) noexcept nogil
ctypedef double (*kern_d_dd)(bitgen_t *, double, double) noexcept nogil
ctypedef void (*kern_split)(bitgen_t *, int64_t, const double *, Py_ssize_t, double,
                            int64_t *) noexcept nogil


cdef int64_t _binomial_kernel(bitgen_t *bitgen, int64_t n, double p) noexcept nogil:
    cdef binomial_t state
    state.has_binomial = 0
    return K.random_binomial_exact(bitgen, n, p, &state)


cdef void _split_sorted_full(bitgen_t *bitgen, int64_t n, const double *w, Py_ssize_t k,
                             double total, int64_t *out) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(k):
        out[i] = 0
    if n > 0:
        K._split_sorted(bitgen, n, w, k, total, out)


cdef void _split_binomial_full(bitgen_t *bitgen, int64_t n, const double *w, Py_ssize_t k,
                               double total, int64_t *out) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(k):
        out[i] = 0
    if n > 0:
        K._split_binomial(bitgen, n, w, k, total, out)


# name -> kernel, by signature.  Public names first, then single algorithms (tests).
cdef kern_i_d _pick_i_d(str name) except NULL:
    if name == "logarithmic":
        return K.random_logarithmic
    if name == "truncated_poisson":
        return K.random_truncated_poisson
    if name == "truncated_bessel":
        return K.random_truncated_bessel
    if name == "poisson":
        return K.random_poisson_exact
    if name == "poisson_ptrs":
        return K.random_poisson_ptrs
    if name == "bessel_chopdown":
        return K._bessel_chopdown
    if name == "bessel_poisson":
        return K._bessel_poisson
    if name == "bessel_logconcave":
        return K._bessel_logconcave
    raise KeyError(name)


cdef kern_i_id _pick_i_id(str name) except NULL:
    if name == "crt":
        return K.random_crt
    if name == "crt_loop":
        return K._crt_loop
    if name == "crt_thinning":
        return K._crt_thinning
    if name == "crt_blocks":
        return K._crt_blocks
    if name == "binomial":
        return _binomial_kernel
    raise KeyError(name)


cdef kern_d_d _pick_d_d(str name) except NULL:
    if name == "gamma":
        return K.random_gamma_exact
    if name == "gamma_mt":
        return K.random_gamma_mt
    if name == "log_gamma":
        return K.random_log_gamma
    raise KeyError(name)


cdef kern_split _pick_split(str name) except NULL:
    if name == "multinomial_split":
        return K.random_multinomial_split
    if name == "split_sorted":
        return _split_sorted_full
    if name == "split_binomial":
        return _split_binomial_full
    raise KeyError(name)


def bitgen_addresses(bit_generators):
    """``bitgen_t*`` addresses (uintp array) of numpy BitGenerators, via their capsules."""
    cdef Py_ssize_t i, n = len(bit_generators)
    out = np.empty(n, dtype=np.uintp)
    cdef uintptr_t[::1] o = out
    for i in range(n):
        o[i] = <uintptr_t> PyCapsule_GetPointer(bit_generators[i].capsule, "BitGenerator")
    return out


def fill_i_d(str name, const uintptr_t[::1] streams, Py_ssize_t block,
             const double[::1] a, int64_t[::1] out, int n_threads):
    """``out[i] = kernel(stream of i's block, a[i])`` for an int64-valued one-parameter kernel."""
    cdef kern_i_d f = _pick_i_d(name)
    cdef Py_ssize_t b, i, lo, hi, n = out.shape[0]
    cdef bitgen_t *rng
    with nogil:
        for b in prange(streams.shape[0], num_threads=n_threads, schedule="dynamic", chunksize=1):
            rng = <bitgen_t *> streams[b]
            lo = b * block
            hi = lo + block
            if hi > n:
                hi = n
            for i in range(lo, hi):
                out[i] = f(rng, a[i])


def fill_i_dd(str name, const uintptr_t[::1] streams, Py_ssize_t block,
              const double[::1] a, const double[::1] c, int64_t[::1] out, int n_threads):
    """``out[i] = kernel(stream, a[i], c[i])`` for an int64-valued two-parameter kernel (NB)."""
    cdef kern_i_dd f
    if name == "negative_binomial":
        f = K.random_nb
    else:
        raise KeyError(name)
    cdef Py_ssize_t b, i, lo, hi, n = out.shape[0]
    cdef bitgen_t *rng
    with nogil:
        for b in prange(streams.shape[0], num_threads=n_threads, schedule="dynamic", chunksize=1):
            rng = <bitgen_t *> streams[b]
            lo = b * block
            hi = lo + block
            if hi > n:
                hi = n
            for i in range(lo, hi):
                out[i] = f(rng, a[i], c[i])


def fill_i_id(str name, const uintptr_t[::1] streams, Py_ssize_t block,
              const int64_t[::1] a, const double[::1] c, int64_t[::1] out, int n_threads):
    """``out[i] = kernel(stream, a[i], c[i])`` for (count, real) kernels (CRT, binomial)."""
    cdef kern_i_id f = _pick_i_id(name)
    cdef Py_ssize_t b, i, lo, hi, n = out.shape[0]
    cdef bitgen_t *rng
    with nogil:
        for b in prange(streams.shape[0], num_threads=n_threads, schedule="dynamic", chunksize=1):
            rng = <bitgen_t *> streams[b]
            lo = b * block
            hi = lo + block
            if hi > n:
                hi = n
            for i in range(lo, hi):
                out[i] = f(rng, a[i], c[i])


def fill_d_d(str name, const uintptr_t[::1] streams, Py_ssize_t block,
             const double[::1] a, double[::1] out, int n_threads):
    """``out[i] = kernel(stream, a[i])`` for a float64-valued one-parameter kernel."""
    cdef kern_d_d f = _pick_d_d(name)
    cdef Py_ssize_t b, i, lo, hi, n = out.shape[0]
    cdef bitgen_t *rng
    with nogil:
        for b in prange(streams.shape[0], num_threads=n_threads, schedule="dynamic", chunksize=1):
            rng = <bitgen_t *> streams[b]
            lo = b * block
            hi = lo + block
            if hi > n:
                hi = n
            for i in range(lo, hi):
                out[i] = f(rng, a[i])


def fill_d_dd(str name, const uintptr_t[::1] streams, Py_ssize_t block,
              const double[::1] a, const double[::1] c, double[::1] out, int n_threads):
    """``out[i] = kernel(stream, a[i], c[i])`` for a float64-valued two-parameter kernel (PRG)."""
    cdef kern_d_dd f
    if name == "prg":
        f = K.random_prg
    else:
        raise KeyError(name)
    cdef Py_ssize_t b, i, lo, hi, n = out.shape[0]
    cdef bitgen_t *rng
    with nogil:
        for b in prange(streams.shape[0], num_threads=n_threads, schedule="dynamic", chunksize=1):
            rng = <bitgen_t *> streams[b]
            lo = b * block
            hi = lo + block
            if hi > n:
                hi = n
            for i in range(lo, hi):
                out[i] = f(rng, a[i], c[i])


def fill_split(str name, const uintptr_t[::1] streams, Py_ssize_t block,
               const int64_t[::1] n, const double[:, :] w, const double[::1] total,
               int64_t[:, ::1] out, int n_threads):
    """Row ``i`` of ``out`` ~ Multinomial(n[i], w[i] / total[i]) (blocks of rows).

    ``w`` may repeat rows (stride 0 between rows) but each row must be contiguous.
    """
    if w.shape[0] and w.shape[1] > 1 and w.strides[1] != sizeof(double):
        raise ValueError("rows of w must be contiguous")
    cdef kern_split f = _pick_split(name)
    cdef Py_ssize_t b, i, lo, hi, rows = out.shape[0], k = out.shape[1]
    cdef bitgen_t *rng
    if rows == 0 or k == 0:
        return
    with nogil:
        for b in prange(streams.shape[0], num_threads=n_threads, schedule="dynamic", chunksize=1):
            rng = <bitgen_t *> streams[b]
            lo = b * block
            hi = lo + block
            if hi > rows:
                hi = rows
            for i in range(lo, hi):
                f(rng, n[i], &w[i, 0], k, total[i], &out[i, 0])


def fill_dirichlet(const uintptr_t[::1] streams, Py_ssize_t block,
                   const double[:, :] alpha, double[:, ::1] out, int n_threads):
    """Row ``i`` of ``out`` ~ Dirichlet(alpha[i]) (blocks of rows; rows of alpha contiguous)."""
    if alpha.shape[0] and alpha.shape[1] > 1 and alpha.strides[1] != sizeof(double):
        raise ValueError("rows of alpha must be contiguous")
    cdef Py_ssize_t b, i, lo, hi, rows = out.shape[0], k = out.shape[1]
    cdef bitgen_t *rng
    if rows == 0 or k == 0:
        return
    with nogil:
        for b in prange(streams.shape[0], num_threads=n_threads, schedule="dynamic", chunksize=1):
            rng = <bitgen_t *> streams[b]
            lo = b * block
            hi = lo + block
            if hi > rows:
                hi = rows
            for i in range(lo, hi):
                K.random_dirichlet(rng, &alpha[i, 0], k, &out[i, 0])
