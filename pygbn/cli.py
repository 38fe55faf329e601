"""Command line interface: ``pygbn`` / ``python -m pygbn``.

Subcommands (``pygbn <command> --help`` for the options of each):

``fit``
    Fit a GBN to a count matrix (``.mtx``/``.npz``) or to raw text (one
    document per line, or a folder of files) and save it to one ``.npz``.
``topics``
    Top words of every node of each layer of a saved model, most popular
    node first.
``tree``
    The tree rooted at one node, as indented text, Graphviz DOT or SVG.
``generate``
    Synthetic documents drawn top-down from a saved model.
``transform``
    Features of new documents (``.npy`` or ``.csv``).
``perplexity``
    Held-out perplexity of new documents (document completion).
``demo``
    Fit a three-layer Poisson GBN to the bundled Debian corpus and show
    what it learned.

User errors (a missing file, a bad option, data of the wrong type for the
link, a file that is not a model) print one line ``pygbn: error: ...`` on
stderr and exit with status 1 (2 for a bad command line), never a traceback;
set the environment variable ``PYGBN_DEBUG=1`` to see the traceback.
Progress goes to stderr (silence it with ``--quiet``); results go to stdout
or to the ``-o`` file.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from typing import List, Optional, Sequence

import numpy as np
import scipy.sparse as sp

PROG = "pygbn"

#: the demo's default schedule (measured in docs/cli.md: a 29 s fit on one idle core)
DEMO_N_COMPONENTS = 50
DEMO_BURN_IN = (400, 150)
DEMO_COLLECT = 150

_COUNT_SUFFIXES = (".mtx", ".mtx.gz", ".mtx.bz2", ".mm", ".npz")
_MATRIX_SUFFIXES = (".npy", ".csv", ".tsv", ".txt", ".npz", ".mtx")

logger = logging.getLogger("pygbn")


class CLIError(Exception):
    """A user error: reported as one line ``pygbn: error: <message>``."""


class _UsageError(CLIError):
    """A bad command line (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line, raised instead of printed with the usage."""

    def error(self, message):  # noqa: D401 - argparse API
        raise _UsageError(f"{message} (see '{self.prog} --help')")


# ---------------------------------------------------------------------------
# argument types
# ---------------------------------------------------------------------------


def _int_at_least(minimum: int):
    def conv(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an int >= {minimum}, got {text!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"expected an int >= {minimum}, got {text!r}")
        return v

    conv.__name__ = f"int >= {minimum}"
    return conv


_pos_int = _int_at_least(1)
_nonneg_int = _int_at_least(0)


def _pos_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return v


def _nonneg_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative number, got {text!r}") from None
    if not np.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative number, got {text!r}")
    return v


def _open_fraction(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0.0 < v < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return v


def _df(text: str):
    """min_df/max_df: an int (documents) or a float with a decimal point (proportion)."""
    try:
        if any(c in text for c in ".eE"):
            v = float(text)
            if not 0.0 <= v <= 1.0:
                raise ValueError
            return v
        v = int(text)
        if v < 0:
            raise ValueError
        return v
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an int >= 0 (documents) or a proportion like 0.5, got {text!r}") from None


# ---------------------------------------------------------------------------
# output helpers
# ---------------------------------------------------------------------------


def _out(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def _write_text(path: Optional[str], text: str) -> None:
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def _check_matrix_suffix(path: str, allowed=_MATRIX_SUFFIXES) -> None:
    if not path.lower().endswith(allowed):
        raise CLIError(f"output file {path!r} must end in "
                       + (allowed[0] if len(allowed) == 1 else "one of " + ", ".join(allowed)))


def _write_matrix(path: str, M) -> None:
    """Write a matrix by the suffix of ``path``: .npy, .csv, .tsv, .txt, .npz or .mtx."""
    low = path.lower()
    if low.endswith((".npz", ".mtx")):
        from pygbn.text import save_counts

        save_counts(path, M)
        return
    A = M.toarray() if sp.issparse(M) else np.asarray(M)
    if low.endswith(".npy"):
        np.save(path, A, allow_pickle=False)
        return
    delim = "\t" if low.endswith(".tsv") else ","
    fmt = "%d" if A.dtype.kind in "biu" else "%.8g"
    np.savetxt(path, A, fmt=fmt, delimiter=delim)


def _write_matrix_stdout(M) -> None:
    A = M.toarray() if sp.issparse(M) else np.asarray(M)
    fmt = "%d" if A.dtype.kind in "biu" else "%.8g"
    np.savetxt(sys.stdout, A, fmt=fmt, delimiter=",")


# ---------------------------------------------------------------------------
# input
# ---------------------------------------------------------------------------


def _input_kind(path: str) -> str:
    if not os.path.exists(path):
        raise CLIError(f"input not found: {path!r}")
    if os.path.isdir(path):
        return "folder"
    if path.lower().endswith(_COUNT_SUFFIXES):
        return "counts"
    return "lines"


def _read_documents(path: str, kind: str, args) -> List[str]:
    from pygbn import text

    if kind == "folder":
        _, docs = text.read_folder(path, pattern=args.pattern, recursive=args.recursive)
    else:
        docs = text.read_lines(path)
    if not docs:
        raise CLIError(f"{path!r} holds no documents")
    return docs


def _stop_words(value: str):
    if value == "english":
        return "english"
    if value == "none":
        return None
    from pygbn import text

    if not os.path.isfile(value):
        raise CLIError(f"--stop-words must be 'english', 'none' or a file of words, got {value!r}")
    return text.read_vocab(value)


def _check_for_link(X: sp.csr_matrix, link: str, binarize: bool, what: str) -> sp.csr_matrix:
    """Validate (and convert) loaded data for a link, with command-line wording."""
    X = sp.csr_matrix(X, dtype=np.float64)
    X.eliminate_zeros()
    if binarize:
        X.data[:] = 1.0
    if link == "poisson":
        frac = X.data != np.floor(X.data)
        if frac.any():
            raise CLIError(f"{what} holds non-integer values (e.g. {X.data[frac][0]:g}); --link poisson "
                           "needs counts: use --link prg for nonnegative reals")
        return X
    if link == "bernoulli":
        if X.data.size and X.data.max() > 1.0:
            raise CLIError(f"{what} holds values up to {X.data.max():g}, but --link bernoulli needs 0/1 "
                           "data: pass --binarize to read every non-zero value as 1")
        return X
    return X


def _load_data(path: str, args, link: str, fixed_vocab: Optional[Sequence[str]] = None,
               fit_vocab: bool = False):
    """Read ``path`` (counts or text) as a documents x terms matrix.

    Returns ``(X, vocab)``.  Text is vectorised with ``fixed_vocab`` when
    given (e.g. a model's), else with ``--vocab``, else a vocabulary is learnt
    (``fit_vocab``).  Counts keep their columns; ``--vocab`` names them.
    """
    from pygbn import text

    kind = _input_kind(path)
    vocab_path = getattr(args, "vocab", None)
    if kind == "counts":
        X, vocab = text.load_counts(path, vocab_path, transpose=getattr(args, "transpose", False),
                                    integer=False)
    else:
        docs = _read_documents(path, kind, args)
        if fixed_vocab is None and vocab_path is not None:
            fixed_vocab = text.read_vocab(vocab_path)
        if fixed_vocab is not None:
            vec = text.CountVectorizer(vocabulary=list(fixed_vocab))
        elif fit_vocab:
            vec = text.CountVectorizer(stop_words=_stop_words(args.stop_words), min_df=args.min_df,
                                       max_df=args.max_df, max_features=args.max_features)
        else:
            raise CLIError("this model has no vocabulary, so it cannot read text: give a count "
                           "matrix (.mtx or .npz) or a --vocab file")
        X = vec.fit_transform(docs)
        vocab = list(vec.vocab_)
        if X.shape[1] == 0:
            raise CLIError(f"no term left in the vocabulary of {path!r}: lower --min-df or raise --max-df")
        logger.debug("read %d documents from %s: %d terms, %d tokens", X.shape[0], path, X.shape[1],
                    int(X.sum()))
    X = _check_for_link(X, link, getattr(args, "binarize", False), repr(path))
    return X, vocab


def _align_to_model(X: sp.csr_matrix, vocab: Optional[List[str]], net, path: str) -> sp.csr_matrix:
    """Match the columns of new data to the model's features (by name when both are named)."""
    V = net.n_features
    model_vocab = net.vocabulary
    if vocab is not None and model_vocab is not None and list(vocab) != list(model_vocab):
        index = {w: i for i, w in enumerate(model_vocab)}
        cols = np.array([index.get(w, -1) for w in vocab], dtype=np.int64)
        keep = cols >= 0
        if not keep.any():
            raise CLIError(f"none of the terms of {path!r} is in the model's vocabulary")
        C = sp.csr_matrix((np.ones(int(keep.sum())), (np.flatnonzero(keep), cols[keep])),
                          shape=(len(vocab), V))
        logger.debug("matched %d of %d terms of %s to the model's vocabulary", int(keep.sum()),
                    len(vocab), path)
        return (X @ C).tocsr()
    if X.shape[1] != V:
        raise CLIError(f"{path!r} has {X.shape[1]} columns but the model has {V} features"
                       + ("" if vocab is not None else " (pass --vocab to match terms by name)"))
    return X


# ---------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------


def _load_model(path: str):
    """Load a saved GBN (or Network) and return it as a fitted GBN."""
    import pygbn

    if not os.path.exists(path):
        raise CLIError(f"model file not found: {path!r}")
    if os.path.isdir(path):
        raise CLIError(f"model path is a folder, not a model file: {path!r}")
    obj = pygbn.load(path)
    if isinstance(obj, pygbn.Network):
        model = pygbn.GBN(link=obj.link, n_components=obj.widths[0], n_layers=obj.depth)
        model.networks_ = [obj]
        model.widths_ = list(obj.widths)
        model.n_features_in_ = obj.n_features
        model.seconds_per_iteration_ = []
        model.method_ = "blocked"
        model._cli_single_network = True
        return model
    return obj


def _network(model, depth: Optional[int]):
    n = len(model.networks_)
    if depth is None:
        return model.networks_[-1], None
    if getattr(model, "_cli_single_network", False):
        if depth != model.networks_[0].depth:
            raise CLIError(f"--depth: this file holds one network of depth {model.networks_[0].depth}, "
                           f"got {depth}")
        return model.networks_[0], None
    if not 1 <= depth <= n:
        raise CLIError(f"--depth must be between 1 and {n} (the model has networks of depth 1..{n}), "
                       f"got {depth}")
    return model.networks_[depth - 1], depth


def _vocab_for(net, args) -> Optional[List[str]]:
    path = getattr(args, "vocab", None)
    if path is not None:
        from pygbn import text

        vocab = text.read_vocab(path)
        if len(vocab) != net.n_features:
            raise CLIError(f"--vocab {path!r} has {len(vocab)} terms but the model has "
                           f"{net.n_features} features")
        return vocab
    return None if net.vocabulary is None else list(net.vocabulary)


def _set_test_chain(model, args) -> None:
    burn = model.transform_iter[0] if args.burn_in is None else args.burn_in
    coll = model.transform_iter[1] if args.collect is None else args.collect
    model.transform_iter = (burn, coll)
    if args.seed is not None:
        model.random_state = args.seed
    model.n_jobs = args.jobs
    model.verbose = False
    model.callback = None


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
    import pygbn
    from pygbn.evaluation import split_tokens

    _check_matrix_suffix(args.output, (".npz",))
    if args.heldout_fraction is not None and args.link != "poisson":
        raise CLIError("--heldout-fraction needs count data (--link poisson)")
    X, vocab = _load_data(args.input, args, args.link, fit_vocab=True)
    if X.nnz == 0:
        raise CLIError(f"{args.input!r} holds no non-zero value: there is nothing to fit")
    heldout = None
    X_fit = X
    if args.heldout_fraction is not None:
        split_rng = None if args.seed is None else np.random.default_rng([args.seed, 0x5EED])
        X_fit, heldout = split_tokens(X, train_fraction=1.0 - args.heldout_fraction, random_state=split_rng)
        _out(f"held out {args.heldout_fraction:g} of each document's tokens: "
             f"{int(X_fit.sum())} to fit, {int(heldout.sum())} held out")
    model = pygbn.GBN(link=args.link, n_components=args.n_components, n_layers=args.layers,
                      eta=args.eta[0] if len(args.eta) == 1 else tuple(args.eta),
                      burn_in=args.burn_in[0] if len(args.burn_in) == 1 else tuple(args.burn_in),
                      n_collect=args.collect[0] if len(args.collect) == 1 else tuple(args.collect),
                      method=args.method, n_jobs=args.jobs, random_state=args.seed,
                      verbose=_progress_every(args), min_width=args.min_width)
    t0 = time.perf_counter()
    model.fit(X_fit, heldout=heldout, vocabulary=vocab)
    seconds = time.perf_counter() - t0
    model.verbose = False
    model.save(args.output)
    _describe_fit(model, X.shape[0], X.shape[1], float(X_fit.sum()), seconds, args)
    _out(f"saved {args.output}")
    return 0


def _topics_lines(net, vocab, layers, n_words: int, n_topics: Optional[int]) -> List[str]:
    from pygbn import explore

    rel = net.relabel_by_popularity()
    lines = []
    for t in layers:
        w = rel.node_weights(t)
        idx = explore.top_term_indices(rel.phis, t, n_words)
        shown = w.shape[0] if n_topics is None else min(n_topics, w.shape[0])
        lines.append(f"layer {t} ({w.shape[0]} nodes{'' if shown == w.shape[0] else f', top {shown}'}):")
        wmax = float(w.max()) if w.size else 1.0
        for k in range(shown):
            words = " ".join(vocab[i] if vocab is not None else str(int(i)) for i in idx[k])
            lines.append(f"  #{k + 1:<3d} w={w[k]:<9.4g} ({w[k] / wmax:5.3f})  {words}")
    return lines


def cmd_topics(args) -> int:
    model = _load_model(args.model)
    net, _ = _network(model, args.depth)
    vocab = _vocab_for(net, args)
    if args.layer is not None and not 1 <= args.layer <= net.depth:
        raise CLIError(f"--layer must be between 1 and {net.depth}, got {args.layer}")
    layers = [args.layer] if args.layer is not None else list(range(1, net.depth + 1))
    _out(f"{net.link.name} GBN with widths {net.widths}; nodes by weight r^(t) (eq. weight), "
         f"#1 = most popular" + ("" if vocab is not None else "; no vocabulary: term indices shown"))
    for line in _topics_lines(net, vocab, layers, args.n_words, args.n_topics):
        _out(line)
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
    fmt = _tree_format(args)
    if fmt == "text":
        text = sub.to_text(n_terms=args.n_words)
    elif fmt == "dot":
        text = sub.to_dot(n_terms=args.n_words)
    else:
        text = sub.to_svg(n_terms=args.n_words)
    _write_text(args.output, text)
    if args.output not in (None, "-"):
        _out(f"wrote a tree of {len(sub.nodes)} nodes (layer sizes {list(sub.layer_sizes)}) to {args.output}")
    return 0


def cmd_generate(args) -> int:
    from pygbn import explore

    model = _load_model(args.model)
    net, _ = _network(model, args.depth)
    vocab = _vocab_for(net, args)
    if args.output is not None:
        _check_matrix_suffix(args.output)
    X = net.generate(args.n, random_state=args.seed)
    is_text = vocab is not None and net.link.name == "poisson"
    if args.output is not None:
        _write_matrix(args.output, X)
    if is_text:
        for j, words in enumerate(explore.generated_top_terms(X, vocab, n=args.n_words), start=1):
            _out(f"{j}: {' '.join(words) if words else '(empty document)'}")
    elif args.output is None:
        _write_matrix_stdout(X)
    if args.output is not None:
        _out(f"wrote {X.shape[0]} x {X.shape[1]} generated {net.link.data_kind} to {args.output}")
    return 0


def cmd_transform(args) -> int:
    model = _load_model(args.model)
    net, depth = _network(model, args.depth)
    _check_matrix_suffix(args.output, (".npy", ".csv", ".tsv", ".txt"))
    X, vocab = _load_data(args.input, args, net.link.name, fixed_vocab=net.vocabulary)
    X = _align_to_model(X, vocab, net, args.input)
    _set_test_chain(model, args)
    feats = model.transform(X, depth=depth)
    _, perms = net.relabel_by_popularity(return_perms=True)
    feats = feats[:, perms[0]]
    _write_matrix(args.output, feats)
    _out(f"wrote {feats.shape[0]} x {feats.shape[1]} features to {args.output} "
         "(column k is layer-one node #k+1 as ranked by 'pygbn topics --layer 1')")
    return 0


def cmd_perplexity(args) -> int:
    from pygbn.evaluation import split_tokens

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
    split_rng = None if args.seed is None else np.random.default_rng([args.seed, 0x5EED])
    X_obs, X_held = split_tokens(X, train_fraction=args.train_fraction, random_state=split_rng)
    _set_test_chain(model, args)
    ppl = model.perplexity(X_obs, X_held, depth=depth)
    _out(f"held-out perplexity (depth {net.depth}, {X.shape[0]} documents, {int(X_obs.sum())} observed "
         f"and {int(X_held.sum())} held-out tokens): {ppl:.2f}")
    return 0


def cmd_demo(args) -> int:
    import pygbn
    from pygbn.datasets import load_demo

    if args.output is not None:
        _check_matrix_suffix(args.output, (".npz",))
    demo = load_demo()
    X = demo.counts
    _out(f"pygbn demo: a {args.layers}-layer Poisson gamma belief network on the bundled corpus of "
         f"{X.shape[0]} Debian package descriptions ({X.shape[1]} words, {int(X.sum())} tokens)")
    _out(f"K1max={args.n_components}, burn-in {tuple(args.burn_in)}, collect {args.collect}, "
         f"seed {args.seed}" + ("" if args.quiet else "; progress on stderr"))
    model = pygbn.GBN(n_components=args.n_components, n_layers=args.layers,
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


# ---------------------------------------------------------------------------
# parser
# ---------------------------------------------------------------------------


def _add_input_options(p, fitting: bool) -> None:
    g = p.add_argument_group("input")
    g.add_argument("--vocab", metavar="FILE",
                   help="vocabulary, one term per line: names the columns of a count matrix"
                   + (", or fixes the vocabulary of text input" if fitting else
                      " (matched to the model's by name)"))
    g.add_argument("--transpose", action="store_true",
                   help="the count matrix is stored terms x documents")
    g.add_argument("--binarize", action="store_true",
                   help="read every non-zero value as 1 (for --link bernoulli)")
    g.add_argument("--pattern", default="*", metavar="GLOB",
                   help="file names to read from an input folder (default: %(default)s)")
    g.add_argument("--recursive", action="store_true", help="also read the sub-folders of an input folder")
    if fitting:
        g.add_argument("--min-df", type=_df, default=1, metavar="N",
                       help="text: keep terms in at least N documents (an int) or this proportion of "
                       "documents (e.g. 0.01) (default: %(default)s)")
        g.add_argument("--max-df", type=_df, default=1.0, metavar="N",
                       help="text: keep terms in at most N documents or this proportion (default: %(default)s)")
        g.add_argument("--max-features", type=_pos_int, default=None, metavar="N",
                       help="text: then keep the N most frequent terms")
        g.add_argument("--stop-words", default="english", metavar="WORDS",
                       help="text: 'english' (the shipped list), 'none', or a file of words "
                       "(default: %(default)s)")


def _add_test_chain_options(p) -> None:
    g = p.add_argument_group("test-time chain")
    g.add_argument("--depth", type=_pos_int, default=None, help="network depth to use (default: the deepest)")
    g.add_argument("--burn-in", type=_nonneg_int, default=None, metavar="N",
                   help="burn-in iterations (default: the model's, 500)")
    g.add_argument("--collect", type=_pos_int, default=None, metavar="N",
                   help="collected iterations (default: the model's, 500)")
    g.add_argument("--seed", type=int, default=None, help="random seed (default: the model's)")
    g.add_argument("--jobs", type=int, default=1, metavar="N", help="threads (-1: all cores; default: 1)")


INPUT_HELP = ("a count matrix (.mtx, .mtx.gz, .npz; documents x terms), a text file with one "
              "document per line, or a folder with one document per file")


def build_parser(width: Optional[int] = None) -> argparse.ArgumentParser:
    """The ``pygbn`` argument parser.

    Parameters
    ----------
    width : int, optional
        Wrap help texts at this width (default: the terminal's); see
        :func:`help_text`.
    """
    from pygbn import __version__

    def formatter(prog):
        return argparse.HelpFormatter(prog, width=width) if width else argparse.HelpFormatter(prog)

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true", help="no progress or log lines on stderr")

    parser = _Parser(
        prog=PROG,
        formatter_class=formatter,
        description="Augmentable gamma belief networks (Zhou, Cong & Chen, JMLR 2016): fit deep "
        "topic models to counts, binary or nonnegative data and explore them.",
        epilog="Start with 'pygbn demo'; 'pygbn COMMAND --help' describes each command.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add = sub.add_parser

    def add_parser(name, **kwargs):
        return _add(name, formatter_class=formatter, **kwargs)

    sub.add_parser = add_parser

    # fit ------------------------------------------------------------------
    p = sub.add_parser("fit", parents=[common], help="fit a GBN to counts or text and save it",
                       description="Fit a gamma belief network (one network per depth 1..--layers, "
                       "widths inferred) and save it to one .npz file.")
    p.add_argument("input", help=INPUT_HELP)
    p.add_argument("-o", "--output", required=True, metavar="MODEL.npz", help="where to save the model")
    _add_input_options(p, fitting=True)
    g = p.add_argument_group("model and sampler")
    g.add_argument("--link", choices=("poisson", "bernoulli", "prg"), default="poisson",
                   help="counts (poisson), binary data (bernoulli) or nonnegative reals (prg) "
                   "(default: %(default)s)")
    g.add_argument("--n-components", type=_pos_int, default=100, metavar="K",
                   help="upper bound of the first layer's width, K1max (default: %(default)s)")
    g.add_argument("--layers", type=_pos_int, default=5, metavar="T",
                   help="maximum number of layers, Tmax (default: %(default)s)")
    g.add_argument("--burn-in", type=_nonneg_int, nargs="+", default=[1000, 500], metavar="B",
                   help="burn-in iterations: B1 for the first layer and Bt for each later one, or one "
                   "value per layer (default: 1000 500)")
    g.add_argument("--collect", type=_nonneg_int, nargs="+", default=[500], metavar="C",
                   help="iterations after pruning, per layer (default: 500)")
    g.add_argument("--eta", type=_pos_float, nargs="+", default=[0.05],
                   help="Dirichlet concentration of Phi, one value or one per layer (default: 0.05)")
    g.add_argument("--method", choices=("auto", "collapsed", "blocked"), default="auto",
                   help="layer-one update (default: auto = collapsed for counts)")
    g.add_argument("--min-width", type=_nonneg_int, default=4, metavar="K",
                   help="stop adding layers once a width is at most K (default: %(default)s)")
    g.add_argument("--seed", type=int, default=None, help="random seed (default: fresh entropy)")
    g.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="threads for the document-parallel kernels, -1 for all cores; results do not "
                   "depend on it (default: 1)")
    g.add_argument("--heldout-fraction", type=_open_fraction, default=None, metavar="F",
                   help="hold out this fraction of each document's tokens (the paper uses 0.7), fit "
                   "on the rest and report the held-out perplexity of each depth")
    g.add_argument("--progress-every", type=_pos_int, default=50, metavar="N",
                   help="iterations between progress lines on stderr (default: %(default)s)")
    p.set_defaults(func=cmd_fit)

    # topics ---------------------------------------------------------------
    p = sub.add_parser("topics", parents=[common], help="top words of the nodes of each layer",
                       description="Print the top words of every node of each layer of a saved "
                       "model, nodes ranked by weight (most popular first, as #1, #2, ...).")
    p.add_argument("model", help="model file written by 'pygbn fit'")
    p.add_argument("--layer", type=_pos_int, default=None, help="only this layer (default: all)")
    p.add_argument("--n-words", type=_pos_int, default=10, metavar="N", help="words per node (default: %(default)s)")
    p.add_argument("--n-topics", type=_pos_int, default=None, metavar="N",
                   help="only the N most popular nodes of each layer (default: all)")
    p.add_argument("--depth", type=_pos_int, default=None, help="network depth to show (default: the deepest)")
    p.add_argument("--vocab", metavar="FILE", help="vocabulary file, if the model has none")
    p.set_defaults(func=cmd_topics)

    # tree -----------------------------------------------------------------
    p = sub.add_parser("tree", parents=[common], help="the tree rooted at one node (text, DOT or SVG)",
                       description="Grow the tree rooted at one node downward along the edges with "
                       "Phi^(t)(k', k) > tau / K_(t-1) and print or write it.")
    p.add_argument("model", help="model file written by 'pygbn fit'")
    p.add_argument("--layer", type=_pos_int, default=None, help="layer of the root (default: the top layer)")
    p.add_argument("--node", type=_pos_int, default=1,
                   help="rank of the root in its layer, as shown by 'pygbn topics' (default: 1, the most popular)")
    p.add_argument("--tau", type=_nonneg_float, nargs="+", default=[3.0],
                   help="edge threshold, one value or one per layer (default: 3)")
    p.add_argument("--format", choices=("text", "dot", "svg"), default=None,
                   help="output format (default: from the -o suffix .dot/.gv/.svg, else text)")
    p.add_argument("-o", "--output", default=None, metavar="FILE", help="write here instead of stdout")
    p.add_argument("--n-words", type=_pos_int, default=8, metavar="N", help="words per node (default: %(default)s)")
    p.add_argument("--depth", type=_pos_int, default=None, help="network depth to use (default: the deepest)")
    p.add_argument("--vocab", metavar="FILE", help="vocabulary file, if the model has none")
    p.set_defaults(func=cmd_tree)

    # generate -------------------------------------------------------------
    p = sub.add_parser("generate", parents=[common], help="synthetic documents from a saved model",
                       description="Draw samples top-down through a saved network with c_j at the "
                       "training medians. For a text model, print the top words of each generated "
                       "document; otherwise write the matrix (CSV on stdout without -o).")
    p.add_argument("model", help="model file written by 'pygbn fit'")
    p.add_argument("-n", type=_nonneg_int, default=10, help="number of samples (default: %(default)s)")
    p.add_argument("--seed", type=int, default=None, help="random seed (default: fresh entropy)")
    p.add_argument("--n-words", type=_pos_int, default=10, metavar="N",
                   help="words shown per generated document (default: %(default)s)")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="also write the samples (.npy, .csv, .tsv, .txt, .npz or .mtx)")
    p.add_argument("--depth", type=_pos_int, default=None, help="network depth to use (default: the deepest)")
    p.add_argument("--vocab", metavar="FILE", help="vocabulary file, if the model has none")
    p.set_defaults(func=cmd_generate)

    # transform ------------------------------------------------------------
    p = sub.add_parser("transform", parents=[common], help="features of new documents",
                       description="Features of new documents: the average of theta_j^(1) / "
                       "theta_.j^(1) over a test-time chain with the network fixed. Columns are the "
                       "layer-one nodes in the order of 'pygbn topics --layer 1'.")
    p.add_argument("model", help="model file written by 'pygbn fit'")
    p.add_argument("input", help=INPUT_HELP)
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="features file (.npy, .csv, .tsv or .txt)")
    _add_input_options(p, fitting=False)
    _add_test_chain_options(p)
    p.set_defaults(func=cmd_transform)

    # perplexity -----------------------------------------------------------
    p = sub.add_parser("perplexity", parents=[common], help="held-out perplexity of new documents",
                       description="Split each new document's tokens (--train-fraction observed, the "
                       "rest held out), run the test-time chain on the observed part and report the "
                       "perplexity of the held-out part. Documents with fewer than two tokens are skipped.")
    p.add_argument("model", help="model file written by 'pygbn fit' (link poisson)")
    p.add_argument("input", help=INPUT_HELP)
    p.add_argument("--train-fraction", type=_open_fraction, default=0.3, metavar="F",
                   help="fraction of each document's tokens observed (default: %(default)s, as in the paper)")
    _add_input_options(p, fitting=False)
    _add_test_chain_options(p)
    p.set_defaults(func=cmd_perplexity)

    # demo -----------------------------------------------------------------
    p = sub.add_parser("demo", parents=[common], help="fit a 3-layer GBN to the bundled corpus (about a minute)",
                       description="Fit a three-layer Poisson GBN to the bundled corpus of Debian "
                       "package descriptions and print the widths, the top words of the most "
                       "popular topics of each layer and one tree.")
    p.add_argument("--n-components", type=_pos_int, default=DEMO_N_COMPONENTS, metavar="K",
                   help="K1max (default: %(default)s)")
    p.add_argument("--layers", type=_pos_int, default=3, metavar="T", help="layers (default: %(default)s)")
    p.add_argument("--burn-in", type=_nonneg_int, nargs="+", default=list(DEMO_BURN_IN), metavar="B",
                   help=f"burn-in B1 [Bt] (default: {DEMO_BURN_IN[0]} {DEMO_BURN_IN[1]})")
    p.add_argument("--collect", type=_nonneg_int, default=DEMO_COLLECT, metavar="C",
                   help="iterations after pruning, per layer (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="threads (default: %(default)s)")
    p.add_argument("--n-topics", type=_pos_int, default=5, metavar="N",
                   help="topics shown per layer (default: %(default)s)")
    p.add_argument("--n-words", type=_pos_int, default=8, metavar="N", help="words per topic (default: %(default)s)")
    p.add_argument("--tau", type=_nonneg_float, default=3.0, help="tree edge threshold (default: %(default)s)")
    p.add_argument("--progress-every", type=_pos_int, default=50, metavar="N",
                   help="iterations between progress lines on stderr (default: %(default)s)")
    p.add_argument("-o", "--output", default=None, metavar="MODEL.npz", help="also save the fitted model")
    p.set_defaults(func=cmd_demo)
    return parser


def help_text(command: Optional[str] = None, width: int = 90) -> str:
    """The ``--help`` text of ``pygbn`` or of one subcommand, wrapped at ``width``.

    ``docs/cli.md`` is generated from these texts (``tools/gen_cli_docs.py``).
    """
    parser = build_parser(width=width)
    if command is None:
        return parser.format_help()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if command not in sub.choices:
        raise ValueError(f"command must be one of {sorted(sub.choices)}, got {command!r}")
    return sub.choices[command].format_help()


COMMANDS = ("fit", "topics", "tree", "generate", "transform", "perplexity", "demo")


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError) and exc.strerror and exc.filename:
        msg = f"{exc.strerror}: {exc.filename!r}"
    elif isinstance(exc, FileNotFoundError) and exc.strerror and exc.filename:
        msg = f"file not found: {exc.filename!r}"
    else:
        msg = str(exc) or type(exc).__name__
    return " ".join(msg.split())


def _error(msg: str) -> None:
    sys.stderr.write(f"{PROG}: error: {msg}\n")
    sys.stderr.flush()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; return the exit status (0 on success).

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 1 for a user error (one line on stderr), 2 for a bad
        command line, 130 when interrupted.
    """
    debug = os.environ.get("PYGBN_DEBUG", "") not in ("", "0")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="replace")
        except (AttributeError, ValueError):  # pragma: no cover - unusual streams
            pass
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        _error(_one_line(exc))
        return 2
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0

    lg = logging.getLogger("pygbn")
    old_level = lg.level
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{PROG}: %(message)s"))
    lg.addHandler(handler)
    # progress lines come from the estimator while it fits (it raises the level to
    # INFO for the duration); nothing else is chatty, so an early error stays one line
    lg.setLevel(logging.ERROR if args.quiet else logging.WARNING)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:  # e.g. 'pygbn topics model.npz | head'
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):  # pragma: no cover
            pass
        return 1
    except (CLIError, ValueError, OSError, MemoryError) as exc:
        if debug:
            raise
        _error(_one_line(exc))
        return 1
    finally:
        lg.removeHandler(handler)
        lg.setLevel(old_level)
        try:
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):  # pragma: no cover
            pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
