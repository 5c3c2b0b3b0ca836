"""Lines of a text file the way JSONL and one-text-per-line files mean them (issue 33).

``str.splitlines()`` also breaks at U+2028, U+2029, U+0085, \\x0b, \\x0c and \\x1c–\\x1e — ordinary characters inside
a sentence or a JSON string (``json.dumps(..., ensure_ascii=False)`` writes U+2028 as it is) — so a valid JSONL of
4 records read that way gave 2 rows and 4 "not JSON" errors. Here a line ends at ``\\n`` only, and a ``\\r`` just
before it (Windows line ends) is dropped with it; a final newline ends the last line, it does not start another.
"""

from __future__ import annotations

from pathlib import Path


def file_lines(text: str) -> list[str]:
    """``text`` cut at ``\\n`` (``\\r\\n`` counts as one break); every other character stays inside its line."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline that ends the file
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_file_lines(path: str | Path) -> list[str]:
    """The :func:`file_lines` of a UTF-8 file, read as bytes so no newline translation runs first (text mode would
    also turn a lone ``\\r`` into a line break). Raises OSError or UnicodeDecodeError as reading does."""
    return file_lines(Path(path).read_bytes().decode("utf-8"))
