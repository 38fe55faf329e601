#!/usr/bin/env python
"""Held-out perplexity versus network depth and first-layer width (paper Figures 12-13).

The paper's protocol (Section 4.1.3) on a text corpus (``--dataset``): the
Debian package descriptions with their top-2000 vocabulary
(``debian``, the default; ``shared/data/debian-descriptions``; short
documents, median 29 tokens) or the Linux man pages (``linux-manpages``;
``shared/data/linux-manpages``; 2,533 long documents, median 250 tokens):

* per document, ``round(0.3 n_j)`` of its tokens (at least one;
  ``--train-fraction``, default 0.3) train the model and the rest are held
  out (:func:`pygbn.split_tokens`);
* for each ``K1max`` in ``--widths`` one PGBN is trained layer-wise
  (Algorithm 1) up to ``--layers`` layers with ``eta = 0.05``, ``B_1``
  burn-in iterations for layer one and ``B_t`` for the later layers, each
  followed by ``C_t`` more iterations;
* at every depth, one sample per five iterations of the ``C_t`` collection
  iterations draws Phi^(1) and theta^(1); the per-held-out-word perplexity
  of that depth is ``exp(-sum y ln(sum_s rate_s / sum_s norm_s) / sum y)``
  (``GBN.fit(..., heldout=...)``, ``perplexity_``).

An LDA baseline at the same K (tomotopy, when installed; ``--no-lda`` to
skip) is trained on the same 30% tokens with alpha = 0.1, eta = 0.01
(tomotopy's hyper-parameter optimisation switched off), ``B_1`` burn-in
iterations and ``C_1`` more, and evaluated the same way: every 5th
collection iteration, Phi ~ Dirichlet(eta + n_kv) and theta_j ~
Dirichlet(alpha + n_jk) are drawn from the current topic assignments
and their products on the held-out cells
are averaged before taking logs (over all V terms).

``--control`` adds a single-layer PGBN run for as many iterations as the
deepest layer-wise run took in total (``B_1 + C_1 + sum_t (B_t + C_t)``):
layer one of a deep network keeps being sampled while upper layers are
added, so with short chains part of the gain of depth could just be a
longer chain; the control separates the two.

Modes (``--mode``, default ``full``; ``--quick`` is ``--mode quick``), Debian::

    full    all 33,821 documents, K1max in {25, 50, 100, 200}, T = 1..5,
            B = (1000, 500), C = 500 (the paper's schedule; many hours on one core)
    medium  8,000 random documents, the same widths and depths,
            B = (400, 150), C = 150 (about an hour on one core)
    quick   2,000 random documents, K1max in {25, 50}, T = 1..3,
            B = (60, 30), C = 30 (a few minutes)

Linux man pages (all 2,533 documents in every mode)::

    full    K1max in {25, 50, 100, 200, 400}, T = 1..5, B = (1000, 500),
            C = 500 (the paper's schedule; one process per width and seed,
            see tools/device_manpages.sh)
    medium  K1max in {25, 100}, T = 1..5, B = (400, 200), C = 200
            (about 25 min on one core with --control and LDA)
    quick   K1max in {25, 50}, T = 1..3, B = (60, 30), C = 30 (a few minutes)

``--control-only`` fits only the single-layer control (for the total
number of iterations of the layer-wise schedule given by ``--layers``,
``--burn-in`` and ``--collect``) and the LDA baseline, in a record marked
``control_of`` that ``--merge`` and ``perplexity_spread.py`` attach to the
layer-wise run of the same seed and K1max: a width's layer-wise fit and its
control can then run as two processes side by side.  While a run is going,
``<name>.partial.json`` holds every finished width and every finished depth
of the width in progress (depth values as pygbn logs them: perplexity to two
decimals); it is removed when the run ends, and kept if the process is
killed, for ``--merge`` and ``perplexity_spread.py`` to use.

Every option below overrides the mode's value (``--method blocked`` samples
layer one with the blocked sampler instead of the paper's collapsed one;
``--from-json RECORD`` rewrites a finished run's page and plots, beside the
record under its stem unless ``--out-dir`` or ``--name`` is given).  Results
go to ``docs/results/<name>.{md,json,svg}`` (``--out-dir``; ``--name``
defaults to ``perplexity_<mode>``, ``perplexity_manpages_<mode>`` for the
man pages).
Run one process at a time (``--n-jobs 1``) when timing matters.

Example::

    python tools/reproduce_perplexity.py --quick
    python tools/reproduce_perplexity.py --dataset linux-manpages --quick
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)
import _repro_common as rc  # noqa: E402

MODES = {  # the Debian descriptions
    "quick": dict(n_docs=2000, widths="25,50", layers=3, burn_in=(60, 30), collect=30),
    "medium": dict(n_docs=8000, widths="25,50,100,200", layers=5, burn_in=(400, 150), collect=150),
    "full": dict(n_docs=0, widths="25,50,100,200", layers=5, burn_in=(1000, 500), collect=500),
}
MANPAGES_MODES = {  # the Linux man pages: few, long documents, so every mode keeps all of them
    "quick": dict(n_docs=0, widths="25,50", layers=3, burn_in=(60, 30), collect=30),
    "medium": dict(n_docs=0, widths="25,100", layers=5, burn_in=(400, 200), collect=200),
    "full": dict(n_docs=0, widths="25,50,100,200,400", layers=5, burn_in=(1000, 500), collect=500),
}
DATASET_MODES = {"debian": MODES, "linux-manpages": MANPAGES_MODES}


def schedule_iterations(depth: int, burn_in, collect: int) -> int:
    """Training iterations of a layer-wise fit up to ``depth``: ``B_1 + C + (depth - 1) (B_t + C)``."""
    return (burn_in[0] + collect) + (depth - 1) * (burn_in[1] + collect)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", choices=sorted(DATASET_MODES), default="debian",
                   help="the corpus (default: debian)")
    rc.add_mode_args(p, MODES, "full")
    p.add_argument("--n-docs", type=int, help="random subset of documents (0: all)")
    p.add_argument("--widths", help="comma-separated K1max values")
    p.add_argument("--layers", type=int, help="maximum depth T_max")
    p.add_argument("--burn-in", type=int, nargs=2, metavar=("B1", "BT"),
                   help="burn-in of layer one and of later layers")
    p.add_argument("--collect", type=int, help="collection iterations C_t at every depth")
    p.add_argument("--eta", type=float, default=0.05)
    p.add_argument("--train-fraction", type=float, default=0.3)
    p.add_argument("--method", choices=("collapsed", "blocked", "partial"), default="collapsed",
                   help="layer-one sampler (the paper's: collapsed)")
    p.add_argument("--seed", type=int, default=0, help="seed of the subset, the split and every chain")
    p.add_argument("--chain-seed", type=int, default=None,
                   help="seed of the chains (GBN and LDA) alone, the subset and split still from --seed "
                        "(default: --seed); several chain seeds on one split measure the chains' own spread")
    p.add_argument("--no-lda", action="store_true", help="skip the LDA baseline")
    p.add_argument("--lda-alpha", type=float, default=0.1)
    p.add_argument("--lda-eta", type=float, default=0.01)
    p.add_argument("--control", action="store_true",
                   help="also run T=1 for as many iterations as the deepest layer-wise run")
    p.add_argument("--control-only", action="store_true",
                   help="run only the T=1 control for the whole layer-wise schedule (and LDA), "
                        "to be merged with the layer-wise run made separately")
    rc.add_run_args(p, "perplexity_<mode>, perplexity_manpages_<mode> with --dataset linux-manpages",
                    from_json=True)
    p.add_argument("--save-models", type=Path, default=None, help="folder to save each fitted GBN (.npz)")
    p.add_argument("--merge", type=Path, nargs="+", default=None, metavar="RECORD",
                   help="combine the records of runs made separately (same data, seed and schedule; "
                        "e.g. one width per process) into one page named --name; no fitting")
    p.add_argument("--control-from", type=Path, nargs="+", default=None, metavar="RECORD",
                   help="with --merge: records of single-layer runs (--layers 1 with a longer burn-in) "
                        "to show as the control of the run with the same K1max (--control-only records "
                        "may simply be listed with --merge)")
    a = p.parse_args(argv)
    if a.quick:
        a.mode = "quick"
    m = DATASET_MODES[a.dataset][a.mode]
    a.n_docs = m["n_docs"] if a.n_docs is None else a.n_docs
    a.chain_seed = a.seed if a.chain_seed is None else a.chain_seed
    a.widths = rc.parse_ints(a.widths if a.widths is not None else m["widths"], "--widths")
    a.layers = m["layers"] if a.layers is None else a.layers
    a.burn_in = tuple(m["burn_in"]) if a.burn_in is None else tuple(a.burn_in)
    a.collect = m["collect"] if a.collect is None else a.collect
    stem = "" if a.dataset == "debian" else rc.CORPORA[a.dataset]["stem"] + "_"
    rc.resolve_outputs(a, f"perplexity_{stem}{a.mode}")
    a.data_dir = a.data_dir or rc.default_data_dir()
    if a.layers < 1 or min(a.burn_in) < 1 or a.collect < 5:
        p.error("--layers and --burn-in must be >= 1 and --collect >= 5 (one sample per 5 iterations)")
    if a.control_only and a.control:
        p.error("--control-only and --control exclude each other")
    if a.from_json is not None and a.merge is not None:
        p.error("--from-json and --merge exclude each other")
    return a


# ----------------------------------------------------------------- LDA
def lda_perplexity(X_obs, X_held, K: int, alpha: float, eta: float, burn: int, collect: int,
                   seed: int, every: int = 5):
    """Held-out perplexity of tomotopy's collapsed-Gibbs LDA with averaged samples.

    Returns ``(perplexity, n_samples, seconds_per_iteration)``.
    """
    import time

    import tomotopy as tp

    J, V = X_obs.shape
    mdl = tp.LDAModel(k=K, alpha=alpha, eta=eta, seed=int(seed))
    mdl.optim_interval = 0  # keep alpha fixed, as in the comparison protocol
    doc_of = []
    for j in range(J):
        lo, hi = X_obs.indptr[j], X_obs.indptr[j + 1]
        toks = np.repeat(X_obs.indices[lo:hi], X_obs.data[lo:hi])
        if toks.size:
            mdl.add_doc([f"w{v}" for v in toks])
            doc_of.append(j)
    doc_of = np.asarray(doc_of)
    t0 = time.perf_counter()
    mdl.train(burn, workers=1)
    vocab_map = np.array([int(w[1:]) for w in mdl.used_vocabs])  # tomotopy word id -> our column
    rng = np.random.default_rng([seed, K, 7])
    rows = np.repeat(np.arange(J), np.diff(X_held.indptr))
    cols = X_held.indices
    y = X_held.data.astype(np.float64)
    rate = np.zeros(y.size)
    n_s = 0
    n_iter = burn
    docs = list(mdl.docs)
    tok_doc = np.concatenate([np.full(len(d.words), j) for d, j in zip(docs, doc_of)])
    tok_word = vocab_map[np.concatenate([np.asarray(d.words) for d in docs])]
    for _ in range(collect // every):
        mdl.train(every, workers=1)
        n_iter += every
        z = np.concatenate([np.asarray(d.topics) for d in docs]).astype(np.int64)
        n_jk = np.bincount(tok_doc * K + z, minlength=J * K).reshape(J, K).astype(np.float64)
        n_kv = np.bincount(z * V + tok_word, minlength=K * V).reshape(K, V).astype(np.float64)
        phi = rng.standard_gamma(eta + n_kv)
        phi /= phi.sum(axis=1, keepdims=True)
        theta = rng.standard_gamma(alpha + n_jk)
        theta /= theta.sum(axis=1, keepdims=True)
        phiT = np.ascontiguousarray(phi.T)
        for lo in range(0, y.size, 100_000):
            sl = slice(lo, lo + 100_000)
            rate[sl] += np.einsum("nk,nk->n", theta[rows[sl]], phiT[cols[sl]])
        n_s += 1
    secs = (time.perf_counter() - t0) / max(n_iter, 1)
    return float(np.exp(-np.sum(y * np.log(rate / n_s)) / y.sum())), n_s, secs


# ----------------------------------------------------------------- main
def main(argv=None) -> int:
    a = parse_args(argv)
    rc.set_command(__file__, argv)
    if a.from_json is not None:
        rec = rc.read_record(a.from_json, "reproduce_perplexity")
        write_report(rec, a.out_dir, a.name, None)
        print(f"[perplexity] wrote {a.out_dir / (a.name + '.md')}", file=sys.stderr)
        return 0
    if a.merge is not None:
        rec = merge_records(a.merge, a.control_from or ())
        rc.write_json(a.out_dir / f"{a.name}.json", rec)
        write_report(rec, a.out_dir, a.name, None)
        print(f"[perplexity] wrote {a.out_dir / (a.name + '.md')}", file=sys.stderr)
        return 0
    if a.control_from is not None:
        raise SystemExit("error: --control-from needs --merge")
    import pygbn

    timer = rc.Timer()
    env = rc.environment()
    X, words, _, _ = rc.load_corpus(a.dataset, a.data_dir)
    n_corpus = int(X.shape[0])
    idx = rc.subset_rows(n_corpus, a.n_docs, a.seed)
    X = X[idx]
    X_obs, X_held = pygbn.split_tokens(X, train_fraction=a.train_fraction, random_state=a.seed)
    n_obs, n_held = int(X_obs.sum()), int(X_held.sum())
    what = "control only" if a.control_only else "widths"  # a control-only log is not read as a layer-wise run
    print(f"[perplexity] {X.shape[0]} docs, {n_obs} training / {n_held} held-out tokens; {what} {a.widths}, "
          f"T<={a.layers}, B={a.burn_in}, C={a.collect}", file=sys.stderr, flush=True)
    B1, Bt = a.burn_in
    runs = []
    out = a.out_dir
    partial = out / f"{a.name}.partial.json"

    def checkpoint():
        rc.write_json(partial, _record(a, X, n_corpus, n_obs, n_held, runs, timer, env, partial=True))

    for K in a.widths:
        if a.control_only:
            run = _control_run(a, pygbn, X_obs, X_held, K)
            runs.append(run)
        else:
            run = _layerwise_run(a, pygbn, X_obs, X_held, words, K, runs, checkpoint)
            if a.control and len(run["perplexity"]) > 1:
                checkpoint()
                t = rc.Timer()
                ctrl = pygbn.GBN(n_components=K, n_layers=1, eta=a.eta, burn_in=run["total_iterations"] - a.collect,
                                 n_collect=a.collect, method=a.method, n_jobs=a.n_jobs,
                                 random_state=a.chain_seed).fit(X_obs, heldout=X_held)
                run["control"] = {"iterations": run["total_iterations"], "perplexity": float(ctrl.perplexity_[0]),
                                  "width": ctrl.widths_[0], "wall_s": t.wall}
                print(f"[perplexity] K1max={K} control T=1 x {run['total_iterations']} iterations: "
                      f"{ctrl.perplexity_[0]:.1f} ({rc.fmt_seconds(t.wall)})", file=sys.stderr, flush=True)
        if not a.no_lda:
            try:
                import tomotopy  # noqa: F401
            except ImportError:
                print("[perplexity] tomotopy is not installed: no LDA baseline (pip install tomotopy)",
                      file=sys.stderr)
                a.no_lda = True
            else:
                checkpoint()
                t = rc.Timer()
                ppl, n_s, spi = lda_perplexity(X_obs, X_held, K, a.lda_alpha, a.lda_eta, B1, a.collect, a.chain_seed)
                run["lda"] = {"perplexity": ppl, "samples": n_s, "seconds_per_iteration": spi, "wall_s": t.wall}
                print(f"[perplexity] LDA K={K}: {ppl:.1f} ({rc.fmt_seconds(t.wall)})", file=sys.stderr, flush=True)
        if K != a.widths[-1]:  # a partial record after each width, in case a long run is cut short
            checkpoint()

    record = _record(a, X, n_corpus, n_obs, n_held, runs, timer, env)
    rc.write_json(out / f"{a.name}.json", record)
    if partial.exists():
        partial.unlink()
    write_report(record, out, a.name, timer)
    print(f"[perplexity] wrote {out / (a.name + '.md')} ({rc.fmt_seconds(timer.wall)})", file=sys.stderr)
    return 0


def _layerwise_run(a, pygbn, X_obs, X_held, words, K: int, runs: list, checkpoint) -> dict:
    """The layer-wise fit of one width; ``runs`` gets the run at its first finished depth.

    Every finished depth is written to the partial record by ``checkpoint`` (values as
    pygbn logs them; the run is marked ``partial`` until the fit returns).
    """
    t = rc.Timer()
    run = {"K1max": K, "perplexity": [], "widths": [], "seconds_per_iteration": [], "wall_s": 0.0,
           "total_iterations": 0, "partial": "layer-wise fit in progress (depth values as logged)"}

    def depth_done(depth, widths, spi, ppl):
        run["perplexity"].append(float("nan") if ppl is None else ppl)
        run["widths"].append(widths)
        run["seconds_per_iteration"].append(spi)
        run["wall_s"] = t.wall
        run["total_iterations"] = schedule_iterations(depth, a.burn_in, a.collect)
        if depth == 1:
            runs.append(run)
        checkpoint()

    model = pygbn.GBN(n_components=K, n_layers=a.layers, eta=a.eta, burn_in=a.burn_in, n_collect=a.collect,
                      method=a.method, n_jobs=a.n_jobs, random_state=a.chain_seed, verbose=a.verbose)
    with rc.on_depth_done(depth_done):
        model.fit(X_obs, heldout=X_held, vocabulary=words)
    done = {"K1max": K, "perplexity": [float(v) for v in model.perplexity_],
            "widths": [list(net.widths) for net in model.networks_],
            "seconds_per_iteration": [float(v) for v in model.seconds_per_iteration_],
            "wall_s": t.wall, "total_iterations": schedule_iterations(len(model.networks_), a.burn_in, a.collect)}
    run.clear()
    run.update(done)
    if not runs or runs[-1] is not run:
        runs.append(run)
    print(f"[perplexity] K1max={K}: {np.round(run['perplexity'], 1).tolist()} widths {run['widths'][-1]} "
          f"({rc.fmt_seconds(t.wall)})", file=sys.stderr, flush=True)
    if a.save_models is not None:
        a.save_models.mkdir(parents=True, exist_ok=True)
        model.save(a.save_models / f"{a.name}_K{K}.npz")
    return run


def _control_run(a, pygbn, X_obs, X_held, K: int) -> dict:
    """``--control-only``: one layer for the whole layer-wise schedule's iterations (the ``--control`` chain)."""
    total = schedule_iterations(a.layers, a.burn_in, a.collect)
    t = rc.Timer()
    model = pygbn.GBN(n_components=K, n_layers=1, eta=a.eta, burn_in=total - a.collect, n_collect=a.collect,
                      method=a.method, n_jobs=a.n_jobs, random_state=a.chain_seed, verbose=a.verbose)
    model.fit(X_obs, heldout=X_held)
    run = {"K1max": K, "perplexity": [float(model.perplexity_[0])], "widths": [list(model.widths_)],
           "seconds_per_iteration": [float(v) for v in model.seconds_per_iteration_], "wall_s": t.wall,
           "total_iterations": total}
    print(f"[perplexity] K1max={K} control T=1 x {total} iterations: {run['perplexity'][0]:.1f} "
          f"({rc.fmt_seconds(t.wall)})", file=sys.stderr, flush=True)
    return run


