"""What every command shares: the model options, reading the text, parsing layer lists, writing JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from inspector.errors import InvalidRequestError
from inspector.jsonable import to_jsonable

BACKENDS = ["auto", "torch", "triton"]


def add_model_options(sub: argparse.ArgumentParser) -> None:
    """``--model``, ``--device``, ``--dtype`` and ``--json``: every command takes them."""
    sub.add_argument("--model", default="default",
                     help="'default' (bundled all-MiniLM-L6-v2), 'shipped:NAME' (a model under assets/models), "
                          "a local folder, or a Hugging Face hub id")
    sub.add_argument("--device", default="auto", help="auto, cpu or cuda (default: auto)")
    sub.add_argument("--dtype", default="auto", help="auto, float32, float16 or bfloat16 (default: auto)")
    sub.add_argument("--json", metavar="OUT", help="write the numbers as JSON to OUT ('-' for stdout)")


def add_text_options(sub: argparse.ArgumentParser, what: str) -> None:
    """``--text`` or ``--text-file`` (one of them required)."""
    source = sub.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", help=what)
    source.add_argument("--text-file", help="read the text from this UTF-8 file")


def parse_layers(spec: str) -> str | list[int] | None:
    """``all`` | ``none`` | a comma list of indices and ranges (``0,2-4``) → the ``weights`` argument of capture."""
    spec = spec.strip().lower()
    if spec == "all":
        return "all"
    if spec in ("none", ""):
        return None
    layers: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        try:
            if "-" in part:
                first, last = (int(x) for x in part.split("-", 1))
                if last < first:
                    raise ValueError
                layers.extend(range(first, last + 1))
            else:
                layers.append(int(part))
        except ValueError:
            raise InvalidRequestError(f"--weights {spec!r}: expected 'all', 'none' or layer indices like 0,2-4") from None
    return sorted(set(layers))


def read_text(args: argparse.Namespace) -> str:
    if args.text_file is None:
        return args.text
    try:
        return Path(args.text_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidRequestError(f"cannot read --text-file {args.text_file}: {err}") from err


def write_json(payload: dict, destination: str) -> None:
    """``payload`` through :func:`inspector.jsonable.to_jsonable` (arrays, dataclasses, NaN → null) to the file
    ``destination`` or stdout (``-``); allow_nan=False stays as the check that nothing slipped past it."""
    text = json.dumps(to_jsonable(payload), ensure_ascii=False, allow_nan=False)
    if destination == "-":
        sys.stdout.write(text + "\n")
        return
    try:
        Path(destination).write_text(text, encoding="utf-8")
    except OSError as err:
        raise InvalidRequestError(f"cannot write {destination}: {err}") from err


def warn_if_unreadable(loaded, text: str, lang: str = "en") -> None:
    """One line on stderr when the model maps too much of ``text`` to its unknown token (issue 17); the run goes on."""
    from inspector.unknown_tokens import unreadable_text_warning

    warning = unreadable_text_warning(loaded, text, lang)
    if warning is not None:
        print(f"warning: {warning}", file=sys.stderr)
