"""Every page's bar for a long job: one adapter from the library's progress contract
(:mod:`inspector.base.progress`, ``progress(done, total, note)``) to ``st.progress``."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import streamlit as st

from inspector.base.errors import InspectorError
from inspector.base.progress import Progress
from inspector.core.deadline import check_deadline

# What says "running" (a page's stage line, a job's bar) sits in a container keyed with this prefix — Streamlit gives
# it the class st-key-<key> — which the app's style (RUNNING_STYLE, app.py) hides once the server no longer runs the
# page. The toolbar's Stop ends a run where it stands, with no chance to redraw anything: "Measuring 72 heads…", its
# spinner and a half-filled bar stayed on the page after the run was gone (issue 33, item 12).
RUNNING_KEY = "while_running_"
_keys = itertools.count()  # a key only needs to differ from the others in its run; a count over the process does
# Streamlit sets the app root's data-test-script-state to "running" — or "rerunRequested", while a rerun waits for the
# running script's next step — only while the server runs the page ("stopRequested" once Stop is pressed).
RUNNING_STYLE = ('<style>[data-testid="stApp"]:not([data-test-script-state="running"])'
                 f':not([data-test-script-state="rerunRequested"]) [class*="st-key-{RUNNING_KEY}"] '
                 '{display: none}</style>')
# A bar's words for one step of a job: ``label(done, total, note)`` → the text beside the bar, in the page's language.
# Not a Progress: it shows nothing, it returns the words a Progress shows.
ProgressLabel = Callable[[int, int, str], str]


def while_running(place=st):
    """A container in ``place`` (a placeholder, a column; the page by default) shown only while the page runs."""
    return place.container(key=f"{RUNNING_KEY}{next(_keys)}")


@contextmanager
def progress_bar(start: str | None, label: ProgressLabel | None = None) -> Iterator[Progress]:
    """A bar showing ``start`` (None: no text) at 0 while the ``with`` body runs; yields the job's ``progress``
    callback, which moves the bar to done / total with the text ``label(done, total, note)`` (the page's own
    words in its language; None: the job's English note as it is), and checks the job's deadline
    (:func:`inspector.core.deadline.check_deadline`; a hosted job stops there). The bar goes when the body ends —
    an error the body catches and shows, or an :class:`InspectorError` leaving it (its one line replaces the bar),
    included; another exception that leaves the body (a rerun, the Stop button) leaves it to the next run, which
    draws the page afresh — hidden meanwhile once the page is no longer running (:func:`while_running`)."""
    with while_running():
        bar = st.progress(0.0, text=start)

    def show(done: int, total: int, note: str) -> None:
        bar.progress(done / total, text=note if label is None else label(done, total, note))
        check_deadline()  # a hosted job's deadline (inspector.serving.jobs), checked at every step

    try:
        yield show
    except InspectorError:
        bar.empty()  # a refused or stopped job: its one-line error replaces the bar
        raise
    bar.empty()
