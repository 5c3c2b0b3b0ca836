"""``python -m inspector patch``: the Mechanism page's patching panel's twin — activation patching of a clean and a
corrupted text (every head, the top heads by position, every MLP, the residual before every layer by position)."""

from __future__ import annotations

import argparse

import numpy as np

from inspector.base.errors import InvalidTextError
from inspector.base.progress import print_progress
from inspector.cli.common import check_model_options, int_in, load, run_request, write_json

HELP = "which components a prediction needs: activation patching from a clean text into a corrupted one"


def add_arguments(sub: argparse.ArgumentParser) -> None:
    from inspector.analyses.mechanism.patching import DEFAULT_TOP_HEADS

    sub.add_argument("--clean", required=True, help="the clean text (the model predicts --answer)")
    sub.add_argument("--corrupted", required=True, help="the corrupted text, same number of tokens")
    sub.add_argument("--answer", required=True, help="the clean answer's token")
    sub.add_argument("--contrast", required=True, help="the corrupted answer's token")
    sub.add_argument("--top-heads", type=int_in(0, 32), default=DEFAULT_TOP_HEADS,
                     help="heads to patch position by position, 0 to 32 (default: %(default)s)")


def run(args: argparse.Namespace) -> None:
    from inspector.analyses.mechanism import activation_patching
    from inspector.analyses.mechanism.records import patching_json
    from inspector.serving.run import Request

    check_model_options(args)
    for option in ("clean", "corrupted"):
        if not getattr(args, option).strip():
            raise InvalidTextError(f"--{option} is empty; give a sentence")
    loaded = load(args)
    # Planned as the Mechanism page plans its patching: both texts held to the hosted token limit, one run slot, one
    # deadline checked at every layer's progress.
    request = Request(kind="mechanism", texts=(args.clean, args.corrupted))
    _, result = run_request(request, loaded, lambda plan, progress: activation_patching(
        loaded, args.clean, args.corrupted, answer=args.answer, contrast=args.contrast, top_heads=args.top_heads,
        progress=progress), progress=print_progress)
    if args.json:
        write_json({"model": loaded.info.as_json(), "patching": patching_json(result)}, args.json)
    if args.json != "-":
        restored = result.restored(result.heads)
        best = sorted(((float(value), layer, head) for (layer, head), value in np.ndenumerate(restored)),
                      reverse=True)[:3]
        print(f"logit difference {result.answer_token} − {result.contrast_token}: clean {result.clean_value:.3f}, "
              f"corrupted {result.corrupted_value:.3f}; heads restoring most: "
              + ", ".join(f"L{layer}H{head} {value:.2f}" for value, layer, head in best))
