# cython: language_level=3
"""Partially collapsed, document-parallel sweep over the layer-one topic labels.

Phi^(1) is explicit and theta^(1) is integrated out.  Given Phi^(1) and the
document's prior shape ``a_j`` (``r`` when the network has one layer,
``Phi^(2) theta_j^(2)`` otherwise), the label of token ``i`` of document
``j`` (term ``v``) has the Polya-urn conditional

    pi(k)  ∝  phi_vk (n_jk + a_jk),                       (n_jk without token i)

and documents are independent of each other: blocks of documents are swept in
an OpenMP ``prange``, block ``b`` drawing only from its own stream, so the
result does not depend on the number of threads.

Proposal.  With a positive vector ``b`` shared by all documents (the prior
mean shape ``Phi^(2) ... Phi^(T) r``; ``r`` itself when T = 1) and
``lambda_j = sum_k a_jk / sum_k b_k``, every token draws a topic from

    q(k)  ∝  phi_vk n_jk  +  lambda_j phi_vk b_k

as a two-bucket mixture: the document bucket ``D = sum_{k: n_jk > 0} phi_vk n_jk``
(summed over the document's topics, O(its topics)) and the prior bucket
``lambda_j Q_v`` with ``Q_v = sum_k phi_vk b_k``, sampled in O(1) from the
term's alias table over ``phi_v. b`` (built once per sweep, O(V K)).

Exactness.  When the prior is one row shared by all documents (T = 1),
``b = a`` and ``lambda = 1``: q is pi and the draw is the exact conditional.
Otherwise ``mh_steps`` independence Metropolis-Hastings steps follow, from
the token's current label ``s``: propose ``t ~ q`` and accept it with
probability ``min(1, w(t) / w(s))``, where

    w(k) = pi(k) / q(k)  ∝  (n_jk + a_jk) / (n_jk + lambda_j b_k)

(phi_vk and both normalisers cancel).  Each step leaves pi invariant, so the
label update does, and the sweep leaves the posterior invariant.
"""
from cython.parallel cimport prange
from libc.stdint cimport int16_t, int32_t, int64_t, uint16_t, uintptr_t
from libc.stdlib cimport malloc, calloc, free
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport random_standard_uniform

from pygbn.inference._shared cimport doc_count_t, topic_t


cdef extern from *:
    """
    /* Atomic 64-bit integer addition (exact in any order). */
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline void pygbn_partial_add_i64(int64_t *p, int64_t v) {
        _InterlockedExchangeAdd64((volatile __int64 *) p, (__int64) v);
    }
    #elif defined(__GNUC__) || defined(__clang__)
    static inline void pygbn_partial_add_i64(int64_t *p, int64_t v) {
        __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
    }
    #elif defined(_OPENMP)
    static inline void pygbn_partial_add_i64(int64_t *p, int64_t v) {
        #pragma omp atomic
        *p += v;
    }
    #else
    static inline void pygbn_partial_add_i64(int64_t *p, int64_t v) { *p += v; }
    #endif
    """
    void atomic_add_i64 "pygbn_partial_add_i64"(int64_t *p, int64_t v) noexcept nogil


cdef struct Doc:
    # one document's state while it is swept (per-thread scratch)
    Py_ssize_t n_topics_total   # K
    int32_t *nj                 # n_jk, dense (zero outside the document's topics)
    int32_t *topics             # the topics with n_jk > 0, in no order
    int32_t *pos                # position of topic k in topics (-1 if n_jk = 0)
    int32_t n_topics
    const double *a             # a_jk
    const double *b             # the proposal's shared shape b_k
    double lam                  # lambda_j


cdef inline void _inc(Doc *d, int32_t k) noexcept nogil:
    if d.nj[k] == 0:
        d.pos[k] = d.n_topics
        d.topics[d.n_topics] = k
        d.n_topics += 1
    d.nj[k] += 1


