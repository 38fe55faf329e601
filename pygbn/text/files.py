"""Reading and writing documents, vocabularies and count matrices.

Everything here is re-exported by :mod:`pygbn.text` (use it from there):
:func:`read_lines` (one document per line, from a file or a stream),
:func:`read_folder` (one document per file), :func:`read_documents` (either),
:class:`DecodeError`, :func:`read_vocab` / :func:`write_vocab` (one term per
line), :func:`read_stop_words`, :func:`load_counts` (Matrix Market ``.mtx``, ``.npz``, ``.npy``,
``.csv`` or ``.tsv``) / :func:`save_counts` (``.mtx`` or ``.npz``) and
:func:`align_vocabulary`.
"""
from __future__ import annotations

import codecs
import fnmatch
import logging
import os
from typing import Optional, Sequence

import numpy as np
import scipy.io
import scipy.sparse as sp

from pygbn._utils import check_terms

logger = logging.getLogger("pygbn")

__all__ = ["read_lines", "read_folder", "DecodeError", "read_documents", "read_vocab", "write_vocab",
           "read_stop_words", "load_counts", "save_counts", "COUNT_SUFFIXES", "align_vocabulary"]

_INT32_MAX = np.iinfo(np.int32).max
_INT64_MAX = np.iinfo(np.int64).max


# ---------------------------------------------------------------------------
# reading documents
# ---------------------------------------------------------------------------


class DecodeError(ValueError):
    """A document that cannot be decoded with the given encoding.

    A ``ValueError`` whose message names the file, the encoding and the
    byte; the attributes hold them for callers that word their own advice
    (the command line points to ``--encoding`` and ``--errors``).

    Attributes
    ----------
    name : str
        The file (or stream) name.
    encoding : str
    reason : str
        The codec's reason, e.g. ``"invalid start byte"``.
    position : int
        Offset of the first undecodable byte.
    """

    def __init__(self, name: str, encoding: str, reason: str, position: int,
                 advice: str = "pass encoding= or errors='replace'"):
        self.name, self.encoding, self.reason, self.position = name, encoding, reason, position
        super().__init__(f"could not decode {name!r} as {encoding}: {reason} at byte {position}; {advice}")


def _is_utf8(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


#: the leading bytes of compressed files, which no text starts with (bzip2: its signature and the
#: start of its first block; zip: a local file header)
_COMPRESSED_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"),
                     (b"PK\x03\x04", "zip"))
_BZIP2_BLOCK = b"1AY&SY"


def _ascii_compatible(encoding: str) -> bool:
    """Whether ``encoding`` writes ASCII as ASCII (UTF-8, latin-1, cp1252, ...): there the
    compression signatures are not text; in UTF-16 or UTF-32 the same bytes are characters."""
    sample = "PK\x03\x04BZh91AY&SY(/7zXZ"
    try:
        return sample.encode(encoding) == sample.encode("ascii")
    except (LookupError, UnicodeError):     # an unknown encoding fails in the decoding itself
        return False


def _compression(data: bytes) -> Optional[str]:
    """The compression format whose signature ``data`` starts with, else None."""
    for magic, fmt in _COMPRESSED_MAGIC:
        if data.startswith(magic):
            return fmt
    if data[:3] == b"BZh" and data[3:4] in b"123456789" and data[4:10] == _BZIP2_BLOCK:
        return "bzip2"
    return None


