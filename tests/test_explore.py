"""Tests of pygbn.explore: projections, weights, trees, DOT/SVG/text, images."""
import html
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from functools import reduce
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import pygbn
from pygbn import explore as ex
from pygbn.explore._terms import top_indices_of_columns

SETTINGS = settings(derandomize=True, max_examples=40, deadline=None)
SVG_NS = "{http://www.w3.org/2000/svg}"


def random_network(V, widths, seed=0, conc=0.5):
    rng = np.random.default_rng(seed)
    dims = [V] + list(widths)
    phis = [rng.dirichlet(np.full(dims[t], conc), size=dims[t + 1]).T for t in range(len(widths))]
    r = rng.gamma(1.0, 1.0, size=widths[-1])
    return phis, r


def hand_network():
    """V=6, widths [4, 3, 2]; with tau=1 node (1,1) has two parents in the tree of (3,0)."""
    phi1 = np.array(
        [
            [0.50, 0.00, 0.10, 0.20],
            [0.20, 0.10, 0.10, 0.20],
            [0.10, 0.40, 0.10, 0.20],
            [0.10, 0.20, 0.40, 0.10],
            [0.05, 0.20, 0.20, 0.10],
            [0.05, 0.10, 0.10, 0.20],
        ]
    )
    phi2 = np.array(
        [
            [0.60, 0.05, 0.10],
            [0.30, 0.50, 0.10],
            [0.05, 0.40, 0.10],
            [0.05, 0.05, 0.70],
        ]
    )
    phi3 = np.array([[0.50, 0.10], [0.40, 0.45], [0.10, 0.45]])
    r = np.array([2.0, 1.0])
    return [phi1, phi2, phi3], r


VOCAB6 = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]


# ---------------------------------------------------------------------------
# projections and weights
# ---------------------------------------------------------------------------


def test_project_matches_direct_products():
    phis, r = random_network(30, [8, 5, 3], seed=1)
    for t in range(1, 4):
        direct = reduce(np.matmul, phis[:t])
        np.testing.assert_allclose(ex.project(phis, t), direct, rtol=1e-12)
        np.testing.assert_allclose(ex.project(phis, t).sum(axis=0), 1.0, rtol=1e-12)
    for t, p in enumerate(ex.projections(phis), start=1):
        np.testing.assert_allclose(p, ex.project(phis, t), rtol=1e-12)


def test_node_weights_match_eq_weight():
    phis, r = random_network(12, [6, 4, 3], seed=2)
    np.testing.assert_allclose(ex.node_weights(phis, r, 3), r)
    np.testing.assert_allclose(ex.node_weights(phis, r, 2), phis[2] @ r)
    np.testing.assert_allclose(ex.node_weights(phis, r, 1), phis[1] @ phis[2] @ r)
    lw = ex.layer_weights(phis, r)
    assert len(lw) == 3
    for t in range(1, 4):
        np.testing.assert_allclose(lw[t - 1], ex.node_weights(phis, r, t))
        assert lw[t - 1].sum() == pytest.approx(r.sum())


@pytest.mark.parametrize("t", [0, 4, -1, 1.0, True, "1", None])
def test_bad_layer_number(t):
    phis, r = random_network(5, [3, 2, 2])
    with pytest.raises(ValueError, match="t must be"):
        ex.project(phis, t)
    with pytest.raises(ValueError, match="t must be"):
        ex.node_weights(phis, r, t)


def test_bad_networks_are_refused():
    phis, r = random_network(5, [3, 2])
    with pytest.raises(ValueError, match="phis must be a list"):
        ex.project(phis[0], 1)
    with pytest.raises(ValueError, match="empty"):
        ex.project([], 1)
    with pytest.raises(ValueError, match="rows"):
        ex.project([phis[0], phis[1].T / phis[1].T.sum(0)], 2)
    bad = phis[0].copy()
    bad[0, 0] += 0.1
    with pytest.raises(ValueError, match="sum to 1"):
        ex.project([bad], 1)
    neg = phis[0].copy()
    neg[0, 0] = -neg[0, 0]
    with pytest.raises(ValueError, match="non-negative"):
        ex.project([neg], 1)
    with pytest.raises(ValueError, match="2-D"):
        ex.project([np.ones(3) / 3], 1)
    with pytest.raises(ValueError, match=r"r must have shape \(2,\)"):
        ex.node_weights(phis, np.ones(3), 1)
    with pytest.raises(ValueError, match="r must be finite"):
        ex.node_weights(phis, np.array([1.0, np.nan]), 1)
    # sparse and float32 inputs are accepted
    np.testing.assert_allclose(
        ex.project([sp.csr_matrix(phis[0]), phis[1].astype(np.float32)], 2), phis[0] @ phis[1], rtol=1e-6
    )


def test_networks_of_non_real_values_are_refused_by_name():
    # complex Phi was cast to real with only a ComplexWarning (the imaginary part dropped);
    # text and ragged lists gave numpy's messages, which name no argument
    phis, r = random_network(5, [3, 2])
    with pytest.raises(ValueError, match=r"phis\[1\] \(Phi\^\(2\)\) must hold real numbers, got dtype complex128"):
        ex.project([phis[0], phis[1] + 0j], 2)
    with pytest.raises(ValueError, match=r"phis\[0\] \(Phi\^\(1\)\) must hold real numbers, got dtype <U"):
        ex.project([np.array([["a"]])], 1)
    with pytest.raises(ValueError, match=r"phis\[0\] \(Phi\^\(1\)\) must be an array of real numbers, got a ragged list"):
        ex.top_term_indices([[[1.0], [0.0, 1.0]]], 1)
    with pytest.raises(ValueError, match="r must hold real numbers, got dtype complex128"):
        ex.node_weights(phis, r + 1j, 1)
    with pytest.raises(ValueError, match="r must hold real numbers"):
        ex.tree(phis, ["a", "b"], 2, 0)
    with pytest.raises(ValueError, match=r"phis\[0\] \(Phi\^\(1\)\) must hold real numbers"):
        ex.project([sp.csr_matrix(phis[0].astype(complex))], 1)
    # object arrays and lists of numbers are still read
    np.testing.assert_array_equal(ex.project([phis[0].astype(object).tolist()], 1), phis[0])


