"""Figures and numbers out of the inspector: PNG/SVG images of any chart, a zip "export pack" for slides and
reports, and the JSON the command line writes — one function per kind of numbers, so the CLI's JSON and the
pack's ``numbers.json`` can never disagree.

Images are rendered by vl-convert (Vega-Lite compiled and drawn in-process, no browser, no network:
external data URLs are refused). Every exported figure can carry its :class:`Provenance` — model, text,
layer/head, backend and date — drawn on the image itself (:func:`with_provenance`), so a figure pasted into
a slide still says where it came from. Token strings are data to Vega: in SVG they are XML-escaped text.
"""

from __future__ import annotations

import datetime
import io
import json
import re
import threading
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd
from altair.utils.data import to_values

from inspector.analyses.heatmap import HeatmapView
from inspector.analyses.metrics import head_entropy
from inspector.base.errors import InspectorError, InvalidRequestError
from inspector.base.i18n import DEFAULT_LANGUAGE, Notice, t
from inspector.base.jsonable import to_jsonable  # re-exported: callers import it from here too
from inspector.charts.base import TITLE_FONT_PX, text_width_px, wrap_text
from inspector.core.bundled import card_for
from inspector.core.capture import Capture
from inspector.core.loading import ModelInfo, model_label

# Caption excerpt: enough of the text to recognise it, short enough to fit under a figure.
CAPTION_WORDS = 8
CAPTION_CHARS = 60
# PNG scale bounds: below 0.25 text is unreadable; above 8 a large heatmap becomes a >100-megapixel image.
MIN_SCALE, MAX_SCALE = 0.25, 8.0
# Recommended largest chart, in data rows (heatmap cells), to render on request in the app: vl-convert's time
# and the SVG's size grow with the cell count, and past 128 × 128 a download takes seconds on a 2-CPU
# machine. The app checks this before offering an image download; the library does not refuse.
EXPORT_MAX_CELLS = 128 * 128
# Licence names a reader's language translates (catalogue keys); any other (Apache-2.0) reads the same everywhere.
LICENCE_NAMES = {"Gemma Terms of Use": "export.licence.gemma_terms"}
_SOFTWARE = ("transformers", "torch", "altair", "vl-convert-python")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def _text_excerpt(text: str) -> str:
    """The first :data:`CAPTION_WORDS` words of ``text`` (at most :data:`CAPTION_CHARS` characters), control
    and direction-changing characters removed so a caption cannot reorder or break the line it sits on."""
    words = _CONTROL.sub(" ", text).split()
    excerpt = " ".join(words[:CAPTION_WORDS])
    cut = len(words) > CAPTION_WORDS or len(excerpt) > CAPTION_CHARS
    excerpt = excerpt[:CAPTION_CHARS].rstrip()
    return excerpt + ("…" if cut else "")


