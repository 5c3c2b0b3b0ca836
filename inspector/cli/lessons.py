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
    plan_request,
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
DEFAULT_TIMING = "128,256,512"


def add_arguments(sub: argparse.ArgumentParser) -> None:
    add_text_options(sub, "the text to run the lessons on")
    sub.add_argument("--layer", type=int_in(0, MAX_LAYER_INDEX), default=0,
                     help="the layer the lessons look at (default: 0)")
    sub.add_argument("--head", type=int_in(0, MAX_LAYER_INDEX), default=0,
                     help="the head the lessons look at (default: 0)")
    sub.add_argument("--backend", default="auto", choices=BACKENDS, help="attention backend (default: auto)")
    sub.add_argument("--lang", default="en", choices=["en", "zh"],
                     help="language of the answers and of the mechanism lesson's example pair (default: en)")
    sub.add_argument("--decoder", default=None,
                     help="also run the decoder-era lessons (causal, RoPE, GQA, sinks, query-key space, projections, "
                          "mechanism) on this decoder, e.g. bundled:smollm2-135m, with --model as the encoder contrast "
                          "(--decoder-layer, --decoder-head pick its layer and head; default 0)")
    sub.add_argument("--decoder-layer", type=int_in(0, MAX_LAYER_INDEX), default=0,
                     help="the decoder's layer for the decoder-era lessons (default: 0)")
    sub.add_argument("--decoder-head", type=int_in(0, MAX_LAYER_INDEX), default=0,
                     help="the decoder's head for the decoder-era lessons (default: 0)")
    sub.add_argument("--lessons", default="all",
                     help="which lessons to run, by name, comma-separated (default: all; the decoder lessons need "
                          "--decoder): " + ", ".join(_lesson_names()))
    sub.add_argument("--lengths", default=None,
                     help=f"lengths n the timing lessons time (each 1 to {MAX_TIMING_LENGTH}, at most "
                          f"{MAX_TIMING_LENGTHS}), or 'none' to skip the O(n²) lesson (default: {DEFAULT_TIMING} for "
                          "the O(n²) lesson, the page's own for the sliding-window and linear-attention lessons)")


def _lesson_names() -> list[str]:
    from inspector.analyses.lessons.registry import LESSONS

    return list(LESSONS)


def parse_lessons(spec: str, *, decoder: bool) -> list[str]:
    """``--lessons``: the registered lessons named (``all``: every one, the decoder lessons only with a decoder)."""
    from inspector.analyses.lessons.registry import LESSONS

    if spec.strip().lower() == "all":
        return [slug for slug, lesson in LESSONS.items() if decoder or lesson.part != "decoder"]
    names = [name.strip() for name in spec.split(",") if name.strip()]
    unknown = [name for name in names if name not in LESSONS]
    if unknown or not names:
        raise InvalidRequestError(f"--lessons {spec[:60]!r}: expected names from {', '.join(LESSONS)}, or 'all'")
    needing = [name for name in names if LESSONS[name].part == "decoder"]
    if needing and not decoder:
        raise InvalidRequestError(f"--lessons: {', '.join(needing)} run on a decoder; add --decoder, e.g. "
                                  "--decoder bundled:smollm2-135m")
    return names


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


def run_lessons(slugs: list[str], contexts: dict, lang: str) -> tuple[dict, dict, list[str]]:
    """Every lesson of ``slugs`` on its part's context (``contexts``: part → LessonContext): (JSON by slug; the lessons
    left out and why; the answers written in ``lang``)."""
    from inspector.analyses.lessons.registry import LESSONS, lesson_answers, lesson_json

    written: dict[str, dict] = {}
    skipped: dict[str, str] = {}
    answers: list[str] = []
    for slug in slugs:
        lesson = LESSONS[slug]
        context = contexts[lesson.part]
        if not lesson.applies(context.loaded):
            skipped[slug] = f"does not apply to {context.loaded.info.name}"
            continue
        entry: dict = {"number": lesson.number}
        for kind, measure in (("result", lesson.compute), ("requested", lesson.on_request)):
            if measure is not None:
                value = measure(context)
                entry[kind] = lesson_json(value, lang)
                answers += [f"[{slug}] {answer.text(lang)}" for answer in lesson_answers(value)]
        written[slug] = entry
    return written, skipped, answers


def run(args: argparse.Namespace) -> None:
    from inspector.analyses.lessons.registry import LessonContext
    from inspector.serving.run import Request

    check_model_options(args)
    lengths = parse_lengths(DEFAULT_TIMING if args.lengths is None else args.lengths)
    decoder_lengths = None if args.lengths is None or not lengths else lengths  # else each lesson's own
    slugs = parse_lessons(args.lessons, decoder=bool(args.decoder))
    text = read_text(args)
    loaded = load(args)
    loaded.info.check_layer(args.layer, "--layer")
    loaded.info.check_head(args.head, "--head")
    warn_if_unreadable(loaded, text, args.lang)
    skipped = {}
    if not lengths and "complexity" in slugs:  # --lengths none: no timing
        slugs, skipped = [slug for slug in slugs if slug != "complexity"], {"complexity": "--lengths none"}
    payload: dict = {"model": loaded.info.as_json(), "text": text, "backend": args.backend, "layer": args.layer,
                     "head": args.head, "lang": args.lang}
    decoder_model = None
    if args.decoder:
        decoder_model = load(args, args.decoder)
        plan_request(Request(kind="lessons", texts=(text,)), decoder_model)  # the decoder's own tokens, its own limit
        payload["decoder"] = {"model": decoder_model.info.as_json(), "layer": args.decoder_layer,
                              "head": args.decoder_head}

    def work(plan, progress):
        # The run's progress reaches the timing lessons, so the run's deadline is checked between their lengths.
        encoder = LessonContext(loaded, text, args.layer, args.head, backend=args.backend, lengths=lengths or None,
                                progress=progress)
        contexts = {"encoder": encoder, "quiz": encoder}
        if decoder_model is not None:
            contexts["decoder"] = LessonContext(decoder_model, text, args.decoder_layer, args.decoder_head,
                                                backend=args.backend, contrast=loaded, lengths=decoder_lengths,
                                                lang=args.lang, progress=progress)
        return run_lessons(slugs, contexts, args.lang)

    _, (written, not_applying, answers) = run_request(Request(kind="lessons", texts=(text,)), loaded, work)
    payload.update(lessons=written, skipped={**skipped, **not_applying})
    if args.json:
        write_json(payload, args.json)
        if args.json != "-":
            print(f"wrote {args.json}: {len(written)} lessons for layer {args.layer}, head {args.head} of "
                  f"{loaded.info.name}", file=sys.stderr)
        return
    for line in answers:
        print(line + "\n")
