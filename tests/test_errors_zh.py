"""Errors in the reader's language (issue 39, item 6): the library's typed errors carry their catalogue sentence
(:class:`~inspector.base.i18n.Notice`), every page shows them through :func:`views.session.show_error` — on a
简体中文 page the Chinese sentence, never the English developer text — and no internal path or cache folder name
reaches a visitor."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import torch

from inspector.analyses.generate import render_prompt
from inspector.analyses.groundtruth import card_for, read_card
from inspector.analyses.mechanism.logits import token_id
from inspector.analyses.mechanism.parts import check_position, model_parts
from inspector.analyses.mechanism.patching import LengthMismatchError, patching_run
from inspector.analyses.token_alignment import align_tokens, resolve_token
from inspector.base.errors import (
    DeadlineExceededError,
    DeviceOutOfMemoryError,
    InspectorError,
    InvalidRequestError,
    InvalidTextError,
    ModelNotAllowedError,
    ModelNotFoundError,
    ModelTooLargeError,
    OverBudgetError,
    UnsupportedModelError,
    error_text,
)
from inspector.base.i18n import CATALOGUE, Notice, placeholders, t
from inspector.base.limits import MAX_TEXT_CHARS
from inspector.core.bundled import bundled_choices, bundled_decoder, prepared_path
from inspector.core.deadline import check_deadline, job_deadline
from inspector.core.forward import encode_text
from inspector.core.loading import load_model, shipped_choices
from inspector.core.model_folders import check_parameter_count, model_name
from inspector.serving.hosting import HostingPolicy, load_allowed_model
from inspector.serving.jobs import plan_job
from inspector.serving.run import Request, plan, run
from tests.conftest import open_app_page, save_tiny_model

ROOT = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u4e00-\u9fff]")
# The catalogue's error sentences: the shared ones and each page's own.
ERROR_KEY_PREFIXES = ("error.", "mech.error.", "attribution.error.", "generate.error.", "compare.error.",
                      "decoder.error.", "lessons.error.", "gt.error.", "inspect.error.", "heads.error.")
ERROR_KEYS = sorted(key for key in CATALOGUE if key.startswith(ERROR_KEY_PREFIXES))
DECODER = "bundled:gemma-3-270m"
# A bundled decoder's prepared folder in the cache (inspector.core.bundled; "gemma-3-270m-a5fd3b62230a-v1"): the
# name a visitor must never read.
CACHE_FOLDER = prepared_path(bundled_decoder(DECODER)).name


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    """A tiny Llama with its language-model head: a decoder the mechanism analyses take."""
    return load_model(str(save_tiny_model(tmp_path_factory.mktemp("tiny-lm") / "llama", "llama", with_head=True)))


def _raised(call, what: str = "") -> InspectorError:
    with pytest.raises(InspectorError) as raised:
        call()
        pytest.fail(f"{what}: nothing raised")
    return raised.value


def _assert_in_chinese(err: InspectorError, key: str) -> str:
    """``err`` carries ``key``; its Chinese text is that entry filled (no placeholder left), its English text
    (``str``) is unchanged. Returns the Chinese text."""
    assert err.notice is not None and err.notice.key == key, (type(err).__name__, err.notice, str(err))
    chinese = error_text(err, "zh")
    assert chinese == err.notice.text("zh") and CJK.search(chinese) and "{" not in chinese, chinese
    assert not CJK.search(str(err)) and chinese != str(err)
    return chinese


# ------------------------------------------------------------------------------------------- the catalogue

@pytest.mark.parametrize("key", ERROR_KEYS)
def test_every_error_sentence_renders_in_both_languages_with_every_value_filled(key):
    values = {name: f"<{name}>" for name in placeholders(key, "en")}
    err = InvalidRequestError("developer text", notice=Notice(key, **values))
    english, chinese = error_text(err, "en"), error_text(err, "zh")
    for text in (english, chinese):
        assert "{" not in text and "}" not in text, (key, text)
        assert all(f"<{name}>" in text for name in values), (key, text)  # every value is said
    assert CJK.search(chinese) and not CJK.search(english), (key, english, chinese)
    assert str(err) == "developer text"  # the CLI's and the log's English stays the library's own


def test_the_error_sentences_exist():
    """The parametrised test above runs over the families this item added (a prefix matching nothing fails)."""
    for prefix in ERROR_KEY_PREFIXES:
        assert any(key.startswith(prefix) for key in ERROR_KEYS), prefix


# ------------------------------------------------------------------------------------------- the library

def _deadline_passed() -> None:
    with job_deadline(1e-9, Notice("job.heads")):
        time.sleep(0.001)
        check_deadline()


def _out_of_memory(loaded) -> None:
    def work(progress):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB")

    run(plan(Request(kind="heads", texts=("the cat sat on the mat",)), loaded, HostingPolicy()), work)


def _cases(tiny_bert, tiny_lm, tmp_path) -> list[tuple[type, str, object]]:
    """(class, catalogue key, the real library call that raises it) for the errors a page can show."""
    small_jobs = HostingPolicy(hosted=True, deadline_s=60, job_memory_bytes=64 * 2 * 4 * 4 * 20 ** 2)  # 20 tokens
    return [
        (InvalidTextError, "error.text_empty", lambda: encode_text(tiny_bert, "   ")),
        (InvalidTextError, "error.text_too_long", lambda: encode_text(tiny_bert, "the cat " * 40)),
        (InvalidTextError, "error.text_too_many_characters",
         lambda: plan(Request(kind="inspect", texts=("a" * (MAX_TEXT_CHARS + 1),)), tiny_bert, HostingPolicy())),
        (InvalidTextError, "error.weights_too_large",
         lambda: plan(Request(kind="inspect", texts=("the cat sat on the mat " * 8,), weights="all"), tiny_bert,
                      HostingPolicy(weights_budget_bytes=2**10))),
        (OverBudgetError, "notice.job_refused",
         lambda: plan_job(small_jobs, "attribution", tiny_bert, ["the cat sat on the mat " * 6])),
        (DeadlineExceededError, "error.deadline", _deadline_passed),
        (DeviceOutOfMemoryError, "error.out_of_memory", lambda: _out_of_memory(tiny_bert)),
        (ModelNotAllowedError, "error.model_not_offered",
         lambda: load_allowed_model("openai-community/gpt2", HostingPolicy(hosted=True))),
        (ModelNotFoundError, "error.model_unknown", lambda: load_model(str(tmp_path / "missing"))),
        (ModelTooLargeError, "error.model_too_large", lambda: check_parameter_count(DECODER, 10, 5)),
        (InvalidRequestError, "error.no_such_layer", lambda: tiny_bert.info.check_layer(99)),
        (InvalidRequestError, "error.no_such_head", lambda: tiny_bert.info.check_head(99)),
        (InvalidRequestError, "mech.error.position", lambda: check_position(12, 5, "the query position")),
        (LengthMismatchError, "mech.error.length_mismatch",
         lambda: patching_run(tiny_lm, "the cat sat", "the cat sat on", answer="cat", contrast="dog")),
        (InvalidRequestError, "mech.error.not_one_token", lambda: token_id(tiny_lm, "the cat", "the answer")),
        (UnsupportedModelError, "mech.error.not_decoder", lambda: model_parts(tiny_bert)),
        (InvalidTextError, "generate.error.empty_prompt", lambda: render_prompt(tiny_lm, "  ", chat=False)),
        (InvalidRequestError, "compare.error.not_shared",
         lambda: resolve_token("dog", ["the", "cat"], ["the", "cat"], align_tokens(["the", "cat"], ["the", "cat"]))),
    ]


def test_each_typed_error_a_page_shows_carries_its_chinese_sentence(tiny_bert, tiny_lm, tmp_path):
    for kind, key, call in _cases(tiny_bert, tiny_lm, tmp_path):
        err = _raised(call, key)
        assert isinstance(err, kind), (key, type(err), str(err))
        _assert_in_chinese(err, key)


def test_a_model_is_named_as_its_menu_names_it_in_either_language():
    err = _raised(lambda: check_parameter_count(DECODER, 10, 5))
    name = bundled_choices()[DECODER].removesuffix(" (bundled)")
    assert name in error_text(err, "en") and name in error_text(err, "zh")
    assert "(bundled)" in error_text(err, "en") and "（内置）" in error_text(err, "zh")


def test_a_decoder_without_a_card_is_named_never_by_its_cache_folder(tmp_path):
    """Issue 39: "'gemma-3-270m-a5fd3b62230a-v1' has no groundtruth.json" — a bundled decoder's cache folder."""
    folder = tmp_path / CACHE_FOLDER
    folder.mkdir()
    err = _raised(lambda: read_card(folder, DECODER))
    chinese = _assert_in_chinese(err, "gt.error.no_card")
    label = bundled_choices()[DECODER]
    assert label in str(err) and "has no groundtruth.json" in str(err)  # the CLI's sentence, with the menu's name
    for text in (str(err), error_text(err, "en"), chinese):
        assert CACHE_FOLDER not in text and str(tmp_path) not in text, text
    (folder / "groundtruth.json").write_text("{", encoding="utf-8")
    damaged = _raised(lambda: read_card(folder, DECODER))
    for lang in ("en", "zh"):
        assert CACHE_FOLDER not in error_text(damaged, lang) and str(tmp_path) not in error_text(damaged, lang)


