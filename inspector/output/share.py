"""Shareable view state: everything needed to reproduce a view, as URL query parameters.

A link is a promise to the person who opens it and a door into the server for anyone who crafts one, so
:func:`decode_view` reads every parameter defensively: it **never raises**; a missing, malformed or hostile
value is replaced by the default and reported as a warning that names the parameter, the bad value (shortened,
``repr``'d) and what was used instead. Each warning is a :class:`~inspector.base.i18n.Notice`: its English text, and
its catalogue key and values, so a page shows it in its own language (:func:`~inspector.base.i18n.notice_text`). In
particular:

- numbers must be short decimal integers within sane bounds (``fit`` then clamps them to the loaded model);
- booleans are ``0``/``1``/``true``/``false``; backends and pages come from fixed lists;
- the model is ``default``, a bundled decoder (``bundled:NAME``), a shipped model (``shipped:NAME``, a folder under
  ``assets/models``) or a hub id of the form ``name`` or ``org/name`` (:func:`inspector.base.model_ids.is_hub_id`, the
  loader's rule) — never a local path: a share link must not point the server at its own
  filesystem (``..``, leading ``/`` ``.`` ``~``, backslashes, control characters and names that exist as folders
  on the server are all refused); a hosted instance also passes the models it
  offers (:mod:`inspector.serving.hosting`), and any other model falls back to the bundled one;
- text longer than :data:`MAX_TEXT_CHARS` is refused, and compressed text (``tz``) is inflated with a hard
  output cap, so a zip bomb costs at most a few hundred kilobytes of work.

Format (version :data:`SHARE_VERSION`): ``v=1``, then only the fields that differ from the defaults:
``model``, ``text`` (plain, while URL-encoded it has at most :data:`PLAIN_TEXT_MAX_CHARS` characters) or ``tz``
(zlib-compressed, URL-safe base64, for longer texts when that is shorter; links of either kind keep opening),
``page``, ``layer``, ``head``, ``backend``, and the flags ``hide_special``, ``drop_sink``, ``words``, ``slide`` as
``1``, and ``lang`` (the interface language, one of :data:`inspector.base.i18n.LANGUAGES`, only when it is not
English). Unknown parameters are ignored (Streamlit
and later versions add their own). A link longer than :data:`MAX_LINK_CHARS` is not offered (:func:`link_fits`).
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
import zlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from urllib.parse import quote_plus, urlencode, urlsplit, urlunsplit

from inspector.base.errors import InspectorError
from inspector.base.examples import DEFAULT_TEXT
from inspector.base.i18n import DEFAULT_LANGUAGE, LANGUAGES, Notice
from inspector.base.limits import MAX_TEXT_CHARS
from inspector.base.model_ids import DEFAULT_MODEL, claimed_kind, parsed_spec
from inspector.core.bundled import BUNDLED, bundled_choices
from inspector.core.loading import shipped_model_path
from inspector.output.pages import page_names

SHARE_VERSION = 1
PAGES: tuple[str, ...] = page_names()  # the page registry's (inspector.output.pages), in menu order
BACKENDS: tuple[str, ...] = ("auto", "torch", "triton")
# A text whose URL-encoded form has up to this many characters travels as readable ``text=``; a longer one as
# whichever is shorter, ``text=`` or the compressed ``tz=`` (non-Latin text, 9 characters a letter once encoded,
# usually compresses to a fraction).
PLAIN_TEXT_MAX_CHARS = 1_500
# The longest link the app offers. Past ~8 KB some proxies and browsers refuse a URL, and Tornado (Streamlit's
# server) answers a request line past its header limit with a bare HTTP 400 page instead of the app; a view
# whose link would be longer gets the app's own message instead (issue 18).
MAX_LINK_CHARS = 8_000
# No real model has this many layers or heads; ViewState.fit clamps to the loaded model afterwards.
MAX_INDEX = 1_023
# UTF-8 needs at most 4 bytes a character; the inflater stops there. Base64 of deflated text of that size
# is far shorter than this, so a longer ``tz`` is refused before decoding.
_MAX_TEXT_BYTES = 4 * MAX_TEXT_CHARS
_MAX_TZ_CHARS = 2 * _MAX_TEXT_BYTES
_SHOWN_VALUE_CHARS = 40
_TRUE, _FALSE = ("1", "true"), ("0", "false")
# The view options carried by a link, by ViewState field (the app's option widgets use the same keys).
FLAGS = ("hide_special", "drop_sink", "words", "slide")
_INDEX = re.compile(r"[0-9]{1,4}")
_INDEX_WARNINGS = {"layer": "share.bad_layer", "head": "share.bad_head"}  # the catalogue key, by parameter


@dataclass(frozen=True)
class ViewState:
    """What a share link reproduces. layer/head: indices into the loaded model (see :meth:`fit`)."""

    model: str = DEFAULT_MODEL
    text: str = DEFAULT_TEXT
    page: str = "inspect"
    layer: int = 0
    head: int = 0
    backend: str = "auto"
    hide_special: bool = False
    drop_sink: bool = False
    words: bool = False
    slide: bool = False
    lang: str = DEFAULT_LANGUAGE

    def __post_init__(self) -> None:
        for name in ("model", "text", "page", "backend", "lang"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"ViewState.{name} must be a string; got {getattr(self, name)!r}")
        for name in ("layer", "head"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"ViewState.{name} must be a non-negative int; got {value!r}")
        for name in FLAGS:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"ViewState.{name} must be a bool; got {getattr(self, name)!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"ViewState.backend must be one of {BACKENDS}; got {self.backend!r}")
        if self.lang not in LANGUAGES:
            raise ValueError(f"ViewState.lang must be one of {LANGUAGES}; got {self.lang!r}")

    def fit(self, num_layers: int, num_heads: int) -> tuple[ViewState, tuple[Notice, ...]]:
        """This state with layer/head clamped to a model of ``num_layers`` × ``num_heads``, and a warning for
        each one that had to change (a link made on a bigger model)."""
        warnings = []
        layer, head = self.layer, self.head
        if layer >= num_layers:
            layer = num_layers - 1
            warnings.append(Notice("share.layer_clamped", asked=self.layer, layers=num_layers, last=num_layers - 1,
                                   layer=layer))
        if head >= num_heads:
            head = num_heads - 1
            warnings.append(Notice("share.head_clamped", asked=self.head, heads=num_heads, last=num_heads - 1,
                                   head=head))
        return replace(self, layer=max(layer, 0), head=max(head, 0)), tuple(warnings)


_DEFAULTS = ViewState()


def _shown(value: object) -> str:
    """A bad value as a warning shows it: repr'd (control characters visible), at most ~40 characters."""
    if not isinstance(value, str):
        return repr(value)[:_SHOWN_VALUE_CHARS]
    if len(value) > _SHOWN_VALUE_CHARS:
        return repr(value[:_SHOWN_VALUE_CHARS]) + f"… ({len(value):,} characters)"
    return repr(value)


