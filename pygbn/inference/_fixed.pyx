# cython: language_level=3
"""Kernels of the test-time chain, where every Phi^(t) is fixed (GIL released).

:func:`split_fixed` is layer one's split (eq:step1, with the link's latent
counts) of :func:`pygbn.inference._blocked.split_sparse`, draw for draw (the
same weights, totals, searches and streams, so the same ``m``), for a chain
whose Phi^(1) is not drawn: the same sums and searches
(:c:func:`pygbn.inference._shared.split_sums`: four cells' cumulative weights
at once, without the tiny theta entries where they cannot matter;
:c:func:`pygbn.inference._shared.search_split`), without the term-factor
counts (the statistic of Phi^(1)'s Dirichlet) and the latent counts that only
training keeps.

Like the other document-block kernels, block ``b`` draws only from
``streams[b]``, so the result does not depend on the number of threads; a
block whose scratch memory cannot be allocated does no work and the kernel
raises ``MemoryError`` after the loop.  The kernels trust their input.
"""
from cython.parallel cimport prange
from libc.stdint cimport INT64_MAX, int32_t, int64_t, uint16_t, uintptr_t
from libc.stdlib cimport free
from numpy.random cimport bitgen_t
from pygbn.random._pcg64 cimport next_uniform, pcg64_fill_init

from pygbn.inference._alloc cimport block_malloc, fail_next_allocations
from pygbn.inference._shared cimport (SPLIT_GROUP, SPLIT_SMALL, count_t, count_max, search_cumulative,
                                      search_split, split_products, split_rescaled, split_sums, tiny_bound,
                                      zero_tiny)
from pygbn.random._kernels cimport random_multinomial_split
from pygbn.model._latent cimport latent_count

#: whether numbers of the PCG64 streams are formed inline (numpy's numbers, checked at import)
FAST_UNIFORMS = pcg64_fill_init()


def _fail_next_allocations(int n):
    """Test hook: the next ``n`` per-block scratch allocations fail (0 resets)."""
    fail_next_allocations(n)


cdef inline void _add_split(bitgen_t *g, int64_t x, const double *w, Py_ssize_t k, double total,
                            int64_t *tmp, count_t *m_row) noexcept nogil:
    """``x`` units over the k weights ``w`` summing to ``total`` by conditional binomials."""
    cdef Py_ssize_t c
    random_multinomial_split(g, x, w, k, total, tmp)
    for c in range(k):
        if tmp[c] != 0:
            m_row[c] += <count_t> tmp[c]


cdef inline int64_t _cell(bitgen_t *g, int mode, double obs, double a, const double *phi_row,
                          const double *theta_row, Py_ssize_t k, const double *sums, bint exact,
                          double total, double *w, double *cw, int64_t *tmp, count_t *m_row) noexcept nogil:
    """One cell: its latent count ``x`` and the split of ``x`` over the factors
    (eq:step1), added to ``m_row``, as split_sparse draws them; returns ``x``.

    ``sums`` and ``total`` are the cell's cumulative weights and their total
    (``sums`` equal to split_sparse's from the first non-tiny factor on, and 0
    before it, unless ``exact``: see :func:`split_fixed`).  Below
    SPLIT_SMALL units, categorical draws (one uniform each,
    :c:func:`pygbn.inference._shared.search_split`); above, conditional
    binomials on the products.  A cell whose products all
    underflow (total 0) has its weights rescaled in log space, as split_sparse
    does: its latent count sees the total 0, its split the rescaled weights.
    """
    cdef int64_t x, u
    cdef double scaled
    if not total > 0.0:
        x = latent_count(g, mode, obs, 0.0, a)
        if x <= 0:
            return x
        scaled = split_rescaled(phi_row, theta_row, k, w, cw)
        if x < SPLIT_SMALL:
            for u in range(x):
                m_row[search_cumulative(cw, k, next_uniform(g) * scaled)] += 1
        else:
            _add_split(g, x, w, k, scaled, tmp, m_row)
        return x
    x = latent_count(g, mode, obs, total, a)
    if x <= 0:
        return x
    if x < SPLIT_SMALL:
        for u in range(x):
            m_row[search_split(sums, exact, next_uniform(g) * total, phi_row, theta_row, k, cw)] += 1
    else:
        split_products(phi_row, theta_row, k, w)
        _add_split(g, x, w, k, total, tmp, m_row)
    return x


