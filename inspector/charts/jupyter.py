"""Altair charts drawn in a notebook offline (issue 42): a chart's mimebundle and the Altair renderer emitting it.

Altair 6's ``default`` renderer writes HTML whose script loads Vega from a CDN — a blank cell offline — and its
``mimetype`` renderer writes Vega-Lite 6's mimetype, which JupyterLab 4.6 does not know yet. A chart here is emitted
as ``application/vnd.vegalite.v5+json`` (the spec Altair wrote; JupyterLab 4, Notebook 7 and VS Code draw it with
the Vega they bundle, offline and interactive — this project's charts use nothing Vega-Lite 5 lacks, which the
browser test checks by looking for the drawn chart), an optional ``image/svg+xml`` fallback for frontends without
Vega (nbviewer, GitHub; ranked below Vega-Lite where both are known), and ``text/plain``.

The SVG is drawn by vl-convert in the output layer, above this one, so it is handed in as ``svg_of(spec)``.
"""

from __future__ import annotations

from collections.abc import Callable

import altair as alt

VEGALITE_MIMETYPE = "application/vnd.vegalite.v5+json"
RENDERER_NAME = "inspector-offline"

SvgOf = Callable[[dict], str]


def chart_spec(chart) -> dict:
    """``chart``'s Vega-Lite spec with its data inline, however many rows (Altair's 5,000-row guard is for
    accidental huge notebooks; a heatmap of 128 tokens has 16,384 cells, and the app draws it whole too)."""
    with alt.data_transformers.enable("default", max_rows=None):
        return chart.to_dict()


def _title(spec: dict) -> str:
    title = spec.get("title", "")
    title = title.get("text", "") if isinstance(title, dict) else title
    return " ".join(map(str, title)) if isinstance(title, list) else str(title)


def spec_bundle(spec: dict, svg_of: SvgOf | None = None) -> dict:
    """The mimebundle of a Vega-Lite ``spec``: Vega-Lite 5's mimetype, ``svg_of(spec)`` when it gives one, text."""
    bundle: dict = {VEGALITE_MIMETYPE: spec}
    svg = svg_of(spec) if svg_of is not None else ""
    if svg:
        bundle["image/svg+xml"] = svg
    title = _title(spec)
    bundle["text/plain"] = f"<Vega-Lite chart{': ' + title if title else ''}>"
    return bundle


def chart_bundle(chart, svg_of: SvgOf | None = None) -> dict:
    """:func:`spec_bundle` of an Altair chart."""
    return spec_bundle(chart_spec(chart), svg_of)


def enable_offline_renderer(svg_of: SvgOf | None = None) -> None:
    """Register :data:`RENDERER_NAME` with Altair and enable it — only while Altair's own ``default`` renderer is
    active, so a reader's own choice (``alt.renderers.enable("png")``…) is kept — and lift the 5,000-row guard
    the same way (see :func:`chart_spec`)."""
    alt.renderers.register(RENDERER_NAME, lambda spec, **_: spec_bundle(spec, svg_of))
    if alt.renderers.active == "default":
        alt.renderers.enable(RENDERER_NAME)
    if alt.data_transformers.active == "default":
        alt.data_transformers.disable_max_rows()
