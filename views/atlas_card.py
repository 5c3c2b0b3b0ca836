"""The Atlas page's head card (issue 41, Build 2): a clicked head's metrics with their 95 % intervals, its role
verdict by probe, its top contexts over the corpus (the attended keys shaded, the query outlined) with one example
per decile, and for each context the two ways on: its attention row drawn live (one forward of that text, on
request) and the text opened on Inspect at that layer and head. views/atlas.py calls :func:`show_card` per atlas."""

from __future__ import annotations

import streamlit as st

from inspector import InspectorError
from inspector.analyses.atlas import Atlas, atlas_metrics, dominant_role, live_row
from inspector.analyses.atlas_exemplars import Exemplar
from inspector.analyses.census.exemplars import EXEMPLAR_STATISTICS
from inspector.base.i18n import t
from inspector.charts.atlas import context_html, metrics_html, row_html
from inspector.charts.sentences.roles import role_name
from inspector.output.share import ViewState, encode_view, escape_markdown
from views import session, share_state

# The exemplar statistics in words (the census's names for what a context maximises).
STATISTIC_KEYS = {"low_entropy": "atlas.stat_low_entropy", "sink_mass": "atlas.stat_sink_mass",
                  "previous_token": "atlas.stat_previous_token", "induction": "atlas.stat_induction",
                  "distance": "atlas.stat_distance"}
SHOWN_TOP = 5  # contexts shown at once; the rest behind "more"
LIVE_KEY = "_atlas_live"  # + side: the (text index, query) whose row is drawn live


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)
def cached_live_row(spec: str, text: str, layer: int, head: int, query: int):
    return live_row(session.cached_model(spec), text, layer, head, query)


def statistic_key(side: str) -> str:
    """The session key of the statistic the card on ``side`` ranks its contexts by (side a's is the Atlas page's
    link's)."""
    return "atlas_statistic" if side == "a" else f"atlas_statistic_{side}"


def _verdict(atlas: Atlas, layer: int, head: int, lang: str) -> str:
    role = dominant_role(atlas, layer, head)
    if role is None:
        return t("atlas.verdict_no_roles", lang)
    if role == "none":
        return t("atlas.verdict_none", lang)
    scores = atlas_metrics(atlas)[role]
    return t("atlas.verdict", lang, role=role_name(role, lang), score=f"{scores.mean[layer, head]:.2f}",
             low=f"{scores.low[layer, head]:.2f}", high=f"{scores.high[layer, head]:.2f}",
             threshold=f"{atlas.roles['thresholds'][role]:g}")


def open_on_inspect(spec: str, text: str, layer: int, head: int, lang: str) -> None:
    """The context's text on Inspect at (layer, head), as a share link opened there would be."""
    share_state.open_link("views/inspect.py",
                          encode_view(ViewState(model=spec, text=text, layer=layer, head=head, lang=lang)))


def _context(atlas: Atlas, exemplar: Exemplar, layer: int, head: int, side: str, label: str, lang: str) -> None:
    """One context: its line (value, text, query), its tokens, and its two buttons; the live row under it."""
    tokens = atlas.exemplars.texts[exemplar.text_index]
    text = atlas.text_of(exemplar.text_index)
    key = f"{side}_{exemplar.kind}_{exemplar.rank}"
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):
        st.caption(escape_markdown(t("atlas.context_line", lang, label=label, value=f"{exemplar.value:.3f}",
                                     text=exemplar.text_index, query=exemplar.query)))
        asked = st.button(t("atlas.live", lang), key=f"atlas_live_{key}", icon=":material/bolt:", type="tertiary",
                          help=t("atlas.live_help", lang), disabled=text is None)
        if st.button(t("atlas.inspect", lang), key=f"atlas_inspect_{key}", icon=":material/open_in_new:",
                     type="tertiary", help=t("atlas.inspect_help", lang, layer=layer, head=head),
                     disabled=text is None):
            open_on_inspect(atlas.model_spec, text, layer, head, lang)
    st.html(context_html(tokens, exemplar.query, dict(zip(exemplar.keys, exemplar.weights))))
    if asked:
        st.session_state[LIVE_KEY + side] = (exemplar.text_index, exemplar.query, exemplar.kind, exemplar.rank)
    if st.session_state.get(LIVE_KEY + side) == (exemplar.text_index, exemplar.query, exemplar.kind, exemplar.rank):
        try:
            with st.spinner(t("atlas.live_running", lang)):
                # Planned as Inspect's run is: a hosted instance's model list, token limit, run slot and deadline.
                loaded = session.cached_model(atlas.model_spec)
                with session.plan_job("inspect", loaded, lang, texts=(text,)).running():
                    row = cached_live_row(atlas.model_spec, text, layer, head, exemplar.query)
        except InspectorError as err:
            session.show_error(err, lang)
            return
        st.html(row_html(row.tokens, row.query, row.weights))
        st.caption(t("atlas.live_done", lang, ms=f"{1000 * row.seconds:.0f}", layer=layer, head=head))


def show_card(atlas: Atlas, layer: int, head: int, *, side: str, lang: str) -> None:
    """The card of head (``layer``, ``head``) of ``atlas`` (``side``: a or b, keeps the two atlases' widgets
    apart)."""
    st.subheader(t("atlas.card_title", lang, layer=layer, head=head))
    # Catalogue words, a role the atlas's reader checked and numbers: Markdown as written (escaped, the role's bold
    # showed as **sink**).
    st.markdown(_verdict(atlas, layer, head, lang))
    st.html(metrics_html(atlas, layer, head, lang))
    if atlas.exemplars is None:
        st.info(t("atlas.no_exemplars", lang))
        return
    statistic = st.selectbox(t("atlas.statistic", lang), EXEMPLAR_STATISTICS,
                             key=statistic_key(side),
                             format_func=lambda name: t(STATISTIC_KEYS[name], lang),
                             help=t("atlas.statistic_help", lang))
    top = atlas.exemplars.of_head(layer, head, statistic, "top")
    st.markdown(f"**{escape_markdown(t('atlas.top', lang, count=len(top)))}**")
    for exemplar in top[:SHOWN_TOP]:
        _context(atlas, exemplar, layer, head, side, f"#{exemplar.rank + 1}", lang)
    if len(top) > SHOWN_TOP:
        with st.expander(t("atlas.more", lang, count=len(top) - SHOWN_TOP)):
            for exemplar in top[SHOWN_TOP:]:
                _context(atlas, exemplar, layer, head, side, f"#{exemplar.rank + 1}", lang)
    deciles = atlas.exemplars.of_head(layer, head, statistic, "decile")
    st.markdown(f"**{escape_markdown(t('atlas.deciles', lang))}**")
    for exemplar in deciles:
        _context(atlas, exemplar, layer, head, side, t("atlas.decile", lang, decile=exemplar.rank + 1), lang)
    if not top and not deciles:
        st.caption(t("atlas.no_contexts", lang))
