# cython: language_level=3
"""Collapsed Gibbs sweep over the layer-one topic labels (paper eq:z).

With Phi^(1) and theta^(1) integrated out, the label of token ``i`` of
document ``j`` (term ``w``) is drawn from

    P(z = k | -)  ∝  (eta + n_wk) / (V eta + n_k) * (n_jk + a_jk),

where the counts exclude the token itself and ``a_jk`` is the document's
prior shape: ``r_k`` when the network has one layer, ``(Phi^(2) theta_j^(2))_k``
otherwise.  The sweep visits the documents of a range in order and the tokens
of each document in the order of the data (the document's stored terms in
CSR order, the tokens of one term one after another); one stream, GIL
released.  That is a fixed scan order of the same single-site conditionals:
every update leaves the posterior invariant, so the sweep does too.

Exact sparse decomposition (after Yao, Mimno & McCallum 2009, "SparseLDA"),
with ``D_k = V eta + n_k`` and ``c_k = (n_jk + a_jk) / D_k``:

    (eta + n_wk)(n_jk + a_jk) / D_k
        =  n_wk c_k                      word bucket: topics with n_wk > 0
         + eta n_jk / D_k                document bucket: topics with n_jk > 0
         + eta a_jk / D_k                smoothing bucket: all topics

The bucket totals of the document and smoothing buckets are kept up to date
incrementally (only one topic changes per token move) and recomputed exactly
every ``refresh`` tokens, so that their rounding cannot drift however long a
document is; the document bucket's total is also computed afresh at the start
of every document.  The word bucket is summed over the word's non-zero topics.
So a token costs O(#topics of its word + #topics of its document), plus O(K)
only in the rare event that the smoothing bucket is chosen.  A document costs
O(its tokens + its topics) to set up when the prior is one shared row (the
coefficients of the topics it does not use are shared by all documents), and
O(K) when every document has its own prior row.  The result is the exact
conditional, not an approximation.

Data layout (see :class:`pygbn.inference.collapsed_state.CollapsedState`):
the tokens are not stored; the data's CSR arrays say which term each token
has (stored cell ``c`` of row ``j`` holds ``values[c]`` tokens of term
``indices[c]``) and ``labels`` holds one label per token in that order, as
int16 when K <= 32767.  The term-topic counts are one compact list per term
(``wlist``, pairs (topic, count) sorted by decreasing count, capacity
``min(K, tokens of the term)``) with positions ``wpos``; the document-topic
counts ``n_jk`` are written to a compact (J, K) array (uint16 when no document
holds more than 65535 tokens) and held, while a document is swept, in a
dense K-vector.

One helper per step: ``_start_document`` / ``_end_document`` (the
per-document set-up and write-back), ``_refresh_masses``, ``_remove_token``
/ ``_add_token`` (counts, the document's topic list and the term's sorted
topic list), ``_draw_topic`` (``_word_bucket``, then
``_pick_in_word_bucket``, ``_pick_in_document_bucket`` or
``_pick_in_smoothing_bucket``); all share one ``Sweep`` state.
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, calloc, free, qsort
from cpython.pycapsule cimport PyCapsule_GetPointer
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport random_standard_uniform

#: tokens between two exact recomputations of the bucket totals
REFRESH = 4096

ctypedef fused topic_t:
    # a label, or a position in a term's topic list: int16 when K <= 32767
    int16_t
    int32_t

ctypedef fused doc_count_t:
    # n_jk: uint16 when no document holds more than 65535 tokens
    uint16_t
    int32_t


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


cdef inline void _swap(int32_t *wlist, topic_t *wpos, int32_t p, int32_t q) noexcept nogil:
    """Swap entries p and q of a term's (topic, count) list and fix the positions."""
    cdef int32_t topic = wlist[2 * p], count = wlist[2 * p + 1]
    wlist[2 * p] = wlist[2 * q]
    wlist[2 * p + 1] = wlist[2 * q + 1]
    wlist[2 * q] = topic
    wlist[2 * q + 1] = count
    wpos[wlist[2 * p]] = <topic_t> p
    wpos[wlist[2 * q]] = <topic_t> q


# ---------------------------------------------------------------------------
# The state of a sweep and the steps of one token
# ---------------------------------------------------------------------------

