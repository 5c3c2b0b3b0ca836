"""The hosted option sweep (issue 45, Tests): every numeric option of every page driven to its widget's extremes and
beyond — through the widget and through a share link — against a hosted server process, with every run's wall time
and the server's resident memory.

The options come from the page registry (:attr:`inspector.output.pages.PageSpec.numbers`), never from a list kept
here: a page that draws a numeric widget the registry does not declare is reported (``unknown``), and so is a
declared option no page drew (``unseen``) — either fails the sweep.

Two parts, each against its own server process:

- ``tests/option_sweep.py`` (AppTest is a test client: benchmarks never import Streamlit), run in a child process
  (``python -m tests.option_sweep``, with ``INSPECTOR_HOSTED=1``):
  the app in Streamlit's ``AppTest``, every page opened on each model, then each option set through its widget to
  its minimum, its maximum and beyond both (NaN and ±inf for a float), and through a share link to its minimum,
  maximum, beyond both, NaN, inf and a 2,000-digit string — with the toggle or button that starts the work it sizes
  switched on. Every *run* (a job under the deadline: :func:`inspector.serving.run.holding`'s
  :func:`~inspector.core.deadline.job_deadline` block) is timed, and so is the whole page.
- :func:`link_sweep`: ``streamlit run app.py`` (hosted) and headless Chromium open each page's share link with every
  numeric parameter it carries (the view's layer and head included) set to hostile values, and wait until the page
  has finished running.

:func:`sweep` runs both and samples the server processes' resident memory (psutil, the process and its children,
every :data:`RSS_PERIOD_S`). The planned budget is :func:`inspector.serving.option_plan.server_budget_bytes` over the
server's warm memory (every model loaded, every page opened once). Used by tests/test_option_sweep.py (MiniLM and
SmolLM2) and benchmarks/hosted_sweep.py (all three bundled models).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

REPO_ROOT = Path(__file__).resolve().parents[1]
RSS_PERIOD_S = 0.2
HUGE = "9" * 2_000  # a 2,000-digit number: past every range, longer than any parameter a page writes
# A share link's hostile values besides the option's own extremes (its minimum, maximum and one past each); the
# browser sends the first three and two past every range (:func:`link_queries`).
LINK_VALUES = ("nan", HUGE, "inf", "-inf", "1e309")
WIDGET_TYPES = ("number_input", "slider", "select_slider", "multiselect")
DEFAULT_MODEL = "default"
TASK_MODEL = "shipped:planted-token"  # a ground-truth task model (NumericOption.on == "task"): a small classifier


def models_for(option, models: list[str]) -> list[str]:
    """The sweep's models ``option`` is swept on: MiniLM for any model, every decoder of ``models`` for a decoder's,
    the task model for a ground-truth task's."""
    if option.on == "task":
        return [TASK_MODEL]
    if option.on == "decoder":
        return [model for model in models if model != DEFAULT_MODEL]
    return [DEFAULT_MODEL]


@dataclass
class PageRun:
    """One page run of the sweep. ``runs``: the jobs it ran under the deadline, as (job, seconds, error or "")."""

    page: str
    model: str
    option: str
    path: str  # "open", "widget" or "link"
    value: str
    seconds: float
    runs: list[tuple[str, float, str]] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class SweepResult:
    """What a sweep found: its page runs, the numeric widgets no page declared and the declared ones never drawn,
    each model's one-layer time, the server's warm RSS and its peak (MiB), and the deadline it ran under."""

    rows: list[PageRun]
    unknown: list[str]
    unseen: list[str]
    layer_s: dict[str, float]
    memory: dict[str, tuple[float, float]]  # server ("apptest", "streamlit run") → (warm MiB, peak MiB)
    deadline_s: float

    @property
    def peak_mib(self) -> float:
        return max(peak for _, peak in self.memory.values())

    def longest(self) -> tuple[float, str]:
        """The longest run under the deadline (seconds) and what it was."""
        seconds, what = 0.0, ""
        for row in self.rows:
            for job, ran, error in row.runs:
                if ran > seconds:
                    seconds, what = ran, f"{row.page}, {row.model}, {row.option or 'defaults'} = {row.value} ({job}" \
                                         f"{', ' + error if error else ''})"
        return seconds, what


# ------------------------------------------------------------------------------------------------ resident memory


class RssSampler:
    """The peak resident memory (MiB) of a process and its children, sampled in a thread (psutil)."""

    def __init__(self, pid: int):
        self.process = psutil.Process(pid)
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def now_mib(self) -> float:
        total = 0
        for process in (self.process, *self.process.children(recursive=True)):
            try:
                total += process.memory_info().rss
            except psutil.Error:  # a child that ended between the listing and the reading
                continue
        return total / 2**20

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak_mib = max(self.peak_mib, self.now_mib())
            except psutil.NoSuchProcess:
                return
            self._stop.wait(RSS_PERIOD_S)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


# ------------------------------------------------------------------------------------------------ the registry


def declared_keys() -> dict[str, set[str]]:
    """Every registered page's declared numeric widget keys (the registry, read now)."""
    from inspector.output.pages import PAGE_REGISTRY

    return {name: {option.key for option in spec.numbers} for name, spec in PAGE_REGISTRY.items()}


def undeclared(page: str, drawn) -> list[str]:
    """The numeric widgets ``page`` drew (``drawn``: their keys) that the registry does not declare, as PAGE:KEY."""
    return sorted(f"{page}:{key}" for key in set(drawn) - declared_keys()[page])


