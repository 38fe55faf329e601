"""Small shared helpers: random-state handling, block streams, argument checks.

Everything random in pygbn takes ``random_state`` (None, int, SeedSequence or
:class:`numpy.random.Generator`), as numpy and scikit-learn do.  There is no
global random state.
"""
from __future__ import annotations

import contextlib
import ctypes
import inspect
import logging
import math
import numbers
import os
import sys
import tempfile
import threading
import uuid
import warnings
from collections.abc import KeysView, Mapping, Set
from typing import List, Optional

import numpy as np
import scipy.sparse as sp

__all__ = [
    "check_random_state",
    "spawn_generators",
    "draw_entropy",
    "generators_from_entropy",
    "BlockStreams",
    "bitgen_address",
    "trim_heap",
    "check_int",
    "effective_n_jobs",
    "check_array",
    "column_names",
    "check_feature_names",
    "Progress",
    "verbose_logging",
    "warn_user",
]

# Ranges shared by the object model, the explorers and the model files (pygbn.io
# re-exports them): a network that can be built can be explored, saved and loaded.
#: how far a column sum of Phi^(t) may be from 1
SIMPLEX_TOLERANCE = 1e-6
#: how far a column sum of a Phi given by a user may be from 1 and still be taken (float32
#: precision, rounded values): the explorers read such a Phi as it is, a Network renormalises
#: its columns in float64 (to within SIMPLEX_TOLERANCE)
LOOSE_SIMPLEX_TOLERANCE = 1e-4
#: largest value of a positive parameter (eta, gamma0, c0, the hyper-parameters, a
#: link's parameters, each r_k) in a network; c_median only needs to be finite (a
#: fit where most samples are empty has medians of 1e20 and more)
MAX_PARAMETER = 1e12
#: largest expected latent count per sample under the prior, ``sum(r) / prod(c_median)``
#: (where the test-time chain starts); a fitted model's is about the mean sample size
MAX_PRIOR_MASS = 1e12


def check_random_state(random_state=None) -> np.random.Generator:
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, array of ints, SeedSequence, BitGenerator or Generator
        ``None`` draws fresh OS entropy; an int (or array of ints) or a
        ``SeedSequence`` seeds a new PCG64 generator; a ``BitGenerator`` is
        wrapped; a ``Generator`` is returned unchanged (so draws advance it).

    Raises
    ------
    ValueError
        If ``random_state`` is none of the above (the legacy
        ``numpy.random.RandomState`` is refused: it has no C-level bit
        generator we can share safely).
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.BitGenerator):
        return np.random.Generator(random_state)
    if _is_int(random_state):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative int, got {random_state!r}")
        return np.random.default_rng(int(random_state))
    if isinstance(random_state, (list, tuple, np.ndarray)):
        arr = np.asarray(random_state)
        if arr.dtype.kind in "iu" and arr.ndim == 1 and (arr >= 0).all():
            return np.random.default_rng(arr)
    accepted = ("random_state must be None, a non-negative int (or a sequence of them), a SeedSequence, "
                "a BitGenerator or a numpy.random.Generator")
    if isinstance(random_state, np.random.RandomState):
        raise ValueError(f"{accepted}, got the legacy {random_state!r}, which pygbn does not take: pass an "
                         "int seed, or numpy.random.default_rng(seed) for a generator that each call advances")
    raise ValueError(f"{accepted}, got {random_state!r}")


