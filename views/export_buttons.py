"""Every page's figure export in one line (issue 31): PNG (2×) and SVG with the provenance caption, and a 16:9 slide
(1920 × 1080: title, chart, caption) of the same chart — :func:`export_buttons` under any chart.

This module is UI only: the images are made by :mod:`inspector.output.export`, and only when a button is clicked
(a deferred download), so a page that shows ten charts renders none of them until asked.

An export never fails silently (issue 44): Streamlit runs a deferred download in a thread of its own, where page
commands are ignored and a failure reached only the server log. Each button's render is watched
(:class:`ExportAttempts`); the click also reruns the page, and that rerun waits for the render and shows its failure
once, in the page's language, under the buttons — in 简体中文 without the renderer's English line
(:func:`failure_reason`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import streamlit as st

from inspector.base.i18n import DEFAULT_LANGUAGE, Notice, t
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
        self._error: BaseException | None = None

    def run(self, render: Callable[[], bytes | str]) -> bytes | str:
        """``render()``, counted; a failure is logged, kept for :meth:`failure` and raised again (Streamlit then
        serves no file rather than a broken one)."""
        with self._changed:
            self._started += 1
        try:
            return render()
        except Exception as err:
            _LOGGER.exception("export failed")
            with self._changed:
                self._error = err
            raise
        finally:
            with self._changed:
                self._finished += 1
                self._changed.notify_all()

    def failure(self, lang: str = DEFAULT_LANGUAGE, *, start_wait_s: float = START_WAIT_S,
                finish_wait_s: float = FINISH_WAIT_S) -> str | None:
        """The reason the renders started since the last call failed, in ``lang`` (:func:`failure_reason`), once
        (None when they succeeded or none ran): waits up to ``start_wait_s`` for a render to start and up to
        ``finish_wait_s`` for it to end."""
        with self._changed:
            self._changed.wait_for(lambda: self._started > self._reported, timeout=start_wait_s)
            self._changed.wait_for(lambda: self._finished >= self._started, timeout=finish_wait_s)
            self._reported = self._started
            error, self._error = self._error, None
        return None if error is None else failure_reason(error, lang)


def failure_reason(err: BaseException, lang: str) -> str:
    """Why an export failed, in ``lang``. On an English page: the error's first line without the library's advice
    after " — " (the page gives its own) — vl-convert's own words ("Cycle detected in dataflow graph.") included. On
    a page in another language: the error's notice, else the catalogue's sentence; never the renderer's English line
    (issue 44: it leaked into the 简体中文 message)."""
    if lang == DEFAULT_LANGUAGE:
        return str(err).splitlines()[0].split(" — ")[0] if str(err) else type(err).__name__
    notice = getattr(err, "notice", None)
    return notice.text(lang) if isinstance(notice, Notice) else t("export.reason_unknown", lang)


def _attempts(key: str) -> ExportAttempts:
    if not isinstance(st.session_state.get(key), ExportAttempts):
        st.session_state[key] = ExportAttempts()
    return st.session_state[key]


def _check(attempts_key: str, message_key: str, kind: str, lang: str) -> None:
    """The click's rerun: wait for the render and keep its failure, in ``lang``, for the buttons to show."""
    reason = _attempts(attempts_key).failure(lang)
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
            watched_download_button(label, render, key=f"{key}_{kind}", lang=lang, message_key=message_key,
                                    file_name=file_name, mime=mime, icon=icon, help=help_text)
    show_failure(message_key)


def watched_download_button(label: str, render: Callable[[], bytes | str], *, key: str, lang: str, message_key: str,
                            **options) -> None:
    """``st.download_button`` ``key`` whose file ``render()`` makes when it is clicked, watched
    (:class:`ExportAttempts`): a failure is kept under ``message_key``, in ``lang``, for :func:`show_failure`.
    ``options``: the button's other arguments (file_name, mime, icon, help)."""
    attempts_key = f"{key}_attempts"
    attempts = _attempts(attempts_key)
    st.download_button(label, lambda: attempts.run(render), key=key, on_click=_check,
                       args=(attempts_key, message_key, label, lang), **options)


def show_failure(message_key: str) -> None:
    """The failure a watched download left under ``message_key``, shown once."""
    failure = st.session_state.pop(message_key, None)
    if failure:
        st.error(failure, icon=":material/error:")