def compress_text(text: str) -> str:
    """``text`` as zlib-compressed, URL-safe base64 without padding (the ``tz`` parameter)."""
    return base64.urlsafe_b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii").rstrip("=")


def decompress_text(value: str) -> str | None:
    """The text inside a ``tz`` value, or None if it is not valid, inflates past the cap, or is not UTF-8."""
    if len(value) > _MAX_TZ_CHARS or not re.fullmatch(r"[A-Za-z0-9_-]*", value):
        return None
    try:
        packed = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        inflater = zlib.decompressobj()
        # max_length caps the output: a bomb stops here instead of filling memory.
        data = inflater.decompress(packed, _MAX_TEXT_BYTES + 1)
        if len(data) > _MAX_TEXT_BYTES or inflater.unconsumed_tail or not inflater.eof or inflater.unused_data:
            return None
        return data.decode("utf-8")
    except (binascii.Error, zlib.error, UnicodeDecodeError, ValueError):
        return None


def _last(value: object) -> object:
    """Query parameters may repeat (``?layer=1&layer=2``); like most servers, the last one wins."""
    if isinstance(value, (list, tuple)):
        return value[-1] if value else None
    return value


def _text_reader(params: Mapping[str, str | Sequence[str]], warnings: list[Notice]) -> Callable[[str], str | None]:
    """``get(key)``: a link parameter's last value as text, None when absent — or, with a warning in ``warnings``,
    when it is not text. Every decode_* below reads its parameters through one."""

    def get(key: str) -> str | None:
        value = _last(params.get(key))
        if value is not None and not isinstance(value, str):
            warnings.append(Notice("share.not_text", key=key, value=_shown(value)))
            return None
        return value

    return get


