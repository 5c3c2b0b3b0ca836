"""Mechanism (issue 40): how the prediction is made — which heads write the answer (direct logit attribution, beside
each head's attention to the answer's token, and the logit lens), which components it needs (activation patching of a
clean and a corrupted text), and why one head attends from one token to another (score attribution).

The clean text is the sidebar's (so the share link carries it), the score's layer and head the sidebar's; the page's
own link parameters are the corrupted text, the answer, the contrast and the score's query and key positions. Widgets
→ cached library calls (the same calls as ``inspector explain`` and ``inspector patch``) → charts.
"""

from __future__ import annotations

import json
from dataclasses import replace

import streamlit as st

from inspector import InspectorError
from inspector.analyses.mechanism import (
    DirectLogitAttribution,
    PatchingResult,
    ScoreAttribution,
    activation_patching,
    direct_logit_attribution,
    score_attribution,
)
from inspector.analyses.mechanism.records import dla_json, patching_json, score_json
from inspector.base.examples import mechanism_example
from inspector.base.i18n import Notice, t
from inspector.base.jsonable import to_jsonable
from inspector.charts.mechanism import head_grid_chart
from inspector.output.export import Provenance, screen_title
from inspector.output.share import escape_markdown
from views import pages, session, share_state, sidebar
from views.export_buttons import export_buttons
from views.mechanism_panels import lens_table, show_patching, show_score, shown_token, top_heads_line
from views.progress_bar import progress_bar

CACHE_TTL_S = 3600
MAX_LINK_TEXT = 2_000
OWN = {"mcorrupt": "mech_corrupted", "manswer": "mech_answer", "mcontrast": "mech_contrast", "mcell": "mech_cell"}


@st.cache_data(max_entries=32, ttl=CACHE_TTL_S, show_spinner=False)
def cached_dla(spec: str, text: str, answer: str | None, contrast: str | None) -> DirectLogitAttribution:
    return direct_logit_attribution(session.cached_model(spec), text, answer=answer, contrast=contrast)


@st.cache_data(max_entries=32, ttl=CACHE_TTL_S, show_spinner=False)
def cached_score(spec: str, text: str, layer: int, head: int, query: int, key: int) -> ScoreAttribution:
    return score_attribution(session.cached_model(spec), text, layer=layer, head=head, query_position=query,
                             key_position=key)


@st.cache_data(max_entries=16, ttl=CACHE_TTL_S, show_spinner=False)
def cached_patching(spec: str, clean: str, corrupted: str, answer: str, contrast: str, _lang: str) -> PatchingResult:
    with progress_bar(t("mech.patching_start", _lang),
                      lambda done, total, note: t("mech.patching_progress", _lang, done=done, total=total)) as bar:
        return activation_patching(session.cached_model(spec), clean, corrupted, answer=answer, contrast=contrast,
                                   progress=bar)


def decode_link(params) -> tuple[dict[str, str], tuple[Notice, ...]]:
    """The page's own link parameters (texts cut to :data:`MAX_LINK_TEXT` characters)."""
    state, warnings = {}, []
    for name, key in OWN.items():
        value = params.get(name)
        if value is None:
            continue
        if len(value) > MAX_LINK_TEXT:
            warnings.append(Notice("mech.link_too_long", name=name))
            continue
        state[key] = value
    return state, tuple(warnings)


def load_example(lang: str) -> None:
    """Button callback: the example pair in ``lang`` into the sidebar's text and this page's fields."""
    example = mechanism_example(lang)
    st.session_state["text"] = example["clean"]
    st.session_state["mech_corrupted"] = example["corrupted"]
    st.session_state["mech_answer"] = example["answer"]
    st.session_state["mech_contrast"] = example["contrast"]
    st.session_state.pop("mech_cell", None)


def stop_patching(request: tuple) -> None:
    st.session_state["_mech_stopped"] = request


def _cell(text: str, n: int, default: tuple[int, int]) -> tuple[int, int]:
    try:
        query, key = (int(part) for part in text.split(","))
    except ValueError:
        return default
    return (query, key) if 0 <= key <= query < n else default


heading = st.container()
chosen, status, loaded = sidebar.open_page(clamp=True)
lang, slide, info = chosen.state.lang, chosen.state.slide, loaded.info
heading.title(t("mech.title", lang))
pages.restore_once("mechanism", decode_link, lambda state: st.session_state.update(state))
pages.show_link_warnings("mechanism", lang)
st.markdown(escape_markdown(t("mech.intro", lang)))
if not (info.causal and info.head == "causal-lm"):
    status.update(label=t("mech.needs_decoder_short", lang), state="complete")
    # The decoders by the names the sidebar's model menu shows (it named them by their specs, issue 44 walkthrough).
    # Keyed as Generate's: the walkthrough counts it as the expected refusal.
    st.container(key="pick_decoder").info(
        t("mech.needs_decoder", lang, model=sidebar.shown_model_name(info.name, lang),
          smollm2=sidebar.shown_model_name("bundled:smollm2-135m", lang),
          gemma=sidebar.shown_model_name("bundled:gemma-3-270m", lang)))
    st.stop()

