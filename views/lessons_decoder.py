"""The Lessons page's second part: lessons for the decoder era (issue 30), on a decoder this section owns.

The section picks its own decoder (a page-local menu: the bundled decoders, and the sidebar's model when it is one)
and never writes the sidebar's model, so the other pages keep theirs. With an encoder in the sidebar nothing heavy
runs until a decoder is chosen; a line says which to pick. Widgets → one cached library call
(:func:`inspector.analyses.lessons_decoder.decoder_lessons`) → charts and answers; the streaming-LLM, window and
linear-attention timings run on request.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from inspector import InspectorError, LoadedModel
from inspector.analyses.lessons_decoder import (
    SINK_TOKENS,
    DecoderLessons,
    decoder_lessons,
    streaming_perplexity,
)
from inspector.analyses.lessons_geometry import LinearLesson, WindowLesson, linear_lesson, window_lesson
from inspector.base.i18n import Notice, t
from inspector.charts import lessons_decoder as charts
from inspector.core.bundled import bundled_choices
from inspector.output.export import screen_title
from inspector.output.share import LessonsState, ViewState, decode_lessons, escape_markdown
from views import pages, session, sidebar
from views.progress_bar import progress_bar

FIRST_DECODER_LESSON = 9  # D1 is lesson 9 in a share link's ``lesson=N``; D8 is 16
ENCODER_SPEC = "default"  # MiniLM: the bidirectional, absolute-position contrast when the sidebar holds a decoder


def _show(chart) -> None:
    """A lesson's chart on screen, its title re-wrapped as the column grows (exports wrap to the figure)."""
    st.altair_chart(screen_title(chart))


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_decoder_lessons(encoder_spec: str, decoder_spec: str, text: str, backend: str, layer: int,
                           head: int) -> DecoderLessons:
    return decoder_lessons(session.cached_model(encoder_spec), session.cached_model(decoder_spec), text, layer, head,
                           backend=backend)


@st.cache_data(max_entries=4, ttl=3600, show_spinner=False)
def cached_streaming(decoder_spec: str, backend: str) -> tuple[int, int, tuple[float, float, float]]:
    return streaming_perplexity(session.cached_model(decoder_spec), backend=backend)


@st.cache_data(max_entries=4, ttl=3600, show_spinner=False)
def cached_window(decoder_spec: str, backend: str) -> WindowLesson:
    return window_lesson(session.cached_model(decoder_spec), backend=backend)


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_linear(decoder_spec: str, text: str, backend: str, layer: int, head: int) -> LinearLesson:
    return linear_lesson(session.cached_model(decoder_spec), text, layer, head, backend=backend)


def _decoder_choices(chosen: session.Inputs, loaded: LoadedModel) -> list[str]:
    choices = list(bundled_choices())
    if loaded.info.causal and loaded.info.head == "causal-lm" and chosen.spec not in choices:
        choices.insert(0, chosen.spec)
    return choices


def restore_link_state(choices: list[str]) -> None:
    """Once per session: the link's decoder (when this section offers it), and its layer and head, applied once the
    decoder is loaded (:func:`fit_link_layer_head`)."""
    policy = session.hosting_policy()

    def apply(state: LessonsState) -> tuple[Notice, ...]:
        notices = ()
        if state.decoder is not None:
            if state.decoder in choices:
                st.session_state["decoder_model"] = state.decoder
            else:  # a model the link may name, but not a decoder this section offers (an encoder, another sidebar's)
                notices = (Notice("decoder.link_not_offered", model=state.decoder, choices=", ".join(choices)),)
        if state.dlayer is not None or state.dhead is not None:
            st.session_state["_decoder_link_layer_head"] = (state.dlayer, state.dhead)
        return notices

    pages.restore_once("decoder", lambda params: decode_lessons(
        params, models=list(sidebar.model_options(policy)) if policy.hosted else None), apply)


