"""After a failover: tell the visitor their page was redrawn by another server (issue 32).

What happens when the replica holding a session dies: the browser's WebSocket closes; Streamlit's frontend shows
its "Connecting" indicator, keeps the page as it was (greyed while stale) and retries the socket with back-off.
Behind nginx the retry lands on a live replica (the dead one refuses the connection, nginx passes the request to
the next; deploy/nginx.conf.template). The frontend names its old session in the socket's handshake (the third
entry of ``Sec-WebSocket-Protocol``) so that a server which still has it resumes it; the new replica has never seen
it, so it opens a fresh session, and the frontend reruns the page from its URL — which holds the whole view
(inspector.output.share) — so the same chart comes back. Without a word, the visitor would see the page blank out
and redraw, and wonder; :func:`notice_if_redrawn` shows one line saying what happened, on the first run of such a
session and the reruns of its first seconds.

A server restart (one replica, or all) reads the same way and gets the same line; a reconnect to the same live
server (a laptop waking up) resumes its session and gets none.
"""

from __future__ import annotations

import time

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from inspector.base.i18n import t

_REDRAWN_AT = "_reconnect_redrawn_at"
# The notice stays through the reruns that follow a reconnect (the restored widgets rerun the page) for this long.
NOTICE_S = 30.0


def previous_session_id(protocol_header: str | None) -> str | None:
    """The session id a reconnecting frontend names in its handshake (``streamlit, <xsrf token>, <session id>``),
    or None on a first connection."""
    entries = [entry.strip() for entry in (protocol_header or "").split(",")]
    return entries[2] if len(entries) >= 3 and entries[2] else None


def notice_if_redrawn(lang: str) -> None:
    """A notice if this session began as a reconnect from a session this server does not have (shown for
    :data:`NOTICE_S` seconds of reruns)."""
    if _REDRAWN_AT not in st.session_state:
        ctx = get_script_run_ctx()
        previous = previous_session_id(st.context.headers.get("Sec-Websocket-Protocol"))
        st.session_state[_REDRAWN_AT] = (time.monotonic() if previous and ctx is not None
                                         and previous != ctx.session_id else None)
    redrawn_at = st.session_state[_REDRAWN_AT]
    if redrawn_at is not None and time.monotonic() - redrawn_at < NOTICE_S:
        st.info(t("reconnect.redrawn", lang), icon=":material/sync_problem:")
