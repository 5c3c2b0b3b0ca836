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
from inspector.analyses.atlas import Atlas, atlas_metrics, shipped_atlas_spec, shipped_atlases
from inspector.base.i18n import t
from inspector.output.share_atlas import AtlasState, decode_atlas, encode_atlas
from views import pages, session, share_state, sidebar
from views.atlas_map import (
    FOLDER,
    PAGE_FOLDER_KEY,
    PAGE_KEYS,
    axis_menus,
    cached_atlas,
    head_key,
    show_scatter,
    shown_model,
)

NONE = ""  # the second atlas menu's "none"


def apply_link(state: AtlasState) -> None:
    """A link's atlas state into the page's widgets (before they are drawn); no atlas named keeps the default."""
    for field, key in PAGE_KEYS.items():
        if field != "atlas" or state.atlas:
            st.session_state[key] = getattr(state, field)
    st.session_state[head_key("a")], st.session_state[head_key("b")] = state.head, state.head_b


def atlas_label(name: str, lang: str) -> str:
    """A source menu entry: a shipped atlas by its model's label, or the census folder."""
    if name == FOLDER:
        return t("atlas.source_folder", lang)
    if name == NONE:
        return t("atlas.second_none", lang)
    return shown_model(shipped_atlas_spec(name), lang)


def open_atlas(source: str, shipped: dict, lang: str, *, hosted: bool) -> Atlas | None:
    """The atlas chosen in the source menu (a folder typed below it for :data:`FOLDER`), or None with the reason
    shown."""
    if source == FOLDER:
        if hosted:
            st.error(t("census.hosted", lang))
            return None
        folder = st.text_input(t("census.path", lang), key=PAGE_FOLDER_KEY, help=t("atlas.folder_help", lang))
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
if st.session_state.get(PAGE_KEYS["atlas"]) not in sources:
    # The sidebar's model's atlas where one ships, else the first.
    st.session_state[PAGE_KEYS["atlas"]] = next((name for name in shipped if shipped_atlas_spec(name) == chosen.spec),
                                           sources[0])
if st.session_state.get(PAGE_KEYS["atlas_b"]) not in (NONE, *shipped):
    st.session_state[PAGE_KEYS["atlas_b"]] = NONE

menu = st.columns(2)
source = menu[0].selectbox(t("atlas.source", lang), sources, key=PAGE_KEYS["atlas"],
                           format_func=lambda name: atlas_label(name, lang))
second = menu[1].selectbox(t("atlas.second", lang), [NONE, *shipped], key=PAGE_KEYS["atlas_b"],
                           format_func=lambda name: atlas_label(name, lang), help=t("atlas.second_help", lang))
atlas = open_atlas(source, shipped, lang, hosted=hosted)
if atlas is None:
    st.stop()
x, y, colour = axis_menus(list(atlas_metrics(atlas)), PAGE_KEYS, lang)

other = None
if second != NONE:
    try:
        other = cached_atlas(str(shipped[second]))
    except InspectorError as err:
        session.show_error(err, lang, quoted=True)
head_b = None
if slide or other is None:  # one column: each map's title stays in its chart
    head = show_scatter(atlas, "a", x, y, colour, lang, slide)
    if other is not None:
        head_b = show_scatter(other, "b", x, y, colour, lang, slide)
else:  # side by side: the captions and titles in a row of their own, so both plots start at one height
    headings = st.columns(2, gap="medium", vertical_alignment="bottom")
    columns = st.columns(2, gap="medium")
    with columns[0]:
        head = show_scatter(atlas, "a", x, y, colour, lang, slide, heading=headings[0])
    with columns[1]:
        head_b = show_scatter(other, "b", x, y, colour, lang, slide, heading=headings[1])

# The address bar: the sidebar's view (model, text, layer, head: other pages read them) and the atlas's own
# parameters — a folder is never in a link.
state = AtlasState(atlas=source if source != FOLDER else "", atlas_b=second, x=x, y=y, colour=colour, head=head,
                   head_b=head_b, statistic=st.session_state.get(PAGE_KEYS["statistic"], "induction"))
share_state.publish_view(replace(chosen.state, page="atlas"), layer=int(st.session_state.get("layer", 0)),
                         head=int(st.session_state.get("head", 0)), extra=encode_atlas(state))
