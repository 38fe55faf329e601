"""Seed-to-seed spread of the held-out perplexity runs of ``reproduce_perplexity.py``.

Reads several runs of ``tools/reproduce_perplexity.py`` that differ in
``--seed`` (the seed picks the document subset, the 30/70 token split and
every chain, as the paper's "random trials" do) and writes one page:

* per K1max and depth T, the perplexity of every seed, their mean and
  standard deviation;
* the **paired** change relative to T = 1 within each seed (mean and
  standard error over seeds): the subsets differ in difficulty, so the
  between-seed spread of the perplexity itself is much larger than the
  spread of a within-seed difference, and only the latter says whether
  depth helps;
* the same for the single-layer control run (``--control``) and LDA, where
  present.

Inputs are the JSON records the script writes, and, for runs whose record
is missing (a run stopped early, or lost), their ``--verbose`` logs: every
finished depth logs ``depth T done: widths [...], ... held-out perplexity P``
and the script logs its control and LDA results.  The seed of a log is read
from ``seed<N>`` in its file name.  Records and logs of the same seed and
K1max are merged (a record wins).  Partial records (``<name>.partial.json``
of a run that was stopped) count as records.  A ``--control-only`` record
(``control_of``) gives the control, and LDA where the run has none, of the
run with the same seed and K1max; the log of a control-only run holds no
layer-wise run and is skipped.  All inputs must be of one corpus.

Example::

    python tools/perplexity_spread.py docs/results/perplexity_medium.json \\
        docs/results/seeds/*.json docs/results/seeds/logs/*_run1.log \\
        --name perplexity_medium_seeds
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)
import _repro_common as rc  # noqa: E402

_HEAD = re.compile(r"\[perplexity\] (\d+) docs, (\d+) training / (\d+) held-out tokens; widths \[(\d+)\]")
_CTRL = re.compile(r"control T=1 x (\d+) iterations: ([\d.]+)")
_LDA = re.compile(r"LDA K=(\d+): ([\d.]+)")
_SEED = re.compile(r"seed(\d+)")


def runs_from_record(path: Path) -> List[Dict]:
    rec = rc.read_record(path, "reproduce_perplexity", hint="; the inputs are JSON records and --verbose logs (*.log)")
    out = []
    for run in rec["runs"]:
        if not run["perplexity"]:
            continue
        out.append({"seed": int(rec["seed"]), "K1max": int(run["K1max"]), "dataset": rec.get("dataset", "debian"),
                    "control_only": "control_of" in rec, "total_iterations": run.get("total_iterations"),
                    "perplexity": [float(v) for v in run["perplexity"]],
                    "widths": run["widths"][-1] if run["widths"] else [],
                    "control": (run.get("control") or {}).get("perplexity"),
                    "control_iterations": (run.get("control") or {}).get("iterations"),
                    "lda": (run.get("lda") or {}).get("perplexity"),
                    "n_docs": rec["n_docs"], "n_docs_corpus": rec.get("n_docs_corpus"), "mode": rec["mode"],
                    "source": path.name})
    return out


def runs_from_log(path: Path) -> List[Dict]:
    """One run per ``[perplexity] ... widths [K]`` header of a single-width log."""
    m = _SEED.search(path.name)
    if m is None:
        raise SystemExit(f"error: no seed<N> in the log's file name {path.name}")
    seed = int(m.group(1))
    runs: List[Dict] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        h = _HEAD.search(line)
        if h:
            runs.append({"seed": seed, "K1max": int(h.group(4)), "dataset": None, "perplexity": [], "widths": [],
                         "control": None, "control_iterations": None, "lda": None,
                         "n_docs": int(h.group(1)), "mode": "", "source": path.name + " (log)"})
            continue
        if not runs:
            continue
        d = rc.parse_depth_done(line)
        if d and d[3] is not None:
            depth = d[0]
            if depth != len(runs[-1]["perplexity"]) + 1:
                raise SystemExit(f"error: {path}: depth {depth} out of order")
            runs[-1]["perplexity"].append(d[3])
            runs[-1]["widths"] = d[1]
            continue
        c = _CTRL.search(line)
        if c:
            runs[-1]["control_iterations"], runs[-1]["control"] = int(c.group(1)), float(c.group(2))
            continue
        lda = _LDA.search(line)
        if lda:
            runs[-1]["lda"] = float(lda.group(2))
    return [r for r in runs if r["perplexity"]]


def collect(paths: List[Path]) -> Dict[int, Dict[int, Dict]]:
    """``{K1max: {seed: run}}``; for the same K1max and seed a record beats a log, then the deeper run wins.

    The runs of ``--control-only`` records become the ``control`` (and, where the run has
    none, the LDA result) of the run with the same K1max and seed.
    """
    controls: List[Dict] = []

    def from_record(path):
        runs = runs_from_record(path)
        controls.extend(r for r in runs if r["control_only"])
        return [r for r in runs if not r["control_only"]]

    table = rc.collect_by_seed(paths, from_record, runs_from_log, lambda r: r["K1max"], "perplexity")
    corpora = {r["dataset"] for slot in table.values() for r in slot.values() if r["dataset"]}
    corpora |= {c["dataset"] for c in controls}
    if len(corpora) > 1:
        raise SystemExit(f"error: the inputs mix corpora: {', '.join(sorted(corpora))}")
    for c in controls:
        run = table.get(c["K1max"], {}).get(c["seed"])
        if run is None:
            print(f"[spread] warning: {c['source']}: no layer-wise run with K1max={c['K1max']} and seed "
                  f"{c['seed']} among the inputs; its control is left out", file=sys.stderr)
            continue
        if run["control"] is not None:
            raise SystemExit(f"error: K1max={c['K1max']}, seed {c['seed']} has a control already "
                             f"(again in {c['source']})")
        run["control"], run["control_iterations"] = c["perplexity"][0], c["total_iterations"]
        run["lda"] = c["lda"] if run["lda"] is None else run["lda"]
        run["source"] += f" + {c['source']}"
    return table


def _fmt(v: Optional[float], nd: int = 1) -> str:
    return "" if v is None or not np.isfinite(v) else f"{v:.{nd}f}"


def summarise(table: Dict[int, Dict[int, Dict]]):
    """Rows of the three tables and the plot series."""
    T = max(len(r["perplexity"]) for runs in table.values() for r in runs.values())
    per_seed, spread, paired, series = [], [], [], []
    for K in sorted(table):
        runs = table[K]
        seeds = sorted(runs)
        for s in seeds:
            r = runs[s]
            per_seed.append([K, s] + rc.depth_cells(r["perplexity"], T, _fmt)
                            + [_fmt(r["control"]), _fmt(r["lda"]), str(r["widths"]), r["source"]])
        cells, pcells, ys = rc.depth_columns([runs[s]["perplexity"] for s in seeds], T, 1, "lower")
        spread.append([K] + cells)
        ctrl = [runs[s]["control"] - runs[s]["perplexity"][0] for s in seeds if runs[s]["control"] is not None]
        deep = [min(runs[s]["perplexity"][1:]) - runs[s]["control"] for s in seeds
                if runs[s]["control"] is not None and len(runs[s]["perplexity"]) > 1]
        lda = [runs[s]["perplexity"][0] - runs[s]["lda"] for s in seeds if runs[s]["lda"] is not None]
        paired.append([K] + pcells + [rc.fmt_mean_se(vals) for vals in (ctrl, deep, lda)])
        series.append({"label": f"K1max = {K}", "x": list(range(1, T + 1)), "y": ys})
    return T, per_seed, spread, paired, series


def _seed_sentence(table: Dict[int, Dict[int, Dict]]) -> str:
    """What a seed draws: a document subset, unless every run is known to use the whole corpus."""
    runs = [r for slot in table.values() for r in slot.values()]
    whole = all(r.get("n_docs_corpus") is not None and r["n_docs"] == r["n_docs_corpus"] for r in runs)
    if whole:
        return ("Every run uses all " + str(runs[0]["n_docs"]) + " documents of the corpus, so a seed of "
                "`tools/reproduce_perplexity.py` draws only its own 30/70 token split and chains (the "
                "paper's \"random trials\"). Differences are paired: each seed's deeper networks are "
                "compared with its own T = 1 network, so the split's and the chains' luck cancels.")
    return ("Each seed of `tools/reproduce_perplexity.py` draws its own document subset, 30/70 token "
            "split and chains (the paper's \"random trials\"). Differences are paired: each seed's "
            "deeper networks are compared with its own T = 1 network, so the subset's difficulty "
            "cancels.")


def write_page(table, out: Path, name: str, title: str, inputs: List[Path]) -> Path:
    T, per_seed, spread, paired, series = summarise(table)
    depths = [f"T={t}" for t in range(1, T + 1)]
    md = [f"# {title}", "",
          "Written by `python tools/perplexity_spread.py " + " ".join(str(p) for p in inputs)
          + f" --name {name}` from the runs listed in the last table.", "",
          _seed_sentence(table), "",
          "## Change relative to T = 1, paired within each seed (mean ± standard error over seeds)", "",
          "Negative is better. *control - T=1*: the single-layer run for as many iterations as the "
          "whole layer-wise run, against T = 1 (the gain of a longer chain alone). *best deep - "
          "control*: the best depth T >= 2 against that control (negative: depth beats the longer "
          "single-layer chain). *T=1 - LDA*: the single-layer PGBN against LDA at the same K.", "",
          rc.md_table(["K1max"] + depths + ["control - T=1", "best deep - control", "T=1 - LDA"], paired), "",
          f"![paired change vs depth]({name}.svg)", "",
          "## Perplexity per depth (mean ± standard deviation over seeds, number of seeds)", "",
          rc.md_table(["K1max"] + depths, spread), "",
          "## Every run", "",
          rc.md_table(["K1max", "seed"] + depths + ["control", "LDA", "widths", "source"], per_seed), ""]
    return rc.write_spread_page(out, name, md, series, T, "perplexity")


def main(argv=None) -> int:
    return rc.spread_main(argv, __doc__, "perplexity_seeds", "Seed-to-seed spread of the held-out perplexity",
                          collect, write_page)


if __name__ == "__main__":
    raise SystemExit(main())