def _record(a, X, n_corpus, n_obs, n_held, runs, timer, env, partial: bool = False) -> dict:
    rec = {"script": "reproduce_perplexity", "command": rc.command_line(), "mode": a.mode,
           "seed": a.seed, "chain_seed": a.chain_seed, "n_docs": int(X.shape[0]), "n_docs_corpus": n_corpus,
           "train_tokens": n_obs, "heldout_tokens": n_held, "eta": a.eta, "burn_in": list(a.burn_in),
           "collect": a.collect, "layers": a.layers, "train_fraction": a.train_fraction, "method": a.method,
           "n_jobs": a.n_jobs, "lda": None if a.no_lda else {"alpha": a.lda_alpha, "eta": a.lda_eta},
           "runs": runs, "wall_s": timer.wall, "cpu_s": timer.cpu, "environment": env}
    if a.dataset != "debian":  # Debian records keep their old form
        rec["dataset"] = a.dataset
    if a.control_only:
        total = schedule_iterations(a.layers, a.burn_in, a.collect)
        rec["control_of"] = {"layers": a.layers, "burn_in": list(a.burn_in), "collect": a.collect,
                             "iterations": total}
        rec["burn_in"], rec["layers"] = [total - a.collect, a.burn_in[1]], 1
    if partial:
        rec["partial"] = True
    return rec


