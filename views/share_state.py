"""What a session carries past one run: the shared widgets' values through a page switch, the layer and head fitted
to the loaded model (with a warning when a share link asked for more), and the link to what is on screen, written
into the address bar at the end of every page (restored from it once per session by :mod:`views.sidebar`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import streamlit as st

from inspector.base.i18n import t
from inspector.output.share import FLAGS, MAX_LINK_CHARS, ViewState, encode_view, link_fits, share_url, without_text
from views import pages

# Widget keys every page shares. Streamlit drops a widget's value when a run on another page does not draw that
# same widget (the widget id includes the page), when a run does not draw it at all, and on a page's own
# st.switch_page (which carries no widget values). The sidebar's keys are the entry script's widgets (app.py draws
# the sidebar before the page, so their ids are the same on every page); they keep their values with Streamlit's
# persist_state="session". They are not assigned to themselves at the top of a run: a value so assigned is sent back
# to the browser with the run's sidebar and replaces what the box shows, so a run that began just before the reader
# committed a new text put the old one back, and a page switch right after carried the old text to the server
# (issue 45, item 7: 2 of 72 switches 0.3 s after Ctrl+Enter lost the text). The page keys are each page's own
# widgets, kept by assigning each value to itself before the widget is drawn (a plain session value again).
SIDEBAR_KEYS = ("model", "model_other", "text", "backend", "example", "lang", "slide")
PAGE_KEYS = ("layer", "head", *(key for key in FLAGS if key not in SIDEBAR_KEYS))


def keep_across_pages(keys: tuple[str, ...] = PAGE_KEYS) -> None:
    """Keep the pages' own shared widgets' values (``keys``) through the next page switch: the sidebar calls it at
    the top of every run, a page before ``st.switch_page``. Only before those widgets are drawn in this run; never
    for :data:`SIDEBAR_KEYS` (their widgets keep their own values, and a value assigned to itself is sent back to
    the browser)."""
    for key in keys:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def clamp_layer_and_head(state: ViewState, num_layers: int, num_heads: int) -> None:
    """Keep the layer and head widgets inside the loaded model.

    The reader's own choice is remembered while a smaller model forces a smaller one, and comes back on a model that
    has it (Inspect at layer 4, head 5 → a two-layer model → Inspect again: 4/5, not the clamped 1/3; issue 31).
    A warning only when the values being cut are the ones a share link asked for, on the first page that runs after
    the link was opened: never for a clamp the reader caused by switching model or page."""
    layer, head = st.session_state.setdefault("layer", 0), st.session_state.setdefault("head", 0)
    wanted = st.session_state.get("_wanted_layer_head")
    if wanted is not None and (layer, head) == st.session_state.get("_clamped_layer_head"):
        layer, head = wanted  # untouched since the last clamp: the reader's own choice again
    link = st.session_state.pop("_link_layer_head", None)
    fitted, warnings = replace(state, layer=layer, head=head).fit(num_layers, num_heads)
    if link == (layer, head):
        for warning in warnings:
            pages.link_warning(warning, state.lang)
    if (fitted.layer, fitted.head) != (layer, head):
        st.session_state["_wanted_layer_head"] = (layer, head)
        st.session_state["_clamped_layer_head"] = (fitted.layer, fitted.head)
    else:
        st.session_state.pop("_wanted_layer_head", None)
        st.session_state.pop("_clamped_layer_head", None)
    st.session_state["layer"], st.session_state["head"] = fitted.layer, fitted.head


def publish_view(state: ViewState, *, layer: int, head: int, extra: Mapping[str, str] | None = None) -> None:
    """Write the view into the address bar and show it as a copyable link; ``extra``: a page's own parameters
    (the Lessons page's ``lesson`` and decoder section, :func:`inspector.output.share.encode_lesson` and
    :func:`~inspector.output.share.encode_lessons`), written after the view's."""
    state = replace(state, layer=int(layer), head=int(head))
    encoded = {**encode_view(state), **(extra or {})}
    url = share_url(st.context.url or "", state, extra)
    fits = link_fits(url)
    if not fits:  # a reload of a longer address would meet the server's HTTP 400 page, not the app
        encoded = without_text(encoded)
    if st.query_params.to_dict() != encoded:
        st.query_params.from_dict(encoded)
    with st.sidebar:
        st.subheader(t("sidebar.share", state.lang))
        if fits:
            st.code(url, language=None, wrap_lines=True)
            st.caption(t("sidebar.share_caption", state.lang))
        else:
            st.info(t("share.too_long", state.lang, length=f"{len(url):,}", limit=f"{MAX_LINK_CHARS:,}"),
                    icon=":material/link_off:")


def open_link(page_script: str, params: Mapping[str, str]) -> None:
    """Go to ``page_script`` (``views/NAME.py``) with ``params`` in the address bar and read them as a share link
    opened there would be: model, text, layer, head and the page's own parameters replace the session's (the
    Lecture page's "Open this step"). Ends the run (``st.switch_page``)."""
    pages.forget_links()  # every part reads the address bar again, as a freshly opened link
    # A layer and head the reader chose before a smaller model clamped them would come back over the link's.
    for key in ("_wanted_layer_head", "_clamped_layer_head"):
        st.session_state.pop(key, None)
    st.switch_page(page_script, query_params=dict(params))
