"""16:9 slides (issue 31): a chart's title as the slide's heading, its notes under it, the chart scaled into the middle
and the provenance caption at the foot, on a 1920 × 1080 canvas — ready to drop onto a slide as it is; and the
Lecture's title slides, which carry a step's link. Rendered with :mod:`inspector.output.export`'s renderer."""

from __future__ import annotations

import re

import altair as alt

from inspector.base.i18n import DEFAULT_LANGUAGE
from inspector.charts.base import text_width_px, wrap_text
from inspector.output.export import (
    BOLD_ADVANCE,
    EXPORT_PLOT_PX,
    Provenance,
    embolden_wide_text,
    render,
    screen_only,
    svg_png,
    title_dict,
    unwrap_lines,
)

SLIDE_WIDTH_PX, SLIDE_HEIGHT_PX = 1920, 1080
_SLIDE_MARGIN_PX = 72
_SLIDE_TITLE_PX, _SLIDE_NOTE_PX, _SLIDE_CAPTION_PX = 52, 28, 22
_SVG_SIZE = re.compile(r'<svg[^>]*?\swidth="([0-9.]+)"[^>]*?\sheight="([0-9.]+)"')


def _svg_text_lines(lines: list[str], *, x: float, y: float, size: float, line_px: float, bold: bool = False,
                    colour: str = "#000") -> tuple[str, float]:
    """SVG ``<text>`` elements for ``lines`` from baseline ``y``; returns them and the y below the last line."""
    from xml.sax.saxutils import escape

    parts = []
    for line in lines:
        y += line_px
        weight = ' font-weight="bold"' if bold else ""
        parts.append(f'<text x="{x:.0f}" y="{y - (line_px - size) / 2:.0f}" font-family="sans-serif" '
                     f'font-size="{size}px"{weight} fill="{colour}">{escape(line)}</text>')
    return "".join(parts), y


def slide_svg(chart, provenance: Provenance, lang: str = DEFAULT_LANGUAGE, *, title: str | None = None) -> str:
    """``chart`` as a 16:9 slide (1920 × 1080 SVG): ``title`` (default: the chart's own) as the heading, the chart's
    notes (hover hints left out) under it, the chart scaled to fill the rest and ``provenance.caption(lang)`` at the
    foot. Every line is wrapped CJK-aware to the slide's width."""
    chart_title = title_dict(chart)
    heading = title if title is not None else unwrap_lines(chart_title.get("text"))
    notes = screen_only(unwrap_lines(chart_title.get("subtitle")), lang)
    body = chart.copy(deep=False)
    body.title = alt.Undefined
    if isinstance(body, (alt.Chart, alt.LayerChart)):
        body.autosize = alt.AutoSizeParams(type="pad")
        if getattr(body, "width", alt.Undefined) in (alt.Undefined, "container"):
            body.width = EXPORT_PLOT_PX * 2
    inner = render("svg", body)
    size = _SVG_SIZE.search(inner)
    inner_w, inner_h = (float(size.group(1)), float(size.group(2))) if size else (EXPORT_PLOT_PX, EXPORT_PLOT_PX)
    text_px = SLIDE_WIDTH_PX - 2 * _SLIDE_MARGIN_PX
    top, y = "", float(_SLIDE_MARGIN_PX) - 16
    if heading:
        drawn, y = _svg_text_lines(wrap_text(heading, text_px, _SLIDE_TITLE_PX), x=_SLIDE_MARGIN_PX, y=y,
                                   size=_SLIDE_TITLE_PX, line_px=_SLIDE_TITLE_PX * 1.25, bold=True)
        top += drawn
    if notes:
        drawn, y = _svg_text_lines(wrap_text(notes, text_px, _SLIDE_NOTE_PX), x=_SLIDE_MARGIN_PX, y=y + 8,
                                   size=_SLIDE_NOTE_PX, line_px=_SLIDE_NOTE_PX * 1.35, colour="#444")
        top += drawn
    caption_lines = wrap_text(provenance.caption(lang), text_px, _SLIDE_CAPTION_PX)
    caption_top = SLIDE_HEIGHT_PX - _SLIDE_MARGIN_PX / 2 - len(caption_lines) * _SLIDE_CAPTION_PX * 1.35
    foot, _ = _svg_text_lines(caption_lines, x=_SLIDE_MARGIN_PX, y=caption_top, size=_SLIDE_CAPTION_PX,
                              line_px=_SLIDE_CAPTION_PX * 1.35, colour="#555")
    area_top, area_bottom = y + 24, caption_top - 16
    scale = max(0.05, min(text_px / inner_w, (area_bottom - area_top) / inner_h))
    width, height = inner_w * scale, inner_h * scale
    left = _SLIDE_MARGIN_PX + (text_px - width) / 2
    # The chart's own SVG, nested and scaled: its text stays text (selectable, escaped by vl-convert).
    opening = inner.strip()[:inner.strip().index(">") + 1]
    resized = re.sub(r'\s(width|height)="[0-9.]+"', "", opening).replace(
        "<svg ", f'<svg x="{left:.1f}" y="{area_top:.1f}" width="{width:.1f}" height="{height:.1f}" ', 1)
    nested = resized + inner.strip()[len(opening):]
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" version="1.1" '
           f'width="{SLIDE_WIDTH_PX}" height="{SLIDE_HEIGHT_PX}" viewBox="0 0 {SLIDE_WIDTH_PX} {SLIDE_HEIGHT_PX}">'
           f'<rect width="{SLIDE_WIDTH_PX}" height="{SLIDE_HEIGHT_PX}" fill="white"/>{top}{nested}{foot}</svg>')
    return embolden_wide_text(svg)


