"""What each ``pygbn`` command does (the parser is :mod:`pygbn.cli.parser`).

Every ``cmd_*`` function takes the parsed arguments, prints its results on
stdout (or writes the ``-o`` file) and returns the exit status; a user error
raises :class:`CLIError`.
"""
from __future__ import annotations

import logging
import os
import re
import sys
import time
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import scipy.sparse as sp

from pygbn import explore, text
from pygbn.cli._output import (STDIN, CLIError, _check_output, _check_output_folder, _out, _write_matrix,
                               _write_matrix_stdout, _write_text)
from pygbn.datasets import load_demo
from pygbn.estimator import GBN, load
from pygbn.evaluation import (MEASURES, coherence_from_counts, cooccurrence, diversity, score_split,
                              trace_diagnostics)
from pygbn.inference import Schedule
from pygbn.model.links import get_link
from pygbn.model.network import Network

logger = logging.getLogger("pygbn")

#: seed of the test-time chain (and of perplexity's token split) when neither --seed nor
#: the model gives one, so that transform and perplexity are always reproducible
DEFAULT_TEST_SEED = 0

#: the demo's default schedule (measured in docs/cli.md: a 29 s fit on one idle core)
DEMO_N_COMPONENTS = 50
DEMO_BURN_IN = (400, 150)
DEMO_COLLECT = 150

#: INPUT suffixes read as a count matrix (pygbn.text.load_counts); any other file is text
_COUNT_SUFFIXES = text.COUNT_SUFFIXES

#: what the command line adds when data do not suit the link (the link's own message already
#: says that non-integer counts need --link prg)
_LINK_HINTS = {
    "bernoulli": "--link bernoulli needs 0/1 data: pass --binarize to read every non-zero value as 1",
}


# ---------------------------------------------------------------------------
# input
# ---------------------------------------------------------------------------


def _input_kind(path: str) -> str:
    if path == STDIN:
        return "stdin"
    if not os.path.exists(path):
        raise CLIError(f"input not found: {path!r}")
    if os.path.isdir(path):
        return "folder"
    low = path.lower()
    if low.endswith((".csv", ".tsv")):
        # a matrix of numbers, or text kept under these names (one document per line, as
        # before they were count formats): the first line that is not a comment decides
        # (and the next, to refuse a header above numbers)
        return _csv_kind(path, "\t" if low.endswith(".tsv") else ",")
    if low.endswith(_COUNT_SUFFIXES):
        return "counts"
    return "lines"


#: the separators of numbers that a .csv / .tsv file may hold instead of its own (None: blanks)
_OTHER_SEPARATORS = {",": "commas", "\t": "tabs", ";": "semicolons", None: "spaces"}


def _csv_kind(path: str, delimiter: str) -> str:
    """"counts" if the first non-blank line of ``path`` not starting with ``#`` is numbers only,
    else "lines" (text); a line of names above lines of numbers (a header, as pandas and R write
    them) is neither: a CLIError, rather than a corpus of one document of column names.  So are
    two lines of numbers separated by another separator (tabs in a .csv, semicolons, spaces):
    read as text they held no word, and fit said only that no term was left."""
    def numbers(line, sep=delimiter):
        try:
            [float(field) for field in line.split(sep)]
        except ValueError:
            return False
        return True

    def other_separator(line):
        return next((sep for sep in _OTHER_SEPARATORS if sep != delimiter and len(line.split(sep)) > 1
                     and numbers(line, sep)), False)

    def head():
        return first if len(first) <= 40 else first[:37] + "..."

    def separated_otherwise(sep):
        own = _OTHER_SEPARATORS[delimiter]
        return CLIError(f"{path!r} holds numbers separated by {_OTHER_SEPARATORS[sep]} ({head()!r}): a "
                        f"{os.path.splitext(path)[1]} file is read as numbers separated by {own} or as text "
                        f"(one document per line); write it with {own}"
                        f"{', or name it .tsv' if sep == chr(9) else ''}")

    first = None
    try:
        with open(path, "rb") as f:
            for raw in f:
                line = raw.decode("utf-8", "replace").strip()
                if not line or line.startswith("#"):
                    continue
                if first is None:
                    if numbers(line):
                        return "counts"
                    first = line
                    continue
                sep = other_separator(first)
                if sep is not False and other_separator(line) == sep:
                    raise separated_otherwise(sep)
                if numbers(line):
                    raise CLIError(f"{path!r} looks like a matrix with a header line ({head()!r}): a "
                                   f"{os.path.splitext(path)[1]} file is read as numbers only or as text "
                                   "(one document per line); remove the header (give the names with "
                                   "--vocab), or rename the file to .txt if it is text")
                return "lines"
    except OSError:
        return "counts"     # load_counts reports it
    if first is None:
        return "counts"
    sep = other_separator(first)
    if sep is not False:
        raise separated_otherwise(sep)
    return "lines"


