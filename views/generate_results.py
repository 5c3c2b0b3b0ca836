"""The Generate page's results (issue 28): the text written, then a step scrubber over the finished run — the step's
attention row over prompt + generated tokens (one head, and every head of the layer), the candidates it chose from,
the entropy of every head at every step, the sink mass and the KV cache's size, each chart with its PNG/SVG/slide
export, and the run as JSON. views/generate.py calls :func:`show_results` with one line; nothing here runs the
model, so scrubbing, switching layer or head, or the language only redraws."""

from __future__ import annotations

import json

import streamlit as st

from inspector.analyses.generate import Generation, generation_json
from inspector.base.i18n import t
from inspector.base.jsonable import to_jsonable
from inspector.base.tokens import readable_token
from inspector.charts.generate import (
    attention_row_chart,
    candidates_chart,
    entropy_strip_chart,
    kv_cache_chart,
    layer_rows_chart,
    sink_chart,
)
from inspector.output.export import Provenance, screen_title
from inspector.output.share import escape_markdown
from views.export_buttons import export_buttons
from views.generate_run import run_again


def _step_scrubber(result: Generation, lang: str) -> int:
    """The step on screen: the link's step once, kept within the run, a slider when there is more than one."""
    link_step = st.session_state.pop("_generate_link_step", None)
    if link_step is not None:
        st.session_state["generate_step"] = min(int(link_step), result.steps - 1)
    if st.session_state.get("generate_step", 0) > result.steps - 1:
        st.session_state["generate_step"] = result.steps - 1
    if result.steps < 2:
        return 0
    return st.slider(t("generate.step", lang), 0, result.steps - 1, key="generate_step",
                     help=t("generate.step_help", lang))


def show_results(result: Generation, request: tuple, info, *, slide: bool, first_token_s: float | None,
                 lang: str) -> tuple[int, int, int]:
    """Draw ``result`` (the run of ``request`` on the model ``info`` describes); returns the (layer, head, step)
    on screen, for the share link."""
    st.subheader(t("generate.output", lang))
    text, end = result.reading_text()
    st.code(("" if result.chat else result.prompt) + text, language=None, wrap_lines=True)
    if end is not None:
        st.caption(escape_markdown(t("generate.ended_with", lang, token=readable_token(end))))
    st.button(t("generate.again", lang), key="generate_again", on_click=run_again, args=(request,),
              icon=":material/replay:")
    if result.finish == "stopped":
        st.info(t("generate.stopped", lang, n=result.steps))

    step = _step_scrubber(result, lang)
    # A newline chosen is shown as ↵, as every label shows it (inspector.base.tokens), not as a line break.
    st.markdown(escape_markdown(t("generate.step_line", lang, step=step, token=readable_token(result.pieces[step]),
                                  p=f"{float(result.chosen_prob[step]):.3f}",
                                  position=result.prompt_len - 1 + step)))
    layer_column, head_column = st.columns(2)
    layers = sorted(result.weights) or list(range(info.num_layers))  # a long prompt's plan may keep fewer layers
    if st.session_state.get("layer") not in layers:
        st.session_state["layer"] = layers[0]
    layer = layer_column.selectbox(t("inspect.layer", lang), layers, key="layer")
    head = head_column.selectbox(t("inspect.head", lang), range(info.num_heads), key="head")

    def provenance(layer: int | None = None, head: int | None = None) -> Provenance:
        return Provenance(model=info.name, text=result.prompt_text, backend=result.backend, layer=layer, head=head)

    charts = {
        "row": (attention_row_chart(result, layer, head, step, slide=slide, lang=lang), provenance(layer, head),
                f"generate-step{step}-L{layer}-H{head}"),
        "heads": (layer_rows_chart(result, layer, step, selected_head=head, slide=slide, lang=lang),
                  provenance(layer), f"generate-step{step}-L{layer}-heads"),
        "candidates": (candidates_chart(result, step, slide=slide, lang=lang), provenance(),
                       f"generate-step{step}-candidates"),
        "entropy": (entropy_strip_chart(result, layer, step=step, slide=slide, lang=lang), provenance(layer),
                    f"generate-L{layer}-entropy"),
        "sink": (sink_chart(result, layer, step=step, slide=slide, lang=lang), provenance(layer), "generate-sink"),
        "kv": (kv_cache_chart(result, step=step, slide=slide, lang=lang), provenance(), "generate-kv-cache"),
    }

    def show(key: str, where=st) -> None:
        chart, prov, name = charts[key]
        with where.container():
            st.altair_chart(screen_title(chart))
            export_buttons(name, chart, prov, lang, f"generate_{key}")

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
    if first_token_s is not None:
        facts_column.metric(t("generate.first_token_metric", lang), f"{1000 * first_token_s:.0f} ms")

    st.download_button(t("generate.download", lang),
                       lambda: json.dumps(to_jsonable(generation_json(result)), ensure_ascii=False, allow_nan=False),
                       file_name="generate.json", mime="application/json", key="generate_json",
                       icon=":material/download:", on_click="ignore")
    return int(layer), int(head), int(step)
