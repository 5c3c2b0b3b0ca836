"""inspector/base/i18n.py and inspector/base/catalogue/: one catalogue merged from a module per page, every key in
every language with the same placeholders, every key used."""

import re
from pathlib import Path
from types import ModuleType

import pytest

from inspector.base.i18n import (
    CATALOGUE,
    DEFAULT_LANGUAGE,
    DYNAMIC_KEY_FAMILIES,
    LANGUAGE_NAMES,
    LANGUAGES,
    PAGE_MODULES,
    placeholders,
    t,
)


def test_every_key_has_every_language_and_the_same_placeholders():
    assert set(LANGUAGE_NAMES) == set(LANGUAGES) and DEFAULT_LANGUAGE in LANGUAGES
    for key, entry in CATALOGUE.items():
        assert set(entry) == set(LANGUAGES), key
        assert all(entry[lang].strip() for lang in LANGUAGES), key
        expected = placeholders(key, DEFAULT_LANGUAGE)
        for lang in LANGUAGES:
            assert placeholders(key, lang) == expected, (key, lang)


def test_chinese_entries_are_translated_not_copied():
    # Names (Triton FlashAttention) may stay as they are; everything with words to translate has Chinese in it.
    untranslated = [key for key, entry in CATALOGUE.items()
                    if entry["zh"] == entry["en"] and re.search(r"[a-z]{4,}", entry["en"])
                    and key != "backend.triton"]
    assert untranslated == []
    assert sum(bool(re.search(r"[\u4e00-\u9fff]", entry["zh"])) for entry in CATALOGUE.values()) > 0.9 * len(CATALOGUE)


def test_t_fills_placeholders_and_falls_back_to_english():
    assert t("inspect.every_head", "en", layer=3) == "Every head of layer 3"
    assert t("inspect.every_head", "zh", layer=3) == "第 3 层的所有头"
    assert t("inspect.layer", "fr") == "Layer"
    with pytest.raises(KeyError):
        t("no.such.key")
    with pytest.raises(KeyError):
        t("inspect.every_head", "en")  # the placeholder's value is missing



def test_plural_forms_follow_the_count_in_english_and_chinese_needs_none():
    """Issue 31: "1 text(s)", "1 head(s)", "1 of 72 heads are" read as drafts; a count picks its form."""
    assert t("heads.progress_start", "en", n=1) == "Measuring 1 text…"
    assert t("heads.progress_start", "en", n=3) == "Measuring 3 texts…"
    assert t("heads.progress_start", "zh", n=1) == "正在测量 1 段文本…"
    one = t("heads.measuring", "en", heads=1, n=1)
    assert one == "Measuring 1 head on 1 text…"
    assert t("heads.measuring", "en", heads=72, n="1,000") == "Measuring 72 heads on 1,000 texts…"
    assert placeholders("heads.measuring", "en") == {"heads", "n"}
    assert not [key for key, entry in CATALOGUE.items() if "(s)" in entry["en"]]


CJK_CHARACTER = "\u4e00-\u9fff"


def test_chinese_sentences_use_full_width_punctuation_and_one_term_for_ground_truth():
    """A comma, colon, semicolon, question or exclamation mark next to a Chinese character is full width, and a
    parenthesis around Chinese words is too (a formula's f(x) or log(…) keeps its ASCII brackets). "Ground truth"
    is 已知答案 everywhere (the menu said 已知答案, a page 真值); materialised is not 物化; CPU is upper case."""
    # A space between does not make it a formula (issue 44: "查询头 : 键/值头"); nor does a Chinese word before an
    # ASCII bracket ("秩(S)").
    half = re.compile(f"[{CJK_CHARACTER}]\\s?[,;:?!]|[,;:?!]\\s?[{CJK_CHARACTER}]")
    bracket = re.compile(f"(?<![A-Za-z0-9_ᵀ])\\([^()]*[{CJK_CHARACTER}][^()]*\\)|[{CJK_CHARACTER}]\\s?\\(")
    for key, entry in CATALOGUE.items():
        zh = entry["zh"]
        assert not half.search(zh) and not bracket.search(zh), (key, zh)
        assert "真值" not in zh and "物化" not in zh and "cpu" not in zh, (key, zh)
    assert t("nav.groundtruth", "zh") in t("model.ground_truth", "zh", name="x")