def fit_link_layer_head(num_layers: int, num_heads: int, lang: str) -> None:
    """Keep the section's layer and head inside the chosen decoder; the link's, once, with a warning for each one
    the decoder does not have."""
    link = st.session_state.pop("_decoder_link_layer_head", None)
    if link is not None:
        wanted = ViewState(layer=default_layer(num_layers) if link[0] is None else link[0],
                           head=0 if link[1] is None else link[1])
        fitted, clamps = wanted.fit(num_layers, num_heads)
        st.session_state["decoder_layer"], st.session_state["decoder_head"] = fitted.layer, fitted.head
        for notice in clamps:
            pages.link_warning(notice, lang)
    for key, count in (("decoder_layer", num_layers), ("decoder_head", num_heads)):
        if st.session_state.get(key) is not None and st.session_state[key] not in range(count):
            st.session_state.pop(key)  # chosen on a larger decoder: the menu's default instead


def default_layer(num_layers: int) -> int:
    return min(3, num_layers - 1)


def link_state() -> LessonsState:
    """What the section adds to the page's link: its decoder, layer and head (nothing while none is chosen)."""
    spec = st.session_state.get("decoder_model")
    if spec is None:
        return LessonsState()
    layer, head = st.session_state.get("decoder_layer"), st.session_state.get("decoder_head")
    return LessonsState(decoder=spec, dlayer=None if layer is None else int(layer),
                        dhead=None if head is None else int(head))


