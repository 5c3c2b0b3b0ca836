"""Inspect: the token strip, a clickable layer × head entropy grid, the chosen head's attention heatmap,
every head of its layer, the entropy profile by layer, bertviz's views (served offline), and exports.

Widgets → one cached library call → charts. Clicking a grid cell or choosing another head only redraws:
the capture already holds every layer's weights (within the memory budget of :mod:`inspector.budget`).
"""

from __future__ import annotations

import time

import streamlit as st

from inspector import InspectorError
from inspector.bertviz_views import IFRAME_MAX_HEIGHT
from inspector.charts import (HEAD_SELECTION, SMALL_MULTIPLES_MAX_TOKENS, attention_heatmap_chart, entropy_grid_chart,
                              selected_head, token_labels)
from inspector.export import EXPORT_MAX_CELLS, Provenance, capture_json, chart_png, chart_svg, export_pack, view_numbers, with_provenance
from inspector.heatmap import HeatmapOptions, heatmap_view
from inspector.share import escape_markdown
from inspector.metrics import head_entropy
from pages import inputs

# Drawing an n×n heatmap is O(n²) marks in the browser: ~160 tokens draws in about a second in Chromium,
# 500 takes many. Above this, the full heatmap is drawn only on request.
HEATMAP_MAX_TOKENS = 160

started = time.perf_counter()
st.title("Attention Inspector")
st.caption("Each query token spends a fixed attention budget (its weights sum to 1) on the keys. "
           "Low entropy: the head looks at a few tokens; high entropy: it spreads its attention out.")

chosen = inputs.sidebar()
status = inputs.Progress()
loaded = inputs.load(chosen, status)
if loaded is None:
    st.stop()
info = loaded.info
inputs.clamp_layer_and_head(chosen.state, info.num_layers, info.num_heads)
layer, head = st.session_state["layer"], st.session_state["head"]
result, model_ran = inputs.run(chosen, loaded, layer, status)
if result is None:
    st.stop()
status.update(label="Computing metrics…")
options = HeatmapOptions(hide_special=chosen.state.hide_special, drop_sink=chosen.state.drop_sink,
                         words=chosen.state.words)
slide = chosen.state.slide
# What names this capture in the chart caches: the inputs it was computed from and the layers it holds.
capture_key = (chosen.spec, chosen.state.text, chosen.state.backend, tuple(sorted(result.weights)))
entropy = head_entropy(result)
n_tokens = len(result.tokens)
forward_ms = 1000 * result.timings.get("forward", 0.0)
status.update(state="complete",
              label=(f"Ran {info.name} on {n_tokens} tokens with the {result.backend} backend "
                     f"({forward_ms:.0f} ms forward)" if model_ran else
                     f"Reused the run of {info.name} on {n_tokens} tokens (no model call)"))

with st.sidebar:
    # The architecture name comes from the model folder's config.json: shown as text, not markdown.
    st.caption(escape_markdown(f"{info.architecture} · {info.num_layers} layers × {info.num_heads} heads · head "
                               f"size {info.head_dim} · up to {info.max_positions} tokens"))
    st.metric("Backend that ran", result.backend)
    st.metric("Tokens", f"{n_tokens} / {info.max_positions}", help="Tokens in the text / the most this model reads.")


def provenance(layer: int | None = None, head: int | None = None) -> Provenance:
    return Provenance(model=info.name, text=result.text, backend=result.backend, layer=layer, head=head)


def download_buttons(name: str, chart, prov: Provenance, key: str, cells: int = 0) -> None:
    """PNG (2×) and SVG of ``chart`` with its provenance caption, rendered only when clicked."""
    if cells > EXPORT_MAX_CELLS:
        st.caption(f"Image export is offered for charts of up to {EXPORT_MAX_CELLS:,} cells; this one has {cells:,}.")
        return
    # Deferred: the caption is drawn and the image rendered only when a button is clicked.
    with st.container(horizontal=True):
        st.download_button("PNG", lambda: chart_png(with_provenance(chart, prov), scale=2), file_name=f"{name}.png",
                           mime="image/png", key=f"{key}_png", icon=":material/download:", on_click="ignore")
        st.download_button("SVG", lambda: chart_svg(with_provenance(chart, prov)), file_name=f"{name}.svg",
                           mime="image/svg+xml", key=f"{key}_svg", icon=":material/download:", on_click="ignore")


def select_head_from_grid() -> None:
    """Grid click → the layer and head widgets, before the rerun draws them."""
    picked = selected_head(st.session_state["entropy_grid"].selection)
    if picked is not None:
        st.session_state["layer"], st.session_state["head"] = picked


