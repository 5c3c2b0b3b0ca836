"""Every page's figure export in one line (issue 31): PNG (2×) and SVG with the provenance caption, and a 16:9 slide
(1920 × 1080: title, chart, caption) of the same chart — :func:`export_buttons` under any chart.

This module is UI only: the images are made by :mod:`inspector.output.export`, and only when a button is clicked
(a deferred download), so a page that shows ten charts renders none of them until asked.

An export never fails silently (issue 44): Streamlit runs a deferred download in a thread of its own, where page
commands are ignored and a failure reached only the server log. Each button's render is watched
(:class:`ExportAttempts`); the click also reruns the page, and that rerun waits for the render and shows its failure
once, in the page's language, under the buttons.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import streamlit as st

from inspector.base.i18n import t
from inspector.output.export import EXPORT_MAX_CELLS, Provenance, chart_png, chart_svg, with_provenance
from inspector.output.slides import slide_png

_LOGGER = logging.getLogger(__name__)
# How long the rerun a click starts waits for Streamlit to begin the render (the two requests leave the browser
# together), and then for the render to end: a slide of a large chart takes a few seconds on a busy 2-CPU machine.
START_WAIT_S = 5.0
FINISH_WAIT_S = 90.0


class ExportAttempts:
    """The renders one download button's clicks started and how the last failed one ended. Shared between Streamlit's
    download thread (:meth:`run`) and the rerun the click starts (:meth:`failure`); kept in the session's state, so
    the rerun finds the object the click's render wrote to."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._started = self._finished = self._reported = 0
        self._error: str | None = None

    def run(self, render: Callable[[], bytes | str]) -> bytes | str:
        """``render()``, counted; a failure is logged, kept for :meth:`failure` and raised again (Streamlit then
        serves no file rather than a broken one)."""
        with self._changed:
            self._started += 1
        try:
            return render()
        except Exception as err:
            _LOGGER.exception("export failed")
            # The reason only: the library's advice after " — " is English, and the page gives its own.
            reason = str(err).splitlines()[0].split(" — ")[0] if str(err) else type(err).__name__
            with self._changed:
                self._error = reason
            raise
        finally:
            with self._changed:
                self._finished += 1
                self._changed.notify_all()

    def failure(self, *, start_wait_s: float = START_WAIT_S, finish_wait_s: float = FINISH_WAIT_S) -> str | None:
        """The reason the renders started since the last call failed, once (None when they succeeded or none ran):
        waits up to ``start_wait_s`` for a render to start and up to ``finish_wait_s`` for it to end."""
        with self._changed:
            self._changed.wait_for(lambda: self._started > self._reported, timeout=start_wait_s)
            self._changed.wait_for(lambda: self._finished >= self._started, timeout=finish_wait_s)
            self._reported = self._started
            error, self._error = self._error, None
            return error


def _attempts(key: str) -> ExportAttempts:
    if not isinstance(st.session_state.get(key), ExportAttempts):
        st.session_state[key] = ExportAttempts()
    return st.session_state[key]


def _check(attempts_key: str, message_key: str, kind: str, lang: str) -> None:
    """The click's rerun: wait for the render and keep its failure, in ``lang``, for the buttons to show."""
    reason = _attempts(attempts_key).failure()
    if reason is not None:
        st.session_state[message_key] = t("export.failed", lang, kind=kind, reason=reason)


def export_buttons(name: str, chart, provenance: Provenance, lang: str, key: str, *, cells: int = 0) -> None:
    """PNG, SVG and 16:9 slide downloads of ``chart`` named ``name`` (a file stem), captioned with ``provenance`` in
    ``lang``; ``key`` makes the widgets unique on the page. ``cells``: the chart's data rows, when a chart can be
    too large to render on request (past :data:`EXPORT_MAX_CELLS` the page says so instead). A render that fails
    shows one message under the buttons (:class:`ExportAttempts`)."""
    if cells > EXPORT_MAX_CELLS:
        st.caption(t("export.too_large", lang, limit=f"{EXPORT_MAX_CELLS:,}", cells=f"{cells:,}"))
        return
    message_key = f"{key}_export_failure"
    slide = t("export.slide", lang)
    downloads = (
        ("PNG", "png", lambda: chart_png(with_provenance(chart, provenance, lang), scale=2), f"{name}.png",
         "image/png", ":material/download:", None),
        ("SVG", "svg", lambda: chart_svg(with_provenance(chart, provenance, lang)), f"{name}.svg", "image/svg+xml",
         ":material/download:", None),
        (slide, "slide", lambda: slide_png(chart, provenance, lang), f"{name}-slide.png", "image/png",
         ":material/slideshow:", t("export.slide_help", lang)),
    )
    with st.container(horizontal=True):
        for label, kind, render, file_name, mime, icon, help_text in downloads:
            attempts_key = f"{key}_{kind}_attempts"
            attempts = _attempts(attempts_key)
            st.download_button(label, lambda attempts=attempts, render=render: attempts.run(render),
                               file_name=file_name, mime=mime, key=f"{key}_{kind}", icon=icon, help=help_text,
                               on_click=_check, args=(attempts_key, message_key, label, lang))
    failure = st.session_state.pop(message_key, None)
    if failure:
        st.error(failure, icon=":material/error:")
