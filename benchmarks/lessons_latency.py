"""Lessons-page latency on CPU: one :func:`inspector.analyses.lessons.all_lessons` of the bundled model at a few text
lengths.

The Lessons page makes this one cached call (lessons 1–6: the baseline forward keeping Q, K, V and the head
outputs, one forward with W_K := W_Q tied, two with the head's scores rescaled, and the analyses; the seeded √d
simulation is computed once per process and is warmed up before timing). This times that call at 16, 64 and
128 tokens (special tokens included), median of ``--repeats`` after one warm-up, and the quiz's leave-one-out
(one forward per token) separately, since it runs only when the quiz asks for it.

Run from the repository root::

    python -m benchmarks.lessons_latency
    python -m benchmarks.lessons_latency --tokens 16 64 128 --repeats 5 --write-docs
"""

from __future__ import annotations

import statistics
import sys
import time

from benchmarks.inspect_latency import text_of_length
from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Lessons page latency (CPU)"
DEFAULT_TOKENS = (16, 64, 128)
LAYER, HEAD = 2, 3


def measure(loaded, tokens: int, repeats: int) -> dict:
    from inspector.analyses.lessons import all_lessons, leave_one_out

    text = text_of_length(loaded.tokenizer, tokens)
    warm = all_lessons(loaded, text, LAYER, HEAD, backend="torch")
    if len(warm.definition.tokens) != tokens:
        raise RuntimeError(f"the lessons saw {len(warm.definition.tokens)} tokens, expected {tokens}")
    lessons_s, loo_s = [], []
    with OtherLoad() as other_load:
        for _ in range(repeats):
            started = time.perf_counter()
            all_lessons(loaded, text, LAYER, HEAD, backend="torch")
            lessons_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            leave_one_out(loaded, text, backend="torch")
            loo_s.append(time.perf_counter() - started)
    return dict(tokens=tokens, lessons=lessons_s, loo=loo_s, other_load_cores=other_load.cores)


def _table(rows: list[dict]) -> str:
    lines = ["| tokens | all_lessons, median (min–max) ms | leave_one_out, median (min–max) ms "
             "| other processes' load (CPUs) |", "|---:|---:|---:|---:|"]
    for row in rows:
        cells = []
        for key in ("lessons", "loo"):
            ms = [s * 1000 for s in row[key]]
            cells.append(f"{statistics.median(ms):.0f} ({min(ms):.0f}–{max(ms):.0f})")
        lines.append(f"| {row['tokens']} | {cells[0]} | {cells[1]} | {row['other_load_cores']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--tokens", type=int, nargs="+", default=list(DEFAULT_TOKENS),
                        help="text lengths in tokens, special tokens included (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per length (default: 5)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    import torch

    from inspector import load_model

    loaded = load_model("default")
    lengths = sorted(set(args.tokens))
    if lengths[0] < 4 or lengths[-1] > loaded.info.max_positions:
        parser.error(f"--tokens must be between 4 and {loaded.info.max_positions} (the bundled model's limit)")
    rows = []
    for tokens in lengths:
        rows.append(measure(loaded, tokens, args.repeats))
        print(f"  {tokens} tokens: all_lessons median {statistics.median(rows[-1]['lessons']) * 1000:.0f} ms",
              file=sys.stderr, flush=True)
    table = _table(rows)
    info = loaded.info
    notes = [
        f"- Time: `all_lessons(loaded, text, {LAYER}, {HEAD}, backend=\"torch\")` (lessons 1–6, no timing lesson, no "
        f"quiz) and `leave_one_out(loaded, text)` (the quiz's reveal), `time.perf_counter`, median of {args.repeats} "
        "after one warm-up. Texts are repeated single-token words; the token count includes [CLS] and [SEP].",
        f"- torch threads: {torch.get_num_threads()}. Other processes' load: CPUs other processes kept busy during "
        "the timed runs; times taken while it is well above 0 are contended.",
    ]
    shapes = (f"{info.name}: {info.architecture}, {info.num_layers} layers × {info.num_heads} heads, head_dim "
              f"{info.head_dim}, {info.dtype} on {info.device}; batch 1 × {', '.join(map(str, lengths))} tokens; "
              f"layer {LAYER}, head {HEAD}")
    finish(args.write_docs, SECTION_TITLE,
           "The Lessons page's one library call, and the quiz's leave-one-out, on the bundled "
           "model.", module="benchmarks.lessons_latency",
           argv=argv, shapes=shapes, table=table, notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
