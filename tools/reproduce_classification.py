#!/usr/bin/env python
"""Unsupervised GBN features for classification versus depth (paper Figures 9-11).

For each data set and each first-layer width bound ``K1max``, a GBN is
trained (Algorithm 1 or 2, ``eta = 0.05``) on the training samples only,
without their labels, up to ``--layers`` layers.  For every depth T the
fitted network of that depth extracts features of the training and test
samples with :meth:`pygbn.GBN.transform` (a test-time chain per sample:
``transform_iter`` burn-in and collected iterations, the feature being the
average of theta^(1)_j / theta^(1)_.j, as in the paper), and an
L2-regularised logistic regression is trained on the training features with
its inverse regularisation ``C`` chosen by stratified k-fold cross-validation
over ``2^-10, ..., 2^15`` (the paper's grid; narrower in the reduced modes,
``--c-grid``), then scored on the test
features.  The same classifier on normalised raw features (term frequencies,
pixel intensities) is reported as a reference.

Data sets (``--dataset``)::

    debian         Debian package descriptions, top-2000 vocabulary, counts,
                   Poisson link (PGBN); label = Debian section; the train/test
                   split of docs.tsv; only the --top-labels most frequent
                   sections (default 20, like the 20 newsgroups)
    debian-binary  the same documents binarised (count > 0), Bernoulli-Poisson link
    digits         the 1,797 8x8 digits scaled to [0, 1], Poisson randomized
                   gamma link; a fixed stratified split (every third image of
                   each class, after a seeded shuffle, is a test image)
    linux-manpages the Linux man pages (7,735 terms, long documents), counts,
                   Poisson link (PGBN); label = man section, only sections
                   --sections (default 2, 3, 7: the others have 1-39 pages);
                   the train/test split of docs.tsv (1,632 / 804 pages)
    all            debian, debian-binary and digits in turn (not the man pages)

Modes (``--mode``, default ``full``; ``--quick`` is ``--mode quick``)::

    full    all train/test documents of the selected sections (digits: all
            images), K1max in {50, 100, 200}, T = 1..5, B = (1000, 500),
            C = 500, transform (500, 500), 5-fold CV (the paper's settings;
            many hours on one core)
    medium  4,000 training and 2,000 test documents (digits: all images),
            K1max in {25, 100}, T = 1..5, B = (200, 100), C = 100 (digits
            (300, 150), 150), transform (100, 100), 5-fold CV
    quick   1,500 / 750 documents (digits: all images), K1max = 25,
            T = 1..3, B = (40, 20), C = 20 (digits (100, 50), 50),
            transform (20, 20), 3-fold CV (a few minutes)

The man pages keep every page of the three sections in every mode, with
K1max in {25, 100} (quick: 25) and::

    full    T = 1..5, B = (1000, 500), C = 500, transform (500, 500), 5-fold
            CV over 2^-10..2^15
    medium  T = 1..5, B = (400, 200), C = 200, transform (100, 100), 5-fold
            CV over 2^-6..2^12 (about 35 min on one core)
    quick   T = 1..3, B = (60, 30), C = 30, transform (20, 20), 3-fold CV
            over 2^-4..2^10

Options override the mode's values.  scikit-learn is needed for the
classifier (an optional tool dependency: ``pip install scikit-learn``).
Results: ``docs/results/classification_<dataset>_<mode>.{md,json,svg}``
(``--out-dir``, ``--name``).  ``--from-json RECORD`` only rewrites a finished
run's page and plot, beside the record under its stem unless ``--out-dir`` or
``--name`` is given.
While a run over several widths is going, ``<name>.partial.json`` holds the
record of the widths finished so far (removed when the run ends).

Example::

    python tools/reproduce_classification.py --quick --dataset digits
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)
import _repro_common as rc  # noqa: E402

DATASETS = ("debian", "debian-binary", "digits", "linux-manpages")
ALL = ("debian", "debian-binary", "digits")  # --dataset all
LINKS = {"debian": "poisson", "debian-binary": "bernoulli", "digits": "prg", "linux-manpages": "poisson"}

MODES = {
    "quick": dict(n_train=1500, n_test=750, widths="25", layers=3, burn_in=(40, 20), collect=20,
                  digits_burn_in=(100, 50), digits_collect=50, transform_iter=(20, 20), cv=3, c_grid=(-4, 10)),
    "medium": dict(n_train=4000, n_test=2000, widths="25,100", layers=5, burn_in=(200, 100), collect=100,
                   digits_burn_in=(300, 150), digits_collect=150, transform_iter=(100, 100), cv=5,
                   c_grid=(-6, 12)),
    "full": dict(n_train=0, n_test=0, widths="50,100,200", layers=5, burn_in=(1000, 500), collect=500,
                 digits_burn_in=(1000, 500), digits_collect=500, transform_iter=(500, 500), cv=5,
                 c_grid=(-10, 15)),
}


#: The man pages' values where they differ from MODES (every page of the kept sections, longer
#: chains than the Debian medium run: the corpus is small).
MANPAGES_MODES = {
    "quick": dict(n_train=0, n_test=0, widths="25", burn_in=(60, 30), collect=30),
    "medium": dict(n_train=0, n_test=0, widths="25,100", burn_in=(400, 200), collect=200),
    "full": dict(n_train=0, n_test=0, widths="25,100"),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", choices=DATASETS + ("all",), default="all")
    rc.add_mode_args(p, MODES, "full")
    p.add_argument("--n-train", type=int, help="random subset of training documents (0: all; not for digits)")
    p.add_argument("--n-test", type=int, help="random subset of test documents (0: all; not for digits)")
    p.add_argument("--top-labels", type=int, default=20, help="keep the N most frequent Debian sections (0: all)")
    p.add_argument("--sections", default="2,3,7", help="the man sections to classify (linux-manpages)")
    p.add_argument("--widths", help="comma-separated K1max values")
    p.add_argument("--layers", type=int, help="maximum depth T_max")
    p.add_argument("--burn-in", type=int, nargs=2, metavar=("B1", "BT"))
    p.add_argument("--collect", type=int, help="collection iterations C_t at every depth")
    p.add_argument("--transform-iter", type=int, nargs=2, metavar=("BURN", "COLLECT"))
    p.add_argument("--eta", type=float, default=0.05)
    p.add_argument("--no-raw", action="store_true", help="skip the reference classifier on raw features")
    p.add_argument("--cv", type=int, help="cross-validation folds for C")
    p.add_argument("--c-grid", type=int, nargs=2, metavar=("LO", "HI"),
                   help="C is searched over 2^LO, 2^(LO+1), ..., 2^HI (full mode: the paper's -10 15)")
    p.add_argument("--seed", type=int, default=0, help="seed of the subsets, the chains and the CV folds")
    rc.add_run_args(p, "classification_<dataset>_<mode>", from_json=True)
    p.add_argument("--save-models", type=Path, default=None, help="folder to save each fitted GBN (.npz)")
    a = p.parse_args(argv)
    if a.quick:
        a.mode = "quick"
    a.data_dir = a.data_dir or rc.default_data_dir()
    a.c_grid = tuple(MODES[a.mode]["c_grid"]) if a.c_grid is None else tuple(a.c_grid)
    a.sections = [str(v) for v in rc.parse_ints(a.sections, "--sections")]
    if a.c_grid[0] > a.c_grid[1]:
        p.error("--c-grid LO HI needs LO <= HI")
    if a.name and a.dataset == "all" and a.from_json is None:
        p.error("--name needs a single --dataset")
    rc.resolve_outputs(a, "")   # the record's folder and stem unless given (--name: per data set, in main)
    return a


def settings(a, dataset: str) -> dict:
    m = dict(MODES[a.mode], **(MANPAGES_MODES[a.mode] if dataset == "linux-manpages" else {}))
    digits = dataset == "digits"
    s = dict(
        widths=rc.parse_ints(a.widths if a.widths is not None else m["widths"], "--widths"),
        layers=m["layers"] if a.layers is None else a.layers,
        burn_in=tuple(a.burn_in) if a.burn_in is not None else tuple(m["digits_burn_in" if digits else "burn_in"]),
        collect=a.collect if a.collect is not None else m["digits_collect" if digits else "collect"],
        transform_iter=tuple(a.transform_iter) if a.transform_iter is not None else tuple(m["transform_iter"]),
        cv=a.cv if a.cv is not None else m["cv"],
        n_train=m["n_train"] if a.n_train is None else a.n_train,
        n_test=m["n_test"] if a.n_test is None else a.n_test,
    )
    if s["layers"] < 1 or min(s["burn_in"]) < 1 or s["collect"] < 1 or s["transform_iter"][1] < 1 or s["cv"] < 2:
        raise SystemExit("error: --layers, --burn-in, --collect, the collected transform iterations must be "
                         ">= 1 and --cv >= 2")
    return s


def need_sklearn():
    try:
        import sklearn  # noqa: F401
    except ImportError:
        sys.exit("error: this script needs scikit-learn for the logistic regression "
                 "(an optional tool dependency of pygbn): pip install scikit-learn")


# --------------------------------------------------------------------- data
def load(dataset: str, a, s):
    """(X_train, y_train, X_test, y_test, description) for one data set."""
    if dataset == "digits":
        X, y = rc.load_digits(a.data_dir)
        rng = np.random.default_rng([a.seed, 1797])
        test = np.zeros(y.size, dtype=bool)
        for c in np.unique(y):
            idx = rng.permutation(np.flatnonzero(y == c))
            test[idx[::3]] = True
        desc = (f"digits 8x8 scaled to [0, 1]: {int((~test).sum())} training / {int(test.sum())} test images "
                f"(stratified, every third image of each class after a shuffle with seed {a.seed})")
        return X[~test], y[~test], X[test], y[test], desc
    if dataset == "linux-manpages":
        X, words, labels, split = rc.load_manpages(a.data_dir)
        ok = np.isin(labels, a.sections)
        tr = rc.subset_rows(X.shape[0], s["n_train"], a.seed, np.flatnonzero(ok & (split == "train")))
        te = rc.subset_rows(X.shape[0], s["n_test"], a.seed + 1, np.flatnonzero(ok & (split == "test")))
        sizes = ", ".join(f"{c}: {int(np.sum(labels[tr] == c))} / {int(np.sum(labels[te] == c))}" for c in a.sections)
        desc = (f"Linux man pages (7,735-term vocabulary), counts; sections {', '.join(a.sections)} "
                f"(training / test pages per section: {sizes}); {len(tr)} training / {len(te)} test pages"
                + (" (random subsets of the docs.tsv split, seed %d)" % a.seed if (s["n_train"] or s["n_test"])
                   else " (the docs.tsv split)"))
        return X[tr], labels[tr], X[te], labels[te], desc
    X, words, labels, split = rc.load_debian(a.data_dir)
    names, counts = np.unique(labels, return_counts=True)
    order = np.lexsort((names, -counts))
    keep = names[order[:a.top_labels]] if a.top_labels > 0 else names
    ok = np.isin(labels, keep)
    tr = rc.subset_rows(X.shape[0], s["n_train"], a.seed, np.flatnonzero(ok & (split == "train")))
    te = rc.subset_rows(X.shape[0], s["n_test"], a.seed + 1, np.flatnonzero(ok & (split == "test")))
    Xtr, Xte = X[tr], X[te]
    if dataset == "debian-binary":
        Xtr = (Xtr > 0).astype(np.int8)
        Xte = (Xte > 0).astype(np.int8)
    kind = "binarised (count > 0)" if dataset == "debian-binary" else "counts"
    desc = (f"Debian descriptions, top-2000 vocabulary, {kind}; the {len(keep)} most frequent sections; "
            f"{len(tr)} training / {len(te)} test documents"
            + (" (random subsets of the docs.tsv split, seed %d)" % a.seed if (s["n_train"] or s["n_test"])
               else " (the docs.tsv split)"))
    return Xtr, labels[tr], Xte, labels[te], desc


def raw_features(X):
    """Normalised raw features: term frequencies (rows sum to one) or pixel intensities."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        n = np.asarray(X.sum(axis=1)).ravel()
        n[n == 0] = 1.0
        return sp.diags(1.0 / n) @ X
    return np.asarray(X, dtype=np.float64)


