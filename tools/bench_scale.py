"""Cost per token and peak memory of a fit as the corpus grows, beside tomotopy's LDA.

Usage::

    python tools/bench_scale.py                                 # 1.3M and 5.2M tokens, K = 100 and 400
    python tools/bench_scale.py --tokens 20.8M --K 100 --late 50
    python tools/bench_scale.py --tokens 1.3M --runs collapsed blocked-1 tomotopy-1 --late 0
    python tools/bench_scale.py --dask                          # DaskGBN rows too (1 and 2 workers)
    python tools/bench_scale.py --link bernoulli --runs blocked-1 tomotopy-1 --late 0
    python tools/bench_scale.py --data ../shared/data/linux-manpages/counts.npz --K 400 \
        --runs collapsed partial-1 --early 3 --late 25    # a corpus of your own (.npz, docs x terms)

The tool generates seeded synthetic LDA-like corpora (``V = 20,000`` terms,
about 65 tokens per document, 50 true topics; see :func:`make_corpus`) and
caches them as ``.npz`` files (``--cache``), or measures corpora of your own
(``--data``: scipy.sparse ``.npz`` files of documents x terms counts, the file
name in the first column).  Every measurement runs in its
own Python process that loads the corpus from the file, so that each peak
resident set size (``ru_maxrss`` of that process, which includes the
interpreter, numpy/scipy and the loaded corpus) is one library's alone:

* ``collapsed``, ``blocked-1``, ``blocked-2``, ``partial-1``, ``partial-2``:
  ``pygbn.GBN(n_layers=1, method=..., n_jobs=...).fit(X)`` with
  ``n_components = K`` (no pruning);
* ``tomotopy-1``, ``tomotopy-2``: ``tomotopy.LDAModel(k=K, alpha=0.1,
  eta=0.01)`` trained with one and two workers on the same documents (when
  tomotopy is installed; without it the tool says so once and leaves these
  runs out);
* any ``blocked-N``, ``partial-N``, ``tomotopy-N`` (``--runs``): the same with
  ``N`` threads or workers, for thread-scaling rows on a many-core machine;
* ``dask-1``, ``dask-2`` (``--dask``): ``pygbn.dask.DaskGBN`` (blocked,
  ``n_jobs=1``) on a local cluster of 1 and 2 single-threaded worker
  processes (see :func:`run_dask`; without dask and distributed the tool
  says so once and leaves these runs out); its peak resident size is the sum of
  the workers' (each holds its partition and a Dask worker's own ~100 MB),
  and the table's last column gives its overhead per iteration beside the
  one-process ``blocked-1`` fit of the same corpus and K (when measured).

``--link`` picks the pygbn fits' link (``poisson`` by default).  With
``bernoulli`` every run, tomotopy's included, gets the binarised corpus
(``X.data[:] = 1``: one token per non-zero); with ``prg`` the counts as they
are (tomotopy's tokens are the counts).  Only the blocked method fits these
links.

Reported per row: the mean wall-clock seconds per iteration over the first
``--early`` iterations and over ``--late-iters`` iterations after ``--late``
iterations (``--late 0`` skips them), tokens per second at each, the same
means in CPU seconds of the process (all its threads; on a shared, loaded
machine the CPU time is the steadier figure), the resident size right after
loading the corpus, the peak resident size of the process and the fit's
bytes per token (peak minus loaded, over the tokens) and per model entry
(the same bytes over ``(J + V) K``, the entries of the document-factor and
term-factor counts).  Peak sizes are the
child's ``VmHWM`` (unlike ``ru_maxrss``, not inherited across ``exec`` from
the driver, which may have generated a large corpus).  Timings are measured
on whatever machine runs this; no assertion is made.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)

import _repro_common as rc  # noqa: E402

#: vocabulary size, mean document length and number of true topics of the corpora
N_TERMS = 20_000
DOC_LENGTH = 65
TRUE_TOPICS = 50
PYGBN_RUNS = {"collapsed": ("collapsed", 1), "blocked-1": ("blocked", 1), "blocked-2": ("blocked", 2),
              "partial-1": ("partial", 1), "partial-2": ("partial", 2)}
TOMOTOPY_RUNS = {"tomotopy-1": 1, "tomotopy-2": 2}
DASK_RUNS = {"dask-1": 1, "dask-2": 2}
#: the default runs; any ``blocked-N``, ``partial-N`` or ``tomotopy-N`` (N threads or
#: workers) is accepted too, for thread-scaling rows on a many-core machine
DEFAULT_RUNS = list(PYGBN_RUNS) + list(TOMOTOPY_RUNS)


def parse_run(name: str) -> tuple[str, int]:
    """``"partial-8"`` -> ``("partial", 8)``; ``"collapsed"`` -> ``("collapsed", 1)``.

    The kind is ``collapsed``, ``blocked``, ``partial``, ``tomotopy`` or ``dask``;
    the number after the dash is the thread count (pygbn's ``n_jobs``,
    tomotopy's ``workers``) or, for ``dask``, the number of worker processes.
    """
    if name == "collapsed":
        return "collapsed", 1
    kind, _, n = name.partition("-")
    if kind not in ("blocked", "partial", "tomotopy", "dask") or not n.isdigit() or int(n) < 1:
        raise argparse.ArgumentTypeError(
            f"run must be 'collapsed' or KIND-N with KIND in blocked, partial, tomotopy, dask "
            f"and N >= 1; got {name!r}")
    return kind, int(n)


def _run_name(name: str) -> str:
    parse_run(name)
    return name


# ------------------------------------------------------------------ corpus
def parse_tokens(text: str) -> int:
    """``"20.8M"`` -> 20800000; ``"500k"`` -> 500000; plain integers as they are."""
    t = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}.get(t[-1:], 1)
    try:
        n = int(round(float(t[:-1] if scale > 1 else t) * scale))
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"a corpus size is a positive token count such as 500k, 1.3M or "
                                         f"20800000; got {text!r}")
    return n


def _tokens_arg(text: str) -> str:
    parse_tokens(text)
    return text


def make_corpus(n_tokens: int, seed: int = 0) -> sp.csr_matrix:
    """An LDA-like corpus of about ``n_tokens`` tokens (documents x terms, int32 counts).

    ``TRUE_TOPICS`` topics ``phi_k ~ Dir(2000 z)`` over ``N_TERMS`` terms, where
    ``z`` is Zipf's law (``z_v`` proportional to ``1 / v``: frequent terms shared by
    all topics, rare ones specific to a few), one ``theta_j ~ Dir(0.1)`` per
    document, document lengths ``1 + Pois(64)``; ``n_tokens / DOC_LENGTH``
    documents.  Fully determined by ``seed``.
    """
    rng = np.random.default_rng(seed)
    J = max(1, int(round(n_tokens / DOC_LENGTH)))
    zipf = 1.0 / np.arange(1, N_TERMS + 1)
    phi = rng.dirichlet(2000.0 * zipf / zipf.sum(), size=TRUE_TOPICS)
    theta = rng.dirichlet(np.full(TRUE_TOPICS, 0.1), size=J)
    lengths = 1 + rng.poisson(DOC_LENGTH - 1, size=J)
    n_jk = rng.multinomial(lengths, theta)                       # (J, K) tokens per topic
    docs = np.empty(int(lengths.sum()), dtype=np.int32)
    words = np.empty_like(docs)
    pos = 0
    for k in range(TRUE_TOPICS):
        n_k = int(n_jk[:, k].sum())
        docs[pos:pos + n_k] = np.repeat(np.arange(J, dtype=np.int32), n_jk[:, k])
        cdf = np.cumsum(phi[k])
        words[pos:pos + n_k] = np.minimum(np.searchsorted(cdf, rng.random(n_k) * cdf[-1], side="right"),
                                          N_TERMS - 1)
        pos += n_k
    X = sp.csr_matrix((np.ones(docs.size, dtype=np.int32), (docs, words)), shape=(J, N_TERMS))
    X.sum_duplicates()
    return X


def corpus_path(cache: Path, n_tokens: int, seed: int) -> Path:
    """The cached corpus file of ``n_tokens`` tokens and ``seed`` (made on first use)."""
    path = cache / f"lda_{n_tokens}_seed{seed}.npz"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        X = make_corpus(n_tokens, seed)
        tmp = path.with_suffix(".tmp.npz")
        sp.save_npz(tmp, X, compressed=False)
        os.replace(tmp, path)
        print(f"# generated {path.name}: {X.shape[0]} documents, {int(X.sum())} tokens, "
              f"{X.nnz} non-zeros ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    return path


# ------------------------------------------------------------ child runs
def _peak_rss_mb() -> float:
    """This process's peak resident size in MB (``VmHWM``; ``ru_maxrss`` where
    /proc is missing)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


