"""Ground truth page, first view and cached view (issue 31, item 5), in a real browser: seconds from opening a share
link to the page on a shipped model until its scoreboard is drawn, for the first visitor of a fresh server (every
example scored) and for a second visitor — a new browser context, so a new session — with the same model, seed, size
and k, who gets the scoreboard from ``st.cache_data``.

With ``--warm``, the server has first drawn its front page for another visitor (the app's imports and the bundled
model loaded, as on a server that is already serving a class), and a third figure is the first visitor's own revisit:
from another page back to Ground truth through the menu, in the same session.

Run from the repository root (needs /usr/bin/chromium)::

    python -m benchmarks.groundtruth_cache
    python -m benchmarks.groundtruth_cache --models shipped:deceptive-attention shipped:induction --write-docs
"""

from __future__ import annotations

import os
import sys
import time
import urllib.parse
from pathlib import Path

from benchmarks.live_app import CHROMIUM, CHROMIUM_ARGS, running_app
from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Ground truth page: first and cached view (CPU)"
TARGET_CACHED_S = 2.0
TIMEOUT_MS = 1_200_000
_SCORED = ("[...document.querySelectorAll('[data-testid=\"stCaptionContainer\"]')]"
           ".some(c => c.innerText.includes('examples scored'))")


def _open_scoreboard(page, url: str, spec: str) -> tuple[float, float]:
    """Seconds for ``page`` to open the Ground truth link on ``spec`` and show its scoreboard, and the other
    processes' load meanwhile."""
    link = urllib.parse.urlencode({"v": "1", "model": spec})
    with OtherLoad() as load:
        started = time.perf_counter()
        page.goto(f"{url}/groundtruth?{link}")
        page.wait_for_function(_SCORED, timeout=TIMEOUT_MS)
        seconds = time.perf_counter() - started
    return seconds, load.cores


def _view(browser, url: str, spec: str) -> tuple[float, float]:
    """:func:`_open_scoreboard` in a new session (a new browser context)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        return _open_scoreboard(context.new_page(), url, spec)
    finally:
        context.close()


def _warm(browser, url: str) -> float:
    """Seconds for another visitor's front page (Inspect, the bundled model) to draw: the server's first run."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        started = time.perf_counter()
        page.goto(url)
        page.wait_for_selector("[data-testid='stVegaLiteChart']", timeout=TIMEOUT_MS)
        return time.perf_counter() - started
    finally:
        context.close()


def _first_and_revisit(browser, url: str, spec: str) -> tuple[float, float, float]:
    """The first visitor's seconds to the scoreboard, its revisit's (Inspect, then Ground truth again through the
    menu, the same session), and the other processes' load during the first view."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        first, cores = _open_scoreboard(page, url, spec)
        nav = page.locator("[data-testid='stSidebarNav'] a")
        nav.first.click()  # the menu's first page (Inspect)
        page.wait_for_function(f"!({_SCORED})", timeout=TIMEOUT_MS)
        page.wait_for_selector("[data-testid='stVegaLiteChart']", timeout=TIMEOUT_MS)
        started = time.perf_counter()
        page.locator("[data-testid='stSidebarNav'] a[href*='groundtruth']").click()
        page.wait_for_function(_SCORED, timeout=TIMEOUT_MS)
        return first, time.perf_counter() - started, cores
    finally:
        context.close()


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--models", nargs="+", default=["shipped:deceptive-attention", "shipped:induction"])
    parser.add_argument("--warm", action="store_true",
                        help="draw another visitor's front page first, and time the first visitor's revisit too")
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for spec in args.models:
                with running_app(timeout_s=300) as url:  # a fresh server: an empty cache
                    warm = _warm(browser, url) if args.warm else None
                    if args.warm:
                        first, revisit, first_load = _first_and_revisit(browser, url, spec)
                    else:
                        (first, first_load), revisit = _view(browser, url, spec), None
                    cached, cached_load = _view(browser, url, spec)
                shown_revisit = "—" if revisit is None else f"{revisit:.2f} s"
                shown_warm = "—" if warm is None else f"{warm:.1f} s"
                rows.append(f"| `{spec}` | 100 | {shown_warm} | {first:.1f} s ({first_load:.2f}) | {shown_revisit} | "
                            f"{cached:.2f} s ({cached_load:.2f}) | {'yes' if cached < TARGET_CACHED_S else 'no'} |")
                print(f"  {spec}: warm-up {shown_warm}, first {first:.1f} s, revisit {shown_revisit}, "
                      f"cached {cached:.2f} s", file=sys.stderr, flush=True)
        finally:
            browser.close()
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    table = "\n".join(["| model | examples | server's front page first (warm-up) | first visitor (other load, CPUs) "
                       "| its revisit, same session | second visitor, new session, cached (other load) "
                       f"| cached < {TARGET_CACHED_S:.0f} s |", "|---|---:|---:|---:|---:|---:|---|", *rows])
    notes = [
        "- Each: a fresh `streamlit run app.py`, then headless Chromium opens `/groundtruth?model=…` (the page's "
        "defaults: 100 fresh examples, top-3) and waits for the scoreboard's status line; the second visitor is a "
        "new browser context on the same server, whose `cached_example` and `cached_scoreboard` are hits of "
        "`st.cache_data` (32 entries, 1 h). The first visitor's time includes loading the model in the server; with "
        "`--warm`, another visitor's front page was drawn first (the server's imports and first run not counted), and "
        "the revisit is the first visitor going to Inspect and back to Ground truth through the menu.",
        f"- OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; /proc/loadavg after the run: {load}.",
    ]
    finish(args.write_docs, SECTION_TITLE, "How long the Ground truth page takes to show its scoreboard for the "
           "first visitor, and for the next one who asks for the same.", module="benchmarks.groundtruth_cache",
           argv=argv, shapes=f"{', '.join(args.models)}; 100 fresh examples, top-3", table=table, notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
