"""The Streamlit app, driven headlessly with ``AppTest`` on the bundled model: it renders, reruns on new text,
turns bad input into ``st.error`` (never a traceback), redraws without a model call when the layer or head
changes, restores a view from share-link query parameters and warns about malformed ones.

The model and captures live in Streamlit's process-wide caches, so only the first test pays for loading.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from inspector.base.examples import EXAMPLES
from inspector.base.limits import MAX_TEXT_CHARS
from inspector.charts.base import title_text
from inspector.core.loading import DEFAULT_MODEL, shipped_choices
from inspector.output.share import ViewState, encode_view

# AppTest resolves relative paths against the calling file, not the working directory.
APP = Path(__file__).resolve().parents[1] / "app.py"
APP_TIMEOUT_S = 60
DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."


def _run_app(query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=APP_TIMEOUT_S)
    for name, value in (query or {}).items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _chart_titles(at: AppTest) -> list:
    return [json.loads(chart.proto.spec).get("title") for chart in at.get("vega_lite_chart")]


def _title_texts(at: AppTest) -> list[str]:
    return [title_text(title) for title in _chart_titles(at)]  # wrapped titles joined into one line


def _metrics(at: AppTest) -> dict[str, str]:
    return {metric.label: metric.value for metric in at.metric}


def _status_label(at: AppTest) -> str:
    return at.caption[1].value  # the progress line, under the page's one-line introduction


def _server_time_caption(at: AppTest) -> str:
    return next(c.value for c in at.caption if c.value.startswith("Server time for this view"))


def test_page_renders_the_default_text_on_the_bundled_model():
    at = _run_app()
    assert not at.error
    assert at.text_area(key="text").value == DEFAULT_TEXT
    strip = at.code[0].value
    assert "0: [CLS]" in strip and "2: animal" in strip and "7: the" in strip
    titles = _title_texts(at)
    assert titles[0] == "Head entropy: how spread out each head's attention is"
    assert "Layer 0, head 0: attention weights" in titles
    assert any(str(t).startswith("Layer 0") and "every head" in str(t) for t in titles)
    metrics = _metrics(at)
    assert metrics["Backend that ran"] == "torch"
    assert metrics["Tokens"] == "16 / 512"
    assert any("6 layers × 12 heads" in caption.value and "512 tokens" in caption.value
               for caption in at.sidebar.caption)


def test_changing_the_text_reruns_and_shows_the_new_tokens():
    at = _run_app()
    at.text_area(key="text").set_value("Queries search keys like addresses.").run()
    assert not at.exception and not at.error
    strip = at.code[0].value
    assert "1: que   2: ##ries" in strip and "6: addresses" in strip and "animal" not in strip
    assert _metrics(at)["Tokens"].startswith(f"{strip.count(': ')} / ")


def test_an_example_fills_the_text_box():
    at = _run_app()
    chinese = next(example for example in EXAMPLES if "小猫" in example.text)
    at.selectbox(key="example").set_value(chinese.title).run()
    assert not at.exception and not at.error
    assert at.text_area(key="text").value == chinese.text
    assert "小" in at.code[0].value


SIDEBAR_WIDGETS = {"lang": "selectbox", "model": "selectbox", "example": "selectbox", "text": "text_area",
                   "backend": "selectbox", "slide": "toggle"}


def _sent_back(at: AppTest) -> list[str]:
    """The sidebar widgets whose value this run sent to the browser, replacing what the browser shows."""
    return [key for key, kind in SIDEBAR_WIDGETS.items() if getattr(at, kind)(key=key).proto.set_value]


def test_a_run_sends_the_sidebar_only_a_value_the_app_changed(tiny_model_dirs):
    """Issue 45, item 7: every run sent the sidebar's values back to the browser (each was assigned to itself to
    survive a page switch), so a run that began before the reader committed a new text put the old one back in the
    box, and a page switch right after carried the old text (2 of 72 switches 0.3 s after Ctrl+Enter lost it). Only
    a value the app changes — an example chosen, a link opened — is sent; the reader's own values survive a page
    switch, a page's own switch_page (tests/test_heads_page.py) and a run that hides the "other model" box."""
    at = _run_app()
    typed = "Queries search keys like addresses."
    at.text_area(key="text").set_value(typed).run()
    at.run()  # any later run: a click on the grid
    assert at.text_area(key="text").value == typed and _sent_back(at) == []
    at.switch_page("views/lecture.py").run()
    assert not at.exception and at.text_area(key="text").value == typed and _sent_back(at) == []
    at.switch_page("views/inspect.py").run()
    assert at.text_area(key="text").value == typed and "que" in at.code[0].value
    example = EXAMPLES[1]
    at.selectbox(key="example").set_value(example.title).run()
    assert at.text_area(key="text").value == example.text and _sent_back(at) == ["text"]

    folder = str(tiny_model_dirs["bert"])
    at.selectbox(key="model").set_value("__other__").run()
    at.text_input(key="model_other").set_value(folder).run()
    at.selectbox(key="model").set_value(DEFAULT_MODEL).run()
    assert "model_other" not in [box.key for box in at.text_input]  # a run that does not draw the box
    at.selectbox(key="model").set_value("__other__").run()
    assert at.text_input(key="model_other").value == folder and not at.exception


