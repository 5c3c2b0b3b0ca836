"""Lessons: the questions people fumble about attention, each as question · short explanation · live experiment on
the chosen model and text · chart · answer written from the measured numbers (:mod:`inspector.analyses.lessons`).

Widgets → one cached library call (:func:`inspector.analyses.lessons.all_lessons`) → charts and tables. The timing
lesson
and the quiz run on request; the quiz lives in :mod:`views.lesson_quiz`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from inspector import InspectorError
from inspector.analyses.lessons import (
    DEFAULT_LENGTHS,
    SCALE_NAMES,
    Lessons,
    all_lessons,
    complexity_lesson,
    sharpest_pair,
)
from inspector.base.i18n import device_label, t
from inspector.base.tokens import readable_tokens
from inspector.charts import lessons as charts
from inspector.charts.inspect import entropy_by_layer_chart
from inspector.core.forward import backend_for
from inspector.output.export import Provenance, screen_title
from inspector.output.share import decode_lesson, encode_lesson, encode_lessons, escape_markdown
from views import lesson_quiz, lessons_decoder, pages, session, share_state, sidebar
from views.export_buttons import export_buttons
from views.progress_bar import progress_bar

TIMING_CHOICES = (128, 256, 512, 1024, 2048, 4096)


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_lessons(spec: str, text: str, backend: str, layer: int, head: int) -> Lessons:
    """Lessons 1–6 for one model, text, layer and head: NumPy arrays only, safe to share between sessions."""
    return all_lessons(session.cached_model(spec), text, layer, head, backend=backend)


def opened_lesson() -> int | None:
    """The lesson a share link opens (``lesson=N``, e.g. a lecture step), read once per session with a warning when
    it is not one; None: lesson 1, as always. A decoder lesson (9 and up) takes the link's layer and head for the
    decoder section too (:func:`views.lessons_decoder.render`)."""

    def apply(lesson: int | None) -> None:
        st.session_state["_lessons_opened"] = lesson
        if lesson is not None and lesson > lessons_decoder.FIRST_DECODER_LESSON - 1:
            st.session_state["_decoder_link"] = (st.session_state.get("layer", 0), st.session_state.get("head", 0))

    pages.restore_once("lessons", decode_lesson, apply)
    return st.session_state.get("_lessons_opened")


heading = st.container()  # the title is in the sidebar's language, known only once the sidebar is drawn
chosen, status, loaded = sidebar.open_page()
lang = chosen.state.lang
opened = opened_lesson()
pages.show_link_warnings("lessons", lang)
slide = chosen.state.slide
heading.title(t("lessons.title", lang))
heading.caption(t("lessons.caption", lang))
info = loaded.info
layer_column, head_column = st.columns(2)
layer = layer_column.selectbox(t("lessons.layer", lang), range(info.num_layers), key="layer")
head = head_column.selectbox(t("lessons.head", lang), range(info.num_heads), key="head")
status.update(label=t("lessons.running", lang))
try:
    with session.plan_job("lessons", loaded, lang, [chosen.state.text]).running():  # a hosted instance's limits
        lessons = cached_lessons(chosen.spec, chosen.state.text, chosen.state.backend, layer, head)
except InspectorError as err:
    status.update(label=t("inputs.run_failed", lang), state="error")
    st.error(str(err))
    st.stop()
definition = lessons.definition
tokens = definition.tokens
model_name = sidebar.shown_model_name(info.name, lang)  # the bundled model's name in the page's language
status.update(state="complete", label=t("lessons.done", lang, model=model_name, n=len(tokens), layer=layer, head=head,
                                        backend=chosen.state.backend))


exported = Provenance(model=info.name, text=chosen.state.text, backend=backend_for(loaded, chosen.state.backend),
                      layer=layer, head=head)


def show(name: str, figure, place=None) -> None:
    """A lesson's chart in ``place`` (a column; the page when None) with its PNG, SVG and 16:9 slide exports
    under it."""
    place = place if place is not None else st.container()
    place.altair_chart(screen_title(figure))
    with place:
        export_buttons(name, figure, exported, lang, f"lessons_{name}")


def header(number: str) -> None:
    """The lesson's question and short explanation."""
    st.markdown(f"**{escape_markdown(t('lessons.question', lang))}** {escape_markdown(t(number + '.question', lang))}")
    st.caption(t(number + ".explain", lang))


