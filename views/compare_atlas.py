"""The Compare page's two-model mode reads two atlases (issue 41, Build 2): each model's head atlas — the one that
ships for it (``assets/atlas/<name>``) or, on a local instance, the reader's own census folder typed under it — drawn
side by side on axes and a colour chosen once for both. Each map is the Atlas page's (:mod:`views.atlas_map`: the
scatter, its exports, a clicked head's card), with a button that opens the Atlas page on that atlas at that head. A
model without an atlas gets one line naming the census command that makes one. Nothing here runs a model until a
card's live row is asked for.

views/compare.py calls :func:`show` in both of its two-model paths (same shapes or not: an atlas needs no head-to-head
partner) and adds what it returns to the page's link: the Atlas page's own parameters
(:mod:`inspector.output.share_atlas`) — axes, colour, each model's open head, the first card's statistic — read back
once per session by :func:`restore_link`. The models name the atlases, so a link never names a folder.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import streamlit as st

from inspector import InspectorError
from inspector.analyses.atlas import Atlas, atlas_metrics, shipped_atlas_spec, shipped_atlases
from inspector.base.i18n import t
from inspector.output.share import ViewState, encode_view, escape_markdown
from inspector.output.share_atlas import AtlasState, decode_atlas, encode_atlas
from views import pages, session, share_state
from views.atlas_card import statistic_key
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

SIDES = ("compare_a", "compare_b")  # model A's atlas, model B's (views.atlas_map's sides)
AXIS_KEYS = {"x": "compare_atlas_x", "y": "compare_atlas_y", "colour": "compare_atlas_colour"}
FOLDER_KEYS = {"compare_a": "compare_atlas_folder_a", "compare_b": "compare_atlas_folder_b"}
# What makes an atlas of a model: a census of the bundled corpus with contexts and roles (assets/atlas/README.md).
CENSUS_COMMAND = ("python -m inspector census --model {spec} --data assets/corpus/census-sentences.txt --out FOLDER "
                  "--exemplars 20 --roles")


@dataclass(frozen=True)
class ModelAtlas:
    """One model's atlas on the page: atlas (the read atlas); shipped (its shipped atlas's name, "" when it was read
    from the reader's census folder ``folder``)."""

    atlas: Atlas
    shipped: str
    folder: str


def other_side(side: str) -> str:
    """The side of the other model's atlas."""
    return SIDES[1 - SIDES.index(side)]


def apply_link(state: AtlasState) -> None:
    """A link's atlas parameters into the block's widgets (before they are drawn); its atlas names are the Atlas
    page's and are not read here (the two models name theirs)."""
    for field, key in AXIS_KEYS.items():
        st.session_state[key] = getattr(state, field)
    st.session_state[head_key(SIDES[0])], st.session_state[head_key(SIDES[1])] = state.head, state.head_b
    for side in SIDES:  # both cards start on the link's statistic: one question asked of two models
        st.session_state[statistic_key(side)] = state.statistic


def restore_link() -> None:
    """Once per session, before the page draws the block: the link's atlas parameters."""
    pages.restore_once("compare_atlas", lambda params: decode_atlas(params, atlases=list(shipped_atlases())),
                       apply_link)


def _open(spec: str, name: str, side: str, letter: str, lang: str, *, hosted: bool) -> ModelAtlas | None:
    """Model ``spec``'s atlas: the reader's census folder when one is typed (local instances only), else the one
    that ships for it; None, with one line saying why, when it has none or the folder is refused."""
    st.markdown(f"**{escape_markdown(t('compare.atlas.model', lang, side=letter, model=name))}**")
    shipped = next((atlas for atlas in shipped_atlases() if shipped_atlas_spec(atlas) == spec), "")
    folder = "" if hosted else st.text_input(
        t("compare.atlas.folder", lang, side=letter), key=FOLDER_KEYS[side], help=t("atlas.folder_help", lang),
        placeholder=t("compare.atlas.folder_placeholder", lang) if shipped else None).strip()
    if not folder and not shipped:
        missing = "compare.atlas.missing_hosted" if hosted else "compare.atlas.missing"
        st.info(t(missing, lang, model=escape_markdown(name), command=CENSUS_COMMAND.format(spec=spec)),
                icon=":material/travel_explore:")
        return None
    try:
        atlas = cached_atlas(folder or str(shipped_atlases()[shipped]))
    except InspectorError as err:
        session.show_error(err, lang, quoted=True)  # it may quote what the folder holds
        return None
    if atlas.model_spec != spec:  # a folder of another model's census: shown, and said
        st.warning(escape_markdown(t("compare.atlas.other_model", lang, atlas=shown_model(atlas.model_spec, lang),
                                     model=name)))
    return ModelAtlas(atlas=atlas, shipped="" if folder else shipped, folder=folder)