@pytest.mark.parametrize("text", ["", "   \n "])
def test_empty_text_shows_an_error_not_a_traceback(text):
    at = _run_app()
    at.text_area(key="text").set_value(text).run()
    assert not at.exception
    assert len(at.error) == 1 and "empty" in at.error[0].value
    assert not at.get("vega_lite_chart")


def test_changing_layer_and_head_redraws_without_calling_the_model():
    at = _run_app()
    at.selectbox(key="layer").set_value(3).run()
    at.selectbox(key="head").set_value(11).run()
    assert not at.exception and not at.error
    assert "Layer 3, head 11: attention weights" in _title_texts(at)
    grid = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    outline_filter = str([t for layer in grid["layer"] for t in layer.get("transform", [])])
    assert "=== 3" in outline_filter and "=== 11" in outline_filter
    assert "no model call" in _status_label(at)
    assert _server_time_caption(at).endswith("(model not called)")


def test_heatmap_options_change_the_view():
    at = _run_app()
    at.text_area(key="text").set_value("Queries search keys like addresses.").run()
    at.checkbox(key="words").check().run()
    at.checkbox(key="hide_special").check().run()
    assert not at.exception and not at.error
    heatmap = next(json.loads(c.proto.spec) for c in at.get("vega_lite_chart")
                   if "attention weights" in str(json.loads(c.proto.spec).get("title")))
    queries = heatmap["encoding"]["y"]["sort"]
    assert not any("[CLS]" in q or "[SEP]" in q for q in queries)
    assert queries[0].endswith("Queries") and len(queries) == 6  # "que" + "##ries" merged into one word
    subtitle = " ".join(heatmap["title"]["subtitle"])  # wrapped into lines that fit the page's column
    assert "Word view" in subtitle and "Special tokens hidden" in subtitle  # both options are stated on the chart


def test_a_backend_that_cannot_run_here_is_an_error_not_a_traceback():
    at = _run_app()
    at.selectbox(key="backend").set_value("triton").run()
    assert not at.exception
    # On a machine where Triton runs, the page must say so; everywhere else it explains why it cannot.
    assert at.error or _metrics(at)["Backend that ran"] == "triton"


def test_an_unloadable_model_is_an_error_not_a_traceback(tmp_path):
    at = _run_app()
    at.selectbox(key="model").set_value("__other__").run()
    at.text_input(key="model_other").set_value(str(tmp_path / "missing")).run()
    assert not at.exception
    assert at.error and "missing" in at.error[0].value


