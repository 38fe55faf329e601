# cython: language_level=3
"""Partially collapsed, document-parallel sweep over the layer-one topic labels.

Phi^(1) is explicit and theta^(1) is integrated out.  Given Phi^(1) and the
document's prior shape ``a_j`` (``r`` when the network has one layer,
``Phi^(2) theta_j^(2)`` otherwise), the label of token ``i`` of document
``j`` (term ``v``) has the Polya-urn conditional (the paper's eq:z with Phi^(1) given)

    pi(k)  ∝  phi_vk (n_jk + a_jk),                       (n_jk without token i)

and documents are independent of each other: blocks of documents are swept in
an OpenMP ``prange``, block ``b`` drawing only from its own stream, so the
result does not depend on the number of threads.

Proposal.  With a positive vector ``b`` shared by all documents (the prior
mean shape ``Phi^(2) ... Phi^(T) r``; ``r`` itself when T = 1) and
``lambda_j = sum_k a_jk / sum_k b_k``, every token draws a topic from

    q(k)  ∝  phi_vk n_jk  +  lambda_j phi_vk b_k

as a mixture of the prior bucket ``P = lambda_j Q_v`` (``Q_v = sum_k phi_vk b_k``,
drawn by inversion of its cumulative sums: in O(1) expected steps from the
term's indexed-search table, built for the terms with enough prior draws, else by
an O(K) scan that forms the same sums, the same topic for the same uniform) and the
document bucket ``D = sum_k phi_vk n_jk``, drawn in one of two ways that give
the same law.  Each document takes one of them for its whole sweep, chosen at
its start by a function of its state alone (:c:func:`_use_rejection`: rejection
when ``n_t n_cells / n_doc >= rejection_work p``, its topics n_t, stored cells,
tokens and proposals p a token), so any mix of the two draws q exactly and the
chain does not depend on the number of threads.

*List* (few topics a token).  The document's topics are kept in a compact list
with their counts; D is formed once per stored cell by a pass over the list and
updated as the cell's tokens move; a uniform ``u`` on ``[0, D + P)`` picks the
document bucket (the topic by a linear search of the products ``phi_vk n_jk``)
or the prior bucket.  O(topics of the document) a cell.

*Rejection* (many topics a token).  Term v's *top set* ``S_v`` (its ``m``
largest ``phi_vk``, ``partial.default_top_size``: 8 at K = 100, 16 at K = 400;
all K topics when K <= m) and bound ``h_v`` (the (m+1)-th largest phi_vk, 0 when
K <= m; ``phi_vk <= h_v`` off the set) are built with the prior tables
(:func:`build_prior_tables`).  A trial draws ``u`` uniform on ``[0, E + R +
P)`` and takes

* ``E = sum_{k in S_v} (phi_vk - h_v) n_jk`` (the set's excess over the
  bound, formed at each token, m gathers of the document's dense n_jk row):
  the topic of ``S_v`` at ``u`` by inversion; accepted;
* ``R = h_v n_other`` (n_other = the document's other tokens, ``n_j - 1``): the
  other token at index ``floor((u - E) / h_v)`` (the token itself skipped),
  its current label ``k`` from ``labels`` (updated in place, so the urn's
  current state); accepted if ``k`` is in ``S_v`` (its byte is 255), else
  accepted with probability ``phi_vk / h_v``: ``f h_v < phi_vk`` for the fraction
  ``f = (u - E) / h_v - index``, which given the index is a uniform on [0, 1)
  independent of it (``_thin``: a byte per topic, ``q_k / 256 <= phi_vk / h_v <
  (q_k + 2) / 256``, decides unless ``f`` falls between the two, and then
  ``phi_vk`` is read: the same answer as ``f h_v < phi_vk`` for every ``f``);
* ``P``: the prior bucket as above, at the position ``d.u_prior`` set by the
  previous prior draw; accepted.  Where ``u`` fell inside P, ``(u - E - R) / P``,
  is a uniform on [0, 1) independent of the trial's choices and becomes the next
  prior draw's position (``_fraction``; the stream's next number instead when
  ``P < (E + R + P) / 256``, so that a kept position has at least 45 bits).

A rejected trial starts afresh.  One trial accepts topic k with probability
proportional to ``(phi_vk - h_v) n_jk + h_v n_other (n_jk / n_other) =
phi_vk n_jk`` (k in S_v, from E and R), ``h_v n_other (n_jk / n_other)
(phi_vk / h_v) = phi_vk n_jk`` (k outside S_v, from R) plus
``lambda_j phi_vk b_k`` (from P): that is q(k), so the accepted topic has law
q whatever the trials before it, in ``(E + R + P) / (D + P)`` expected
trials.  When E and P vanish (P by underflow) the document bucket is drawn by an
O(K) scan (``_scan_doc``), and when all three do (or, with the list, D and P),
the label by the exact conditional's O(K) scan (``_direct``).  O(m) plus O(1)
expected trials a token.

Exactness.  When the prior is one row shared by all documents (T = 1),
``b = a`` and ``lambda = 1``: q is pi and the draw is the exact conditional.
Otherwise (``mh_steps = 0``, the default) the prior bucket is drawn with
``lambda_j = c_j = max_k a_jk / b_k`` (mass ``c_j Q_v``, at least
``sum_k phi_vk a_jk``) and its topic k kept with probability
``a_jk / (c_j b_k)`` (:c:func:`_thin_prior`); a discarded topic starts the
draw afresh.  One attempt then yields topic k with probability proportional to
``phi_vk n_jk + c_j phi_vk b_k a_jk / (c_j b_k) = phi_vk (n_jk + a_jk)``:
the accepted topic has law pi exactly, after ``(D + c_j Q_v) / (D +
sum_k phi_vk a_jk)`` attempts on average (1.67 a token on the Debian corpus
at T = 2).  With ``mh_steps = n > 0`` (the method until the twentieth session)
the prior bucket uses ``lambda_j = sum_k a_jk / sum_k b_k``, unthinned, and n
independence Metropolis-Hastings steps follow from the token's current label
``s``: propose ``t ~ q`` and accept it with probability ``min(1, w(t) / w(s))``,
``w(k) = pi(k) / q(k) ∝ (n_jk + a_jk) / (n_jk + lambda_j b_k)`` (phi_vk and
both normalisers cancel); each step leaves pi invariant, but the chain moves
more slowly at T >= 2 than with exact draws.  Either way the sweep leaves the
posterior invariant.

Uniforms.  A block takes its stream's uniforms in order, 256 at a time into a
buffer (``_uniform``; each number taken once), and drops what is left of the
buffer when the block ends: the draws keep their laws, and the chain still
does not depend on the number of threads (a block's numbers come from its own
stream whatever thread sweeps it).  A trial's number that lands in the R piece
or the prior bucket is used twice, as the numpy ziggurat uses one 64-bit word
for a layer and a value: its integer part picks (the other token, or the
piece) and its fraction is the thinning's uniform, or the next prior draw's.
For ideal uniforms the fraction is uniform on [0, 1) and independent of the
pick, so each draw keeps its law; in doubles it is on a grid of about
``2^-53 (E + R + P) / h_v`` (R: so the thinning's probability of a trial moves by
at most about ``n_other 2^-53``, as the piece boundaries already do) or at most
``2^-45`` (P, kept only then).  At K = 100 on bench_scale's corpus after 40
sweeps a token now takes 2.20 numbers and reuses 1.88 (a count made in a
temporary build; docs/benchmarks.md, "Twenty-ninth session").
"""
from cython.parallel cimport parallel, prange
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uintptr_t
from libc.math cimport INFINITY
from libc.stdlib cimport malloc, calloc, free
from numpy.random cimport bitgen_t
from pygbn.random._pcg64 cimport uniform_fill, pcg64_fill_init

