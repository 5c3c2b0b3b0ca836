"""Inspect-view latency on CPU: one :func:`inspector.core.capture` of the bundled model at a few text lengths.

``shared/DESIGN.md`` sets the target: the inspect view — forward + all entropies + one layer's weights — for
the bundled model (all-MiniLM-L6-v2, 6 layers × 12 heads) at 128 tokens "in well under a second after load"
on a 2-core CPU. This times exactly that call, ``capture(loaded, text, weights=[0])``, at 32, 128 and 512
tokens (special tokens included; texts are repeated single-token words, and the token count is checked),
median of ``--repeats`` after one warm-up, with capture's own stage timings alongside.

Run from the repository root::

    python -m benchmarks.inspect_latency
    python -m benchmarks.inspect_latency --tokens 32 128 512 --repeats 5 --write-docs
"""

from __future__ import annotations

import statistics
import sys
import time

from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Inspect view latency (CPU)"
DEFAULT_TOKENS = (32, 128, 512)
TARGET_TOKENS, TARGET_SECONDS = 128, 1.0
# Each of these is one WordPiece token in the bundled model's vocabulary, so n words make n + 2 tokens.
_WORDS = "the quick brown fox jumps over a lazy dog while birds sing in tall green trees".split()


def text_of_length(tokenizer, tokens: int) -> str:
    """A text that the tokenizer turns into exactly ``tokens`` tokens, [CLS] and [SEP] included."""
    words = max(1, tokens - 2)
    for _ in range(8):
        text = " ".join(_WORDS[i % len(_WORDS)] for i in range(words))
        got = len(tokenizer(text, add_special_tokens=True)["input_ids"])
        if got == tokens:
            return text
        words += tokens - got
    raise RuntimeError(f"could not build a text of exactly {tokens} tokens for this tokenizer")


def measure(loaded, tokens: int, repeats: int) -> dict:
    from inspector import capture

    text = text_of_length(loaded.tokenizer, tokens)
    warm = capture(loaded, text, weights=[0])
    if len(warm.tokens) != tokens:
        raise RuntimeError(f"capture saw {len(warm.tokens)} tokens, expected {tokens}")
    seconds, stages = [], {"tokenize": [], "forward": [], "collect": []}
    with OtherLoad() as other_load:
        for _ in range(repeats):
            started = time.perf_counter()
            result = capture(loaded, text, weights=[0])
            seconds.append(time.perf_counter() - started)
            for stage in stages:
                stages[stage].append(result.timings[stage])
    return dict(tokens=len(result.tokens), seconds=seconds, other_load_cores=other_load.cores,
                stages={stage: statistics.median(values) for stage, values in stages.items()},
                weights_shape=tuple(result.weights[0].shape), entropy_shape=tuple(result.entropy.shape))


def _table(rows: list[dict]) -> str:
    lines = [
        "| tokens | capture, median (min–max) ms | tokenize, median ms | forward, median ms | collect, median ms "
        "| other processes' load (CPUs) | entropy shape | weights[0] shape |",
        "|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in rows:
        ms = [s * 1000 for s in row["seconds"]]
        stages = row["stages"]
        lines.append(
            f"| {row['tokens']} | {statistics.median(ms):.0f} ({min(ms):.0f}–{max(ms):.0f}) "
            f"| {stages['tokenize'] * 1000:.1f} | {stages['forward'] * 1000:.0f} | {stages['collect'] * 1000:.1f} "
            f"| {row['other_load_cores']:.2f} | {row['entropy_shape']} | {row['weights_shape']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--tokens", type=int, nargs="+", default=list(DEFAULT_TOKENS),
                        help="text lengths in tokens, special tokens included (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="timed captures per length (default: 5)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    import torch

    from inspector import load_model

    started = time.perf_counter()
    loaded = load_model("default")
    load_seconds = time.perf_counter() - started
    limit = loaded.info.max_positions
    lengths = sorted(set(args.tokens))
    if lengths[0] < 3 or lengths[-1] > limit:
        parser.error(f"--tokens must be between 3 and {limit} (the bundled model's limit)")

    rows = []
    for tokens in lengths:
        rows.append(measure(loaded, tokens, args.repeats))
        row = rows[-1]
        print(f"  {tokens} tokens: median {statistics.median(row['seconds']) * 1000:.0f} ms, other load "
              f"{row['other_load_cores']:.2f} CPUs", file=sys.stderr, flush=True)

    table = _table(rows)
    info = loaded.info
    notes = [
        f"- Time: `capture(loaded, text, weights=[0])` (tokenize, forward through the inspector backend with entropy, "
        f"log-sum-exp and sink mass for all {info.num_layers} layers, exact weights of layer 0, output summary), "
        f"`time.perf_counter`, median of {args.repeats} after one warm-up; stage columns are capture's own "
        "`timings` (medians). Texts are repeated single-token words; the token count includes [CLS] and [SEP].",
        f"- Model load (`load_model(\"default\")`, once, not part of the times above): {load_seconds:.1f} s "
        "(the operating system's file cache may already hold the weights; a cold first load is slower).",
        f"- torch threads: {torch.get_num_threads()} (environment left as it was). Other processes' load: CPUs "
        "other processes kept busy during the timed captures (`/proc/stat` busy time minus this process's CPU "
        "time, over wall time); this machine is shared, and times taken while it is well above 0 are contended.",
    ]
    at_target = [row for row in rows if row["tokens"] == TARGET_TOKENS]
    if at_target:
        median = statistics.median(at_target[0]["seconds"])
        verdict = "meets" if median < TARGET_SECONDS else "misses"
        notes.append(f"- DESIGN target (inspect view at {TARGET_TOKENS} tokens well under {TARGET_SECONDS:g} s on "
                     f"2 CPUs): median {median * 1000:.0f} ms — {verdict} the 1 s bound in this run.")
    shapes = (f"{info.name}: {info.architecture}, {info.num_layers} layers × {info.num_heads} heads, head_dim "
              f"{info.head_dim}, hidden {info.hidden_size}, {info.dtype} on {info.device}; batch 1 × "
              f"{', '.join(str(t) for t in lengths)} tokens")
    finish(args.write_docs, SECTION_TITLE,
           "The inspect view's one library call on the bundled model, at several text lengths.",
           module="benchmarks.inspect_latency", argv=argv, shapes=shapes, table=table, notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
