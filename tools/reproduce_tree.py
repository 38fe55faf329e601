#!/usr/bin/env python
"""A tree and a subnetwork of a 5-layer PGBN on a text corpus (paper Section 4.1.4, Figures 5-8).

A PGBN with up to five layers is trained on the Debian package descriptions
(``--dataset debian``, the default; top-2000 vocabulary) or the Linux man
pages (``--dataset linux-manpages``), all tokens of each document; its nodes
are renumbered by popularity (eq:weight; node #1 is the most popular of its
layer), and

* the tree rooted at the most popular node of the top layer (``--root``) is
  grown along the edges with Phi^(t)(k', k) > tau / K_{t-1}, tau = 3 (the
  paper's choice);
* a subnetwork unites the trees of two related nodes (``--subnetwork``; by
  default the two among the ten most popular top-layer nodes whose
  projections to the vocabulary, eq:projection, are most similar by cosine),
  as in the paper's "car & bike" and "Middle East" subnetworks.

Both are written as standalone SVG (``pygbn``'s renderer, no Graphviz) and as
text, with the widths, the top words of every top-layer node and the
command, seed, schedule and wall time, to ``docs/results/<name>.md``.

Modes (``--mode``, default ``medium``; ``--quick`` is ``--mode quick``), Debian::

    full    all 33,821 documents, K1max = 100, B = (1000, 500), C = 500
    medium  10,000 random documents, K1max = 100, B = (300, 100), C = 100
    quick   2,000 random documents, K1max = 50, B = (60, 30), C = 30

The man pages keep all 2,533 documents in every mode, with the same widths
and schedules.  Output names default to ``tree_debian_<mode>`` and
``tree_manpages_<mode>``.

``--model PATH`` renders a model saved with ``GBN.save`` (e.g. by
``--save-models`` of the other scripts) instead of fitting one (give its
corpus with ``--dataset`` for the page's title).

Example::

    python tools/reproduce_tree.py --quick
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)
import _repro_common as rc  # noqa: E402

MODES = {
    "quick": dict(n_docs=2000, width=50, burn_in=(60, 30), collect=30),
    "medium": dict(n_docs=10000, width=100, burn_in=(300, 100), collect=100),
    "full": dict(n_docs=0, width=100, burn_in=(1000, 500), collect=500),
}


def parse_root(text: str, widths=None):
    """``(layer, node index)`` of ``LAYER:RANK``; with the network's ``widths``, checked against them."""
    try:
        layer, node = text.split(":")
        layer, node = int(layer), int(node) - 1
    except ValueError:
        raise SystemExit(f"error: a root is LAYER:RANK (e.g. 5:1 for the most popular node of layer 5), got {text!r}")
    if widths is not None:
        T = len(widths)
        if not 1 <= layer <= T:
            raise SystemExit(f"error: root {text!r}: the network has layers 1..{T}, not {layer} (LAYER:RANK)")
        if not 0 <= node < widths[layer - 1]:
            raise SystemExit(f"error: root {text!r}: layer {layer} has ranks 1..{widths[layer - 1]}, "
                             f"not {node + 1} (LAYER:RANK)")
    return layer, node


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", choices=sorted(rc.CORPORA), default="debian", help="the corpus (default: debian)")
    rc.add_mode_args(p, MODES, "medium")
    p.add_argument("--model", type=Path, help="render this saved GBN instead of fitting one")
    p.add_argument("--n-docs", type=int, help="random subset of documents (0: all)")
    p.add_argument("--width", type=int, help="K1max")
    p.add_argument("--layers", type=int, default=5)
    p.add_argument("--burn-in", type=int, nargs=2, metavar=("B1", "BT"))
    p.add_argument("--collect", type=int)
    p.add_argument("--eta", type=float, default=0.05)
    p.add_argument("--tau", type=float, default=3.0, help="edge threshold tau (paper: 3)")
    p.add_argument("--root", default=None, help="LAYER:RANK of the tree's root (default: top layer, rank 1)")
    p.add_argument("--subnetwork", default=None,
                   help="comma-separated LAYER:RANK roots of the subnetwork (default: automatic, see above)")
    p.add_argument("--seed", type=int, default=0)
    rc.add_run_args(p, "tree_debian_<mode>, tree_manpages_<mode> with --dataset linux-manpages, "
                       "tree_<model file stem> with --model")
    p.add_argument("--save-model", type=Path, default=None, help="save the fitted GBN here (.npz)")
    a = p.parse_args(argv)
    if a.quick:
        a.mode = "quick"
    for text in ([a.root] if a.root else []) + (a.subnetwork.split(",") if a.subnetwork else []):
        parse_root(text)  # the form now, before a fit; the ranges once the network is there
    if a.model is not None and not a.model.is_file():
        p.error(f"--model {a.model} not found")
    m = MODES[a.mode]
    if a.n_docs is None:
        a.n_docs = 0 if a.dataset == "linux-manpages" else m["n_docs"]
    a.width = m["width"] if a.width is None else a.width
    a.burn_in = tuple(m["burn_in"]) if a.burn_in is None else tuple(a.burn_in)
    a.collect = m["collect"] if a.collect is None else a.collect
    a.name = a.name or (f"tree_{rc.CORPORA[a.dataset]['stem']}_{a.mode}" if a.model is None
                        else f"tree_{a.model.stem}")
    a.data_dir = a.data_dir or rc.default_data_dir()
    return a


def related_pair(net, n_candidates: int = 10):
    """The two of the ``n_candidates`` most popular top-layer nodes with the most similar projections."""
    T = net.depth
    P = net.project(T)[:, :min(n_candidates, net.widths[-1])]
    P = P / np.linalg.norm(P, axis=0, keepdims=True)
    S = P.T @ P
    np.fill_diagonal(S, -np.inf)
    i, j = np.unravel_index(np.argmax(S), S.shape)
    return [(T, int(min(i, j))), (T, int(max(i, j)))], float(S[i, j])


