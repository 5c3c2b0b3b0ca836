"""Can the model read the text? The share of a text's tokens that the tokenizer could only map to its unknown
token (``[UNK]``), and a warning naming models that read the text's script (issue 17).

A WordPiece vocabulary built from English (the bundled all-MiniLM-L6-v2, bert-base-uncased) turns most Chinese
characters into ``[UNK]``: 「动物没有过马路，因为它太累了。」 becomes 11 ``[UNK]`` of 15 tokens. Every
measurement then describes attention between copies of one token, which says nothing about the sentence, so the
app and the command line say so whenever more than :data:`UNKNOWN_SHARE_LIMIT` of the text's tokens are unknown.
Byte-level tokenizers (GPT-2, Qwen2.5, Llama) never produce an unknown token and never warn.

Only the tokenizer runs here (on the CPU, no model call), so a page can ask on every rerun.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np

from inspector.base.errors import InspectorError
from inspector.core.forward import EncodedText, encode_text
from inspector.core.loading import LoadedModel

# More than this share of a text's tokens unknown to the model, and its attention says little about the text.
UNKNOWN_SHARE_LIMIT = 0.2

# Models that read each script, the bundled one first (it needs no download: bundled:gemma-3-270m, issue 27), then
# hub ids (typed into the sidebar's "Other" box or chosen from its list). Chinese characters: Gemma 3 (a 262k
# multilingual vocabulary), a BERT whose vocabulary is Chinese characters, and Qwen2.5 (byte-level BPE, trained on
# Chinese). Every other script: Gemma 3, Qwen2.5 and multilingual BERT (104 languages).
BUNDLED_MULTILINGUAL = "bundled:gemma-3-270m"
MODELS_FOR_SCRIPT: dict[str, tuple[str, ...]] = {
    "han": (BUNDLED_MULTILINGUAL, "google-bert/bert-base-chinese", "Qwen/Qwen2.5-0.5B"),
    "kana": (BUNDLED_MULTILINGUAL, "Qwen/Qwen2.5-0.5B", "google-bert/bert-base-multilingual-cased"),
    "hangul": (BUNDLED_MULTILINGUAL, "Qwen/Qwen2.5-0.5B", "google-bert/bert-base-multilingual-cased"),
    "other": (BUNDLED_MULTILINGUAL, "Qwen/Qwen2.5-0.5B", "google-bert/bert-base-multilingual-cased"),
}
# The first word of a character's Unicode name → its script in MODELS_FOR_SCRIPT.
_SCRIPT_OF_NAME = {"CJK": "han", "HIRAGANA": "kana", "KATAKANA": "kana", "HANGUL": "hangul"}


@dataclass(frozen=True)
class UnknownTokens:
    """How much of a text the model reads. unknown: tokens that are the tokenizer's unknown token; total: the
    text's tokens, special tokens ([CLS], [SEP], …) not counted; model: the model's name; script: the script of
    the characters that became unknown (a key of :data:`MODELS_FOR_SCRIPT`); suggested: models that read it
    (the model itself left out)."""

    unknown: int
    total: int
    model: str
    script: str = "other"
    suggested: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 0 <= self.unknown <= self.total:
            raise ValueError(f"unknown tokens ({self.unknown}) must be between 0 and the token count ({self.total})")
        if self.script not in MODELS_FOR_SCRIPT:
            raise ValueError(f"unknown script {self.script!r}; expected one of {sorted(MODELS_FOR_SCRIPT)}")

    @property
    def share(self) -> float:
        """unknown / total (0 for a text without tokens)."""
        return self.unknown / self.total if self.total else 0.0

    @property
    def too_many(self) -> bool:
        """More than :data:`UNKNOWN_SHARE_LIMIT` of the tokens are unknown: the model cannot read the text."""
        return self.share > UNKNOWN_SHARE_LIMIT


def script_of(text: str) -> str:
    """The script most of ``text``'s letters outside ASCII are written in (a key of :data:`MODELS_FOR_SCRIPT`):
    ``han`` for Chinese characters, ``kana`` for Japanese syllabaries, ``hangul`` for Korean, else ``other``."""
    counts: dict[str, int] = {}
    for char in text:
        if ord(char) < 128 or not unicodedata.category(char).startswith("L"):
            continue  # ASCII, punctuation, digits and marks say nothing about the script
        script = _SCRIPT_OF_NAME.get(unicodedata.name(char, "").split(" ")[0], "other")
        counts[script] = counts.get(script, 0) + 1
    if not counts:
        return "other"
    # Japanese mixes kana and Chinese characters: any kana at all makes it Japanese.
    if counts.get("kana"):
        return "kana"
    return max(counts, key=counts.__getitem__)


def unknown_token_share(ids: np.ndarray, special: np.ndarray, unk_token_id: int | None) -> tuple[int, int]:
    """(unknown, total) over a text's tokens: ``ids`` (q_len,) token ids, ``special`` (q_len,) bool, True for the
    tokens the tokenizer added ([CLS], [SEP], …). An unknown token counts even where the tokenizer marks it
    special. ``unk_token_id`` None (byte-level tokenizers have none): nothing is unknown."""
    ids, special = np.asarray(ids).reshape(-1), np.asarray(special, dtype=bool).reshape(-1)
    unknown = np.zeros_like(special) if unk_token_id is None else ids == unk_token_id
    return int(unknown.sum()), int((~special | unknown).sum())


def unknown_tokens(loaded: LoadedModel, text: str, encoded: EncodedText | None = None) -> UnknownTokens | None:
    """How much of ``text`` the model reads (its first ``max_positions`` tokens when longer), or None when the
    text cannot be tokenised at all (empty, …): the page's own run reports that error. ``encoded``: ``text`` already
    tokenised that way (``encode_text(loaded, text, truncate=True)``, a page's cached encoding that its run reuses);
    None: tokenised here."""
    if encoded is None:
        try:
            encoded = encode_text(loaded, text, truncate=True)
        except InspectorError:
            return None
    encoding = encoded.encoding
    ids = encoding["input_ids"][0].numpy()
    special = encoding["special_tokens_mask"][0].numpy().astype(bool)
    unk_id = loaded.codec.special_token_id("unk")
    unknown, total = unknown_token_share(ids, special, unk_id)
    script = script_of(_unknown_characters(encoding, text, ids == unk_id) if unknown else text)
    suggested = tuple(model for model in MODELS_FOR_SCRIPT[script] if model != loaded.info.name)
    return UnknownTokens(unknown=unknown, total=total, model=loaded.info.name, script=script, suggested=suggested)


def _unknown_characters(encoding, text: str, unknown: np.ndarray) -> str:
    """The characters of ``text`` that became unknown tokens (from a fast tokenizer's offsets), else all of it."""
    offsets = encoding.get("offset_mapping")
    if offsets is None:
        return text
    spans = offsets[0].tolist()
    return "".join(text[start:end] for (start, end), is_unknown in zip(spans, unknown) if is_unknown) or text
