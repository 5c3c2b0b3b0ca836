"""``python -m inspector attribute``: the Attribution page's command-line twin — the same
:func:`inspector.attribution.attribute` call (and the adversarial search of
:func:`inspector.attribution.counterfactual_attention`), written as JSON or summarised on stdout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from inspector.cli.common import BACKENDS, add_text_options, read_text, warn_if_unreadable, write_json
from inspector.errors import InvalidRequestError

HELP = ("attention vs gradients, IG, occlusion …: agreement, faithfulness and counterfactual attention for one "
        "text (the Attribution page's twin)")


def _query(value: str) -> int | str:
    if value in ("first", "last", "auto"):
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--query {value!r}: expected first, last, auto or a token index") from None


def _corpus_texts(source: str) -> list[str]:
    if source == "examples":
        from inspector.examples import EXAMPLES

        return [example.text for example in EXAMPLES]
    try:
        lines = Path(source).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidRequestError(f"cannot read --corpus {source}: {err}") from err
    return [line for line in lines if line.strip()]


def add_arguments(sub: argparse.ArgumentParser) -> None:
    from inspector.attribution import DEFAULT_REFERENCE, METHODS

    add_text_options(sub, "the text to attribute")
    sub.add_argument("--reference", default=DEFAULT_REFERENCE,
                     help="encoders without a head: f = cosine similarity with this sentence (default: %(default)r)")
    sub.add_argument("--token", help="language models: f = log-probability of this token (default: the top prediction)")
    sub.add_argument("--class-index", type=int, help="classifiers: f = probability of this class (default: predicted)")
    sub.add_argument("--layer", type=int,
                     help="layer of raw attention, norm, value zeroing and the counterfactual (default: last)")
    sub.add_argument("--head", type=int, help="head (default: mean over heads; every head for the counterfactual)")
    sub.add_argument("--query", type=_query, default="auto",
                     help="query row: first, last, auto (the target's token, else last for decoders, first for "
                          "encoders) or a token index")
    sub.add_argument("--methods", default="all", help=f"comma list from {', '.join(METHODS)} (default: all)")
    sub.add_argument("--ig-steps", type=int, default=16, help="integrated-gradients steps (default: 16)")
    sub.add_argument("--removal", choices=["mask", "delete"], default="mask",
                     help="occlusion and ERASER: replace removed tokens by [MASK] or delete them (default: mask)")
    sub.add_argument("--permutations", type=int, default=100, help="random permutations of the row (default: 100)")
    sub.add_argument("--adversarial-steps", type=int, default=500,
                     help="adversarial search steps, 0 to skip it (default: 500)")
    sub.add_argument("--corpus", metavar="FILE",
                     help="also compute Kendall τ between methods over these texts (UTF-8, one per line) with "
                          "bootstrap 95%% intervals of the mean; 'examples' uses the app's example texts")
    sub.add_argument("--backend", default="auto", choices=BACKENDS, help="attention backend")


def run(args: argparse.Namespace) -> None:
    from inspector.attribution import (METHODS, METHOD_LABELS, AttributionSettings, TargetSpec, attribute,
                                       corpus_agreement, counterfactual_attention, counterfactual_json, report_json)
    from inspector.jsonable import to_jsonable
    from inspector.loading import load_model

    methods = METHODS if args.methods.strip() == "all" else tuple(m.strip() for m in args.methods.split(",") if m.strip())
    if not methods:
        raise InvalidRequestError("--methods is empty; give a comma list of methods or 'all'")
    text = read_text(args)
    query = None if args.query == "auto" else args.query
    spec = TargetSpec(reference=args.reference, token=args.token, class_index=args.class_index)
    settings = AttributionSettings(layer=args.layer, head=args.head, query=query, methods=methods,
                                   ig_steps=args.ig_steps, removal=args.removal, permutations=args.permutations)
    loaded = load_model(args.model, device=args.device, dtype=args.dtype)
    warn_if_unreadable(loaded, text)
    report = attribute(loaded, text, spec=spec, settings=settings, backend=args.backend)
    payload = report_json(report)
    counterfactual = report.counterfactual
    if args.adversarial_steps > 0:
        def say(label: str, fraction: float) -> None:
            print(f"\r{label}", end="", file=sys.stderr, flush=True)

        counterfactual = counterfactual_attention(loaded, text, spec=spec, layer=report.layer, head=report.head,
                                                  query=report.query, permutations=args.permutations,
                                                  steps=args.adversarial_steps, backend=args.backend, progress=say)
        print(file=sys.stderr)
        payload["counterfactual"] = counterfactual_json(counterfactual)
    if args.corpus:
        texts = _corpus_texts(args.corpus)
        corpus = corpus_agreement(loaded, texts, spec=spec, settings=settings, backend=args.backend)
        payload["corpus_agreement"] = to_jsonable({"methods": list(corpus.methods), "texts": len(texts),
                                                   "kendall_mean": corpus.mean, "kendall_low_95": corpus.low,
                                                   "kendall_high_95": corpus.high, "resamples": corpus.resamples})
    if args.json:
        write_json(payload, args.json)
        if args.json != "-":
            print(f"wrote {args.json}: {len(report.tokens)} tokens, {len(report.scores)} methods", file=sys.stderr)
        return
    print(f"f(x) = {report.target.value:.4g}: {report.target.description}")
    content = ~report.protected
    for method, values in report.scores.items():
        top = sorted(((v, report.tokens[i]) for i, v in enumerate(values) if content[i]), reverse=True)[:5]
        print(f"{METHOD_LABELS[method]:28s} top: " + ", ".join(f"{t} ({v:.3g})" for v, t in top))
    faithful = report.faithfulness  # always computed by this command's settings
    bins = ", ".join(f"{b:.0%}" for b in faithful.bins)
    print(f"ERASER AOPC over {{{bins}}} of the content tokens (removal: {faithful.removal}): method, "
          "comprehensiveness, sufficiency")
    for i, method in enumerate(faithful.methods):
        comprehensiveness, sufficiency = faithful.aopc_comprehensiveness[i], faithful.aopc_sufficiency[i]
        print(f"  {METHOD_LABELS[method]:28s} {comprehensiveness:8.4f} {sufficiency:8.4f}")
    if counterfactual is not None:
        print(counterfactual.verdict)
