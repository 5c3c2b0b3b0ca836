"""``python -m inspector lessons``: the Lessons page's twin — every lesson's numbers and answers."""

from __future__ import annotations

import argparse
import re
import sys

from inspector.base.errors import InvalidRequestError
from inspector.cli.common import (
    BACKENDS,
    MAX_LAYER_INDEX,
    add_text_options,
    check_model_options,
    int_in,
    load,
    read_text,
    run_request,
    warn_if_unreadable,
    write_json,
)

HELP = "every lesson's numbers and answers (the Lessons page's twin)"
# Lesson 7 materialises n×n scores per head: the longest length the Lessons page offers (4096: about 1.5 GB for
# twelve heads) is the cap here too, and a handful of lengths is enough to read the O(n²) slope.
MAX_TIMING_LENGTH = 4096
MAX_TIMING_LENGTHS = 8


def add_arguments(sub: argparse.ArgumentParser) -> None:
    add_text_options(sub, "the text to run the lessons on")
    sub.add_argument("--layer", type=int_in(0, MAX_LAYER_INDEX), default=0,
                     help="the layer the lessons look at (default: 0)")
    sub.add_argument("--head", type=int_in(0, MAX_LAYER_INDEX), default=0,
                     help="the head the lessons look at (default: 0)")
    sub.add_argument("--backend", default="auto", choices=BACKENDS, help="attention backend (default: auto)")
    sub.add_argument("--lang", default="en", choices=["en", "zh"], help="language of the answers (default: en)")
    sub.add_argument("--decoder", default=None,
                     help="also run the decoder-era lessons (causal, RoPE, GQA, sinks, query-key space, projections) "
                          "on this decoder, e.g. bundled:smollm2-135m, with --model as the encoder contrast "
                          "(--decoder-layer, --decoder-head pick its layer and head; default 0)")
    sub.add_argument("--decoder-layer", type=int_in(0, MAX_LAYER_INDEX), default=0,
                     help="the decoder's layer for the decoder-era lessons (default: 0)")
    sub.add_argument("--decoder-head", type=int_in(0, MAX_LAYER_INDEX), default=0,
                     help="the decoder's head for the decoder-era lessons (default: 0)")
    sub.add_argument("--lengths", default="128,256,512",
                     help=f"lengths n timed by the O(n²) lesson (each 1 to {MAX_TIMING_LENGTH}, at most "
                          f"{MAX_TIMING_LENGTHS}), or 'none' to skip it (default: 128,256,512)")


def parse_lengths(spec: str) -> list[int]:
    """``--lengths``: a comma list of lengths within the caps, or ``none`` (an empty list: skip lesson 7)."""
    if spec.strip().lower() == "none":
        return []
    parts = [part.strip() for part in spec.split(",") if part.strip()]
    if not parts or not all(re.fullmatch(r"[0-9]+", part) for part in parts):
        raise InvalidRequestError(f"--lengths {spec[:40]!r}: expected lengths like 128,256,512 or 'none'")
    # Compared as text first: int() of a 5,000-digit string is itself an error.
    if not all(len(part) <= 5 and 1 <= int(part) <= MAX_TIMING_LENGTH for part in parts) \
            or len(parts) > MAX_TIMING_LENGTHS:
        raise InvalidRequestError(f"--lengths {spec[:40]!r}: each length must be 1 to {MAX_TIMING_LENGTH} (the "
                                  f"O(n²) lesson holds n×n scores per head), at most {MAX_TIMING_LENGTHS} of them")
    return [int(part) for part in parts]


def run(args: argparse.Namespace) -> None:
    from inspector.analyses.lessons import all_lessons, lessons_json
    from inspector.serving.run import Request

    check_model_options(args)
    lengths = parse_lengths(args.lengths)
    text = read_text(args)
    loaded = load(args)
    loaded.info.check_layer(args.layer, "--layer")
    loaded.info.check_head(args.head, "--head")
    warn_if_unreadable(loaded, text, args.lang)
    decoder_model = load(args, args.decoder) if args.decoder else None

    def work(plan, progress):
        result = all_lessons(loaded, text, args.layer, args.head, backend=args.backend,
                             timing_lengths=lengths or None, importance=True)
        decoder = None
        if decoder_model is not None:
            from inspector.analyses.lessons_decoder import decoder_lessons

            decoder = decoder_lessons(loaded, decoder_model, text, args.decoder_layer, args.decoder_head,
                                      backend=args.backend)
        return result, decoder

    _, (result, decoder) = run_request(Request(kind="lessons", texts=(text,)), loaded, work)
    payload = {**lessons_json(result, args.lang), "model": loaded.info.as_json(), "lang": args.lang}
    if decoder is not None:
        from inspector.analyses.lessons_decoder import decoder_lessons_json

        payload["decoder"] = {**decoder_lessons_json(decoder, args.lang), "model": decoder_model.info.as_json()}
    if args.json:
        write_json(payload, args.json)
        if args.json != "-":
            print(f"wrote {args.json}: lessons for layer {args.layer}, head {args.head} of {loaded.info.name}",
                  file=sys.stderr)
        return
    for name in ("definition", "why_qk", "position", "sweep", "scaling", "multi_head", "entropy", "complexity"):
        lesson = getattr(result, name)
        if lesson is not None:
            print(f"[{name}] {lesson.answer.text(args.lang)}\n")
    if decoder is not None:
        for name in ("causal", "rope", "gqa", "sinks", "qk_space", "projections"):
            print(f"[decoder.{name}] {getattr(decoder, name).answer.text(args.lang)}\n")
