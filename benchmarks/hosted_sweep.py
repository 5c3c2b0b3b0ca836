"""The hosted option sweep on every bundled model (issue 45, Done when): the hosted server's peak resident memory and
its longest run while every numeric option of every page is driven to its widget's extremes and beyond, through the
widget and through share links (:mod:`benchmarks.option_sweep`).

Both parts run against hosted servers (``INSPECTOR_HOSTED=1``, the deadline ``--deadline``): the AppTest sweep in a
child process, the share links in ``streamlit run`` driven by headless Chromium. A run is one job under the deadline;
its allowance is the deadline plus one layer's time (a forward at the longest Heads text the server allows, divided
by the layers). The planned memory is :func:`inspector.serving.option_plan.server_budget_bytes` over each server's
warm memory (its models loaded, every page drawn once).

Run from the repository root (needs /usr/bin/chromium; a busy 2-core machine takes tens of minutes)::

    python -m benchmarks.hosted_sweep --write-docs
"""

from __future__ import annotations

import os
import sys

from benchmarks.live_app import CHROMIUM, CHROMIUM_ARGS
from benchmarks.option_sweep import DEFAULT_MODEL, TASK_MODEL, sweep
from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Hosted option sweep (issue 45)"
MODELS = [DEFAULT_MODEL, "bundled:smollm2-135m", "bundled:gemma-3-270m"]


def _table(result, budget_mib: dict[str, float]) -> list[str]:
    lines = ["| server | warm RSS, MiB | peak RSS, MiB | planned budget, MiB |", "|---|---:|---:|---:|"]
    for server, (warm, peak) in result.memory.items():
        lines.append(f"| {server} | {warm:,.0f} | {peak:,.0f} | {budget_mib[server]:,.0f} |")
    lines += ["", "| model | one layer, s | runs | longest run, s | page runs | slowest page run, s "
              "| exception boxes |", "|---|---:|---:|---:|---:|---:|---:|"]
    for model in result.layer_s:
        rows = [row for row in result.rows if row.model == model]
        runs = [seconds for row in rows for _, seconds, _ in row.runs]
        lines.append(f"| {model} | {result.layer_s[model]:.3f} | {len(runs)} | {max(runs, default=0):.1f} "
                     f"| {len(rows)} | {max((row.seconds for row in rows), default=0):.1f} "
                     f"| {sum(bool(row.exceptions) for row in rows)} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    from inspector.serving.hosting import HostingPolicy
    from inspector.serving.option_plan import server_budget_bytes

    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--deadline", type=float, default=60.0, help="the hosted deadline, seconds (default 60)")
    parser.add_argument("--models", nargs="+", default=MODELS)
    args = parser.parse_args(argv)
    load = os.getloadavg()
    with OtherLoad() as other, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            result = sweep(args.models, args.deadline, browser=browser)
        finally:
            browser.close()
    policy = HostingPolicy(hosted=True, deadline_s=args.deadline)
    budget_mib = {server: server_budget_bytes(int(warm * 2**20), policy) / 2**20
                  for server, (warm, _) in result.memory.items()}
    longest, what = result.longest()
    over = [row for row in result.rows for _, seconds, _ in row.runs
            if seconds > args.deadline + result.layer_s[row.model]]
    exceptions = [row for row in result.rows if row.exceptions]
    summary = (f"Under the sweep ({len(result.rows)} page runs) the hosted server peaked at {result.peak_mib:,.0f} MiB "
               f"and its longest run took {longest:.1f} s against a {args.deadline:g} s deadline ({what}); "
               f"{len(over)} runs past the deadline plus one layer, {len(exceptions)} exception boxes, "
               f"{len(result.unknown)} undeclared numeric widgets.")
    notes = [f"- Load average when started: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; other processes used "
             f"{other.cores:.2f} cores on average during the run (the servers and Chromium this benchmark starts "
             "included; a 2-core machine shared with other engineers' jobs: times are loaded).",
             "- A run: one job under the deadline (the block of `inspector.serving.run.holding`), from entering it to "
             "leaving it. A page run: one rerun of a page, everything it drew included.",
             f"- Ground truth's options ran on {TASK_MODEL}, the decoder-only pages' on each decoder, the others' on "
             "MiniLM; every page was opened on every model. Peak RSS: psutil, the server process and its children, "
             "every 0.2 s.",
             *(f"- Past the allowance: {row.page}, {row.model}, {row.option} = {row.value}: {row.runs}"
               for row in over),
             *(f"- Exception box: {row.page}, {row.model}, {row.option} = {row.value}: {row.exceptions[0][:160]}"
               for row in exceptions),
             *(f"- Undeclared numeric widget: {key}" for key in result.unknown)]
    finish(args.write_docs, SECTION_TITLE, summary, module="benchmarks.hosted_sweep", argv=argv,
           shapes=f"{', '.join(args.models)} and {TASK_MODEL}; the deadline {args.deadline:g} s",
           table="\n".join(_table(result, budget_mib)), notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
