"""Many visitors at once: N real browser sessions type different texts into one ``streamlit run`` server at the same
moment; each must see exactly its own tokens and numbers, and we record how long they wait and what the server's
memory does.

Issue 9's load test. One server (``benchmarks.live_app.running_app``), headless Chromium with N browser contexts
(separate cookies and Streamlit sessions). Each round, every session types its own new text (never seen before, so
every request is a model call, not a cache hit) and presses Ctrl+Enter, one right after the other; the script then
polls all tabs until each shows its text's token strip with no stale element left. Per request: the latency from
its key press to that moment. Per session: **no cross-talk** — the token strip equals the tokenizer's own tokens for
that session's text, the "Tokens" metric equals their count, and every cell of the entropy grid (its screen-reader
label carries the entropy in nats, 3 decimals) equals the library's single-session ``capture`` of that text. The
server's resident memory (its process and children, from ``/proc``) is sampled every 0.25 s throughout.

Run from the repository root (needs /usr/bin/chromium; a 2-CPU machine takes minutes for N = 20)::

    python -m benchmarks.load_test --sessions 1 2 --rounds 1          # a quick check
    python -m benchmarks.load_test --sessions 1 5 20 --rounds 3 --write-docs
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.live_app import CHART, CHART_DRAWN, CHROMIUM, CHROMIUM_ARGS, running_app
from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Concurrent sessions (load test, CPU)"
TOKEN_STRIP = '[data-testid="stMain"] [data-testid="stCode"]'
TEXT_AREA = '[data-testid="stTextArea"] textarea'
FIRST_RENDER_TIMEOUT_S = 180.0
ROUND_TIMEOUT_S = 120.0
POLL_S = 0.05
RSS_PERIOD_S = 0.25
RSS_SERIES_STEP_S = 5.0  # the report lists one sample per this many seconds
ENTROPY_TOLERANCE = 0.0015  # the grid's labels round to 3 decimals
_SENTENCES = (
    "The animal didn't cross the street because it was too tired",
    "The trophy didn't fit in the suitcase because it was too big",
    "The keys to the cabinet on the left are on the table",
    "Queries search keys like addresses and values carry the payload",
    "A small red cat sat on the blue mat near the door",
)
_NUMBERS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
            "seventeen eighteen nineteen twenty").split()
# What the page is waiting for, in the browser: this tab's strip shows the expected tokens and nothing is stale.
_DONE = """([selector, strip]) => {
    const code = document.querySelector(selector);
    return !!code && code.innerText.trim() === strip && !document.querySelector('[data-stale="true"]');
}"""
_GRID_LABELS = f"""() => [...document.querySelectorAll('{CHART}')][0]
    ? [...[...document.querySelectorAll('{CHART}')][0].querySelectorAll('path[aria-label^="head: "]')]
        .map(p => p.getAttribute('aria-label'))
    : []"""
_LABEL = re.compile(r"head: (\d+); layer: (\d+);.*entropy \(nats\): (-?[0-9.]+|NaN)")


def text_for(sessions: int, session: int, round_: int) -> str:
    """A text no other request of this run uses: a sentence, then who is asking (number words tokenise cleanly)."""
    words = _NUMBERS
    return (f"{_SENTENCES[(session + round_) % len(_SENTENCES)]}, says visitor {words[session % 20]} of "
            f"{words[(sessions - 1) % 20]} in round {words[round_ % 20]}.")


@dataclass(frozen=True)
class Expected:
    """A single-session run of one text through the library: the strip the page shows and every head's entropy."""

    strip: str
    n_tokens: int
    entropy_nats: dict[tuple[int, int], float]


def expected_for(loaded, text: str) -> Expected:
    from inspector.analyses.metrics import head_entropy
    from inspector.charts.base import token_labels
    from inspector.core.capture import capture

    result = capture(loaded, text, weights=None)
    raw = head_entropy(result).raw
    return Expected(strip="   ".join(token_labels(result.tokens)), n_tokens=len(result.tokens),
                    entropy_nats={(layer, head): float(raw[layer, head]) for layer in range(raw.shape[0])
                                  for head in range(raw.shape[1])})


