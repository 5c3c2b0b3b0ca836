"""Generate: watch a causal LM write (issue 28) — tokens stream in as they are produced, with a Stop button; then a
step scrubber over the run: the step's attention row over prompt + generated tokens (one head, and every head of the
layer), the candidates it chose from, the entropy of every head at every step, the sink mass and the KV cache's size.

Widgets → one library call (:func:`inspector.analyses.generate.generate`, the same numbers as
``python -m inspector generate``) → charts. The prompt is the sidebar's text; the run's settings and the step on
screen travel in the share link, so a link reproduces the run (seed included). A finished run is kept in the
session, so scrubbing, switching layer or head, or the language never runs the model again.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

import streamlit as st

from inspector import InspectorError
from inspector.analyses.generate import Generation, generate, generation_json, has_chat_template
from inspector.base.i18n import notice_text, t
from inspector.base.jsonable import to_jsonable
from inspector.base.limits import MAX_TEXT_CHARS
from inspector.charts.generate import (
    attention_row_chart,
    candidates_chart,
    entropy_strip_chart,
    kv_cache_chart,
    layer_rows_chart,
    sink_chart,
)
from inspector.output.export import Provenance, chart_png, chart_svg, with_provenance
from inspector.output.share import (
    GENERATE_MAX_NEW_TOKENS,
    GENERATE_MAX_SEED,
    GENERATE_MAX_TEMPERATURE,
    GENERATE_MAX_TOP_K,
    GenerateState,
    decode_generate,
    encode_generate,
    encode_view,
    escape_markdown,
    generate_share_url,
)
from views import session, sidebar

PAGE_KEYS = ("generate_new", "generate_temp", "generate_topk", "generate_topp", "generate_seed", "generate_chat")
KEPT_RUNS = 4  # finished runs kept per session (a 64-step SmolLM2 run with every layer's rows is ~15 MB)
DECODERS = "bundled:smollm2-135m"


def restore_page_state() -> None:
    """Once per session: the link's Generate parameters; afterwards, the values kept through a page switch."""
    if not st.session_state.get("_generate_restored"):
        st.session_state["_generate_restored"] = True
        state, warnings = decode_generate(st.query_params.to_dict())
        st.session_state["_generate_warnings"] = warnings
        for key in ("new", "temp", "topk", "topp", "seed", "chat"):
            st.session_state[f"generate_{key}"] = getattr(state, key)
        st.session_state["_generate_link_step"] = state.step
    for key, value in st.session_state.get("_generate_saved", {}).items():
        st.session_state.setdefault(key, value)


def sync_prompt() -> None:
    st.session_state["text"] = st.session_state["generate_prompt"]


def stop_run(request: tuple) -> None:
    """Stop button → remember how far the run got. The click's rerun interrupts the running loop; the rerun then
    keeps the tokens written so far (regenerated exactly: the run is deterministic) instead of starting again."""
    st.session_state["_generate_stopped"] = (request, st.session_state.get("_generate_done", 0))


def run_again(request: tuple) -> None:
    st.session_state.get("_generate_runs", {}).pop(request, None)
    st.session_state.pop("_generate_stopped", None)


def keep(request: tuple, result: Generation) -> None:
    runs = st.session_state.setdefault("_generate_runs", {})
    runs.pop(request, None)
    runs[request] = result
    while len(runs) > KEPT_RUNS:
        runs.pop(next(iter(runs)))


def stream(loaded, request: tuple, options: dict) -> Generation:
    """Run the model with the tokens written into the page as they come, and a Stop button."""
    text_slot, bar_slot, stop_slot = st.empty(), st.empty(), st.empty()
    stop_slot.button(t("generate.stop", lang), key="generate_stop", on_click=stop_run, args=(request,),
                     icon=":material/stop_circle:")
    st.session_state["_generate_done"] = 0
    started = time.perf_counter()
    first: list[float] = []

    def on_token(step: int, token: str, text: str) -> None:
        if not first:
            first.append(time.perf_counter() - started)
        st.session_state["_generate_done"] = step + 1
        text_slot.code(options["prompt_shown"] + text, language=None, wrap_lines=True)

    def progress(done: int, total: int, note: str) -> None:
        bar_slot.progress(done / total, text=t("generate.progress", lang, done=done, total=total))

    result = generate(loaded, options["prompt"], max_new_tokens=options["new"], temperature=options["temp"],
                      top_k=options["topk"] or None, top_p=options["topp"], seed=options["seed"],
                      chat=options["chat"], weights="all", backend=options["backend"], on_token=on_token,
                      progress=progress)
    st.session_state["_generate_first_token"] = (request, first[0] if first else None)
    for slot in (text_slot, bar_slot, stop_slot):
        slot.empty()
    return result


title = st.empty()
chosen, status, loaded = sidebar.open_page()
lang = chosen.state.lang
title.title(t("generate.title", lang))
st.caption(t("generate.caption", lang))
info = loaded.info
if not info.causal or info.head != "causal-lm":
    status.clear()
    st.info(t("generate.pick_decoder", lang, model=sidebar.shown_model_name(info.name, lang),
              smollm2=sidebar.shown_model_name(DECODERS, lang),
              gemma=sidebar.shown_model_name("bundled:gemma-3-270m", lang)), icon=":material/edit_note:")
    st.stop()
