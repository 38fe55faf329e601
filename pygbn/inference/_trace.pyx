# cython: language_level=3
"""The rates of the convergence traces (:mod:`pygbn.inference.trace`), GIL released.

The trace evaluates ``lambda_vj = sum_k phi_vk theta_hat_jk`` at every stored
cell, with ``theta_hat_j = (a_j + m_j) / (c_j + 1)``: ``m_j`` the layer-one
latent counts of document j (sparse: a document's tokens use few factors) and
``a_j`` its prior (``r`` at T = 1, ``Phi^(2) theta^(2)_j`` below).  Split the
sum by the two parts of theta_hat:

``lambda_vj = [ sum_k2 psi_{v k2} w_{j k2} + sum_{k: m_jk > 0} phi_vk m_jk ] / (c_j + 1)``

where ``psi w_j = Phi^(1) a_j``: ``psi = Phi^(1) r`` (one column) and
``w_j = 1`` at T = 1, ``psi = Phi^(1) Phi^(2)`` and ``w_j = theta^(2)_j``
below.  ``psi`` is formed once per trace by the caller, so a cell costs
``K_2 + nnz(m_j)`` multiply-adds instead of ``K_1``.  The document total
``sum_k theta_hat_jk`` is ``(w_j . s + sum_k m_jk) / (c_j + 1)`` with ``s`` the
column sums of Phi^(2) (``sum_k r_k`` at T = 1).

Phi^(1) is a dense float64 array (the chain's sample), or layer one's
term-factor counts ``n_vk`` (int32 or int64) from which the posterior mean
``(eta + n_vk) / col_k`` is formed entry by entry (a collapsed chain).

Each document's rates and total are computed by one thread, in a fixed order,
so they do not depend on the thread count.  The kernels trust their input.
"""
from cython.parallel cimport parallel, prange
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free

from pygbn.inference._alloc cimport block_malloc, fail_next_allocations
from pygbn.inference._shared cimport count_t

ctypedef fused phi_t:
    # Phi^(1) itself (float64) or the counts n_vk of its posterior mean (int32 / int64)
    double
    int32_t
    int64_t


cdef inline double _dot(const double *a, const double *b, Py_ssize_t n) noexcept nogil:
    """``sum_i a[i] b[i]`` in four interleaved partial sums, ``(s0 + s1) + (s2 + s3)`` then the
    tail (a fixed order: four independent chains of additions instead of one)."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t i = 0
    while i + 4 <= n:
        s0 = s0 + a[i] * b[i]
        s1 = s1 + a[i + 1] * b[i + 1]
        s2 = s2 + a[i + 2] * b[i + 2]
        s3 = s3 + a[i + 3] * b[i + 3]
        i = i + 4
    s0 = (s0 + s1) + (s2 + s3)
    while i < n:
        s0 = s0 + a[i] * b[i]
        i = i + 1
    return s0


cdef inline double _phi_at(const phi_t *row, Py_ssize_t k, double eta) noexcept nogil:
    """Phi^(1)'s entry, or its counts' ``eta + n_vk`` (the column sum is in the weight)."""
    if phi_t is double:
        return row[k]
    else:
        return eta + <double> row[k]


cdef inline double _sparse_dot(const phi_t *row, const int32_t *idx, const double *q, Py_ssize_t n,
                               double eta) noexcept nogil:
    """``sum_i phi(row, idx[i]) q[i]`` in the order of :c:func:`_dot`."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t i = 0
    while i + 4 <= n:
        s0 = s0 + _phi_at(row, idx[i], eta) * q[i]
        s1 = s1 + _phi_at(row, idx[i + 1], eta) * q[i + 1]
        s2 = s2 + _phi_at(row, idx[i + 2], eta) * q[i + 2]
        s3 = s3 + _phi_at(row, idx[i + 3], eta) * q[i + 3]
        i = i + 4
    s0 = (s0 + s1) + (s2 + s3)
    while i < n:
        s0 = s0 + _phi_at(row, idx[i], eta) * q[i]
        i = i + 1
    return s0


def _fail_next_allocations(int n):
    """Test hook: the next ``n`` per-thread scratch allocations fail (0 resets)."""
    fail_next_allocations(n)


def trace_rates(const int64_t[::1] indptr, const int32_t[::1] indices, const count_t[:, ::1] m,
                const double[::1] c, const double[:, ::1] psi, const double[:, ::1] w,
                const double[::1] wsum, const phi_t[:, ::1] phi, double eta, const double[::1] col_sums,
                double[::1] rates, double[::1] totals, int n_threads):
    """``rates[c] = lambda_vj`` of every stored cell ``c = (j, v)`` and ``totals[j] = sum_k theta_hat_jk``.

    ``lambda_vj = [sum_k2 psi[v, k2] w[j, k2] + sum_{k: m[j, k] > 0} phi_vk m[j, k]] / (c[j] + 1)``,
    ``totals[j] = [sum_k2 w[j, k2] wsum[k2] + sum_k m[j, k]] / (c[j] + 1)`` (see
    the module notes): ``psi`` (V x K2) is ``Phi^(1) Phi^(2)``, or ``Phi^(1) r`` with
    K2 = 1; ``w`` has one row per document (theta^(2)), or one row shared by
    all (``[[1.0]]`` at T = 1); ``wsum`` the column sums of Phi^(2) (``[sum_k r_k]``).
    ``phi_vk`` is ``phi[v, k]`` for float64 ``phi``, else
    ``(eta + phi[v, k]) / col_sums[k]`` (``phi`` the counts ``n_vk``); ``eta``
    and ``col_sums`` are read only then.  ``indptr`` (from 0) and ``m``, ``c``,
    ``totals`` are those of the documents to evaluate, ``rates`` of their cells.
    Documents in parallel, each by one thread in a fixed order.
    """
    cdef Py_ssize_t n_docs = indptr.shape[0] - 1
    cdef Py_ssize_t K = m.shape[1], K2 = psi.shape[1]
    cdef bint shared_w = w.shape[0] == 1
    cdef Py_ssize_t j, cell, i, k, n, v
    cdef int32_t *idx
    cdef double *q
    cdef const double *wr
    cdef double c1, s, x, ms
    cdef int n_failed = 0
    if n_docs <= 0:
        return
    idx = NULL   # set by every thread below (Cython copies them in as firstprivate)
    q = NULL
    with nogil, parallel(num_threads=n_threads):
        # one scratch per thread: the factors of a document's non-zero counts and their weights
        q = <double *> block_malloc((K + 1) * (sizeof(double) + sizeof(int32_t)))
        idx = <int32_t *> (q + K + 1) if q != NULL else NULL
        for j in prange(n_docs, schedule="dynamic", chunksize=64):
            if idx == NULL:
                n_failed += 1
            else:
                c1 = c[j] + 1.0
                wr = &w[0, 0] if shared_w else &w[j, 0]
                s = _dot(wr, &wsum[0], K2)
                n = 0
                ms = 0.0
                for k in range(K):
                    if m[j, k] != 0:
                        x = <double> m[j, k]
                        ms = ms + x
                        idx[n] = <int32_t> k
                        if phi_t is double:
                            q[n] = x
                        else:
                            q[n] = x / col_sums[k]
                        n = n + 1
                totals[j] = (s + ms) / c1
                for cell in range(indptr[j], indptr[j + 1]):
                    v = indices[cell]
                    rates[cell] = (_dot(&psi[v, 0], wr, K2) + _sparse_dot(&phi[v, 0], idx, q, n, eta)) / c1
        free(q)
    if n_failed:
        raise MemoryError(f"trace_rates: scratch memory for {n_failed} document(s) could not be allocated")
