"""Every page's bar for a long job: one adapter from the library's progress contract
(:mod:`inspector.base.progress`, ``progress(done, total, note)``) to ``st.progress``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import streamlit as st

from inspector.base.errors import InspectorError
from inspector.base.progress import Progress
from inspector.core.deadline import check_deadline


@contextmanager
def progress_bar(start: str | None, label: Callable[[int, int, str], str] | None = None) -> Iterator[Progress]:
    """A bar showing ``start`` (None: no text) at 0 while the ``with`` body runs; yields the job's ``progress``
    callback, which moves the bar to done / total with the text ``label(done, total, note)`` (the page's own
    words in its language; None: the job's English note as it is), and checks the job's deadline
    (:func:`inspector.core.deadline.check_deadline`; a hosted job stops there). The bar goes when the body ends —
    an error the body catches and shows, or an :class:`InspectorError` leaving it (its one line replaces the bar),
    included; another exception that leaves the body (a rerun, the Stop button) leaves it to the next run, which
    draws the page afresh."""
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