def test_relabel_by_popularity():
    phis, r = random_network(20, [7, 5, 4], seed=3)
    new_phis, new_r, perms = ex.relabel_by_popularity(phis, r)
    old_w = ex.layer_weights(phis, r)
    new_w = ex.layer_weights(new_phis, new_r)
    for t in range(1, 4):
        w = new_w[t - 1]
        assert np.all(np.diff(w) <= 1e-12), "weights must be sorted descending"
        np.testing.assert_allclose(w, old_w[t - 1][perms[t - 1]], rtol=1e-12)
        np.testing.assert_allclose(ex.project(new_phis, t), ex.project(phis, t)[:, perms[t - 1]], rtol=1e-12)
        assert sorted(perms[t - 1].tolist()) == list(range(phis[t - 1].shape[1]))
    # the generative mean prod(Phi) r is unchanged by relabelling
    np.testing.assert_allclose(ex.project(new_phis, 3) @ new_r, ex.project(phis, 3) @ r, rtol=1e-12)
    # relabelled networks give rank == index + 1
    sub = ex.tree(new_phis, new_r, 3, 0, tau=0.5)
    assert all(nd.rank == nd.index + 1 for nd in sub.nodes)


def test_relabel_ties_keep_order():
    phi = np.full((4, 3), 0.25)
    new_phis, new_r, perms = ex.relabel_by_popularity([phi], np.array([1.0, 2.0, 1.0]))
    assert perms[0].tolist() == [1, 0, 2]
    np.testing.assert_array_equal(new_r, [2.0, 1.0, 1.0])


@given(
    V=st.integers(2, 12),
    widths=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    seed=st.integers(0, 2**16),
)
@SETTINGS
def test_projection_and_relabel_properties(V, widths, seed):
    phis, r = random_network(V, widths, seed=seed)
    T = len(widths)
    direct = reduce(np.matmul, phis)
    np.testing.assert_allclose(ex.project(phis, T), direct, rtol=1e-10, atol=1e-15)
    new_phis, new_r, perms = ex.relabel_by_popularity(phis, r)
    np.testing.assert_allclose(ex.project(new_phis, T) @ new_r, direct @ r, rtol=1e-10)
    for t in range(1, T + 1):
        assert np.all(np.diff(ex.node_weights(new_phis, new_r, t)) <= 1e-12)


# ---------------------------------------------------------------------------
# top terms
# ---------------------------------------------------------------------------


def test_top_terms_match_argsort():
    phis, r = random_network(15, [6, 3], seed=4)
    vocab = [f"w{i}" for i in range(15)]
    for t in (1, 2):
        proj = ex.project(phis, t)
        tt = ex.top_terms(phis, t, vocab, n=5)
        assert len(tt) == proj.shape[1]
        for k, terms in enumerate(tt):
            expected = [vocab[i] for i in np.argsort(-proj[:, k], kind="stable")[:5]]
            assert terms == expected
    assert len(ex.top_terms(phis, 1, vocab, n=100)[0]) == 15  # clipped to V


def test_top_terms_ties_lower_index_first():
    phi = np.full((4, 1), 0.25)
    assert ex.top_terms([phi], 1, ["d", "c", "b", "a"], n=2) == [["d", "c"]]
    np.testing.assert_array_equal(ex.top_term_indices([phi], 1, n=3), [[0, 1, 2]])


def test_top_terms_validation():
    phis, r = random_network(5, [2])
    with pytest.raises(ValueError, match="vocab must hold 5 terms"):
        ex.top_terms(phis, 1, ["a", "b"])
    with pytest.raises(ValueError, match="vocab must be a sequence"):
        ex.top_terms(phis, 1, "abcde")
    with pytest.raises(ValueError, match=r"vocab\[2\] must be a str"):
        ex.top_terms(phis, 1, ["a", "b", 3, "d", "e"])
    with pytest.raises(ValueError, match="n must be a positive int"):
        ex.top_terms(phis, 1, list("abcde"), n=0)


def test_generated_top_terms_dense_and_sparse():
    counts = np.array([[0, 3, 1, 3, 0], [0, 0, 0, 0, 0], [5, 0, 0, 0, 1]], dtype=np.uint16)
    vocab = list("abcde")
    expected = [["b", "d", "c"], [], ["a", "e"]]
    assert ex.generated_top_terms(counts, vocab, n=3) == expected
    assert ex.generated_top_terms(sp.csr_matrix(counts), vocab, n=3) == expected
    assert ex.generated_top_terms(counts, vocab, n=1) == [["b"], [], ["a"]]
    with pytest.raises(ValueError, match="vocab must hold 5 terms"):
        ex.generated_top_terms(counts, vocab[:4])
    with pytest.raises(ValueError, match="non-negative"):
        ex.generated_top_terms(-np.ones((1, 5)), vocab)
    with pytest.raises(ValueError, match="2-D"):
        ex.generated_top_terms(np.ones(5), vocab)


def test_generated_top_terms_refuses_complex_counts_dense_or_sparse():
    # the dense path refused complex counts, the sparse one cast them to real with only a
    # ComplexWarning (the imaginary part dropped)
    vocab = ["x", "y"]
    for counts in (np.array([[1j, 2.0]]), sp.csr_matrix(np.array([[1j, 2.0]])), sp.coo_matrix(np.array([[1 + 0j, 2]]))):
        with pytest.raises(ValueError, match="counts must hold real numbers, got dtype complex128"):
            ex.generated_top_terms(counts, vocab)
    with pytest.raises(ValueError, match="counts must hold real numbers, got dtype <U"):
        ex.generated_top_terms([["a", "b"]], vocab)
    assert ex.generated_top_terms(sp.csr_matrix(np.array([[True, False]])), vocab) == [["x"]]


# ---------------------------------------------------------------------------
# trees and subnetworks
# ---------------------------------------------------------------------------


def test_tree_with_several_parents():
    phis, r = hand_network()
    sub = ex.tree(phis, r, 3, 0, tau=1.0, vocab=VOCAB6, n_terms=3)
    keys = [nd.key for nd in sub.nodes]
    assert sorted(keys, reverse=True) == [(3, 0), (2, 1), (2, 0), (1, 2), (1, 1), (1, 0)]
    assert len(set(keys)) == len(keys)
    # nodes are listed by layer (top first), then by popularity rank
    order = [(-nd.layer, nd.rank) for nd in sub.nodes]
    assert order == sorted(order)
    # r^(2) = Phi3 r = [1.1, 1.25, 0.65]: node 1 of layer 2 outranks node 0
    assert sub.node(2, 1).rank == 1 and sub.node(2, 0).rank == 2
    assert sub.layer_sizes == (3, 2, 1)
    edges = {(e.parent, e.child): e.phi for e in sub.edges}
    assert edges == {
        ((3, 0), (2, 0)): 0.5,
        ((3, 0), (2, 1)): 0.4,
        ((2, 0), (1, 0)): 0.6,
        ((2, 0), (1, 1)): 0.3,
        ((2, 1), (1, 1)): 0.5,
        ((2, 1), (1, 2)): 0.4,
    }
    assert {e.parent for e in sub.parents((1, 1))} == {(2, 0), (2, 1)}
    assert [e.child for e in sub.children((3, 0))] == [(2, 0), (2, 1)]
    assert (1, 3) not in sub and (1, 1) in sub
    assert 3 not in sub and None not in sub and (1, 1, 0) not in sub     # not keys: False, no error
    assert sub.roots == ((3, 0),)
    assert sub.tau == (1.0, 1.0, 1.0)
    assert sub.widths == (4, 3, 2)
    root = sub.node(3, 0)
    assert root.rank == 1 and root.relative_weight == 1.0
    assert root.top_terms == tuple(ex.top_terms(phis, 3, VOCAB6, n=3)[0])
    assert root.weight == pytest.approx(2.0)
    with pytest.raises(KeyError):
        sub.node(2, 2)


