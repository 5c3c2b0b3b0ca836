"""``python -m inspector prepare``: convert the bundled decoders' GGUF files into their cached safetensors folders
now (``make app`` runs it during set-up, so the first page never waits), with progress on stderr. A model already
prepared costs nothing; ``--model bundled:NAME`` prepares one. It also builds the compiled CPU attention kernel
(:mod:`kernels.compiled_cpu`, once per machine) and says whether it is ready, or why it is not."""

from __future__ import annotations

import argparse

from inspector.base.errors import InvalidRequestError
from inspector.cli.common import stderr_progress, write_json

HELP = "prepare the bundled decoder LMs once (GGUF → cached safetensors folder), with progress on stderr"


def add_arguments(sub: argparse.ArgumentParser) -> None:
    sub.set_defaults(model="all")  # every bundled decoder; the shared --model option takes bundled:NAME


def run(args: argparse.Namespace) -> None:
    from inspector.base.model_ids import ModelSpec
    from inspector.core.bundled import BUNDLED, bundled_choices, bundled_decoder, is_prepared, prepare
    from inspector.core.loading import compiled_kernel

    text = (args.model or "").strip()
    if text == "all":
        specs = [ModelSpec.bundled(name) for name in BUNDLED]
    else:
        spec = ModelSpec.parse(text)
        if spec.kind != "bundled":
            raise InvalidRequestError(f"--model {text[:60]!r}: only the bundled decoders are prepared ("
                                      f"{', '.join(bundled_choices())}, or all); other models load directly")
        specs = [spec]
    prepared = {}
    for spec in specs:
        was_ready = is_prepared(bundled_decoder(spec))  # an unknown NAME is refused here, in one line
        folder = prepare(spec, progress=stderr_progress())
        prepared[spec.text] = {"folder": str(folder), "already_prepared": was_ready}
    kernel_problem = compiled_kernel(wait=True)
    kernel = "ready" if kernel_problem is None else f"not used: {kernel_problem}"
    if args.json:
        write_json({**prepared, "compiled_cpu_kernel": kernel}, args.json)
    else:
        for spec_name, entry in prepared.items():
            print(f"{spec_name:24s} {entry['folder']}" + (" (already prepared)" if entry["already_prepared"] else ""))
        print(f"{'compiled CPU kernel':24s} {kernel}")