cdef inline void _dec(Doc *d, int32_t k) noexcept nogil:
    cdef int32_t p, last
    d.nj[k] -= 1
    if d.nj[k] == 0:
        p = d.pos[k]
        last = d.topics[d.n_topics - 1]
        d.topics[p] = last
        d.pos[last] = p
        d.pos[k] = -1
        d.n_topics -= 1


cdef inline double _doc_bucket(const Doc *d, const double *phi_v) noexcept nogil:
    """``D = sum_{k: n_jk > 0} phi_vk n_jk`` over the document's topics."""
    cdef double s = 0.0
    cdef Py_ssize_t i
    cdef int32_t k
    for i in range(d.n_topics):
        k = d.topics[i]
        s += phi_v[k] * d.nj[k]
    return s


cdef inline int32_t _pick_doc(const Doc *d, const double *phi_v, double u) noexcept nogil:
    """The topic at ``u`` (in ``[0, D)``) of the document bucket; the last topic of
    positive weight if rounding overshoots."""
    cdef Py_ssize_t i
    cdef int32_t k, last = d.topics[0]
    cdef double t
    for i in range(d.n_topics):
        k = d.topics[i]
        t = phi_v[k] * d.nj[k]
        if t > 0.0:
            last = k
            if u < t:
                return k
            u -= t
    return last


cdef inline int32_t _pick_alias(const double *prob, const int32_t *alias, Py_ssize_t K,
                                double u) noexcept nogil:
    """Walker's alias draw from a term's table with one uniform ``u`` in [0, 1)."""
    cdef double x = u * K
    cdef Py_ssize_t i = <Py_ssize_t> x
    if i >= K:
        i = K - 1
    if x - i < prob[i]:
        return <int32_t> i
    return alias[i]


cdef inline int32_t _propose(bitgen_t *g, const Doc *d, const double *phi_v, double D, double P,
                             const double *prob, const int32_t *alias) noexcept nogil:
    """A draw from ``q(k) ∝ phi_vk n_jk + lambda_j phi_vk b_k``: document bucket
    ``D``, prior bucket ``P = lambda_j Q_v`` (alias table)."""
    cdef double u = random_standard_uniform(g) * (D + P)
    if u < D and d.n_topics > 0:
        return _pick_doc(d, phi_v, u)
    if P > 0.0:
        u = (u - D) / P
        if u >= 1.0 or u < 0.0:
            u = 0.0 if u < 0.0 else 0.9999999999999999
        return _pick_alias(prob, alias, d.n_topics_total, u)
    return _pick_doc(d, phi_v, random_standard_uniform(g) * D)


cdef inline int32_t _direct(bitgen_t *g, const Doc *d, const double *phi_v) noexcept nogil:
    """The exact conditional ``phi_vk (n_jk + a_jk)`` by an O(K) scan (fallback when
    both buckets vanish by underflow); uniform if every weight is zero."""
    cdef Py_ssize_t k, K = d.n_topics_total
    cdef double total = 0.0, u, t
    for k in range(K):
        total += phi_v[k] * (d.nj[k] + d.a[k])
    if not (total > 0.0):
        k = <Py_ssize_t> (random_standard_uniform(g) * K)
        return <int32_t> (k if k < K else K - 1)
    u = random_standard_uniform(g) * total
    for k in range(K - 1):
        t = phi_v[k] * (d.nj[k] + d.a[k])
        if u < t:
            return <int32_t> k
        u -= t
    return <int32_t> (K - 1)


cdef inline double _weight(const Doc *d, int32_t k) noexcept nogil:
    """``w(k) = (n_jk + a_jk) / (n_jk + lambda_j b_k)``: pi / q up to constants."""
    return (d.nj[k] + d.a[k]) / (d.nj[k] + d.lam * d.b[k])