def _offered_model_problem(model: str, models: Collection[str] | None) -> Notice | None:
    """Why a page's second model (Compare's ``model_b``, the Lessons decoder) cannot come from a link: a hosted
    instance's allow-list answers first (one message whether a path exists or not), then :func:`_model_problem`."""
    if models is not None and model not in models:
        return Notice("share.model_b_not_offered")
    return _model_problem(model)


def _model_problem(model: str) -> Notice | None:
    """Why ``model`` cannot come from a link (a clause: "is not …"), or None if it can."""
    # The loader's own reading, one name rule per kind; a value with blanks around it is taken as written.
    spec, kind = parsed_spec(model), claimed_kind(model) if model == model.strip() else None
    if kind == "bundled":
        return None if spec is not None and spec.name in BUNDLED else \
            Notice("share.model_not_bundled", choices=", ".join(bundled_choices()))
    if kind == "shipped":
        try:
            shipped_model_path(spec.name if spec is not None else model)
        except InspectorError as err:
            return Notice("share.model_not_shipped", error=err.notice or str(err))
    if kind in ("default", "shipped"):
        return None
    if kind != "hub":  # name or org/name ("gpt2" has no org); never a path
        return Notice("share.model_not_hub_id")
    try:
        # Same text, different meaning: the loader prefers an existing folder to a hub id of that name.
        exists = Path(model).exists()
    except OSError:
        exists = True
    if exists:
        return Notice("share.model_local")
    return None


