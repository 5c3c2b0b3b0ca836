"""The hosted option sweep (issue 45, Tests): every numeric option of every page driven to its widget's extremes and
beyond — through the widget and through a share link — against a hosted server process, with every run's wall time
and the server's resident memory.

The options come from the page registry (:attr:`inspector.output.pages.PageSpec.numbers`), never from a list kept
here: a page that draws a numeric widget the registry does not declare is reported (``unknown``), and so is a
declared option no page drew (``unseen``) — either fails the sweep.

Two parts, each against its own server process:

- :func:`apptest_sweep` (run in a child process, ``python -m benchmarks.option_sweep``, with ``INSPECTOR_HOSTED=1``):
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

import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time
import urllib.parse
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
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


# ------------------------------------------------------------------------------------------------ AppTest part


@contextmanager
def timed_runs(record: list):
    """Time every job the app runs under the deadline (the block of :func:`inspector.serving.run.holding`)."""
    from inspector.serving import run

    original = run.job_deadline

    @contextmanager
    def timed(seconds, job, admit=None):
        started, error = time.perf_counter(), ""
        try:
            with original(seconds, job, admit) as deadline:
                yield deadline
        except BaseException as err:
            error = type(err).__name__
            raise
        finally:
            record.append((str(job.key if hasattr(job, "key") else job), time.perf_counter() - started, error))

    run.job_deadline = timed
    try:
        yield
    finally:
        run.job_deadline = original


def declared_keys() -> dict[str, set[str]]:
    """Every registered page's declared numeric widget keys (the registry, read now)."""
    from inspector.output.pages import PAGE_REGISTRY

    return {name: {option.key for option in spec.numbers} for name, spec in PAGE_REGISTRY.items()}


def undeclared(page: str, drawn) -> list[str]:
    """The numeric widgets ``page`` drew (``drawn``: their keys) that the registry does not declare, as PAGE:KEY."""
    return sorted(f"{page}:{key}" for key in set(drawn) - declared_keys()[page])


def _widgets(at) -> dict[str, object]:
    """The numeric widgets drawn (key → element): number inputs, sliders, select-sliders, multiselects of numbers."""
    found = {}
    for kind in WIDGET_TYPES:
        for widget in getattr(at, kind):
            if kind in ("select_slider", "multiselect") and not all(
                    _is_number(option) for option in widget.options):
                continue
            if widget.key:
                found[widget.key] = widget
    return found


def _is_number(text) -> bool:
    try:
        float(str(text).replace(",", ""))
    except ValueError:
        return False
    return True


def _is_float(widget) -> bool:
    return type(widget).__name__ == "NumberInput" and widget.proto.data_type == widget.proto.FLOAT


def _options(widget) -> list[int]:
    return [int(str(option).replace(",", "")) for option in widget.options]


def extremes(widget) -> tuple:
    """The widget's lowest and highest value, and one step past each."""
    if getattr(widget, "min", None) is not None:
        step = widget.step or 1
        return widget.min, widget.max, widget.max + step, widget.min - step
    options = _options(widget)
    return options[0], options[-1], options[-1] * 2, -1


def widget_values(widget) -> list:
    """The values to set ``widget`` to: its extremes (:func:`extremes`), and NaN, ±inf and the smallest subnormal for
    a float input (a hostile client sends what it likes; Streamlit keeps a value outside the range out of the
    script). A multiselect gets its first choice, all of them, and a length it does not offer."""
    low, high, above, below = extremes(widget)
    if type(widget).__name__ == "Multiselect":
        return [[low], _options(widget), [above], [below]]
    values = [low, high, above, below]
    if _is_float(widget):
        values += [math.nan, math.inf, -math.inf, 5e-324]
    return values


def link_classes(widgets: dict[str, object], options) -> list[dict[str, str]]:
    """A page's share-link sweep: one query per value class, every numeric parameter its link carries set to that
    class at once — each option's lowest, highest, one past each — then NaN, ±inf, 1e309 and a 2,000-digit string."""
    linked = [o for o in options if o.link is not None and o.key in widgets]
    queries = []
    for index in range(4):
        query = {}
        for option in linked:
            value = extremes(widgets[option.key])[index]
            shown = f"{value:g}" if isinstance(value, float) else str(value)
            query[option.link] = f"{shown},{shown}" if option.link == "mcell" else shown
        queries.append(query)
    for value in LINK_VALUES:
        queries.append({o.link: f"{value},{value}" if o.link == "mcell" else value for o in linked})
    return [query for query in queries if query]


