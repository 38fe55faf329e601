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

One helper per step: ``_start_document`` (the per-document set-up),
``_shuffle_tokens``, ``_remove_token`` / ``_add_token`` (counts, the
document's topic list and the term's sorted topic list), ``_draw_topic``
(``_word_bucket``, then ``_pick_in_word_bucket``, ``_pick_in_document_bucket``
or ``_pick_in_smoothing_bucket``); all share one ``Sweep`` state.
"""
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free
from cpython.pycapsule cimport PyCapsule_GetPointer
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport random_standard_uniform, random_interval


cdef inline void _list_remove(int32_t *lst, int32_t *length, int32_t *pos, int32_t k) noexcept nogil:
    """Remove ``k`` from an unordered list ``lst[:length]`` whose positions are
    ``pos`` (the last entry takes its place)."""
    cdef int32_t p = pos[k]
    cdef int32_t last = lst[length[0] - 1]
    lst[p] = last
    pos[last] = p
    pos[k] = -1
    length[0] -= 1


cdef inline void _list_add(int32_t *lst, int32_t *length, int32_t *pos, int32_t k) noexcept nogil:
    """Append ``k`` to the unordered list ``lst[:length]`` with positions ``pos``."""
    pos[k] = length[0]
    lst[length[0]] = k
    length[0] += 1


cdef inline void _swap(int32_t *wlist, int32_t *wpos, int32_t p, int32_t q) noexcept nogil:
    """Swap entries p and q of a term's (topic, count) list and fix the positions."""
    cdef int32_t topic = wlist[2 * p], count = wlist[2 * p + 1]
    wlist[2 * p] = wlist[2 * q]
    wlist[2 * p + 1] = wlist[2 * q + 1]
    wlist[2 * q] = topic
    wlist[2 * q + 1] = count
    wpos[wlist[2 * p]] = p
    wpos[wlist[2 * q]] = q


# ---------------------------------------------------------------------------
# The state of a sweep and the steps of one token
# ---------------------------------------------------------------------------

cdef struct Sweep:
    Py_ssize_t n_topics       # K
    double eta                # Dirichlet concentration of Phi^(1)
    double v_eta              # V * eta
    int64_t *topic_counts     # n_k
    double *inv_denom         # 1 / D_k = 1 / (V eta + n_k)
    # the document being swept
    const double *prior       # a_jk
    int64_t *doc_counts       # n_jk
    double *coef              # c_k = (n_jk + a_jk) / D_k
    int32_t *doc_topics       # the topics with n_jk > 0, in no order
    int32_t *doc_topic_pos    # position of topic k in doc_topics (-1 if n_jk = 0)
    int32_t n_doc_topics
    double doc_mass           # sum_k n_jk / D_k: the document bucket is eta times this
    double smooth_mass        # sum_k a_jk / D_k: the smoothing bucket is eta times this
    # the token being swept
    double *word_terms        # n_wk c_k, in the order of the word's topic list


cdef inline void _start_document(Sweep *state, const double *prior, int64_t *doc_counts) noexcept nogil:
    """Per-document set-up, O(K): the coefficients, both bucket masses and the
    list of the document's topics."""
    cdef const double *inv_d = state.inv_denom
    cdef double *coef = state.coef
    cdef int32_t *topics = state.doc_topics
    cdef int32_t *pos = state.doc_topic_pos
    cdef double smooth = 0.0, doc = 0.0
    cdef int32_t n = 0
    cdef Py_ssize_t k
    for k in range(state.n_topics):
        coef[k] = (doc_counts[k] + prior[k]) * inv_d[k]
        smooth += prior[k] * inv_d[k]
        if doc_counts[k] > 0:
            pos[k] = n
            topics[n] = <int32_t> k
            n += 1
            doc += doc_counts[k] * inv_d[k]
        else:
            pos[k] = -1
    state.prior = prior
    state.doc_counts = doc_counts
    state.smooth_mass = smooth
    state.doc_mass = doc
    state.n_doc_topics = n


cdef inline void _shuffle_tokens(bitgen_t *g, int32_t *tok_w, int32_t *tok_z, int64_t start,
                                 int64_t end) noexcept nogil:
    """Fisher-Yates shuffle of the tokens ``start:end`` (terms and labels together)."""
    cdef int64_t i, other
    cdef int32_t tmp
    for i in range(end - 1, start, -1):
        other = start + <int64_t> random_interval(g, <uint64_t> (i - start))
        tmp = tok_w[i]; tok_w[i] = tok_w[other]; tok_w[other] = tmp
        tmp = tok_z[i]; tok_z[i] = tok_z[other]; tok_z[other] = tmp


