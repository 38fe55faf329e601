"""Where a fit's peak memory comes from, phase by phase.

Usage::

    python tools/mem_phases.py CORPUS.npz --K 400 --method collapsed --iters 3
    python tools/mem_phases.py CORPUS.npz --K 400 --method blocked --link bernoulli

Loads the corpus (a ``scipy.sparse.save_npz`` file, e.g. one of
``tools/bench_scale.py``'s), then runs ``GBN(n_layers=1, n_components=K,
method=...)`` for ``--iters`` iterations with two probes:

* a thread samples the resident size (``/proc/self/statm``) every 2 ms and
  keeps the largest per phase (the innermost wrapped function running:
  validation, sampler construction, kernels, Phi/theta updates, traces,
  the snapshot at the end);
* ``tracemalloc`` (numpy's allocations are traced) snapshots the live
  allocations whenever the traced total reaches a new high at the entry or
  exit of a wrapped function; the snapshot of the highest point is printed
  by allocation site (the arrays alive at the peak, with their bytes).

A measuring tool: slow (the snapshots), no timings.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)

_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE / 2**20


def hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


class Probe:
    def __init__(self):
        self.stack = ["start"]
        self.rss_peak = {}          # phase -> largest RSS seen in it
        self.order = []
        self.traced_best = 0
        self.snapshot = None
        self.snapshot_phase = None
        self._stop = False
        self.at = None
        self.at_snapshot = None

    def phase(self):
        return "/".join(self.stack[-2:])

    def sample(self):
        while not self._stop:
            ph = self.phase()
            r = rss_mb()
            if ph not in self.rss_peak:
                self.order.append(ph)
            if r > self.rss_peak.get(ph, 0.0):
                self.rss_peak[ph] = r
            time.sleep(0.002)

    def check(self, where):
        if not tracemalloc.is_tracing():
            return
        cur, _ = tracemalloc.get_traced_memory()
        if where == self.at:
            self.at_snapshot = (cur, tracemalloc.take_snapshot())
        if cur > self.traced_best * 1.002:
            self.traced_best = cur
            self.snapshot = tracemalloc.take_snapshot()
            self.snapshot_phase = where

    def wrap(self, owner, name, label=None):
        fn = getattr(owner, name)
        label = label or name
        is_static = isinstance(owner, type) and isinstance(owner.__dict__.get(name), (staticmethod, classmethod))
        if is_static:
            return

        @functools.wraps(fn)
        def wrapper(*a, **k):
            self.stack.append(label)
            self.check(f"enter {label}")
            try:
                return fn(*a, **k)
            finally:
                self.check(f"exit {label}")
                self.stack.pop()
        setattr(owner, name, wrapper)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("corpus", type=Path, help="documents x terms counts (a scipy.sparse .npz file)")
    ap.add_argument("--K", type=int, default=100, help="n_components (default: 100)")
    ap.add_argument("--method", default="collapsed", choices=("collapsed", "blocked", "partial", "auto"),
                    help="layer-one method (default: collapsed)")
    ap.add_argument("--iters", type=int, default=3, help="iterations (burn_in; default: 3)")
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--link", default="poisson", choices=("poisson", "bernoulli", "prg"),
                    help="the fit's link (bernoulli binarises the corpus)")
    ap.add_argument("--top", type=int, default=25, help="allocation sites listed per snapshot (default: 25)")
    ap.add_argument("--no-trace", action="store_true", help="RSS phases only (no tracemalloc)")
    ap.add_argument("--at", help="also list the live allocations at this point (e.g. 'enter G.snapshot'; the last time)")
    args = ap.parse_args(argv)
    if not args.corpus.is_file():
        ap.error(f"no such corpus file: {args.corpus}")
    for flag, value, low in (("--K", args.K, 1), ("--iters", args.iters, 1), ("--top", args.top, 0)):
        if value < low:   # (not _repro_common's types: it imports numpy before the first RSS phase)
            ap.error(f"argument {flag}: must be an integer >= {low}, got '{value}'")
    if args.n_jobs == 0:
        ap.error("argument --n-jobs: must be a non-zero integer (n_jobs; -1: all CPUs), got '0'")

    r0 = rss_mb()
    import numpy as np
    import scipy.sparse as sp
    r_np = rss_mb()
    import pygbn
    from pygbn import GBN
    r_pygbn = rss_mb()
    print(f"RSS: start {r0:.1f} MB, numpy+scipy.sparse {r_np:.1f}, +pygbn {r_pygbn:.1f}")
    mods = sorted(m for m in sys.modules if m.startswith("pygbn"))
    print("pygbn modules loaded by import pygbn:", len(mods))
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in
                   ("dask", "distributed", "sklearn", "pandas", "matplotlib", "scipy"))
    print("other packages loaded:", sorted({m.split(".")[0] + ("." + m.split(".")[1] if "." in m else "")
                                              for m in heavy}))

    probe = Probe()
    probe.at = args.at
    if not args.no_trace:
        tracemalloc.start(4)
    X = sp.load_npz(args.corpus).tocsr()
    if args.link == "bernoulli":
        X.data[:] = 1
    print(f"loaded: {X.shape}, nnz {X.nnz}, tokens {int(X.sum())}, data {X.data.dtype}, "
          f"indices {X.indices.dtype}, indptr {X.indptr.dtype}; RSS {rss_mb():.1f} MB")

    from pygbn import estimator
    from pygbn.inference import gibbs, layerwise, trace, _blocked, _upper, _collapsed, collapsed_state
    from pygbn.inference import latent_split, layer_one
    from pygbn.model import layer as layer_mod
    G = gibbs.GibbsSampler
    probe.wrap(estimator, "_check_data", "validate")
    for n in ("__init__", "sweep", "sample_layer_one_collapsed", "sample_layer_one_blocked",
              "local_upward", "update_globals_from", "local_downward", "sample_phi", "sample_top",
              "sample_p_c", "sample_theta", "snapshot", "top_tables", "layer_one_sample"):
        probe.wrap(G, n, "G." + n)
    for cls_name in ("for_training", "starting_from"):
        orig = G.__dict__[cls_name].__func__

        def make(orig=orig, cls_name=cls_name):
            def w(cls, *a, **k):
                probe.stack.append("G." + cls_name)
                probe.check("enter " + cls_name)
                try:
                    return orig(cls, *a, **k)
                finally:
                    probe.check("exit " + cls_name)
                    probe.stack.pop()
            return classmethod(w)
        setattr(G, cls_name, make())
    probe.wrap(collapsed_state.CollapsedState, "__init__", "CollapsedState.__init__")
    probe.wrap(collapsed_state.CollapsedState, "rebuild", "CollapsedState.rebuild")
    probe.wrap(layer_one.LazyThetaOne, "split", "LazyThetaOne.split")
    probe.wrap(latent_split.LayerOneSplit, "chunk", "LayerOneSplit.chunk")
    probe.wrap(layer_mod.Layer, "posterior_mean_phi", "Layer.posterior_mean_phi")
    probe.wrap(trace, "document_loglik", "trace.document_loglik")
    probe.wrap(layerwise.SamplerChain, "loglik_per_token", "loglik_per_token")
    for mod in (_blocked, _upper, _collapsed):
        for n in dir(mod):
            if not n.startswith("_") and callable(getattr(mod, n)):
                probe.wrap(mod, n, f"{mod.__name__.rsplit('.', 1)[-1]}.{n}")

    th = threading.Thread(target=probe.sample, daemon=True)
    th.start()
    rss_loaded = rss_mb()
    probe.stack = ["fit"]
    GBN(n_components=args.K, n_layers=1, burn_in=args.iters, n_collect=0, prune=False,
        method=args.method, link=args.link, n_jobs=args.n_jobs, random_state=0).fit(X)
    probe.stack = ["end"]
    time.sleep(0.05)
    probe._stop = True
    th.join()
    print(f"\nRSS loaded {rss_loaded:.1f} MB, VmHWM {hwm_mb():.1f} MB\n")
    print("largest RSS per phase (MB, in order of first appearance):")
    for ph in probe.order:
        print(f"  {probe.rss_peak[ph]:8.1f}  {ph}")
    shots = []
    if probe.snapshot is not None:
        shots.append((f"tracemalloc peak {probe.traced_best / 2**20:.1f} MB at '{probe.snapshot_phase}'",
                      probe.snapshot))
    if probe.at_snapshot is not None:
        shots.append((f"tracemalloc {probe.at_snapshot[0] / 2**20:.1f} MB at '{probe.at}'", probe.at_snapshot[1]))
    for title, snap in shots:
        print(f"\n{title}; live allocations there by site:")
        stats = snap.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)]).statistics("traceback")
        for st in stats[:args.top]:
            if st.size < 2**18:
                continue
            fr = [f"{Path(f.filename).name}:{f.lineno}" for f in st.traceback]
            print(f"  {st.size / 2**20:8.1f} MB  {st.count:5d} blocks  {' <- '.join(reversed(fr[-3:]))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
