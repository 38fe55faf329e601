"""The command line's outputs: user errors, the stdout writer and the ``-o`` files.

Every ``-o`` file is checked before any work (suffix, an existing writable
folder, not one of the command's inputs) and written whole or not at all
(:func:`pygbn._utils.replacing`).
"""
from __future__ import annotations

import os
import sys
from typing import Optional, Sequence

import numpy as np
import scipy.sparse as sp

from pygbn import text
from pygbn._utils import replacing

#: the name of standard input as an INPUT argument
STDIN = "-"
#: -o suffixes of the matrices the commands write (.txt is written like .csv, but read back as text)
_MATRIX_SUFFIXES = (".npy", ".csv", ".tsv", ".txt", ".npz", ".mtx")


class CLIError(Exception):
    """A user error: reported as one line ``pygbn: error: <message>``."""


def _out(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def _write_text(path: Optional[str], content: str) -> None:
    if path is None or path == "-":
        sys.stdout.write(content)
        return
    with replacing(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(content)


def _check_matrix_suffix(path: str, allowed=_MATRIX_SUFFIXES) -> None:
    if not path.lower().endswith(allowed):
        raise CLIError(f"output file {path!r} must end in "
                       + (allowed[0] if len(allowed) == 1 else "one of " + ", ".join(allowed)))


def _check_output(path: str, allowed=_MATRIX_SUFFIXES, inputs: Sequence[str] = ()) -> None:
    """Check an output file before any work: its suffix, a writable folder to put it in, and
    that it is none of the command's ``inputs``."""
    _check_matrix_suffix(path, allowed)
    _check_output_folder(path, inputs)


def _check_output_folder(path: str, inputs: Sequence[str] = ()) -> None:
    """Check before any work that ``path`` names a file in an existing, writable folder, and
    not one of the files the command reads (``inputs``: writing it would destroy them)."""
    if os.path.isdir(path):
        raise CLIError(f"output {path!r} is a folder: give a file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CLIError(f"the folder of output file {path!r} does not exist: {folder!r}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CLIError(f"cannot write output file {path!r}: the folder {folder!r} is not writable")
    if os.path.exists(path):
        for src in inputs:
            try:
                same = src not in (None, STDIN) and os.path.samefile(path, src)
            except OSError:  # the input is missing: its own check reports it
                same = False
            if same:
                raise CLIError(f"output file {path!r} is the input {src!r}: writing it would replace "
                               "what the command reads; give another output file")


def _write_matrix(path: str, M) -> None:
    """Write a matrix by the suffix of ``path``: .npy, .csv, .tsv, .txt, .npz or .mtx."""
    low = path.lower()
    with replacing(path) as tmp:
        if low.endswith((".npz", ".mtx")):
            text.save_counts(tmp, M)
            return
        A = M.toarray() if sp.issparse(M) else np.asarray(M)
        if low.endswith(".npy"):
            with open(tmp, "wb") as f:      # a file object: numpy appends nothing to its name
                np.save(f, A, allow_pickle=False)
            return
        _write_delimited(tmp, A, "\t" if low.endswith(".tsv") else ",")


def _write_matrix_stdout(M) -> None:
    _write_delimited(sys.stdout, M.toarray() if sp.issparse(M) else np.asarray(M), ",")


def _write_delimited(target, A: np.ndarray, delimiter: str) -> None:
    """The rows of a 2-D array as delimited text (to a file name or a text stream): integers as
    they are, floats in their shortest form that reads back as the same number (numpy's ``str``
    of a float), as ``.npy`` would keep them."""
    np.savetxt(target, A, fmt="%d" if A.dtype.kind in "biu" else "%s", delimiter=delimiter)