st.subheader("Tokens")
# st.code shows the tokenizer's strings verbatim and escaped; positions match the chart labels.
st.code("   ".join(token_labels(result.tokens)), language=None, wrap_lines=True)
if result.truncated:
    st.warning(f"The text was cut to the model's {info.max_positions} tokens.")

# Slide-mode charts are too large to share a row: stack them.
entropy_column, attention_column = (st.container(), st.container()) if slide else st.columns([2, 3], gap="large")
with entropy_column:
    grid = entropy_grid_chart(entropy, selected=(layer, head), selectable=True, slide=slide)
    st.altair_chart(grid, on_select=select_head_from_grid, selection_mode=HEAD_SELECTION, key="entropy_grid")
    st.caption("Click a cell to show that head. Colour: mean over queries of each row's entropy divided by "
               "log(number of visible keys) — 0 = all weight on one key, 1 = spread evenly.")
    download_buttons("entropy-grid", grid, provenance(), "grid")
    by_layer = inputs.cached_entropy_by_layer_chart(*capture_key, slide, result)
    st.altair_chart(by_layer)
    download_buttons("entropy-by-layer", by_layer, provenance(), "by_layer")

with attention_column:
    layer_column, head_column = st.columns(2)
    layer_column.selectbox("Layer", range(info.num_layers), key="layer")
    head_column.selectbox("Head", range(info.num_heads), key="head")
    hide_column, sink_column, words_column = st.columns(3)
    hide_column.checkbox("Hide special tokens", key="hide_special")
    sink_column.checkbox("Drop the sink", key="drop_sink",
                         help="Remove the first token's column (the attention sink) and renormalise each row to sum to 1.")
    words_column.checkbox("Words, not pieces", key="words",
                          help="Attention to a word = sum over its pieces; from a word = mean over its pieces.")
    try:
        view = heatmap_view(result, layer, head, options)
    except InspectorError as err:
        st.error(str(err))
        st.stop()
    if len(view.query_tokens) > HEATMAP_MAX_TOKENS and not st.toggle(
            f"Draw the full {len(view.query_tokens)}×{len(view.key_tokens)} heatmap (slow in the browser)",
            key="draw_large"):
        st.info(f"The heatmap has more than {HEATMAP_MAX_TOKENS} rows; turn on the toggle above to draw it, "
                "or use words instead of pieces.")
    else:
        heatmap = attention_heatmap_chart(view, slide=slide)
        st.altair_chart(heatmap)
        st.caption("Row = the query token doing the attending; its weights over the key columns sum to 1 "
                   "(unless special tokens are hidden).")
        download_buttons(f"attention-L{layer}-H{head}", heatmap, provenance(layer, head), "heatmap",
                         cells=view.weights.size)

st.subheader(f"Every head of layer {layer}")
if n_tokens > SMALL_MULTIPLES_MAX_TOKENS:
    st.info(f"Small multiples are drawn for texts of up to {SMALL_MULTIPLES_MAX_TOKENS} tokens; this one has "
            f"{n_tokens}.")
else:
    heads_chart = inputs.cached_layer_heads_chart(*capture_key, layer, options, slide, result)
    st.altair_chart(heads_chart)
    download_buttons(f"layer-{layer}-heads", heads_chart, provenance(layer), "heads",
                     cells=info.num_heads * n_tokens * n_tokens)

st.subheader("bertviz views")
if st.toggle("Show bertviz's head view and model view (served from this app, no CDN)", key="bertviz"):
    head_tab, model_tab = st.tabs(["Head view", "Model view"])
    for tab, kind in ((head_tab, "head"), (model_tab, "model")):
        with tab:
            try:
                html, height, shown = inputs.cached_bertviz(kind, chosen.spec, chosen.state.text, chosen.state.backend,
                                                            layer)
            except InspectorError as err:
                st.info(str(err))
                continue
            if len(shown) < info.num_layers:
                st.caption(f"Layers {shown[0]}–{shown[-1]} only: every layer of a text this long would draw too "
                           "many lines to stay responsive.")
            st.iframe(html, height=min(height, IFRAME_MAX_HEIGHT))

st.subheader("Export")
st.download_button(
    "Export pack (PNG + SVG + JSON of the numbers, zip)",
    lambda: export_pack({"entropy-grid": grid, "entropy-by-layer": by_layer,
                         f"attention-L{layer}-H{head}": attention_heatmap_chart(view, slide=slide)},
                        {"capture": capture_json(info, result, layers=[layer]), "heatmap": view_numbers(view)},
                        provenance(layer, head)),
    file_name="attention-inspector-export.zip", mime="application/zip", key="export_pack",
    icon=":material/folder_zip:", on_click="ignore")

inputs.publish_view(chosen.state, layer=layer, head=head)
st.caption(f"Server time for this view: {1000 * (time.perf_counter() - started):.0f} ms"
           + ("" if model_ran else " (model not called)"))
