"""Lessons: the questions people fumble about attention, each as question · short explanation · live experiment on
the chosen model and text · chart · answer written from the measured numbers.

The page loops over the lesson registry (:data:`inspector.analyses.lessons.registry.LESSONS`): the sidebar's model's
lessons (one cached call, :func:`views.lesson_page.cached_part`, drawn by :mod:`views.lessons_encoder`), the decoder
section's (:mod:`views.lessons_decoder`), then the quiz (:mod:`views.lesson_quiz`). A lesson measured on request
(timings, a long text's perplexity) runs from its button.
"""

from __future__ import annotations

import streamlit as st

from inspector import InspectorError
from inspector.analyses.lessons.registry import LESSONS, lessons_of
from inspector.base.i18n import t
from inspector.core.forward import backend_for
from inspector.output.export import Provenance
from inspector.output.share import decode_lesson, encode_lesson, encode_lessons
from views import lesson_quiz, lessons_decoder, lessons_encoder, pages, session, share_state, sidebar
from views.lesson_page import SCROLL_KEY, LessonView, cached_part

DRAW = {**lessons_encoder.DRAW, **lessons_decoder.DRAW}  # every registered lesson's drawing but the quiz's


def opened_lesson() -> int | None:
    """The lesson a share link opens (``lesson=N``, e.g. a lecture step), read once per session with a warning when
    it is not one; None: lesson 1, as always. A decoder lesson takes the link's layer and head for the decoder section
    too (:func:`views.lessons_decoder.section`)."""

    def apply(lesson: int | None) -> None:
        st.session_state["_lessons_opened"] = lesson
        if lesson is not None:  # scrolled to once, when drawn (views.lesson_page.LessonView.section)
            st.session_state[SCROLL_KEY] = lesson
        if lesson in lessons_decoder.DECODER_LESSONS:
            st.session_state["_decoder_link"] = (st.session_state.get("layer", 0), st.session_state.get("head", 0))

    pages.restore_once("lessons", decode_lesson, apply)
    return st.session_state.get("_lessons_opened")


heading = st.container()  # the title is in the sidebar's language, known only once the sidebar is drawn
chosen, status, loaded = sidebar.open_page()
lang = chosen.state.lang
opened = opened_lesson()
pages.show_link_warnings("lessons", lang)
heading.title(t("lessons.title", lang))
heading.caption(t("lessons.caption", lang))
info = loaded.info
layer_column, head_column = st.columns(2)
layer = layer_column.selectbox(t("lessons.layer", lang), range(info.num_layers), key="layer")
head = head_column.selectbox(t("lessons.head", lang), range(info.num_heads), key="head")
status.update(label=t("lessons.running", lang))
text, backend = chosen.state.text, chosen.state.backend
try:
    with session.plan_job("lessons", loaded, lang, [text]).running():  # a hosted instance's limits
        results = cached_part("encoder", chosen.spec, None, text, backend, layer, head)
except InspectorError as err:
    status.update(label=t("inputs.run_failed", lang), state="error")
    session.show_error(err, lang)
    st.stop()
model_name = sidebar.shown_model_name(info.name, lang)  # the bundled model's name in the page's language
status.update(state="complete", label=t("lessons.done", lang, model=model_name, n=len(results["definition"].tokens),
                                        layer=layer, head=head, backend=backend))

page = LessonView(lang=lang, slide=chosen.state.slide, spec=chosen.spec, model_name=model_name, info=info, text=text,
                  backend=backend, layer=layer, head=head, opened=opened, results=results,
                  exported=Provenance(model=info.name, text=text, backend=backend_for(loaded, backend), layer=layer,
                                      head=head))
for lesson in lessons_of("encoder"):
    with page.section(lesson):
        page.header(lesson)
        DRAW[lesson.slug](page, results.get(lesson.slug))

decoder = lessons_decoder.section(chosen, loaded, lang, chosen.state.slide, opened)

quiz = LESSONS["quiz"]
with st.expander(t(f"{quiz.key}.title", lang), expanded=True):
    lesson_quiz.render(results["definition"], chosen, lang, decoder)

share_state.publish_view(chosen.state, layer=layer, head=head,
                         extra={**encode_lesson(opened), **encode_lessons(lessons_decoder.link_state())})