def decode_view(params: Mapping[str, str | Sequence[str]], *, pages: Sequence[str] = PAGES,
                models: Collection[str] | None = None) -> tuple[ViewState, tuple[Notice, ...]]:
    """Read a :class:`ViewState` from query parameters (e.g. ``dict(st.query_params)``) and say what was
    wrong with them. Never raises: every bad value falls back to its default with a warning.

    ``models``: the model specs this instance offers (a hosted instance's allow-list); None = any hub id."""
    warnings: list[Notice] = []
    if not isinstance(params, Mapping):
        return _DEFAULTS, (Notice("share.unreadable", value=_shown(params)),)
    values: dict[str, object] = {}

    get = _text_reader(params, warnings)

    version = get("v")
    if version is not None and version != str(SHARE_VERSION):
        newer = _INDEX.fullmatch(version) and int(version) > SHARE_VERSION
        warnings.append(Notice("share.version_newer" if newer else "share.version_unknown", value=_shown(version),
                               version=SHARE_VERSION))

    model = get("model")
    if model is not None:
        # On a hosted instance the allow-list answers first, so the reply never tells whether a path exists on
        # the server (a file and a missing path once got different warnings; issue 33).
        if models is not None and model not in models:
            problem = Notice("share.model_not_offered", models=", ".join(sorted(models)))
        else:
            problem = _model_problem(model)
        if problem:
            warnings.append(Notice("share.model", value=_shown(model), problem=problem))
        else:
            values["model"] = model

    text, packed = get("text"), get("tz")
    if packed is not None:
        unpacked = decompress_text(packed)
        if unpacked is None:
            warnings.append(Notice("share.bad_tz", value=_shown(packed), limit=f"{MAX_TEXT_CHARS:,}"))
        elif text is not None:
            warnings.append(Notice("share.text_and_tz"))
        text = unpacked
    if text is not None:
        if len(text) > MAX_TEXT_CHARS:
            warnings.append(Notice("share.text_too_long", length=f"{len(text):,}", limit=f"{MAX_TEXT_CHARS:,}"))
        elif not text.strip():
            warnings.append(Notice("share.text_empty"))
        else:
            values["text"] = text

    page = get("page")
    if page is not None:
        if page in pages:
            values["page"] = page
        else:
            fallback = pages[0] if pages else _DEFAULTS.page
            values["page"] = fallback
            warnings.append(Notice("share.bad_page", value=_shown(page), fallback=repr(fallback)))

    for key in ("layer", "head"):
        value = get(key)
        if value is None:
            continue
        if _INDEX.fullmatch(value) and int(value) <= MAX_INDEX:
            values[key] = int(value)
        else:
            warnings.append(Notice(_INDEX_WARNINGS[key], value=_shown(value), largest=MAX_INDEX,
                                   default=getattr(_DEFAULTS, key)))

    for key, allowed in (("backend", BACKENDS), ("lang", LANGUAGES)):
        value = get(key)
        if value is None:
            continue
        if value in allowed:
            values[key] = value
        else:
            warnings.append(Notice("share.not_one_of", key=key, value=_shown(value), allowed=", ".join(allowed),
                                   default=repr(getattr(_DEFAULTS, key))))

    for key in FLAGS:
        value = get(key)
        if value is None:
            continue
        if value.lower() in _TRUE + _FALSE:
            values[key] = value.lower() in _TRUE
        else:
            warnings.append(Notice("share.bad_flag", key=key, value=_shown(value),
                                   default=Notice("share.on" if getattr(_DEFAULTS, key) else "share.off")))

    return replace(_DEFAULTS, **values), tuple(warnings)


def encode_view(state: ViewState) -> dict[str, str]:
    """Query parameters for ``state``: ``v`` always, other fields only where they differ from the default."""
    params = {"v": str(SHARE_VERSION)}
    for f in fields(ViewState):
        value = getattr(state, f.name)
        if value == getattr(_DEFAULTS, f.name):
            continue
        if f.name == "text":
            plain = len(quote_plus(value))
            packed = compress_text(value) if plain > PLAIN_TEXT_MAX_CHARS else None
            if packed is None or plain <= len(packed):
                params["text"] = value
            else:
                params["tz"] = packed
        elif isinstance(value, bool):
            params[f.name] = "1" if value else "0"
        else:
            params[f.name] = str(value)
    return params


def share_url(base_url: str, state: ViewState, extra: Mapping[str, str] | None = None) -> str:
    """``base_url`` (any query or fragment it has is dropped) with ``state`` encoded as its query, followed by
    ``extra`` (a page's own parameters, e.g. :func:`encode_lessons`)."""
    scheme, netloc, path, _, _ = urlsplit(base_url)
    return urlunsplit((scheme, netloc, path, urlencode({**encode_view(state), **(extra or {})}), ""))


def link_fits(url: str) -> bool:
    """Whether ``url`` is short enough to be opened everywhere (:data:`MAX_LINK_CHARS`)."""
    return len(url) <= MAX_LINK_CHARS


def without_text(params: Mapping[str, str]) -> dict[str, str]:
    """``params`` without the text (``text`` or ``tz``): what the address bar can hold when the link is too long."""
    return {key: value for key, value in params.items() if key not in ("text", "tz")}


def escape_markdown(text: str) -> str:
    """``text`` with every ASCII punctuation character backslash-escaped, so a warning that quotes a link's
    value can be shown with ``st.warning`` (Markdown, with links, LaTeX and colour directives) as plain text."""
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", text)


