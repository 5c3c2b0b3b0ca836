"""A class opening one link at once, against a hosted cluster (issue 32): time to first chart, errors and memory for
1 and 2 replicas behind nginx, then 200 different texts through one replica to show its caches stay bounded.

Each phase: N = K + W visitors open the same share link at the same moment through nginx — K real headless Chromium
tabs (one browser context each: its own cookie, so nginx's affinity spreads them) and W light clients
(benchmarks/light_client.py: one WebSocket session each, Streamlit's own protocol, no browser). Time to first
chart: from the visitor's first request to its first chart drawn (Chromium: the Vega SVG on the page; light: the
chart element received). Each phase uses a link of its own (its first run is a model call, the rest of the class
hits the replica's cache or waits for that run), after a warm-up run on every replica (not counted: the model is
loaded per replica at its first page). RSS per replica: its process, sampled every 0.25 s (/proc).

Then the cache phase: 200 different texts (every one a model call) opened by light clients on one replica, four at a
time; its RSS before, after and at the peak. Loopback only; bounded: every visitor has ``--timeout-s``, and the
whole run stops starting phases after ``--budget-s``.

    python -m benchmarks.load_hosted --sizes 1 4 --texts 20               # a quick look
    python -m benchmarks.load_hosted --write-docs                         # the figures in docs/BENCHMARKS.md
"""

from __future__ import annotations

import asyncio
import signal
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

from benchmarks.light_client import open_link
from benchmarks.live_app import CHART_DRAWN, CHROMIUM, CHROMIUM_ARGS, free_port
from benchmarks.load_test import MemorySampler, _rss_mib
from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "A class against a hosted cluster (nginx, 1 and 2 replicas, CPU)"
RSS_PERIOD_S = 0.25
CACHE_BATCH = 4  # the cache phase opens this many different texts at once (each a model call)
_WORDS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
          "seventeen eighteen nineteen twenty").split()


def link_text(phase: str, index: int = 0) -> str:
    return (f"The teacher shared this link with the class in {phase}, and student {_WORDS[index % 20]} of group "
            f"{_WORDS[index // 20 % 20]} opened it to see how each head spreads its attention.")


