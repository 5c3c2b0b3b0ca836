"""The Heads page's census block: open a folder written by ``python -m inspector census`` (a path on the machine
running the app) and show its grid, health report and per-head intervals without recomputing anything.

Never offered in hosted mode (:mod:`inspector.serving.hosting`: a visitor must not make the server read its paths), and
the path is a session widget only — it is not part of the share state, so a link never opens a folder."""

from __future__ import annotations

import streamlit as st

from inspector import InspectorError
from inspector.analyses.census.summary import CensusSummary, read_census
from inspector.analyses.metrics import HealthThresholds
from inspector.base.i18n import t
from inspector.charts.census import (
    census_columns,
    census_grid_chart,
    census_table,
    shown_statistics,
    statistic_name,
)
from inspector.charts.sentences.census import census_report
from inspector.output.export import screen_title
from inspector.output.share import escape_markdown
from views import session

CENSUS_MODE = "census"  # the Heads page's mode value; its label is the catalogue's heads.mode_census


@st.cache_data(max_entries=4, ttl=600, show_spinner=False)
def cached_census(folder: str, collapsed: float, diffuse: float, sink: float) -> CensusSummary:
    return read_census(folder, thresholds=HealthThresholds(collapsed=collapsed, diffuse=diffuse, sink=sink))


def show_census(collapsed: float, diffuse: float, sink: float, *, hosted: bool, lang: str, slide: bool) -> None:
    """Render the census folder block judged by the page's thresholds; stops the page's run (nothing else of the
    page is computed)."""
    if hosted:
        st.error(t("census.hosted", lang))
        st.stop()
    folder = st.text_input(t("census.path", lang), key="heads_census_path", help=t("census.path_help", lang))
    if not folder.strip():
        st.stop()
    try:
        summary = cached_census(folder.strip(), collapsed, diffuse, sink)
    except InspectorError as err:
        session.show_error(err, lang, quoted=True)  # it may quote what the folder holds
        st.stop()
    manifest = summary.manifest
    # Everything read from the folder is shown as text: a manifest's code_version of "![](http://…)" once made the
    # browser fetch the image (issue 33).
    st.caption(t("census.caption", lang, texts=summary.texts, tokens=summary.tokens, errors=summary.errors,
                 model=escape_markdown(str(summary.model.get("name"))),
                 engine=escape_markdown(str(manifest.get("engine", "?"))),
                 code=escape_markdown(str(manifest.get("code_version", "?")))))
    if manifest.get("finished") is None:
        st.warning(t("census.incomplete", lang, texts=summary.texts))
    # Only what this model can measure, the special-token masses by its own tokens (issue 44).
    shown, hidden = shown_statistics(summary)
    if st.session_state.get("heads_census_statistic") not in shown:  # another folder's choice
        st.session_state.pop("heads_census_statistic", None)
    statistic = st.selectbox(t("census.statistic", lang), shown, index=shown.index("entropy_normalized"),
                             key="heads_census_statistic",
                             format_func=lambda name: statistic_name(name, lang, summary))
    if hidden:
        st.caption(t("census.hidden", lang, causal=t("census.hidden_causal", lang) if "causal" in hidden else "",
                     specials=t("census.hidden_specials", lang) if "specials" in hidden else ""))
    st.altair_chart(screen_title(census_grid_chart(summary, statistic, slide=slide, lang=lang)))
    st.markdown("\n".join(f"- {escape_markdown(line)}" for line in census_report(summary, lang)))
    st.subheader(t("census.intervals", lang))
    columns = census_columns(lang)
    st.dataframe(census_table(summary, statistic, lang), hide_index=True, height=260,
                 column_config={columns[name]: st.column_config.NumberColumn(format="%.3f")
                                for name in ("mean", "low", "high")})
    st.stop()
