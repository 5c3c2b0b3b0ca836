"""How each result draws itself in a notebook (issue 42): the upper half of :mod:`inspector.base.display`.

Importing this module registers one renderer per result type; :mod:`inspector.base.display` imports it the first
time a result is drawn (the package face hands it the loader), so ``import inspector`` stays light. A renderer
returns a :class:`~inspector.base.display.Drawing`:

- a compact HTML summary: the result's kind, the model, the tokens (each one through ``html.escape``, so a token
  ``<img src=x onerror=…>`` is text, never markup) and what is inside (shapes, settings, timings); the same as
  plain text for a console;
- the main chart (the first view of :data:`inspector.notebook.views.VIEWS`) as the offline mimebundle of
  :mod:`inspector.charts.jupyter` (Vega-Lite 5's mimetype, which JupyterLab, Notebook 7 and VS Code draw with the
  Vega they bundle), with vl-convert's SVG as the fallback for frontends without Vega (nbviewer, GitHub).

Importing this module also makes the charts :func:`~inspector.notebook.views.show` returns draw the same way
(:func:`inspector.charts.jupyter.enable_offline_renderer`: only while Altair's own default renderer is active).

A renderer that fails (a result too large for its chart, a broken font) still shows its summary, with the reason
in place of the chart: a notebook cell never ends in a traceback for drawing.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from inspector.analyses.attribution.report import AttributionReport
from inspector.analyses.census.summary import CensusSummary
from inspector.analyses.compare import Comparison
from inspector.analyses.generate import Generation
from inspector.analyses.groundtruth import Scoreboard
from inspector.analyses.heads import HeadReport
from inspector.analyses.lessons import DecoderLessons, Lessons
from inspector.analyses.roles import RolesResult
from inspector.base import display
from inspector.base.errors import InspectorError
from inspector.base.tokens import readable_tokens
from inspector.charts import jupyter
from inspector.core.capture import Capture
from inspector.notebook.views import VIEWS, language, show
from inspector.output.export import chart_svg

# Tokens listed in a summary; the rest are counted. A summary stays a few lines for any text.
SUMMARY_TOKENS = 48
# A chart whose SVG would pass this many characters gets no SVG fallback (the notebook file stays small).
SVG_FALLBACK_MAX_CHARS = 2_000_000

_STYLE = ("font-family: system-ui, sans-serif; font-size: 13px; line-height: 1.45; border-left: 3px solid #4c78a8; "
          "padding: 4px 10px; margin: 2px 0")
_TOKEN_STYLE = "background: #eef2f7; border-radius: 3px; padding: 0 3px; margin: 1px; white-space: pre"


def svg_fallback(spec: dict) -> str:
    """The SVG of a Vega-Lite ``spec`` drawn by vl-convert (offline), or "" when it cannot be drawn or would pass
    :data:`SVG_FALLBACK_MAX_CHARS`: the fallback is a courtesy to frontends without Vega, never a reason to fail."""
    try:
        svg = chart_svg(spec)
    except (InspectorError, ValueError, RuntimeError):
        return ""
    return svg if len(svg) <= SVG_FALLBACK_MAX_CHARS else ""


def chart_bundle(chart) -> dict:
    """The mimebundle of an Altair chart: Vega-Lite, the SVG fallback, text (:mod:`inspector.charts.jupyter`)."""
    return jupyter.chart_bundle(chart, svg_fallback)


def _tokens_html(tokens: Sequence[str]) -> str:
    shown = readable_tokens(tokens[:SUMMARY_TOKENS])
    spans = "".join(f'<span style="{_TOKEN_STYLE}">{html.escape(token)}</span>' for token in shown)
    more = len(tokens) - len(shown)
    return spans + (f" … and {more} more" if more > 0 else "")


def summary(kind: str, model: str, facts: Iterable[tuple[str, object]], tokens: Sequence[str] = (),
            ) -> tuple[str, str]:
    """The HTML and plain-text summary of a result: ``kind`` and ``model`` as a heading, one line per fact, then
    the tokens (the first :data:`SUMMARY_TOKENS`). Every string is escaped."""
    lines = [f"<b>{html.escape(kind)}</b> · {html.escape(model)}"]
    lines += [f"{html.escape(name)}: {html.escape(str(value))}" for name, value in facts]
    if tokens:
        lines.append(f"tokens ({len(tokens)}): {_tokens_html(tokens)}")
    text = "\n".join([f"{kind} · {model}", *(f"{name}: {value}" for name, value in facts)]
                     + ([f"tokens ({len(tokens)}): " + " ".join(readable_tokens(tokens[:SUMMARY_TOKENS]))]
                        if tokens else []))
    return f'<div class="inspector-summary" style="{_STYLE}">' + "<br>".join(lines) + "</div>", text


def _views(result: object) -> list[str]:
    return next((list(VIEWS[kind]) for kind in type(result).__mro__ if kind in VIEWS), [])


def views_line(result: object) -> list[tuple[str, str]]:
    """The summary's line naming ``result``'s views for :func:`~inspector.notebook.views.show` (none: no line)."""
    names = _views(result)
    return [("views", ", ".join(f'"{name}"' for name in names) + " — inspector.show(result, view)")] if names else []


def drawn(result: object, parts: tuple[str, str]) -> display.Drawing:
    """The summary ``parts`` with the result's main chart (or, when drawing fails, the reason instead; a result
    without views shows its summary alone)."""
    summary_html, summary_text = parts
    if not _views(result):
        return display.Drawing(summary_html, summary_text)
    try:
        chart = chart_bundle(show(result, lang=language()))
    except InspectorError as error:
        note = f"(no chart: {error})"
        return display.Drawing(summary_html + f"<div>{html.escape(note)}</div>", summary_text + "\n" + note)
    return display.Drawing(summary_html, summary_text, chart)


def _capture(c: Capture) -> display.Drawing:
    predictions = ", ".join(f"{token!r} {p:.2f}" for token, p in c.output.predictions[:3])
    facts = [("layers × heads", f"{c.num_layers} × {c.num_heads}"),
             ("attention", "causal" if c.causal else "bidirectional"),
             ("weights kept for layers", ", ".join(map(str, sorted(c.weights))) or "none"),
             ("backend", c.backend)]
    facts += [("predicts", predictions)] if predictions else []
    facts += [("notice", notice) for notice in c.notices]
    return drawn(c, summary("Capture", c.model_name, [*facts, *views_line(c)], c.tokens))


def _generation(g: Generation) -> display.Drawing:
    facts = [("prompt tokens", g.prompt_len), ("generated", f"{g.steps} tokens ({g.finish})"),
             ("text", g.text), ("layers × heads", f"{g.entropy.shape[1]} × {g.entropy.shape[2]}")]
    return drawn(g, summary("Generation", g.model_name, [*facts, *views_line(g)], g.prompt_tokens + g.tokens))


def _head_report(r: HeadReport) -> display.Drawing:
    facts = [("texts", len(r.texts)), ("layers × heads", f"{r.info.num_layers} × {r.info.num_heads}"),
             ("ablation", r.ablation_mode), ("output change", r.change_name), ("backend", r.backend)]
    return drawn(r, summary("Head report", r.info.name, [*facts, *views_line(r)], r.tokens[0] if r.tokens else ()))


def _roles(r: RolesResult) -> display.Drawing:
    roles, counts = _count(r.dominant.ravel())
    facts = [("layers × heads", " × ".join(map(str, r.dominant.shape))),
             ("dominant roles", ", ".join(f"{role} {count}" for role, count in zip(roles, counts))),
             ("causal tests", len(r.tests)), ("probe", f"{r.probe.batch} sequences of {r.probe.length} tokens")]
    return drawn(r, summary("Head roles", r.model, [*facts, *views_line(r)]))


def _count(values) -> tuple[list[str], list[int]]:
    found: dict[str, int] = {}
    for value in values:
        found[str(value)] = found.get(str(value), 0) + 1
    return list(found), list(found.values())


def _attribution(r: AttributionReport) -> display.Drawing:
    facts = [("methods", ", ".join(r.scores)), ("target", r.target.description),
             ("layer · head", f"{r.layer} · {r.head}"), ("skipped", ", ".join(r.skipped) or "none")]
    return drawn(r, summary("Attribution report", r.model_name, [*facts, *views_line(r)], r.tokens))


def _census(s: CensusSummary) -> display.Drawing:
    facts = [("texts", s.texts), ("refused", s.errors), ("tokens", s.tokens), ("statistics", ", ".join(s.mean)),
             ("folder", s.folder or "—")]
    return drawn(s, summary("Census summary", str(s.model.get("name", "")), [*facts, *views_line(s)]))


def _lessons(x: Lessons) -> display.Drawing:
    facts = [("lessons", "definition, why Q and K, position, √d scaling, multi-head, entropy"
              + (", complexity" if x.complexity else "") + (", token importance" if x.importance else "")),
             ("backend", x.backend)]
    return drawn(x, summary("Lessons", x.model, [*facts, *views_line(x)], x.definition.tokens))


def _decoder_lessons(x: DecoderLessons) -> display.Drawing:
    facts = [("contrast encoder", x.encoder), ("layer · head", f"{x.layer} · {x.head}"),
             ("lessons", "causal mask, RoPE, grouped-query, sinks, query–key space, projections")]
    return drawn(x, summary("Decoder lessons", x.model, [*facts, *views_line(x)]))


def _scoreboard(b: Scoreboard) -> display.Drawing:
    facts = [("methods", ", ".join(b.methods)), ("examples", len(b.content)), ("model accuracy", f"{b.accuracy:.2f}")]
    return drawn(b, summary("Ground-truth scoreboard", b.model_name, [*facts, *views_line(b)]))


def _comparison(c: Comparison) -> display.Drawing:
    facts = [("model B", c.model_b), ("text A", c.text_a), ("text B", c.text_b), ("query (A, B)", c.query)]
    return drawn(c, summary("Comparison", c.model_a, [*facts, *views_line(c)], c.tokens_a))


RENDERERS = {Capture: _capture, Generation: _generation, HeadReport: _head_report, RolesResult: _roles,
             AttributionReport: _attribution, CensusSummary: _census, Lessons: _lessons,
             DecoderLessons: _decoder_lessons, Scoreboard: _scoreboard, Comparison: _comparison}

for _kind, _render in RENDERERS.items():
    display.register(_kind, _render)
# The charts show() returns draw offline too, with the same fallback.
jupyter.enable_offline_renderer(svg_fallback)