def _run_page(at, record: list, page: str, model: str, option: str, path: str, value) -> PageRun:
    runs: list = []
    started = time.perf_counter()
    with timed_runs(runs):
        at.run()
    row = PageRun(page=page, model=model, option=option, path=path, value=repr(value)[:40],
                  seconds=time.perf_counter() - started, runs=runs,
                  exceptions=[str(e.value)[:300] for e in at.exception], errors=[str(e.value)[:200] for e in at.error])
    record.append(row)
    print(f"  {page} {model} {option} {path} {row.value}: {row.seconds:.1f} s, runs "
          f"{[(j, round(s, 1), e) for j, s, e in runs]}{' EXCEPTION' if row.exceptions else ''}",
          file=sys.stderr, flush=True)
    return row


def _opened(page: str, model: str, query: dict[str, str]) -> object:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO_ROOT / "app.py"), default_timeout=900)
    for name, value in {"model": model, **query}.items():
        at.query_params[name] = value
    at.switch_page(f"views/{page}.py")
    return at


def _meet(at, needs) -> bool:
    """Set the widgets ``needs`` names (a mode, a choice) as a reader would; whether any was set."""
    met = False
    for key, value in needs:
        for kind in ("selectbox", "radio", "number_input", "toggle", "checkbox"):
            found = [w for w in getattr(at, kind) if w.key == key]
            if found and _set(found[0], value):
                met = True
                break
    return met


def _start(at, option) -> None:
    """Switch on (or click) what starts the work ``option`` sizes."""
    if option.starts is None:
        return
    toggles = [w for w in at.toggle if w.key == option.starts]
    if toggles:
        toggles[0].set_value(True)
        return
    buttons = [w for w in at.button if w.key == option.starts]
    if buttons:
        buttons[0].click()


def _set(widget, value) -> bool:
    """Set ``widget`` to ``value`` as a client would send it; False when the test client cannot even send it (a
    select-slider or multiselect value it does not offer: a browser has no way to send one either)."""
    from streamlit.testing.v1.errors import AppTestError

    try:
        widget.set_value(value)
    except (ValueError, IndexError, KeyError, TypeError, AppTestError):  # AppTestError: a disabled widget
        return False
    return True


def sweep_option(page: str, model: str, option, record: list) -> dict[str, object]:
    """Drive ``option`` of ``page`` on ``model`` through its widget (module docstring), in one session; the numeric
    widgets the page drew (key → element; without ``option.key`` when the page did not draw it)."""
    at = _opened(page, model, {})
    _run_page(at, record, page, model, option.key, "open", "")
    if _meet(at, option.needs):
        _run_page(at, record, page, model, option.key, "open", repr(option.needs))
    drawn = _widgets(at)
    if option.key not in drawn:
        return drawn
    for value in widget_values(drawn[option.key]):
        widget = _widgets(at).get(option.key)
        if widget is None or not _set(widget, value):
            continue
        _start(at, option)
        _run_page(at, record, page, model, option.key, "widget", value)
    return drawn


def sweep_links(page: str, model: str, options, widgets: dict[str, object], record: list) -> None:
    """``page``'s share links on ``model`` (:func:`link_classes`), each opened in a fresh session, with what starts
    the options' work switched on."""
    for query in link_classes(widgets, options):
        at = _opened(page, model, query)
        starting = [o for o in options if o.starts and o.link in query]
        if starting:
            at.run()
            for option in starting:
                _start(at, option)
        _run_page(at, record, page, model, ",".join(query), "link", next(iter(query.values())))


def layer_seconds(spec: str) -> float:
    """One layer's time on ``spec``: a forward at the longest text this server lets a Heads job read (the largest
    single forward of a request), divided by the layers."""
    from inspector.core.capture import capture
    from inspector.serving.hosting import HostingPolicy
    from inspector.serving.jobs import job_token_limit
    from views import session

    loaded = session.cached_model(spec)
    tokens = job_token_limit("heads", loaded.info, HostingPolicy.from_env()) or 256
    text = " the" * (tokens - 2)
    capture(loaded, text, weights=None, truncate=True)  # warm
    started = time.perf_counter()
    capture(loaded, text, weights=None, truncate=True)
    return (time.perf_counter() - started) / loaded.info.num_layers


