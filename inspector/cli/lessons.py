"""``python -m inspector lessons``: the Lessons page's twin — every lesson's numbers and answers."""

from __future__ import annotations

import argparse
import sys

from inspector.cli.common import BACKENDS, add_text_options, read_text, warn_if_unreadable, write_json
from inspector.errors import InvalidRequestError


HELP = "every lesson's numbers and answers (the Lessons page's twin)"


def add_arguments(sub: argparse.ArgumentParser) -> None:
    add_text_options(sub, "the text to run the lessons on")
    sub.add_argument("--layer", type=int, default=0, help="the layer the lessons look at (default: 0)")
    sub.add_argument("--head", type=int, default=0, help="the head the lessons look at (default: 0)")
    sub.add_argument("--backend", default="auto", choices=BACKENDS, help="attention backend (default: auto)")
    sub.add_argument("--lang", default="en", choices=["en", "zh"], help="language of the answers (default: en)")
    sub.add_argument("--lengths", default="128,256,512",
                     help="lengths n timed by the O(n²) lesson, or 'none' to skip it (default: 128,256,512)")


def run(args: argparse.Namespace) -> None:
    from inspector.lessons import all_lessons, lessons_json
    from inspector.loading import load_model

    try:
        lengths = [int(x) for x in args.lengths.split(",") if x.strip()] if args.lengths.strip().lower() != "none" \
            else []
    except ValueError:
        raise InvalidRequestError(f"--lengths {args.lengths!r}: expected lengths like 128,256,512 or 'none'") from None
    text = read_text(args)
    loaded = load_model(args.model, device=args.device, dtype=args.dtype)
    warn_if_unreadable(loaded, text, args.lang)
    result = all_lessons(loaded, text, args.layer, args.head, backend=args.backend, timing_lengths=lengths or None,
                         importance=True)
    payload = {**lessons_json(result, args.lang), "model": loaded.info.as_json(), "lang": args.lang}
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
