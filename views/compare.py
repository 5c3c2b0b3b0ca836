"""Compare: two texts on one model, or one text on two models — the heads ranked by how far the query token's
attention moved, a clickable layer × head grid of that movement, the chosen head's two heatmaps side by side with
their difference, the output change, and one sentence composed from the numbers (issue 20). Two models also get their
head atlases side by side (:mod:`views.compare_atlas`, issue 41) and their head roles (:mod:`views.compare_roles`).

Widgets → cached runs of each text (:func:`inspector.analyses.compare.run_text`) → one library call
(:func:`inspector.analyses.compare.compare_runs`, the same numbers as ``python -m inspector compare``) → charts. Picking
another query, key or head only recomputes the comparison, never the forwards. Text A is the sidebar's text.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

import streamlit as st

from inspector import InspectorError
from inspector.analyses.attribution import (
    AttributionReport,
    AttributionSettings,
    TargetSpec,
    attribute,
    removal_modes,
)
from inspector.analyses.compare import (
    EXAMPLE_PAIRS,
    JS_THRESHOLD,
    SHIFT_THRESHOLD,
    TextRun,
    compare_runs,
    comparison_json,
    default_pair,
    head_pair,
    pair_warning,
    run_text,
)
from inspector.analyses.token_alignment import align_tokens, causal_blind, resolve_token
from inspector.base.errors import error_text
from inspector.base.i18n import notice_text, t
from inspector.base.limits import MAX_TEXT_CHARS
from inspector.base.tokens import readable_tokens
from inspector.charts.base import HEAD_SELECTION, selected_head
from inspector.charts.compare import (
    head_difference_chart,
    head_heatmap_chart,
    movement_grid_chart,
    query_rows_chart,
    ranked_heads_chart,
)
from inspector.charts.sentences.attribution import removal_words, target_words
from inspector.charts.sentences.compare import comparison_sentence
from inspector.output.export import Provenance, screen_title
from inspector.output.share import (
    COMPARE_DEFAULT_TEXT_B,
    CompareState,
    compare_share_url,
    decode_compare,
    encode_compare,
    encode_view,
    escape_markdown,
)
from views import compare_atlas, compare_roles, compare_shapes, pages, session, sidebar
from views.export_buttons import export_buttons

started = time.perf_counter()
PAGE_KEYS = ("compare_mode", "compare_text_b", "compare_model_b", "compare_model_b_other", "compare_query",
             "compare_key1", "compare_key2", "compare_metric")


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_run(spec: str, text: str, backend: str, what: str) -> TextRun:
    """One text through one model, every layer's weights kept (a few MB at sentence length)."""
    return run_text(session.cached_model(spec), text, backend=backend, what=what)


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def cached_leave_one_out(spec: str, text: str, backend: str) -> AttributionReport:
    """The Attribution page's leave-one-out (occlusion) alone: one forward per token, each token replaced by the
    model's own stand-in when it has one, else deleted (:func:`removal_modes`; issue 44: no [MASK] on a decoder)."""
    loaded = session.cached_model(spec)
    settings = AttributionSettings(methods=("occlusion",), head_grid=False, permutations=0, faithfulness=False,
                                   removal="mask" if "mask" in removal_modes(loaded) else "delete")
    return attribute(loaded, text, spec=TargetSpec(), settings=settings, backend=backend)


def removed_how(spec: str, report: AttributionReport, lang: str) -> str:
    """How ``report``'s occlusion removed a token on model ``spec``, in ``lang``."""
    return removal_words(removal_modes(session.cached_model(spec)).get("mask") if report.removal == "mask" else None,
                         lang)