def _read_documents(path: str, kind: str, args) -> List[str]:
    enc = dict(encoding=args.encoding, errors=args.errors)
    try:
        if kind == "folder":
            _, docs = text.read_folder(path, pattern=args.pattern, recursive=args.recursive, **enc)
        elif kind == "stdin":
            docs = text.read_lines(sys.stdin.buffer, **enc)
        else:
            docs = text.read_lines(path, **enc)
    except text.DecodeError as exc:
        name = "standard input" if kind == "stdin" else repr(exc.name)
        raise CLIError(f"could not decode {name} as {exc.encoding}: {exc.reason} at byte {exc.position}; "
                       "give its encoding (e.g. --encoding latin-1) or --errors replace") from None
    if not docs:
        raise CLIError(f"{'standard input' if kind == 'stdin' else repr(path)} holds no documents")
    return docs


def _read_word_file(reader, path: str, option: str, what: str) -> List[str]:
    """``reader(path)`` of a word-list file (always UTF-8: vocabularies, stop words), with
    command-line advice when it cannot be decoded."""
    try:
        return reader(path)
    except text.DecodeError as exc:
        raise CLIError(f"could not decode the {option} file {exc.name!r} as UTF-8: {exc.reason} at byte "
                       f"{exc.position}; {what} files are read as UTF-8 (--encoding applies to "
                       "text input only): re-save it as UTF-8") from None


def _read_vocab(path: str) -> List[str]:
    """A --vocab file (always UTF-8)."""
    return _read_word_file(text.read_vocab, path, "--vocab", "vocabulary")


def _stop_words(value: str):
    if value == "english":
        return "english"
    if value == "none":
        return None
    if not os.path.isfile(value):
        raise CLIError(f"--stop-words must be 'english', 'none' or a file of words, got {value!r}")
    return _read_word_file(text.read_stop_words, value, "--stop-words", "stop-word")


#: the vectoriser's parameter names as the command line spells them
_VECTORIZER_OPTIONS = {"min_df=": "--min-df ", "max_df=": "--max-df ", "max_features=": "--max-features "}


def _vectorize(vec, docs: List[str], path: str):
    """``vec.fit_transform(docs)``; a vocabulary the options leave empty is a CLIError in their words."""
    try:
        return vec.fit_transform(docs)
    except ValueError as exc:
        msg = str(exc)
        for name, option in _VECTORIZER_OPTIONS.items():
            msg = msg.replace(name, option)
        msg = msg.replace("lower min_df", "lower --min-df").replace("and stop words", "and --stop-words")
        raise CLIError(f"{path!r}: {msg}") from None


#: GBN parameters (as the estimator's messages name them) -> the options of 'pygbn fit'
_FIT_OPTIONS = {"n_components": "--n-components", "n_layers": "--layers", "burn_in": "--burn-in",
                "n_collect": "--collect", "min_width": "--min-width", "trace_every": "--trace-every",
                "eta": "--eta", "method": "--method", "link": "--link"}
_FIT_OPTION_RE = re.compile(r"(?<![\w-])(" + "|".join(_FIT_OPTIONS) + r")(?:=(?:'([^']*)'|(\w+)))?(?![\w(])")


def _option_words(msg: str) -> str:
    """A message of the estimator or a link in the words of the command line: ``link='prg'``
    becomes ``--link prg``, ``burn_in=0`` ``--burn-in 0``, ``n_collect`` ``--collect``."""
    def option(m):
        value = m.group(2) if m.group(2) is not None else m.group(3)
        if value is None and m.group(1) in ("method", "link"):   # English words too: only as name=value
            return m.group(0)
        return _FIT_OPTIONS[m.group(1)] + ("" if value is None else f" {value}")
    return _FIT_OPTION_RE.sub(option, msg)


def _check_for_link(X: sp.csr_matrix, link: str, binarize: bool, what: str) -> sp.csr_matrix:
    """Validate loaded data for a link (:meth:`Link.check_data`), with a command-line hint."""
    if binarize:
        X = sp.csr_matrix(X, dtype=np.float64)
        X.eliminate_zeros()
        X.data[:] = 1.0
    try:
        return get_link(link).check_data(X, what)
    except ValueError as exc:
        msg = _option_words(str(exc))
        hint = _LINK_HINTS.get(link)
        raise CLIError(f"{msg}; {hint}" if hint else msg) from None


