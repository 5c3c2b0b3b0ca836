"""Lecture (issue 31, item 7): the storyline of attention as soft addressing, walked one step at a time — the steps
listed with the current one marked, its sentence of what to look at, "Open this step" (the page with the step's
model, text, layer and head, read as a share link is), previous / next, the step's share link and its 16:9 slide.

The steps are data in the library (:data:`inspector.output.lecture.LECTURE`); this page only shows them. Nothing runs a
model until the slide button is clicked (:mod:`views.lecture_slides`). The page's own link carries ``lecture=SLUG``.
"""

from __future__ import annotations

import streamlit as st

from inspector.base.i18n import t
from inspector.output.lecture import LECTURE, LECTURE_PARAM, decode_lecture, encode_lecture, step_params, step_url
from inspector.output.pages import PAGE_REGISTRY
from inspector.output.share import ViewState, encode_view, escape_markdown
from views import pages, share_state, sidebar
from views.export_buttons import show_failure, watched_download_button
from views.lecture_slides import slide_caption, step_slide_png

STEP_KEY = "lecture_step"
KEPT_KEY = "_lecture_kept"  # the step on screen, kept while another page runs


def restore_step() -> None:
    """Once per session (and after a step was opened): the step the link names (``lecture=SLUG``), with a warning
    when it names none; a link without one keeps the step on screen (back from a step's page)."""

    def read(params):
        return decode_lecture(params) if LECTURE_PARAM in params else (None, ())

    def apply(index: int | None) -> None:
        if index is not None:
            st.session_state[STEP_KEY] = index

    pages.restore_once("lecture", read, apply)


def move(by: int) -> None:
    st.session_state[STEP_KEY] = min(max(st.session_state[STEP_KEY] + by, 0), len(LECTURE) - 1)


heading = st.container()  # the title is in the sidebar's language, known only once the sidebar is drawn
chosen = sidebar.inputs()  # the language (app.py drew the sidebar and read the link); this page loads no model
lang = chosen.state.lang
heading.title(t("lecture.title", lang))
heading.caption(t("lecture.caption", lang))
restore_step()
pages.show_link_warnings("lecture", lang)

if STEP_KEY not in st.session_state:  # back from a step's page: Streamlit dropped the radio's value, the step stays
    st.session_state[STEP_KEY] = st.session_state.get(KEPT_KEY, 0)
steps_column, step_column = st.columns([2, 3], gap="large")
index = steps_column.radio(t("lecture.steps", lang), range(len(LECTURE)), key=STEP_KEY,
                           format_func=lambda i: f"{i + 1} · {t(LECTURE[i].title_key, lang)}")
st.session_state[KEPT_KEY] = index
step = LECTURE[index]
view = step.view_for(lang)  # 简体中文: Gemma and the Chinese sentence
url = step_url(st.context.url or "", step, lang)

with step_column:
    st.caption(t("lecture.step_of", lang, n=index + 1, total=len(LECTURE)))
    st.subheader(t(step.title_key, lang))
    st.markdown(f"**{escape_markdown(t('lecture.look', lang))}**")
    st.info(escape_markdown(t(step.look_key, lang)), icon=":material/visibility:")
    model = sidebar.model_choice_label(view.model, sidebar.SUGGESTED_MODELS.get(view.model, view.model), lang)
    where = dict(page=t(f"nav.{view.page}", lang), model=model, layer=view.layer,
                 head=view.head, text=view.text)
    st.caption(escape_markdown(t("lecture.opens_lesson", lang, lesson=t(f"lesson{step.lesson}.title", lang), **where)
                               if step.lesson is not None else t("lecture.opens", lang, **where)))
    # Open on its own line, Previous and Next on the next: the three in one row wrapped Next alone onto a second
    # line in the step's column at 1000 px (both languages).
    opened = st.button(t("lecture.open", lang), key="lecture_open", type="primary",
                       help=t("lecture.open_help", lang), icon=":material/open_in_new:")
    with st.container(horizontal=True):
        st.button(t("lecture.previous", lang), key="lecture_previous", on_click=move, args=(-1,), disabled=index == 0,
                  icon=":material/arrow_back:")
        st.button(t("lecture.next", lang), key="lecture_next", on_click=move, args=(1,),
                  disabled=index == len(LECTURE) - 1, icon=":material/arrow_forward:")
    st.markdown(f"**{escape_markdown(t('lecture.link', lang))}**")
    st.code(url, language=None, wrap_lines=True)
    st.caption(t("lecture.link_caption", lang))
    st.link_button(t("lecture.new_tab", lang), url, icon=":material/tab:")
    st.markdown(f"**{escape_markdown(t('lecture.slide', lang))}**")
    st.caption(slide_caption(step, lang))
    watched_download_button(t("lecture.slide_button", lang), lambda: step_slide_png(index, lang, url),
                            key="lecture_slide", lang=lang, message_key="lecture_slide_failure",
                            file_name=f"lecture-{index + 1:02d}-{step.slug}-{lang}.png", mime="image/png",
                            icon=":material/slideshow:")
    show_failure("lecture_slide_failure")

if opened:
    share_state.open_link(PAGE_REGISTRY[view.page].script, step_params(step, lang))

# The address bar: this page and its step (the sidebar's model and text are not part of a lecture link).
encoded = {**encode_view(ViewState(page="lecture", lang=lang)), **encode_lecture(index)}
if st.query_params.to_dict() != encoded:
    st.query_params.from_dict(encoded)
