"""Tasks whose causal token is known by construction (issue #8): the data the project's ground-truth models
are trained on and scored with.

On a real model nobody knows which token truly mattered. Here each example says which one did:

- ``planted-token`` (a classifier): a row of neutral words with one sentiment word planted at a random
  position; the label is that word's sentiment. Change the planted word and the label changes; change any
  other word and nothing should. The causal token is the planted word.
- ``induction`` (a causal language model): distinct words ``… A B …`` followed by a repeat of ``A``; the next
  word is ``B`` (Olsson et al. 2022's induction pattern "[A][B] … [A] → [B]"). The causal token is the earlier
  ``B``, the token whose identity the prediction copies. The earlier ``A`` and the final ``A`` take part too
  (they say *where* to copy from), but only ``B`` carries the answer; :attr:`Example.supporting` names them.

Every word is one token of the task tokenizers (word-level, built by ``training/common.py``), so a word's
index in :attr:`Example.words` plus the tokenizer's leading special tokens is its token position. Examples are
generated from a seed (:func:`generate`), so "fresh data" is data from a seed the training never used
(:data:`TRAINING_SEEDS` are below :data:`FRESH_SEED`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from inspector.base.errors import InvalidRequestError

TaskName = Literal["planted-token", "induction"]
TaskKind = Literal["classifier", "causal-lm"]

# Neutral words: the distractors of the planted-token task and the alphabet of the induction task.
NEUTRAL_WORDS: tuple[str, ...] = tuple("""
    table river window garden paper stone music yellow seven market bridge cloud pencil summer forest letter
    engine silver ocean basket train coffee mirror doctor island candle rabbit planet ticket winter button
    castle orange violin camera lemon tower blanket kitchen wallet pepper saddle harbor meadow copper pillow
    ladder tunnel
""".split())
POSITIVE_WORDS: tuple[str, ...] = ("excellent", "wonderful", "delightful")
NEGATIVE_WORDS: tuple[str, ...] = ("terrible", "awful", "dreadful")
SENTIMENT_LABELS: tuple[str, ...] = ("negative", "positive")

# Seeds: training draws batch b from seed TRAINING_SEEDS + b (b < FRESH_SEED − TRAINING_SEEDS); every
# evaluation ("fresh data") draws from FRESH_SEED upwards.
TRAINING_SEEDS = 1_000_000
FRESH_SEED = 9_000_000


@dataclass(frozen=True)
class Example:
    """One generated example. words: the text, one token per word. causal: index into ``words`` of the token
    the answer depends on. supporting: indices of other words the mechanism reads (empty for planted-token).
    answer: the correct output — a class label or the next word. label: the class index (classifiers) or None."""

    words: tuple[str, ...]
    causal: int
    answer: str
    label: int | None = None
    supporting: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not 0 <= self.causal < len(self.words):
            raise ValueError(f"Example.causal {self.causal} is outside its {len(self.words)} words")

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class Task:
    """A task: its name, the kind of model it trains, what its causal token is (in words), its labels
    (classifiers) and how long its texts are (in words, inclusive)."""

    name: TaskName
    kind: TaskKind
    description: str
    truth: str
    labels: tuple[str, ...] = ()
    min_words: int = 8
    max_words: int = 16

    def vocabulary(self) -> tuple[str, ...]:
        """The words of the task's tokenizer, besides its special tokens."""
        if self.name == "planted-token":
            return NEUTRAL_WORDS + POSITIVE_WORDS + NEGATIVE_WORDS
        return NEUTRAL_WORDS


TASKS: dict[str, Task] = {
    "planted-token": Task(
        name="planted-token", kind="classifier", labels=SENTIMENT_LABELS, min_words=6, max_words=20,
        description="A row of neutral words with one sentiment word (excellent, wonderful, delightful; terrible, "
                    "awful, dreadful) planted at a random position; the label is that word's sentiment.",
        truth="the planted sentiment word"),
    "induction": Task(
        name="induction", kind="causal-lm", min_words=6, max_words=20,
        description="Distinct words … A B … followed by A again; the model must predict B, the word that came "
                    "after A the first time (an induction head's job).",
        truth="the earlier B — the word the prediction copies"),
}


def task(name: str) -> Task:
    """The task called ``name``; raises :class:`InvalidRequestError` for an unknown one."""
    if name not in TASKS:
        raise InvalidRequestError(f"unknown task {name!r}; the tasks are {', '.join(TASKS)}")
    return TASKS[name]


def _planted(rng: np.random.Generator, spec: Task) -> Example:
    length = int(rng.integers(spec.min_words, spec.max_words + 1))
    words = [str(w) for w in rng.choice(NEUTRAL_WORDS, size=length)]
    label = int(rng.integers(2))
    cue = str(rng.choice(POSITIVE_WORDS if label == 1 else NEGATIVE_WORDS))
    position = int(rng.integers(length))
    words[position] = cue
    return Example(words=tuple(words), causal=position, answer=SENTIMENT_LABELS[label], label=label)


def _induction(rng: np.random.Generator, spec: Task) -> Example:
    length = int(rng.integers(spec.min_words, spec.max_words + 1))  # the prefix; the repeated A makes one more
    prefix = [str(w) for w in rng.choice(NEUTRAL_WORDS, size=length, replace=False)]
    first = int(rng.integers(length - 1))  # A = prefix[first], B = prefix[first + 1]
    return Example(words=tuple(prefix + [prefix[first]]), causal=first + 1, answer=prefix[first + 1],
                   supporting=(first, length))


def generate(name: str, count: int, seed: int = FRESH_SEED) -> tuple[Example, ...]:
    """``count`` examples of task ``name``, reproducible from ``seed``."""
    spec = task(name)
    if not 1 <= count <= 100_000:
        raise InvalidRequestError(f"count must be between 1 and 100000, got {count}")
    rng = np.random.default_rng(seed)
    make = _planted if spec.name == "planted-token" else _induction
    return tuple(make(rng, spec) for _ in range(count))
