"""Command line: ``python -m inspector analyze|heads|attribute|lessons|groundtruth|info``. Every page of the app
gets a twin here that computes the same numbers through the same library call and writes them as JSON.

Bad input — empty text, too many tokens, an unknown model or folder, an unknown backend or layer — exits
with status 2 and one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from inspector.errors import InspectorError, InvalidRequestError


def parse_layers(spec: str) -> str | list[int] | None:
    """``all`` | ``none`` | a comma list of indices and ranges (``0,2-4``) → the ``weights`` argument of capture."""
    spec = spec.strip().lower()
    if spec == "all":
        return "all"
    if spec in ("none", ""):
        return None
    layers: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        try:
            if "-" in part:
                first, last = (int(x) for x in part.split("-", 1))
                if last < first:
                    raise ValueError
                layers.extend(range(first, last + 1))
            else:
                layers.append(int(part))
        except ValueError:
            raise InvalidRequestError(f"--weights {spec!r}: expected 'all', 'none' or layer indices like 0,2-4") from None
    return sorted(set(layers))


def _read_text(args: argparse.Namespace) -> str:
    if args.text_file is None:
        return args.text
    try:
        return Path(args.text_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidRequestError(f"cannot read --text-file {args.text_file}: {err}") from err


def _write_json(payload: dict, destination: str) -> None:
    text = json.dumps(payload, ensure_ascii=False, allow_nan=False)
    if destination == "-":
        sys.stdout.write(text + "\n")
        return
    try:
        Path(destination).write_text(text, encoding="utf-8")
    except OSError as err:
        raise InvalidRequestError(f"cannot write {destination}: {err}") from err


def _analyze(args: argparse.Namespace) -> None:
    from inspector.capture import capture
    from inspector.export import capture_json
    from inspector.loading import load_model
    from inspector.metrics import head_entropy

    weights = parse_layers(args.weights)
    text = _read_text(args)
    loaded = load_model(args.model, device=args.device, dtype=args.dtype)
    result = capture(loaded, text, backend=args.backend, weights=weights, truncate=args.truncate)
    if args.json:
        _write_json(capture_json(loaded.info, result), args.json)
        if args.json != "-":
            print(f"wrote {args.json}: {len(result.tokens)} tokens, {result.num_layers} layers × "
                  f"{result.num_heads} heads, backend {result.backend}", file=sys.stderr)
        return
    entropy = head_entropy(result)
    print(f"{loaded.info.name}: {len(result.tokens)} tokens, backend {result.backend}"
          + (" (truncated)" if result.truncated else ""))
    print("tokens:", " ".join(result.tokens))
    for layer, mean in enumerate(entropy.layer_mean):
        heads = " ".join(f"{x:4.2f}" for x in entropy.normalized[layer])
        print(f"layer {layer:2d}  mean entropy {mean:5.3f} nats  normalised per head: {heads}")


def _heads(args: argparse.Namespace) -> None:
    from inspector.heads import CORPUS_PATH, head_report, health_report, read_corpus, report_json
    from inspector.loading import load_model
    from inspector.metrics import HealthThresholds

    thresholds = HealthThresholds(collapsed=args.collapsed, diffuse=args.diffuse, sink=args.sink)
    texts = [args.text] if args.text is not None else read_corpus(CORPUS_PATH if args.corpus == "bundled"
                                                                  else args.corpus)
    loaded = load_model(args.model, device=args.device, dtype=args.dtype)

    def progress(done: int, total: int, label: str) -> None:
        print(f"[{done}/{total}] {label}", file=sys.stderr, flush=True)

    report = head_report(loaded, texts, thresholds=thresholds, ablation=args.ablation, backend=args.backend,
                         progress=progress if args.corpus is not None else None)
    if args.json:
        _write_json(report_json(report), args.json)
    if args.json != "-":
        print("\n".join(health_report(report)))

def _lessons(args: argparse.Namespace) -> None:
    from inspector.lessons import all_lessons, lessons_json
    from inspector.loading import load_model

    try:
        lengths = [int(x) for x in args.lengths.split(",") if x.strip()] if args.lengths.strip().lower() != "none" \
            else []
    except ValueError:
        raise InvalidRequestError(f"--lengths {args.lengths!r}: expected lengths like 128,256,512 or 'none'") from None
    text = _read_text(args)
    loaded = load_model(args.model, device=args.device, dtype=args.dtype)
    result = all_lessons(loaded, text, args.layer, args.head, backend=args.backend, timing_lengths=lengths or None,
                         importance=True)
    payload = {**lessons_json(result, args.lang), "model": loaded.info.as_json(), "lang": args.lang}
    if args.json:
        _write_json(payload, args.json)
        if args.json != "-":
            print(f"wrote {args.json}: lessons for layer {args.layer}, head {args.head} of {loaded.info.name}",
                  file=sys.stderr)
        return
    for name in ("definition", "why_qk", "position", "sweep", "scaling", "multi_head", "entropy", "complexity"):
        lesson = getattr(result, name)
        if lesson is not None:
            print(f"[{name}] {lesson.answer.text(args.lang)}\n")


def _groundtruth(args: argparse.Namespace) -> None:
    from inspector.groundtruth import hit_rate_words, scoreboard, scoreboard_json
    from inspector.loading import load_model

    loaded = load_model(args.model, device=args.device, dtype=args.dtype)

    def progress(label: str, fraction: float) -> None:
        print(f"\r{label}", end="", file=sys.stderr, flush=True)

    board = scoreboard(loaded, args.examples, seed=args.seed, k=args.top_k, backend=args.backend, progress=progress)
    print(file=sys.stderr)
    if args.json:
        _write_json(scoreboard_json(board), args.json)
    if args.json != "-":
        print("\n".join(hit_rate_words(board)))


def _info(args: argparse.Namespace) -> None:
    from inspector.loading import load_model

    info = load_model(args.model, device=args.device, dtype=args.dtype).info.as_json()
    if args.json:
        _write_json(info, args.json)
    else:
        for key, value in info.items():
            print(f"{key:15s} {value}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m inspector",
                                     description="Measure how attention routes information in a transformer.")
    commands = parser.add_subparsers(dest="command", required=True)

    def model_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--model", default="default",
                         help="'default' (bundled all-MiniLM-L6-v2), 'shipped:NAME' (a model under assets/models), "
                              "a local folder, or a Hugging Face hub id")
        sub.add_argument("--device", default="auto", help="auto, cpu or cuda (default: auto)")
        sub.add_argument("--dtype", default="auto", help="auto, float32, float16 or bfloat16 (default: auto)")
        sub.add_argument("--json", metavar="OUT", help="write the numbers as JSON to OUT ('-' for stdout)")

    analyze = commands.add_parser("analyze", help="entropies and attention weights for one text")
    model_options(analyze)
    source = analyze.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", help="the text to inspect")
    source.add_argument("--text-file", help="read the text from this UTF-8 file")
    analyze.add_argument("--backend", default="auto", choices=["auto", "torch", "triton"],
                         help="attention backend (default: auto — Triton on a GPU once available, else PyTorch)")
    analyze.add_argument("--weights", default="all",
                         help="layers whose exact weights to include: all, none, or indices like 0,2-4 (default: all)")
    analyze.add_argument("--truncate", action="store_true",
                         help="cut texts longer than the model's limit instead of refusing them")
    analyze.set_defaults(run=_analyze)

    heads = commands.add_parser("heads", help="head report: entropy health, sinks, redundancy, importance, pruning")
    model_options(heads)
    texts = heads.add_mutually_exclusive_group(required=True)
    texts.add_argument("--text", help="one text to analyse")
    texts.add_argument("--corpus", metavar="FILE",
                       help="a UTF-8 file with one text per line ('bundled' = assets/corpus/sentences.txt)")
    heads.add_argument("--backend", default="auto", choices=["auto", "torch", "triton"], help="attention backend")
    heads.add_argument("--ablation", default="zero", choices=["zero", "mean"],
                       help="remove a head by zeroing its output or by its mean over the text (default: zero)")
    heads.add_argument("--collapsed", type=float, default=0.1, help="normalised entropy below this = collapsed")
    heads.add_argument("--diffuse", type=float, default=0.9, help="normalised entropy above this = diffuse")
    heads.add_argument("--sink", type=float, default=0.3, help="sink score above this = a sink (Gu et al.)")
    heads.set_defaults(run=_heads)
    lessons = commands.add_parser("lessons", help="every lesson's numbers and answers (the Lessons page's twin)")
    model_options(lessons)
    lesson_source = lessons.add_mutually_exclusive_group(required=True)
    lesson_source.add_argument("--text", help="the text to run the lessons on")
    lesson_source.add_argument("--text-file", help="read the text from this UTF-8 file")
    lessons.add_argument("--layer", type=int, default=0, help="the layer the lessons look at (default: 0)")
    lessons.add_argument("--head", type=int, default=0, help="the head the lessons look at (default: 0)")
    lessons.add_argument("--backend", default="auto", choices=["auto", "torch", "triton"],
                         help="attention backend (default: auto)")
    lessons.add_argument("--lang", default="en", choices=["en", "zh"], help="language of the answers (default: en)")
    lessons.add_argument("--lengths", default="128,256,512",
                         help="lengths n timed by the O(n²) lesson, or 'none' to skip it (default: 128,256,512)")
    lessons.set_defaults(run=_lessons)
    from inspector import attribution_cli

    attribute = commands.add_parser("attribute", help="attention vs gradients, IG, occlusion …: agreement, "
                                    "faithfulness and counterfactual attention for one text")
    model_options(attribute)
    attribution_cli.add_arguments(attribute)
    attribute.set_defaults(run=attribution_cli.run)

    from inspector.groundtruth import DEFAULT_EXAMPLES, DEFAULT_TOP_K
    from inspector.tasks import FRESH_SEED

    groundtruth = commands.add_parser("groundtruth", help="score every attribution method on a shipped model whose "
                                      "causal token is known (the Ground truth page's twin)")
    model_options(groundtruth)
    groundtruth.add_argument("--examples", type=int, default=DEFAULT_EXAMPLES,
                             help="fresh examples to score (default: %(default)s)")
    groundtruth.add_argument("--seed", type=int, default=FRESH_SEED,
                             help="seed of the examples (default: %(default)s, never used in training)")
    groundtruth.add_argument("--top-k", type=int, default=DEFAULT_TOP_K,
                             help="k of the top-k hit rate (default: %(default)s)")
    groundtruth.add_argument("--backend", default="auto", choices=["auto", "torch", "triton"], help="attention backend")
    groundtruth.set_defaults(run=_groundtruth)

    info = commands.add_parser("info", help="architecture facts of a model")
    model_options(info)
    info.set_defaults(run=_info)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    try:
        args.run(args)
    except InspectorError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0