cdef int _sweep_block(bitgen_t *g, Py_ssize_t j0, Py_ssize_t j1, const int64_t *indptr,
                      const int32_t *indices, const double *values, const int64_t *doc_ptr,
                      topic_t *labels, const double *phi, const double *prior, bint shared,
                      const double *b, double bsum, const double *alias_prob, const int32_t *alias_idx,
                      const double *word_mass, doc_count_t *njk, int64_t *nvk, Py_ssize_t K,
                      int mh_steps, bint atomic, bint include_self, int64_t *counters) noexcept nogil:
    """The documents ``j0:j1`` (one block), in order, from one stream; -1 if out of memory."""
    cdef Doc d
    cdef Py_ssize_t j, i, c
    cdef int64_t tok, n, t_i
    cdef int32_t v, s, z, t, step
    cdef double asum, D, P, ws, wt
    cdef const double *phi_v
    cdef doc_count_t *row
    d.n_topics_total = K
    d.n_topics = 0
    d.b = b
    d.nj = <int32_t *> calloc(K, sizeof(int32_t))
    d.topics = <int32_t *> malloc(K * sizeof(int32_t))
    d.pos = <int32_t *> malloc(K * sizeof(int32_t))
    if d.nj == NULL or d.topics == NULL or d.pos == NULL:
        free(d.nj); free(d.topics); free(d.pos)
        return -1
    for j in range(j0, j1):
        tok = doc_ptr[j]
        if doc_ptr[j + 1] <= tok:
            continue
        row = njk + j * K
        for t_i in range(tok, doc_ptr[j + 1]):
            s = labels[t_i]
            if d.nj[s] == 0:
                row[s] = 0
            _inc(&d, s)
        d.a = prior if shared else prior + j * K
        if shared:
            d.lam = 1.0
        else:
            asum = 0.0
            for i in range(K):
                asum += d.a[i]
            d.lam = asum / bsum
        for c in range(indptr[j], indptr[j + 1]):
            v = indices[c]
            phi_v = phi + v * K
            P = d.lam * word_mass[v]
            D = _doc_bucket(&d, phi_v)
            n = <int64_t> values[c]
            for i in range(n):
                s = labels[tok]
                if not include_self:
                    _dec(&d, s)
                    D -= phi_v[s]
                    if D < 0.0 or d.n_topics == 0:
                        D = _doc_bucket(&d, phi_v)
                if not (D + P > 0.0) or mh_steps == -2:
                    z = _direct(g, &d, phi_v)
                elif shared or mh_steps < 0:
                    z = _propose(g, &d, phi_v, D, P, alias_prob + v * K, alias_idx + v * K)
                else:
                    # independence Metropolis-Hastings from the current label
                    z = s
                    ws = _weight(&d, s)
                    for step in range(mh_steps):
                        t = _propose(g, &d, phi_v, D, P, alias_prob + v * K, alias_idx + v * K)
                        counters[0] += 1
                        if t == z:
                            counters[1] += 1
                            continue
                        wt = _weight(&d, t)
                        if wt >= ws or random_standard_uniform(g) * ws < wt:
                            z = t
                            ws = wt
                            counters[1] += 1
                if include_self:
                    _dec(&d, s)
                    D -= phi_v[s]
                _inc(&d, z)
                D += phi_v[z]
                labels[tok] = <topic_t> z
                if atomic:
                    atomic_add_i64(&nvk[v * K + z], 1)
                else:
                    nvk[v * K + z] += 1
                tok += 1
        for i in range(d.n_topics):
            z = d.topics[i]
            row[z] = <doc_count_t> d.nj[z]
            d.nj[z] = 0
            d.pos[z] = -1
        d.n_topics = 0
    free(d.nj); free(d.topics); free(d.pos)
    return 0