def _is_model_file(path: str) -> bool:
    """Whether ``path`` is an .npz written by pygbn.save (it holds a ``__meta__`` entry)."""
    if not path.lower().endswith(".npz"):
        return False
    try:
        with np.load(path, allow_pickle=False) as z:
            return "__meta__" in z.files
    except Exception:  # not an archive (a .npy renamed, a damaged file): load_counts says so
        return False


def _load_data(path: str, args, link: str, fixed_vocab: Optional[Sequence[str]] = None,
               fit_vocab: bool = False):
    """Read ``path`` (counts or text) as a documents x terms matrix.

    Returns ``(X, vocab)``.  Text is vectorised with ``fixed_vocab`` when
    given (e.g. a model's), else with ``--vocab``, else a vocabulary is learnt
    (``fit_vocab``).  Counts keep their columns; ``--vocab`` names them.
    """
    kind = _input_kind(path)
    vocab_path = getattr(args, "vocab", None)
    if kind == "counts":
        if _is_model_file(path):
            raise CLIError(f"{path!r} is a pygbn model file, not a count matrix: give the data "
                           "(a count matrix, text or a folder)")
        transpose = getattr(args, "transpose", False)
        X, _ = text.load_counts(path, transpose=transpose, integer=False)
        vocab = None
        if vocab_path is not None:
            vocab = _read_vocab(vocab_path)
            if len(vocab) != X.shape[1]:
                raise CLIError(f"--vocab {vocab_path!r} has {len(vocab)} terms but the counts in {path!r} "
                               f"have {X.shape[1]} columns (documents x terms"
                               + (")" if transpose else "; give --transpose if the file is terms x documents)"))
    else:
        docs = _read_documents(path, kind, args)
        whose = "the model's vocabulary"
        if fixed_vocab is None and vocab_path is not None:
            fixed_vocab = _read_vocab(vocab_path)
            whose = f"the --vocab file {vocab_path!r}"
        if fixed_vocab is not None:
            vec = text.CountVectorizer(vocabulary=list(fixed_vocab))
        elif fit_vocab:
            vec = text.CountVectorizer(stop_words=_stop_words(args.stop_words), min_df=args.min_df,
                                       max_df=args.max_df, max_features=args.max_features)
        else:
            raise CLIError("this model has no vocabulary, so it cannot read text: give a count "
                           "matrix (.mtx, .npz, .npy, .csv or .tsv) or a --vocab file")
        X = _vectorize(vec, docs, path)
        if fixed_vocab is not None and X.nnz == 0:
            # as a count matrix whose names all differ (text.align_vocabulary): an error, not
            # features or coherence scores of empty documents
            name = "standard input" if kind == "stdin" else repr(path)
            raise CLIError(f"none of the words of {name} is in {whose} ({len(fixed_vocab)} terms)")
        vocab = list(vec.vocab_)
        logger.debug("read %d documents from %s: %d terms, %d tokens", X.shape[0], path, X.shape[1],
                    int(X.sum()))
    X = _check_for_link(X, link, getattr(args, "binarize", False), repr(path))
    return X, vocab


def _align_to_model(X: sp.csr_matrix, vocab: Optional[List[str]], net: Network, path: str) -> sp.csr_matrix:
    """Match the columns of new data to the model's features (by name when both are named)."""
    if vocab is not None and net.vocabulary is not None and list(vocab) != list(net.vocabulary):
        return text.align_vocabulary(X, vocab, net.vocabulary, name=repr(path))
    if X.shape[1] != net.n_features:
        # matching by name needs names on both sides: the hint only when the model has them
        hint = " (pass --vocab to match terms by name)" if vocab is None and net.vocabulary is not None else ""
        raise CLIError(f"{path!r} has {X.shape[1]} columns but the model has {net.n_features} features{hint}")
    return X


# ---------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------


def _load_model(path: str) -> Union[GBN, Network]:
    """Load a saved GBN or Network (:func:`pygbn.load`)."""
    if not os.path.exists(path):
        raise CLIError(f"model file not found: {path!r}")
    if os.path.isdir(path):
        raise CLIError(f"model path is a folder, not a model file: {path!r}")
    return load(path)


def _network(model: Union[GBN, Network], depth: Optional[int]) -> Tuple[Network, Optional[int]]:
    """The network a command works on and the ``depth`` to pass to the model's methods."""
    if isinstance(model, Network):
        if depth is not None and depth != model.depth:
            raise CLIError(f"--depth: this file holds one network of depth {model.depth}, got {depth}")
        return model, None
    n = len(model.networks_)
    if depth is None:
        return model.networks_[-1], None
    if not 1 <= depth <= n:
        raise CLIError(f"--depth must be between 1 and {n} (the model has networks of depth 1..{n}), "
                       f"got {depth}")
    return model.networks_[depth - 1], depth