cdef struct Sweep:
    Py_ssize_t n_topics       # K
    double eta                # Dirichlet concentration of Phi^(1)
    double v_eta              # V * eta
    int64_t *topic_counts     # n_k
    double *inv_denom         # 1 / D_k = 1 / (V eta + n_k)
    bint shared_prior         # one prior row for every document
    # the document being swept
    const double *prior       # a_jk
    int32_t *doc_counts       # n_jk (zero outside the document's topics)
    double *coef              # c_k = (n_jk + a_jk) / D_k, every k
    int32_t *doc_topics       # the topics with n_jk > 0, in no order
    int32_t *doc_topic_pos    # position of topic k in doc_topics (-1 if n_jk = 0)
    int32_t n_doc_topics
    double doc_mass           # sum_k n_jk / D_k: the document bucket is eta times this
    double smooth_mass        # sum_k a_jk / D_k: the smoothing bucket is eta times this
    # the token being swept
    double *word_terms        # n_wk c_k, in the order of the word's topic list


cdef inline void _refresh_masses(Sweep *state) noexcept nogil:
    """Both bucket totals recomputed exactly from their terms (O(K))."""
    cdef const double *a = state.prior
    cdef const double *inv_d = state.inv_denom
    cdef double smooth = 0.0, doc = 0.0
    cdef Py_ssize_t k, i
    for k in range(state.n_topics):
        smooth += a[k] * inv_d[k]
    for i in range(state.n_doc_topics):
        k = state.doc_topics[i]
        doc += state.doc_counts[k] * inv_d[k]
    state.smooth_mass = smooth
    state.doc_mass = doc


cdef inline void _start_document(Sweep *state, const double *prior, const topic_t *labels,
                                 int64_t n_tokens, doc_count_t *njk_row) noexcept nogil:
    """Per-document set-up: ``n_jk`` and the list of the document's topics from
    its labels (the old counts are cleared from ``njk_row``, which
    :func:`_end_document` fills again), the coefficients and the document
    bucket's total; with a prior row of its own, the coefficients of every
    topic and the smoothing bucket's total too (O(K))."""
    cdef int32_t *nj = state.doc_counts
    cdef const double *inv_d = state.inv_denom
    cdef double doc = 0.0, smooth = 0.0
    cdef int64_t i
    cdef Py_ssize_t k
    cdef int32_t n = 0
    for i in range(n_tokens):
        k = labels[i]
        if nj[k] == 0:
            state.doc_topic_pos[k] = n
            state.doc_topics[n] = <int32_t> k
            n += 1
            njk_row[k] = 0
        nj[k] += 1
    state.n_doc_topics = n
    state.prior = prior
    if state.shared_prior:
        for i in range(n):
            k = state.doc_topics[i]
            state.coef[k] = (nj[k] + prior[k]) * inv_d[k]
    else:
        for k in range(state.n_topics):
            state.coef[k] = (nj[k] + prior[k]) * inv_d[k]
            smooth += prior[k] * inv_d[k]
        state.smooth_mass = smooth
    for i in range(n):
        k = state.doc_topics[i]
        doc += nj[k] * inv_d[k]
    state.doc_mass = doc


cdef inline void _end_document(Sweep *state, doc_count_t *njk_row) noexcept nogil:
    """Write ``n_jk`` to the document's row and clear the scratch state (its
    topics' counts, positions and, with a shared prior, coefficients)."""
    cdef int32_t *nj = state.doc_counts
    cdef Py_ssize_t i, k
    for i in range(state.n_doc_topics):
        k = state.doc_topics[i]
        njk_row[k] = <doc_count_t> nj[k]
        nj[k] = 0
        state.doc_topic_pos[k] = -1
        if state.shared_prior:
            state.coef[k] = state.prior[k] * state.inv_denom[k]
    state.n_doc_topics = 0


cdef inline void _move_token_count(Sweep *state, int32_t k, int32_t delta) noexcept nogil:
    """Add ``delta`` to ``n_jk`` and ``n_k``, keeping ``1 / D_k``, ``c_k`` and the
    two bucket totals up to date (the topic's old share out, its new share in)."""
    cdef const double *a = state.prior
    cdef int32_t *nj = state.doc_counts
    cdef double *inv_d = state.inv_denom
    cdef double smooth = state.smooth_mass - a[k] * inv_d[k]
    cdef double doc = state.doc_mass - nj[k] * inv_d[k]
    nj[k] += delta
    state.topic_counts[k] += delta
    inv_d[k] = 1.0 / (state.v_eta + state.topic_counts[k])
    state.smooth_mass = smooth + a[k] * inv_d[k]
    state.doc_mass = doc + nj[k] * inv_d[k]
    state.coef[k] = (nj[k] + a[k]) * inv_d[k]