def restore_page_state() -> None:
    """Once per session: the link's Compare parameters; afterwards: values kept through a page switch (Streamlit
    drops a widget's value when another page's run does not draw it)."""
    policy = session.hosting_policy()
    options = sidebar.model_options(policy)

    def apply(state: CompareState) -> None:
        st.session_state["compare_text_b"] = state.text_b
        if state.model_b is not None:  # a model the picker does not list goes in its "Other" box, as in the sidebar
            st.session_state["compare_mode"] = "models"
            in_list = state.model_b in options
            st.session_state["compare_model_b"] = state.model_b if in_list else sidebar.OTHER_MODEL
            if not in_list:
                st.session_state["compare_model_b_other"] = state.model_b
        st.session_state["_compare_link_picks"] = (state.query, state.keys)

    pages.restore_once("compare", lambda params: decode_compare(params, models=list(options) if policy.hosted
                                                                else None), apply)
    for key, value in st.session_state.get("_compare_saved", {}).items():
        st.session_state.setdefault(key, value)


def sync_text_a() -> None:
    st.session_state["text"] = st.session_state["compare_text_a"]


def load_example() -> None:
    picked = st.session_state.get("compare_example")
    for pair in EXAMPLE_PAIRS:
        if pair.title_key == picked:
            st.session_state["text"] = st.session_state["compare_text_a"] = pair.text_a
            st.session_state["compare_text_b"], st.session_state["compare_mode"] = pair.text_b, "texts"
            st.session_state["_compare_link_picks"] = (pair.query, pair.keys)


def select_head_from_grid() -> None:
    picked = selected_head(st.session_state["compare_grid"].selection)
    if picked is not None:
        st.session_state["layer"], st.session_state["head"] = picked


def token_strip(tokens: tuple[str, ...], differs, partner) -> str:
    """``"3: animal   14: tired ~"``: ~ = replaced slot, + = no partner in the other text."""
    # A no-break space inside each label: the strip wraps between tokens, never inside one.
    return "   ".join(f"{i}:\u00a0{tok}" + ("" if not differs[i] else "\u00a0~" if partner[i] >= 0 else "\u00a0+")
                      for i, tok in enumerate(readable_tokens(tokens)))


def publish_link(layer: int, head: int, text_b: str, spec_b: str, query, keys,
                 atlases: dict[str, str] | None = None) -> None:
    """The address bar and the sidebar's share box: the shared view plus this page's own parameters (``atlases``:
    the two-model mode's atlas block's, :func:`views.compare_atlas.show`)."""
    view = replace(chosen.state, page="compare", text=text_a, layer=layer, head=head)
    compare_state = CompareState(text_b=text_b if mode == "texts" else COMPARE_DEFAULT_TEXT_B,
                                 model_b=spec_b if mode == "models" else None,
                                 query=None if query is None else str(query),
                                 keys=None if not keys else (str(keys[0]), str(keys[1])))
    encoded = {**encode_view(view), **encode_compare(compare_state), **(atlases or {})}
    if st.query_params.to_dict() != encoded:
        st.query_params.from_dict(encoded)
    with st.sidebar:
        st.subheader(t("sidebar.share", lang))
        st.code(compare_share_url(st.context.url or "", view, compare_state, atlases), language=None,
                wrap_lines=True)
        st.caption(t("sidebar.share_caption", lang))


title = st.empty()
chosen, status, loaded = sidebar.open_page()
lang = chosen.state.lang
title.title(t("compare.title", lang))
st.caption(t("compare.caption", lang))
restore_page_state()
compare_atlas.restore_link()
pages.show_link_warnings("compare", lang)
if st.session_state.get("compare_text_a") != st.session_state["text"]:
    st.session_state["compare_text_a"] = st.session_state["text"]  # the sidebar's text changed (or first run)
# Text B follows text A's example pair until the reader edits it: a Chinese text A gets the Chinese pair's B, never
# the English default (issue 44). A link's B is the reader's; only the link's default B counts as untouched.
opening = default_pair(st.session_state["compare_text_a"])
st.session_state.setdefault("_compare_default_b", COMPARE_DEFAULT_TEXT_B)
if st.session_state.get("compare_text_b", COMPARE_DEFAULT_TEXT_B) == st.session_state["_compare_default_b"]:
    st.session_state["compare_text_b"] = opening.text_b
st.session_state["_compare_default_b"] = opening.text_b

