"""Exports that fit, in both languages (issue 31, item 3): every exported figure — PNG/SVG with its caption, and the
16:9 slide — is rendered in English and in 简体中文, and its SVG's text boxes are measured with the fonts the renderer
draws (DejaVu Sans for Latin, WenQuanYi Micro Hei for Chinese; DejaVu is the wider Latin face, so the check errs on the
safe side): every text line lies inside the canvas, and no line starts with a closing punctuation mark. Also: the
line breaker never splits a Latin word, a number, a dictionary word or "第 0 层"; titles keep their weight in
Chinese; the plot keeps its height under a long header; hover hints stay on screen."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from inspector.analyses.heatmap import HeatmapOptions, HeatmapView
from inspector.analyses.metrics import HeadEntropy
from inspector.base.i18n import CATALOGUE, t
from inspector.charts.base import (
    CLOSING_PUNCTUATION,
    TITLE_FONT_PX,
    text_width_px,
    thinned_note,
    title_text,
    wrap_text,
)
from inspector.charts.inspect import (
    attention_heatmap_chart,
    entropy_by_layer_chart,
    entropy_grid_chart,
    layer_heads_chart,
)
from inspector.output.export import (
    SCREEN_ONLY_KEYS,
    Provenance,
    chart_svg,
    screen_title,
    unwrap_lines,
    with_provenance,
)
from inspector.output.slides import SLIDE_HEIGHT_PX, SLIDE_WIDTH_PX, slide_svg

FONTS = Path("/usr/share/fonts/truetype")
LATIN, LATIN_BOLD = FONTS / "dejavu/DejaVuSans.ttf", FONTS / "dejavu/DejaVuSans-Bold.ttf"
CJK = FONTS / "wqy/wqy-microhei.ttc"
TOKENS = ("[CLS]", "the", "animal", "didn", "'", "t", "cross", "the", "street", "because", "it", "was", "too", "tired",
          ".", "[SEP]")
PROVENANCE = Provenance("all-MiniLM-L6-v2 (bundled)", "The animal didn't cross the street because it was too tired.",
                        "torch", layer=2, head=3)
SVG = "{http://www.w3.org/2000/svg}"


def _view(head: int = 0) -> HeatmapView:
    rng = np.random.default_rng(head)
    weights = rng.random((len(TOKENS), len(TOKENS))).astype(np.float32)
    weights /= weights.sum(-1, keepdims=True)
    labels = tuple(f"{i}: {tok}" for i, tok in enumerate(TOKENS))
    positions = tuple(range(len(TOKENS)))
    return HeatmapView(layer=2, head=head, weights=weights, query_labels=labels, key_labels=labels,
                       query_tokens=TOKENS, key_tokens=TOKENS, query_positions=positions, key_positions=positions,
                       options=HeatmapOptions(), notes=())


def _charts(lang: str) -> dict:
    raw = np.linspace(0.05, 0.95, 6 * 12, dtype=np.float32).reshape(6, 12)
    entropy = HeadEntropy(raw=raw, normalized=raw, layer_mean=raw.mean(-1))
    return {"grid": entropy_grid_chart(entropy, selected=(2, 3), lang=lang),
            "by_layer": entropy_by_layer_chart(entropy, lang=lang),
            "heatmap": attention_heatmap_chart(_view(), lang=lang),
            "heads": layer_heads_chart([_view(h) for h in range(4)], lang=lang)}


@cache
def _font(path: Path, size: float):
    from PIL import ImageFont

    return ImageFont.truetype(str(path), size=max(1, round(size)))


def text_width(text: str, size: float, bold: bool = False) -> float:
    """The drawn width of ``text``: each character in the face the renderer falls back to."""
    width = 0.0
    for ch in text:
        wide = ord(ch) > 0x2e7f
        face = CJK if wide else (LATIN_BOLD if bold else LATIN)
        width += _font(face, 40).getlength(ch) * size / 40
    return width


_TRANSLATE = re.compile(r"translate\(([-0-9.e]+)[ ,]+([-0-9.e]+)\)")
_ROTATE = re.compile(r"rotate\(([-0-9.e]+)\)")


def _offset(element) -> tuple[float, float, float]:
    """(dx, dy, rotation in degrees) of an element's own transform: translates summed, the rotation applied after."""
    transform = element.get("transform", "")
    dx = sum(float(m[0]) for m in _TRANSLATE.findall(transform))
    dy = sum(float(m[1]) for m in _TRANSLATE.findall(transform))
    rotation = sum(float(m) for m in _ROTATE.findall(transform))
    return dx + float(element.get("x", 0) or 0), dy + float(element.get("y", 0) or 0), rotation