class _Clock:
    """Per-iteration wall-clock and CPU times, from a fit's callback."""

    def __init__(self):
        self.wall, self.cpu = [], []
        self.last = (time.perf_counter(), time.process_time())

    def tick(self, *_):
        now = (time.perf_counter(), time.process_time())
        self.wall.append(now[0] - self.last[0])
        self.cpu.append(now[1] - self.last[1])
        self.last = now

    def summary(self, early, late, late_iters):
        return _summary(self.wall, self.cpu, early, late, late_iters)


def _summary(wall, cpu, early, late, late_iters):
    """Mean seconds per iteration over the first ``early`` iterations and over
    ``late_iters`` after ``late`` (wall clock, and CPU when ``cpu`` is given)."""
    out = {"early": float(np.mean(wall[:early]))}
    if cpu is not None:
        out["early_cpu"] = float(np.mean(cpu[:early]))
    if late:
        out["late"] = float(np.mean(wall[late:late + late_iters]))
        if cpu is not None:
            out["late_cpu"] = float(np.mean(cpu[late:late + late_iters]))
    return out


def run_pygbn(X, K, method, n_jobs, early, late, late_iters, link="poisson"):
    """``GBN(n_layers=1, link=link).fit(X)`` for ``max(early, late + late_iters)`` iterations."""
    from pygbn import GBN

    n_iter = max(early, late + late_iters if late else 0)
    clock = _Clock()
    GBN(n_components=K, n_layers=1, burn_in=n_iter, n_collect=0, prune=False, method=method,
        link=link, n_jobs=n_jobs, random_state=0, callback=lambda info: clock.tick()).fit(X)
    return clock.summary(early, late, late_iters)


