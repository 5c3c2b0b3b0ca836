"""Issue 33's hostile requests against a hosted server, and its cache memory: how long each request runs and the
server's resident memory, before and after the fixes, in the same run.

Each part starts ``streamlit run app.py`` with ``INSPECTOR_HOSTED=1`` on a loopback port from a source tree given on
the command line — the code before the fixes (``--before``, e.g. a ``git archive`` of the earlier commit) and after
(this checkout) — and drives it with headless Chromium (one tab, one request at a time; nothing leaves this
machine). The server's RSS (its process and children, ``/proc``) is read before and after each request and sampled
every 0.25 s for the peak.

- ``cache``: the Inspect page on N different ~440-token texts, one after another, each opened by its share link
  (issue 33, item 11: 40 texts took a hosted server from 782 to 2,689 MB);
- ``hostile``: the issue's long requests, each once — Attribution with every method on 512 tokens (the old page's
  "run every method" toggle switched on), Heads, Lessons, Compare and Inspect at 512 tokens, and the Heads corpus
  — each request's wall time until the server stopped running the page, what the page said (its error or notice),
  and the server's peak RSS. Bounded: each request waits at most ``--request-timeout`` seconds, and the old code's
  240 s / 8 GB Attribution run is repeated only with ``--hostile-before``.

Run from the repository root (needs /usr/bin/chromium; a loaded 2-CPU machine takes ~15 min)::

    git archive 894f421 | tar -x -C /tmp/before
    python -m benchmarks.hosted_limits --before /tmp/before --texts 40 --write-docs
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

from benchmarks.live_app import CHROMIUM, CHROMIUM_ARGS, running_server
from benchmarks.load_test import MemorySampler, _rss_mib
from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Hosted limits and cache memory (issue 33)"
TOKENS = 440
HOSTILE_TOKENS = 512


@contextlib.contextmanager
def hosted_server(tree: Path) -> Iterator[tuple[str, int]]:
    """``streamlit run`` of ``tree``'s app.py, hosted, on a free loopback port: (url, pid)."""
    with running_server(tree, timeout_s=60, env={"INSPECTOR_HOSTED": "1", "PYTHONPATH": str(tree)},
                        options=("--server.fileWatcherType", "none")) as server:
        yield server


def _texts(count: int, tokens: int) -> list[str]:
    """``count`` different texts of about ``tokens`` tokens on the bundled model (one token a word, plus [CLS] and
    [SEP]); different words, so no two share a cache key."""
    vocabulary = ("river mountain engine garden letter window station summer market silver theory forest doctor "
                  "bridge planet village winter music castle ocean signal paper harbor kitchen valley museum "
                  "lantern meadow circuit archive").split()
    return [" ".join([f"number {index}"] + [vocabulary[(index * 7 + k * (index % 5 + 1)) % len(vocabulary)]
                                           for k in range(tokens - 4)]) for index in range(count)]