from pygbn.inference._shared cimport (doc_count_t, topic_t, slot_add, shared_prefetch as prefetch,
                                     shared_prefetch_w as prefetch_w, SLOT_SHIFT, SLOT_COUNT)
from pygbn.inference._doc_bucket cimport (Doc, Cell, Sweep, _add, _remove, _cell_weights, _pick_doc, top_size,
                                         _cell_start, _top_mass, _pick_top, _thin, _top_set, _use_rejection)
from pygbn.inference._prior_bucket cimport (_GUIDE_CELLS, _SUM_ROWS, _guide_width, _pick_prior, _prefetch_prior,
                                           _prior_sums, _prior_table)


ctypedef fused nvk_t:
    # term-topic counts n_vk: int32 when the data hold fewer than 2^31 tokens (nvk_dtype in partial.py)
    int32_t
    int64_t


#: guide cells per topic of a prior-bucket table
GUIDE_CELLS = _GUIDE_CELLS


def guide_width(Py_ssize_t K):
    """Entries of a prior-bucket table's guide row at ``K`` topics: a record of two
    entries a cell (``GUIDE_CELLS K`` cells) and one more record."""
    return _guide_width(K)

#: whether numbers of the PCG64 streams are formed inline (numpy's numbers, checked at import)
FAST_UNIFORMS = pcg64_fill_init()


cdef enum:
    # uniforms a block's buffer holds (its stream's next _UBUF numbers, taken in order)
    _UBUF = 256

cdef struct Uni:
    # one document block's uniforms: its stream and the numbers drawn from it ahead of use
    bitgen_t *gen
    Py_ssize_t pos              # the next unused entry of buf (_UBUF: empty)
    double buf[_UBUF]


cdef inline double _uniform(Uni *g) noexcept nogil:
    """The block stream's next uniform in [0, 1): the stream's numbers in order,
    ``_UBUF`` at a time (``random_standard_uniform_fill``: the numbers of
    ``random_standard_uniform``), so the draws pipeline instead of each waiting
    on a call of the bit generator (the sweep kernel took 8-10% less CPU time
    with the buffer, eleventh session).  Every number is taken once and in the
    order drawn (a trial that lands in the R piece or the prior bucket uses what
    is left of its number, the position inside the piece, as a second uniform:
    :c:func:`_propose_rej`, :c:func:`_fraction`), so the labels' draws keep their
    laws exactly; the numbers left in the buffer when the block ends are dropped
    (they are independent of everything drawn), so the stream's position after a
    sweep, and with it the chain for a given seed, differs from a call per number."""
    if g.pos == _UBUF:
        uniform_fill(g.gen, _UBUF, g.buf)
        g.pos = 0
    g.pos += 1
    return g.buf[g.pos - 1]


cdef inline int32_t _direct(Uni *g, const Doc *d, const double *phi_v) noexcept nogil:
    """The exact conditional ``phi_vk (n_jk + a_jk)`` by an O(K) scan (fallback when
    both buckets vanish by underflow); uniform if every weight is zero."""
    cdef Py_ssize_t k, K = d.n_topics_total
    cdef double total = 0.0, u, t
    for k in range(K):
        total += phi_v[k] * (d.nj[k] + d.a[k])
    if not (total > 0.0):
        k = <Py_ssize_t> (_uniform(g) * K)
        return <int32_t> (k if k < K else K - 1)
    u = _uniform(g) * total
    for k in range(K - 1):
        t = phi_v[k] * (d.nj[k] + d.a[k])
        if u < t:
            return <int32_t> k
        u -= t
    return <int32_t> (K - 1)


cdef inline double _weight(const Doc *d, int32_t k) noexcept nogil:
    """``w(k) = (n_jk + a_jk) / (n_jk + lambda_j b_k)``: pi / q up to constants."""
    return (d.nj[k] + d.a[k]) / (d.nj[k] + d.lam * d.b[k])


cdef inline int32_t _scan_doc(Uni *g, const Doc *d, const double *phi_v) noexcept nogil:
    """The document bucket's whole law ``phi_vk n_jk`` by an O(K) scan, for when
    only the R piece holds mass (E and P vanished, P by underflow); :c:func:`_direct`
    if that vanishes too."""
    cdef Py_ssize_t k, K = d.n_topics_total, last = -1
    cdef double total = 0.0, u, t
    for k in range(K):
        total += phi_v[k] * d.nj[k]
    if not (total > 0.0):
        return _direct(g, d, phi_v)
    u = _uniform(g) * total
    for k in range(K):
        t = phi_v[k] * d.nj[k]
        if t > 0.0:
            last = k
            if u < t:
                return <int32_t> k
            u -= t
    return <int32_t> last


cdef enum:
    # prior-bucket topics a token's draw may discard (T >= 2) before it draws its label by the
    # exact O(K) scan instead (speed only: an accepted attempt has the conditional's law
    # whatever the attempts before it, and so has the scan, so the draw stays exact)
    _THIN_TRIES = 32


cdef inline bint _thin_prior(Uni *g, const Doc *d, int32_t k) noexcept nogil:
    """Whether the prior bucket's topic ``k`` (drawn with weight ``phi_vk b_k``) is kept:
    with probability ``a_jk / (c_j b_k)`` (``d.lam = c_j = max_i a_ji / b_i``), so that
    the bucket of mass ``c_j Q_v`` keeps ``phi_vk a_jk`` of it (T >= 2)."""
    return _uniform(g) * d.lam * d.b[k] < d.a[k]


cdef inline double _fraction(double x, double P, double total) noexcept nogil:
    """``x / P``: where a trial's uniform ``u`` on ``[0, total)`` fell inside the prior
    bucket's piece of mass ``P`` (``x = u - `` the mass before that piece).  Given that ``u``
    fell in the piece, that position is uniform on [0, 1) and independent of every
    choice the trial makes (the piece, and the topic, which the previous ``d.u_prior``
    decides), so it serves as the next prior draw's uniform, a number of the stream
    saved (exact for ideal uniforms; in doubles it keeps ``53 - log2(total / P)``
    bits).  -1 (the caller takes the stream's next number) when ``P < total / 256``,
    so that a kept position has at least 45 bits: a test of the masses alone, never
    of ``u``, so the number taken is uniform and independent either way."""
    if P * 256.0 < total:
        return -1.0
    return x / P


