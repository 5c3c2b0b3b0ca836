"""A walkthrough of every page of the app (issue 17): a full-page screenshot of each page at each window width in
each language, from a real ``streamlit run app.py`` server in headless Chromium, and an index of what was drawn —
how many charts, and the chart-layout problems tests/test_chart_layout.py measures (a plot of size zero, a title
or legend outside the chart, a label cut short, labels on top of each other).

Each page is opened the way the layout test opens it (:func:`tests.test_chart_layout.open_case`: a share link
with ``lang``, the canvas switch turned off so every chart is measurable SVG, every collapsed section opened, the
Ground truth page on the shipped deceptive-attention model with its smallest example count) and measured with the
same code, behind every tab. The screenshot shows the page as it first opens (first tab of each group).

Run from the repository root (needs /usr/bin/chromium and Playwright)::

    python -m benchmarks.walkthrough --out /tmp/walkthrough
    python -m benchmarks.walkthrough --out /tmp/walkthrough --pages heads compare --widths 1000 --langs zh
    python -m benchmarks.walkthrough --out /tmp/walkthrough --models default bundled:gemma-3-270m bundled:smollm2-135m

Writes ``OUT/PAGE[-MODEL]-WIDTH-LANG.png`` and ``OUT/index.md``. A page that answers the model with its refusal
(Generate and Mechanism on an encoder: "pick a decoder") is counted as refused, as expected, not as failed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchmarks.live_app import CHROMIUM, CHROMIUM_ARGS, AppServerError, running_app
from inspector.output.share import PAGES as SHARE_PAGES

# Page name (its url_path in the page registry, inspector.output.pages) -> the path of its share link (the home
# page, Inspect, is at "/") and the link fields it needs besides the language and the model. Every registered page
# is walked, so a new page is in the walkthrough the day it is registered.
SPECIAL_FIELDS = {"groundtruth": {"model": "shipped:deceptive-attention"}}  # its own model: --models does not apply
PAGES = {name: ("" if name == SHARE_PAGES[0] else name, SPECIAL_FIELDS.get(name, {})) for name in SHARE_PAGES}
MODELS = ("default",)
WIDTHS = (1400, 1000)
LANGS = ("en", "zh")
VIEWPORT_HEIGHT = 1000
# Chromium draws a screenshot as one surface; past this height the picture is cut (and is too tall to read).
MAX_SHOT_HEIGHT = 16_000

# The app scrolls inside its own container, not the document, so a full-page screenshot of the document would
# show the first screen only. The height the window needs to show everything at once: the window's height plus
# whatever the tallest scrolling element still hides.
CONTENT_HEIGHT_JS = """() => {
  let hidden = 0;
  for (const el of document.querySelectorAll('*')) {
    const style = getComputedStyle(el);
    if (['auto', 'scroll'].includes(style.overflowY) && el.scrollHeight > el.clientHeight) {
      hidden = Math.max(hidden, el.scrollHeight - el.clientHeight);
    }
  }
  return Math.ceil(window.innerHeight + hidden);
}"""
EXCEPTIONS_JS = """() => [...document.querySelectorAll('[data-testid="stException"]')]
                       .map(el => el.innerText.split('\\n')[0].slice(0, 200))"""


# Pages that open on no chart (the Lecture path draws its slide only when asked): opened without the layout test's
# wait for a chart — until the app's script has stopped and the page's title is drawn.
CHARTLESS_PAGES = {"lecture"}
SCRIPT_STOPPED_JS = """() => document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state')
                       === 'notRunning' && document.querySelector('[data-testid="stMain"] h1') !== null"""


# Pages that may answer the model with a refusal instead of charts (an encoder on a page that explains next-token
# predictions); the refusal is the page's keyed "pick a decoder" box.
REFUSING_PAGES = {"generate", "mechanism"}
REFUSAL = ".st-key-pick_decoder"
REFUSED_OR_DRAWING_JS = f"""() => document.querySelector('{REFUSAL}') !== null
  || document.querySelector('[data-testid="stVegaLiteChart"]') !== null || ({SCRIPT_STOPPED_JS})()"""


def open_chartless(browser, app_url: str, path: str, fields: dict, width: int):
    """Open a page that draws no chart on arrival: (context, page) once its script has stopped."""
    import urllib.parse

    context = browser.new_context(viewport={"width": width, "height": VIEWPORT_HEIGHT})
    page = context.new_page()
    page.goto(f"{app_url}/{path}?" + urllib.parse.urlencode({"v": "1", **fields}))
    page.wait_for_function(SCRIPT_STOPPED_JS, timeout=120_000)
    page.wait_for_timeout(1000)  # the last elements mount after the script stops
    return context, page


def open_if_refused(browser, app_url: str, path: str, fields: dict, width: int):
    """Open a page of :data:`REFUSING_PAGES`: (context, page) once its script has stopped when it refused the model,
    else None (its context closed) — the page runs on this model, and is opened as the layout test opens it."""
    import urllib.parse

    context = browser.new_context(viewport={"width": width, "height": VIEWPORT_HEIGHT})
    page = context.new_page()
    page.goto(f"{app_url}/{path}?" + urllib.parse.urlencode({"v": "1", **fields}))
    page.wait_for_function(REFUSED_OR_DRAWING_JS, timeout=120_000)
    if page.locator(REFUSAL).count() == 0:
        context.close()
        return None
    page.wait_for_function(SCRIPT_STOPPED_JS, timeout=120_000)
    page.wait_for_timeout(1000)  # the last elements mount after the script stops
    return context, page


class WalkthroughError(RuntimeError):
    """Something the walkthrough needs is missing: Chromium, Playwright or a server that starts."""


def full_page_screenshot(page, path: Path) -> int:
    """Grow the window to the page's whole height, take the picture, and put the window back; its height."""
    width = page.viewport_size["width"]
    height = min(max(VIEWPORT_HEIGHT, page.evaluate(CONTENT_HEIGHT_JS)), MAX_SHOT_HEIGHT)
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_timeout(800)  # the sidebar and the charts' containers follow the new height
    try:
        page.screenshot(path=str(path), full_page=True)
    finally:
        page.set_viewport_size({"width": width, "height": VIEWPORT_HEIGHT})
        page.wait_for_timeout(500)
    return height


