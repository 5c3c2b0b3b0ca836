"""A lecture step's 16:9 slide (issue 31, item 7): the step's title, its sentence of what to look at and, where it is
cheap — one cached forward of the step's model, lesson 4's simulation, or one fast attribution run (issue 44) — the
step's chart, through the slide export every page uses (:func:`inspector.output.slides.slide_png`); else a title slide
(:func:`inspector.output.slides.title_slide_png`) that carries the step's link. Made only when its button is clicked.

This module is UI only: it wires the cached model of :mod:`views.session` and the cached capture of
:mod:`views.inspect_run` to the library's charts.
"""

from __future__ import annotations

from dataclasses import replace

import altair as alt
import streamlit as st

from inspector import InspectorError
from inspector.analyses.attribution import AttributionReport, AttributionSettings, attribute
from inspector.analyses.heatmap import HeatmapOptions, heatmap_view, layer_views
from inspector.analyses.lessons import ScalingSweep, scaling_sweep
from inspector.analyses.metrics import head_entropy
from inspector.base.i18n import t
from inspector.charts.attribution import agreement_chart
from inspector.charts.inspect import attention_heatmap_chart, entropy_grid_chart, layer_heads_chart
from inspector.charts.lessons import sweep_chart
from inspector.core.forward import backend_for
from inspector.output.export import Provenance
from inspector.output.lecture import LECTURE, LectureStep
from inspector.output.slides import slide_png, title_slide_png
from views import inspect_run, session, sidebar

# What the page says a step's slide holds, by its chart (a title slide when the step has none).
SLIDE_CAPTIONS = {"heatmap": "lecture.slide_chart.heatmap", "heads": "lecture.slide_chart.heads",
                  "entropy": "lecture.slide_chart.entropy", "sweep": "lecture.slide_chart.sweep",
                  "agreement": "lecture.slide_chart.agreement"}
# The agreement slide's attribution: scores and their agreement only (no counterfactual rows, no ERASER, no head grid),
# seconds on a bundled model.
_AGREEMENT_SETTINGS = {"permutations": 0, "faithfulness": False, "head_grid": False}
_EXCERPT_CHARS = 60


@st.cache_data(max_entries=1, show_spinner=False)
def cached_sweep() -> ScalingSweep:
    return scaling_sweep()


@st.cache_data(max_entries=4, ttl=3600, show_spinner=False)
def cached_agreement(spec: str, text: str, backend: str, layer: int, head: int) -> AttributionReport:
    settings = AttributionSettings(layer=layer, head=head, **_AGREEMENT_SETTINGS)
    return attribute(session.cached_model(spec), text, settings=settings, backend=backend)


def slide_caption(step: LectureStep, lang: str) -> str:
    """The line under the slide button: which slide this is (a chart, and which, or a title slide)."""
    if step.chart is None:
        return t("lecture.slide_title", lang)
    return t(SLIDE_CAPTIONS[step.chart], lang, layer=step.view.layer, head=step.view.head)


def _step_chart(step: LectureStep, lang: str):
    """The step's chart and its provenance (one cached forward of the step's model, on the capture cache every page
    shares)."""
    view = step.view_for(lang)
    loaded = session.cached_model(view.model)
    info = loaded.info
    layer, head = min(view.layer, info.num_layers - 1), min(view.head, info.num_heads - 1)
    if step.chart == "sweep":
        sweep = cached_sweep()
        return (sweep_chart(sweep, title=t("lesson4.sweep_chart", lang), slide=True, lang=lang),
                Provenance(model=info.name, text=view.text, backend=backend_for(loaded, view.backend)))
    if step.chart == "agreement":
        agreed = cached_agreement(view.model, view.text, view.backend, layer, head).agreement
        return (agreement_chart(agreed.methods, agreed.kendall, name="Kendall τ", slide=True, lang=lang),
                Provenance(model=info.name, text=view.text, backend=backend_for(loaded, view.backend), layer=layer,
                           head=head))
    planned = inspect_run.plan_inspect(view.model, view.text, layer)
    result = inspect_run.planned_capture(view.model, view.backend, replace(planned, weights=(layer,)), layer)
    provenance = Provenance(model=info.name, text=result.text, backend=result.backend, layer=layer,
                            head=head if step.chart == "heatmap" else None)
    if step.chart == "heatmap":
        chart = attention_heatmap_chart(heatmap_view(result, layer, head, HeatmapOptions()), slide=True, lang=lang,
                                        kv_heads=info.num_kv_heads, num_heads=info.num_heads)
    elif step.chart == "heads":
        chart = layer_heads_chart(layer_views(result, layer, HeatmapOptions()), slide=True, lang=lang,
                                  kv_heads=info.num_kv_heads)
    else:
        provenance = Provenance(model=info.name, text=result.text, backend=result.backend)
        chart = entropy_grid_chart(head_entropy(result), selected=(layer, head), slide=True, lang=lang,
                                   kv_heads=info.num_kv_heads, windows=result.windows)
    return chart, provenance


def _title_slide(step: LectureStep, index: int, lang: str, url: str) -> bytes:
    view = step.view_for(lang)
    text = view.text if len(view.text) <= _EXCERPT_CHARS else view.text[:_EXCERPT_CHARS - 1] + "…"
    caption = " · ".join([sidebar.model_choice_label(view.model, sidebar.SUGGESTED_MODELS.get(view.model, view.model),
                                                     lang), f"“{text}”",
                          t("export.layer_head", lang, layer=view.layer, head=view.head)])
    return title_slide_png(t(step.title_key, lang), t(step.look_key, lang), caption, link=url,
                           kicker=t("lecture.slide_step", lang, n=index + 1, total=len(LECTURE)))


def step_slide_png(index: int, lang: str, url: str) -> bytes:
    """The 1920 × 1080 PNG of step ``index`` in ``lang``: its chart's slide, or its title slide (also when the chart
    cannot be drawn here — a model this instance does not offer)."""
    step = LECTURE[index]
    if step.chart is None:
        return _title_slide(step, index, lang, url)
    try:
        chart, provenance = _step_chart(step, lang)
    except InspectorError:
        return _title_slide(step, index, lang, url)
    # The slide's heading is the step's title, its note the sentence of what to look at.
    titled = chart.properties(title=alt.TitleParams(text=t(step.title_key, lang), subtitle=[t(step.look_key, lang)]))
    return slide_png(titled, provenance, lang)
