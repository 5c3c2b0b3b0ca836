"""Faithfulness (DeYoung et al. 2020, ERASER): does removing what a method ranks highest change f?

Comprehensiveness f(x) − f(x∖r) and sufficiency f(x) − f(r) for the top {1, 5, 10, 20, 50} % of content
tokens r (⌈p·n⌉ tokens), AOPC = the mean over bins; removal by [MASK] or deletion. Decay curves: f as the top
tokens are removed; remove-until-flip (Serrano & Smith 2019) = the first removed fraction on the curve at which
the decision flips — for a classifier the predicted class changes; for every other target (no decision to
flip) f falls below the midpoint between f(x) and f with every content token removed.

Prefer comprehensiveness to judge a ranking's top: sufficiency rewards a method whose top tokens alone keep f,
which a method can reach by ranking tokens the model barely reads low.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from inspector.analyses.attribution.targets import Problem, RemovalMode, evaluate_rows, replacement_id
from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import DEFAULT_LANGUAGE, t

FAITHFULNESS_BINS: tuple[float, ...] = (0.01, 0.05, 0.10, 0.20, 0.50)
# The decay curve reuses the ERASER bins (rows removed once serve both) plus a few points to 100 %: every point
# costs one forward per method, the largest share of the page's compute.
CURVE_FRACTIONS: tuple[float, ...] = (0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)


@dataclass(frozen=True)
class Faithfulness:
    """ERASER (DeYoung et al. 2020) and decay curves, per method.

    methods: m names. bins: (b,) fractions of content tokens. comprehensiveness, sufficiency: (m, b) —
    f(x) − f(x∖r) and f(x) − f(r) (higher comprehensiveness and lower sufficiency = more faithful).
    aopc_comprehensiveness, aopc_sufficiency: (m,) means over bins. removal: ``mask`` (replaced by
    ``replacement``) or ``delete``. curve_fractions: (c,); curve: (m, c) f after removing that fraction of the
    top-ranked content tokens. flip_fraction: (m,) first curve fraction at which the decision flipped (NaN:
    never). flip_threshold / flip_start / flip_floor: for a target without a decision, the f the curve must fall
    below, f(x), and f with every content token removed (all None for a classifier: the flip is a change of
    class); :meth:`flip_rule_text` says the rule in words."""

    methods: tuple[str, ...]
    bins: np.ndarray
    comprehensiveness: np.ndarray
    sufficiency: np.ndarray
    aopc_comprehensiveness: np.ndarray
    aopc_sufficiency: np.ndarray
    removal: RemovalMode
    replacement: str | None
    curve_fractions: np.ndarray
    curve: np.ndarray
    flip_fraction: np.ndarray
    flip_threshold: float | None = None
    flip_start: float | None = None
    flip_floor: float | None = None

    def __post_init__(self) -> None:
        m, b, c = len(self.methods), len(self.bins), len(self.curve_fractions)
        expected = {"comprehensiveness": (m, b), "sufficiency": (m, b), "aopc_comprehensiveness": (m,),
                    "aopc_sufficiency": (m,), "curve": (m, c), "flip_fraction": (m,)}
        for name, shape in expected.items():
            if getattr(self, name).shape != shape:
                raise ValueError(f"Faithfulness.{name} has shape {getattr(self, name).shape}, expected {shape}")
        halfway = (self.flip_threshold, self.flip_start, self.flip_floor)
        if any(v is None for v in halfway) and any(v is not None for v in halfway):
            raise ValueError("Faithfulness: flip_threshold, flip_start and flip_floor are given together or not at all")

    def flip_rule_text(self, lang: str = DEFAULT_LANGUAGE) -> str:
        """What counts as a flip, in ``lang``."""
        if self.flip_threshold is None:
            return t("attribution.flip_class", lang)
        return t("attribution.flip_halfway", lang, threshold=self.flip_threshold, start=self.flip_start,
                 floor=self.flip_floor)

    @property
    def flip_rule(self) -> str:
        """:meth:`flip_rule_text` in English (the JSON's ``flip_rule``)."""
        return self.flip_rule_text()


def _ranked_content(scores: np.ndarray, content: np.ndarray) -> np.ndarray:
    """Content positions, highest score first (NaN last, ties by position)."""
    positions = np.flatnonzero(content)
    values = np.nan_to_num(scores[positions], nan=-np.inf)
    return positions[np.argsort(-values, kind="stable")]


def eraser_faithfulness(evaluate: Callable[[list[list[int]]], tuple[np.ndarray, np.ndarray]], ids: Sequence[int],
                        protected: np.ndarray, f0: float, scores: dict[str, np.ndarray], *, mode: RemovalMode,
                        replacement: tuple[int, str] | None = None, flip_class: int | None = None,
                        bins: Sequence[float] = FAITHFULNESS_BINS,
                        fractions: Sequence[float] = CURVE_FRACTIONS) -> Faithfulness:
    """Comprehensiveness, sufficiency (AOPC over ``bins``) and decay curves for each method's ranking.

    evaluate: token-id rows of any lengths → (f values, decisions); ids: the text's (n,) ids; protected: (n,)
    bool, never removed; f0 = f(ids); mode: replace removed tokens by ``replacement`` (id, name) or delete
    them; flip_class: a classifier's predicted class (the flip is a change of decision), else None (the flip
    is f falling halfway to f with every content token removed)."""
    ids = list(ids)
    n = len(ids)
    content = ~np.asarray(protected, dtype=bool)
    n_content = int(content.sum())
    methods = tuple(scores)
    if mode == "mask" and replacement is None:
        raise InvalidRequestError("removal by [MASK] needs a replacement token")

    def removed(drop: np.ndarray) -> list[int]:
        if mode == "delete":
            return [token for token, d in zip(ids, drop) if not d]
        return [replacement[0] if d else token for token, d in zip(ids, drop)]

    def drop_top(order: np.ndarray, count: int, keep_only: bool) -> list[int]:
        drop = np.zeros(n, dtype=bool)
        if keep_only:
            drop[order[count:]] = True
        else:
            drop[order[:count]] = True
        return removed(drop)

    count = lambda p: int(math.ceil(p * n_content))  # noqa: E731
    rows: list[list[int]] = []
    for name in methods:
        order = _ranked_content(scores[name], content)
        rows += [drop_top(order, count(p), False) for p in bins]
        rows += [drop_top(order, count(p), True) for p in bins]
        rows += [drop_top(order, count(p), False) for p in fractions]
    values, decisions = evaluate(rows)
    b, c = len(bins), len(fractions)
    per = 2 * b + c
    values = np.asarray(values, dtype=float).reshape(len(methods), per)
    decisions = np.asarray(decisions).reshape(len(methods), per)
    comprehensiveness = f0 - values[:, :b]
    sufficiency = f0 - values[:, b:2 * b]
    curve, curve_decisions = values[:, 2 * b:], decisions[:, 2 * b:]
    halfway: dict[str, float] = {}
    if flip_class is not None:
        flipped = curve_decisions != flip_class
    else:
        everything_removed = (float(curve[0, -1]) if fractions[-1] == 1.0
                              else float(evaluate([removed(content.copy())])[0][0]))
        threshold = 0.5 * (f0 + everything_removed)
        flipped = curve < threshold if everything_removed < f0 else np.zeros_like(curve, dtype=bool)
        halfway = dict(flip_threshold=threshold, flip_start=float(f0), flip_floor=everything_removed)
    fraction_array = np.asarray(fractions, dtype=float)
    flip = np.array([fraction_array[row.argmax()] if row.any() else np.nan for row in flipped])
    return Faithfulness(methods=methods, bins=np.asarray(bins, dtype=float), comprehensiveness=comprehensiveness,
                        sufficiency=sufficiency, aopc_comprehensiveness=comprehensiveness.mean(axis=1),
                        aopc_sufficiency=sufficiency.mean(axis=1), removal=mode,
                        replacement=replacement[1] if mode == "mask" else None,
                        curve_fractions=fraction_array, curve=curve, flip_fraction=flip, **halfway)


def model_faithfulness(problem: Problem, scores: dict[str, np.ndarray], mode: RemovalMode) -> Faithfulness:
    """:func:`eraser_faithfulness` on the model: rows run through the attention function in batches."""
    return eraser_faithfulness(lambda rows: evaluate_rows(problem, rows), problem.input_ids[0].tolist(),
                               problem.protected, problem.target.value, scores, mode=mode,
                               replacement=replacement_id(problem.loaded) if mode == "mask" else None,
                               flip_class=problem.target.class_index if problem.target.kind == "class" else None)
