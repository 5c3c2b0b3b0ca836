"""``python -m inspector prepare``: convert the bundled decoders' GGUF files into their cached safetensors folders
now (``make app`` runs it during set-up, so the first page never waits), with progress on stderr. A model already
prepared costs nothing; ``--model bundled:NAME`` prepares one."""

from __future__ import annotations

import argparse

from inspector.base.errors import InvalidRequestError
from inspector.cli.common import stderr_progress, write_json

HELP = "prepare the bundled decoder LMs once (GGUF → cached safetensors folder), with progress on stderr"


def add_arguments(sub: argparse.ArgumentParser) -> None:
    sub.set_defaults(model="all")  # every bundled decoder; the shared --model option takes bundled:NAME


def run(args: argparse.Namespace) -> None:
    from inspector.core.bundled import BUNDLED, BUNDLED_PREFIX, is_prepared, prepare

    spec = (args.model or "").strip()
    if spec == "all":
        names = list(BUNDLED)
    elif spec.startswith(BUNDLED_PREFIX):
        names = [spec]
    else:
        raise InvalidRequestError(f"--model {spec[:60]!r}: only the bundled decoders are prepared ("
                                  f"{', '.join(BUNDLED_PREFIX + name for name in BUNDLED)}, or all); other models "
                                  "load directly")
    prepared = {}
    for name in names:
        was_ready = is_prepared(BUNDLED[name.removeprefix(BUNDLED_PREFIX)])
        folder = prepare(name, progress=stderr_progress())
        prepared[BUNDLED_PREFIX + name.removeprefix(BUNDLED_PREFIX)] = {"folder": str(folder),
                                                                       "already_prepared": was_ready}
    if args.json:
        write_json(prepared, args.json)
    else:
        for spec_name, entry in prepared.items():
            print(f"{spec_name:24s} {entry['folder']}" + (" (already prepared)" if entry["already_prepared"] else ""))
