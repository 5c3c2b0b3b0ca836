"""Streamlit's file watcher against a slow page: the Ground truth page's default scoreboard (100 fresh examples,
every method) in a real ``streamlit run`` server and headless Chromium, with the watcher on and off.

Streamlit watches the source file of every module the app imports from inside the app's folder — with the
project's ``.venv`` inside the checkout, that is torch, transformers and the rest. This measures what that costs
a long computation, side by side in one run: ``--server.fileWatcherType auto`` (Streamlit's default; watchdog
is installed) against ``none`` (what ``.streamlit/config.toml`` sets).

Run from the repository root (needs /usr/bin/chromium)::

    python -m benchmarks.file_watcher
    python -m benchmarks.file_watcher --runs 2 --write-docs
"""

from __future__ import annotations

import re
import statistics
import sys
import time
import urllib.parse

from benchmarks.live_app import CHROMIUM, CHROMIUM_ARGS, running_app
from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Streamlit file watcher and a long page (CPU)"
MODES = ("auto", "none")
TIMEOUT_MS = 300_000
_COMPUTE = re.compile(r"examples scored with \d+ methods \(([\d.]+) s of compute")


def scoreboard_seconds(browser, watcher: str) -> tuple[float, float]:
    """A fresh server with ``watcher``; opens the deceptive model's Ground truth page and returns (the page's own
    compute seconds for the scoreboard, browser seconds from opening the link until the status line says so)."""
    with running_app(timeout_s=120, options=["--server.fileWatcherType", watcher]) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            page = context.new_page()
            link = urllib.parse.urlencode({"v": "1", "model": "shipped:deceptive-attention"})
            started = time.perf_counter()
            page.goto(f"{url}/groundtruth?{link}")
            status = page.get_by_text("examples scored with", exact=False)
            status.wait_for(timeout=TIMEOUT_MS)
            wall = time.perf_counter() - started
            match = _COMPUTE.search(status.inner_text())
            if match is None:
                raise RuntimeError(f"unexpected status line: {status.inner_text()!r}")
            return float(match.group(1)), wall
        finally:
            context.close()


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--runs", type=int, default=1, help="fresh servers per watcher setting (default: 1)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if not CHROMIUM.exists():
        parser.error(f"{CHROMIUM} is missing: apt-get install chromium")

    from playwright.sync_api import sync_playwright

    results: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
    loads: dict[str, float] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for mode in MODES:
                with OtherLoad() as load:
                    for _ in range(args.runs):
                        results[mode].append(scoreboard_seconds(browser, mode))
                        print(f"  watcher {mode}: {results[mode][-1][0]:.1f} s of compute", file=sys.stderr,
                              flush=True)
                loads[mode] = load.cores
        finally:
            browser.close()

    lines = ["| `server.fileWatcherType` | scoreboard compute, median (min–max) s | link → status line, median s "
             "| other processes' load (CPUs) |", "|---|---:|---:|---:|"]
    for mode in MODES:
        compute = [c for c, _ in results[mode]]
        wall = [w for _, w in results[mode]]
        lines.append(f"| `{mode}`{' (Streamlit default)' if mode == 'auto' else ' (.streamlit/config.toml)'} | "
                     f"{statistics.median(compute):.1f} ({min(compute):.1f}–{max(compute):.1f}) | "
                     f"{statistics.median(wall):.1f} | {loads[mode]:.2f} |")
    table = "\n".join(lines)
    notes = [
        "- Scoreboard compute: the page's own `time.perf_counter` around `inspector.analyses.groundtruth.scoreboard` "
        "(100 fresh examples of the planted-token task, 9 methods each), printed in its status line; a fresh server "
        "per run, so nothing is cached. Link → status line: browser wall time, including the page's first example.",
        "- torch runs with its default 2 intra-op threads in the server. Other processes' load: CPUs kept busy by "
        "processes other than this one (the server and Chromium are other processes here).",
    ]
    finish(args.write_docs, SECTION_TITLE,
           "What Streamlit's file watcher costs a long page, measured with it on and off.",
           module="benchmarks.file_watcher", argv=argv,
           shapes="shipped:deceptive-attention (BERT, 2 layers × 4 heads, hidden 64), 100 examples of "
                  "about 15 tokens, viewport 1400×1000, Chromium headless", table=table, notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
