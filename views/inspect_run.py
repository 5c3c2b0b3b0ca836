"""The Inspect page's run and its cached drawings: the capture of the sidebar's text (planned within this instance's
budget, one of the server's run slots, the out-of-memory retry and the CPU fallback: :mod:`inspector.serving.run`),
the charts a head click does not change, and bertviz's HTML — all in one cache bounded by bytes (:data:`RESULTS`,
:mod:`views.byte_cache`). The Lecture's slides draw from the same captures.

UI only, like :mod:`views.session` (the hosting policy, the loaded model and the error line every page shares),
which it reads through the module so that a test's patch of ``session.hosting_policy`` holds here too.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import streamlit as st

from inspector.analyses.heatmap import HeatmapOptions, layer_views
from inspector.analyses.metrics import head_entropy
from inspector.base.errors import InspectorError
from inspector.base.i18n import notice_text, t
from inspector.base.limits import HOSTED_RESULT_CACHE_BYTES, RESULT_CACHE_BYTES
from inspector.charts.bertviz import (
    head_view_height,
    head_view_html,
    head_view_max_layers,
    layers_around,
    model_view_height,
    model_view_html,
    model_view_max_layers,
)
from inspector.charts.inspect import entropy_by_layer_chart, layer_heads_chart
from inspector.core.capture import Capture
from inspector.core.loading import LoadedModel
from inspector.serving.run import Plan, Request, plan, run_capture
from inspector.serving.run_queue import OnWait
from views import session
from views.byte_cache import ByteCache, byte_cached


def result_cache_bytes() -> int:
    """The bytes every large cached result together may hold in this server process (issue 33, item 11)."""
    return HOSTED_RESULT_CACHE_BYTES if session.hosting_policy().hosted else RESULT_CACHE_BYTES


# One budget for the server process's large results, least recently used out first (views.byte_cache).
RESULTS = ByteCache(result_cache_bytes, ttl_s=3600)


class _ModelCalls(threading.local):
    """Per script thread: whether the last :func:`run` had to call the model (a cache miss)."""

    ran = False


_model_calls = _ModelCalls()


# Bounded by bytes: a 512-token capture of the bundled model with every layer's weights is ~75 MB, a sentence's 0.1 MB.
@byte_cached(RESULTS)
def cached_capture(spec: str, text: str, backend: str, weights: tuple[int, ...] | str | None, *, _plan: Plan,
                   _on_wait: OnWait | None = None) -> Capture:
    """The library's Inspect run (:func:`inspector.serving.run.run_capture`) of ``_plan`` — whose text and weights
    are ``text`` and ``weights`` — cached by what names it: entropy and statistics for every layer, exact weights
    for ``weights`` (``"all"`` while they fit), so choosing another head — or, within the memory budget, another
    layer — redraws without a forward. A cache miss takes one of the server's run slots (``_on_wait`` draws the
    place in line); out of memory, the run keeps the layer on screen's weights only, then runs on the CPU."""
    _model_calls.ran = True  # runs only on a cache miss, in the session's own script thread
    loaded = session.cached_model(spec)
    on_cpu = loaded.device.type == "cpu"
    return run_capture(_plan, loaded, backend=backend, on_wait=_on_wait,
                       cpu_model=None if on_cpu else lambda: session.cached_model(spec, "cpu"))


def planned_capture(spec: str, backend: str, planned: Plan, layer: int,
                    on_wait: OnWait | None = None) -> Capture:
    """The cached capture for a plan, holding ``layer``'s weights (an out-of-memory retry may have kept another
    layer's: then that layer is asked for on its own)."""
    text = planned.request.texts[0]
    result = cached_capture(spec, text, backend, planned.weights, _plan=planned, _on_wait=on_wait)
    if layer not in result.weights:
        alone = replace(planned, weights=(int(layer),))
        result = cached_capture(spec, text, backend, alone.weights, _plan=alone, _on_wait=on_wait)
    return result