_SAME_DATA = ("n_docs", "n_docs_corpus", "seed", "chain_seed", "train_tokens", "heldout_tokens", "eta", "train_fraction", "method")


def _read_records(paths) -> list:
    return [rc.read_record(Path(p), "reproduce_perplexity") for p in paths]


def _field(rec, key):
    """``rec[key]``; a record written before ``--chain-seed`` existed ran its chains from ``seed``."""
    return rec.get("chain_seed", rec.get("seed")) if key == "chain_seed" else rec.get(key)


def _check_same(base, base_path, r, path, keys) -> None:
    for key in keys:
        if _field(r, key) != _field(base, key):
            raise SystemExit(f"error: {path} differs from {base_path} in {key}: "
                             f"{_field(r, key)!r} vs {_field(base, key)!r}")
    if r.get("dataset", "debian") != base.get("dataset", "debian"):
        raise SystemExit(f"error: {path} is another corpus than {base_path}: "
                         f"{r.get('dataset', 'debian')} vs {base.get('dataset', 'debian')}")


def merge_records(paths, control_paths=()) -> dict:
    """One record from the records of separate runs of this script.

    The runs must share the corpus, data, split, seed and hyper-parameters
    (``_SAME_DATA``) and the schedule (``burn_in``, ``collect``); their
    width runs are concatenated in K1max order (a K1max may appear once).
    Partial records (``<name>.partial.json`` of a run that was stopped) are
    accepted: their unfinished runs stay marked ``partial``.

    Controls: a ``--control-only`` record among ``paths`` (for the same
    layer-wise schedule) gives each of its runs as the ``control`` of the
    merged run with the same K1max, and its LDA result if that run has none.
    Each single-layer run of a record in ``control_paths`` (same data; its
    longer schedule is the point) does the same; its LDA result is then
    marked with its iteration count.
    """
    paths = [Path(p) for p in paths]
    recs = _read_records(paths)
    pairs = [(p, r) for p, r in zip(paths, recs) if "control_of" not in r]
    ctrl_pairs = [(p, r) for p, r in zip(paths, recs) if "control_of" in r]
    ctrl_pairs += list(zip([Path(p) for p in control_paths], _read_records(control_paths)))
    if not pairs:
        raise SystemExit("error: --merge needs at least one layer-wise record (not only --control-only ones)")
    base_path, base = pairs[0]
    for p, r in pairs[1:]:
        _check_same(base, base_path, r, p, _SAME_DATA + ("burn_in", "collect"))
    runs, seen = [], set()
    for p, r in pairs:
        for run in r["runs"]:
            if run["K1max"] in seen:
                raise SystemExit(f"error: K1max={run['K1max']} appears twice (again in {p})")
            seen.add(run["K1max"])
            runs.append(dict(run, source=p.name))
    runs.sort(key=lambda run: run["K1max"])
    commands = [r["command"] for _, r in pairs]
    by_k = {run["K1max"]: run for run in runs}
    for p, ctrl in ctrl_pairs:
        _check_same(base, base_path, ctrl, p, _SAME_DATA)
        own = ctrl.get("control_of")
        if own is not None and (own["burn_in"] != base["burn_in"] or own["collect"] != base["collect"]
                                or own["layers"] != base["layers"]):
            raise SystemExit(f"error: {p} is the control of another schedule ({own}) than {base_path}")
        for c in ctrl["runs"]:
            if len(c["perplexity"]) != 1 or c["K1max"] not in by_k:
                raise SystemExit(f"error: {p}: K1max={c['K1max']} is not a single-layer run of a merged width")
            target = by_k[c["K1max"]]
            if "control" in target:
                raise SystemExit(f"error: K1max={c['K1max']} has a control already (again in {p})")
            target["control"] = {"iterations": int(c["total_iterations"]), "perplexity": float(c["perplexity"][0]),
                                 "width": c["widths"][0][0], "wall_s": c["wall_s"], "source": p.name}
            if "lda" not in target and "lda" in c:
                target["lda"] = dict(c["lda"], source=p.name) if own is not None else \
                    dict(c["lda"], iterations=int(c["total_iterations"]), source=p.name)
        commands.append(ctrl["command"])
    all_recs = [r for _, r in pairs] + [r for _, r in ctrl_pairs]
    merged = dict(base, runs=runs, layers=max(r["layers"] for _, r in pairs),
                  wall_s=sum(r["wall_s"] for r in all_recs), cpu_s=sum(r["cpu_s"] for r in all_recs),
                  lda=next((r["lda"] for r in all_recs if r.get("lda")), base.get("lda")),
                  command=rc.command_line(), merged_commands=commands)
    merged.pop("partial", None)
    if any(r.get("partial") for r in all_recs):
        merged["partial"] = True
    return merged


