"""Command line interface: ``pygbn`` / ``python -m pygbn``.

Subcommands (``pygbn <command> --help`` for the options of each):

``fit``
    Fit a GBN to a count matrix (``.mtx``, ``.npz``, ``.npy``, ``.csv``) or to
    raw text (one document per line, or a folder of files) and save it to one
    ``.npz``.
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
Progress and warnings go to stderr as ``pygbn: ...`` lines (silence them
with ``--quiet``); results go to stdout or to the ``-o`` file.

The options are defined in :mod:`pygbn.cli.parser`, what each command does
in :mod:`pygbn.cli.commands`; :func:`main` runs one and reports errors.
"""
from __future__ import annotations

import logging
import os
import sys
import warnings
from typing import Optional, Sequence

from pygbn.cli.commands import CLIError
from pygbn.cli.parser import COMMANDS, PROG, _UsageError, build_parser, help_text

__all__ = ["main", "build_parser", "help_text", "COMMANDS", "CLIError"]


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
        with warnings.catch_warnings():
            # a warning of the library (or of numpy) is a line like the log's, not a source location
            warnings.showwarning = lambda message, *_, **__: lg.warning("%s", message)
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
