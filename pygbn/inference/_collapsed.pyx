# cython: language_level=3
"""Collapsed Gibbs sweep over the layer-one topic labels (paper eq:z).

With Phi^(1) and theta^(1) integrated out, the label of token ``i`` of
document ``j`` (term ``w``) is drawn from

    P(z = k | -)  ∝  (eta + n_wk) / (V eta + n_k) * (n_jk + a_jk),

where the counts exclude the token itself and ``a_jk`` is the document's
prior shape: ``r_k`` when the network has one layer, ``(Phi^(2) theta_j^(2))_k``
otherwise.  The sweep visits the documents in the order given and the tokens
of each document in a fresh uniformly random order (Fisher-Yates shuffle of
the document's token slice), one stream, GIL released.

Exact sparse decomposition (after Yao, Mimno & McCallum 2009, "SparseLDA"),
with ``D_k = V eta + n_k`` and ``c_k = (n_jk + a_jk) / D_k``:

    (eta + n_wk)(n_jk + a_jk) / D_k
        =  n_wk c_k                      word bucket: topics with n_wk > 0
         + eta n_jk / D_k                document bucket: topics with n_jk > 0
         + eta a_jk / D_k                smoothing bucket: all topics

The bucket totals of the document and smoothing buckets are kept up to date
incrementally (only two topics change per token) and recomputed at the start
of every document; the word bucket is summed over the word's non-zero topics.
So a token costs O(#topics of its word + #topics of its document), plus O(K)
only in the rare event that the smoothing bucket is chosen; each document
costs O(K) once.  The result is the exact conditional, not an approximation.
"""
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free
from cpython.pycapsule cimport PyCapsule_GetPointer
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport random_standard_uniform, random_interval


cdef inline void _list_remove(int32_t *lst, int32_t *length, int32_t *pos, int32_t k) noexcept nogil:
    cdef int32_t p = pos[k]
    cdef int32_t last = lst[length[0] - 1]
    lst[p] = last
    pos[last] = p
    pos[k] = -1
    length[0] -= 1


cdef inline void _list_add(int32_t *lst, int32_t *length, int32_t *pos, int32_t k) noexcept nogil:
    pos[k] = length[0]
    lst[length[0]] = k
    length[0] += 1


cdef inline void _swap(int32_t *wl, int32_t *wp, int32_t p, int32_t q) noexcept nogil:
    """Swap entries p and q of a term's (topic, count) list and fix the positions."""
    cdef int32_t tz = wl[2 * p], tc = wl[2 * p + 1]
    wl[2 * p] = wl[2 * q]
    wl[2 * p + 1] = wl[2 * q + 1]
    wl[2 * q] = tz
    wl[2 * q + 1] = tc
    wp[wl[2 * p]] = p
    wp[wl[2 * q]] = q