def spawn_generators(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """Derive ``n`` independent child generators from ``rng``.

    The children are seeded by a :class:`~numpy.random.SeedSequence` whose
    entropy is drawn from ``rng`` (advancing it), then spawned, so the result
    is a deterministic function of ``rng``'s state and works for every bit
    generator type.  Children are PCG64 generators.  Equivalent to
    ``generators_from_entropy(draw_entropy(rng), 0, n)``.
    """
    return generators_from_entropy(draw_entropy(rng), 0, int(n))


def draw_entropy(rng: np.random.Generator) -> tuple:
    """Draw the entropy of a family of child streams from ``rng`` (eight 32-bit ints)."""
    return tuple(int(e) for e in rng.integers(0, 2**32, size=8, dtype=np.uint64))


def generators_from_entropy(entropy, first: int, stop: int) -> list[np.random.Generator]:
    """Children ``first, ..., stop - 1`` of the stream family seeded by ``entropy``.

    Child ``b`` is ``PCG64(SeedSequence(entropy, spawn_key=(b,)))``, which is
    exactly the ``b``-th child of ``SeedSequence(entropy).spawn(n)``: any
    contiguous range of a family's streams can be rebuilt on its own (a
    worker holding blocks ``first..stop-1`` of a corpus needs only the
    entropy, not the other streams).
    """
    return [np.random.Generator(np.random.PCG64(np.random.SeedSequence(list(entropy), spawn_key=(b,))))
            for b in range(int(first), int(stop))]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _find_malloc_trim():
    try:
        fn = ctypes.CDLL(None).malloc_trim       # glibc only
    except (AttributeError, OSError, TypeError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
    return fn


_malloc_trim = _find_malloc_trim() if sys.platform.startswith("linux") else None


def trim_heap() -> None:
    """Give the C heap's free memory back to the system (glibc's ``malloc_trim``;
    nothing elsewhere).  Arrays below glibc's mmap threshold, which rises to
    the size of the largest one freed so far, come from the heap and stay
    resident once freed: a chain that drops its per-document state before
    making its last, large results calls this between the two."""
    if _malloc_trim is not None:
        _malloc_trim(0)


def bitgen_address(gen) -> int:
    """Address of the C ``bitgen_t`` struct behind ``gen`` (see numpy's C API).

    ``gen`` is a :class:`numpy.random.Generator` or a BitGenerator.  The
    address is read from the BitGenerator's ``"BitGenerator"`` capsule (the
    same pointer as ``bit_generator.ctypes.bit_generator``, ten times faster).
    Keep ``gen`` alive while the address is used.
    """
    bg = gen.bit_generator if isinstance(gen, np.random.Generator) else gen
    return _capsule_pointer(bg.capsule, b"BitGenerator")


class BlockStreams:
    """One random stream per fixed block of work.

    Parallel loops in pygbn split their work (documents, draws) into blocks
    whose boundaries depend only on the problem size, never on the number of
    threads.  Block ``b`` always draws from stream ``b``; so a fixed seed gives
    the same result for any thread count.

    Attributes
    ----------
    generators : list of numpy.random.Generator
        The per-block generators (kept alive here: the kernels use their
        C-level ``bitgen_t`` pointers).
    addresses : ndarray of uintp
        ``bitgen_t*`` addresses, in block order, for the Cython kernels.
    """

    def __init__(self, rng: np.random.Generator, n_blocks: int):
        n_blocks = check_int(n_blocks, "n_blocks", 1)
        self._set(spawn_generators(rng, n_blocks))

    @classmethod
    def from_entropy(cls, entropy, first: int, stop: int) -> "BlockStreams":
        """Streams ``first, ..., stop - 1`` of the family seeded by ``entropy``
        (see :func:`generators_from_entropy`); ``BlockStreams(rng, n)`` is
        ``from_entropy(draw_entropy(rng), 0, n)``."""
        if stop <= first:
            raise ValueError(f"need at least one stream, got blocks {first}..{stop}")
        streams = cls.__new__(cls)
        streams._set(generators_from_entropy(entropy, first, stop))
        return streams

    def _set(self, generators) -> None:
        self.generators = generators
        self.addresses = np.array([bitgen_address(g) for g in self.generators], dtype=np.uintp)

    def __len__(self) -> int:
        return len(self.generators)


def block_bounds(n_items: int, block_size: int) -> np.ndarray:
    """Boundaries ``[0, b, 2b, ..., n_items]`` of fixed-size blocks (int64)."""
    if n_items <= 0:
        return np.zeros(1, dtype=np.int64)
    b = np.arange(0, n_items, block_size, dtype=np.int64)
    return np.append(b, np.int64(n_items))


def in_range(x, low=None, high=None, *, low_open=False, high_open=False, allow_inf=False):
    """Where ``x`` is a number in the range ``low <(=) x <(=) high``: not NaN, finite unless
    ``allow_inf``, and within each bound given (None: no bound; ``low_open`` / ``high_open``
    exclude the bound itself).

    A Python float gives a bool (no ufuncs: the samplers' scalar path), an array a boolean
    array (NaN fails every comparison, without a warning).  pygbn.random raises on values
    outside the range, pygbn.stats gives NaN for them: both test it here.
    """
    ok = (x == x) if allow_inf else (abs(x) < math.inf)
    if low is not None:
        ok = ok & ((x > low) if low_open else (x >= low))
    if high is not None:
        ok = ok & ((x < high) if high_open else (x <= high))
    return ok


def real_array(x) -> Optional[np.ndarray]:
    """``x`` as a float64 array when it holds real numbers only, else None.

    Real numbers: bools, ints and floats (Python or numpy, scalars or array-likes), Python
    ints beyond int64 (which numpy holds as objects) up to the largest double.  Not strings
    or bytes (numpy would parse them), complex numbers, dates, None or other objects.  A
    float64 array is returned as it is (not copied).
    """
    try:
        arr = np.asarray(x)
        if arr.dtype == object and arr.size and all(
                type(e) is int or isinstance(e, (float, np.integer, np.floating)) for e in arr.flat):
            arr = arr.astype(np.float64)     # Python ints beyond int64 (numpy holds them as objects)
        if arr.dtype.kind not in "biuf":
            return None
        return arr.astype(np.float64, copy=False)
    except (TypeError, ValueError, OverflowError):
        return None


def first_index(mask: np.ndarray) -> tuple:
    """Index (a tuple of ints; ``()`` for a 0-d mask) of the first True entry of ``mask``,
    in C order: where the first bad value of an argument is, for its error message."""
    flat = int(np.flatnonzero(np.asarray(mask).reshape(-1))[0])
    return tuple(int(i) for i in np.unravel_index(flat, np.shape(mask)))


def scalar_or_array(out, shape=None):
    """``out`` (reshaped to ``shape`` when given) as pygbn's array functions return it:
    a numpy scalar when 0-d, else the array."""
    out = np.asarray(out) if shape is None else out.reshape(shape)
    return out[()] if out.ndim == 0 else out


def _is_int(value) -> bool:
    """Whether ``value`` is a Python or numpy integer (``bool`` is not)."""
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool)


def check_int(value, name: str, minimum: int = 0) -> int:
    """Return ``value`` as an ``int`` after checking it is an integer ``>= minimum``.

    Python and numpy integers are accepted; ``bool``, floats (even integral
    ones) and strings are not.  The error names the argument and the bad value:
    ``"n must be a positive int, got 0"`` (minimum 1), ``"... a nonnegative
    int ..."`` (minimum 0) or ``"... an int >= 5 ..."``.
    """
    if not _is_int(value) or value < minimum:
        what = {0: "a nonnegative int", 1: "a positive int"}.get(minimum, f"an int >= {minimum}")
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return int(value)


#: the most threads ``n_jobs`` may ask for (the kernels take the count as a C int)
MAX_N_JOBS = 2**31 - 1


def effective_n_jobs(n_jobs) -> int:
    """Resolve scikit-learn style ``n_jobs`` to a number of threads.

    ``None`` is 1, a positive int itself, -1 all cores, -2 all but one, and
    so on (at least 1).  Every public entry that takes ``n_jobs`` resolves it
    here.

    Raises
    ------
    ValueError
        For 0, a bool, anything that is not an int, or more than
        :data:`MAX_N_JOBS` (naming the value).
    """
    if n_jobs is None:
        return 1
    if not _is_int(n_jobs) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a non-zero int or None, got {n_jobs!r}")
    if n_jobs > MAX_N_JOBS:
        raise ValueError(f"n_jobs must be at most 2**31 - 1 (threads), got {n_jobs!r}")
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))
    return int(n_jobs)


