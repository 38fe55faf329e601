"""Seed-to-seed spread of the classification runs of ``reproduce_classification.py``.

Reads several runs of ``tools/reproduce_classification.py`` that differ in
``--seed`` (on the Debian corpus the seed draws the training and test
subsets, on the digits the split, and everywhere every chain and the
cross-validation folds; runs on a whole fixed ``docs.tsv`` split, as on the
man pages, differ only in those) and writes one page:

* per data set, K1max and depth T, the test accuracy of every seed, their
  mean and standard deviation;
* the **paired** change of accuracy relative to T = 1 within each seed (mean
  and standard error over seeds, and in how many seeds depth T beat T = 1):
  the subsets differ in difficulty, so only the within-seed difference says
  whether depth helps;
* the raw-feature reference, where present.

Inputs are the JSON records the script writes and, for runs whose record is
missing (a run stopped early), their ``--verbose`` logs, from which every
logged ``[classification DATASET] K1max=K T=t: accuracy A`` line and the
``raw features: accuracy A`` line are read.  The seed of a log is read from
``seed<N>`` in its file name.  For the same data set, K1max and seed a
record beats a log, then the deeper run wins.

Example::

    python tools/classification_spread.py docs/results/classification_debian_medium.json \\
        docs/results/seeds/classification/*.log --name classification_debian_medium_seeds
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)
import _repro_common as rc  # noqa: E402

_DEPTH = re.compile(r"\[classification ([\w-]+)\] K1max=(\d+) T=(\d+): accuracy ([\d.]+) .*widths \[([\d, ]*)\]")
_RAW = re.compile(r"\[classification ([\w-]+)\] raw features: accuracy ([\d.]+)")
_SEED = re.compile(r"seed(\d+)")

Key = Tuple[str, int]  # (data set, K1max)


def runs_from_record(path: Path) -> List[Dict]:
    rec = rc.read_record(path, "reproduce_classification", hint="; the inputs are JSON records and --verbose logs (*.log)")
    raw = (rec.get("raw") or {}).get("accuracy")
    return [{"dataset": rec["dataset"], "seed": int(rec["seed"]), "K1max": int(run["K1max"]),
             "accuracy": [float(v) for v in run["accuracy"]],
             "widths": run["widths"][len(run["accuracy"]) - 1] if run["accuracy"] else [],
             "raw": raw, "source": path.name,
             # the whole docs.tsv split of a text corpus: the seed draws no training or test sample
             "fixed_split": rec["dataset"] != "digits" and not rec.get("n_train") and not rec.get("n_test")}
            for run in rec["runs"]]


def runs_from_log(path: Path) -> List[Dict]:
    """One run per data set and K1max logged, in the order the depths were logged."""
    m = _SEED.search(path.name)
    if m is None:
        raise SystemExit(f"error: no seed<N> in the log's file name {path.name}")
    seed = int(m.group(1))
    runs: Dict[Key, Dict] = {}
    raw: Dict[str, float] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        r = _RAW.search(line)
        if r:
            raw[r.group(1)] = float(r.group(2))
            continue
        d = _DEPTH.search(line)
        if not d:
            continue
        key = (d.group(1), int(d.group(2)))
        run = runs.setdefault(key, {"dataset": key[0], "seed": seed, "K1max": key[1], "accuracy": [],
                                    "widths": [], "raw": None, "source": path.name + " (log)"})
        depth = int(d.group(3))
        if depth != len(run["accuracy"]) + 1:
            raise SystemExit(f"error: {path}: depth {depth} of K1max={key[1]} out of order")
        run["accuracy"].append(float(d.group(4)))
        run["widths"] = [int(w) for w in d.group(5).split(",") if w.strip()]
    for run in runs.values():
        run["raw"] = raw.get(run["dataset"])
    return list(runs.values())


def collect(paths: List[Path]) -> Dict[Key, Dict[int, Dict]]:
    """``{(dataset, K1max): {seed: run}}``; a record beats a log, then the deeper run wins."""
    return rc.collect_by_seed(paths, runs_from_record, runs_from_log, lambda r: (r["dataset"], r["K1max"]),
                              "accuracy")


def _pct(v) -> str:
    return "" if v is None else f"{100 * v:.2f}"


def summarise(table: Dict[Key, Dict[int, Dict]]):
    """Rows of the three tables (accuracies in percent) and the plot series."""
    T = max(len(r["accuracy"]) for runs in table.values() for r in runs.values())
    per_seed, spread, paired, series = [], [], [], []
    for key in sorted(table):
        dataset, K = key
        runs = table[key]
        seeds = sorted(runs)
        for s in seeds:
            r = runs[s]
            per_seed.append([dataset, K, s] + rc.depth_cells(r["accuracy"], T, _pct)
                            + [_pct(r["raw"]), str(r["widths"]), r["source"]])
        cells, pcells, ys = rc.depth_columns([[100 * v for v in runs[s]["accuracy"]] for s in seeds], T, 2,
                                             "higher")
        m, _, n = rc.mean_se([100 * runs[s]["raw"] for s in seeds if runs[s]["raw"] is not None])
        spread.append([dataset, K] + cells + [f"{m:.2f} ({n})" if n else ""])
        paired.append([dataset, K] + pcells)
        series.append({"label": f"{dataset}, K1max = {K}", "x": list(range(1, T + 1)), "y": ys})
    return T, per_seed, spread, paired, series


def _seed_sentence(table) -> str:
    """What a seed draws: training and test samples, unless every run is known to use a fixed split."""
    if all(r.get("fixed_split") for runs in table.values() for r in runs.values()):
        return ("Every run uses the whole fixed `docs.tsv` training/test split, so a seed of "
                "`tools/reproduce_classification.py` draws only its own chains and cross-validation folds. "
                "Differences are paired: each seed's deeper networks are compared with its own T = 1 "
                "network, so the chains' luck cancels.")
    return ("Each seed of `tools/reproduce_classification.py` draws its own training and test samples, "
            "chains and cross-validation folds. Differences are paired: each seed's deeper networks are "
            "compared with its own T = 1 network, so the difficulty of the draw cancels.")


def write_page(table, out: Path, name: str, title: str, inputs: List[Path]) -> Path:
    T, per_seed, spread, paired, series = summarise(table)
    depths = [f"T={t}" for t in range(1, T + 1)]
    md = [f"# {title}", "",
          "Written by `python tools/classification_spread.py " + " ".join(str(p) for p in inputs)
          + f" --name {name}` from the runs listed in the last table.", "",
          _seed_sentence(table), "",
          "## Change of test accuracy relative to T = 1, paired within each seed "
          "(percentage points, mean ± standard error over seeds)", "",
          "Positive is better; in brackets, the number of seeds in which depth T beat T = 1.", "",
          rc.md_table(["data set", "K1max"] + depths, paired), "",
          f"![paired change vs depth]({name}.svg)", "",
          "## Test accuracy per depth (%, mean ± standard deviation over seeds, number of seeds)", "",
          rc.md_table(["data set", "K1max"] + depths + ["raw features (mean)"], spread), "",
          "## Every run (test accuracy, %)", "",
          rc.md_table(["data set", "K1max", "seed"] + depths + ["raw features", "widths", "source"], per_seed), ""]
    return rc.write_spread_page(out, name, md, series, T, "accuracy")


def main(argv=None) -> int:
    return rc.spread_main(argv, __doc__, "classification_seeds", "Seed-to-seed spread of the classification accuracy",
                          collect, write_page)


if __name__ == "__main__":
    raise SystemExit(main())