mode_column, example_column = st.columns([2, 3])
mode = mode_column.radio(t("compare.mode", lang), ["texts", "models"], key="compare_mode", horizontal=True,
                         format_func=lambda m: t(f"compare.mode_{m}", lang))
st.session_state.setdefault("compare_example", None)
example_column.selectbox(t("compare.examples", lang), [pair.title_key for pair in EXAMPLE_PAIRS], index=None,
                         key="compare_example", format_func=lambda key: t(key, lang), on_change=load_example,
                         placeholder=t("compare.examples_placeholder", lang), disabled=mode != "texts")
a_column, b_column = st.columns(2)
a_column.text_area(t("compare.text_a", lang), key="compare_text_a", height=90, max_chars=MAX_TEXT_CHARS,
                   on_change=sync_text_a, help=t("compare.text_help", lang))
spec_a, spec_b, text_a = chosen.spec, chosen.spec, st.session_state["compare_text_a"]
if mode == "texts":
    text_b = b_column.text_area(t("compare.text_b", lang), key="compare_text_b", height=90, max_chars=MAX_TEXT_CHARS,
                                help=t("compare.text_help", lang))
else:
    text_b = text_a
    model_a = sidebar.shown_model_name(loaded.info.name, lang)
    b_column.caption(escape_markdown(t("compare.model_a", lang, model=model_a)))
    options = sidebar.model_options(session.hosting_policy())
    st.session_state.setdefault("compare_model_b", chosen.spec if chosen.spec in options else next(iter(options)))
    picked = b_column.selectbox(t("compare.model_b", lang), list(options),
                                format_func=lambda spec: sidebar.model_choice_label(spec, options[spec], lang),
                                key="compare_model_b", help=t("compare.model_b_help", lang))
    spec_b = picked
    if picked == sidebar.OTHER_MODEL:
        spec_b = b_column.text_input(t("sidebar.model_other", lang), key="compare_model_b_other",
                                     placeholder=t("model.other_placeholder", lang)).strip() or chosen.spec
st.session_state["_compare_saved"] = {key: st.session_state[key] for key in PAGE_KEYS if key in st.session_state}

status.update(label=t("compare.computing", lang))
backend = chosen.state.backend
try:
    job = session.plan_job("compare", loaded, lang, [text_a, text_b])  # a hosted instance's limits
    if spec_b != spec_a:  # model B planned from its own token count (issue 45, item 2), before either runs
        session.plan_job("compare", session.cached_model(spec_b), lang, [text_b])
    with job.running():
        run_a, run_b = cached_run(spec_a, text_a, backend, "text A"), cached_run(spec_b, text_b, backend, "text B")
    alignment = align_tokens(run_a.capture.tokens, run_b.capture.tokens)
    tokens_a, tokens_b = run_a.capture.tokens, run_b.capture.tokens
    shown_a, shown_b = readable_tokens(tokens_a), readable_tokens(tokens_b)  # Ġ and Ċ as ␣ and ↵
    link_query, link_keys = st.session_state.pop("_compare_link_picks", (None, None))
    paired = [int(a) for a, _ in alignment.pairs]
    causal = run_a.capture.causal and run_b.capture.causal

    def resolve(choice):
        """A pick (a position, as an int or as digits from a link, or a token string) as its position in text A."""
        return resolve_token(int(choice) if str(choice).isdigit() else choice, tokens_a, tokens_b, alignment)[0]

    try:  # a link's (or an example's) picks: a token these texts lack falls back to the default, with a warning
        if link_query is not None:
            st.session_state["compare_query"] = resolve(link_query)
        if link_keys is not None:
            st.session_state["compare_key1"], st.session_state["compare_key2"] = (
                (resolve(link_keys[0]), resolve(link_keys[1])) if len(link_keys) == 2 else (None, None))
    except InspectorError as err:
        pages.link_warning(error_text(err, lang), lang)
    for key in ("compare_query", "compare_key1", "compare_key2"):
        if st.session_state.get(key) not in (None, *paired):  # the texts changed under an old pick
            st.session_state[key] = None
    picks = ("compare_query", "compare_key1", "compare_key2")
    if st.session_state.get("_compare_defaults_for") != (text_a, text_b):
        # New texts with nothing picked (by the reader or a link): their example pair's query and keys ("it", animal,
        # street) where the texts have those tokens; a tokenizer that splits them otherwise keeps "auto" and no keys.
        st.session_state["_compare_defaults_for"] = (text_a, text_b)
        nothing_picked = link_query is None and link_keys is None and \
            all(st.session_state.get(key) is None for key in picks)
        if nothing_picked and (opening.text_a, opening.text_b) == (text_a, text_b):
            keys_of_pair = (*(opening.keys or ()), None, None)[:2]
            for key, choice in zip(picks, (opening.query, *keys_of_pair), strict=True):
                try:
                    st.session_state[key] = None if choice is None else resolve(choice)
                except InspectorError:
                    st.session_state[key] = None
            if st.session_state["compare_query"] is not None and causal_blind(st.session_state["compare_query"],
                                                                               alignment, causal):
                # The example's "it" comes before tired/wide: a decoder's "it" cannot see them; the differing word
                # (the automatic query) asks where it looks back to instead.
                st.session_state["compare_query"] = None
