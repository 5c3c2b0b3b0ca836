"""Time from ``streamlit run app.py`` to the first chart drawn in headless Chromium, with a bundled decoder selected
by the link (issue 27), beside the same for the default model (MiniLM) in the same run. One fresh server per model:
the clock starts before the server process does; "healthy" is its ``/_stcore/health``; "first chart" is the first
Vega chart drawn (an ``svg.marks`` or ``canvas``), "all charts" the Inspect page's four.

Run from the repository root (needs /usr/bin/chromium and Playwright; the decoders prepared)::

    python -m benchmarks.decoder_first_chart --models default bundled:gemma-3-270m

Prints one line per model and the machine's load averages before and after.
"""

from __future__ import annotations

import argparse
import os
import time
import urllib.parse

from benchmarks.live_app import CHART, CHART_DRAWN, CHROMIUM, CHROMIUM_ARGS, running_app

TIMEOUT_MS = 600_000


def first_chart(model: str) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    started = time.perf_counter()
    with running_app(timeout_s=600) as url, sync_playwright() as playwright:
        healthy = time.perf_counter() - started
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS))
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/?{urllib.parse.urlencode({'model': model})}", timeout=TIMEOUT_MS, wait_until="commit")
        page.wait_for_selector(CHART_DRAWN, timeout=TIMEOUT_MS)
        first = time.perf_counter() - started
        page.wait_for_function(f"document.querySelectorAll('{CHART}').length === 4", timeout=TIMEOUT_MS)
        every = time.perf_counter() - started
        browser.close()
    return {"healthy": healthy, "first": first, "all": every}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["default", "bundled:gemma-3-270m"])
    args = parser.parse_args()
    print(f"load averages before: {os.getloadavg()}")
    for model in args.models:
        times = first_chart(model)
        print(f"{model}: server healthy {times['healthy']:.1f} s, first chart {times['first']:.1f} s, "
              f"all four Inspect charts {times['all']:.1f} s")
    print(f"load averages after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