def main(argv=None) -> int:
    a = parse_args(argv)
    rc.set_command(__file__, argv)
    import pygbn

    timer = rc.Timer()
    env = rc.environment()
    info = []
    if a.model is not None:
        model = pygbn.load(a.model)
        info.append(("model", f"loaded from `{a.model}`"))
        fit_s = None
    else:
        X, words, _, _ = rc.load_corpus(a.dataset, a.data_dir)
        idx = rc.subset_rows(X.shape[0], a.n_docs, a.seed)
        X = X[idx]
        print(f"[tree] fitting {X.shape[0]} docs, K1max={a.width}, T<={a.layers}, B={a.burn_in}, C={a.collect}",
              file=sys.stderr, flush=True)
        t = rc.Timer()
        model = pygbn.GBN(n_components=a.width, n_layers=a.layers, eta=a.eta, burn_in=a.burn_in,
                          n_collect=a.collect, method="collapsed", n_jobs=a.n_jobs, random_state=a.seed,
                          verbose=a.verbose)
        model.fit(X, vocabulary=words)
        fit_s = t.wall
        if a.save_model is not None:
            a.save_model.parent.mkdir(parents=True, exist_ok=True)
            model.save(a.save_model)
        subset = (f"all {X.shape[0]} documents" if len(idx) == X.shape[0] and not a.n_docs
                  else f"a random subset of {X.shape[0]} documents (seed {a.seed})")
        info += [("mode", a.mode), ("data", f"{rc.CORPORA[a.dataset]['describe']}, all tokens, {subset}"),
                 ("schedule", f"K1max = {a.width}, T_max = {a.layers}, B_1 = {a.burn_in[0]}, "
                              f"B_t = {a.burn_in[1]}, C_t = {a.collect}, eta = {a.eta}"),
                 ("seed", str(a.seed)), ("fit wall time", rc.fmt_seconds(fit_s)),
                 ("s/iteration at T=1..", ", ".join(f"{s:.3f}" for s in model.seconds_per_iteration_))]
        if a.mode != "full":
            info.append(("note", "a reduced run, NOT the paper's schedule (which is `--mode full`)"))
    net = model.network_.relabel_by_popularity()
    if net.vocabulary is None:
        sys.exit("error: the model has no vocabulary; fit it with vocabulary=...")
    T = net.depth
    root = parse_root(a.root, net.widths) if a.root else (T, 0)
    tree = net.tree(*root, tau=a.tau)
    if a.subnetwork:
        roots, sim = [parse_root(s, net.widths) for s in a.subnetwork.split(",")], None
    else:
        roots, sim = related_pair(net)
    sub = net.subnetwork(roots, tau=a.tau)
    out = a.out_dir
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{a.name}_tree.svg").write_text(tree.to_svg(), encoding="utf-8")
    (out / f"{a.name}_subnetwork.svg").write_text(sub.to_svg(), encoding="utf-8")
    info += [("inferred widths", str(net.widths)), ("tau", str(a.tau))]
    fmt_root = lambda k: f"L{k[0]} #{k[1] + 1}"  # noqa: E731
    corpus = {"debian": "the Debian corpus", "linux-manpages": "the Linux man pages"}[a.dataset]  # of --model too
    text = [rc.run_header(f"A tree and a subnetwork of a {T}-layer PGBN on {corpus}", env, timer.wall,
                          timer.cpu, info)]
    text += [f"## Tree rooted at {fmt_root(root)} (tau = {a.tau}): a {list(tree.layer_sizes)} tree", "",
             "Nodes per layer listed from the root's layer down. `L<t> #<rank>`: layer and popularity rank; `phi`: "
             "edge weight Phi^(t)(k', k) from the parent; `w`: node weight r^(t)_k (eq:weight).", "",
             f"![tree]({a.name}_tree.svg)", "", "```", tree.to_text(n_terms=8), "```", ""]
    how = (f"the two of the ten most popular top-layer nodes whose projections are most similar (cosine {sim:.2f})"
           if sim is not None else "chosen on the command line")
    text += [f"## Subnetwork of {', '.join(fmt_root(k) for k in roots)} ({how}): "
             f"a {list(sub.layer_sizes)} subnetwork", "",
             f"![subnetwork]({a.name}_subnetwork.svg)", "", "```", sub.to_text(n_terms=8), "```", ""]
    w = net.node_weights(T)
    terms = net.top_terms(T, 8)
    rows = [[f"L{T} #{k + 1}", f"{w[k]:.4g}", " ".join(terms[k])] for k in range(net.widths[-1])]
    text += [f"## All nodes of the top layer (layer {T}) by popularity", "",
             rc.md_table(["node", "weight", "top words (projection to the vocabulary)"], rows), ""]
    (out / f"{a.name}.md").write_text("\n".join(text), encoding="utf-8")
    rc.write_json(out / f"{a.name}.json", {
        "script": "reproduce_tree", "command": rc.command_line(), "mode": a.mode, "seed": a.seed,
        "dataset": a.dataset,
        "widths": net.widths, "root": [root[0], root[1] + 1], "tree_layer_sizes": list(tree.layer_sizes),
        "subnetwork_roots": [[k[0], k[1] + 1] for k in roots], "subnetwork_layer_sizes": list(sub.layer_sizes),
        "fit_wall_s": fit_s, "wall_s": timer.wall, "environment": env})
    print(f"[tree] widths {net.widths}; tree {list(tree.layer_sizes)}, subnetwork {list(sub.layer_sizes)}; "
          f"wrote {out / (a.name + '.md')} ({rc.fmt_seconds(timer.wall)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