def walk_one(browser, app_url: str, page_name: str, width: int, lang: str, out: Path, model: str = "default") -> dict:
    """Open one page on ``model``, screenshot it, measure its charts behind every tab; what index.md says about it."""
    from tests.test_chart_layout import chart_problems, measure_every_tab, open_case

    path, fields = PAGES[page_name]
    fields = fields if "model" in fields or model == "default" else {**fields, "model": model}
    tag = "" if model == "default" else "-" + model.split(":")[-1]
    file = out / f"{page_name}{tag}-{width}-{lang}.png"
    row = {"file": file.name, "page": page_name, "width": width, "lang": lang, "charts": 0, "problems": [],
           "exceptions": [], "error": None, "height": None, "refused": False}
    context = page = None
    opened_before = set(browser.contexts)
    try:
        refused = open_if_refused(browser, app_url, path, {**fields, "lang": lang}, width) \
            if page_name in REFUSING_PAGES else None
        if refused is not None:
            (context, page), row["refused"] = refused, True
        elif page_name in CHARTLESS_PAGES:
            context, page = open_chartless(browser, app_url, path, {**fields, "lang": lang}, width)
        else:
            context, page = open_case(browser, app_url, path, {**fields, "lang": lang}, width)
    except Exception as err:  # noqa: BLE001 — a page that never settles is a finding, not the end of the walk
        row["error"] = f"did not settle: {str(err).splitlines()[0]}"
        # open_case leaves its context open when it fails: picture what the page shows, then close it.
        context = next((c for c in browser.contexts if c not in opened_before), None)
        page = context.pages[0] if context is not None and context.pages else None
    try:
        if page is None:
            return row
        row["exceptions"] = page.evaluate(EXCEPTIONS_JS)
        row["height"] = full_page_screenshot(page, file)
        if row["refused"]:
            return row
        charts = measure_every_tab(page)
        row["charts"] = len(charts)
        row["problems"] = [problem for chart in charts for problem in chart_problems(chart)]
    except Exception as err:  # noqa: BLE001
        row["error"] = (row["error"] or "") + f" {type(err).__name__}: {str(err).splitlines()[0]}"
    finally:
        if context is not None:
            context.close()
    return row