def _decode(data, encoding: str, errors: str, name: str) -> str:
    """Bytes (or str) as text with universal newlines (``\\r\\n`` and ``\\r`` become ``\\n``).

    A byte order mark at the start of UTF-8 bytes is dropped (as the
    ``utf-8-sig`` codec does), so that it never becomes part of the first
    document or term; byte offsets in a :class:`DecodeError` still count it.
    Compressed bytes (gzip, bzip2, xz, zstd, zip) are a ValueError in any
    ASCII-compatible encoding, whatever errors says: decoded, they are words of
    noise (in UTF-16 or UTF-32 the same bytes are characters, and are text).
    """
    if isinstance(data, bytes):
        fmt = _compression(data) if _ascii_compatible(encoding) else None
        if fmt is not None:
            raise ValueError(f"{name!r} is {fmt}-compressed, not text: decompress it first (only Matrix "
                             "Market count files are read compressed, as .mtx.gz or .mtx.bz2)")
        try:
            data = data.decode(encoding, errors)
        except UnicodeDecodeError as exc:
            raise DecodeError(name, encoding, exc.reason, exc.start) from None
        except LookupError:
            raise ValueError(f"unknown encoding or errors handler: encoding={encoding!r}, "
                             f"errors={errors!r}") from None
        if data.startswith("\ufeff") and _is_utf8(encoding):
            data = data[1:]
    return data.replace("\r\n", "\n").replace("\r", "\n")


def _read_text(path: str, encoding: str, errors: str) -> str:
    with open(path, "rb") as fh:
        return _decode(fh.read(), encoding, errors, path)


def read_lines(path, *, encoding: str = "utf-8", errors: str = "strict", skip_empty: bool = False) -> list[str]:
    """Read a text file (or a stream) holding one document per line.

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r``; the line breaks are removed.

    Parameters
    ----------
    path : str, path-like or file object
        A file name, or an open file read to its end (binary, e.g.
        ``sys.stdin.buffer``, decoded with ``encoding`` and ``errors``; or
        text, used as it is).
    encoding : str, default "utf-8"
    errors : str, default "strict"
        How to handle undecodable bytes (``"replace"`` to keep going).
    skip_empty : bool, default False
        Drop lines that hold only whitespace.

    Returns
    -------
    list of str

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If ``path`` is a folder, cannot be decoded (:class:`DecodeError`), or
        is compressed (gzip, bzip2, xz, zstd or zip bytes).
    """
    if hasattr(path, "read"):
        text = _decode(path.read(), encoding, errors, str(getattr(path, "name", "<stream>")))
    else:
        path = os.fsdecode(path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"documents file not found: {path!r}")
        if os.path.isdir(path):
            raise ValueError(f"path must be a text file with one document per line, got the folder {path!r}")
        text = _read_text(path, encoding, errors)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if skip_empty:
        lines = [ln for ln in lines if ln.strip()]
    return lines


def read_folder(
    path, *, pattern: str = "*", recursive: bool = False, encoding: str = "utf-8", errors: str = "strict"
) -> tuple[list[str], list[str]]:
    """Read a folder holding one document per file.

    Parameters
    ----------
    path : str or path-like
    pattern : str, default "*"
        Shell-style pattern the file names must match, e.g. ``"*.txt"``.
    recursive : bool, default False
        Also read the files of sub-folders.
    encoding, errors : str
        As in :func:`read_lines`.

    Returns
    -------
    names : list of str
        Paths relative to ``path`` (with ``/`` separators), sorted.
    documents : list of str
        The files' contents, in the same order.

    Hidden files and folders (name starting with ``.``) are skipped.
    """
    path = os.fsdecode(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"documents folder not found: {path!r}")
    if not os.path.isdir(path):
        raise ValueError(f"path must be a folder with one document per file, got the file {path!r}")
    found = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if recursive else []
        for f in files:
            full = os.path.join(root, f)
            if f.startswith(".") or not fnmatch.fnmatch(f, pattern) or not os.path.isfile(full):
                continue
            found.append(os.path.relpath(full, path).replace(os.sep, "/"))
    found.sort()
    if not found:
        raise ValueError(f"no files matching {pattern!r} in {path!r}")
    docs = [_read_text(os.path.join(path, name), encoding, errors) for name in found]
    return found, docs


