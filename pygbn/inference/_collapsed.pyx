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
of every document.  The word bucket is summed over the word's non-zero topics, from the term's
sorted list, or, for a term that uses many topics, over its dense row of
counts (the blocks' running totals only, by SSE2 or AVX with the same
summation tree as the scalar loop; the search counts the running totals at or
below the uniform, without a branch on it, then searches the one block it
lands in, whose products it recomputes).  The reciprocal ``1 / D_k`` a move needs is divided out ahead of need.  So a token costs
O(min(K, #topics of its word) + #topics of its document), plus O(K) only in
the rare event that the smoothing bucket is chosen.  A document costs
O(its tokens + its topics) to set up when the prior is one shared row (the
coefficients of the topics it does not use are shared by all documents), and
O(K) when every document has its own prior row.  The result is the exact
conditional, not an approximation.

Data layout (see :class:`pygbn.inference.collapsed_state.CollapsedState`):
the tokens are not stored; the data's CSR arrays say which term each token
has (stored cell ``c`` of row ``j`` holds ``values[c]`` tokens of term
``indices[c]``) and ``labels`` holds one label per token in that order, as
int16 when K <= 32767.  The term-topic counts are a dense (V, K) int32 array
``nwk`` plus, for each term that uses fewer than K / DENSE_SHARE topics, a
compact list (``wlist``, pairs (topic, count) sorted by decreasing count,
capacity ``min(K, tokens of the term)``); a term that comes to use many
topics drops its list (``wdense``) and gets it back, rebuilt from its row,
when it uses fewer than half as many.  During a sweep a listed term's counts
are kept in its list only: its row is rewritten from the list when the term
turns dense and, for the terms still listed, once after the sweep (so a
token of a listed term touches no (V, K) row, which is seldom in cache when
V is large).  The next term's row or list is prefetched while the tokens of
the current one are drawn.  The document-topic counts ``n_jk`` are
written to a compact (J, K) array (uint8 when no document holds more than
255 tokens, uint16 up to 65535) and held, while a document is swept, in a dense K-vector.

One helper per step: ``_start_document`` / ``_end_document`` (the
per-document set-up and write-back), ``_refresh_masses``, ``_remove_token``
/ ``_add_token`` (the counts, the document's topic list and the term's row
and list), ``_draw_topic`` (``_word_bucket`` or ``_dense_word_bucket``, then
``_pick_in_word_bucket``, ``_pick_in_dense_word_bucket``,
``_pick_in_document_bucket`` or ``_pick_in_smoothing_bucket``); all share one
``Sweep`` state, and a ``Term`` bundles one term's counts.
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, calloc, free, qsort
from cpython.pycapsule cimport PyCapsule_GetPointer
from numpy.random cimport bitgen_t
from pygbn.random._pcg64 cimport next_uniform, pcg64_fill_init

#: whether numbers of the PCG64 streams are formed inline (numpy's numbers, checked at import)
FAST_UNIFORMS = pcg64_fill_init()


#: tokens between two exact recomputations of the bucket totals
REFRESH = 4096

cdef enum:
    # topics per block of the dense word bucket (block totals, then a scan inside one block)
    DENSE_BLOCK = 8
    # a term that uses at least K / DENSE_SHARE topics drops its list for its dense row,
    # and gets it back once it uses fewer than K / (2 DENSE_SHARE)
    DENSE_SHARE = 3

from pygbn.inference._shared cimport doc_count_t, topic_t, shared_prefetch as prefetch

cdef extern from *:
    """
    /* Totals of the blocks of 8 topics of the dense word bucket: block b holds
       t_k = nw[k] * coef[k] for k = 8 b .. 8 b + 7, summed as
       ((t0 + t2) + (t4 + t6)) + ((t1 + t3) + (t5 + t7)) (the same tree in every
       version below, hence the same bits); the blocks' running total is added
       block after block, and blocks[b] receives it as it stands after block b
       (the search compares u with these).  With SSE2 (every x86-64), two lanes hold the even and
       the odd halves of that tree; elsewhere the scalar loop.  No FMA: the
       products are rounded before they are added, as the scalar code does. */
    #if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
    #include <emmintrin.h>
    static CYTHON_INLINE double pygbn_dense_blocks(const int32_t *nw, const double *coef,
                                            Py_ssize_t n_blocks, double *blocks) {
        double total = 0.0, s;
        Py_ssize_t b;
        for (b = 0; b < n_blocks; b++) {
            const int32_t *w = nw + 8 * b;
            const double *c = coef + 8 * b;
            __m128i lo = _mm_loadu_si128((const __m128i *) w);
            __m128i hi = _mm_loadu_si128((const __m128i *) (w + 4));
            __m128d t01 = _mm_mul_pd(_mm_cvtepi32_pd(lo), _mm_loadu_pd(c));
            __m128d t23 = _mm_mul_pd(_mm_cvtepi32_pd(_mm_shuffle_epi32(lo, 0xEE)), _mm_loadu_pd(c + 2));
            __m128d t45 = _mm_mul_pd(_mm_cvtepi32_pd(hi), _mm_loadu_pd(c + 4));
            __m128d t67 = _mm_mul_pd(_mm_cvtepi32_pd(_mm_shuffle_epi32(hi, 0xEE)), _mm_loadu_pd(c + 6));
            __m128d v = _mm_add_pd(_mm_add_pd(t01, t23), _mm_add_pd(t45, t67));
            s = _mm_cvtsd_f64(v) + _mm_cvtsd_f64(_mm_unpackhi_pd(v, v));
            total += s;
            blocks[b] = total;
        }
        return total;
    }
    #else
    static CYTHON_INLINE double pygbn_dense_blocks(const int32_t *nw, const double *coef,
                                            Py_ssize_t n_blocks, double *blocks) {
        double total = 0.0, s, t0, t1, t2, t3, t4, t5, t6, t7;
        Py_ssize_t b, k0;
        for (b = 0; b < n_blocks; b++) {
            k0 = 8 * b;
            t0 = nw[k0] * coef[k0];
            t1 = nw[k0 + 1] * coef[k0 + 1];
            t2 = nw[k0 + 2] * coef[k0 + 2];
            t3 = nw[k0 + 3] * coef[k0 + 3];
            t4 = nw[k0 + 4] * coef[k0 + 4];
            t5 = nw[k0 + 5] * coef[k0 + 5];
            t6 = nw[k0 + 6] * coef[k0 + 6];
            t7 = nw[k0 + 7] * coef[k0 + 7];
            s = ((t0 + t2) + (t4 + t6)) + ((t1 + t3) + (t5 + t7));
            total += s;
            blocks[b] = total;
        }
        return total;
    }
    #endif
    /* With AVX (x86-64 with GCC or clang, chosen at run time): four lanes form
       t0..t3 and t4..t7, and the halves of each are added into the same two
       lanes as above.  target("avx") enables no FMA, so nothing is contracted. */
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
    #include <immintrin.h>
    __attribute__((target("avx")))
    static double pygbn_dense_blocks_avx(const int32_t *nw, const double *coef,
                                         Py_ssize_t n_blocks, double *blocks) {
        double total = 0.0, s;
        Py_ssize_t b;
        for (b = 0; b < n_blocks; b++) {
            const int32_t *w = nw + 8 * b;
            const double *c = coef + 8 * b;
            __m256d p = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i *) w)),
                                      _mm256_loadu_pd(c));
            __m256d q = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i *) (w + 4))),
                                      _mm256_loadu_pd(c + 4));
            __m128d v = _mm_add_pd(_mm_add_pd(_mm256_castpd256_pd128(p), _mm256_extractf128_pd(p, 1)),
                                   _mm_add_pd(_mm256_castpd256_pd128(q), _mm256_extractf128_pd(q, 1)));
            s = _mm_cvtsd_f64(v) + _mm_cvtsd_f64(_mm_unpackhi_pd(v, v));
            total += s;
            blocks[b] = total;
        }
        return total;
    }
    #include <cpuid.h>
    /* AVX in the CPU (CPUID) and its registers saved by the OS (XGETBV): no
       run-time library needed (unlike __builtin_cpu_supports on some systems) */
    static int pygbn_cpu_has_avx(void) {
        unsigned int a, b, c, d, lo, hi;
        if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
        if (!(c & bit_OSXSAVE) || !(c & bit_AVX)) return 0;
        __asm__ volatile ("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        return (lo & 6) == 6;
    }
    #else
    static double pygbn_dense_blocks_avx(const int32_t *nw, const double *coef,
                                         Py_ssize_t n_blocks, double *blocks) {
        return pygbn_dense_blocks(nw, coef, n_blocks, blocks);
    }
    static int pygbn_cpu_has_avx(void) { return 0; }
    #endif
    """
    double dense_blocks "pygbn_dense_blocks"(const int32_t *nw, const double *coef, Py_ssize_t n_blocks,
                                             double *blocks) noexcept nogil
    double dense_blocks_avx "pygbn_dense_blocks_avx"(const int32_t *nw, const double *coef,
                                                     Py_ssize_t n_blocks, double *blocks) noexcept nogil
    int cpu_has_avx "pygbn_cpu_has_avx"() noexcept nogil

#: 1 when the CPU runs the AVX version of the dense word bucket's block totals (same bits)
DENSE_AVX = cpu_has_avx()
cdef bint _dense_avx = DENSE_AVX


def use_dense_avx(bint on):
    """Use the AVX version of the dense word bucket's block totals when ``on`` and
    the CPU has AVX, else the SSE2 (or scalar) one; returns the previous setting.
    Every version gives the same bits: a switch for the tests."""
    global _dense_avx
    cdef bint old = _dense_avx
    _dense_avx = on and DENSE_AVX
    return bool(old)


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


cdef inline void _swap(int32_t *wlist, int32_t p, int32_t q) noexcept nogil:
    """Swap entries p and q of a term's (topic, count) list."""
    cdef int32_t topic = wlist[2 * p], count = wlist[2 * p + 1]
    wlist[2 * p] = wlist[2 * q]
    wlist[2 * p + 1] = wlist[2 * q + 1]
    wlist[2 * q] = topic
    wlist[2 * q + 1] = count


cdef int _by_decreasing_key(const void *a, const void *b) noexcept nogil:
    cdef uint64_t x = (<const uint64_t *> a)[0], y = (<const uint64_t *> b)[0]
    return (x < y) - (x > y)


cdef inline int32_t _list_from_row(const int32_t *nw, Py_ssize_t K, uint64_t *keys,
                                   int32_t *wlist) noexcept nogil:
    """Write the non-zero entries of a term's dense row ``nw`` to its list, sorted
    by decreasing count (ties by topic); returns their number.  ``keys`` is
    scratch room for K entries."""
    cdef int32_t n = 0, p
    cdef Py_ssize_t k
    for k in range(K):
        if nw[k] > 0:
            # larger counts first, then smaller topics first
            keys[n] = (<uint64_t> nw[k] << 32) | <uint64_t> (K - 1 - k)
            n += 1
    qsort(keys, n, sizeof(uint64_t), _by_decreasing_key)
    for p in range(n):
        wlist[2 * p] = <int32_t> (K - 1 - <Py_ssize_t> (<uint32_t> keys[p]))
        wlist[2 * p + 1] = <int32_t> (keys[p] >> 32)
    return n


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
    int32_t *doc_topics       # the topics with n_jk > 0, in no order (K + 1 slots)
    int32_t *doc_topic_pos    # position of topic k in doc_topics (-1 if n_jk = 0)
    int32_t n_doc_topics
    double doc_mass           # sum_k n_jk / D_k: the document bucket is eta times this
    double smooth_mass        # sum_k a_jk / D_k: the smoothing bucket is eta times this
    # the token being swept
    double *word_terms        # n_wk c_k, in the order of a listed term's topic list
    double *block_terms       # dense word bucket: the totals of DENSE_BLOCK consecutive topics
    int32_t dense_from        # a term using this many topics drops its list ...
    int32_t sparse_below      # ... and gets it back when it uses fewer than this many
    uint64_t *keys            # scratch for rebuilding a list (K entries)
    bint dense_avx            # the dense word bucket's block totals by AVX (same bits)
    double *inv_below         # 1 / (D_k - 1): 1 / D_k once a token leaves topic k ...
    double *inv_above         # ... and 1 / (D_k + 1) once one joins it (made ahead of need)


cdef struct Term:
    # the counts n_wk of one term
    int32_t *row              # dense row (K)
    int32_t *lst              # (topic, count) pairs sorted by decreasing count (if not dense)
    int32_t *n_topics         # how many k have n_wk > 0 (the list's length if not dense)
    uint8_t *dense            # 1: no list is kept, the row is used
    uint8_t *stale            # 1: a listed term's row is behind its list (rewritten after the sweep)


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
    cdef int32_t n = 0, new
    # without a branch on the labels: every token writes its topic at the list's end
    # (kept only by a topic's first token, which advances the end; doc_topics has
    # K + 1 slots) and clears its old count (the row is written again at the end)
    for i in range(n_tokens):
        k = labels[i]
        new = nj[k] == 0
        state.doc_topics[n] = <int32_t> k
        state.doc_topic_pos[k] += new * (n - state.doc_topic_pos[k])
        n += new
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
    """Add ``delta`` (+1 or -1) to ``n_jk`` and ``n_k``, keeping ``1 / D_k``, ``c_k``
    and the two bucket totals up to date (the topic's old share out, its new
    share in).  The new ``1 / D_k`` was divided out ahead of need
    (``inv_below``, ``inv_above``: the same division of the same numbers), so
    the token's draw does not wait on a division; the one that makes the next
    ``inv_below`` or ``inv_above`` of topic k is needed only when k moves again."""
    cdef const double *a = state.prior
    cdef int32_t *nj = state.doc_counts
    cdef double *inv_d = state.inv_denom
    cdef double smooth = state.smooth_mass - a[k] * inv_d[k]
    cdef double doc = state.doc_mass - nj[k] * inv_d[k]
    cdef double old_inv = inv_d[k]
    cdef int64_t n
    nj[k] += delta
    state.topic_counts[k] += delta
    n = state.topic_counts[k]
    if delta < 0:
        inv_d[k] = state.inv_below[k]
        state.inv_above[k] = old_inv
        state.inv_below[k] = 1.0 / (state.v_eta + (n - 1))
    else:
        inv_d[k] = state.inv_above[k]
        state.inv_below[k] = old_inv
        state.inv_above[k] = 1.0 / (state.v_eta + (n + 1))
    state.smooth_mass = smooth + a[k] * inv_d[k]
    state.doc_mass = doc + nj[k] * inv_d[k]
    state.coef[k] = (nj[k] + a[k]) * inv_d[k]


cdef inline int32_t _find(const int32_t *wlist, int32_t n, int32_t k) noexcept nogil:
    """Position of topic ``k`` in a term's list of ``n`` entries (-1 if absent)."""
    cdef int32_t p
    for p in range(n):
        if wlist[2 * p] == k:
            return p
    return -1


cdef inline void _row_from_list(int32_t *row, Py_ssize_t K, const int32_t *wlist, int32_t n) noexcept nogil:
    """A term's dense row of counts rewritten from its list of ``n`` (topic, count) pairs."""
    cdef Py_ssize_t k
    cdef int32_t p
    for k in range(K):
        row[k] = 0
    for p in range(n):
        row[wlist[2 * p]] = wlist[2 * p + 1]


cdef inline void _word_topic_decrement(Sweep *state, Term *term, int32_t k) noexcept nogil:
    """``n_wk -= 1`` in the term's dense row or, for a term with a list, in its
    list, kept sorted by decreasing count (as in SparseLDA, so that the
    word-bucket search usually stops early; the row is then left behind and
    marked stale, see :func:`_rows_from_lists`).  A term with a dense row that
    comes to use few topics gets its list back."""
    cdef int32_t *wl = term.lst
    cdef int32_t p, n = term.n_topics[0]
    if term.dense[0]:
        term.row[k] -= 1
        if term.row[k] == 0:
            term.n_topics[0] = n - 1
            if n - 1 < state.sparse_below:
                term.n_topics[0] = _list_from_row(term.row, state.n_topics, state.keys, wl)
                term.dense[0] = 0
        return
    term.stale[0] = 1
    p = _find(wl, n, k)
    wl[2 * p + 1] -= 1
    while p + 1 < n and wl[2 * p + 1] < wl[2 * p + 3]:
        _swap(wl, p, p + 1)
        p += 1
    if wl[2 * p + 1] == 0:
        # a zero count sorts last: drop it
        term.n_topics[0] = n - 1


cdef inline void _word_topic_increment(Sweep *state, Term *term, int32_t k, int32_t p) noexcept nogil:
    """``n_wk += 1`` in the term's dense row or its list (``p``: topic k's
    position in the list if known, else -1).  A term that comes to use many
    topics drops its list (its row is first brought up to date from it)."""
    cdef int32_t *wl = term.lst
    cdef int32_t n = term.n_topics[0]
    if term.dense[0]:
        term.row[k] += 1
        if term.row[k] == 1:
            term.n_topics[0] = n + 1
        return
    term.stale[0] = 1
    if p < 0:
        p = _find(wl, n, k)
    if p < 0:
        p = n
        wl[2 * p] = k
        wl[2 * p + 1] = 1
        term.n_topics[0] = n + 1
        if n + 1 >= state.dense_from:
            _row_from_list(term.row, state.n_topics, wl, n + 1)
            term.stale[0] = 0
            term.dense[0] = 1
            return
    else:
        wl[2 * p + 1] += 1
    while p > 0 and wl[2 * p + 1] > wl[2 * p - 1]:
        _swap(wl, p, p - 1)
        p -= 1


cdef inline void _remove_token(Sweep *state, Term *term, int32_t k) noexcept nogil:
    """Take a token of topic ``k`` out of the counts, the document's topics and
    its term's row and list."""
    _move_token_count(state, k, -1)
    if state.doc_counts[k] == 0:
        _list_remove(state.doc_topics, &state.n_doc_topics, state.doc_topic_pos, k)
    _word_topic_decrement(state, term, k)


cdef inline void _add_token(Sweep *state, Term *term, int32_t k, int32_t p) noexcept nogil:
    """Put a token back with topic ``k`` (``p``: its position in the term's list, or -1)."""
    _move_token_count(state, k, 1)
    if state.doc_counts[k] == 1:
        _list_add(state.doc_topics, &state.n_doc_topics, state.doc_topic_pos, k)
    _word_topic_increment(state, term, k, p)


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


cdef inline int32_t _pick_in_word_bucket(const Sweep *state, int32_t n, double u) noexcept nogil:
    """The list position of the topic at ``u`` (in ``[0, word bucket)``) of the word bucket."""
    cdef const double *terms = state.word_terms
    cdef int32_t i = 0
    while i < n - 1 and u >= terms[i]:
        u -= terms[i]
        i += 1
    return i


cdef inline double _dense_word_bucket(Sweep *state, const int32_t *nw) noexcept nogil:
    """The word bucket ``sum_k n_wk c_k`` over all K topics, from the term's dense
    row: the running totals of the blocks of DENSE_BLOCK topics, the total
    through each block, go to ``state.block_terms`` (the topics' own terms are
    not stored: the search recomputes those of one block, the same products).  Contiguous arrays and
    a fixed summation tree per block (``dense_blocks``: SSE2 where there is
    SSE2, the same bits as its scalar loop): for a term that uses many topics
    this beats the list's indirect loads."""
    cdef double *blocks = state.block_terms
    cdef const double *coef = state.coef
    cdef Py_ssize_t K = state.n_topics, n_full = K // DENSE_BLOCK, k, k0
    cdef double total, s
    if state.dense_avx:
        total = dense_blocks_avx(nw, coef, n_full, blocks)
    else:
        total = dense_blocks(nw, coef, n_full, blocks)
    k0 = n_full * DENSE_BLOCK
    if k0 < K:
        s = 0.0
        for k in range(k0, K):
            s += nw[k] * coef[k]
        total += s
        blocks[n_full] = total
    return total


cdef inline int32_t _pick_in_dense_word_bucket(const Sweep *state, const int32_t *nw,
                                               double u) noexcept nogil:
    """The topic at ``u`` (in ``[0, word bucket)``) of the dense word bucket of the
    term with row ``nw``: the block first, then the topic inside it (its terms
    ``n_wk c_k`` recomputed); a topic of zero weight (possible only by
    rounding at the very end of a block) gives way to the nearest one of
    positive weight before it."""
    cdef const double *coef = state.coef
    cdef const double *prefix = state.block_terms
    cdef Py_ssize_t K = state.n_topics, nb = (K + DENSE_BLOCK - 1) // DENSE_BLOCK
    cdef Py_ssize_t b = 0, i, k, k0, last, steps
    cdef int found
    cdef double t
    # the block: the first b with u < prefix[b] (the running totals never decrease),
    # counted without a branch on u; u then becomes the offset inside that block
    for i in range(nb - 1):
        b += prefix[i] <= u
    if b > 0:
        u -= prefix[b - 1]
    # inside the block: the first topic k with u < n_wk c_k once the terms before it
    # are subtracted, in order (as a loop that stops there would find it), without a
    # branch on u: the steps taken before that topic are counted
    k0 = b * DENSE_BLOCK
    last = min(k0 + DENSE_BLOCK, K) - 1
    found = 0
    steps = 0
    for k in range(k0, last):
        t = nw[k] * coef[k]
        found = found | (u < t)
        steps += 1 - found
        u -= t
    k = k0 + steps
    while k > 0 and nw[k] * coef[k] <= 0.0:
        k -= 1
    return <int32_t> k


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


cdef inline void _prefetch_term(const Sweep *state, const int32_t *row, const int32_t *lst,
                                int32_t n_topics, bint dense) noexcept nogil:
    """Ask the cache for the next term's counts while this term's tokens are
    drawn (a (V, K) row and a list are seldom cached when V is large): a
    dense term's whole row, else the part of its list in use."""
    cdef Py_ssize_t k
    if dense:
        for k in range(0, state.n_topics, 16):
            prefetch(row + k)
    else:
        for k in range(0, 2 * n_topics, 16):
            prefetch(lst + k)


cdef inline int32_t _draw_topic(bitgen_t *g, Sweep *state, const Term *term,
                                int32_t *position) noexcept nogil:
    """Draw a token's topic from eq:z: one uniform over the three buckets.  The
    word bucket is summed over the term's list, or over its dense row.  A
    topic from a term's list also gives its position there (``position``,
    else -1)."""
    cdef bint dense = term.dense[0]
    cdef int32_t n = term.n_topics[0], i
    cdef double word = _dense_word_bucket(state, term.row) if dense else _word_bucket(state, term.lst, n)
    cdef double u
    position[0] = -1
    if state.doc_mass < 0.0:       # rounding of the running totals
        state.doc_mass = 0.0
    if state.smooth_mass < 0.0:
        state.smooth_mass = 0.0
    u = next_uniform(g) * (word + state.eta * (state.doc_mass + state.smooth_mass))
    if u < word:
        if dense:
            return _pick_in_dense_word_bucket(state, term.row, u)
        i = _pick_in_word_bucket(state, n, u)
        position[0] = i
        return term.lst[2 * i]
    u = (u - word) / state.eta
    if u < state.doc_mass and state.n_doc_topics > 0:
        return _pick_in_document_bucket(state, u)
    return _pick_in_smoothing_bucket(state, u - state.doc_mass)


def collapsed_sweep(const int64_t[::1] indptr, const int32_t[::1] indices, const double[::1] values,
                    const int64_t[::1] doc_ptr, topic_t[::1] labels, Py_ssize_t first, Py_ssize_t stop,
                    int64_t[::1] nk, doc_count_t[:, ::1] njk, int32_t[:, ::1] nwk,
                    const int64_t[::1] wptr, int32_t[::1] wlist, int32_t[::1] wlen,
                    uint8_t[::1] wdense, const double[:, ::1] prior, double eta, bit_generator,
                    Py_ssize_t refresh=REFRESH, Py_ssize_t dense_from=-1):
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
    njk : uint8, uint16 or int32 array (J, K)
        Document-topic counts, consistent with ``labels`` (rows ``first:stop``
        are rewritten).
    nwk : int32 array (V, K)
        Term-topic counts, consistent with ``labels`` (again at the end of
        the sweep; the rows of listed terms are rewritten from their lists).
    wptr, wlist, wlen, wdense : int64 (V + 1,), int32 (2 C,), int32 (V,), uint8 (V,)
        ``wlen[w]`` is the number of topics with ``n_wk > 0``.  A term with
        ``wdense[w] = 0`` also has them as a compact list: entry ``i < wlen[w]``
        is the pair ``(wlist[2 (wptr[w] + i)], wlist[2 (wptr[w] + i) + 1])`` =
        (topic, count), sorted by decreasing count, so that its word bucket is
        one sequential pass over adjacent memory; a term with ``wdense[w] = 1``
        (one that uses many topics) uses its row of ``nwk`` instead.  Term
        ``w`` has room for ``wptr[w + 1] - wptr[w]`` topics (at least
        ``min(K, its tokens)``).  See :func:`build_word_lists`.
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
    dense_from : int, default=-1
        A term that uses this many topics drops its list for its dense row,
        and gets it back below half as many (-1: ``ceil(K / DENSE_SHARE)``).
        Any value gives the same distribution (``K + 1``: lists only; 1:
        dense rows only).

    Equivalent to, for each document ``j`` in ``first:stop`` and each of its
    tokens ``i`` in order::

        remove token i from the counts
        p = (eta + nwk[w_i]) / (V * eta + nk) * (njk[j] + a[j])
        z_i = rng.choice(K, p=p / p.sum())
        add token i back with label z_i
    """
    cdef bitgen_t *g = <bitgen_t *> PyCapsule_GetPointer(bit_generator.capsule, "BitGenerator")
    cdef Py_ssize_t K = nk.shape[0], V = nwk.shape[0]
    cdef Sweep state
    cdef Term term
    cdef Py_ssize_t j, k
    cdef int64_t c, i, n, tok, left = refresh if refresh > 0 else 1
    cdef int64_t last_cell = indptr[stop] if stop > first else 0
    cdef int32_t w, z, position
    cdef uint8_t *stale = NULL
    state.n_topics = K
    state.eta = eta
    state.v_eta = nwk.shape[0] * eta
    state.topic_counts = &nk[0]
    state.shared_prior = prior.shape[0] == 1
    state.prior = &prior[0, 0]
    state.n_doc_topics = 0
    state.dense_avx = _dense_avx
    if dense_from < 0:
        dense_from = max(1, (K + DENSE_SHARE - 1) // DENSE_SHARE)
    state.dense_from = <int32_t> min(dense_from, K + 1)
    state.sparse_below = <int32_t> min(state.dense_from // 2, K)
    state.inv_denom = <double *> malloc(K * sizeof(double))
    state.inv_below = <double *> malloc(K * sizeof(double))
    state.inv_above = <double *> malloc(K * sizeof(double))
    state.coef = <double *> malloc(K * sizeof(double))
    state.word_terms = <double *> malloc(K * sizeof(double))
    state.block_terms = <double *> malloc((K // DENSE_BLOCK + 1) * sizeof(double))
    state.keys = <uint64_t *> malloc(K * sizeof(uint64_t))
    state.doc_counts = <int32_t *> calloc(K, sizeof(int32_t))
    state.doc_topics = <int32_t *> malloc((K + 1) * sizeof(int32_t))
    state.doc_topic_pos = <int32_t *> malloc(K * sizeof(int32_t))
    stale = <uint8_t *> calloc(V, sizeof(uint8_t))
    try:
        if (state.inv_denom == NULL or state.inv_below == NULL or state.inv_above == NULL or state.coef == NULL or state.word_terms == NULL
                or state.block_terms == NULL or state.keys == NULL or state.doc_counts == NULL
                or state.doc_topics == NULL or state.doc_topic_pos == NULL or stale == NULL):
            raise MemoryError()
        with bit_generator.lock, nogil:
            for k in range(K):
                state.inv_denom[k] = 1.0 / (state.v_eta + state.topic_counts[k])
                state.inv_below[k] = 1.0 / (state.v_eta + (state.topic_counts[k] - 1))
                state.inv_above[k] = 1.0 / (state.v_eta + (state.topic_counts[k] + 1))
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
                    if c + 1 < last_cell:
                        w = indices[c + 1]
                        _prefetch_term(&state, &nwk[w, 0], &wlist[2 * wptr[w]], wlen[w], wdense[w])
                    if c + 2 < last_cell:
                        w = indices[c + 2]
                        prefetch(&wptr[w])
                        prefetch(&wlen[w])
                        prefetch(&wdense[w])
                    w = indices[c]
                    term.row = &nwk[w, 0]
                    term.lst = &wlist[2 * wptr[w]]
                    term.n_topics = &wlen[w]
                    term.dense = &wdense[w]
                    term.stale = &stale[w]
                    n = <int64_t> values[c]
                    for i in range(n):
                        left -= 1
                        if left == 0:
                            _refresh_masses(&state)
                            left = refresh
                        _remove_token(&state, &term, labels[tok])
                        z = _draw_topic(g, &state, &term, &position)
                        _add_token(&state, &term, z, position)
                        labels[tok] = <topic_t> z
                        tok += 1
                _end_document(&state, &njk[j, 0])
            for w in range(V):
                if stale[w]:
                    if not wdense[w]:
                        _row_from_list(&nwk[w, 0], K, &wlist[2 * wptr[w]], wlen[w])
    finally:
        free(state.inv_denom); free(state.inv_below); free(state.inv_above); free(state.coef); free(state.word_terms); free(state.block_terms)
        free(state.keys); free(state.doc_counts); free(state.doc_topics); free(state.doc_topic_pos)
        free(stale)


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


def build_word_lists(const int32_t[:, ::1] nwk, const int64_t[::1] wptr, int32_t[::1] wlist,
                     int32_t[::1] wlen, uint8_t[::1] wdense, Py_ssize_t dense_from=-1):
    """The per-term lists of :func:`collapsed_sweep` from the dense counts ``nwk``
    (V, K): ``wlen`` (topics in use), ``wdense`` (1 for the terms that use at
    least ``dense_from`` topics, default ``ceil(K / DENSE_SHARE)``) and the
    other terms' lists, sorted by decreasing count (ties by topic)."""
    cdef Py_ssize_t V = nwk.shape[0], K = nwk.shape[1], v
    cdef uint64_t *keys = <uint64_t *> malloc(max(K, 1) * sizeof(uint64_t))
    if keys == NULL:
        raise MemoryError()
    if dense_from < 0:
        dense_from = max(1, (K + DENSE_SHARE - 1) // DENSE_SHARE)
    try:
        with nogil:
            for v in range(V):
                wlen[v] = _list_from_row(&nwk[v, 0], K, keys, &wlist[2 * wptr[v]])
                wdense[v] = wlen[v] >= dense_from
    finally:
        free(keys)