def slide_png(chart, provenance: Provenance, lang: str = DEFAULT_LANGUAGE, *, title: str | None = None) -> bytes:
    """:func:`slide_svg` as a 1920 × 1080 PNG."""
    return svg_png(slide_svg(chart, provenance, lang, title=title), scale=1.0)


def _link_lines(link: str, width_px: float, font_px: float) -> list[str]:
    """A URL in lines no wider than ``width_px`` (estimated): broken after ``?`` or ``&`` where it can be, else
    anywhere — a link has no spaces for :func:`wrap_text` to break at."""
    lines, line = [], ""
    for piece in re.split(r"(?<=[?&])", link):
        while text_width_px(line + piece, font_px) > width_px:
            if line:
                lines.append(line)
                line = ""
                continue
            cut = max(1, next((i for i in range(len(piece), 0, -1) if text_width_px(piece[:i], font_px) <= width_px),
                              1))
            lines.append(piece[:cut])
            piece = piece[cut:]
        line += piece
    return [*lines, line] if line else lines


def title_slide_svg(title: str, notes: str, caption: str, *, kicker: str = "", link: str = "") -> str:
    """A 16:9 slide without a chart (1920 × 1080 SVG): ``kicker`` (a small line above, e.g. "Step 3 of 10"),
    ``title`` large, ``notes`` under it, ``caption`` and then ``link`` (a URL, broken at its ``&``) at the foot — laid
    out and wrapped like :func:`slide_svg`'s."""
    text_px = SLIDE_WIDTH_PX - 2 * _SLIDE_MARGIN_PX
    title_px, notes_px = _SLIDE_TITLE_PX * 1.4, _SLIDE_NOTE_PX * 1.5
    title_lines = wrap_text(title, text_px, title_px * BOLD_ADVANCE)
    note_lines = wrap_text(notes, text_px, notes_px) if notes else []
    block = ((_SLIDE_CAPTION_PX * 1.6 if kicker else 0) + len(title_lines) * title_px * 1.25
             + (24 + len(note_lines) * notes_px * 1.4 if note_lines else 0))
    y = max(float(_SLIDE_MARGIN_PX), (SLIDE_HEIGHT_PX - block) / 2 - _SLIDE_MARGIN_PX / 2)
    body = ""
    if kicker:
        drawn, y = _svg_text_lines([kicker], x=_SLIDE_MARGIN_PX, y=y, size=_SLIDE_CAPTION_PX,
                                   line_px=_SLIDE_CAPTION_PX * 1.6, colour="#555")
        body += drawn
    drawn, y = _svg_text_lines(title_lines, x=_SLIDE_MARGIN_PX, y=y, size=title_px, line_px=title_px * 1.25, bold=True)
    body += drawn
    if note_lines:
        drawn, y = _svg_text_lines(note_lines, x=_SLIDE_MARGIN_PX, y=y + 24, size=notes_px, line_px=notes_px * 1.4,
                                   colour="#333")
        body += drawn
    caption_lines = wrap_text(caption, text_px, _SLIDE_CAPTION_PX) + _link_lines(link, text_px, _SLIDE_CAPTION_PX)
    caption_top = SLIDE_HEIGHT_PX - _SLIDE_MARGIN_PX / 2 - len(caption_lines) * _SLIDE_CAPTION_PX * 1.35
    foot, _ = _svg_text_lines(caption_lines, x=_SLIDE_MARGIN_PX, y=caption_top, size=_SLIDE_CAPTION_PX,
                              line_px=_SLIDE_CAPTION_PX * 1.35, colour="#555")
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{SLIDE_WIDTH_PX}" height="{SLIDE_HEIGHT_PX}" '
           f'viewBox="0 0 {SLIDE_WIDTH_PX} {SLIDE_HEIGHT_PX}"><rect width="{SLIDE_WIDTH_PX}" '
           f'height="{SLIDE_HEIGHT_PX}" fill="white"/>{body}{foot}</svg>')
    return embolden_wide_text(svg)


def title_slide_png(title: str, notes: str, caption: str, *, kicker: str = "", link: str = "") -> bytes:
    """:func:`title_slide_svg` as a 1920 × 1080 PNG."""
    return svg_png(title_slide_svg(title, notes, caption, kicker=kicker, link=link), scale=1.0)
