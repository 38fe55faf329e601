"""Bundled data sets.

:func:`load_demo` returns the demo corpus shipped inside the package: 3,314
English package descriptions of Debian 12 "bookworm" from eight sections
(database, fonts, games, graphics, hamradio, mail, science, sound), as word
counts over a 1,488-word vocabulary (149,326 tokens), with each document's
section as its label and a fixed train/test split.  It needs no network and
no files outside the package.  Provenance, licence and the exact recipe are
in ``pygbn/datasets/README.md`` (also :attr:`DemoCorpus.descr`); the script
that builds it is ``tools/build_demo_corpus.py``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from importlib import resources

import numpy as np
import scipy.sparse as sp

__all__ = ["DemoCorpus", "load_demo"]

_FILES = ("demo_counts.npz", "demo_vocab.txt", "demo_docs.tsv", "demo_info.json", "README.md")


@dataclass(frozen=True, eq=False)
class DemoCorpus:
    """The demo corpus, like scikit-learn's ``Bunch`` (attribute or key access).

    ``demo.counts`` and ``demo["counts"]`` are the same; ``keys()``,
    ``values()``, ``items()``, iteration and ``in`` go over the attribute
    names below, as for a ``Bunch``, but ``len(demo)`` is the number of
    documents.  Two corpora are equal when every attribute is (same
    documents, counts, vocabulary, labels, split and info).

    Attributes
    ----------
    counts : scipy.sparse.csr_matrix of int32, shape (n_documents, n_terms)
        Word counts, one row per document (source package).
    vocab : list of str
        The terms, in column order (alphabetical).
    labels : ndarray of str, shape (n_documents,)
        The Debian section of each document (e.g. ``"sound"``).
    names : ndarray of str, shape (n_documents,)
        The Debian source package of each document.
    split : ndarray of str, shape (n_documents,)
        ``"train"`` or ``"test"`` (a fixed hash-based split, see README).
    label_names : tuple of str
        The distinct labels, sorted.
    target : ndarray of int, shape (n_documents,)
        ``labels`` as indices into ``label_names``.
    descr : str
        The README: provenance, licence, recipe and statistics.
    info : dict
        Recipe, statistics and SHA-256 checksums (``demo_info.json``).
    """

    counts: sp.csr_matrix
    vocab: list
    labels: np.ndarray
    names: np.ndarray
    split: np.ndarray
    label_names: tuple
    target: np.ndarray
    descr: str
    info: dict

    def __getitem__(self, key: str):
        if key not in self:
            raise KeyError(key)
        return getattr(self, key)

    def keys(self) -> list[str]:
        """The attribute names, in the order above."""
        return [f.name for f in fields(self)]

    def values(self) -> list:
        """The attributes, in the order of :meth:`keys`."""
        return [getattr(self, k) for k in self.keys()]

    def items(self) -> list[tuple]:
        """``(name, attribute)`` pairs, in the order of :meth:`keys`."""
        return [(k, getattr(self, k)) for k in self.keys()]

    def __iter__(self):
        return iter(self.keys())

    def __contains__(self, key) -> bool:
        return isinstance(key, str) and key in self.keys()

    def __len__(self) -> int:
        """The number of documents (not of keys)."""
        return self.counts.shape[0]

    def __eq__(self, other) -> bool:
        if not isinstance(other, DemoCorpus):
            return NotImplemented
        a, b = self.counts, other.counts
        if a.shape != b.shape or a.dtype != b.dtype or (a != b).nnz:
            return False
        for k in self.keys():
            mine, theirs = getattr(self, k), getattr(other, k)
            if k != "counts" and not (np.array_equal(mine, theirs) if isinstance(mine, np.ndarray)
                                      else mine == theirs):
                return False
        return True

    __hash__ = None  # compared by value; its lists, arrays and dict can change

    def subset(self, split: str) -> "DemoCorpus":
        """The documents of one split, ``"train"`` or ``"test"``."""
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        mask = self.split == split
        return replace(
            self,
            counts=self.counts[mask].tocsr(),
            labels=self.labels[mask],
            names=self.names[mask],
            split=self.split[mask],
            target=self.target[mask],
        )

    def __repr__(self) -> str:
        n, v = self.counts.shape
        return f"DemoCorpus({n} documents x {v} terms, {int(self.counts.sum())} tokens, labels={list(self.label_names)})"


def _read(name: str) -> bytes:
    return resources.files(__name__).joinpath(name).read_bytes()


def load_demo(split: str | None = None) -> DemoCorpus:
    """Load the bundled demo corpus (Debian package descriptions, 8 sections).

    Parameters
    ----------
    split : {"train", "test"}, optional
        Return only that split; default all 3,314 documents (2,144 train,
        1,170 test).

    Returns
    -------
    DemoCorpus
        ``.counts`` (CSR int32 documents x terms), ``.vocab``, ``.labels``,
        ``.names``, ``.split``, ``.label_names``, ``.target``, ``.descr``,
        ``.info``.

    Examples
    --------
    >>> from pygbn.datasets import load_demo
    >>> demo = load_demo()
    >>> demo.counts.shape
    (3314, 1488)
    >>> demo.label_names
    ('database', 'fonts', 'games', 'graphics', 'hamradio', 'mail', 'science', 'sound')
    """
    if split is not None and split not in ("train", "test"):
        raise ValueError(f"split must be None, 'train' or 'test', got {split!r}")
    import io

    with np.load(io.BytesIO(_read("demo_counts.npz")), allow_pickle=False) as z:
        shape = tuple(int(v) for v in z["shape"])
        counts = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=shape)
    vocab = _read("demo_vocab.txt").decode("utf-8").split("\n")[:-1]
    lines = _read("demo_docs.tsv").decode("utf-8").split("\n")
    rows = [ln.split("\t") for ln in lines[1:] if ln]
    names = np.array([r[0] for r in rows], dtype=str)
    labels = np.array([r[1] for r in rows], dtype=str)
    splits = np.array([r[2] for r in rows], dtype=str)
    if len(vocab) != shape[1] or len(rows) != shape[0]:  # pragma: no cover - corrupted install
        raise RuntimeError("the bundled demo corpus files are inconsistent; reinstall pygbn")
    label_names, target = np.unique(labels, return_inverse=True)
    corpus = DemoCorpus(
        counts=counts,
        vocab=vocab,
        labels=labels,
        names=names,
        split=splits,
        label_names=tuple(str(s) for s in label_names),
        target=target.astype(np.int64),
        descr=_read("README.md").decode("utf-8"),
        info=json.loads(_read("demo_info.json").decode("utf-8")),
    )
    return corpus if split is None else corpus.subset(split)