def column_names(X) -> Optional[List[str]]:
    """The column names of a DataFrame-like ``X`` (duck-typed: its ``.columns``), if all are str."""
    cols = getattr(X, "columns", None)
    if cols is None or sp.issparse(X) or isinstance(cols, str):
        return None
    try:
        names = list(cols)
    except TypeError:
        return None
    return names if names and all(isinstance(c, str) for c in names) else None


def check_array(X, name: str = "X", *, min_samples: int = 0, who: str = "GBN",
                requirement: str = "nonnegative"):
    """``(M, names)``: ``X`` as a 2-D numpy array or scipy.sparse matrix of real numbers,
    and its column names (:func:`column_names`, or None).

    Converts what scikit-learn converts (lists, DataFrame-likes, object arrays
    of numbers) and words the errors as scikit-learn's estimator checks
    expect: ``Reshape your data`` for input that is not 2-D, ``0 feature(s)``
    (and ``0 sample(s)`` when ``min_samples`` > 0) for an empty one, ``NaN``
    or ``inf`` for non-finite values, ``Negative values in data passed to
    <who>: <name> must be <requirement>`` for negative values, a TypeError for
    an object array with an entry that is no number.  Sparse input becomes
    CSR.  What the
    values must be beyond that (integers, 0/1, finite) is for the caller to
    check (e.g. :meth:`pygbn.model.Link.check_data`).
    """
    names = column_names(X)
    if sp.issparse(X):
        # scipy's sparse arrays may be 1-D (coo_array, csr_array, dok_array of a vector)
        M = X if X.format == "csr" or X.ndim != 2 else X.tocsr()
    else:
        try:
            M = np.asarray(X)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} could not be read as a 2-D array of numbers: {exc}") from None
        if M.dtype == object:
            try:
                M = M.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{name} is an object array with an entry that is not a number: {exc}") \
                    from None
    if M.ndim != 2:
        raise ValueError(f"{name} must be 2-D (samples x features), got shape {M.shape}. Reshape your "
                         "data with X.reshape(-1, 1) if it has a single feature or X.reshape(1, -1) "
                         "if it holds a single sample")
    if M.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} must hold real numbers, got dtype {M.dtype}")
    for count, what in ((M.shape[0], "sample"), (M.shape[1], "feature")):
        if count == 0 and (what == "feature" or min_samples > 0):
            raise ValueError(f"{name} is empty: found array with 0 {what}(s) (shape={M.shape}) while a "
                             f"minimum of 1 is required.")
    values = M.data if sp.issparse(M) else M
    if values.dtype.kind == "f":
        finite = np.isfinite(values)
        if not finite.all():
            bad = values[~finite].flat[0]
            raise ValueError(f"{name} contains a non-finite value ({'NaN' if np.isnan(bad) else 'inf'})")
    if values.dtype.kind in "if":
        negative = values < 0
        if negative.any():
            raise ValueError(f"Negative values in data passed to {who}: {name} must be {requirement}, "
                             f"found {values[negative].flat[0]:g}")
    return M, names