def _open_on_atlas_page(view: ViewState, opened: ModelAtlas, other: ModelAtlas | None, side: str,
                        axes: tuple[str, str, str], head: tuple[int, int]) -> None:
    """The Atlas page with ``opened`` first, the card of ``head`` open, and ``other`` beside it (with its open head)
    when it ships — a link names shipped atlases only — on the same axes. A census folder goes to the Atlas page's
    folder box."""
    if opened.folder:
        st.session_state[PAGE_KEYS["atlas"]], st.session_state[PAGE_FOLDER_KEY] = FOLDER, opened.folder
    beside = other is not None and bool(other.shipped)
    state = AtlasState(atlas=opened.shipped, atlas_b=other.shipped if beside else "", x=axes[0], y=axes[1],
                       colour=axes[2], head=head,
                       head_b=st.session_state.get(head_key(other_side(side))) if beside else None,
                       statistic=st.session_state.get(statistic_key(side), AtlasState().statistic))
    share_state.open_link("views/atlas.py", {**encode_view(replace(view, page="atlas")), **encode_atlas(state)})


def show(specs: tuple[str, str], names: tuple[str, str], view: ViewState, lang: str, slide: bool) -> dict[str, str]:
    """The block: each model's atlas source (or its missing-atlas line), the axis and colour menus over the metrics
    both atlases have, then the two maps with their cards, side by side (stacked on a slide). ``view``: the page's
    shared view, carried to the Atlas page. Returns the block's link parameters (none without an atlas)."""
    st.subheader(t("compare.atlas.title", lang))
    st.caption(t("compare.atlas.caption", lang))
    pages.show_link_warnings("compare_atlas", lang)
    hosted = session.hosting_policy().hosted

    def columns():
        return (st.container(), st.container()) if slide else st.columns(2, gap="medium")

    opened: dict[str, ModelAtlas | None] = {}
    for column, spec, name, side, letter in zip(columns(), specs, names, SIDES, "AB"):
        with column:
            opened[side] = _open(spec, name, side, letter, lang, hosted=hosted)
    present = [model.atlas for model in opened.values() if model is not None]
    if not present:
        return {}
    offered = [metric for metric in atlas_metrics(present[0]) if all(metric in atlas_metrics(atlas)
                                                                      for atlas in present)]
    axes = axis_menus(offered, AXIS_KEYS, lang)
    heads: dict[str, tuple[int, int] | None] = dict.fromkeys(SIDES)  # each map's open head
    for column, side in zip(columns(), SIDES):
        model = opened[side]
        if model is None:
            continue
        other = opened[other_side(side)]

        def to_atlas_page(layer: int, head: int, model=model, other=other, side=side) -> None:
            if st.button(t("compare.atlas.open", lang), key=f"compare_atlas_open_{side}",
                         icon=":material/open_in_new:", help=t("compare.atlas.open_help", lang, layer=layer,
                                                                 head=head)):
                _open_on_atlas_page(view, model, other, side, axes, (layer, head))

        with column:
            heads[side] = show_scatter(model.atlas, side, *axes, lang, slide, above_card=to_atlas_page)
    return encode_atlas(AtlasState(x=axes[0], y=axes[1], colour=axes[2], head=heads[SIDES[0]],
                                   head_b=heads[SIDES[1]],
                                   statistic=st.session_state.get(statistic_key(SIDES[0]), AtlasState().statistic)))