def classify(F_train, y_train, F_test, y_test, cv: int, seed: int, c_grid=(-10, 15)):
    """L2 logistic regression, C by stratified k-fold CV; returns (test accuracy, chosen C)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.model_selection import StratifiedKFold

    folds = StratifiedKFold(n_splits=cv, shuffle=True, random_state=seed)
    clf = LogisticRegressionCV(Cs=2.0 ** np.arange(c_grid[0], c_grid[1] + 1), cv=folds, scoring="accuracy",
                               max_iter=1000, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", FutureWarning)  # scikit-learn 1.9 announces API changes of LogisticRegressionCV
        clf.fit(F_train, y_train)
    acc = float(np.mean(clf.predict(F_test) == y_test))
    return acc, float(np.ravel(clf.C_)[0])


# --------------------------------------------------------------------- main
def run_dataset(dataset: str, a, checkpoint=None) -> dict:
    """Train, extract features and classify for every width; the run's record.

    ``checkpoint(record)``, when given, receives the record of the widths finished so far
    after every width but the last (so a long run that is cut short keeps them).
    """
    import pygbn

    s = settings(a, dataset)
    timer = rc.Timer()
    env = rc.environment()
    Xtr, ytr, Xte, yte, desc = load(dataset, a, s)
    tag = f"[classification {dataset}]"
    print(f"{tag} {desc}; widths {s['widths']}, T<={s['layers']}, B={s['burn_in']}, C={s['collect']}, "
          f"transform {s['transform_iter']}", file=sys.stderr, flush=True)
    raw = None
    if not a.no_raw:
        t = rc.Timer()
        raw_acc, raw_C = classify(raw_features(Xtr), ytr, raw_features(Xte), yte, s["cv"], a.seed, a.c_grid)
        raw = {"accuracy": raw_acc, "C": raw_C, "wall_s": t.wall}
        print(f"{tag} raw features: accuracy {raw_acc:.4f}", file=sys.stderr, flush=True)
    Xall = sp.vstack([Xtr, Xte]).tocsr() if sp.issparse(Xtr) else np.vstack([Xtr, Xte])
    n_tr = Xtr.shape[0]
    runs = []

    head = {"script": "reproduce_classification", "dataset": dataset, "link": LINKS[dataset],
            "command": rc.command_line(), "mode": a.mode, "seed": a.seed, "data": desc,
            "n_train": int(Xtr.shape[0]), "n_test": int(Xte.shape[0]), "n_classes": int(np.unique(ytr).size),
            "eta": a.eta, "c_grid": list(a.c_grid), "n_jobs": a.n_jobs,
            **{k: (list(v) if isinstance(v, tuple) else v) for k, v in s.items()}, "raw": raw}
    if dataset == "linux-manpages":  # a skewed label distribution: the accuracy of always answering its mode
        names, counts = np.unique(ytr, return_counts=True)
        head["majority"] = {"label": str(names[np.argmax(counts)]),
                            "accuracy": float(np.mean(yte == names[np.argmax(counts)]))}

    def record():
        return {**head, "runs": runs, "wall_s": timer.wall, "cpu_s": timer.cpu, "environment": env}

    for K in s["widths"]:
        t = rc.Timer()
        # the paper's layer one (collapsed for counts) whatever --n-jobs is ("auto" would take
        # the partial method on several threads)
        method = "collapsed" if LINKS[dataset] == "poisson" else "blocked"
        model = pygbn.GBN(link=LINKS[dataset], n_components=K, n_layers=s["layers"], eta=a.eta,
                          burn_in=s["burn_in"], n_collect=s["collect"], transform_iter=s["transform_iter"],
                          method=method, n_jobs=a.n_jobs, random_state=a.seed, verbose=a.verbose)
        model.fit(Xtr)
        fit_s = t.wall
        run = {"K1max": K, "widths": [list(n.widths) for n in model.networks_],
               "seconds_per_iteration": [float(v) for v in model.seconds_per_iteration_], "fit_wall_s": fit_s,
               "accuracy": [], "C": [], "transform_wall_s": [], "classify_wall_s": []}
        if a.save_models is not None:
            a.save_models.mkdir(parents=True, exist_ok=True)
            model.save(a.save_models / f"classification_{dataset}_{a.mode}_K{K}.npz")
        for d in range(1, len(model.networks_) + 1):
            t = rc.Timer()
            F = model.transform(Xall, depth=d)
            run["transform_wall_s"].append(t.wall)
            t = rc.Timer()
            acc, C = classify(F[:n_tr], ytr, F[n_tr:], yte, s["cv"], a.seed, a.c_grid)
            run["classify_wall_s"].append(t.wall)
            run["accuracy"].append(acc)
            run["C"].append(C)
            print(f"{tag} K1max={K} T={d}: accuracy {acc:.4f} (C={C:g}); widths {run['widths'][d - 1]}",
                  file=sys.stderr, flush=True)
        runs.append(run)
        if checkpoint is not None and K != s["widths"][-1]:
            checkpoint(record())
    return record()


def write_report(rec, out: Path, name: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    T = max(len(r["accuracy"]) for r in rec["runs"])
    depths = list(range(1, T + 1))
    link_desc = {"poisson": "Poisson (PGBN, collapsed layer one)", "bernoulli": "Bernoulli-Poisson (BerPo-GBN)",
                 "prg": "Poisson randomized gamma (PRG-GBN)"}[rec["link"]]
    extra = [("mode", rec["mode"]), ("data", rec["data"]), ("link", link_desc),
             ("schedule", f"B_1 = {rec['burn_in'][0]}, B_t = {rec['burn_in'][1]} (t >= 2), C_t = {rec['collect']}; "
                          f"eta = {rec['eta']}"),
             ("features", f"transform: {rec['transform_iter'][0]} burn-in + {rec['transform_iter'][1]} collected "
                          "test-time iterations per sample (training and test samples alike)"),
             ("classifier", f"scikit-learn LogisticRegressionCV (L2, lbfgs, multinomial, max_iter 1000), C in "
                            f"2^{rec['c_grid'][0]}..2^{rec['c_grid'][1]} by {rec['cv']}-fold stratified CV "
                            "on the training features"),
             ("seed", str(rec["seed"]))]
    if rec["mode"] != "full":
        extra.append(("note", "a reduced run, NOT the paper's protocol (which is `--mode full`)"))
    title = {"debian": "Debian sections from PGBN features", "debian-binary": "Debian sections from BerPo-GBN "
             "features (binarised counts)", "digits": "Digits from PRG-GBN features",
             "linux-manpages": "Man-page sections from PGBN features"}[rec["dataset"]]
    text = [rc.run_header(f"{title} ({rec['mode']} run)", rec["environment"], rec["wall_s"], rec["cpu_s"], extra,
                          rec["command"])]
    rows = [[r["K1max"]] + [f"{100 * r['accuracy'][t - 1]:.2f}" if t <= len(r["accuracy"]) else None
                            for t in depths] for r in rec["runs"]]
    text += ["## Test accuracy (%) versus depth", "", rc.md_table(["K1max"] + [f"T={t}" for t in depths], rows), "",
             (f"Reference: the same classifier on normalised raw features ({rec['n_classes']} classes): "
              f"{100 * rec['raw']['accuracy']:.2f}% (C = {rec['raw']['C']:g}; {rc.fmt_seconds(rec['raw']['wall_s'])})."
              if rec["raw"] else f"({rec['n_classes']} classes; the raw-feature reference was not run.)")
             + (f" Always answering the most frequent training label ({rec['majority']['label']}): "
                f"{100 * rec['majority']['accuracy']:.2f}%." if rec.get("majority") else ""), "",
             f"![accuracy vs depth]({name}.svg)", ""]
    rows = []
    for r in rec["runs"]:
        rows.append([r["K1max"], str(r["widths"][-1]), ", ".join(f"{s:.3f}" for s in r["seconds_per_iteration"]),
                     rc.fmt_seconds(r["fit_wall_s"]), ", ".join(rc.fmt_seconds(x) for x in r["transform_wall_s"]),
                     ", ".join(f"{c:g}" for c in r["C"])])
    text += ["## Inferred widths, cost and chosen C", "",
             "Widths `[K_1, ..., K_T]` of the deepest network; seconds per training iteration at each depth "
             f"({rc.timing_context(rec)}); wall time of the fit and of each depth's transform "
             "(training + test samples); the C picked by cross-validation at each depth.", "",
             rc.md_table(["K1max", "widths", "s/iteration at T=1..", "fit", "transform at T=1..", "C at T=1.."],
                         rows), ""]
    (out / f"{name}.md").write_text("\n".join(text), encoding="utf-8")
    series = [{"label": f"K1max={r['K1max']}", "x": list(range(1, len(r["accuracy"]) + 1)),
               "y": [100 * v for v in r["accuracy"]]} for r in rec["runs"]]
    hl = [{"label": "raw features", "y": 100 * rec["raw"]["accuracy"], "colour": "#777777"}] if rec["raw"] else []
    if rec.get("majority"):
        hl.append({"label": "majority label", "y": 100 * rec["majority"]["accuracy"], "colour": "#bbbbbb"})
    rc.svg_line_plot(out / f"{name}.svg", series, f"{title} ({rec['mode']})", "network depth T",
                     "test accuracy (%)", xticks=depths, hlines=hl)


def main(argv=None) -> int:
    a = parse_args(argv)
    rc.set_command(__file__, argv)
    if a.from_json is not None:
        rec = rc.read_record(a.from_json, "reproduce_classification")
        write_report(rec, a.out_dir, a.name)
        print(f"[classification] wrote {a.out_dir / (a.name + '.md')}", file=sys.stderr)
        return 0
    need_sklearn()
    for dataset in (ALL if a.dataset == "all" else (a.dataset,)):
        name = a.name or f"classification_{dataset}_{a.mode}"
        partial = a.out_dir / f"{name}.partial.json"
        rec = run_dataset(dataset, a, checkpoint=lambda r: rc.write_json(partial, r))
        rc.write_json(a.out_dir / f"{name}.json", rec)
        if partial.exists():
            partial.unlink()
        write_report(rec, a.out_dir, name)
        print(f"[classification {dataset}] wrote {a.out_dir / (name + '.md')} ({rc.fmt_seconds(rec['wall_s'])})",
              file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