cdef inline int32_t _prior_draw(Uni *g, Doc *d, const double *phi_v, double Q, const float *cumf,
                                const topic_t *guide, int *tries, double fresh) noexcept nogil:
    """One prior-bucket draw: the topic of the uniform ``d.u_prior`` (set at the previous
    prior draw, so that its table entry could be prefetched; then replaced by ``fresh``,
    the position of this trial's uniform in the prior bucket (:c:func:`_fraction`), or by
    the stream's next number where that is -1) by :c:func:`_pick_prior`, or -1 when
    :c:func:`_thin_prior` discards it (``d.thin``: the caller's draw starts afresh),
    counted in ``tries``; the ``_THIN_TRIES``-th discard draws the label by the exact
    scan (:c:func:`_direct`) instead."""
    cdef double up = d.u_prior
    cdef int32_t k
    d.u_prior = fresh if 0.0 <= fresh < 1.0 else _uniform(g)    # (outside: -1, or rounding)
    d.n_prior += 1
    k = _pick_prior(phi_v, d.b, d.n_topics_total, up, Q, cumf, guide)
    if not d.thin or _thin_prior(g, d, k):
        return k
    tries[0] += 1
    return _direct(g, d, phi_v) if tries[0] == _THIN_TRIES else -1


cdef inline int32_t _propose_list(Uni *g, Doc *d, const double *phi_v, double D, double Q,
                                  double P, const float *cumf, const topic_t *guide) noexcept nogil:
    """A draw from ``q(k) ∝ phi_vk n_jk + lambda_j phi_vk b_k`` with the list bucket:
    a uniform picks the document bucket ``D`` (the topic by a search of the
    document's list, :c:func:`_pick_doc`) or the prior bucket ``P = lambda_j Q_v``
    (``Q = Q_v``); the prior bucket's position is the uniform ``d.u_prior``
    set at the previous prior draw (so that its table entry can be
    prefetched), then replaced by where ``u`` fell in ``P`` (:c:func:`_prior_draw`,
    :c:func:`_pick_prior`).  With ``d.thin`` (T >= 2,
    exact draws) ``P = c_j Q_v`` and the prior bucket's topic is kept by
    :c:func:`_thin_prior`, else the draw starts afresh; after ``_THIN_TRIES``
    discarded topics the label is drawn by the exact scan (:c:func:`_direct`)."""
    cdef double u
    cdef int32_t k
    cdef int tries = 0
    while True:
        u = _uniform(g) * (D + P)
        if u < D and d.n_topics > 0:
            return _pick_doc(d, phi_v, u)
        if P > 0.0:
            k = _prior_draw(g, d, phi_v, Q, cumf, guide, &tries, _fraction(u - D, P, D + P))
            if k >= 0:
                return k
            continue
        return _pick_doc(d, phi_v, _uniform(g) * D)


cdef inline int32_t _propose_rej(Uni *g, Doc *d, Cell *cl, const topic_t *lab, const double *phi_v, double Q,
                                 double P, const float *cumf, const topic_t *guide) noexcept nogil:
    """A draw from ``q(k) ∝ phi_vk n_jk + lambda_j phi_vk b_k`` by rejection from the
    mixture of three pieces (the module's "Proposal"): a uniform ``u`` in
    ``[0, E + R + P)`` picks the top set's excess ``E`` (the topic by inversion at
    ``u``), the bound ``R = h n_other`` (the other token at index
    ``floor(x)``, ``x = (u - E) / h``, its label k accepted when it is in the top set,
    else when the fraction ``x - floor(x)`` times h is below phi_vk: given the index,
    a uniform on [0, 1) independent of it) or the prior bucket ``P = lambda_j Q_v``
    (``d.u_prior``, then replaced by where ``u`` fell in P: :c:func:`_prior_draw`);
    a rejected trial starts a new one (with ``d.thin``, a prior-bucket topic that
    :c:func:`_thin_prior` discards too; after ``_THIN_TRIES`` of those, the exact scan)."""
    cdef double u, R = cl.h * cl.n_other, x
    cdef int64_t idx
    cdef int tries = 0
    cdef int32_t k
    if not (cl.E + P > 0.0):
        return _scan_doc(g, d, phi_v)
    while True:
        u = _uniform(g) * (cl.E + R + P)
        if u < cl.E:
            k = _pick_top(cl, d, u)
            if k >= 0:
                return k
            cl.E = _top_mass(cl, d)             # E was a rounding residue
            if not (cl.E + P > 0.0):
                return _scan_doc(g, d, phi_v)
        elif u < cl.E + R:
            x = (u - cl.E) * cl.inv_h
            idx = <int64_t> x if x < cl.n_other else cl.n_other - 1
            x = x - <double> idx                # given idx, uniform on [0, 1): the thinning's uniform
            if idx >= cl.self_pos and cl.n_other < cl.n_doc:
                idx += 1                        # skip the token itself
            k = lab[idx]
            if cl.sq[k] == 255 or _thin(x, cl.h, cl.sq[k], phi_v, k):
                return k
        elif P > 0.0:
            k = _prior_draw(g, d, phi_v, Q, cumf, guide, &tries, _fraction(u - cl.E - R, P, cl.E + R + P))
            if k >= 0:
                return k


def rejection_ahead(const int64_t[::1] indptr, const int64_t[::1] doc_ptr, const doc_count_t[:, ::1] njk,
                    bint shared_prior, int mh_steps, double rejection_work,
                    const int32_t[::1] indices=None, uint8_t[::1] terms=None, int64_t mark_cells=0):
    """Whether :func:`partial_sweep` would give the rejection bucket to one of the documents
    of ``doc_ptr`` (rows of ``njk``): its rule on the same counts; 1 or 0.  With ``indices``
    and ``terms`` (uint8 (V,)): ``terms[v] = 1`` for the terms of those documents (whose top
    sets the sweep reads), and their number, or -1 once their cells exceed ``mark_cells``."""
    cdef Py_ssize_t j, K = njk.shape[1]
    cdef int64_t n_doc, c, cells = 0
    cdef double p = 1.0 if shared_prior or mh_steps <= 0 else <double> mh_steps
    cdef bint mark = terms is not None and indices is not None
    cdef Py_ssize_t hits = 0
    with nogil:
        for j in range(doc_ptr.shape[0] - 1):
            n_doc = doc_ptr[j + 1] - doc_ptr[j]
            if n_doc > 0 and _use_rejection(&njk[j, 0], K, n_doc, indptr[j + 1] - indptr[j], p, rejection_work):
                hits += 1
                if not mark:
                    break
                cells += indptr[j + 1] - indptr[j]
                if cells > mark_cells:
                    hits = -1
                    break
                for c in range(indptr[j], indptr[j + 1]):
                    terms[indices[c]] = 1
    return hits