def answer(*texts: str) -> None:
    """The answer paragraph(s), composed by the library from the measured numbers; shown as plain text."""
    st.markdown(f"**{escape_markdown(t('lessons.answer', lang))}**")
    for text in texts:
        st.info(escape_markdown(text))


with st.expander(t("lesson1.title", lang), expanded=opened in (None, 1)):
    header("lesson1")
    st.markdown(f"**{escape_markdown(t('lesson1.shapes', lang))}**")
    shapes = [("X", definition.x.shape), ("Q", definition.query.shape), ("K", definition.key.shape),
              ("V", definition.value.shape), ("S = QKᵀ·scale", definition.scores.shape),
              ("A = softmax(S)", definition.weights.shape), ("O = AV", definition.output.shape)]
    firsts = [definition.x, definition.query, definition.key, definition.value, definition.scores, definition.weights,
              definition.output]
    st.dataframe(pd.DataFrame({t("lesson1.col_tensor", lang): [name for name, _ in shapes],
                               t("lesson1.col_shape", lang): [" × ".join(map(str, shape)) for _, shape in shapes],
                               t("lesson1.col_values", lang): [", ".join(f"{v:.3f}" for v in m[0, :5])
                                                                for m in firsts]}),
                 hide_index=True)
    if definition.position == "rope":
        st.caption(t("lesson1.rope_note", lang))
    show("lesson1-weights", charts.weights_chart(definition.weights, tokens,
                                         title=t("lesson1.chart", lang, layer=layer, head=head), slide=slide,
                                         lang=lang, keep=sharpest_pair(definition.weights)))
    st.dataframe(pd.DataFrame({t("lesson1.col_query", lang): readable_tokens(tokens), "Σ_j A_ij": definition.row_sums}),
                 hide_index=True, height=180,
                 column_config={"Σ_j A_ij": st.column_config.NumberColumn(format="%.7f")})
    answer(definition.answer.text(lang))

with st.expander(t("lesson2.title", lang), expanded=opened == 2):
    header("lesson2")
    show("lesson2-asymmetry", charts.asymmetry_chart(lessons.why_qk, title=t("lesson2.chart_asym", lang), slide=slide,
                                           lang=lang))
    show("lesson2-tied", charts.tied_weights_chart(lessons.why_qk, tokens,
                                                   title=t("lesson2.chart_tied", lang, head=head),
                                              slide=slide, lang=lang))
    answer(lessons.why_qk.answer.text(lang))

with st.expander(t("lesson3.title", lang), expanded=opened == 3):
    header("lesson3")
    show("lesson3-offsets", charts.offset_chart(lessons.position, title=t("lesson3.chart", lang, layer=layer),
                                                slide=slide,
                                        lang=lang))
    answer(lessons.position.answer.text(lang))

with st.expander(t("lesson4.title", lang), expanded=opened == 4):
    header("lesson4")
    sweep, scaling = lessons.sweep, lessons.scaling
    st.caption(t("lessons.simulation", lang, queries=sweep.queries, keys=sweep.keys, seed=sweep.seed))
    left, right = st.columns(2)
    show("lesson4-variance", charts.variance_chart(sweep, title=t("lesson4.variance_chart", lang), slide=slide,
                                                   lang=lang), left)
    show("lesson4-sweep", charts.sweep_chart(sweep, title=t("lesson4.sweep_chart", lang), slide=slide, lang=lang),
         right)
    table = pd.DataFrame([{"d": int(d), t("lesson4.table_scale", lang): name,
                           t("lesson4.table_variance", lang): sweep.score_variance[j],
                           t("lesson4.table_entropy_nats", lang): sweep.entropy[i, j],
                           t("lesson4.table_max", lang): sweep.max_weight[i, j],
                           t("lesson4.table_jacobian", lang): sweep.jacobian_norm[i, j]}
                          for j, d in enumerate(sweep.dims) for i, name in enumerate(SCALE_NAMES)])
    # The Jacobian's column under its symbol, the words in its help: the table then fits a 1000 px window.
    jacobian = st.column_config.Column("‖J‖_F", help=t("lesson4.table_jacobian", lang) + "\n\n"
                                       + t("lesson4.jacobian_help", lang))
    st.dataframe(table, hide_index=True, height=240, column_config={t("lesson4.table_jacobian", lang): jacobian})
    st.dataframe(pd.DataFrame({t("lesson4.table_scale", lang): [f"{n} = {s:.4g}"
                                                                for n, s in zip(SCALE_NAMES, scaling.scales)],
                               t("lesson4.table_entropy", lang): scaling.normalized_entropy,
                               t("lesson4.table_max", lang): scaling.max_weight,
                               t("lesson4.table_change", lang): scaling.output_change}), hide_index=True)
    answer(sweep.answer.text(lang), scaling.answer.text(lang))

