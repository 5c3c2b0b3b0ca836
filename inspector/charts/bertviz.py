"""bertviz's head view and model view as self-contained HTML that works offline (issue 4).

bertviz (Vig 2019, "A Multiscale Visualization of Attention in the Transformer Model", ACL demos) draws
attention as lines between tokens: the *head view* shows one layer's heads over each other, the *model view*
one thumbnail per (layer, head). Its HTML loads require.js, d3 and jQuery from cdnjs, so on a machine without
internet, or behind a policy that blocks CDNs, the views are blank. This module still builds each view with
bertviz's own functions (``head_view`` / ``model_view`` with ``html_action="return"``), then rewrites the
page they return:

- The cdnjs ``<script src>`` and bertviz's ``require.config({paths: …cdnjs…})`` are removed. The vendored
  d3 and jQuery (``assets/static/vendor``, see ``VENDOR.md``) are inlined *before* require.js, so they set
  the globals ``d3`` and ``jQuery`` instead of calling an anonymous ``define()`` (which require.js rejects
  with "Mismatched anonymous define()"); two named ``define``\\ s then hand those globals to bertviz's
  ``requirejs(["jquery", "d3"], …)``, which resolves them without a request.
- Token strings are the user's text. bertviz writes its parameters into a ``<script>`` with ``json.dumps``,
  which leaves ``</script>`` inside a string as is, and that closes the script element. The parameters are
  re-serialised here with ``<``, ``>`` and ``&`` as ``\\u003c``, ``\\u003e``, ``\\u0026`` (and all non-ASCII
  as ``\\uXXXX``), so no token can end the script; bertviz's JavaScript then shows tokens with d3's
  ``.text()``, never as markup.
- A Content-Security-Policy in the page allows exactly these scripts (by SHA-256) and no fetch of any kind,
  so even a mistake in the above could neither run injected script nor reach the network.
- Weights are rounded to :data:`WEIGHT_DECIMALS` places, and inputs beyond :data:`HEAD_VIEW_MAX_TOKENS`,
  :data:`MODEL_VIEW_MAX_TOKENS`, :data:`MAX_LINES_DRAWN_AT_ONCE` or :data:`HEAD_VIEW_MAX_EMBEDDED_WEIGHTS` are
  refused: the page embeds layers · heads · n² numbers and draws one SVG line per number, so its size and
  drawing time grow with the square of the text.

The result is a complete document for an ``<iframe srcdoc>``: Streamlit's ``st.iframe(html, height=…)`` or
the older ``components.v1.html(html, height=…, scrolling=True)``. :func:`head_view_height` and
:func:`model_view_height` give the heights that show a whole view without clipping.

The limits keep a view drawing in a few seconds and its page under ~5 MB on a 2-CPU machine; sizes and
Chromium draw times at the limits are measured by ``python -m benchmarks.bertviz_views`` and recorded in
docs/BENCHMARKS.md ("bertviz views offline").
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html as html_lib
import importlib.metadata
import json
import math
import operator
import re
from collections.abc import Sequence
from typing import Literal

import numpy as np
import torch

from inspector.base.assets import ASSETS_DIR
from inspector.base.errors import InspectorError, InvalidRequestError
from inspector.base.i18n import DEFAULT_LANGUAGE, Notice, t
from inspector.base.tokens import readable_tokens
from inspector.core.capture import Capture

VENDOR_DIR = ASSETS_DIR / "static" / "vendor"
# Inlined in this order: d3 and jQuery must run before require.js defines `define` (see the module docstring).
VENDORED_SCRIPTS = ("d3-5.7.0.min.js", "jquery-3.7.1.min.js", "require-2.3.7.js")
BERTVIZ_VERSION = "1.4.1"

# bertviz draws a weight as a line's stroke-opacity, which the browser keeps as 8-bit alpha (steps of
# 1/255 ≈ 0.004): a rounding error of at most 0.0005 cannot change a pixel, and the data shrinks about
# fourfold (float32 values print with ~18 digits).
WEIGHT_DECIMALS = 3

# Limits. Drawing dominates: bertviz adds one SVG <line> per weight it shows — heads · n² for the head view's
# layer, layers · heads · n² at once for the model view — and every hover or head toggle touches all of them,
# so the cost grows with the line count; benchmarks.bertviz_views measures the draw time at these limits
# (about 3 s for 120k lines on 2 CPUs, docs/BENCHMARKS.md). At most 120k lines: 100 tokens of a 12-head model
# in the head view; 40 tokens of all 6 × 12 heads in the model view (fewer layers or heads allow up to 64). The
# head view also embeds every offered layer (≈ 5–6 bytes per weight): 900k weights keep its page near 5 MB.
# Token caps keep a page's height sensible (about 3,000 px) for models with few heads.
MAX_LINES_DRAWN_AT_ONCE = 120_000
HEAD_VIEW_MAX_TOKENS = 128
HEAD_VIEW_MAX_EMBEDDED_WEIGHTS = 900_000
MODEL_VIEW_MAX_TOKENS = 64

# Recommended cap for the iframe: taller views scroll inside it (components.html(..., scrolling=True)).
IFRAME_MAX_HEIGHT = 900

ViewMode = Literal["light", "dark"]

# bertviz 1.4.1's layout constants (head_view.js, model_view.js), used to predict each view's height.
_HEAD_BOX_HEIGHT = 22.5
_HEAD_TEXT_TOP = 30
_MODEL_THUMBNAIL_BOX_HEIGHT_12_HEADS = 7
_MODEL_THUMBNAIL_PADDING = 5
_MODEL_AXIS_SIZE = 15 + 5 + 13 + 5
_MODEL_DETAIL_BOX_HEIGHT = 18
_MODEL_DETAIL_CHROME = 2 * 15 + 25
# What surrounds bertviz's <svg> in the page built here: the body margins, the head view's layer menu and
# the gap under an inline <svg>; measured in Chromium, with a few pixels to spare for other fonts.
_HEAD_VIEW_CHROME_PX = 48
_MODEL_VIEW_CHROME_PX = 28

# Markers in bertviz 1.4.1's returned HTML; a different bertviz fails loudly here, not with a blank view.
_CDN_REQUIRE_TAG = '<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js"></script>'
_SCRIPT_OPEN = '\n<script type="text/javascript">\n'
_SCRIPT_CLOSE = "\n</script>\n"
_REQUIRE_CONFIG = re.compile(r"require\.config\(\{\s*paths:\s*\{[^{}]*\}\s*\}\);")
# bertviz fills its template with str.replace("PYTHON_PARAMS", json) — which also fills the comment after the
# marker, so the parameters appear twice on one line: `const params = X; // HACK: X is a template marker …`.
_PARAMS_START = "const params = "
_PARAMS_MIDDLE = "; // HACK: "
_PARAMS_END = " is a template marker that is replaced by actual params."
_ROOT_DIV = re.compile(r'<div id="(bertviz-[0-9a-f]{32})"')
# bertviz gives each view a random element id so several can share a notebook; each of ours has its own
# iframe, and a fixed id keeps the HTML identical for identical input (stable caching, no iframe reload).
_ROOT_DIV_ID = "bertviz"

# bertviz's own words, each found exactly once in its markup or script and replaced by the catalogue's sentence in
# the page's language (issue 44: "Layer:" stayed English on a Chinese page). The model view's detail heading is
# JavaScript that joins a layer and a head number; it is rebuilt from "bertviz.layer_head" around the same two values.
_HEAD_VIEW_LABEL = "Layer: <select"
_MODEL_VIEW_WORDS = {'.text("Layers")': "bertviz.layers", '.text("Heads")': "bertviz.heads"}
_MODEL_VIEW_DETAIL = """.text('Layer ' + config.layers[layerIndex] + ", Head " + config.heads[headIndex])"""

# Hands the globals set by the inlined d3 and jQuery to require.js under the names bertviz asks for.
_AMD_SHIM = ('define("d3", [], function () { return window.d3; });\n'
             'define("jquery", [], function () { return window.jQuery; });')

_PAGE_STYLE = "body { margin: 8px; background: #fff; }"

# bertviz draws at fixed widths (the model view's grid is 970 px), wider than an app column at a 1000 px window
# or even a 1400 px one (a 940 px frame). The page zooms itself out to its frame's width — once drawn, after each
# redraw (bertviz rebuilds its <svg> on a click) and on resize — so the last head's column is never cut off.
# CSS zoom keeps the hover and click targets where they are drawn.
_FIT_WIDTH_SCRIPT = """(function () {
  var pending = false;
  function fit() {
    pending = false;
    var root = document.getElementById("bertviz");
    if (!root) { return; }
    document.body.style.zoom = "";
    var needed = root.scrollWidth + 16;
    var zoom = Math.min(1, document.documentElement.clientWidth / needed);
    document.body.style.zoom = zoom < 0.999 ? String(zoom) : "";
  }
  function later() { if (!pending) { pending = true; requestAnimationFrame(fit); } }
  window.addEventListener("load", later);
  window.addEventListener("resize", later);
  new MutationObserver(later).observe(document.body, {childList: true, subtree: true});
})();"""


def head_view_html(capture: Capture, *, layers: Sequence[int] | None = None, layer: int | None = None,
                   head: int | None = None, lang: str = DEFAULT_LANGUAGE) -> str:
    """bertviz's head view of ``capture`` as one offline HTML document.

    layers: the layers offered in the view's layer menu (default: every layer whose weights the capture
    holds). layer: the one shown on load (default: the first offered) — the app passes the layer on screen, so
    the view opens where the page is. head: show only that head on load (the others stay a click away; default:
    every head). lang: the language of the view's own words (its layer menu's label). Raises
    :class:`InvalidRequestError` for a layer that does not exist
    or was not captured, or when the text is too long for the view (:data:`HEAD_VIEW_MAX_TOKENS`,
    :data:`MAX_LINES_DRAWN_AT_ONCE`, :data:`HEAD_VIEW_MAX_EMBEDDED_WEIGHTS`; :func:`head_view_max_layers`
    says how many layers fit).
    """
    chosen = _captured_layers(capture) if layers is None else _validate_layers(capture, layers)
    _check_weights(capture, chosen, view="head view")
    if layer is not None and layer not in chosen:
        raise InvalidRequestError(f"layer {layer!r} is not among the layers the head view offers ({chosen}) — "
                                  "include it in layers=[…]")
    if head is not None:
        _validate_heads(capture, [head])
    n_tokens, heads = len(capture.tokens), capture.num_heads
    if n_tokens > HEAD_VIEW_MAX_TOKENS:
        raise InvalidRequestError(
            f"the text has {n_tokens} tokens; the head view shows at most {HEAD_VIEW_MAX_TOKENS} — shorten the "
            "text, or use the per-head heatmap, which reads long texts",
            notice=Notice("inspect.error.head_view_tokens", tokens=n_tokens, limit=HEAD_VIEW_MAX_TOKENS))
    lines = heads * n_tokens ** 2
    if lines > MAX_LINES_DRAWN_AT_ONCE:
        raise InvalidRequestError(
            f"the head view would draw {heads} heads × {n_tokens}² tokens = {lines:,} lines per layer; it stays "
            f"responsive up to {MAX_LINES_DRAWN_AT_ONCE:,} — shorten the text to "
            f"{math.isqrt(MAX_LINES_DRAWN_AT_ONCE // heads)} tokens, or use the per-head heatmap",
            notice=Notice("inspect.error.view_too_large"))
    embedded = len(chosen) * lines
    if embedded > HEAD_VIEW_MAX_EMBEDDED_WEIGHTS:
        fits = head_view_max_layers(capture)
        raise InvalidRequestError(
            f"the head view would embed {len(chosen)} layers × {heads} heads × {n_tokens}² tokens = {embedded:,} "
            f"weights; it holds at most {HEAD_VIEW_MAX_EMBEDDED_WEIGHTS:,} to keep the page under 5 MB — offer at "
            f"most {fits} layer{'s' if fits != 1 else ''} for this text (layers=[…]), or shorten it",
            notice=Notice("inspect.error.view_too_large"))
    import bertviz  # deferred: it imports IPython, which only these two functions need

    shown = list(readable_tokens(capture.tokens))  # Ġ and Ċ as ␣ and ↵
    view = bertviz.head_view(_bertviz_attention(capture, chosen), shown, include_layers=chosen,
                             layer=None if layer is None else int(layer),
                             heads=None if head is None else [int(head)], html_action="return")
    markup = _replace_once(view.data, _HEAD_VIEW_LABEL, f"{html_lib.escape(t('bertviz.layer', lang))} <select")
    return _offline_document(markup, title="bertviz head view", lang=lang)


def model_view_html(capture: Capture, *, layers: Sequence[int] | None = None, heads: Sequence[int] | None = None,
                    display_mode: ViewMode = "light", lang: str = DEFAULT_LANGUAGE) -> str:
    """bertviz's model view of ``capture`` (one thumbnail per layer and head) as one offline HTML document.

    layers, heads: which rows and columns to draw (default: all). display_mode: ``"light"`` (white
    thumbnails, matching Streamlit's default theme) or ``"dark"`` (bertviz's default). lang: the language of the
    view's own words (its axis titles and the detail heading). Raises
    :class:`InvalidRequestError` for a layer or head that does not exist, a layer whose weights were not
    captured, or a text too long for the view (:data:`MODEL_VIEW_MAX_TOKENS`, :data:`MAX_LINES_DRAWN_AT_ONCE`).
    """
    chosen_layers = list(range(capture.num_layers)) if layers is None else _validate_layers(capture, layers)
    chosen_heads = list(range(capture.num_heads)) if heads is None else _validate_heads(capture, heads)
    if display_mode not in ("light", "dark"):
        raise InvalidRequestError(f"display_mode must be 'light' or 'dark'; got {display_mode!r}")
    _check_weights(capture, chosen_layers, view="model view")
    n_tokens = len(capture.tokens)
    if n_tokens > MODEL_VIEW_MAX_TOKENS:
        raise InvalidRequestError(
            f"the text has {n_tokens} tokens; the model view shows at most {MODEL_VIEW_MAX_TOKENS} (each thumbnail "
            f"grows with the text) — shorten the text, or use the head view, which shows one layer at a time",
            notice=Notice("inspect.error.model_view_tokens", tokens=n_tokens, limit=MODEL_VIEW_MAX_TOKENS))
    lines = len(chosen_layers) * len(chosen_heads) * n_tokens ** 2
    if lines > MAX_LINES_DRAWN_AT_ONCE:
        layers_fit = MAX_LINES_DRAWN_AT_ONCE // (len(chosen_heads) * n_tokens ** 2)
        heads_fit = MAX_LINES_DRAWN_AT_ONCE // n_tokens ** 2
        advice = (f"choose at most {layers_fit} layer{'s' if layers_fit != 1 else ''} with these heads"
                  if layers_fit >= 1 else f"choose one layer and at most {heads_fit} heads")
        raise InvalidRequestError(
            f"the model view would draw {len(chosen_layers)} layers × {len(chosen_heads)} heads × {n_tokens}² "
            f"tokens = {lines:,} lines at once; it stays responsive up to {MAX_LINES_DRAWN_AT_ONCE:,} — {advice}, "
            "or shorten the text", notice=Notice("inspect.error.view_too_large"))
    import bertviz  # deferred: it imports IPython, which only these two functions need

    view = bertviz.model_view(_bertviz_attention(capture, chosen_layers), list(readable_tokens(capture.tokens)),
                              include_layers=chosen_layers, include_heads=chosen_heads, display_mode=display_mode,
                              html_action="return")
    page = view.data
    for english, key in _MODEL_VIEW_WORDS.items():
        page = _replace_once(page, english, f".text({_script_safe_json(t(key, lang))})")
    heading = t("bertviz.layer_head", lang, layer="{layer}", head="{head}")  # the template, its words translated
    before, middle_after = heading.split("{layer}")
    middle, after = middle_after.split("{head}")
    page = _replace_once(page, _MODEL_VIEW_DETAIL, f".text({_script_safe_json(before)} + config.layers[layerIndex] + "
                                                   f"{_script_safe_json(middle)} + config.heads[headIndex] + "
                                                   f"{_script_safe_json(after)})")
    return _offline_document(page, title="bertviz model view", lang=lang)


def _replace_once(page: str, old: str, new: str) -> str:
    """``page`` with its one ``old`` replaced by ``new``; a bertviz whose page lacks it fails loudly."""
    if page.count(old) != 1:
        raise _bertviz_template_error(f"{old!r} not found exactly once")
    return page.replace(old, new)


def head_view_max_layers(capture: Capture) -> int:
    """How many layers the head view can offer for this capture's text (0: not even one; see its limits)."""
    n_tokens = len(capture.tokens)
    lines = capture.num_heads * n_tokens ** 2
    if n_tokens > HEAD_VIEW_MAX_TOKENS or lines > MAX_LINES_DRAWN_AT_ONCE:
        return 0
    return min(capture.num_layers, HEAD_VIEW_MAX_EMBEDDED_WEIGHTS // lines)


def model_view_max_layers(capture: Capture) -> int:
    """How many layers (with every head) the model view can show for this capture's text (0: not even one)."""
    n_tokens = len(capture.tokens)
    if n_tokens > MODEL_VIEW_MAX_TOKENS:
        return 0
    return min(capture.num_layers, MAX_LINES_DRAWN_AT_ONCE // (capture.num_heads * n_tokens ** 2))


def layers_around(capture: Capture, layer: int, count: int) -> list[int]:
    """``count`` consecutive layers that include ``layer`` (clamped to the model), for a view that cannot
    show every layer of a long text: the layer on screen and its neighbours."""
    count = max(0, min(count, capture.num_layers))
    first = min(max(0, layer - count // 2), capture.num_layers - count)
    return list(range(first, first + count))


def head_view_height(capture: Capture) -> int:
    """Pixels the head view's page needs to show every token without scrolling (any layer choice)."""
    return math.ceil(len(capture.tokens) * _HEAD_BOX_HEIGHT + _HEAD_TEXT_TOP + _HEAD_VIEW_CHROME_PX)


def model_view_height(capture: Capture, *, layers: Sequence[int] | None = None) -> int:
    """Pixels the model view's page needs for its whole grid, and for the detail panel a click opens.

    Thumbnail rows scale with 12 / heads, as in bertviz: ``7 · 12 / heads`` pixels per token.
    """
    n_tokens = len(capture.tokens)
    n_layers = capture.num_layers if layers is None else len(set(layers))
    thumbnail = n_tokens * _MODEL_THUMBNAIL_BOX_HEIGHT_12_HEADS * 12 / capture.num_heads + 2 * _MODEL_THUMBNAIL_PADDING
    grid = n_layers * thumbnail + _MODEL_AXIS_SIZE
    detail = n_tokens * _MODEL_DETAIL_BOX_HEIGHT + _MODEL_DETAIL_CHROME
    return math.ceil(max(grid, detail) + _MODEL_VIEW_CHROME_PX)


def _captured_layers(capture: Capture) -> list[int]:
    if not capture.weights:
        raise InvalidRequestError("the capture holds no attention weights, so there is nothing to draw — "
                                  "capture again with weights='all' or the layers to show")
    return sorted(capture.weights)


def _indices(values: Sequence[int], what: str) -> list[int]:
    try:
        return sorted({operator.index(value) for value in values})
    except TypeError:
        raise InvalidRequestError(f"{what} must be whole numbers (indices from 0); got {list(values)!r}") from None


def _validate_indices(values: Sequence[int], what: str, count: int, capture: Capture, per: str = "") -> list[int]:
    """``values`` as sorted unique indices, each in ``range(count)``; ``what`` is "layer" or "head"."""
    chosen = _indices(values, f"{what}s")
    if not chosen:
        raise InvalidRequestError(f"no {what}s were chosen; pick at least one {what} to show")
    bad = [index for index in chosen if not 0 <= index < count]
    if bad:
        raise InvalidRequestError(f"{what} {bad[0]} does not exist: {capture.model_name} has {count} "
                                  f"{what}s{per} (0–{count - 1})")
    return chosen


def _validate_layers(capture: Capture, layers: Sequence[int]) -> list[int]:
    return _validate_indices(layers, "layer", capture.num_layers, capture)


def _validate_heads(capture: Capture, heads: Sequence[int]) -> list[int]:
    return _validate_indices(heads, "head", capture.num_heads, capture, per=" per layer")


def _check_weights(capture: Capture, layers: Sequence[int], *, view: str) -> None:
    missing = [layer for layer in layers if layer not in capture.weights]
    if missing:
        held = ", ".join(str(layer) for layer in sorted(capture.weights)) or "none"
        raise InvalidRequestError(
            f"the {view} needs the attention weights of layer{'s' if len(missing) > 1 else ''} "
            f"{', '.join(str(layer) for layer in missing)}, which this capture did not keep (it holds layers: "
            f"{held}) — capture again with weights='all' or including those layers, or show only held layers")


def _bertviz_attention(capture: Capture, layers: Sequence[int]) -> list[torch.Tensor]:
    """Per-layer (1, heads, q_len, q_len) tensors in bertviz's format, indexed by absolute layer.

    bertviz picks ``attention[layer]`` for each included layer and reads the head count from
    ``attention[0]``, so every index needs a tensor; layers not shown get a tiny placeholder. Rounding is
    done in float64 so each number prints as its short decimal (float32 would print 0.0299999993…).
    """
    placeholder = torch.zeros(1, capture.num_heads, 1, 1, dtype=torch.float64)
    attention = [placeholder] * capture.num_layers
    for layer in layers:
        # A non-finite weight has no opacity to draw (and JSON has no NaN): it is drawn as no line.
        weights = np.nan_to_num(capture.weights[layer].astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0)
        attention[layer] = torch.from_numpy(np.round(weights, WEIGHT_DECIMALS))[None]  # (1, heads, q_len, q_len)
    return attention


def _script_safe_json(value) -> str:
    """JSON that can sit inside a <script> element: nothing in it can close the element or open a comment."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@functools.cache
def _vendored_scripts() -> tuple[str, ...]:
    scripts = []
    for name in VENDORED_SCRIPTS:
        path = VENDOR_DIR / name
        if not path.is_file():
            raise InspectorError(f"{path} is missing, so the bertviz views cannot be drawn offline — restore it "
                                 "from git or run assets/static/vendor/fetch.sh",
                                 notice=Notice("inspect.error.bertviz_missing"))
        source = path.read_text(encoding="utf-8")
        # "</script" would end the inline element early and "<!--" can change how it is parsed; none of the
        # vendored files contains either.
        if "</script" in source.lower() or "<!--" in source:
            raise InspectorError(f"{name} contains '</script' or '<!--' and cannot be inlined inside a <script> — "
                                 "vendor a build without them", notice=Notice("inspect.error.bertviz_missing"))
        scripts.append(source)
    return tuple(scripts)


def _bertviz_template_error(what: str) -> InspectorError:
    try:
        found = importlib.metadata.version("bertviz")
    except importlib.metadata.PackageNotFoundError:
        found = "no installed version"
    return InspectorError(f"bertviz's HTML changed ({what}); the offline views are written for bertviz "
                          f"{BERTVIZ_VERSION} and found {found} — install bertviz=={BERTVIZ_VERSION}")


def _offline_document(bertviz_html: str, *, title: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """Rewrite the page bertviz returned into one offline, script-safe document (see the module docstring)."""
    if not bertviz_html.startswith(_CDN_REQUIRE_TAG):
        raise _bertviz_template_error("no cdnjs require.js tag first")
    markup, separator, script = bertviz_html[len(_CDN_REQUIRE_TAG):].partition(_SCRIPT_OPEN)
    if not separator or not script.endswith(_SCRIPT_CLOSE):
        raise _bertviz_template_error("no single script after the markup")
    script = script[:-len(_SCRIPT_CLOSE)]
    script, configs_removed = _REQUIRE_CONFIG.subn("", script, count=1)
    root = _ROOT_DIV.search(markup)
    if configs_removed != 1 or root is None:
        raise _bertviz_template_error("no require.config paths or no root element")
    markup = markup.replace(root.group(1), _ROOT_DIV_ID, 1)

    # json.dumps escapes every control character, so the two copies of the parameters fill one line. The
    # copy in the comment goes too: it carries the tokens unescaped (and doubles the page).
    start = script.find(_PARAMS_START)
    line_end = script.find("\n", start)
    line = script[start:line_end] if 0 <= start < line_end else ""
    both = line[len(_PARAMS_START):-len(_PARAMS_END)] if line.endswith(_PARAMS_END) else ""
    half = (len(both) - len(_PARAMS_MIDDLE)) // 2
    if not line.startswith(_PARAMS_START) or both[half:half + len(_PARAMS_MIDDLE)] != _PARAMS_MIDDLE \
            or both[:half] != both[half + len(_PARAMS_MIDDLE):]:
        raise _bertviz_template_error("no params line")
    params = json.loads(both[:half])
    params["root_div_id"] = _ROOT_DIV_ID
    script = f"{script[:start]}{_PARAMS_START}{_script_safe_json(params)};{script[line_end:]}"

    scripts = (*_vendored_scripts(), _AMD_SHIM, script, _FIT_WIDTH_SCRIPT)
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode('utf-8')).digest()).decode()}'"
                      for s in scripts)
    # default-src 'none' refuses every fetch (scripts, images, fonts, XHR); only these exact scripts may run,
    # which also disables inline event handlers such as onerror=. bertviz's markup needs inline style="".
    # Keywords and base64 only: nothing in the policy needs escaping inside a double-quoted attribute.
    policy = (f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; base-uri 'none'; "
              "form-action 'none'")
    vendored = "\n".join(f"<script>{source}</script>" for source in scripts[:-3])
    html_lang = "zh-Hans" if lang == "zh" else "en"
    return (f'<!DOCTYPE html>\n<html lang="{html_lang}">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
            f"<title>{html_lib.escape(title)}</title>\n<style>{_PAGE_STYLE}</style>\n</head>\n<body>\n"
            f"{vendored}\n<script>{_AMD_SHIM}</script>\n{markup.strip()}\n<script>{script}</script>\n"
            f"<script>{_FIT_WIDTH_SCRIPT}</script>\n</body>\n</html>\n")