@pytest.mark.parametrize("chosen, others", [("汇点", ("汇聚", "吸收点", "沉没")), ("侧边栏", ("侧栏", "边栏"))])
def test_chinese_uses_one_term_for_sink_and_for_sidebar(chosen, others):
    """Issue 44 item 9: an attention sink is 汇点 and the sidebar 侧边栏 on every page (the census said 汇聚点, a hint
    侧栏). 边栏 is part of 侧边栏, so it is looked for outside the chosen term."""
    uses = 0
    for key, entry in CATALOGUE.items():
        zh = entry["zh"].replace(chosen, "")
        uses += entry["zh"].count(chosen)
        assert not any(other in zh for other in others), (key, entry["zh"])
    assert uses > 10  # the chosen term is the one in use, not a word nobody writes


# ------------------------------------------------------------------ the catalogue by page (issue 26)

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE_FOLDER = ROOT / "inspector" / "base" / "catalogue"


def _code() -> str:
    """The code that shows the catalogue's sentences: the library, the pages and the shell — not the catalogue."""
    files = [*sorted((ROOT / "inspector").rglob("*.py")), *sorted((ROOT / "views").rglob("*.py")), ROOT / "app.py"]
    return "\n".join(path.read_text(encoding="utf-8") for path in files
                     if CATALOGUE_FOLDER not in path.parents and path != ROOT / "inspector" / "base" / "i18n.py")


def _family(pattern: str) -> re.Pattern[str]:
    """A DYNAMIC_KEY_FAMILIES pattern as a regex: ``{name}`` is one key part (no dot)."""
    return re.compile("".join("[A-Za-z0-9_-]+" if part.startswith("{") else re.escape(part)
                              for part in re.split(r"(\{\w+\})", pattern)))


def test_every_key_is_named_in_the_code_or_built_by_a_listed_family():
    code = _code()
    families = [_family(pattern) for pattern in DYNAMIC_KEY_FAMILIES]
    unused = [key for key in CATALOGUE if f'"{key}"' not in code and f"'{key}'" not in code
              and not any(family.fullmatch(key) for family in families)]
    assert unused == []  # delete the key, or list the family that builds it in i18n.DYNAMIC_KEY_FAMILIES
    assert len(CATALOGUE) > 700  # the code was read: the catalogue is not checked over an empty case


def test_every_dynamic_family_builds_a_key_and_is_built_by_the_code():
    code = _code()
    for pattern in DYNAMIC_KEY_FAMILIES:
        family = _family(pattern)
        matched = [key for key in CATALOGUE if family.fullmatch(key)]
        assert matched, pattern  # a family nothing matches: its code is gone, so is the family
        # The family's keys are not all named literally too, or the family would be listed for nothing.
        assert any(f'"{key}"' not in code and f"'{key}'" not in code for key in matched), pattern


def test_every_catalogue_module_is_merged_in_page_order():
    names = {path.stem for path in CATALOGUE_FOLDER.glob("*.py")} - {"__init__"}
    assert [module.__name__.rsplit(".", 1)[1] for module in PAGE_MODULES][:2] == ["common", "sidebar"]
    assert {module.__name__.rsplit(".", 1)[1] for module in PAGE_MODULES} == names
    assert sum(len(module.ENTRIES) for module in PAGE_MODULES) == len(CATALOGUE)


def _module(name: str, *entries: tuple) -> ModuleType:
    module = ModuleType(f"inspector.base.catalogue.{name}")
    module.ENTRIES = entries
    return module


def test_the_merge_fails_loudly_on_a_duplicate_key_or_a_missing_language():
    from inspector.base.i18n import _merged

    good = _module("a", ("x.one", "One", "一"))
    assert _merged([good], LANGUAGES) == {"x.one": {"en": "One", "zh": "一"}}
    with pytest.raises(ValueError, match=r"'x\.one' is defined twice \(also in inspector\.base\.catalogue\.a\)"):
        _merged([good, _module("b", ("x.one", "Again", "又"))], LANGUAGES)
    with pytest.raises(ValueError, match="defined twice"):  # inside one module too (a dict would keep the last)
        _merged([_module("a", ("x.one", "One", "一"), ("x.one", "One", "一"))], LANGUAGES)
    # Too few texts, a missing comma (two strings joined into one), an empty or absent text, one text too many.
    for bad in [("x.two", "Two"), ("x.two", "Two" "二"), ("x.two", "Two", ""), ("x.two", "Two", None),
                ("x.two", "Two", "二", "deux")]:
        with pytest.raises(ValueError, match="one text per language"):
            _merged([_module("a", bad)], LANGUAGES)


# ------------------------------------------------------------------ sentences built from numbers (issue 15)