restore_page_state()
for warning in st.session_state.get("_generate_warnings", ()):
    st.warning(t("sidebar.share_warning", lang, warning=escape_markdown(notice_text(warning, lang))), icon="⚠️")

if st.session_state.get("generate_prompt") != st.session_state["text"]:
    st.session_state["generate_prompt"] = st.session_state["text"]  # the sidebar's text changed (or first run)
st.text_area(t("generate.prompt", lang), key="generate_prompt", height=80, max_chars=MAX_TEXT_CHARS,
             on_change=sync_prompt, help=t("generate.prompt_help", lang))
chat_offered = has_chat_template(loaded)
if not chat_offered:
    st.session_state["generate_chat"] = False
columns = st.columns([3, 2, 2, 2, 2])
limit = max(1, min(GENERATE_MAX_NEW_TOKENS, info.max_positions - 1))
if st.session_state.get("generate_new", 32) > limit:
    st.session_state["generate_new"] = limit
new = columns[0].slider(t("generate.new_tokens", lang), 1, limit, key="generate_new")
temp = columns[1].number_input(t("generate.temperature", lang), 0.0, GENERATE_MAX_TEMPERATURE, step=0.1,
                               key="generate_temp", help=t("generate.temperature_help", lang))
topk = columns[2].number_input(t("generate.top_k", lang), 0, GENERATE_MAX_TOP_K, step=1, key="generate_topk",
                               help=t("generate.top_k_help", lang), disabled=temp == 0)
topp = columns[3].number_input(t("generate.top_p", lang), 0.01, 1.0, step=0.05, key="generate_topp",
                               help=t("generate.top_p_help", lang), disabled=temp == 0)
seed = columns[4].number_input(t("generate.seed", lang), 0, GENERATE_MAX_SEED, step=1, key="generate_seed",
                               help=t("generate.seed_help", lang), disabled=temp == 0)
chat = st.toggle(t("generate.chat", lang), key="generate_chat", disabled=not chat_offered,
                 help=t("generate.chat_help" if chat_offered else "generate.chat_unavailable", lang))
st.session_state["_generate_saved"] = {key: st.session_state[key] for key in PAGE_KEYS if key in st.session_state}

prompt = st.session_state["generate_prompt"]
request = (chosen.spec, prompt, bool(chat), int(new), float(temp), int(topk), float(topp), int(seed),
           chosen.state.backend)
runs = st.session_state.setdefault("_generate_runs", {})
result = runs.get(request)
stopped = st.session_state.get("_generate_stopped")
if result is None:
    options = dict(prompt=prompt, prompt_shown="" if chat else prompt, new=int(new), temp=float(temp),
                   topk=int(topk), topp=float(topp), seed=int(seed), chat=bool(chat), backend=chosen.state.backend)
    status.update(label=t("generate.running", lang, n=new))
    try:
        # A hosted instance's limits (issue 33, item 1): the prompt's length and the new tokens planned before the
        # run (refused or cut with a notice), the deadline held while it runs.
        job = session.plan_job("generate", loaded, lang, [prompt], count=int(new))
        options["new"] = job.keep
        if stopped is not None and stopped[0] == request:
            if stopped[1] < 1:  # stopped before the first token: nothing to show
                status.clear()
                st.info(t("generate.stopped_early", lang))
                st.button(t("generate.again", lang), key="generate_again", on_click=run_again, args=(request,))
                st.stop()
            # The same request for as many tokens as were written: the same tokens (greedy, or the same seed).
            with job.running():
                result = generate(loaded, prompt, max_new_tokens=min(int(stopped[1]), job.keep),
                                  temperature=float(temp), top_k=int(topk) or None, top_p=float(topp),
                                  seed=int(seed), chat=bool(chat), weights="all", backend=chosen.state.backend)
            result = replace(result, max_new_tokens=int(new), finish="stopped")
        else:
            with job.running():
                result = stream(loaded, request, options)
    except InspectorError as err:
        status.update(label=t("generate.failed", lang), state="error")
        st.error(str(err))
        st.stop()
    keep(request, result)
model_name = sidebar.shown_model_name(info.name, lang)
timed_request, first = st.session_state.get("_generate_first_token", (None, None))
first = first if timed_request == request else None  # measured on this run's stream only
status.update(state="complete", label=t("generate.ran", lang, model=model_name, n=result.steps,
                                        finish=t(f"generate.finish.{result.finish}", lang),
                                        prefill_ms=f"{1000 * result.prefill_s:.0f}",
                                        rate=f"{result.tokens_per_s:.1f}", backend=result.backend))

st.subheader(t("generate.output", lang))
st.code(("" if result.chat else result.prompt) + result.text, language=None, wrap_lines=True)
st.button(t("generate.again", lang), key="generate_again", on_click=run_again, args=(request,),
          icon=":material/replay:")