def collapsed_sweep(int32_t[::1] tok_w, int32_t[::1] tok_z, const int64_t[::1] doc_ptr,
                    const int64_t[::1] doc_order, int64_t[::1] nk, int64_t[:, ::1] njk,
                    int32_t[:, ::1] wlist, int32_t[::1] wlen, int32_t[:, ::1] wpos,
                    const double[:, ::1] prior, double eta, bit_generator):
    """One collapsed sweep over all tokens (eq:z), updating labels and counts in place.

    Parameters
    ----------
    tok_w, tok_z : int32 arrays (N,)
        Term and topic label of every token, grouped by document.
    doc_ptr : int64 array (J + 1,)
        Tokens of document ``j`` are ``doc_ptr[j]:doc_ptr[j + 1]``.
    doc_order : int64 array
        Documents to visit, in order.
    nk, njk : int64 arrays (K,), (J, K)
        Topic and document-topic counts, consistent with ``tok_z``.
    wlist, wlen, wpos : int32 arrays (V, 2 K), (V,), (V, K)
        The term-topic counts ``n_wk`` as one compact list per term: entry
        ``i < wlen[w]`` is the pair ``(wlist[w, 2 i], wlist[w, 2 i + 1])`` =
        (topic, count), every count positive, sorted by decreasing count;
        ``wpos[w, k]`` is topic k's entry (-1 if ``n_wk = 0``).  A term's
        word bucket is then one sequential pass over adjacent memory.  Use
        :func:`build_word_lists` and :func:`word_counts` to convert from and to
        the dense (V, K) counts.
    prior : float64 array (J, K) or (1, K)
        The prior shapes ``a_jk`` (one shared row when it has one row); > 0.
    eta : float
        Dirichlet concentration of Phi^(1).
    bit_generator : numpy BitGenerator
        The stream (its lock is held during the sweep).

    Equivalent to, for each document ``j`` in ``doc_order`` and each of its
    tokens ``i`` in random order::

        remove token i from the counts
        p = (eta + nwk[w_i]) / (V * eta + nk) * (njk[j] + a[j])
        z_i = rng.choice(K, p=p / p.sum())
        add token i back with label z_i
    """
    cdef bitgen_t *g = <bitgen_t *> PyCapsule_GetPointer(bit_generator.capsule, "BitGenerator")
    cdef Py_ssize_t K = nk.shape[0]
    cdef Py_ssize_t V = wpos.shape[0]
    cdef bint shared = prior.shape[0] == 1
    cdef double veta = V * eta
    cdef double *inv_d = <double *> malloc(K * sizeof(double))
    cdef double *ck = <double *> malloc(K * sizeof(double))
    cdef double *qv = <double *> malloc(K * sizeof(double))
    cdef int32_t *dnz = <int32_t *> malloc(K * sizeof(int32_t))
    cdef int32_t *dpos = <int32_t *> malloc(K * sizeof(int32_t))
    cdef Py_ssize_t o, j, i, ii, kk, idx
    cdef int64_t start, end
    cdef int32_t w, k, tw, tz, dn, nw, p
    cdef const double *a
    cdef int64_t *nj
    cdef int64_t *nk_p = &nk[0]
    cdef int32_t *wl
    cdef int32_t *wp
    cdef double s, rb, q, q1, u, t, tot, v0, v1
    if inv_d == NULL or ck == NULL or qv == NULL or dnz == NULL or dpos == NULL:
        free(inv_d); free(ck); free(qv); free(dnz); free(dpos)
        raise MemoryError()
    try:
        with bit_generator.lock, nogil:
            for kk in range(K):
                inv_d[kk] = 1.0 / (veta + nk_p[kk])
            for o in range(doc_order.shape[0]):
                j = doc_order[o]
                start = doc_ptr[j]
                end = doc_ptr[j + 1]
                if end <= start:
                    continue
                a = &prior[0 if shared else j, 0]
                nj = &njk[j, 0]
                # per-document set-up, O(K)
                s = 0.0
                rb = 0.0
                dn = 0
                for kk in range(K):
                    ck[kk] = (nj[kk] + a[kk]) * inv_d[kk]
                    s += a[kk] * inv_d[kk]
                    if nj[kk] > 0:
                        dpos[kk] = dn
                        dnz[dn] = <int32_t> kk
                        dn += 1
                        rb += nj[kk] * inv_d[kk]
                    else:
                        dpos[kk] = -1
                # fresh random order of the document's tokens
                for i in range(end - 1, start, -1):
                    ii = start + <Py_ssize_t> random_interval(g, <uint64_t> (i - start))
                    tw = tok_w[i]; tok_w[i] = tok_w[ii]; tok_w[ii] = tw
                    tz = tok_z[i]; tok_z[i] = tok_z[ii]; tok_z[ii] = tz
                for i in range(start, end):
                    w = tok_w[i]
                    k = tok_z[i]
                    wl = &wlist[w, 0]
                    wp = &wpos[w, 0]
                    # ---- remove the token ----
                    s -= a[k] * inv_d[k]
                    rb -= nj[k] * inv_d[k]
                    nj[k] -= 1
                    nk_p[k] -= 1
                    inv_d[k] = 1.0 / (veta + nk_p[k])
                    s += a[k] * inv_d[k]
                    rb += nj[k] * inv_d[k]
                    ck[k] = (nj[k] + a[k]) * inv_d[k]
                    if nj[k] == 0:
                        _list_remove(dnz, &dn, dpos, k)
                    # the term's topic list is kept sorted by decreasing count
                    # (as in SparseLDA), so the scan below usually stops early
                    p = wp[k]
                    wl[2 * p + 1] -= 1
                    nw = wlen[w]
                    while p + 1 < nw and wl[2 * p + 1] < wl[2 * p + 3]:
                        _swap(wl, wp, p, p + 1)
                        p += 1
                    if wl[2 * p + 1] == 0:
                        # a zero count sorts last: drop it
                        wp[k] = -1
                        wlen[w] = nw - 1
                    # ---- word bucket: one sequential pass, two accumulators ----
                    nw = wlen[w]
                    q = 0.0
                    q1 = 0.0
                    idx = 0
                    while idx + 1 < nw:
                        v0 = wl[2 * idx + 1] * ck[wl[2 * idx]]
                        v1 = wl[2 * idx + 3] * ck[wl[2 * idx + 2]]
                        qv[idx] = v0
                        qv[idx + 1] = v1
                        q += v0
                        q1 += v1
                        idx += 2
                    if idx < nw:
                        v0 = wl[2 * idx + 1] * ck[wl[2 * idx]]
                        qv[idx] = v0
                        q += v0
                    q += q1
                    if rb < 0.0:
                        rb = 0.0
                    if s < 0.0:
                        s = 0.0
                    tot = q + eta * (rb + s)
                    u = random_standard_uniform(g) * tot
                    if u < q:
                        idx = 0
                        while idx < nw - 1 and u >= qv[idx]:
                            u -= qv[idx]
                            idx += 1
                        k = wl[2 * idx]
                    else:
                        u = (u - q) / eta
                        if u < rb and dn > 0:
                            idx = 0
                            while idx < dn - 1:
                                kk = dnz[idx]
                                t = nj[kk] * inv_d[kk]
                                if u < t:
                                    break
                                u -= t
                                idx += 1
                            k = dnz[idx]
                        else:
                            u -= rb
                            k = -1
                            for kk in range(K):
                                t = a[kk] * inv_d[kk]
                                if t > 0.0:
                                    k = <int32_t> kk
                                    if u < t:
                                        break
                                    u -= t
                            if k < 0:
                                k = 0
                    # ---- add the token back with label k ----
                    s -= a[k] * inv_d[k]
                    rb -= nj[k] * inv_d[k]
                    nj[k] += 1
                    nk_p[k] += 1
                    inv_d[k] = 1.0 / (veta + nk_p[k])
                    s += a[k] * inv_d[k]
                    rb += nj[k] * inv_d[k]
                    ck[k] = (nj[k] + a[k]) * inv_d[k]
                    if nj[k] == 1:
                        _list_add(dnz, &dn, dpos, k)
                    p = wp[k]
                    if p < 0:
                        p = wlen[w]
                        wl[2 * p] = k
                        wl[2 * p + 1] = 1
                        wp[k] = p
                        wlen[w] = p + 1
                    else:
                        wl[2 * p + 1] += 1
                    while p > 0 and wl[2 * p + 1] > wl[2 * p - 1]:
                        _swap(wl, wp, p, p - 1)
                        p -= 1
                    tok_z[i] = k
    finally:
        free(inv_d); free(ck); free(qv); free(dnz); free(dpos)