def test_query_params_restore_the_view():
    state = ViewState(text="Queries search keys like addresses.", layer=4, head=7, words=True, slide=True)
    at = _run_app(encode_view(state))
    assert not at.error and not at.warning
    assert at.text_area(key="text").value == state.text
    assert at.selectbox(key="layer").value == 4 and at.selectbox(key="head").value == 7
    assert at.checkbox(key="words").value and at.toggle(key="slide").value
    assert "Layer 4, head 7: attention weights" in _title_texts(at)
    # The address bar keeps describing the view, so copying it reproduces the same state.
    assert dict(at.query_params)["layer"] in ("4", ["4"])


@pytest.mark.parametrize("query, mentioned", [
    ({"layer": "banana"}, "layer"),
    ({"head": "-3"}, "head"),
    ({"layer": "99"}, "layer"),
    ({"backend": "<script>alert(1)</script>"}, "backend"),
    ({"model": "../../etc/passwd"}, "model"),
    ({"tz": "not-base64!!"}, "text"),
    ({"v": "99"}, "version"),
])
def test_malformed_query_params_warn_and_fall_back(query, mentioned):
    at = _run_app(query)
    assert not at.exception
    warnings = [w.value for w in at.warning] + [w.value for w in at.sidebar.warning]
    assert any(mentioned in w.lower() for w in warnings), warnings
    assert at.get("vega_lite_chart"), "the page still draws with the defaults"


def _cut_notices(at: AppTest) -> list[str]:
    return [w.value for w in at.sidebar.warning if f"at most {MAX_TEXT_CHARS:,}" in w.value]


def test_a_one_megabyte_paste_is_cut_to_the_box_and_refused_with_both_reasons():
    at = _run_app()
    paste = ("The animal didn't cross the street because it was too tired. " * 20_000)[:2**20]
    started = time.perf_counter()
    at.text_area(key="text").set_value(paste).run()
    assert time.perf_counter() - started < 20
    assert not at.exception
    assert at.text_area(key="text").value == paste[:MAX_TEXT_CHARS]
    assert _cut_notices(at) == [f"The paste had {len(paste):,} characters; the text box holds at most "
                                f"{MAX_TEXT_CHARS:,}, so it was cut there and only the first {MAX_TEXT_CHARS:,} "
                                "are analysed."]
    assert len(at.error) == 1 and "reads at most 512" in at.error[0].value and "shorten" in at.error[0].value
    # Case 8: the message offers what the app can do (there is no truncation option in the app).
    assert "truncation" not in at.error[0].value and "long-context model" in at.error[0].value


def test_a_paste_past_the_limit_is_cut_never_dropped_and_only_a_cut_is_announced():
    """Issue 18, case 5: 20,001 characters were dropped (the previous text ran again); exactly 20,000 said 'cut'."""
    at = _run_app()
    exact = ("Queries search keys. " * 1_000)[:MAX_TEXT_CHARS]
    at.text_area(key="text").set_value(exact).run()
    assert at.text_area(key="text").value == exact and not _cut_notices(at)
    longer = ("Keys answer queries. " * 1_000)[:MAX_TEXT_CHARS + 1]
    at.text_area(key="text").set_value(longer).run()
    assert at.text_area(key="text").value == longer[:MAX_TEXT_CHARS], "the paste is kept, cut to the limit"
    assert len(_cut_notices(at)) == 1 and f"{MAX_TEXT_CHARS + 1:,} characters" in _cut_notices(at)[0]
    at.text_area(key="text").set_value(DEFAULT_TEXT).run()
    assert not _cut_notices(at), "the notice goes with the cut text"