def check_feature_names(names: List[str], fitted: List[str]) -> None:
    """Raise ValueError naming the columns that differ from those seen in ``fit``
    (worded as scikit-learn words it)."""
    if names == fitted:
        return

    def listing(items):
        return "".join(f"- {n}\n" for n in items[:5]) + ("- ...\n" if len(items) > 5 else "")

    unseen = sorted(set(names) - set(fitted))
    missing = sorted(set(fitted) - set(names))
    msg = "The feature names should match those that were passed during fit.\n"
    if unseen:
        msg += "Feature names unseen at fit time:\n" + listing(unseen)
    if missing:
        msg += "Feature names seen at fit time, yet now missing:\n" + listing(missing)
    if not unseen and not missing:
        i = next((i for i, (a, b) in enumerate(zip(names, fitted)) if a != b), min(len(names), len(fitted)))
        at = (f": column {i} is {names[i]!r}, was {fitted[i]!r} in fit" if i < min(len(names), len(fitted))
              else f": {len(names)} columns, {len(fitted)} in fit")
        msg += f"Feature names must be in the same order as they were in fit{at}.\n"
    raise ValueError(msg)


class Progress:
    """Progress lines through the "pygbn" logger every ``every`` iterations."""

    def __init__(self, every: int):
        self.every = max(1, int(every))
        self._times: List[float] = []
        self._loglik: Optional[float] = None     # the latest traced value

    def __call__(self, info):
        self._times.append(info["seconds"])
        if info.get("loglikelihood") is not None:
            self._loglik = info["loglikelihood"]
        it, n = info["iteration"], info["n_iterations"]
        if it % self.every == 0 or it == n or it == 1:
            recent = self._times[-self.every:]
            ll = "" if self._loglik is None else " | log-likelihood/token %.4f" % self._loglik
            logging.getLogger("pygbn").info("layer %d | iteration %d/%d | widths %s | %.4f s/iteration%s",
                                            info["depth"], it, n, info["widths"], float(np.mean(recent)), ll)
        if it == n:
            self._times, self._loglik = [], None