@dataclass(frozen=True)
class Provenance:
    """Where a figure came from. model: the model's name (a shipped model's spec is captioned by its label,
    :func:`inspector.core.loading.model_label`); text: the full input text; backend: the attention backend that ran
    (``torch`` or ``triton`` — a capture's ``backend``, or :func:`inspector.core.forward.backend_for` of the choice —
    never the sidebar's ``auto``); layer / head: the one shown, if any; date: when it was made."""

    model: str
    text: str
    backend: str
    layer: int | None = None
    head: int | None = None
    date: datetime.date = field(default_factory=datetime.date.today)

    def __post_init__(self) -> None:
        for name in ("model", "text", "backend"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"Provenance.{name} must be a string")
        for name in ("layer", "head"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"Provenance.{name} must be a non-negative int or None; got {value!r}")
        if not isinstance(self.date, datetime.date):
            raise ValueError(f"Provenance.date must be a datetime.date; got {self.date!r}")

    def caption(self, lang: str = DEFAULT_LANGUAGE) -> str:
        """One line in ``lang``: ``model · “first words…” · layer L, head H · backend B · YYYY-MM-DD`` (a bundled
        decoder's model part adds its card's quantisation and licence)."""
        # A shipped model is captioned by its label, not its internal "shipped:NAME" spec.
        model = _CONTROL.sub(" ", model_label(self.model, lang)).strip() or t("export.unknown_model", lang)
        card = card_for(self.model)
        if card is not None:  # a bundled decoder: what its weights are and under which terms (issue 27)
            model = t("export.model_card", lang, model=model,
                      card=t("export.card", lang, quantization=card.quantization, dtype=card.dequantized_to,
                             licence=t(LICENCE_NAMES[card.licence], lang) if card.licence in LICENCE_NAMES
                             else card.licence))
        parts = [model, f"“{_text_excerpt(self.text)}”"]
        if self.layer is not None and self.head is not None:
            parts.append(t("export.layer_head", lang, layer=self.layer, head=self.head))
        elif self.layer is not None:
            parts.append(t("export.layer", lang, layer=self.layer))
        elif self.head is not None:
            parts.append(t("export.head", lang, head=self.head))
        parts += [t("export.backend", lang, backend=_CONTROL.sub(" ", self.backend).strip()), self.date.isoformat()]
        return " · ".join(parts)

    def as_json(self, lang: str = DEFAULT_LANGUAGE) -> dict:
        """Everything needed to reproduce the figure, plus the versions of the software that made it."""
        software = {}
        for name in _SOFTWARE:
            try:
                software[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                software[name] = None
        card = card_for(self.model)
        return {"model": self.model, "text": self.text, "backend": self.backend, "layer": self.layer,
                "head": self.head, "date": self.date.isoformat(), "caption": self.caption(lang),
                "software": software, "card": card.as_json() if card is not None else None}


_CAPTION_FONT_PX = 12
# An exported figure's header (title, notes, caption) is laid out for the figure, not for the app's column: at least
# this wide (a 180 px column's title wrapped a Chinese export into seven lines over a squashed plot; issue 31), and a
# single or layered chart without a width of its own is drawn this wide.
EXPORT_HEADER_MIN_PX = 480
EXPORT_PLOT_PX = 480
# Sentences that ask the reader to use a mouse, or speak of the app's narrow column: on screen only, never on a
# slide or a printed page.
SCREEN_ONLY_KEYS = ("chart.hover.token", "chart.hover.head", "chart.thinned.token", "chart.thinned.head",
                    "chart.gt.hover", "chart.compare.grid_subtitle",
                    "chart.inspect.grid_click", "chart.roles.map_hover", "chart.heads.grid_click")
_ESTIMATE_MARGIN = 1.12
BOLD_ADVANCE = 1.1  # a bold title's letters are wider than the estimate's regular ones
_WIDE_PUNCTUATION = "，。、；：？！）」』】》〉”’（「『【《〈“‘"


def _drawn_width(chart) -> float:
    """The width of ``chart`` as vl-convert draws it without its title, in CSS pixels."""
    import vl_convert as vlc

    body = chart.copy(deep=False)
    body.title = alt.Undefined
    _register_fonts()
    try:
        svg = vlc.vegalite_to_svg(_spec(body), vl_version=_vl_version(), allowed_base_urls=[])
    except ValueError:  # the full render says what is wrong, with the page's words
        return float(EXPORT_HEADER_MIN_PX)
    size = re.search(r'<svg[^>]*?\swidth="([0-9.]+)"', svg)
    return float(size.group(1)) if size else float(EXPORT_HEADER_MIN_PX)


def title_dict(chart) -> dict:
    title = getattr(chart, "title", alt.Undefined)
    if title is alt.Undefined or title is None:
        return {}
    if isinstance(title, str):
        return {"text": title}
    if isinstance(title, (list, tuple)):
        return {"text": list(title)}
    return dict(title.to_dict() if hasattr(title, "to_dict") else title)


def _lines(value) -> list[str]:
    if value is None or value is alt.Undefined:
        return []
    return [value] if isinstance(value, str) else [str(line) for line in value]


def unwrap_lines(lines) -> str:
    """Lines a title was wrapped into, as the one text they came from: joined by a space, except where both sides
    are Chinese (or full-width punctuation), which had no space between them."""
    text = ""
    for line in _lines(lines):
        line = line.strip()
        if not line:
            continue
        if text and not (_wide_end(text[-1]) and _wide_end(line[0])):
            text += " "
        text += line
    return text


def _wide_end(ch: str) -> bool:
    return ch in _WIDE_PUNCTUATION or text_width_px(ch, 1) > 1


def screen_only(text: str, lang: str) -> str:
    for key in SCREEN_ONLY_KEYS:
        for language in (lang, DEFAULT_LANGUAGE):
            text = text.replace(t(key, language), "")
    return " ".join(text.split()) if not any(text_width_px(ch, 1) > 1 for ch in text) else text.strip()


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _font_sizes(chart, title: dict) -> tuple[float, float]:
    """The title's and subtitle's font sizes as they will be drawn (a slide-mode chart configures larger ones)."""
    config = getattr(chart, "config", alt.Undefined)
    configured = config.to_dict().get("title", {}) if hasattr(config, "to_dict") else {}
    return (float(title.get("fontSize", configured.get("fontSize", TITLE_FONT_PX))),
            float(title.get("subtitleFontSize", configured.get("subtitleFontSize", _CAPTION_FONT_PX))))


# Titles are wrapped on the server to the narrowest column a chart is shown in (charts.base.chart_title): at a 1000 px
# window. A chart that fits its column grows with a wider window while its title keeps that wrap (the Inspect page's
# entropy grid at 1400 px: a 180 px title over a 280 px plot). On screen, a single or layered chart's title is an
# expression of its drawn width (Vega's `containerSize()`): the widest of these wrappings that the plot holds.
_SCREEN_WRAPS = (1.25, 1.5, 2.0, 2.5, 3.0, 4.0)
_SCREEN_MARGIN_PX = 20  # the chart's padding either side of its title


def screen_title(chart):
    """``chart`` for the screen, its wrapped title re-wrapped as its column grows: for a single or layered chart
    whose title runs over several lines, the title's lines become a Vega expression choosing, by the chart's drawn
    width, among the wrappings at :data:`_SCREEN_WRAPS` × the title's width that take fewer lines (the narrow wrap
    below them), and its limit follows. The subtitle keeps its wrap (Vega-Lite takes no expression there). Any
    other chart, and every export (:func:`with_provenance` re-wraps to the figure), is left as it is."""
    if not isinstance(chart, (alt.Chart, alt.LayerChart)):
        return chart
    title = title_dict(chart)
    lines, limit = title.get("text"), title.get("limit")
    if not isinstance(lines, list) or len(lines) < 2 or not isinstance(limit, (int, float)):
        return chart
    whole, font = unwrap_lines(lines), _font_sizes(chart, title)[0]
    branches, last = [], lines
    for factor in _SCREEN_WRAPS:
        wrapped = wrap_text(whole, limit * factor, font)
        if len(wrapped) < len(last):  # a line fewer, or not worth the change (a wider wrap can leave an orphan)
            branches.append((round(limit * factor), wrapped))
            last = wrapped
    if not branches:
        return chart

    def literal(value: list[str]) -> str:
        return json.dumps(value[0] if len(value) == 1 else value, ensure_ascii=False)

    # The drawn width: the container's (Streamlit stretches a chart to its column, past a width set in steps).
    drawn = f"containerSize()[0] - {_SCREEN_MARGIN_PX}"
    expression = "".join(f"{drawn} >= {width} ? {literal(wrapped)} : " for width, wrapped in reversed(branches))
    chart = chart.copy(deep=False)
    chart.title = alt.TitleParams(**{**title, "text": alt.ExprRef(expression + literal(lines)),
                                     "limit": alt.ExprRef(f"max({limit}, {drawn})")})
    return chart


def with_provenance(chart, provenance: Provenance, lang: str = DEFAULT_LANGUAGE):
    """``chart`` laid out for export, with ``provenance.caption(lang)`` as the last lines of its title's subtitle (or
    as a small title when it has none). Works on any top-level chart, styled or not; adding the same caption twice is
    a no-op.

    Laid out for the figure, not the app's column: the title and notes are re-wrapped (CJK-aware,
    :func:`inspector.charts.base.wrap_text`) to the figure's width — at least :data:`EXPORT_HEADER_MIN_PX` — keeping
    the title's weight; a single or layered chart is sized ``pad`` so the header adds height instead of squashing
    the plot, and one without a width of its own is :data:`EXPORT_PLOT_PX` wide; sentences that ask for a mouse
    (:data:`SCREEN_ONLY_KEYS`) are left out."""
    caption = provenance.caption(lang)
    title = title_dict(chart)
    subtitle = unwrap_lines(title.get("subtitle"))
    if title.get("text") and _squeezed(subtitle).endswith(_squeezed(caption)):
        return chart  # already exported
    chart = chart.copy(deep=False)
    width = getattr(chart, "width", alt.Undefined)
    if isinstance(chart, (alt.Chart, alt.LayerChart)):
        chart.autosize = alt.AutoSizeParams(type="pad")
        if width is alt.Undefined or width == "container":
            chart.width = EXPORT_PLOT_PX
    # The header is wrapped to the figure's drawn width (Vega does not widen the canvas for a title): drawn once
    # without its title to measure it; a figure narrower than EXPORT_HEADER_MIN_PX is padded on the right to it.
    canvas = _drawn_width(chart)
    padding = getattr(chart, "padding", alt.Undefined)
    padding = dict(padding) if isinstance(padding, dict) else {"left": 6, "top": 5, "right": 6, "bottom": 20}
    if canvas < EXPORT_HEADER_MIN_PX:
        padding["right"] = padding.get("right", 6) + EXPORT_HEADER_MIN_PX - canvas
        chart.padding = padding
        canvas = EXPORT_HEADER_MIN_PX
    header = canvas - padding.get("left", 6) - 6
    title_px, subtitle_px = _font_sizes(chart, title)
    # Wrapped with room to spare: the estimate is an average advance, the renderer's faces are a little wider.
    fits = header / _ESTIMATE_MARGIN
    caption_lines = wrap_text(caption, fits, max(subtitle_px, _CAPTION_FONT_PX))
    if not title.get("text"):
        chart.title = alt.TitleParams(text=caption_lines[0] if len(caption_lines) == 1 else caption_lines,
                                      fontSize=11, fontWeight="normal", anchor="start", limit=header)
        return chart
    text_lines = wrap_text(unwrap_lines(title["text"]), fits, title_px * BOLD_ADVANCE)
    notes = screen_only(subtitle, lang)
    note_lines = wrap_text(notes, fits, subtitle_px) if notes else []
    chart.title = alt.TitleParams(**{**title, "text": text_lines[0] if len(text_lines) == 1 else text_lines,
                                     "subtitle": note_lines + caption_lines, "limit": header})
    return chart


def _inline_data(node):
    """A shallow copy of a chart tree with every DataFrame replaced by its values inline.

    ``to_dict`` would pass DataFrames through Altair's *global* data transformer, which refuses more than
    5,000 rows (a 71-token heatmap) and which Streamlit switches, under its own lock, while it draws charts
    in other threads; raising the limit globally here would race with it. Inline values need neither.
    """
    if not hasattr(node, "copy"):
        return node
    node = node.copy(deep=False)
    if isinstance(getattr(node, "data", None), pd.DataFrame):
        node.data = alt.InlineData(values=to_values(node.data)["values"])
    for key in ("layer", "hconcat", "vconcat", "concat"):
        children = getattr(node, key, alt.Undefined)
        if isinstance(children, list):
            setattr(node, key, [_inline_data(child) for child in children])
    spec = getattr(node, "spec", alt.Undefined)
    if spec is not alt.Undefined:
        node.spec = _inline_data(spec)
    return node


def _spec(chart) -> dict:
    return _inline_data(chart).to_dict() if hasattr(chart, "to_dict") else dict(chart)


def _vl_version() -> str | None:
    """The Vega-Lite version Altair writes, if vl-convert bundles it (else vl-convert's newest)."""
    import vl_convert as vlc

    wanted = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    return wanted if wanted in vlc.get_vegalite_versions() else None


# Where the Dockerfile's and CI's font package (fonts-wqy-microhei) puts a CJK font: vl-convert draws only the
# fonts it knows, and without one every Chinese character of an exported figure is an empty box.
CJK_FONT_DIRECTORY = Path("/usr/share/fonts/truetype/wqy")
_fonts_registered = False
_fonts_lock = threading.Lock()


def _register_fonts() -> None:
    """Tell vl-convert about the CJK font once per process, before the first render (registering rebuilds its
    font database, so not on every call). A missing folder is not an error: Latin text still draws."""
    global _fonts_registered
    with _fonts_lock:
        if _fonts_registered:
            return
        _fonts_registered = True
        if CJK_FONT_DIRECTORY.is_dir():
            import vl_convert as vlc

            vlc.register_font_directory(str(CJK_FONT_DIRECTORY))


# The CJK font (WenQuanYi Micro Hei) has no bold face: a bold title in Chinese came out regular in every export.
# Bold text with wide characters in it is drawn with an outline of its own colour, a stroke about 1/22 of the size.
# An opening tag is matched attribute by attribute (a value may hold ">"), so an empty, self-closing
# ``<text …/>`` is never an opening tag: a pattern that took it for one spanned to the next ``</text>`` and wrote
# malformed XML (the Heads grid in 简体中文; issue 44).
_TEXT_ELEMENT = re.compile(r'<text((?:\s+[\w:.-]+="[^"]*")*)\s*>(.*?)</text>', re.DOTALL)
_FONT_SIZE = re.compile(r'font-size="([0-9.]+)px"')
_FILL = re.compile(r'fill="([^"]+)"')


def embolden_wide_text(svg: str) -> str:
    """``svg`` with every bold ``<text>`` element that holds a wide (CJK) character outlined in its own fill colour;
    everything else, empty self-closing text elements included, is left byte for byte as it was."""
    def outline(match: re.Match) -> str:
        attributes, content = match.group(1), match.group(2)
        if ('font-weight="bold"' not in attributes or " stroke=" in attributes
                or not any(text_width_px(ch, 1) > 1 for ch in content)):
            return match.group(0)
        size = float(_FONT_SIZE.search(attributes).group(1)) if _FONT_SIZE.search(attributes) else 13.0
        colour = _FILL.search(attributes).group(1) if _FILL.search(attributes) else "#000"
        return (f'<text{attributes} stroke="{colour}" stroke-width="{size / 22:.2f}" stroke-linejoin="round">'
                f"{content}</text>")

    return _TEXT_ELEMENT.sub(outline, svg)


def _reason(err: Exception) -> str:
    """vl-convert's reason in one line: its JavaScript error ("Cycle detected in dataflow graph."), not the first line
    of its message ("Vega-Lite to SVG conversion failed:"), which says nothing."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    named = [line.removeprefix("Error:").strip() for line in lines if line.startswith("Error:")]
    return (named or lines or [type(err).__name__])[0]


def render(kind: str, chart, **options):
    """The chart drawn by vl-convert as SVG text, or as PNG bytes rasterised from that SVG (``scale`` in options)."""
    import vl_convert as vlc

    _register_fonts()
    try:
        # allowed_base_urls=[]: our specs carry their data inline; a spec must never make the server fetch.
        svg = vlc.vegalite_to_svg(_spec(chart), vl_version=_vl_version(), allowed_base_urls=[])
    except ValueError as err:
        raise InspectorError(f"could not draw the figure as {kind.upper()}: {_reason(err)} — the "
                             "numbers are still available as JSON; please report this chart",
                             notice=Notice("export.error.draw", kind=kind.upper())) from err
    svg = embolden_wide_text(svg)
    return svg if kind == "svg" else svg_png(svg, scale=options.get("scale", 1.0))


def svg_png(svg: str, *, scale: float) -> bytes:
    """Rasterise an SVG already drawn: half the work of laying the chart out again for the PNG."""
    import vl_convert as vlc

    _register_fonts()
    try:
        return vlc.svg_to_png(svg, scale=scale)
    except ValueError as err:
        raise InspectorError(f"could not convert the figure to PNG: {_reason(err)} — the SVG and "
                             "the numbers are still in the pack; please report this chart",
                             notice=Notice("export.error.rasterise")) from err


def chart_png(chart, *, scale: float = 2.0) -> bytes:
    """PNG bytes of ``chart`` at ``scale`` × its size in CSS pixels (2.0 = sharp on slides and retina)."""
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not MIN_SCALE <= scale <= MAX_SCALE:
        raise InvalidRequestError(f"PNG scale {scale!r} is out of range — use a number from {MIN_SCALE} to "
                                  f"{MAX_SCALE} (2 is sharp on slides)")
    return render("png", chart, scale=float(scale))


def chart_svg(chart) -> str:
    """SVG text of ``chart``; text marks (token strings, titles) are XML-escaped by the renderer."""
    return render("svg", chart)


_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}


def safe_file_stem(name: str, taken: set[str] = frozenset()) -> str:
    """``name`` as a portable file name stem (letters, digits, ``.``, ``_``, ``-``; no leading dot; ≤ 64
    characters), made unique against ``taken`` by a ``-2``, ``-3`` … suffix."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", str(name)).strip(".-_")[:64].rstrip(".-_") or "chart"
    if stem.split(".")[0].upper() in _WINDOWS_RESERVED:  # unzipping "CON.png" fails on Windows
        stem += "-file"
    candidate, n = stem, 1
    while candidate.lower() in {t.lower() for t in taken}:
        n += 1
        candidate = f"{stem}-{n}"
    return candidate