def test_a_view_whose_link_would_be_too_long_says_so_instead_of_offering_it():
    """Case 8: a link past MAX_LINK_CHARS would meet the server's HTTP 400 page; the share box explains instead,
    and the address bar keeps the view without the text."""
    import random

    from inspector.output.share import MAX_LINK_CHARS

    # Random letters barely compress, and a word past 100 characters is one [UNK] token: a text the model reads
    # (102 tokens) whose link is ~12 kB even compressed.
    rng = random.Random(0)
    text = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(150)) for _ in range(100))
    at = _run_app()
    at.text_area(key="text").set_value(text).run()
    assert not at.exception
    notices = [i.value for i in at.sidebar.info if "link would be" in i.value]
    assert len(notices) == 1 and f"longer than the {MAX_LINK_CHARS:,}" in notices[0]
    assert not at.sidebar.code, "no link that would fail is offered"
    assert "tz" not in dict(at.query_params) and "text" not in dict(at.query_params)
    at.text_area(key="text").set_value(text[:500]).run()
    assert at.sidebar.code and len(at.sidebar.code[0].value) <= MAX_LINK_CHARS


def test_a_broken_model_folder_in_the_picker_is_an_error_not_a_traceback(tmp_path, tiny_model_dirs):
    """Case 4 in the app: model → Other → a folder whose weights are truncated: st.error, no exception box."""
    import shutil

    folder = shutil.copytree(tiny_model_dirs["bert"], tmp_path / "truncated")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    at = _run_app()
    at.selectbox(key="model").set_value("__other__").run()
    at.text_input(key="model_other").set_value(str(folder)).run()
    assert not at.exception
    assert len(at.error) == 1 and "not a readable safetensors file" in at.error[0].value


def test_a_text_past_the_memory_budget_is_refused_and_a_long_one_keeps_one_layer(monkeypatch):
    from inspector.serving.hosting import HostingPolicy
    from views import session

    text = "Queries search keys like addresses. " * 8  # 58 tokens
    # Every layer at 58 tokens: 6 × 12 × 58² × 4 bytes = 0.92 MiB; one layer 0.15 MiB.
    monkeypatch.setattr(session, "hosting_policy", lambda: HostingPolicy(weights_budget_bytes=2**19))
    at = _run_app({"text": text, "layer": "2"})
    assert not at.error and len(at.info) >= 1
    assert any("exact weights only layer 2" in info.value for info in at.info)
    assert "Layer 2, head 0: attention weights" in _title_texts(at)
    monkeypatch.setattr(session, "hosting_policy", lambda: HostingPolicy(weights_budget_bytes=2**16))
    at = _run_app({"text": text})
    assert len(at.error) == 1 and "58 tokens" in at.error[0].value and "allows 36 tokens" in at.error[0].value


@pytest.fixture
def hosted_app(monkeypatch, tmp_path):
    """The app as a hosted instance with the shipped allow-list (no entries: the bundled and ground-truth models)."""
    from views import session

    monkeypatch.setenv("INSPECTOR_HOSTED", "1")
    session.hosting_policy.clear()
    yield
    monkeypatch.delenv("INSPECTOR_HOSTED")
    session.hosting_policy.clear()


def test_hosted_mode_offers_only_the_allow_list_and_no_free_text_model(hosted_app):
    at = _run_app()
    assert not at.error
    # The bundled models (MiniLM, then the decoders), then the project's own ground-truth models (always offered;
    # nothing else on this list).
    from inspector.core.bundled import bundled_choices

    assert at.selectbox(key="model").options == ["all-MiniLM-L6-v2 (bundled)", *bundled_choices().values(),
                                                 *shipped_choices().values()]
    assert not at.text_input  # no "hub id or local folder" box
    assert _metrics(at)["Tokens"] == "16 / 512"


@pytest.mark.parametrize("model", ["openai-community/gpt2", str(APP.parent / "assets")])
def test_hosted_mode_warns_about_a_link_to_another_model_and_shows_the_bundled_one(hosted_app, model):
    at = _run_app({"model": model})
    assert not at.exception and not at.error
    warnings = [w.value for w in at.sidebar.warning]
    assert len(warnings) == 1 and "using the bundled model instead" in warnings[0].replace("\\", "")
    assert at.selectbox(key="model").value == "default" and at.get("vega_lite_chart")


