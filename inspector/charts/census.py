"""Altair chart of a :class:`~inspector.analyses.census.summary.CensusSummary`: the layer × head grid of one statistic's
mean over the corpus, with its 95 % interval in the tooltip and the Heads page's C / D marks for collapsed and
diffuse heads. Builders take finished numbers and compute no analysis; what a reader sees is in ``lang``, from the
catalogue (``chart.census.*``)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from inspector.analyses.batching import STATISTICS
from inspector.analyses.census.summary import STATISTIC_UNITS, CensusSummary
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.charts.base import ENTROPY_SCHEME, chart_title, head_axis, mark_ink, style_chart
from inspector.charts.heads import health_words

_CELL_PX, _SLIDE_CELL_PX = 26, 40


def statistic_name(statistic: str, lang: str = DEFAULT_LANGUAGE, summary: CensusSummary | None = None) -> str:
    """A statistic of :data:`inspector.analyses.batching.STATISTICS` in words ("entropy normalized", "归一化熵"); a
    special-token mass by the model's own tokens when ``summary`` records them ("mass on <bos>", not "mass cls")."""
    tokens = summary.special_tokens(statistic) if summary is not None else None
    if tokens:
        return t("chart.census.stat.mass_on", lang, tokens="/".join(tokens))
    return t(f"chart.census.stat.{statistic}", lang)


def shown_statistics(summary: CensusSummary) -> tuple[list[str], set[str]]:
    """The statistics worth a menu entry for ``summary``, and the reasons (``"causal"``, ``"specials"``:
    :meth:`CensusSummary.zero_by_construction`) the others are left out."""
    reasons = {statistic: summary.zero_by_construction(statistic) for statistic in STATISTICS}
    return [s for s in STATISTICS if reasons[s] is None], {r for r in reasons.values() if r is not None}


def statistic_unit(statistic: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """The unit of ``statistic`` (:data:`inspector.analyses.census.summary.STATISTIC_UNITS`; any other is a share)
    in words."""
    return t(f"chart.census.unit.{statistic if statistic in STATISTIC_UNITS else 'share'}", lang)


def _census_data(summary: CensusSummary, statistic: str, lang: str) -> pd.DataFrame:
    """One row per head, under the column names the chart's encodings use."""
    layers, heads = summary.shape
    layer_index, head_index = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")  # (layers, heads)
    return pd.DataFrame({
        "layer": layer_index.ravel(), "head": head_index.ravel(),
        "name": [f"L{layer}H{head}" for layer, head in zip(layer_index.ravel(), head_index.ravel())],
        "mean": summary.mean[statistic].ravel().astype(float), "low": summary.low[statistic].ravel().astype(float),
        "high": summary.high[statistic].ravel().astype(float), "texts": summary.count[statistic].ravel(),
        "flag": health_words(summary.flags.collapsed, summary.flags.diffuse, lang),
    })


def census_columns(lang: str = DEFAULT_LANGUAGE) -> dict[str, str]:
    """:func:`census_table`'s column names in ``lang``, by the English ones (``{"mean": "平均值", …}``)."""
    keys = {"layer": "chart.inspect.layer", "head": "heads.column.head", "name": "chart.census.column.name",
            "mean": "chart.census.mean", "low": "chart.census.column.low", "high": "chart.census.column.high",
            "texts": "chart.census.texts", "flag": "chart.census.column.flag"}
    return {column: t(key, lang) for column, key in keys.items()}


def census_table(summary: CensusSummary, statistic: str, lang: str = DEFAULT_LANGUAGE) -> pd.DataFrame:
    """One row per head: layer, head, name, mean, low, high and texts of ``statistic``, and the health flag — the
    columns named and the flags worded in ``lang`` (:func:`census_columns`), as a table shows them."""
    return _census_data(summary, statistic, lang).rename(columns=census_columns(lang))


def census_grid_chart(summary: CensusSummary, statistic: str, *, slide: bool = False,
                      lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """Layer × head grid coloured by the corpus mean of ``statistic`` (one of
    :data:`inspector.analyses.batching.STATISTICS`)."""
    if statistic not in summary.mean:
        raise ValueError(f"statistic must be one of {sorted(summary.mean)}, got {statistic!r}")
    data = _census_data(summary, statistic, lang)
    data["mark"] = health_words(summary.flags.collapsed, summary.flags.diffuse, lang, marks=True)
    name = statistic_name(statistic, lang, summary)
    legend = t("chart.census.legend", lang, statistic=name, unit=statistic_unit(statistic, lang))
    bounded = statistic not in ("entropy", "mean_distance")
    scale = alt.Scale(scheme=ENTROPY_SCHEME, domain=[0.0, 1.0]) if bounded else alt.Scale(scheme=ENTROPY_SCHEME)
    base = alt.Chart(data).encode(
        x=alt.X("head:O", title=t("heads.column.head", lang), axis=head_axis(int(data["head"].max()) + 1, slide=slide)),
        y=alt.Y("layer:O", title=t("chart.inspect.layer", lang)),
        tooltip=[alt.Tooltip("name:N", title=t("heads.column.head", lang)),
                 alt.Tooltip("mean:Q", title=t("chart.census.mean", lang), format=".3f"),
                 alt.Tooltip("low:Q", title=t("chart.census.low", lang), format=".3f"),
                 alt.Tooltip("high:Q", title=t("chart.census.high", lang), format=".3f"),
                 alt.Tooltip("texts:Q", title=t("chart.census.texts", lang)),
                 alt.Tooltip("flag:N", title=t("chart.heads.health_flag", lang))])
    cells = base.mark_rect().encode(color=alt.Color("mean:Q", title=legend, scale=scale,
                                                    legend=alt.Legend(orient="bottom", direction="horizontal",
                                                                      titleLimit=400)))
    # Each mark in the ink its cell's colour needs (white on dark, black on pale).
    low, high = (0.0, 1.0) if bounded else (float(data["mean"].min()), float(data["mean"].max()))
    data["dark"] = mark_ink(data["mean"], ENTROPY_SCHEME, low, high) == "white"
    marks = base.mark_text(fontSize=16 if slide else 11, fontWeight="bold").encode(
        text="mark:N", color=alt.condition("datum.dark", alt.value("white"), alt.value("black")))
    step = _SLIDE_CELL_PX if slide else _CELL_PX
    chart = alt.layer(base.mark_rect(color="#d0d0d0"), cells, marks).properties(
        title=chart_title(t("chart.census.title", lang, statistic=name, texts=summary.texts),
                          [t("chart.census.note", lang)]),
        width=alt.Step(step), height=alt.Step(step))
    return style_chart(chart, slide)
