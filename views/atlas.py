"""Atlas (issue 41): every head of a model on one map — any two of its corpus metrics on the axes, a third as colour
— and, for a clicked head, its card: metrics with intervals, role verdict, the contexts of the corpus that drive it
(:mod:`views.atlas_card`). HeadVis (Anthropic 2026) is the reference.

It reads an atlas — a shipped one (``assets/atlas/<model>``) or the reader's own census folder, on a local instance
only, as the Heads page's census block does — through one cached library call
(:func:`inspector.analyses.atlas.read_atlas`); no model runs until a card's live row is asked for. A second atlas
draws beside the first (two models side by side). The page's own link parameters
(:mod:`inspector.output.share_atlas`) name shipped atlases only, never a folder.
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from inspector import InspectorError
from inspector.analyses.atlas import Atlas, atlas_metrics, read_atlas, shipped_atlas_spec, shipped_atlases
from inspector.base.i18n import t
from inspector.charts.atlas import atlas_scatter_chart, metric_name
from inspector.charts.base import HEAD_SELECTION, selected_head
from inspector.output.export import Provenance, screen_title
from inspector.output.share import escape_markdown
from inspector.output.share_atlas import AtlasState, decode_atlas, encode_atlas
from views import pages, session, share_state, sidebar
from views.atlas_card import show_card
from views.export_buttons import export_buttons

FOLDER = "__folder__"  # the source menu's "a census folder on this machine"
NONE = ""  # the second atlas menu's "none"
KEYS = {"atlas": "atlas_source", "atlas_b": "atlas_b", "x": "atlas_x", "y": "atlas_y", "colour": "atlas_colour",
        "statistic": "atlas_statistic"}
HEAD_KEYS = {"a": "_atlas_head_a", "b": "_atlas_head_b"}
AXIS_MENU_WIDTH = 250  # px: two fit beside each other in a 1000 px window, three in 1400 px


@st.cache_data(max_entries=8, ttl=600, show_spinner=False)
def cached_atlas(folder: str) -> Atlas:
    return read_atlas(folder)


def apply_link(state: AtlasState) -> None:
    """A link's atlas state into the page's widgets (before they are drawn); no atlas named keeps the default."""
    for field, key in KEYS.items():
        if field != "atlas" or state.atlas:
            st.session_state[key] = getattr(state, field)
    st.session_state[HEAD_KEYS["a"]] = state.head


def atlas_label(name: str, lang: str) -> str:
    """A source menu entry: a shipped atlas by its model's label, or the census folder."""
    if name == FOLDER:
        return t("atlas.source_folder", lang)
    if name == NONE:
        return t("atlas.second_none", lang)
    return shown_model(shipped_atlas_spec(name), lang)


def shown_model(spec: str, lang: str) -> str:
    """A model as the sidebar's menu names it (MiniLM's label, not "default")."""
    return sidebar.model_choice_label(spec, sidebar.SUGGESTED_MODELS.get(spec, spec), lang)


def open_atlas(source: str, shipped: dict, lang: str, *, hosted: bool) -> Atlas | None:
    """The atlas chosen in the source menu (a folder typed below it for :data:`FOLDER`), or None with the reason
    shown."""
    if source == FOLDER:
        if hosted:
            st.error(t("census.hosted", lang))
            return None
        folder = st.text_input(t("census.path", lang), key="atlas_folder", help=t("atlas.folder_help", lang))
        if not folder.strip():
            return None
        path = folder.strip()
    else:
        path = str(shipped[source])
    try:
        return cached_atlas(path)
    except InspectorError as err:
        session.show_error(err, lang, quoted=True)  # it may quote what the folder holds
        return None