def text_lines(svg: str) -> tuple[float, float, list[dict]]:
    """The canvas size and every drawn line of text: its string, start and end points, font size."""
    root = ET.fromstring(svg)
    width, height = float(root.get("width")), float(root.get("height"))
    lines: list[dict] = []

    def walk(node, x0: float, y0: float, scale: float) -> None:
        for child in node:
            tag = child.tag.removeprefix(SVG)
            if tag == "svg":  # the slide's nested chart: placed at x, y and scaled into width × height
                box = [float(v) for v in child.get("viewBox").split()]
                s = float(child.get("width")) / box[2]
                walk(child, x0 + scale * float(child.get("x")), y0 + scale * float(child.get("y")), scale * s)
            elif tag == "g":
                dx, dy, _ = _offset(child)
                walk(child, x0 + scale * dx, y0 + scale * dy, scale)
            elif tag == "text":
                dx, dy, rotation = _offset(child)
                size = float(re.sub("px$", "", child.get("font-size", "11")))
                bold = child.get("font-weight") == "bold"
                spans = child.findall(f"{SVG}tspan") or [child]
                y = 0.0
                for span in spans:
                    y += float(span.get("dy", 0) or 0)
                    line = "".join(span.itertext())
                    if not line.strip():
                        continue
                    drawn = text_width(line, size, bold)
                    start = {"start": 0.0, "middle": -drawn / 2, "end": -drawn}[child.get("text-anchor", "start")]
                    angle = math.radians(rotation)
                    points = [(start, y), (start + drawn, y), (start, y - 0.8 * size), (start + drawn, y - 0.8 * size)]
                    drawn_points = [(x0 + scale * (dx + px * math.cos(angle) - py * math.sin(angle)),
                                     y0 + scale * (dy + px * math.sin(angle) + py * math.cos(angle)))
                                    for px, py in points]
                    lines.append({"text": line, "points": drawn_points, "size": size, "bold": bold,
                                  "rotated": bool(rotation)})

    walk(root, 0.0, 0.0, 1.0)
    return width, height, lines


def assert_fits(svg: str, where: str) -> list[dict]:
    width, height, lines = text_lines(svg)
    assert lines, where
    for line in lines:
        # Slack for the measuring face: DejaVu is a little wider than what the renderer picks for "sans-serif"
        # (a legend title Vega placed flush with the edge measures ~1 % over); the overflows were far larger.
        slack = 2 + 0.05 * text_width(line["text"], line["size"], line["bold"])
        for x, y in line["points"]:
            assert -slack <= x <= width + slack and -slack <= y <= height + slack, (
                where, line["text"], round(x), round(y), width, height)
        assert line["text"].strip()[0] not in CLOSING_PUNCTUATION, (where, line["text"])
    return lines


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_export_and_slide_fits_its_canvas_in_both_languages(lang):
    for name, chart in _charts(lang).items():
        lines = assert_fits(chart_svg(with_provenance(chart, PROVENANCE, lang)), f"{name} {lang}")
        caption = "".join("".join(line["text"] for line in lines).split())
        assert "".join(PROVENANCE.caption(lang).split()) in caption, name
        if name in ("heatmap", "heads"):  # a slide of a single chart and of a facet (each render takes a while)
            slide = slide_svg(chart, PROVENANCE, lang)
            width, height, _ = text_lines(slide)
            assert (width, height) == (SLIDE_WIDTH_PX, SLIDE_HEIGHT_PX)
            assert_fits(slide, f"slide {name} {lang}")
    # The Ground truth scoreboard's long caption in Chinese ran off the right edge (the first export).
    long = Provenance("shipped:deceptive-attention", t("chart.gt.export_text", lang, examples=100,
                                                       task="deceptive-attention", seed=1_000_000, k=3), "torch")
    assert_fits(chart_svg(with_provenance(_charts(lang)["by_layer"], long, lang)), f"long caption {lang}")


def test_titles_keep_their_weight_and_the_plot_its_height_in_chinese():
    svg = chart_svg(with_provenance(_charts("zh")["by_layer"], PROVENANCE, "zh"))
    titles = [line for line in text_lines(svg)[2] if line["bold"] and "逐层" in line["text"]]
    assert titles, "the title is drawn bold"
    # The CJK font has no bold face: bold Chinese is drawn with an outline of its own colour.
    assert re.search(r'<text[^>]*font-weight="bold"[^>]*stroke="[^"]+"[^>]*>(<tspan>)?逐层', svg)
    plot = re.search(r'<path class="background"[^>]*d="M0\.5,0\.5h([0-9.]+)v([0-9.]+)h', svg)
    assert plot and float(plot.group(2)) >= 250  # the chart's 260 px plot, not squashed under the header


