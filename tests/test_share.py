"""inspector/output/share.py: links round-trip every view, and every malformed or hostile parameter falls back to
the default with a warning — never an exception."""

from __future__ import annotations

import base64
import re
import zlib
from urllib.parse import parse_qs, quote_plus, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.base.examples import DEFAULT_TEXT
from inspector.base.i18n import LANGUAGES, Notice
from inspector.base.limits import MAX_TEXT_CHARS
from inspector.core.loading import DEFAULT_MODEL
from inspector.output.share import (
    BACKENDS,
    MAX_LINK_CHARS,
    PAGES,
    PLAIN_TEXT_MAX_CHARS,
    SHARE_VERSION,
    ViewState,
    compress_text,
    decode_view,
    decompress_text,
    encode_view,
    escape_markdown,
    link_fits,
    share_url,
    without_text,
)

TRICKY_TEXTS = [
    "The animal didn't cross the street because it was too tired.",
    "<script>alert('x')</script> & \"quotes\" + plus = equals ? question # hash % percent",
    "مرحبا بالعالم — שלום עולם",  # right to left
    "zero\u200bwidth\u200djoiner\ufeffbom \u202eoverride",
    "emoji 👩‍👩‍👧 🏳️‍🌈 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "line one\nline two\r\n\ttabbed",
    "猫が座った。" * 400,  # 2,400 characters: compressed
    "x" * MAX_TEXT_CHARS,
]


def roundtrip(state: ViewState, pages=PAGES) -> ViewState:
    url = share_url("https://inspector.example/app?old=1#frag", state)
    params = {k: v[-1] for k, v in parse_qs(urlsplit(url).query, keep_blank_values=True).items()}
    decoded, warnings = decode_view(params, pages=pages)
    assert warnings == ()
    return decoded


@pytest.mark.parametrize("text", TRICKY_TEXTS)
def test_texts_round_trip(text):
    state = ViewState(text=text)
    assert roundtrip(state) == state
    params = encode_view(state)
    if text == DEFAULT_TEXT:
        assert "text" not in params and "tz" not in params
    elif len(quote_plus(text)) <= PLAIN_TEXT_MAX_CHARS:
        assert params["text"] == text and "tz" not in params
    else:  # whichever is shorter
        packed = compress_text(text)
        if len(packed) < len(quote_plus(text)):
            assert "text" not in params and decompress_text(params["tz"]) == text
        else:
            assert params["text"] == text and "tz" not in params


def test_non_latin_text_is_compressed_when_that_is_shorter():
    """Issue 18: 1,000 Japanese characters were sent plain — 9,000 characters of %XX once URL-encoded."""
    text = "猫が座った。注意は検索のようなものだ。" * 50
    url = share_url("https://inspector.example/", ViewState(text=text))
    assert "tz=" in url and len(url) < len(quote_plus(text)) / 4
    assert "text=" in share_url("https://inspector.example/", ViewState(text="a short English text"))


def test_links_made_before_issue_18_still_open():
    """Old-format links (v=1, a plain text= of any length, or tz=) read exactly as they did. The tz link was made
    by the encoder before issue 18 (commit d9cdc7b)."""
    long_text = "The animal did not cross the street because it was too tired. " * 30
    old_links = {
        "?v=1&text=" + quote_plus("猫が座った。" * 200) + "&layer=2&head=3&words=1": "猫が座った。" * 200,
        "?v=1&tz=eNrty9EJgDAMBcBV3gRO0wVi-8CANpCkuL7dw3wf1y5Cpj5yY-jAtER3i0BuiHQycbLLCkITr2wxQ6pzHGi1a9euXbv2b_cHQJyZoQ"
        "&page=heads": long_text,
    }
    for link, text in old_links.items():
        params = {k: v[-1] for k, v in parse_qs(urlsplit(link).query, keep_blank_values=True).items()}
        state, warnings = decode_view(params)
        assert warnings == () and state.text == text


def test_link_fits_is_the_app_cap():
    assert link_fits("x" * MAX_LINK_CHARS) and not link_fits("x" * (MAX_LINK_CHARS + 1))
    params = encode_view(ViewState(text="some text", layer=2))
    assert without_text(params) == {"v": "1", "layer": "2"}


@settings(max_examples=150, deadline=None)
@given(text=st.text(min_size=1, max_size=3000).filter(str.strip), layer=st.integers(0, 1023),
       head=st.integers(0, 1023), backend=st.sampled_from(BACKENDS), flags=st.lists(st.booleans(), min_size=4,
                                                                                    max_size=4),
       model=st.sampled_from([DEFAULT_MODEL, "openai-community/gpt2", "sentence-transformers/all-MiniLM-L6-v2"]),
       lang=st.sampled_from(LANGUAGES))
