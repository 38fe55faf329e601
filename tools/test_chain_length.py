#!/usr/bin/env python
"""How long must the test-time chain be?  Feature quality against its length.

For each seed a GBN is fitted once; then ``transform`` (digits, PRG link:
classification accuracy of an L2 logistic regression on the features) or
``perplexity`` (Debian descriptions, Poisson link: held-out perplexity of
new documents, 30% of each test document's tokens observed) is run with
test-time chains of ``B + C`` iterations for every length in ``--lengths``
(default 50+50, 100+100, 250+250, 500+500), with the same seed, and the
longest once more with another seed (the chain-to-chain noise at that
length).  The table gives, per length, the mean over seeds with its
standard error, the mean paired difference to the longest chain (same
fitted network) with its standard error, and the CPU seconds of the chains.

Usage::

    python tools/test_chain_length.py --dataset digits --seeds 0 1 2 3 4
    python tools/test_chain_length.py --dataset debian --seeds 0 1 2 3 4
    python tools/test_chain_length.py --dataset digits --quick      # minutes

Results: ``docs/results/test_chain_<dataset>.{md,json}``.  scikit-learn is
needed for the classifier (digits).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)

import _repro_common as rc  # noqa: E402
from reproduce_classification import classify, load as load_classification, need_sklearn  # noqa: E402

SETTINGS = {
    # the reduced ("medium") schedules of the reproduce scripts, one width bound
    "digits": dict(K=100, layers=3, burn_in=(300, 150), collect=150, cv=5, c_grid=(-4, 10)),
    "debian": dict(K=100, layers=3, burn_in=(200, 100), collect=100, n_train=4000, n_test=1000),
}
QUICK = {
    "digits": dict(K=50, layers=2, burn_in=(60, 30), collect=30, cv=3, c_grid=(-4, 10)),
    "debian": dict(K=50, layers=2, burn_in=(40, 20), collect=20, n_train=1000, n_test=300),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", choices=["digits", "debian"], required=True)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--lengths", type=int, nargs="+", default=[50, 100, 250, 500],
                   help="B = C of each test-time chain (B burn-in + C collected iterations)")
    p.add_argument("--quick", action="store_true", help="small networks and schedules (a smoke run)")
    p.add_argument("--data-dir", type=Path, default=rc.default_data_dir())
    p.add_argument("--out", type=Path, default=rc.RESULTS)
    p.add_argument("--n-jobs", type=int, default=1)
    return p.parse_args(argv)


REPEAT_SEED = 1000  # the repeat of the longest chain runs with seed + REPEAT_SEED


def chains(a, seed):
    """(length, chain seed) of every test-time chain of one fitted network."""
    return [(L, seed) for L in a.lengths] + [(max(a.lengths), seed + REPEAT_SEED)]


def fit(X, s, link, seed, n_jobs):
    import pygbn

    model = pygbn.GBN(link=link, n_components=s["K"], n_layers=s["layers"], burn_in=s["burn_in"],
                      n_collect=s["collect"], method="collapsed" if link == "poisson" else "blocked",
                      n_jobs=n_jobs, random_state=seed)
    return model.fit(X)


def run_digits(a, s):
    class Args:
        data_dir = a.data_dir
        seed = 0
    Xtr, ytr, Xte, yte, desc = load_classification("digits", Args, {})
    Xall = np.vstack([Xtr, Xte])
    n_tr = Xtr.shape[0]
    rows = []
    for seed in a.seeds:
        model = fit(Xtr, s, "prg", seed, a.n_jobs)
        for L, chain_seed in chains(a, seed):
            model.set_params(transform_iter=(L, L), random_state=chain_seed)
            t0 = time.process_time()
            F = model.transform(Xall)
            cpu = time.process_time() - t0
            acc, C = classify(F[:n_tr], ytr, F[n_tr:], yte, s["cv"], seed, s["c_grid"])
            rows.append({"seed": seed, "chain_seed": chain_seed, "length": L, "value": 100.0 * acc, "C": C,
                         "cpu_s": cpu, "samples": int(Xall.shape[0]), "widths": list(model.networks_[-1].widths)})
            print(f"[digits] seed {seed} {L}+{L} (chain seed {chain_seed}): accuracy {100 * acc:.2f}% "
                  f"({cpu:.1f} s CPU)", file=sys.stderr, flush=True)
    return desc, "test accuracy (%)", "higher", rows


def run_debian(a, s):
    import pygbn

    X, words, labels, split = rc.load_debian(a.data_dir)
    rows = []
    desc = None
    for seed in a.seeds:
        tr = rc.subset_rows(X.shape[0], s["n_train"], seed, np.flatnonzero(split == "train"))
        te = rc.subset_rows(X.shape[0], s["n_test"], seed + 1, np.flatnonzero(split == "test"))
        Xte = X[te]
        Xte = Xte[np.asarray(Xte.sum(axis=1)).ravel() >= 2].tocsr()
        obs, held = pygbn.split_tokens(Xte, 0.3, random_state=seed)
        desc = (f"Debian descriptions, top-2000 vocabulary: {len(tr)} training documents, {Xte.shape[0]} test "
                "documents (random subsets of the docs.tsv split, per seed) of which 30% of the tokens are "
                "observed and the rest held out")
        model = fit(X[tr], s, "poisson", seed, a.n_jobs)
        for L, chain_seed in chains(a, seed):
            model.set_params(transform_iter=(L, L), random_state=chain_seed)
            t0 = time.process_time()
            ppl = model.perplexity(obs, held)
            cpu = time.process_time() - t0
            rows.append({"seed": seed, "chain_seed": chain_seed, "length": L, "value": float(ppl), "cpu_s": cpu,
                         "samples": int(obs.shape[0]), "widths": list(model.networks_[-1].widths)})
            print(f"[debian] seed {seed} {L}+{L} (chain seed {chain_seed}): perplexity {ppl:.2f} "
                  f"({cpu:.1f} s CPU)", file=sys.stderr, flush=True)
    return desc, "held-out perplexity", "lower", rows


def summarise(rows, lengths):
    """Per length: mean and s.e. over seeds, paired difference to the longest chain, CPU."""
    longest = max(lengths)
    main = [r for r in rows if r["chain_seed"] == r["seed"]]
    ref = {r["seed"]: r["value"] for r in main if r["length"] == longest}
    again = [r for r in rows if r["chain_seed"] != r["seed"]]
    table = []
    for L, rs in [(L, [r for r in main if r["length"] == L]) for L in lengths] + [("repeat", again)]:
        m, se, n = rc.mean_se([r["value"] for r in rs])
        dm, dse, _ = rc.mean_se([r["value"] - ref[r["seed"]] for r in rs])
        cpu = float(np.mean([r["cpu_s"] for r in rs]))
        length = rs[0]["length"]
        table.append({"length": length, "repeat": L == "repeat", "mean": m, "se": se, "n": n, "diff": dm,
                      "diff_se": dse, "cpu_s": cpu,
                      "us_per_sample_iteration": 1e6 * cpu / (2 * length * rs[0]["samples"])})
    return table


def write(a, s, desc, what, better, rows, wall, cpu):
    table = summarise(rows, a.lengths)
    name = f"test_chain_{a.dataset}" + ("_quick" if a.quick else "")
    rec = {"script": "test_chain_length", "dataset": a.dataset, "settings": {k: list(v) if isinstance(v, tuple)
                                                                             else v for k, v in s.items()},
           "seeds": a.seeds, "lengths": a.lengths, "data": desc, "measure": what, "better": better, "rows": rows,
           "table": table, "command": rc.command_line(), "environment": rc.environment(), "wall_s": wall,
           "cpu_s": cpu}
    a.out.mkdir(parents=True, exist_ok=True)
    rc.write_json(a.out / f"{name}.json", rec)
    longest = max(a.lengths)
    extra = [("data", desc),
             ("model", f"K1max = {s['K']}, T = {s['layers']}, B = {tuple(s['burn_in'])}, C = {s['collect']}, "
                       f"one fit per seed (seeds {', '.join(map(str, a.seeds))}); n_jobs = {a.n_jobs}"),
             ("measure", f"{what} ({better} is better) of features from test-time chains of B + C iterations, "
                         "B = C = length, with the model's seed")]
    md = [rc.run_header(f"Test-time chain length: {a.dataset}", rec["environment"], wall, cpu, extra, rec["command"])]
    md.append(f"Paired difference: the same fitted network, minus its {longest}+{longest} chain (mean and "
              f"standard error over seeds); the last row is a second {longest}+{longest} chain with another "
              "seed, i.e. the chain-to-chain noise at that length. CPU: seconds of one chain over all its "
              "samples, and microseconds per sample and iteration.\n")
    md.append(rc.md_table(
        ["chain", what, f"difference to {longest}+{longest}", "CPU (s)", "us / sample-iteration"],
        [[f"{t['length']}+{t['length']}" + (" (another chain seed)" if t["repeat"] else ""),
          f"{t['mean']:.2f} ± {t['se']:.2f} ({t['n']})" if np.isfinite(t["se"]) else f"{t['mean']:.2f} ({t['n']})",
          f"{t['diff']:+.3f} ± {t['diff_se']:.3f}" if np.isfinite(t["diff_se"]) else f"{t['diff']:+.3f}",
          f"{t['cpu_s']:.1f}", f"{t['us_per_sample_iteration']:.1f}"] for t in table]))
    md.append("\nPer seed:\n")
    md.append(rc.md_table(["seed"] + [f"{L}+{L}" for L in a.lengths] + [f"{longest}+{longest} again"],
                          [[seed] + [f"{r['value']:.2f}" for L, cs in chains(a, seed) for r in rows
                                     if r["seed"] == seed and r["length"] == L and r["chain_seed"] == cs]
                           for seed in a.seeds]))
    (a.out / f"{name}.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print(f"wrote {a.out / name}.md", file=sys.stderr)


def main(argv=None):
    a = parse_args(argv)
    s = dict((QUICK if a.quick else SETTINGS)[a.dataset])
    if a.dataset == "digits":
        need_sklearn()
    timer = rc.Timer()
    desc, what, better, rows = (run_digits if a.dataset == "digits" else run_debian)(a, s)
    write(a, s, desc, what, better, rows, timer.wall, timer.cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
