"""inspector/base/examples.py: the bundled example texts, in file order, with titles and no trailing newline."""

from pathlib import Path

import pytest

from inspector.base.examples import DEFAULT_TEXT, EXAMPLES, Example, load_examples, title_from_slug


def test_examples_follow_file_name_order_and_strip_the_newline():
    slugs = [e.slug for e in EXAMPLES]
    assert slugs == sorted(slugs) and slugs[0] == "01-animal-street"
    assert len(slugs) == len(set(slugs)) >= 5
    assert all(e.text and not e.text.endswith("\n") and e.title for e in EXAMPLES)


def test_default_text_is_the_first_example():
    assert DEFAULT_TEXT == EXAMPLES[0].text == "The animal didn't cross the street because it was too tired."


def test_titles_from_slugs_and_new_files(tmp_path: Path):
    assert title_from_slug("01-animal-street") == "Animal street"
    assert title_from_slug("12-long_range") == "Long range"
    (tmp_path / "02-b.txt").write_text("second\n\n", encoding="utf-8")
    (tmp_path / "01-new-example.txt").write_text("first\r\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("ignored", encoding="utf-8")
    loaded = load_examples(tmp_path)
    assert loaded == (Example("01-new-example", "New example", "first"), Example("02-b", "B", "second"))


def test_an_empty_folder_or_an_empty_example_is_an_error(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="no example texts"):
        load_examples(tmp_path)
    with pytest.raises(ValueError, match="no text"):
        Example("x", "X", "  ")
