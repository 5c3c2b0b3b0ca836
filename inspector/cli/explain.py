"""``python -m inspector explain``: the Mechanism page's first and third panels' twin — direct logit attribution of a
prediction, the logit lens, each head's attention to the answer's token and, with ``--score``, why one head attends
from one token to another."""

from __future__ import annotations

import argparse
import re

from inspector.base.errors import InvalidRequestError
from inspector.cli.common import add_text_options, check_model_options, load, read_text, run_request, write_json

HELP = "which components write a prediction (direct logit attribution, logit lens) and why a head attends (--score)"
_SCORE = re.compile(r"\s*(-?[0-9]{1,6})\s*,\s*(-?[0-9]{1,6})\s*,\s*(-?[0-9]{1,6})\s*,\s*(-?[0-9]{1,6})\s*")


def parse_score(value: str) -> tuple[int, int, int, int]:
    """``L,H,I,J`` → (layer, head, query position, key position)."""
    match = _SCORE.fullmatch(value or "")
    if match is None:
        raise InvalidRequestError(f"--score {value!r}: expected LAYER,HEAD,QUERY,KEY as four whole numbers, e.g. "
                                  "3,1,12,5")
    return tuple(int(part) for part in match.groups())


def add_arguments(sub: argparse.ArgumentParser) -> None:
    add_text_options(sub, "the text whose next-token prediction to explain")
    sub.add_argument("--answer", help="the token whose logit to split (default: the model's top prediction)")
    sub.add_argument("--contrast", help="split the logit difference answer − contrast instead")
    sub.add_argument("--position", type=int, default=-1, help="the position predicting (default: -1, the last)")
    sub.add_argument("--score", metavar="L,H,I,J", help="also split the score of layer L, head H, query I, key J")


def run(args: argparse.Namespace) -> None:
    from inspector.analyses.mechanism import direct_logit_attribution, score_attribution
    from inspector.analyses.mechanism.records import dla_json, score_json
    from inspector.serving.run import Request

    check_model_options(args)
    text = read_text(args)
    cell = parse_score(args.score) if args.score is not None else None
    loaded = load(args)

    def work(plan, progress):
        dla = direct_logit_attribution(loaded, text, answer=args.answer, contrast=args.contrast,
                                       position=args.position)
        if cell is None:
            return dla, None
        layer, head, query, key = cell
        return dla, score_attribution(loaded, text, layer=layer, head=head, query_position=query, key_position=key)

    # Planned as the Mechanism page plans its job: the text held to the hosted token limit, one run slot, one deadline.
    _, (dla, score) = run_request(Request(kind="mechanism", texts=(text,)), loaded, work)
    payload = {"model": loaded.info.as_json(), "direct_logit_attribution": dla_json(dla)}
    if score is not None:
        payload["score_attribution"] = score_json(score)
    if args.json:
        write_json(payload, args.json)
    if args.json != "-":
        target = dla.answer_token + (f" − {dla.contrast_token}" if dla.contrast_token is not None else "")
        tops = ", ".join(f"L{layer}H{head} {value:+.3f}" for layer, head, value in dla.top_heads(3))
        print(f"{target}: {dla.target:.4f} (sum-rule residual {dla.residual:.1e}); top heads: {tops}")
        if score is not None:
            print(f"score L{score.layer}H{score.head} {score.query_position}→{score.key_position}: {score.score:.4f} "
                  f"(residual {score.residual:.1e}); top pair: {score.top_pairs(1)[0]}")
