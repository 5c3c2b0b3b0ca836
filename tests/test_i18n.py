"""inspector/i18n.py: one catalogue, every key in every language with the same placeholders."""

import re

import pytest

from inspector.i18n import CATALOGUE, DEFAULT_LANGUAGE, LANGUAGE_NAMES, LANGUAGES, placeholders, t


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