def _test_seed(model: Union[GBN, Network], args):
    """The seed of the test-time chain: --seed, else the model's (whatever seed a model file
    keeps: an int, a list of ints or a SeedSequence), else DEFAULT_TEST_SEED."""
    if args.seed is not None:
        return args.seed
    stored = getattr(model, "random_state", None)
    if stored is not None:
        return stored
    logger.warning("the model stores no seed: using seed %d (give --seed to choose another)",
                   DEFAULT_TEST_SEED)
    return DEFAULT_TEST_SEED


def _test_chain_model(model: Union[GBN, Network], args) -> GBN:
    """A fitted GBN (a bare network is wrapped) set up for the test-time chain from the options,
    seeded by :func:`_test_seed`."""
    seed = _test_seed(model, args)
    if isinstance(model, Network):
        model = GBN.from_networks(model)
    burn = model.transform_iter[0] if args.burn_in is None else args.burn_in
    coll = model.transform_iter[1] if args.collect is None else args.collect
    model.set_params(transform_iter=(burn, coll), n_jobs=args.jobs, verbose=False, callback=None,
                     random_state=seed)
    return model


def _vocab_for(net, args, vocab_used: bool = False) -> Optional[List[str]]:
    """The terms that label the model's features: its own vocabulary, else the --vocab file.

    --vocab never replaces a vocabulary saved in the model (it would relabel
    every node); it is then ignored with a warning, unless ``vocab_used`` says
    the command reads it for something else (the columns of a count matrix).
    """
    path = getattr(args, "vocab", None)
    if net.vocabulary is not None:
        if path is not None and not vocab_used:
            logger.warning("--vocab %r is not used: the model has its own vocabulary", path)
        return list(net.vocabulary)
    if path is None:
        return None
    vocab = _read_vocab(path)
    if len(vocab) != net.n_features:
        raise CLIError(f"--vocab {path!r} has {len(vocab)} terms but the model has "
                       f"{net.n_features} features")
    return vocab


def _clean_term(term: str) -> str:
    """A term as printed on one line: line breaks and tabs become spaces, control characters go
    (:func:`pygbn.explore.clean_text`, as in ``pygbn tree``); a term left empty is shown as its repr."""
    return explore.clean_text(term).strip() or repr(term)


def _term(vocab: Optional[Sequence[str]], i) -> str:
    """Feature ``i`` as printed: its term (:func:`_clean_term`), or its index without a vocabulary."""
    if vocab is None:
        return str(int(i))
    return _clean_term(vocab[i])


# ---------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------


def _progress_every(args) -> int:
    return 0 if args.quiet else args.progress_every


def _describe_fit(model, n_docs: int, n_terms: int, total: float, seconds: float, args=None) -> None:
    link = model.networks_[-1].link.name
    what = {"poisson": "tokens", "bernoulli": "ones"}.get(link, "in total")
    _out(f"fitted {len(model.networks_)} network(s) to {n_docs} documents x {n_terms} features "
         f"({total:g} {what}) in {seconds:.1f} s")
    ppl = getattr(model, "perplexity_", None)
    for d, net in enumerate(model.networks_, start=1):
        spi = model.seconds_per_iteration_[d - 1] if d - 1 < len(model.seconds_per_iteration_) else float("nan")
        line = f"  depth {d}: widths {net.widths}  ({spi * 1000:.1f} ms/iteration)"
        if ppl is not None:
            line += f"  held-out perplexity {ppl[d - 1]:.2f}"
        _out(line)
    if args is not None and len(model.networks_) < args.layers:
        width = model.networks_[-1].widths[-1]
        if width <= args.min_width:
            _out(f"  stopped adding layers: the top width {width} is at most --min-width {args.min_width}")