def test_tree_tau_per_layer_and_strict_threshold():
    phis, r = hand_network()
    # tau_2 = 2 -> threshold 2/4 = 0.5: Phi2(1,1) = 0.5 is not > 0.5 (strict), Phi2(0,0) = 0.6 is
    for tau in ([9.0, 2.0, 1.0], {2: 2.0, 3: 1.0}, np.array([0.0, 2.0, 1.0])):
        sub = ex.tree(phis, r, 3, 0, tau=tau)
        edges = {(e.parent, e.child) for e in sub.edges}
        assert edges == {((3, 0), (2, 0)), ((3, 0), (2, 1)), ((2, 0), (1, 0))}
        assert sub.tau[1:] == (2.0, 1.0)
    # default tau = 3: threshold 3/3 = 1 at layer 3, nothing passes
    alone = ex.tree(phis, r, 3, 0)
    assert [nd.key for nd in alone.nodes] == [(3, 0)] and alone.edges == ()
    # mapping: unspecified layers keep the default 3
    sub = ex.tree(phis, r, 3, 0, tau={3: 1.0})
    assert sub.tau == (3.0, 3.0, 1.0)
    assert {(e.parent, e.child) for e in sub.edges} == {((3, 0), (2, 0)), ((3, 0), (2, 1))}


def test_subnetwork_is_union_of_trees():
    phis, r = hand_network()
    a = ex.tree(phis, r, 3, 0, tau=1.0)
    b = ex.tree(phis, r, 3, 1, tau=1.0)
    u = ex.subnetwork(phis, r, [(3, 0), (3, 1)], tau=1.0)
    assert {nd.key for nd in u.nodes} == {nd.key for nd in a.nodes} | {nd.key for nd in b.nodes}
    key = lambda s: {(e.parent, e.child, e.phi) for e in s.edges}  # noqa: E731
    assert key(u) == key(a) | key(b)
    assert {e.parent for e in u.parents((2, 1))} == {(3, 0), (3, 1)}
    assert u.roots == ((3, 0), (3, 1))
    # roots at different layers, a single pair, duplicates
    mixed = ex.subnetwork(phis, r, [(2, 2), (3, 1), (2, 2)], tau=1.0)
    assert mixed.roots == ((2, 2), (3, 1))
    assert ex.subnetwork(phis, r, (2, 2), tau=1.0).roots == ((2, 2),)
    leaf = ex.tree(phis, r, 1, 3)
    assert [nd.key for nd in leaf.nodes] == [(1, 3)]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(roots=[]), "at least one"),
        (dict(roots=[(4, 0)]), "a root's layer"),
        (dict(roots=[(3, 2)]), r"a root's node must be in 0\.\.1"),
        (dict(roots=[(3, -1)]), "a root's node"),
        (dict(roots=[(3, 0.0)]), "a root's node must be an int"),
        (dict(roots=["ab"]), "a root's layer"),
        (dict(roots=[(3,)]), r"\(layer, node\) pairs"),
        (dict(roots=[(3, 0)], tau=-1.0), "tau must be a finite non-negative"),
        (dict(roots=[(3, 0)], tau=[1.0, 2.0]), "one value per layer"),
        (dict(roots=[(3, 0)], tau={4: 1.0}), "a key of tau"),
        (dict(roots=[(3, 0)], tau="3"), "tau"),
        (dict(roots=[(3, 0)], vocab=["a"]), "vocab must hold 6"),
        (dict(roots=[(3, 0)], n_terms=0), "n_terms"),
    ],
)
def test_subnetwork_validation(kwargs, match):
    phis, r = hand_network()
    with pytest.raises(ValueError, match=match):
        ex.subnetwork(phis, r, **kwargs)


@given(
    V=st.integers(2, 10),
    widths=st.lists(st.integers(1, 7), min_size=1, max_size=4),
    seed=st.integers(0, 2**16),
    taus=st.lists(st.floats(0.0, 3.0), min_size=4, max_size=4),
    data=st.data(),
)
@SETTINGS
def test_tree_properties(V, widths, seed, taus, data):
    phis, r = random_network(V, widths, seed=seed, conc=0.3)
    T = len(widths)
    tau = taus[:T]
    layer = data.draw(st.integers(1, T))
    node = data.draw(st.integers(0, widths[layer - 1] - 1))
    sub = ex.tree(phis, r, layer, node, tau=tau)
    keys = [nd.key for nd in sub.nodes]
    assert len(keys) == len(set(keys))
    members = set(keys)
    for e in sub.edges:
        t, k = e.parent
        assert e.child[0] == t - 1
        assert e.phi == phis[t - 1][e.child[1], k]
        assert e.phi > tau[t - 1] / phis[t - 1].shape[0]
        assert e.parent in members and e.child in members
    # closure: every member above layer one links to all its strong children
    for t, k in members:
        if t >= 2:
            strong = set(np.flatnonzero(phis[t - 1][:, k] > tau[t - 1] / phis[t - 1].shape[0]).tolist())
            assert {c[1] for c in (e.child for e in sub.children((t, k)))} == strong
    # every node but the root is reached from a parent; nothing above the root
    for key in members - {(layer, node)}:
        assert sub.parents(key)
        assert key[0] < layer
    # ranks agree with the weights of the full layer
    for nd in sub.nodes:
        w = ex.node_weights(phis, r, nd.layer)
        assert nd.rank == 1 + int(np.sum(w > w[nd.index])) + int(np.sum(w[: nd.index] == w[nd.index]))
        assert 0.0 <= nd.relative_weight <= 1.0


# ---------------------------------------------------------------------------
# a strict parser for the DOT subset that render_dot emits
# ---------------------------------------------------------------------------

