"""The Lessons page on a 512-token text in headless Chromium: seconds from opening its share link until every chart
is drawn, the server's CPU seconds for that run, and the bytes the server sends the browser (websocket frames) —
the code before the pooled lesson heatmaps (``--before``, a source tree) and this checkout, one after the other.

Issue 33, item 12: "Lessons at 512 tokens took 114 s to render in Chromium while the server spent 8 CPU-seconds (the
page ships too much to the browser)". Each tree gets its own ``streamlit run app.py`` (not hosted: a hosted instance
refuses 512 tokens on this page); a short text first loads the model, then the timed request.

Run from the repository root (needs /usr/bin/chromium; quiet machine: ~4 min)::

    git archive a666528~1 | tar -x -C /tmp/prepool
    python -m benchmarks.lessons_render --before /tmp/prepool
"""

from __future__ import annotations

import os
import sys
import time
import urllib.parse
from pathlib import Path

from benchmarks.live_app import CHROMIUM, CHROMIUM_ARGS, running_server
from benchmarks.load_test import _rss_mib
from benchmarks.report import benchmark_parser, finish

SECTION_TITLE = "Lessons at 512 tokens in the browser (issue 33)"
TOKENS = 512
_STATE = "document.querySelector('[data-testid=stApp]')?.dataset.testScriptState"
_DRAWN = "[...document.querySelectorAll('[data-testid=stVegaLiteChart]')].every(c => c.querySelector('canvas, svg'))"


def _text(tokens: int) -> str:
    """About ``tokens`` tokens on the bundled model (one a word, plus [CLS] and [SEP])."""
    words = ("river mountain engine garden letter window station summer market silver theory forest doctor "
             "bridge planet village winter music castle ocean signal paper harbor kitchen valley museum lantern "
             "meadow").split()
    return " ".join(words[(k * 7) % len(words)] for k in range(tokens - 2))


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(browser, tree: Path, timeout_s: float) -> dict:
    with running_server(tree, timeout_s=60, env={"PYTHONPATH": str(tree)}) as (url, pid):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        frames: list[int] = []
        page.on("websocket", lambda socket: socket.on("framereceived", lambda payload: frames.append(len(payload))))
        try:
            page.goto(f"{url}/lessons?text=warm+up")
            page.wait_for_function(f"{_STATE} === 'notRunning' && {_DRAWN}", timeout=timeout_s * 1000, polling=500)
            frames.clear()
            cpu, started = _cpu_s(pid), time.perf_counter()
            page.goto(f"{url}/lessons?{urllib.parse.urlencode({'text': _text(TOKENS)})}")
            page.wait_for_function(f"{_STATE} === 'running'", timeout=60_000, polling=100)
            page.wait_for_function(f"{_STATE} === 'notRunning'", timeout=timeout_s * 1000, polling=250)
            page.wait_for_function(_DRAWN, timeout=timeout_s * 1000, polling=250)
            return {"seconds": time.perf_counter() - started, "cpu": _cpu_s(pid) - cpu, "bytes": sum(frames),
                    "largest": sorted(frames, reverse=True)[:2], "rss": _rss_mib(pid)}
        finally:
            page.close()


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--before", type=Path, required=True, help="the source tree before the pooled heatmaps")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    after = Path(__file__).resolve().parent.parent
    load = os.getloadavg()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            results = {label: measure(browser, tree, args.timeout)
                       for label, tree in (("before", args.before), ("after", after))}
        finally:
            browser.close()
    lines = ["| code | open → every chart drawn, s | server CPU, s | sent to the browser, MB "
             "| two largest messages, MB | server RSS, MiB |", "|---|---:|---:|---:|---|---:|"]
    for label, r in results.items():
        lines.append(f"| {label} | {r['seconds']:.1f} | {r['cpu']:.1f} | {r['bytes'] / 1e6:.1f} "
                     f"| {', '.join(f'{n / 1e6:.1f}' for n in r['largest'])} | {r['rss']:,.0f} |")
    notes = [f"- Load average when started: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}."]
    finish(args.write_docs, SECTION_TITLE, "", module="benchmarks.lessons_render", argv=argv,
           shapes=f"all-MiniLM-L6-v2 (6 × 12 heads), one text of {TOKENS} tokens, layer 0 head 0, 1400 × 1000 px",
           table="\n".join(lines), notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
