"""A/B of two builds of the partial token sweep kernel on one captured input, in one process.

Usage::

    python tools/ab_partial_kernel.py --corpus /tmp/pygbn_bench_scale/lda_5200000_seed0.npz \\
        --base /tmp/base-tree --warm 30 --reps 8

``--base`` is another checkout with a built ``pygbn/inference/_partial*.so``
(e.g. main in a scratch worktree); "new" is the ``pygbn`` this process
imports.  A one-layer ``method="partial"`` chain (``GibbsSampler``, one
thread) runs ``--warm`` sweeps with the *base* kernel (p_j and c_j updated
after the first ``--pc-start`` sweeps, as a fit's schedule does), then the input of the
next sweep's ``partial_sweep`` call is captured, and the two kernels sweep
copies of that same input (labels and ``n_jk`` reset before each call),
alternating base / new (new first on odd repetitions) ``--reps`` times.
Prints the CPU seconds (``time.process_time``) of every call, the minimum
and median of each build, and the paired ratios new / base: on a shared
machine the pairs are steadier than runs in separate processes.  The two
builds need not draw the same chain (the input is the same; what each
draws from it is not compared).  Timings only; no assertion is made.
When the two builds' ``partial_sweep`` take different parameters (e.g. one
has the document bucket's ``top`` sets and the other not), each gets the
captured arguments it names (``inspect.signature``); the input is captured
from this tree's ``partial.py``, so the base must not need one this tree
does not pass; counts the base's ``partial_sweep`` does not return are
given to this tree's driver as 0, and the top sets of the rejection bucket are
built as this tree's driver decides (those of the rejection documents' terms,
whenever a document takes rejection).  Prints the captured state's mean topics
a document.
"""
from __future__ import annotations

import argparse
import glob
import importlib.util
import inspect
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)


def _load_base(tree: str):
    """The ``_partial`` extension module of the build in ``tree``, under another name."""
    found = glob.glob(os.path.join(tree, "pygbn", "inference", "_partial.cpython-*.so"))
    if not found:
        raise SystemExit(f"no built pygbn/inference/_partial extension under {tree}")
    spec = importlib.util.spec_from_file_location("ab_base._partial", found[0])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _for(fn, names, args):
    """The positional ``args`` (named ``names``, this tree's parameters) that ``fn`` takes."""
    want = list(inspect.signature(fn).parameters)
    return [a for n, a in zip(names, args) if n in want]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--base", required=True, help="checkout holding the base build")
    ap.add_argument("--K", type=int, default=100)
    ap.add_argument("--warm", type=int, default=30)
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--pc-start", type=int, default=10,
                    help="p_j and c_j updated after this many warm-up sweeps (the fits' pc_start)")
    args = ap.parse_args(argv)

    from pygbn.inference import GibbsSampler, _partial
    from pygbn.model import PoissonLink

    base = _load_base(args.base)
    # bound now, before _partial.partial_sweep is patched below: when --base is this tree (or another path to
    # the same .so), the extension module is the one under test, and base.partial_sweep would be the patch
    base_sweep = base.partial_sweep
    same = base is _partial or base_sweep is _partial.partial_sweep
    if same:
        print(f"note: --base {args.base} is the build under test ({_partial.__file__}): "
              "both columns time the same kernel (an A/A run)", file=sys.stderr)
    X = sp.load_npz(args.corpus).tocsr()
    Y = PoissonLink().check_data(X)
    s = GibbsSampler.for_training(Y, args.K, method="partial", n_jobs=1, random_state=0)
    new_sweep = _partial.partial_sweep
    names = list(inspect.signature(new_sweep).parameters)
    captured = []

    def run_base(*a, **kw):
        # (counts that the base does not return, e.g. the rejection tokens, as 0 for this tree's partial.py)
        out = tuple(base_sweep(*_for(base_sweep, names, a), **kw))
        return out + (0,) * (4 - len(out))

    def capture(*a, **kw):
        captured.append((list(a), kw))
        return run_base(*a, **kw)

    _partial.partial_sweep = run_base                    # the warm-up chain: the base kernel's
    try:
        for it in range(args.warm):
            s.sweep(update_p_c=it >= args.pc_start)
        _partial.partial_sweep = capture
        s.sweep(update_p_c=True)
    finally:
        _partial.partial_sweep = new_sweep
    a, kw = captured[0]
    labels, njk = a[names.index("labels")], a[names.index("njk")]
    labels0, njk0 = labels.copy(), njk.copy()
    a_base = _for(base_sweep, names, a)
    times = {"base": [], "new": []}
    for r in range(args.reps):
        order = (("base", base_sweep, a_base), ("new", new_sweep, a))
        for name, fn, args_fn in (order if r % 2 == 0 else order[::-1]):
            labels[:] = labels0
            njk[:] = njk0
            t0 = time.process_time()
            fn(*args_fn, **kw)
            times[name].append(time.process_time() - t0)
    n_tok = labels0.size
    topics = np.count_nonzero(njk0, axis=1)
    print(f"# {args.corpus.name}, K = {args.K}, input after {args.warm} sweeps: {n_tok} tokens, "
          f"{topics.mean():.1f} topics a document; "
          f"load average {os.getloadavg()[0]:.2f}; base {args.base}" + (" (the build under test: A/A)" if same else ""))
    for name in ("base", "new"):
        v = np.asarray(times[name])
        print(f"{name}: min {v.min():.3f} median {np.median(v):.3f} CPU s ({1e9 * v.min() / n_tok:.1f} ns/token); "
              + " ".join(f"{x:.3f}" for x in v))
    print("paired new / base: " + " ".join(f"{n / b:.3f}" for n, b in zip(times["new"], times["base"])))


if __name__ == "__main__":
    main()