def _dumps(payload: Any) -> str:
    return json.dumps(to_jsonable(payload), ensure_ascii=False, allow_nan=False, indent=1)


# Names the pack itself uses; a chart called "numbers" gets "numbers-2".
_RESERVED = {"numbers", "provenance"}


def export_pack(charts: Mapping[str, Any], numbers: Mapping, provenance: Provenance,
                lang: str = DEFAULT_LANGUAGE) -> bytes:
    """A zip (bytes) for slides and reports: ``<name>.png`` (scale 2) and ``<name>.svg`` for every chart,
    each with the provenance caption (in ``lang``) drawn on it; ``numbers.json`` (the numbers behind the charts,
    NaN as null); ``provenance.json`` (:meth:`Provenance.as_json`). Chart names become safe file names."""
    taken = set(_RESERVED)
    buffer = io.BytesIO()
    stamp = (provenance.date.year, provenance.date.month, provenance.date.day, 0, 0, 0)
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as pack:
        def write(name: str, data: bytes | str) -> None:
            # A fixed timestamp (the provenance date) keeps the pack identical for identical inputs.
            pack.writestr(zipfile.ZipInfo(name, date_time=max(stamp, (1980, 1, 1, 0, 0, 0))), data,
                          compress_type=zipfile.ZIP_DEFLATED)

        for name, chart in charts.items():
            stem = safe_file_stem(name, taken)
            taken.add(stem)
            svg = chart_svg(with_provenance(chart, provenance, lang))
            write(f"{stem}.svg", svg)
            write(f"{stem}.png", svg_png(svg, scale=2.0))
        write("numbers.json", _dumps(numbers))
        write("provenance.json", _dumps(provenance.as_json(lang)))
    return buffer.getvalue()