def test_a_run_past_the_deadline_is_an_error_and_the_next_run_works(monkeypatch):
    from inspector.serving.hosting import HostingPolicy
    from views import session

    text = "A deadline of a nanosecond stops the first layer."  # not cached by another test
    monkeypatch.setattr(session, "hosting_policy", lambda: HostingPolicy(deadline_s=1e-9))
    at = _run_app({"text": text})
    assert len(at.error) == 1 and "did not finish" in at.error[0].value and "try again" in at.error[0].value
    monkeypatch.undo()
    at = _run_app({"text": text})
    assert not at.error and at.get("vega_lite_chart")


def test_the_attribution_page_warns_about_a_link_past_the_model():
    """Case 8: ``/attribution?layer=999&head=999`` was ignored without the warning every other page gives."""
    at = AppTest.from_file(str(APP), default_timeout=240)
    at.query_params["layer"], at.query_params["head"] = "999", "999"
    at.switch_page("views/attribution.py").run()  # opened on the page itself, as the link does
    assert not at.exception, [e.value for e in at.exception]
    warnings = [w.value for w in at.warning] + [w.value for w in at.sidebar.warning]
    assert any("layer 999" in w and "6 layers" in w for w in warnings), warnings
    assert any("head 999" in w and "12 heads" in w for w in warnings), warnings


def test_a_link_opened_in_chinese_warns_in_chinese():
    """Issue 26: a link's warnings are catalogue sentences in the page's language (they were English on a Chinese
    page), and switching the language rewords the ones still shown; the switch's label names both languages."""
    at = _run_app({"lang": "zh", "slide": "maybe", "layer": "999"})
    warnings = [w.value.replace("\\", "") for w in [*at.warning, *at.sidebar.warning]]
    assert any(w == "分享链接：slide='maybe' 不是 0、1、true 或 false；改为关闭。" for w in warnings), warnings
    assert any("链接要求第 999 层，但这个模型只有 6 层" in w for w in warnings), warnings
    assert at.selectbox(key="lang").label == "语言 · Language"
    at.selectbox(key="lang").set_value("en").run()
    warnings = [w.value.replace("\\", "") for w in at.sidebar.warning]
    assert warnings == ["Share link: slide='maybe' is not 0, 1, true or false; using off instead."]
    assert at.selectbox(key="lang").label == "Language · 语言"


# --------------------------------------------------------------------------------------- teacher walkthrough (issue 17)

CHINESE = "动物没有过马路，因为它太累了。"  # the bundled model reads 11 of its 15 characters as [UNK]


def _stopping(*args, **kwargs):
    """Stands in for a page's analysis: the unknown-token warning is drawn before it, so the test need not wait."""
    from inspector.base.errors import InspectorError

    raise type("StoppedForTest", (InspectorError,), {})("stopped by the test after the warning")


