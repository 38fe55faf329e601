"""The partially collapsed layer one (method="partial"): its kernel's
conditional against eq:z with Phi^(1) given, thread-count invariance, the
estimator, save/load and the CLI."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from pygbn import GBN, load, save
from pygbn.evaluation import split_tokens
from pygbn._utils import BlockStreams
from pygbn.inference import GibbsSampler, check_invariants
from pygbn.inference import _blocked, _partial
from pygbn.inference.collapsed_state import label_dtype
from pygbn.inference.partial import PartialState, default_top_size, new_prior_tables, proposal_shape, sample_layer_one_partial
from pygbn.model import PoissonLink


def _prior_tables(phi, b, with_tables, n_threads=1, top_size=8):
    """The prior bucket's tables of every term (``with_tables``) or of none (scans),
    and the document bucket's top sets of ``top_size`` entries."""
    V, K = phi.shape
    rows = np.arange(V, dtype=np.int64) if with_tables else np.full(V, -1, dtype=np.int64)
    return new_prior_tables(phi, b, rows, n_threads, label_dtype(K), top_size=top_size)


#: the document bucket: by rejection for every document, by the list for every document (the
#: switch's threshold infinite, or no top sets), or as the switch chooses from the document's state
BUCKETS = {"rejection": 0.0, "list": np.inf, "list-no-top": None}


def _tables_for(tables, bucket):
    """The tables and the switch's threshold of ``bucket`` (a key of BUCKETS or a threshold)."""
    work = BUCKETS.get(bucket, bucket)
    if work is None:                                      # no top sets: the list for every document
        return tables[:4] + (np.empty((0, tables[4].shape[1])),), 0.0
    return tables, float(work)


def _first_token_draws(prior, b, phi, labels0, Y, n_rep, *, mh_steps=2, include_self=False,
                       start_from=None, seed=0, shared=True, with_tables=True, top_size=8,
                       bucket="rejection"):
    """The label of document 0's first token after one sweep, ``n_rep`` times
    from the same state (``start_from``: draws of its starting label)."""
    Y = sp.csr_matrix(Y)
    V, K = phi.shape
    state = PartialState.from_counts(Y, K, labels=labels0)
    tables, work = _tables_for(_prior_tables(phi, b, with_tables, top_size=top_size), bucket)
    streams = BlockStreams(np.random.default_rng(seed), n_rep)
    bounds = np.array([0, 1], dtype=np.int64)
    out = np.empty(n_rep, dtype=np.int64)
    for i in range(n_rep):
        labels = labels0.astype(state.labels.dtype).copy()
        if start_from is not None:
            labels[0] = start_from[i]
        njk = np.zeros((1, K), dtype=np.uint16)
        _partial.count_doc_labels(state.doc_ptr[:2], labels, njk)
        _partial.partial_sweep(state.indptr[:2], state.indices, state.values, state.doc_ptr[:2], labels,
                               phi, prior, b, *tables, bounds, streams.addresses[i:i + 1], njk,
                               mh_steps, 1, include_self,
                               prior.shape[0] == 1 and shared, work)
        out[i] = labels[0]
    return out


def _setting(K=5):
    rng = np.random.default_rng(3)
    V = 4
    phi = rng.dirichlet(np.full(V, 0.7), size=K).T.copy()
    Y = np.array([[2, 0, 3, 1]])                           # one document: 6 tokens, term 0 first
    labels0 = np.array([1, 1, 3, 0, 4, 3])
    a = rng.gamma(0.6, 1.0, size=K)
    n_minus = np.bincount(labels0[1:], minlength=K)       # the others' labels
    target = phi[0] * (n_minus + a)
    return phi, Y, labels0, a, target / target.sum()


def _chi2_p(draws, p):
    obs = np.bincount(draws, minlength=p.size)
    return stats.chisquare(obs, p * draws.size).pvalue


@pytest.mark.parametrize("bucket,top_size", [("rejection", 8), ("rejection", 2), ("rejection", 0), ("list", 2),
                                             ("list-no-top", 2)],
                         ids=["rej-top-all", "rej-top-2", "rej-top-0", "list", "list-no-top"])
@pytest.mark.parametrize("with_tables", [True, False], ids=["tables", "scans"])
def test_exact_draw_with_a_shared_prior(with_tables, top_size, bucket):
    """One prior row (T = 1): the token's label is drawn from
    phi_vk (n_jk^(-ji) + a_k) exactly, whatever its current label, with the
    document bucket drawn from the top set alone (K <= m, h = 0) or by rejection
    (m = 2, m = 0: the other tokens thinned by phi_vk / h), or by the list of the
    document's topics (the switch's threshold infinite, or no top sets); keeping
    the token in n_jk (a planted wrong conditional) is rejected."""
    phi, Y, labels0, a, p = _setting()
    draws = _first_token_draws(a[None, :], a, phi, labels0, Y, 20000, with_tables=with_tables,
                               top_size=top_size, bucket=bucket)
    assert _chi2_p(draws, p) > 1e-3
    wrong = _first_token_draws(a[None, :], a, phi, labels0, Y, 20000, include_self=True,
                               with_tables=with_tables, top_size=top_size, bucket=bucket)
    assert _chi2_p(wrong, p) < 1e-6


@pytest.mark.parametrize("bucket,top_size", [("rejection", 8), ("rejection", 0), ("list", 1)])
@pytest.mark.parametrize("with_tables", [True, False], ids=["tables", "scans"])
def test_prior_position_carried_to_the_next_document(with_tables, top_size, bucket):
    """A prior-bucket trial's uniform, where it fell inside the bucket, is the next
    prior draw's position (_fraction): after a document of 6 tokens, a one-token
    document (its whole mass in the prior bucket) draws its label from phi_vk a_k
    with that position; the 6 tokens' labels follow their conditional too."""
    phi, _, _, a, _ = _setting()
    Y = sp.csr_matrix(np.array([[2, 0, 3, 1], [0, 1, 0, 0]]))
    labels0 = np.array([1, 1, 3, 0, 4, 3, 2])
    V, K = phi.shape
    state = PartialState.from_counts(Y, K, labels=labels0)
    tables, work = _tables_for(_prior_tables(phi, a, with_tables, top_size=top_size), bucket)
    n_rep = 20000
    streams = BlockStreams(np.random.default_rng(11), n_rep)
    bounds = np.array([0, 2], dtype=np.int64)
    last = np.empty(n_rep, dtype=np.int64)
    n_prior = 0
    for i in range(n_rep):
        labels = labels0.astype(state.labels.dtype).copy()
        njk = np.zeros((2, K), dtype=np.uint16)
        _partial.count_doc_labels(state.doc_ptr, labels, njk)
        n_prior += _partial.partial_sweep(state.indptr, state.indices, state.values, state.doc_ptr, labels,
                                          phi, a[None, :].copy(), a, *tables, bounds,
                                          streams.addresses[i:i + 1], njk, 2, 1, False, True, work)[3]
        last[i] = labels[6]
    p = phi[1] * a
    assert _chi2_p(last, p / p.sum()) > 1e-3
    # the first document made prior draws (more than one a sweep on average, besides the
    # second's), so the second's position was mostly one carried over from them
    assert n_prior > 2 * n_rep


