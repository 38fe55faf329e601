"""The Gibbs kernels against the plain numpy expressions they implement.

Each test draws many times from a kernel on a tiny input and compares the
draws with the exact distribution given by the docstring's "equivalent to"
expression (chi-square on categories, z-tests on means).  Fixed seeds; the
significance levels are tiny (1e-6) while the sample sizes give power against
errors of a few percent.
"""
import numpy as np
import pytest
from scipy import stats

import scipy.sparse as sp

from pygbn._utils import BlockStreams
from pygbn.inference import _blocked, _collapsed, _upper
from pygbn.inference.collapsed_state import CollapsedState
from pygbn.stats import crt_pmf_table

ALPHA = 1e-6


def _chisq_p(observed, expected_prob):
    observed = np.asarray(observed, dtype=float)
    exp = np.asarray(expected_prob) * observed.sum()
    keep = exp > 0
    assert observed[~keep].sum() == 0, "draws where the exact probability is zero"
    return stats.chisquare(observed[keep], exp[keep]).pvalue


# --------------------------------------------------------------------------
# collapsed sweep: the conditional of one token (eq:z)
# --------------------------------------------------------------------------
def _collapsed_state(prior_rows):
    """Doc 0 holds a single token of term 2; docs 1-2 hold fixed tokens."""
    V, K = 5, 4
    tok_w = np.array([2, 0, 2, 2, 4, 1, 2, 3, 3, 0], dtype=np.int32)
    tok_z = np.array([1, 0, 1, 3, 3, 2, 2, 0, 1, 1], dtype=np.int32)
    doc_ptr = np.array([0, 1, 5, 10], dtype=np.int64)
    J = 3
    doc_of = np.repeat(np.arange(J), np.diff(doc_ptr))
    nwk = np.zeros((V, K), dtype=np.int64)
    njk = np.zeros((J, K), dtype=np.int64)
    np.add.at(nwk, (tok_w, tok_z), 1)
    np.add.at(njk, (doc_of, tok_z), 1)
    nk = nwk.sum(axis=0)
    prior = np.ascontiguousarray(prior_rows, dtype=np.float64)
    return V, K, tok_w, tok_z, doc_ptr, nwk, njk, nk, prior


def _tokens(tok_w, tok_z, doc_ptr, V, K, dense_from=-1):
    """The kernel's state of these tokens: the data as CSR (tokens of a document
    in CSR order) with the labels in that order."""
    J = doc_ptr.size - 1
    doc_of = np.repeat(np.arange(J), np.diff(doc_ptr))
    order = np.lexsort((tok_w, doc_of))
    Y = sp.csr_matrix((np.ones(tok_w.size), (doc_of, tok_w)), shape=(J, V))
    Y.sum_duplicates()
    return (CollapsedState.from_counts(Y, K, labels=tok_z[order], dense_from=dense_from),
            tok_w[order], doc_of[order])


@pytest.mark.parametrize("dense_from", [1, 5], ids=["dense-row", "list"])
@pytest.mark.parametrize("shared", [True, False], ids=["prior-r", "prior-per-doc"])
def test_collapsed_sweep_draws_one_token_from_eq_z(shared, dense_from):
    eta = 0.3
    if shared:
        prior = np.array([[0.5, 0.05, 1.5, 0.2]])
    else:
        prior = np.array([[0.1, 2.0, 0.3, 0.7], [1.0, 1.0, 1.0, 1.0], [0.2, 0.2, 0.2, 0.2]])
    V, K, tok_w, tok_z, doc_ptr, nwk, njk, nk, prior = _collapsed_state(prior)
    # exact conditional of doc 0's token (term 2), counts without it
    nwk_m, nk_m, njk_m = nwk.copy(), nk.copy(), njk.copy()
    nwk_m[2, tok_z[0]] -= 1
    nk_m[tok_z[0]] -= 1
    njk_m[0, tok_z[0]] -= 1
    p = (eta + nwk_m[2]) / (V * eta + nk_m) * (njk_m[0] + prior[0])
    p /= p.sum()
    gen = np.random.Generator(np.random.PCG64(12))
    counts = np.zeros(K)
    n = 40000
    for _ in range(n):
        state, _, _ = _tokens(tok_w, tok_z, doc_ptr, V, K, dense_from)
        state.sweep(prior[:1], eta, gen, 0, 1)      # document 0 only
        z = state.labels
        a_nwk, a_nk = state.term_counts, state.totals
        counts[z[0]] += 1
        # counts stay consistent with the new label
        assert a_nwk[2, z[0]] == nwk_m[2, z[0]] + 1 and a_nk.sum() == nk.sum()
    assert _chisq_p(counts, p) > ALPHA


