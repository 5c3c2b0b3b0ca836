"""Charts for two models of different shapes on one text (:mod:`inspector.analyses.compare_shapes`): entropy by
relative depth, one line per model, and the query piece's attention by piece, one bar per model. Titles, axes and
legends in ``lang`` (``chart.compare.shapes_*``); the text's pieces are data."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from inspector.analyses.compare_shapes import ShapesComparison
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.base.tokens import readable_token
from inspector.charts.base import FULL_WIDTH_PX, chart_title, style_chart, token_axis

# Model A and model B: a blue and an orange every common colour-vision deficiency tells apart (as on Inspect).
_COLOURS = ["#3b528b", "#e66101"]


def shapes_entropy_chart(result: ShapesComparison, names: tuple[str, str], *, slide: bool = False,
                         lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """One line per model: each layer's mean normalised entropy at its relative depth. Data: ``model``, ``depth``,
    ``layer``, ``entropy`` (layers with no defined entropy left out)."""
    frames = []
    for name, depth, entropy in ((names[0], result.depth_a, result.entropy_a),
                                 (names[1], result.depth_b, result.entropy_b)):
        keep = np.isfinite(entropy)
        frames.append(pd.DataFrame({"model": name, "depth": depth[keep], "layer": np.flatnonzero(keep),
                                    "entropy": entropy[keep]}))
    data = pd.concat(frames, ignore_index=True)
    model = t("chart.compare.shapes_model", lang)
    chart = alt.Chart(data).mark_line(point=True, strokeWidth=4 if slide else 2).encode(
        x=alt.X("depth:Q", title=t("chart.compare.shapes_depth", lang), scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("entropy:Q", title=t("chart.compare.shapes_entropy", lang), scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("model:N", title=model, scale=alt.Scale(domain=list(names), range=_COLOURS),
                        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=FULL_WIDTH_PX)),
        tooltip=[alt.Tooltip("model:N", title=model), alt.Tooltip("layer:O", title=t("chart.inspect.layer", lang)),
                 alt.Tooltip("entropy:Q", title=t("chart.compare.shapes_entropy", lang), format=".3f")],
    ).properties(title=chart_title(t("chart.compare.shapes_entropy_title", lang),
                                   [t("chart.compare.shapes_entropy_note", lang)], slide=slide),
                 height=360 if slide else 240)
    return style_chart(chart, slide)


def shapes_attention_chart(result: ShapesComparison, names: tuple[str, str], *, slide: bool = False,
                           lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """The query piece's attention by piece, the two models' bars side by side (offset within each piece). Data:
    ``piece`` (a unique label "position: text"), ``model``, ``share``."""
    labels = [f"{i}: {readable_token(piece)}" for i, piece in enumerate(result.segments)]
    labels.append(f"{len(labels)}: {t('compare.shapes_special', lang)}")
    data = pd.concat([pd.DataFrame({"piece": labels, "model": name, "share": shares.astype(float)})
                      for name, shares in ((names[0], result.attention_a), (names[1], result.attention_b))],
                     ignore_index=True)
    model = t("chart.compare.shapes_model", lang)
    share = t("chart.compare.shapes_share", lang)
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("piece:N", title=t("chart.compare.shapes_piece", lang), sort=labels,
                axis=token_axis(labels, horizontal=True, slide=slide)),
        xOffset=alt.XOffset("model:N", sort=list(names)),
        y=alt.Y("share:Q", title=share, axis=alt.Axis(format="%")),
        color=alt.Color("model:N", title=model, scale=alt.Scale(domain=list(names), range=_COLOURS),
                        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=FULL_WIDTH_PX)),
        tooltip=[alt.Tooltip("model:N", title=model),
                 alt.Tooltip("piece:N", title=t("chart.compare.shapes_piece", lang)),
                 alt.Tooltip("share:Q", title=share, format=".1%")],
    ).properties(title=chart_title(t("chart.compare.shapes_attention_title", lang,
                                     query=readable_token(result.segments[result.query])),
                                   [t("chart.compare.shapes_attention_note", lang)], slide=slide),
                 height=320 if slide else 220)
    return style_chart(chart, slide)