def split_fixed(const int64_t[::1] indptr, const int32_t[::1] indices, const double[::1] values,
                const double[:, ::1] phi, const double[:, ::1] theta, const double[::1] aux,
                int mode, const int64_t[::1] bounds, const uintptr_t[::1] streams,
                count_t[:, ::1] m_out, int n_threads, double[::1] totals=None, tiny=None):
    """Layer one's latent counts and their split with Phi^(1) fixed (eq:step1).

    :func:`pygbn.inference._blocked.split_sparse` (the same arguments, the
    same draws, the same ``m_out``) without the term-factor counts ``n_out``
    and the latent counts ``x_out``: for each document ``j`` and stored cell
    ``(v, obs)``, ``w_k = phi[v, k] * theta[j, k]``, the latent count ``x`` from
    ``obs`` by ``mode`` (identity, truncated Poisson with rate ``sum(w)``,
    eq:Ber-PGBN, truncated Bessel with ``alpha = 2 sqrt(aux[j] obs sum(w))``,
    eq:Gam-PGBN: :c:func:`pygbn.model._latent.latent_count`), and
    ``x ~> Mult(x, w / sum(w))`` added to ``m_out[j, :]`` (overwritten).
    ``theta`` may be one row shared by all documents.  ``totals``, when
    given, receives each document's latent total ``sum_k m_out[j, k]`` (what
    the PRG link's a_j and p_j^(2) condition on, eq:c_g and eq:step6; exact in
    float64 below 2^53).  Returns the number of documents whose latent total
    exceeds what ``m_out`` holds, as split_sparse counts them (a document with a
    cell that :c:func:`~pygbn.model._latent.latent_count` could not draw, or whose
    total passes 2**63 - 1, among them whatever the type).

    The sums are split_sparse's (:c:func:`pygbn.inference._shared.split_sums`:
    a document's cells are summed without its tiny theta entries, those whose
    products are below the normal range, wherever that cannot change a draw);
    ``tiny`` is :func:`pygbn.inference._blocked.tiny_theta` of ``phi`` (formed
    here when None).
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1
    cdef Py_ssize_t k = phi.shape[1]
    cdef Py_ssize_t b, j, c, c_end, q, n_q, i, first
    cdef bint shared_theta = theta.shape[0] == 1
    cdef bint want_totals = totals is not None
    cdef double *w
    cdef double *cw
    cdef double *sums
    cdef double *tot
    cdef double *t_zeroed
    cdef const double *u_row
    cdef double t_bound
    cdef bint *exact
    cdef int64_t *tmp
    cdef const double *t_row
    cdef double a
    cdef int64_t total_x, cap, x
    cdef bint unheld
    cdef int n_failed = 0
    cdef Py_ssize_t n_over = 0
    cdef count_t *m_row
    cdef bitgen_t *g
    cap = count_max(<const count_t *> NULL)
    if n_blocks <= 0 or k == 0:
        return 0
    t_bound = tiny_bound(phi) if tiny is None else tiny
    for b in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        g = <bitgen_t *> streams[b]
        # w, cw: k each (a cell whose products underflow); the document's theta row
        # with its tiny entries 0 (k); the cumulative weights of SPLIT_GROUP cells, then
        # their SPLIT_GROUP totals and flags (split_sums)
        w = <double *> block_malloc((3 * k + SPLIT_GROUP * (k + 2)) * sizeof(double))
        tmp = <int64_t *> block_malloc(k * sizeof(int64_t))
        if w == NULL or tmp == NULL:
            n_failed += 1
        else:
            cw = w + k
            t_zeroed = cw + k
            sums = t_zeroed + k
            tot = sums + SPLIT_GROUP * k
            exact = <bint *> (tot + SPLIT_GROUP)
            for j in range(bounds[b], bounds[b + 1]):
                m_row = &m_out[j, 0]
                for i in range(k):
                    m_row[i] = 0
                total_x = 0
                unheld = False
                a = aux[j] if aux.shape[0] > 0 else 1.0
                t_row = &theta[0 if shared_theta else j, 0]
                u_row = zero_tiny(t_row, k, t_bound, t_zeroed, &first)
                c = indptr[j]
                c_end = indptr[j + 1]
                while c < c_end:
                    # the cumulative weights of the next SPLIT_GROUP cells (or of one), then
                    # each cell's draws, in the order of the cells
                    n_q = split_sums(&phi[0, 0], &indices[c], c_end - c, k, t_row, u_row, first, sums, tot,
                                     exact)
                    for q in range(n_q):
                        x = _cell(g, mode, values[c + q], a, &phi[indices[c + q], 0], t_row, k,
                                  sums + q * k, exact[q], tot[q], w, cw, tmp, m_row)
                        if x < 0 or x > INT64_MAX - total_x:
                            unheld = True       # as split_sparse: no count type holds the document
                        else:
                            total_x = total_x + x
                    c = c + n_q
                if want_totals:
                    totals[j] = <double> total_x
                if unheld or total_x > cap:
                    n_over += 1
        free(w)
        free(tmp)
    if n_failed:
        raise MemoryError(f"split_fixed: scratch memory of {n_failed} document block(s) could not be allocated")
    return n_over


def add_normalised(const double[:, ::1] theta, const double[:, ::1] sums, double[:, ::1] total):
    """``total[j, i] += theta[j, i] / sums[j, 0]``: the feature average's step
    (:class:`pygbn.inference.fixed.FeatureAverage`) in one pass, each entry the
    quotient and the sum numpy's ``divide`` and ``add`` form (no temporary)."""
    cdef Py_ssize_t j, i, k = theta.shape[1]
    cdef double s
    with nogil:
        for j in range(theta.shape[0]):
            s = sums[j, 0]
            for i in range(k):
                total[j, i] = total[j, i] + theta[j, i] / s
