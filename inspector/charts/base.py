"""Altair (Vega-Lite) charts over results the library has already computed: the shared look.

Every builder takes finished numbers (a :class:`~inspector.analyses.metrics.HeadEntropy`, a
:class:`~inspector.analyses.heatmap.HeatmapView`) and returns an Altair chart — nothing here computes an analysis,
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
finished: to place it in a larger composition, build it with ``slide=False``, take a :func:`composable` copy,
compose, then call :func:`style_chart` on the result.

**Fitting the app's columns** (issue 17). Streamlit draws a single or layered chart at its column's width;
:func:`style_chart` makes it ``fit-x`` so it keeps the height it asks for. Titles are wrapped by
:func:`chart_title` for the narrowest column the chart is shown in (the ``*_PX`` widths, measured at a 1000 px
window); token axes (:func:`token_axis`) label every token there is room for and otherwise every k-th, with
:data:`THINNED_NOTE` in the subtitle — never Vega's silent overlap removal; sequential colour scales start at
white (:func:`zero_white_scale`), so a zero weight reads as nothing. Facets and concatenations keep their own
sizes, which their builders keep under the main column's width. ``tests/test_chart_layout.py`` measures all of
this in Chromium.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from typing import TypeVar

import altair as alt
import numpy as np

from inspector.base.i18n import t
from inspector.base.tokens import token_labels as readable_token_labels

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
# The attention heatmap's click selection (Inspect, a causal LM's "why this cell"): ``event.selection[CELL_SELECTION]``
# → ``[{"query_index": …, "key_index": …}]``, the clicked cell's row and column in the view.
CELL_SELECTION = "cell_pick"

ChartT = TypeVar("ChartT", bound=alt.TopLevelMixin)


def style_chart(chart: ChartT, slide: bool = False) -> ChartT:
    """Finish a top-level chart: a single or layered chart fits its column's width and keeps its height
    (:func:`fit_to_column`); with ``slide``, slide-mode type sizes.

    Both belong to the top level in Vega-Lite, so this is the last step of a builder; a chart finished here can
    no longer be layered or concatenated (Altair refuses charts that carry a config or an autosize): to compose
    charts, build them with ``slide=False``, take :func:`composable` copies,
    compose, then call this on the result.
    """
    if isinstance(chart, (alt.Chart, alt.LayerChart)):
        chart = fit_to_column(chart)
    # Room around the drawing for the parts of large type (a title's ascent, a rotated axis title) that Vega
    # places flush with its edge; Streamlit sets only the bottom padding.
    chart = chart.properties(padding={"left": 6, "top": 8 if slide else 5, "right": 6, "bottom": 20})
    if not slide:
        return chart
    return (chart
            .configure_title(fontSize=SLIDE_TITLE_FONT_PX, subtitleFontSize=SLIDE_SUBTITLE_FONT_PX, anchor="start",
                             offset=12)
            .configure_axis(labelFontSize=16, titleFontSize=18, titlePadding=10)
            .configure_legend(labelFontSize=16, titleFontSize=16, gradientLength=200, gradientThickness=18)
            .configure_header(labelFontSize=16, titleFontSize=18))


def composable(chart: ChartT) -> ChartT:
    """A copy of a finished, non-slide chart without the top-level sizing :func:`style_chart` gave it (autosize,
    padding), so that it can be layered or concatenated again."""
    copy = chart.copy(deep=False)
    copy.autosize = alt.Undefined
    copy.padding = alt.Undefined
    return copy


def token_labels(tokens: Sequence[str]) -> list[str]:
    """One label per position, unique even when a token repeats, each token readable (Ġ, Ċ, ▁ shown as ␣ and ↵:
    :mod:`inspector.base.tokens`): ``["0: [CLS]", "1: ␣the", …]``."""
    return readable_token_labels(tokens)


# ---- fitting the app's columns (issue 17). Streamlit draws every chart at its container's width (it sets the
# spec's width to the column and, unless the spec says otherwise, autosize "fit": title, axes and legend included).
# A title line wider than the column therefore squeezes the plot — to zero width when it is much wider — and a title
# without a limit is cut at the column's width minus 40 px. So titles are wrapped here into lines that fit the
# narrowest column a chart is shown in, at the app's smallest supported window (1000 px): these widths.
FULL_WIDTH_PX = 500  # the main column at a 1000 px window with the sidebar open (540 px), less an expander's padding
WIDE_COLUMN_PX = 290  # the wider of two columns split 3:2 (the Inspect page's heatmap)
NARROW_COLUMN_PX = 180  # the narrower one (the Inspect page's entropy grid and profile)
HALF_COLUMN_PX = 240  # one of two equal columns
# Average advance of a character as a fraction of the font size (Source Sans at the sizes the app uses, measured
# in Chromium on the app's titles: about 8 px a character at 16 px, bold) and the font sizes of titles and
# subtitles, normal and in slide mode. A wide (CJK) character is counted at 1.1 em: Chromium and vl-convert both
# drew a Chinese subtitle line of the Ground truth page at about 1.1 × 11 px a character, so 1.02 em let lines past
# the title's limit (Vega cut them with an ellipsis).
_LATIN_EM, _WIDE_EM = 0.52, 1.1
TITLE_FONT_PX, SLIDE_TITLE_FONT_PX = 16, 24
SUBTITLE_FONT_PX, SLIDE_SUBTITLE_FONT_PX = 11, 16


def text_width_px(text: str, font_px: float) -> float:
    """An estimate of ``text``'s width: CJK and other wide characters count about twice a Latin one. In a text with
    CJK in it, so do the East Asian "ambiguous" ones (— “ ” → …), which a CJK font draws full width (vl-convert cut
    a Chinese heatmap note at its "——"); English text is measured as before."""
    wide = "WFA" if any(unicodedata.east_asian_width(ch) in "WF" for ch in text) else "WF"
    return font_px * sum(_WIDE_EM if unicodedata.east_asian_width(ch) in wide else _LATIN_EM for ch in text)


# ---- line breaking (issue 31). Latin words and numbers never break; Chinese may break between characters, but not
# before closing punctuation (no line starts with "，" or "）"), not after opening punctuation, not inside a word of
# :data:`CJK_WORDS` (后/端 was split), and not at the spaces that tie a number to the characters around it (第 0 层).
# Where a line has a better place to end — after punctuation or at a space — within its last ~40 %, it ends there.
CLOSING_PUNCTUATION = "，。、；：？！）」』】》〉”’…—·%,.;:?!)]}"
OPENING_PUNCTUATION = "（「『【《〈“‘([{"
# Words of the app's own Chinese (the catalogue's vocabulary) that a line must not split: a small dictionary, since
# a general segmenter would be a dependency for captions. Longer words first.
CJK_WORDS = frozenset("""
已知答案 项目自带 注意力 积分梯度 语言模型 分类器 计分板 显式计算 归一化 随机基线 因果词元 留一法
后端 词元 模型 文本 归因 权重 输入 输出 查询 分布 均匀 平均 每个 一个 内置 因果 方法 样例 得分 区间 随机 基线
梯度 遮挡 矩阵 深度 变得 是否 集中 熵值 键数 点击 格子 显示 颜色 所有 数量 可见 取平均 层级 预测 答案 正确
错误 排名 机制 头部 热图 示例 课程 对比 导出 幻灯片 标题 说明 来源 日期 许可 量化 生成 解码 位置 偏移 头数
""".split())
_MAX_WORD = max(map(len, CJK_WORDS))
_OPERATORS = frozenset("=×→−+<>≤≥≈")
_BETTER_BREAK_SHARE = 0.6


def _is_wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in "WF"


def _inside_word(text: str, index: int) -> bool:
    """Whether a break between ``text[index - 1]`` and ``text[index]`` would split a word of :data:`CJK_WORDS`."""
    for size in range(2, _MAX_WORD + 1):
        for start in range(max(0, index - size + 1), index):
            if text[start:start + size] in CJK_WORDS and start + size > index:
                return True
    return False


def _breaks(atom: str) -> bool:
    """Whether ``atom`` is a space a line may break at (a no-break space is not)."""
    return atom.isspace() and "\u00a0" not in atom


def _latin_run(atoms: list[str], index: int, step: int) -> str:
    """The run of non-space, narrow atoms from ``index`` going forward (step 1) or back (step −1)."""
    run = []
    while 0 <= index < len(atoms) and not _breaks(atoms[index]) and not _is_wide(atoms[index]):
        run.append(atoms[index])
        index += step
    return "".join(run if step > 0 else reversed(run))


def _ties(atoms: list[str], space: int) -> bool:
    """Whether the space ``atoms[space]`` ties a short number to a Chinese character (第 0 层, 共 3 题)."""
    before, after = atoms[space - 1] if space else "", atoms[space + 1] if space + 1 < len(atoms) else ""

    def short_number(run: str) -> bool:
        return run.isdigit() and len(run) <= 4

    if before in _OPERATORS or after in _OPERATORS:  # "0 = 只看" stays on one line, never a line starting "="
        return True
    return bool(before and after and ((_is_wide(before) and short_number(_latin_run(atoms, space + 1, 1)))
                                      or (_is_wide(after) and short_number(_latin_run(atoms, space - 1, -1)))))


def _pieces(text: str) -> list[tuple[str, bool]]:
    """``text`` as unbreakable pieces, each with whether the break before it is a good one (at a space, after
    punctuation) rather than merely allowed (between two Chinese characters)."""
    atoms = re.findall(r"[^\S\u00a0]+|[\S\u00a0]", text)  # a no-break space is not a place to break
    pieces: list[tuple[str, bool]] = []
    for index, atom in enumerate(atoms):
        previous = atoms[index - 1] if index else ""
        if not pieces or _breaks(atom):
            kind = None
        elif _breaks(previous):
            kind = None if _ties(atoms, index - 1) else "good"
        elif not _is_wide(atom) and not _is_wide(previous):
            kind = None  # inside a Latin word or a number
        elif atom in CLOSING_PUNCTUATION or previous in OPENING_PUNCTUATION:
            kind = None
        elif previous in CLOSING_PUNCTUATION:
            kind = "good"
        elif _is_wide(atom) and _is_wide(previous) and _inside_word(text_so_far := "".join(atoms[:index + 1]),
                                                                   len(text_so_far) - 1):
            kind = None
        else:
            kind = "allowed"
        if kind is None and pieces:
            pieces[-1] = (pieces[-1][0] + atom, pieces[-1][1])
        else:
            pieces.append((atom, kind == "good"))
    return pieces


def wrap_text(text: str, width_px: float, font_px: float) -> list[str]:
    """``text`` broken into lines no wider than ``width_px`` (estimated), by the rules above: at spaces, or
    between two Chinese characters where no word, number or punctuation mark would be split; a single word longer
    than a line stays whole."""
    lines: list[str] = []
    line: list[tuple[str, bool]] = []

    def width(parts) -> float:
        return text_width_px("".join(p for p, _ in parts).strip(), font_px)

    for piece in _pieces(text):
        if line and width(line + [piece]) > width_px:
            # The best place to end this line: the last good break in its last 40 %, else just before this piece.
            cut = len(line)
            if not piece[1]:
                for index in range(len(line) - 1, 0, -1):
                    if line[index][1] and width(line[:index]) >= _BETTER_BREAK_SHARE * width_px:
                        cut = index
                        break
            lines.append("".join(p for p, _ in line[:cut]).strip())
            line = [(line[cut][0].lstrip(), line[cut][1])] + line[cut + 1:] if cut < len(line) else []
            if line and not line[0][0]:
                line = line[1:]
            piece = (piece[0].lstrip(), piece[1]) if not line else piece
        line.append(piece)
    if line or not lines:
        lines.append("".join(p for p, _ in line).strip())
    return lines


def chart_title(text: str, subtitle: Sequence[str] | None = (), *, width: int = FULL_WIDTH_PX,
                slide: bool = False) -> alt.TitleParams:
    """A left-aligned title and subtitle lines, wrapped to fit a column ``width`` pixels wide (one of the
    ``*_PX`` widths above: the narrowest column the chart is shown in). A title that fits stays one string;
    a longer one becomes a list of lines (Vega draws a list as lines)."""
    title_font, subtitle_font = (SLIDE_TITLE_FONT_PX, SLIDE_SUBTITLE_FONT_PX) if slide else (TITLE_FONT_PX,
                                                                                            SUBTITLE_FONT_PX)
    lines = wrap_text(text, width, title_font)
    title: str | list[str] = lines[0] if len(lines) == 1 else lines
    # An explicit limit: without one Streamlit cuts every line at the column's width minus 40 px.
    if subtitle:
        wrapped = [line for note in subtitle for line in wrap_text(note, width, subtitle_font)]
        return alt.TitleParams(text=title, subtitle=wrapped, anchor="start", limit=width)
    return alt.TitleParams(text=title, anchor="start", limit=width)


def fit_to_column(chart: ChartT) -> ChartT:
    """Let a single or layered chart take its column's width but keep the height it asks for: autosize
    ``fit-x``. Streamlit's default, ``fit``, also squeezes a fixed-height plot to make room for a wrapped title
    or a tall legend (the Heads page's pruning curve came out 60 px tall). Facets and concatenations cannot fit
    and keep their own sizes; a chart sized in steps (heatmaps) is stretched to the column either way."""
    return chart.properties(autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))


def title_text(title) -> str:
    """A chart title's text as one string, whether it was given as a string, as wrapped lines, or as the screen's
    expression choosing among wrappings (:func:`inspector.output.export.screen_title`: its last branch, the wrap
    the title was made with)."""
    text = title.get("text") if isinstance(title, dict) else title
    if isinstance(text, dict) and isinstance(text.get("expr"), str):
        text = screen_title_lines(text["expr"])
    if text is None:
        return ""
    return " ".join(text) if isinstance(text, (list, tuple)) else str(text)


def screen_title_lines(expression: str) -> list[str]:
    """The lines of the last branch of a screen title's expression (``… ? LINES : LINES``): the title's own wrap."""
    decoder, rest, lines = json.JSONDecoder(), expression, None
    while rest:
        start = rest.find(" : ")
        candidate = rest[start + 3:] if start >= 0 else rest
        try:
            lines, end = decoder.raw_decode(candidate)
            if not candidate[end:].strip():
                break
        except ValueError:
            pass
        if start < 0:
            break
        rest = rest[start + 3:]
    return [lines] if isinstance(lines, str) else list(lines or [])


# ---- zero is white. A sequential scale whose lowest colour is not white (Vega's "blues" starts light blue) makes
# every zero weight look like a little attention and the whole map washed out; these ramps start at white.
_SEQUENTIAL_RAMPS = {
    "blues": ("#ffffff", "#c6dbef", "#6baed6", "#2171b5", "#08306b"),
    "purples": ("#ffffff", "#dadaeb", "#9e9ac8", "#6a51a3", "#3f007d"),
    "greens": ("#ffffff", "#c7e9c0", "#74c476", "#238b45", "#00441b"),
    "oranges": ("#ffffff", "#fdd0a2", "#fd8d3c", "#d94801", "#7f2704"),
    "orangered": ("#ffffff", "#fdd49e", "#fc8d59", "#d7301f", "#7f0000"),
}


def zero_white_scale(scheme: str, high: float | None = 1.0) -> alt.Scale:
    """A continuous colour scale from 0 (white) to ``high`` (the ramp's darkest colour) for a sequential
    ``scheme`` named in :data:`_SEQUENTIAL_RAMPS`; ``high=None`` means the data's largest value (still from 0)."""
    ramp = _SEQUENTIAL_RAMPS[scheme]
    if high is None:
        return alt.Scale(range=list(ramp), domainMin=0, interpolate="lab", zero=True)
    stops = [float(high) * i / (len(ramp) - 1) for i in range(len(ramp))]
    return alt.Scale(domain=stops, range=list(ramp), interpolate="lab")


# Categorical palettes as colours, so a chart can give each category its colour by a key that does not depend on
# the language (a nominal scale's default domain is the sorted labels: translated, the colours swapped; issue 31).
TABLEAU10 = ("#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d",
             "#bab0ac")
DARK2 = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666")
SET2 = ("#66c2a5", "#fc8d62", "#8da0cb", "#e78ac3", "#a6d854", "#ffd92f", "#e5c494", "#b3b3b3")


def keyed_colours(labels: Sequence[str], palette: Sequence[str] = TABLEAU10) -> alt.Scale:
    """A nominal colour scale whose i-th label (in the caller's language-independent order) takes the palette's
    i-th colour, whatever the labels say in the reader's language."""
    labels = list(dict.fromkeys(labels))
    return alt.Scale(domain=labels, range=[palette[i % len(palette)] for i in range(len(labels))])


# Vega's viridis, sampled: enough stops to tell a mark's background light from dark.
_VIRIDIS_STOPS = ("#440154", "#414487", "#2a788e", "#22a884", "#7ad151", "#fde725")
_DARK_BACKGROUND_LUMINANCE = 0.35  # below this relative luminance a mark is written white, above it black


def _luminance(hex_colour: str) -> float:
    """WCAG relative luminance of ``#rrggbb``."""
    channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def mark_ink(values, scheme: str, low: float = 0.0, high: float | None = None) -> np.ndarray:
    """"white" or "black" per value: the colour a mark written on a cell of that value must take to stay readable
    on ``scheme`` (viridis, or a ramp of :data:`_SEQUENTIAL_RAMPS`) over [``low``, ``high``] (``high=None``: the
    largest value) — white C/D marks on pale cells could not be read (issue 31). NaN (a grey cell): black."""
    values = np.asarray(values, dtype=float)
    stops = _VIRIDIS_STOPS if scheme == "viridis" else _SEQUENTIAL_RAMPS[scheme]
    finite = values[np.isfinite(values)]
    top = float(high) if high is not None else (float(finite.max()) if finite.size else 1.0)
    span = top - low if top > low else 1.0
    lum = np.array([_luminance(stop) for stop in stops])
    where = np.clip((np.nan_to_num(values, nan=low) - low) / span, 0, 1) * (len(stops) - 1)
    shade = np.interp(where, np.arange(len(stops)), lum)
    return np.where(np.isfinite(values) & (shade < _DARK_BACKGROUND_LUMINANCE), "white", "black")


def weight_scale(slide: bool = False, high: float = 1.0) -> alt.Scale:
    """Attention weights on [0, ``high``]: white → dark blue; slides use cividis, whose own zero is its dark end."""
    if slide:
        return alt.Scale(scheme=SLIDE_WEIGHT_SCHEME, domain=[0, high])
    return zero_white_scale(WEIGHT_SCHEME, high)


def largest_weight(*weights) -> float:
    """The top of a weight map's colour scale: its largest weight (so a 200-token row of 0.01s is not drawn all
    white), never above 1 and never below 0.05 (so a map of nearly uniform weights does not look sharp)."""
    finite = [float(np.nanmax(w)) for w in weights if np.size(w) and np.isfinite(w).any()]
    return float(np.clip(max(finite, default=1.0), 0.05, 1.0))


# ---- token axes. Every token gets a label when there is room; when the column is too narrow for all of them,
# every k-th is labelled (k from the drawn width, a Vega signal, so it adapts to the column) and the chart says so
# in a subtitle line (:data:`THINNED_NOTE`) — never Vega's silent overlap removal.
# Spacing from which neighbouring labels clear each other (12 px type: a 16 px line box): rotated by −60°
# (the gap between two slanted lines is the spacing × sin 60°), and upright or at −90°.
_ROTATED_LABEL_PITCH_PX = 22
LABEL_PITCH_PX = 20
THINNED_NOTE = "In a narrow column only every k-th token is labelled. Hover a cell for its token."


def thinned_note(lang: str = "en", unit: str = "token") -> str:
    """:data:`THINNED_NOTE` in ``lang``; ``unit="head"`` for an axis of heads rather than tokens. Its hover hint is a
    sentence of its own, which exports leave out (:data:`inspector.output.export.SCREEN_ONLY_KEYS`)."""
    space = "" if lang == "zh" else " "
    hover = t("chart.hover.head" if unit == "head" else "chart.hover.token", lang)
    return t(f"chart.thinned.{unit}", lang) + space + hover


def _thinned_label_expr(order: Sequence, stride: str, keep: Sequence[int] = ()) -> str:
    """A Vega ``labelExpr`` that labels every ``stride``-th value of ``order`` — and, first, the positions in
    ``keep`` (in order of importance: the selected token, then outlined ones). A kept label is drawn whatever the
    stride; a regular label within a stride of a drawn kept one gives way to it, and a kept label within a stride of
    a more important kept one gives way too, so no two drawn labels are closer than the stride."""
    order_json = json.dumps(list(order), ensure_ascii=True)
    index = f"indexof({order_json}, datum.value)"
    kept = [int(k) for k in dict.fromkeys(keep) if 0 <= int(k) < len(order)]
    shown = []  # the kept positions' conditions, most important first
    for j, position in enumerate(kept):
        clear = [f"abs({position} - {other}) >= {stride}" for other in kept[:j]]
        shown.append((position, " && ".join(clear) if clear else "true"))
    regular = f"{index} % {stride} == 0"
    for position, _ in shown:
        regular += f" && abs({index} - {position}) >= {stride}"
    condition = regular
    for position, clear in reversed(shown):
        condition = f"({index} == {position} ? ({clear}) : {condition})"
    return f"{condition} ? datum.label : ''"


def token_axis(labels: Sequence[str], *, horizontal: bool, step_px: float | None = None, angle: int = -60,
               label_limit: int = 120, slide: bool = False, keep: Sequence[int] = (), **axis) -> alt.Axis:
    """An ordinal axis over ``labels`` (in that order) that labels every token it has room for and never
    hides one silently. ``step_px``: the spacing of the labels when it is fixed (a y axis sized in steps, a
    facet's panel); without it (an x axis stretched to the column) the spacing is the drawn width / len(labels),
    known only in the browser (Vega's ``width`` signal). ``keep``: positions labelled first when the axis thins
    (the selected token, the outlined ones — most important first), so thinning never hides the token a chart is
    about (issue 31)."""
    pitch = (_ROTATED_LABEL_PITCH_PX if horizontal and angle not in (0, -90, 90) else LABEL_PITCH_PX)
    pitch *= 1.4 if slide else 1.0
    count = max(len(labels), 1)
    if step_px is None:
        stride = f"max(1, ceil({pitch} * {count} / max(width, 1)))"
    else:
        stride = str(max(1, math.ceil(pitch / max(step_px, 1))))
    expression = _thinned_label_expr(labels, stride, keep)
    # Streamlit's theme sets labelFlush, which moves the first and last labels off their cells towards their
    # neighbours (found on the Compare page's axes, where two labels overlapped).
    axis.setdefault("labelFlush", False)
    return alt.Axis(labelAngle=angle if horizontal else 0, labelLimit=label_limit, labelOverlap=False,
                    labelExpr=expression, **axis)


def head_axis(count: int, *, keep: Sequence[int] = (), step_px: float | None = None, extra_chars: int = 0,
              label: str | None = None, slide: bool = False, font_px: float = 12, **axis) -> alt.Axis:
    """An upright axis of ``count`` head (or layer) numbers 0…count−1, numbered every k-th when the numbers would
    touch ("…9 1011" in a 180 px column; issue 31), the ``keep`` heads (the selected one) first. ``step_px``: the
    cells' width when it is fixed (a concatenation or facet keeps its steps); without it the chart is stretched to
    its column and the spacing is Vega's ``width`` / count. ``label``: a Vega expression for the text in place of
    the number; ``extra_chars``: how many characters it adds to the widest number, for the spacing."""
    widest = len(str(max(count - 1, 0))) + extra_chars
    pitch = widest * 0.62 * (16 if slide else font_px) + 6
    if step_px is None:
        stride = f"max(1, ceil({pitch:.1f} * {max(count, 1)} / max(width, 1)))"
    else:
        stride = str(max(1, math.ceil(pitch / max(step_px, 1))))
    expression = _thinned_label_expr(list(range(count)), stride, keep)
    if label is not None:
        expression = expression.replace("datum.label", f"({label})")
    axis.setdefault("labelFlush", False)
    return alt.Axis(labelAngle=0, labelOverlap=False, labelExpr=expression, **axis)


def may_thin(labels: Sequence[str], narrowest_px: float, slide: bool = False) -> bool:
    """Whether a token axis over ``labels`` may have to skip labels in a column ``narrowest_px`` wide."""
    pitch = _ROTATED_LABEL_PITCH_PX * (1.4 if slide else 1.0)
    return len(labels) * pitch > narrowest_px


def _picked_pair(selection, name: str, names: tuple[str, str]) -> tuple[int, int] | None:
    """The two integer fields ``names`` of the first point of Streamlit's ``event.selection[name]``, or None.

    Streamlit reports a point selection as a list of the selected points' fields
    (``{"head_pick": [{"layer": 2, "head": 7}]}``) and an empty one as ``{}`` or ``[]``; anything else —
    a missing key, non-integer values — is treated as no pick rather than an error.
    """
    try:
        points = selection.get(name) if hasattr(selection, "get") else None
        if not isinstance(points, (list, tuple)) or not points:
            return None
        point = points[0]
        first, second = point[names[0]], point[names[1]]
        if isinstance(first, bool) or isinstance(second, bool) or int(first) != first or int(second) != second:
            return None
        return int(first), int(second)
    except (KeyError, TypeError, ValueError, OverflowError):
        return None


def selected_head(selection) -> tuple[int, int] | None:
    """The (layer, head) picked in the entropy grid, from Streamlit's ``event.selection`` (a mapping), or None."""
    return _picked_pair(selection, HEAD_SELECTION, ("layer", "head"))


def selected_cell(selection) -> tuple[int, int] | None:
    """The (row, column) of the heatmap cell clicked — indices into the view's rows and columns, not token positions
    (:attr:`~inspector.analyses.heatmap.HeatmapView.query_positions` maps them) — from Streamlit's
    ``event.selection``, or None."""
    return _picked_pair(selection, CELL_SELECTION, ("query_index", "key_index"))
