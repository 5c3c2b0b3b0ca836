"""The Heads and Attribution pages on the bundled decoders (issue 44, item 6): time to the first result and time to
the finished page, for the page's default example sentence, on CPU.

For each bundled decoder (Gemma 3 270M, SmolLM2-135M-Instruct) this times the library calls each page makes, in the
page's order, with the page's defaults:

- **Heads**: :func:`inspector.analyses.heads.head_first_look` (the statistics the page draws first), then
  :func:`~inspector.analyses.heads.head_report` (zero ablation, torch backend) — first result = the first look, finish
  = both; the report's progress calls are counted (a single text's bar moved only twice before issue 44);
- **Attribution**: :func:`inspector.analyses.attribution.attribute` with
  :func:`~inspector.analyses.attribution.first_look_settings` (the methods the page draws first), then with the page's
  settings (last layer, mean over heads, the model's first removal mode, 16 integrated-gradients steps).

Code that has no first look (``--baseline REF``: the ``inspector/`` and ``kernels/`` of git ``REF`` from ``git
archive``) drew nothing before the whole call was done: its first result is its finish. Both sides run in child
processes with one harness (:data:`_CHILD`), each model loaded and warmed up on a short text first (not timed), so the
before/after rows of one run are measured alike; the rows also give the largest difference between the two sides'
numbers (head importances, pruning curve, every attribution method's scores).

Run from the repository root::

    python -m benchmarks.decoder_pages
    python -m benchmarks.decoder_pages --baseline 2229c72 --write-docs
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from benchmarks.report import REPO_ROOT, benchmark_parser, finish

SECTION_TITLE = "Heads and Attribution pages on the bundled decoders (CPU)"
MODELS = ("bundled:gemma-3-270m", "bundled:smollm2-135m")
FIRST_TARGET_SECONDS, FINISH_TARGET_SECONDS = 10.0, 30.0

# One harness for both sides: argv = spec. Prints one JSON line: seconds per stage, progress calls, and numbers.
_CHILD = """
import json, sys, time
from dataclasses import replace
import torch
from inspector import load_model
from inspector.analyses import attribution, heads
from inspector.base.examples import EXAMPLES
from benchmarks.report import OtherLoad

spec = sys.argv[1]
text = EXAMPLES[0].text
loaded = load_model(spec, device="cpu")
info = loaded.info
mode = next(iter(attribution.removal_modes(loaded)))
settings = attribution.AttributionSettings(layer=info.num_layers - 1, head=None, query=None, removal=mode, ig_steps=16)
first_look = getattr(heads, "head_first_look", None)
cut = getattr(attribution, "first_look_settings", None)
warm = "Hello there, world."
heads.head_report(loaded, warm)
attribution.attribute(loaded, warm, settings=settings)
out = {"tokens": int(loaded.tokenizer(text, return_tensors="pt")["input_ids"].shape[1]),
       "threads": torch.get_num_threads()}
calls = []
with OtherLoad() as load:
    started = time.perf_counter()
    if first_look is not None:
        first_look(loaded, text)
    out["heads_first"] = time.perf_counter() - started
    report = heads.head_report(loaded, text, progress=lambda done, total, note: calls.append(
        (time.perf_counter() - started, done / total)))
    out["heads_finish"] = time.perf_counter() - started
    if first_look is None:
        out["heads_first"] = out["heads_finish"]
    started = time.perf_counter()
    if cut is not None:
        attribution.attribute(loaded, text, settings=cut(settings))
    out["attribution_first"] = time.perf_counter() - started
    fractions = []
    full = attribution.attribute(loaded, text, settings=settings,
                                 progress=lambda done, total, note: fractions.append(done / total))
    out["attribution_finish"] = time.perf_counter() - started
    if cut is None:
        out["attribution_first"] = out["attribution_finish"]
out["other_load"] = load.cores
out["heads_calls"] = len(calls)
out["heads_first_call"] = calls[0][0] if calls else None
out["attribution_calls"] = len(fractions)
out["timings"] = {"heads": report.timings, "attribution": full.timings}
out["numbers"] = {"importance_ablation": report.statistics.importance_ablation.ravel().tolist(),
                  "gradient_raw": report.statistics.gradient_raw.ravel().tolist(),
                  "pruning": report.pruning.change.tolist(), "pairs": report.pairs.change_both.tolist(),
                  "entropy": report.statistics.entropy.ravel().tolist(),
                  **{f"attribution:{name}": [float(x) for x in values] for name, values in full.scores.items()}}