def browsers_for(size: int) -> int:
    """K of N = K + W: a quarter of the class in real browsers (at least one), the rest light clients."""
    return max(1, size // 4)


@dataclass
class Phase:
    replicas: int
    size: int
    browsers: int
    first_chart_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rss_peak_mib: list[float] = field(default_factory=list)
    rss_end_mib: list[float] = field(default_factory=list)
    loadavg: str = ""
    other_cores: float = 0.0
    wall_s: float = 0.0


def _browser_visit(browser, url: str, timeout_s: float, ready: threading.Barrier, results: list,
                   errors: list) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        ready.wait(timeout_s)  # every visitor of the phase starts at the same moment
        started = time.perf_counter()
        page.goto(url, timeout=timeout_s * 1000)
        page.wait_for_selector(CHART_DRAWN, timeout=timeout_s * 1000)
        results.append(time.perf_counter() - started)
    except Exception as err:  # noqa: BLE001 — counted as this visitor's error
        errors.append(f"browser: {type(err).__name__}: {str(err).splitlines()[0][:120]}")
    finally:
        context.close()


def run_phase(cluster, size: int, timeout_s: float) -> Phase:
    """N visitors open one link at once through nginx (see the module docstring)."""
    browsers = browsers_for(size)
    phase = Phase(len(cluster.replicas), size, browsers, loadavg=Path("/proc/loadavg").read_text().split(" ")[0])
    query = urlencode({"text": link_text(f"phase {len(cluster.replicas)}x{size}")})
    url = f"{cluster.url}/?{query}"
    samplers = [MemorySampler(m.pid) for m in cluster.replicas]
    # The browsers are driven from one thread each (Playwright's sync API: one browser per thread).
    results: list[float] = []
    errors: list[str] = []
    ready = threading.Barrier(browsers + 1)

    def browser_thread() -> None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as own:
            browser = own.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                _browser_visit(browser, url, timeout_s, ready, results, errors)
            finally:
                browser.close()

    started = time.perf_counter()
    with OtherLoad() as load:
        for sampler in samplers:
            sampler.__enter__()
        threads = [threading.Thread(target=browser_thread) for _ in range(browsers)]
        for thread in threads:
            thread.start()
        try:
            ready.wait(timeout_s)  # the browsers are launched; the light clients start with them
        except threading.BrokenBarrierError:
            errors.append("a browser did not start")

        async def light() -> list:
            return list(await asyncio.gather(*(open_link(cluster.url, query, timeout_s=timeout_s)
                                               for _ in range(size - browsers))))

        for session in asyncio.run(light()) if size > browsers else []:
            if session.error or session.first_chart_s is None:
                errors.append(f"light: {session.error}")
            else:
                results.append(session.first_chart_s)
        for thread in threads:
            thread.join(timeout_s + 60)
        for sampler in samplers:
            sampler.__exit__(None, None, None)
    phase.wall_s = time.perf_counter() - started
    phase.other_cores = load.cores
    phase.first_chart_s, phase.errors = results, errors
    for sampler in samplers:
        rss = [mib for _, mib in sampler.samples] or [float("nan")]
        phase.rss_peak_mib.append(max(rss))
        phase.rss_end_mib.append(rss[-1])
    print(f"  {phase.replicas} replica(s), N={size}: {len(results)} charts, {len(errors)} errors, "
          f"{phase.wall_s:.0f} s", file=sys.stderr, flush=True)
    return phase


def warm_up(cluster, timeout_s: float) -> None:
    """One run on every replica directly (the model loads per replica on its first page); not counted."""
    async def all_replicas() -> list:
        return list(await asyncio.gather(*(open_link(cluster.replica_url(i), urlencode({"text": link_text("warm-up")}),
                                                     timeout_s=timeout_s) for i in range(len(cluster.replicas)))))

    for session in asyncio.run(all_replicas()):
        if session.error:
            raise RuntimeError(f"a replica did not draw its warm-up page: {session.error}")


@dataclass
class CachePhase:
    texts: int
    done: int = 0
    errors: list[str] = field(default_factory=list)
    rss_before_mib: float = 0.0
    rss_after_mib: float = 0.0
    rss_peak_mib: float = 0.0
    rss_at: list[tuple[int, float]] = field(default_factory=list)
    wall_s: float = 0.0


def cache_phase(cluster, texts: int, timeout_s: float, budget_end: float) -> CachePhase:
    """``texts`` different texts, :data:`CACHE_BATCH` at a time, on replica 1 directly; its RSS before, during and
    after."""
    result = CachePhase(texts)
    pid = cluster.replicas[0].pid
    result.rss_before_mib = _rss_mib(pid)
    started = time.perf_counter()
    with MemorySampler(pid) as sampler:
        for first in range(0, texts, CACHE_BATCH):
            if time.monotonic() > budget_end:
                result.errors.append(f"time budget reached after {first} texts")
                break
            batch = range(first, min(first + CACHE_BATCH, texts))
            queries = [urlencode({"text": f"Text {i}: " + link_text(f"the cache test, text {i}", i)}) for i in batch]

            async def opened(queries: list[str] = queries) -> list:
                return list(await asyncio.gather(*(open_link(cluster.replica_url(0), q, timeout_s=timeout_s)
                                                   for q in queries)))

            for session in asyncio.run(opened()):
                if session.error:
                    result.errors.append(session.error)
                else:
                    result.done += 1
            if (batch[-1] + 1) // 25 > first // 25 or batch[-1] + 1 == texts:  # about every 25 texts
                result.rss_at.append((batch[-1] + 1, _rss_mib(pid)))
    result.wall_s = time.perf_counter() - started
    result.rss_after_mib = _rss_mib(pid)
    result.rss_peak_mib = max([mib for _, mib in sampler.samples] or [result.rss_after_mib])
    return result


def _pct(values: list[float], q: int) -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.1f} s"
    return f"{statistics.quantiles(values, n=100, method='inclusive')[q - 1]:.1f} s"


