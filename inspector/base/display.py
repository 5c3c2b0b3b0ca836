"""Results that draw themselves in a notebook (issue 42): the lower half of the display protocol.

A result (a :class:`~inspector.core.capture.Capture`, a head report, a generation …) lives in the core or the
analyses layer, but what draws it — Altair charts, the HTML summary — lives in ``inspector/charts`` and
``inspector/notebook``, layers *above* it, which it may not import (tests/test_layout.py). So the dependency is
inverted here, in the base layer every layer may use:

- a result class inherits :class:`Displayable` (one line in its module), whose ``_repr_mimebundle_`` and
  ``_ipython_display_`` look its type up in a registry;
- the upper layer fills the registry with :func:`register` (``inspector.notebook.displays``: one renderer per
  result type);
- the upper layer is imported only when something is first drawn: the package face (``inspector/__init__.py``,
  which runs before any ``inspector.*`` module, so before any result can exist) hands this module a loader with
  :func:`set_loader`. ``import inspector`` therefore stays as light as it was, and a result drawn in a notebook
  finds its renderer whichever module it was imported from.

The alternative — the upper module registering IPython formatters (``for_type``) — needs an IPython shell at
registration time and does nothing for other consumers of ``_repr_mimebundle_`` (VS Code's and marimo's
renderers, nbconvert of a display call); a registry behind the standard protocol serves all of them.

A renderer is ``render(result) -> Drawing``: an HTML summary (title, model, escaped tokens, what is inside)
and the main chart as a mimebundle (Vega-Lite plus fallbacks), each built by the upper layer.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Mimebundle = dict[str, Any]


@dataclass(frozen=True)
class Drawing:
    """What one result shows: ``summary_html`` (a compact HTML block, every user string escaped),
    ``summary_text`` (the same for a plain-text console) and ``chart`` (the main chart's mimebundle — Vega-Lite,
    an SVG fallback, its text — or empty when there is none)."""

    summary_html: str
    summary_text: str
    chart: Mimebundle = field(default_factory=dict)


Renderer = Callable[[Any], Drawing]

_RENDERERS: dict[type, Renderer] = {}
_loader: Callable[[], None] | None = None


def register(kind: type, renderer: Renderer) -> None:
    """Draw results of ``kind`` (and its subclasses) with ``renderer``; a later registration replaces it."""
    _RENDERERS[kind] = renderer


def set_loader(loader: Callable[[], None]) -> None:
    """``loader()`` fills the registry (imports the renderers' module); called once, when a result is first drawn
    and no renderer for it is registered yet."""
    global _loader
    _loader = loader


def renderer_for(result: object) -> Renderer | None:
    """The renderer registered for ``result``'s class or its nearest base class, loading the renderers first if
    needed; None when there is none."""
    global _loader
    for _ in range(2):
        for kind in type(result).__mro__:
            if kind in _RENDERERS:
                return _RENDERERS[kind]
        if _loader is None:
            return None
        loader, _loader = _loader, None
        loader()
    return None


def drawing(result: object) -> Drawing:
    """``result``'s :class:`Drawing`; a result without a renderer shows its class name and its repr."""
    render = renderer_for(result)
    if render is not None:
        return render(result)
    text = repr(result)
    return Drawing(summary_html=f"<pre>{html.escape(text)}</pre>", summary_text=text)


def mimebundle(result: object, include=None, exclude=None) -> Mimebundle:
    """One bundle for ``result`` (the ``_repr_mimebundle_`` protocol): ``text/html`` = the summary followed by
    the chart's static fallback, the chart's Vega-Lite, and ``text/plain``. A frontend shows the richest type it
    renders; JupyterLab prefers HTML to Vega-Lite in one bundle, which is why IPython gets two outputs instead
    (:func:`ipython_display`)."""
    shown = drawing(result)
    chart = shown.chart
    fallback = chart.get("image/svg+xml", "")
    bundle: Mimebundle = {"text/plain": shown.summary_text,
                          "text/html": shown.summary_html + (f"<div>{fallback}</div>" if fallback else "")}
    bundle.update({kind: value for kind, value in chart.items() if kind.startswith("application/")})
    if include is not None:
        bundle = {kind: value for kind, value in bundle.items() if kind in include}
    if exclude is not None:
        bundle = {kind: value for kind, value in bundle.items() if kind not in exclude}
    return bundle


def ipython_display(result: object) -> None:
    """Show ``result`` in an IPython frontend as two outputs: the HTML summary, then the chart (Vega-Lite first;
    JupyterLab, Notebook 7 and VS Code draw it with their own bundled Vega, offline, and interactive)."""
    from IPython.display import publish_display_data

    shown = drawing(result)
    publish_display_data({"text/html": shown.summary_html, "text/plain": shown.summary_text})
    if shown.chart:
        publish_display_data(shown.chart)


class Displayable:
    """Mixin of every result class: draws the result in a notebook through the registry above."""

    __slots__ = ()

    def _repr_mimebundle_(self, include=None, exclude=None) -> Mimebundle:
        return mimebundle(self, include, exclude)

    def _ipython_display_(self) -> None:
        ipython_display(self)