cdef inline int32_t _mh_step(Uni *g, const Doc *d, int32_t z, double *wz, int32_t t,
                             int64_t *counters) noexcept nogil:
    """One independence Metropolis-Hastings step from the label ``z`` (weight ``wz[0]``)
    to the proposal ``t ~ q``: accepted with probability ``min(1, w(t) / w(z))``."""
    cdef double wt
    counters[0] += 1
    if t == z:
        counters[1] += 1
        return z
    wt = _weight(d, t)
    if wt >= wz[0] or _uniform(g) * wz[0] < wt:
        wz[0] = wt
        counters[1] += 1
        return t
    return z


cdef inline void _prefetch_next(double u_prior, const int64_t *table_row, const topic_t *guide,
                                const int32_t *indices, Py_ssize_t c, int64_t c_end, bint more,
                                Py_ssize_t K) noexcept nogil:
    """After a token of cell ``c``: prefetch the guide entry of the next token's prior draw
    (should it make one), of the cell's term while it has tokens left (``more``), else
    of the next cell's."""
    if more:
        _prefetch_prior(u_prior, table_row, guide, indices[c], K)
    elif c + 1 < c_end:
        _prefetch_prior(u_prior, table_row, guide, indices[c + 1], K)


cdef enum:
    # How far ahead _doc_rej prefetches, in cells (a cell holds 1.25 tokens on bench_scale's
    # corpus, and a token of the rejection draw takes about 60 ns, less than a miss to memory
    # on a loaded machine): the top set of cell c + _TOP_AHEAD at the start of cell c, and the
    # guide entry of the next prior draw (its uniform d.u_prior is drawn ahead) for cell
    # c + _AHEAD, and for cells c + 2 .. c + _AHEAD again after a prior draw has replaced
    # d.u_prior.  Prefetches only: the draws are the same.  At 5.2M tokens the token sweep
    # took 0.967-0.979 of the time with distance 1 (K = 100 and 400, one state, sweeps
    # alternated; docs/benchmarks.md, "Twenty-sixth session").
    _AHEAD = 4
    _TOP_AHEAD = 3


cdef void _doc_rej(Uni *g, Doc *d, const Sweep *sw, topic_t *labels, int64_t tok0, int64_t n_doc,
                   Py_ssize_t c0, Py_ssize_t c1, int64_t c_end, int64_t *counters) noexcept nogil:
    """One document's labels (cells ``c0:c1``, ``n_doc`` tokens from ``tok0``) with the
    rejection bucket (only the dense ``d.nj`` is kept; the list stays empty).  A function of
    its own, so that the list bucket's loop in :c:func:`_sweep_block` is compiled as alone."""
    cdef Cell cl
    cdef Py_ssize_t c, k, K = sw.K, G = _guide_width(sw.K), W = sw.W, m = sw.m
    cdef int64_t i, n, tok = tok0, drawn
    cdef int32_t s, z, v, step
    cdef int mh_steps = sw.mh_steps
    cdef bint exact = sw.exact, include_self = sw.include_self, scan
    cdef double P, Q, wz
    cdef const int32_t *indices = sw.indices
    cdef const double *top = sw.top
    cdef const int64_t *table_row = sw.table_row
    cdef const topic_t *guide = <const topic_t *> sw.guide
    cdef const topic_t *lab = labels + tok0
    cdef const double *phi_v
    cdef const double *top_next
    cdef const float *cum_v
    cdef const topic_t *guide_v
    cl.n_doc = n_doc
    cl.n_other = n_doc if include_self else n_doc - 1
    for c in range(c0, c1):
        v = indices[c]
        phi_v = sw.phi + v * K
        Q = sw.word_mass[v]
        P = d.lam * Q
        # a cell whose prior-bucket mass overflows (c_j Q_v, T >= 2), or every cell under the
        # -2 hook, draws its labels by the exact scan
        scan = not (P < INFINITY) or mh_steps == -2
        if table_row[v] >= 0:
            cum_v = sw.cumf + table_row[v] * K
            guide_v = guide + table_row[v] * G
        else:
            cum_v = NULL
            guide_v = NULL
        _cell_start(&cl, top + v * W, m)
        n = <int64_t> sw.values[c]
        if c + _TOP_AHEAD < c_end:
            top_next = top + indices[c + _TOP_AHEAD] * W
            for k in range(0, W, 8):
                prefetch(top_next + k)
            prefetch(top_next + W - 1)
        if c + 1 < c_end:
            # the guide entry of the next cell's first prior draw should this cell make none
            # (a cell earlier than the prefetch after its last draw)
            _prefetch_prior(d.u_prior, table_row, guide, indices[c + 1], K)
        if c + _AHEAD < c_end:
            _prefetch_prior(d.u_prior, table_row, guide, indices[c + _AHEAD], K)
        for i in range(n):
            drawn = d.n_prior
            s = labels[tok]
            cl.self_pos = tok - tok0
            if not include_self:
                d.nj[s] -= 1
            cl.E = _top_mass(&cl, d)
            if scan or not (cl.E + cl.h * cl.n_other + P > 0.0):
                z = _direct(g, d, phi_v)
            elif exact:
                z = _propose_rej(g, d, &cl, lab, phi_v, Q, P, cum_v, guide_v)
            else:
                # independence Metropolis-Hastings from the current label
                z = s
                wz = _weight(d, s)
                for step in range(mh_steps):
                    z = _mh_step(g, d, z, &wz, _propose_rej(g, d, &cl, lab, phi_v, Q, P, cum_v, guide_v), counters)
            if include_self:
                d.nj[s] -= 1
            d.nj[z] += 1
            labels[tok] = <topic_t> z
            tok += 1
            _prefetch_next(d.u_prior, table_row, guide, indices, c, c_end, i + 1 < n, K)
            if d.n_prior != drawn:
                # a prior draw replaced u_prior: the entries the next cells' first draw reads
                for k in range(2, _AHEAD + 1):
                    if c + k < c_end:
                        _prefetch_prior(d.u_prior, table_row, guide, indices[c + k], K)


