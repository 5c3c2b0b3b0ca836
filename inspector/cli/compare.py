"""``python -m inspector compare``: the Compare page's twin — two texts on one model, or one text on two models,
head by head (:func:`inspector.analyses.compare.compare`, the page's library call), written as JSON."""

from __future__ import annotations

import argparse

from inspector.base.errors import InvalidRequestError
from inspector.cli.common import BACKENDS, load, plan_request, run_request, write_json

HELP = "compare two texts (or two models) head by head: which heads moved a token's attention, and the output"


def add_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--model-b", metavar="M2", help="a second model; head by head when it has the same layers × "
                                                     "heads and tokenizer, else (one text) entropy by relative depth "
                                                     "and attention by piece; default: --model")
    sub.add_argument("--text", required=True, help="text A")
    sub.add_argument("--text-b", help="text B (default: text A, to compare two models on one text)")
    sub.add_argument("--query", help="the token whose attention row is compared: a token string or a position in "
                                     "text A (default: the first token where the texts differ)")
    sub.add_argument("--keys", metavar="TOKEN,TOKEN",
                     help="two key tokens, attention moving from the first to the second (default: animal,street "
                          "when both texts have them; 'none' for no keys)")
    sub.add_argument("--backend", default="auto", choices=BACKENDS, help="attention backend")
    sub.add_argument("--lang", default="en", choices=["en", "zh"], help="language of the sentence (default: en)")


def _token(value: str) -> int | str:
    """A position (digits) or a token string."""
    value = value.strip()
    return int(value) if value.isdigit() else value


def parse_keys(spec: str | None) -> tuple[int | str, ...] | None:
    """``"animal,street"`` → two tokens; ``"none"`` → no keys; None → the default pair."""
    if spec is None:
        return None
    if spec.strip().lower() == "none":
        return ()
    parts = [part.strip() for part in spec.split(",")]
    if len(parts) != 2 or not all(parts):
        raise InvalidRequestError(f"--keys {spec!r}: expected two tokens separated by a comma, like animal,street "
                                  "(or positions in text A, like 2,7)")
    return tuple(_token(part) for part in parts)


def run(args: argparse.Namespace) -> None:
    from transformers.utils import logging as hf_logging

    from inspector.analyses.compare import IncomparableModelsError, compare, comparison_json
    from inspector.charts.sentences.compare import comparison_sentence
    from inspector.serving.run import Request

    # The weight-loading progress bar would put lines on stderr before a one-line error.
    hf_logging.disable_progress_bar()

    if args.text_b is None and args.model_b is None:
        raise InvalidRequestError("nothing to compare: give --text-b (two texts) or --model-b (two models)")
    keys = parse_keys(args.keys)
    query = None if args.query is None else _token(args.query)
    loaded_a = load(args)
    loaded_b = loaded_a if args.model_b is None else load(args, args.model_b)
    text_b = args.text if args.text_b is None else args.text_b

    def work(plan, progress) -> dict:
        try:
            comparison = compare(loaded_a, args.text, loaded_b, text_b, query=query, keys=keys,
                                 backend=args.backend)
            return comparison_json(comparison, comparison_sentence(comparison, args.lang))
        except IncomparableModelsError:
            if args.text_b is not None or loaded_b is loaded_a:
                raise
            # Two models of different shapes or tokenizers on one text (MiniLM vs Gemma): what both have (issue 27).
            return _shapes_payload(loaded_a, loaded_b, args)

    if loaded_b is not loaded_a:  # each model's own token count is held to its limit (issue 45, item 2)
        plan_request(Request(kind="compare", texts=(text_b,)), loaded_b)
    _, payload = run_request(Request(kind="compare", texts=(args.text, text_b)), loaded_a, work)
    if args.json:
        write_json(payload, args.json)
    if args.json != "-":
        print(payload["sentence"])


def _shapes_payload(loaded_a, loaded_b, args: argparse.Namespace) -> dict:
    """Models of different shapes on one text: :func:`inspector.analyses.compare_shapes.compare_shapes`'s JSON."""
    from inspector.analyses.compare import run_text
    from inspector.analyses.compare_shapes import compare_shapes, shapes_json
    from inspector.charts.sentences.compare import shapes_words

    if args.keys is not None:
        raise InvalidRequestError("--keys compares two heads' rows; models of different shapes have no head "
                                  "partners — leave --keys out (the query is a piece of the text: --query N)")
    if args.query is not None and not args.query.strip().isdigit():
        raise InvalidRequestError(f"--query {args.query!r}: for models of different shapes the query is a piece of "
                                  "the text by its number (the JSON's segments), like --query 3")
    runs = [run_text(loaded, args.text, backend=args.backend, what="the text") for loaded in (loaded_a, loaded_b)]
    shapes = [(m.info.num_layers, m.info.num_heads, m.info.num_kv_heads) for m in (loaded_a, loaded_b)]
    result = compare_shapes(runs[0].capture, runs[1].capture, *shapes,
                            query=None if args.query is None else int(args.query))
    return shapes_json(result, **shapes_words(result, args.lang))