from collections.abc import Iterable  # noqa: E402
from dataclasses import replace  # noqa: E402
from string import Formatter  # noqa: E402

import numpy as np  # noqa: E402

CJK = re.compile(r"[\u4e00-\u9fff]")
# Three or more English words in a row: a sentence (or a piece of one) left untranslated.
ENGLISH_RUN = re.compile(r"[A-Za-z][A-Za-z'’-]*(?:[ ,]+[A-Za-z][A-Za-z'’-]*){2,}")
# Catalogue sections whose Chinese pages and sentences the tests below read.
ISSUE_15_PREFIXES = ("heads.", "gt.", "notice.")


def english_runs(text: str, allowed: Iterable[str] = ()) -> list[str]:
    """Runs of three or more English words in ``text`` once the ``allowed`` names (models, methods, tokens) are
    taken out — what a Chinese page or report must not show."""
    for name in sorted(allowed, key=len, reverse=True):
        text = text.replace(name, " ")
    return ENGLISH_RUN.findall(text)


def english_phrases(prefixes: Iterable[str] = ISSUE_15_PREFIXES) -> set[str]:
    """The English phrases (three words or more between placeholders) of the catalogue entries under
    ``prefixes`` that their Chinese does not share (a paper title both keep is not a phrase to look for)."""
    phrases = set()
    for key, entry in CATALOGUE.items():
        if key.startswith(tuple(prefixes)):
            for literal, *_ in Formatter().parse(entry["en"]):
                phrases.update(run for run in ENGLISH_RUN.findall(literal) if run not in entry["zh"])
    return phrases


def _head_reports(loaded):
    """One tiny report and variants reaching every kind of line: all heads diffuse (the random model), all
    collapsed, sinks that move no value, induction heads found, none found, and none measurable."""
    from inspector.analyses.heads import head_report, with_thresholds
    from inspector.analyses.metrics import HealthThresholds

    report = head_report(loaded, "the cat sat on the mat , the cat ran")
    stats = report.statistics
    sink_mass = stats.token_mass.copy()
    sink_mass[..., 0] = 0.9  # [CLS] gets most of the attention …
    idle = replace(report, statistics=replace(stats, token_mass=sink_mass,
                                              norm_token_mass=np.zeros_like(stats.norm_token_mass)))  # … no value
    many = np.full_like(stats.induction, 0.9)
    return [report, with_thresholds(report, HealthThresholds(collapsed=0.99999, diffuse=1.0)), idle,
            replace(report, statistics=replace(stats, induction=many)),
            replace(report, statistics=replace(stats, induction=np.full_like(many, 0.1))),
            replace(report, statistics=replace(stats, induction=np.full_like(many, np.nan)))]


def test_health_report_in_chinese_has_no_english_sentence(tiny_bert):
    from inspector.charts.sentences.heads import health_report

    reports = _head_reports(tiny_bert)
    for report in reports:
        english, chinese = health_report(report), health_report(report, "zh")
        assert english == health_report(report, "en") and len(chinese) == len(english)
        assert english_runs(english[0])  # the detector sees English where there is English
        for line in chinese:
            assert CJK.search(line), line
            assert english_runs(line, {report.info.name}) == [], line
    # Every kind of line was written (not a check over an empty case): collapsed, diffuse, idle sinks, induction.
    joined = "\n".join(line for report in reports for line in health_report(report))
    for fragment in ("(collapsed)", "(diffuse)", "heavy sink attention", "Induction heads (", "No induction head",
                     "No token repeats", "… and", "Attention-alike pair", "Pruning by"):
        assert fragment in joined, fragment