print(json.dumps(out))
"""


def _run_child(spec: str, folder: str) -> dict:
    """The harness in a child process with ``folder`` first on the path (its ``inspector/`` and ``kernels/``),
    the benchmarks package from this checkout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([folder, str(REPO_ROOT)])}
    done = subprocess.run([sys.executable, "-c", _CHILD, spec], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{spec} in {folder}: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _baseline(ref: str, spec: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="decoder-pages-baseline-") as folder:
        archive = subprocess.run(["git", "archive", ref, "inspector", "kernels", "assets"], cwd=REPO_ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        return _run_child(spec, folder)


def _largest_difference(before: dict, after: dict) -> str:
    """The largest |Δ| over every number both sides report (NaN in both counts as equal)."""
    worst = 0.0
    for name, values in before["numbers"].items():
        if name not in after["numbers"]:
            continue
        a, b = np.asarray(values, dtype=float), np.asarray(after["numbers"][name], dtype=float)
        if a.shape != b.shape:
            return f"{name}: shapes differ"
        both_nan = np.isnan(a) & np.isnan(b)
        worst = max(worst, float(np.max(np.where(both_nan, 0.0, np.abs(a - b)), initial=0.0)))
    return f"{worst:.2g}"


def _row(spec: str, label: str, result: dict, difference: str) -> str:
    first_call = "—" if result["heads_first_call"] is None else f"{result['heads_first_call']:.1f}"
    return (f"| {spec} | {label} | {result['tokens']} | **{result['heads_first']:.1f}** "
            f"| **{result['heads_finish']:.1f}** | {result['heads_calls']} (first at {first_call} s) "
            f"| **{result['attribution_first']:.1f}** "
            f"| **{result['attribution_finish']:.1f}** | {result['attribution_calls']} | {difference} "
            f"| {result['other_load']:.2f} |")


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--models", nargs="+", default=list(MODELS), help="model specs (default: the bundled decoders)")
    parser.add_argument("--baseline", metavar="REF", help="also time git REF's code, in the same run")
    args = parser.parse_args(argv)

    loads = [open("/proc/loadavg").read().strip()]
    rows, raw = [], {}
    for spec in args.models:
        after = _run_child(spec, str(REPO_ROOT))
        raw[spec] = {"after": after}
        if args.baseline:
            before = _baseline(args.baseline, spec)
            raw[spec]["before"] = before
            rows.append(_row(spec, f"before (git {args.baseline})", before, "—"))
            print(rows[-1], file=sys.stderr, flush=True)
        rows.append(_row(spec, "after", after, _largest_difference(raw[spec]["before"], after)
                         if args.baseline else "—"))
        print(rows[-1], file=sys.stderr, flush=True)
        for side, result in raw[spec].items():  # where the time goes: the reports' own stage timings
            print(f"{spec} {side}: " + json.dumps({page: {k: round(v, 2) for k, v in stages.items()}
                                                   for page, stages in result["timings"].items()}), file=sys.stderr)
        loads.append(open("/proc/loadavg").read().strip())
    table = "\n".join([
        "| model | code | tokens | Heads: first result, s | Heads: finished, s | Heads: progress calls | Attribution: "
        "first result, s | Attribution: finished, s | Attribution: progress calls | largest \\|Δ\\| vs before "
        "| other processes' load (CPUs) |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|",
        *rows,
    ])
    notes = [
        f"- Targets (issue 44): first result within {FIRST_TARGET_SECONDS:g} s and finished within "
        f"{FINISH_TARGET_SECONDS:g} s on the idle machine, for each page on each bundled decoder.",
        "- Text: the page's default example (`assets/examples/01-animal-street.txt`); tokens include the model's "
        "<bos>. Each side runs in its own child process, model loaded and warmed up on a short text first (not "
        "timed). Heads = `head_first_look` then `head_report` (zero ablation); Attribution = `attribute` with "
        "`first_look_settings` then with the page's settings. Code without a first look: first result = finished.",
        "- Largest |Δ|: over the head importances (ablation, raw gradient), entropy, pairs, pruning curve and every "
        "attribution method's scores, before against after.",
        f"- `/proc/loadavg` at the start and after each model: {' → '.join(loads)}. Other processes' load: CPUs other "
        "processes kept busy during the timed calls (`/proc/stat`); the machine is shared, so these figures are "
        "contended unless that column is near 0.",
    ]
    finish(args.write_docs, SECTION_TITLE, "Time to the first result and to the finished page, Heads and Attribution, "
           "bundled decoders.", module="benchmarks.decoder_pages", argv=argv,
           shapes="; ".join(f"{spec}: the default example sentence" for spec in args.models), table=table, notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
