"""The ``pygbn`` argument parser: option types, the options of every command, ``--help`` texts."""
from __future__ import annotations

import argparse
import codecs
from typing import Callable, Dict, Optional, Tuple

import numpy as np

from pygbn._utils import MAX_N_JOBS
from pygbn._version import __version__
from pygbn.cli.commands import (DEFAULT_TEST_SEED, DEMO_BURN_IN, DEMO_COLLECT, DEMO_N_COMPONENTS,
                                CLIError, cmd_demo, cmd_fit, cmd_generate, cmd_perplexity, cmd_topics,
                                cmd_trace, cmd_transform, cmd_tree)

__all__ = ["PROG", "COMMANDS", "build_parser", "help_text"]

PROG = "pygbn"
COMMANDS = ("fit", "topics", "tree", "generate", "transform", "perplexity", "trace", "demo")


class _UsageError(CLIError):
    """A bad command line (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line, raised instead of printed with the usage."""

    def error(self, message):  # noqa: D401 - argparse API
        raise _UsageError(f"{message} (see '{self.prog} --help')")

    def parse_args(self, args=None, namespace=None):
        # argparse reports a command's unknown options from the top parser, whose --help
        # does not list them: point to the command's own --help
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            command = getattr(ns, "command", None)
            where = f"{self.prog} {command}" if command else self.prog
            raise _UsageError(f"unrecognized arguments: {' '.join(extra)} (see '{where} --help')")
        return ns


# ---------------------------------------------------------------------------
# argument types
# ---------------------------------------------------------------------------



def _build_kind() -> str:
    """The build's parallelism, for ``--version``."""
    from pygbn.random import openmp_enabled

    return "OpenMP kernels" if openmp_enabled() else "serial kernels: built without OpenMP"

def int_at_least(minimum: int):
    """An argparse ``type``: an int >= ``minimum``, else argparse's error naming the flag and the
    value (status 2); the benchmark tools' count flags use it too."""
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


_pos_int = int_at_least(1)
_nonneg_int = int_at_least(0)


