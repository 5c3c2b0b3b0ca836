"""inspector/analyses/unknown_tokens.py (issue 17): the share of a text's tokens the model reads as [UNK], the warning
past
20 % naming models that read the text's script, in English and Chinese, and its line on the command line."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from inspector.analyses.unknown_tokens import (
    MODELS_FOR_SCRIPT,
    UNKNOWN_SHARE_LIMIT,
    UnknownTokens,
    script_of,
    unknown_token_share,
    unknown_tokens,
)
from inspector.base.errors import InspectorError
from inspector.base.examples import EXAMPLES
from inspector.base.i18n import t
from inspector.charts.sentences.unknown_tokens import unknown_tokens_warning, unreadable_text_warning
from inspector.cli import main

# The sentence of the issue: the bundled model reads 11 of its 15 characters as [UNK].
CHINESE = "动物没有过马路，因为它太累了。"
ENGLISH = "The animal didn't cross the street because it was too tired."


def test_share_counts_the_texts_tokens_not_the_special_ones():
    ids = np.array([101, 100, 7, 100, 102])  # [CLS] [UNK] x [UNK] [SEP]
    special = np.array([True, False, False, False, True])
    assert unknown_token_share(ids, special, unk_token_id=100) == (2, 3)
    # An [UNK] the tokenizer marks special still counts, as one of the text's tokens.
    assert unknown_token_share(ids, np.array([True, True, False, False, True]), unk_token_id=100) == (2, 3)
    # Byte-level tokenizers have no unknown token: nothing is unknown.
    assert unknown_token_share(ids, special, unk_token_id=None) == (0, 3)


def test_the_limit_is_more_than_a_fifth():
    assert UNKNOWN_SHARE_LIMIT == 0.2
    assert not UnknownTokens(unknown=1, total=5, model="m").too_many  # exactly 20 %: no warning
    assert UnknownTokens(unknown=2, total=9, model="m").too_many
    assert UnknownTokens(unknown=0, total=0, model="m").share == 0.0
    with pytest.raises(ValueError, match="between 0"):
        UnknownTokens(unknown=4, total=3, model="m")


def test_script_of_text():
    assert script_of(CHINESE) == "han"
    assert script_of("猫が道を渡らなかった。") == "kana"  # kana and Chinese characters mixed: Japanese
    assert script_of("고양이는 길을 건너지 않았다") == "hangul"
    assert script_of("Кошка не перешла улицу") == "other"
    assert script_of("plain ASCII, 123.") == "other"


def test_bundled_model_cannot_read_chinese_and_says_which_models_can(bundled):
    found = unknown_tokens(bundled, CHINESE)
    assert (found.unknown, found.total) == (11, 15)  # 有, ， 太 and 。 are in its vocabulary
    assert found.too_many and found.script == "han"
    assert found.suggested == MODELS_FOR_SCRIPT["han"]
    assert found.suggested[0] == "bundled:gemma-3-270m"  # the bundled model that reads Chinese first (issue 27)
    assert "google-bert/bert-base-chinese" in found.suggested and "Qwen/Qwen2.5-0.5B" in found.suggested
    english = unknown_tokens_warning(found, "en")
    assert "11 of its 15 tokens (73%)" in english and "Chinese" in english
    assert "google-bert/bert-base-chinese" in english and "Qwen/Qwen2.5-0.5B" in english
    chinese = unknown_tokens_warning(found, "zh")
    assert "15 个词元中有 11 个" in chinese and "能读中文的模型" in chinese and "Qwen/Qwen2.5-0.5B" in chinese
    assert unreadable_text_warning(bundled, CHINESE, "zh") == chinese


def test_the_chinese_example_says_it_needs_another_model(bundled):
    example = next(e for e in EXAMPLES if e.slug == "04-chinese")
    assert "needs a model that reads it" in example.title and "Gemma 3 270M (bundled)" in example.title
    assert unknown_tokens(bundled, example.text).too_many


def test_english_text_reads_without_a_warning(bundled):
    found = unknown_tokens(bundled, ENGLISH)
    assert found.unknown == 0 and found.total > 10 and not found.too_many
    assert unreadable_text_warning(bundled, ENGLISH) is None
    # A text that cannot be tokenised at all is the page's own error, not this warning.
    assert unknown_tokens(bundled, "   ") is None and unreadable_text_warning(bundled, "") is None


def test_the_catalogue_names_every_script():
    for script in MODELS_FOR_SCRIPT:
        assert t(f"unknown.script.{script}", "en") and t(f"unknown.script.{script}", "zh")


class _Stop(InspectorError):
    """Raised in place of the command's analysis: the warning comes before it, and the test need not wait."""


# Each text command and the library call it makes after loading the model (replaced by one that stops).
TEXT_COMMANDS = {
    "analyze": ("inspector.core.capture", "capture", []),
    "lessons": ("inspector.analyses.lessons.registry", "LessonContext", []),
    "heads": ("inspector.analyses.heads", "head_report", []),
    "attribute": ("inspector.analyses.attribution", "attribute", ["--methods", "attention"]),
}


@pytest.mark.parametrize("command", sorted(TEXT_COMMANDS))
def test_every_text_command_warns_on_stderr(command, monkeypatch, tmp_path, capsys):
    module, name, options = TEXT_COMMANDS[command]

    def stop(*args, **kwargs):
        raise _Stop("stopped after the warning")

    monkeypatch.setattr(importlib.import_module(module), name, stop)
    assert main([command, *options, "--text", CHINESE, "--json", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1, err
    assert "11 of its 15 tokens" in warnings[0] and "google-bert/bert-base-chinese" in warnings[0]
    assert err.index("warning: ") < err.index("stopped after the warning")


def test_the_lessons_command_warns_in_its_language(monkeypatch, capsys):
    def stop(*args, **kwargs):
        raise _Stop("stopped after the warning")

    monkeypatch.setattr(importlib.import_module("inspector.analyses.lessons.registry"), "LessonContext", stop)
    assert main(["lessons", "--lang", "zh", "--text", CHINESE]) == 2
    assert "能读中文的模型" in capsys.readouterr().err


def test_a_readable_text_gives_no_warning_on_the_command_line(tmp_path, capsys):
    assert main(["analyze", "--text", ENGLISH, "--json", str(tmp_path / "out.json")]) == 0
    assert "warning:" not in capsys.readouterr().err
