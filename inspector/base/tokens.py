"""Token strings as a person reads them (issue 27): the one place a tokenizer's token becomes a display label.

Tokenizers write a word boundary or a control character with a marker of their own, which reads as noise and, for a
newline, breaks a chart's line:

- byte-level BPE (GPT-2, SmolLM2, Llama 3, Qwen) maps every byte to a printable character: a space is ``Ġ``, a
  newline ``Ċ``, a tab ``ĉ``, and a character outside ASCII is spread over several (``é`` → ``Ã©``);
- SentencePiece (Gemma, T5, Llama 2) writes a space as ``▁`` and may keep a newline as itself or as ``<0x0A>``.

:func:`readable_token` shows a space as ``␣``, a newline as ``↵``, a tab as ``⇥``, a carriage return as ``␍``, any
other control character as ``\\xNN``, and joins a byte-level token's bytes back into its characters (a token that
is part of one character stays as ``<0xE5>`` bytes). ``##`` word pieces and special tokens stay as they are.

Whether a sequence is byte-level is read from its tokens (:func:`is_byte_level`): one of them holds a character
that byte-level BPE uses for a space or a control byte (U+0100–U+0143, ``Ġ``/``Ċ`` among them), which WordPiece and
SentencePiece vocabularies do not. A byte-level sequence with no space and no control byte in it (a single word)
is not recognised and is shown as written.

What a label shows is text: every page still escapes it for HTML or Markdown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

SPACE, NEWLINE, TAB, RETURN = "␣", "↵", "⇥", "␍"
_VISIBLE = {" ": SPACE, "\n": NEWLINE, "\t": TAB, "\r": RETURN, "\u2581": SPACE}
_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


@lru_cache(maxsize=1)
def _byte_of_char() -> dict[str, int]:
    """GPT-2's byte ↔ printable character table (``bytes_to_unicode``), inverted: character → byte."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = list(printable), 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars)}


def _shifted(ch: str) -> bool:
    """A character byte-level BPE uses for a byte that is not printable itself (space, controls): U+0100–U+0143."""
    return 0x100 <= ord(ch) <= 0x143


def is_byte_level(tokens: Sequence[str]) -> bool:
    """Whether ``tokens`` come from a byte-level BPE tokenizer (see the module docstring for how this is read)."""
    return any(_shifted(ch) for token in tokens for ch in token)


def _visible(text: str) -> str:
    out = []
    for ch in text:
        if ch in _VISIBLE:
            out.append(_VISIBLE[ch])
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def _from_bytes(token: str) -> str | None:
    """A byte-level token's text, or None when it is not made of the byte table's characters."""
    table = _byte_of_char()
    if not all(ch in table for ch in token):
        return None
    raw = bytes(table[ch] for ch in token)
    text = raw.decode("utf-8", errors="replace")
    if "\ufffd" in text:  # part of a character: show the bytes that are not a whole character
        pieces, rest = [], raw
        while rest:
            for size in (4, 3, 2, 1):
                try:
                    pieces.append(rest[:size].decode("utf-8"))
                    rest = rest[size:]
                    break
                except UnicodeDecodeError:
                    continue
            else:
                pieces.append(f"<0x{rest[0]:02X}>")
                rest = rest[1:]
        text = "".join(pieces)
    return text


def readable_token(token: str, byte_level: bool = False) -> str:
    """``token`` as a label shows it (module docstring); ``byte_level``: the token comes from byte-level BPE."""
    if byte_level:
        decoded = _from_bytes(token)
        if decoded is not None:
            token = decoded
    match = _BYTE_TOKEN.fullmatch(token)
    if match and int(match.group(1), 16) < 0x80:  # SentencePiece's byte fallback for an ASCII character
        token = chr(int(match.group(1), 16))
    return _visible(token) if token else token


def readable_tokens(tokens: Sequence[str]) -> tuple[str, ...]:
    """Every token of one sequence made readable (:func:`readable_token`), byte-level read once for the sequence."""
    byte_level = is_byte_level(tokens)
    return tuple(readable_token(token, byte_level) for token in tokens)


def token_labels(tokens: Sequence[str]) -> list[str]:
    """One readable label per position, unique even when a token repeats: ``["0: [CLS]", "1: ␣the", …]``."""
    return [f"{position}: {token}" for position, token in enumerate(readable_tokens(tokens))]