@pytest.mark.parametrize("K, dense_from", [(7, None), (7, 1), (7, 8), (40, 8), (40000, None)],
                         ids=["int16-labels", "dense-rows", "lists", "switching", "int32-labels"])
def test_collapsed_sweep_keeps_counts_and_word_lists_consistent(K, dense_from):
    rng = np.random.default_rng(3)
    V, J = 30, 40
    lengths = rng.integers(0, 25, size=J)
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tok_w = rng.integers(0, V, size=doc_ptr[-1]).astype(np.int32)
    tok_z = rng.integers(0, min(K, 40), size=doc_ptr[-1]).astype(np.int32)
    state, tok_w, doc_of = _tokens(tok_w, tok_z, doc_ptr, V, K, -1 if dense_from is None else dense_from)
    prior = rng.gamma(0.5, size=(J, K))
    gen = np.random.default_rng(4)
    for it in range(20):
        # whole sweeps, and sweeps in two parts with a row per document
        if it % 2:
            state.sweep(prior, 0.1, gen)
        else:
            state.sweep(prior[:13], 0.1, gen, 0, 13)
            state.sweep(prior[13:], 0.1, gen, 13, J)
    tok_z = state.labels
    nwk, njk, nk = state.term_counts, state.doc_counts, state.totals
    nwk2 = np.zeros_like(nwk)
    njk2 = np.zeros_like(njk)
    np.add.at(nwk2, (tok_w, tok_z), 1)
    np.add.at(njk2, (doc_of, tok_z), 1)
    np.testing.assert_array_equal(nwk, nwk2)
    np.testing.assert_array_equal(njk, njk2)
    np.testing.assert_array_equal(nk, nwk2.sum(axis=0))
    wptr, wlist, wlen, dense = state.word_ptr, state.word_lists, state.word_len, state.word_dense
    np.testing.assert_array_equal(wlen, (nwk > 0).sum(axis=1))
    d_from = dense_from or -(-K // 3)
    # a term drops its list at d_from topics and gets it back below d_from // 2
    assert np.all(wlen[dense == 1] >= d_from // 2) and np.all(wlen[dense == 0] < d_from)
    if dense_from == 1 or (dense_from or 0) > K:
        assert dense.all() if dense_from == 1 else not dense.any()
    for v in np.flatnonzero(dense == 0):
        # a term's list: its non-zero counts, sorted by decreasing count
        lst = wlist[2 * wptr[v]: 2 * (wptr[v] + wlen[v]): 2]
        cnt = wlist[2 * wptr[v] + 1: 2 * (wptr[v] + wlen[v]): 2]
        np.testing.assert_array_equal(np.sort(lst), np.flatnonzero(nwk[v]))
        np.testing.assert_array_equal(cnt, nwk[v, lst])
        assert np.all(np.diff(cnt) <= 0), "term lists sorted by decreasing count"


@pytest.mark.parametrize("K", [21, 64])
def test_collapsed_dense_word_bucket_same_labels_with_and_without_avx(K):
    """The dense word bucket's block totals (AVX where the CPU has it, SSE2 or
    scalar otherwise) are the same bits, so the chain is the same."""
    rng = np.random.default_rng(8)
    V, J = 12, 30
    doc_ptr = np.concatenate([[0], np.cumsum(rng.integers(1, 40, size=J))]).astype(np.int64)
    tok_w = rng.integers(0, V, size=doc_ptr[-1]).astype(np.int32)
    tok_z = rng.integers(0, K, size=doc_ptr[-1]).astype(np.int32)
    prior = rng.gamma(0.3, size=(1, K))
    labels = []
    for avx in (True, False):
        previous = _collapsed.use_dense_avx(avx)
        try:
            state, _, _ = _tokens(tok_w, tok_z, doc_ptr, V, K, 1)      # dense rows only
            gen = np.random.default_rng(5)
            for _ in range(5):
                state.sweep(prior, 0.05, gen)
        finally:
            _collapsed.use_dense_avx(previous)
        labels.append(state.labels.copy())
    np.testing.assert_array_equal(labels[0], labels[1])


# --------------------------------------------------------------------------
# blocked kernels
# --------------------------------------------------------------------------
def _crt_pmf(n, r):
    return np.exp(crt_pmf_table(n, r))


def test_propagate_counts_is_crt_then_multinomial():
    """Equivalent to: x = CRT(m, phi[v] @ theta[j]); split x by phi[v] * theta[j]."""
    J, kin, K = 4000, 2, 3
    m_in = np.zeros((J, kin), dtype=np.int64)
    m_in[:, 0] = 6
    phi = np.array([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
    theta = np.tile([0.4, 1.1, 0.25], (J, 1))
    bounds = np.array([0, 1000, 2000, 3000, 4000], dtype=np.int64)
    streams = BlockStreams(np.random.default_rng(0), 4)
    totals = []
    splits = np.zeros(K)
    for rep in range(10):
        m_out = np.empty((J, K), dtype=np.int64)
        n_out = np.zeros((2, kin, K), dtype=np.int64)
        _upper.propagate_counts(m_in, phi, theta, bounds, streams.addresses, m_out, n_out, 2)
        tables = m_out.sum(axis=1)
        np.testing.assert_array_equal(n_out.sum(axis=0)[0], m_out.sum(axis=0))
        assert n_out.sum(axis=0)[1].sum() == 0
        totals.append(tables)
        splits += m_out.sum(axis=0)
    totals = np.concatenate(totals)
    w = phi[0] * theta[0]
    pmf = _crt_pmf(6, w.sum())
    assert _chisq_p(np.bincount(totals, minlength=7), pmf) > ALPHA
    assert _chisq_p(splits, w / w.sum()) > ALPHA


def _propagate(m_in, phi, theta, n_threads, stats=True, seed=3):
    J, K = theta.shape
    bounds = np.linspace(0, J, 5).astype(np.int64)
    streams = BlockStreams(np.random.default_rng(seed), 4)
    m_out = np.empty((J, K), dtype=np.int64)
    n_out = np.zeros((n_threads if stats else 0, phi.shape[0], K), dtype=np.int64)
    _upper.propagate_counts(m_in, phi, theta, bounds, streams.addresses, m_out, n_out, n_threads)
    return m_out, n_out.sum(axis=0)


def test_propagate_counts_count_types_threads_and_no_statistics_agree():
    """The draws do not depend on the count type of m_in, on the thread count, or
    on whether the statistics of Phi are gathered."""
    rng = np.random.default_rng(11)
    J, kin, K = 600, 7, 21
    m_in = rng.poisson(1.5, size=(J, kin)) * (rng.random((J, kin)) < 0.4)
    m_in[0, 0] = 2000                                   # a large count: CRT by random_crt, binomial split
    phi = rng.dirichlet(np.ones(kin), size=K).T.copy()
    theta = rng.gamma(0.3, size=(J, K)) * 50
    ref, n_ref = _propagate(m_in.astype(np.int64), phi, theta, 1)
    for dtype in (np.uint16, np.int32):
        got, n_got = _propagate(m_in.astype(dtype), phi, theta, 3)
        np.testing.assert_array_equal(got, ref)
        np.testing.assert_array_equal(n_got, n_ref)
    got, _ = _propagate(m_in, phi, theta, 2, stats=False)
    np.testing.assert_array_equal(got, ref)
    # every document's tables: 1 <= CRT(m) <= m per non-zero cell
    assert np.all(ref.sum(axis=1) >= (m_in > 0).sum(axis=1))
    assert np.all(ref.sum(axis=1) <= m_in.sum(axis=1))
    np.testing.assert_array_equal(n_ref.sum(axis=0), ref.sum(axis=0))


def test_propagate_counts_small_splits_over_many_chunks():
    """Fewer than 32 tables: one categorical draw each over chunks of 8 factors (a whole
    chunk of zero weights, zeros inside chunks, a last partial chunk), in proportion to
    the weights and never on a zero one."""
    rng = np.random.default_rng(21)
    J, K = 20000, 27
    phi = rng.dirichlet(np.ones(K), size=1)
    phi[0, 8:16] = 0.0
    phi[0, [3, 17, 26]] = 0.0
    phi /= phi.sum()
    base = rng.gamma(2.0, size=K)
    theta = base * rng.uniform(0.5, 4.0, size=(J, 1))        # the same proportions, other r
    m_in = np.full((J, 1), 3, dtype=np.int64)
    m_out, _ = _propagate(m_in, phi, theta, 2)
    assert m_out.sum(axis=1).max() < 32
    w = phi[0] * base
    zero = w == 0
    assert m_out[:, zero].sum() == 0
    assert _chisq_p(m_out.sum(axis=0)[~zero], w[~zero] / w.sum()) > ALPHA


def test_propagate_counts_large_tables_split_binomially():
    """Many tables (x >= 32: conditional binomials): E[m_jk] = E[x] w_k / sum(w)."""
    J, kin, K = 2000, 1, 5
    m_in = np.full((J, kin), 400, dtype=np.int64)
    phi = np.array([[0.1, 0.2, 0.3, 0.15, 0.25]])
    theta = np.tile([40.0, 10.0, 20.0, 5.0, 30.0], (J, 1))
    m_out, _ = _propagate(m_in, phi, theta, 2)
    w = phi[0] * theta[0]
    r = w.sum()
    pmf = np.exp(crt_pmf_table(400, r))
    mean_x = (np.arange(401) * pmf).sum()
    assert mean_x > 32
    tot = m_out.sum(axis=1)
    var_x = (np.arange(401) ** 2 * pmf).sum() - mean_x**2
    assert abs(tot.mean() - mean_x) < 5 * np.sqrt(var_x / J)
    assert _chisq_p(m_out.sum(axis=0), w / r) > ALPHA


def test_propagate_counts_underflowing_products_one_table_split_in_log_space():
    phi = np.array([[1e-200, 1e-200, 1e-200]])
    theta = np.tile([1e-200, 3e-200, 1e-300], (4000, 1))     # every product underflows
    m_in = np.full((4000, 1), 5, dtype=np.int64)
    m_out, _ = _propagate(m_in, phi, theta, 2)
    np.testing.assert_array_equal(m_out.sum(axis=1), 1)     # CRT(m, r -> 0) = 1
    assert m_out[:, 2].sum() == 0                           # weight 1e-100 of the others
    assert _chisq_p(m_out.sum(axis=0)[:2], [0.25, 0.75]) > ALPHA


def test_doc_prior_is_the_floored_product_by_blocks():
    rng = np.random.default_rng(12)
    J, kin, kup = 700, 30, 9
    theta_up = rng.gamma(0.2, size=(J, kup))
    theta_up[5] = 1e-310
    phi_up = rng.dirichlet(np.ones(kin), size=kup).T.copy()
    bounds = np.array([0, 128, 256, 300, 700], dtype=np.int64)
    out = np.empty((J, kin))
    _upper.doc_prior(theta_up, phi_up, bounds, out, 2)
    np.testing.assert_allclose(out, np.maximum(theta_up @ phi_up.T, np.finfo(float).tiny), rtol=1e-13)
    assert np.all(out[5] == np.finfo(float).tiny)
    part = np.empty((700 - 256, kin))
    _upper.doc_prior(theta_up, phi_up, bounds[2:], part, 1)   # the same rows from a part of the blocks
    np.testing.assert_array_equal(part, out[256:])


def test_sample_theta_with_its_product_prior():
    """Equivalent to: out[j] = rng.gamma(max(theta_up[j] @ phi_up.T, tiny) + m[j], 1 / rate[j]);
    the row sums come with it; any thread count gives the same draws."""
    rng = np.random.default_rng(13)
    J, kin, kup = 6000, 4, 3
    theta_up = np.tile([0.5, 2.0, 0.01], (J, 1))
    phi_up = np.array([[0.7, 0.1, 0.2], [0.1, 0.1, 0.2], [0.1, 0.5, 0.3], [0.1, 0.3, 0.3]])
    m = np.tile(np.array([0, 2, 0, 7], dtype=np.int32), (J, 1))
    rate = 0.5 + rng.random(J)
    bounds = np.arange(0, J + 1, 500, dtype=np.int64)
    outs = []
    for nt in (1, 3):
        streams = BlockStreams(np.random.default_rng(14), len(bounds) - 1)
        out, sums = np.empty((J, kin)), np.empty(J)
        _upper.sample_theta(theta_up, phi_up, np.empty(0), m, rate, bounds, streams.addresses, out,
                            sums, nt)
        outs.append((out, sums))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    out, sums = outs[0]
    check = np.empty(J)
    _upper.row_sums(out, check)
    np.testing.assert_array_equal(sums, check)
    shape = theta_up[0] @ phi_up.T + m[0]
    g = out * rate[:, None]
    z_mean = (g.mean(axis=0) - shape) / np.sqrt(shape / J)
    assert np.all(np.abs(z_mean) < 5), z_mean


def test_sample_theta_tiny_draws_keep_their_precision():
    """Gamma draws that underflow on their own but not once divided by a tiny rate:
    P(out <= q) = P(a, q rate) (the regularised incomplete gamma)."""
    from scipy import special

    J, a, rate = 200000, 2e-3, 1e-280
    bounds = np.arange(0, J + 1, 10000, dtype=np.int64)
    streams = BlockStreams(np.random.default_rng(15), len(bounds) - 1)
    out = np.empty((J, 1))
    _upper.sample_theta(np.empty((0, 0)), np.empty((0, 0)), np.array([a]), np.zeros((J, 1), np.int64),
                        np.full(J, rate), bounds, streams.addresses, out, np.empty(0), 2)
    q = np.array([1e-200, 1e-100, 1e-20, 1e-5, 1.0, 1e10, 1e100, 1e250])
    # P(a, x) = x^a e^-x / Gamma(a + 1) (1 + x / (a + 1) + ...) -> x^a / Gamma(a + 1) for x < 1e-30
    log_x = np.log(q) + np.log(rate)
    expected = np.where(log_x < np.log(1e-30), np.exp(a * log_x - special.gammaln(a + 1)),
                        special.gammainc(a, np.exp(np.maximum(log_x, -700.0))))
    observed = (out[:, 0][:, None] <= q[None, :]).mean(axis=0)
    assert np.all(np.abs(observed - expected) < 5 * np.sqrt(expected * (1 - expected) / J)), \
        (observed, expected)
    # below the floor G / rate < DBL_MIN: P(a, DBL_MIN rate) of the draws (about 7%), the rest distinct
    assert np.unique(out).size > 0.9 * J


@pytest.mark.parametrize("count", [1, 3, 31, 32, 500])
def test_split_sparse_counts_is_multinomial(count):
    """Equivalent to: m[j] = rng.multinomial(x_vj, phi[v] * theta[j] / sum) summed over v."""
    J, V, K = 3000, 3, 5
    rng = np.random.default_rng(count)
    phi = rng.dirichlet(np.ones(V), size=K).T.copy()
    theta = rng.gamma(1.0, size=(J, K))
    indptr = np.arange(J + 1, dtype=np.int64)
    indices = np.full(J, 1, dtype=np.int32)
    values = np.full(J, float(count))
    m_out = np.empty((J, K), dtype=np.int64)
    n_out = np.zeros((V, K), dtype=np.int64)
    streams = BlockStreams(np.random.default_rng(1), 3)
    bounds = np.array([0, 1000, 2000, 3000], dtype=np.int64)
    _blocked.split_sparse(indptr, indices, values, phi, theta, np.empty(0), 0, bounds,
                          streams.addresses, m_out, n_out, np.empty(0, dtype=np.int64), 1)
    np.testing.assert_array_equal(m_out.sum(axis=1), count)
    np.testing.assert_array_equal(n_out[1], m_out.sum(axis=0))
    # per document: E[m_jk] = count * w_jk, Var = count * w (1 - w)
    w = phi[1] * theta
    w /= w.sum(axis=1, keepdims=True)
    z = (m_out - count * w).sum(axis=0) / np.sqrt((count * w * (1 - w)).sum(axis=0))
    assert np.all(np.abs(z) < 5), z


def test_split_sparse_underflowing_weights_split_in_log_space():
    phi = np.array([[1e-200, 1e-200]])
    theta = np.array([[1e-200, 3e-200]])
    m_out = np.empty((1, 2), dtype=np.int64)
    n_out = np.zeros((1, 2), dtype=np.int64)
    streams = BlockStreams(np.random.default_rng(2), 1)
    _blocked.split_sparse(np.array([0, 1], np.int64), np.array([0], np.int32), np.array([40000.0]),
                          phi, theta, np.empty(0), 0, np.array([0, 1], np.int64), streams.addresses,
                          m_out, n_out, np.empty(0, np.int64), 1)
    assert m_out.sum() == 40000
    assert abs(m_out[0, 1] / 40000 - 0.75) < 0.02


def test_sample_theta_moments():
    """Equivalent to: out[j, k] = rng.gamma(prior[j, k] + m[j, k], 1 / rate[j])."""
    J, K = 20000, 3
    prior = np.array([[0.3, 2.0, 1e-3]])
    m = np.tile(np.array([0, 3, 0], dtype=np.int64), (J, 1))
    rate = np.linspace(0.5, 2.0, J)
    out = np.empty((J, K))
    bounds = np.arange(0, J + 1, 1000, dtype=np.int64)
    streams = BlockStreams(np.random.default_rng(5), len(bounds) - 1)
    sums = np.empty(J)
    _upper.sample_theta(np.empty((0, 0)), np.empty((0, 0)), prior[0], m, rate, bounds,
                        streams.addresses, out, sums, 2)
    shape = prior[0] + m[0]
    g = out * rate[:, None]  # standard gamma draws
    z_mean = (g.mean(axis=0) - shape) / np.sqrt(shape / J)
    assert np.all(np.abs(z_mean) < 5), z_mean
    assert np.all(out > 0) and np.isfinite(out).all()


def test_top_crt_sums():
    J, K = 5000, 2
    m = np.tile(np.array([4, 0], dtype=np.int64), (J, 1))
    r = np.array([0.7, 5.0])
    bounds = np.arange(0, J + 1, 500, dtype=np.int64)
    streams = BlockStreams(np.random.default_rng(6), len(bounds) - 1)
    out = np.zeros((len(bounds) - 1, K), dtype=np.int64)
    _blocked.top_crt(m, r, bounds, streams.addresses, out, 2)
    tot = out.sum(axis=0)
    assert tot[1] == 0
    pmf = _crt_pmf(4, 0.7)
    mean = (np.arange(5) * pmf).sum()
    var = (np.arange(5) ** 2 * pmf).sum() - mean**2
    assert abs(tot[0] - J * mean) < 5 * np.sqrt(J * var)


def _crt_sum_pmf(counts, r):
    """Exact PMF of ``sum_j CRT(counts[j], r)`` (a convolution of CRT PMFs)."""
    pmf = np.ones(1)
    for n in counts:
        pmf = np.convolve(pmf, _crt_pmf(int(n), r) if n > 0 else np.ones(1))
    return pmf


@pytest.mark.parametrize("dtype", [np.uint8, np.int64])
def test_top_crt_block_sums_follow_the_exact_law(dtype):
    """Each block's sum is drawn by its law (levels of a count histogram, exponential
    skips or binomials; counts from 64 up alone), not one CRT per count: the per-block
    sums of many identical blocks against the exact PMF of ``sum_j CRT(m_jk, r_k)``,
    one topic per branch (tiny r, skips, binomial levels, a count above the histogram,
    r = inf, r = 0, all zeros) sharing each block's stream."""
    block = np.array([[1, 2, 0, 3, 70, 5, 0, 2, 20],
                      [3, 5, 9, 2, 1, 5, 0, 0, 0],
                      [7, 1, 9, 6, 2, 1, 0, 0, 0],
                      [2, 9, 9, 6, 0, 0, 0, 0, 0],
                      [12, 4, 9, 6, 3, 2, 0, 0, 0],
                      [1, 2, 9, 40, 1, 0, 0, 0, 0]], dtype=dtype)
    # the last two: a binomial level just above the switch, then skips whose law
    # depends on the exponential carried over (biased if it were not fresh)
    r = np.array([0.01, 0.7, 25.0, 3.0, 0.4, np.inf, 0.0, 65.7, 1.0])
    n_blocks, per = 20000, block.shape[0]
    m = np.tile(block, (n_blocks, 1))
    bounds = np.arange(0, n_blocks * per + 1, per, dtype=np.int64)
    streams = BlockStreams(np.random.default_rng(11), n_blocks)
    out = np.full((n_blocks, block.shape[1]), -1, dtype=np.int64)
    _blocked.top_crt(m, r, bounds, streams.addresses, out, 2)
    for i in range(4):
        pmf = _crt_sum_pmf(block[:, i], r[i])
        assert out[:, i].max() < pmf.size
        assert _chisq_p(np.bincount(out[:, i], minlength=pmf.size), pmf) > ALPHA, i
    pmf = _crt_sum_pmf(block[:, 4], r[4])
    assert _chisq_p(np.bincount(out[:, 4], minlength=pmf.size), pmf) > ALPHA
    assert np.all(out[:, 5] == block[:, 5].sum())      # r = inf: every customer a table
    assert np.all(out[:, 6] == 0)
    for i in (7, 8):
        pmf = _crt_sum_pmf(block[:, i], r[i])
        assert _chisq_p(np.bincount(out[:, i], minlength=pmf.size), pmf) > ALPHA, i
    r0 = r.copy()
    r0[4] = 0.0                                          # r = 0: one table per non-zero count
    _blocked.top_crt(m, r0, bounds, streams.addresses, out, 1)
    assert np.all(out[:, 4] == np.count_nonzero(block[:, 4]))


def test_top_crt_does_not_depend_on_the_thread_count():
    rng = np.random.default_rng(5)
    m = rng.poisson(0.8, size=(900, 30)) * rng.integers(1, 30, size=(900, 30))
    m[7, 3] = 300
    r = rng.gamma(0.5, 1.0, size=30)
    bounds = np.arange(0, 901, 128, dtype=np.int64)
    bounds[-1] = 900
    outs = []
    for nt in (1, 2, 3):
        streams = BlockStreams(np.random.default_rng(8), len(bounds) - 1)
        out = np.zeros((len(bounds) - 1, 30), dtype=np.int64)
        _blocked.top_crt(m, r, bounds, streams.addresses, out, nt)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


def test_top_crt_raises_memory_error_when_block_scratch_fails():
    """A block whose histogram cannot be allocated: MemoryError naming the kernel,
    and the next call gives the same sums as if nothing had failed."""
    rng = np.random.default_rng(2)
    m = rng.poisson(1.5, size=(600, 7)).astype(np.uint8)
    r = rng.gamma(1.0, size=7)
    bounds = np.arange(0, 601, 100, dtype=np.int64)

    def call():
        streams = BlockStreams(np.random.default_rng(4), len(bounds) - 1)
        out = np.zeros((len(bounds) - 1, 7), dtype=np.int64)
        _blocked.top_crt(m, r, bounds, streams.addresses, out, 2)
        return out

    reference = call()
    try:
        _blocked._fail_next_allocations(2)
        with pytest.raises(MemoryError, match="top_crt"):
            call()
    finally:
        _blocked._fail_next_allocations(0)
    np.testing.assert_array_equal(call(), reference)


def test_dirichlet_rows_tiny_concentrations_stay_on_simplex():
    alpha = np.full((6, 50), 1e-4)
    alpha[0, :3] = [1e-6, 1e-6, 5.0]
    out = np.empty_like(alpha)
    bounds = np.array([0, 3, 6], dtype=np.int64)
    streams = BlockStreams(np.random.default_rng(7), 2)
    _blocked.dirichlet_rows(alpha, bounds, streams.addresses, out, 1)
    assert np.isfinite(out).all() and (out > 0).all()
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-12)


def test_heldout_accumulate_matches_numpy():
    rng = np.random.default_rng(8)
    J, V, K = 7, 6, 3
    phi = rng.dirichlet(np.ones(V), size=K).T.copy()
    theta = rng.gamma(1.0, size=(J, K))
    X = (rng.random((J, V)) < 0.4).astype(float)
    import scipy.sparse as sp

    H = sp.csr_matrix(X)
    rate = np.zeros(H.nnz)
    norm = np.zeros(J)
    _blocked.heldout_accumulate(H.indptr.astype(np.int64), H.indices.astype(np.int32), phi, theta,
                                rate, norm, 2)
    rows = np.repeat(np.arange(J), np.diff(H.indptr))
    np.testing.assert_allclose(rate, (theta @ phi.T)[rows, H.indices])
    np.testing.assert_allclose(norm, theta.sum(axis=1))