_DOT_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<qstring>"(?:\\"|\\\n|\\(?!")|[^"\\])*")
  | (?P<edgeop>->|--)
  | (?P<punct>[{}\[\];,=:])
  | (?P<numeral>-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))
  | (?P<id>[A-Za-z_\x80-\uffff][A-Za-z_0-9\x80-\uffff]*)
    """,
    re.VERBOSE | re.DOTALL,
)


def _dot_tokens(text):
    pos, out = 0, []
    while pos < len(text):
        m = _DOT_TOKEN.match(text, pos)
        if not m:
            raise SyntaxError(f"bad DOT character at {pos}: {text[pos:pos + 20]!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        val = m.group()
        if kind == "qstring":
            # DOT lexer: only the dyad \" is an escape (and backslash-newline a continuation)
            val = val[1:-1].replace("\\\n", "").replace('\\"', '"')
        elif kind == "numeral":
            # a numeral followed directly by a letter is not valid DOT
            if pos < len(text) and (text[pos].isalpha() or text[pos] == "_"):
                raise SyntaxError(f"numeral followed by a letter at {pos}")
        out.append((kind, val))
    return out


def parse_dot(text):
    """Parse ``[strict] digraph ID { stmt_list }``; return (name, nodes, edges)."""
    toks = _dot_tokens(text)
    i = 0

    def peek(k=0):
        return toks[i + k] if i + k < len(toks) else (None, None)

    def take(kind=None, val=None):
        nonlocal i
        tk = peek()
        if tk[0] is None or (kind and tk[0] != kind) or (val is not None and tk[1] != val):
            raise SyntaxError(f"expected {kind or ''} {val or ''}, got {tk!r} at token {i}")
        i += 1
        return tk[1]

    def ident():
        tk = peek()
        if tk[0] in ("id", "numeral", "qstring"):
            return take()
        raise SyntaxError(f"expected an ID, got {tk!r}")

    def attr_list():
        attrs = {}
        while peek() == ("punct", "["):
            take("punct", "[")
            while peek() != ("punct", "]"):
                key = ident()
                take("punct", "=")
                attrs[key] = ident()
                if peek() in (("punct", ","), ("punct", ";")):
                    take()
            take("punct", "]")
        return attrs

    nodes, edges = {}, []

    def stmt_list():
        while peek() != ("punct", "}"):
            stmt()
            if peek() == ("punct", ";"):
                take()

    def stmt():
        tk = peek()
        if tk == ("id", "subgraph"):
            take()
            if peek()[0] in ("id", "numeral", "qstring"):
                ident()
            take("punct", "{")
            stmt_list()
            take("punct", "}")
            return
        if tk[0] == "id" and tk[1] in ("graph", "node", "edge"):
            take()
            attr_list()
            return
        a = ident()
        if peek() == ("punct", "="):
            take()
            ident()
            return
        if peek() == ("edgeop", "->"):
            chain = [a]
            while peek() == ("edgeop", "->"):
                take()
                chain.append(ident())
            attrs = attr_list()
            for u, v in zip(chain, chain[1:]):
                edges.append((u, v, attrs))
            return
        if peek() == ("edgeop", "--"):
            raise SyntaxError("'--' in a digraph")
        nodes.setdefault(a, {}).update(attr_list())

    if peek() == ("id", "strict"):
        take()
    take("id", "digraph")
    name = ident() if peek()[0] in ("id", "numeral", "qstring") else None
    take("punct", "{")
    stmt_list()
    take("punct", "}")
    if i != len(toks):
        raise SyntaxError("trailing tokens after the graph")
    for u, v, _ in edges:
        assert u in nodes and v in nodes, "edge to an undeclared node"
    return name, nodes, edges


def unescape_label(s):
    """Graphviz's reading of a label: HTML entities decoded first (``&amp;`` is ``&``), then
    escString: \\n, \\l, \\r are line breaks, \\x is x."""
    s = html.unescape(s)
    out, lines, j = [], [], 0
    while j < len(s):
        c = s[j]
        if c == "\\" and j + 1 < len(s):
            nxt = s[j + 1]
            if nxt in "nlr":
                lines.append("".join(out))
                out = []
            else:
                out.append(nxt)
            j += 2
            continue
        out.append(c)
        j += 1
    lines.append("".join(out))
    return lines


def test_parser_rejects_bad_dot():
    with pytest.raises(SyntaxError):
        parse_dot('digraph { a [label="x] }')
    with pytest.raises(SyntaxError):
        parse_dot("digraph { a -> }")
    with pytest.raises(SyntaxError):
        parse_dot('digraph { a [label="x\\"]; }')  # the escaped quote does not close the string
    name, nodes, edges = parse_dot('digraph "g" { a [label="x\\\\y"]; a -> b; b; }')
    assert name == "g" and unescape_label(nodes["a"]["label"]) == ["x\\y"]


def test_dot_output_parses_and_follows_the_paper():
    phis, r = hand_network()
    sub = ex.subnetwork(phis, r, [(3, 0), (3, 1)], tau=1.0, vocab=VOCAB6, n_terms=6)
    text = sub.to_dot(words_per_line=3, max_penwidth=8.0)
    name, nodes, edges = parse_dot(text)
    assert name == "gbn"
    assert set(nodes) == {f"n{nd.layer}_{nd.index}" for nd in sub.nodes}
    assert len(edges) == len(sub.edges)
    colours = {1: "black", 2: "blue", 3: "orange"}
    for nd in sub.nodes:
        attrs = nodes[f"n{nd.layer}_{nd.index}"]
        assert attrs["color"] == colours[nd.layer]
        lines = unescape_label(attrs["label"])
        assert lines[0] == nd.header
        assert " ".join(lines[1:]).split() == list(nd.top_terms)
        expect_fs = max(14.0 * nd.relative_weight**0.1, 0.4 * 14.0)
        assert float(attrs["fontsize"]) == pytest.approx(expect_fs, abs=0.01)
    phi_of = {(f"n{e.parent[0]}_{e.parent[1]}", f"n{e.child[0]}_{e.child[1]}"): e.phi for e in sub.edges}
    for u, v, attrs in edges:
        # width proportional to sqrt(Phi)
        assert float(attrs["penwidth"]) == pytest.approx(8.0 * math.sqrt(phi_of[(u, v)]), abs=1e-3)


def test_dot_escapes_quotes_backslashes_and_newlines():
    phis = [np.full((6, 1), 1 / 6)]
    vocab = ['say "hi"', "back\\slash", "new\nline", "{brace}", "end\\", "x\\n\\N"]
    sub = ex.tree(phis, np.ones(1), 1, 0, vocab=vocab, n_terms=6)
    text = ex.render_dot(sub, words_per_line=1, graph_name='my "graph"\\')
    name, nodes, edges = parse_dot(text)
    assert name.rstrip() == 'my "graph"\\\\'  # lexed; the backslash is still escString-encoded
    lines = unescape_label(nodes["n1_0"]["label"])
    assert [ln.rstrip(" ") for ln in lines[1:]] == ['say "hi"', "back\\slash", "new line", "{brace}", "end\\", "x\\n\\N"]
    assert lines[0] == "L1 #1"


ENTITY_WORDS = ["&amp;", "&#92;n", "a&b", "&lt;x&gt;", "&", "&#x26;"]


def test_dot_escapes_ampersands():
    # Graphviz decodes HTML entities in labels: a term "&amp;" was shown as "&", and
    # "&#92;n" became a backslash escape, i.e. a line break
    phis = [np.full((6, 1), 1 / 6)]
    sub = ex.tree(phis, np.ones(1), 1, 0, vocab=ENTITY_WORDS, n_terms=6)
    name, nodes, _ = parse_dot(ex.render_dot(sub, words_per_line=1, graph_name="a&amp;b"))
    assert html.unescape(name) == "a&amp;b"
    lines = unescape_label(nodes["n1_0"]["label"])
    assert lines[1:] == ENTITY_WORDS


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
def test_graphviz_shows_ampersands_as_written():  # pragma: no cover - depends on Graphviz
    phis = [np.full((6, 1), 1 / 6)]
    sub = ex.tree(phis, np.ones(1), 1, 0, vocab=ENTITY_WORDS, n_terms=6)
    res = subprocess.run(["dot", "-Tsvg"], input=sub.to_dot(words_per_line=1).encode("utf-8"),
                         capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    texts = [t.text for t in ET.fromstring(res.stdout).iter(SVG_NS + "text")]
    assert texts[1:] == ENTITY_WORDS


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
def test_dot_accepted_by_graphviz(tmp_path):  # pragma: no cover - depends on Graphviz
    phis, r = random_network(20, [8, 4, 2], seed=5)
    sub = ex.subnetwork(phis, r, [(3, 0), (3, 1)], tau=1.0, vocab=[f'w"{i}\\' for i in range(20)])
    src = tmp_path / "t.dot"
    src.write_text(sub.to_dot())
    res = subprocess.run(["dot", "-Tsvg", str(src)], capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    ET.fromstring(res.stdout)


# ---------------------------------------------------------------------------
# SVG and text renderings
# ---------------------------------------------------------------------------


def test_svg_is_well_formed_and_escaped():
    phis, r = hand_network()
    vocab = ["<tag>", "a&b", 'q"uote', "ctl\x01char", "zeta\ufffe", "ok"]
    sub = ex.subnetwork(phis, r, [(3, 0), (3, 1)], tau=1.0, vocab=vocab, n_terms=6)
    svg = sub.to_svg(words_per_line=2)
    root = ET.fromstring(svg.encode("utf-8"))
    assert root.tag == SVG_NS + "svg"
    lines = root.findall(f".//{SVG_NS}line")
    assert len(lines) == len(sub.edges)
    widths = sorted(float(ln.get("stroke-width")) for ln in lines)
    assert widths == pytest.approx(sorted(8.0 * math.sqrt(e.phi) for e in sub.edges), abs=0.01)
    boxes = [g for g in root.iter(SVG_NS + "g") if (g.get("class") or "").startswith("node ")]
    assert len(boxes) == len(sub.nodes)
    strokes = {g.get("class"): g.find(SVG_NS + "rect").get("stroke") for g in boxes}
    assert strokes["node layer3"] == "orange" and strokes["node layer2"] == "blue" and strokes["node layer1"] == "black"
    texts = " ".join(t.text for t in root.iter(SVG_NS + "text"))
    assert "<tag>" in texts and "a&b" in texts and 'q"uote' in texts and "ctlchar" in texts
    # boxes of one layer do not overlap and layers are stacked top-down
    for t in (1, 2, 3):
        rects = sorted(
            (float(g.find(SVG_NS + "rect").get("x")), float(g.find(SVG_NS + "rect").get("width")))
            for g in boxes
            if g.get("class") == f"node layer{t}"
        )
        for (x1, w1), (x2, _) in zip(rects, rects[1:]):
            assert x1 + w1 <= x2
    ys = {g.get("class"): float(g.find(SVG_NS + "rect").get("y")) for g in boxes}
    assert ys["node layer3"] < ys["node layer2"] < ys["node layer1"]


@given(
    V=st.integers(2, 8),
    widths=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    seed=st.integers(0, 2**16),
    words=st.lists(st.text(min_size=1, max_size=6), min_size=8, max_size=8),
)
@SETTINGS
def test_renderers_accept_any_vocabulary(V, widths, seed, words):
    phis, r = random_network(V, widths, seed=seed, conc=0.3)
    T = len(widths)
    vocab = words[:V]
    sub = ex.subnetwork(phis, r, [(T, k) for k in range(widths[-1])], tau=0.5, vocab=vocab, n_terms=3)
    ET.fromstring(sub.to_svg().encode("utf-8", "surrogatepass"))
    _, nodes, edges = parse_dot(sub.to_dot(words_per_line=1))
    assert len(nodes) == len(sub.nodes) and len(edges) == len(sub.edges)
    for nd in sub.nodes:
        lines = unescape_label(nodes[f"n{nd.layer}_{nd.index}"]["label"])
        expected = []
        for w in nd.top_terms:
            w = re.sub(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]", "",
                       re.sub(r"[\r\n\t\v\f\x85\u2028\u2029]+", " ", w))
            expected.append(w + " " if w.endswith("\\") else w)
        assert lines[1:] == expected
    text = sub.to_text()
    assert text.endswith("\n")


def test_text_rendering():
    phis, r = hand_network()
    sub = ex.tree(phis, r, 3, 0, tau=1.0, vocab=VOCAB6, n_terms=2)
    text = ex.render_text(sub)
    lines = text.splitlines()
    assert lines[0].startswith("L3 #1  w=2: ")
    # 6 nodes, node (1,1) printed twice (two parents), the second time without children
    assert len(lines) == 7
    assert sum("(see above)" in ln for ln in lines) == 1
    assert lines[1].startswith("|-- L2 ") and "phi=0.500" in lines[1]
    assert lines[-1].startswith("    `-- L1 ")
    assert all(ln.isascii() for ln in lines)
    # n_terms and weights switches
    short = sub.to_text(n_terms=1, show_weights=False)
    assert "w=" not in short and short.splitlines()[0].count(" ") == 2
    with pytest.raises(ValueError, match="expected a Subnetwork"):
        ex.render_text("not a tree")


def test_layer_colours():
    assert [ex.layer_colour(t) for t in range(1, 6)] == ["black", "blue", "orange", "green", "red"]
    assert ex.layer_colour(11) == "black"
    with pytest.raises(ValueError):
        ex.layer_colour(0)
    # any layer number cycles; the check stopped at an arbitrary 10**9 with the message
    # "t must be a layer number in 1..1000000000"
    assert ex.layer_colour(10**9 + 1) == "black" and ex.layer_colour(np.int64(12)) == "blue"
    for bad in (0, -1, 1.0, True):
        with pytest.raises(ValueError, match=f"t must be a positive int, got {bad!r}"):
            ex.layer_colour(bad)


# ---------------------------------------------------------------------------
# images
# ---------------------------------------------------------------------------


def decode_png(data):
    """Minimal PNG decoder for 8-bit grayscale/RGB, non-interlaced; checks every CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "bad signature"
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, f"bad CRC in {kind!r}"
        chunks.append((kind, body))
        pos += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1] == (b"IEND", b"")
    w, h, depth, ctype, comp, filt, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, comp, filt, interlace) == (8, 0, 0, 0) and ctype in (0, 2)
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    channels = 1 if ctype == 0 else 3
    stride = w * channels
    assert len(raw) == h * (stride + 1)
    rows = []
    for y in range(h):
        line = raw[y * (stride + 1) : (y + 1) * (stride + 1)]
        assert line[0] == 0, "only filter type 0 is written"
        rows.append(np.frombuffer(line[1:], dtype=np.uint8))
    pix = np.array(rows)
    return pix if ctype == 0 else pix.reshape(h, w, 3)