def plan_inspect(spec: str, text: str, layer: int) -> Plan:
    """The Inspect run's plan for ``text`` on ``spec``: the text's one tokenisation (:func:`session.cached_encoding`,
    which the unknown-token warning read too) serves the plan and the forward."""
    return plan(Request(kind="inspect", texts=(text,), weights="all", layer=int(layer)), session.cached_model(spec),
                session.hosting_policy(), encoded=session.cached_encoding(spec, text))


def run(inputs: session.Inputs, loaded: LoadedModel, layer: int,
        status: session.StatusLine) -> tuple[Capture | None, bool]:
    """The cached capture for the inputs (None after showing why it cannot run) and whether the model ran.

    Every layer's weights are kept while they fit the memory budget; past it, only ``layer``'s (with a notice),
    so a long text costs one layer's n×n and another layer needs one more forward."""
    lang = inputs.state.lang
    status.update(label=t("inputs.running", lang))
    _model_calls.ran = False
    try:
        planned = plan_inspect(inputs.spec, inputs.state.text, layer)
        # Past the server's run slots, the line shows the place in line (inspector.serving.run_queue, issue 32).
        waiting = session.outside_replay(lambda position, running: status.update(label=t(
            "queue.position", lang, position=position, running=running)) if position else None)
        result = planned_capture(inputs.spec, inputs.state.backend, planned, layer, waiting)
    except InspectorError as err:
        status.update(label=t("inputs.run_failed", lang), state="error")
        session.show_error(err, lang)
        return None, False
    for notice in planned.notices:
        st.info(notice_text(notice, lang), icon=":material/memory:")
    for notice in result.notices:
        st.warning(notice_text(notice, lang), icon=":material/memory:")
    return result, _model_calls.ran


@byte_cached(RESULTS)  # the HTML carries every shown layer's n×n weights as text
def cached_bertviz(kind: str, spec: str, text: str, backend: str, layer: int,
                   head: int | None = None, lang: str = "en") -> tuple[str, int, list[int]]:
    """bertviz's head or model view as offline HTML, its height, and the layers it shows: every layer when
    they fit the view's drawing limit, else the ones around ``layer``. The head view opens on ``layer`` and
    ``head`` (the ones on screen); its own words are in ``lang``."""
    with st.spinner("Building the bertviz view…"):
        return _bertviz(kind, spec, text, backend, layer, head, lang)


def _bertviz(kind: str, spec: str, text: str, backend: str, layer: int,
             head: int | None, lang: str) -> tuple[str, int, list[int]]:
    result = planned_capture(spec, backend, plan_inspect(spec, text, layer), layer)
    fits = head_view_max_layers(result) if kind == "head" else model_view_max_layers(result)
    # Past the memory budget the capture holds the layer on screen only.
    fits = min(fits, len(result.weights))
    layers = layers_around(result, layer, fits)
    if kind == "head":
        return (head_view_html(result, layers=layers or None, layer=layer if layer in layers else None, head=head,
                               lang=lang), head_view_height(result), layers)
    return (model_view_html(result, layers=layers or None, lang=lang),
            model_view_height(result, layers=layers or None), layers)


# Charts that a head click does not change, kept per capture so they are not rebuilt on every click. Keyed by what
# names the capture; the capture itself (``_result``) is not hashed. Altair charts are
# not mutated when drawn, so one object serves every session. Their data counts against the same byte budget.
@byte_cached(RESULTS)
def cached_entropy_by_layer_chart(spec: str, text: str, backend: str, held: tuple[int, ...], slide: bool, lang: str,
                                  _result: Capture):
    return entropy_by_layer_chart(head_entropy(_result), slide=slide, lang=lang)


@byte_cached(RESULTS)
def cached_layer_heads_chart(spec: str, text: str, backend: str, held: tuple[int, ...], layer: int,
                             options: HeatmapOptions, slide: bool, lang: str, kv_heads: int, _result: Capture):
    return layer_heads_chart(layer_views(_result, layer, options), slide=slide, lang=lang, kv_heads=kv_heads)
