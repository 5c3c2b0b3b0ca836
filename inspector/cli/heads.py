"""``python -m inspector heads``: the Heads page's twin — entropy health, sinks, redundancy, importance, pruning."""

from __future__ import annotations

import argparse

from inspector.base.errors import InvalidTextError
from inspector.base.progress import print_progress
from inspector.cli.common import (
    BACKENDS,
    check_model_options,
    float_in,
    load,
    read_lines,
    run_request,
    warn_if_unreadable,
    write_json,
)

HELP = "head report: entropy health, sinks, redundancy, importance, pruning; --roles: head roles by probe"


def add_arguments(sub: argparse.ArgumentParser) -> None:
    texts = sub.add_mutually_exclusive_group(required=True)
    texts.add_argument("--roles", action="store_true",
                       help="head roles by probe (repeated random tokens, no text needed) and their causal test")
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
    roles = sub.add_argument_group("head roles (--roles)")
    roles.add_argument("--repeat", type=int, default=None,
                       help="random ids per probe half, R ≥ 2 (default 20, or less for a short model)")
    roles.add_argument("--batch", type=int, default=8, help="probe sequences, 2 or more (default 8)")
    roles.add_argument("--top-k", type=int, default=3, help="heads per role the causal test ablates (default 3)")
    roles.add_argument("--seed", type=int, default=0, help="seed of the probe and the random heads (default 0)")
    roles.add_argument("--seeds", type=int, default=4, help="random-head draws in the causal test (default 4)")
    roles.add_argument("--window", type=int, default=4, help="local window in tokens, ≥ 1 (default 4)")
    roles.add_argument("--no-causal", action="store_true", help="probe only, skip the causal test")


def run(args: argparse.Namespace) -> None:
    if args.roles:
        run_roles(args)
        return
    from inspector.analyses.heads import CORPUS_PATH, head_report, read_corpus, report_json
    from inspector.analyses.metrics import HealthThresholds
    from inspector.charts.sentences.heads import health_report
    from inspector.serving.run import Request

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
    loaded = load(args)
    if args.text is not None:
        warn_if_unreadable(loaded, args.text)
    request = Request(kind="heads", texts=tuple(texts), count=len(texts) if args.corpus is not None else None)
    _, report = run_request(request, loaded, lambda plan, progress: head_report(
        loaded, list(plan.kept(texts)), thresholds=thresholds, ablation=args.ablation, backend=args.backend,
        progress=progress), progress=print_progress if args.corpus is not None else None)
    if args.json:
        write_json(report_json(report, health_report(report, args.lang)), args.json)
    if args.json != "-":
        print("\n".join(health_report(report, args.lang)))


def run_roles(args: argparse.Namespace) -> None:
    """``heads --roles``: the probe and causal test of :func:`inspector.analyses.roles_causal.head_roles`; options are
    checked before the model loads (and R against the model's length after)."""
    from inspector.analyses.roles import DEFAULT_REPEAT, check_options, roles_json
    from inspector.analyses.roles_causal import head_roles
    from inspector.charts.sentences.roles import roles_report, roles_words
    from inspector.serving.run import Request

    check_model_options(args)
    check_options(repeat=DEFAULT_REPEAT if args.repeat is None else args.repeat, batch=args.batch, top_k=args.top_k,
                  window=args.window, seeds=args.seeds, seed=args.seed)
    loaded = load(args)
    _, result = run_request(Request(kind="heads"), loaded, lambda plan, progress: head_roles(
        loaded, repeat=args.repeat, batch=args.batch, top_k=args.top_k, window=args.window, seed=args.seed,
        seeds=args.seeds, backend=args.backend, causal=not args.no_causal, progress=progress), progress=print_progress)
    if args.json:
        write_json(roles_json(result, **roles_words(result, args.lang)), args.json)
    if args.json != "-":
        print("\n".join(roles_report(result, args.lang)))
