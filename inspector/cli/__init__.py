"""Command line: ``python -m inspector COMMAND`` — analyze, heads, attribute, lessons, groundtruth, compare,
generate, census, explain, patch, info, prepare.
Every page of the app gets a twin here that computes the same numbers through the same library call and writes
them as JSON (``prepare`` converts the bundled decoders once).

One module per command, each with ``HELP``, ``add_arguments(sub)`` and ``run(args)``; this module only wires
them into one parser. Bad input — empty text, too many tokens, an unknown model or folder, an unknown backend
or layer — exits with status 2 and one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from inspector.base.errors import InspectorError
from inspector.cli.common import add_model_options, parse_layers, prepare_bundled_models

COMMANDS = ("analyze", "heads", "attribute", "lessons", "groundtruth", "compare", "generate", "census", "explain",
            "patch", "info", "prepare")

__all__ = ["COMMANDS", "build_parser", "main", "parse_layers"]


class _OneLineParser(argparse.ArgumentParser):
    """argparse with its usage errors on one line (``error: …``, exit 2), like every other refusal here."""

    def error(self, message: str):
        self.exit(2, f"error: {_one_line(message)} (see '{self.prog} --help')\n")


def _one_line(message: object) -> str:
    """A message whose line breaks (transformers' advice, argparse's lists) are folded into one line."""
    return " ".join(str(message).split())


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog=_program_name(),
                            description="Measure how attention routes information in a transformer.")
    commands = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"inspector.cli.{name}")
        sub = commands.add_parser(name, help=module.HELP)
        add_model_options(sub)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def _program_name() -> str:
    """``attention-inspector`` when run as the installed console script, else ``python -m inspector``."""
    launched = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return launched if launched.startswith("attention-inspector") else "python -m inspector"


def _quiet_libraries() -> None:
    """Only our one line on stderr: no transformers warnings, no "Loading weights" or download progress bars."""
    from huggingface_hub.utils import disable_progress_bars
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    disable_progress_bars()


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit status: 0 done, 2 bad input (one ``error: …`` line on stderr), 130 interrupted.

    Every argument is checked before a model loads (argparse types, then the command's own checks at the top of
    its ``run``), and again against the model once it is loaded."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help (0) or a usage error (2, its line already printed)
        return done.code if isinstance(done.code, int) else 2
    _quiet_libraries()
    try:
        if args.command != "prepare":
            prepare_bundled_models(args)  # a bundled decoder's one-time conversion, its progress on stderr
        args.run(args)
    except InspectorError as err:
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 2
    except MemoryError:
        print("error: the request needs more memory than this machine has; use a shorter text, fewer layers "
              "(--weights) or a smaller model", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0