def cmd_fit(args) -> int:
    _check_output(args.output, (".npz",), inputs=[args.input])
    if args.heldout_fraction is not None and args.link != "poisson":
        raise CLIError("--heldout-fraction needs count data (--link poisson)")
    model = GBN(link=args.link, n_components=args.n_components, n_layers=args.layers,
                eta=args.eta[0] if len(args.eta) == 1 else tuple(args.eta),
                burn_in=args.burn_in[0] if len(args.burn_in) == 1 else tuple(args.burn_in),
                n_collect=args.collect[0] if len(args.collect) == 1 else tuple(args.collect),
                method=args.method, n_jobs=args.jobs, random_state=args.seed,
                verbose=_progress_every(args), min_width=args.min_width, trace_every=args.trace_every)
    try:
        model._validated()      # the options together (per-layer lengths, --method for the link) first
    except ValueError as exc:   # said in the words of the options
        raise CLIError(_option_words(str(exc))) from None
    X, vocab = _load_data(args.input, args, args.link, fit_vocab=True)
    if X.nnz == 0:
        raise CLIError(f"{args.input!r} holds no non-zero value: there is nothing to fit")
    heldout = None
    X_fit = X
    if args.heldout_fraction is not None:
        X_fit, heldout = score_split(X, get_link(args.link), 1.0 - args.heldout_fraction, args.seed)
        if heldout.nnz == 0:    # the held-out perplexity would be NaN
            if X.sum(axis=1).max() < 2:     # a document keeps one token at least: nothing helps
                raise CLIError(f"--heldout-fraction holds out no token of {args.input!r}: no document of it "
                               "has two or more tokens (each keeps one at least)")
            raise CLIError(f"--heldout-fraction {args.heldout_fraction:g} holds out no token of {args.input!r} "
                           "(a document of n tokens keeps max(1, floor((1 - F) n + 0.5)) of them): raise it")
        _out(f"held out {args.heldout_fraction:g} of each document's tokens: "
             f"{int(X_fit.sum())} to fit, {int(heldout.sum())} held out")
    t0 = time.perf_counter()
    model.fit(X_fit, heldout=heldout, vocabulary=vocab)
    seconds = time.perf_counter() - t0
    model.verbose = False
    model.save(args.output)
    _describe_fit(model, X.shape[0], X.shape[1], float(X_fit.sum()), seconds, args)
    _out(f"saved {args.output}")
    return 0


def _topics_lines(net, vocab, layers, n_words: int, n_topics: Optional[int], reference=None,
                  measures: Sequence[str] = (), diversity_words: int = 25) -> List[str]:
    """The lines of ``pygbn topics``; with a ``reference`` corpus each node's coherence by
    ``measures`` and each layer's mean coherence and topic diversity too."""
    rel = net.relabel_by_popularity()
    # one walk down the network for every layer; the top n_words are a prefix of the top
    # diversity_words (the same order: by probability, ties by the lower index)
    scored = reference is not None         # cmd_topics refuses --n-words 1 with --coherence
    deepest = explore.top_term_indices_by_layer(rel.phis, layers, max(n_words, diversity_words) if scored else n_words)
    tops = {t: idx[:, :n_words] for t, idx in deepest.items()}
    counts = None
    if scored:
        counts = cooccurrence(np.concatenate(list(tops.values()), axis=None), reference,
                              topics=np.vstack(list(tops.values())))
    lines = []
    for t in layers:
        w = rel.node_weights(t)
        idx = tops[t]
        shown = w.shape[0] if n_topics is None else min(n_topics, w.shape[0])
        scores = {m: coherence_from_counts(idx, counts, m) for m in measures} if counts is not None else {}
        header = f"layer {t} ({w.shape[0]} nodes{'' if shown == w.shape[0] else f', top {shown}'})"
        if scores:
            div = diversity(deepest[t][:, :diversity_words])
            header += "; mean coherence " + ", ".join(f"{m} {v.mean():.4f}" for m, v in scores.items()) \
                + f"; diversity {div:.3f} (top {diversity_words})"
        lines.append(header + ":")
        wmax = float(w.max()) if w.size else 0.0
        for k in range(shown):
            words = " ".join(_term(vocab, i) for i in idx[k])
            coh = "".join(f" {m}={v[k]:<7.4f}" for m, v in scores.items())
            # weight relative to the layer's largest (0 when every weight is 0)
            rel_w = w[k] / wmax if wmax > 0 else 0.0
            lines.append(f"  #{k + 1:<3d} w={w[k]:<9.4g} ({rel_w:5.3f}){coh}  {words}")
    return lines


def cmd_topics(args) -> int:
    if args.coherence is not None and args.n_words < 2:   # before any work or output
        raise CLIError(f"--coherence scores pairs of top words: it needs --n-words of at least 2, "
                       f"got {args.n_words}")
    model = _load_model(args.model)
    net, _ = _network(model, args.depth)
    # with --coherence, --vocab may name the columns of a count-matrix reference corpus
    reads_vocab = args.coherence is not None and _input_kind(args.coherence) == "counts"
    vocab = _vocab_for(net, args, vocab_used=reads_vocab)
    if args.layer is not None and not 1 <= args.layer <= net.depth:
        raise CLIError(f"--layer must be between 1 and {net.depth}, got {args.layer}")
    layers = [args.layer] if args.layer is not None else list(range(1, net.depth + 1))
    reference, measures = None, ()
    if args.coherence is not None:
        reference, ref_vocab = _load_data(args.coherence, args, net.link.name, fixed_vocab=vocab)
        reference = _align_to_model(reference, ref_vocab, net, args.coherence)
        measures = MEASURES if args.measure == "all" else (args.measure,)
    _out(f"{net.link.name} GBN with widths {net.widths}; nodes by weight r^(t) (eq. weight), "
         f"#1 = most popular" + ("" if vocab is not None else "; no vocabulary: term indices shown"))
    if reference is not None:
        _out(f"coherence of each node's top {args.n_words} words by document co-occurrence in "
             f"{args.coherence!r} ({reference.shape[0]} documents)")
    for line in _topics_lines(net, vocab, layers, args.n_words, args.n_topics, reference, measures,
                              args.diversity_words):
        _out(line)
    return 0