def test_every_state_round_trips(text, layer, head, backend, flags, model, lang):
    state = ViewState(model=model, text=text, layer=layer, head=head, backend=backend, hide_special=flags[0],
                      drop_sink=flags[1], words=flags[2], slide=flags[3], lang=lang)
    assert roundtrip(state) == state


def test_defaults_make_a_short_link():
    assert encode_view(ViewState()) == {"v": str(SHARE_VERSION)}
    assert share_url("http://localhost:8501/?layer=3", ViewState()) == "http://localhost:8501/?v=1"
    assert encode_view(ViewState(layer=3, words=True)) == {"v": "1", "layer": "3", "words": "1"}
    assert decode_view({}) == (ViewState(), ())
    assert ViewState().text == DEFAULT_TEXT


def test_language_travels_only_when_not_english():
    assert "lang" not in encode_view(ViewState(lang="en"))
    assert encode_view(ViewState(lang="zh")) == {"v": "1", "lang": "zh"}
    assert roundtrip(ViewState(lang="zh", page="lessons")) == ViewState(lang="zh", page="lessons")


def test_other_pages_and_versions():
    assert roundtrip(ViewState(page="heads"), pages=("inspect", "heads")).page == "heads"
    assert decode_view({"page": "heads"}) == (ViewState(page="heads"), ())  # the Heads page is a page of the app
    state, warnings = decode_view({"page": "no-such-page"})
    assert state.page == "inspect" and "page='no-such-page'" in warnings[0]
    state, warnings = decode_view({"v": "2", "layer": "3"})
    assert state.layer == 3 and "newer version" in warnings[0]
    state, warnings = decode_view({"v": "banana"})
    assert state == ViewState() and "unknown link version" in warnings[0]


MALFORMED = [
    ({"layer": "abc"}, "layer='abc'"), ({"layer": "-1"}, "layer='-1'"), ({"layer": "1.5"}, "layer='1.5'"),
    ({"layer": "9" * 5000}, "(5,000 characters)"), ({"head": "1024"}, "head='1024'"), ({"head": ""}, "head=''"),
    ({"layer": "٣"}, "layer="), ({"head": " 1"}, "head=' 1'"), ({"layer": "0x10"}, "layer='0x10'"),
    ({"words": "yes"}, "words='yes'"), ({"slide": "2"}, "slide='2'"), ({"drop_sink": ""}, "drop_sink=''"),
    ({"backend": "cuda-magic"}, "backend='cuda-magic'"), ({"backend": "TORCH"}, "backend='TORCH'"),
    ({"page": "../admin"}, "page='../admin'"),
    ({"lang": "fr"}, "lang='fr'"), ({"lang": "ZH"}, "lang='ZH'"), ({"lang": "<b>en</b>"}, "lang='<b>en</b>'"),
    ({"text": "x" * (MAX_TEXT_CHARS + 1)}, "20,001 characters"), ({"text": "   \n "}, "text is empty"),
    ({"model": "../../etc"}, "model='../../etc'"), ({"model": "/etc/passwd"}, "model='/etc/passwd'"),
    ({"model": "~/models/x"}, "model='~/models/x'"), ({"model": "org/../../x"}, "model="),
    ({"model": "C:\\models\\x"}, "model="), ({"model": "org/name\x00"}, "model='org/name\\x00'"),
    ({"model": "org/name\n"}, "model="), ({"model": "a/b/c"}, "model="),
    ({"model": "org/name."}, "model="), ({"model": ".hidden/x"}, "model="), ({"model": ""}, "model=''"),
    ({"model": "x" * 300 + "/y"}, "characters)"), ({"model": "org/naïve"}, "model="),
    ({"tz": "not base64!"}, "tz="), ({"tz": "AAAA"}, "tz="), ({"tz": compress_text("ok")[:-3]}, "tz="),
    ({"tz": base64.urlsafe_b64encode(b"\xff\xfe").decode()}, "tz="),
    ({"tz": base64.urlsafe_b64encode(zlib.compress(b"\xff\xfe invalid utf-8")).decode()}, "tz="),
    ({"tz": compress_text("ok") + "AAAA"}, "tz="),
    ({"layer": ["1", 2]}, "layer=2"), ({"layer": 3}, "layer=3 is not text"),
]


