"""Inspect: the token strip, a clickable layer × head entropy grid, the chosen head's attention heatmap (for a causal
LM, a clicked cell opens "why this cell" on the Mechanism page), every head of its layer, the entropy profile by layer,
bertviz's views (served offline), and exports.

Widgets → one cached library call → charts. Clicking a grid cell or choosing another head only redraws:
the capture already holds every layer's weights (within the memory budget of :mod:`inspector.core.budget`).
"""

from __future__ import annotations

import time
from dataclasses import replace

import altair as alt
import streamlit as st

from inspector import InspectorError
from inspector.analyses.heatmap import HeatmapOptions, heatmap_view, layer_views
from inspector.analyses.metrics import head_entropy
from inspector.base.errors import error_text
from inspector.base.i18n import t
from inspector.charts.base import (
    CELL_SELECTION,
    HEAD_SELECTION,
    WIDE_COLUMN_PX,
    selected_cell,
    selected_head,
    token_labels,
)
from inspector.charts.bertviz import IFRAME_MAX_HEIGHT
from inspector.charts.inspect import (
    SMALL_MULTIPLES_MAX_TOKENS,
    attention_heatmap_chart,
    entropy_grid_chart,
    layer_heads_chart,
)
from inspector.output.export import (
    EXPORT_MAX_CELLS,
    Provenance,
    capture_json,
    export_pack,
    screen_title,
    view_numbers,
)
from inspector.output.pages import PAGE_REGISTRY
from inspector.output.share import encode_view, escape_markdown
from views import inspect_run, session, share_state, sidebar
from views.export_buttons import export_buttons, show_failure, watched_download_button

# Drawing an n×n heatmap is O(n²) marks in the browser: ~160 tokens draws in about a second in Chromium,
# 500 takes many. Above this, the full heatmap is drawn only on request.
HEATMAP_MAX_TOKENS = 160

started = time.perf_counter()
heading = st.container()  # filled once the sidebar has said which language to use

chosen, status, loaded = sidebar.open_page()
lang = chosen.state.lang
heading.title(t("inspect.title", lang))
heading.caption(t("inspect.caption", lang))
info = loaded.info
layer, head = st.session_state["layer"], st.session_state["head"]
result, model_ran = inspect_run.run(chosen, loaded, layer, status)
if result is None:
    st.stop()
status.update(label=t("inspect.computing", lang))
options = HeatmapOptions(hide_special=chosen.state.hide_special, drop_sink=chosen.state.drop_sink,
                         words=chosen.state.words)
slide = chosen.state.slide
# What names this capture in the chart caches: the inputs it was computed from and the layers it holds.
capture_key = (chosen.spec, chosen.state.text, chosen.state.backend, tuple(sorted(result.weights)))
entropy = head_entropy(result)
n_tokens = len(result.tokens)
forward_ms = 1000 * result.timings.get("forward", 0.0)
model_name = sidebar.shown_model_name(info.name, lang)
status.update(state="complete",
              label=(t("inspect.ran", lang, model=model_name, n=n_tokens, backend=result.backend,
                       ms=f"{forward_ms:.0f}")
                     if model_ran else t("inspect.reused", lang, model=model_name, n=n_tokens)))

with st.sidebar:
    # The architecture name comes from the model folder's config.json: shown as text, not markdown.
    st.caption(escape_markdown(t("inspect.model_facts", lang, architecture=info.architecture, layers=info.num_layers,
                                 heads=info.num_heads, head_dim=info.head_dim, positions=info.max_positions)))
    st.metric(t("inspect.backend_metric", lang), result.backend)
    st.metric(t("inspect.tokens_metric", lang), f"{n_tokens} / {info.max_positions}",
              help=t("inspect.tokens_help", lang))


def provenance(layer: int | None = None, head: int | None = None) -> Provenance:
    return Provenance(model=info.name, text=result.text, backend=result.backend, layer=layer, head=head)


def download_buttons(name: str, chart, prov: Provenance, key: str, cells: int = 0) -> None:
    """PNG (2×), SVG and a 16:9 slide of ``chart`` with its provenance caption, rendered only when clicked."""
    export_buttons(name, chart, prov, lang, key, cells=cells)


