"""Build ``census-sentences.txt``: real English sentences from documentation shipped inside installed packages,
offline and reproducibly (issue 16, the corpus the census benchmark and the README example run on).

Sources (read as text with :mod:`ast` — nothing is imported or executed), each under a licence that allows
redistribution with attribution (see README.md next to this file):

- the Python standard library's docstrings and ``pydoc_data/topics.py`` (the reference manual's topics):
  PSF License Version 2;
- NumPy's and SciPy's docstrings: BSD 3-Clause.

Docstrings are split into paragraphs; paragraphs with code, doctests, tables or numpydoc section headers are
dropped; the rest are split into sentences, kept when they are plain prose (5–60 words, a capital first letter,
a full stop, question or exclamation mark at the end, no markup or code characters), de-duplicated, shuffled with
a fixed seed and capped at ``--max`` sentences. The same interpreter and package versions give the same file;
the versions used are written in the file's header comment.

    python assets/corpus/build_corpus.py            # writes assets/corpus/census-sentences.txt
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import re
import sys
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "census-sentences.txt"
MIN_WORDS, MAX_WORDS = 5, 60
DEFAULT_MAX_SENTENCES = 20_000
SEED = 16

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
# Characters that mark code, markup or references rather than prose.
_NOT_PROSE = re.compile(r"[`_=<>{}\[\]|\\#@$~^*/]|::|\.\.\.|\be\.g\.$|\bi\.e\.$|\bhttps?:|\w\(|\(\)|\w\.\w")
_SECTION_UNDERLINE = re.compile(r"^\s*[-=~^]{3,}\s*$")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def _docstrings(path: Path) -> list[str]:
    """Every module, class and function docstring of one source file ([] when it does not parse)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
        return []
    nodes = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef,
                                                                   ast.AsyncFunctionDef))]
    found = []
    for node in nodes:
        text = ast.get_docstring(node, clean=True)
        if text:
            found.append(text)
    return found


def _topics(path: Path) -> list[str]:
    """The reference manual's topic texts from ``pydoc_data/topics.py`` (a dict literal of strings)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            return [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    return []


def _paragraphs(text: str) -> list[str]:
    """Prose paragraphs of a docstring, each joined to one line; code, doctests and headed sections dropped."""
    kept = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.splitlines()
        if not lines:
            continue
        if any(line.lstrip().startswith((">>>", "...", "$ ", "-", "*", "+", "|", ":", "..")) for line in lines):
            continue
        if any(_SECTION_UNDERLINE.match(line) for line in lines):
            continue
        if any(line.startswith((" ", "\t")) for line in lines):  # indented: a parameter list or a code block
            continue
        if any(re.match(r"^\s*\w+\s+:\s", line) for line in lines):  # numpydoc "name : type"
            continue
        kept.append(" ".join(line.strip() for line in lines))
    return kept


def is_plain_sentence(sentence: str) -> bool:
    """Plain English prose: 5–60 words, capitalised, ending in . ? or !, ASCII, no code or markup characters."""
    words = sentence.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or not sentence.isascii():
        return False
    if not sentence[0].isupper() or sentence[-1] not in ".?!" or _NOT_PROSE.search(sentence):
        return False
    if sentence.count("(") != sentence.count(")") or sentence.count('"') % 2:
        return False
    alphabetic = sum(bool(_WORD.fullmatch(w.strip(".,;:?!()\"'"))) for w in words)
    return alphabetic >= 0.8 * len(words)


def sentences_of(texts: list[str]) -> list[str]:
    found = []
    for text in texts:
        for paragraph in _paragraphs(text):
            for sentence in _SENTENCE_END.split(re.sub(r"\s+", " ", paragraph).strip()):
                if is_plain_sentence(sentence):
                    found.append(sentence)
    return found


def source_files() -> list[tuple[str, list[Path]]]:
    """(source name, its .py files in sorted order): the standard library, NumPy and SciPy as installed."""
    stdlib = Path(os.__file__).resolve().parent
    roots = [("python-stdlib", stdlib, ("site-packages", "test", "tests", "idlelib", "lib2to3", "pydoc_data"))]
    for package in ("numpy", "scipy"):
        module = __import__(package)  # only to find its folder; docstrings are read from the files
        roots.append((package, Path(module.__file__).resolve().parent, ("tests", "testing")))
    result = []
    for name, root, skipped in roots:
        files = sorted(p for p in root.rglob("*.py")
                       if not any(part in skipped for part in p.relative_to(root).parts[:-1]))
        result.append((name, files))
    return result


def build(max_sentences: int = DEFAULT_MAX_SENTENCES) -> tuple[list[str], dict[str, int]]:
    """The de-duplicated, shuffled sentences and how many each source contributed (before the cap)."""
    seen: set[str] = set()
    unique: list[str] = []
    counts: dict[str, int] = {}
    topics = Path(os.__file__).resolve().parent / "pydoc_data" / "topics.py"
    sources = [("python-docs-topics", sentences_of(_topics(topics)))]
    for name, files in source_files():
        sources.append((name, sentences_of([d for path in files for d in _docstrings(path)])))
    for name, found in sources:
        fresh = [s for s in found if s.lower() not in seen]
        for sentence in fresh:
            if sentence.lower() not in seen:
                seen.add(sentence.lower())
                unique.append(sentence)
        counts[name] = len(unique) - sum(counts.values())
    random.Random(SEED).shuffle(unique)
    return unique[:max_sentences], counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=DEFAULT_MAX_SENTENCES, help="keep at most this many sentences")
    parser.add_argument("--out", type=Path, default=OUTPUT)
    args = parser.parse_args()
    sentences, counts = build(args.max)
    versions = (f"Python {sys.version.split()[0]}, numpy {metadata.version('numpy')}, "
                f"scipy {metadata.version('scipy')}")
    header = [f"# {len(sentences)} English sentences from documentation shipped with {versions}.",
              "# Built by assets/corpus/build_corpus.py; sources and licences: assets/corpus/README.md.",
              "# Unique sentences per source before the cap: "
              + ", ".join(f"{name} {count}" for name, count in counts.items()) + "."]
    args.out.write_text("\n".join(header + sentences) + "\n", encoding="utf-8")
    print(f"wrote {len(sentences)} sentences to {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