except InspectorError as err:
    status.update(label=t("compare.failed", lang), state="error")
    session.show_error(err, lang)
    st.stop()


if mode == "models" and not compare_shapes.comparable_head_by_head(run_a, run_b):
    # Different shapes or tokenizers (MiniLM vs Gemma): no head has a partner; compare what both have (issue 27).
    info_b = session.cached_model(spec_b).info
    names = (sidebar.shown_model_name(loaded.info.name, lang), sidebar.shown_model_name(info_b.name, lang))
    status.update(state="complete", label=t("compare.ran", lang, model_a=names[0], model_b=names[1],
                                            n_a=len(tokens_a), n_b=len(tokens_b), backend=run_a.capture.backend,
                                            ms=f"{1000 * sum(run_a.capture.timings.values()):.0f}"))
    compare_shapes.render(run_a, run_b, loaded.info, info_b, names, lang, chosen.state.slide)
    atlases = compare_atlas.show((spec_a, spec_b), names, chosen.state, lang, chosen.state.slide)
    compare_roles.show((spec_a, spec_b), names, backend, lang, chosen.state.slide)
    publish_link(int(st.session_state["layer"]), int(st.session_state["head"]), text_b, spec_b, None, (), atlases)
    st.stop()


def label(a):
    """Position a of text A as "a: token", with text B's partner token after a slash where the two differ."""
    return "" if a is None else f"{a}: {shown_a[a]}" + (
        "" if tokens_a[a] == tokens_b[alignment.partner_a[a]] else f"/{shown_b[alignment.partner_a[a]]}")


query_column, key1_column, key2_column = st.columns([2, 1, 1])
# None is shown by the placeholder, not by format_func: Streamlit draws a None value as its placeholder, which was
# English "Choose an option" on every page language (issue 44 walkthrough, Compare in 简体中文).
query = query_column.selectbox(t("compare.query", lang), [None, *paired], key="compare_query",
                               help=t("compare.query_help", lang), placeholder=t("compare.query_auto", lang),
                               format_func=lambda a: t("compare.query_auto", lang) if a is None else label(a))


def key_label(a):
    return t("compare.key_none", lang) if a is None else label(a)


st.session_state.setdefault("compare_key1", None)
st.session_state.setdefault("compare_key2", None)
key1 = key1_column.selectbox(t("compare.key1", lang), [None, *paired], key="compare_key1", format_func=key_label,
                             help=t("compare.keys_help", lang), placeholder=t("compare.key_none", lang))
key2 = key2_column.selectbox(t("compare.key2", lang), [None, *paired], key="compare_key2", format_func=key_label,
                             placeholder=t("compare.key_none", lang))
keys = (key1, key2) if key1 is not None and key2 is not None and key1 != key2 else ()
try:
    comparison = compare_runs(run_a, run_b, query=query, keys=keys)