#: this package's folder, for the stack level of :func:`warn_user`
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_user(message: str, category: type = UserWarning) -> None:
    """``warnings.warn`` with the stack level of the first caller outside pygbn: the warning
    names the user's line, however deep in the package it is raised (and Python's default
    filter then shows it once per line of the user's code, not at every call)."""
    frame = sys._getframe(1)
    level = 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


def _shown_from(lg: logging.Logger) -> Optional[int]:
    """The lowest level of a handler that the records of ``lg`` reach (``lg``'s own and, while
    they propagate, its ancestors'; NullHandlers aside), or None when they reach none."""
    levels = []
    node: Optional[logging.Logger] = lg
    while node is not None:
        levels += [h.level for h in node.handlers if not isinstance(h, logging.NullHandler)]
        node = node.parent if node.propagate else None
    return min(levels) if levels else None


_VERBOSE_LOCK = threading.Lock()
#: the fits in progress with verbose on, and what the first of them changed
_verbose_state = {"count": 0, "level": logging.NOTSET, "handler": None}


class verbose_logging:
    """Progress on for the duration (opt-in): the "pygbn" logger's level lowered to INFO and,
    when no handler that its records reach shows INFO, a stderr handler attached to it.

    A handler configured by the user (on "pygbn" or an ancestor, e.g. ``logging.basicConfig``'s
    on the root) shows the lines instead, once each; when the user's handlers show only from
    a higher level, the stderr handler shows just the levels below it, so that no line is
    shown twice.  Overlapping fits (threads) share one setup, undone when the last ends.
    """

    def __init__(self, on: bool):
        self.on = on

    def __enter__(self):
        if self.on:
            with _VERBOSE_LOCK:
                st = _verbose_state
                if st["count"] == 0:
                    lg = logging.getLogger("pygbn")
                    st["level"] = lg.level
                    if lg.level == logging.NOTSET or lg.level > logging.INFO:
                        lg.setLevel(logging.INFO)
                    floor = _shown_from(lg)
                    if floor is None or floor > logging.INFO:
                        handler = logging.StreamHandler(sys.stderr)
                        handler.setFormatter(logging.Formatter("pygbn: %(message)s"))
                        if floor is not None:       # the user's handlers show floor and above
                            handler.addFilter(lambda record: record.levelno < floor)
                        lg.addHandler(handler)
                        st["handler"] = handler
                st["count"] += 1
        return self

    def __exit__(self, *exc):
        if self.on:
            with _VERBOSE_LOCK:
                st = _verbose_state
                st["count"] -= 1
                if st["count"] == 0:
                    lg = logging.getLogger("pygbn")
                    if st["handler"] is not None:
                        lg.removeHandler(st["handler"])
                        st["handler"] = None
                    lg.setLevel(st["level"])
        return False


