# cython: language_level=3
"""Vectorised loops behind the Python samplers of :mod:`pygbn.random`."""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t
from numpy.random cimport bitgen_t
from cpython.pycapsule cimport PyCapsule_GetPointer

from pygbn.random._kernels cimport random_crt

cnp.import_array()


def crt_loop(bit_generator, const int64_t[::1] n, const double[::1] r, int64_t[::1] out):
    """Fill ``out[i] ~ CRT(n[i], r[i])`` from one stream (inputs already validated)."""
    cdef bitgen_t *rng = <bitgen_t *> PyCapsule_GetPointer(bit_generator.capsule, "BitGenerator")
    cdef Py_ssize_t i
    with bit_generator.lock, nogil:
        for i in range(n.shape[0]):
            out[i] = random_crt(rng, n[i], r[i])