def test_the_bundled_model_without_a_card_says_so_in_chinese(bundled):
    chinese = _assert_in_chinese(_raised(lambda: card_for(bundled)), "gt.error.bundled_no_card")
    _assert_lists_the_ground_truth_models_in_chinese(chinese)


def test_a_decoder_without_a_card_lists_the_ground_truth_models_in_chinese(tmp_path):
    """Issue 44 item 9 (the walkthrough, Ground truth on Gemma in 简体中文): the sentence was Chinese but its list of
    models English — "请选一个已知答案模型（Ground truth: deceptive-attention classifier (shipped), …）"."""
    err = _raised(lambda: read_card(tmp_path, DECODER))
    _assert_lists_the_ground_truth_models_in_chinese(_assert_in_chinese(err, "gt.error.no_card"))
    assert ", ".join(shipped_choices().values()) in error_text(err, "en")  # English: the menu's names, as before


def _assert_lists_the_ground_truth_models_in_chinese(chinese: str) -> None:
    assert len(shipped_choices()) == 3  # the sentence lists three models
    for spec in shipped_choices():
        assert model_name(spec).text("zh") in chinese, (spec, chinese)
    assert "Ground truth" not in chinese and "(shipped)" not in chinese and ", " not in chinese, chinese
    assert chinese.count("、") == 2, chinese


