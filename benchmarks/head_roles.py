"""Head roles by probe (issue 29) on CPU: the probe and the causal test of :func:`inspector.analyses.roles.head_roles`
with its defaults, on the bundled MiniLM, SmolLM2-135M and Gemma 3 270M.

Issue 29's target: the whole roles view (probe + causal test) in under 20 s on Gemma 3 270M on this machine. Each
model is loaded (not timed), warmed up with a two-sequence probe, then timed: the probe (``head_roles(...,
causal=False)``: one forward keeping every layer's weights, the reductions) and the causal test (one unablated
forward keeping block outputs, then per role one batched forward of 1 + seeds copies of the probe, resumed at the
lowest ablated layer, logits only where read) — the two parts ``head_roles`` runs for the page.

Run from the repository root::

    python -m benchmarks.head_roles
    python -m benchmarks.head_roles --write-docs
"""

from __future__ import annotations

import sys
import time

from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Head roles by probe (CPU)"
MODELS = ("default", "bundled:smollm2-135m", "bundled:gemma-3-270m")
TARGET_SECONDS = 20.0


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--models", nargs="+", default=list(MODELS), help="model specs (default: the three bundled)")
    args = parser.parse_args(argv)

    import torch

    from inspector import load_model
    from inspector.analyses import roles

    rows, shapes = [], []
    for spec in args.models:
        loaded = load_model(spec, device="cpu")
        info = loaded.info
        roles.head_roles(loaded, repeat=2, batch=2, top_k=1, seeds=2)  # warm-up: first-call allocations
        repeat = roles.default_repeat(loaded)
        with OtherLoad() as other_load:
            started = time.perf_counter()
            result = roles.head_roles(loaded, causal=False)
            probe_seconds = time.perf_counter() - started
            started = time.perf_counter()
            base = roles._base_run(loaded, result.probe, "torch")
            tests = [roles.causal_test(loaded, result.probe, role, result.top_heads(role), base_run=base)
                     for role in roles.CAUSAL_ROLES]
            causal_seconds = time.perf_counter() - started
        total = probe_seconds + causal_seconds
        top = result.top_heads("induction", 1)[0]
        verdicts = ", ".join(f"{test.role} {'causal' if test.causal else 'not shown'} ({test.role_rise:+.2f} vs "
                             f"{test.random_mean:+.2f})" for test in tests)
        rows.append(f"| {info.name} | {info.num_layers}×{info.num_heads} | {probe_seconds:.1f} | {causal_seconds:.1f} "
                    f"| {total:.1f} | L{top[0]}H{top[1]} {result.scores['induction'][top]:.2f} | {verdicts} "
                    f"| {other_load.cores:.2f} |")
        shapes.append(f"{info.name} ({info.architecture}, {info.dtype}, {info.num_layers} layers × {info.num_heads} "
                      f"heads): probe {result.probe.batch} × {2 * repeat + 1} tokens")
        print(rows[-1], file=sys.stderr, flush=True)
    table = "\n".join([
        "| model | layers×heads | probe, s | causal test, s | whole roles view, s | top induction head | causal "
        "verdicts (rise: role vs random) | other processes' load (CPUs) |",
        "|---|---:|---:|---:|---:|---|---|---:|",
        *rows,
    ])
    notes = [
        f"- Defaults: R = {roles.DEFAULT_REPEAT} (less for a short model), batch {roles.DEFAULT_BATCH}, top-k "
        f"{roles.DEFAULT_TOP_K}, {roles.DEFAULT_SEEDS} random-head seeds, window {roles.DEFAULT_WINDOW}, "
        "backend torch; "
        f"torch threads {torch.get_num_threads()}. Time: `time.perf_counter` after a two-sequence warm-up.",
        f"- Issue 29's target: the whole roles view on Gemma 3 270M in under {TARGET_SECONDS:g} s on this machine.",
        "- Other processes' load: CPUs other processes kept busy during the timed calls (`/proc/stat`); this machine "
        "is shared by several sessions, so these times are contended.",
    ]
    finish(args.write_docs, SECTION_TITLE, "The probe and causal test of the Heads page's roles block.",
           module="benchmarks.head_roles", argv=argv, shapes="; ".join(shapes), table=table, notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
