"""What every lesson's drawing on the Lessons page shares (views/lessons.py loops over the lesson registry,
:mod:`inspector.analyses.lessons.registry`): the cached library calls — one per part of the page, and one per lesson
measured on request — and :class:`LessonView`, the page's state a lesson draws with (its question, its charts with
their exports, its answers, its "run" button).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from inspector import InspectorError
from inspector.analyses.lessons import registry
from inspector.analyses.lessons.registry import LESSONS, Lesson, LessonContext, lesson_answers
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.base.progress import Progress
from inspector.output.export import Provenance, screen_title
from inspector.output.share import escape_markdown
from views import session
from views.export_buttons import export_buttons
from views.progress_bar import progress_bar

SCROLL_KEY = "_lessons_scroll_to"  # the lesson a link just opened: scrolled to once, when it is drawn
# Scrolls the page to the lesson's container (Streamlit gives a keyed container the class st-key-KEY), its title just
# below Streamlit's fixed header (scrolled to the very top, the header covered the title: the walkthrough of issue 44
# saw a lesson's question with no lesson above it). Kept there for 10 s while the page still draws — the lessons above
# and below change height as their skeletons fill, and a scroll made before the page below exists stops short — and
# given up at the reader's first wheel, touch, key or click. Runs once: the page draws it only on the link's first run.
_SCROLL_SCRIPT = """<script>
(function () {
  let moved = false;
  const events = ["wheel", "touchstart", "keydown", "mousedown"];
  const stop = () => { moved = true; events.forEach(type => document.removeEventListener(type, stop, true)); };
  events.forEach(type => document.addEventListener(type, stop, true));
  (function place(tries) {
    const target = document.querySelector(".st-key-%s");
    if (moved) { return; }
    if (target) {
      const header = document.querySelector('[data-testid="stHeader"]');
      const below = (header ? header.getBoundingClientRect().bottom : 0) + 8;
      target.style.scrollMarginTop = below + "px";
      if (Math.abs(target.getBoundingClientRect().top - below) > 2) { target.scrollIntoView({block: "start"}); }
    }
    if (tries > 0) { setTimeout(() => place(tries - 1), 200); } else { stop(); }
  })(50);
})();
</script>"""


def anchor_key(number: int) -> str:
    """The key of lesson ``number``'s container on the Lessons page (its anchor: class ``st-key-lesson-N``)."""
    return f"lesson-{number}"


def lesson_context(spec: str, contrast: str | None, text: str, backend: str, layer: int, head: int,
                   lengths: Sequence[int] | None = None, progress: Progress | None = None,
                   lang: str = DEFAULT_LANGUAGE) -> LessonContext:
    return LessonContext(session.cached_model(spec), text, layer, head, backend=backend, lengths=lengths,
                         contrast=None if contrast is None else session.cached_model(contrast), progress=progress,
                         lang=lang)


def plan_models(spec: str, contrast: str | None, text: str, lang: str):
    """The Lessons job on ``spec`` and, when given, its ``contrast`` model, each planned from its own token count
    (issue 45, item 2: a word of 3 tokens on MiniLM is 1,600 on SmolLM2): a text past either model's hosted limit is
    refused in one line naming that model (:class:`~inspector.base.errors.OverBudgetError`). Returns ``spec``'s plan,
    to run the lessons in (``with plan.running():``: the run slot and the deadline)."""
    if contrast is not None and contrast != spec:
        session.plan_job("lessons", session.cached_model(contrast), lang, [text])
    return session.plan_job("lessons", session.cached_model(spec), lang, [text])


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_part(part: str, spec: str, contrast: str | None, text: str, backend: str, layer: int,
                head: int) -> dict[str, Any]:
    """Every lesson of ``part`` that runs with the page, by slug: NumPy arrays only, safe to share between sessions
    (the encoder lessons share one baseline forward)."""
    return registry.compute_part(part, lesson_context(spec, contrast, text, backend, layer, head))


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_requested(slug: str, spec: str, contrast: str | None, text: str, backend: str, layer: int,
                     head: int, lang: str) -> Any:
    """Lesson ``slug``'s measurement on request (seconds: a long text's perplexity, timings, one forward per token,
    patching every head); ``lang``: the reader's, for a lesson that brings its own example."""
    return LESSONS[slug].on_request(lesson_context(spec, contrast, text, backend, layer, head, lang=lang))


