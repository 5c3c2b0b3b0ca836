"""Head roles by probe (issue 29) on CPU: the whole roles view — :func:`inspector.analyses.roles.head_roles` with its
defaults, the probe and the causal test as the Heads page runs them — on the bundled MiniLM, SmolLM2-135M and
Gemma 3 270M, side by side with a smaller probe (6 sequences, R = 16) on the same model in the same run.

Issue 29's target: the whole roles view (probe + causal test) in under 20 s on Gemma 3 270M on this machine. Each
model is loaded (not timed), warmed up with a two-sequence probe, then timed: ``head_roles`` (one unablated forward
keeping every layer's weights, block outputs and logits; the scores; per role the 1 + seeds ablated copies of the
probe, resumed at the lowest ablated layer, logits only at the measured positions), the same call with
``causal=False`` (the probe alone), and ``head_roles(batch=6, repeat=16)`` (the smaller probe: faster, wider
intervals).

Run from the repository root::

    python -m benchmarks.head_roles
    python -m benchmarks.head_roles --write-docs
    python -m benchmarks.head_roles --models bundled:gemma-3-270m --write-docs
"""

from __future__ import annotations

import sys
import time

from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Head roles by probe (CPU)"
MODELS = ("default", "bundled:smollm2-135m", "bundled:gemma-3-270m")
TARGET_SECONDS = 20.0
SMALLER = {"batch": 6, "repeat": 16}  # a smaller probe, side by side with the defaults (8 sequences, R = 20)


def _timed(call):
    with OtherLoad() as other:
        started = time.perf_counter()
        result = call()
        seconds = time.perf_counter() - started
    return result, seconds, other.cores


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--models", nargs="+", default=list(MODELS), help="model specs (default: the three bundled)")
    parser.add_argument("--no-smaller", action="store_true", help="skip the smaller probe's rows (6 × R 16)")
    args = parser.parse_args(argv)

    import torch

    from inspector import load_model
    from inspector.analyses import roles

    loads = [open("/proc/loadavg").read().strip()]
    rows, shapes = [], []
    for spec in args.models:
        loaded = load_model(spec, device="cpu")
        info = loaded.info
        roles.head_roles(loaded, repeat=2, batch=2, top_k=1, seeds=2)  # warm-up: first-call allocations
        _, probe_seconds, _ = _timed(lambda: roles.head_roles(loaded, causal=False))
        result, seconds, cores = _timed(lambda: roles.head_roles(loaded))
        runs = [(result, seconds, probe_seconds, cores, "defaults")]
        if not args.no_smaller:
            small, small_seconds, small_cores = _timed(lambda: roles.head_roles(loaded, **SMALLER))
            runs.append((small, small_seconds, None, small_cores, "smaller probe"))
        for item, total, probe_only, other_cores, label in runs:
            top = item.top_heads("induction", 1)[0]
            prev = item.top_heads("previous", 1)[0]
            verdicts = ", ".join(f"{test.role} {'causal' if test.causal else 'not shown'} ({test.role_rise:+.2f} vs "
                                 f"{test.random_mean:+.2f})" for test in item.tests)
            probe_cell = "—" if probe_only is None else f"{probe_only:.1f}"
            rows.append(f"| {info.name} | {info.num_layers}×{info.num_heads} | {label}: {item.probe.batch} × "
                        f"{item.probe.length} | {probe_cell} | **{total:.1f}** | L{top[0]}H{top[1]} "
                        f"{item.scores['induction'][top]:.2f} ({item.low['induction'][top]:.2f}–"
                        f"{item.high['induction'][top]:.2f}) | L{prev[0]}H{prev[1]} "
                        f"{item.scores['previous'][prev]:.2f} | {verdicts} | {other_cores:.2f} |")
            print(rows[-1], file=sys.stderr, flush=True)
        shapes.append(f"{info.name} ({info.architecture}, {info.dtype}, {info.num_layers} layers × {info.num_heads} "
                      f"heads, {info.num_kv_heads} kv heads, vocabulary {info.vocab_size:,})")
        loads.append(open("/proc/loadavg").read().strip())
    table = "\n".join([
        "| model | layers×heads | probe (sequences × tokens) | probe alone, s | whole roles view, s | top induction "
        "head (95 % interval) | top previous-token head | causal verdicts (rise: role vs random) | other "
        "processes' load (CPUs) |",
        "|---|---:|---|---:|---:|---|---|---|---:|",
        *rows,
    ])
    notes = [
        f"- Defaults: R = {roles.DEFAULT_REPEAT} (less for a short model), batch {roles.DEFAULT_BATCH}, top-k "
        f"{roles.DEFAULT_TOP_K}, {roles.DEFAULT_SEEDS} random-head seeds, window {roles.DEFAULT_WINDOW}, "
        f"backend torch; torch threads {torch.get_num_threads()}. Time: `time.perf_counter` after a two-sequence "
        "warm-up; models loaded before timing. The whole roles view is one `head_roles` call (probe + causal test, "
        "what the Heads page and `heads --roles` run); the probe alone is the same call with `causal=False`.",
        f"- Issue 29's target: the whole roles view on Gemma 3 270M in under {TARGET_SECONDS:g} s on this machine.",
        f"- `/proc/loadavg` at the start and after each model: {' → '.join(loads)}. Other processes' load: CPUs "
        "other processes kept busy during the timed call (`/proc/stat`).",
    ]
    finish(args.write_docs, SECTION_TITLE, "The probe and causal test of the Heads page's roles block.",
           module="benchmarks.head_roles", argv=argv, shapes="; ".join(shapes), table=table, notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
