"""Lesson D9 (issue 40, Teaching; the seed's §7.3 — check attention against ablation): is the token the heads look at
the reason for the answer?

On a clean/corrupted pair (the Mechanism page's example, :func:`inspector.base.examples.mechanism_example`: "… The
capital of Italy is" / "… of Spain is", answer " Rome", contrast " Madrid"), the lesson measures two lists side by side
and writes its answer from them, never without them:

- *where the heads look*: the token that gets the most attention from the last position, summed over every head
  (the first token, where idle heads park their weight, and the last token itself left out), and the heads that put
  the most weight on it (the same weights as the Mechanism page's attention grid, from
  :func:`~inspector.analyses.mechanism.direct_logit_attribution` with that key);
- *what the answer needs*: the heads whose clean output, patched into the corrupted run at every position, restores
  the most of the logit difference answer − contrast (activation patching, Meng et al. 2022 and Wang et al. 2022 —
  :func:`~inspector.analyses.mechanism.activation_patching`; 0 = the corrupted run, 1 = the clean run);

and counts the heads in both lists. The direct-logit-attribution heads (what writes the answer straight into the
logits) come with it, for the page's third column.

A model that cannot read the example pair (its answer is not one token of its vocabulary, or the two texts tokenise
to different counts) gets a pair made from the reader's text instead: one word replaced by another word of the text,
the answer the model's own top prediction and the contrast its runner-up (:func:`lesson_pair`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inspector.analyses.lessons.common import Answer
from inspector.analyses.mechanism import activation_patching, direct_logit_attribution, token_id
from inspector.base.errors import InvalidRequestError
from inspector.base.examples import MECHANISM_EXAMPLES
from inspector.base.progress import Progress
from inspector.base.tokens import is_byte_level, readable_token
from inspector.core.forward import encode_text, forward
from inspector.core.loading import LoadedModel

TOP_HEADS = 3  # heads named in each list
_MAX_SWAPS = 64  # word replacements tried when a pair is made from the reader's text


@dataclass(frozen=True)
class MechanismPair:
    """A clean and a corrupted text of one token count; ``answer``/``contrast`` the tokens of the metric (None: the
    model's own top prediction on the clean text, and its runner-up). source: "example" (the page's pair in
    ``lang``) or "text" (made from the reader's text)."""

    clean: str
    corrupted: str
    answer: str | None
    contrast: str | None
    source: str
    lang: str | None = None


@dataclass(frozen=True)
class MechanismLesson:
    """Lesson D9's numbers on one pair.

    attended_position/attended_token: the key the last position's heads weigh most (summed over every head, first
    and last tokens left out). attending: (k, 2) int64 (layer, head), the heads with the most weight on it, and
    attending_weights: (k,) their weights. restoring: (k, 2) int64, the heads whose patching restores the most, and
    restored: (k,) the fraction each restores (0 = corrupted, 1 = clean). writing: (k, 2) int64 and direct: (k,) the
    heads with the largest direct logit attribution of answer − contrast on the clean text. shared: heads in both
    ``attending`` and ``restoring``. clean_value, corrupted_value: the two runs' logit differences. answer_text,
    contrast_text: the answer and the contrast as the measurement was given them (the Mechanism page's fields);
    answer_token, contrast_token: the vocabulary's strings."""

    model: str
    clean: str
    corrupted: str
    source: str
    answer_text: str
    contrast_text: str
    answer_token: str
    contrast_token: str
    attended_position: int
    attended_token: str
    attending: np.ndarray
    attending_weights: np.ndarray
    restoring: np.ndarray
    restored: np.ndarray
    writing: np.ndarray
    direct: np.ndarray
    shared: int
    clean_value: float
    corrupted_value: float
    answer: Answer
    verdict: Answer

    def __post_init__(self) -> None:
        k = len(self.attending)
        for name in ("attending", "restoring", "writing"):
            if getattr(self, name).shape != (k, 2):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected ({k}, 2)")
        for name in ("attending_weights", "restored", "direct"):
            if getattr(self, name).shape != (k,):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected ({k},)")
        if not 0 <= self.shared <= k:
            raise ValueError(f"shared must lie in 0 … {k}; got {self.shared}")

    @property
    def answers(self) -> tuple[Answer, ...]:
        return self.answer, self.verdict


def _single_token(loaded: LoadedModel, token: str) -> bool:
    try:
        return token_id(loaded, token, "the token") != loaded.codec.special_token_id("unk")
    except InvalidRequestError:
        return False


def _token_count(loaded: LoadedModel, text: str) -> int:
    return len(encode_text(loaded, text).tokens)


def example_fits(loaded: LoadedModel, example: dict[str, str]) -> bool:
    """Whether ``loaded`` reads an example pair: both texts of one token count and different, the answer and the
    contrast two different single tokens of its vocabulary."""
    if not (_single_token(loaded, example["answer"]) and _single_token(loaded, example["contrast"])):
        return False
    if token_id(loaded, example["answer"], "") == token_id(loaded, example["contrast"], ""):
        return False
    clean, corrupted = encode_text(loaded, example["clean"]), encode_text(loaded, example["corrupted"])
    return len(clean.tokens) == len(corrupted.tokens) and clean.tokens != corrupted.tokens


def pair_from_text(loaded: LoadedModel, text: str) -> MechanismPair:
    """A pair made from ``text``: the first word replaced by another word of the text such that both tokenise to one
    count and differ (at most :data:`_MAX_SWAPS` tries). :class:`InvalidRequestError` when none does."""
    words = text.split()
    n = _token_count(loaded, text)
    distinct = list(dict.fromkeys(words))
    tries = 0
    for index, word in enumerate(words[:-1]):
        for other in distinct:
            if other == word:
                continue
            if tries == _MAX_SWAPS:
                break
            tries += 1
            corrupted = " ".join(words[:index] + [other] + words[index + 1:])
            if _token_count(loaded, corrupted) == n and encode_text(loaded, corrupted).tokens != \
                    encode_text(loaded, text).tokens:
                return MechanismPair(clean=" ".join(words), corrupted=corrupted, answer=None, contrast=None,
                                     source="text")
    raise InvalidRequestError(f"{loaded.info.name} reads none of the example pairs, and no word of the text could be "
                              "swapped for another of the same token count; give a text of a few different words")


def lesson_pair(loaded: LoadedModel, lang: str, text: str) -> MechanismPair:
    """The pair lesson D9 runs on: the example in ``lang`` when the model reads it, else another language's, else
    one made from ``text`` (:func:`pair_from_text`)."""
    for name in dict.fromkeys([lang, *MECHANISM_EXAMPLES]):
        example = MECHANISM_EXAMPLES.get(name)
        if example is not None and example_fits(loaded, example):
            return MechanismPair(clean=example["clean"], corrupted=example["corrupted"], answer=example["answer"],
                                 contrast=example["contrast"], source="example", lang=name)
    return pair_from_text(loaded, text)


def _attended(loaded: LoadedModel, text: str, deadline_s: float | None) -> int:
    """The key the last position weighs most, summed over every layer and head (first and last tokens left out when
    the text has another)."""
    encoded = encode_text(loaded, text)
    result = forward(loaded, encoded.inputs, weights_layers="all", stats=(), deadline_s=deadline_s)
    row = sum(record.weights[0, :, -1].float().sum(dim=0) for record in result.records)  # (n,)
    row = row.cpu().numpy()
    if len(row) <= 2:
        return len(row) - 1
    return int(np.argmax(row[1:-1]) + 1)


def _heads(order: np.ndarray, columns: int) -> np.ndarray:
    return np.stack([order // columns, order % columns], axis=1).astype(np.int64).reshape(-1, 2)


def _named(heads: np.ndarray, values: np.ndarray, style: str) -> tuple[str, ...]:
    return tuple(f"L{layer}H{head} ({value:{style}})" for (layer, head), value in zip(heads, values, strict=True))


# The verdict's sentence by how many heads the two lists share (none, some, all).
VERDICT_KEYS = {"none": "lesson17.verdict_none", "some": "lesson17.verdict_some", "all": "lesson17.verdict_all"}


def mechanism_lesson(loaded: LoadedModel, pair: MechanismPair, *, top: int = TOP_HEADS,
                     progress: Progress | None = None, deadline_s: float | None = None) -> MechanismLesson:
    """Lesson D9 on ``pair`` (see the module docstring): ``top`` heads in each list (1 … the model's heads)."""
    info = loaded.info
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= info.num_layers * info.num_heads:
        raise InvalidRequestError(f"top must be a whole number from 1 to {info.num_layers * info.num_heads} (the "
                                  f"heads of {info.name}); got {top!r}")
    attended = _attended(loaded, pair.clean, deadline_s)
    answer, contrast = pair.answer, pair.contrast
    if answer is None or contrast is None:
        lens = direct_logit_attribution(loaded, pair.clean, deadline_s=deadline_s).lens
        answer, contrast = str(lens.top_tokens[-1][0]), str(lens.top_tokens[-1][1])
    dla = direct_logit_attribution(loaded, pair.clean, answer=answer, contrast=contrast, key_position=attended,
                                   deadline_s=deadline_s)
    patched = activation_patching(loaded, pair.clean, pair.corrupted, answer=answer, contrast=contrast,
                                  top_heads=1, progress=progress, deadline_s=deadline_s)
    heads = info.num_heads
    attending = _heads(np.argsort(-dla.attention_to_key, axis=None, kind="stable")[:top], heads)
    weights = dla.attention_to_key[attending[:, 0], attending[:, 1]].astype(np.float64)
    fractions = patched.restored(patched.heads)  # (layers, heads)
    restoring = _heads(np.argsort(-fractions, axis=None, kind="stable")[:top], heads)
    restored = fractions[restoring[:, 0], restoring[:, 1]]
    writing = _heads(np.argsort(-np.abs(dla.heads), axis=None, kind="stable")[:top], heads)
    direct = dla.heads[writing[:, 0], writing[:, 1]]
    shared = len({tuple(h) for h in attending.tolist()} & {tuple(h) for h in restoring.tolist()})
    byte_level = is_byte_level(dla.tokens)  # GPT-2-style vocabularies: "ĠItaly" is read " Italy"
    token = readable_token(dla.tokens[attended], byte_level)
    values = {"model": info.name, "token": token, "position": str(attended),
              "answer": readable_token(patched.answer_token, byte_level),
              "contrast": readable_token(patched.contrast_token, byte_level),
              "clean": f"{patched.clean_value:.3f}", "corrupted": f"{patched.corrupted_value:.3f}", "top": str(top)}
    lists = {"attending": _named(attending, weights, ".2f"), "restoring": _named(restoring, restored, ".0%"),
             "writing": _named(writing, direct, "+.2f")}
    verdict = "none" if shared == 0 else ("all" if shared == top else "some")
    return MechanismLesson(
        model=info.name, clean=pair.clean, corrupted=pair.corrupted, source=pair.source, answer_text=answer,
        contrast_text=contrast, answer_token=patched.answer_token, contrast_token=patched.contrast_token,
        attended_position=attended, attended_token=dla.tokens[attended], attending=attending,
        attending_weights=weights, restoring=restoring, restored=restored, writing=writing, direct=direct,
        shared=shared, clean_value=patched.clean_value, corrupted_value=patched.corrupted_value,
        answer=Answer("lesson17.answer", values, lists=lists),
        verdict=Answer(VERDICT_KEYS[verdict], {"shared": str(shared), "top": str(top), "token": token,
                                               "answer": values["answer"]}))
