"""``python -m inspector generate``: the Generate page's twin — continue a prompt token by token on a causal LM,
each step's attention statistics (and the rows of the layers asked for), the candidates it had and the KV cache's
size, through the page's library call (:func:`inspector.analyses.generate.generate`), written as JSON."""

from __future__ import annotations

import argparse
import sys

from inspector.base.errors import InvalidTextError
from inspector.cli.common import (
    BACKENDS,
    check_layers,
    check_model_options,
    float_in,
    int_in,
    load,
    parse_layers,
    run_request,
    write_json,
)

HELP = ("continue a prompt on a causal LM (--model bundled:smollm2-135m or bundled:gemma-3-270m), measuring each "
        "new token's attention over the KV cache")


def add_arguments(sub: argparse.ArgumentParser) -> None:
    from inspector.analyses.generate import MAX_NEW_TOKENS

    sub.add_argument("--prompt", required=True, help="the beginning of a text for the model to continue")
    sub.add_argument("--chat", action="store_true",
                     help="wrap the prompt in the model's chat template as a user message (instruct models)")
    sub.add_argument("--max-new-tokens", type=int_in(1, MAX_NEW_TOKENS), default=32,
                     help=f"tokens to generate, 1–{MAX_NEW_TOKENS} (default: 32)")
    sub.add_argument("--temperature", type=float_in(0.0, 100.0), default=0.0,
                     help="0 = greedy (default); above 0, sample from softmax(logits / T)")
    sub.add_argument("--top-k", type=int_in(1, 10_000_000), default=None, help="keep the k most likely tokens")
    sub.add_argument("--top-p", type=float_in(0.0, 1.0), default=1.0,
                     help="keep the most likely tokens up to this probability mass, in (0, 1] (default: 1, no cut)")
    sub.add_argument("--seed", type=int_in(0, 2**63 - 1), default=0, help="seed of the draws (default: 0)")
    sub.add_argument("--weights", default="none",
                     help="layers whose exact attention rows to include: all, none, or indices like 0,2-4 "
                          "(default: none; every layer's statistics are always included)")
    sub.add_argument("--backend", default="auto", choices=BACKENDS, help="attention backend")
    sub.add_argument("--no-eos", action="store_true", help="keep writing past the model's end-of-text token")


def run(args: argparse.Namespace) -> None:
    from inspector.analyses.generate import SamplingOptions, generate, generation_json
    from inspector.base.progress import print_progress
    from inspector.serving.run import Request

    check_model_options(args)
    if not args.prompt.strip():
        raise InvalidTextError("the prompt is empty; give --prompt with the beginning of a text to continue")
    SamplingOptions(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed)  # checks
    weights = parse_layers(args.weights)
    loaded = load(args)
    check_layers(weights, loaded.info)
    # Planned as the page plans it (issue 45, item 3): the prompt tokenised once, the new tokens and the layers whose
    # rows are kept held to the budget — fewer layers with a notice, or a refusal in one line.
    request = Request(kind="generate", texts=(args.prompt,), count=args.max_new_tokens, weights=weights,
                      chat=args.chat)
    _, result = run_request(request, loaded, lambda plan, progress: generate(
        loaded, args.prompt, max_new_tokens=plan.keep, temperature=args.temperature, top_k=args.top_k,
        top_p=args.top_p, seed=args.seed, chat=args.chat, weights=plan.weights, backend=args.backend,
        stop_at_eos=not args.no_eos, progress=progress, encoded=plan.encodings[0]),
        progress=print_progress if sys.stderr.isatty() else _quiet)
    if args.json:
        write_json(generation_json(result), args.json)
    if args.json != "-":
        print(result.text)
        print(f"{loaded.info.name}: {result.steps} tokens ({result.finish}), prompt {result.prompt_len} tokens, "
              f"prefill {result.prefill_s:.2f} s, {result.tokens_per_s:.1f} tokens/s, backend {result.backend}",
              file=sys.stderr)


def _quiet(done: int, total: int, note: str) -> None:
    """No progress lines where stderr is a log: the summary line says it all."""
