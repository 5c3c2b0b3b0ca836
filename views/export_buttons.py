"""Every page's figure export in one line (issue 31): PNG (2×) and SVG with the provenance caption, and a 16:9 slide
(1920 × 1080: title, chart, caption) of the same chart — :func:`export_buttons` under any chart.

This module is UI only: the images are made by :mod:`inspector.output.export`, and only when a button is clicked
(a deferred download), so a page that shows ten charts renders none of them until asked.
"""

from __future__ import annotations

import streamlit as st

from inspector.base.i18n import t
from inspector.output.export import EXPORT_MAX_CELLS, Provenance, chart_png, chart_svg, with_provenance
from inspector.output.slides import slide_png


def export_buttons(name: str, chart, provenance: Provenance, lang: str, key: str, *, cells: int = 0) -> None:
    """PNG, SVG and 16:9 slide downloads of ``chart`` named ``name`` (a file stem), captioned with ``provenance`` in
    ``lang``; ``key`` makes the widgets unique on the page. ``cells``: the chart's data rows, when a chart can be
    too large to render on request (past :data:`EXPORT_MAX_CELLS` the page says so instead)."""
    if cells > EXPORT_MAX_CELLS:
        st.caption(t("export.too_large", lang, limit=f"{EXPORT_MAX_CELLS:,}", cells=f"{cells:,}"))
        return
    with st.container(horizontal=True):
        st.download_button("PNG", lambda: chart_png(with_provenance(chart, provenance, lang), scale=2),
                           file_name=f"{name}.png", mime="image/png", key=f"{key}_png", icon=":material/download:",
                           on_click="ignore")
        st.download_button("SVG", lambda: chart_svg(with_provenance(chart, provenance, lang)),
                           file_name=f"{name}.svg", mime="image/svg+xml", key=f"{key}_svg",
                           icon=":material/download:", on_click="ignore")
        st.download_button(t("export.slide", lang), lambda: slide_png(chart, provenance, lang),
                           file_name=f"{name}-slide.png", mime="image/png", key=f"{key}_slide",
                           icon=":material/slideshow:", on_click="ignore", help=t("export.slide_help", lang))