with st.container(horizontal=True):
    st.button(t("mech.example_en", lang), key="mech_example_en", on_click=load_example, args=("en",),
              icon=":material/lightbulb:")
    st.button(t("mech.example_zh", lang), key="mech_example_zh", on_click=load_example, args=("zh",),
              icon=":material/lightbulb:")
clean = st.session_state.get("text", chosen.state.text)
left, right = st.columns(2)
answer = left.text_input(t("mech.answer", lang), key="mech_answer", help=t("mech.answer_help", lang)) or None
contrast = right.text_input(t("mech.contrast", lang), key="mech_contrast", help=t("mech.contrast_help", lang)) or None
spec = chosen.spec
provenance = Provenance(model=info.name, text=clean, backend="torch")

st.header(t("mech.dla_header", lang))
status.update(label=t("mech.running_dla", lang))
try:
    # Planned like the patching run and the CLI's explain: the hosted token limit, a run slot and the deadline.
    with session.plan_job("mechanism", loaded, lang, texts=(clean,)).running():
        dla = cached_dla(spec, clean, answer, contrast)
except InspectorError as err:
    status.update(label=t("mech.failed", lang), state="error")
    session.show_error(err, lang)
    st.stop()
st.markdown(escape_markdown(top_heads_line(dla, lang)))
grid_left, grid_right = st.columns(2)
contributions = head_grid_chart(dla.heads, t("chart.mech.dla_title", lang), [t("chart.mech.dla_note", lang)],
                                t("chart.mech.logit", lang), slide=slide, lang=lang)
attention = head_grid_chart(dla.attention_to_key, t("chart.mech.attention_title", lang, token=shown_token(
    dla.tokens[dla.key_position], dla.tokens), position=dla.key_position), [t("chart.mech.attention_note", lang)],
    t("chart.mech.weight", lang), diverging=False, slide=slide, lang=lang)
with grid_left:
    st.altair_chart(screen_title(contributions))
    export_buttons("mechanism-dla", contributions, provenance, lang, "mech_dla")
with grid_right:
    st.altair_chart(screen_title(attention))
    export_buttons("mechanism-attention", attention, provenance, lang, "mech_attention")
st.subheader(t("mech.lens_header", lang))
st.dataframe(lens_table(dla, lang), hide_index=True)

st.header(t("mech.patch_header", lang))
corrupted = st.text_area(t("mech.corrupted", lang), key="mech_corrupted", height=80,
                         help=t("mech.corrupted_help", lang))
patched = None
if not (corrupted.strip() and answer and contrast):
    st.info(t("mech.patch_needs", lang))
else:
    request = (spec, clean, corrupted, answer, contrast)
    if st.session_state.get("_mech_stopped") == request:
        st.info(t("mech.stopped", lang))
        st.button(t("mech.patch_again", lang), key="mech_again", icon=":material/replay:",
                  on_click=lambda: st.session_state.pop("_mech_stopped", None))
    else:
        stop_slot = st.empty()
        stop_slot.button(t("mech.stop", lang), key="mech_stop", on_click=stop_patching, args=(request,),
                         icon=":material/stop_circle:")
        status.update(label=t("mech.running_patch", lang))
        try:
            job = session.plan_job("mechanism", loaded, lang, texts=(clean, corrupted))
            with job.running():
                patched = cached_patching(spec, clean, corrupted, answer, contrast, lang)
        except InspectorError as err:
            session.show_error(err, lang)
        stop_slot.empty()
if patched is not None:
    show_patching(patched, provenance, slide, lang)

st.header(t("mech.score_header", lang))
n = len(dla.tokens)
layer, head = int(st.session_state["layer"]), int(st.session_state["head"])
query, key = _cell(st.session_state.get("mech_cell", ""), n, (dla.position, dla.key_position))
columns = st.columns(2)
query = int(columns[0].number_input(t("mech.query", lang), 0, n - 1, query, key="mech_query"))
key = int(columns[1].number_input(t("mech.key", lang), 0, query, min(key, query), key="mech_key"))
st.session_state["mech_cell"] = f"{query},{key}"
st.caption(escape_markdown(t("mech.score_cell", lang, layer=layer, head=head,
                             query=f"{query}: {shown_token(dla.tokens[query], dla.tokens)}",
                             key=f"{key}: {shown_token(dla.tokens[key], dla.tokens)}")))
score = None
try:
    with session.plan_job("mechanism", loaded, lang, texts=(clean,)).running():
        score = cached_score(spec, clean, layer, head, query, key)
except InspectorError as err:
    session.show_error(err, lang)
if score is not None:
    show_score(score, provenance, slide, lang)
status.update(label=t("mech.done", lang), state="complete")
payload = {"direct_logit_attribution": dla_json(dla)}
if patched is not None:
    payload["patching"] = patching_json(patched)
if score is not None:
    payload["score_attribution"] = score_json(score)
st.download_button(t("mech.download_json", lang),
                   lambda: json.dumps(to_jsonable(payload), ensure_ascii=False, allow_nan=False),
                   file_name="mechanism.json", mime="application/json", key="mech_json", icon=":material/download:",
                   on_click="ignore")
extra = {name: st.session_state[key] for name, key in OWN.items() if st.session_state.get(key)}
share_state.publish_view(replace(chosen.state, page="mechanism", model=spec, text=clean), layer=layer, head=head,
                         extra=extra)