# ------------------------------------------------------------------------------------------- the pages

def test_no_page_shows_an_error_as_its_english_text():
    """Every page shows an error through session.show_error / error_text: ``str(err)`` is the library's English
    developer text (a folder of the server, on an English or a Chinese page)."""
    shown_as_text = re.compile(r"\b(st|session|pages)\.\w+\(.*\bstr\((err|error|exc)\b|st\.error\(str\(")
    sources = [ROOT / "app.py", *sorted((ROOT / "views").glob("*.py"))]
    found = [f"{path.name}:{number}: {line.strip()}" for path in sources
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             if shown_as_text.search(line)]
    assert not found, found
    assert shown_as_text.search("    st.error(str(err))") and shown_as_text.search("st.info(str(err))")
    assert shown_as_text.search("pages.link_warning(str(err), lang)")
    assert "show_error" in (ROOT / "views" / "session.py").read_text(encoding="utf-8")


@pytest.fixture
def chinese_inspect_page(monkeypatch):
    """The Inspect page in 简体中文 whose plan (the library call the page makes first) raises ``raising[0]``."""
    from views import inspect_run

    raising: list[InspectorError] = []

    def plan_inspect(spec: str, text: str, layer: int):
        raise raising[0]

    monkeypatch.setattr(inspect_run, "plan_inspect", plan_inspect)
    raising.append(InvalidTextError("placeholder"))
    at = open_app_page("inspect", query={"lang": "zh", "text": "the error page test"})
    return at, raising