cdef inline void _move_token_count(Sweep *state, int32_t k, int32_t delta) noexcept nogil:
    """Add ``delta`` to ``n_jk`` and ``n_k``, keeping ``1 / D_k``, ``c_k`` and the
    two bucket masses up to date (the topic's old share out, its new share in)."""
    cdef const double *a = state.prior
    cdef int64_t *nj = state.doc_counts
    cdef double *inv_d = state.inv_denom
    cdef double smooth = state.smooth_mass - a[k] * inv_d[k]
    cdef double doc = state.doc_mass - nj[k] * inv_d[k]
    nj[k] += delta
    state.topic_counts[k] += delta
    inv_d[k] = 1.0 / (state.v_eta + state.topic_counts[k])
    state.smooth_mass = smooth + a[k] * inv_d[k]
    state.doc_mass = doc + nj[k] * inv_d[k]
    state.coef[k] = (nj[k] + a[k]) * inv_d[k]


cdef inline void _word_topic_decrement(int32_t *wlist, int32_t *wpos, int32_t *wlen,
                                       int32_t k) noexcept nogil:
    """``n_wk -= 1`` in a term's (topic, count) list, kept sorted by decreasing
    count (as in SparseLDA, so that the word-bucket search usually stops early)."""
    cdef int32_t p = wpos[k], n = wlen[0]
    wlist[2 * p + 1] -= 1
    while p + 1 < n and wlist[2 * p + 1] < wlist[2 * p + 3]:
        _swap(wlist, wpos, p, p + 1)
        p += 1
    if wlist[2 * p + 1] == 0:
        # a zero count sorts last: drop it
        wpos[k] = -1
        wlen[0] = n - 1


cdef inline void _word_topic_increment(int32_t *wlist, int32_t *wpos, int32_t *wlen,
                                       int32_t k) noexcept nogil:
    """``n_wk += 1`` in a term's (topic, count) list, kept sorted by decreasing count."""
    cdef int32_t p = wpos[k]
    if p < 0:
        p = wlen[0]
        wlist[2 * p] = k
        wlist[2 * p + 1] = 1
        wpos[k] = p
        wlen[0] = p + 1
    else:
        wlist[2 * p + 1] += 1
    while p > 0 and wlist[2 * p + 1] > wlist[2 * p - 1]:
        _swap(wlist, wpos, p, p - 1)
        p -= 1


cdef inline void _remove_token(Sweep *state, int32_t *wlist, int32_t *wpos, int32_t *wlen,
                               int32_t k) noexcept nogil:
    """Take a token of topic ``k`` out of the counts, the document's topics and
    its term's list."""
    _move_token_count(state, k, -1)
    if state.doc_counts[k] == 0:
        _list_remove(state.doc_topics, &state.n_doc_topics, state.doc_topic_pos, k)
    _word_topic_decrement(wlist, wpos, wlen, k)


cdef inline void _add_token(Sweep *state, int32_t *wlist, int32_t *wpos, int32_t *wlen,
                            int32_t k) noexcept nogil:
    """Put a token back with topic ``k``."""
    _move_token_count(state, k, 1)
    if state.doc_counts[k] == 1:
        _list_add(state.doc_topics, &state.n_doc_topics, state.doc_topic_pos, k)
    _word_topic_increment(wlist, wpos, wlen, k)


cdef inline double _word_bucket(Sweep *state, const int32_t *wlist, int32_t n) noexcept nogil:
    """The word bucket ``sum_k n_wk c_k`` over the term's ``n`` topics; its terms
    go to ``state.word_terms``.  One sequential pass, two accumulators (even and
    odd entries, added at the end)."""
    cdef double *terms = state.word_terms
    cdef const double *coef = state.coef
    cdef double even = 0.0, odd = 0.0, t0, t1
    cdef Py_ssize_t i = 0
    while i + 1 < n:
        t0 = wlist[2 * i + 1] * coef[wlist[2 * i]]
        t1 = wlist[2 * i + 3] * coef[wlist[2 * i + 2]]
        terms[i] = t0
        terms[i + 1] = t1
        even += t0
        odd += t1
        i += 2
    if i < n:
        t0 = wlist[2 * i + 1] * coef[wlist[2 * i]]
        terms[i] = t0
        even += t0
    return even + odd


