"""Size and drawing time of bertviz's offline views, the figures behind the limits in
:mod:`inspector.charts.bertviz` (``HEAD_VIEW_MAX_TOKENS``, ``MODEL_VIEW_MAX_TOKENS``, ``MAX_LINES_DRAWN_AT_ONCE``).

For each (view, tokens) the bundled model captures a text of exactly that many tokens with every layer's
weights; the view is built for as many layers as its limits allow (all, when they fit), and headless
Chromium draws it with every request refused: time from ``set_content`` until every SVG line is drawn.

Run from the repository root (needs /usr/bin/chromium)::

    python -m benchmarks.bertviz_views
    python -m benchmarks.bertviz_views --tokens 16 40 64 100 --write-docs
"""

from __future__ import annotations

import statistics
import sys
import time

from benchmarks.inspect_latency import text_of_length
from benchmarks.live_app import CHROMIUM, CHROMIUM_ARGS
from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "bertviz views offline (CPU, Chromium)"
DEFAULT_TOKENS = (16, 40, 64, 100)
DRAW_TIMEOUT_S = 120


def _draw_seconds(browser, html: str, lines: int) -> float:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    try:
        page = context.new_page()
        page.route("**/*", lambda route: route.abort())
        started = time.perf_counter()
        page.set_content(html)
        deadline = started + DRAW_TIMEOUT_S
        while page.locator("svg line").count() < lines:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"the view drew fewer than {lines} lines in {DRAW_TIMEOUT_S} s")
            page.wait_for_timeout(20)
        return time.perf_counter() - started
    finally:
        context.close()


def measure(browser, loaded, tokens: int, repeats: int) -> list[dict]:
    from inspector import capture
    from inspector.charts import bertviz as views

    result = capture(loaded, text_of_length(loaded.tokenizer, tokens), weights="all")
    n, heads = len(result.tokens), result.num_heads
    rows = []
    for kind, fits, build in (("head", views.head_view_max_layers(result), views.head_view_html),
                              ("model", views.model_view_max_layers(result), views.model_view_html)):
        if fits == 0:
            rows.append(dict(view=kind, tokens=n, layers=0, lines=0, megabytes=None, build_s=None, draw_s=None))
            continue
        layers = views.layers_around(result, 0, fits)
        started = time.perf_counter()
        html = build(result, layers=layers)
        build_s = time.perf_counter() - started
        # The head view draws one layer (all heads) at a time; the model view every chosen layer at once.
        lines = heads * n * n * (1 if kind == "head" else len(layers))
        with OtherLoad() as load:
            draws = [_draw_seconds(browser, html, lines) for _ in range(repeats)]
        rows.append(dict(view=kind, tokens=n, layers=len(layers), lines=lines, megabytes=len(html.encode()) / 1e6,
                         build_s=build_s, draw_s=draws, load=load.cores))
        print(f"  {kind} view, {n} tokens, {len(layers)} layers: {statistics.median(draws):.1f} s",
              file=sys.stderr, flush=True)
    return rows


def _table(rows: list[dict]) -> str:
    lines = ["| view | tokens | layers shown | SVG lines drawn | HTML (MB) | build (s) | draw, median (min–max) s "
             "| other processes' load (CPUs) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        if not row["layers"]:
            lines.append(f"| {row['view']} | {row['tokens']} | 0 — refused by the limits | | | | | |")
            continue
        draws = row["draw_s"]
        lines.append(f"| {row['view']} | {row['tokens']} | {row['layers']} | {row['lines']:,} | {row['megabytes']:.2f} "
                     f"| {row['build_s']:.2f} | {statistics.median(draws):.1f} ({min(draws):.1f}–{max(draws):.1f}) "
                     f"| {row['load']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--tokens", type=int, nargs="+", default=list(DEFAULT_TOKENS),
                        help="text lengths in tokens, special tokens included (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="draws per view (default: 3)")
    args = parser.parse_args(argv)
    if args.repeats < 1 or min(args.tokens) < 3:
        parser.error("--repeats must be ≥ 1 and every --tokens value ≥ 3")
    if not CHROMIUM.exists():
        parser.error(f"{CHROMIUM} is missing: apt-get install chromium")

    from playwright.sync_api import sync_playwright

    from inspector import load_model
    from inspector.charts import bertviz as views

    loaded = load_model("default")
    rows = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for tokens in sorted(set(args.tokens)):
                rows.extend(measure(browser, loaded, tokens, args.repeats))
        finally:
            browser.close()

    table = _table(rows)
    notes = [
        f"- Limits in force: head view ≤ {views.HEAD_VIEW_MAX_TOKENS} tokens and ≤ "
        f"{views.HEAD_VIEW_MAX_EMBEDDED_WEIGHTS:,} embedded weights; "
        f"model view ≤ {views.MODEL_VIEW_MAX_TOKENS} tokens; "
        f"≤ {views.MAX_LINES_DRAWN_AT_ONCE:,} lines drawn at once (fewer layers are shown when all do not fit).",
        "- Build: `head_view_html` / `model_view_html` in Python (bertviz's HTML, vendored JavaScript inlined, data "
        "re-serialised). Draw: `page.set_content(html)` until every `svg line` of the view exists, every request "
        "refused (offline), a fresh browser context per draw, median of the repeats.",
        "- Other processes' load: CPUs other processes (Chromium among them) kept busy during the draws.",
    ]
    finish(args.write_docs, SECTION_TITLE,
           "bertviz's head and model views as the app embeds them, drawn with the network cut.",
           module="benchmarks.bertviz_views", argv=argv,
           shapes=f"bundled all-MiniLM-L6-v2 (6 layers × 12 heads), texts of "
                  f"{', '.join(str(t) for t in sorted(set(args.tokens)))} tokens, every layer's weights "
                  "captured; Chromium headless, viewport 1200×800", table=table, notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
