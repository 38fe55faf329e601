"""Where a one-layer ``method="partial"`` sweep spends its time, part by part.

Usage::

    python tools/profile_partial.py --corpus /tmp/pygbn_bench_scale/lda_5200000_seed0.npz --K 100
    python tools/profile_partial.py --corpus ... --K 400 --warm 15 --iters 5 --threads 1

Runs a ``GibbsSampler`` (T = 1, no pruning, p and c updated as in a fit) for
``--warm`` sweeps, then times ``--iters`` more with the parts wrapped: the
Dirichlet draw of Phi^(1) (``sample_phi``), the prior-bucket table build
(``PartialState.prior_tables``), the token sweep kernel (``partial_sweep``),
``n_vk`` counted after the sweep (``add_term_labels``), the look ahead for
rejection documents (``rejection_ahead``), the other layer-one bookkeeping,
the top-layer and rate updates (``top_tables``, ``sample_p_c``,
``sample_top``, ``local_downward``); what is left of the sweep is Python
overhead.  CPU seconds of the process (``time.process_time``, all threads),
the smallest over the timed sweeps.  Also the token statistics of the state
at the end: topics per document (the document bucket's length), the
Metropolis-Hastings acceptance (T >= 2), tokens per stored cell (the
document bucket is formed once a cell), the share of tokens whose term
has a prior-bucket table and the last sweep's prior-bucket draws a token
(which decide the tables).  Prints a Markdown table: per part, the seconds
of one sweep and the nanoseconds a token.
"""
from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)

import _repro_common as rc  # noqa: E402


def _wrap(obj, name, key, acc, now):
    fn = getattr(obj, name)

    def wrapped(*a, **kw):
        t0 = now()
        try:
            return fn(*a, **kw)
        finally:
            acc[key] += now() - t0

    setattr(obj, name, wrapped)
    return fn


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--K", type=rc.int_at_least(1), default=100)
    ap.add_argument("--threads", type=rc.n_jobs_arg, default=1)
    ap.add_argument("--warm", type=rc.int_at_least(0), default=15)
    ap.add_argument("--iters", type=rc.int_at_least(1), default=5)
    ap.add_argument("--wall", action="store_true", help="wall-clock instead of CPU seconds")
    args = ap.parse_args(argv)
    if not args.corpus.is_file():
        ap.error(f"--corpus: no such file: {args.corpus}")

    from pygbn.inference import GibbsSampler, _partial
    from pygbn.model import PoissonLink

    now = time.perf_counter if args.wall else time.process_time
    X = sp.load_npz(args.corpus).tocsr()
    Y = PoissonLink().check_data(X)
    s = GibbsSampler.for_training(Y, args.K, method="partial", n_jobs=args.threads, random_state=0)
    for it in range(args.warm):
        s.sweep(update_p_c=it > 0)

    acc = defaultdict(float)
    _wrap(s, "sample_phi", "Dirichlet draw of Phi^(1) (sample_phi)", acc, now)
    for name in ("prior_tables", "alias_tables"):      # (alias_tables: before the tables were made by inversion)
        if hasattr(s.tokens, name):
            _wrap(s.tokens, name, "prior-bucket tables", acc, now)
    _wrap(_partial, "partial_sweep", "token sweep (partial_sweep)", acc, now)
    nvk, ahead = "n_vk from the labels (add_term_labels)", "rejection documents ahead (rejection_ahead)"
    _wrap(_partial, "add_term_labels", nvk, acc, now)
    _wrap(_partial, "rejection_ahead", ahead, acc, now)
    for name in ("top_tables", "sample_p_c", "sample_top", "local_downward"):
        _wrap(s, name, "top layer, p/c, r, theta (upper interface)", acc, now)
    from pygbn.inference import gibbs as gibbs_mod
    _wrap(gibbs_mod, "sample_layer_one_partial", "_layer_one", acc, now)
    rows = defaultdict(list)
    for it in range(args.iters):
        acc.clear()
        t0 = now()
        s.sweep(update_p_c=True)
        total = now() - t0
        inner = sum(v for k, v in acc.items() if k not in ("_layer_one",))
        layer_one_other = acc["_layer_one"] - acc["token sweep (partial_sweep)"] \
            - acc.get("prior-bucket tables", 0.0) - acc[nvk] - acc[ahead]
        for k, v in acc.items():
            if k != "_layer_one":
                rows[k].append(v)
        rows["other layer-one bookkeeping"].append(layer_one_other)
        rows["Python and the rest"].append(total - inner - layer_one_other)
        rows["whole sweep"].append(total)
    tok = s.tokens
    n_tok = int(tok.values.sum())
    topics = np.count_nonzero(tok.doc_counts, axis=1)
    clock = "wall" if args.wall else "CPU"
    print(f"# {args.corpus.name}: {n_tok} tokens, {X.shape[0]} docs, V = {X.shape[1]}, K = {args.K}, "
          f"{s.n_threads} thread(s), {clock} seconds per sweep (min of {args.iters} after {args.warm}), "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"# topics per document: mean {topics.mean():.1f}, token-weighted "
          f"{np.average(topics, weights=tok.doc_counts.sum(axis=1)):.1f}; "
          f"MH acceptance {tok.acceptance:.3f}")
    table_row = tok._table_row[0] if getattr(tok, "_table_row", None) is not None else None
    tabled = (f"; tokens of terms with a prior table {tok.term_tokens[table_row >= 0].sum() / n_tok:.3f}"
              if table_row is not None else "")
    rate = getattr(tok, "prior_rate", None)
    prior = f"; prior-bucket draws a token {rate:.4f}" if rate is not None else ""
    print(f"# tokens per stored cell {n_tok / max(tok.indices.size, 1):.2f}{tabled}{prior}")
    order = list(rows)
    order.remove("whole sweep")
    print()
    print(f"| part | {clock} s per sweep | ns per token |")
    print("|---|---|---|")
    for k in order + ["whole sweep"]:
        v = min(rows[k])
        print(f"| {k} | {v:.3f} | {1e9 * v / n_tok:.1f} |")


if __name__ == "__main__":
    main()
