"""The Altair chart of any page's view of a result, for a notebook reader to compose (issue 42): :func:`show`.

One table, :data:`VIEWS`, names every view by result type; its first view is the result's *main* chart, the one a
result draws when it is the value of a cell (:mod:`inspector.notebook.displays`). Each view is the page's own
chart function (``inspector/charts``) over the same analysis the page calls, so a chart in a notebook is the chart
on the page.

``show(capture, "heatmap", layer=2, head=5)`` → an ``alt.LayerChart``; ``show(report)`` → the main view.
``layer`` and ``head`` default to 0 (the last layer for a generation's entropy strip); the language of titles
and legends is :func:`inspector.notebook.set_language`'s (English unless changed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inspector.analyses.attribution.report import AttributionReport
from inspector.analyses.census.summary import CensusSummary
from inspector.analyses.compare import Comparison
from inspector.analyses.generate import Generation
from inspector.analyses.groundtruth import Scoreboard
from inspector.analyses.heads import HeadReport
from inspector.analyses.heatmap import HeatmapOptions, heatmap_view, layer_views
from inspector.analyses.lessons import DecoderLessons, Lessons
from inspector.analyses.metrics import head_entropy
from inspector.analyses.roles import RolesResult
from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import DEFAULT_LANGUAGE, LANGUAGES, t
from inspector.charts import (
    attribution,
    census,
    compare,
    generate,
    groundtruth,
    heads,
    inspect,
    lessons,
    lessons_decoder,
    roles,
)
from inspector.core.capture import Capture

# A view: (result, layer, head, lang) → an Altair chart. layer/head are None when the caller gave none.
View = Callable[[Any, "int | None", "int | None", str], Any]

_language = [DEFAULT_LANGUAGE]


def set_language(lang: str) -> None:
    """Write chart titles, legends and summaries in ``lang`` (one of :data:`inspector.base.i18n.LANGUAGES`)."""
    if lang not in LANGUAGES:
        raise InvalidRequestError(f"language {lang!r} is not one of {LANGUAGES} — pick one of them")
    _language[0] = lang


def language() -> str:
    """The language notebook charts and summaries are written in."""
    return _language[0]


def _capture_views() -> dict[str, View]:
    def grid(c: Capture, layer, head, lang):
        selected = (layer, head) if layer is not None and head is not None else None
        return inspect.entropy_grid_chart(head_entropy(c), selected=selected, lang=lang, windows=c.windows)

    def heatmap(c: Capture, layer, head, lang):
        view = heatmap_view(c, layer or 0, head or 0, HeatmapOptions())
        return inspect.attention_heatmap_chart(view, lang=lang, num_heads=c.num_heads)

    def layer_chart(c: Capture, layer, head, lang):
        return inspect.layer_heads_chart(layer_views(c, layer or 0, HeatmapOptions()), lang=lang)

    def by_layer(c: Capture, layer, head, lang):
        return inspect.entropy_by_layer_chart(head_entropy(c), lang=lang)

    return {"grid": grid, "heatmap": heatmap, "layer": layer_chart, "entropy_by_layer": by_layer}


def _last_layer(result: Generation, layer: int | None) -> int:
    return result.entropy.shape[1] - 1 if layer is None else layer


def _generation_views() -> dict[str, View]:
    return {
        "entropy": lambda g, layer, head, lang: generate.entropy_strip_chart(g, _last_layer(g, layer), lang=lang),
        "candidates": lambda g, layer, head, lang: generate.candidates_chart(g, 0, lang=lang),
        "sink": lambda g, layer, head, lang: generate.sink_chart(g, _last_layer(g, layer), lang=lang),
        "kv_cache": lambda g, layer, head, lang: generate.kv_cache_chart(g, lang=lang),
        "row": lambda g, layer, head, lang: generate.attention_row_chart(g, layer or 0, head or 0, 0, lang=lang),
    }


def _head_report_views() -> dict[str, View]:
    grids = {metric: (lambda r, layer, head, lang, metric=metric: heads.head_grid_chart(r, metric, lang=lang))
             for metric in heads.GRID_METRICS}
    return {**grids, "mds": lambda r, layer, head, lang: heads.mds_chart(r, lang=lang),
            "pruning": lambda r, layer, head, lang: heads.pruning_chart(r, lang=lang)}


def _roles_views() -> dict[str, View]:
    return {
        "map": lambda r, layer, head, lang: roles.roles_map_chart(r, lang=lang),
        "causal": lambda r, layer, head, lang: roles.causal_chart(r, lang=lang),
        "probe": lambda r, layer, head, lang: roles.probe_heatmap_chart(r, layer or 0, head or 0, lang=lang),
    }


def _attribution_views() -> dict[str, View]:
    def decay(r: AttributionReport, layer, head, lang):
        if r.faithfulness is None:
            raise InvalidRequestError("this attribution report has no faithfulness curves — run it with "
                                      "faithfulness on")
        return attribution.decay_chart(r.faithfulness, lang=lang)

    def scores(r: AttributionReport, words: bool, lang: str):
        # The page stretches this chart to its column, and the cells' labels read the drawn width; a notebook
        # cell has no column to stretch to, and a width that follows the cells would feed back into itself.
        cells = len(r.words if words else r.tokens)
        return attribution.scores_chart(r, words=words, lang=lang).properties(width=max(34, min(70, 1100 // cells))
                                                                               * cells)

    return {"scores": lambda r, layer, head, lang: scores(r, False, lang),
            "words": lambda r, layer, head, lang: scores(r, True, lang),
            "faithfulness": decay}


def _census_views() -> dict[str, View]:
    from inspector.analyses.batching import STATISTICS

    ordered = ("entropy_normalized", *(s for s in STATISTICS if s != "entropy_normalized"))
    return {statistic: (lambda s, layer, head, lang, statistic=statistic:
                        census.census_grid_chart(s, statistic, lang=lang)) for statistic in ordered}


def _lessons_views() -> dict[str, View]:
    return {
        "scaling": lambda x, layer, head, lang: lessons.sweep_chart(x.sweep, title=t("lesson4.sweep_chart", lang),
                                                                    lang=lang),
        "why_qk": lambda x, layer, head, lang: lessons.asymmetry_chart(x.why_qk, title=t("lesson2.chart_asym", lang),
                                                                       lang=lang),
    }


def _decoder_lessons_views() -> dict[str, View]:
    return {
        "sinks": lambda x, layer, head, lang: lessons_decoder.sink_mass_chart(
            x.sinks, title=t("lesson12.chart", lang), lang=lang),
        "rope": lambda x, layer, head, lang: lessons_decoder.rope_offset_chart(
            x.rope, title=t("lesson10.offset_chart", lang, layer=x.layer, head=x.head), lang=lang),
        "gqa": lambda x, layer, head, lang: lessons_decoder.js_heatmap(
            x.gqa, title=t("lesson11.chart", lang, layer=x.layer), lang=lang),
    }


def _comparison_views() -> dict[str, View]:
    return {metric: (lambda c, layer, head, lang, metric=metric: compare.movement_grid_chart(c, metric, lang=lang))
            for metric in compare.GRID_METRICS}


# Every result type's views, the main view first.
VIEWS: dict[type, dict[str, View]] = {
    Capture: _capture_views(),
    Generation: _generation_views(),
    HeadReport: _head_report_views(),
    RolesResult: _roles_views(),
    AttributionReport: _attribution_views(),
    CensusSummary: _census_views(),
    Lessons: _lessons_views(),
    DecoderLessons: _decoder_lessons_views(),
    Scoreboard: {"scoreboard": lambda b, layer, head, lang: groundtruth.scoreboard_chart(b, lang=lang),
                 "heads": lambda b, layer, head, lang: groundtruth.head_hits_chart(b, lang=lang)},
    Comparison: _comparison_views(),
}


def register_views(kind: type, views: dict[str, View]) -> None:
    """Add ``kind``'s views (the main one first) — for results that land later (mechanism)."""
    VIEWS[kind] = dict(views)


def views_of(result: object) -> dict[str, View]:
    """The views of ``result``'s type (or its nearest registered base)."""
    for kind in type(result).__mro__:
        if kind in VIEWS:
            return VIEWS[kind]
    known = ", ".join(sorted(kind.__name__ for kind in VIEWS))
    raise InvalidRequestError(f"{type(result).__name__} has no chart views — show() draws {known}")


def show(result: object, view: str | None = None, *, layer: int | None = None, head: int | None = None,
         lang: str | None = None):
    """The Altair chart of ``result``'s ``view`` (its main view when None): for a capture "grid" (entropy of every
    head), "heatmap" (one head's weights: ``layer``, ``head``; the layer's weights must have been captured),
    "layer" (every head of ``layer``) or "entropy_by_layer"; :data:`VIEWS` lists every result's views."""
    views = views_of(result)
    name = next(iter(views)) if view is None else view
    if name not in views:
        raise InvalidRequestError(f"{type(result).__name__} has no view {name!r} — pick one of {list(views)}")
    return views[name](result, layer, head, lang or language())
