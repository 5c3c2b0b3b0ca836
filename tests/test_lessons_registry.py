"""The lesson registry (inspector/analyses/lessons/registry.py; issue 39, Build 3): one contract checked at
registration; every registered lesson writes its JSON through ``inspector lessons`` (the page's twin covers every
lesson, the sliding-window and linear-attention lessons included) and has its drawing on the Lessons page."""

from __future__ import annotations

import json

import pytest

from inspector.analyses.lessons.registry import (
    LESSONS,
    PARTS,
    Lesson,
    LessonContext,
    compute_part,
    lesson_answers,
    lesson_count,
    lessons_of,
    register_lesson,
)
from inspector.base.i18n import CATALOGUE, LANGUAGES
from inspector.output.share import LESSON_COUNT
from tests.conftest import save_tiny_model

TEXT = "the animal did n't cross the street because it was too tired ."


def test_the_registry_numbers_every_lesson_once_with_its_sentences():
    assert lesson_count() == LESSON_COUNT == 19  # a link's lesson=N reaches every one
    assert [lesson.number for lesson in LESSONS.values()] == list(range(1, lesson_count() + 1))
    assert {lesson.part for lesson in LESSONS.values()} == set(PARTS)
    assert [lesson.slug for lesson in lessons_of("decoder")][:2] == ["causal", "rope"]
    for lesson in LESSONS.values():
        assert all(CATALOGUE[f"{lesson.key}.title"][lang].strip() for lang in LANGUAGES), lesson.slug
        assert lesson.compute is not None or lesson.on_request is not None
    # A lesson added later is drawn beside the one it extends: 19 (position codes) after 3, 18 (head size) after 4.
    assert [lesson.number for lesson in lessons_of("encoder")] == [1, 2, 3, 19, 4, 18, 5, 6, 7]


NEXT = lesson_count() + 1  # the number a new lesson would take


@pytest.mark.parametrize("lesson, match", [
    (Lesson(LESSON_COUNT + 1, "definition", "encoder", compute=len), "already registered"),
    (Lesson(3, "new", "encoder", compute=len), "not the next one"),
    (Lesson(LESSON_COUNT + 1, "new", "encoder", compute=len), f"lesson{LESSON_COUNT + 1}.title"),
])
def test_registering_a_lesson_checks_it_against_the_others(lesson, match):
    before = dict(LESSONS)
    with pytest.raises(ValueError, match=match):
        register_lesson(lesson)
    assert LESSONS == before


@pytest.mark.parametrize("kwargs, match", [
    (dict(number=1, slug="x", part="encoder"), "compute, on_request"),
    (dict(number=1, slug="x", part="sidebar", compute=len), "part"),
    (dict(number=0, slug="x", part="encoder", compute=len), "positive"),
    (dict(number=True, slug="x", part="encoder", compute=len), "positive"),
])
def test_a_lesson_refuses_what_no_lesson_can_be(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Lesson(**kwargs)


def test_one_context_shares_the_encoder_lessons_forward(tiny_bert, monkeypatch):
    import inspector.analyses.lessons.registry as registry

    calls = []
    real = registry._run
    monkeypatch.setattr(registry, "_run", lambda *a: calls.append(a) or real(*a))
    results = compute_part("encoder", LessonContext(tiny_bert, TEXT, 1, 2))
    assert list(results) == [lesson.slug for lesson in lessons_of("encoder") if lesson.compute is not None]
    assert len(calls) == 1  # lessons 1–6 on one baseline forward, as the page's one cached call did
    assert all(lesson_answers(result) for result in results.values())


def test_the_page_draws_every_registered_lesson_of_its_part():
    from views import lessons_decoder, lessons_encoder

    assert list(lessons_encoder.DRAW) == [lesson.slug for lesson in lessons_of("encoder")]
    assert list(lessons_decoder.DRAW) == [lesson.slug for lesson in lessons_of("decoder")]
    assert [lesson.slug for lesson in lessons_of("quiz")] == ["quiz"]  # views/lesson_quiz.py


@pytest.fixture(scope="module")
def model_folders(tmp_path_factory):
    """A tiny BERT (the encoder) and a tiny Mistral causal LM with a window of 4 (so the window lesson applies)."""
    root = tmp_path_factory.mktemp("lesson-models")
    return save_tiny_model(root / "bert", "bert"), save_tiny_model(root / "mistral", "mistral", with_head=True)


@pytest.mark.parametrize("slug", list(LESSONS))
def test_every_registered_lesson_writes_its_json_from_the_command_line(model_folders, tmp_path, slug):
    from inspector.cli import main

    bert, mistral = model_folders
    out = tmp_path / "lesson.json"
    assert main(["lessons", "--model", str(bert), "--decoder", str(mistral), "--text", TEXT, "--lengths", "16,32",
                 "--lessons", slug, "--lang", "zh", "--json", str(out)]) == 0
    payload = json.loads(out.read_text(encoding="utf-8"))
    assert list(payload["lessons"]) == [slug] and payload["skipped"] == {}
    written = payload["lessons"][slug]
    lesson = LESSONS[slug]
    assert written["number"] == lesson.number
    assert ("result" in written) == (lesson.compute is not None)
    assert ("requested" in written) == (lesson.on_request is not None)
    answers = [part["answer"] for part in written.values() if isinstance(part, dict) and "answer" in part]
    answers += [part["answer"] for kind in ("result",) if isinstance(written.get(kind), dict)
                for part in written[kind].values() if isinstance(part, dict) and "answer" in part]
    assert slug == "quiz" or answers, slug  # every lesson but the quiz's measure writes an answer …
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in answer) for answer in answers)  # … in the reader's language


def test_a_decoder_lesson_needs_a_decoder_and_a_name_must_be_registered(model_folders, capsys):
    from inspector.cli import main

    bert, _ = model_folders
    assert main(["lessons", "--model", str(bert), "--text", TEXT, "--lessons", "window"]) == 2
    assert "add --decoder" in capsys.readouterr().err
    assert main(["lessons", "--model", str(bert), "--text", TEXT, "--lessons", "definition,nope"]) == 2
    assert "expected names from definition" in capsys.readouterr().err