def train_share(rec) -> str:
    """The record's training share of each document's tokens, e.g. ``30%`` (records without one: the default)."""
    return f"{100 * rec.get('train_fraction', 0.3):g}%"


def write_report(rec, out: Path, name: str, timer) -> None:
    out.mkdir(parents=True, exist_ok=True)
    T = max(len(r["perplexity"]) for r in rec["runs"])
    depths = list(range(1, T + 1))
    subset = (f"all {rec['n_docs']} documents" if rec["n_docs"] == rec["n_docs_corpus"]
              else f"a random subset of {rec['n_docs']} documents (seed {rec['seed']})")
    corpus = rc.CORPORA[rec.get("dataset", "debian")]
    extra = [("mode", rec["mode"]),
             ("data", f"{corpus['describe']}, {subset}"),
             ("tokens", f"{rec['train_tokens']:,} training ({train_share(rec)} per document) / "
                        f"{rec['heldout_tokens']:,} held out"),
             ("schedule", f"B_1 = {rec['burn_in'][0]}, B_t = {rec['burn_in'][1]} (t >= 2), C_t = {rec['collect']}; "
                          f"eta = {rec['eta']}; layer one {rec.get('method', 'collapsed')}; "
                          "one perplexity sample per 5 collection iterations"),
             ("seed", str(rec["seed"]))]
    if _field(rec, "chain_seed") != rec["seed"]:
        extra.append(("chain seed", f"{rec['chain_seed']} (the subset and split from seed {rec['seed']})"))
    if rec["mode"] != "full":
        extra.append(("note", "a reduced run, NOT the paper's protocol (which is `--mode full`)"))
    if rec.get("control_of"):
        c = rec["control_of"]
        extra.append(("control run", f"a single layer for {c['iterations']} iterations, the total of the layer-wise "
                                     f"schedule T = {c['layers']}, B = {tuple(c['burn_in'])}, C = {c['collect']}: "
                                     "the control of the layer-wise run with the same seed and K1max "
                                     "(`--merge` or `perplexity_spread.py` attach it)"))
    if rec.get("partial"):
        stopped = [f"K1max = {r['K1max']} (stopped after T = {len(r['perplexity'])}; depth values as logged)"
                   for r in rec["runs"] if r.get("partial")]
        extra.append(("PARTIAL", "the record of a run that was still going or was stopped: "
                                 + ("; ".join(stopped) if stopped else "the finished widths only")))
    if rec.get("merged_commands"):
        extra.append(("merged from", "<br>".join(f"`{c}`" for c in rec["merged_commands"])))
        extra.append(("note on times", "total wall and CPU times are sums over the merged runs, "
                                       "which ran side by side"))
    text = [rc.run_header(f"Held-out perplexity vs depth and width ({rec['mode']} run)", rec["environment"],
                          rec["wall_s"], rec["cpu_s"], extra, rec["command"])]
    header = ["K1max"] + [f"T={t}" for t in depths]
    has_ctrl = any("control" in r for r in rec["runs"])
    has_lda = any("lda" in r for r in rec["runs"])
    if has_ctrl:
        header.append("control: T=1, same total iterations")
    if has_lda:
        header.append("LDA (same K)")
    rows = []
    for r in rec["runs"]:
        row = [r["K1max"]] + [r["perplexity"][t - 1] if t <= len(r["perplexity"]) else None for t in depths]
        if has_ctrl:
            c = r.get("control")
            row.append(f"{c['perplexity']:.1f} ({c['iterations']} it.)" if c else None)
        if has_lda:
            lda = r.get("lda")
            row.append(None if lda is None else (f"{lda['perplexity']:.1f} ({lda['iterations']} it.)"
                                                 if "iterations" in lda else lda["perplexity"]))
        rows.append(row)
    text += ["## Per-held-out-word perplexity (lower is better)", "", rc.md_table(header, rows), "",
             f"![perplexity vs depth]({name}.svg)", ""]
    # change relative to T = 1
    rows = [[r["K1max"]] + [f"{r['perplexity'][t - 1] - r['perplexity'][0]:+.1f}" if t <= len(r["perplexity"])
                            else None for t in depths] for r in rec["runs"]]
    if T > 1:
        text += ["## Change relative to the single-layer network (paper Figures 12b-13b)", "",
                 rc.md_table(["K1max"] + [f"T={t}" for t in depths], rows), "",
                 f"![change vs depth]({name}_delta.svg)", ""]
        if has_ctrl:
            text += ["Dashed lines in the plot: the single-layer control run for as many iterations as the "
                     "deepest layer-wise run, relative to the same T=1 value.", ""]
    # widths and timings
    rows = []
    for r in rec["runs"]:
        rows.append([r["K1max"], str(r["widths"][-1]), ", ".join(f"{s:.3f}" for s in r["seconds_per_iteration"]),
                     r["total_iterations"], rc.fmt_seconds(r["wall_s"])])
    text += ["## Inferred widths and cost", "",
             "Widths `[K_1, ..., K_T]` of the deepest network (layer-wise training keeps the widths of the "
             "layers below when a layer is added); seconds per training iteration at each depth "
             f"({rc.timing_context(rec)}); wall time of the layer-wise fit "
             "including the perplexity samples.", "",
             rc.md_table(["K1max", "widths", "s/iteration at T=1..", "iterations", "wall"], rows), ""]
    if has_lda:
        rows = [[r["K1max"], r["lda"]["samples"], f"{r['lda']['seconds_per_iteration']:.3f}",
                 rc.fmt_seconds(r["lda"]["wall_s"])] for r in rec["runs"] if "lda" in r]
        text += ["## LDA baseline", "",
                 f"tomotopy `LDAModel(k=K, alpha={rec['lda']['alpha']}, eta={rec['lda']['eta']})` with "
                 f"`optim_interval = 0`, one worker, trained on the same {train_share(rec)} tokens for B_1 "
                 "iterations, then "
                 "C_1 more; every 5th of those, Phi ~ Dir(eta + n_kv) over all V terms and theta_j ~ "
                 "Dir(alpha + n_jk) are drawn from the current assignments and the held-out rates "
                 "sum_k theta_jk phi_kv are averaged over the samples before the log, as for the PGBN. "
                 "A value marked \"(N it.)\" comes from a merged control run and was trained for N "
                 "iterations in all (B_1 of that run plus C_1).", "",
                 rc.md_table(["K", "samples", "s/iteration (incl. sampling)", "wall"], rows), ""]
    (out / f"{name}.md").write_text("\n".join(text), encoding="utf-8")
    series = [{"label": f"PGBN K1max={r['K1max']}", "x": list(range(1, len(r["perplexity"]) + 1)),
               "y": r["perplexity"]} for r in rec["runs"]]
    hl = [{"label": f"LDA K={r['K1max']}", "y": r["lda"]["perplexity"], "colour": rc._PALETTE[i % 8]}
          for i, r in enumerate(rec["runs"]) if "lda" in r]
    rc.svg_line_plot(out / f"{name}.svg", series, f"{corpus['short']}: held-out perplexity ({rec['mode']})",
                     "network depth T", "per-held-out-word perplexity", xticks=depths, hlines=hl)
    if T > 1:
        series = [{"label": f"K1max={r['K1max']}", "x": list(range(1, len(r["perplexity"]) + 1)),
                   "y": [v - r["perplexity"][0] for v in r["perplexity"]]} for r in rec["runs"]]
        hl = [{"label": f"control K1max={r['K1max']}", "y": r["control"]["perplexity"] - r["perplexity"][0],
               "colour": rc._PALETTE[i % 8]} for i, r in enumerate(rec["runs"]) if "control" in r]
        rc.svg_line_plot(out / f"{name}_delta.svg", series, f"Perplexity minus the T=1 value ({rec['mode']})",
                         "network depth T", "change in perplexity", xticks=depths, hlines=hl)


if __name__ == "__main__":
    sys.exit(main())
