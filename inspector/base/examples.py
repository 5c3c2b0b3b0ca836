"""The example texts offered by the app, read once from ``assets/examples/*.txt`` in file-name order.

Each file holds one example; its name is ``<NN>-<slug words>.txt`` (the number fixes the order). Titles come
from :data:`_TITLES` when a file has a hand-written one, else from the slug ("01-animal-street" → "Animal
street"), so a new example needs only a new file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from inspector.base.assets import ASSETS_DIR

EXAMPLES_DIR = ASSETS_DIR / "examples"

# Hand-written titles say what each example is there to show; files without one get a title from the slug.
_TITLES = {
    "01-animal-street": "Coreference: what is “it”?",
    "02-coreference": "Coreference: the trophy and the suitcase",
    "03-agreement": "Subject–verb agreement across a long gap",
    # MiniLM's English vocabulary reads most Chinese characters as [UNK]: the title names the bundled model that reads
    # it (the page offers a one-click switch to it, issue 27).
    "04-chinese": "Chinese — needs a model that reads it: Gemma 3 270M (bundled)",
    "05-code": "Python code",
}


@dataclass(frozen=True)
class Example:
    """slug: the file name without ``.txt``. title: shown in the picker. text: the file's text, trailing
    newlines stripped."""

    slug: str
    title: str
    text: str

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise ValueError(f"example {self.slug!r} has no text")


def title_from_slug(slug: str) -> str:
    """``"01-animal-street"`` → ``"Animal street"``: drop the ordering number, hyphens become spaces."""
    words = re.sub(r"^\d+-", "", slug).replace("-", " ").replace("_", " ").strip()
    return words[:1].upper() + words[1:] if words else slug


def load_examples(folder: Path = EXAMPLES_DIR) -> tuple[Example, ...]:
    """Every ``*.txt`` in ``folder``, sorted by file name."""
    examples = []
    for path in sorted(folder.glob("*.txt")):
        slug = path.stem
        text = path.read_text(encoding="utf-8").rstrip("\r\n")
        examples.append(Example(slug=slug, title=_TITLES.get(slug, title_from_slug(slug)), text=text))
    if not examples:
        raise FileNotFoundError(f"no example texts (*.txt) in {folder}; the package is incomplete")
    return tuple(examples)


EXAMPLES: tuple[Example, ...] = load_examples()
DEFAULT_TEXT: str = EXAMPLES[0].text


LONG_TEXT_PATH = ASSETS_DIR / "corpus" / "sentences.txt"


def long_corpus_text(words: int = 640) -> str:
    """The first ``words`` words of the bundled corpus of distinct sentences (assets/corpus/sentences.txt, about
    1,300 words): a long text without repeated passages, so a model's next-token guesses cannot copy an earlier
    copy — what the sink, window and streaming lessons need beyond the window."""
    lines = [line for line in LONG_TEXT_PATH.read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    return " ".join(" ".join(lines).split()[:words])


# The Mechanism page's clean/corrupted pairs (issue 40): one token differs, the answer and the contrast are single
# tokens for the bundled decoder that reads each language (SmolLM2 English, Gemma 3 Chinese).
MECHANISM_EXAMPLES: dict[str, dict[str, str]] = {
    "en": {"clean": "The capital of France is Paris. The capital of Italy is",
           "corrupted": "The capital of France is Paris. The capital of Spain is",
           "answer": " Rome", "contrast": " Madrid"},
    "zh": {"clean": "法国的首都是巴黎。意大利的首都是", "corrupted": "法国的首都是巴黎。日本的首都是",
           "answer": "罗马", "contrast": "东京"},
}


def mechanism_example(lang: str) -> dict[str, str]:
    """The Mechanism page's example pair in ``lang`` (English for a language without one)."""
    return MECHANISM_EXAMPLES.get(lang, MECHANISM_EXAMPLES["en"])