@pytest.mark.parametrize("bucket,top_size", [("rejection", 8), ("rejection", 1), ("rejection", 0), ("list", 1)])
def test_one_token_document(top_size, bucket):
    """A document of one token: no other token for the rejection piece (R = 0);
    the label follows phi_vk a_k (either bucket)."""
    rng = np.random.default_rng(4)
    K, V = 5, 3
    phi = rng.dirichlet(np.full(V, 0.7), size=K).T.copy()
    a = rng.gamma(0.6, 1.0, size=K)
    Y = np.array([[0, 1, 0]])
    draws = _first_token_draws(a[None, :], a, phi, np.array([2]), Y, 20000, top_size=top_size, bucket=bucket)
    p = phi[1] * a
    assert _chi2_p(draws, p / p.sum()) > 1e-3


def test_metropolis_hastings_steps_leave_the_conditional_invariant():
    """A prior row per document: started from the exact conditional, the label
    after the Metropolis-Hastings steps has the exact conditional again (for
    any number of steps); taking every proposal unchecked does not."""
    phi, Y, labels0, a, p = _setting()
    b = np.array([0.05, 2.0, 0.3, 1.0, 0.1])                # a proposal shape far from a
    start = np.random.default_rng(9).choice(p.size, size=20000, p=p)
    for steps, top_size, bucket in ((1, 8, "rejection"), (3, 8, "rejection"), (1, 1, "rejection"),
                                    (3, 1, "rejection"), (1, 1, "list"), (3, 1, "list")):
        draws = _first_token_draws(a[None, :], b, phi, labels0, Y, 20000, mh_steps=steps,
                                   start_from=start, shared=False, top_size=top_size, bucket=bucket)
        assert _chi2_p(draws, p) > 1e-3, (steps, top_size, bucket)
    wrong = _first_token_draws(a[None, :], b, phi, labels0, Y, 20000, mh_steps=-1, start_from=start,
                               shared=False)
    assert _chi2_p(wrong, p) < 1e-6


@pytest.mark.parametrize("bucket,top_size", [("rejection", 8), ("rejection", 1), ("rejection", 0), ("list", 1),
                                             ("list-no-top", 1)])
@pytest.mark.parametrize("with_tables", [True, False], ids=["tables", "scans"])
def test_exact_draw_with_a_prior_per_document(with_tables, top_size, bucket):
    """A prior row per document (T >= 2, mh_steps = 0, the default): the prior bucket of
    mass c_j Q_v (c_j = max_k a_k / b_k) thinned by a_k / (c_j b_k) draws the label from
    phi_vk (n_jk^(-ji) + a_jk) exactly, from any current label (here always topic 2, far
    from the conditional), with a proposal shape b far from a; without the thinning (the
    proposal's lambda_j b in place of a: mh_steps = -1) the draws are wrong."""
    phi, Y, labels0, a, p = _setting()
    b = np.array([0.05, 2.0, 0.3, 1.0, 0.1])
    start = np.full(20000, 2)
    draws = _first_token_draws(a[None, :], b, phi, labels0, Y, 20000, mh_steps=0, start_from=start,
                               shared=False, with_tables=with_tables, top_size=top_size, bucket=bucket)
    assert _chi2_p(draws, p) > 1e-3
    wrong = _first_token_draws(a[None, :], b, phi, labels0, Y, 20000, mh_steps=-1, start_from=start,
                               shared=False, with_tables=with_tables, top_size=top_size, bucket=bucket)
    assert _chi2_p(wrong, p) < 1e-6


def test_exact_draw_with_a_prior_per_document_degenerate_rows():
    """Prior rows that are zero (c_j = 0: the document bucket alone), whose ratio a_k / b_k
    overflows (c_j = inf: the exact O(K) scan) or whose bound is so loose that the draw gives
    up after _THIN_TRIES discarded topics (one b_k tiny: the exact scan then) still give the
    exact conditional."""
    phi, Y, labels0, a, _ = _setting()
    n_minus = np.bincount(labels0[1:], minlength=a.size)
    loose = np.full(a.size, 1.0)
    loose[3] = 1e-9
    for prior, b in ((np.zeros_like(a), np.full(a.size, 0.5)),
                     (a * 1e300, np.full(a.size, 1e-300)),
                     (a * 1e3, loose)):
        target = phi[0] * (n_minus + prior)
        draws = _first_token_draws(prior[None, :], b, phi, labels0, Y, 20000, mh_steps=0, shared=False,
                                   bucket="list")
        support = target > 0
        assert support[draws].all()
        keep = np.flatnonzero(support)
        assert _chi2_p(np.searchsorted(keep, draws), target[keep] / target.sum()) > 1e-3


def _tables_and_scans_agree(phi, b, with_t, without, terms, u):
    """The prior-bucket topics of ``terms`` for the uniforms ``u`` with the tables
    ``with_t`` and by scans (``without``), asserted equal: both lists."""
    got = []
    for tables in (with_t, without):
        out = np.empty(u.size, dtype=np.int32)
        _partial.prior_topics(phi, b, *tables[:4], terms, u, out)
        got.append(out)
    np.testing.assert_array_equal(got[0], got[1])
    return got