def partial_sweep(const int64_t[::1] indptr, const int32_t[::1] indices, const double[::1] values,
                  const int64_t[::1] doc_ptr, topic_t[::1] labels, const double[:, ::1] phi,
                  const double[:, ::1] prior, const double[::1] b, const double[:, ::1] alias_prob,
                  const int32_t[:, ::1] alias_idx, const double[::1] word_mass,
                  const int64_t[::1] bounds, const uintptr_t[::1] streams, doc_count_t[:, ::1] njk,
                  int64_t[:, ::1] nvk, int mh_steps, int n_threads, bint include_self=False,
                  bint shared_prior=False):
    """One partially collapsed sweep over the documents of ``bounds`` (see the module).

    Parameters
    ----------
    indptr, indices, values : int64, int32, float64 arrays
        The documents' rows as CSR: row ``j`` is ``indptr[j]:indptr[j + 1]``
        (``indptr`` may be a slice of the whole data's: its entries index
        ``indices`` and ``values``).
    doc_ptr : int64 array
        Labels of row ``j`` are ``labels[doc_ptr[j]:doc_ptr[j + 1]]`` (same rows
        as ``indptr``).
    labels : int16 or int32 array
        The topic of every token, updated in place.
    phi : float64 (V, K)
        Phi^(1) (columns on the simplex, entries > 0).
    prior : float64 (n_rows, K) or (1, K)
        ``a_jk`` of each row, or (``shared_prior``) one row shared by all; > 0.
    b : float64 (K,)
        The proposal's shared shape (> 0).
    alias_prob, alias_idx, word_mass : (V, K), (V, K), (V,)
        Each term's alias table over ``phi_v. b`` and its total ``Q_v``
        (:func:`build_alias`).
    bounds, streams
        Document blocks (row indices) and one stream address per block.
    njk : uint16 or int32 (n_rows, K)
        ``n_jk`` of the rows, consistent with ``labels`` (updated).
    nvk : int64 (V, K)
        The new labels' term-topic counts are added (atomic additions).
    mh_steps : int
        Metropolis-Hastings steps per token when the prior has a row per document
        (test hooks: -1 takes every proposal, a wrong conditional when the
        documents' priors differ; -2 draws every label exactly by an O(K) scan).
    include_self : bool, default=False
        Test hook only: do not take the token out of ``n_jk`` before its draw
        (a wrong conditional that the tests must catch).
    shared_prior : bool, default=False
        ``prior`` is one row shared by all documents and equal to ``b``: the
        proposal is the exact conditional and no Metropolis-Hastings step is
        made (T = 1).  (Not inferred from ``prior``'s shape: a chunk of one
        document also has one row.)

    Returns
    -------
    (proposals, accepted) : (int, int)
        Metropolis-Hastings proposals made and accepted (0, 0 when exact).
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1, K = phi.shape[1], blk, i
    cdef bint shared = shared_prior, atomic = n_threads > 1
    cdef double bsum = 0.0
    cdef int n_failed = 0
    cdef int64_t[:, ::1] counters = None
    if n_blocks <= 0:
        return 0, 0
    import numpy as np
    counters = np.zeros((n_blocks, 2), dtype=np.int64)
    for i in range(K):
        bsum += b[i]
    for blk in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        if _sweep_block(<bitgen_t *> streams[blk], bounds[blk], bounds[blk + 1], &indptr[0],
                        &indices[0] if indices.shape[0] else NULL, &values[0] if values.shape[0] else NULL,
                        &doc_ptr[0], &labels[0] if labels.shape[0] else NULL, &phi[0, 0], &prior[0, 0],
                        shared, &b[0], bsum, &alias_prob[0, 0], &alias_idx[0, 0], &word_mass[0],
                        &njk[0, 0] if njk.shape[0] else NULL, &nvk[0, 0], K, mh_steps, atomic,
                        include_self, &counters[blk, 0]) < 0:
            n_failed += 1
    if n_failed:
        raise MemoryError(f"partial_sweep: scratch memory of {n_failed} document block(s) could not be allocated")
    tot = np.asarray(counters).sum(axis=0)
    return int(tot[0]), int(tot[1])


def build_alias(const double[:, ::1] phi, const double[::1] b, double[:, ::1] prob,
                int32_t[:, ::1] alias, double[::1] mass, int n_threads):
    """Walker's alias table of every term over ``w_k = phi_vk b_k`` (Vose's method).

    ``mass[v] = sum_k w_k``; drawing ``i`` uniformly from ``0..K-1`` and keeping
    it with probability ``prob[v, i]`` (else taking ``alias[v, i]``) gives
    ``k`` with probability ``w_k / mass[v]``.  No randomness: parallel over
    terms, the same tables for any thread count.  A term whose weights all
    underflow gets ``mass[v] = 0`` (the sweep then never uses its table).
    """
    cdef Py_ssize_t V = phi.shape[0], K = phi.shape[1], v, k
    cdef int32_t *small
    cdef int32_t *large
    cdef double *p
    cdef Py_ssize_t ns, nl
    cdef int32_t l, s
    cdef double total
    cdef int n_failed = 0
    for v in prange(V, nogil=True, num_threads=n_threads, schedule="static"):
        small = <int32_t *> malloc(K * sizeof(int32_t))
        large = <int32_t *> malloc(K * sizeof(int32_t))
        if small == NULL or large == NULL:
            n_failed += 1
        else:
            p = &prob[v, 0]
            total = 0.0
            for k in range(K):
                p[k] = phi[v, k] * b[k]
                total = total + p[k]
            mass[v] = total
            if not (total > 0.0):
                for k in range(K):
                    p[k] = 1.0
                    alias[v, k] = <int32_t> k
            else:
                ns = 0
                nl = 0
                for k in range(K):
                    p[k] = p[k] * K / total
                    if p[k] < 1.0:
                        small[ns] = <int32_t> k
                        ns = ns + 1
                    else:
                        large[nl] = <int32_t> k
                        nl = nl + 1
                while ns > 0 and nl > 0:
                    ns = ns - 1
                    s = small[ns]
                    l = large[nl - 1]
                    alias[v, s] = l
                    p[l] = (p[l] + p[s]) - 1.0
                    if p[l] < 1.0:
                        nl = nl - 1
                        small[ns] = l
                        ns = ns + 1
                while nl > 0:
                    nl = nl - 1
                    p[large[nl]] = 1.0
                    alias[v, large[nl]] = large[nl]
                while ns > 0:
                    ns = ns - 1
                    p[small[ns]] = 1.0
                    alias[v, small[ns]] = small[ns]
        free(small)
        free(large)
    if n_failed:
        raise MemoryError("build_alias: scratch memory could not be allocated")


def count_doc_labels(const int64_t[::1] doc_ptr, const topic_t[::1] labels, doc_count_t[:, ::1] njk):
    """``njk`` (J, K) overwritten with the documents' label counts."""
    cdef Py_ssize_t J = njk.shape[0], K = njk.shape[1], j, k
    cdef int64_t i
    with nogil:
        for j in range(J):
            for k in range(K):
                njk[j, k] = 0
            for i in range(doc_ptr[j], doc_ptr[j + 1]):
                njk[j, labels[i]] += 1


def count_term_labels(const int64_t[::1] indptr, const int32_t[::1] indices, const double[::1] values,
                      const topic_t[::1] labels, int64_t[:, ::1] nvk):
    """``nvk`` (V, K) overwritten with the term-topic counts of the labels (tokens in CSR order)."""
    cdef Py_ssize_t V = nvk.shape[0], K = nvk.shape[1], v, k, c
    cdef int64_t i, tok = 0
    with nogil:
        for v in range(V):
            for k in range(K):
                nvk[v, k] = 0
        for c in range(indices.shape[0]):
            v = indices[c]
            for i in range(<int64_t> values[c]):
                nvk[v, labels[tok]] += 1
                tok += 1