def report(phases: list[Phase], cache: CachePhase | None, skipped: list[str]) -> tuple[str, list[str]]:
    rows = ["| replicas | visitors N (browsers K + light W) | charts | errors | first chart p50 | p95 | phase wall "
            "| RSS per replica, peak (MiB) | load avg (1 min) at start |",
            "|---:|---|---:|---:|---:|---:|---:|---|---:|"]
    for p in phases:
        rows.append(f"| {p.replicas} | {p.size} ({p.browsers} + {p.size - p.browsers}) | {len(p.first_chart_s)} | "
                    f"{len(p.errors)} | {_pct(p.first_chart_s, 50)} | {_pct(p.first_chart_s, 95)} | "
                    f"{p.wall_s:.0f} s | {' / '.join(f'{m:.0f}' for m in p.rss_peak_mib)} | {p.loadavg} |")
    notes = [
        "- Every visitor of a phase opens the same link (a text of its own per phase) at the same moment, through "
        "nginx; browsers are separate Chromium processes (one context each), light clients one WebSocket session "
        "each. The first run of a link is a model forward; the rest of the class is served from the replica's "
        "result cache (or waits for that run). The replicas were warmed with one page each first (model loaded).",
        "- The machine is shared: the browsers, the light clients, nginx and the replicas run on the same 2 cores, "
        "next to other people's work (load average in the table; ≥ 2 means the cores were fully busy before this "
        "benchmark's own work). Treat the times as upper bounds for a dedicated server.",
    ]
    for p in phases:
        if p.errors:
            notes.append(f"- Errors, {p.replicas} replica(s), N={p.size}: " + "; ".join(p.errors[:4]))
    if cache is not None:
        rss = ", ".join(f"{n}: {mib:.0f}" for n, mib in cache.rss_at)
        notes.append(f"- Cache bound: {cache.done} of {cache.texts} different texts through replica 1 (one light "
                     f"session each, {CACHE_BATCH} at a time, {cache.wall_s:.0f} s): RSS "
                     f"{cache.rss_before_mib:.0f} MiB before → {cache.rss_after_mib:.0f} MiB after (peak "
                     f"{cache.rss_peak_mib:.0f} MiB); after n texts (MiB): {rss}. Errors: {len(cache.errors)}"
                     + (f" ({'; '.join(cache.errors[:3])})" if cache.errors else "") + ".")
    if skipped:
        notes.append("- Not run (time budget): " + ", ".join(skipped))
    return "\n".join(rows), notes


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2], help="cluster sizes (default: 1 2)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 8, 16],
                        help="visitors per phase, K + W (default: 1 4 8 16)")
    parser.add_argument("--texts", type=int, default=200, help="different texts in the cache phase (default 200)")
    parser.add_argument("--timeout-s", type=float, default=240.0, help="one visitor's limit (default 240)")
    parser.add_argument("--budget-s", type=float, default=1500.0, help="start no phase after this (default 1500)")
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        parser.error(f"{CHROMIUM} is missing: apt-get install chromium")
    if not all(1 <= n <= 16 for n in args.sizes):
        parser.error("--sizes take values 1..16 (a loopback machine runs the whole class)")

    from deploy.cluster import start

    # A stopped benchmark (Ctrl+C, SIGTERM from a timeout) leaves the with-blocks, so its cluster stops too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    budget_end = time.monotonic() + args.budget_s
    phases, skipped, cache = [], [], None
    for replicas in args.replicas:
        if time.monotonic() > budget_end:
            skipped.append(f"{replicas} replica(s)")
            continue
        port = free_port()
        ports = [free_port() for _ in range(replicas)]
        with tempfile.TemporaryDirectory() as run_dir, start(replicas, port, ports, Path(run_dir),
                                                             prepare=False) as cluster:
            print(f"{replicas} replica(s) up at {cluster.url}", file=sys.stderr, flush=True)
            warm_up(cluster, args.timeout_s)
            for size in args.sizes:
                if time.monotonic() > budget_end:
                    skipped.append(f"{replicas} replica(s) N={size}")
                    continue
                phases.append(run_phase(cluster, size, args.timeout_s))
            if replicas == args.replicas[-1] and args.texts:  # the last cluster: its replica 1, directly
                cache = cache_phase(cluster, args.texts, args.timeout_s, budget_end)
    table, notes = report(phases, cache, skipped)
    finish(args.write_docs, SECTION_TITLE,
           "A class opening one share link at once through nginx in front of 1 and 2 hosted replicas "
           "(deploy/cluster.py), then 200 different texts through one replica.", module="benchmarks.load_hosted",
           argv=argv, shapes=f"bundled all-MiniLM-L6-v2, texts of ~30 tokens; N in {args.sizes} (K = max(1, N // 4) "
                             f"Chromium tabs, the rest light clients); replicas {args.replicas}; {args.texts} texts",
           table=table, notes=notes)
    return 0 if all(not p.errors for p in phases) else 1


if __name__ == "__main__":
    sys.exit(main())
