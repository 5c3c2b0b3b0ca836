"""``python -m inspector attribute``: the Attribution page's command-line twin — the same
:func:`inspector.analyses.attribution.attribute` call (and the adversarial search of
:func:`inspector.analyses.attribution.counterfactual_attention`), written as JSON or summarised on stdout."""

from __future__ import annotations

import argparse
import re
import sys

from inspector.base.errors import InvalidRequestError
from inspector.base.progress import print_progress
from inspector.cli.common import (
    BACKENDS,
    MAX_LAYER_INDEX,
    add_text_options,
    check_model_options,
    int_in,
    load,
    read_lines,
    read_text,
    run_request,
    warn_if_unreadable,
    write_json,
)

# Bounds of the search options: enough for any study, small enough that a typo cannot run for a day.
MAX_PERMUTATIONS = 10_000
MAX_ADVERSARIAL_STEPS = 10_000
MAX_IG_STEPS = 1024  # AttributionSettings' own bound

HELP = ("attention vs gradients, IG, occlusion …: agreement, faithfulness and counterfactual attention for one "
        "text (the Attribution page's twin)")


def _query(value: str) -> int | str:
    if value in ("first", "last", "auto"):
        return value
    if re.fullmatch(r"[0-9]{1,7}", value.strip()):
        return int(value)
    raise argparse.ArgumentTypeError(f"expected first, last, auto or a token index (0 or more), got {value[:40]!r}")


def _corpus_texts(source: str) -> list[str]:
    if source == "examples":
        from inspector.base.examples import EXAMPLES

        return [example.text for example in EXAMPLES]
    return read_lines(source, "--corpus")


def add_arguments(sub: argparse.ArgumentParser) -> None:
    from inspector.analyses.attribution import DEFAULT_REFERENCE, METHODS

    add_text_options(sub, "the text to attribute")
    sub.add_argument("--reference", default=DEFAULT_REFERENCE,
                     help="encoders without a head: f = cosine similarity with this sentence (default: %(default)r)")
    sub.add_argument("--token", help="language models: f = log-probability of this token (default: the top prediction)")
    sub.add_argument("--class-index", type=int_in(0, 1_000_000),
                     help="classifiers: f = probability of this class (default: predicted)")
    sub.add_argument("--layer", type=int_in(0, MAX_LAYER_INDEX),
                     help="layer of raw attention, norm, value zeroing and the counterfactual (default: last)")
    sub.add_argument("--head", type=int_in(0, MAX_LAYER_INDEX),
                     help="head (default: mean over heads; every head for the counterfactual)")
    sub.add_argument("--query", type=_query, default="auto",
                     help="query row: first, last, auto (the target's token, else last for decoders, first for "
                          "encoders) or a token index")
    sub.add_argument("--methods", default="all", help=f"comma list from {', '.join(METHODS)} (default: all)")
    sub.add_argument("--ig-steps", type=int_in(1, MAX_IG_STEPS), default=16,
                     help=f"integrated-gradients steps, 1 to {MAX_IG_STEPS} (default: 16)")
    sub.add_argument("--removal", choices=["mask", "delete"], default="mask",
                     help="occlusion and ERASER: replace removed tokens by [MASK] or delete them (default: mask)")
    sub.add_argument("--permutations", type=int_in(1, MAX_PERMUTATIONS), default=100,
                     help=f"random permutations of the row, 1 to {MAX_PERMUTATIONS:,} (default: 100)")
    sub.add_argument("--adversarial-steps", type=int_in(0, MAX_ADVERSARIAL_STEPS), default=500,
                     help=f"adversarial search steps, 0 to skip it, at most {MAX_ADVERSARIAL_STEPS:,} (default: 500)")
    sub.add_argument("--corpus", metavar="FILE",
                     help="also compute Kendall τ between methods over these texts (UTF-8, one per line) with "
                          "bootstrap 95%% intervals of the mean; 'examples' uses the app's example texts")
    sub.add_argument("--backend", default="auto", choices=BACKENDS, help="attention backend")


