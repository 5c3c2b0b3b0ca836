"""Where a capture's time goes beside SDPA's, stage by stage, in cpu_statistics' order of calls (issue 43).

``capture(loaded, text, weights=[0])`` on the default model (MiniLM) against the same folder loaded with
``attn_implementation="sdpa"`` from the same text (its tokenizer call, then its forward), and eager's call between
them, as :mod:`benchmarks.cpu_statistics` interleaves them. Forward hooks on both models stamp the model call, and a
wrapper around :func:`inspector.core.forward.forward` stamps capture's own call of it, so each side splits into:
before the model (tokenising, checking; capture's call of ``forward()`` too), the model call, and after it (the
capture's bookkeeping; SDPA's caller returning). A second table times one small NumPy call and one small torch call
right after a forward and again after 5 ms of sleep, and a tight Python loop in both places, which tells cold caches
from a slower clock. Medians of ``--rounds``.

Run from the repository root::

    python -m benchmarks.capture_stages
    python -m benchmarks.capture_stages --tokens 128 --rounds 200 --write-docs
"""

from __future__ import annotations

import statistics
import sys
import time

from benchmarks.inspect_latency import text_of_length
from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Capture's stages beside SDPA's (CPU)"
STAGES = (("before the model", "before"), ("the model call", "model"), ("after the model", "after"))


def stage_times(tokens: int, rounds: int) -> tuple[dict[str, dict[str, list[float]]], float]:
    """Seconds per stage, per side, one list per stage; and the CPUs other processes kept busy."""
    import torch

    import inspector.core.capture as capture_module
    from benchmarks.cpu_statistics import _models
    from inspector import capture
    from inspector.core.loading import compiled_kernel

    compiled_kernel(wait=True)
    loaded, sdpa, eager = _models("default")
    text = text_of_length(loaded.tokenizer, tokens)
    stamps: dict[str, float] = {}

    def stamp(name):
        return lambda *args, **kwargs: stamps.__setitem__(name, time.perf_counter())

    for side, model in (("ours", loaded.model), ("sdpa", sdpa)):  # hooks on this process's models, a measurement
        model.register_forward_pre_hook(stamp(f"{side} in"), with_kwargs=True)
        model.register_forward_hook(stamp(f"{side} out"), with_kwargs=True)
    original = capture_module.forward

    def stamped_forward(*args, **kwargs):
        stamps["forward in"] = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            stamps["forward out"] = time.perf_counter()

    capture_module.forward = stamped_forward

    def from_text(model):
        with torch.no_grad():
            return model(**loaded.tokenizer(text, return_tensors="pt"))

    times = {side: {key: [] for _, key in STAGES} for side in ("ours", "sdpa")}
    try:
        for _ in range(3):  # warm-up
            capture(loaded, text, weights=[0]), from_text(sdpa), from_text(eager)
        with OtherLoad() as other:
            for _ in range(rounds):
                started = time.perf_counter()
                capture(loaded, text, weights=[0])
                ended = time.perf_counter()
                times["ours"]["before"].append(stamps["ours in"] - started)
                times["ours"]["model"].append(stamps["ours out"] - stamps["ours in"])
                times["ours"]["after"].append(ended - stamps["ours out"])
                from_text(eager)
                started = time.perf_counter()
                from_text(sdpa)
                ended = time.perf_counter()
                times["sdpa"]["before"].append(stamps["sdpa in"] - started)
                times["sdpa"]["model"].append(stamps["sdpa out"] - stamps["sdpa in"])
                times["sdpa"]["after"].append(ended - stamps["sdpa out"])
    finally:
        capture_module.forward = original
    return times, other.cores


def cold_calls(tokens: int, rounds: int) -> dict[str, tuple[float, float]]:
    """Seconds of three small calls right after a forward and after 5 ms of sleep (medians)."""
    import numpy as np
    import torch

    from inspector import load_model

    loaded = load_model("default", device="cpu")
    inputs = loaded.tokenizer(text_of_length(loaded.tokenizer, tokens), return_tensors="pt")

    def loop():
        total = 0
        for i in range(2000):
            total += i * 3
        return total

    calls = {"np.zeros(1) + 1": lambda: np.zeros(1) + 1, "torch.zeros(1)": lambda: torch.zeros(1),
             "a Python loop of 2,000 additions": loop}
    after, rested = {name: [] for name in calls}, {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            with torch.inference_mode():
                loaded.model(**inputs)
            started = time.perf_counter()
            call()
            after[name].append(time.perf_counter() - started)
            time.sleep(0.005)
            started = time.perf_counter()
            call()
            rested[name].append(time.perf_counter() - started)
    return {name: (statistics.median(after[name]), statistics.median(rested[name])) for name in calls}


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--tokens", type=int, default=128, help="the text's length in tokens (default: 128)")
    parser.add_argument("--rounds", type=int, default=200, help="interleaved rounds (default: 200)")
    args = parser.parse_args(argv)
    if not 8 <= args.tokens <= 512:
        parser.error("--tokens must be 8–512 (the default model reads at most 512)")
    if not 5 <= args.rounds <= 5000:
        parser.error("--rounds must be 5–5000")
    times, other = stage_times(args.tokens, args.rounds)
    rows = ["| stage | ours (capture), µs | SDPA from text, µs |", "|---|---:|---:|"]
    for label, key in STAGES:
        rows.append(f"| {label} | {statistics.median(times['ours'][key]) * 1e6:,.0f} | "
                    f"{statistics.median(times['sdpa'][key]) * 1e6:,.0f} |")
    rows += ["", "| a small call | right after a forward, µs | after 5 ms of sleep, µs |", "|---|---:|---:|"]
    for name, (after, rested) in cold_calls(args.tokens, max(5, args.rounds // 2)).items():
        rows.append(f"| `{name}` | {after * 1e6:.1f} | {rested * 1e6:.1f} |")
    print(f"other load: {other:.2f} CPUs", file=sys.stderr)
    notes = [f"- Default model (MiniLM), {args.tokens} tokens, {args.rounds} rounds of: capture, eager from text, SDPA "
             "from text (cpu_statistics' order: each side follows another model's call). 'Before the model' is, for "
             "ours, `capture` up to the model's forward pre-hook (tokenising, checking, the text's arrays, "
             "`forward()`'s own start); 'after' is from the forward hook to `capture`'s return (the records made "
             "arrays, the summary, `Capture`). Medians; hooks cost both sides alike.",
             f"- Other load during the rounds: {other:.2f} CPUs."]
    finish(args.write_docs, SECTION_TITLE, "Where a capture's time goes beside SDPA's at 128 tokens, and what a small "
           "call costs right after a forward (issue 43).", module="benchmarks.capture_stages", argv=argv,
           shapes=f"default (MiniLM), batch 1, {args.tokens} tokens, fp32 on cpu", table="\n".join(rows), notes=notes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