def render(chosen: session.Inputs, loaded: LoadedModel, lang: str, slide: bool,
           opened: int | None = None) -> DecoderLessons | None:
    """Draw the section; returns the measured lessons (for the quiz) or None when no decoder is chosen. ``opened``: the
    lesson a share link opened (its expander starts open)."""

    def header(number: str) -> None:
        st.markdown(f"**{escape_markdown(t('lessons.question', lang))}** "
                    f"{escape_markdown(t(number + '.question', lang))}")
        st.caption(t(number + ".explain", lang))

    def answer(*texts: str) -> None:
        st.markdown(f"**{escape_markdown(t('lessons.answer', lang))}**")
        for text in texts:
            st.info(escape_markdown(text))

    st.subheader(t("decoder.heading", lang))
    st.caption(t("decoder.caption", lang))
    choices = _decoder_choices(chosen, loaded)
    restore_link_state(choices)
    pages.show_link_warnings("decoder", lang)
    if st.session_state.get("decoder_model") not in (None, *choices):
        st.session_state.pop("decoder_model")  # a choice from another sidebar model
    sidebar_is_decoder = chosen.spec in choices
    link = st.session_state.pop("_decoder_link", None)  # a link to a decoder lesson: its model, layer and head
    if (st.session_state.get("decoder_model") is None or link is not None) and sidebar_is_decoder:
        st.session_state["decoder_model"] = chosen.spec
    if link is not None and sidebar_is_decoder:
        st.session_state["decoder_layer"], st.session_state["decoder_head"] = link
    spec = st.selectbox(t("decoder.model", lang), choices, index=None, key="decoder_model",
                        format_func=lambda s: sidebar.shown_model_name(s, lang),
                        placeholder=t("decoder.choose", lang))
    if spec is None:
        st.info(escape_markdown(t("decoder.pick", lang, model=sidebar.shown_model_name(loaded.info.name, lang))))
        return None
    decoder = session.cached_model(spec)
    info = decoder.info
    fit_link_layer_head(info.num_layers, info.num_heads, lang)
    left, right = st.columns(2)
    # The default layer (or the link's), kept inside this decoder (another decoder may have fewer layers or heads).
    st.session_state["decoder_layer"] = min(st.session_state.get("decoder_layer", default_layer(info.num_layers)),
                                            info.num_layers - 1)
    st.session_state["decoder_head"] = min(st.session_state.get("decoder_head", 0), info.num_heads - 1)
    layer = left.selectbox(t("decoder.layer", lang), range(info.num_layers), key="decoder_layer")
    head = right.selectbox(t("decoder.head", lang), range(info.num_heads), key="decoder_head")
    encoder_spec = ENCODER_SPEC if loaded.info.causal else chosen.spec
    backend = chosen.state.backend
    with st.spinner(t("decoder.running", lang, model=sidebar.shown_model_name(info.name, lang))):
        try:
            lessons = cached_decoder_lessons(encoder_spec, spec, chosen.state.text, backend, layer, head)
        except InspectorError as err:
            st.error(str(err))
            return None
    model_name = sidebar.shown_model_name(info.name, lang)

    with st.expander(t("lesson9.title", lang), expanded=opened == 9):
        header("lesson9")
        causal = lessons.causal
        # One above the other: side by side, two columns of a 1000 px window leave a 14-token mask no room.
        _show(charts.mask_chart(causal.encoder_visible, causal.encoder_tokens, slide=slide, lang=lang,
                                          title=t("lesson9.mask_chart", lang, model=sidebar.shown_model_name(
                                              causal.encoder, lang))))
        _show(charts.mask_chart(causal.decoder_visible, causal.decoder_tokens, slide=slide, lang=lang,
                                          title=t("lesson9.mask_chart", lang, model=model_name)))
        _show(charts.asymmetry_pair_chart(causal, title=t("lesson9.asym_chart", lang, layer=layer),
                                                    slide=slide, lang=lang))
        answer(causal.answer.text(lang))

    with st.expander(t("lesson10.title", lang), expanded=opened == 10):
        header("lesson10")
        rope = lessons.rope
        rows = [rope.rope] + ([rope.absolute] if rope.absolute is not None else [])
        st.dataframe(pd.DataFrame({
            t("lesson10.col_model", lang): [sidebar.shown_model_name(r.model, lang) for r in rows],
            t("lesson10.col_position", lang): [r.position for r in rows],
            t("lesson10.col_shift", lang): [r.shift for r in rows],
            t("lesson10.col_score", lang): [f"{r.score_change:.2e}" for r in rows],
            t("lesson10.col_relative", lang): [f"{r.relative_score_change:.1e}" for r in rows],
            t("lesson10.col_value", lang): [f"{r.value_change:.2e}" for r in rows]}), hide_index=True)
        _show(charts.rope_offset_chart(rope, title=t("lesson10.offset_chart", lang, layer=layer, head=head),
                                                 slide=slide, lang=lang))
        _show(charts.rope_wavelength_chart(rope, title=t("lesson10.wave_chart", lang), slide=slide,
                                                     lang=lang))
        answer(rope.answer.text(lang))

    with st.expander(t("lesson11.title", lang), expanded=opened == 11):
        header("lesson11")
        gqa = lessons.gqa
        st.caption(t("lesson11.groups", lang, groups=", ".join(f"{h}→{int(kv)}" for h, kv in
                                                               enumerate(gqa.kv_head_of))))
        st.dataframe(pd.DataFrame({
            t("lesson11.col_model", lang): [sidebar.shown_model_name(r.model, lang) for r in gqa.rows],
            t("lesson11.col_heads", lang): [f"{r.num_heads} : {r.kv_heads}" for r in gqa.rows],
            t("lesson11.col_bytes", lang): [r.bytes_per_token for r in gqa.rows],
            t("lesson11.col_mha", lang): [r.bytes_one_kv_per_query for r in gqa.rows],
            t("lesson11.col_saving", lang): [round(r.saving, 1) for r in gqa.rows]}), hide_index=True)
        _show(charts.js_heatmap(gqa, title=t("lesson11.chart", lang, layer=layer), slide=slide, lang=lang))
        answer(gqa.answer.text(lang))

    with st.expander(t("lesson12.title", lang), expanded=opened == 12):
        header("lesson12")
        sinks = lessons.sinks
        _show(charts.sink_mass_chart(sinks, title=t("lesson12.chart", lang), slide=slide, lang=lang))
        _show(charts.sink_share_chart(sinks, title=t("lesson12.share_chart", lang, layer=layer),
                                                slide=slide, lang=lang))
        answer(sinks.answer.text(lang))
        if st.button(t("lesson12.run", lang), key="stream_run"):
            with progress_bar(t("decoder.measuring", lang)):
                try:
                    st.session_state["stream"] = (spec, cached_streaming(spec, backend))
                except InspectorError as err:
                    st.error(str(err))
        stream = st.session_state.get("stream")
        if stream is not None and stream[0] == spec:
            tokens, window, ppl = stream[1]
            st.dataframe(pd.DataFrame({
                t("lesson12.col_cache", lang): [t("lesson12.cache.window", lang, window=window),
                                                 t("lesson12.cache.sinks", lang, sinks=SINK_TOKENS),
                                                 t("lesson12.cache.full", lang)],
                t("lesson12.col_ppl", lang): [round(p, 2) for p in ppl]}), hide_index=True)
            answer(t("lesson12.stream", lang, tokens=tokens, window=window, sinks=SINK_TOKENS,
                     window_ppl=f"{ppl[0]:.1f}", sink_ppl=f"{ppl[1]:.1f}", full_ppl=f"{ppl[2]:.1f}"))

    with st.expander(t("lesson13.title", lang), expanded=opened == 13):
        header("lesson13")
        if info.sliding_window is None:
            st.info(escape_markdown(t("lesson13.needs", lang)))
        elif st.button(t("lesson13.run", lang), key="window_run") or st.session_state.get("window_spec") == spec:
            with progress_bar(t("decoder.measuring", lang)):
                try:
                    window = cached_window(spec, backend)
                    st.session_state["window_spec"] = spec
                except InspectorError as err:
                    st.error(str(err))
                    window = None
            if window is not None:
                _show(charts.window_timing_chart(window, title=t("lesson13.chart", lang), slide=slide,
                                                           lang=lang))
                answer(window.answer.text(lang))

    with st.expander(t("lesson14.title", lang), expanded=opened == 14):
        header("lesson14")
        wanted = (spec, chosen.state.text, layer, head)
        if st.button(t("lesson14.run", lang), key="linear_run") or st.session_state.get("linear_for") == wanted:
            with progress_bar(t("decoder.measuring", lang)):
                try:
                    linear = cached_linear(spec, chosen.state.text, backend, layer, head)
                    st.session_state["linear_for"] = wanted
                except InspectorError as err:
                    st.error(str(err))
                    linear = None
            if linear is not None:
                _show(charts.linear_weights_chart(linear, title=t("lesson14.chart", lang, head=head),
                                                            slide=slide, lang=lang))
                _show(charts.linear_timing_chart(linear, title=t("lesson14.time_chart", lang), slide=slide,
                                                           lang=lang))
                answer(linear.answer.text(lang))

    with st.expander(t("lesson15.title", lang), expanded=opened == 15):
        header("lesson15")
        space = lessons.qk_space
        _show(charts.qk_scatter_chart(space, title=t("lesson15.chart", lang, layer=layer, head=head),
                                                slide=slide, lang=lang))
        _show(charts.norm_gap_chart(space, title=t("lesson15.gap_chart", lang), slide=slide, lang=lang))
        answer(space.answer.text(lang))

    with st.expander(t("lesson16.title", lang), expanded=opened == 16):
        header("lesson16")
        projections = lessons.projections
        names = ["W_Q", "W_K", "W_V", "W_O", "W_QK"]
        st.dataframe(pd.DataFrame({
            t("lesson16.col_matrix", lang): ["W_Q W_Kᵀ" if n == "W_QK" else n for n in names],
            t("lesson16.col_shape", lang): [" × ".join(map(str, projections.shapes[n])) for n in names],
            t("lesson16.col_top", lang): [f"{projections.singular[n][0]:.3g}" for n in names],
            t("lesson16.col_smallest", lang): [f"{projections.singular[n][-1]:.3g}" for n in names]}),
            hide_index=True)
        _show(charts.singular_values_chart(projections, title=t("lesson16.chart", lang, layer=layer,
                                                                            head=head), slide=slide, lang=lang))
        answer(projections.answer.text(lang))
    return lessons