def _check_against_model(args: argparse.Namespace, loaded) -> None:
    """The options whose bounds come from the model: layer, head, the target class and the target token."""
    from inspector.analyses.attribution import DEFAULT_REFERENCE

    info = loaded.info
    if args.layer is not None:
        info.check_layer(args.layer, "--layer")
    if args.head is not None:
        info.check_head(args.head, "--head")
    if args.class_index is not None:
        if info.head != "classifier":
            raise InvalidRequestError(f"--class-index {args.class_index}: {info.name} is not a classifier (it has "
                                      f"{_HEAD_WORDS[info.head]}), so it has no classes; leave --class-index out")
        if args.class_index >= len(info.labels):
            raise InvalidRequestError(f"--class-index {args.class_index} does not exist: {info.name} has classes "
                                      f"0–{len(info.labels) - 1} ({', '.join(info.labels)})")
    if args.token is not None:
        if info.head not in ("masked-lm", "causal-lm"):
            raise InvalidRequestError(f"--token {args.token[:40]!r}: {info.name} is not a language model (it has "
                                      f"{_HEAD_WORDS[info.head]}), so f is no token's probability — leave it out")
        ids = loaded.codec.input_ids(args.token, add_special_tokens=False)
        unknown, unknown_token = loaded.codec.special_token_id("unk"), loaded.codec.special_token("unk")
        if unknown is not None and unknown in ids and args.token.strip() != unknown_token:
            raise InvalidRequestError(f"--token {args.token[:40]!r} is not in {info.name}'s vocabulary (it would be "
                                      f"read as {unknown_token}); choose a word the model knows")
    if args.reference != DEFAULT_REFERENCE and info.head != "none":
        raise InvalidRequestError(f"--reference applies to encoders without a head; {info.name} has "
                                  f"{_HEAD_WORDS[info.head]} — use --token or --class-index instead")


_HEAD_WORDS = {"none": "no output head", "masked-lm": "a masked-language-model head",
               "causal-lm": "a next-token head", "classifier": "a classifier head"}


def run(args: argparse.Namespace) -> None:
    from inspector.analyses.attribution import (
        METHOD_LABELS,
        METHODS,
        AttributionSettings,
        TargetSpec,
        attribute,
        corpus_agreement,
        counterfactual_attention,
        counterfactual_json,
        report_json,
    )
    from inspector.base.jsonable import to_jsonable
    from inspector.serving.run import Request

    check_model_options(args)
    methods = (METHODS if args.methods.strip() == "all"
               else tuple(m.strip() for m in args.methods.split(",") if m.strip()))
    if not methods:
        raise InvalidRequestError("--methods is empty; give a comma list of methods or 'all'")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise InvalidRequestError(f"--methods: unknown {', '.join(repr(m[:40]) for m in unknown[:3])}; choose from "
                                  f"{', '.join(METHODS)} or 'all'")
    if not args.reference.strip():
        raise InvalidRequestError("--reference is empty; give a sentence to compare the text with")
    if args.token is not None and not args.token.strip():
        raise InvalidRequestError("--token is empty; give a word, or leave --token out for the top prediction")
    text = read_text(args)
    texts = _corpus_texts(args.corpus) if args.corpus else None
    query = None if args.query == "auto" else args.query
    spec = TargetSpec(reference=args.reference, token=args.token, class_index=args.class_index)
    settings = AttributionSettings(layer=args.layer, head=args.head, query=query, methods=methods,
                                   ig_steps=args.ig_steps, removal=args.removal, permutations=args.permutations)
    loaded = load(args)
    _check_against_model(args, loaded)
    warn_if_unreadable(loaded, text)

    def work(plan, progress):
        report = attribute(loaded, text, spec=spec, settings=settings, backend=args.backend)
        payload = report_json(report)
        counterfactual = report.counterfactual
        if args.adversarial_steps > 0:
            counterfactual = counterfactual_attention(loaded, text, spec=spec, layer=report.layer, head=report.head,
                                                      query=report.query, permutations=args.permutations,
                                                      steps=args.adversarial_steps, backend=args.backend,
                                                      progress=progress)
            payload["counterfactual"] = counterfactual_json(counterfactual)
        if texts is not None:
            corpus = corpus_agreement(loaded, texts, spec=spec, settings=settings, backend=args.backend)
            payload["corpus_agreement"] = to_jsonable({"methods": list(corpus.methods), "texts": len(texts),
                                                       "kendall_mean": corpus.mean, "kendall_low_95": corpus.low,
                                                       "kendall_high_95": corpus.high,
                                                       "resamples": corpus.resamples})
        return report, payload, counterfactual

    _, (report, payload, counterfactual) = run_request(Request(kind="attribution", texts=(text,)), loaded, work,
                                                       progress=print_progress)
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
