#!/usr/bin/env python
"""Build pygbn's bundled demo corpus from the Debian package-description corpus.

Usage::

    python tools/build_demo_corpus.py [--source DIR] [--out DIR]

``--source`` is the folder of the full corpus (``counts.npz``, ``vocab.txt``,
``docs.tsv``); by default ``$PYGBN_DEBIAN_DIR`` when set, else
``debian-descriptions`` in the data folder of the other tools:
``$PYGBN_DATA_DIR`` when set, else ``../shared/data`` next to the
repository, else ``/work/shared/data``.  ``--out`` defaults to
``pygbn/datasets`` of this checkout.

Recipe (deterministic: the same inputs give byte-identical outputs):

1. Keep the documents (source packages) whose label (Debian section) is one
   of ``SECTIONS``.
2. Drop the columns of words in pygbn's own stop-word list
   (``pygbn/data/stopwords_en.txt``; the full corpus already removed
   scikit-learn's list).
3. Fixed point: vocabulary = the words in at least ``MIN_DF`` documents and
   at most ``MAX_DF`` of the documents, then the ``N_WORDS`` with the largest
   total counts (ties alphabetical), in alphabetical order; keep the
   documents with ``MIN_TOKENS`` to ``MAX_TOKENS`` in-vocabulary tokens;
   repeat on the kept documents until nothing changes.
4. Write ``demo_counts.npz`` (scipy.sparse CSR, int32, loadable with
   ``scipy.sparse.load_npz``; zip entries with a fixed timestamp),
   ``demo_vocab.txt`` (one word per line), ``demo_docs.tsv`` (header, then
   source package, label, split per row) and ``demo_info.json`` (recipe,
   statistics and SHA-256 of inputs and outputs).

Only numpy and scipy are needed; pygbn itself is not imported (the data
folder comes from ``tools/_repro_common.py``, which needs no more).
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

SECTIONS = ("database", "fonts", "games", "graphics", "hamradio", "mail", "science", "sound")
N_WORDS = 1500
MIN_DF = 5
MAX_DF = 0.5
MIN_TOKENS = 10
MAX_TOKENS = 400
ZIP_DATE = (2026, 1, 1, 0, 0, 0)

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _repro_common import default_data_dir  # noqa: E402


def default_source() -> Path:
    """``$PYGBN_DEBIAN_DIR``, else ``debian-descriptions`` under the tools' data folder (``default_data_dir``)."""
    env = os.environ.get("PYGBN_DEBIAN_DIR")
    return Path(env) if env else default_data_dir() / "debian-descriptions"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_stop_words(path: Path) -> set[str]:
    words = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            words.add(line)
    return words


def select(X: sp.csr_matrix, vocab: np.ndarray):
    """The fixed point of step 3; returns (row mask, sorted column indices, passes)."""
    rows = np.ones(X.shape[0], dtype=bool)
    cols = np.arange(X.shape[1])
    for passes in range(1, 51):
        sub = X[rows][:, cols]
        n_docs = sub.shape[0]
        df = np.diff(sub.tocsc().indptr)
        tf = np.asarray(sub.sum(axis=0)).ravel()
        ok = (df >= MIN_DF) & (df <= MAX_DF * n_docs)
        cand = cols[ok]
        # top N_WORDS by total count, ties alphabetical (vocab is alphabetical: lower column first)
        order = np.lexsort((cand, -tf[ok]))[:N_WORDS]
        new_cols = np.sort(cand[order])
        lengths = np.asarray(X[:, new_cols].sum(axis=1)).ravel()
        new_rows = rows & (lengths >= MIN_TOKENS) & (lengths <= MAX_TOKENS)
        if np.array_equal(new_rows, rows) and np.array_equal(new_cols, cols):
            return rows, cols, passes
        rows, cols = new_rows, new_cols
    raise RuntimeError("the document/vocabulary selection did not reach a fixed point in 50 passes")