@dataclass(frozen=True)
class LessonView:
    """The page's state a lesson draws with: the language and slide mode, the model (its sidebar ``spec``, the name
    shown, its info), the text, backend, layer and head the lessons ran on, the contrast model (a decoder lesson's
    encoder), the lesson a link opened, the provenance of the exports (None: no export buttons) and the part's
    results."""

    lang: str
    slide: bool
    spec: str
    model_name: str
    info: Any  # inspector.core.loading.ModelInfo
    text: str
    backend: str
    layer: int
    head: int
    contrast: str | None = None
    opened: int | None = None
    exported: Provenance | None = None
    results: Mapping[str, Any] = field(default_factory=dict)  # the part's results, by slug (lesson 2 reads lesson 1's)

    def expanded(self, lesson: Lesson) -> bool:
        """Lesson 1 opens when a link opens none; a link's lesson opens."""
        return self.opened == lesson.number or (self.opened is None and lesson.number == 1)

    @contextmanager
    def section(self, lesson: Lesson) -> Iterator[None]:
        """The lesson's expander (open when :meth:`expanded`) in a container keyed :func:`anchor_key`; when a link
        just opened this lesson (a lecture step), the page scrolls to it once (issue 44: the step landed at the top
        of the page, one or two screens above the lesson)."""
        with st.container(key=anchor_key(lesson.number)):
            with st.expander(t(f"{lesson.key}.title", self.lang), expanded=self.expanded(lesson)):
                yield
        if st.session_state.get(SCROLL_KEY) == lesson.number:
            del st.session_state[SCROLL_KEY]
            st.html(_SCROLL_SCRIPT % anchor_key(lesson.number), unsafe_allow_javascript=True)

    def header(self, lesson: Lesson) -> None:
        """The lesson's question and short explanation."""
        st.markdown(f"**{escape_markdown(t('lessons.question', self.lang))}** "
                    f"{escape_markdown(t(lesson.key + '.question', self.lang))}")
        st.caption(t(lesson.key + ".explain", self.lang))

    def show(self, name: str, figure) -> None:
        """A lesson's chart across the page, its title re-wrapped as the column grows, with its PNG, SVG and 16:9 slide
        exports under it when the page exports (two side by side: :meth:`show_pair`)."""
        with st.container():
            st.altair_chart(screen_title(figure))
            if self.exported is not None:
                export_buttons(name, figure, self.exported, self.lang, f"lessons_{name}")

    def show_pair(self, left: tuple[str, Any], right: tuple[str, Any]) -> None:
        """Two of a lesson's charts side by side, each ``(name, figure)``, with their exports in one row under both:
        under charts of different heights (a legend under one of them) each chart's own buttons stood at a different
        height (issue 44 walkthrough, lesson 4 at 1000 and 1400 px)."""
        pair = (left, right)
        for column, (_, figure) in zip(st.columns(2), pair):
            column.altair_chart(screen_title(figure))
        if self.exported is not None:
            for column, (name, figure) in zip(st.columns(2), pair):
                with column:
                    export_buttons(name, figure, self.exported, self.lang, f"lessons_{name}")

    def answer(self, *results: Any, texts: Sequence[str] = ()) -> None:
        """The answer paragraph(s) the results wrote from their numbers (and ``texts``), shown as plain text."""
        st.markdown(f"**{escape_markdown(t('lessons.answer', self.lang))}**")
        for text in [answer.text(self.lang) for result in results for answer in lesson_answers(result)] + [*texts]:
            st.info(escape_markdown(text))

    def requested(self, slug: str, button_key: str, label_key: str) -> Any | None:
        """A lesson's measurement on request: its button; once clicked, the result (cached) for as long as the model,
        text, backend, layer and head stay (and the language, for a lesson whose result reads it: a reader switching
        languages keeps the other results) — None before, or with the error shown when it fails."""
        lang = self.lang if LESSONS[slug].reads_language else DEFAULT_LANGUAGE
        wanted = (self.spec, self.contrast, self.text, self.backend, self.layer, self.head, lang)
        remembered = f"_requested:{slug}"
        if not (st.button(t(label_key, self.lang), key=button_key) or st.session_state.get(remembered) == wanted):
            return None
        with progress_bar(t("decoder.measuring", self.lang)):
            try:
                with plan_models(self.spec, self.contrast, self.text, self.lang).running():
                    result = cached_requested(slug, *wanted)
            except InspectorError as err:
                session.show_error(err, self.lang)
                return None
        st.session_state[remembered] = wanted
        return result


Draw = Callable[[LessonView, Any], None]  # a lesson's drawing: (the page, its compute result or None)
