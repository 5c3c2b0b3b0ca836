"""Head roles by probe (issue 29) on CPU: the whole roles view — :func:`inspector.analyses.roles_causal.head_roles` with
its defaults, the probe and the causal test as the Heads page runs them — on the bundled MiniLM, SmolLM2-135M and
Gemma 3 270M, side by side with a smaller probe (6 sequences, R = 16) on the same model in the same run.

Issue 29's target: the whole roles view (probe + causal test) in under 20 s on Gemma 3 270M on this machine. Each
model is loaded (not timed), warmed up with a two-sequence probe, then timed: ``head_roles`` (one unablated forward
keeping every layer's weights, block outputs and logits; the scores; per role the 1 + seeds ablated copies of the
probe, resumed at the lowest ablated layer, logits only at the measured positions), the same call with
``causal=False`` (the probe alone), and ``head_roles(batch=6, repeat=16)`` (the smaller probe: faster, wider
intervals).

``--baseline REF`` times the same whole roles view with the ``inspector/`` and ``kernels/`` of git ``REF`` (an
earlier commit, extracted with ``git archive`` into a temporary folder and run in a child process on the same
models, each loaded and warmed up there first) in the same run, so a speed-up is measured against its baseline.

Run from the repository root::

    python -m benchmarks.head_roles
    python -m benchmarks.head_roles --write-docs
    python -m benchmarks.head_roles --models bundled:gemma-3-270m --baseline 39ba54f --write-docs
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from benchmarks.report import REPO_ROOT, OtherLoad, benchmark_parser, finish

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


# The child process of --baseline: the earlier code's whole roles view, timed as main() times it, as one JSON line.
_BASELINE_CHILD = """
import json, sys, time
from inspector import load_model
from inspector.analyses import roles, roles_causal
loaded = load_model(sys.argv[1], device="cpu")
roles_causal.head_roles(loaded, repeat=2, batch=2, top_k=1, seeds=2)
started = time.perf_counter()
result = roles_causal.head_roles(loaded)
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "verdicts": [[t.role, bool(t.causal), t.role_rise, t.random_mean]
                                                   for t in result.tests]}))
"""


def _baseline_seconds(ref: str, spec: str) -> dict:
    """The whole roles view of ``spec`` with git ``ref``'s code: {"seconds", "verdicts"} from a child process."""
    with tempfile.TemporaryDirectory(prefix="roles-baseline-") as folder:
        archive = subprocess.run(["git", "archive", ref, "inspector", "kernels"], cwd=REPO_ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": folder}
        done = subprocess.run([sys.executable, "-c", _BASELINE_CHILD, spec], cwd=folder, env=env, check=True,
                              capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--models", nargs="+", default=list(MODELS), help="model specs (default: the three bundled)")
    parser.add_argument("--no-smaller", action="store_true", help="skip the smaller probe's rows (6 × R 16)")
    parser.add_argument("--baseline", metavar="REF", help="also time the whole roles view with git REF's code")
    args = parser.parse_args(argv)

    import torch

    from inspector import load_model
    from inspector.analyses import roles, roles_causal

    loads = [open("/proc/loadavg").read().strip()]
    rows, shapes = [], []
    for spec in args.models:
        loaded = load_model(spec, device="cpu")
        info = loaded.info
        roles_causal.head_roles(loaded, repeat=2, batch=2, top_k=1, seeds=2)  # warm-up: first-call allocations
        _, probe_seconds, _ = _timed(lambda: roles_causal.head_roles(loaded, causal=False))
        result, seconds, cores = _timed(lambda: roles_causal.head_roles(loaded))
        runs = [(result, seconds, probe_seconds, cores, "defaults")]
        if not args.no_smaller:
            small, small_seconds, small_cores = _timed(lambda: roles_causal.head_roles(loaded, **SMALLER))
            runs.append((small, small_seconds, None, small_cores, "smaller probe"))
        if args.baseline:
            earlier = _baseline_seconds(args.baseline, spec)  # other processes' load: the child itself, not shown
            verdicts = ", ".join(f"{role} {'causal' if causal else 'not shown'} ({rise:+.2f} vs {random:+.2f})"
                                 for role, causal, rise, random in earlier["verdicts"])
            rows.append(f"| {info.name} | {info.num_layers}×{info.num_heads} | baseline, git {args.baseline} "
                        f"(defaults): {roles.DEFAULT_BATCH} × {2 * roles.default_repeat(loaded) + 1} | — | "
                        f"{earlier['seconds']:.1f} | — | — | {verdicts} | — |")
            print(rows[-1], file=sys.stderr, flush=True)
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
