"""Attention Inspector — type a text and see how every head of a real model spreads its attention.

The shell: page configuration, the sidebar every page shares (:mod:`views.sidebar`, drawn here before the page) and
navigation. Each page under ``views/`` is a thin driver over :mod:`inspector` (widgets → one cached library call →
charts); the caches and run helpers live in :mod:`views.session` (the Inspect run's in :mod:`views.inspect_run`),
the share link in :mod:`views.share_state`.
Run with ``streamlit run app.py``.

The folder is ``views/``, not ``pages/``: Streamlit treats a ``pages/`` folder beside the main script as an
old-style multipage app until ``st.navigation`` has run once in the server process, so the first share link a
fresh server received (``/lessons?…``) ran that page without this shell — no page config, no navigation, and
every helper module listed as a page (tests/test_browser.py opens a deep link on a fresh server).
"""

from __future__ import annotations

import altair as alt
import streamlit as st

from inspector.base.i18n import DEFAULT_LANGUAGE, LANGUAGES
from views import pages, sidebar
from views.progress_bar import RUNNING_STYLE
from views.reconnect import notice_if_redrawn

st.set_page_config(page_title="Attention Inspector", page_icon="🔎", layout="wide")

# Altair validates every chart object against the Vega-Lite schema as it is built, and again when Streamlit
# serialises it; the first pass is a large share of a head-click rerun (benchmarks.app_latency measures the
# rerun). The chart builders are validated in tests/test_charts.py, and the second pass (to_dict) still runs.
alt.utils.schemapi.disable_debug_mode()

# The sidebar every page shares (language, model, text, backend) is drawn here, by the entry script, not by each
# page: a page switch sends the server only the values of the widgets the entry script draws, and Streamlit merges
# a rerun still waiting in the queue into the switch. A text typed and committed with Ctrl+Enter just before
# switching, while the server was busy, was lost when the pages drew the text box (issue 33, item 4: 6 of 16
# sessions under load came back with an empty text box and no text in the share link).
sidebar.sidebar()
st.html(RUNNING_STYLE)  # "running…" lines and bars show only while the page runs (the toolbar's Stop)

# The menu speaks the sidebar's language.
lang = st.session_state.get("lang")
lang = lang if lang in LANGUAGES else DEFAULT_LANGUAGE

# A session that took over from a replica that died (issue 32) says so above the page it redraws.
notice_if_redrawn(lang)
# The menu is the page registry's (inspector.output.pages; views.pages builds it): a new page is registered there.
pages.navigation(lang).run()