def cross_talk(page, expected: Expected) -> list[str]:
    """What on this tab differs from a single-session run of its text (empty = none)."""
    problems = []
    strip = page.locator(TOKEN_STRIP).first.inner_text().strip()
    if strip != expected.strip:
        problems.append(f"token strip {strip[:60]!r}… is not the text's own {expected.strip[:60]!r}…")
    metric = page.locator('[data-testid="stMetric"]').filter(has_text="Tokens").locator(
        '[data-testid="stMetricValue"]').inner_text()
    if not metric.startswith(f"{expected.n_tokens} / "):
        problems.append(f"Tokens metric {metric!r}, expected {expected.n_tokens}")
    shown = {}
    for label in page.evaluate(_GRID_LABELS):
        match = _LABEL.search(label)
        if match:
            shown[(int(match.group(2)), int(match.group(1)))] = float(match.group(3))
    if set(shown) != set(expected.entropy_nats):
        problems.append(f"entropy grid has {len(shown)} cells, expected {len(expected.entropy_nats)}")
    else:
        worst = max(abs(shown[cell] - value) for cell, value in expected.entropy_nats.items())
        if worst > ENTROPY_TOLERANCE:
            problems.append(f"entropy grid differs from the single-session run by up to {worst:.4f} nats")
    return problems


def _children(pid: int) -> list[int]:
    """Direct child processes of ``pid`` (Linux ``/proc/PID/task/TID/children``)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def _rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` and all its descendants, MiB (``VmRSS`` in ``/proc/PID/status``)."""
    total_kib, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kib += int(line.split()[1])
        except OSError:
            continue
        stack += _children(current)
    return total_kib / 1024


class MemorySampler:
    """Resident memory (MiB) of a process and its children, sampled every :data:`RSS_PERIOD_S` in a thread."""

    def __init__(self, pid: int):
        self.pid = pid
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        started = time.perf_counter()
        while not self._stop.is_set():
            self.samples.append((time.perf_counter() - started, _rss_mib(self.pid)))
            self._stop.wait(RSS_PERIOD_S)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Phase:
    """One N: per-request latencies (s), cross-talk problems, and the server's memory over the phase."""

    sessions: int
    latencies: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    memory: list[tuple[float, float]] = field(default_factory=list)
    other_cores: float = 0.0


def _streamlit_server() -> int:
    """The pid of the ``streamlit run`` server this process started (``running_app``)."""
    servers = [pid for pid in _children(os.getpid())
               if b"streamlit" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    if len(servers) != 1:
        raise RuntimeError(f"expected one streamlit server child process, found {len(servers)}")
    return servers[0]


def run_phase(browser, url: str, loaded, sessions: int, rounds: int) -> Phase:
    """N sessions, ``rounds`` simultaneous requests each; see the module docstring."""
    phase = Phase(sessions)
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in range(sessions)]
    try:
        pages = [context.new_page() for context in contexts]
        for page in pages:
            page.goto(url)
        for page in pages:
            page.wait_for_selector(CHART_DRAWN, timeout=FIRST_RENDER_TIMEOUT_S * 1000)
        with MemorySampler(_streamlit_server()) as memory, OtherLoad() as load:
            for round_ in range(rounds):
                texts = [text_for(sessions, s, round_) for s in range(sessions)]
                expected = [expected_for(loaded, text) for text in texts]
                started = {}
                for s, (page, text) in enumerate(zip(pages, texts)):
                    page.locator(TEXT_AREA).fill(text)
                    page.locator(TEXT_AREA).press("Control+Enter")
                    started[s] = time.perf_counter()
                pending = set(range(sessions))
                deadline = time.perf_counter() + ROUND_TIMEOUT_S + 5 * sessions
                while pending and time.perf_counter() < deadline:
                    for s in sorted(pending):
                        if pages[s].evaluate(_DONE, [TOKEN_STRIP, expected[s].strip]):
                            phase.latencies.append(time.perf_counter() - started[s])
                            pending.discard(s)
                    time.sleep(POLL_S)
                for s in sorted(pending):
                    phase.problems.append(f"N={sessions} round {round_} session {s}: never showed its own text")
                for s in sorted(set(range(sessions)) - pending):
                    phase.problems += [f"N={sessions} round {round_} session {s}: {p}"
                                       for p in cross_talk(pages[s], expected[s])]
                print(f"  N={sessions} round {round_ + 1}/{rounds}: {len(pending)} unfinished, "
                      f"{len(phase.problems)} problems so far", file=sys.stderr, flush=True)
        phase.memory, phase.other_cores = memory.samples, load.cores
    finally:
        for context in contexts:
            context.close()
    return phase