def _why_no_traces(m: GBN) -> str:
    """Why a fitted GBN recorded no trace point, as far as its parameters tell."""
    every = m.trace_every
    if isinstance(every, (int, np.integer)) and not isinstance(every, bool) and every == 0:
        return "it was fitted with --trace-every 0 (trace_every=0)"
    try:
        sched = Schedule.for_layers(m.n_layers, burn_in=m.burn_in, n_collect=m.n_collect)
        lengths = [b + c for b, c in zip(sched.burn_in, sched.n_collect)][:len(m.networks_)]
        every = int(every)
    except (TypeError, ValueError):  # parameters this pygbn cannot read: say what is possible
        return "it was fitted with trace_every=0, or saved by a pygbn without traces"
    if max(lengths) < every:
        return (f"no trace point was recorded, as each depth's stage had fewer iterations (at most "
                f"{max(lengths)}) than --trace-every {every}: refit with a smaller --trace-every")
    return "it was saved by a pygbn that did not record traces"


def _settings_that_differ(models: Sequence[GBN]) -> List[str]:
    """The settings (and data sizes) that differ between fits whose traces are compared, each as
    'name (value, value, ...)': chains of different data, links or trace points (the chains are
    aligned at their last values) are not draws of one posterior."""
    def schedule(m):
        sched = Schedule.for_layers(m.n_layers, burn_in=m.burn_in, n_collect=m.n_collect)
        return tuple(zip(sched.burn_in, sched.n_collect))

    settings = (("link", lambda m: m.networks_[-1].link.name), ("features", lambda m: m.n_features_in_),
                ("--trace-every", lambda m: m.trace_every),
                ("--burn-in and --collect", schedule))
    out = []
    for name, get in settings:
        try:
            values = [get(m) for m in models]
        except (AttributeError, TypeError, ValueError):  # a model this pygbn cannot read it from
            continue
        if any(v != values[0] for v in values[1:]):
            shown = [str(list(v)) if isinstance(v, tuple) else str(v) for v in values]
            out.append(f"{name} ({', '.join(shown)})")
    return out


def _same_traces(a: GBN, b: GBN) -> bool:
    """Whether two fits recorded the same traces (copies of one chain, or fits with one seed)."""
    return len(a.loglikelihoods_) == len(b.loglikelihoods_) and all(
        np.array_equal(x, y) for x, y in zip(a.loglikelihoods_, b.loglikelihoods_))