def npz_bytes(arrays: dict) -> bytes:
    """A deflated .npz archive with fixed entry timestamps (reproducible bytes)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(name + ".npy", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            body = io.BytesIO()
            np.lib.format.write_array(body, np.asanyarray(arr), allow_pickle=False)
            zf.writestr(info, body.getvalue(), compresslevel=9)
    return buf.getvalue()


def build(source: Path, out: Path) -> dict:
    counts_path, vocab_path, docs_path = source / "counts.npz", source / "vocab.txt", source / "docs.tsv"
    for p in (counts_path, vocab_path, docs_path):
        if not p.is_file():
            raise SystemExit(f"build_demo_corpus: missing input {p}")
    X = sp.load_npz(counts_path).tocsr()
    vocab = np.array(vocab_path.read_text(encoding="utf-8").split("\n")[:-1], dtype=object)
    lines = docs_path.read_text(encoding="utf-8").split("\n")
    header, rows_txt = lines[0].split("\t"), [ln.split("\t") for ln in lines[1:] if ln]
    if header != ["source", "label", "split"] or len(rows_txt) != X.shape[0] or len(vocab) != X.shape[1]:
        raise SystemExit("build_demo_corpus: inputs do not match the expected layout")
    names = np.array([r[0] for r in rows_txt], dtype=object)
    labels = np.array([r[1] for r in rows_txt], dtype=object)
    split = np.array([r[2] for r in rows_txt], dtype=object)

    stop = read_stop_words(REPO / "pygbn" / "data" / "stopwords_en.txt")
    keep_rows = np.isin(labels, SECTIONS)
    keep_cols = np.array([w not in stop for w in vocab])
    X0 = X[keep_rows][:, keep_cols]
    vocab0, names0, labels0, split0 = vocab[keep_cols], names[keep_rows], labels[keep_rows], split[keep_rows]
    rows, cols, passes = select(X0, vocab0)
    C = X0[rows][:, cols].tocsr().astype(np.int32)
    C.sum_duplicates()
    C.sort_indices()
    V = vocab0[cols]
    nm, lb, sl = names0[rows], labels0[rows], split0[rows]

    out.mkdir(parents=True, exist_ok=True)
    arrays = {
        "indices": C.indices.astype(np.int32),
        "indptr": C.indptr.astype(np.int32),
        "format": np.array(b"csr"),
        "shape": np.array(C.shape, dtype=np.int64),
        "data": C.data.astype(np.int32),
    }
    (out / "demo_counts.npz").write_bytes(npz_bytes(arrays))
    (out / "demo_vocab.txt").write_text("".join(w + "\n" for w in V), encoding="utf-8", newline="\n")
    tsv = "source\tlabel\tsplit\n" + "".join(f"{a}\t{b}\t{c}\n" for a, b, c in zip(nm, lb, sl))
    (out / "demo_docs.tsv").write_text(tsv, encoding="utf-8", newline="\n")

    lengths = np.asarray(C.sum(axis=1)).ravel()
    label_counts = {s: int((lb == s).sum()) for s in SECTIONS}
    info = {
        "name": "pygbn demo corpus: Debian 12 (bookworm) package descriptions, 8 sections",
        "recipe": {
            "sections": list(SECTIONS),
            "n_words": N_WORDS,
            "min_df": MIN_DF,
            "max_df": MAX_DF,
            "min_tokens": MIN_TOKENS,
            "max_tokens": MAX_TOKENS,
            "stop_words": "pygbn/data/stopwords_en.txt (on top of scikit-learn's list applied upstream)",
            "fixed_point_passes": passes,
            "script": "tools/build_demo_corpus.py",
        },
        "statistics": {
            "documents": int(C.shape[0]),
            "vocabulary": int(C.shape[1]),
            "tokens": int(C.sum()),
            "nonzeros": int(C.nnz),
            "train_documents": int((sl == "train").sum()),
            "test_documents": int((sl == "test").sum()),
            "train_tokens": int(lengths[sl == "train"].sum()),
            "test_tokens": int(lengths[sl == "test"].sum()),
            "tokens_per_document_median": float(np.median(lengths)),
            "tokens_per_document_min": int(lengths.min()),
            "tokens_per_document_max": int(lengths.max()),
            "labels": label_counts,
        },
        "inputs_sha256": {p.name: sha256(p) for p in (counts_path, vocab_path, docs_path)},
        "outputs_sha256": {n: sha256(out / n) for n in ("demo_counts.npz", "demo_vocab.txt", "demo_docs.tsv")},
    }
    (out / "demo_info.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", default=str(default_source()),
                    help="folder with counts.npz, vocab.txt, docs.tsv (default: $PYGBN_DEBIAN_DIR, else "
                         "$PYGBN_DATA_DIR/debian-descriptions, else ../shared/data/debian-descriptions beside "
                         "the checkout, else /work/shared/data/debian-descriptions; now %(default)s)")
    ap.add_argument("--out", default=str(REPO / "pygbn" / "datasets"), help="output folder")
    args = ap.parse_args(argv)
    info = build(Path(args.source), Path(args.out))
    st = info["statistics"]
    sys.stdout.write(
        f"demo corpus: {st['documents']} documents, {st['vocabulary']} words, {st['tokens']} tokens "
        f"({st['train_documents']} train / {st['test_documents']} test) -> {args.out}\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
