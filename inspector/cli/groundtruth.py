"""``python -m inspector groundtruth``: the Ground truth page's twin — every attribution method scored on a shipped
model whose causal token is known."""

from __future__ import annotations

import argparse

from inspector.base.errors import InvalidRequestError
from inspector.base.progress import print_progress
from inspector.cli.common import BACKENDS, check_model_options, int_in, load, run_request, write_json

HELP = "score every attribution method on a shipped model whose causal token is known (the Ground truth page's twin)"


# The seeds numpy's generators take: 0 ≤ seed < 2**32 (a negative seed is a numpy ValueError).
MAX_SEED = 2**32 - 1
# The top-k hit rate over the task's short texts: past a few dozen every method "hits".
MAX_TOP_K = 64


def add_arguments(sub: argparse.ArgumentParser) -> None:
    from inspector.analyses.groundtruth import DEFAULT_EXAMPLES, DEFAULT_TOP_K, MAX_EXAMPLES
    from inspector.analyses.tasks import FRESH_SEED

    sub.add_argument("--examples", type=int_in(1, MAX_EXAMPLES), default=DEFAULT_EXAMPLES,
                     help=f"fresh examples to score, 1 to {MAX_EXAMPLES} (default: %(default)s)")
    sub.add_argument("--seed", type=int_in(0, MAX_SEED), default=FRESH_SEED,
                     help="seed of the examples, 0 to 2**32 − 1 (default: %(default)s, never used in training)")
    sub.add_argument("--top-k", type=int_in(1, MAX_TOP_K), default=DEFAULT_TOP_K,
                     help=f"k of the top-k hit rate, 1 to {MAX_TOP_K} (default: %(default)s)")
    sub.add_argument("--backend", default="auto", choices=BACKENDS, help="attention backend")
    sub.add_argument("--lang", default="en", choices=["en", "zh"], help="language of the summary (default: en)")


def run(args: argparse.Namespace) -> None:
    from inspector.analyses.groundtruth import scoreboard, scoreboard_json
    from inspector.base.model_ids import ModelSpec
    from inspector.charts.sentences.groundtruth import hit_rate_words
    from inspector.core.loading import shipped_choices
    from inspector.serving.run import Request

    check_model_options(args)
    spec = ModelSpec.parse(args.model)
    if spec.kind in ("default", "bundled"):  # known to have no card: say so before loading
        name = "the bundled all-MiniLM-L6-v2" if spec.kind == "default" else spec.text
        raise InvalidRequestError(f"{name} has no known causal tokens; pick one of the "
                                  f"ground-truth models with --model ({', '.join(shipped_choices())})")
    loaded = load(args)
    request = Request(kind="groundtruth", count=args.examples)
    _, board = run_request(request, loaded, lambda plan, progress: scoreboard(
        loaded, plan.keep, seed=args.seed, k=args.top_k, backend=args.backend, progress=progress),
        progress=print_progress)
    if args.json:
        write_json(scoreboard_json(board), args.json)
    if args.json != "-":
        print("\n".join(hit_rate_words(board, args.lang)))
