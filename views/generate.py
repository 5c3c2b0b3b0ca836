"""Generate: watch a causal LM write (issue 28) — tokens stream in as they are produced, with a Stop button; then a
step scrubber over the run: the step's attention row over prompt + generated tokens (one head, and every head of the
layer), the candidates it chose from, the entropy of every head at every step, the sink mass and the KV cache's size.

Widgets → one library call (:func:`inspector.analyses.generate.generate`, the same numbers as
``python -m inspector generate``; run and streaming in :mod:`views.generate_run`) → charts
(:mod:`views.generate_results`). The prompt is the sidebar's text; the run's settings and the step on screen travel
in the share link, so a link reproduces the run (seed included). A finished run is kept in the session, so
scrubbing, switching layer or head, or the language never runs the model again.
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from inspector.analyses.generate import MIN_TEMPERATURE, has_chat_template
from inspector.base.i18n import t
from inspector.base.limits import MAX_TEXT_CHARS
from inspector.output.share import (
    GENERATE_MAX_NEW_TOKENS,
    GENERATE_MAX_SEED,
    GENERATE_MAX_TEMPERATURE,
    GENERATE_MAX_TOP_K,
    GenerateState,
    encode_generate,
    encode_view,
    generate_share_url,
)
from inspector.serving.jobs import count_limit
from views import pages, session, sidebar
from views.generate_results import show_results
from views.generate_run import first_token_s, restore_page_state, run_or_reuse, save_page_state, sync_prompt

DECODERS = "bundled:smollm2-135m"

title = st.empty()
chosen, status, loaded = sidebar.open_page()
lang = chosen.state.lang
title.title(t("generate.title", lang))
st.caption(t("generate.caption", lang))
info = loaded.info
if not info.causal or info.head != "causal-lm":
    status.clear()
    # Keyed: the walkthrough (benchmarks/walkthrough.py) counts this page's answer to an encoder as the expected
    # refusal, not as a page that failed to draw.
    st.container(key="pick_decoder").info(
        t("generate.pick_decoder", lang, model=sidebar.shown_model_name(info.name, lang),
          smollm2=sidebar.shown_model_name(DECODERS, lang),
          gemma=sidebar.shown_model_name("bundled:gemma-3-270m", lang)),
        icon=":material/edit_note:")
    st.stop()
restore_page_state()
pages.show_link_warnings("generate", lang)

if st.session_state.get("generate_prompt") != st.session_state["text"]:
    st.session_state["generate_prompt"] = st.session_state["text"]  # the sidebar's text changed (or first run)
st.text_area(t("generate.prompt", lang), key="generate_prompt", height=80, max_chars=MAX_TEXT_CHARS,
             on_change=sync_prompt, help=t("generate.prompt_help", lang))
chat_offered = has_chat_template(loaded)
if not chat_offered:
    st.session_state["generate_chat"] = False
columns = st.columns([3, 2, 2, 2, 2])
# The range from the model and this server (issue 45): a hosted instance's new tokens per request, else the link's cap.
limit = max(1, min(GENERATE_MAX_NEW_TOKENS, info.max_positions - 1,
                   count_limit("generate", session.hosting_policy()) or GENERATE_MAX_NEW_TOKENS))
if st.session_state.get("generate_new", 32) > limit:
    st.info(t("option.clamped", lang, option=t("generate.new_tokens", lang),
              asked=f"{st.session_state['generate_new']:,}", low=1, high=f"{limit:,}", kept=f"{limit:,}",
              model=sidebar.shown_model_name(info.name, lang)), icon=":material/tune:")
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
if 0 < temp < MIN_TEMPERATURE:  # 1e-40 typed in: logits / T would overflow (issue 45, item 4)
    st.info(t("generate.temperature_raised", lang, value=f"{temp:g}", low=f"{MIN_TEMPERATURE:g}"),
            icon=":material/thermostat:")
    temp = MIN_TEMPERATURE
chat = st.toggle(t("generate.chat", lang), key="generate_chat", disabled=not chat_offered,
                 help=t("generate.chat_help" if chat_offered else "generate.chat_unavailable", lang))
save_page_state()

prompt = st.session_state["generate_prompt"]
request = (chosen.spec, prompt, bool(chat), int(new), float(temp), int(topk), float(topp), int(seed),
           chosen.state.backend)
options = dict(prompt=prompt, prompt_shown="" if chat else prompt, new=int(new), temp=float(temp), topk=int(topk),
               topp=float(topp), seed=int(seed), chat=bool(chat), backend=chosen.state.backend)
result = run_or_reuse(loaded, request, options, status, lang)
status.update(state="complete", label=t("generate.ran", lang, model=sidebar.shown_model_name(info.name, lang),
                                        n=result.steps, finish=t(f"generate.finish.{result.finish}", lang),
                                        prefill_ms=f"{1000 * result.prefill_s:.0f}",
                                        rate=f"{result.tokens_per_s:.1f}", backend=result.backend))
layer, head, step = show_results(result, request, info, slide=chosen.state.slide,
                                 first_token_s=first_token_s(request), lang=lang)

# The address bar and the sidebar's share box: the shared view plus this page's own parameters.
view = replace(chosen.state, page="generate", text=prompt, layer=layer, head=head)
generate_state = GenerateState(new=int(new), temp=float(temp), topk=int(topk), topp=float(topp), seed=int(seed),
                               chat=bool(chat), step=step)
encoded = {**encode_view(view), **encode_generate(generate_state)}
if st.query_params.to_dict() != encoded:
    st.query_params.from_dict(encoded)
with st.sidebar:
    st.subheader(t("sidebar.share", lang))
    st.code(generate_share_url(st.context.url or "", view, generate_state), language=None, wrap_lines=True)
    st.caption(t("sidebar.share_caption", lang))