def _float_arg(what: str, ok: Callable[[float], bool]):
    """An argument type: a float for which ``ok`` holds, else the error 'expected <what>'."""
    def conv(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = float("nan")
        if not ok(v):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return v

    conv.__name__ = what
    return conv


def n_jobs_arg(text: str) -> int:
    """--jobs (and the benchmark tools' thread counts): an int other than 0 (-1: all cores), at
    most MAX_N_JOBS, resolved as ``n_jobs`` everywhere."""
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v == 0:
        raise argparse.ArgumentTypeError(f"expected a non-zero int (-1: all cores), got {text!r}")
    if v > MAX_N_JOBS:
        raise argparse.ArgumentTypeError(f"expected at most 2**31 - 1 threads, got {text!r}")
    return v


def _encoding(text: str) -> str:
    try:
        return codecs.lookup(text).name
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown encoding {text!r} (e.g. utf-8, latin-1, cp1252)") from None


n_jobs_arg.__name__ = "n_jobs"
_encoding.__name__ = "encoding"
#: --errors: what to do with bytes the encoding cannot decode
DECODE_ERRORS = ("strict", "replace", "ignore", "backslashreplace")

_pos_float = _float_arg("a positive number", lambda v: bool(np.isfinite(v)) and v > 0)
_nonneg_float = _float_arg("a non-negative number", lambda v: bool(np.isfinite(v)) and v >= 0)
_open_fraction = _float_arg("a number in (0, 1)", lambda v: 0.0 < v < 1.0)
_fraction = _float_arg("a number in [0, 1)", lambda v: 0.0 <= v < 1.0)


def _discard(text: str):
    """--discard: a share in [0, 1) or 'burn_in' (as pygbn.evaluation.trace_chains takes)."""
    return "burn_in" if text == "burn_in" else _fraction(text)


_discard.__name__ = "discard"


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
# options and commands
# ---------------------------------------------------------------------------


def _add_input_options(p, fitting: bool, group: str = "input", vocab: bool = True) -> None:
    g = p.add_argument_group(group)
    if vocab:
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
    g.add_argument("--encoding", type=_encoding, default="utf-8",
                   help="encoding of text input (default: %(default)s)")
    g.add_argument("--errors", choices=DECODE_ERRORS, default="strict",
                   help="bytes of text input that the encoding cannot decode: stop with an error "
                   "(strict, the default), or replace, ignore or backslashreplace them")
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
    g.add_argument("--seed", type=_nonneg_int, default=None,
                   help=f"random seed (default: the model's, or {DEFAULT_TEST_SEED} if it has none)")
    g.add_argument("--jobs", type=n_jobs_arg, default=1, metavar="N", help="threads (-1: all cores; default: 1)")


INPUT_HELP = ("a count matrix (.mtx, .mtx.gz, .npz, .npy, or .csv/.tsv of numbers; documents x terms), "
              "any other file (a .csv/.tsv of text too): text with one document per line ('-': "
              "standard input), or a folder with one document per file")


def build_parser(width: Optional[int] = None) -> argparse.ArgumentParser:
    """The ``pygbn`` argument parser.

    Parameters
    ----------
    width : int, optional
        Wrap help texts at this width (default: the terminal's); see
        :func:`help_text`.
    """
    return _build(width)[0]


def _build(width: Optional[int]) -> Tuple[argparse.ArgumentParser, Dict[str, argparse.ArgumentParser]]:
    """The parser and the parser of each command, by name."""

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
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__} ({_build_kind()})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    commands: Dict[str, argparse.ArgumentParser] = {}

    def add_command(name, func, **kwargs):
        p = sub.add_parser(name, parents=[common], formatter_class=formatter, **kwargs)
        p.set_defaults(func=func)
        commands[name] = p
        return p

    # fit ------------------------------------------------------------------
    p = add_command("fit", cmd_fit, help="fit a GBN to counts or text and save it",
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
    g.add_argument("--method", choices=("auto", "collapsed", "blocked", "partial"), default="auto",
                   help="layer-one update (default: auto = collapsed for counts with --jobs 1, "
                        "partial with any other --jobs; blocked for --link bernoulli and prg)")
    g.add_argument("--min-width", type=_nonneg_int, default=4, metavar="K",
                   help="stop adding layers once a width is at most K (default: %(default)s)")
    g.add_argument("--seed", type=_nonneg_int, default=None, help="random seed (default: fresh entropy)")
    g.add_argument("--jobs", type=n_jobs_arg, default=1, metavar="N",
                   help="threads for the document-parallel kernels, -1 for all cores (default: 1). With "
                   "the default --method auto it also picks the layer-one update (collapsed for --jobs 1, "
                   "partial for any other value, -1 included), so the result changes with it; with an "
                   "explicit --method it does not")
    g.add_argument("--heldout-fraction", type=_open_fraction, default=None, metavar="F",
                   help="hold out this fraction of each document's tokens (the paper uses 0.7), fit "
                   "on the rest and report the held-out perplexity of each depth")
    g.add_argument("--progress-every", type=_pos_int, default=50, metavar="N",
                   help="iterations between progress lines on stderr (default: %(default)s)")
    g.add_argument("--trace-every", type=_nonneg_int, default=25, metavar="N",
                   help="record the training log-likelihood every N iterations, 0 for never; see "
                   "'pygbn trace' (default: %(default)s)")

    # topics ---------------------------------------------------------------
    p = add_command("topics", cmd_topics, help="top words of the nodes of each layer",
                    description="Print the top words of every node of each layer of a saved "
                    "model, nodes ranked by weight (most popular first, as #1, #2, ...).")
    p.add_argument("model", help="model file written by 'pygbn fit'")
    p.add_argument("--layer", type=_pos_int, default=None, help="only this layer (default: all)")
    p.add_argument("--n-words", type=_pos_int, default=10, metavar="N", help="words per node (default: %(default)s)")
    p.add_argument("--n-topics", type=_pos_int, default=None, metavar="N",
                   help="only the N most popular nodes of each layer (default: all)")
    p.add_argument("--depth", type=_pos_int, default=None, help="network depth to show (default: the deepest)")
    p.add_argument("--vocab", metavar="FILE",
                   help="vocabulary file, one term per line: labels the nodes if the model has no "
                   "vocabulary of its own, and names the columns of a count-matrix --coherence corpus")
    g = p.add_argument_group("topic quality")
    g.add_argument("--coherence", metavar="REFERENCE", default=None,
                   help="score every node's top words on this reference corpus (usually the training "
                   "data; read as 'pygbn fit' reads its input, in the model's vocabulary) by document "
                   "co-occurrence, and print each layer's mean coherence and topic diversity")
    g.add_argument("--measure", choices=("c_v", "u_mass", "c_uci", "c_npmi", "all"), default="c_v",
                   help="coherence measure (default: %(default)s)")
    g.add_argument("--diversity-words", type=_pos_int, default=25, metavar="N",
                   help="top words per node for the topic diversity (default: %(default)s)")
    _add_input_options(p, fitting=False, group="reference corpus (--coherence)", vocab=False)

    # tree -----------------------------------------------------------------
    p = add_command("tree", cmd_tree, help="the tree rooted at one node (text, DOT or SVG)",
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

    # generate -------------------------------------------------------------
    p = add_command("generate", cmd_generate, help="synthetic documents from a saved model",
                    description="Draw samples top-down through a saved network with c_j at the "
                    "training medians. For a text model, print the top words of each generated "
                    "document, ranked by their Poisson rates as in the paper's Section 4.1; "
                    "otherwise write the matrix (CSV on stdout without -o).")
    p.add_argument("model", help="model file written by 'pygbn fit'")
    p.add_argument("-n", type=_nonneg_int, default=10, help="number of samples (default: %(default)s)")
    p.add_argument("--seed", type=_nonneg_int, default=None, help="random seed (default: fresh entropy)")
    p.add_argument("--n-words", type=_pos_int, default=10, metavar="N",
                   help="words shown per generated document (default: %(default)s)")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="also write the samples (.npy, .csv, .tsv, .txt, .npz or .mtx)")
    p.add_argument("--depth", type=_pos_int, default=None, help="network depth to use (default: the deepest)")
    p.add_argument("--vocab", metavar="FILE", help="vocabulary file, if the model has none")

    # transform ------------------------------------------------------------
    p = add_command("transform", cmd_transform, help="features of new documents",
                    description="Features of new documents: the average of theta_j^(1) / "
                    "theta_.j^(1) over a test-time chain with the network fixed. Columns are the "
                    "layer-one nodes in the order of 'pygbn topics --layer 1' (with the same --depth).")
    p.add_argument("model", help="model file written by 'pygbn fit'")
    p.add_argument("input", help=INPUT_HELP)
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="features file (.npy, .csv, .tsv or .txt)")
    _add_input_options(p, fitting=False)
    _add_test_chain_options(p)

    # perplexity -----------------------------------------------------------
    p = add_command("perplexity", cmd_perplexity, help="held-out perplexity of new documents",
                    description="Split each new document's tokens (--train-fraction observed, the "
                    "rest held out), run the test-time chain on the observed part and report the "
                    "perplexity of the held-out part. Documents with fewer than two tokens are skipped.")
    p.add_argument("model", help="model file written by 'pygbn fit' (link poisson)")
    p.add_argument("input", help=INPUT_HELP)
    p.add_argument("--train-fraction", type=_open_fraction, default=0.3, metavar="F",
                   help="fraction of each document's tokens observed (default: %(default)s, as in the paper)")
    _add_input_options(p, fitting=False)
    _add_test_chain_options(p)

    # trace ----------------------------------------------------------------
    p = add_command("trace", cmd_trace, help="convergence traces of saved fits (and R-hat, ESS)",
                    description="Print the training log-likelihood per token recorded during fitting "
                    "(every trace_every iterations of each depth) of one or more saved models; with "
                    "several models (fits of the same data with different seeds) also the split-R-hat "
                    "and effective sample size of each depth's stage, on the second half of its "
                    "traced values. -o writes the traces as an SVG plot.")
    p.add_argument("model", nargs="+", help="model file(s) written by 'pygbn fit'")
    p.add_argument("-o", "--output", default=None, metavar="FILE.svg", help="write an SVG plot of the traces")
    p.add_argument("--discard", type=_discard, default=0.5, metavar="F",
                   help="share of each depth's traced values dropped as warm-up before R-hat and ESS, "
                   "or 'burn_in' for the values up to each depth's pruning (default: %(default)s)")

    # demo -----------------------------------------------------------------
    p = add_command("demo", cmd_demo, help="fit a 3-layer GBN to the bundled corpus (a quarter of a minute on one core)",
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
    p.add_argument("--seed", type=_nonneg_int, default=0, help="random seed (default: %(default)s)")
    p.add_argument("--jobs", type=n_jobs_arg, default=1, metavar="N",
                   help="threads (-1: all cores; default: %(default)s); any value but 1 fits with the "
                   "partial instead of the collapsed layer-one update, so the result differs")
    p.add_argument("--n-topics", type=_pos_int, default=5, metavar="N",
                   help="topics shown per layer (default: %(default)s)")
    p.add_argument("--n-words", type=_pos_int, default=8, metavar="N", help="words per topic (default: %(default)s)")
    p.add_argument("--tau", type=_nonneg_float, default=3.0, help="tree edge threshold (default: %(default)s)")
    p.add_argument("--progress-every", type=_pos_int, default=50, metavar="N",
                   help="iterations between progress lines on stderr (default: %(default)s)")
    p.add_argument("-o", "--output", default=None, metavar="MODEL.npz", help="also save the fitted model")
    return parser, commands


def help_text(command: Optional[str] = None, width: int = 90) -> str:
    """The ``--help`` text of ``pygbn`` or of one subcommand, wrapped at ``width``.

    ``docs/cli.md`` is generated from these texts (``tools/gen_docs.py``).
    """
    parser, commands = _build(width)
    if command is None:
        return parser.format_help()
    if command not in commands:
        raise ValueError(f"command must be one of {sorted(commands)}, got {command!r}")
    return commands[command].format_help()