def _board(task_name: str, variant: str, *, faint: bool = True, peaks: bool = True, stated: float = 0.99):
    """A hand-made scoreboard whose numbers reach every sentence of the reading: methods above chance, level with
    it, below it, right by magnitude only, finding the mechanism only; a head peak; an accuracy below its card."""
    from inspector.analyses.attribution import METHODS
    from inspector.analyses.groundtruth import ModelCard, Scoreboard
    from inspector.analyses.tasks import task

    m, count = len(METHODS), 20
    rate = {"attention": 0.9, "rollout": 0.2, "norm": 0.0, "gradient": 0.05, "grad_x_input": 0.6,
            "integrated_gradients": 0.3, "occlusion": 0.95, "value_zeroing": 0.1, "random": 0.1}
    top1 = np.array([rate[name] for name in METHODS])
    low, high = np.clip(top1 - 0.15, 0, 1), np.clip(top1 + 0.15, 0, 1)
    magnitude = top1.copy()
    magnitude[METHODS.index("gradient")] = 0.9  # right token, wrong sign
    mechanism = top1.copy()
    mechanism[METHODS.index("integrated_gradients")] = 0.8  # the A's, not B
    mean_rank = np.where(top1 == 0.0, 9.0, 3.0)
    head_top1 = np.zeros((2, 3)) if not peaks else np.array([[0.1, 0.7, 0.2], [0.0, 0.3, 0.1]])
    card = ModelCard(task=task(task_name), variant=variant, label="hand-made", stated_accuracy=stated, accuracy=1.0,
                     accuracy_examples=100, causal_attention_mass=0.01,
                     attention_bound=0.05 if variant == "deceptive" else None, training={})
    return Scoreboard(
        model_name="shipped:hand-made", card=card, methods=METHODS, k=3, seed=1, ranks=np.ones((count, m), np.int64),
        content=np.full(count, 10, np.int64), top1=top1, top1_low=low, top1_high=high, topk=np.clip(top1 + 0.1, 0, 1),
        topk_low=low, topk_high=high, mean_rank=mean_rank, mean_rank_low=mean_rank - 1, mean_rank_high=mean_rank + 1,
        chance_top1=0.1, chance_topk=0.3, chance_rank=5.5, accuracy=0.9, accuracy_low=0.7, accuracy_high=0.97,
        attention_mass=np.full(count, 0.01), head_top1=head_top1,
        head_weight=np.full((2, 3), 0.01 if faint else 0.4), mechanism_top1=mechanism,
        mechanism_top1_low=np.clip(mechanism - 0.15, 0, 1), mechanism_top1_high=np.clip(mechanism + 0.15, 0, 1),
        magnitude_top1=magnitude, magnitude_top1_low=np.clip(magnitude - 0.15, 0, 1),
        magnitude_top1_high=np.clip(magnitude + 0.15, 0, 1), seconds=1.0)


def test_ground_truth_reading_in_chinese_has_no_english_sentence():
    from inspector.charts.sentences.groundtruth import hit_rate_words, reading

    boards = [_board("induction", "deceptive"), _board("planted-token", "honest", faint=False, stated=0.5),
              _board("planted-token", "deceptive", peaks=False)]
    english = "\n".join(line for board in boards for line in reading(board))
    for fragment in ("Better than chance", "Not distinguishable from chance", "Worse than chance",
                     "The random baseline", "Attention-based methods", "trained to keep its attention off",
                     "Found the mechanism", "Right token, wrong sign", "a peak among near-zero weights",
                     "with a mean weight of 40.0% on it.", "No head's attention row", "Caution:"):
        assert fragment in english, fragment
    # The methods are named in Chinese too (issue 17): their English labels are not allowed names.
    allowed = {"shipped:hand-made"}
    for board in boards:
        for words in (reading, hit_rate_words):
            assert words(board) == words(board, "en")
            chinese = words(board, "zh")
            assert len(chinese) == len(words(board)) and english_runs(words(board)[0], allowed)
            for line in chinese:
                assert CJK.search(line), line
                assert english_runs(line, allowed) == [], line
            assert "积分梯度" in "\n".join(chinese) and "integrated gradients" in "\n".join(words(board))


def test_task_texts_in_the_catalogue_are_the_tasks_own():
    from inspector.analyses.tasks import TASKS
    from inspector.charts.sentences.groundtruth import task_words

    for name, spec in TASKS.items():
        for field in ("name", "description", "truth"):
            assert t(f"gt.task.{name}.{field}", "en") == getattr(spec, field), (name, field)
            assert CJK.search(task_words(spec, field, "zh")), (name, field)


def test_a_notice_is_its_english_text_and_translates():
    import pickle

    from inspector.base.i18n import Notice, notice_text

    notice = Notice("notice.oom_fewer_weights", where="GPU", layer=3)
    assert isinstance(notice, str) and notice == t("notice.oom_fewer_weights", "en", where="GPU", layer=3)
    assert "layer 3's only" in notice and notice.text("zh") == t("notice.oom_fewer_weights", "zh", where="GPU", layer=3)
    restored = pickle.loads(pickle.dumps(notice))  # st.cache_data pickles captures and their notices
    assert isinstance(restored, Notice) and restored == notice and restored.text("zh") == notice.text("zh")
    assert notice_text(notice, "zh") == notice.text("zh") and notice_text("plain words", "zh") == "plain words"


