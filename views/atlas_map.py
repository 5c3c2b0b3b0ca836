"""One atlas on screen (issue 41): its scatter of every head, the scatter's exports, and the clicked head's card
(:mod:`views.atlas_card`) — drawn by the Atlas page for each of its atlases and by the Compare page's two-model mode
for each model (:mod:`views.compare_atlas`), so both pages read an atlas, draw it and open a head the same way.

A side names one atlas on a page (``a``, ``b``; ``compare_a``, ``compare_b``): it keeps each atlas's widgets and its
open head (:func:`head_key`) apart from the others'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import altair as alt
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from inspector.analyses.atlas import LAYER_METRIC, Atlas, atlas_metrics, read_atlas
from inspector.base.i18n import t
from inspector.charts.atlas import atlas_scatter_chart, metric_name
from inspector.charts.base import HEAD_SELECTION, selected_head
from inspector.output.export import Provenance, screen_title, title_dict, unwrap_lines
from inspector.output.share import escape_markdown
from views import sidebar
from views.atlas_card import show_card
from views.export_buttons import export_buttons

FOLDER = "__folder__"  # the Atlas page's source menu's "a census folder on this machine"
# The Atlas page's widgets by the link field each holds (views/atlas.py), and its folder box: the Compare page's way
# to the Atlas page (views/compare_atlas.py) sets them for a census folder, which a link never names.
PAGE_KEYS = {"atlas": "atlas_source", "atlas_b": "atlas_b", "x": "atlas_x", "y": "atlas_y", "colour": "atlas_colour",
             "statistic": "atlas_statistic"}
PAGE_FOLDER_KEY = "atlas_folder"


@st.cache_data(max_entries=8, ttl=600, show_spinner=False)
def cached_atlas(folder: str) -> Atlas:
    return read_atlas(folder)


def head_key(side: str) -> str:
    """The session key of the head (layer, head) whose card is open on ``side``."""
    return f"_atlas_head_{side}"


def shown_model(spec: str, lang: str) -> str:
    """A model as the sidebar's menu names it (MiniLM's label, not "default")."""
    return sidebar.model_choice_label(spec, sidebar.SUGGESTED_MODELS.get(spec, spec), lang)


def axis_menus(offered: list[str], keys: Mapping[str, str], lang: str) -> tuple[str, str, str]:
    """The horizontal axis, vertical axis and colour menus over the metrics ``offered`` (session keys ``keys["x"]``,
    ``keys["y"]``, ``keys["colour"]``): the two axes side by side, the colour under the horizontal one — three in a
    row cut a metric's name ("induction score (probe)") at 1000 px. A value not offered falls back to the default
    (normalised entropy × induction, or the sink score without roles, coloured by layer). Returns (x, y, colour)."""
    defaults = {"x": "entropy_normalized", "y": "induction" if "induction" in offered else "max_sink_score",
                "colour": LAYER_METRIC}
    for field in ("x", "y", "colour"):
        if st.session_state.get(keys[field]) not in offered:
            st.session_state[keys[field]] = defaults[field]
    labels = {"x": "atlas.x", "y": "atlas.y", "colour": "atlas.colour"}
    columns = (*st.columns(2), st.columns(2)[0])
    return tuple(column.selectbox(t(labels[field], lang), offered, key=keys[field],
                                  format_func=lambda m: metric_name(m, lang))
                 for column, field in zip(columns, labels))


def show_scatter(atlas: Atlas, side: str, x: str, y: str, colour: str, lang: str, slide: bool, *,
                 above_card: Callable[[int, int], None] | None = None,
                 heading: DeltaGenerator | None = None) -> tuple[int, int] | None:
    """The atlas's scatter, its exports and its head's card; returns the head whose card is open. ``above_card``:
    drawn with the open head (layer, head) between the exports and the card (the Compare page's way to the Atlas
    page). ``heading``: where the caption and the chart's title go — a column of a row above the maps' own row, the
    other map's heading beside it — so two maps side by side start their plots at one height however many lines
    their titles wrap to (a title of three lines, in 简体中文 or at 1000 px, pushed its plot below the other's).
    The chart on screen is then drawn without its title; its exports keep it."""
    summary = atlas.summary
    name = shown_model(atlas.model_spec or atlas.model_name, lang)
    missing = [metric for metric in (x, y, colour) if metric not in atlas_metrics(atlas)]
    (heading or st).caption(escape_markdown(t("atlas.caption", lang, model=name, texts=f"{summary.texts:,}",
                                              tokens=f"{summary.tokens:,}", layers=summary.shape[0],
                                              heads=summary.shape[1])))
    if missing:
        st.info(t("atlas.no_roles", lang, metrics=", ".join(metric_name(m, lang) for m in missing)))
        return None
    picked = st.session_state.get(head_key(side))
    if picked is not None and not (0 <= picked[0] < atlas.shape[0] and 0 <= picked[1] < atlas.shape[1]):
        picked = None
    chart = atlas_scatter_chart(atlas, x, y, colour, title=t("atlas.chart_title", lang, model=name),
                                selected=picked, slide=slide, lang=lang)
    shown = screen_title(chart)
    if heading is not None:
        shown = _title_above(chart, heading)
    event = st.altair_chart(shown, on_select="rerun", selection_mode=HEAD_SELECTION, key=f"atlas_scatter_{side}")
    clicked = selected_head(getattr(event, "selection", {}) or {})
    if clicked is not None and clicked != picked:
        st.session_state[head_key(side)] = clicked
        st.rerun()
    provenance = Provenance(model=atlas.model_spec or atlas.model_name,
                            text=t("atlas.provenance", lang, texts=f"{summary.texts:,}"), backend="torch")
    export_buttons(f"atlas-{side.replace('_', '-')}", chart, provenance, lang, f"atlas_export_{side}")
    if picked is None:
        st.caption(t("atlas.pick", lang))
    else:
        if above_card is not None:
            above_card(*picked)
        show_card(atlas, *picked, side=side, lang=lang)
    return picked


def _title_above(chart: alt.LayerChart, heading: DeltaGenerator) -> alt.LayerChart:
    """``chart``'s title and subtitle written in ``heading`` (bold, then as a caption), and ``chart`` without them."""
    title = title_dict(chart)
    heading.markdown(f"**{escape_markdown(unwrap_lines(title['text']))}**")
    if title.get("subtitle"):
        heading.caption(escape_markdown(unwrap_lines(title["subtitle"])))
    untitled = chart.copy(deep=False)
    untitled.title = alt.Undefined
    return untitled