def capture_json(info: ModelInfo, capture: Capture, *, layers=None) -> dict:
    """The documented ``analyze`` JSON (shared/DESIGN.md) for a capture: model facts, tokens, offsets,
    per-row entropy, head entropy, sink mass, outputs, timings, and ``attention`` {"layer": [head][q][k]}
    for the captured layers — or only those in ``layers`` (an iterable of indices) when given."""
    entropy = head_entropy(capture)
    chosen = sorted(capture.weights) if layers is None else sorted(set(int(x) for x in layers) & set(capture.weights))
    return {
        "model": info.as_json(),
        "text": capture.text,
        "tokens": list(capture.tokens),
        "offsets": capture.offsets.tolist(),
        "special": capture.special.tolist(),
        "backend": capture.backend,
        "truncated": capture.truncated,
        "entropy": capture.entropy.tolist(),
        "head_entropy": entropy.raw.tolist(),
        "head_entropy_normalized": to_jsonable(entropy.normalized.tolist()),
        "visible_keys": capture.visible_keys.tolist(),
        "sink_mass": capture.sink_mass.tolist(),
        "attention": {str(layer): capture.weights[layer].tolist() for layer in chosen},
        "output": {"kind": capture.output.kind, "position": capture.output.position,
                   "predictions": [list(p) for p in capture.output.predictions]},
        "timings": capture.timings,
    }


def view_numbers(view: HeatmapView) -> dict:
    """The numbers behind one heatmap: what was done (options, notes), the row/column labels, tokens and
    first-token positions, the weights [row][col] and each row's sum."""
    return {
        "layer": view.layer,
        "head": view.head,
        "options": {"hide_special": view.options.hide_special, "drop_sink": view.options.drop_sink,
                    "words": view.options.words},
        "notes": list(view.notes),
        "query_labels": list(view.query_labels),
        "key_labels": list(view.key_labels),
        "query_tokens": list(view.query_tokens),
        "key_tokens": list(view.key_tokens),
        "query_positions": list(view.query_positions),
        "key_positions": list(view.key_positions),
        "weights": view.weights.tolist(),
        "row_sums": view.row_sums.tolist(),
    }