except InspectorError as err:
    status.update(label=t("compare.failed", lang), state="error")
    session.show_error(err, lang)
    st.stop()
# The query the comparison read, from the comparison itself: the box above can only say "auto".
query_column.caption(t("compare.query_used", lang, token=escape_markdown(label(comparison.query[0])),
                       auto=t("compare.query_used_auto", lang) if query is None else ""))
status.update(state="complete", label=t("compare.ran", lang, model_a=sidebar.shown_model_name(comparison.model_a, lang),
                                        model_b=sidebar.shown_model_name(comparison.model_b, lang),
                                        n_a=len(tokens_a), n_b=len(tokens_b), backend=comparison.backend,
                                        ms=f"{1000 * sum(run_a.capture.timings.values()):.0f}"))

st.subheader(t("compare.alignment", lang))
st.code(f"A   {token_strip(tokens_a, alignment.differs_a, alignment.partner_a)}\n"
        f"B   {token_strip(tokens_b, alignment.differs_b, alignment.partner_b)}", language=None, wrap_lines=True)
st.caption(t("compare.alignment_caption", lang))
mismatch = pair_warning(text_a, text_b, alignment)
if mismatch is not None:
    st.warning(notice_text(mismatch, lang), icon=":material/translate:")
if causal_blind(comparison.query[0], alignment, causal):
    st.warning(t("compare.warn_causal_query", lang, token=escape_markdown(shown_a[comparison.query[0]]),
                 first=escape_markdown(shown_a[alignment.common_prefix]), position=alignment.common_prefix),
               icon=":material/arrow_back:")
if alignment.identical and comparison.model_a == comparison.model_b:
    st.info(t("compare.identical", lang))
st.info(escape_markdown(comparison_sentence(comparison, lang)), icon=":material/compare_arrows:")
output = comparison.output
moved_column, output_column, top_column = st.columns(3)
moved_column.metric(t("compare.metric_moved", lang), f"{comparison.moved_heads} / {comparison.js.size}",
                    help=t("compare.metric_moved_help", lang, shift=SHIFT_THRESHOLD, js=JS_THRESHOLD))
output_column.metric(t("compare.metric_output", lang), "—" if output.change is None else f"{output.change:.4f}",
                     help=t(f"measure.{output.kind}", lang) if output.kind else output.note)
if output.top_a and output.top_b:
    top_column.metric(t("compare.metric_top", lang), " → ".join(readable_tokens((output.top_a[0][0],
                                                                                  output.top_b[0][0]))),
                      help=f"{output.top_a[0][1]:.3f} → {output.top_b[0][1]:.3f}")

slide = chosen.state.slide
layer, head = st.session_state["layer"], st.session_state["head"]
# Stacked, not in columns: side by side, the grid and the bars need ~800 px and clip on a laptop-width window.
st.subheader(t("compare.ranked", lang))
compared = f"A: {text_a} — B: {text_b}" if mode == "texts" else text_a
models = comparison.model_a if comparison.model_a == comparison.model_b else \
    f"{comparison.model_a} → {comparison.model_b}"


def provenance(layer: int | None = None, head: int | None = None) -> Provenance:
    return Provenance(model=models, text=compared, backend=run_a.capture.backend, layer=layer, head=head)


ranked = ranked_heads_chart(comparison, slide=slide, lang=lang)
st.altair_chart(screen_title(ranked), width="content")
export_buttons("compare-ranked-heads", ranked, provenance(), lang, "compare_ranked")
st.subheader(t("compare.grid", lang))
metrics = ["js", "entropy"] + (["shift"] if comparison.key_shift is not None else [])
if st.session_state.get("compare_metric") not in metrics:
    st.session_state["compare_metric"] = "js"
metric = st.segmented_control(t("compare.colour_by", lang), metrics, key="compare_metric",
                              format_func=lambda m: t(f"compare.colour_{m}", lang)) or "js"
grid_figure = movement_grid_chart(comparison, metric, selected=(layer, head), slide=slide, lang=lang)
st.altair_chart(screen_title(grid_figure), width="content", on_select=select_head_from_grid,
                selection_mode=HEAD_SELECTION, key="compare_grid")
