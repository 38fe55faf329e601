#!/usr/bin/env python
"""Topic quality per layer and convergence traces of 5-layer PGBNs on a text corpus.

Fits a PGBN with up to five layers (the schedule of ``tools/reproduce_tree.py``)
with several seeds on the Debian package descriptions (``--dataset debian``)
or the Linux man pages (``--dataset linux-manpages``), all tokens of each
document, and writes ``docs/results/<name>.md`` with

* per layer, the coherence of the projected topics (eq:projection; each node's
  top-10 terms) by C_V, NPMI, UCI and UMass on the training counts (document
  co-occurrence, :func:`pygbn.evaluation.coherence`) and the topic diversity
  (share of unique terms among the layer's top-25 terms), mean over the seeds;
* the three most popular nodes of each layer of the first seed's network with
  their C_V;
* the convergence traces (training log-likelihood per token every
  ``--trace-every`` iterations, ``GBN.loglikelihoods_``) as an SVG plot, and
  per depth the split-R-hat and effective sample size over the seeds
  (:func:`pygbn.evaluation.trace_diagnostics`, second half of each stage).

Modes as ``tools/reproduce_tree.py`` (``--mode medium`` by default).
``--model PATH ...`` reads saved models (``--save-models DIR`` writes them)
instead of fitting; the reference corpus of the coherence is then read again
from the data (the mode's subset, drawn with the first of ``--seeds``), and
the page gives the schedule and seed each model was fitted with (its saved
parameters), not the mode's.

Example::

    python tools/reproduce_quality.py --quick --seeds 0 1
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)
import _repro_common as rc  # noqa: E402
from reproduce_tree import MODES  # noqa: E402

MEASURES = ("c_v", "c_npmi", "c_uci", "u_mass")


def mean_se(values) -> str:
    """``m ± se`` of ``values`` to three decimals (``m`` alone for one value)."""
    m, se, n = rc.mean_se(values)
    return f"{m:.3f} ± {se:.3f}" if n > 1 else f"{m:.3f}"


def need_file(path: Path) -> Path:
    if not path.is_file():
        raise SystemExit(f"error: model {path} not found")
    return path


def model_schedule(g) -> str:
    """The schedule a loaded GBN was fitted with, from its saved parameters."""
    p = g.get_params()
    return (f"K1max = {p['n_components']}, T_max = {p['n_layers']}, burn_in = {p['burn_in']}, "
            f"n_collect = {p['n_collect']}, eta = {p['eta']}, trace_every = {p['trace_every']}, "
            f"layer one {getattr(g, 'method_', p['method'])}")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", choices=sorted(rc.CORPORA), default="debian", help="the corpus (default: debian)")
    rc.add_mode_args(p, MODES, "medium")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                   help="one fit per seed (default: 0 1 2); with --model the first draws the reference subset")
    p.add_argument("--layers", type=int, default=5, help="T_max of the fits (default: 5; not with --model)")
    p.add_argument("--trace-every", type=int, default=5, help="(default: 5; not with --model)")
    p.add_argument("--model", type=Path, nargs="+", help="read these saved GBNs instead of fitting")
    p.add_argument("--save-models", type=Path, default=None, help="save each fitted GBN in this folder")
    rc.add_run_args(p, "quality_debian_<mode>, quality_manpages_<mode> with --dataset linux-manpages")
    a = p.parse_args(argv)
    if a.quick:
        a.mode = "quick"
    m = MODES[a.mode]
    a.n_docs = 0 if a.dataset == "linux-manpages" else m["n_docs"]
    a.width, a.burn_in, a.collect = m["width"], tuple(m["burn_in"]), m["collect"]
    a.name = a.name or f"quality_{rc.CORPORA[a.dataset]['stem']}_{a.mode}"
    a.data_dir = a.data_dir or rc.default_data_dir()
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    rc.set_command(__file__, argv)
    import pygbn
    from pygbn.evaluation import trace_diagnostics

    timer = rc.Timer()
    env = rc.environment()
    X, words, _, _ = rc.load_corpus(a.dataset, a.data_dir)
    seed0 = a.seeds[0]
    X = X[rc.subset_rows(X.shape[0], a.n_docs, seed0)]     # the same documents for every seed
    fits, fit_s = [], []
    if a.model:
        fits = [pygbn.load(need_file(path)) for path in a.model]
        for path, g in zip(a.model, fits):
            if g.n_features_in_ != X.shape[1]:
                raise SystemExit(f"error: {path} was fitted on {g.n_features_in_} terms, the {a.dataset} "
                                 f"corpus has {X.shape[1]} (give its corpus with --dataset)")
    else:
        for seed in a.seeds:
            print(f"[quality] seed {seed}: fitting {X.shape[0]} docs, K1max={a.width}, T<={a.layers}, "
                  f"B={a.burn_in}, C={a.collect}", file=sys.stderr, flush=True)
            t = rc.Timer()
            g = pygbn.GBN(n_components=a.width, n_layers=a.layers, burn_in=a.burn_in, n_collect=a.collect,
                          method="collapsed", n_jobs=a.n_jobs, random_state=seed, verbose=a.verbose, trace_every=a.trace_every)
            fits.append(g.fit(X, vocabulary=words))
            fit_s.append(t.wall)
            if a.save_models is not None:
                a.save_models.mkdir(parents=True, exist_ok=True)
                g.save(a.save_models / f"{a.name}_seed{seed}.npz")
    nets = [g.network_.relabel_by_popularity() for g in fits]
    T = min(n.depth for n in nets)
    quality = []        # per seed, per layer: {measure: mean over nodes}, diversity
    for net in nets:
        per = {m: [float(v.mean()) for v in net.coherence(X, measure=m)] for m in MEASURES}
        quality.append({"coherence": per, "diversity": net.diversity(), "widths": net.widths})
    subset = (f"all {X.shape[0]} documents" if not a.n_docs
              else f"a random subset of {X.shape[0]} documents (seed {seed0})")
    data = f"{rc.CORPORA[a.dataset]['describe']}, all tokens, {subset}"
    if not a.model:
        seeds = list(a.seeds)
        info = [("mode", a.mode), ("data", data),
                ("schedule", f"K1max = {a.width}, T_max = {a.layers}, B_1 = {a.burn_in[0]}, B_t = {a.burn_in[1]}, "
                             f"C_t = {a.collect}, eta = 0.05, trace_every = {fits[0].trace_every}"),
                ("seeds", " ".join(map(str, seeds)))]
    else:  # what the models say of themselves: their saved parameters, not this mode's
        seeds = [g.random_state if isinstance(g.random_state, (int, np.integer)) else None for g in fits]
        scheds = [model_schedule(g) for g in fits]
        info = [("models", "<br>".join(f"`{path}`" for path in a.model)),
                ("reference corpus", f"{data} (`--mode {a.mode}`; the coherence's co-occurrence counts)"),
                ("schedule", scheds[0] if len(set(scheds)) == 1
                 else "<br>".join(f"{path.stem}: {sc}" for path, sc in zip(a.model, scheds))),
                ("seeds", " ".join("not stored" if sd is None else str(sd) for sd in seeds))]
    info.append(("inferred widths", "; ".join(str(n.widths) for n in nets)))
    if fit_s:
        info.append(("fit wall time per seed", ", ".join(rc.fmt_seconds(s) for s in fit_s)))
    if a.mode != "full" and not a.model:
        info.append(("note", "a reduced run, NOT the paper's schedule (which is `--mode full`)"))
    title = {"debian": "the Debian corpus", "linux-manpages": "the Linux man pages"}[a.dataset]
    text = [rc.run_header(f"Topic quality per layer and convergence of {T}-layer PGBNs on {title}", env,
                          timer.wall, timer.cpu, info)]
    rows = []
    for t in range(1, T + 1):
        cells = [f"{t}", " / ".join(str(q["widths"][t - 1]) for q in quality)]
        for m in MEASURES:
            cells.append(mean_se([q["coherence"][m][t - 1] for q in quality]))
        cells.append(mean_se([q["diversity"][t - 1] for q in quality]))
        rows.append(cells)
    text += ["## Coherence and diversity of the projected topics of each layer", "",
             f"Each node's topic is the top 10 terms of its projection Phi^(1)...Phi^(t) (eq:projection); "
             f"coherence is the mean over the layer's nodes, on the training counts ({X.shape[0]} documents, "
             "document co-occurrence; `pygbn.evaluation.coherence`, the definitions of gensim's "
             "CoherenceModel), diversity the share of unique terms among the layer's top-25 terms. "
             f"Mean ± standard error over the {len(fits)} seeds.", "",
             rc.md_table(["layer", "width (per seed)", *MEASURES, "diversity (top 25)"], rows), ""]
    net = nets[0]
    ex = []
    for t in range(1, T + 1):
        cv = net.coherence(X, layer=t, measure="c_v")
        terms = net.top_terms(t, 8)
        ex += [[f"L{t} #{k + 1}", f"{cv[k]:.3f}", " ".join(terms[k])] for k in range(min(3, net.widths[t - 1]))]
    text += ["### The three most popular nodes of each layer (first seed)", "",
             rc.md_table(["node", "C_V", "top words"], ex), ""]
    svg = pygbn.explore.trace_svg([g.loglikelihoods_ for g in fits], [g.trace_iterations_ for g in fits],
                                  labels=[f"seed {s}" for s in seeds] if not a.model else
                                  [path.stem for path in a.model])
    a.out_dir.mkdir(parents=True, exist_ok=True)
    (a.out_dir / f"{a.name}_trace.svg").write_text(svg, encoding="utf-8")
    diag, drows = [], []
    for t in range(1, T + 1):
        d = trace_diagnostics(fits, depth=t) if len(fits) > 1 else None
        diag.append(d)
        last = [float(np.mean(g.loglikelihoods_[t - 1][len(g.loglikelihoods_[t - 1]) // 2:])) for g in fits]
        drows.append([f"{t}", " / ".join(f"{v:.4f}" for v in last),
                      "" if d is None else f"{d['rhat']:.3f}", "" if d is None else f"{d['ess']:.0f} of "
                      f"{d['n_chains'] * d['n_draws']}"])
    text += ["## Convergence traces", "",
             "Training log-likelihood per token of the observed data at every traced iteration "
             "(`GBN.loglikelihoods_`; theta^(1) at its conditional mean, Phi^(1) at its posterior mean), "
             "the depths' stages one after another. R-hat (split) and ESS compare the seeds within one "
             "depth's stage, on the second half of its traced values.", "",
             f"![traces]({a.name}_trace.svg)", "",
             rc.md_table(["depth", "mean of the second half, per seed", "split-R-hat", "ESS"], drows), ""]
    (a.out_dir / f"{a.name}.md").write_text("\n".join(text), encoding="utf-8")
    rc.write_json(a.out_dir / f"{a.name}.json", {
        "script": "reproduce_quality", "command": rc.command_line(), "mode": a.mode, "seeds": seeds,
        **({"models": [str(path) for path in a.model], "schedules": scheds} if a.model else {}),
        "dataset": a.dataset, "n_docs": int(X.shape[0]), "quality": quality,
        "loglikelihoods": [g.loglikelihoods_ for g in fits], "trace_iterations": [g.trace_iterations_ for g in fits],
        "diagnostics": diag, "fit_wall_s": fit_s, "wall_s": timer.wall, "environment": env})
    print(f"[quality] wrote {a.out_dir / (a.name + '.md')} ({rc.fmt_seconds(timer.wall)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
