# cython: language_level=3
"""Row-by-row access to the theta gamma kernel :c:func:`gamma_row` (tests and benchmarks).

The Gibbs kernels cimport the inline kernel from ``_gamma.pxd``;
:func:`gamma_rows` runs it over the rows of a matrix of shapes in fixed
blocks of rows, block ``b`` drawing from stream ``streams[b]`` (so the
result does not depend on ``n_threads``).  :func:`_stream_numbers` gives tests
the numbers the kernels take from a stream (uniforms and raw 64-bit outputs,
``pygbn/random/_pcg64.pxd``).
"""
from cython.parallel cimport prange
from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.stdint cimport int64_t, uint64_t, uintptr_t
from libc.float cimport DBL_MIN
from libc.math cimport log
from libc.stdlib cimport malloc, free
from numpy.random cimport bitgen_t

from pygbn.random._gamma cimport gs_pass_isa
from pygbn.random._pcg64 cimport next_raw, next_uniform, pcg64_fill_init, raw_fill, uniform_fill

#: whether numbers of the PCG64 streams are formed inline (numpy's numbers, checked at import)
FAST_UNIFORMS = pcg64_fill_init()


def _stream_numbers(bit_generator, Py_ssize_t n, bint raw=False, bint one_at_a_time=False):
    """The next ``n`` numbers of a numpy BitGenerator as the kernels take them, for tests
    (they must be numpy's, and leave the stream where numpy's leave it): uniforms in
    blocks as the partial sweep's buffers (:c:func:`pygbn.random._pcg64.uniform_fill`)
    or ``one_at_a_time`` as every other kernel (``next_uniform``), or with ``raw`` the
    64-bit outputs (``next_uint64``) in blocks as the gamma rows (``raw_fill``) or one
    at a time (``next_raw``)."""
    import numpy as np
    out = np.empty(max(n, 0), dtype=np.uint64 if raw else np.float64)
    cdef uint64_t[::1] r
    cdef double[::1] d
    cdef Py_ssize_t i
    cdef bitgen_t *g = <bitgen_t *> PyCapsule_GetPointer(bit_generator.capsule, "BitGenerator")
    if n <= 0:
        return out
    if raw:
        r = out
    else:
        d = out
    with bit_generator.lock, nogil:
        if raw and one_at_a_time:
            for i in range(n):
                r[i] = next_raw(g)
        elif raw:
            raw_fill(g, n, &r[0])
        elif one_at_a_time:
            for i in range(n):
                d[i] = next_uniform(g)
        else:
            uniform_fill(g, n, &d[0])
    return out


def gamma_rows(const double[:, ::1] a, const double[::1] rate, const int64_t[::1] bounds,
               const uintptr_t[::1] streams, double[:, ::1] out, double[::1] row_sums,
               int n_threads=1):
    """``out[j, i] = max(G / rate[j], DBL_MIN)``, ``G ~ Gam(a[j, i], 1)``; ``row_sums[j]``
    their sum (skipped when empty).

    Rows ``bounds[b]`` to ``bounds[b + 1]`` are drawn from ``streams[b]``
    (``bitgen_t`` addresses).  Nothing is checked: ``a > 0``, ``0 < rate < inf``.
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1
    cdef Py_ssize_t k = a.shape[1]
    cdef bint sums = row_sums.shape[0] > 0
    cdef Py_ssize_t b, j
    cdef double *scratch
    cdef double s
    cdef int n_failed = 0
    if n_blocks <= 0 or k == 0:
        return
    for b in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        scratch = <double *> malloc(7 * k * sizeof(double))
        if scratch == NULL:
            n_failed += 1
        else:
            for j in range(bounds[b], bounds[b + 1]):
                s = gamma_row(<bitgen_t *> streams[b], &a[j, 0], k, rate[j], &out[j, 0], scratch)
                if sums:
                    row_sums[j] = s
        free(scratch)
    if n_failed:
        raise MemoryError("gamma_rows: scratch memory could not be allocated")


def accept_counts(double y, const uintptr_t[::1] stream, int64_t repeat):
    """For each ``h`` in 0..2047, how many of ``repeat`` calls of
    :c:func:`accept_exp_neg` ``(y, h)`` accept (tests: every ``h`` below
    ``floor(2048 exp(-y))`` always, every ``h`` above never, that one with
    probability ``frac(2048 exp(-y))``)."""
    import numpy as np
    out = np.zeros(2048, dtype=np.int64)
    cdef int64_t[::1] counts = out
    cdef bitgen_t *g = <bitgen_t *> stream[0]
    cdef int64_t r
    cdef int h
    with nogil:
        for h in range(2048):
            for r in range(repeat):
                counts[h] += accept_exp_neg(g, y, <double> h)
    return out


def gs_pass(int isa, bint tail, const double[::1] a, const double[::1] u, const double[::1] h, double rate):
    """One vectorised GS pass of the row kernel, the version of one instruction set
    (``isa`` 0: the baseline, 1: AVX2, 2: AVX-512F; tests: every version gives the
    same bits): the lead pass (:c:func:`gs_lead`, ``u`` the uniforms) or the tail
    pass (:c:func:`gs_tail`, ``u`` the values ``P > 1``).  Returns ``(p, lx, val)``
    after the pass, or None where this build or CPU has no such version."""
    import numpy as np
    cdef Py_ssize_t n = a.shape[0]
    p_out = np.array(u, dtype=np.float64)
    lx_out = np.zeros(n)
    val_out = np.zeros(n)
    cdef double[::1] p = p_out, lx = lx_out, val = val_out
    cdef int ok
    if n == 0:
        return p_out, lx_out, val_out
    with nogil:
        ok = gs_pass_isa(isa, tail, &a[0], &p[0], &h[0], &lx[0], &val[0], n, 1.0 / rate, log(rate),
                         DBL_MIN * rate)
    return (p_out, lx_out, val_out) if ok else None
