"""Ground-truth scoreboard (issue #8): every attribution method against the known causal token, on each model
this project ships, with the model's accuracy on the same fresh examples and how long scoring took.

For each shipped model (``assets/models/*``): :func:`inspector.analyses.groundtruth.scoreboard` on ``--examples`` fresh
examples (seed FRESH_SEED, never used in training) — top-1 and top-k hit rate with Wilson 95 % intervals, mean
rank with a bootstrap 95 % interval, and the chance level of a random ranking of the same texts (the baseline,
computed in the same run). The training rows come from each model's card: the accuracy and seconds its training
command measured when it wrote the model.

Run from the repository root::

    python -m benchmarks.groundtruth_scoreboard
    python -m benchmarks.groundtruth_scoreboard --examples 200 --write-docs
"""

from __future__ import annotations

import sys

from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Ground-truth scoreboard (CPU)"


def _model_table(board) -> str:
    from inspector.analyses.attribution import METHOD_LABELS

    k = board.k
    mechanism = bool(board.card.task.name == "induction")
    lines = [f"| method | top-1 hit rate [95 % CI] | top-{k} hit rate [95 % CI] | mean rank [95 % CI] "
             "| top-1 by magnitude "
             + ("| top-1 in the mechanism (B or either A) |" if mechanism else "|"),
             "|---|---:|---:|---:|---:|" + ("---:|" if mechanism else "")]
    for i in sorted(range(len(board.methods)), key=lambda i: (-board.top1[i], board.mean_rank[i])):
        lines.append(f"| {METHOD_LABELS[board.methods[i]]} | {board.top1[i]:.1%} [{board.top1_low[i]:.1%}–"
                     f"{board.top1_high[i]:.1%}] | {board.topk[i]:.1%} [{board.topk_low[i]:.1%}–"
                     f"{board.topk_high[i]:.1%}] | {board.mean_rank[i]:.2f} [{board.mean_rank_low[i]:.2f}–"
                     f"{board.mean_rank_high[i]:.2f}] | {board.magnitude_top1[i]:.1%} |"
                     + (f" {board.mechanism_top1[i]:.1%} |" if mechanism else ""))
    lines.append(f"| *chance (a random ranking)* | {board.chance_top1:.1%} | {board.chance_topk:.1%} | "
                 f"{board.chance_rank:.2f} | {board.chance_top1:.1%} |" + (" |" if mechanism else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--examples", type=int, default=200, help="fresh examples per model (default: %(default)s)")
    parser.add_argument("--top-k", type=int, default=3, help="k of the top-k hit rate (default: %(default)s)")
    args = parser.parse_args(argv)

    import torch

    from inspector.analyses.groundtruth import card_for, scoreboard
    from inspector.core.loading import load_model, shipped_choices

    sections, summary_rows, shapes = [], [], []
    for spec in shipped_choices():
        loaded = load_model(spec, device="cpu")
        card = card_for(loaded)
        with OtherLoad() as other_load:
            board = scoreboard(loaded, args.examples, k=args.top_k)
        mass, mass_low, mass_high = board.mass_interval()
        bound = f" (card's bound: {card.attention_bound})" if card.attention_bound is not None else ""
        training = card.training
        summary_rows.append(
            f"| `{spec}` | {card.task.name}, {card.variant} | {card.stated_accuracy:.0%} | {card.accuracy:.2%} on "
            f"{card.accuracy_examples} | `{training.get('command')}`: {training.get('steps')} steps, "
            f"{training.get('seconds')} s, {training.get('threads')} thread | {board.accuracy:.1%} "
            f"[{board.accuracy_low:.1%}–{board.accuracy_high:.1%}] | "
            f"{mass:.4f} [{mass_low:.4f}–{mass_high:.4f}]{bound} "
            f"| {board.seconds:.1f} s ({other_load.cores:.2f}) |")
        sections.append(f"**`{spec}`** — causal token: {card.task.truth}; {board.examples} fresh examples, "
                        f"{int(board.content.mean())} ranked tokens on average.\n\n{_model_table(board)}")
        info = loaded.info
        shapes.append(f"{spec}: {info.architecture}, {info.num_layers} layers × {info.num_heads} heads, "
                      f"hidden {info.hidden_size}, {info.num_parameters:,} parameters")
        print(f"  {spec}: scored {board.examples} examples in {board.seconds:.1f} s", file=sys.stderr, flush=True)
    table = "\n".join([
        "| model | task, variant | stated accuracy | training check (card) | training (card) | accuracy here "
        "[95 % CI] | mean attention on the causal token [95 % CI] | scoring time (other load, CPUs) |",
        "|---|---|---:|---:|---|---:|---:|---:|", *summary_rows, "", *(f"{s}\n" for s in sections)])
    notes = [
        "- Scoring: `scoreboard(loaded, N, k)` — per example, `attribute(..., AttributionSettings(ig_steps=16, "
        "head_grid=False, permutations=0, faithfulness=False))` with the correct answer as the target (the true "
        "class's probability; the log-probability of the copied word), then the causal token's rank among the "
        "content tokens by signed score, ties counted against the method. Attention-based methods read the last "
        "layer, mean over heads, from [CLS] (classifiers) or the last token (the language model).",
        "- Mean attention on the causal token: every layer, head and query row other than its own (for the causal "
        "model, the rows after it); the quantity the deceptive model's training penalised.",
        f"- torch threads: {torch.get_num_threads()}; scoring time is wall-clock for all N examples.",
    ]
    finish(args.write_docs, SECTION_TITLE,
           "Which explanation finds the token that decides the output, on models where it "
           "is known by construction.", module="benchmarks.groundtruth_scoreboard",
           argv=argv, shapes="; ".join(shapes), table=table,
           notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
