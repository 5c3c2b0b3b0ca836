"""``python -m inspector groundtruth``: the Ground truth page's twin — every attribution method scored on a shipped
model whose causal token is known."""

from __future__ import annotations

import argparse
import sys

from inspector.cli.common import BACKENDS, write_json


HELP = "score every attribution method on a shipped model whose causal token is known (the Ground truth page's twin)"


def add_arguments(sub: argparse.ArgumentParser) -> None:
    from inspector.groundtruth import DEFAULT_EXAMPLES, DEFAULT_TOP_K
    from inspector.tasks import FRESH_SEED

    sub.add_argument("--examples", type=int, default=DEFAULT_EXAMPLES, help="fresh examples to score (default: %(default)s)")
    sub.add_argument("--seed", type=int, default=FRESH_SEED,
                     help="seed of the examples (default: %(default)s, never used in training)")
    sub.add_argument("--top-k", type=int, default=DEFAULT_TOP_K, help="k of the top-k hit rate (default: %(default)s)")
    sub.add_argument("--backend", default="auto", choices=BACKENDS, help="attention backend")
    sub.add_argument("--lang", default="en", choices=["en", "zh"], help="language of the summary (default: en)")


def run(args: argparse.Namespace) -> None:
    from inspector.groundtruth import hit_rate_words, scoreboard, scoreboard_json
    from inspector.loading import load_model

    loaded = load_model(args.model, device=args.device, dtype=args.dtype)

    def progress(label: str, fraction: float) -> None:
        print(f"\r{label}", end="", file=sys.stderr, flush=True)

    board = scoreboard(loaded, args.examples, seed=args.seed, k=args.top_k, backend=args.backend, progress=progress)
    print(file=sys.stderr)
    if args.json:
        write_json(scoreboard_json(board), args.json)
    if args.json != "-":
        print("\n".join(hit_rate_words(board, args.lang)))
