"""Altair (Vega-Lite) charts over results the library has already computed: the shared look.

Every builder takes finished numbers (a :class:`~inspector.metrics.HeadEntropy`, a
:class:`~inspector.heatmap.HeatmapView`) and returns an Altair chart — nothing here computes an analysis,
and nothing imports Streamlit, so the same charts serve the UI, figure export and notebooks. Token strings
reach Vega only as data: Vega draws them as text marks and escapes them in tooltips, so user text never
reaches the page as HTML.

Tokens are labelled ``"<position>: <token>"`` (:func:`token_labels`): Vega-Lite merges equal values on an
ordinal axis, so two occurrences of "the" would otherwise collapse into one row. Axes list the labels in
sentence order explicitly, because the default ordinal sort is alphabetical ("10: …" before "2: …").

**Slide mode.** Every builder takes ``slide=False``; ``slide=True`` is for projectors and printed handouts:
large type (titles 24 px, labels 16 px), bigger cells, palettes that stay readable for colour-blind viewers
and in greyscale, and a black-on-white selection outline instead of a red one. Sizes and palettes are chosen
inside each builder; fonts are applied last by :func:`style_chart` with ``configure_*``, which Vega-Lite
only allows on a top-level chart — so compose first (layer, concat) and style last. A slide-mode chart is
finished: to place it in a larger composition, build it with ``slide=False``, compose, then call
:func:`style_chart` on the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import altair as alt

# Perceptually uniform palettes that survive greyscale printing: viridis runs dark (focused heads) to
# yellow (diffuse heads); blues runs light (no weight) to dark (all of the budget).
ENTROPY_SCHEME = "viridis"
WEIGHT_SCHEME = "blues"
# Slides: projectors wash out the light end of "blues", so weights use cividis (designed to read the same
# for the common colour-vision deficiencies) whose zero end is a visible dark blue.
SLIDE_ENTROPY_SCHEME = "viridis"
SLIDE_WEIGHT_SCHEME = "cividis"
SELECTION_COLOR = "#ff4b4b"  # Streamlit's accent: the outlined head matches the app's widgets

# The entropy grid's click selection; the app reads ``event.selection[HEAD_SELECTION]`` →
# ``[{"layer": …, "head": …}]`` (empty after a click on the background).
HEAD_SELECTION = "head_pick"

ChartT = TypeVar("ChartT", bound=alt.TopLevelMixin)


def style_chart(chart: ChartT, slide: bool = False) -> ChartT:
    """Apply slide-mode type sizes to a finished, top-level chart (no-op when ``slide`` is False).

    ``configure_*`` belongs to the top level in Vega-Lite, so this is the last step of a builder; a chart
    styled here can no longer be layered or concatenated (Altair refuses charts that carry a config).
    """
    if not slide:
        return chart
    return (chart
            .configure_title(fontSize=24, subtitleFontSize=16, anchor="start", offset=12)
            .configure_axis(labelFontSize=16, titleFontSize=18, titlePadding=10)
            .configure_legend(labelFontSize=16, titleFontSize=16, gradientLength=260, gradientThickness=18)
            .configure_header(labelFontSize=16, titleFontSize=18))


def token_labels(tokens: Sequence[str]) -> list[str]:
    """One label per position, unique even when a token repeats: ``["0: [CLS]", "1: the", …]``."""
    return [f"{position}: {token}" for position, token in enumerate(tokens)]


# Vega clips a title to the chart's width by default; the grid and profile are narrower than their titles.
_TITLE_LIMIT_PX = 900


def chart_title(text: str, subtitle: Sequence[str] | None = (), *, limit: int = _TITLE_LIMIT_PX) -> alt.TitleParams:
    """A left-aligned title (and subtitle lines) that Vega clips only past ``limit`` pixels."""
    if subtitle:
        return alt.TitleParams(text=text, subtitle=list(subtitle), anchor="start", limit=limit)
    return alt.TitleParams(text=text, anchor="start", limit=limit)


def selected_head(selection) -> tuple[int, int] | None:
    """The (layer, head) picked in the entropy grid, from Streamlit's ``event.selection`` (a mapping), or None.

    Streamlit reports a point selection as a list of the selected points' fields
    (``{"head_pick": [{"layer": 2, "head": 7}]}``) and an empty one as ``{}`` or ``[]``; anything else —
    a missing key, non-integer values — is treated as no pick rather than an error.
    """
    try:
        points = selection.get(HEAD_SELECTION) if hasattr(selection, "get") else None
        if not isinstance(points, (list, tuple)) or not points:
            return None
        point = points[0]
        layer, head = point["layer"], point["head"]
        if isinstance(layer, bool) or isinstance(head, bool) or int(layer) != layer or int(head) != head:
            return None
        return int(layer), int(head)
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
