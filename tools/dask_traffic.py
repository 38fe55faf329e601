"""What a DaskGBN iteration costs beside one process: time, bytes on the wire, memory.

Usage::

    python tools/dask_traffic.py                       # 500k tokens, K = 100, 30 iterations
    python tools/dask_traffic.py --tokens 2M --K 400 --iterations 20 --workers 1 2 4

On a seeded synthetic LDA-like corpus (``V`` terms, about 65 tokens per
document) it fits one layer of ``K`` factors (no pruning) with
``GBN(method="blocked", n_jobs=1)`` in this process and with ``DaskGBN`` on a
``LocalCluster`` of single-threaded worker processes (one partition per
worker), and reports

* seconds per iteration (mean after the first two; the smallest over
  ``--repeats`` fits, the runs interleaved, since a shared machine is noisy)
  and the Dask overhead per iteration beside the one-process fit with as
  many kernel threads as there are workers (``n_jobs = n_workers``); and where
  a Dask iteration goes: the partitions' own work (the slowest partition's
  time inside ``LocalPart.run``), the global update in the driver, and the
  rest (serialising, sending and receiving the message and the statistics,
  encoding and adding them up);
* per partition and iteration: the bytes sent to it (the message: the
  globals, i.e. every Phi^(t) and r, and the operations) and the bytes it
  returns (the sparse statistics: non-zero entries of x^(1)_{vk} as int32
  index/value pairs, the top-layer tables, the per-block sums); the
  pickled sizes, which is what goes on the wire;
* per partition: the bytes of its resident state
  (:meth:`pygbn.inference.partition.LocalPart.nbytes`) and the peak resident
  size of each worker process.

The networks are checked to be those of the one-process fit.  Timings are
wall clock on whatever machine runs this (workers and driver share its
cores); no assertion is made.
"""
from __future__ import annotations

import argparse
import pickle
import resource
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)

import _repro_common as rc  # noqa: E402

import pygbn  # noqa: E402