export_buttons(f"compare-grid-{metric}", grid_figure, provenance(), lang, "compare_grid_export")

st.subheader(t("compare.pair", lang, layer=layer, head=head))
layer_column, head_column = st.columns(2)
layer_column.selectbox(t("inspect.layer", lang), range(comparison.num_layers), key="layer")
head_column.selectbox(t("inspect.head", lang), range(comparison.num_heads), key="head")
pair = head_pair(comparison, layer, head)
side_a, side_b = (st.container(), st.container()) if slide else st.columns(2)
difference_column, row_column = (st.container(), st.container()) if slide else st.columns(2)
for column, name, figure in ((side_a, "a", head_heatmap_chart(pair, "A", slide=slide, lang=lang)),
                             (side_b, "b", head_heatmap_chart(pair, "B", slide=slide, lang=lang)),
                             (difference_column, "difference", head_difference_chart(pair, slide=slide, lang=lang)),
                             (row_column, "rows", query_rows_chart(pair, slide=slide, lang=lang))):
    with column:
        st.altair_chart(screen_title(figure))
        export_buttons(f"compare-L{layer}-H{head}-{name}", figure, provenance(layer, head), lang, f"compare_{name}")
st.caption(t("compare.pair_caption", lang))

loo_key = (spec_a, spec_b, text_a, text_b, backend)
if st.button(t("compare.loo_button", lang), key="compare_loo", icon=":material/content_cut:"):
    st.session_state["_compare_loo"] = loo_key
if st.session_state.get("_compare_loo") == loo_key:
    with st.spinner(t("compare.loo_running", lang)):
        try:
            with job.running():
                loo_a, loo_b = (cached_leave_one_out(spec_a, text_a, backend),
                                cached_leave_one_out(spec_b, text_b, backend))
        except InspectorError as err:
            session.show_error(err, lang)
            loo_a = loo_b = None
    if loo_a is not None:
        attention_a, attention_b, removal_a, removal_b = (
            t(key, lang, text=text, layer=layer, head=head) for key in ("compare.loo_attention", "compare.loo_removal")
            for text in ("A", "B"))
        rows = [{t("compare.loo_token", lang): label(int(a)),
                 attention_a: float(comparison.rows_a[layer, head, a]),
                 attention_b: float(comparison.rows_b[layer, head, b]),
                 removal_a: float(loo_a.scores["occlusion"][a]),
                 removal_b: float(loo_b.scores["occlusion"][b])} for a, b in alignment.pairs]
        st.dataframe(rows, hide_index=True, column_config={name: st.column_config.NumberColumn(format="%.4f")
                                                           for name in list(rows[0])[1:]})
        removed_a, removed_b = removed_how(spec_a, loo_a, lang), removed_how(spec_b, loo_b, lang)
        removed = removed_a if removed_a == removed_b else t("compare.loo_removed_each", lang, a=removed_a,
                                                              b=removed_b)
        st.caption(escape_markdown(t("compare.loo_caption", lang, target=target_words(loo_a.target, lang),
                                     removed=removed)))

st.download_button(t("compare.download", lang),
                   lambda: json.dumps(comparison_json(comparison, comparison_sentence(comparison, lang)),
                                      ensure_ascii=False, allow_nan=False),
                   file_name="compare.json", mime="application/json", key="compare_json",
                   icon=":material/download:", on_click="ignore")

atlases = None
if mode == "models":  # atlases and roles need no head-to-head partner: the same blocks as for different shapes
    names = (sidebar.shown_model_name(comparison.model_a, lang), sidebar.shown_model_name(comparison.model_b, lang))
    atlases = compare_atlas.show((spec_a, spec_b), names, chosen.state, lang, slide)
    compare_roles.show((spec_a, spec_b), names, backend, lang, slide)
publish_link(int(layer), int(head), text_b, spec_b, query, keys, atlases)
st.caption(t("compare.server_time", lang, ms=f"{1000 * (time.perf_counter() - started):.0f}"))