def test_png_roundtrip_grayscale_and_rgb(tmp_path):
    img = np.linspace(0, 1, 12).reshape(3, 4)
    pix = decode_png(ex.encode_png(img))
    np.testing.assert_array_equal(pix, np.rint(img * 255).astype(np.uint8))
    big = decode_png(ex.encode_png(img, scale=3, invert=True))
    assert big.shape == (9, 12)
    np.testing.assert_array_equal(big[::3, ::3], 255 - pix)
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3) * 10
    np.testing.assert_array_equal(decode_png(ex.encode_png(rgb)), rgb)
    path = ex.write_png(tmp_path / "a.png", img)
    np.testing.assert_array_equal(decode_png(open(path, "rb").read()), pix)
    with pytest.raises(ValueError, match="image must have shape"):
        ex.encode_png(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="finite"):
        ex.encode_png(np.array([[np.nan]]))


def test_factor_images_and_grid(tmp_path):
    phis, r = random_network(12, [5, 3], seed=6)
    imgs = ex.factor_images(phis, 2, (3, 4))
    assert imgs.shape == (3, 3, 4)
    np.testing.assert_allclose(imgs.reshape(3, -1).max(axis=1), 1.0)
    proj = ex.project(phis, 2)
    np.testing.assert_allclose(imgs[1], (proj[:, 1] / proj[:, 1].max()).reshape(3, 4))
    raw = ex.factor_images(phis, 1, (3, 4), nodes=[4, 0], normalize=False)
    np.testing.assert_allclose(raw[0].ravel(), phis[0][:, 4])
    grid = ex.image_grid(imgs, n_cols=2, pad=1)
    assert grid.shape == (2 * 4 + 1, 2 * 5 + 1)
    np.testing.assert_allclose(grid[1:4, 1:5], imgs[0])
    np.testing.assert_allclose(grid[1:4, 6:10], imgs[1])
    np.testing.assert_allclose(grid[5:8, 1:5], imgs[2])
    assert np.all(grid[5:8, 6:10] == 1.0) and np.all(grid[0] == 1.0)

    png = ex.save_factor_grid(phis, 2, (3, 4), tmp_path / "layer2.png", n_cols=2, scale=2)
    pix = decode_png(open(png, "rb").read())
    assert pix.shape == (18, 22)
    np.testing.assert_array_equal(pix[::2, ::2], np.rint(grid * 255).astype(np.uint8))

    svg = ex.save_factor_grid(phis, 1, (3, 4), tmp_path / "layer1.svg", scale=5)
    root = ET.parse(svg).getroot()
    assert root.tag == SVG_NS + "svg"
    g = ex.image_grid(ex.factor_images(phis, 1, (3, 4)))
    assert float(root.get("width")) == g.shape[1] * 5
    area = sum(float(rc.get("width")) * float(rc.get("height")) for rc in root.iter(SVG_NS + "rect"))
    assert area == g.shape[0] * g.shape[1] * 25  # the rectangles tile the image
    with pytest.raises(ValueError, match="shape"):
        ex.factor_images(phis, 1, (5, 5))
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        ex.save_factor_grid(phis, 1, (3, 4), tmp_path / "x.jpg")
    with pytest.raises(ValueError, match="nodes must be in"):
        ex.factor_images(phis, 1, (3, 4), nodes=[7])


