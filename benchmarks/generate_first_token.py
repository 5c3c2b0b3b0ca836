"""The Generate page's first token (issue 28's target: within 2 s of pressing Generate once the model is loaded),
measured in headless Chromium against a real ``streamlit run app.py`` server.

For each bundled decoder: open ``/generate`` with the model and a short prompt and wait until the run has finished
and its six charts are drawn (the model is then loaded and warm), then, ``--repeats`` times, press *Generate again*
and time from the click to the first streamed token on screen (the progress line "Token 1 of N" appears with it,
in the same step); the next click waits until that run has ended (its Stop button gone, its charts drawn). The
page's own "First token after" figure (server side, from the start of the run) is read after each run.
Run: ``python -m benchmarks.generate_first_token``. Never collected by pytest.
"""

from __future__ import annotations

import argparse
import time
import urllib.parse

from benchmarks.live_app import CHROMIUM, CHROMIUM_ARGS, running_app

MODELS = ("bundled:smollm2-135m", "bundled:gemma-3-270m")
PROMPT = "The history of the printing press begins in the fifteenth century, when"
CHART_DRAWN = '[data-testid="stVegaLiteChart"] svg.marks'


def first_tokens(page, url: str, model: str, new: int, repeats: int) -> list[tuple[float, str]]:
    link = urllib.parse.urlencode({"v": "1", "model": model, "new": str(new), "text": PROMPT})
    page.goto(f"{url}/generate?{link}")
    page.wait_for_function(f"document.querySelectorAll('{CHART_DRAWN}').length >= 6", timeout=600_000)
    main = page.locator('[data-testid="stMain"]')
    times = []
    for _ in range(repeats):
        again = main.get_by_role("button", name="Generate again")
        again.wait_for(timeout=300_000)
        started = time.perf_counter()
        again.click()
        page.wait_for_function("document.body.innerText.includes('Token 1 of')", timeout=300_000, polling=10)
        clicked_to_token = time.perf_counter() - started
        # The run ends when its Stop button goes; then the results (and this run's own figure) are drawn anew.
        main.get_by_role("button", name="Stop").wait_for(state="detached", timeout=300_000)
        page.wait_for_function(f"document.querySelectorAll('{CHART_DRAWN}').length >= 6", timeout=300_000)
        time.sleep(1.0)  # the rerun's last elements replace the previous run's
        shown = main.locator('[data-testid="stMetric"]', has_text="First token after").inner_text()
        times.append((clicked_to_token, shown.split("\n")[-1].strip()))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with open("/proc/loadavg") as load:
        print(f"load average before: {load.read().strip()}", flush=True)
    with running_app() as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            for model in args.models.split(","):
                for seconds, shown in first_tokens(page, url, model, args.new_tokens, args.repeats):
                    print(f"{model:22s} click → first token on screen {seconds:5.2f} s   page's figure {shown}",
                          flush=True)
        finally:
            browser.close()
    with open("/proc/loadavg") as load:
        print(f"load average after: {load.read().strip()}", flush=True)


if __name__ == "__main__":
    main()
