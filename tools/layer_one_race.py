#!/usr/bin/env python
"""Held-out perplexity against wall time for the layer-one methods (one layer).

Usage::

    python tools/layer_one_race.py                         # Debian top-2000, 8,000 documents, K = 100
    python tools/layer_one_race.py --dataset linux-manpages --n-docs 0 --iters 150
    python tools/layer_one_race.py --runs collapsed-1 partial-1 partial-2 --K 400

Each run fits a one-layer PGBN (``GibbsSampler.for_training``, ``eta = 0.05``,
p and c updated from the start) on 30% of each document's tokens
(:func:`pygbn.split_tokens`, the paper's protocol; seed ``--seed``) and, every
``--every`` iterations, draws one sample of (Phi^(1), theta^(1))
(``layer_one_sample``: the chain is not disturbed) and reports the held-out
perplexity of that single sample against the chain's wall time so far
(evaluation excluded).  The last column averages the predictive over the
samples of the second half of the run (as a collection phase would).  Runs:
``<method>-<threads>`` (``n_jobs``) or a bare ``<method>`` (one thread) for
the methods collapsed, blocked and partial.  The data come from
``--data-dir``, else ``$PYGBN_DATA_DIR``, else ``../shared/data`` beside the
checkout, else ``/work/shared/data`` (as the other tools).
Timings are wall clock on whatever machine runs this; run it alone (e.g.
under ``flock``) and state the load.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)

from _repro_common import default_data_dir, int_at_least, load_corpus, subset_rows  # noqa: E402

from pygbn.evaluation import split_tokens  # noqa: E402
from pygbn.inference.gibbs import GibbsSampler  # noqa: E402
from pygbn.inference.testchain import HeldoutPredictive  # noqa: E402

METHODS = ("collapsed", "blocked", "partial")
DEFAULT_RUNS = ["collapsed-1", "blocked-1", "blocked-2", "partial-1", "partial-2"]


def parse_run(text: str) -> tuple:
    """``"partial-2"`` -> ``("partial", 2)``; a bare method, ``"collapsed"``, -> ``("collapsed", 1)``."""
    method, dash, n = text.partition("-")
    if method not in METHODS or (dash and not (n.isdigit() and int(n) >= 1)):
        raise argparse.ArgumentTypeError(
            f"a run is METHOD or METHOD-N with METHOD in {', '.join(METHODS)} and N >= 1 threads; got {text!r}")
    return method, int(n) if dash else 1


def _run_name(text: str) -> str:
    parse_run(text)
    return text


def race(train, held, K, method, n_jobs, iters, every, seed):
    """``[(iteration, wall seconds, single-sample perplexity)]`` and the averaged perplexity."""
    s = GibbsSampler.for_training(train, K, method=method, n_jobs=n_jobs, random_state=seed)
    pred = HeldoutPredictive(held, s.n_threads)
    rows, wall = [], 0.0
    for it in range(1, iters + 1):
        t0 = time.perf_counter()
        s.sweep(update_p_c=True)
        wall += time.perf_counter() - t0
        if it % every == 0:
            phi, theta = s.layer_one_sample()
            one = HeldoutPredictive(held, s.n_threads)
            one.add(phi, theta)
            rows.append((it, wall, one.perplexity()))
            if it > iters // 2:
                pred.add(phi, theta)
    return rows, pred.perplexity()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="debian", choices=["debian", "linux-manpages"])
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="folder of the data sets (default: $PYGBN_DATA_DIR, else ../shared/data beside the "
                         "checkout, else /work/shared/data)")
    ap.add_argument("--n-docs", type=int_at_least(0), default=8000, help="random subset of documents (0: all)")
    ap.add_argument("--K", type=int_at_least(1), default=100)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--every", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", nargs="+", type=_run_name, default=DEFAULT_RUNS, metavar="RUN",
                    help="METHOD-N (N threads) or METHOD (one thread), METHOD in collapsed, blocked, partial; "
                         "default: %(default)s")
    a = ap.parse_args(argv)
    runs = [(text, parse_run(text)) for text in a.runs]
    if a.iters < a.every or a.every < 1:
        ap.error("--every must be >= 1 and at most --iters")
    X = load_corpus(a.dataset, a.data_dir or default_data_dir())[0]
    X = X[subset_rows(X.shape[0], a.n_docs, a.seed)]
    train, held = split_tokens(X, 0.3, random_state=a.seed)
    load = os.getloadavg()
    print(f"# layer_one_race: {a.dataset}, {X.shape[0]} documents, {int(train.sum())} training / "
          f"{int(held.sum())} held-out tokens, K = {a.K}, T = 1, seed {a.seed}; {os.cpu_count()} CPUs, "
          f"load average {load[0]:.2f} at start")
    print()
    results = {}
    for run, (method, nj) in runs:
        results[run] = race(train, held, a.K, method, nj, a.iters, a.every, a.seed)
    its = [r[0] for r in next(iter(results.values()))[0]]
    print("| iteration | " + " | ".join(f"{run}: s, ppl" for run in results) + " |")
    print("|---|" + "---|" * len(results))
    for i, it in enumerate(its):
        cells = [f"{rows[i][1]:.1f}, {rows[i][2]:.0f}" for rows, _ in results.values()]
        print(f"| {it} | " + " | ".join(cells) + " |")
    print(f"| averaged over iterations > {a.iters // 2} | "
          + " | ".join(f"{avg:.1f}" for _, avg in results.values()) + " |")


if __name__ == "__main__":
    main()