def test_image_grid_pad_value_and_wide_n_cols():
    imgs = np.zeros((5, 2, 2))
    # a grid has at most n columns (the docstring's shape names cols = min(n_cols, n))
    assert ex.image_grid(imgs, n_cols=10, pad=1).shape == (4, 16)
    # pad_value was taken as is: nan gave a grid encode_png refuses ("image values must be
    # finite", about an image the user never passed), a str numpy's unnamed conversion error
    for bad in (np.nan, np.inf, "white", None, True):
        with pytest.raises(ValueError, match="pad_value must be a finite number"):
            ex.image_grid(imgs, pad_value=bad)
    assert ex.image_grid(imgs, pad_value=np.float32(0.5))[0, 0] == 0.5


def test_digits_shaped_grid():
    # a 64-pixel network, as for the 8x8 digits data set
    phis, r = random_network(64, [10, 4], seed=7)
    new_phis, new_r, _ = ex.relabel_by_popularity(phis, r)
    for t in (1, 2):
        pix = decode_png(ex.encode_png(ex.image_grid(ex.factor_images(new_phis, t, (8, 8))), scale=2))
        k = new_phis[t - 1].shape[1]
        cols = math.ceil(math.sqrt(k))
        rows = math.ceil(k / cols)
        assert pix.shape == (2 * (rows * 9 + 1), 2 * (cols * 9 + 1))