@pytest.mark.parametrize("lang", ["en", "zh"])
# Every page that analyses the sidebar's text (the Ground truth page scores its own examples and does not warn:
# tests/test_groundtruth_page.py).
@pytest.mark.parametrize("page", ["inspect", "heads", "attribution", "lessons", "compare"])
def test_every_page_warns_when_the_model_cannot_read_the_text(page, lang, monkeypatch):
    import inspector.analyses.attribution
    import inspector.analyses.heads
    import inspector.analyses.lessons.registry

    # The pages' slow analyses stop at once with an error (shown by the page): the warning comes before them.
    monkeypatch.setattr(inspector.analyses.heads, "head_report", _stopping)
    monkeypatch.setattr(inspector.analyses.attribution, "attribute", _stopping)
    monkeypatch.setattr(inspector.analyses.lessons.registry, "compute_part", _stopping)
    at = AppTest.from_file(str(APP), default_timeout=APP_TIMEOUT_S)
    at.query_params["text"], at.query_params["lang"] = CHINESE, lang
    at.run()
    if page != "inspect":
        at.switch_page(f"views/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    warnings = [w.value.replace("\\", "") for w in at.warning if "[UNK]" in w.value.replace("\\", "")]
    assert len(warnings) == 1, [w.value for w in at.warning]
    expected = ("11 of its 15 tokens (73%)", "Models that read Chinese") if lang == "en" else \
        ("15 个词元中有 11 个", "能读中文的模型")
    assert all(part in warnings[0] for part in expected), warnings[0]
    assert "google-bert/bert-base-chinese" in warnings[0] and "Qwen/Qwen2.5-0.5B" in warnings[0]


def test_no_unknown_token_warning_for_a_text_the_model_reads():
    at = _run_app()
    assert not [w for w in at.warning if "[UNK]" in w.value.replace("\\", "")]


def test_the_model_menu_speaks_the_page_language_and_keeps_its_options():
    """The labels come from the catalogue in the page's language, short enough for the sidebar; the options (what
    the session and share links hold) are the specs, unchanged (issue 17)."""
    from inspector.core.loading import shipped_kind
    from views.sidebar import SUGGESTED_MODELS, model_choice_label

    at = _run_app({"lang": "zh"})
    menu = at.selectbox(key="model")
    shipped = [shipped_kind(spec, "zh") for spec in shipped_choices()]
    assert menu.value == "default" and menu.options[:3 + len(shipped)] == [
        "all-MiniLM-L6-v2（内置）", "Gemma 3 270M（内置）", "SmolLM2-135M-Instruct（内置）",
        *(f"已知答案：{name}" for name in shipped)]  # one term for "ground truth", the model's kind in Chinese
    assert not [option for option in menu.options if "bundled" in option or "Ground truth" in option]
    status = next(c.value.replace("\\", "") for c in at.caption if "all-MiniLM-L6-v2" in c.value.replace("\\", ""))
    assert "内置" in status and "bundled" not in status
    menu.set_value("shipped:planted-token").run()
    assert not at.exception and at.query_params["model"] in ("shipped:planted-token", ["shipped:planted-token"])
    # English: the labels as before (the bundled model's and the shipped models' cards' own).
    assert [model_choice_label(spec, label, "en") for spec, label in SUGGESTED_MODELS.items()] == list(
        SUGGESTED_MODELS.values())
    assert SUGGESTED_MODELS["default"] == "all-MiniLM-L6-v2 (bundled)"


def test_status_lines_name_a_shipped_model_as_its_menu_does():
    """The Ground truth page's status line said "shipped:deceptive-attention" (the spec) on a Chinese page."""
    from views.sidebar import shown_model_name

    assert shown_model_name("shipped:deceptive-attention", "zh") == "已知答案：欺骗性注意力分类器"
    assert shown_model_name("shipped:deceptive-attention", "en") == shipped_choices()["shipped:deceptive-attention"]
    assert shown_model_name("all-MiniLM-L6-v2 (bundled)", "zh") == "all-MiniLM-L6-v2（内置）"
    assert shown_model_name("org/some-model", "zh") == "org/some-model"


def test_the_model_picker_offers_models_that_read_chinese():
    at = _run_app()
    options = at.selectbox(key="model").options
    assert any("bert-base-chinese" in option for option in options)
    assert any("Qwen2.5-0.5B" in option for option in options)


def test_the_exported_grid_has_no_click_hint_and_names_the_backend_that_ran(monkeypatch):
    from streamlit.runtime.media_file_manager import MediaFileManager

    deferred = {}
    original = MediaFileManager.add_deferred

    def remember(self, data_callable, mimetype, coordinates, file_name=None, *, element_id=""):
        deferred[element_id] = data_callable
        return original(self, data_callable, mimetype, coordinates, file_name, element_id=element_id)

    monkeypatch.setattr(MediaFileManager, "add_deferred", remember)
    at = _run_app()
    on_screen = next(title for title in _chart_titles(at) if isinstance(title, dict)
                     and title_text(title).startswith("Head entropy"))
    # The page's grid still says so (in lines wrapped to its column).
    assert " ".join(on_screen["subtitle"]) == "Click a cell to show that head."
    svg = next(make() for element_id, make in deferred.items() if element_id.endswith("grid_svg"))
    assert "Head entropy" in svg and "Click a cell" not in svg
    assert "all-MiniLM-L6-v2 (bundled)" in svg and "backend torch" in svg and "backend auto" not in svg


def test_the_health_report_lets_every_cut_head_be_read():
    at = _run_app()
    at.switch_page("views/heads.py").run()
    assert not at.exception and not at.error
    shown = [md.value.replace("\\", "") for md in at.markdown]  # markdown-escaped report lines
    report = next(text for text in shown if "… and" in text and "more." in text)
    cut = int(report.split("… and ")[1].split(" more.")[0])  # the bundled model's default text: 54
    expander = next(e for e in at.expander if e.label == f"The other {cut} heads")
    listed = expander.markdown[0].value.replace("\\", "").splitlines()
    assert len(listed) == cut and all(line.startswith("- Layer ") for line in listed)
    assert not set(listed) & set(report.splitlines())  # only the heads the report cut


def test_a_misconfigured_hosted_instance_says_so_in_the_page_language(monkeypatch, tmp_path):
    """The operator's mistake (an allow-list that does not exist) is one error box, in the visitor's language."""
    from streamlit.testing.v1 import AppTest

    from views import session

    monkeypatch.setenv("INSPECTOR_HOSTED", "1")
    monkeypatch.setenv("INSPECTOR_ALLOWED_MODELS", str(tmp_path / "missing.toml"))
    session.hosting_policy.clear()
    try:
        at = AppTest.from_file(str(APP), default_timeout=120)
        at.query_params["lang"] = "zh"
        at.run()
        assert not at.exception
        assert [e.value for e in at.error if "此实例的配置有误" in e.value], [e.value for e in at.error]
    finally:
        monkeypatch.delenv("INSPECTOR_HOSTED")
        monkeypatch.delenv("INSPECTOR_ALLOWED_MODELS")
        session.hosting_policy.clear()


def test_a_page_waiting_for_the_long_text_confirmation_does_not_say_it_is_loading():
    """Issue 33: Attribution showed "Loading the model…" while it only waited for the >128-token confirmation."""
    at = AppTest.from_file(str(APP), default_timeout=240)
    at.query_params["text"] = "Attention routes information between tokens. " * 30
    at.switch_page("views/attribution.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.info, "the page asks before running every method on a long text"
    assert not [c.value for c in at.caption if "Loading the model" in c.value]


def test_the_model_menu_offers_the_bundled_decoders_in_the_page_language():
    """Issue 27: the decoders install with the app, so the menu offers them next to MiniLM (they were reachable only
    by typing their spec into "Other"); their labels read in 简体中文 on a Chinese page, and the spec is the option."""
    at = _run_app({"lang": "zh"})
    menu = at.selectbox(key="model")
    assert menu.options[:3] == ["all-MiniLM-L6-v2（内置）", "Gemma 3 270M（内置）", "SmolLM2-135M-Instruct（内置）"]
    english = _run_app({"lang": "en"}).selectbox(key="model")
    assert english.options[1:3] == ["Gemma 3 270M (bundled)", "SmolLM2-135M-Instruct (bundled)"]


def test_a_bundled_decoder_is_named_in_the_reader_s_language():
    from inspector.core.loading import model_label

    assert model_label("bundled:gemma-3-270m") == "Gemma 3 270M (bundled)"
    assert model_label("bundled:gemma-3-270m", "zh") == "Gemma 3 270M（内置）"