cdef inline int32_t _pick_in_word_bucket(const Sweep *state, const int32_t *wlist, int32_t n,
                                         double u) noexcept nogil:
    """The topic at ``u`` (in ``[0, word bucket)``) of the word bucket."""
    cdef const double *terms = state.word_terms
    cdef Py_ssize_t i = 0
    while i < n - 1 and u >= terms[i]:
        u -= terms[i]
        i += 1
    return wlist[2 * i]


cdef inline int32_t _pick_in_document_bucket(const Sweep *state, double u) noexcept nogil:
    """The topic at ``u`` (in ``[0, doc_mass)``) of the document bucket, over the
    document's topics."""
    cdef Py_ssize_t i = 0, k
    cdef double t
    while i < state.n_doc_topics - 1:
        k = state.doc_topics[i]
        t = state.doc_counts[k] * state.inv_denom[k]
        if u < t:
            break
        u -= t
        i += 1
    return state.doc_topics[i]


cdef inline int32_t _pick_in_smoothing_bucket(const Sweep *state, double u) noexcept nogil:
    """The topic at ``u`` (in ``[0, smooth_mass)``) of the smoothing bucket, over
    all topics, O(K); the last topic of positive weight if rounding overshoots."""
    cdef int32_t k = -1
    cdef Py_ssize_t kk
    cdef double t
    for kk in range(state.n_topics):
        t = state.prior[kk] * state.inv_denom[kk]
        if t > 0.0:
            k = <int32_t> kk
            if u < t:
                break
            u -= t
    return k if k >= 0 else 0


cdef inline int32_t _draw_topic(bitgen_t *g, Sweep *state, const int32_t *wlist, int32_t n) noexcept nogil:
    """Draw a token's topic from eq:z: one uniform over the three buckets."""
    cdef double word = _word_bucket(state, wlist, n)
    cdef double u
    if state.doc_mass < 0.0:       # rounding of the running masses
        state.doc_mass = 0.0
    if state.smooth_mass < 0.0:
        state.smooth_mass = 0.0
    u = random_standard_uniform(g) * (word + state.eta * (state.doc_mass + state.smooth_mass))
    if u < word:
        return _pick_in_word_bucket(state, wlist, n, u)
    u = (u - word) / state.eta
    if u < state.doc_mass and state.n_doc_topics > 0:
        return _pick_in_document_bucket(state, u)
    return _pick_in_smoothing_bucket(state, u - state.doc_mass)


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
    cdef bint shared = prior.shape[0] == 1
    cdef Sweep state
    cdef Py_ssize_t o, j, k
    cdef int64_t i, start, end
    cdef int32_t w, z
    state.n_topics = K
    state.eta = eta
    state.v_eta = wpos.shape[0] * eta
    state.topic_counts = &nk[0]
    state.inv_denom = <double *> malloc(K * sizeof(double))
    state.coef = <double *> malloc(K * sizeof(double))
    state.word_terms = <double *> malloc(K * sizeof(double))
    state.doc_topics = <int32_t *> malloc(K * sizeof(int32_t))
    state.doc_topic_pos = <int32_t *> malloc(K * sizeof(int32_t))
    try:
        if (state.inv_denom == NULL or state.coef == NULL or state.word_terms == NULL
                or state.doc_topics == NULL or state.doc_topic_pos == NULL):
            raise MemoryError()
        with bit_generator.lock, nogil:
            for k in range(K):
                state.inv_denom[k] = 1.0 / (state.v_eta + state.topic_counts[k])
            for o in range(doc_order.shape[0]):
                j = doc_order[o]
                start = doc_ptr[j]
                end = doc_ptr[j + 1]
                if end <= start:
                    continue
                _start_document(&state, &prior[0 if shared else j, 0], &njk[j, 0])
                _shuffle_tokens(g, &tok_w[0], &tok_z[0], start, end)
                for i in range(start, end):
                    w = tok_w[i]
                    _remove_token(&state, &wlist[w, 0], &wpos[w, 0], &wlen[w], tok_z[i])
                    z = _draw_topic(g, &state, &wlist[w, 0], wlen[w])
                    _add_token(&state, &wlist[w, 0], &wpos[w, 0], &wlen[w], z)
                    tok_z[i] = z
    finally:
        free(state.inv_denom); free(state.coef); free(state.word_terms)
        free(state.doc_topics); free(state.doc_topic_pos)


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