@given(
    n_rows=st.integers(1, 60),
    n_cols=st.integers(1, 5),
    n=st.integers(1, 70),
    levels=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
@SETTINGS
def test_top_indices_equal_stable_argsort(n_rows, n_cols, n, levels, seed):
    # few distinct values -> many ties, including at the n-th place
    mat = np.random.default_rng(seed).integers(0, levels, size=(n_rows, n_cols)).astype(float)
    got = top_indices_of_columns(mat, n)
    np.testing.assert_array_equal(got, np.argsort(-mat, axis=0, kind="stable")[: min(n, n_rows)].T)


def test_top_indices_by_blocks_of_columns(monkeypatch):
    """Columns taken a few at a time (blocks of 1, 2 and 7 columns here) give the stable argsort."""
    import pygbn.explore._terms as terms

    mat = np.random.default_rng(5).integers(0, 4, size=(50, 23)).astype(float)
    expected = np.argsort(-mat, axis=0, kind="stable")[:3].T
    for entries in (1, 100, 350):
        monkeypatch.setattr(terms, "_BLOCK_ENTRIES", entries)
        np.testing.assert_array_equal(top_indices_of_columns(mat, 3), expected)


def test_top_terms_of_a_large_layer_one_copy_no_phi():
    """top_term_indices(phis, 1) of a 64 MB Phi^(1) (V = 16000, K = 500) used to copy it
    three times (the projection's copy, its negated transpose, the partition of that: a
    192 MB peak; 2.3 GB for V = 100000 and K = 1000); now it reads Phi^(1) itself and
    sorts a few columns at a time."""
    import tracemalloc

    rng = np.random.default_rng(0)
    phi = rng.gamma(0.1, size=(16000, 500))
    phi /= phi.sum(axis=0)
    tracemalloc.start()
    try:
        top = ex.top_term_indices([phi], 1, 10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.75 * phi.nbytes, (peak, phi.nbytes)
    np.testing.assert_array_equal(top[:3], np.argsort(-phi[:, :3], axis=0, kind="stable")[:10].T)
    proj = ex.project([phi], 1)          # project still returns a copy the caller may change
    assert proj is not phi and not np.shares_memory(proj, phi)


# ---------------------------------------------------------------------------
# review fixes: tolerance shared with model files, tau, vocab, images
# ---------------------------------------------------------------------------


def test_column_sum_tolerance_takes_float32_precision():
    """The explorers take columns within 1e-4 of the simplex (a Phi made in float32); a
    Network renormalises them (tests/test_network_explore.py)."""
    phis, r = random_network(6, [3])
    off = phis[0].copy()
    off[:, 0] *= 1 + 2e-4
    with pytest.raises(ValueError, match="sum to 1"):
        ex.project([off], 1)
    near = phis[0].copy()
    near[:, 0] *= 1 + 2e-5
    ex.project([near], 1)


def test_tau_as_a_zero_dimensional_array():
    phis, r = hand_network()
    assert ex.tree(phis, r, 3, 0, tau=np.array(2.0)).tau == (2.0, 2.0, 2.0)
    assert ex.tree(phis, r, 3, 0, tau=np.array(2.0)) == ex.tree(phis, r, 3, 0, tau=2.0)
    with pytest.raises(ValueError, match="tau"):
        ex.tree(phis, r, 3, 0, tau=np.array(-1.0))


@pytest.mark.parametrize("vocab", [set(VOCAB6), frozenset(VOCAB6), {w: i for i, w in enumerate(VOCAB6)},
                                   np.array(VOCAB6).reshape(2, 3)])
def test_unordered_vocabularies_are_refused(vocab):
    phis, r = hand_network()
    with pytest.raises(ValueError, match="vocab must be"):
        ex.top_terms(phis, 1, vocab)
    # ordered ones are accepted
    assert ex.top_terms(phis, 1, tuple(VOCAB6)) == ex.top_terms(phis, 1, np.array(VOCAB6))


def test_integer_images_are_pixel_values(tmp_path):
    img = np.array([[0, 128, 255]])
    for dtype in (np.int64, np.int32, np.uint16, np.uint8):
        np.testing.assert_array_equal(decode_png(ex.encode_png(img.astype(dtype))), [[0, 128, 255]])
    path = ex.write_png(tmp_path / "i.png", img)
    np.testing.assert_array_equal(decode_png(open(path, "rb").read()), [[0, 128, 255]])
    assert ex.encode_svg_image(img).count("#808080") == 1
    for bad in (np.array([[0, 256]]), np.array([[-1, 3]])):
        with pytest.raises(ValueError, match="image .*0..255"):
            ex.encode_png(bad)
    # floats and bools are still scaled from [0, 1]
    np.testing.assert_array_equal(decode_png(ex.encode_png(np.array([[0.0, 1.0]]))), [[0, 255]])
    np.testing.assert_array_equal(decode_png(ex.encode_png(np.array([[False, True]]))), [[0, 255]])
    with pytest.raises(ValueError, match="image must hold numbers"):
        ex.encode_png(np.array([["a", "b"]]))


@pytest.mark.parametrize("nodes", [[], 3, np.int64(2), "ab", [1.5], [[0, 1]], [True]])
def test_factor_images_bad_nodes(nodes):
    phis, r = random_network(12, [5, 3], seed=6)
    with pytest.raises(ValueError, match="nodes must"):
        ex.factor_images(phis, 1, (3, 4), nodes=nodes)


def test_save_factor_grid_accepts_bytes_paths(tmp_path):
    phis, r = random_network(12, [5], seed=6)
    path = ex.save_factor_grid(phis, 1, (3, 4), bytes(tmp_path / "grid.png"))
    assert path == str(tmp_path / "grid.png")
    assert open(path, "rb").read().startswith(b"\x89PNG")
    svg = ex.save_factor_grid(phis, 1, (3, 4), bytes(tmp_path / "grid.svg"), nodes=[2, 0])
    ET.parse(svg)
    assert ex.write_png(bytes(tmp_path / "w.png"), np.zeros((2, 2))) == str(tmp_path / "w.png")


# ---------------------------------------------------------------------------
# line plots
# ---------------------------------------------------------------------------


def _numbers_in_attributes(svg):
    return [v for v in re.findall(r'="([^"]*)"', svg) if re.search(r"\b(nan|inf)\b", v)]


def test_line_plot_skips_points_with_a_non_finite_x():
    # the docstring says non-finite points are skipped: an x of inf (log of 0) or nan must not
    # turn the plot's range, and so every coordinate, into nan
    for bad in (np.inf, -np.inf, np.nan):
        svg = ex.line_plot_svg([{"label": "a", "x": [bad, 1.0, 2.0], "y": [5.0, 1.0, 2.0]}], "t", "x", "y")
        ET.fromstring(svg.split("\n", 1)[1])
        assert _numbers_in_attributes(svg) == []
        (poly,) = re.findall(r'<polyline points="([^"]*)"', svg)
        assert len(poly.split()) == 2                          # the point with the bad x is left out


def test_line_plot_colours_are_escaped():
    # a series' or a line's colour goes into attributes: a quote in it must not end them
    bad = 'red" onload="alert(1)'
    svg = ex.line_plot_svg([{"label": "a", "x": [0, 1], "y": [0, 1], "colour": bad}], "t", "x", "y",
                           hlines=[{"label": "h", "y": 0.5, "colour": bad + "<"}])
    root = ET.fromstring(svg.split("\n", 1)[1])
    strokes = {el.get("stroke") for el in root.iter() if el.get("stroke") not in (None, "black")}
    assert bad in strokes and bad + "<" in strokes
    assert all(el.get("onload") is None for el in root.iter())


def test_line_plot_of_values_one_float_apart_ends(tmp_path):
    # the ticks were a running sum v += step: with step below the spacing of the floats near
    # the values (a series constant up to rounding, such as the layer sums of eq:weight),
    # v never grew and line_plot_svg never returned; a subprocess so a hang fails the test
    # (run outside the checkout, with this process's pygbn first on the path: from a source
    # checkout's root "import pygbn" would find the unbuilt sources of an installed test run)
    code = ("import numpy as np; from pygbn import explore as ex; "
            "y = [1.0, float(np.nextafter(1.0, 2.0))]; "
            "ex.line_plot_svg([{'label': 'a', 'x': [0, 1], 'y': y}], 't', 'x', 'y'); print('done')")
    parent = str(Path(pygbn.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=parent + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env=env)
    assert res.returncode == 0 and res.stdout.strip() == "done", res.stderr


def _y_tick_labels(svg):
    return re.findall(r'text-anchor="end">([^<]*)</text>', svg)


def test_line_plot_ticks_of_tiny_narrow_and_huge_ranges():
    def plot(y):
        svg = ex.line_plot_svg([{"label": "a", "x": [0, 1], "y": y}], "t", "x", "y")
        ET.fromstring(svg.split("\n", 1)[1])
        return svg
    # ticks were rounded to 10 decimals: those of values near 1e-12 all became 0, labelled
    # "0" and drawn below the frame
    svg = plot([1e-12, 5e-12])
    assert _y_tick_labels(svg) == ["1e-12", "2e-12", "3e-12", "4e-12", "5e-12"]
    ys = [float(v) for v in re.findall(r'<line x1="70" y1="([^"]*)" x2="[^"]*" y2="[^"]*" stroke="#e5e5e5"', svg)]
    assert len(ys) == 5 and all(40 <= y <= 380 - 55 for y in ys)
    # a narrow range gets the digits that tell its ticks apart
    labels = _y_tick_labels(plot([-7.5123401, -7.5123403]))
    assert len(labels) >= 3 and len(set(labels)) == len(labels)
    assert [float(v) for v in labels] == sorted(float(v) for v in labels)
    # huge values: rounding a tick to 10 decimals overflowed (OverflowError)
    assert _y_tick_labels(plot([1e300, -1e300])) == ["-1e+300", "-5e+299", "0", "5e+299", "1e+300"]
    # usual ranges keep their labels
    assert _y_tick_labels(plot([0.0, 1.0])) == ["0", "0.2", "0.4", "0.6", "0.8", "1"]


def test_line_plot_checks_its_arguments():
    one = [{"label": "a", "x": [0.0, 1.0], "y": [1.0, 2.0]}]
    with pytest.raises(ValueError, match=r"series\[1\] \('b'\) has 3 x values but 2 y values"):
        ex.line_plot_svg(one + [{"label": "b", "x": [0, 1, 2], "y": [1, 2]}], "t", "x", "y")
    with pytest.raises(ValueError, match="width must be an int >= 241, got 200"):
        ex.line_plot_svg(one, "t", "x", "y", width=200)      # the plot area would have a negative width
    with pytest.raises(ValueError, match="height must be an int >= 96, got 90"):
        ex.line_plot_svg(one, "t", "x", "y", height=90)
    with pytest.raises(ValueError, match=r"hlines\[0\]\['y'\] must be finite"):
        ex.line_plot_svg(one, "t", "x", "y", hlines=[{"label": "h", "y": np.inf}])
    with pytest.raises(ValueError, match=r"vlines\[0\]\['x'\] must be finite"):
        ex.line_plot_svg(one, "t", "x", "y", vlines=[{"x": np.nan}])
    with pytest.raises(ValueError, match="xticks must be finite"):
        ex.line_plot_svg(one, "t", "x", "y", xticks=[0.0, np.nan])
    for ylim in ((np.nan, 1.0), (3.0, 1.0), (1.0,)):
        with pytest.raises(ValueError, match="ylim must be two finite numbers"):
            ex.line_plot_svg(one, "t", "x", "y", ylim=ylim)
    svg = ex.line_plot_svg(one, "t", "x", "y", width=241, height=96, ylim=(1.5, 1.5))
    ET.fromstring(svg.split("\n", 1)[1])
    assert _numbers_in_attributes(svg) == [] and not re.search(r'(width|height)="-', svg)


def test_trace_svg_arguments():
    ll, its = [[[-3.0, -2.5, -2.4]]], [[[1, 2, 3]]]
    assert ex.trace_svg(ll, its, warmup=np.float32(0.25)) == ex.trace_svg(ll, its, warmup=0.25)
    with pytest.raises(ValueError, match="width must be an int >= 241"):
        ex.trace_svg(ll, its, width=200)
    with pytest.raises(ValueError, match="at least one depth"):
        ex.trace_svg([[]], [[]])
    ET.fromstring(ex.trace_svg([[[-7.5]]], [[[10]]]).split("\n", 1)[1])   # one value: a flat range


def test_renderings_of_lone_surrogates_can_be_written_as_utf8(tmp_path):
    # a name decoded with errors="surrogateescape" (os.listdir of a latin-1 name on a UTF-8
    # system) holds a lone surrogate, which no UTF-8 file can hold; SVG dropped it, text and DOT
    # kept it, so writing them failed with UnicodeEncodeError
    vocab = [b"caf\xe9".decode("utf-8", "surrogateescape"), "b\ud800", "plain"]
    sub = ex.tree([np.full((3, 1), 1 / 3)], np.ones(1), 1, 0, vocab=vocab)
    for text in (sub.to_text(), sub.to_dot(graph_name="g\udcff"), sub.to_svg()):
        (tmp_path / "out").write_text(text, encoding="utf-8")
        assert "caf" in text
        assert "b\ud800" not in text and "caf\udce9" not in text
    _, nodes, _ = parse_dot(sub.to_dot(words_per_line=1))
    assert unescape_label(nodes["n1_0"]["label"])[1:] == ["caf", "b", "plain"]
    assert ex.clean_text("x\udce9y") == "xy"


def test_svg_boxes_are_wide_enough_for_wide_characters():
    # CJK ideographs and kana are about one em wide, not the 0.6 em of a Latin letter: the
    # boxes were 40% too narrow for them, so their text ran over the border into the next box
    phis, r = hand_network()
    vocab = ["数据库", "游戏", "字体", "カタカナ", "음악", "ｆｕｌｌ"]
    sub = ex.subnetwork(phis, r, [(3, 0), (3, 1)], tau=1.0, vocab=vocab, n_terms=6)
    root = ET.fromstring(sub.to_svg(words_per_line=3).encode("utf-8"))
    boxes = [g for g in root.iter(SVG_NS + "g") if (g.get("class") or "").startswith("node ")]
    assert len(boxes) == len(sub.nodes)
    for g in boxes:
        rect = g.find(SVG_NS + "rect")
        for text in g.iter(SVG_NS + "text"):
            if not text.text.isascii():
                ems = sum(1.0 if c != " " else 0.6 for c in text.text)
                assert float(rect.get("width")) >= ems * float(text.get("font-size")) + 12 - 0.1
    from pygbn.explore._layout import text_width
    assert text_width("e\u0301t\u00e9") == pytest.approx(3 * 0.6)     # a combining accent takes no room
    assert text_width("ab") == pytest.approx(1.2) and text_width("游戏") == pytest.approx(2.0)