def run_tomotopy(X, K, workers, early, late, late_iters):
    """tomotopy's LDA (alpha 0.1, eta 0.01, ``workers`` threads) on the documents of ``X``."""
    mdl = rc.tomotopy_lda(X, K)
    n_iter = max(early, late + late_iters if late else 0)
    clock = _Clock()
    for _ in range(n_iter):
        mdl.train(1, workers=workers)
        clock.tick()
    return clock.summary(early, late, late_iters)


def run_dask(X, K, n_workers, early, late, late_iters):
    """``pygbn.dask.DaskGBN`` (blocked) on a local cluster of ``n_workers``
    single-threaded worker processes.

    One layer of ``K`` factors, no pruning, ``max(early, late + late_iters)``
    iterations on ``X`` cut into ``n_workers`` partitions
    (:func:`tools.dask_traffic.dask_fit_times`); the per-iteration wall-clock
    times as :func:`run_pygbn` gives them (no CPU times: the work is in the
    workers) and the sum of the workers' peak resident sizes.
    """
    try:
        import pygbn.dask  # noqa: F401
    except ImportError as exc:
        raise RuntimeError(f"pygbn.dask is not available ({exc})") from None
    from dask_traffic import dask_fit_times

    n_iter = max(early, late + late_iters if late else 0)
    times, rss = dask_fit_times(X, K, n_workers, n_iter)
    out = _summary(times, None, early, late, late_iters)
    out["workers_peak_rss"] = float(np.sum(rss))
    return out