cdef int _sweep_block(bitgen_t *gen, Py_ssize_t j0, Py_ssize_t j1, const int64_t *indptr, const Sweep *sw,
                      const int64_t *doc_ptr, topic_t *labels, const double *prior, bint shared,
                      const double *b, double bsum, double work, doc_count_t *njk,
                      int64_t *counters) noexcept nogil:
    """The documents ``j0:j1`` (one block), in order, from one stream; -1 if out of memory.
    Each document's bucket is chosen at its start (:c:func:`_use_rejection`): the list
    (the compact list of its topics kept with the dense n_jk) or rejection (the dense
    n_jk only); with ``sw.top`` NULL every document takes the list (``counters[2]``
    still counts the tokens of the documents that the switch gives rejection)."""
    cdef Doc d
    cdef Py_ssize_t j, i, c, k, K = sw.K, G = _guide_width(sw.K)
    cdef int64_t tok, tok0, n, n_doc, c_end = indptr[j1]
    cdef int32_t s, z, v, step
    cdef int mh_steps = sw.mh_steps
    cdef bint exact = sw.exact, include_self = sw.include_self, rej, scan
    cdef double asum, cmax, x, D, P, Q, ws, wt, wz
    cdef double p_tok = 1.0 if exact else <double> mh_steps
    cdef const int32_t *indices = sw.indices
    cdef const double *values = sw.values
    cdef const double *phi = sw.phi
    cdef const double *top = sw.top
    cdef const int64_t *table_row = sw.table_row
    cdef const float *cumf = sw.cumf
    cdef const topic_t *guide = <const topic_t *> sw.guide
    cdef const double *word_mass = sw.word_mass
    cdef const double *phi_v
    cdef const float *cum_v
    cdef const topic_t *guide_v
    cdef doc_count_t *row
    cdef Uni uni
    cdef Uni *g = &uni
    uni.gen = gen
    uni.pos = _UBUF
    d.n_topics_total = K
    d.n_topics = 0
    d.b = b
    d.nj = <int32_t *> calloc(K, sizeof(int32_t))
    d.pos = <int32_t *> malloc(K * sizeof(int32_t))
    d.topics = <int32_t *> malloc(K * sizeof(int32_t))
    d.cnt = <double *> malloc(K * sizeof(double))
    if d.nj == NULL or d.topics == NULL or d.pos == NULL or d.cnt == NULL:
        free(d.nj); free(d.topics); free(d.pos); free(d.cnt)
        return -1
    for k in range(K):
        d.pos[k] = -1
    d.u_prior = _uniform(g)
    d.n_prior = 0
    for j in range(j0, j1):
        tok = tok0 = doc_ptr[j]
        n_doc = doc_ptr[j + 1] - tok
        if n_doc <= 0:
            continue
        row = njk + j * K
        rej = _use_rejection(row, K, n_doc, indptr[j + 1] - indptr[j], p_tok, work)
        if rej:
            counters[2] += n_doc
        rej = rej and top != NULL
        d.n_topics = 0
        if rej:
            for i in range(tok, doc_ptr[j + 1]):
                d.nj[labels[i]] += 1
        else:
            # n_jk and the compact list of the document's topics
            for i in range(tok, doc_ptr[j + 1]):
                s = labels[i]
                if d.nj[s] == 0:
                    row[s] = 0
                _add(&d, s)
        d.a = prior if shared else prior + j * K
        d.thin = False
        if shared:
            d.lam = 1.0
        elif mh_steps == 0:
            # the prior bucket of mass c_j Q_v, c_j = max_k a_jk / b_k, thinned by a_jk / (c_j b_k)
            cmax = 0.0
            for i in range(K):
                x = d.a[i] / b[i]
                cmax = x if x > cmax else cmax
            d.lam = cmax
            d.thin = True
        else:
            asum = 0.0
            for i in range(K):
                asum += d.a[i]
            d.lam = asum / bsum
        if rej:
            _doc_rej(g, &d, sw, labels, tok0, n_doc, indptr[j], indptr[j + 1], c_end, counters)
            for k in range(K):
                row[k] = <doc_count_t> d.nj[k]
                d.nj[k] = 0
            continue
        for c in range(indptr[j], indptr[j + 1]):
            v = indices[c]
            phi_v = phi + v * K
            Q = word_mass[v]
            P = d.lam * Q
            scan = not (P < INFINITY) or mh_steps == -2       # (as in _doc_rej)
            if table_row[v] >= 0:
                cum_v = cumf + table_row[v] * K
                guide_v = guide + table_row[v] * G
            else:
                cum_v = NULL
                guide_v = NULL
            n = <int64_t> values[c]
            # the list bucket: its total over the document's topics (the next cell's Phi entries prefetched)
            D = _cell_weights(&d, phi_v, phi + indices[c + 1] * K if c + 1 < indptr[j + 1] else NULL)
            if c + 1 < c_end:
                # the guide entry of the next cell's first prior draw, should this cell make none
                # (issued now, a cell earlier than the prefetch after this cell's last draw)
                _prefetch_prior(d.u_prior, table_row, guide, indices[c + 1], K)
            for i in range(n):
                s = labels[tok]
                if not include_self:
                    ws = phi_v[s]                      # (read before _remove's stores, which might alias it)
                    _remove(&d, s)
                    D -= ws
                    if D < 0.0 or d.n_topics == 0:
                        D = _cell_weights(&d, phi_v, NULL)
                if scan or not (D + P > 0.0):
                    z = _direct(g, &d, phi_v)
                elif exact:
                    z = _propose_list(g, &d, phi_v, D, Q, P, cum_v, guide_v)
                else:
                    # independence Metropolis-Hastings from the current label
                    z = s
                    wz = _weight(&d, s)
                    for step in range(mh_steps):
                        z = _mh_step(g, &d, z, &wz, _propose_list(g, &d, phi_v, D, Q, P, cum_v, guide_v), counters)
                if include_self:
                    ws = phi_v[s]
                    _remove(&d, s)
                    D -= ws
                wt = phi_v[z]                          # (read before _add's stores)
                _add(&d, z)
                D += wt
                labels[tok] = <topic_t> z
                tok += 1
                _prefetch_next(d.u_prior, table_row, guide, indices, c, c_end, i + 1 < n, K)
        for i in range(d.n_topics):
            s = d.topics[i]
            row[s] = <doc_count_t> d.nj[s]
            d.nj[s] = 0
            d.pos[s] = -1
        d.n_topics = 0
    counters[3] += d.n_prior
    free(d.nj); free(d.topics); free(d.pos); free(d.cnt)
    return 0