with st.expander(t("lesson5.title", lang), expanded=opened == 5):
    header("lesson5")
    multi = lessons.multi_head
    # The library names the steps; the two that are words are worded here, the symbols stay as they are.
    steps = {"split": t("lesson5.step.split", lang), "concat · W_O": t("lesson5.step.concat", lang)}
    st.dataframe(pd.DataFrame({t("lesson5.col_step", lang): [steps.get(step, step) for step, _ in multi.reshape],
                               t("lesson5.col_shape", lang): [" × ".join(map(str, shape))
                                                              for _, shape in multi.reshape]}),
                 hide_index=True)
    roles = {role: t(f"lesson5.role.{role}", lang) for role in ("offset", "special", "content")}
    show("lesson5-contributions", charts.contribution_chart(multi, roles, title=t("lesson5.chart", lang, layer=layer),
                                                            slide=slide, lang=lang))
    answer(multi.answer.text(lang))

with st.expander(t("lesson6.title", lang), expanded=opened == 6):
    header("lesson6")
    show("lesson6-entropy", entropy_by_layer_chart(lessons.entropy.entropy, slide=slide, lang=lang))
    answer(lessons.entropy.answer.text(lang))


def measured_mib(peak_bytes, device: str) -> list[str]:
    """Measured peaks as MiB text; where nothing was measured (NaN: the CPU reports no peak) the table says so
    instead of showing "None"."""
    return [t("lesson7.not_measured", lang, device=device_label(device)) if not np.isfinite(value)
            else f"{value / 2**20:.2f}"
            for value in np.asarray(peak_bytes, dtype=np.float64)]


with st.expander(t("lesson7.title", lang), expanded=opened == 7):
    header("lesson7")
    lengths = st.multiselect(t("lesson7.lengths", lang), TIMING_CHOICES, default=list(DEFAULT_LENGTHS),
                             key="timing_lengths", placeholder=t("lesson7.lengths_placeholder", lang))
    if st.button(t("lesson7.run", lang), key="timing_run", disabled=not lengths):
        ordered = sorted(lengths)
        # Before each length done = its index; the last call (done == total) keeps the last length's label.
        with progress_bar(None, lambda done, total, note: t("lesson7.measuring", lang,
                                                          n=ordered[min(done, total - 1)])) as bar:
            try:
                st.session_state["timing"] = complexity_lesson(
                    ordered, heads=info.num_heads, d_k=info.head_dim, device=loaded.device, progress=bar)
            except (InspectorError, RuntimeError) as err:  # RuntimeError: out of memory at a large n
                st.error(str(err))
    timing = st.session_state.get("timing")
    if timing is not None:
        show("lesson7-complexity", charts.complexity_chart(timing,
                                                title=t("lesson7.chart", lang, device=device_label(timing.device)),
                                                slide=slide, lang=lang))
        mib = 2**20
        mat_peak = measured_mib(timing.measured_materialised_bytes, timing.device)
        flash_peak = measured_mib(timing.measured_flash_bytes, timing.device)
        st.dataframe(pd.DataFrame({"n": timing.lengths, t("lesson7.col_mat_ms", lang): timing.materialised_ms,
                                   t("lesson7.col_flash_ms", lang): timing.flash_ms,
                                   t("lesson7.col_mat_theory", lang): timing.materialised_bytes / mib,
                                   t("lesson7.col_flash_theory", lang): timing.flash_bytes / mib,
                                   t("lesson7.col_mat_measured", lang): mat_peak,
                                   t("lesson7.col_flash_measured", lang): flash_peak}),
                     hide_index=True)
        st.caption(t("lesson7.memory_note", lang))
        answer(timing.answer.text(lang))

decoder = lessons_decoder.render(chosen, loaded, lang, slide, opened)

with st.expander(t("lesson8.title", lang), expanded=True):
    lesson_quiz.render(lessons, chosen, lang, decoder)

share_state.publish_view(chosen.state, layer=layer, head=head,
                         extra={**encode_lesson(opened), **encode_lessons(lessons_decoder.link_state())})
