"""``python -m inspector analyze``: the Inspect page's twin — entropies and attention weights for one text."""

from __future__ import annotations

import argparse
import sys

from inspector.base.errors import InvalidTextError
from inspector.cli.common import (
    BACKENDS,
    add_text_options,
    check_layers,
    check_model_options,
    cpu_loader,
    load,
    parse_layers,
    plan_request,
    read_text,
    warn_if_unreadable,
    write_json,
)

HELP = "entropies and attention weights for one text"


def add_arguments(sub: argparse.ArgumentParser) -> None:
    add_text_options(sub, "the text to inspect")
    sub.add_argument("--backend", default="auto", choices=BACKENDS,
                     help="attention backend (default: auto — Triton on a GPU once available, else PyTorch)")
    sub.add_argument("--weights", default="all",
                     help="layers whose exact weights to include: all, none, or indices like 0,2-4 (default: all)")
    sub.add_argument("--truncate", action="store_true",
                     help="cut texts longer than the model's limit instead of refusing them")


def run(args: argparse.Namespace) -> None:
    from inspector.analyses.metrics import head_entropy
    from inspector.output.export import capture_json
    from inspector.serving.run import Request, run_capture

    check_model_options(args)
    weights = parse_layers(args.weights)
    text = read_text(args)
    loaded = load(args)
    check_layers(weights, loaded.info)
    warn_if_unreadable(loaded, text)
    request = Request(kind="inspect", texts=(text,), weights=weights, truncate=args.truncate,
                      layer=weights[0] if isinstance(weights, list) and weights else 0)
    try:
        planned = plan_request(request, loaded)
    except InvalidTextError as err:
        if args.truncate or not _too_long(loaded, text):
            raise
        raise InvalidTextError(f"{err} (or pass --truncate to read its first {loaded.info.max_positions} "
                               "tokens)") from err
    result = run_capture(planned, loaded, backend=args.backend, cpu_model=cpu_loader(args, loaded))
    if args.json:
        write_json(capture_json(loaded.info, result), args.json)
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


def _too_long(loaded, text: str) -> bool:
    """Whether ``text`` has more tokens than the model reads (the one refusal --truncate lifts)."""
    from inspector.core.forward import encode_text

    return encode_text(loaded, text, truncate=True).truncated
