"""Network's exploration methods: thin delegates to pygbn.explore (paper Section 2.3)."""
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import scipy.sparse as sp

import pygbn
from pygbn import explore as ex
from pygbn.model import Layer, Network, PoissonRandomizedGammaLink


def make_network(V=12, widths=(6, 4, 3), seed=0, vocab=True, link="poisson"):
    rng = np.random.default_rng(seed)
    dims = [V, *widths]
    layers = [Layer(phi=rng.dirichlet(np.full(dims[t], 0.5), size=dims[t + 1]).T, eta=0.05 * (t + 1),
                    c_median=1.0 + t)
              for t in range(len(widths))]
    r = rng.gamma(1.0, 1.0, size=widths[-1])
    words = [f"w{v:02d}" for v in range(V)] if vocab else None
    return Network(layers=layers, r=r, gamma0=2.5, c0=0.7, link=link, vocabulary=words)


def test_package_exports_submodules():
    assert pygbn.explore is ex
    assert pygbn.text.CountVectorizer is not None
    assert callable(pygbn.datasets.load_demo)
    for name in ("explore", "text", "datasets"):
        assert name in pygbn.__all__


def test_projections_and_weights_delegate():
    net = make_network()
    for t in (1, 2, 3):
        np.testing.assert_array_equal(net.project(t), ex.project(net.phis, t))
        np.testing.assert_array_equal(net.node_weights(t), ex.node_weights(net.phis, net.r, t))
        np.testing.assert_array_equal(net.top_term_indices(t, 4), ex.top_term_indices(net.phis, t, 4))
    for a, b in zip(net.projections(), ex.projections(net.phis)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(net.layer_weights(), ex.layer_weights(net.phis, net.r)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(net.node_weights(3), net.r)
    with pytest.raises(ValueError, match="t must be"):
        net.project(4)
    with pytest.raises(ValueError, match="t must be"):
        net.node_weights(0)


def test_top_terms_default_to_the_network_vocabulary():
    net = make_network()
    assert net.top_terms(2, n=3) == ex.top_terms(net.phis, 2, net.vocabulary, n=3)
    other = [w.upper() for w in net.vocabulary]
    assert net.top_terms(1, n=2, vocab=other) == ex.top_terms(net.phis, 1, other, n=2)
    bare = make_network(vocab=False)
    with pytest.raises(ValueError, match="vocab must be given"):
        bare.top_terms(1)
    with pytest.raises(ValueError, match="vocab must hold 12 terms"):
        net.top_terms(1, vocab=["a", "b"])


def test_relabel_by_popularity_returns_a_new_network():
    link = PoissonRandomizedGammaLink(a_median=3.5)
    net = make_network(seed=3, link=link)
    before = [p.copy() for p in net.phis]
    new, perms = net.relabel_by_popularity(return_perms=True)
    assert isinstance(new, Network) and new is not net
    for p, q in zip(before, net.phis):  # the original is untouched
        np.testing.assert_array_equal(p, q)
    for t in (1, 2, 3):
        w = new.node_weights(t)
        assert np.all(np.diff(w) <= 1e-12)
        np.testing.assert_allclose(w, net.node_weights(t)[perms[t - 1]], rtol=1e-12)
        np.testing.assert_allclose(new.project(t), net.project(t)[:, perms[t - 1]], rtol=1e-12)
    np.testing.assert_allclose(new.project(3) @ new.r, net.project(3) @ net.r, rtol=1e-12)
    assert [l.eta for l in new.layers] == [l.eta for l in net.layers]
    assert [l.c_median for l in new.layers] == [l.c_median for l in net.layers]
    assert (new.gamma0, new.c0, new.hyper) == (net.gamma0, net.c0, net.hyper)
    assert new.link == net.link and new.link is not net.link and new.link.a_median == 3.5
    assert new.vocabulary == net.vocabulary
    again = new.relabel_by_popularity()
    for p, q in zip(again.phis, new.phis):
        np.testing.assert_array_equal(p, q)
    assert isinstance(net.relabel_by_popularity(), Network)


def test_relabelled_network_saves_and_loads(tmp_path):
    new = make_network(seed=4).relabel_by_popularity()
    path = tmp_path / "net.npz"
    pygbn.save(new, path)
    back = pygbn.load(path)
    for p, q in zip(back.phis, new.phis):
        np.testing.assert_array_equal(p, q)
    assert back.vocabulary == new.vocabulary


def test_tree_and_subnetwork_delegate():
    net = make_network(seed=5).relabel_by_popularity()
    t = net.tree(3, 0, tau=1.0, n_terms=5)
    assert t == ex.tree(net.phis, net.r, 3, 0, tau=1.0, vocab=net.vocabulary, n_terms=5)
    assert t.nodes[0].key == (3, 0) and t.nodes[0].rank == 1
    assert all(nd.rank == nd.index + 1 for nd in t.nodes)
    s = net.subnetwork([(3, 0), (2, 1)], tau={3: 1.0, 2: 2.0})
    assert s == ex.subnetwork(net.phis, net.r, [(3, 0), (2, 1)], tau={3: 1.0, 2: 2.0},
                              vocab=net.vocabulary)
    # renderings work from the returned object
    assert t.to_text().startswith("L3 #1")
    assert t.to_dot().startswith("digraph")
    ET.fromstring(t.to_svg().encode("utf-8"))
    # without a vocabulary, nodes carry the indices of their top dimensions
    bare = make_network(seed=5, vocab=False)
    tb = bare.tree(1, 0, n_terms=3)
    assert tb.nodes[0].top_terms == tuple(str(i) for i in tb.nodes[0].top_term_indices)
    with pytest.raises(ValueError, match="node"):
        net.tree(3, 99)


def test_generate_top_terms():
    net = make_network(V=30, widths=(5, 3), seed=6)
    got = net.generate_top_terms(7, n=4, random_state=11)
    X = net.generate(7, random_state=11)
    assert got == ex.generated_top_terms(X, net.vocabulary, n=4)
    assert len(got) == 7 and all(len(doc) <= 4 for doc in got)
    with pytest.raises(ValueError, match="vocab must be given"):
        make_network(vocab=False).generate_top_terms(2)


def test_save_factor_grid(tmp_path):
    net = make_network(V=16, widths=(4, 2), seed=7, vocab=False)
    path = net.save_factor_grid(2, (4, 4), tmp_path / "layer2.png", scale=2)
    data = open(path, "rb").read()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    svg = net.save_factor_grid(1, (4, 4), tmp_path / "layer1.svg")
    ET.parse(svg)


def test_methods_on_a_fitted_network():
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.poisson(0.8, size=(40, 15)))
    vocab = [f"term{v}" for v in range(15)]
    model = pygbn.GBN(n_components=6, n_layers=2, burn_in=(5, 3), n_collect=3, random_state=0)
    model.fit(X, vocabulary=vocab)
    net = model.network_
    rel = net.relabel_by_popularity()
    assert rel.widths == net.widths and rel.vocabulary == vocab
    top = rel.top_terms(net.depth, n=3)
    assert len(top) == net.widths[-1] and all(w in vocab for row in top for w in row)
    sub = rel.tree(net.depth, 0, tau=0.0, n_terms=3)
    assert sub.layer_sizes[0] == net.widths[0]  # tau = 0 keeps every edge with phi > 0