# ------------------------------------------------------------------------------ compare page state (issue 20)
# The Compare page's own parameters, next to the ViewState ones (same ``v``; decode_view ignores these):
# ``text_b`` (plain, up to PLAIN_TEXT_MAX_CHARS) or ``tzb`` (compressed like ``tz``), ``model_b`` (a model spec read
# like ``model``; present = two models on one text), ``query`` (a token string or a position in text A) and
# ``keys`` (two tokens or positions, comma-separated). Like decode_view, decode_compare never raises.
COMPARE_DEFAULT_TEXT_B = "The animal didn't cross the street because it was too wide."
_MAX_TOKEN_CHARS = 100


@dataclass(frozen=True)
class CompareState:
    """What a Compare link reproduces beyond :class:`ViewState`. query/keys: None = the page's default."""

    text_b: str = COMPARE_DEFAULT_TEXT_B
    model_b: str | None = None
    query: str | None = None
    keys: tuple[str, str] | None = None


def _token_problem(value: str) -> Notice | None:
    """Why ``value`` cannot be a query or key token from a link (empty, long, control characters), or None."""
    if not value.strip() or len(value) > _MAX_TOKEN_CHARS or any(unicodedata.category(c) == "Cc" for c in value):
        return Notice("share.not_a_token", largest=_MAX_TOKEN_CHARS)
    return None


def decode_compare(params: Mapping[str, str | Sequence[str]], *,
                   models: Collection[str] | None = None) -> tuple[CompareState, tuple[Notice, ...]]:
    """Read a :class:`CompareState` from query parameters; every bad value falls back with a warning."""
    if not isinstance(params, Mapping):
        return CompareState(), ()
    warnings: list[Notice] = []
    values: dict[str, object] = {}

    get = _text_reader(params, warnings)

    text, packed = get("text_b"), get("tzb")
    if packed is not None:
        text = decompress_text(packed)
        if text is None:
            warnings.append(Notice("share.bad_tzb", value=_shown(packed)))
    if text is not None:
        if len(text) > MAX_TEXT_CHARS or not text.strip():
            warnings.append(Notice("share.bad_text_b", value=_shown(text), limit=f"{MAX_TEXT_CHARS:,}"))
        else:
            values["text_b"] = text
    model = get("model_b")
    if model is not None:
        problem = _offered_model_problem(model, models)
        if problem:
            warnings.append(Notice("share.model_b", value=_shown(model), problem=problem))
        else:
            values["model_b"] = model
    query = get("query")
    if query is not None:
        problem = _token_problem(query)
        if problem:
            warnings.append(Notice("share.bad_query", value=_shown(query), problem=problem))
        else:
            values["query"] = query
    keys = get("keys")
    if keys is not None:
        parts = keys.split(",")
        if len(parts) != 2 or any(_token_problem(part) for part in parts):
            warnings.append(Notice("share.bad_keys", value=_shown(keys)))
        else:
            values["keys"] = (parts[0], parts[1])
    return replace(CompareState(), **values), tuple(warnings)


def encode_compare(state: CompareState) -> dict[str, str]:
    """Query parameters for ``state`` (only what differs from the defaults), to add to :func:`encode_view`'s."""
    params: dict[str, str] = {}
    if state.text_b != COMPARE_DEFAULT_TEXT_B:
        if len(state.text_b) <= PLAIN_TEXT_MAX_CHARS:
            params["text_b"] = state.text_b
        else:
            params["tzb"] = compress_text(state.text_b)
    if state.model_b is not None:
        params["model_b"] = state.model_b
    if state.query is not None:
        params["query"] = state.query
    if state.keys is not None:
        params["keys"] = ",".join(state.keys)
    return params


def compare_share_url(base_url: str, state: ViewState, compare_state: CompareState, extra: dict | None = None) -> str:
    """:func:`share_url` with the Compare page's parameters added, then ``extra`` (its atlas block's)."""
    return share_url(base_url, state, {**encode_compare(compare_state), **(extra or {})})