def child_main(args) -> None:
    """Run one measurement and print one JSON line."""
    X = sp.load_npz(args.corpus).tocsr()
    if args.link == "bernoulli":
        X.data[:] = 1                 # the binarised corpus: one token per non-zero
    rss_loaded = _peak_rss_mb()
    kind, n = parse_run(args.child)
    if kind == "tomotopy":
        res = run_tomotopy(X, args.k, n, args.early, args.late, args.late_iters)
    elif kind == "dask":
        res = run_dask(X, args.k, n, args.early, args.late, args.late_iters)
    else:
        res = run_pygbn(X, args.k, kind, n, args.early, args.late, args.late_iters, args.link)
    res.update(rss_loaded=rss_loaded, peak_rss=res.pop("workers_peak_rss", None) or _peak_rss_mb(),
               tokens=int(X.sum()), nnz=int(X.nnz), docs=int(X.shape[0]), terms=int(X.shape[1]))
    print(json.dumps(res), flush=True)


# ------------------------------------------------------------------ driver
def _fmt_tokens(n: int) -> str:
    """The tokens column: ``1.3M``, ``50k``, ``800`` (the same form in every row)."""
    if n >= 1e6:
        return f"{n / 1e6:.1f}M"
    return f"{n / 1e3:.0f}k" if n >= 1e3 else str(int(n))


def _size_label(tokens: int, corpus=None) -> str:
    """The first cell of a row: the token count, after the file name for ``--data`` corpora."""
    return _fmt_tokens(tokens) if not corpus else f"{corpus} ({_fmt_tokens(tokens)})"


def measure(run: str, path: Path, K: int, args) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", run, "--corpus", str(path),
           "--k", str(K), "--early", str(args.early), "--late", str(args.late),
           "--late-iters", str(args.late_iters), "--link", args.link]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        err = proc.stderr.strip().splitlines()
        return {"error": err[-1] if err else f"exit status {proc.returncode}"}
    return json.loads(lines[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", nargs="+", type=_tokens_arg, default=["1.3M", "5.2M"],
                    help="corpus sizes in tokens (e.g. 1.3M 5.2M 20.8M)")
    ap.add_argument("--K", nargs="+", type=rc.int_at_least(1), default=[100, 400])
    ap.add_argument("--runs", nargs="+", type=_run_name, default=DEFAULT_RUNS,
                    help="collapsed, blocked-N, partial-N, tomotopy-N, dask-N (N threads, "
                         "workers or worker processes); default: %(default)s")
    ap.add_argument("--link", choices=("poisson", "bernoulli", "prg"), default="poisson",
                    help="the pygbn fits' link; bernoulli binarises the corpus for every run")
    ap.add_argument("--dask", action="store_true", help="add the DaskGBN rows (1 and 2 workers)")
    ap.add_argument("--early", type=rc.int_at_least(1), default=12, help="iterations of the early figure")
    ap.add_argument("--late", type=rc.int_at_least(0), default=50,
                    help="iterations run before the late figure (0: no late figure)")
    ap.add_argument("--late-iters", type=rc.int_at_least(1), default=5, help="iterations of the late figure")
    ap.add_argument("--data", nargs="+", type=Path, default=None,
                    help="corpora of your own instead of the synthetic ones: scipy.sparse .npz files "
                         "(documents x terms counts)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the synthetic corpora")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "pygbn_bench_scale")
    ap.add_argument("--repeats", type=rc.int_at_least(1), default=1, help="runs of each measurement (the smallest figures)")
    ap.add_argument("--json", type=Path, help="also write the measurements to this JSON file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--k", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child_main(args)
        return
    for path in args.data or ():     # before the header: a wrong --data fails at once
        if not path.is_file():
            ap.error(f"--data: no such file: {path}")
    runs = list(args.runs) + (list(DASK_RUNS) if args.dask else [])
    missing_tomotopy = [run for run in runs if parse_run(run)[0] == "tomotopy"]
    if missing_tomotopy and importlib.util.find_spec("tomotopy") is not None:
        missing_tomotopy = []
    missing_dask = [run for run in runs if parse_run(run)[0] == "dask"]
    if missing_dask and all(importlib.util.find_spec(m) is not None for m in ("dask", "distributed")):
        missing_dask = []
    runs = [run for run in runs if run not in missing_tomotopy + missing_dask]
    load = os.getloadavg()
    print(f"# pygbn bench_scale: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {load[0]:.2f} at start; link {args.link}; wall-clock seconds per iteration, "
          f"the smallest of {args.repeats} run(s)")
    if missing_tomotopy:
        print(f"# tomotopy is not installed (pip install tomotopy): no {', '.join(missing_tomotopy)} rows")
    if missing_dask:
        print(f"# dask and distributed are not installed (pip install \"dask[array]\" distributed): "
              f"no {', '.join(missing_dask)} rows")
    if not runs:
        ap.error("no runs left to measure")
    late = f"after {args.late}" if args.late else "late"
    print()
    print(f"| tokens | docs | K | run | s/iter (first {args.early}) | tokens/s | CPU s/iter | "
          f"s/iter ({late}) | tokens/s | CPU s/iter | RSS loaded (MB) | peak RSS (MB) | fit B/token | "
          f"fit B/model entry | Dask overhead s/iter |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    records = []
    if args.data:
        corpora = [(path.name, path) for path in args.data]
    else:
        corpora = [(text, corpus_path(args.cache, parse_tokens(text), args.seed)) for text in args.tokens]
    for text, path in corpora:
        # the first cell: from a measured row's token count once there is one, else from the name or size asked
        label = path.name if args.data else _fmt_tokens(parse_tokens(text))
        for K in args.K:
            one_process = {}
            for run in runs:
                r = _best([measure(run, path, K, args) for _ in range(args.repeats)])
                r.update(run=run, K=K, link=args.link, corpus=text if args.data else None)
                records.append(r)
                if "error" in r:
                    print(f"| {label} | | {K} | {run} | {r['error']} |" + " |" * 10, flush=True)
                    continue
                label = _size_label(r["tokens"], r.get("corpus"))
                print(_row(r, one_process), flush=True)
                if run == "blocked-1":
                    one_process = r
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))