def partial_sweep(const int64_t[::1] indptr, const int32_t[::1] indices, const double[::1] values,
                  const int64_t[::1] doc_ptr, topic_t[::1] labels, const double[:, ::1] phi,
                  const double[:, ::1] prior, const double[::1] b, const int64_t[::1] table_row,
                  const float[:, ::1] cum, const topic_t[:, ::1] guide, const double[::1] word_mass,
                  const double[:, ::1] top, const int64_t[::1] bounds, const uintptr_t[::1] streams,
                  doc_count_t[:, ::1] njk,
                  int mh_steps, int n_threads, bint include_self=False,
                  bint shared_prior=False, double rejection_work=0.0):
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
    table_row, cum, guide, word_mass : (V,), (n_tables, K), (n_tables, guide_width(K)), (V,)
        The prior bucket's tables (:func:`build_prior_tables`; ``cum`` float32,
        ``guide`` of the labels' type): term v's row of ``cum`` and ``guide``
        (-1: no table, an O(K) scan) and its total ``Q_v = sum_k phi_vk b_k``.
    top : float64 (V, 2 + m + ceil(m / 2) + ceil(K / 8)), or no rows
        The terms' top sets and bounds for the rejection bucket
        (:func:`build_prior_tables`; m <= K), read only for the terms of the
        documents the switch gives rejection; no rows: the list for every cell.
    bounds, streams
        Document blocks (row indices) and one stream address per block (the
        block's uniforms, taken from it 256 at a time; the rest of the last
        batch is dropped).
    njk : uint16 or int32 (n_rows, K)
        ``n_jk`` of the rows, consistent with ``labels`` (updated).
    mh_steps : int
        When the prior has a row per document: 0 draws each label exactly (the
        prior bucket thinned); n > 0 makes n Metropolis-Hastings steps per token
        with the proposal q (test hooks: -1 takes every proposal of q, a wrong
        conditional when the documents' priors differ; -2 draws every label
        exactly by an O(K) scan).
    include_self : bool, default=False
        Test hook only: do not take the token out of ``n_jk`` before its draw
        (a wrong conditional that the tests must catch).
    shared_prior : bool, default=False
        ``prior`` is one row shared by all documents and equal to ``b``: the
        proposal is the exact conditional and no Metropolis-Hastings step is
        made (T = 1).  (Not inferred from ``prior``'s shape: a chunk of one
        document also has one row.)
    rejection_work : float, default=0.0
        The switch between the document buckets (speed only: both draw q
        exactly): a document of ``n_doc`` tokens in ``n_cells`` cells with
        ``n_t`` topics at the start of its sweep takes the rejection bucket when
        ``n_t n_cells / n_doc >= rejection_work p`` (``p`` proposals a token: 1,
        or ``mh_steps > 0``), the list bucket otherwise.  0: rejection for every
        document (with ``top``); ``inf``: the list.

    Returns
    -------
    (proposals, accepted, rejection_tokens, prior_draws) : (int, int, int, int)
        Metropolis-Hastings proposals made and accepted (0, 0 when exact), the tokens of
        the cells the switch gave the rejection bucket (with or without ``top``'s rows),
        and the proposals drawn from the prior bucket (``PartialState.table_rows``).
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1, K = phi.shape[1], blk, i
    cdef bint shared = shared_prior
    cdef double bsum = 0.0
    cdef int n_failed = 0
    cdef int64_t[:, ::1] counters = None
    cdef Sweep sw
    if n_blocks <= 0:
        return 0, 0, 0, 0
    import numpy as np
    counters = np.zeros((n_blocks, 4), dtype=np.int64)
    for i in range(K):
        bsum += b[i]
    sw.indices = &indices[0] if indices.shape[0] else NULL
    sw.values = &values[0] if values.shape[0] else NULL
    sw.phi = &phi[0, 0]
    sw.table_row = &table_row[0]
    sw.cumf = &cum[0, 0] if cum.shape[0] else NULL
    sw.guide = <const void *> &guide[0, 0] if guide.shape[0] else NULL
    sw.word_mass = &word_mass[0]
    sw.top = &top[0, 0] if top.shape[0] else NULL
    sw.W = top.shape[1]
    sw.m = top_size(sw.W, K) if sw.top != NULL else 0
    sw.K = K
    sw.mh_steps = mh_steps
    sw.exact = shared or mh_steps <= 0
    sw.include_self = include_self
    for blk in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        if _sweep_block(<bitgen_t *> streams[blk], bounds[blk], bounds[blk + 1], &indptr[0], &sw,
                        &doc_ptr[0], &labels[0] if labels.shape[0] else NULL, &prior[0, 0],
                        shared, &b[0], bsum, rejection_work, &njk[0, 0] if njk.shape[0] else NULL,
                        &counters[blk, 0]) < 0:
            n_failed += 1
    if n_failed:
        raise MemoryError(f"partial_sweep: scratch memory of {n_failed} document block(s) could not be allocated")
    tot = np.asarray(counters).sum(axis=0)
    return int(tot[0]), int(tot[1]), int(tot[2]), int(tot[3])


def build_prior_tables(const double[:, ::1] phi, const double[::1] b, const int64_t[::1] table_row,
                       float[:, ::1] cum, topic_t[:, ::1] guide, double[::1] mass, double[:, ::1] top,
                       int n_threads, bint top_hint=False, const uint8_t[::1] top_terms=None):
    """The prior bucket's totals and tables: ``mass[v] = Q_v = sum_k phi_vk b_k``
    for every term, and for a term with ``table_row[v] = t >= 0`` the
    inversion table of ``w_k = phi_vk b_k``: ``cum[t, k] = C_k / Q_v`` in
    float32, ``C_k = sum_{i <= k} w_i`` (left to right, the sums an O(K) scan
    of the sweep forms; the sweep's comparisons with it are exact, see
    ``_cum_less``) and the guide over ``M = GUIDE_CELLS K`` cells, a record of
    two entries a cell (:func:`guide_width`: ``2 M + 2`` entries a row):
    ``guide[t, 2 i]`` = the first k with ``C_k > i Q_v / M`` (Chen & Asau's
    indexed search: the topic of ``x = u Q_v`` is found from the record of
    cell ``floor(u M)`` in O(1) expected steps), stored as ``~k`` (pure)
    when topic k's interval covers the whole cell ``[i Q_v / M, (i + 1) Q_v / M]``
    with a margin of ``2^-40 Q_v`` (then every such x lies in it, whatever the
    rounding of ``u Q_v`` and ``u M``, and the draw reads nothing else), and
    ``guide[t, 2 i + 1]`` = the cell's quick bytes ``A | B << 8``: its first and
    last boundaries in 256ths of the cell, rounded so that a draw at position
    ``q = floor(256 (u M - i))``, ``1 <= q <= 254``, with ``q < A`` has topic k and
    one with ``q > B`` the next record's topic, with no other read (``_pick_prior``;
    ``0xFF00`` where no quick answer is given); ``guide[t, 2 M]`` = K - 1.  No randomness:
    parallel over groups of ``_SUM_ROWS`` (4) terms, whose sums are formed side by
    side (:c:func:`_prior_sums`: each term's the same bits as alone), the same
    tables for any thread count.
    ``guide``'s type is the labels' (``K <= 32767`` for int16).

    With them, the terms' top sets for the document bucket: ``top[v]`` =
    ``[h_v, 1 / h_v, the m largest phi_vk (largest first), their topics (int32)]``,
    ``h_v`` the (m+1)-th largest (0 when m = K), m = :c:func:`top_size` of
    ``top``'s width (at most K and 64; :c:func:`_top_set`).  ``top_hint``: ``top``
    holds the top sets of an earlier Phi of the same shape, whose bounds speed up
    the selection (the same result; any values there give the same sets).  ``top``
    with no rows: no top sets.  ``top_terms`` (uint8 (V,)): only the top sets of the
    terms with a non-zero entry (each a function of its row of ``phi`` alone).
    """
    cdef Py_ssize_t V = phi.shape[0], K = phi.shape[1], grp, r, v0, rows, m = top_size(top.shape[1], phi.shape[1])
    cdef Py_ssize_t n_groups = (V + _SUM_ROWS - 1) // _SUM_ROWS
    cdef bint with_top = top.shape[0] > 0
    cdef const uint8_t *tt = &top_terms[0] if top_terms is not None and top_terms.shape[0] > 0 else NULL
    cdef int64_t t
    cdef double *cs
    cdef double *edge
    cdef int32_t *cnt
    cdef int n_failed = 0
    if V == 0:
        return
    if K == 0:
        mass[:] = 0.0
        return
    cs = NULL   # set by every thread below (Cython copies them in as firstprivate)
    edge = NULL
    cnt = NULL
    with nogil, parallel(num_threads=n_threads):
        # per thread: the rows' sums C_k, and the guide's cell ends and counts
        # and the top sets' m + 1 largest entries (values after edge, topics after cnt)
        cs = <double *> malloc((_SUM_ROWS * K + _GUIDE_CELLS * K + 1 + m + 1) * sizeof(double))
        edge = cs + _SUM_ROWS * K if cs != NULL else NULL
        cnt = <int32_t *> malloc((_GUIDE_CELLS * K + 1 + m + 1 + K) * sizeof(int32_t))
        for grp in prange(n_groups, schedule="dynamic", chunksize=16):
            if cs == NULL or cnt == NULL:
                n_failed += 1
            else:
                v0 = grp * _SUM_ROWS
                rows = V - v0 if V - v0 < _SUM_ROWS else _SUM_ROWS
                _prior_sums(&phi[v0, 0], &b[0], K, rows, cs)
                for r in range(rows):
                    if with_top and (tt == NULL or tt[v0 + r]):
                        _top_set(&phi[v0 + r, 0], K, m, top[v0 + r, 0] if top_hint else 0.0, &top[v0 + r, 0],
                                 edge + _GUIDE_CELLS * K + 1, cnt + _GUIDE_CELLS * K + 1,
                                 cnt + _GUIDE_CELLS * K + 1 + m + 1)
                    mass[v0 + r] = cs[r * K + K - 1]
                    t = table_row[v0 + r]
                    if t >= 0:
                        _prior_table(cs + r * K, K, &cum[t, 0], &guide[t, 0], edge, cnt)
        free(cs)
        free(cnt)
    if n_failed:
        raise MemoryError("build_prior_tables: scratch memory could not be allocated")


def prior_topics(const double[:, ::1] phi, const double[::1] b, const int64_t[::1] table_row,
                 const float[:, ::1] cum, const topic_t[:, ::1] guide, const double[::1] mass,
                 const int64_t[::1] terms, const double[::1] u, int32_t[::1] out):
    """``out[i]``: the prior bucket's topic for the uniform ``u[i]`` (in [0, 1)) and
    term ``terms[i]``, as the sweep draws it (its table when it has one, else
    the scan).  For the tests."""
    cdef Py_ssize_t i, K = phi.shape[1]
    cdef int64_t v, t
    for i in range(u.shape[0]):
        v = terms[i]
        t = table_row[v]
        out[i] = _pick_prior(&phi[v, 0], &b[0], K, u[i], mass[v],
                             &cum[t, 0] if t >= 0 else NULL, &guide[t, 0] if t >= 0 else NULL)


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


cdef inline void _add_dense(nvk_t *row, const topic_t *lab, int64_t n) noexcept nogil:
    """Add the ``n`` tokens of one cell (labels ``lab``) to its term's dense row of n_vk.
    The first token is added outside the loop: most cells hold one token, and a
    loop whose trip count varies from cell to cell mispredicts its exit (a
    pipeline flush that exposes the next cells' misses of the (V, K) array)."""
    cdef int64_t i
    if n <= 0:
        return
    row[lab[0]] += 1
    for i in range(1, n):
        row[lab[i]] += 1


cdef enum:
    # the n_vk pass's increments wait this many tokens after their entry's prefetch (a power of two)
    _NVK_RING = 128
    # ... where the dense rows hold more bytes than this (below, they stay in a core's L2)
    _NVK_RING_BYTES = 1 << 20


cdef inline void _add_ahead(nvk_t **ring, Py_ssize_t *nr, nvk_t *row, const topic_t *lab,
                            int64_t n) noexcept nogil:
    """:c:func:`_add_dense` through the ring of :c:func:`_count_cells`: each token's
    entry is prefetched (for writing) and takes the place of the entry
    ``_NVK_RING`` tokens back, which is incremented now (integer counts: the
    same sums in any order).  Where the rows do not fit in L2, an increment made
    at once waits on its row's miss, and the mispredicted exits of the cells'
    token loops keep the next cells' misses from overlapping with it."""
    cdef int64_t i
    cdef nvk_t *e
    cdef Py_ssize_t q
    for i in range(n):
        e = row + lab[i]
        prefetch_w(e)
        q = nr[0] & (_NVK_RING - 1)
        ring[q][0] += 1
        ring[q] = e
        nr[0] += 1


cdef Py_ssize_t _merge_slots(uint32_t *s, Py_ssize_t e, int32_t *pos) noexcept nogil:
    """Merge the ``e`` filled slots ``s[:e]`` of one sparse term row (appended
    one token at a time, a factor possibly in several) into one slot a factor,
    in the order of each factor's first slot, the rest zeroed; returns the slots
    filled.  The same words as :c:func:`slot_add` of the entries one after
    another (a count that would pass 65535 is not added, as there).  ``pos``
    (one entry a factor + 1, all -1) is -1 again on return."""
    cdef Py_ssize_t p, q = 0
    cdef uint32_t x, key
    for p in range(e):
        x = s[p]
        key = x >> SLOT_SHIFT
        if pos[key] < 0:
            pos[key] = <int32_t> q
            s[q] = x
            q += 1
        elif (s[pos[key]] & SLOT_COUNT) + (x & SLOT_COUNT) <= <uint32_t> SLOT_COUNT:
            s[pos[key]] += x & SLOT_COUNT
    for p in range(q):
        pos[s[p] >> SLOT_SHIFT] = -1
    for p in range(q, e):
        s[p] = 0
    return q


cdef inline void _append_slots(uint32_t *s, Py_ssize_t n_slots, int32_t *fill, int32_t *pos,
                               const topic_t *lab, int64_t n) noexcept nogil:
    """Append the ``n`` tokens of one cell (labels ``lab``) to its term's sparse row
    ``s`` as slots of count 1 after the ``fill[0]`` filled (merged by
    :c:func:`_merge_slots` once the cells are counted: a search of the row for
    each token's factor branches unpredictably).  A full row is merged first,
    and where it is still full the token goes to :c:func:`slot_add` (its factor's
    slot, or nowhere, as there)."""
    cdef int64_t i
    for i in range(n):
        if fill[0] == n_slots:
            fill[0] = <int32_t> _merge_slots(s, n_slots, pos)
            if fill[0] == n_slots:
                slot_add(s, n_slots, <uint32_t> lab[i], 1)
                continue
        s[fill[0]] = ((<uint32_t> lab[i] + 1) << SLOT_SHIFT) | 1
        fill[0] += 1


cdef void _count_cells(nvk_t *out, Py_ssize_t K, const int32_t *rmap, const int64_t *sstart, uint32_t *sl,
                       int32_t *fill, int32_t *pos, int64_t c0, int64_t c1, int64_t tok0,
                       const int32_t *indices, const double *values, const topic_t *lab,
                       int32_t lo, int32_t hi, bint ahead) noexcept nogil:
    """Add the tokens of cells ``c0:c1`` (the first at ``lab[tok0]``) whose term v
    is in ``lo <= v < hi`` to n_vk: v's dense row (``rmap[v]``, or v where
    ``rmap`` is NULL) or, where that is -1, its slots (``sl``, from
    ``sstart[v]``), merged at the end (``fill``: the filled slots of each term,
    ``pos``: a thread's scratch for :c:func:`_merge_slots`; ``ahead``: dense
    rows through :c:func:`_add_ahead`)."""
    cdef int64_t c, n, tok = tok0
    cdef int32_t v, row
    cdef Py_ssize_t w, nr = 0
    # the entries of the last _NVK_RING dense tokens, prefetched, not yet incremented
    # (at first a scratch entry, incremented and dropped); set up only when used
    cdef nvk_t spare = 0
    cdef nvk_t *ring[_NVK_RING]
    if ahead:
        for w in range(_NVK_RING):
            ring[w] = &spare
    if sl != NULL:
        for w in range(lo, hi):
            if rmap[w] < 0:
                fill[w] = 0
                while fill[w] < sstart[w + 1] - sstart[w] and sl[sstart[w] + fill[w]] != 0:
                    fill[w] += 1
    for c in range(c0, c1):
        v = indices[c]
        n = <int64_t> values[c]
        if v >= lo and v < hi:
            row = rmap[v] if rmap != NULL else v
            if row >= 0:
                if ahead:
                    _add_ahead(ring, &nr, out + row * K, lab + tok, n)
                else:
                    _add_dense(out + row * K, lab + tok, n)
            else:
                _append_slots(sl + sstart[v], sstart[v + 1] - sstart[v], fill + v, pos, lab + tok, n)
        tok = tok + n
    if ahead:
        for w in range(_NVK_RING):
            ring[w][0] += 1
    if sl != NULL:
        for w in range(lo, hi):
            if rmap[w] < 0 and fill[w] > 0:
                _merge_slots(sl + sstart[w], fill[w], pos)


def add_term_labels(int64_t c0, int64_t c1, int64_t tok0, const int32_t[::1] indices,
                    const double[::1] values, const topic_t[::1] labels, nvk_t[:, ::1] nvk,
                    int n_threads, const int32_t[::1] row_map=None, const int64_t[::1] slot_start=None,
                    uint32_t[::1] slots=None, const int64_t[::1] term_split=None):
    """Add the term-topic counts of the tokens of cells ``c0:c1`` (the first at
    ``labels[tok0]``, tokens in CSR order) into ``nvk`` (V, K), or, with
    ``row_map``, ``slot_start`` and ``slots``, into a
    :class:`pygbn.inference.term_counts.TermCounts`: term v's row ``row_map[v]``
    of ``nvk`` when that is >= 0, else its slots (the words that adding each
    token with ``slot_add`` in turn would leave: each factor in one slot, in the
    order the tokens first meet it, after the slots already filled).

    With ``n_threads`` > 1, thread t counts the terms ``term_split[t] <= v <
    term_split[t + 1]`` (``term_split``: n_threads + 1 increasing bounds from 0 to
    V; by default V / n_threads terms each), each reading all the cells: no two
    threads write the same entry (nor, but at the bounds, the same cache line),
    integer counts are the same in any order, and a document's cells, sorted by
    term, change owner at most n_threads - 1 times (a predictable branch).
    :meth:`pygbn.inference.partial.PartialState.term_split` balances the
    threads' tokens."""
    cdef Py_ssize_t K = nvk.shape[1], t, nt = max(n_threads, 1)
    cdef Py_ssize_t V = row_map.shape[0] if row_map is not None and row_map.shape[0] > 0 else nvk.shape[0]
    cdef bint use_slots = row_map is not None and row_map.shape[0] > 0
    cdef const int32_t *rmap = &row_map[0] if use_slots else NULL
    cdef const int64_t *sstart = &slot_start[0] if use_slots else NULL
    cdef uint32_t *sl = &slots[0] if use_slots and slots.shape[0] > 0 else NULL
    cdef nvk_t *out = &nvk[0, 0] if nvk.shape[0] else NULL
    cdef const topic_t *lab = &labels[0] if labels.shape[0] else NULL
    cdef int32_t[::1] fill
    cdef int32_t[:, ::1] pos
    cdef const int64_t[::1] split
    # the dense rows' increments a ring of prefetches behind, where those rows outgrow L2
    cdef bint ahead = nvk.shape[0] * K * nvk.itemsize > _NVK_RING_BYTES
    if c1 <= c0 or (out == NULL and sl == NULL):
        return
    import numpy as np
    # the filled slots of each term, and a merge scratch a thread (one entry a factor + 1)
    fill = np.zeros(V if use_slots else 1, dtype=np.int32)
    pos = np.full((nt, K + 1 if use_slots else 1), -1, dtype=np.int32)
    if nt == 1:
        with nogil:
            _count_cells(out, K, rmap, sstart, sl, &fill[0], &pos[0, 0], c0, c1, tok0, &indices[0],
                         &values[0], lab, 0, <int32_t> V, ahead)
        return
    if term_split is None:
        term_split = np.arange(nt + 1, dtype=np.int64) * V // nt
    split = term_split
    for t in prange(nt, nogil=True, num_threads=nt, schedule="static", chunksize=1):
        _count_cells(out, K, rmap, sstart, sl, &fill[0], &pos[t, 0], c0, c1, tok0, &indices[0],
                     &values[0], lab, <int32_t> split[t], <int32_t> split[t + 1], ahead)


def doc_token_offsets(const int64_t[::1] indptr, const double[::1] values, int64_t[::1] out):
    """``out[j]`` = the tokens of the documents before j (``out`` has one entry per
    row pointer): the offsets of the documents' labels, without the float64
    cumulative sums of every cell that numpy would make."""
    cdef Py_ssize_t j, c
    cdef int64_t total = 0
    with nogil:
        for j in range(indptr.shape[0]):
            out[j] = total
            if j + 1 < indptr.shape[0]:
                for c in range(indptr[j], indptr[j + 1]):
                    total += <int64_t> values[c]
