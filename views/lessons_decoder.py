"""The Lessons page's second part: lessons for the decoder era (issue 30), on a decoder this section owns.

The section picks its own decoder (a page-local menu: the bundled decoders, and the sidebar's model when it is one)
and never writes the sidebar's model, so the other pages keep theirs. With an encoder in the sidebar nothing heavy
runs until a decoder is chosen; a line says which to pick. Widgets → one cached call over the registry's decoder
lessons (:func:`views.lesson_page.cached_part`) → one drawing per lesson (:data:`DRAW`, by slug); the streaming-LLM,
window and linear-attention measurements and D9's patching run on request.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from inspector import InspectorError, LoadedModel
from inspector.analyses.lessons.registry import lessons_of
from inspector.base.i18n import Notice, t
from inspector.base.tokens import is_byte_level, readable_token
from inspector.charts import lessons_decoder as charts
from inspector.core.bundled import bundled_choices
from inspector.output.pages import PAGE_REGISTRY
from inspector.output.share import LessonsState, ViewState, decode_lessons, encode_view, escape_markdown
from views import pages, session, share_state, sidebar
from views.lesson_page import Draw, LessonView, cached_part, plan_models

DECODER_LESSONS = frozenset(lesson.number for lesson in lessons_of("decoder"))  # D1–D8: lesson=9 … 16 in a link
ENCODER_SPEC = "default"  # MiniLM: the bidirectional, absolute-position contrast when the sidebar holds a decoder


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


def pick_decoder(chosen: session.Inputs, loaded: LoadedModel, lang: str) -> str | None:
    """The section's decoder menu (a link's, or the sidebar's model when it is a decoder, chosen first); None while
    none is chosen, with the line that says which to pick."""
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
    return spec


def pick_layer_head(info, lang: str) -> tuple[int, int]:
    """The section's layer and head menus, kept inside the chosen decoder (the link's, once)."""
    fit_link_layer_head(info.num_layers, info.num_heads, lang)
    left, right = st.columns(2)
    # The default layer (or the link's), kept inside this decoder (another decoder may have fewer layers or heads).
    st.session_state["decoder_layer"] = min(st.session_state.get("decoder_layer", default_layer(info.num_layers)),
                                            info.num_layers - 1)
    st.session_state["decoder_head"] = min(st.session_state.get("decoder_head", 0), info.num_heads - 1)
    return (left.selectbox(t("decoder.layer", lang), range(info.num_layers), key="decoder_layer"),
            right.selectbox(t("decoder.head", lang), range(info.num_heads), key="decoder_head"))


def section(chosen: session.Inputs, loaded: LoadedModel, lang: str, slide: bool,
            opened: int | None = None) -> LessonView | None:
    """Draw the section: the decoder picker, then every registered decoder lesson. Returns the section's page, its
    lessons' results by slug (for the quiz), or None when no decoder is chosen. ``opened``: the lesson a share link
    opened."""
    st.subheader(t("decoder.heading", lang))
    st.caption(t("decoder.caption", lang))
    spec = pick_decoder(chosen, loaded, lang)
    if spec is None:
        return None
    info = session.cached_model(spec).info
    layer, head = pick_layer_head(info, lang)
    encoder_spec = ENCODER_SPEC if loaded.info.causal else chosen.spec
    backend = chosen.state.backend
    with st.spinner(t("decoder.running", lang, model=sidebar.shown_model_name(info.name, lang))):
        try:  # each model planned from its own token count, the encoder contrast included
            with plan_models(spec, encoder_spec, chosen.state.text, lang).running():
                results = cached_part("decoder", spec, encoder_spec, chosen.state.text, backend, layer, head)
        except InspectorError as err:
            session.show_error(err, lang)
            return None
    page = LessonView(lang=lang, slide=slide, spec=spec, model_name=sidebar.shown_model_name(info.name, lang),
                      info=info, text=chosen.state.text, backend=backend, layer=layer, head=head,
                      contrast=encoder_spec, opened=opened, results=results)
    for lesson in lessons_of("decoder"):
        with page.section(lesson):
            page.header(lesson)
            DRAW[lesson.slug](page, results.get(lesson.slug))
    return page


def draw_causal(page: LessonView, causal) -> None:
    lang, slide = page.lang, page.slide
    # One above the other: side by side, two columns of a 1000 px window leave a 14-token mask no room.
    page.show("lesson9-mask-encoder", charts.mask_chart(
        causal.encoder_visible, causal.encoder_tokens, slide=slide, lang=lang,
        title=t("lesson9.mask_chart", lang, model=sidebar.shown_model_name(causal.encoder, lang))))
    page.show("lesson9-mask-decoder", charts.mask_chart(causal.decoder_visible, causal.decoder_tokens, slide=slide,
                                                        lang=lang,
                                                        title=t("lesson9.mask_chart", lang, model=page.model_name)))
    page.show("lesson9-asymmetry", charts.asymmetry_pair_chart(
        causal, title=t("lesson9.asym_chart", lang, layer=page.layer), slide=slide, lang=lang))
    page.answer(causal)


def draw_rope(page: LessonView, rope) -> None:
    lang, slide = page.lang, page.slide
    rows = [rope.rope] + ([rope.absolute] if rope.absolute is not None else [])
    st.dataframe(pd.DataFrame({
        t("lesson10.col_model", lang): [sidebar.shown_model_name(r.model, lang) for r in rows],
        # In words ("rope" / "absolute" stood in the 简体中文 table, issue 44 walkthrough).
        t("lesson10.col_position", lang): [t(f"lesson10.position.{r.position}", lang) for r in rows],
        t("lesson10.col_shift", lang): [r.shift for r in rows],
        t("lesson10.col_score", lang): [f"{r.score_change:.2e}" for r in rows],
        t("lesson10.col_relative", lang): [f"{r.relative_score_change:.1e}" for r in rows],
        t("lesson10.col_value", lang): [f"{r.value_change:.2e}" for r in rows]}), hide_index=True)
    page.show("lesson10-offsets", charts.rope_offset_chart(
        rope, title=t("lesson10.offset_chart", lang, layer=page.layer, head=page.head), slide=slide, lang=lang))
    page.show("lesson10-wavelengths", charts.rope_wavelength_chart(rope, title=t("lesson10.wave_chart", lang),
                                                                   slide=slide, lang=lang))
    page.answer(rope)


def draw_gqa(page: LessonView, gqa) -> None:
    lang = page.lang
    st.caption(t("lesson11.groups", lang, groups=", ".join(f"{h}→{int(kv)}" for h, kv in enumerate(gqa.kv_head_of))))
    st.dataframe(pd.DataFrame({
        t("lesson11.col_model", lang): [sidebar.shown_model_name(r.model, lang) for r in gqa.rows],
        t("lesson11.col_heads", lang): [f"{r.num_heads} : {r.kv_heads}" for r in gqa.rows],
        t("lesson11.col_bytes", lang): [r.bytes_per_token for r in gqa.rows],
        t("lesson11.col_mha", lang): [r.bytes_one_kv_per_query for r in gqa.rows],
        t("lesson11.col_saving", lang): [round(r.saving, 1) for r in gqa.rows]}), hide_index=True)
    page.show("lesson11-js", charts.js_heatmap(gqa, title=t("lesson11.chart", lang, layer=page.layer),
                                               slide=page.slide, lang=lang))
    page.answer(gqa)


def draw_sinks(page: LessonView, sinks) -> None:
    lang, slide = page.lang, page.slide
    page.show("lesson12-mass", charts.sink_mass_chart(sinks, title=t("lesson12.chart", lang), slide=slide, lang=lang))
    page.show("lesson12-share", charts.sink_share_chart(sinks, title=t("lesson12.share_chart", lang, layer=page.layer),
                                                        slide=slide, lang=lang))
    page.answer(sinks)
    stream = page.requested("sinks", "stream_run", "lesson12.run")
    if stream is not None:
        st.dataframe(pd.DataFrame({
            t("lesson12.col_cache", lang): [t("lesson12.cache.window", lang, window=stream.window),
                                             t("lesson12.cache.sinks", lang, sinks=stream.sinks),
                                             t("lesson12.cache.full", lang)],
            t("lesson12.col_ppl", lang): [round(p, 2) for p in stream.perplexity]}), hide_index=True)
        page.answer(stream)


def draw_window(page: LessonView, _: object) -> None:
    if page.info.sliding_window is None:
        st.info(escape_markdown(t("lesson13.needs", page.lang)))
        return
    window = page.requested("window", "window_run", "lesson13.run")
    if window is not None:
        page.show("lesson13-timing", charts.window_timing_chart(window, title=t("lesson13.chart", page.lang),
                                                                slide=page.slide, lang=page.lang))
        page.answer(window)


def draw_linear(page: LessonView, _: object) -> None:
    linear = page.requested("linear", "linear_run", "lesson14.run")
    if linear is not None:
        page.show("lesson14-weights", charts.linear_weights_chart(
            linear, title=t("lesson14.chart", page.lang, head=page.head), slide=page.slide, lang=page.lang))
        page.show("lesson14-timing", charts.linear_timing_chart(linear, title=t("lesson14.time_chart", page.lang),
                                                                slide=page.slide, lang=page.lang))
        page.answer(linear)


def draw_qk_space(page: LessonView, space) -> None:
    lang, slide = page.lang, page.slide
    page.show("lesson15-scatter", charts.qk_scatter_chart(
        space, title=t("lesson15.chart", lang, layer=page.layer, head=page.head), slide=slide, lang=lang))
    page.show("lesson15-gap", charts.norm_gap_chart(space, title=t("lesson15.gap_chart", lang), slide=slide,
                                                    lang=lang))
    page.answer(space)


def draw_projections(page: LessonView, projections) -> None:
    lang = page.lang
    names = ["W_Q", "W_K", "W_V", "W_O", "W_QK"]
    st.dataframe(pd.DataFrame({
        t("lesson16.col_matrix", lang): ["W_Q W_Kᵀ" if n == "W_QK" else n for n in names],
        t("lesson16.col_shape", lang): [" × ".join(map(str, projections.shapes[n])) for n in names],
        t("lesson16.col_top", lang): [f"{projections.singular[n][0]:.3g}" for n in names],
        t("lesson16.col_smallest", lang): [f"{projections.singular[n][-1]:.3g}" for n in names]}),
        hide_index=True)
    page.show("lesson16-singular", charts.singular_values_chart(
        projections, title=t("lesson16.chart", lang, layer=page.layer, head=page.head), slide=page.slide, lang=lang))
    page.answer(projections)


def mechanism_link(page: LessonView, mechanism) -> dict[str, str]:
    """The Mechanism page's link for lesson D9's pair: the decoder, the clean text, the section's layer and head, the
    corrupted text, the answer and the contrast (:data:`views.mechanism.OWN`'s parameters)."""
    view = ViewState(page="mechanism", model=page.spec, text=mechanism.clean, lang=page.lang, layer=page.layer,
                     head=page.head)
    return {**encode_view(view), "mcorrupt": mechanism.corrupted, "manswer": mechanism.answer_text,
            "mcontrast": mechanism.contrast_text}


def draw_mechanism(page: LessonView, _: object) -> None:
    lang = page.lang
    mechanism = page.requested("mechanism", "mechanism_run", "lesson17.run")
    if mechanism is None:
        return
    st.caption(escape_markdown(t("lesson17.pair", lang, clean=mechanism.clean, corrupted=mechanism.corrupted)))
    if mechanism.source == "text":
        st.caption(escape_markdown(t("lesson17.pair_from_text", lang, model=page.model_name)))
    byte_level = is_byte_level((mechanism.attended_token, mechanism.answer_token, mechanism.contrast_token))
    token, answer, contrast = (readable_token(token, byte_level) for token in (
        mechanism.attended_token, mechanism.answer_token, mechanism.contrast_token))
    columns = st.columns(3)
    tables = ((t("lesson17.col_attending", lang, token=f"{mechanism.attended_position}: {token}"),
               mechanism.attending, [f"{w:.2f}" for w in mechanism.attending_weights]),
              (t("lesson17.col_restoring", lang, answer=answer), mechanism.restoring,
               [f"{r:.0%}" for r in mechanism.restored]),
              (t("lesson17.col_writing", lang, answer=answer, contrast=contrast), mechanism.writing,
               [f"{d:+.2f}" for d in mechanism.direct]))
    # Side by side, one row per head: the reader compares the lists before reading the answer written from them.
    for column, (title, heads, values) in zip(columns, tables, strict=True):
        column.dataframe(pd.DataFrame({title: [f"L{layer}H{head}  {value}" for (layer, head), value in
                                               zip(heads, values, strict=True)]}), hide_index=True)
    page.answer(mechanism)
    if st.button(t("lesson17.open", lang), key="mechanism_open", icon=":material/hub:"):
        share_state.open_link(PAGE_REGISTRY["mechanism"].script, mechanism_link(page, mechanism))


DRAW: dict[str, Draw] = {"causal": draw_causal, "rope": draw_rope, "gqa": draw_gqa, "sinks": draw_sinks,
                         "window": draw_window, "linear": draw_linear, "qk_space": draw_qk_space,
                         "projections": draw_projections, "mechanism": draw_mechanism}