# ------------------------------------------------------------------------------ generate page state (issue 28)
# The Generate page's own parameters, next to the ViewState ones (the prompt is the view's ``text``; decode_view
# ignores these): ``new`` (new tokens), ``temp`` (temperature), ``topk`` (0 = no cut), ``topp``, ``seed``, ``chat``
# (0/1) and ``step`` (the step on screen). Only values that differ from the defaults are written, so every link made
# before the page existed opens it with the defaults. Like decode_view, decode_generate never raises.
GENERATE_MAX_NEW_TOKENS = 256
GENERATE_MAX_TEMPERATURE = 2.0
GENERATE_MAX_TOP_K = 1_000
GENERATE_MAX_SEED = 2**31 - 1
_DECIMAL = re.compile(r"[0-9]{1,3}(\.[0-9]{1,4})?")


@dataclass(frozen=True)
class GenerateState:
    """What a Generate link reproduces beyond :class:`ViewState` (whose ``text`` is the prompt): the run — new
    tokens, temperature, top-k (0 = no cut), top-p, seed, chat template — and the step on screen."""

    new: int = 32
    temp: float = 0.0
    topk: int = 0
    topp: float = 1.0
    seed: int = 0
    chat: bool = False
    step: int = 0


_GENERATE_DEFAULTS = GenerateState()
# parameter → (lowest, highest, whole number)
_GENERATE_BOUNDS = {"new": (1, GENERATE_MAX_NEW_TOKENS, True), "temp": (0.0, GENERATE_MAX_TEMPERATURE, False),
                    "topk": (0, GENERATE_MAX_TOP_K, True), "topp": (0.01, 1.0, False),
                    "seed": (0, GENERATE_MAX_SEED, True), "step": (0, GENERATE_MAX_NEW_TOKENS - 1, True)}


def decode_generate(params: Mapping[str, str | Sequence[str]]) -> tuple[GenerateState, tuple[Notice, ...]]:
    """Read a :class:`GenerateState` from query parameters; every bad value falls back with a warning."""
    if not isinstance(params, Mapping):
        return _GENERATE_DEFAULTS, ()
    warnings: list[Notice] = []
    values: dict[str, object] = {}
    for key, (low, high, whole) in _GENERATE_BOUNDS.items():
        value = _last(params.get(key))
        if value is None:
            continue
        text = value if isinstance(value, str) else ""
        number: float | None = None
        if whole and re.fullmatch(r"[0-9]{1,10}", text):
            number = int(text)
        elif not whole and _DECIMAL.fullmatch(text):
            number = float(text)
        if number is None or not low <= number <= high:
            warnings.append(Notice("share.bad_generate", key=key, value=_shown(value), low=low, high=high,
                                   default=getattr(_GENERATE_DEFAULTS, key)))
        else:
            values[key] = number
    chat = _last(params.get("chat"))
    if chat is not None:
        if isinstance(chat, str) and chat.lower() in _TRUE + _FALSE:
            values["chat"] = chat.lower() in _TRUE
        else:
            warnings.append(Notice("share.bad_flag", key="chat", value=_shown(chat), default=Notice("share.off")))
    return replace(_GENERATE_DEFAULTS, **values), tuple(warnings)


def encode_generate(state: GenerateState) -> dict[str, str]:
    """Query parameters for ``state`` (only what differs from the defaults), to add to :func:`encode_view`'s."""
    params: dict[str, str] = {}
    for f in fields(GenerateState):
        value = getattr(state, f.name)
        if value == getattr(_GENERATE_DEFAULTS, f.name):
            continue
        if isinstance(value, bool):
            params[f.name] = "1" if value else "0"
        elif isinstance(value, float):
            params[f.name] = f"{value:.4f}".rstrip("0").rstrip(".")
        else:
            params[f.name] = str(value)
    return params


def generate_share_url(base_url: str, state: ViewState, generate_state: GenerateState) -> str:
    """:func:`share_url` with the Generate page's parameters added."""
    return share_url(base_url, state, encode_generate(generate_state))