def multiples_in_parts(views: list, part_heads: int) -> dict:
    """The small multiples as charts of ``part_heads`` heads each, every one under the export limit, each saying in
    its subtitle which heads it holds (a 43-token text's 12 heads were refused as one image; issue 31)."""
    parts = [views[start:start + part_heads] for start in range(0, len(views), part_heads)]
    charts = {}
    for number, part in enumerate(parts, 1):
        figure = layer_heads_chart(part, slide=slide, lang=lang)
        title = figure.title.to_dict() if hasattr(figure.title, "to_dict") else {"text": figure.title}
        note = t("export.part", lang, first=part[0].head, last=part[-1].head, heads=len(views), part=number,
                 parts=len(parts))
        subtitle = title.get("subtitle", [])
        subtitle = [subtitle] if isinstance(subtitle, str) else list(subtitle)
        charts[f"layer-{layer}-heads-part-{number}"] = figure.properties(
            title=alt.TitleParams(**{**title, "subtitle": [*subtitle, note]}))
    return charts


def select_head_from_grid() -> None:
    """Grid click → the layer and head widgets, before the rerun draws them."""
    picked = selected_head(st.session_state["entropy_grid"].selection)
    if picked is not None:
        st.session_state["layer"], st.session_state["head"] = picked


# A causal LM's heatmap cell opens "why this cell" on the Mechanism page (its score attribution, issue 40).
explains_cells = info.causal and info.head == "causal-lm"


def why_this_cell(view, picked: tuple[int, int] | None) -> None:
    """Under a causal LM's heatmap: the clicked cell (``picked``: its row and column in ``view``) and the button that
    opens the Mechanism page's score attribution of this layer, head, query and key — or the line saying to click."""
    rows, columns = len(view.query_positions), len(view.key_positions)
    if picked is None or not (0 <= picked[0] < rows and 0 <= picked[1] < columns):
        st.caption(t("inspect.why_cell_hint", lang))
        return
    query, key = view.query_positions[picked[0]], view.key_positions[picked[1]]
    if key > query:  # a later key: the mask's zero, nothing to explain
        st.caption(t("inspect.why_cell_masked", lang))
        return
    st.markdown(escape_markdown(t("inspect.why_cell", lang, layer=layer, head=head,
                                  query=f"{query}: {view.query_tokens[picked[0]]}",
                                  key=f"{key}: {view.key_tokens[picked[1]]}")))
    if st.button(t("inspect.why_cell_open", lang), key="why_cell_open", icon=":material/hub:"):
        view_state = replace(chosen.state, page="mechanism", layer=int(layer), head=int(head))
        share_state.open_link(PAGE_REGISTRY["mechanism"].script,
                              {**encode_view(view_state), "mcell": f"{query},{key}"})


st.subheader(t("inspect.tokens", lang))
# st.code shows the tokenizer's strings verbatim and escaped; positions match the chart labels.
st.code("   ".join(token_labels(result.tokens)), language=None, wrap_lines=True)
if result.truncated:
    st.warning(t("inspect.truncated", lang, limit=info.max_positions))

# Slide-mode charts are too large to share a row: stack them.
entropy_column, attention_column = (st.container(), st.container()) if slide else st.columns([2, 3], gap="large")
with entropy_column:
    # Decoder marks: the key/value head each grouped-query head shares, each layer's window (issue 27).
    marks = {"kv_heads": info.num_kv_heads, "windows": result.windows}
    grid = entropy_grid_chart(entropy, selected=(layer, head), selectable=True, slide=slide, lang=lang, **marks)
    # On screen the narrow column's titles re-wrap as the column grows (screen_title); exports wrap to the figure.
    st.altair_chart(screen_title(grid), on_select=select_head_from_grid, selection_mode=HEAD_SELECTION,
                    key="entropy_grid")
    st.caption(t("inspect.grid_caption", lang))
    # Exports get the grid without its click selection and "Click a cell…" subtitle: a slide cannot be clicked.
    exported_grid = entropy_grid_chart(entropy, selected=(layer, head), slide=slide, lang=lang, **marks)
    download_buttons("entropy-grid", exported_grid, provenance(), "grid")
    by_layer = inspect_run.cached_entropy_by_layer_chart(*capture_key, slide, lang, result)
    st.altair_chart(screen_title(by_layer))
    download_buttons("entropy-by-layer", by_layer, provenance(), "by_layer")

