"""Seed sweep of Geweke's test: the distribution of max |z| over many seeds.

Runs ``tests/test_geweke.py``'s configuration (4 features, 3 samples,
eta = 0.5, a0 = b0 = e0 = f0 = 3; marginal-conditional seed ``1000 + s``,
successive-conditional seed ``2000 + s``) for each seed ``s``, keeps each
run's draws (``--save DIR``: one ``.npz`` per seed, ``mc/<stat>`` and
``sc/<stat>``) and prints, per seed and in total, max |z| over the statistics
under each standard-error estimator of :func:`pygbn.inference.geweke.compare`,
all computed from the same draws.  ``--load DIR`` recomputes the table from
saved draws without running anything.

Usage (long statistical runs: ``nice -n 19``, ``OMP_NUM_THREADS=1``)::

    python tools/geweke_sweep.py collapsed 3,2,2 poisson --n 5000 --seeds 100-139 \\
        [--dense-from 2] [--save /tmp/sweep/collapsed-T3] [--threshold 4.5]
    python tools/geweke_sweep.py --load /tmp/sweep/collapsed-T3
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)
import _repro_common as rc  # noqa: E402

from pygbn.estimator import METHODS  # noqa: E402
from pygbn.inference import geweke  # noqa: E402
from pygbn.model import Hyperparameters  # noqa: E402

HYPER = Hyperparameters(a0=3.0, b0=3.0, e0=3.0, f0=3.0)


def _seeds(text: str):
    """``"100-139,25"`` -> [100, ..., 139, 25]; argparse's error for anything else."""
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if not (lo.isdigit() and (hi.isdigit() or not hi)) or int(hi or lo) < int(lo):
            raise argparse.ArgumentTypeError(f"seeds are N or LO-HI (LO <= HI) joined by commas, got {text!r}")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def run_one(method, widths, link, n, seed, dense_from=None):
    """The draws of one seed: ``(marginal, successive)`` dicts of arrays."""
    if dense_from is not None:
        from pygbn.inference.collapsed_state import CollapsedState
        CollapsedState.DENSE_FROM = int(dense_from)
    kw = dict(n_features=4, n_samples=3, widths=widths, eta=0.5, hyper=HYPER, link=link)
    mc = geweke.marginal_conditional(n, random_state=1000 + seed, **kw)
    sc = geweke.successive_conditional(n, random_state=2000 + seed, method=method, **kw)
    return mc, sc


def max_z(mc, sc):
    """max |z| (and its statistic) by standard-error estimator."""
    out = {}
    for se in geweke.SE_METHODS:
        z = geweke.compare(mc, sc, se=se)
        k = max(z, key=lambda s: abs(z[s]))
        out[se] = (abs(z[k]), k)
    return out


def summary(rows, threshold):
    """Per-estimator counts of max |z| above 3, 3.5 and ``threshold``, worst and mean."""
    lines = ["| estimator | seeds | > 3 | > 3.5 | > %g | worst | mean max \\|z\\| |" % threshold,
             "|---|---|---|---|---|---|---|"]
    for se in geweke.SE_METHODS:
        v = np.array([r[1][se][0] for r in rows])
        w = int(np.argmax(v))
        lines.append(f"| {se} | {len(v)} | {(v > 3).sum()} | {(v > 3.5).sum()} | "
                     f"{(v > threshold).sum()} | {v[w]:.2f} (seed {rows[w][0]}, "
                     f"{rows[w][1][se][1]}) | {v.mean():.2f} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("method", nargs="?", choices=METHODS)
    ap.add_argument("widths", nargs="?", help="layer widths, e.g. 3,2,2")
    ap.add_argument("link", nargs="?", default="poisson", choices=("poisson", "bernoulli", "prg"))
    ap.add_argument("--n", type=int, default=5000, help="iterations (and marginal draws)")
    ap.add_argument("--seeds", type=_seeds, default="100-139", help="e.g. 100-139,25")
    ap.add_argument("--dense-from", type=int, default=None,
                    help="CollapsedState.DENSE_FROM (the term-list tests use 2 and 4)")
    ap.add_argument("--save", type=Path, default=None, help="directory for the draws")
    ap.add_argument("--load", type=Path, default=None, help="recompute from saved draws")
    ap.add_argument("--threshold", type=float, default=4.5)
    a = ap.parse_args(argv)
    rows = []
    if a.load is not None:
        if not a.load.is_dir():
            raise SystemExit(f"error: --load {a.load}: no such folder")
        saved = sorted((f for f in a.load.glob("seed*.npz") if re.fullmatch(r"seed\d+", f.stem)),
                       key=lambda p: int(p.stem[4:]))
        if not saved:
            raise SystemExit(f"error: no seed*.npz under {a.load} (draws saved by --save DIR)")
        for f in saved:
            d = np.load(f)
            mc = {k[3:]: d[k] for k in d.files if k.startswith("mc/")}
            sc = {k[3:]: d[k] for k in d.files if k.startswith("sc/")}
            rows.append((int(f.stem[4:]), max_z(mc, sc)))
    else:
        if a.method is None or a.widths is None:
            ap.error("method and widths are required without --load")
        if a.n < 50:
            ap.error("--n must be at least 50 (the batch-means estimator's 50 batches)")
        widths = rc.parse_ints(a.widths, "widths")
        if a.save is not None:
            a.save.mkdir(parents=True, exist_ok=True)
        for s in a.seeds:
            mc, sc = run_one(a.method, widths, a.link, a.n, s, a.dense_from)
            if a.save is not None:
                np.savez_compressed(a.save / f"seed{s}.npz",
                                    **{f"mc/{k}": v for k, v in mc.items()},
                                    **{f"sc/{k}": v for k, v in sc.items()})
            rows.append((s, max_z(mc, sc)))
            print(s, " ".join(f"{se}={v:.2f}({k})" for se, (v, k) in rows[-1][1].items()),
                  flush=True)
    for s, m in rows if a.load is not None else []:
        print(s, " ".join(f"{se}={v:.2f}({k})" for se, (v, k) in m.items()))
    print(summary(rows, a.threshold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
