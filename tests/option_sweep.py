"""The AppTest part of the hosted option sweep (:mod:`benchmarks.option_sweep`, issue 45): run as a child process,
``python -m tests.option_sweep --json OUT --models M… [--pages P…]``, with ``INSPECTOR_HOSTED=1`` — the hosted server
whose resident memory the parent samples. A test client lives with the tests: benchmarks never import Streamlit."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from benchmarks.option_sweep import (
    DEFAULT_MODEL,
    LINK_VALUES,
    REPO_ROOT,
    TASK_MODEL,
    WIDGET_TYPES,
    PageRun,
    RssSampler,
    declared_keys,
    models_for,
    undeclared,
)


@contextmanager
def timed_runs(record: list):
    """Time every job the app runs under the deadline (the block of :func:`inspector.serving.run.holding`)."""
    from inspector.serving import run

    original = run.job_deadline

    @contextmanager
    def timed(seconds, job, admit=None, *, until=None):
        started, error = time.perf_counter(), ""
        try:
            with original(seconds, job, admit, until=until) as deadline:
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
        for kind in ("selectbox", "radio", "number_input", "slider", "toggle", "checkbox"):
            found = [w for w in getattr(at, kind) if w.key == key]
            if found and _set(found[0], value):
                met = True
                break
    return met


def _start(at, option) -> None:
    """Switch on (or click) what starts the work ``option`` sizes; a disabled one is the page refusing the value
    before any work (Lesson 7's Measure past the hosted lengths), which the next run records as it is."""
    if option.starts is None:
        return
    toggles = [w for w in at.toggle if w.key == option.starts and not w.disabled]
    if toggles:
        toggles[0].set_value(True)
        return
    buttons = [w for w in at.button if w.key == option.starts and not w.disabled]
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


def _value_of(at, key):
    """The current value of the widget ``key`` (any kind), or None when the page did not draw it."""
    for kind in ("selectbox", "radio", "number_input", "slider", "select_slider", "multiselect", "toggle", "checkbox"):
        for widget in getattr(at, kind):
            if widget.key == key:
                return widget.value
    return None


def _restore(at, saved: dict[str, object]) -> None:
    """Set every widget of ``saved`` (key → value) back, for the next option's first run (no run of its own)."""
    for key, value in saved.items():
        if value is not None:
            _meet(at, [(key, value)])


def sweep_options(page: str, model: str, options, record: list) -> dict[str, object]:
    """Drive each of ``options`` of ``page`` on ``model`` through its widget (module docstring), all in one session
    opened once: an option's needs are met, its values run, then it, its needs and what it starts are set back to
    what they were, so the next option runs from the page's defaults. The numeric widgets the page drew (key →
    element as last drawn)."""
    at = _opened(page, model, {})
    _run_page(at, record, page, model, "", "open", "")
    drawn = _widgets(at)
    for option in options:
        keys = [key for key, _ in option.needs] + [option.key] + ([option.starts] if option.starts else [])
        saved = {key: _value_of(at, key) for key in keys}
        if _meet(at, option.needs):
            _run_page(at, record, page, model, option.key, "open", repr(option.needs))
            drawn.update(_widgets(at))
        if option.key not in _widgets(at):
            _restore(at, saved)
            continue
        saved[option.key] = _value_of(at, option.key)
        for value in widget_values(_widgets(at)[option.key]):
            widget = _widgets(at).get(option.key)
            if widget is None or not _set(widget, value):
                continue
            _start(at, option)
            _run_page(at, record, page, model, option.key, "widget", value)
            drawn.update(_widgets(at))
        _restore(at, saved)
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
    print(f"  warm: {warm_mib:,.0f} MiB resident with every page opened on {', '.join(layer_s)}", file=sys.stderr,
          flush=True)
    for page in pages:
        options = PAGE_REGISTRY[page].numbers
        for model in sorted({model for option in options for model in models_for(option, models)}):
            here = [option for option in options if model in models_for(option, models)]
            widgets = sweep_options(page, model, here, record)
            drawn[page].update(widgets)
            seen.update(row.option for row in record if row.path == "widget" and row.page == page)
            sweep_links(page, model, here, widgets, record)
    unknown = [key for page in pages for key in undeclared(page, drawn.get(page, ()))]
    unseen = sorted(f"{page}:{key}" for page in pages for key in declared_keys()[page] - seen)
    return {"rows": [asdict(row) for row in record], "unknown": unknown, "unseen": unseen, "layer_s": layer_s,
            "warm_mib": warm_mib}


def main(argv: list[str] | None = None) -> int:
    """The AppTest part as a child process: ``--json OUT --models M… [--pages P…]``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--models", nargs="+", default=[DEFAULT_MODEL])
    parser.add_argument("--pages", nargs="*")
    args = parser.parse_args(argv)
    args.json.write_text(json.dumps(apptest_sweep(args.models, args.pages)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