def test_prior_tables_invert_their_weights():
    """A term's prior-bucket topic for the uniform u is the first k with
    u Q_v < sum_{i <= k} phi_vi b_i, the same with its table (indexed search
    with pure cells, any thread count) and without (scan)."""
    rng = np.random.default_rng(0)
    V, K = 5, 37
    phi = rng.dirichlet(np.full(V, 0.3), size=K).T.copy()
    phi[1, 2] = 0.0
    phi[2, :30] = 1e-300                                 # weights that underflow to 0
    phi[3, :] = 1.0 / V                                  # b's own shape: a flat row, few pure cells
    b = rng.gamma(0.5, 1.0, size=K)
    with_t = _prior_tables(phi, b, True, n_threads=2)
    without = _prior_tables(phi, b, False)
    np.testing.assert_array_equal(with_t[3], without[3])
    assert (with_t[2] < 0).any() and (with_t[2] >= 0).any()      # pure cells and others
    terms = np.repeat(np.arange(V, dtype=np.int64), 3000)
    u = rng.random(terms.size)
    u[::97] = np.nextafter(1.0, 0.0)                     # the top end (x clamped below Q_v)
    u[1::97] = 0.0
    cells = np.arange(terms.size) % 5 == 2               # cell boundaries i / K and next to them
    u[cells] = np.nextafter(rng.integers(0, K + 1, size=cells.sum()) / K,
                            rng.choice([0.0, 1.0], size=cells.sum()))
    u = np.clip(u, 0.0, np.nextafter(1.0, 0.0))
    got = _tables_and_scans_agree(phi, b, with_t, without, terms, u)
    for v in range(V):
        w = phi[v] * b
        mask = terms == v
        cum = np.cumsum(w)                              # left to right, as the kernel sums
        x = u[mask] * with_t[3][v]
        expect = np.searchsorted(cum, np.minimum(x, np.nextafter(cum[-1], 0)), side="right")
        np.testing.assert_array_equal(got[0][mask], expect)
        assert np.all(w[got[0][mask]] > 0)
    # draws from uniform u have the weights' law
    w = phi[0] * b
    u = rng.random(50000)
    draws = np.empty(u.size, dtype=np.int32)
    _partial.prior_topics(phi, b, *with_t[:4], np.zeros(u.size, dtype=np.int64), u, draws)
    assert _chi2_p(draws, w / w.sum()) > 1e-3


def test_guide_records_quick_answers_are_the_inversions():
    """A non-pure cell's record answers from its first and last boundaries to 1/256
    of the cell (``q < A``: the record's topic, ``q > B``: the next record's, for
    ``1 <= q <= 254``); uniforms at every 256th of every cell, next to those
    edges and next to every boundary C_k / Q_v give the scan's topic, for skewed,
    flat, tiny and huge rows (the huge ones' 1 / Q_v is not formed: no quick
    answers), and the records do answer most draws of a skewed row."""
    rng = np.random.default_rng(11)
    V, K = 6, 60
    phi = rng.gamma(0.05, 1.0, size=(V, K)) + 1e-300
    phi[1] = 1.0 / K                                      # flat: boundaries near every cell's edges
    phi[2] *= 1e-280                                      # tiny Q_v (1 / Q_v formed with a division)
    phi[3, 5:] = 1e-300                                   # one cell holds 55 boundaries
    phi[4] *= 1e295                                       # Q_v above 1e290: no quick answers
    b = rng.gamma(0.5, 1.0, size=K)
    with_t = _prior_tables(phi, b, True)
    without = _prior_tables(phi, b, False)
    M = _partial.GUIDE_CELLS * K
    grid = (np.arange(M)[:, None] + np.arange(256)[None, :] / 256.0).ravel() / M
    us = [grid]
    for step in (1.0, 0.0):                               # next to every 1/256 edge, both sides
        y = grid.copy()
        for _ in range(3):
            y = np.nextafter(y, step)
            us.append(y.copy())
    us.append(rng.random(20000))
    u = np.clip(np.concatenate(us), 0.0, np.nextafter(1.0, 0.0))
    terms = np.repeat(np.arange(V, dtype=np.int64), u.size)
    got = _tables_and_scans_agree(phi, b, with_t, without, terms, np.tile(u, V))
    # the same records in the int32 labels' type (K > 32767), the same topics
    wide = new_prior_tables(phi, b, np.arange(V, dtype=np.int64), 1, np.int32)
    assert wide[2].dtype == np.int32
    np.testing.assert_array_equal(wide[2].astype(np.int64) & 0xFFFF, with_t[2].astype(np.int64) & 0xFFFF)
    assert _tables_and_scans_agree(phi, b, wide, without, terms, np.tile(u, V))[0].tolist() == got[0].tolist()
    # and next to every boundary
    bu, bt = [], []
    for v in range(V):
        edges = np.cumsum(phi[v] * b) / with_t[3][v]
        for e in edges:
            x = y = e
            for _ in range(3):
                x, y = np.nextafter(x, 0.0), np.nextafter(y, 2.0)
                bu += [x, y]
        bt += [v] * (len(bu) - len(bt))
    _tables_and_scans_agree(phi, b, with_t, without, np.array(bt, dtype=np.int64),
                            np.clip(np.array(bu), 0.0, np.nextafter(1.0, 0.0)))
    rec = with_t[2][:, :2 * M].reshape(V, M, 2)
    ab = rec[..., 1].astype(np.int64) & 0xFFFF
    A, B, impure = ab & 255, ab >> 8, rec[..., 0] >= 0
    assert (A[4] == 0).all() and (B[4] == 255).all()      # huge Q_v: none
    # the skewed row: pure cells and quick answers decide most uniforms
    quick = np.where(impure[0], (np.clip(A[0], 1, 255) - 1 + np.clip(254 - B[0], 0, 254)) / 256.0, 1.0)
    assert impure[0].any() and quick.mean() > 0.8, quick.mean()
    # boundaries exactly at the cells' edges (dyadic weights: C_k = (k + 1) / 64 = Q k / M)
    K = 64
    phi, b = np.full((2, K), 1.0 / K), np.ones(K)
    phi[1, 1::2] = 0.5 / K
    phi[1, ::2] = 1.5 / K
    with_t, without = _prior_tables(phi, b, True), _prior_tables(phi, b, False)
    grid = np.arange(K * 256) / (K * 256.0)
    u = np.concatenate([grid, np.nextafter(grid, 0.0), np.nextafter(grid, 1.0)])
    u = np.clip(u, 0.0, np.nextafter(1.0, 0.0))
    _tables_and_scans_agree(phi, b, with_t, without, np.repeat(np.arange(2, dtype=np.int64), u.size),
                            np.tile(u, 2))


def test_float32_tables_decide_every_boundary_exactly():
    """The float32 inversion tables give the double-precision inversion's topic
    for uniforms within a few ulps of every boundary C_k / Q_v (where the
    float32 value cannot decide and the exact sum is formed), for rows of
    any scale (tiny, subnormal and large weights)."""
    rng = np.random.default_rng(7)
    V, K = 6, 50
    phi = rng.dirichlet(np.full(V, 0.2), size=K).T.copy()
    phi[1] *= 1e-250                                      # tiny rows: Q_v near the bottom of the doubles
    phi[2, ::3] = 1e-310                                  # subnormal weights among normal ones
    phi[3, :] = 1.0 / V
    phi[4, 10:] = 1e-300
    b = rng.gamma(0.3, 1.0, size=K)
    b[5] = 1e200
    with_t = _prior_tables(phi, b, True)
    without = _prior_tables(phi, b, False)
    terms, us = [], []
    for v in range(V):
        Q = with_t[3][v]
        if not Q > 0:
            continue
        edges = np.cumsum(phi[v] * b) / Q
        for e in edges:
            x = e
            for _ in range(4):
                us += [x, np.nextafter(e, 1.0 + (e - x))]
                x = np.nextafter(x, 0.0)
            y = e
            for _ in range(4):
                y = np.nextafter(y, 2.0)
                us.append(y)
        terms += [v] * (len(us) - len(terms))
    u = np.clip(np.array(us), 0.0, np.nextafter(1.0, 0.0))
    terms = np.array(terms, dtype=np.int64)
    got = _tables_and_scans_agree(phi, b, with_t, without, terms, u)
    for v in np.unique(terms):
        mask = terms == v
        cum = np.cumsum(phi[v] * b)
        x = np.minimum(u[mask] * with_t[3][v], np.nextafter(cum[-1], 0))
        np.testing.assert_array_equal(got[0][mask], np.minimum(np.searchsorted(cum, x, side="right"), K - 1))