def build_word_lists(const int64_t[:, ::1] nwk, int32_t[:, ::1] wlist, int32_t[::1] wlen,
                     int32_t[:, ::1] wpos):
    """Fill the per-term (topic, count) lists of :func:`collapsed_sweep` from
    dense counts ``nwk`` (V, K), sorted by decreasing count."""
    cdef Py_ssize_t V = nwk.shape[0], K = nwk.shape[1], v, k
    cdef int32_t n, p
    with nogil:
        for v in range(V):
            n = 0
            for k in range(K):
                wpos[v, k] = -1
                if nwk[v, k] > 0:
                    # insertion into the list sorted by decreasing count
                    p = n
                    wlist[v, 2 * p] = <int32_t> k
                    wlist[v, 2 * p + 1] = <int32_t> nwk[v, k]
                    wpos[v, k] = p
                    n += 1
                    while p > 0 and wlist[v, 2 * p + 1] > wlist[v, 2 * p - 1]:
                        _swap(&wlist[v, 0], &wpos[v, 0], p, p - 1)
                        p -= 1
            wlen[v] = n


def word_counts(const int32_t[:, ::1] wlist, const int32_t[::1] wlen, int64_t[:, ::1] nwk):
    """Dense term-topic counts ``nwk`` (V, K) from the per-term lists (overwrites ``nwk``)."""
    cdef Py_ssize_t V = nwk.shape[0], K = nwk.shape[1], v, k, i
    with nogil:
        for v in range(V):
            for k in range(K):
                nwk[v, k] = 0
            for i in range(wlen[v]):
                nwk[v, wlist[v, 2 * i]] = wlist[v, 2 * i + 1]