if result.finish == "stopped":
    st.info(t("generate.stopped", lang, n=result.steps))

# The step scrubber: everything below shows one step of the finished run.
link_step = st.session_state.pop("_generate_link_step", None)
if link_step is not None:
    st.session_state["generate_step"] = min(int(link_step), result.steps - 1)
if st.session_state.get("generate_step", 0) > result.steps - 1:
    st.session_state["generate_step"] = result.steps - 1
if result.steps > 1:
    step = st.slider(t("generate.step", lang), 0, result.steps - 1, key="generate_step",
                     help=t("generate.step_help", lang))
else:
    step = 0
st.markdown(escape_markdown(t("generate.step_line", lang, step=step, token=result.pieces[step],
                              p=f"{float(result.chosen_prob[step]):.3f}",
                              position=result.prompt_len - 1 + step)))
layer_column, head_column = st.columns(2)
layer = layer_column.selectbox(t("inspect.layer", lang), range(info.num_layers), key="layer")
head = head_column.selectbox(t("inspect.head", lang), range(info.num_heads), key="head")
slide = chosen.state.slide


def provenance(layer: int | None = None, head: int | None = None) -> Provenance:
    return Provenance(model=info.name, text=result.prompt_text, backend=result.backend, layer=layer, head=head)


def download_buttons(name: str, chart, prov: Provenance, key: str) -> None:
    """PNG (2×) and SVG of ``chart`` with its provenance caption, rendered only when clicked."""
    with st.container(horizontal=True):
        st.download_button("PNG", lambda: chart_png(with_provenance(chart, prov, lang), scale=2),
                           file_name=f"{name}.png", mime="image/png", key=f"generate_{key}_png",
                           icon=":material/download:", on_click="ignore")
        st.download_button("SVG", lambda: chart_svg(with_provenance(chart, prov, lang)), file_name=f"{name}.svg",
                           mime="image/svg+xml", key=f"generate_{key}_svg", icon=":material/download:",
                           on_click="ignore")


charts = {
    "row": (attention_row_chart(result, layer, head, step, slide=slide, lang=lang), provenance(layer, head)),
    "heads": (layer_rows_chart(result, layer, step, selected_head=head, slide=slide, lang=lang), provenance(layer)),
    "candidates": (candidates_chart(result, step, slide=slide, lang=lang), provenance()),
    "entropy": (entropy_strip_chart(result, layer, step=step, slide=slide, lang=lang), provenance(layer)),
    "sink": (sink_chart(result, layer, step=step, slide=slide, lang=lang), provenance(layer)),
    "kv": (kv_cache_chart(result, step=step, slide=slide, lang=lang), provenance()),
}
names = {"row": f"generate-step{step}-L{layer}-H{head}", "heads": f"generate-step{step}-L{layer}-heads",
         "candidates": f"generate-step{step}-candidates", "entropy": f"generate-L{layer}-entropy",
         "sink": "generate-sink", "kv": "generate-kv-cache"}


def show(key: str, where=st) -> None:
    chart, prov = charts[key]
    with where.container():
        st.altair_chart(chart)
        download_buttons(names[key], chart, prov, key)


show("row")
show("heads")
candidates_column, sink_column = (st.container(), st.container()) if slide else st.columns(2)
show("candidates", candidates_column)
show("sink", sink_column)
show("entropy")
kv_column, facts_column = (st.container(), st.container()) if slide else st.columns(2)
show("kv", kv_column)
last = result.kv_cache_bytes[-1].sum(), result.kv_cache_bytes_mha[-1].sum()
facts_column.metric(t("generate.kv_metric", lang), f"{last[0] / 2**20:.2f} MiB",
                    help=t("generate.kv_metric_help", lang, mha=f"{last[1] / 2**20:.2f}",
                           heads=result.num_heads, kv_heads=result.num_kv_heads))
facts_column.metric(t("generate.rate_metric", lang), f"{result.tokens_per_s:.1f}")
if first is not None:
    facts_column.metric(t("generate.first_token_metric", lang), f"{1000 * first:.0f} ms")

st.download_button(t("generate.download", lang),
                   lambda: json.dumps(to_jsonable(generation_json(result)), ensure_ascii=False, allow_nan=False),
                   file_name="generate.json", mime="application/json", key="generate_json",
                   icon=":material/download:", on_click="ignore")

# The address bar and the sidebar's share box: the shared view plus this page's own parameters.
view = replace(chosen.state, page="generate", text=prompt, layer=int(layer), head=int(head))
generate_state = GenerateState(new=int(new), temp=float(temp), topk=int(topk), topp=float(topp), seed=int(seed),
                               chat=bool(chat), step=int(step))
encoded = {**encode_view(view), **encode_generate(generate_state)}
if st.query_params.to_dict() != encoded:
    st.query_params.from_dict(encoded)
with st.sidebar:
    st.subheader(t("sidebar.share", lang))
    st.code(generate_share_url(st.context.url or "", view, generate_state), language=None, wrap_lines=True)
    st.caption(t("sidebar.share_caption", lang))