def test_the_english_phrases_the_page_tests_look_for_exist():
    phrases = english_phrases()
    assert {"Better than chance", "Every head at a glance", "ran out of memory"} <= phrases
    assert not any("Learning to Deceive" in phrase for phrase in phrases)  # a title both languages keep


# Elements whose words the page tests read; charts keep English titles for now (a later issue translates them).
_CHART_TYPES = {"arrow_vega_lite_chart", "vega_lite_chart"}
_TEXT_FIELDS = {"body", "label", "help", "options", "content", "placeholder", "text"}


def page_texts(at) -> list[str]:
    """Every string the main area of an ``AppTest`` page shows (bodies, labels, help, options, table columns and
    cells, expander and tab labels) — charts left out."""
    from google.protobuf.json_format import MessageToDict

    texts: list[str] = []

    def strings(value, field: str | None = None) -> None:
        if isinstance(value, dict):
            for name, inner in value.items():
                strings(inner, name)
        elif isinstance(value, list):
            for inner in value:
                strings(inner, field)
        elif isinstance(value, str) and field in _TEXT_FIELDS:
            texts.append(value.replace("\\", ""))

    def walk(node) -> None:
        kind = getattr(node, "type", None)
        if kind in _CHART_TYPES:
            return
        if kind in ("dataframe", "arrow_data_frame"):
            frame = node.value
            texts.extend(str(column) for column in frame.columns)
            texts.extend(str(cell) for cell in frame.to_numpy().ravel() if isinstance(cell, str))
            return
        proto = getattr(node, "proto", None)
        if proto is not None:
            strings(MessageToDict(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at.main)
    return texts


def untranslated(texts: list[str], prefixes: Iterable[str] = ISSUE_15_PREFIXES) -> list[str]:
    """What a Chinese page must not show: a catalogue key itself, a whole English entry of ``prefixes`` (headings,
    labels) or an English phrase of one (sentences)."""
    whole = {entry["en"] for key, entry in CATALOGUE.items()
             if key.startswith(tuple(prefixes)) and not placeholders(key, "en") and entry["en"] != entry["zh"]}
    phrases = english_phrases(prefixes)
    found = [f"key {key!r}" for key in CATALOGUE for text in texts if re.search(rf"(?<![\w.]){re.escape(key)}\b", text)]
    found += [f"entry {text!r}" for text in texts if text.strip() in whole]
    found += [f"phrase {phrase!r} in {text[:80]!r}" for text in texts for phrase in phrases if phrase in text]
    return found


@pytest.mark.parametrize("spec", ["shipped:planted-token", "shipped:induction"])
def test_the_target_in_chinese_says_what_the_attribution_report_says(spec):
    from inspector.analyses.groundtruth import card_for, score_example
    from inspector.analyses.tasks import FRESH_SEED, generate
    from inspector.charts.sentences.groundtruth import target_words
    from inspector.core.loading import load_model

    loaded = load_model(spec)
    card = card_for(loaded)
    example = generate(card.task.name, 1, seed=FRESH_SEED)[0]
    scored = score_example(loaded, example, card, methods=("attention",))
    assert scored.predicted == scored.answer  # the shipped models answer this one right: "(… prediction)" applies
    key = "gt.target.class" if card.task.kind == "classifier" else "gt.target.next_token"
    values = {"label" if card.task.kind == "classifier" else "token": scored.answer,
              "prediction": t(f"{key}_prediction", "en")}
    assert t(key, "en", **values) == scored.target == target_words(scored, card.task.kind)
    chinese = target_words(scored, card.task.kind, "zh")
    assert CJK.search(chinese) and english_runs(chinese) == [] and scored.answer in chinese


def test_heatmap_notes_translate():
    from inspector.analyses.heatmap import HeatmapOptions, layer_views
    from inspector.base.i18n import Notice, notice_text
    from inspector.core.capture import capture
    from inspector.core.loading import load_model

    result = capture(load_model("default"), "Unbelievably, the tokenizer splits words.", weights=(0,))
    notes = layer_views(result, 0, HeatmapOptions(drop_sink=True, words=True, hide_special=True))[0].notes
    assert len(notes) == 3 and all(isinstance(note, Notice) for note in notes)
    assert notes[1].startswith("Word view:") and "tokens merged into" in notes[1]  # a word of several pieces
    for note in notes:
        assert CJK.search(notice_text(note, "zh")) and english_runs(notice_text(note, "zh")) == [], note