# ------------------------------------------------------------------------------ lessons page state (issue 30)
# The Lessons page's decoder section picks its own decoder, layer and head (the sidebar's model stays for the other
# pages), so its link carries them next to the ViewState ones (the text is the view's; decode_view ignores these):
# ``decoder`` (a model spec read like ``model``: a hosted instance's allow-list first, never a path), ``dlayer`` and
# ``dhead`` (indices, clamped to the decoder by the page). Absent = the section's own default (the sidebar's model
# when it is a decoder, else none chosen). Like decode_view, decode_lessons never raises.
@dataclass(frozen=True)
class LessonsState:
    """What a Lessons link reproduces beyond :class:`ViewState`: the decoder section's model, layer and head
    (None = the section's default)."""

    decoder: str | None = None
    dlayer: int | None = None
    dhead: int | None = None

    def __post_init__(self) -> None:
        if self.decoder is not None and not isinstance(self.decoder, str):
            raise ValueError(f"LessonsState.decoder must be a string or None; got {self.decoder!r}")
        for name in ("dlayer", "dhead"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"LessonsState.{name} must be a non-negative int or None; got {value!r}")


def decode_lessons(params: Mapping[str, str | Sequence[str]], *,
                   models: Collection[str] | None = None) -> tuple[LessonsState, tuple[Notice, ...]]:
    """Read a :class:`LessonsState` from query parameters; every bad value falls back with a warning.

    ``models``: the model specs this instance offers (a hosted instance's allow-list); None = any hub id."""
    if not isinstance(params, Mapping):
        return LessonsState(), ()
    warnings: list[Notice] = []
    values: dict[str, object] = {}

    get = _text_reader(params, warnings)

    decoder = get("decoder")
    if decoder is not None:
        problem = _offered_model_problem(decoder, models)
        if problem:
            warnings.append(Notice("share.decoder", value=_shown(decoder), problem=problem))
        else:
            values["decoder"] = decoder
    for key in ("dlayer", "dhead"):
        value = get(key)
        if value is None:
            continue
        if _INDEX.fullmatch(value) and int(value) <= MAX_INDEX:
            values[key] = int(value)
        else:
            warnings.append(Notice("share.bad_decoder_index", key=key, value=_shown(value), largest=MAX_INDEX))
    return replace(LessonsState(), **values), tuple(warnings)


def encode_lessons(state: LessonsState) -> dict[str, str]:
    """Query parameters for ``state`` (only what is set), to add to :func:`encode_view`'s."""
    return {f.name: str(getattr(state, f.name)) for f in fields(LessonsState) if getattr(state, f.name) is not None}

# ------------------------------------------------------------------------------ lessons page state (issue 31)
# The Lessons page's own parameter (decode_view ignores it): ``lesson``, the section opened (1 … LESSON_COUNT: lessons
# 1–8, the decoder lessons D1–D9 as 9–17 on the link's model when it is a decoder, at its layer and head, then 18 head
# dimension and 19 position codes drawn beside the lessons they extend; tests/test_lecture.py holds this count to the
# registry's). Written only when set, so every older link opens the page as before. decode_lesson never raises.
LESSON_COUNT = 19


def decode_lesson(params: Mapping[str, str | Sequence[str]]) -> tuple[int | None, tuple[Notice, ...]]:
    """The lesson a link opens (None: the page's default, lesson 1), with a warning when the value is not one."""
    value = _last(params.get("lesson")) if isinstance(params, Mapping) else None
    if value is None:
        return None, ()
    if isinstance(value, str) and _INDEX.fullmatch(value) and 1 <= int(value) <= LESSON_COUNT:
        return int(value), ()
    return None, (Notice("share.bad_lesson", value=_shown(value), largest=LESSON_COUNT),)


def encode_lesson(lesson: int | None) -> dict[str, str]:
    """The ``lesson`` parameter (nothing for None), to add to :func:`encode_view`'s."""
    return {} if lesson is None else {"lesson": str(int(lesson))}