_RUNNING = '[data-testid="stStatusWidget"]'
_SAID = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stAlert"]')]
    .map(a => a.innerText.trim()).filter(t => t)"""


def _settle(page, timeout_s: float) -> bool:
    """Wait until the server has run the page: the app drew something and its running indicator is gone."""
    deadline = time.monotonic() + timeout_s
    time.sleep(1.0)
    while time.monotonic() < deadline:
        drawn = page.evaluate("() => document.querySelectorAll('[data-testid=\"stMain\"] "
                              "[data-testid=\"stElementContainer\"]').length")
        if drawn and not page.query_selector(_RUNNING):
            return True
        time.sleep(0.25)
    return False


def _request(page, url: str, path: str, query: dict, timeout_s: float, then=None) -> dict:
    started = time.perf_counter()
    page.goto(f"{url}/{path}?{urllib.parse.urlencode(query)}")
    done = _settle(page, timeout_s)
    if done and then is not None:
        done = then(page) and _settle(page, max(1.0, timeout_s - (time.perf_counter() - started)))
    return {"seconds": time.perf_counter() - started, "finished": done, "said": page.evaluate(_SAID)[:2]}


def _every_method(page) -> bool:
    """The old Attribution page asks before running every method past 128 tokens: switch its toggle on."""
    toggle = page.get_by_text("Run every method on all")
    if toggle.count() > 0:  # the new page refuses instead: nothing to switch on
        toggle.first.click()
    return True


def _corpus(page) -> bool:
    page.get_by_text("Corpus (").first.click()
    return True


def measure(browser, tree: Path, part: str, count: int, timeout_s: float) -> dict:
    with hosted_server(tree) as (url, pid):
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        try:
            _request(page, url, "", {"text": "A warm-up sentence."}, timeout_s)
            with MemorySampler(pid) as memory:
                rows = []
                if part == "cache":
                    for text in _texts(count, TOKENS):
                        before = _rss_mib(pid)
                        rows.append({**_request(page, url, "", {"text": text}, timeout_s), "rss_before": before,
                                     "rss_after": _rss_mib(pid)})
                else:
                    long_text = _texts(1, HOSTILE_TOKENS)[0]
                    for name, path, then in ((f"Attribution, every method, {HOSTILE_TOKENS} tokens", "attribution",
                                              _every_method),
                                             (f"Heads, {HOSTILE_TOKENS} tokens", "heads", None),
                                             (f"Lessons, {HOSTILE_TOKENS} tokens", "lessons", None),
                                             (f"Compare, {HOSTILE_TOKENS} tokens", "compare", None),
                                             (f"Inspect, {HOSTILE_TOKENS} tokens", "", None),
                                             ("Heads, the whole corpus", "heads", _corpus)):
                        before = _rss_mib(pid)
                        rows.append({"request": name, **_request(page, url, path, {"text": long_text}, timeout_s,
                                                                 then), "rss_before": before,
                                     "rss_after": _rss_mib(pid)})
                        print(f"  {tree.name}: {rows[-1]}", file=sys.stderr, flush=True)
        finally:
            context.close()
    return {"rows": rows, "peak": max(rss for _, rss in memory.samples), "start": rows[0]["rss_before"]}


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--before", type=Path, required=True, help="the source tree before the fixes")
    parser.add_argument("--texts", type=int, default=40)
    parser.add_argument("--request-timeout", type=float, default=300.0)
    parser.add_argument("--parts", nargs="+", default=["cache", "hostile"], choices=["cache", "hostile"])
    parser.add_argument("--hostile-before", action="store_true",
                        help="also send the hostile requests to the old code (minutes, GBs)")
    args = parser.parse_args(argv)
    after = Path(__file__).resolve().parent.parent
    load = os.getloadavg()
    cache, hostile = {}, {}
    with OtherLoad() as other, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            if "cache" in args.parts:
                for label, tree in (("before", args.before), ("after", after)):
                    cache[label] = measure(browser, tree, "cache", args.texts, args.request_timeout)
                    print(f"cache {label}: {cache[label]['rows'][-1]}", file=sys.stderr, flush=True)
            if "hostile" in args.parts:
                hostile["after"] = measure(browser, after, "hostile", 0, args.request_timeout)
                if args.hostile_before:
                    hostile["before"] = measure(browser, args.before, "hostile", 0, args.request_timeout)
        finally:
            browser.close()
    lines, summary = [], []
    if cache:
        lines += [f"| code | server RSS before the first text, MiB | after {args.texts} texts, MiB | growth, MiB "
                  "| peak, MiB | slowest text, s | texts not finished |", "|---|---:|---:|---:|---:|---:|---:|"]
        for label, result in cache.items():
            rows = result["rows"]
            lines.append(f"| {label} | {rows[0]['rss_before']:,.0f} | {rows[-1]['rss_after']:,.0f} "
                         f"| {rows[-1]['rss_after'] - rows[0]['rss_before']:,.0f} | {result['peak']:,.0f} "
                         f"| {max(r['seconds'] for r in rows):.1f} | {sum(not r['finished'] for r in rows)} |")
        summary.append(f"{args.texts} different ~{TOKENS}-token texts on a hosted Inspect page grow the server by "
                       + " → ".join(f"{r['rows'][-1]['rss_after'] - r['rows'][0]['rss_before']:,.0f} MiB ({label})"
                                    for label, r in cache.items()) + ".")
    if hostile:
        lines += ["", "| code | hostile request | wall, s | finished | server RSS after, MiB | what the page said |",
                  "|---|---|---:|---|---:|---|"]
        for label, result in hostile.items():
            for row in result["rows"]:
                said = "; ".join(row["said"]).replace("|", "/").replace("\n", " ")[:200] or "(ran)"
                lines.append(f"| {label} | {row['request']} | {row['seconds']:.1f} | {row['finished']} "
                             f"| {row['rss_after']:,.0f} | {said} |")
            lines.append(f"| {label} | **peak server RSS over these requests** | | | {result['peak']:,.0f} | |")
        rows = hostile["after"]["rows"]
        summary.append(f"Under the hostile requests (after the fixes) the longest took "
                       f"{max(r['seconds'] for r in rows):.1f} s and the server peaked at "
                       f"{hostile['after']['peak']:,.0f} MiB.")
    notes = [f"- Load average when started: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; other processes used "
             f"{other.cores:.2f} cores on average during the run (the servers and Chromium this benchmark starts "
             "included; a 2-core machine shared with other engineers' jobs: times are loaded).",
             "- Wall time per request: from opening its share link until the server stopped running the page "
             "(Streamlit's running indicator gone), Chromium's drawing included."]
    finish(args.write_docs, SECTION_TITLE, " ".join(summary), module="benchmarks.hosted_limits", argv=argv,
           shapes=f"all-MiniLM-L6-v2 (6 × 12 heads), {args.texts} texts of ~{TOKENS} tokens; hostile requests at "
                  f"{HOSTILE_TOKENS} tokens", table="\n".join(lines), notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