def synthetic_corpus(n_tokens: int, n_terms: int, seed: int = 0) -> sp.csr_matrix:
    """About ``n_tokens`` tokens over ``n_terms`` terms: 50 topics ``Dir(0.05)``,
    ``theta_j ~ Dir(0.1)``, document lengths ``1 + Pois(64)``."""
    rng = np.random.default_rng(seed)
    J = max(1, n_tokens // 65)
    phi = rng.dirichlet(np.full(n_terms, 0.05), size=50)
    n_jk = rng.multinomial(1 + rng.poisson(64, size=J), rng.dirichlet(np.full(50, 0.1), size=J))
    docs, words = [], []
    for k in range(50):
        docs.append(np.repeat(np.arange(J), n_jk[:, k]))
        cdf = np.cumsum(phi[k])
        words.append(np.minimum(np.searchsorted(cdf, rng.random(docs[-1].size) * cdf[-1]), n_terms - 1))
    docs, words = np.concatenate(docs), np.concatenate(words)
    X = sp.csr_matrix((np.ones(docs.size, dtype=np.int64), (docs, words)), shape=(J, n_terms))
    X.sum_duplicates()
    return X


def _tokens(text: str) -> int:
    t = text.strip().lower()
    return int(float(t[:-1]) * {"k": 1e3, "m": 1e6}[t[-1]]) if t[-1] in "km" else int(t)


def _time_local_parts():
    """(On a worker) record the seconds of every ``LocalPart.run``."""
    import time as _time

    from pygbn.inference import partition

    if getattr(partition.LocalPart, "_timed", False):
        partition.LocalPart.run_seconds.clear()
        return
    run = partition.LocalPart.run
    partition.LocalPart.run_seconds = []

    def timed(self, message):
        t0 = _time.perf_counter()
        out = run(self, message)
        partition.LocalPart.run_seconds.append(_time.perf_counter() - t0)
        return out

    partition.LocalPart.run = timed
    partition.LocalPart._timed = True


def _local_part_seconds():
    from pygbn.inference import partition

    return list(partition.LocalPart.run_seconds)


def _peak_rss_mb() -> float:
    """The process's peak resident size (VmHWM: unlike ru_maxrss, not inherited
    from the process that forked it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _mb(n) -> str:
    return f"{n / 2**20:.2f}"


def dask_fit_times(X, K: int, n_workers: int, n_iterations: int, seed: int = 0):
    """Seconds of each iteration of ``DaskGBN`` (one layer of ``K`` factors, no
    pruning, ``n_jobs=1``) on ``X`` cut into ``n_workers`` partitions, on a
    ``LocalCluster`` of ``n_workers`` single-threaded worker processes; and the
    workers' peak resident sizes in MB.  (The Dask rows of tools/bench_scale.py.)"""
    import dask.array as da
    from distributed import Client, LocalCluster

    from pygbn.dask import DaskGBN

    times = []
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        DaskGBN(client=client, method="blocked", n_components=K, n_layers=1, burn_in=n_iterations,
                n_collect=0, prune=False, n_jobs=1, random_state=seed,
                callback=lambda info: times.append(info["seconds"])).fit(
            da.from_array(X, chunks=(-(-X.shape[0] // n_workers), -1), asarray=False))
        rss = list(client.run(_peak_rss_mb).values())
    return times, rss


def run(args) -> None:
    import dask.array as da
    from distributed import Client, LocalCluster

    from pygbn.dask import DaskGBN
    from pygbn.dask._transport import ActorTransport

    X = synthetic_corpus(args.tokens, args.V, args.seed)
    print(f"# corpus: {X.shape[0]} documents, {int(X.sum())} tokens, {X.nnz} non-zeros, "
          f"V = {X.shape[1]}; K = {args.K}; {args.iterations} iterations")
    params = dict(n_components=args.K, n_layers=1, burn_in=args.iterations, n_collect=0,
                  prune=False, random_state=args.seed)

    def one_process(n_jobs):
        times = []
        model = pygbn.GBN(method="blocked", n_jobs=n_jobs, callback=lambda i: times.append(i["seconds"]),
                          **params).fit(X)
        return model, float(np.mean(times[2:]))

    ref, one1 = one_process(1)
    rows_out, split = [], []
    original_send, original_close = ActorTransport.send, ActorTransport.close
    for n_workers in args.workers:
        record = {"out": [], "in": [], "nnz": [], "nbytes": None, "send": [], "glob": []}

        def send(self, message):
            t0 = time.perf_counter()
            results = original_send(self, message)
            record["send"].append(time.perf_counter() - t0)
            if any(op[0] == "up" for op in message):
                record["out"].append(len(pickle.dumps(message, protocol=5)))
                record["in"].append(np.mean([len(pickle.dumps(r, protocol=5)) for r in results]))
                record["nnz"].append(np.mean([r[-1][0]["counts"][0][1].size for r in results]))
            return results

        def close(self):
            if self.actors:
                record["nbytes"] = [r[-1] for r in original_send(self, [("nbytes",)])]
            original_close(self)

        ActorTransport.send, ActorTransport.close = send, close
        try:
            with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                rows = -(-X.shape[0] // n_workers)
                dask_s, parts_s, send_s, one = np.inf, np.inf, np.inf, np.inf
                for _ in range(args.repeats):
                    times, record["send"] = [], []
                    client.run(_time_local_parts)
                    model = DaskGBN(client=client, method="blocked", n_jobs=1,
                                    callback=lambda i: times.append(i["seconds"]),
                                    **params).fit(da.from_array(X, chunks=(rows, -1), asarray=False))
                    if float(np.mean(times[2:])) < dask_s:
                        dask_s = float(np.mean(times[2:]))
                        # per message: the slowest partition (the first message starts them)
                        per_part = np.array(list(client.run(_local_part_seconds).values()))
                        parts_s = float(np.mean(per_part.max(axis=0)[2:len(times)]))
                        send_s = float(np.mean(record["send"][2:len(times)]))
                    one = min(one, one_process(n_workers)[1])
                rss = client.run(_peak_rss_mb)
        finally:
            ActorTransport.send, ActorTransport.close = original_send, original_close
        same = all(np.array_equal(a.phis[0], b.phis[0]) and np.array_equal(a.r, b.r)
                   for a, b in zip(ref.networks_, model.networks_))
        state = np.mean([sum(nb.values()) for nb in record["nbytes"]])
        parts = ", ".join(f"{k} {_mb(np.mean([nb[k] for nb in record['nbytes']]))}"
                          for k in record["nbytes"][0])
        split.append(f"| DaskGBN, {n_workers} worker{'s' if n_workers > 1 else ''} | {dask_s:.3f} | "
                     f"{parts_s:.3f} | {dask_s - send_s:.3f} | {send_s - parts_s:.3f} |")
        rows_out.append(
            f"| DaskGBN, {n_workers} worker{'s' if n_workers > 1 else ''} | {dask_s:.3f} | "
            f"{dask_s - one:+.3f} (one process, n_jobs={n_workers}: {one:.3f}) | {_mb(np.median(record['out']))} | "
            f"{_mb(np.median(record['in']))} | {np.median(record['nnz']):.0f} | {_mb(state)} ({parts}) | "
            f"{', '.join(f'{v:.0f}' for v in rss.values())} |")
        if not same:
            print("# WARNING: the Dask networks differ from the one-process fit", file=sys.stderr)
    print("| run | s/iteration | overhead s/iteration | out per partition MB/it | "
          "in per partition MB/it | layer-one stats nnz per partition | state per partition MB | "
          "worker peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| one process (blocked, n_jobs=1) | {one1:.3f} | | | | | | "
          f"{_peak_rss_mb():.0f} (this process) |")
    print("\n".join(rows_out))
    print("\n| run | s/iteration | partitions' own work | global update (driver) | messages |")
    print("|---|---|---|---|---|")
    print("\n".join(split))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=_tokens, default=500_000)
    ap.add_argument("--V", type=rc.int_at_least(1), default=20_000)
    ap.add_argument("--K", type=rc.int_at_least(1), default=100)
    ap.add_argument("--iterations", type=rc.int_at_least(3), default=30,
                    help="iterations per fit (at least 3: the figures are means after the first two)")
    ap.add_argument("--workers", type=rc.int_at_least(1), nargs="+", default=[1, 2])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=rc.int_at_least(1), default=3, help="fits per run (the fastest is reported)")
    args = ap.parse_args(argv)
    try:
        import pygbn.dask  # noqa: F401  (needs dask and distributed)
    except ImportError as exc:
        sys.exit(f"dask_traffic: {exc}")
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