def show_scatter(atlas: Atlas, side: str, x: str, y: str, colour: str, lang: str, slide: bool,
                 ) -> tuple[int, int] | None:
    """The atlas's scatter, its exports and its head's card; returns the head whose card is open."""
    summary = atlas.summary
    name = shown_model(atlas.model_spec or atlas.model_name, lang)
    missing = [metric for metric in (x, y, colour) if metric not in atlas_metrics(atlas)]
    st.caption(escape_markdown(t("atlas.caption", lang, model=name, texts=f"{summary.texts:,}",
                                 tokens=f"{summary.tokens:,}", layers=summary.shape[0], heads=summary.shape[1])))
    if missing:
        st.info(t("atlas.no_roles", lang, metrics=", ".join(metric_name(m, lang) for m in missing)))
        return None
    picked = st.session_state.get(HEAD_KEYS[side])
    if picked is not None and not (0 <= picked[0] < atlas.shape[0] and 0 <= picked[1] < atlas.shape[1]):
        picked = None
    chart = atlas_scatter_chart(atlas, x, y, colour, title=t("atlas.chart_title", lang, model=name),
                                selected=picked, slide=slide, lang=lang)
    event = st.altair_chart(screen_title(chart), on_select="rerun", selection_mode=HEAD_SELECTION,
                            key=f"atlas_scatter_{side}")
    clicked = selected_head(getattr(event, "selection", {}) or {})
    if clicked is not None and clicked != picked:
        st.session_state[HEAD_KEYS[side]] = clicked
        st.rerun()
    provenance = Provenance(model=atlas.model_spec or atlas.model_name,
                            text=t("atlas.provenance", lang, texts=f"{summary.texts:,}"), backend="torch")
    export_buttons(f"atlas-{side}", chart, provenance, lang, f"atlas_export_{side}")
    if picked is None:
        st.caption(t("atlas.pick", lang))
    else:
        show_card(atlas, *picked, side=side, lang=lang)
    return picked


heading = st.container()
chosen = sidebar.inputs()  # the language (app.py drew the sidebar and read the link); this page loads no model
lang, slide = chosen.state.lang, chosen.state.slide
heading.title(t("atlas.title", lang))
heading.caption(t("atlas.intro", lang))
shipped = shipped_atlases()
pages.restore_once("atlas", lambda params: decode_atlas(params, atlases=list(shipped)), apply_link)
pages.show_link_warnings("atlas", lang)
hosted = session.hosting_policy().hosted
sources = [*shipped, *(() if hosted else (FOLDER,))]
if not sources:
    st.info(t("atlas.none_shipped", lang))
    st.stop()
if st.session_state.get(KEYS["atlas"]) not in sources:
    # The sidebar's model's atlas where one ships, else the first.
    st.session_state[KEYS["atlas"]] = next((name for name in shipped if shipped_atlas_spec(name) == chosen.spec),
                                           sources[0])
if st.session_state.get(KEYS["atlas_b"]) not in (NONE, *shipped):
    st.session_state[KEYS["atlas_b"]] = NONE

menu = st.columns(2)
source = menu[0].selectbox(t("atlas.source", lang), sources, key=KEYS["atlas"],
                           format_func=lambda name: atlas_label(name, lang))
second = menu[1].selectbox(t("atlas.second", lang), [NONE, *shipped], key=KEYS["atlas_b"],
                           format_func=lambda name: atlas_label(name, lang), help=t("atlas.second_help", lang))
atlas = open_atlas(source, shipped, lang, hosted=hosted)
if atlas is None:
    st.stop()
offered = list(atlas_metrics(atlas))
defaults = {"x": "entropy_normalized", "y": "induction" if "induction" in offered else "max_sink_score",
            "colour": "layer"}
for field in ("x", "y", "colour"):
    if st.session_state.get(KEYS[field]) not in offered:
        st.session_state[KEYS[field]] = defaults[field]
# Three menus of one width that wrap to a second row where the page is narrow, so that no metric's name is cut.
with st.container(horizontal=True, wrap=True, gap="small"):
    x, y, colour = (st.selectbox(t(f"atlas.{field}", lang), offered, key=KEYS[field], width=AXIS_MENU_WIDTH,
                                 format_func=lambda m: metric_name(m, lang)) for field in ("x", "y", "colour"))

other = None
if second != NONE:
    try:
        other = cached_atlas(str(shipped[second]))
    except InspectorError as err:
        session.show_error(err, lang, quoted=True)
columns = (st.container(), st.container()) if slide or other is None else st.columns(2, gap="medium")
with columns[0]:
    head = show_scatter(atlas, "a", x, y, colour, lang, slide)
if other is not None:
    with columns[1]:
        show_scatter(other, "b", x, y, colour, lang, slide)

# The address bar: the sidebar's view (model, text, layer, head: other pages read them) and the atlas's own
# parameters — a folder is never in a link.
state = AtlasState(atlas=source if source != FOLDER else "", atlas_b=second, x=x, y=y, colour=colour, head=head,
                   statistic=st.session_state.get(KEYS["statistic"], "induction"))
share_state.publish_view(replace(chosen.state, page="atlas"), layer=int(st.session_state.get("layer", 0)),
                         head=int(st.session_state.get("head", 0)), extra=encode_atlas(state))