def _top_rows(top, m, K):
    """A top-set array's bounds, entries, topics and thinning bytes."""
    h, tphi = top[:, 0], top[:, 2:2 + m]
    tk = np.ascontiguousarray(top[:, 2 + m:2 + m + (m + 1) // 2]).view(np.int32)[:, :m]
    sq = np.ascontiguousarray(top[:, 2 + m + (m + 1) // 2:]).view(np.uint8)[:, :K]
    return h, tphi, tk, sq


@pytest.mark.parametrize("K,top_size", [(12, 4), (12, 1), (5, 8), (40, 8)])
def test_top_sets_bound_the_other_entries(K, top_size):
    """Each term's top set: its m largest phi_vk, largest first (ties by topic),
    the bound h = the (m+1)-th largest (0 when K <= m), their excesses
    phi_vk - h over the bound (the E piece's weights), and thinning bytes,
    255 for the set's topics and q_k / 256 < phi_vk / h <= (q_k + 2) / 256 (or
    q_k = 254) for the others; the same sets
    when built from the bounds of another Phi (the hint) as from none, and
    with rows of equal entries."""
    rng = np.random.default_rng(11)
    V = 30
    phi = rng.dirichlet(np.full(V, 0.3), size=K).T.copy()
    phi[3] = 1.0 / V                                       # a row of ties
    phi[4, : K // 2] = phi[4, K // 2]                      # ties at the bound
    b = rng.gamma(1.0, 1.0, size=K)
    m = min(top_size, K)
    rows = np.full(V, -1, dtype=np.int64)
    tables = new_prior_tables(phi, b, rows, 1, label_dtype(K), top_size=top_size)
    h, tphi, tk, sq = _top_rows(tables[4], m, K)
    for v in range(V):
        order = np.argsort(-phi[v], kind="stable")
        np.testing.assert_array_equal(tk[v], order[:m])
        assert h[v] == (phi[v, order[m]] if K > m else 0.0)
        np.testing.assert_array_equal(tphi[v], phi[v, order[:m]] - h[v])
        assert np.all(tphi[v] >= 0.0)
        if K > m:
            rest = order[m:]
            t = 256 * phi[v, rest] / h[v]
            q = sq[v, rest].astype(np.int64)
            assert np.all(q <= t) and np.all((q + 2 > t) | (q == 254))
            assert np.all(sq[v, order[:m]] == 255)
    other = rng.dirichlet(np.full(V, 0.3), size=K).T.copy()
    first = new_prior_tables(other, b, rows, 1, label_dtype(K), top_size=top_size)
    again = new_prior_tables(phi, b, rows, 2, label_dtype(K), old=first, top_size=top_size)
    assert again[4] is first[4]
    np.testing.assert_array_equal(again[4].view(np.uint64), tables[4].view(np.uint64))


def test_default_top_size():
    assert [default_top_size(K) for K in (1, 5, 100, 300, 400, 1000, 5000)] == [1, 5, 8, 12, 16, 40, 64]
    phi = np.full((3, 400), 1.0 / 3)
    top = new_prior_tables(phi, np.ones(400), np.full(3, -1, dtype=np.int64), 1, np.int16)[4]
    assert top.shape == (3, 2 + 16 + 8 + 50)


def test_proposal_shape_is_the_prior_mean_shape():
    X = np.random.default_rng(0).poisson(1.0, size=(40, 12))
    s = GibbsSampler.for_training(PoissonLink().check_data(X), 5, method="partial", random_state=0)
    np.testing.assert_array_equal(proposal_shape(s.network), np.maximum(s.network.r, np.finfo(float).tiny))
    s.add_layer(0.05)
    net = s.network
    np.testing.assert_allclose(proposal_shape(net), net.layers[1].phi @ net.r)


def _corpus(J=400, V=40, seed=1):
    rng = np.random.default_rng(seed)
    return rng.poisson(rng.gamma(0.3, 3, size=(J, 4)) @ rng.dirichlet(np.full(V, 0.2), size=4))


def test_prior_tables_only_for_the_terms_with_enough_tokens():
    """Tables for the terms with at least TABLE_MIN_TOKENS and K / TABLE_DENSE_FRACTION
    (16) tokens, none for the others; redrawing Phi^(1) in place (a new ``phi_stamp``)
    drops them."""
    Y = PoissonLink().check_data(_corpus(J=300, V=60))     # terms of 0 to 97 tokens
    K = 16 * 30                                            # K / 16 = 30 > TABLE_MIN_TOKENS
    s = GibbsSampler.for_training(Y, K, method="partial", random_state=2)
    n_v = np.asarray(Y.sum(axis=0)).ravel()
    assert PartialState.TABLE_DENSE_FRACTION == 16
    want = (n_v >= PartialState.TABLE_MIN_TOKENS) & (16 * n_v >= K)
    assert want.any() and (~want & (n_v >= PartialState.TABLE_MIN_TOKENS)).any()
    rows, cum, guide, mass, _ = s.tokens.prior_tables(s.network.layers[0].phi, proposal_shape(s.network), 1)
    np.testing.assert_array_equal(rows >= 0, want)
    assert cum.shape == (want.sum(), K) and guide.shape == (want.sum(), _partial.guide_width(K))
    s.tokens.phi_stamp += 1
    assert s.tokens._tables is None


@pytest.mark.parametrize("mh_steps", [0, 2], ids=["exact", "mh2"])
@pytest.mark.parametrize("work", [0.0, 2.0, np.inf], ids=["rejection", "switch", "list"])
def test_chain_does_not_depend_on_threads_and_keeps_invariants(monkeypatch, work, mh_steps):
    """The same chain for 1 and 2 threads, and whether the prior bucket draws
    from tables (every term, 2 threads) or by scans (no term, 1 thread), with the
    document bucket by rejection, by the list or as the switch chooses (both
    in use)."""
    Y = PoissonLink().check_data(_corpus())
    n_tok = int(Y.sum())
    monkeypatch.setattr(PartialState, "REJECTION_WORK", work)
    monkeypatch.setattr(PartialState, "MH_STEPS", mh_steps)
    chains = []
    for nj in (1, 2):
        monkeypatch.setattr(PartialState, "TABLE_MIN_TOKENS", 10**9 if nj == 1 else 0)
        monkeypatch.setattr(PartialState, "TABLE_DENSE_FRACTION", 1 if nj == 1 else 10**9)
        monkeypatch.setattr(PartialState, "TABLE_PRIOR_DRAWS", 0.0)
        s = GibbsSampler.for_training(Y, 8, method="partial", n_jobs=nj, random_state=4)
        shares = []
        for T in (1, 2, 3):
            if T > 1:
                s.add_layer(0.05)
            for it in range(6):
                s.sweep(update_p_c=it > 1)
                check_invariants(s)
                shares.append(s.tokens.rejection_tokens / n_tok)
            if T == 1:
                s.prune_top()
        if work == 2.0:
            assert 0.0 < min(shares) and max(shares) < 1.0, shares
        chains.append(s)
    a, b = chains
    np.testing.assert_array_equal(a.tokens.labels, b.tokens.labels)
    for la, lb in zip(a.network.layers, b.network.layers):
        np.testing.assert_array_equal(la.phi, lb.phi)
    if PartialState.MH_STEPS > 0:
        assert 0.0 < a.tokens.acceptance <= 1.0
    else:
        assert np.isnan(a.tokens.acceptance)         # exact draws at every depth: no MH step


def _ahead(tok, lo, hi, shared, work):
    """_partial.rejection_ahead for the documents lo:hi of ``tok``."""
    return _partial.rejection_ahead(tok.indptr[lo:hi + 1], tok.doc_ptr[lo:hi + 1], tok.doc_counts[lo:hi], shared,
                                    tok.MH_STEPS, work)


def test_switch_without_top_sets_is_the_list():
    """A sweep without top sets draws what the list bucket draws for every document
    (the same labels from the same streams) and counts the same tokens that the switch
    would give rejection; the top sets are built for the next sweep only when the last
    sweep whose rule gives some document rejection (_partial.rejection_ahead)."""
    Y = PoissonLink().check_data(_corpus(J=200))
    s = GibbsSampler.for_training(Y, 8, method="partial", random_state=3)
    tok = s.tokens
    phi = s.network.layers[0].phi
    b = proposal_shape(s.network)
    tables = tok.prior_tables(phi, b, 1)
    out = []
    for bucket, work in (("list-no-top", 2.0), ("list", np.inf), ("rejection", 2.0)):
        labels, njk = tok.labels.copy(), tok.doc_counts.copy()
        tb, _ = _tables_for(tables, bucket)
        streams = BlockStreams(np.random.default_rng(8), 4)
        bounds = np.array([0, 50, 100, 150, 200], dtype=np.int64)
        res = _partial.partial_sweep(tok.indptr, tok.indices, tok.values, tok.doc_ptr, labels, phi, b[None, :], b,
                                     *tb, bounds, streams.addresses, njk, 2, 1, False, True, work)
        out.append((labels, res[2]))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    assert 0 < out[0][1] == out[2][1] < Y.sum() and out[1][1] == 0
    assert not np.array_equal(out[0][0], out[2][0])
    # the top sets are built exactly when the rule gives some document rejection: the
    # kernel's own count of such tokens, whatever the tables hold
    for work in (0.0, 1.0, 2.0, 3.0, 5.0, 8.0, np.inf):
        for lo, hi in ((0, 200), (0, 50), (150, 200), (37, 38)):
            njk = tok.doc_counts.copy()
            res = _partial.partial_sweep(tok.indptr[lo:hi + 1], tok.indices, tok.values, tok.doc_ptr[lo:hi + 1],
                                         tok.labels.copy(), phi, b[None, :], b, *_tables_for(tables, "list")[0],
                                         np.array([0, hi - lo], dtype=np.int64), streams.addresses[:1],
                                         njk[lo:hi], 2, 1, False, True, work)
            assert _ahead(tok, lo, hi, True, work) == (res[2] > 0), (work, lo, hi, res[2])
    assert _ahead(tok, 0, 200, True, 2.0) and not _ahead(tok, 0, 200, True, np.inf)
    tok.phi_stamp += 1
    assert tok.prior_tables(phi, b, 1, with_top=False)[4].shape[0] == 0
    assert tok.prior_tables(phi, b, 1, with_top=True)[4].shape[0] == tok.n_terms


@pytest.mark.parametrize("link", ["bernoulli", "prg"])
def test_other_links_are_refused(link):
    X = (np.random.default_rng(0).random((10, 6)) > 0.5).astype(float)
    with pytest.raises(ValueError, match=f"method='partial'.*{link}"):
        GBN(link=link, method="partial", n_components=3).fit(X)
    with pytest.raises(ValueError, match="method='partial'"):
        GibbsSampler.for_training(sp.csr_matrix(X), 3, link=link, method="partial")


def test_estimator_transform_perplexity_save_load(tmp_path):
    X = _corpus(J=150)
    kw = dict(n_components=10, n_layers=2, burn_in=(12, 8), n_collect=6, transform_iter=(5, 5),
              random_state=2, method="partial")
    train, held = split_tokens(X[:120], 0.7, random_state=0)
    m = GBN(**kw).fit(train, heldout=held)
    assert len(m.perplexity_) == len(m.networks_) and np.isfinite(m.perplexity_).all()
    assert m.method_ == "partial"
    F = m.transform(X[120:])
    assert F.shape == (30, m.widths_[0]) and np.isfinite(F).all()
    obs, rest = split_tokens(X[120:], 0.5, random_state=1)
    assert np.isfinite(m.perplexity(obs, rest))
    path = tmp_path / "model.json"
    save(m, path)
    back = load(path)
    assert back.method_ == "partial" and back.get_params()["method"] == "partial"
    np.testing.assert_array_equal(back.transform(X[120:]), F)


@pytest.mark.parametrize("bucket,top_size", [("rejection", 8), ("rejection", 1), ("list", 1), ("switch", 1)],
                         ids=["rej-top-all", "rej-top-1", "list", "switch"])
@pytest.mark.parametrize("with_tables", [True, False], ids=["tables", "scans"])
@pytest.mark.parametrize("mode", ["shared", "mh-1", "mh-2", "include-self"])
def test_sweeps_sample_the_labels_posterior_exactly(mode, with_tables, top_size, bucket):
    """Whole sweeps of one document (4 tokens of 2 terms, K = 3: 81 labellings)
    with Phi^(1) and a_j fixed: the thinned chain's labellings against their
    exact probabilities prod_k Gamma(a_k + n_k) / Gamma(a_k) prod_i phi_{v_i z_i}
    (the prior tables and the Metropolis-Hastings steps together with the document
    bucket: from a top set of all K topics, of one with the others by rejection,
    the list kept across a cell's tokens, or the switch, which with the threshold 1 / p
    (p proposals a token) gives the document rejection when it holds two or three
    topics at the start of a sweep (n_t 2 / 4 >= 1) and the list when it holds one);
    the planted -ji bug is rejected."""
    import itertools

    from scipy.special import gammaln

    rng = np.random.default_rng(1)
    K, V = 3, 3
    phi = rng.dirichlet(np.ones(V), size=K).T.copy()
    b = np.array([1.2, 0.2, 0.9])
    a = b if mode in ("shared", "include-self") else np.array([0.3, 1.7, 0.6])
    Y = sp.csr_matrix(np.array([[2, 0, 2]]))
    terms = [0, 0, 2, 2]
    configs = list(itertools.product(range(K), repeat=4))
    logp = np.array([np.sum(gammaln(a + np.bincount(z, minlength=K)) - gammaln(a))
                     + sum(np.log(phi[v, k]) for v, k in zip(terms, z)) for z in configs])
    p = np.exp(logp - logp.max())
    p /= p.sum()
    state = PartialState.from_counts(Y, K, labels=np.zeros(4, dtype=np.int64))
    shared = mode in ("shared", "include-self")
    steps = int(mode[-1]) if mode.startswith("mh") else 1
    tables, work = _tables_for(_prior_tables(phi, b, with_tables, top_size=top_size),
                               1.0 / steps if bucket == "switch" else bucket)
    streams = BlockStreams(np.random.default_rng(5), 1)
    index = {z: i for i, z in enumerate(configs)}
    counts = np.zeros(len(configs))
    bounds = np.array([0, 1], dtype=np.int64)
    n_rej = 0
    for it in range(60000):
        n_rej += _partial.partial_sweep(state.indptr, state.indices, state.values, state.doc_ptr, state.labels, phi,
                               a[None, :].copy(), b, *tables, bounds, streams.addresses,
                               state.doc_counts, steps, 1,
                               mode == "include-self", shared, work)[2]
        if it % 6 == 0:      # thinned: nearly independent draws
            counts[index[tuple(state.labels)]] += 1
    if bucket == "switch":   # both buckets in use
        assert 0 < n_rej < 4 * 60000
    keep = p > 0.005
    pval = stats.chisquare(counts[keep], p[keep] / p[keep].sum() * counts[keep].sum()).pvalue
    if mode == "include-self":
        assert pval < 1e-6
    else:
        assert pval > 1e-3, pval


def test_dirichlet_columns_draw_their_law():
    """Phi^(1)'s columns from Dir(eta + n_:k): means and variances of many draws,
    columns on the simplex, and the log-space redraw of a column whose gammas
    underflow (a tiny eta, no counts)."""
    V = 6
    counts = np.array([[0, 3, 0], [1, 0, 0], [0, 0, 0], [5, 2, 0], [0, 1, 0], [2, 0, 0]], dtype=np.int64)
    eta, n = 0.5, 6000
    bounds = np.array([0, 2, 3], dtype=np.int64)
    draws = np.empty((n, V, 3))
    for i in range(n):
        streams = BlockStreams(np.random.default_rng(i), 2)
        _blocked.dirichlet_columns(counts, eta, bounds, streams.addresses, draws[i], 1 + i % 2)
    np.testing.assert_allclose(draws.sum(axis=1), 1.0, rtol=1e-12)
    alpha = eta + counts
    a0 = alpha.sum(axis=0)
    mean = alpha / a0
    var = alpha * (a0 - alpha) / (a0 ** 2 * (a0 + 1))
    z = (draws.mean(axis=0) - mean) / np.sqrt(var / n)
    assert np.abs(z).max() < 4.5, z
    assert np.all(np.abs(draws.var(axis=0) / var - 1) < 0.15)
    tiny = np.empty((V, 3))
    streams = BlockStreams(np.random.default_rng(1), 2)      # kept alive: the kernel uses its states
    _blocked.dirichlet_columns(counts, 1e-6, bounds, streams.addresses, tiny, 1)
    assert np.all(np.isfinite(tiny)) and np.all(tiny > 0)
    np.testing.assert_allclose(tiny.sum(axis=0), 1.0, rtol=1e-12)
    assert tiny[:, 2].max() > 0.99          # Dir(1e-6, ...): nearly all mass on one term


@pytest.mark.parametrize("V, K, n_cells", [(50, 12, 3000), (2600, 208, 20000)])
@pytest.mark.parametrize("slots", [False, True])
def test_term_label_counts_are_the_same_for_any_threads_and_term_split(slots, V, K, n_cells):
    """``add_term_labels`` adds every token of its cells once, into its term's dense
    row or slots, whatever the threads and the terms each counts (``term_split``);
    with dense rows of more than 1 MiB (the second size) through the ring of
    prefetched entries (``_partial._add_ahead``)."""
    rng = np.random.default_rng(5)
    indices = rng.integers(0, V, n_cells).astype(np.int32)
    values = rng.integers(1, 5, n_cells).astype(np.float64)
    labels = rng.integers(0, K, int(values.sum())).astype(np.int16)
    c0, c1 = 7, n_cells - 11
    tok0 = int(values[:c0].sum())
    expect = np.zeros((V, K), dtype=np.int64)
    np.add.at(expect, (np.repeat(indices[c0:c1], values[c0:c1].astype(np.int64)),
                       labels[tok0:tok0 + int(values[c0:c1].sum())]), 1)
    row_map = np.full(V, -1, dtype=np.int32)
    dense_terms = np.arange(0, V, 2 if slots else 1)
    row_map[dense_terms] = np.arange(dense_terms.size, dtype=np.int32)
    totals = np.bincount(indices, weights=values, minlength=V).astype(np.int64)
    slot_start = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(np.where(row_map < 0, totals, 0), out=slot_start[1:])
    for nt, split in [(1, None), (2, None), (3, None), (2, [0, 1, V]), (3, [0, 0, 40, V]), (4, [0, 10, 10, 49, V])]:
        split = None if split is None else np.array(split, dtype=np.int64)
        dense = np.zeros((dense_terms.size, K), dtype=np.int32)
        kw = {"row_map": row_map, "slot_start": slot_start,
              "slots": np.zeros(int(slot_start[-1]), dtype=np.uint32)} if slots else {}
        _partial.add_term_labels(c0, c1, tok0, indices, values, labels, dense, nt, term_split=split, **kw)
        got = np.zeros((V, K), dtype=np.int64)
        got[dense_terms] = dense
        if slots:
            words = kw["slots"].astype(np.int64)
            filled = np.flatnonzero(words)
            terms = np.searchsorted(slot_start, filled, side="right") - 1
            got[terms, (words[filled] >> 16) - 1] = words[filled] & 0xFFFF
        assert np.array_equal(got, expect), (nt, split)


def _slot_words_one_by_one(indices, values, labels, c0, c1, tok0, row_map, slot_start, slots):
    """The slot words of ``slots`` after adding the tokens of cells ``c0:c1`` one
    after another as ``_shared.slot_add`` does (the factor's slot, else the first
    empty one; nothing where the row is full or the count would pass 65535)."""
    out = slots.copy()
    tok = tok0
    for c in range(c0, c1):
        v, n = int(indices[c]), int(values[c])
        if row_map[v] < 0:
            row = out[slot_start[v]:slot_start[v + 1]]
            for k in labels[tok:tok + n]:
                key = (int(k) + 1) << 16
                i = 0
                while i < row.size and row[i] != 0 and (int(row[i]) & ~0xFFFF) != key:
                    i += 1
                if i < row.size and (int(row[i]) & 0xFFFF) + 1 <= 0xFFFF:
                    row[i] = key | 1 if row[i] == 0 else row[i] + 1
        tok += n
    return out


@pytest.mark.parametrize("short_rows, label_dtype, count_dtype",
                         [(False, np.int16, np.int32), (True, np.int16, np.int32), (True, np.int32, np.int64)])
def test_term_label_slots_are_the_words_of_one_add_at_a_time(short_rows, label_dtype, count_dtype):
    """The sparse rows ``add_term_labels`` fills hold the words that adding each
    token in turn with ``slot_add`` leaves (each factor once, in the order the
    tokens first meet it), for any threads, in one call or two (adding after the
    filled slots), and with rows shorter than their tokens (merged when full;
    tokens of a factor with no room left are dropped, as there)."""
    rng = np.random.default_rng(11)
    V, K, n_cells = 40, 9, 2500
    indices = rng.integers(0, V, n_cells).astype(np.int32)
    values = rng.integers(1, 4, n_cells).astype(np.float64)
    labels = rng.integers(0, K, int(values.sum())).astype(label_dtype)
    row_map = np.full(V, -1, dtype=np.int32)
    row_map[::3] = np.arange(row_map[::3].size, dtype=np.int32)
    totals = np.bincount(indices, weights=values, minlength=V).astype(np.int64)
    room = np.where(row_map < 0, np.minimum(totals, K - 2) if short_rows else totals, 0)
    slot_start = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(room, out=slot_start[1:])
    cut = n_cells // 3
    tok_cut = int(values[:cut].sum())
    expect = _slot_words_one_by_one(indices, values, labels, 0, cut, 0, row_map, slot_start,
                                    np.zeros(int(slot_start[-1]), dtype=np.uint32))
    expect = _slot_words_one_by_one(indices, values, labels, cut, n_cells, tok_cut, row_map, slot_start, expect)
    expect_dense = np.zeros((V, K), dtype=np.int64)
    np.add.at(expect_dense, (np.repeat(indices, values.astype(np.int64)), labels), 1)
    expect_dense = expect_dense[row_map >= 0]
    for nt in (1, 2, 3):
        for parts in ([(0, n_cells, 0)], [(0, cut, 0), (cut, n_cells, tok_cut)]):
            dense = np.zeros((int((row_map >= 0).sum()), K), dtype=count_dtype)
            slots = np.zeros(int(slot_start[-1]), dtype=np.uint32)
            for c0, c1, tok0 in parts:
                _partial.add_term_labels(c0, c1, tok0, indices, values, labels, dense, nt, row_map=row_map,
                                         slot_start=slot_start, slots=slots)
            assert np.array_equal(slots, expect), (nt, len(parts))
            assert np.array_equal(dense, expect_dense), (nt, len(parts))
    if short_rows:      # rows too short for their tokens' factors: some tokens went nowhere
        assert (expect & 0xFFFF).sum() < totals[row_map < 0].sum()


def test_term_split_balances_the_tokens():
    """``PartialState.term_split``: n_threads + 1 non-decreasing bounds from 0 to V,
    each run of terms holding about an equal share of the tokens."""
    rng = np.random.default_rng(2)
    Y = np.where(rng.random((200, 300)) < 0.05, rng.integers(1, 30, (200, 300)), 0).astype(float)
    Y[:, :5] = 40.0                                        # a few frequent terms first
    state = PartialState.from_counts(sp.csr_matrix(Y), 8, rng=rng)
    assert state.term_split(1) is None
    for nt in (2, 3, 5):
        split = state.term_split(nt)
        assert split.dtype == np.int64 and split[0] == 0 and split[-1] == 300 and np.all(np.diff(split) >= 0)
        shares = np.diff(np.r_[0, np.cumsum(state.term_tokens)][split]) / state.term_tokens.sum()
        largest = state.term_tokens.max() / state.term_tokens.sum()
        assert np.all(np.abs(shares - 1 / nt) <= largest + 1e-12)


@pytest.mark.parametrize("depth", [1, 2])
def test_documents_divided_draw_the_same_labels(monkeypatch, depth):
    """The layer-one update of all document blocks at once, and of the blocks in two
    parts (as Dask partitions sweep their own, each with its own history), draw the
    same labels: a sweep builds the top sets exactly when one of its documents takes
    rejection, whatever the last sweep of its documents did, so no document's bucket
    depends on the others.  The first part's long documents take rejection, the
    second part's short ones the list; each part is swept with fresh tables (a new
    Phi^(1) stamp)."""
    rng = np.random.default_rng(5)
    V = 40
    long_docs = rng.poisson(rng.gamma(2.0, 1.0, size=(128, 8)) @ rng.dirichlet(np.full(V, 0.3), size=8) * 4)
    short = np.zeros((128, V), dtype=np.int64)
    short[np.arange(128), rng.integers(0, V, 128)] = 10         # one cell of 10 tokens: n_t / 10 < 1
    Y = PoissonLink().check_data(np.vstack([long_docs, short]))
    monkeypatch.setattr(PartialState, "REJECTION_WORK", 1.0)
    monkeypatch.setattr(PartialState, "TOP_SIZE", 2)              # the rejection draw is not the list's
    states = []
    for parts in ([None], [(0, 1), (1, 2)], [(1, 2), (0, 1)]):
        s = GibbsSampler.for_training(Y, 8, method="partial", random_state=11)
        if depth == 2:
            s.sweep(update_p_c=False)
            s.add_layer(0.05)
        assert len(s.bounds) == 3
        tok = s.tokens
        assert _ahead(tok, 0, 128, depth == 1, 1.0) and not _ahead(tok, 128, 256, depth == 1, 1.0)
        for part in parts:
            tok.phi_stamp += 1
            sample_layer_one_partial(s, blocks=part)
            assert tok.rejection_tokens > 0 if part in (None, (0, 1)) else tok.rejection_tokens == 0
        states.append(tok.labels.copy())
    np.testing.assert_array_equal(states[0], states[1])
    np.testing.assert_array_equal(states[0], states[2])


def test_prior_draws_are_counted_and_choose_the_tables(monkeypatch):
    """The sweep counts its prior-bucket draws (about every token when the prior
    bucket dominates, only the tokens alone in their documents when it is
    negligible); the state keeps them per swept
    token, and the terms with ``rate n_v >= TABLE_PRIOR_DRAWS`` (rate rounded down
    to a power of two) get tables.  Which terms have tables changes no draw."""
    Y = PoissonLink().check_data(_corpus(J=200))
    n_tok = int(Y.sum())
    s = GibbsSampler.for_training(Y, 8, method="partial", random_state=6)
    tok = s.tokens
    phi = s.network.layers[0].phi
    tables = tok.prior_tables(phi, np.ones(8), 1)
    counts = []
    streams = BlockStreams(np.random.default_rng(1), 1)
    for scale in (1e9, 1e-9):
        b = np.full(8, scale)
        tb = tok.prior_tables(phi, b, 1)
        res = _partial.partial_sweep(tok.indptr, tok.indices, tok.values, tok.doc_ptr, tok.labels.copy(), phi,
                                     b[None, :], b, *tb, np.array([0, 200], dtype=np.int64),
                                     streams.addresses, tok.doc_counts.copy(), 2, 1, False, True, 2.0)
        counts.append(res[3])
    # (the tokens alone in their document draw from the prior bucket whatever its size)
    alone = int(np.sum(np.diff(tok.doc_ptr) == 1))
    assert counts[0] > 0.99 * n_tok and counts[1] == alone < 0.1 * n_tok, (counts, alone, n_tok)
    assert tables is not None
    assert tok.prior_rate is None
    s.sweep(update_p_c=False)
    assert 0.0 < tok.prior_rate < 1.0
    rate = 2.0 ** np.floor(np.log2(tok.prior_rate))
    n_v = tok.term_tokens
    K = tok.n_components
    want = (n_v >= tok.TABLE_MIN_TOKENS) & (tok.TABLE_DENSE_FRACTION * n_v >= K) & (rate * n_v >= tok.TABLE_PRIOR_DRAWS)
    np.testing.assert_array_equal(tok.table_rows(tok.n_terms, K) >= 0, want)
    # the same chain with tables for every term and for none
    chains = []
    for min_tokens, draws in ((0, 0.0), (10**9, 4.0)):
        monkeypatch.setattr(PartialState, "TABLE_MIN_TOKENS", min_tokens)
        monkeypatch.setattr(PartialState, "TABLE_DENSE_FRACTION", 10**9)
        monkeypatch.setattr(PartialState, "TABLE_PRIOR_DRAWS", draws)
        c = GibbsSampler.for_training(Y, 8, method="partial", random_state=6)
        for it in range(4):
            c.sweep(update_p_c=it > 0)
        has = c.tokens.table_rows(c.tokens.n_terms, 8) >= 0
        np.testing.assert_array_equal(has, (c.tokens.term_tokens > 0) & (min_tokens == 0))
        chains.append(c.tokens.labels.copy())
    np.testing.assert_array_equal(chains[0], chains[1])


def test_top_sets_of_the_rejection_documents_terms_alone():
    """``rejection_ahead`` marks the terms of the documents the switch gives rejection
    (or gives up past ``mark_cells`` cells), and a sweep with the top sets of those
    terms alone (the other rows not a top set at all) draws what it draws with every
    term's; asking the same Phi for more terms builds the missing ones."""
    rng = np.random.default_rng(9)
    V = 60
    long_docs = rng.poisson(rng.gamma(2.0, 1.0, size=(3, 8)) @ rng.dirichlet(np.full(V, 0.1), size=8) * 4)
    short = np.zeros((60, V), dtype=np.int64)
    short[np.arange(60), rng.integers(0, V, 60)] = 15                      # one cell: n_t / 15 < 1
    Y = PoissonLink().check_data(np.vstack([short, long_docs, short]))     # three rejection documents
    s = GibbsSampler.for_training(Y, 8, method="partial", random_state=2)
    tok = s.tokens
    phi = s.network.layers[0].phi
    b = proposal_shape(s.network)
    J = Y.shape[0]
    work = 1.0
    terms = np.zeros(V, dtype=np.uint8)
    found = _partial.rejection_ahead(tok.indptr, tok.doc_ptr, tok.doc_counts, True, 2, work, tok.indices, terms,
                                     tok.indices.size)
    # the rule by hand: n_t n_cells / n_doc >= work
    n_t = np.count_nonzero(tok.doc_counts, axis=1)
    cells, n_doc = np.diff(tok.indptr), np.diff(tok.doc_ptr)
    rej = n_t * cells >= work * n_doc
    assert found == rej.sum() == 3
    np.testing.assert_array_equal(terms.astype(bool), np.isin(np.arange(V), Y[np.flatnonzero(rej)].indices))
    assert terms.sum() < V
    assert _partial.rejection_ahead(tok.indptr, tok.doc_ptr, tok.doc_counts, True, 2, work, tok.indices,
                                    np.zeros(V, dtype=np.uint8), 1) == -1
    assert _partial.rejection_ahead(tok.indptr, tok.doc_ptr, tok.doc_counts, True, 2, work) == 1
    full = tok.prior_tables(phi, b, 1, with_top=True)
    full = full[:4] + (full[4].copy(),)
    tok.phi_stamp += 1
    part = tok.prior_tables(phi, b, 1, with_top=terms)
    np.testing.assert_array_equal(part[4][terms == 1], full[4][terms == 1])
    part[4][terms == 0] = np.nan                      # not read by the sweep
    out = []
    for tb in (full, part):
        labels, njk = tok.labels.copy(), tok.doc_counts.copy()
        streams = BlockStreams(np.random.default_rng(4), 1)
        res = _partial.partial_sweep(tok.indptr, tok.indices, tok.values, tok.doc_ptr, labels, phi, b[None, :], b,
                                     *tb, np.array([0, J], dtype=np.int64), streams.addresses, njk, 2, 1, False,
                                     True, work)
        assert res[2] == n_doc[rej].sum()
        out.append(labels)
    np.testing.assert_array_equal(out[0], out[1])
    # the same Phi, more terms: the missing top sets are built, the tables the same (in their memory)
    more = np.ones(V, dtype=np.uint8)
    cum_before = part[1].copy()
    again = tok.prior_tables(phi, b, 1, with_top=more)
    assert np.shares_memory(again[1], part[1])
    np.testing.assert_array_equal(again[1], cum_before)
    np.testing.assert_array_equal(again[4], full[4])
    assert tok.prior_tables(phi, b, 1, with_top=terms) is again
