"""``python -m inspector heads``: the Heads page's twin — entropy health, sinks, redundancy, importance, pruning."""

from __future__ import annotations

import argparse

from inspector.base.errors import InvalidTextError
from inspector.base.progress import print_progress
from inspector.cli.common import BACKENDS, check_model_options, float_in, read_lines, warn_if_unreadable, write_json

HELP = "head report: entropy health, sinks, redundancy, importance, pruning"


def add_arguments(sub: argparse.ArgumentParser) -> None:
    texts = sub.add_mutually_exclusive_group(required=True)
    texts.add_argument("--text", help="one text to analyse")
    texts.add_argument("--corpus", metavar="FILE",
                       help="a UTF-8 file with one text per line ('bundled' = assets/corpus/sentences.txt)")
    sub.add_argument("--backend", default="auto", choices=BACKENDS, help="attention backend")
    sub.add_argument("--lang", default="en", choices=["en", "zh"], help="language of the health report (default: en)")
    sub.add_argument("--ablation", default="zero", choices=["zero", "mean"],
                     help="remove a head by zeroing its output or by its mean over the text (default: zero)")
    share = float_in(0.0, 1.0)
    sub.add_argument("--collapsed", type=share, default=0.1, help="normalised entropy below this = collapsed")
    sub.add_argument("--diffuse", type=share, default=0.9, help="normalised entropy above this = diffuse")
    sub.add_argument("--sink", type=share, default=0.3, help="sink score above this = a sink (Gu et al.)")


def run(args: argparse.Namespace) -> None:
    from inspector.analyses.heads import CORPUS_PATH, head_report, health_report, read_corpus, report_json
    from inspector.analyses.metrics import HealthThresholds
    from inspector.core.loading import load_model

    check_model_options(args)
    thresholds = HealthThresholds(collapsed=args.collapsed, diffuse=args.diffuse, sink=args.sink)
    if args.text is not None:
        if not args.text.strip():
            raise InvalidTextError("the text is empty; give --text with a sentence, or --corpus FILE")
        texts = [args.text]
    elif args.corpus == "bundled":
        texts = read_corpus(CORPUS_PATH)
    else:
        read_lines(args.corpus, "--corpus")  # a readable, non-empty regular file; read_corpus drops comments
        texts = read_corpus(args.corpus)
    loaded = load_model(args.model, device=args.device, dtype=args.dtype)
    if args.text is not None:
        warn_if_unreadable(loaded, args.text)

    report = head_report(loaded, texts, thresholds=thresholds, ablation=args.ablation, backend=args.backend,
                         progress=print_progress if args.corpus is not None else None)
    if args.json:
        write_json(report_json(report, args.lang), args.json)
    if args.json != "-":
        print("\n".join(health_report(report, args.lang)))