def apptest_sweep(models: list[str], pages: list[str] | None = None) -> dict:
    """The AppTest part, in this process (a hosted server: ``INSPECTOR_HOSTED=1`` set by the caller): every page
    opened on every model (the warm RSS after), then every declared option of every page swept (module docstring)
    on MiniLM when the option runs on it, and on each decoder in ``models`` when the page offers it only there."""
    from inspector.output.pages import PAGE_REGISTRY

    record: list[PageRun] = []
    seen: set[str] = set()
    drawn: dict[str, set[str]] = {}
    pages = pages or list(PAGE_REGISTRY)
    layer_s = {}
    for model in [*models, TASK_MODEL]:
        layer_s[model] = layer_seconds(model)
        for page in pages:
            if model == TASK_MODEL and not any(o.on == "task" for o in PAGE_REGISTRY[page].numbers):
                continue  # the task models are opened only where a page offers them options
            at = _opened(page, model, {})
            _run_page(at, record, page, model, "", "open", "")
            drawn.setdefault(page, set()).update(_widgets(at))
    warm_mib = RssSampler(os.getpid()).now_mib()
    for page in pages:
        options = PAGE_REGISTRY[page].numbers
        for model in sorted({model for option in options for model in models_for(option, models)}):
            here = [option for option in options if model in models_for(option, models)]
            widgets: dict[str, object] = {}
            for option in here:
                found = sweep_option(page, model, option, record)
                drawn[page].update(found)
                if option.key in found:
                    seen.add(option.key)
                    widgets[option.key] = found[option.key]
            sweep_links(page, model, here, widgets, record)
    unknown = [key for page in pages for key in undeclared(page, drawn.get(page, ()))]
    unseen = sorted(f"{page}:{key}" for page in pages for key in declared_keys()[page] - seen)
    return {"rows": [asdict(row) for row in record], "unknown": unknown, "unseen": unseen, "layer_s": layer_s,
            "warm_mib": warm_mib}


# ------------------------------------------------------------------------------------------------ share links


_SETTLED = """() => {
    const running = document.querySelector('[data-testid="stStatusWidget"]');
    const shared = document.querySelector('[data-testid="stSidebar"] [data-testid="stCode"]');
    const stopped = document.querySelector('[data-testid="stMain"] [data-testid="stAlertContentError"], '
        + '[data-testid="stMain"] [data-testid="stAlertContentInfo"], [data-testid="stException"]');
    return !running && (shared || stopped) ? true : false;
}"""


def link_queries(spec) -> list[dict[str, str]]:
    """One query per hostile value class for a page: every numeric parameter its link carries (the view's layer and
    head, and its own options') set to that class — past the top, below zero, NaN, inf and a 2,000-digit string."""
    from inspector.output.pages import VIEW_NUMBERS

    keys = list(VIEW_NUMBERS) + sorted({o.link for o in spec.numbers if o.link})
    queries = []
    for value in ("1000000000000", "-1", *LINK_VALUES[:3]):
        queries.append({key: f"{value},{value}" if key == "mcell" else value for key in keys})
    return queries


def link_sweep(browser, url: str, models: list[str], timeout_s: float, record: list, *, hostile: bool = True) -> None:
    """Open every page's hostile links (:func:`link_queries`; with ``hostile=False`` each page once at its defaults)
    on the hosted server at ``url``, one at a time: the seconds until the page has finished running (Streamlit's
    running indicator gone, and the page's share box — drawn last — or its one-line refusal on screen), and what it
    said."""
    from inspector.output.pages import PAGE_REGISTRY

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        for model in [*models, TASK_MODEL]:
            for spec in PAGE_REGISTRY.values():
                offered = {m for o in spec.numbers for m in models_for(o, models)} or {DEFAULT_MODEL}
                if model not in offered:
                    continue  # each page on the models its options are swept on (MiniLM when it has none)
                for query in link_queries(spec) if hostile else [{}]:
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


def sweep(models: list[str], deadline_s: float, *, browser=None, pages: list[str] | None = None) -> SweepResult:
    """Both parts (module docstring) under a hosted server with ``deadline_s``: the AppTest part in a child process,
    the links in ``streamlit run`` driven by ``browser`` (None: the AppTest part only)."""
    from benchmarks.live_app import running_server

    env = {**os.environ, **hosted_env(deadline_s), "PYTHONPATH": str(REPO_ROOT)}
    with tempfile_path() as out:
        command = [sys.executable, "-m", "benchmarks.option_sweep", "--json", str(out), "--models", *models]
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
                link_sweep(browser, url, models, 3 * deadline_s + 120, rows, hostile=False)
                warm = served.now_mib()
                link_sweep(browser, url, models, 3 * deadline_s + 120, rows)
            memory_mib["streamlit run"] = (warm, served.peak_mib)
    return SweepResult(rows=rows, unknown=found["unknown"], unseen=found["unseen"], layer_s=found["layer_s"],
                       memory=memory_mib, deadline_s=deadline_s)


@contextmanager
def tempfile_path():
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder) / "sweep.json"


def main(argv: list[str] | None = None) -> int:
    """The AppTest part as a child process: ``--json OUT --models M… [--pages P…]``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--models", nargs="+", default=[DEFAULT_MODEL])
    parser.add_argument("--pages", nargs="*")
    args = parser.parse_args(argv)
    args.json.write_text(json.dumps(apptest_sweep(args.models, args.pages)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
