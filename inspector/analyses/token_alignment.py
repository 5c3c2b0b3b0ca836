"""Token alignment of two texts for the Compare page (:mod:`inspector.analyses.compare`): which tokens of A and B
stand for each other (equal runs and same-length replaced slots, from :class:`difflib.SequenceMatcher`), the default
query, and a token named by position or by its text resolved on both sides."""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import Notice

PairKind = Literal["equal", "replace"]
TokenChoice = int | str


@dataclass(frozen=True)
class TokenAlignment:
    """Which token of text A stands for which token of text B.

    pairs: (pairs, 2) int64 — (position in A, position in B) of each aligned token, in order.
    kinds: one ``"equal"`` or ``"replace"`` per pair. differs_a: (len_a,) bool — True where A's token is not
    matched by an equal token (replaced, deleted); differs_b: (len_b,) bool likewise. partner_a: (len_a,) int64 —
    B position of each A token's partner, −1 if none; partner_b: (len_b,) int64 likewise.
    common_prefix: how many leading tokens are equal in both."""

    pairs: np.ndarray
    kinds: tuple[PairKind, ...]
    differs_a: np.ndarray
    differs_b: np.ndarray
    partner_a: np.ndarray
    partner_b: np.ndarray
    common_prefix: int

    def __post_init__(self) -> None:
        if self.pairs.ndim != 2 or self.pairs.shape[1] != 2 or len(self.kinds) != len(self.pairs):
            raise ValueError(f"TokenAlignment.pairs has shape {self.pairs.shape} for {len(self.kinds)} kinds")
        if self.differs_a.shape != self.partner_a.shape or self.differs_b.shape != self.partner_b.shape:
            raise ValueError("TokenAlignment: differs and partner arrays must have one entry per token")
        for a, b in self.pairs:
            if self.partner_a[a] != b or self.partner_b[b] != a:
                raise ValueError(f"TokenAlignment: pair ({a}, {b}) is not recorded in the partner arrays")
        if len(self.pairs) and ((np.diff(self.pairs[:, 0]) <= 0).any() or (np.diff(self.pairs[:, 1]) <= 0).any()):
            raise ValueError("TokenAlignment.pairs must increase on both sides (an alignment never crosses)")

    @property
    def identical(self) -> bool:
        return not self.differs_a.any() and not self.differs_b.any()


def align_tokens(tokens_a: Sequence[str], tokens_b: Sequence[str]) -> TokenAlignment:
    """Align two token sequences (see the module docstring): SequenceMatcher's equal blocks, replaced spans
    paired position by position up to the shorter side, the rest unpaired."""
    matcher = difflib.SequenceMatcher(None, list(tokens_a), list(tokens_b), autojunk=False)
    pairs: list[tuple[int, int]] = []
    kinds: list[PairKind] = []
    differs_a, differs_b = np.ones(len(tokens_a), bool), np.ones(len(tokens_b), bool)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            pairs.extend(zip(range(a0, a1), range(b0, b1)))
            kinds.extend(["equal"] * (a1 - a0))
            differs_a[a0:a1] = False
            differs_b[b0:b1] = False
        elif tag == "replace":
            paired = min(a1 - a0, b1 - b0)
            pairs.extend(zip(range(a0, a0 + paired), range(b0, b0 + paired)))
            kinds.extend(["replace"] * paired)
    partner_a, partner_b = np.full(len(tokens_a), -1, np.int64), np.full(len(tokens_b), -1, np.int64)
    for a, b in pairs:
        partner_a[a], partner_b[b] = b, a
    prefix = 0
    while prefix < min(len(tokens_a), len(tokens_b)) and tokens_a[prefix] == tokens_b[prefix]:
        prefix += 1
    return TokenAlignment(pairs=np.array(pairs, dtype=np.int64).reshape(-1, 2), kinds=tuple(kinds),
                          differs_a=differs_a, differs_b=differs_b, partner_a=partner_a, partner_b=partner_b,
                          common_prefix=prefix)


def normalized_token(token: str) -> str:
    """A token as a person types it: word-piece markers (``##``, ``Ġ``, ``▁``) dropped, NFKC, lower case."""
    for marker in ("##", "Ġ", "▁"):
        token = token.removeprefix(marker)
    return unicodedata.normalize("NFKC", token).strip().lower()


def default_query(alignment: TokenAlignment, special_a: np.ndarray | None = None) -> int:
    """A's position of the default query: the first differing slot after the common prefix when it is paired,
    else the first paired token after it; identical texts: the last non-special token of A."""
    special = np.zeros(len(alignment.partner_a), bool) if special_a is None else np.asarray(special_a, bool)
    paired = [int(a) for a, _ in alignment.pairs if not special[a]]
    after = [a for a in paired if a >= alignment.common_prefix]
    if after and not alignment.identical:
        return after[0]
    if paired:
        return paired[-1]
    raise InvalidRequestError("the two texts share no token that could serve as the query; make them differ in "
                              "a word or two, not throughout", notice=Notice("compare.error.no_shared_token"))


def causal_blind(query_a: int, alignment: TokenAlignment, causal: bool) -> bool:
    """Whether the query at A's position ``query_a`` cannot see where the texts differ: on a causal model a token
    attends only to itself and the tokens before it, so a query before the first differing token
    (``alignment.common_prefix``) reads the same keys in both texts and its two rows are equal — "it" before
    tired/wide on a decoder. Always False for a bidirectional model and for identical texts."""
    return causal and not alignment.identical and query_a < alignment.common_prefix


def resolve_token(choice: TokenChoice, tokens_a: Sequence[str], tokens_b: Sequence[str], alignment: TokenAlignment,
                  what: str = "query") -> tuple[int, int]:
    """``choice`` (a position in text A, or a token string — the first such token of A, else of B, that has a
    partner) → its (A position, B position). Raises :class:`InvalidRequestError` naming what exists."""
    if isinstance(choice, (int, np.integer)) and not isinstance(choice, bool):
        position = int(choice)
        if not 0 <= position < len(tokens_a):
            raise InvalidRequestError(f"{what} position {position} does not exist: text A has tokens "
                                      f"0–{len(tokens_a) - 1}",
                                      notice=Notice("compare.error.no_position", position=position,
                                                    last=len(tokens_a) - 1))
        if alignment.partner_a[position] < 0:
            raise InvalidRequestError(f"{what} “{tokens_a[position]}” (position {position}) has no partner in text B "
                                      "(it was inserted or deleted); pick a token both texts have",
                                      notice=Notice("compare.error.no_partner", token=tokens_a[position],
                                                    position=position))
        return position, int(alignment.partner_a[position])
    if not isinstance(choice, str) or not normalized_token(choice):
        raise InvalidRequestError(f"{what} must be a token string or a position in text A; got {choice!r}")
    wanted = normalized_token(choice)
    for a, b in alignment.pairs:
        if normalized_token(tokens_a[a]) == wanted or normalized_token(tokens_b[b]) == wanted:
            return int(a), int(b)
    shown = ", ".join(dict.fromkeys(tokens_a[a] for a, _ in alignment.pairs))
    raise InvalidRequestError(f"{what} “{choice}” is not a token both texts have; tokens with a partner: {shown}",
                              notice=Notice("compare.error.not_shared", token=choice, tokens=shown))
