"""Exploring a fitted gamma belief network: projections, weights, trees, renderings.

Everything here works on the plain arrays of a fitted network (Zhou, Cong &
Chen, JMLR 17, 2016, Section 2.3 "Exploratory Data Analysis", with its
subsections 2.3.1 "Visualizing Nodes of Different Layers", 2.3.2 "Visualizing
Trees Rooted at the Top-Layer Hidden Units" and 2.3.3 "Visualizing Subnetworks
Consisting of Related Trees"; section numbers follow the paper's LaTeX source):

``phis``
    A list of the T connection-weight matrices.  ``phis[0]`` is
    :math:`\\Phi^{(1)}`, of shape ``(V, K_1)`` (V is the data dimension, e.g.
    the vocabulary size); ``phis[t-1]`` is :math:`\\Phi^{(t)}`, of shape
    ``(K_{t-1}, K_t)``.  Every column lies on the simplex (sums to one).
``r``
    The top layer's gamma shape vector, shape ``(K_T,)``.
``vocab``
    Optional sequence of V strings naming the data dimensions.

Layers are numbered as in the paper, ``t = 1..T`` (layer 1 is the one next to
the data); the nodes of a layer are the 0-based column indices of
:math:`\\Phi^{(t)}`.  The *rank* of a node is its 1-based position when the
nodes of its layer are sorted by weight :math:`r^{(t)}_k` (eq:weight) in
descending order; after :func:`relabel_by_popularity` node ``k`` has rank
``k + 1``, as in the paper's figures.

Functions
---------
project, projections
    :math:`\\prod_{\\ell \\le t} \\Phi^{(\\ell)}` (eq:projection).
node_weights, layer_weights
    :math:`r^{(t)} = [\\prod_{\\ell=t+1}^T \\Phi^{(\\ell)}] r` (eq:weight).
relabel_by_popularity
    Reorder every layer's nodes by weight (Section 2.3.1).
top_terms, top_term_indices, generated_top_terms
    The most probable data dimensions of each node or generated document.
tree, subnetwork
    Trees grown downward along edges with
    :math:`\\Phi^{(t)}(k', k) > \\tau_t / K_{t-1}` and unions of them.
render_text, render_dot, render_svg
    Indented text, Graphviz DOT and standalone SVG renderings of a
    :class:`Subnetwork`.
factor_images, image_grid, encode_png, write_png, encode_svg_image,
save_factor_grid
    The projected factors of a layer of an image model as one image grid.
trace_svg, line_plot_svg
    Standalone SVG line plots: the convergence traces of fits
    (``GBN.loglikelihoods_``), and any series.

The code lives in private modules, each importing only those above it here:
``_validate`` (argument checks), ``_weights`` (projections, weights),
``_terms`` (top terms), ``_nodes`` (:class:`Node`, :class:`Edge`, labels and
colours), ``_layout`` (the layered layout of :func:`render_svg`), ``_graph``
(:class:`Subnetwork` and its renderers), ``_plot`` (line plots), ``_trees`` (:func:`tree`,
:func:`subnetwork`), ``_encode`` (PNG and SVG encoders) and ``_images``
(image grids of projected factors).
"""
from pygbn.explore._encode import encode_png, encode_svg_image, write_png
from pygbn.explore._graph import Subnetwork, render_dot, render_svg, render_text
from pygbn.explore._images import factor_images, image_grid, save_factor_grid
from pygbn.explore._plot import line_plot_svg, trace_svg
from pygbn.explore._nodes import LAYER_COLOURS, Edge, Node, clean_text, layer_colour  # noqa: F401 (LAYER_COLOURS)
from pygbn.explore._terms import generated_top_terms, top_term_indices, top_terms
from pygbn.explore._terms import top_term_indices_by_layer  # noqa: F401 (for Network and the CLI)
from pygbn.explore._trees import TauLike, subnetwork, tree  # noqa: F401 (TauLike)
from pygbn.explore._weights import layer_weights, node_weights, project, projections, relabel_by_popularity

# LAYER_COLOURS and TauLike stay importable from here, as before the split,
# but are not part of __all__.
__all__ = [
    "project",
    "projections",
    "node_weights",
    "layer_weights",
    "relabel_by_popularity",
    "top_term_indices",
    "top_terms",
    "generated_top_terms",
    "layer_colour",
    "clean_text",
    "Node",
    "Edge",
    "Subnetwork",
    "tree",
    "subnetwork",
    "render_text",
    "render_dot",
    "render_svg",
    "factor_images",
    "image_grid",
    "encode_png",
    "write_png",
    "encode_svg_image",
    "save_factor_grid",
    "trace_svg",
    "line_plot_svg",
]