def cmd_trace(args) -> int:
    if args.output:
        _check_output(args.output, (".svg",), inputs=args.model)
    for i, path in enumerate(args.model):     # one chain counted twice makes R-hat look converged
        for other in args.model[:i]:
            if os.path.exists(path) and os.path.exists(other) and os.path.samefile(path, other):
                raise CLIError(f"the model file {other!r} is given twice ({path!r}): R-hat and ESS "
                               "compare different fits of the same data")
    models = [_load_model(path) for path in args.model]
    for path, m in zip(args.model, models):
        if not isinstance(m, GBN):
            raise CLIError(f"{path!r} holds a bare network, which has no traces: save the fitted GBN")
        if not any(m.loglikelihoods_):
            raise CLIError(f"{path!r} has no convergence traces: {_why_no_traces(m)}")
    for path, m in zip(args.model, models):
        _out(f"{path}: training log-likelihood per token, every {m.trace_every} iterations")
        for d, (ll, its) in enumerate(zip(m.loglikelihoods_, m.trace_iterations_), start=1):
            if not ll:
                _out(f"  depth {d}: no traced iteration")
                continue
            half = ll[len(ll) // 2:]
            _out(f"  depth {d}: {len(ll)} values (iterations {its[0]}..{its[-1]}), first {ll[0]:.4f}, "
                 f"last {ll[-1]:.4f}, mean of the second half {np.mean(half):.4f}; widths {m.networks_[d - 1].widths}")
    if len(models) > 1:
        differ = _settings_that_differ(models)
        if differ:
            logger.warning("the models differ in %s: R-hat and ESS are meant for fits of the same data "
                           "with the same settings and different seeds", "; ".join(differ))
        for i, m in enumerate(models):
            twin = next((p for p, o in zip(args.model[:i], models[:i]) if _same_traces(o, m)), None)
            if twin is not None:
                logger.warning("%r and %r have the same traces (fits with the same seed?): R-hat and ESS "
                               "are meant for independent chains", twin, args.model[i])
        kept = ("its traced values after the burn-in" if args.discard == "burn_in"
                else f"the last {1 - args.discard:.0%} of its traced values")
        _out(f"{len(models)} chains: split-R-hat and effective sample size of each depth's stage ({kept})")
        for d in range(1, min(len(m.loglikelihoods_) for m in models) + 1):
            r = trace_diagnostics(models, depth=d, discard=args.discard)
            n = r["n_chains"] * r["n_draws"]
            if r["n_draws"] < 4:
                _out(f"  depth {d}: too few values for R-hat and ESS ({r['n_draws']} per chain, 4 needed: "
                     "fit with a smaller trace_every or longer stages)")
            else:
                _out(f"  depth {d}: R-hat {r['rhat']:.3f}, ESS {r['ess']:.1f} of {n} values, mean {r['mean']:.4f}")
    if args.output:
        svg = explore.trace_svg([m.loglikelihoods_ for m in models], [m.trace_iterations_ for m in models],
                                labels=[os.path.basename(p) for p in args.model])
        _write_text(args.output, svg)
        _out(f"wrote the trace plot to {args.output}")
    return 0


def _tree_format(args) -> str:
    if args.format is not None:
        return args.format
    if args.output:
        low = args.output.lower()
        if low.endswith((".dot", ".gv")):
            return "dot"
        if low.endswith(".svg"):
            return "svg"
        if low.endswith((".png", ".pdf", ".jpg", ".jpeg", ".gif", ".ps", ".eps")):
            raise CLIError(f"pygbn writes trees as text, DOT or SVG, not {os.path.splitext(low)[1]}: "
                           "write tree.svg, or tree.dot and render it with Graphviz "
                           "(dot -Tpng tree.dot -o tree.png)")
    return "text"


def cmd_tree(args) -> int:
    fmt = _tree_format(args)  # before any work, as the output folder
    if args.output not in (None, "-"):
        _check_output_folder(args.output, inputs=[args.model])
    model = _load_model(args.model)
    net, _ = _network(model, args.depth)
    vocab = _vocab_for(net, args)
    layer = net.depth if args.layer is None else args.layer
    if not 1 <= layer <= net.depth:
        raise CLIError(f"--layer must be between 1 and {net.depth}, got {layer}")
    width = net.widths[layer - 1]
    if not 1 <= args.node <= width:
        raise CLIError(f"--node must be a rank between 1 and {width} (layer {layer} has {width} nodes), "
                       f"got {args.node}")
    tau = args.tau[0] if len(args.tau) == 1 else list(args.tau)
    if isinstance(tau, list) and len(tau) != net.depth:
        raise CLIError(f"--tau takes one value or one per layer ({net.depth}), got {len(tau)}")
    rel = net.relabel_by_popularity()
    sub = rel.tree(layer, args.node - 1, tau=tau, n_terms=args.n_words, vocab=vocab)
    if fmt == "text":
        content = sub.to_text(n_terms=args.n_words)
    elif fmt == "dot":
        content = sub.to_dot(n_terms=args.n_words)
    else:
        content = sub.to_svg(n_terms=args.n_words)
    _write_text(args.output, content)
    if args.output not in (None, "-"):
        _out(f"wrote a tree of {len(sub.nodes)} nodes (layer sizes {list(sub.layer_sizes)}) to {args.output}")
    return 0


def cmd_generate(args) -> int:
    if args.output is not None:
        _check_output(args.output, inputs=[args.model])
    model = _load_model(args.model)
    net, _ = _network(model, args.depth)
    vocab = _vocab_for(net, args)
    is_text = vocab is not None and net.link.name == "poisson"
    if is_text:        # words ranked by their Poisson rates, as the paper's Section 4.1
        terms, X = net.generate_top_terms(args.n, n=args.n_words, random_state=args.seed, vocab=vocab,
                                          return_samples=True)
    else:
        X = net.generate(args.n, random_state=args.seed)
    if args.output is not None:
        _write_matrix(args.output, X)
    if is_text:
        for j, words in enumerate(terms, start=1):
            _out(f"{j}: {' '.join(_clean_term(w) for w in words) if words else '(empty document)'}")
    elif args.output is None:
        _write_matrix_stdout(X)
    if args.output is not None:
        _out(f"wrote {X.shape[0]} x {X.shape[1]} generated {net.link.data_kind} to {args.output}")
    return 0


def cmd_transform(args) -> int:
    _check_output(args.output, (".npy", ".csv", ".tsv", ".txt"), inputs=[args.model, args.input, args.vocab])
    model = _load_model(args.model)
    net, depth = _network(model, args.depth)
    X, vocab = _load_data(args.input, args, net.link.name, fixed_vocab=net.vocabulary)
    X = _align_to_model(X, vocab, net, args.input)
    feats = _test_chain_model(model, args).transform(X, depth=depth)
    _, perms = net.relabel_by_popularity(return_perms=True)
    feats = feats[:, perms[0]]
    _write_matrix(args.output, feats)
    topics = "pygbn topics" + ("" if args.depth is None else f" --depth {args.depth}") + " --layer 1"
    _out(f"wrote {feats.shape[0]} x {feats.shape[1]} features to {args.output} "
         f"(column k is layer-one node #k+1 as ranked by '{topics}')")
    return 0


def cmd_perplexity(args) -> int:
    model = _load_model(args.model)
    net, depth = _network(model, args.depth)
    if net.link.name != "poisson":
        raise CLIError(f"perplexity is defined for count models (link poisson), this model's link is "
                       f"{net.link.name}")
    X, vocab = _load_data(args.input, args, "poisson", fixed_vocab=net.vocabulary)
    X = _align_to_model(X, vocab, net, args.input)
    X = sp.csr_matrix(X, dtype=np.int64)
    X = X[np.asarray(X.sum(axis=1)).ravel() >= 2]
    if X.shape[0] == 0:
        raise CLIError(f"no document of {args.input!r} has two or more tokens of the model's vocabulary")
    model = _test_chain_model(model, args)
    X_obs, X_held = score_split(X, net.link, args.train_fraction, model.random_state)
    if X_held.nnz == 0:         # the perplexity would be NaN
        raise CLIError(f"--train-fraction {args.train_fraction:g} leaves no held-out token in {args.input!r} "
                       "(a document of n tokens keeps floor(F n + 0.5) of them observed): lower it")
    ppl = model.perplexity(X_obs, X_held, depth=depth)
    _out(f"held-out perplexity (depth {net.depth}, {X.shape[0]} documents, {int(X_obs.sum())} observed "
         f"and {int(X_held.sum())} held-out tokens): {ppl:.2f}")
    return 0


def cmd_demo(args) -> int:
    if args.output is not None:
        _check_output(args.output, (".npz",))
    demo = load_demo()
    X = demo.counts
    _out(f"pygbn demo: a {args.layers}-layer Poisson gamma belief network on the bundled corpus of "
         f"{X.shape[0]} Debian package descriptions ({X.shape[1]} words, {int(X.sum())} tokens)")
    _out(f"K1max={args.n_components}, burn-in {tuple(args.burn_in)}, collect {args.collect}, "
         f"seed {args.seed}" + ("" if args.quiet else "; progress on stderr"))
    model = GBN(n_components=args.n_components, n_layers=args.layers,
                burn_in=args.burn_in[0] if len(args.burn_in) == 1 else tuple(args.burn_in),
                n_collect=args.collect, n_jobs=args.jobs, random_state=args.seed,
                verbose=_progress_every(args))
    t0 = time.perf_counter()
    model.fit(X, vocabulary=demo.vocab)
    seconds = time.perf_counter() - t0
    model.verbose = False
    _out("")
    _out(f"fitted in {seconds:.1f} s")
    for d, net in enumerate(model.networks_, start=1):
        _out(f"  depth {d}: widths {net.widths}")
    net = model.network_
    _out("")
    _out(f"top {args.n_topics} topics of each layer (by weight, eq. weight; {args.n_words} words each):")
    for line in _topics_lines(net, net.vocabulary, range(net.depth, 0, -1), args.n_words, args.n_topics):
        _out(line)
    rel = net.relabel_by_popularity()
    sub = rel.tree(net.depth, 0, tau=args.tau, n_terms=args.n_words)
    _out("")
    _out(f"tree rooted at the most popular node of layer {net.depth} (tau={args.tau:g}; "
         f"layer sizes {list(sub.layer_sizes)}):")
    sys.stdout.write(sub.to_text(n_terms=args.n_words))
    if args.output is not None:
        model.save(args.output)
        _out(f"saved {args.output}")
    _out("")
    _out("next: pygbn fit --help  (your own data), docs/quickstart.md")
    return 0
