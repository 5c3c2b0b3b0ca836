"""``python -m inspector info``: architecture facts of a model."""

from __future__ import annotations

import argparse

from inspector.cli.common import check_model_options, write_json

HELP = "architecture facts of a model"


def add_arguments(sub: argparse.ArgumentParser) -> None:
    """Only the model options."""


def run(args: argparse.Namespace) -> None:
    from inspector.core.loading import load_model

    check_model_options(args)
    info = load_model(args.model, device=args.device, dtype=args.dtype).info.as_json()
    if args.json:
        write_json(info, args.json)
    else:
        for key, value in info.items():
            print(f"{key:15s} {value}")