def test_each_typed_error_is_shown_in_chinese_on_a_chinese_page(chinese_inspect_page, tiny_bert, tiny_lm,
                                                                 tmp_path):
    at, raising = chinese_inspect_page
    for kind, key, call in _cases(tiny_bert, tiny_lm, tmp_path):
        err = _raised(call, key)
        raising[0] = err
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        shown = [e.value for e in at.error]
        assert shown == [error_text(err, "zh")], (key, shown)
        assert str(err) not in shown[0] and CJK.search(shown[0])


def test_a_text_past_the_model_is_refused_in_chinese():
    """A real refusal, no patching: the bundled model reads 512 tokens."""
    at = open_app_page("inspect", query={"lang": "zh", "text": "the cat sat on the mat " * 120})
    shown = [e.value for e in at.error]
    assert len(shown) == 1 and "最多读取 512 个" in shown[0] and "reads at most" not in shown[0], shown
    assert t("model.bundled", "zh") in shown[0]  # the model as the Chinese menu names it


def test_a_run_past_the_deadline_is_refused_in_chinese(monkeypatch):
    from views import session

    monkeypatch.setattr(session, "hosting_policy", lambda: HostingPolicy(deadline_s=1e-9))
    at = open_app_page("inspect", query={"lang": "zh", "text": "a nanosecond deadline on a chinese page"})
    shown = [e.value for e in at.error]
    assert len(shown) == 1 and "秒内完成" in shown[0] and "did not finish" not in shown[0], shown


def test_the_ground_truth_page_names_a_decoder_never_its_cache_folder():
    """Issue 39: the Ground truth page with a decoder chosen showed the prepared folder's name."""
    for lang in ("zh", "en"):
        at = open_app_page("groundtruth", query={"lang": lang, "model": DECODER})
        said = [c.value for c in at.caption] + [i.value for i in at.info] + [e.value for e in at.error]
        assert any(bundled_choices()[DECODER].removesuffix(" (bundled)") in text.replace("\\", "") for text in said)
        cache = str(prepared_path(bundled_decoder(DECODER)).parent)
        assert not [text for text in said if any(leak in text.replace("\\", "") for leak in
                                                 (CACHE_FOLDER, cache, "groundtruth.json"))], said
        if lang == "zh":
            caption = [c.value for c in at.caption if "已知答案卡片" in c.value.replace("\\", "")]
            assert caption, [c.value for c in at.caption]


def test_a_misconfigured_instance_keeps_its_settings_file_to_the_server_log(monkeypatch, tmp_path, caplog):
    """The allow-list's path is the operator's: the server log gets it, the page says whom to tell."""
    from streamlit.testing.v1 import AppTest

    from views import session

    monkeypatch.setenv("INSPECTOR_HOSTED", "1")
    monkeypatch.setenv("INSPECTOR_ALLOWED_MODELS", str(tmp_path / "missing.toml"))
    session.hosting_policy.clear()
    try:
        for lang in ("en", "zh"):
            at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
            at.query_params["lang"] = lang
            at.run()
            shown = [e.value for e in at.error]
            assert shown == [t("sidebar.misconfigured", lang, error=t("error.kind.hosting_config", lang))], shown
            assert str(tmp_path) not in shown[0] and "missing.toml" not in shown[0]
        assert "missing.toml" in caplog.text
    finally:
        monkeypatch.delenv("INSPECTOR_HOSTED")
        monkeypatch.delenv("INSPECTOR_ALLOWED_MODELS")
        session.hosting_policy.clear()