# ------------------------------------------------------------------------------------------------ share links


# The page has run: Streamlit's own script state (the app's root element says it) is "not running" after a run, and the
# run drew into the page — not a proxy such as a chart or a box the page may draw before it ends.
_SETTLED = """() => document.querySelector('[data-testid="stApp"]')?.dataset.testScriptState === 'notRunning'
    && document.querySelector('[data-testid="stMain"] [data-testid="stElementContainer"]') !== null"""


BROWSER_VALUES = ("1000000000000", "-1", *LINK_VALUES[:3])  # past the top, below zero, NaN, a 2,000-digit string, inf


def link_queries(spec, values: tuple[str, ...] = BROWSER_VALUES) -> list[dict[str, str]]:
    """One query per hostile value class of ``values`` for a page: every numeric parameter its link carries (the
    view's layer and head, and its own options') set to that class."""
    from inspector.output.pages import VIEW_NUMBERS

    keys = list(VIEW_NUMBERS) + sorted({o.link for o in spec.numbers if o.link})
    queries = []
    for value in values:
        queries.append({key: f"{value},{value}" if key == "mcell" else value for key in keys})
    return queries


def link_sweep(browser, url: str, models: list[str], timeout_s: float, record: list, *, hostile: bool = True,
               pages: list[str] | None = None, values: tuple[str, ...] = BROWSER_VALUES) -> None:
    """Open every page's (or ``pages``') hostile links (:func:`link_queries` of ``values``; with ``hostile=False``
    each page once at its defaults)
    on the hosted server at ``url``, one at a time: the seconds until the page has finished running (Streamlit's
    script state), and what it said."""
    from inspector.output.pages import PAGE_REGISTRY

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        for model in [*models, TASK_MODEL]:
            for spec in (PAGE_REGISTRY[name] for name in pages or PAGE_REGISTRY):
                offered = {m for o in spec.numbers for m in models_for(o, models)} or {DEFAULT_MODEL}
                if model not in offered:
                    continue  # each page on the models its options are swept on (MiniLM when it has none)
                for query in link_queries(spec, values) if hostile else [{}]:
                    path = "" if spec.default else spec.name
                    started = time.perf_counter()
                    page.goto(f"{url}/{path}?{urllib.parse.urlencode({'model': model, **query})}")
                    page.wait_for_function(_SETTLED, timeout=timeout_s * 1000)
                    seconds = time.perf_counter() - started
                    exceptions = [e.inner_text()[:300] for e in page.query_selector_all('[data-testid="stException"]')]
                    errors = [e.inner_text()[:200] for e in page.query_selector_all(
                        '[data-testid="stMain"] [data-testid="stAlertContentError"]')]
                    value = next(iter(query.values()), "")
                    record.append(PageRun(page=spec.name, model=model, option=",".join(query),
                                          path="browser link" if hostile else "browser open",
                                          value=value[:40], seconds=seconds, exceptions=exceptions, errors=errors))
                    print(f"  browser {spec.name} {model} {value[:12]}: {seconds:.1f} s", file=sys.stderr, flush=True)
    finally:
        context.close()


# ------------------------------------------------------------------------------------------------ both parts


def hosted_env(deadline_s: float) -> dict[str, str]:
    return {"INSPECTOR_HOSTED": "1", "INSPECTOR_DEADLINE_S": f"{deadline_s:g}"}


def sweep(models: list[str], deadline_s: float, *, browser=None, pages: list[str] | None = None,
          browser_values: tuple[str, ...] = BROWSER_VALUES) -> SweepResult:
    """Both parts (module docstring) under a hosted server with ``deadline_s``: the AppTest part in a child process,
    the links in ``streamlit run`` driven by ``browser`` (None: the AppTest part only) with ``browser_values`` (the
    AppTest part sends every class through links as well); ``pages``: only these."""
    from benchmarks.live_app import running_server

    env = {**os.environ, **hosted_env(deadline_s), "PYTHONPATH": str(REPO_ROOT)}
    with tempfile_path() as out:
        command = [sys.executable, "-m", "tests.option_sweep", "--json", str(out), "--models", *models]
        if pages:
            command += ["--pages", *pages]
        child = subprocess.Popen(command, cwd=REPO_ROOT, env=env)
        with RssSampler(child.pid) as memory:
            if child.wait() != 0:
                raise RuntimeError(f"the AppTest sweep exited with {child.returncode}")
        found = json.loads(out.read_text())
    rows = [PageRun(**{**row, "runs": [tuple(r) for r in row["runs"]]}) for row in found["rows"]]
    memory_mib = {"apptest": (found["warm_mib"], memory.peak_mib)}
    if browser is not None:
        with running_server(REPO_ROOT, env=hosted_env(deadline_s),
                            options=("--server.fileWatcherType", "none")) as (url, pid):
            with RssSampler(pid) as served:
                link_sweep(browser, url, models, 3 * deadline_s + 120, rows, hostile=False, pages=pages)
                warm = served.now_mib()
                link_sweep(browser, url, models, 3 * deadline_s + 120, rows, pages=pages, values=browser_values)
            memory_mib["streamlit run"] = (warm, served.peak_mib)
    return SweepResult(rows=rows, unknown=found["unknown"], unseen=found["unseen"], layer_s=found["layer_s"],
                       memory=memory_mib, deadline_s=deadline_s)


@contextmanager
def tempfile_path():
    """A JSON file's path in a temporary folder, removed with it."""
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder) / "sweep.json"