with attention_column:
    layer_column, head_column = st.columns(2)
    layer_column.selectbox(t("inspect.layer", lang), range(info.num_layers), key="layer")
    head_column.selectbox(t("inspect.head", lang), range(info.num_heads), key="head")
    # One wrapping row, not three columns: a third of the column cut the labels to "Hide spe…" at 1000 px.
    with st.container(horizontal=True):
        st.checkbox(t("inspect.hide_special", lang), key="hide_special")
        st.checkbox(t("inspect.drop_sink", lang), key="drop_sink", help=t("inspect.drop_sink_help", lang))
        st.checkbox(t("inspect.words", lang), key="words", help=t("inspect.words_help", lang))
    try:
        view = heatmap_view(result, layer, head, options)
    except InspectorError as err:
        session.show_error(err, lang)
        st.stop()
    if len(view.query_tokens) > HEATMAP_MAX_TOKENS and not st.toggle(
            t("inspect.draw_large", lang, rows=len(view.query_tokens), cols=len(view.key_tokens)), key="draw_large"):
        st.info(t("inspect.large_info", lang, limit=HEATMAP_MAX_TOKENS))
    else:
        heatmap = attention_heatmap_chart(view, slide=slide, lang=lang, kv_heads=info.num_kv_heads,
                                          num_heads=info.num_heads)  # the export's
        # On screen the cells are sized to the column, so they stay square when Streamlit fits its width (issue 44).
        on_screen = screen_title(attention_heatmap_chart(
            view, slide=slide, lang=lang, kv_heads=info.num_kv_heads, num_heads=info.num_heads,
            selectable=explains_cells, column_px=None if slide else WIDE_COLUMN_PX))
        if explains_cells:
            event = st.altair_chart(on_screen, on_select="rerun", selection_mode=CELL_SELECTION, key="heatmap_cell")
        else:
            st.altair_chart(on_screen)
        st.caption(t("inspect.heatmap_caption", lang))
        if explains_cells:
            why_this_cell(view, selected_cell(event.get("selection")))
        download_buttons(f"attention-L{layer}-H{head}", heatmap, provenance(layer, head), "heatmap",
                         cells=view.weights.size)

st.subheader(t("inspect.every_head", lang, layer=layer))
if n_tokens > SMALL_MULTIPLES_MAX_TOKENS:
    st.info(t("inspect.multiples_info", lang, limit=SMALL_MULTIPLES_MAX_TOKENS, n=n_tokens))
else:
    heads_chart = inspect_run.cached_layer_heads_chart(*capture_key, layer, options, slide, lang, info.num_kv_heads,
                                                   result)
    st.altair_chart(screen_title(heads_chart))
    multiples_cells = info.num_heads * n_tokens * n_tokens
    if multiples_cells <= EXPORT_MAX_CELLS:
        download_buttons(f"layer-{layer}-heads", heads_chart, provenance(layer), "heads")
    else:  # split: as many heads per image as the export limit allows, the parts in one zip
        part_heads = max(1, EXPORT_MAX_CELLS // (n_tokens * n_tokens))
        parts = -(-info.num_heads // part_heads)
        watched_download_button(
            t("inspect.export_parts", lang, parts=parts), lambda: export_pack(
                multiples_in_parts(layer_views(result, layer, options), part_heads), {}, provenance(layer), lang=lang),
            key="heads_parts", lang=lang, message_key="heads_parts_failure", file_name=f"layer-{layer}-heads.zip",
            mime="application/zip", icon=":material/folder_zip:")
        show_failure("heads_parts_failure")

st.subheader(t("inspect.bertviz", lang))
if st.toggle(t("inspect.bertviz_toggle", lang), key="bertviz"):
    head_tab, model_tab = st.tabs([t("inspect.head_view", lang), t("inspect.model_view", lang)])
    for tab, kind in ((head_tab, "head"), (model_tab, "model")):
        with tab:
            try:
                html, height, shown = inspect_run.cached_bertviz(kind, chosen.spec, chosen.state.text,
                                                                 chosen.state.backend, layer,
                                                                 head if kind == "head" else None, lang)
            except InspectorError as err:
                st.info(error_text(err, lang))
                continue
            if len(shown) < info.num_layers:
                st.caption(t("inspect.bertviz_layers", lang, first=shown[0], last=shown[-1]))
            st.iframe(html, height=min(height, IFRAME_MAX_HEIGHT))

st.subheader(t("inspect.export", lang))
st.download_button(
    t("inspect.export_pack", lang),
    lambda: export_pack({"entropy-grid": exported_grid, "entropy-by-layer": by_layer,
                         f"attention-L{layer}-H{head}": attention_heatmap_chart(
                             view, slide=slide, lang=lang, kv_heads=info.num_kv_heads, num_heads=info.num_heads)},
                        {"capture": capture_json(info, result, layers=[layer]), "heatmap": view_numbers(view)},
                        provenance(layer, head), lang=lang),
    file_name="attention-inspector-export.zip", mime="application/zip", key="export_pack",
    icon=":material/folder_zip:", on_click="ignore")

share_state.publish_view(chosen.state, layer=layer, head=head)
st.caption(t("inspect.server_time", lang, ms=f"{1000 * (time.perf_counter() - started):.0f}")
           + ("" if model_ran else t("inspect.not_called", lang)))