def read_documents(path, **kwargs) -> tuple[list[str], list[str]]:
    """Read documents from a text file (one per line) or a folder (one per file).

    Returns
    -------
    names : list of str
        Line numbers (1-based, as str) for a file; relative file names for a
        folder.
    documents : list of str

    Keyword arguments go to :func:`read_lines` (``encoding``, ``errors``) or
    :func:`read_folder` (``pattern``, ``recursive``, ``encoding``,
    ``errors``).
    """
    p = os.fsdecode(path)
    if not os.path.exists(p):
        raise FileNotFoundError(f"documents path not found: {p!r}")
    if os.path.isdir(p):
        return read_folder(p, **kwargs)
    bad = set(kwargs) - {"encoding", "errors"}
    if bad:
        raise ValueError(f"unexpected keyword arguments for a documents file: {sorted(bad)}")
    lines = read_lines(p, **kwargs)
    return [str(i) for i in range(1, len(lines) + 1)], lines


# ---------------------------------------------------------------------------
# vocabulary and count matrices
# ---------------------------------------------------------------------------


def _read_word_file(path, encoding: str, what: str) -> list[str]:
    """The lines of a word-list file (``what`` names it in errors), decoded strictly."""
    path = os.fsdecode(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{what} file not found: {path!r}")
    if os.path.isdir(path):
        raise ValueError(f"{what} path must be a text file, got the folder {path!r}")
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        text = _decode(data, encoding, "strict", path)
    except DecodeError as exc:
        raise DecodeError(exc.name, exc.encoding, exc.reason, exc.position,
                          advice=f"a {what} file is read strictly: pass its encoding= "
                          "(or re-save it as UTF-8)") from None
    return text.split("\n")


def read_vocab(path, *, encoding: str = "utf-8") -> list[str]:
    """Read a vocabulary file: one term per line, in column order.

    Surrounding whitespace is stripped; empty lines and repeated terms are
    errors (a final line break is fine).  A UTF-8 byte order mark at the
    start of the file is dropped.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If ``path`` is a folder, cannot be decoded with ``encoding``
        (:class:`DecodeError`), is empty, or has an empty or repeated line.
    """
    path = os.fsdecode(path)
    lines = _read_word_file(path, encoding, "vocabulary")
    if lines and lines[-1] == "":
        lines.pop()
    seen: dict = {}
    vocab = []
    for i, line in enumerate(lines, start=1):
        term = line.strip()
        if not term:
            raise ValueError(f"line {i} of the vocabulary file {path!r} is empty")
        if term in seen:
            raise ValueError(f"the vocabulary file {path!r} repeats {term!r} (lines {seen[term]} and {i})")
        seen[term] = i
        vocab.append(term)
    if not vocab:
        raise ValueError(f"the vocabulary file {path!r} is empty")
    return vocab


def read_stop_words(path, *, encoding: str = "utf-8") -> list[str]:
    """Read a stop-word file: one word per line, lowercased like the tokeniser's tokens.

    Surrounding whitespace is stripped; blank lines, lines starting with
    ``#`` (comments, as in the shipped list) and repeated words are skipped.
    Returns the words in file order (empty for a file without words).
    """
    words: dict = {}
    for line in _read_word_file(path, encoding, "stop-word"):
        word = line.strip().lower()
        if word and not word.startswith("#"):
            words.setdefault(word, None)
    return list(words)


def _check_terms(vocab, n_columns: Optional[int] = None) -> list[str]:
    """``vocab`` (:func:`~pygbn._utils.check_terms`: in column order, distinct, a mapping
    term -> column read by its columns, a set refused) as a list of terms that
    :func:`read_vocab` reads back as they are; with ``n_columns``, one per column of the counts."""
    terms = check_terms(vocab, "vocab", n_terms=n_columns, mappings=True, unique=True, allow_empty=False,
                        length_error="{name} has {got} terms but counts have {n} columns")
    for i, t in enumerate(terms):
        if not t.strip() or t != t.strip() or "\n" in t or "\r" in t:
            raise ValueError(
                f"vocab[{i}] must be a non-empty str without line breaks or surrounding whitespace, got {t!r}"
            )
    return terms


def write_vocab(path, vocab: Sequence[str]) -> str:
    """Write ``vocab`` one term per line (UTF-8); return the path.

    ``vocab`` is in column order (a list, tuple or 1-D array of str), or a
    mapping term -> column such as ``CountVectorizer.vocabulary_``, written by
    its columns; ValueError for a set (no order), an empty vocabulary, a term
    twice, or a term :func:`read_vocab` would not read back as it is (empty,
    with a line break or surrounding whitespace)."""
    terms = _check_terms(vocab)
    path = os.fsdecode(path)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for t in terms:
            fh.write(t + "\n")
    return path


_MTX_SUFFIXES = (".mtx", ".mtx.gz", ".mtx.bz2", ".mm")


#: the suffixes :func:`load_counts` reads, by format
_COUNT_FORMATS = {"mtx": _MTX_SUFFIXES, "npz": (".npz",), "npy": (".npy",), "csv": (".csv",),
                  "tsv": (".tsv",)}


#: every file-name ending :func:`load_counts` reads as a count matrix (lower case)
COUNT_SUFFIXES = tuple(suffix for suffixes in _COUNT_FORMATS.values() for suffix in suffixes)


def _format_of(path: str) -> str:
    low = path.lower()
    for fmt, suffixes in _COUNT_FORMATS.items():
        if low.endswith(suffixes):
            return fmt
    raise ValueError(
        f"unsupported counts file {path!r}: expected a Matrix Market file (.mtx, .mtx.gz, .mtx.bz2, .mm), "
        f"a .npz archive (scipy.sparse.save_npz, or numpy.savez of one 2-D array), a .npy array "
        f"(numpy.save) or a delimited text matrix (.csv, .tsv)"
    )


def _numpy_file(path: str, what: str) -> None:
    """ValueError unless ``path`` starts as a .npy array or a .npz (zip) archive does: on any
    other bytes ``np.load`` says the file "contains pickled (object) data" and suggests
    loading it unsafely, whatever it holds."""
    try:
        with open(path, "rb") as f:
            head = f.read(6)
    except OSError:
        return      # np.load reports it
    if not head.startswith((b"\x93NUMPY", b"PK")):
        found = "it is empty" if not head else ("it starts with neither numpy's .npy header nor a zip "
                                                "archive's (pygbn never reads pickles)")
        raise ValueError(f"could not read {path!r} as {what}: {found}")


def _load_npy(path: str):
    _numpy_file(path, "a .npy array")
    try:
        a = np.load(path, allow_pickle=False)
    except Exception as exc:  # bad magic, pickled objects, truncated data
        raise ValueError(f"could not read {path!r} as a .npy array: {exc}") from None
    if not isinstance(a, np.ndarray):
        a.close()
        raise ValueError(f"{path!r} is a .npz archive, not a .npy array: name it .npz")
    return a


def _load_delimited(path: str, delimiter: str):
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy warns on an empty file; it is an error below
            # utf-8-sig: a byte order mark (spreadsheets' "CSV UTF-8") is dropped, not read as
            # part of the first number, as everywhere else in this module
            a = np.loadtxt(path, delimiter=delimiter, dtype=np.float64, ndmin=2, comments="#",
                           encoding="utf-8-sig")
    except Exception as exc:  # non-numeric fields, ragged rows, undecodable bytes
        sep = "tab" if delimiter == "\t" else "comma"
        # numpy's advice on ragged rows names its own loadtxt argument, which no caller here has
        reason = ' '.join(str(exc).split()).split("; use `usecols`")[0]
        raise ValueError(f"could not read {path!r} as a numeric matrix ({sep}-separated, one document "
                         f"per row): {reason}") from None
    if a.size == 0:
        raise ValueError(f"{path!r} holds no numbers")
    return a


def _load_npz(path: str, key: str | None):
    _numpy_file(path, "a .npz archive")
    try:
        z = np.load(path, allow_pickle=False)
    except Exception as exc:  # zipfile/pickle/format errors all mean "not an npz we can read"
        raise ValueError(f"could not read {path!r} as a .npz archive: {exc}") from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise ValueError(f"{path!r} is a .npy array, not a .npz archive")
    with z:
        files = set(z.files)
        if key is None and {"format", "shape", "data"} <= files:
            pass  # a scipy.sparse archive, read below
        else:
            if key is not None:
                if key not in files:
                    raise ValueError(f"key {key!r} not in {path!r}; it holds {sorted(files)}")
                name = key
            elif len(files) == 1:
                name = next(iter(files))
            elif "X" in files:
                name = "X"
            elif "counts" in files:
                name = "counts"
            else:
                raise ValueError(
                    f"{path!r} holds several arrays {sorted(files)}, none of them a scipy.sparse matrix "
                    f"or named 'X' or 'counts': save the counts as 'X' (numpy.savez(path, X=...)), or "
                    f"name the array to read with load_counts(..., key=)"
                )
            try:
                return np.asarray(z[name])
            except Exception as exc:
                raise ValueError(f"could not read array {name!r} of {path!r}: {exc}") from None
    try:
        return sp.load_npz(path)
    except Exception as exc:
        raise ValueError(f"could not read {path!r} as a scipy.sparse .npz archive: {exc}") from None


def _validated_counts(mat, integer: Optional[bool], what: str) -> sp.csr_matrix:
    """``mat`` as a canonical CSR matrix of non-negative finite values, or ValueError naming
    ``what``: integer counts (int32, int64 where needed) with ``integer=True``, float64 with
    False, and with None integers when every value is one that int64 holds, else float64."""
    if sp.issparse(mat):
        X = sp.csr_matrix(mat, copy=True)
    else:
        a = np.asarray(mat)
        if a.ndim != 2:
            raise ValueError(f"{what} must be a 2-D matrix (documents x terms), got shape {a.shape}")
        if a.dtype.kind not in "biuf":
            raise ValueError(f"{what} must be numeric, got dtype {a.dtype}")
        if a.dtype == np.float16:     # a dtype scipy.sparse does not take
            a = a.astype(np.float32)
        X = sp.csr_matrix(a)
    if X.ndim != 2:
        raise ValueError(f"{what} must be a 2-D matrix (documents x terms), got shape {X.shape}")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{what} must be numeric, got dtype {X.dtype}")
    X.sum_duplicates()
    data = X.data
    if data.dtype.kind == "f":
        if not np.isfinite(data).all():
            raise ValueError(f"{what} must be finite")
    if data.size and data.min() < 0:
        raise ValueError(f"{what} must be non-negative, found {data.min().item()!r}")
    top = data.max().item() if data.size else 0
    # int64 holds the value (a float of 2**63 or more, or a uint64 above 2**63 - 1, would wrap)
    fits = top < 2.0**63 if data.dtype.kind == "f" else top <= _INT64_MAX
    if integer is None:
        integer = fits and (data.dtype.kind != "f" or np.array_equal(data, np.round(data)))
    if integer:
        if data.dtype.kind == "f":
            if not np.array_equal(data, np.round(data)):
                bad = data[data != np.round(data)][0]
                raise ValueError(
                    f"{what} must hold integer counts, found {bad.item()!r} (pass integer=False for non-negative reals)"
                )
        if not fits:
            raise ValueError(f"{what} hold a count too large for a 64-bit integer, found {top!r} (the "
                             f"largest is 2**63 - 1; pass integer=False to read it as a real number)")
        dtype = np.int32 if top <= _INT32_MAX else np.int64
        X = sp.csr_matrix((data.astype(dtype), X.indices, X.indptr), shape=X.shape)
    else:
        X = sp.csr_matrix((data.astype(np.float64), X.indices, X.indptr), shape=X.shape)
    X.eliminate_zeros()
    X.sort_indices()
    return X


def load_counts(
    path, vocab_path=None, *, transpose: bool = False, integer: bool = True, key: str | None = None
) -> tuple[sp.csr_matrix, list[str] | None]:
    """Read a count matrix (and optionally its vocabulary) from disk.

    Parameters
    ----------
    path : str or path-like
        ``.mtx`` / ``.mtx.gz`` / ``.mtx.bz2`` / ``.mm`` (Matrix Market, read
        with :func:`scipy.io.mmread`), ``.npz`` (written by
        :func:`scipy.sparse.save_npz`, or by :func:`numpy.savez` with one 2-D
        array, or with arrays named ``X`` or ``counts``, or any ``key``),
        ``.npy`` (a 2-D array written by :func:`numpy.save`, read without
        pickle) or ``.csv`` / ``.tsv`` (a dense matrix of numbers, one row
        per line, comma- or tab-separated, as :func:`numpy.savetxt` writes
        it, in UTF-8, a byte order mark dropped; lines starting with ``#``
        are skipped).
    vocab_path : str or path-like, optional
        Text file with one term per line, one per column.
    transpose : bool, default False
        Set when the file stores terms x documents (as many Matrix Market
        corpora do); the result is always documents x terms.
    integer : bool, default True
        Require integer counts (stored as int32, or int64 if needed).  With
        False, non-negative reals are kept as float64 (for the
        Poisson-randomized-gamma link).
    key : str, optional
        Array to read from a ``.npz`` holding several dense arrays.

    Returns
    -------
    counts : scipy.sparse.csr_matrix, shape (n_documents, n_terms)
    vocab : list of str or None

    Raises
    ------
    FileNotFoundError
        A file does not exist.
    ValueError
        Unknown suffix, unreadable content, negative / non-integer /
        non-finite values, with ``integer=True`` a count of 2**63 or more
        (which int64 cannot hold), or a vocabulary whose length differs from
        the number of columns.
    """
    path = os.fsdecode(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"counts file not found: {path!r}")
    if os.path.isdir(path):
        raise ValueError(f"counts path must be a file, got the folder {path!r}")
    fmt = _format_of(path)
    if fmt == "mtx":
        try:
            mat = scipy.io.mmread(path)
        except Exception as exc:
            raise ValueError(f"could not read {path!r} as a Matrix Market file: {exc}") from None
    elif fmt == "npz":
        mat = _load_npz(path, key)
    elif fmt == "npy":
        mat = _load_npy(path)
    else:
        mat = _load_delimited(path, "," if fmt == "csv" else "\t")
    X = _validated_counts(mat, integer, f"the counts in {path!r}")
    if transpose:
        X = X.T.tocsr()
        X.sort_indices()
    vocab = None
    if vocab_path is not None:
        vocab = read_vocab(vocab_path)
        if len(vocab) != X.shape[1]:
            raise ValueError(
                f"the vocabulary {os.fsdecode(vocab_path)!r} has {len(vocab)} terms but the counts in "
                f"{path!r} have {X.shape[1]} columns (documents x terms{'' if transpose else '; pass transpose=True if the file is terms x documents'})"
            )
    logger.info("loaded counts %s from %s (%d non-zeros)", X.shape, path, X.nnz)
    return X, vocab


def save_counts(path, counts, vocab: Sequence[str] | None = None, vocab_path=None) -> str:
    """Write a documents x terms count matrix as ``.mtx`` or ``.npz``.

    Parameters
    ----------
    path : str or path-like
        Ends in ``.mtx`` (Matrix Market coordinate format, via
        :func:`scipy.io.mmwrite`) or ``.npz`` (compressed,
        :func:`scipy.sparse.save_npz`).
    counts : array_like or sparse matrix
        Non-negative counts.  Integers, and floats that are all whole
        numbers below 2**63, are written as integers (exactly, however
        large); other values as reals.
    vocab : sequence of str or mapping, optional
        Column names, written to ``vocab_path`` one per line (as
        :func:`write_vocab` takes them).
    vocab_path : str or path-like, optional
        Required when ``vocab`` is given.

    Returns
    -------
    str
        ``path``.

    Raises
    ------
    OSError
        If the file cannot be written (e.g. its folder does not exist:
        ``FileNotFoundError``).
    ValueError
        Unknown suffix, negative or non-finite values, or a ``vocab`` whose
        length differs from the number of columns.
    """
    path = os.fsdecode(path)
    low = path.lower()
    if not (low.endswith(".mtx") or low.endswith(".npz")):
        raise ValueError(f"path must end in .mtx or .npz, got {path!r}")
    # integers stay integers (never through float64, which rounds those above 2**53)
    X = _validated_counts(counts, integer=None, what="counts")
    is_int = X.dtype.kind == "i"
    if (vocab is None) != (vocab_path is None):
        raise ValueError("pass both vocab and vocab_path, or neither")
    if vocab is not None:
        terms = _check_terms(vocab, X.shape[1])  # before anything is written: a bad vocab leaves no counts file
    # open the file here, so that a missing folder or a permission error raises (scipy.io.mmwrite
    # given a path ignores a file it cannot open)
    with open(path, "wb") as fh:
        if low.endswith(".mtx"):
            scipy.io.mmwrite(fh, X.tocoo(), field="integer" if is_int else "real")
        else:
            sp.save_npz(fh, X, compressed=True)
    if vocab is not None:
        write_vocab(vocab_path, terms)
    return path


def align_vocabulary(X, vocab: Sequence[str], target: Sequence[str], name: str = "X") -> sp.csr_matrix:
    """Move the columns of counts ``X`` (named by ``vocab``) onto the vocabulary ``target``.

    A term of both vocabularies goes to its column in ``target`` (e.g. a
    fitted model's vocabulary); terms missing from ``target`` are dropped and
    terms of ``target`` missing from ``vocab`` get zero columns.  ``name``
    names ``X`` in errors.  Returns a csr_matrix of ``X``'s dtype, shape
    ``(n_documents, len(target))``.

    Both vocabularies are taken as ``fit`` takes one (in column order, each
    term a str, no term twice; a mapping term -> column such as
    ``CountVectorizer.vocabulary_`` is read by its columns; a set is refused).

    Raises
    ------
    ValueError
        If ``vocab`` does not name every column of ``X``, either vocabulary
        is not as above, or no term of ``vocab`` is in ``target``.
    """
    if sp.issparse(X) and X.ndim != 2:     # a 1-D scipy sparse array: csr_matrix raised IndexError
        raise ValueError(f"{name} must be a 2-D matrix (documents x terms), got shape {X.shape}")
    X = sp.csr_matrix(X)
    named = name.replace("{", "{{").replace("}", "}}")
    vocab = check_terms(vocab, "vocab", n_terms=X.shape[1], mappings=True, unique=True,
                        length_error=named + " has {n} columns but its vocabulary {got} terms")
    target = check_terms(target, "target", mappings=True, unique=True)
    index = {w: i for i, w in enumerate(target)}
    cols = np.array([index.get(w, -1) for w in vocab], dtype=np.int64)
    keep = cols >= 0
    if not keep.any():
        raise ValueError(f"none of the terms of {name} is in the vocabulary to align to ({len(target)} terms)")
    # ones of X's dtype: integer counts stay integers
    C = sp.csr_matrix((np.ones(int(keep.sum()), dtype=X.dtype), (np.flatnonzero(keep), cols[keep])),
                      shape=(len(vocab), len(target)))
    logger.debug("matched %d of %d terms of %s to the model's vocabulary", int(keep.sum()), len(vocab), name)
    return (X @ C).tocsr()
