"""Head report over a corpus on CPU: one :func:`inspector.analyses.heads.head_report` of the bundled model over the
first
``--texts`` sentences of ``assets/corpus/sentences.txt``.

Issue #5 sets the target: the full head report (statistics, JS and CKA redundancy, single-head ablation of every
head, Michel's gradient importance, redundant pairs and the pruning curve) over 100 texts for the bundled model
(all-MiniLM-L6-v2, 6 layers × 12 heads) in under 30 s on this 2-core CPU, with progress. This times exactly
the call the Heads page and ``python -m inspector heads --corpus`` make, once after a one-text warm-up, and
prints the progress callback's steps as they come, with the report's own stage timings.

Run from the repository root::

    python -m benchmarks.heads_report --texts 5
    python -m benchmarks.heads_report --texts 100 --write-docs
"""

from __future__ import annotations

import sys
import time

from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Head report over a corpus (CPU)"
TARGET_TEXTS, TARGET_SECONDS = 100, 30.0


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--texts", type=int, default=TARGET_TEXTS,
                        help="sentences from the bundled corpus (default: %(default)s)")
    parser.add_argument("--ablation", choices=["zero", "mean"], default="zero", help="head removal (default: zero)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch intra-op threads (default: torch's own choice, as the page runs); on a machine "
                             "whose CPUs other processes keep busy, 1 thread avoids threads waiting on each other")
    args = parser.parse_args(argv)

    import torch

    if args.threads is not None:
        if args.threads < 1:
            parser.error("--threads must be at least 1")
        torch.set_num_threads(args.threads)

    from inspector import load_model
    from inspector.analyses.heads import CORPUS_PATH, head_report, read_corpus

    corpus = read_corpus(CORPUS_PATH)
    if not 1 <= args.texts <= len(corpus):
        parser.error(f"--texts must be between 1 and {len(corpus)} (the corpus size)")
    texts = corpus[:args.texts]
    started = time.perf_counter()
    loaded = load_model("default")
    load_seconds = time.perf_counter() - started
    head_report(loaded, texts[:1], ablation=args.ablation)  # warm-up: first-call allocations and imports

    last = [time.perf_counter()]
    calls: list[tuple[int, int]] = []

    def progress(done: int, total: int, label: str) -> None:
        now = time.perf_counter()
        print(f"  [{done}/{total}] {label} ({now - last[0]:.2f} s)", file=sys.stderr, flush=True)
        last[0] = now
        calls.append((done, total))

    with OtherLoad() as other_load:
        started = time.perf_counter()
        report = head_report(loaded, texts, ablation=args.ablation, progress=progress)
        seconds = time.perf_counter() - started
    tokens = sum(len(t) for t in report.tokens)
    info = loaded.info
    table = "\n".join([
        "| texts | tokens (all texts) | head report, s | statistics + single-head ablations + gradients, s "
        "| pairs + pruning, s | s per text | other processes' load (CPUs) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {len(texts)} | {tokens} | {seconds:.1f} | {report.timings['statistics']:.1f} "
        f"| {report.timings['pairs_and_pruning']:.1f} | {seconds / len(texts):.2f} | {other_load.cores:.2f} |",
    ])
    n = info.num_layers * info.num_heads
    notes = [
        f"- Time: one `head_report(loaded, texts, ablation={args.ablation!r})` after a one-text warm-up, "
        "`time.perf_counter`. Per text it runs one forward keeping every layer's weights, values and head outputs; "
        f"{n} copies, each ablating one head and starting at that head's layer from the first forward's block "
        "outputs (the layers below are the unablated text's); the gated model's forward and one backward per "
        "embedding direction (vmapped); "
        f"and, in the second pass, the {len(report.pairs.heads)} pairs ablated together and "
        f"{len(report.pruning.fraction) - 1} pruning steps (a pair's heads ablated alone reuse the first pass's "
        "single-head ablations; the step that removes nothing is 0 without a forward). Texts of about one length "
        "share these forwards as right-padded batches (census's length buckets).",
        f"- Model load (once, not timed above): {load_seconds:.1f} s. torch threads: {torch.get_num_threads()}"
        f"{' (--threads)' if args.threads is not None else ' (torch default, as on the page)'}.",
        f"- Progress bar's estimate (work units = tokens × copies forwarded): the first pass is "
        f"{100 * calls[len(texts) - 1][0] / calls[-1][1]:.0f}% of the units; it took "
        f"{100 * report.timings['statistics'] / seconds:.0f}% of the time in this run.",
        "- Other processes' load: CPUs other processes kept busy during the timed call (`/proc/stat`); this machine "
        "is shared, and times taken while it is well above 0 are contended.",
    ]
    if len(texts) == TARGET_TEXTS:
        verdict = "meets" if seconds < TARGET_SECONDS else "misses"
        notes.append(f"- Issue #5 target (100 texts in under {TARGET_SECONDS:g} s on 2 CPUs): {seconds:.1f} s — "
                     f"{verdict} it in this run.")
    shapes = (f"{info.name}: {info.architecture}, {info.num_layers} layers × {info.num_heads} heads, hidden "
              f"{info.hidden_size}, {info.dtype} on {info.device}; {len(texts)} corpus sentences, {tokens} tokens "
              "in all (special tokens included), batched by length")
    finish(args.write_docs, SECTION_TITLE, "The Heads page's one library call over the bundled corpus.",
           module="benchmarks.heads_report", argv=argv,
           shapes=shapes, table=table, notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