def write_index(out: Path, rows: list[dict], argv_shown: str) -> Path:
    lines = ["# App walkthrough", "",
             f"`python -m benchmarks.walkthrough {argv_shown}` — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
             f"window {VIEWPORT_HEIGHT} px high; every collapsed section opened; screenshots of the whole page "
             "(first tab of each group); charts measured behind every tab with tests/test_chart_layout.py's "
             "measurement.", "",
             "| file | page | width | lang | charts drawn | layout problems | exceptions | error |",
             "|---|---|---:|---|---:|---:|---:|---|"]
    for row in rows:
        note = row["error"] or ("refused, as expected: pick a decoder" if row.get("refused") else "")
        lines.append(f"| [{row['file']}]({row['file']}) | {row['page']} | {row['width']} | {row['lang']} "
                     f"| {row['charts']} | {len(row['problems'])} | {len(row['exceptions'])} | {note} |")
    for row in rows:
        if row["problems"] or row["exceptions"] or row["error"]:
            lines += ["", f"## {row['file']}", ""]
            lines += [f"- error: {row['error']}"] if row["error"] else []
            lines += [f"- exception shown: {text}" for text in row["exceptions"]]
            lines += [f"- {problem}" for problem in row["problems"]]
    index = out / "index.md"
    index.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder for the screenshots and index.md")
    parser.add_argument("--pages", nargs="+", choices=list(PAGES), default=list(PAGES),
                        help="pages to open (default: all)")
    parser.add_argument("--widths", nargs="+", type=int, default=list(WIDTHS),
                        help=f"window widths in px (default: {' '.join(map(str, WIDTHS))})")
    parser.add_argument("--langs", nargs="+", choices=list(LANGS), default=list(LANGS),
                        help="languages (default: en zh)")
    parser.add_argument("--models", nargs="+", default=list(MODELS),
                        help="models to open each page on, as a share link names them (default: default); "
                             "e.g. default bundled:gemma-3-270m bundled:smollm2-135m")
    args = parser.parse_args(argv)
    if any(width < 320 for width in args.widths):
        parser.error("--widths must be at least 320 px (narrower than any phone)")
    try:
        rows = walk(args)
    except WalkthroughError as err:
        print(f"walkthrough: {err}", file=sys.stderr)
        return 2
    shown = " ".join(sys.argv[1:] if argv is None else argv)
    index = write_index(args.out, rows, shown)
    failed = [row["file"] for row in rows if row["error"]]
    refused = sum(row["refused"] for row in rows)
    problems = sum(len(row["problems"]) for row in rows)
    print(f"{len(rows)} pages, {problems} chart-layout problems, {len(failed)} pages failed, {refused} refused the "
          f"model as expected (pick a decoder); index: {index}")
    if failed:
        print(f"walkthrough: these pages could not be walked through: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def walk(args) -> list[dict]:
    if not CHROMIUM.exists():
        raise WalkthroughError(f"{CHROMIUM} is missing: install it with `apt-get install chromium`")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as err:
        raise WalkthroughError("the Python package playwright is not installed: pip install playwright "
                               "(the browser itself is the system Chromium, no `playwright install` needed)") from err
    args.out.mkdir(parents=True, exist_ok=True)
    cases = [(page, width, lang, model) for model in args.models for page in args.pages for width in args.widths
             for lang in args.langs if not (model != args.models[0] and "model" in PAGES[page][1])]
    rows = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            with running_app() as app_url:
                print(f"server at {app_url}; {len(cases)} screenshots into {args.out}", flush=True)
                for number, (page, width, lang, model) in enumerate(cases, 1):
                    started = time.monotonic()
                    row = walk_one(browser, app_url, page, width, lang, args.out, model)
                    rows.append(row)
                    status = row["error"] or ("refused, as expected: pick a decoder" if row["refused"] else
                                              f"{row['charts']} charts, {len(row['problems'])} layout problems, "
                                              f"{len(row['exceptions'])} exceptions, {row['height']} px high")
                    print(f"[{number}/{len(cases)}] {row['file']}: {status} ({time.monotonic() - started:.0f} s)",
                          flush=True)
        except AppServerError as err:
            raise WalkthroughError(f"the app server did not start: {err}") from err
        finally:
            browser.close()
    return rows


if __name__ == "__main__":
    sys.exit(main())