def per_layer(value, n_layers: int, name: str, first_and_rest: bool = False) -> List:
    """Expand a per-layer setting to a list of ``n_layers`` values.

    A scalar is used for every layer; a sequence gives one value per layer
    (extra values are ignored).  With ``first_and_rest``, a pair
    ``(v_1, v_t)`` means ``v_1`` for the first layer and ``v_t`` for every later
    one (the ``burn_in=(B_1, B_t)`` convention).  Anything shorter raises
    ValueError naming ``name``.
    """
    if np.ndim(value) == 0:
        return [value] * n_layers
    vals = list(value)
    if first_and_rest and len(vals) == 2:
        return [vals[0]] + [vals[1]] * (n_layers - 1)
    if len(vals) < n_layers:
        extra = ", (first, rest)" if first_and_rest else ""
        raise ValueError(f"{name} must be one value{extra} or one value per layer "
                         f"({n_layers}), got {value!r}")
    return vals[:n_layers]


def positive_real(value, upper: float = np.finfo(np.float64).max) -> Optional[float]:
    """``value`` as a float if it is a real number (Python or numpy, a 0-d array too; not a
    bool) in ``(0, upper]``, else None (NaN and inf fail): the one rule of every positive
    parameter's check, each caller naming the parameter in its own error."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        return None
    try:
        value = float(value)
    except OverflowError:   # an int past float64's range (10**400; a JSON literal of 400 digits)
        return None
    return value if 0 < value <= upper else None


def positive_per_layer(value, n_layers: int, name: str) -> List[float]:
    """:func:`per_layer` of a positive finite setting (a layer's eta): floats, or
    ValueError naming ``name`` and the value."""
    out = []
    for v in per_layer(value, n_layers, name):
        f = positive_real(v)
        if f is None:
            raise ValueError(f"{name} must be positive and finite, got {value!r}")
        out.append(f)
    return out


def check_terms(terms, name: str = "vocab", *, n_terms: Optional[int] = None,
                length_error: str = "{name} must hold {n} terms (one per data dimension), got {got}",
                mappings: bool = False, sort_sets: bool = False, unique: bool = False,
                allow_empty: bool = True) -> List[str]:
    """The one rule of a vocabulary (terms naming columns, in column order): ``terms`` as a
    list of str, or ValueError naming ``name`` and the bad value.

    Taken: a list, tuple, 1-D array, dict keys or any other iterable of str (numpy str
    elements become str).  Refused: None, a single str or bytes, a 2-D array, a term that is
    not a str (bytes, int, None: nothing is ``str()``-ed).  A set has no column order: refused,
    or sorted with ``sort_sets`` (scikit-learn's ``CountVectorizer``).  A mapping term ->
    column (scikit-learn's ``vocabulary_``) is read by its columns with ``mappings``
    (:func:`vocab_from_mapping`), else refused (its iteration order is not its columns).
    With ``n_terms`` the length must match (``length_error`` formatted with ``name``, ``n``
    and ``got``); ``unique`` refuses a repeated term; ``allow_empty=False`` refuses an empty
    vocabulary and the empty term.
    """
    ordered = "a list, tuple or 1-D array in column order" + (", or a mapping term -> column" if mappings else "")
    if terms is None or isinstance(terms, (str, bytes)):
        got = "None" if terms is None else f"a single {type(terms).__name__} {_short_repr(terms)}"
        raise ValueError(f"{name} must be a sequence of strings, got {got}")
    if isinstance(terms, Mapping):
        if not mappings:
            raise ValueError(f"{name} must be an ordered sequence of strings ({ordered}), got a "
                             f"{type(terms).__name__} (for a mapping term -> column m, give "
                             f"sorted(m, key=m.get))")
        terms = vocab_from_mapping(terms, name)
    elif isinstance(terms, Set) and not isinstance(terms, KeysView):
        if not sort_sets:
            raise ValueError(f"{name} must be an ordered sequence of strings ({ordered}), got a "
                             f"{type(terms).__name__}, which has no order")
        # sorted as scikit-learn sorts a set (str hashes differ between runs); others last, refused below
        terms = sorted(terms, key=lambda w: (not isinstance(w, str), str(w)))
    elif isinstance(terms, np.ndarray) and terms.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of strings, got an array of shape {terms.shape}")
    try:
        words = list(terms)
    except TypeError:
        raise ValueError(f"{name} must be a sequence of strings, got {type(terms).__name__} "
                         f"{_short_repr(terms)}") from None
    if n_terms is not None and len(words) != n_terms:
        raise ValueError(length_error.format(name=name, n=n_terms, got=len(words)))
    if not allow_empty and not words:
        raise ValueError(f"{name} must not be empty")
    seen: dict = {}
    for i, w in enumerate(words):
        if not isinstance(w, str):
            raise ValueError(f"{name}[{i}] must be a str, got {_short_repr(w)}")
        if type(w) is not str:
            words[i] = w = str(w)                  # numpy's str_ (the items of a str array)
        if not allow_empty and not w:
            raise ValueError(f"{name}[{i}] must be a non-empty str, got ''")
        if unique:
            if w in seen:
                raise ValueError(f"{name} must not repeat a term, got {w!r} twice "
                                 f"({name}[{seen[w]}] and {name}[{i}])")
            seen[w] = i
    return words


def _short_repr(value, limit: int = 80) -> str:
    """``repr(value)``, cut to about ``limit`` characters (a long vocabulary in a message)."""
    r = repr(value)
    return r if len(r) <= limit else r[:limit] + " ..."


def check_vocab(vocab, n_terms: int, name: str = "vocab") -> list[str]:
    """``vocab`` naming ``n_terms`` columns, in their order, as a list of str
    (:func:`check_terms`: a mapping or a set is refused; a term may repeat, these are labels)."""
    return check_terms(vocab, name, n_terms=n_terms)


def vocab_from_mapping(mapping: Mapping, name: str = "vocabulary") -> list:
    """The terms of a term -> column mapping (e.g. scikit-learn's ``vocabulary_``) in column
    order; ValueError naming ``name`` unless the columns are the ints 0 .. n-1, each once."""
    n = len(mapping)
    by_col: dict = {}
    for term, col in mapping.items():
        if not _is_int(col) or not 0 <= col < n:
            raise ValueError(
                f"{name} as a mapping must map each term to a column 0 .. {n - 1}, "
                f"got {term!r}: {col!r}"
            )
        col = int(col)
        if col in by_col:
            raise ValueError(f"{name} maps both {by_col[col]!r} and {term!r} to column {col}")
        by_col[col] = term
    return [by_col[j] for j in range(n)]


def check_fit_vocabulary(vocabulary, n_features: int, names=None) -> Optional[List[str]]:
    """``fit``'s ``vocabulary`` as a list of ``n_features`` distinct str
    (:func:`check_terms`), or the column names ``names`` of X when it is None.  A mapping
    term -> column (such as scikit-learn's ``CountVectorizer.vocabulary_``) is read by its
    columns (:func:`vocab_from_mapping`); ValueError for a single string, a set (no column
    order), a term that is not a str, a repeated term, another length, or names that differ."""
    if vocabulary is None:
        return names
    vocabulary = check_terms(vocabulary, "vocabulary", n_terms=n_features, mappings=True, unique=True,
                             length_error="{name} has {got} entries but X has {n} features")
    if names is not None and names != vocabulary:
        raise ValueError("vocabulary differs from the column names of X; give one of them")
    return vocabulary


def file_mode_for(path: str) -> int:
    """The permission bits ``open(path, "wb")`` would leave: the file's own when it
    exists, else 0o666 less the process's umask (a temporary file is made 0o600)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        pass
    try:
        with open("/proc/self/status") as f:       # Linux: read without setting it
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    # elsewhere: the mode a new file gets, from a probe file (setting the umask to read it
    # would change it for the whole process for a moment)
    folder = os.path.dirname(os.path.abspath(path))
    fd, probe = -1, os.path.join(folder, f".pygbn-mode-probe-{uuid.uuid4().hex}")
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        return os.stat(probe).st_mode & 0o777
    except OSError:
        return 0o644
    finally:
        if fd >= 0:
            os.close(fd)
            os.unlink(probe)


@contextlib.contextmanager
def replacing(path: str):
    """Write ``path`` whole or not at all (model files, the command line's outputs): yield a temporary file name in the same folder,
    ending in the suffix of ``path`` in lower case (the writers dispatch on it, and numpy
    appends ``.npy`` / ``.npz`` to a name not ending in exactly that); rename it over
    ``path`` once written, remove it on any failure (Ctrl-C too).  An existing ``path``
    keeps its permission bits, as with ``open``.  A symbolic link (``/dev/stdout`` too) and
    a path that is not a regular file (a named pipe, a device) are written in place through
    ``open``, which keeps them: a rename would replace them by a regular file."""
    if os.path.islink(path) or (os.path.exists(path) and not os.path.isfile(path)):
        yield path
        return
    folder, name = os.path.split(os.path.abspath(path))
    suffix = os.path.splitext(name)[1].lower()
    mode = file_mode_for(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp" + suffix, dir=folder)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:  # pragma: no cover - already gone
            pass
        raise


def param_names(cls) -> List[str]:
    """The parameters of estimator class ``cls``: its constructor's named arguments, in
    signature order, as scikit-learn's ``BaseEstimator`` finds them.  A constructor taking
    ``**kwargs`` passes them on to the next one in the MRO, whose arguments follow."""
    names: List[str] = []
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        if init is object.__init__:
            break
        forwards = False
        for p in list(inspect.signature(init).parameters.values())[1:]:
            if p.kind == p.VAR_POSITIONAL:
                raise TypeError(f"{cls.__name__}'s constructor may not take *args: its parameters "
                                f"must be named")
            if p.kind == p.VAR_KEYWORD:
                forwards = True
            elif p.name not in names:
                names.append(p.name)
        if not forwards:
            break
    return names


def get_params(estimator, deep: bool = True) -> dict:
    """scikit-learn's ``get_params`` for ``estimator``: the value of each constructor
    argument (:func:`param_names`); with ``deep``, those of a value that has
    ``get_params`` too, as ``name__sub``."""
    out = {}
    for name in param_names(type(estimator)):
        value = getattr(estimator, name)
        if deep and hasattr(value, "get_params") and not isinstance(value, type):
            out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
        out[name] = value
    return out


def set_params(estimator, params: dict) -> None:
    """scikit-learn's ``set_params`` for ``estimator``: every name in ``params`` checked
    against ``estimator.get_params()`` before any is set (ValueError naming the first
    unknown one and the class); ``name__sub`` is passed on to the ``set_params`` of a
    value that has one, as :func:`get_params` descends into it.  The values themselves
    are checked by ``fit``."""
    valid = estimator.get_params(deep=False)
    for k in params:
        if not _settable(estimator, k):
            raise ValueError(f"invalid parameter {k!r} for {type(estimator).__name__}; valid: {sorted(valid)}")
    nested: dict = {}
    for k, v in params.items():
        if k in valid:
            setattr(estimator, k, v)
        else:
            head, _, sub = k.partition("__")
            nested.setdefault(head, {})[sub] = v
    for head, sub_params in nested.items():
        getattr(estimator, head).set_params(**sub_params)


def _settable(estimator, name: str) -> bool:
    """Whether ``estimator.set_params`` takes ``name``: one of its parameters, or
    ``param__sub`` where the parameter's value takes ``sub``."""
    valid = estimator.get_params(deep=False)
    if name in valid:
        return True
    head, _, sub = name.partition("__")
    value = valid.get(head)
    return (bool(sub) and hasattr(value, "get_params") and hasattr(value, "set_params")
            and not isinstance(value, type) and _settable(value, sub))
