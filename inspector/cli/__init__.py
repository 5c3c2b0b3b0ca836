"""Command line: ``python -m inspector analyze|heads|attribute|lessons|groundtruth|info``. Every page of the app
gets a twin here that computes the same numbers through the same library call and writes them as JSON.

One module per command, each with ``HELP``, ``add_arguments(sub)`` and ``run(args)``; this module only wires
them into one parser. Bad input — empty text, too many tokens, an unknown model or folder, an unknown backend
or layer — exits with status 2 and one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from inspector.cli.common import add_model_options, parse_layers
from inspector.errors import InspectorError

COMMANDS = ("analyze", "heads", "attribute", "lessons", "groundtruth", "info", "census")

__all__ = ["COMMANDS", "build_parser", "main", "parse_layers"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m inspector",
                                     description="Measure how attention routes information in a transformer.")
    commands = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"inspector.cli.{name}")
        sub = commands.add_parser(name, help=module.HELP)
        add_model_options(sub)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    try:
        args.run(args)
    except InspectorError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0