def _best(results):
    """The smallest of each figure over repeated measurements (errors only if all failed)."""
    ok = [r for r in results if "error" not in r]
    if not ok:
        return results[0]
    best = dict(ok[0])
    for r in ok[1:]:
        for key in ("early", "early_cpu", "late", "late_cpu", "peak_rss", "rss_loaded"):
            if key in r:
                best[key] = min(best[key], r[key])
    return best


def _row(r, one_process) -> str:
    """One table row of a measurement (``one_process``: the blocked-1 row of the same corpus and K)."""
    def cpu(key):
        return f"{r[key]:.3f}" if key in r else ""

    late_cols = (f"{r['late']:.3f} | {r['tokens'] / r['late']:.3g} | {cpu('late_cpu')}"
                 if "late" in r else " | | ")
    fit_bytes = (r["peak_rss"] - r["rss_loaded"]) * 2**20
    entries = (r["docs"] + r["terms"]) * r["K"]
    per_fit = f"{fit_bytes / r['tokens']:.0f} | {fit_bytes / entries:.1f}"
    overhead = ""
    is_dask = r["run"].startswith("dask-")
    if is_dask:                   # the workers' peak: no loaded size of theirs to take off
        per_fit = " | "
    if is_dask and "early" in one_process:
        overhead = f"{r['early'] - one_process['early']:+.3f}"
        if "late" in r and "late" in one_process:
            overhead += f" / {r['late'] - one_process['late']:+.3f}"
    size = _size_label(r["tokens"], r.get("corpus"))
    return (f"| {size} | {r['docs']} | {r['K']} | {r['run']} | {r['early']:.3f} | "
            f"{r['tokens'] / r['early']:.3g} | {cpu('early_cpu')} | {late_cols} | "
            f"{r['rss_loaded']:.0f} | {r['peak_rss']:.0f} | {per_fit} | {overhead} |")

if __name__ == "__main__":
    main()