def _percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def report(phases: list[Phase]) -> tuple[str, list[str]]:
    rows = ["| sessions N | requests | p50 latency | p95 latency | max | cross-talk problems | server RSS start → peak "
            "→ end | other processes' load (CPUs) |", "|---:|---:|---:|---:|---:|---:|---|---:|"]
    for phase in phases:
        rss = [mib for _, mib in phase.memory] or [float("nan")]
        lat = phase.latencies or [float("nan")]
        rows.append(f"| {phase.sessions} | {len(phase.latencies)} | {_percentile(lat, 50):.2f} s | "
                    f"{_percentile(lat, 95):.2f} s | {max(lat):.2f} s | {len(phase.problems)} | "
                    f"{rss[0]:.0f} → {max(rss):.0f} → {rss[-1]:.0f} MiB | {phase.other_cores:.2f} |")
    notes = [
        "- Latency: from one session's Ctrl+Enter until its tab shows its own token strip with nothing stale; all N "
        "sessions press within a fraction of a second of each other, so later requests queue behind earlier ones "
        "on the CPU. Every text is new (no cache hit): each request is a model forward.",
        "- Cross-talk: a session's token strip must equal the tokenizer's tokens of its own text, its Tokens metric "
        f"their count, and every entropy-grid cell the library's single-session capture within {ENTROPY_TOLERANCE} "
        "nats (the labels' 3-decimal rounding).",
        "- Server RSS: the `streamlit run` process and its children, sampled every "
        f"{RSS_PERIOD_S} s (/proc) from the first simultaneous request to the last answer of the phase; "
        "one server serves every N in turn, so a later phase starts with the earlier phases' caches.",
        "- Other processes' load: CPUs kept busy by everything but the server (`/proc/stat`) — here mostly the N "
        "Chromium tabs and the Playwright driver, which share the same 2 CPUs, so the server had well under 2 cores "
        "to itself; a deployed server does not share its CPUs with its visitors' browsers.",
    ]
    for phase in phases:
        series = [f"{mib:.0f}" for t, mib in phase.memory if t % RSS_SERIES_STEP_S < RSS_PERIOD_S]
        notes.append(f"- Server RSS over time, N = {phase.sessions} (MiB, every {RSS_SERIES_STEP_S:g} s): "
                     + ", ".join(series))
    problems = [p for phase in phases for p in phase.problems]
    if problems:
        notes.append("- Problems: " + "; ".join(problems[:10]) + (" …" if len(problems) > 10 else ""))
    return "\n".join(rows), notes


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 5, 20],
                        help="numbers of simultaneous browser sessions, one phase each (default: 1 5 20)")
    parser.add_argument("--rounds", type=int, default=3, help="simultaneous requests per session (default: 3)")
    args = parser.parse_args(argv)
    if not all(1 <= n <= 20 for n in args.sessions) or args.rounds < 1:
        parser.error("--sessions take values 1..20 (number words name the visitors) and --rounds must be ≥ 1")
    if not CHROMIUM.exists():
        parser.error(f"{CHROMIUM} is missing: apt-get install chromium")

    from playwright.sync_api import sync_playwright

    from inspector.core.loading import load_model

    loaded = load_model("default", device="cpu")
    phases = []
    with sync_playwright() as playwright, running_app(timeout_s=120) as url:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for sessions in args.sessions:
                phases.append(run_phase(browser, url, loaded, sessions, args.rounds))
        finally:
            browser.close()
    table, notes = report(phases)
    finish(args.write_docs, SECTION_TITLE,
           "N headless Chromium sessions typing different texts into one `streamlit run` "
           "server on the bundled model at the same moment.", module="benchmarks.load_test",
           argv=argv,
           shapes=f"bundled all-MiniLM-L6-v2 (6 layers × 12 heads), texts of ~20 tokens, {args.rounds} "
                  f"rounds per session, N in {args.sessions}", table=table, notes=notes)
    return 0 if all(not phase.problems for phase in phases) else 1


if __name__ == "__main__":
    sys.exit(main())
