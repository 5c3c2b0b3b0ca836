"""``python -m inspector info``: architecture facts of a model. It runs no forward, so it plans no run; the model is
loaded under the hosting policy as every command's is (the allow-list when ``INSPECTOR_HOSTED=1``)."""

from __future__ import annotations

import argparse

from inspector.cli.common import check_model_options, load, write_json

HELP = "architecture facts of a model"


def add_arguments(sub: argparse.ArgumentParser) -> None:
    """Only the model options."""


def run(args: argparse.Namespace) -> None:
    check_model_options(args)
    info = load(args).info.as_json()
    if args.json:
        write_json(info, args.json)
    else:
        for key, value in info.items():
            print(f"{key:15s} {value}")