@pytest.mark.parametrize("params,shown", MALFORMED)
def test_every_malformed_value_warns_and_falls_back(params, shown):
    state, warnings = decode_view(params)
    key = next(iter(params))
    field = {"tz": "text"}.get(key, key)
    assert getattr(state, field) == getattr(ViewState(), field)
    assert len(warnings) == 1 and shown in warnings[0], warnings
    assert "instead" in warnings[0] or "default" in warnings[0]
    assert "\x00" not in warnings[0] and "\n" not in warnings[0] and len(warnings[0]) < 400


def test_a_hub_id_that_is_also_a_local_folder_is_refused(tmp_path, monkeypatch):
    """The loader prefers an existing folder to a hub id of the same name, so such ids cannot come by link."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org" / "name").mkdir(parents=True)
    (tmp_path / "org" / "file.txt").write_text("x")
    (tmp_path / "localmodel").mkdir()
    for model in ("org/name", "org/file.txt", "localmodel"):
        state, warnings = decode_view({"model": model})
        assert state.model == DEFAULT_MODEL and "on this server" in warnings[0]
    assert decode_view({"model": "org/other"}) == (ViewState(model="org/other"), ())
    assert decode_view({"model": "gpt2"}) == (ViewState(model="gpt2"), ())  # canonical hub ids have no org


def test_links_name_shipped_models_but_never_a_path_through_them():
    state, warnings = decode_view({"model": "shipped:induction", "page": "groundtruth"})
    assert warnings == () and state.model == "shipped:induction" and state.page == "groundtruth"
    for model in ("shipped:../../etc", "shipped:/tmp/x", "shipped:nothing-here", "shipped:"):
        state, warnings = decode_view({"model": model})
        assert state.model == DEFAULT_MODEL and "not a model this project ships" in warnings[0], (model, warnings)


def test_good_values_pass():
    state, warnings = decode_view({"v": "1", "model": "openai-community/gpt2", "layer": "11", "head": "0007",
                                   "backend": "triton", "words": "true", "slide": "1", "drop_sink": "FALSE",
                                   "hide_special": "0", "embed": "true", "unknown": "x"})
    assert warnings == ()
    assert state == ViewState(model="openai-community/gpt2", layer=11, head=7, backend="triton", words=True,
                              slide=True)


def test_repeated_parameters_take_the_last_and_text_beats_nothing():
    assert decode_view({"layer": ["1", "2"], "head": []}) == (ViewState(layer=2), ())
    both, warnings = decode_view({"text": "plain", "tz": compress_text("packed")})
    assert both.text == "packed" and "both text and tz" in warnings[0]


def test_a_zip_bomb_is_capped():
    bomb = compress_text("a" * 50_000_000)  # 50 MB of "a" in ~70 kB … of base64
    assert len(bomb) < 100_000
    state, warnings = decode_view({"tz": bomb})
    assert state.text == DEFAULT_TEXT and "tz=" in warnings[0]
    just_over = compress_text("b" * (MAX_TEXT_CHARS + 1))
    state, warnings = decode_view({"tz": just_over})
    assert state.text == DEFAULT_TEXT and "20,001 characters" in warnings[0]


def test_not_a_mapping():
    state, warnings = decode_view(None)  # type: ignore[arg-type]
    assert state == ViewState() and "could not be read" in warnings[0]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["v", "model", "text", "tz", "page", "layer", "head", "backend",
                                        "hide_special", "drop_sink", "words", "slide", "lang"]) | st.text(max_size=8),
                       st.text(max_size=60) | st.lists(st.text(max_size=20), max_size=3)
                       | st.sampled_from(["0", "1", "true", "6", "org/name", compress_text("hé")])))
def test_decode_never_raises(params):
    state, warnings = decode_view(params)
    assert isinstance(state, ViewState) and all(isinstance(w, str) for w in warnings)
    assert 0 <= state.layer <= 1023 and 0 <= state.head <= 1023 and state.backend in BACKENDS
    assert state.lang in LANGUAGES
    assert encode_view(state)["v"] == "1"


def test_fit_clamps_to_the_model():
    state, warnings = ViewState(layer=11, head=3).fit(num_layers=6, num_heads=12)
    assert (state.layer, state.head) == (5, 3) and len(warnings) == 1 and "layer 11" in warnings[0]
    state, warnings = ViewState(layer=2, head=40).fit(6, 12)
    assert (state.layer, state.head) == (2, 11) and "head 40" in warnings[0]
    assert ViewState(layer=5, head=11).fit(6, 12) == (ViewState(layer=5, head=11), ())


@pytest.mark.parametrize("bad", [dict(layer=-1), dict(head=True), dict(backend="cuda"), dict(words=1),
                                 dict(text=None), dict(lang="fr"), dict(lang=None)])
def test_view_state_checks_its_fields(bad):
    with pytest.raises(ValueError):
        ViewState(**bad)


def test_escape_markdown_makes_warnings_plain_text():
    warning = decode_view({"layer": "[click](https://evil.example) $x^2$ :red[boo] **b**"})[1][0]
    escaped = escape_markdown(warning)
    # Every ASCII punctuation character is escaped: none is left once the escaped pairs are removed.
    assert not re.search(r"[!-/:-@\[-`{-~]", re.sub(r"\\.", "", escaped))
    assert escaped.replace("\\", "") == warning


def test_a_hosted_instance_accepts_only_its_own_models_from_a_link():
    offered = ["default", "openai-community/gpt2"]
    state, warnings = decode_view({"model": "openai-community/gpt2"}, models=offered)
    assert state.model == "openai-community/gpt2" and warnings == ()
    state, warnings = decode_view({"model": "someone/seven-billion"}, models=offered)
    assert state.model == DEFAULT_MODEL
    assert len(warnings) == 1 and "not one of the models this instance offers" in warnings[0]
    assert "bundled model instead" in warnings[0]
    # Locally a path is refused for its own reason ("links cannot load local files") ...
    _, warnings = decode_view({"model": "/etc"})
    assert "local" in warnings[0]


def test_a_hosted_link_never_tells_whether_a_path_exists_on_the_server(tmp_path):
    """... but on a hosted instance that reason would say which paths exist (issue 33: ``?model=inspector/share.py``
    named a file on the server, a missing path did not). The allow-list answers first: one message for both."""
    from inspector.output.share import decode_compare

    offered = ["default", "openai-community/gpt2"]
    existing = tmp_path / "org" / "model"
    existing.mkdir(parents=True)
    replies = []
    for model in (str(existing), str(tmp_path / "org" / "missing"), "inspector/output/share.py", "inspector/nothing.py",
                  "/etc", "/nowhere"):
        _, warnings = decode_view({"model": model}, models=offered)
        _, compare_warnings = decode_compare({"model_b": model}, models=offered)
        assert len(warnings) == 1 and len(compare_warnings) == 1
        replies.append(tuple(re.sub(r"^model(_b)?=.*? is not", "MODEL is not", w)
                             for w in (warnings[0], compare_warnings[0])))
    assert len(set(replies)) == 1, replies
    assert "not one of the models this instance offers" in replies[0][0]


def _keys(notice) -> set[str]:
    """The catalogue keys of ``notice`` and of the clauses inside it."""
    return {notice.key}.union(*(_keys(value) for value in notice.values.values() if isinstance(value, Notice)))


def _names(notice) -> set[str]:
    """The values a warning quotes (a link's value, a model list, an error): data in every language."""
    return {str(value) for value in notice.values.values()
            if not isinstance(value, Notice)}.union(*(_names(value) for value in notice.values.values()
                                                     if isinstance(value, Notice)))


def test_every_warning_is_a_catalogue_sentence_in_both_languages(tmp_path, monkeypatch):
    """The warnings are Notices: English as before, and Chinese on a Chinese page (issue 26) — every share.* key
    the decoders write is reached here, so none of them is checked over an empty case."""
    from inspector.base.i18n import CATALOGUE, Notice, notice_text
    from inspector.output.share import decode_compare
    from tests.test_i18n import CJK, english_runs

    views = [None, {"v": "2"}, {"v": "x"}, {"model": "/etc"}, {"model": "gpt2", "layer": 5},
             {"text": "x" * (MAX_TEXT_CHARS + 1)}, {"text": " "}, {"tz": "!"}, {"text": "a", "tz": compress_text("b")},
             {"page": "nope"}, {"layer": "x", "head": "y"}, {"backend": "cuda"}, {"slide": "maybe"}]
    warnings = [w for params in views for w in decode_view(params, models=["default"])[1]]
    warnings += list(ViewState(layer=11, head=40).fit(6, 12)[1])
    warnings += list(decode_view({"model": "a" * 300})[1])
    warnings += list(decode_view({"model": "shipped:nope"})[1])  # hosted, the allow-list would answer first
    warnings += list(decode_view({"model": "bundled:../x"})[1])
    (tmp_path / "local-model").mkdir()
    monkeypatch.chdir(tmp_path)  # a hub id that names a folder here
    warnings += list(decode_view({"model": "local-model"})[1])
    compares = [{"text_b": ""}, {"tzb": "!"}, {"model_b": "/etc"}, {"query": ""}, {"keys": "a"}, {"text_b": 5}]
    warnings += [w for params in compares for w in decode_compare(params)[1]]
    warnings += list(decode_compare({"model_b": "gpt2"}, models=["default"])[1])
    from inspector.output.share import decode_generate

    warnings += list(decode_generate({"new": "0", "chat": "maybe"})[1])  # the Generate page's (issue 28)
    from inspector.output.share import decode_lessons

    warnings += list(decode_lessons({"decoder": "/etc", "dhead": "x"})[1])  # the Lessons decoder section's (issue 30)

    from inspector.output.share import decode_lesson

    warnings += list(decode_lesson({"lesson": "99"})[1])  # the Lessons page's (issue 31)
    from inspector.output.share_roles import decode_roles

    warnings += list(decode_roles({"rrepeat": "many"})[1])  # the Heads page's roles options (issue 45)
    assert all(isinstance(w, Notice) for w in warnings)
    written = set().union(*(_keys(w) for w in warnings))
    # A clause may be a library error's own sentence (error.no_shipped_model): translated with the warning.
    assert {key for key in written if not key.startswith("error.")} == \
        {key for key in CATALOGUE if key.startswith("share.")} - {"share.too_long", "share.on"}
    for warning in warnings:
        chinese = notice_text(warning, "zh")
        assert warning.text("en") == warning and CJK.search(chinese), warning
        assert english_runs(chinese, _names(warning) | {"Hugging Face"}) == [], (warning, chinese)
    nested = next(w for w in warnings if w.key == "share.bad_flag")
    assert nested == "slide='maybe' is not 0, 1, true or false; using off instead."
    assert notice_text(nested, "zh") == "slide='maybe' 不是 0、1、true 或 false；改为关闭。"
    import pickle

    assert pickle.loads(pickle.dumps(nested)).text("zh") == nested.text("zh")  # st.session_state keeps them


# ------------------------------------------------------------------------------ the Lessons decoder section (issue 30)


def test_the_decoder_sections_model_layer_and_head_round_trip_beside_the_view():
    from inspector.output.share import LessonsState, decode_lessons, encode_lessons

    assert encode_lessons(LessonsState()) == {}  # nothing chosen: the link says nothing
    for state in (LessonsState(decoder="bundled:gemma-3-270m", dlayer=5, dhead=3),
                  LessonsState(decoder="shipped:induction", dlayer=0, dhead=0), LessonsState(decoder="gpt2")):
        params = {**encode_view(ViewState(page="lessons")), **encode_lessons(state)}
        assert decode_lessons(params) == (state, ())
        assert decode_view(params) == (ViewState(page="lessons"), ())  # the view ignores the section's parameters
    url = share_url("http://host/lessons?old=1", ViewState(page="lessons"),
                    encode_lessons(LessonsState(decoder="bundled:smollm2-135m", dlayer=2, dhead=1)))
    assert url == "http://host/lessons?v=1&page=lessons&decoder=bundled%3Asmollm2-135m&dlayer=2&dhead=1"


@pytest.mark.parametrize("params, shown", [
    ({"decoder": "/etc"}, "'/etc'"), ({"decoder": "../models/x"}, "'../models/x'"),
    ({"decoder": "bundled:llama-70b"}, "'bundled:llama-70b'"), ({"decoder": "shipped:../../etc"}, "shipped"),
    ({"dlayer": "-1"}, "'-1'"), ({"dlayer": "99999"}, "'99999'"), ({"dhead": "two"}, "'two'"),
    ({"dhead": ["1", "x" * 500]}, "characters"),
])
def test_a_bad_decoder_parameter_warns_and_falls_back(params, shown):
    from inspector.output.share import LessonsState, decode_lessons

    state, warnings = decode_lessons(params)
    assert state == LessonsState() and len(warnings) == 1 and shown in warnings[0], warnings
    assert next(iter(params)) in warnings[0]  # names the parameter


def test_a_hosted_instance_takes_only_its_own_models_as_the_decoder():
    from inspector.output.share import decode_lessons

    offered = ["default", "bundled:smollm2-135m"]
    assert decode_lessons({"decoder": "bundled:smollm2-135m"}, models=offered)[0].decoder == "bundled:smollm2-135m"
    state, warnings = decode_lessons({"decoder": "someone/seven-billion"}, models=offered)
    assert state.decoder is None and "not one of the models this instance offers" in warnings[0]
    # The same answer for a path that exists on the server and one that does not (the allow-list answers first).
    replies = {decode_lessons({"decoder": path}, models=offered)[1][0].replace(repr(path), "PATH")
               for path in ("/etc", "/nowhere")}
    assert len(replies) == 1 and "not one of the models this instance offers" in replies.pop()