def test_every_chart_sentence_about_a_mouse_is_screen_only():
    """Issue 31: "hover a cell …" and "click a head …" were printed on slides; every chart sentence that asks for
    a mouse is one of the sentences exports leave out."""
    mouse = [key for key, entry in CATALOGUE.items()
             if key.startswith("chart.") and re.search(r"\b(hover|click)", entry["en"], re.I)]
    assert mouse and not set(mouse) - set(SCREEN_ONLY_KEYS)


def test_hover_hints_are_on_screen_only():
    screen = thinned_note("en")
    assert t("chart.hover.token", "en") in screen
    view = _view()
    chart = attention_heatmap_chart(view, lang="zh").properties(width=120)
    exported = unwrap_lines(with_provenance(chart, PROVENANCE, "zh").to_dict()["title"].get("subtitle"))
    assert t("chart.hover.token", "zh") not in exported and t("chart.hover.token", "en") not in exported


@pytest.mark.parametrize("text,width,keep", [
    ("后端 torch 和后端 triton 的结果在第 0 层第 11 个头相同，均匀分布的熵最大。", 120,
     ["后端", "第 0 层", "第 11 个头", "torch", "triton", "均匀", "分布"]),
    ("Head entropy: how spread out each head's attention is, measured at 1,000.5 tokens", 90,
     ["entropy:", "1,000.5", "attention"]),
    ("点：每个头（0 = 只看一个键，1 = 均匀分布）。线：该层的平均值。", 100, ["0 = 只看", "1 = 均匀"]),
])
def test_the_line_breaker_keeps_words_numbers_and_punctuation_whole(text, width, keep):
    lines = wrap_text(text, width, 12)
    assert len(lines) > 1
    assert unwrap_lines(lines).replace(" ", "") == text.replace(" ", "")
    for line in lines:
        assert line[0] not in CLOSING_PUNCTUATION and line[-1] not in "（「『【《〈“‘", lines
    for piece in keep:
        assert any(piece in line for line in lines), (piece, lines)


def _screen_branches(expression: str) -> list[tuple[float, list[str]]]:
    """(width, lines) of every branch of screen_title's expression ``drawn >= W ? LINES : … : LINES``, the last
    one (the narrow wrap) at width 0."""
    decoder, branches, rest = json.JSONDecoder(), [], expression
    drawn = "containerSize()[0] - 20 >= "
    while rest.startswith(drawn):
        width, rest = rest[len(drawn):].split(" ? ", 1)
        lines, end = decoder.raw_decode(rest)
        branches.append((float(width), [lines] if isinstance(lines, str) else lines))
        rest = rest[end:].removeprefix(" : ")
    lines, _ = decoder.raw_decode(rest)
    return [*branches, (0.0, [lines] if isinstance(lines, str) else lines)]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_on_screen_a_narrow_columns_title_rewraps_as_its_chart_grows(lang):
    for name, chart in _charts(lang).items():
        title = chart.to_dict()["title"]
        screen = screen_title(chart)
        if name == "heads" or not isinstance(title["text"], list):  # facets, and one-line titles: as they were
            assert screen.to_dict() == chart.to_dict(), name
            continue
        drawn = screen.to_dict()["title"]
        assert drawn["limit"] == {"expr": f"max({title['limit']}, containerSize()[0] - 20)"}
        assert drawn.get("subtitle") == title.get("subtitle")
        branches = _screen_branches(drawn["text"]["expr"])
        assert branches[-1][1] == title["text"] and len(branches) > 1, name  # below every branch: the narrow wrap
        assert title_text(drawn) == title_text(title)  # what a test reads of a title on screen: its own wrap
        counts = [len(lines) for _, lines in branches]
        assert counts == sorted(counts) and len(set(counts)) == len(counts), (name, branches)  # fewer lines, wider
        for width, lines in branches:
            assert unwrap_lines(lines) == unwrap_lines(title["text"]), (name, lines)
            assert all(text_width_px(line, TITLE_FONT_PX) <= max(width, title["limit"]) for line in lines), lines
        assert with_provenance(chart, PROVENANCE, lang).to_dict()["title"]["text"] != drawn["text"]  # exports: static
