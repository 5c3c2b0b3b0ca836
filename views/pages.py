"""The page registry's Streamlit side (:mod:`inspector.output.pages` holds its data): the menu built from the
registry, a link's parameters read once per session, and the one way a page shows what was wrong with its link.

- :func:`navigation`: one ``st.Page`` per registered page, in registry order, labelled in the reader's language; the
  home page at the root, and its own path (``/inspect``) as a hidden page that sends the reader on to the root with
  the link's parameters (a share link naming ``/inspect`` once opened on "Page not found"; issue 44, item 1).
- :func:`restore_once`: a part of the session (the shared view, or a page's own parameters) reads the address bar
  once per session; the flag is named after the part, and :func:`forget_links` clears every such flag by its prefix,
  so no list of flags is kept by hand (the Lecture's "Open this step" then reads its link as a freshly opened one).
- :func:`show_link_warnings` / :func:`link_warning`: the warnings, each in the page's language, as plain text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

import streamlit as st

from inspector.base.i18n import Notice, notice_text, t
from inspector.output.pages import PAGE_REGISTRY, home_page
from inspector.output.share import escape_markdown

State = TypeVar("State")
_RESTORED = "_link_restored:"  # + the part's name: this session has read the link for that part
_WARNINGS = "_link_warnings:"  # + the part's name: what was wrong with it


def navigation(lang: str):
    """The app's menu over :data:`~inspector.output.pages.PAGE_REGISTRY`, labelled in ``lang`` (``st.navigation``'s
    page, ready for ``.run()``)."""
    pages = []
    home = None
    for spec in PAGE_REGISTRY.values():
        # The home page's url_path is the root (""): its own name then stays free for the hidden page below.
        page = st.Page(spec.script, title=t(spec.nav_key, lang), icon=spec.icon,
                       url_path="" if spec.default else spec.name, default=spec.default)
        home = page if spec.default else home
        pages.append(page)

    def to_home() -> None:
        """``/inspect?…`` → ``/?…``: the same link, on the path the menu shows."""
        st.switch_page(home, query_params=st.query_params.to_dict())

    pages.append(st.Page(to_home, title=t(home_page().nav_key, lang), url_path=home_page().name, visibility="hidden"))
    return st.navigation(pages)


def restore_once(part: str, read: Callable[[Mapping[str, str]], tuple[State, tuple[Notice, ...]]],
                 apply: Callable[[State], object]) -> bool:
    """Once per session (until :func:`forget_links`): ``read`` the address bar's parameters into a state and its
    warnings, keep the warnings for :func:`show_link_warnings` (``part``), and ``apply`` the state to the session.
    Returns whether it ran in this call. ``part``: a page's name, or another part of a page that reads its own
    parameters (the sidebar's ``"view"``, the Lessons page's ``"decoder"`` section)."""
    if st.session_state.get(_RESTORED + part):
        return False
    st.session_state[_RESTORED + part] = True
    state, warnings = read(st.query_params.to_dict())
    st.session_state[_WARNINGS + part] = tuple(warnings)
    extra = apply(state)
    if extra:  # apply may find more (a decoder the section does not offer): warnings too
        st.session_state[_WARNINGS + part] += tuple(extra)
    return True


def forget_links() -> None:
    """Every part reads the address bar again on its next run, as a freshly opened link does."""
    for key in [key for key in st.session_state if str(key).startswith(_RESTORED)]:
        st.session_state.pop(key, None)


def link_warning(warning: Notice | str, lang: str) -> None:
    """One warning about a link's parameter, in ``lang``, shown as plain text (it quotes the link)."""
    st.warning(t("sidebar.share_warning", lang, warning=escape_markdown(notice_text(warning, lang))), icon="⚠️")


def show_link_warnings(part: str, lang: str) -> None:
    """The warnings :func:`restore_once` kept for ``part``, shown on every run of the page until the link changes."""
    for warning in st.session_state.get(_WARNINGS + part, ()):
        link_warning(warning, lang)