cdef inline void _word_topic_decrement(int32_t *wlist, topic_t *wpos, int32_t *wlen,
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


cdef inline void _word_topic_increment(int32_t *wlist, topic_t *wpos, int32_t *wlen,
                                       int32_t k) noexcept nogil:
    """``n_wk += 1`` in a term's (topic, count) list, kept sorted by decreasing count."""
    cdef int32_t p = wpos[k]
    if p < 0:
        p = wlen[0]
        wlist[2 * p] = k
        wlist[2 * p + 1] = 1
        wpos[k] = <topic_t> p
        wlen[0] = p + 1
    else:
        wlist[2 * p + 1] += 1
    while p > 0 and wlist[2 * p + 1] > wlist[2 * p - 1]:
        _swap(wlist, wpos, p, p - 1)
        p -= 1


cdef inline void _remove_token(Sweep *state, int32_t *wlist, topic_t *wpos, int32_t *wlen,
                               int32_t k) noexcept nogil:
    """Take a token of topic ``k`` out of the counts, the document's topics and
    its term's list."""
    _move_token_count(state, k, -1)
    if state.doc_counts[k] == 0:
        _list_remove(state.doc_topics, &state.n_doc_topics, state.doc_topic_pos, k)
    _word_topic_decrement(wlist, wpos, wlen, k)


cdef inline void _add_token(Sweep *state, int32_t *wlist, topic_t *wpos, int32_t *wlen,
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
    if state.doc_mass < 0.0:       # rounding of the running totals
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


def collapsed_sweep(const int64_t[::1] indptr, const int32_t[::1] indices, const double[::1] values,
                    const int64_t[::1] doc_ptr, topic_t[::1] labels, Py_ssize_t first, Py_ssize_t stop,
                    int64_t[::1] nk, doc_count_t[:, ::1] njk, const int64_t[::1] wptr,
                    int32_t[::1] wlist, int32_t[::1] wlen, topic_t[:, ::1] wpos,
                    const double[:, ::1] prior, double eta, bit_generator,
                    Py_ssize_t refresh=REFRESH):
    """One collapsed sweep over the tokens of documents ``first:stop`` (eq:z),
    updating labels and counts in place.

    Parameters
    ----------
    indptr, indices, values : int64, int32, float64 arrays
        The data as CSR (documents x terms, canonical, integral counts).
    doc_ptr : int64 array (J + 1,)
        The labels of document ``j`` are ``labels[doc_ptr[j]:doc_ptr[j + 1]]``,
        in the order of its stored cells, ``values[c]`` tokens for cell ``c``.
    labels : int16 or int32 array (N,)
        The topic of every token.
    first, stop : int
        The documents to sweep, in order.
    nk : int64 array (K,)
        Topic counts, consistent with ``labels``.
    njk : uint16 or int32 array (J, K)
        Document-topic counts, consistent with ``labels`` (rows ``first:stop``
        are rewritten).
    wptr, wlist, wlen, wpos : int64 (V + 1,), int32 (2 C,), int32 (V,), int16 or int32 (V, K)
        The term-topic counts ``n_wk`` as one compact list per term: entry
        ``i < wlen[w]`` of term ``w`` is the pair
        ``(wlist[2 (wptr[w] + i)], wlist[2 (wptr[w] + i) + 1])`` = (topic, count),
        every count positive, sorted by decreasing count;
        ``wpos[w, k]`` is topic k's entry (-1 if ``n_wk = 0``).  A term's
        word bucket is then one sequential pass over adjacent memory.  Term
        ``w`` has room for ``wptr[w + 1] - wptr[w]`` topics (at least
        ``min(K, its tokens)``).  See :func:`build_word_lists` and
        :func:`word_counts`.
    prior : float64 array (stop - first, K) or (1, K)
        The prior shapes ``a_jk`` of the swept documents (row ``j - first``), or
        one row shared by all; > 0.
    eta : float
        Dirichlet concentration of Phi^(1).
    bit_generator : numpy BitGenerator
        The stream (its lock is held during the sweep).
    refresh : int, default=REFRESH
        Tokens between two exact recomputations of the bucket totals (1: at
        every token).  Any value gives the same distribution; it bounds the
        rounding drift of the running totals.

    Equivalent to, for each document ``j`` in ``first:stop`` and each of its
    tokens ``i`` in order::

        remove token i from the counts
        p = (eta + nwk[w_i]) / (V * eta + nk) * (njk[j] + a[j])
        z_i = rng.choice(K, p=p / p.sum())
        add token i back with label z_i
    """
    cdef bitgen_t *g = <bitgen_t *> PyCapsule_GetPointer(bit_generator.capsule, "BitGenerator")
    cdef Py_ssize_t K = nk.shape[0]
    cdef Sweep state
    cdef Py_ssize_t j, k
    cdef int64_t c, i, n, tok, left = refresh if refresh > 0 else 1
    cdef int32_t w, z
    cdef int32_t *wl
    cdef topic_t *wp
    cdef int32_t *wn
    state.n_topics = K
    state.eta = eta
    state.v_eta = wpos.shape[0] * eta
    state.topic_counts = &nk[0]
    state.shared_prior = prior.shape[0] == 1
    state.prior = &prior[0, 0]
    state.n_doc_topics = 0
    state.inv_denom = <double *> malloc(K * sizeof(double))
    state.coef = <double *> malloc(K * sizeof(double))
    state.word_terms = <double *> malloc(K * sizeof(double))
    state.doc_counts = <int32_t *> calloc(K, sizeof(int32_t))
    state.doc_topics = <int32_t *> malloc(K * sizeof(int32_t))
    state.doc_topic_pos = <int32_t *> malloc(K * sizeof(int32_t))
    try:
        if (state.inv_denom == NULL or state.coef == NULL or state.word_terms == NULL
                or state.doc_counts == NULL or state.doc_topics == NULL
                or state.doc_topic_pos == NULL):
            raise MemoryError()
        with bit_generator.lock, nogil:
            for k in range(K):
                state.inv_denom[k] = 1.0 / (state.v_eta + state.topic_counts[k])
                state.coef[k] = prior[0, k] * state.inv_denom[k]
                state.doc_topic_pos[k] = -1
            _refresh_masses(&state)
            for j in range(first, stop):
                tok = doc_ptr[j]
                if doc_ptr[j + 1] <= tok:
                    continue
                _start_document(&state, &prior[0 if state.shared_prior else j - first, 0],
                                &labels[tok], doc_ptr[j + 1] - tok, &njk[j, 0])
                for c in range(indptr[j], indptr[j + 1]):
                    w = indices[c]
                    wl = &wlist[2 * wptr[w]]
                    wp = &wpos[w, 0]
                    wn = &wlen[w]
                    n = <int64_t> values[c]
                    for i in range(n):
                        left -= 1
                        if left == 0:
                            _refresh_masses(&state)
                            left = refresh
                        _remove_token(&state, wl, wp, wn, labels[tok])
                        z = _draw_topic(g, &state, wl, wn[0])
                        _add_token(&state, wl, wp, wn, z)
                        labels[tok] = <topic_t> z
                        tok += 1
                _end_document(&state, &njk[j, 0])
    finally:
        free(state.inv_denom); free(state.coef); free(state.word_terms)
        free(state.doc_counts); free(state.doc_topics); free(state.doc_topic_pos)


# ---------------------------------------------------------------------------
# Building the counts from the labels
# ---------------------------------------------------------------------------

def token_layout(const int64_t[::1] indptr, const int32_t[::1] indices, const double[::1] values,
                 int64_t[::1] doc_ptr, int64_t[::1] term_tokens):
    """Token offsets of the documents and tokens per term of the CSR data.

    ``doc_ptr[j]`` (J + 1 entries) becomes the first token of document j
    (its labels are ``labels[doc_ptr[j]:doc_ptr[j + 1]]``) and
    ``term_tokens[v]`` the tokens of term v (overwritten).  Returns the
    largest document's token count.
    """
    cdef Py_ssize_t J = indptr.shape[0] - 1, V = term_tokens.shape[0], j, v
    cdef int64_t c, n, total = 0, longest = 0
    with nogil:
        for v in range(V):
            term_tokens[v] = 0
        doc_ptr[0] = 0
        for j in range(J):
            n = 0
            for c in range(indptr[j], indptr[j + 1]):
                n += <int64_t> values[c]
                term_tokens[indices[c]] += <int64_t> values[c]
            total += n
            doc_ptr[j + 1] = total
            if n > longest:
                longest = n
    return longest


def count_labels(const int64_t[::1] indptr, const int32_t[::1] indices, const double[::1] values,
                 const topic_t[::1] labels, int32_t[:, ::1] nwk, doc_count_t[:, ::1] njk,
                 int64_t[::1] nk):
    """The counts implied by the labels: ``nwk`` (V, K), ``njk`` (J, K) and
    ``nk`` (K,), overwritten (tokens in the order of :func:`collapsed_sweep`)."""
    cdef Py_ssize_t J = njk.shape[0], K = njk.shape[1], V = nwk.shape[0]
    cdef Py_ssize_t j, k, v
    cdef int64_t c, i, tok = 0
    cdef int32_t z
    with nogil:
        for v in range(V):
            for k in range(K):
                nwk[v, k] = 0
        for k in range(K):
            nk[k] = 0
        for j in range(J):
            for k in range(K):
                njk[j, k] = 0
            for c in range(indptr[j], indptr[j + 1]):
                v = indices[c]
                for i in range(<int64_t> values[c]):
                    z = labels[tok]
                    nwk[v, z] += 1
                    njk[j, z] += 1
                    nk[z] += 1
                    tok += 1


def relabel(topic_t[::1] labels, const int64_t[::1] new_index):
    """``labels[i] = new_index[labels[i]]`` in place."""
    cdef Py_ssize_t i
    with nogil:
        for i in range(labels.shape[0]):
            labels[i] = <topic_t> new_index[labels[i]]


cdef int _by_decreasing_key(const void *a, const void *b) noexcept nogil:
    cdef uint64_t x = (<const uint64_t *> a)[0], y = (<const uint64_t *> b)[0]
    return (x < y) - (x > y)


def build_word_lists(const int32_t[:, ::1] nwk, const int64_t[::1] wptr, int32_t[::1] wlist,
                     int32_t[::1] wlen, topic_t[:, ::1] wpos):
    """Fill the per-term (topic, count) lists of :func:`collapsed_sweep` from
    dense counts ``nwk`` (V, K), sorted by decreasing count (ties by topic)."""
    cdef Py_ssize_t V = nwk.shape[0], K = nwk.shape[1], v, k
    cdef int32_t n, p
    cdef int64_t base
    cdef uint64_t *keys = <uint64_t *> malloc(max(K, 1) * sizeof(uint64_t))
    if keys == NULL:
        raise MemoryError()
    try:
        with nogil:
            for v in range(V):
                n = 0
                for k in range(K):
                    wpos[v, k] = -1
                    if nwk[v, k] > 0:
                        # larger counts first, then smaller topics first
                        keys[n] = (<uint64_t> nwk[v, k] << 32) | <uint64_t> (K - 1 - k)
                        n += 1
                qsort(keys, n, sizeof(uint64_t), _by_decreasing_key)
                base = 2 * wptr[v]
                for p in range(n):
                    k = K - 1 - <Py_ssize_t> (<uint32_t> keys[p])
                    wlist[base + 2 * p] = <int32_t> k
                    wlist[base + 2 * p + 1] = <int32_t> (keys[p] >> 32)
                    wpos[v, k] = <topic_t> p
                wlen[v] = n
    finally:
        free(keys)


def word_counts(const int64_t[::1] wptr, const int32_t[::1] wlist, const int32_t[::1] wlen,
                int32_t[:, ::1] nwk):
    """Dense term-topic counts ``nwk`` (V, K) from the per-term lists (overwrites ``nwk``)."""
    cdef Py_ssize_t V = nwk.shape[0], K = nwk.shape[1], v, k, i
    cdef int64_t base
    with nogil:
        for v in range(V):
            for k in range(K):
                nwk[v, k] = 0
            base = 2 * wptr[v]
            for i in range(wlen[v]):
                nwk[v, wlist[base + 2 * i]] = wlist[base + 2 * i + 1]
