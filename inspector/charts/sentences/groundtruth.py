"""The Ground truth page's words, from a :class:`~inspector.analyses.groundtruth.Scoreboard` or
:class:`~inspector.analyses.groundtruth.ExampleScores`: tasks and targets in the reader's language, the scoreboard's
summary (:func:`hit_rate_words`, the command line's) and its reading for a newcomer (:func:`reading`)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Literal

import numpy as np

from inspector.analyses.attribution import METHODS, REGISTRY, method_label
from inspector.analyses.groundtruth import ExampleScores, Scoreboard
from inspector.analyses.tasks import Task
from inspector.base.i18n import CATALOGUE, DEFAULT_LANGUAGE, t
from inspector.core.loading import model_label


def task_words(spec_task: Task, field: Literal["name", "description", "truth"], lang: str = DEFAULT_LANGUAGE,
               ) -> str:
    """A task's name, description or causal token in ``lang``: the catalogue's ``gt.task.NAME.FIELD`` where it has one
    (its English is the task's own text, a test keeps them equal), else the task's English."""
    key = f"gt.task.{spec_task.name}.{field}"
    return t(key, lang) if key in CATALOGUE else getattr(spec_task, field)


def target_words(scored: ExampleScores, kind: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """What the methods explain on ``scored`` (f, the correct answer's probability) in ``lang``; ``kind`` is the
    task's (classifier or causal-lm). English is the attribution report's own description; the catalogue's
    English says the same (a test keeps them equal), its other languages translate it."""
    if lang == DEFAULT_LANGUAGE:
        return scored.target
    top = scored.predicted == scored.answer
    if kind == "classifier":
        return t("gt.target.class", lang, label=scored.answer,
                 prediction=t("gt.target.class_prediction", lang) if top else "")
    return t("gt.target.next_token", lang, token=scored.answer,
             prediction=t("gt.target.next_token_prediction", lang) if top else "")


def _padded(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` terminal columns (CJK characters take two), for aligned tables."""
    columns = sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)
    return text + " " * max(0, width - columns)


def _method_words(method: str, lang: str) -> str:
    """The method's label in ``lang``; a board read from JSON may name a method this process never registered."""
    return method_label(method, lang) if method in REGISTRY else method


def hit_rate_words(board: Scoreboard, lang: str = DEFAULT_LANGUAGE) -> list[str]:
    """The scoreboard in plain sentences in ``lang``, best method first (the CLI's summary)."""
    order = np.argsort(-board.top1, kind="stable")
    lines = [t("gt.words.summary", lang, model=model_label(board.model_name, lang),
               task=task_words(board.card.task, "name", lang), variant=t(f"gt.variant.{board.card.variant}", lang),
               accuracy=f"{board.accuracy:.1%}", examples=board.examples,
               truth=task_words(board.card.task, "truth", lang))]
    for i in order:
        lines.append(t("gt.words.row", lang, method=_padded(_method_words(board.methods[i], lang), 28),
                       top1=f"{board.top1[i]:6.1%}", low=f"{board.top1_low[i]:.0%}", high=f"{board.top1_high[i]:.0%}",
                       k=board.k, topk=f"{board.topk[i]:6.1%}", rank=f"{board.mean_rank[i]:5.2f}",
                       rank_low=f"{board.mean_rank_low[i]:.2f}", rank_high=f"{board.mean_rank_high[i]:.2f}"))
    lines.append(t("gt.words.chance_row", lang, method=_padded(t("gt.words.chance", lang), 28),
                   top1=f"{board.chance_top1:6.1%}", k=board.k, topk=f"{board.chance_topk:6.1%}",
                   rank=f"{board.chance_rank:5.2f}"))
    mass, low, high = board.mass_interval()
    bound = (t("gt.words.bound", lang, bound=board.card.attention_bound)
             if board.card.attention_bound is not None else "")
    lines.append(t("gt.words.mass", lang, mass=f"{mass:.4f}", low=f"{low:.4f}", high=f"{high:.4f}", bound=bound))
    return lines


# Methods that read the attention weights (the registry says which), and methods that test what the output needs:
# the contrast the deceptive model (Pruthi et al. 2020) is built to expose.
ATTENTION_METHODS = tuple(name for name in METHODS if REGISTRY[name].reads_attention)
OUTPUT_METHODS = ("occlusion", "integrated_gradients")
# A head whose row peaks on the causal token with less mean weight than this is reported as a peak among
# near-zero weights, invisible on a heatmap.
FAINT_WEIGHT = 0.05


def _span(board: Scoreboard, methods: Sequence[str]) -> str:
    """'x %' or 'x–y %' over ``methods``' top-1 hit rates."""
    rates = [board.top1[board.methods.index(m)] for m in methods]
    low, high = min(rates), max(rates)
    return f"{low:.0%}" if round(low * 100) == round(high * 100) else f"{low:.0%}–{high:.0%}"


def mechanism_found(board: Scoreboard, i: int) -> bool:
    """Whether method ``i`` finds the induction mechanism rather than the copied word: the 95 % interval of its
    "B or an A ranked first" rate lies wholly above that of its "B ranked first" rate (a point gap alone, on a few
    examples, is noise)."""
    return bool(board.mechanism_top1_low[i] > board.top1_high[i])


def _mechanism_lines(board: Scoreboard, ranked: Sequence[int], label, joined, lang: str) -> list[str]:
    """The induction reading's mechanism sentence: the methods :func:`mechanism_found` passes, with both intervals,
    and the methods whose "B or an A" rate is higher but whose intervals overlap, as not shown."""

    def method_words(i: int) -> str:
        return t("gt.reading.mechanism_method", lang, method=label(i), top1=f"{board.top1[i]:.0%}",
                 low=f"{board.top1_low[i]:.0%}", high=f"{board.top1_high[i]:.0%}",
                 mechanism=f"{board.mechanism_top1[i]:.0%}", mechanism_low=f"{board.mechanism_top1_low[i]:.0%}",
                 mechanism_high=f"{board.mechanism_top1_high[i]:.0%}")

    found = [i for i in ranked if mechanism_found(board, i)]
    unsure = [i for i in ranked if not mechanism_found(board, i) and board.mechanism_top1[i] > board.top1[i]]
    lines = []
    if found:
        lines.append(t("gt.reading.mechanism", lang, methods=joined([method_words(i) for i in found],
                                                                    "gt.reading.clause_separator")))
    if unsure:
        lines.append(t("gt.reading.mechanism_not_shown", lang, examples=board.examples,
                       methods=joined([method_words(i) for i in unsure], "gt.reading.clause_separator")))
    return lines


def reading(board: Scoreboard, lang: str = DEFAULT_LANGUAGE) -> list[str]:
    """The scoreboard read in plain sentences for a newcomer (the page's "Reading"), in ``lang``: which methods rank
    the causal token first more often than a random ranking (95 % interval above chance), which cannot be told
    apart from chance and which do worse than chance; attention-based against output-based methods (the point of
    the deceptive model); methods that find the token only by magnitude (the wrong sign); for induction, methods
    that find the mechanism's tokens but not the copied one (:func:`mechanism_found`), and those not shown to; and
    the head whose attention row peaks on the causal token most often, with the weight it gives it. Every sentence is
    a catalogue entry filled with the numbers (and the methods' labels in ``lang``)."""

    def label(i: int) -> str:
        return _method_words(board.methods[i], lang)

    def joined(items: Sequence[str], separator: str = "gt.reading.separator") -> str:
        return t(separator, lang).join(items)

    def names(indices: Sequence[int]) -> str:
        return joined([t("gt.reading.method_rate", lang, method=label(i), rate=f"{board.top1[i]:.0%}")
                       for i in indices])

    chance = board.chance_top1
    ranked = [i for i in np.argsort(-board.top1, kind="stable") if board.methods[i] != "random"]
    above = [i for i in ranked if board.top1_low[i] > chance]
    # Worse than chance: first less often than a random ranking, or ranked lower on average (the mean rank's
    # interval above a random ranking's) — a method that always ranks the token last is wrong, not random.
    below = [i for i in ranked if i not in above
             and (board.top1_high[i] < chance or board.mean_rank_low[i] > board.chance_rank)]
    level = [i for i in ranked if i not in above and i not in below]
    lines = []
    if above:
        lines.append(t("gt.reading.above", lang, chance=f"{chance:.0%}", methods=names(above)))
    if level:
        lines.append(t("gt.reading.level", lang, examples=board.examples, methods=names(level)))
    if below:
        lines.append(t("gt.reading.below", lang, rank=f"{board.chance_rank:.1f}", methods=joined(
            [t("gt.reading.below_method", lang, method=label(i), top1=f"{board.top1[i]:.0%}",
               rank=f"{board.mean_rank[i]:.1f}") for i in below])))
    if "random" in board.methods:
        i = board.methods.index("random")
        lines.append(t("gt.reading.random", lang, rate=f"{board.top1[i]:.0%}", low=f"{board.top1_low[i]:.0%}",
                       high=f"{board.top1_high[i]:.0%}", chance=f"{chance:.0%}"))
    attention = [m for m in ATTENTION_METHODS if m in board.methods]
    output = [m for m in OUTPUT_METHODS if m in board.methods]
    mass, _, _ = board.mass_interval()
    if attention and output:
        contrast = t("gt.reading.contrast", lang, attention=joined([_method_words(m, lang) for m in attention]),
                     attention_span=_span(board, attention),
                     output=joined([_method_words(m, lang) for m in output]), output_span=_span(board, output))
        if board.card.variant == "deceptive":
            bound = board.card.attention_bound
            under = (t("gt.reading.under_bound", lang, bound=f"{bound:.1%}")
                     if bound is not None and mass < bound else "")
            contrast += t("gt.reading.deceptive", lang, mass=f"{mass:.2%}", under=under,
                          accuracy=f"{board.accuracy:.0%}")
        lines.append(contrast)
    if board.card.task.name == "induction":
        lines.extend(_mechanism_lines(board, ranked, label, joined, lang))
    flipped = [i for i in ranked if board.magnitude_top1_low[i] > board.top1_high[i]]
    if flipped:
        lines.append(t("gt.reading.flipped", lang, methods=joined(
            [t("gt.reading.flipped_method", lang, method=label(i), signed=f"{board.top1[i]:.0%}",
               magnitude=f"{board.magnitude_top1[i]:.0%}") for i in flipped], "gt.reading.clause_separator")))
    layer, head = np.unravel_index(int(np.argmax(board.head_top1)), board.head_top1.shape)
    peaks, weight = float(board.head_top1[layer, head]), float(board.head_weight[layer, head])
    if peaks > 0:
        ending = (t("gt.reading.faint_peak", lang, faint=f"{FAINT_WEIGHT:.0%}") if weight < FAINT_WEIGHT
                  else t("gt.reading.end", lang))
        lines.append(t("gt.reading.head_peak", lang, layer=int(layer), head=int(head), peaks=f"{peaks:.0%}",
                       weight=f"{weight:.1%}", ending=ending))
    else:
        lines.append(t("gt.reading.no_peak", lang))
    if board.accuracy_high < board.card.stated_accuracy:
        lines.append(t("gt.reading.caution", lang, accuracy=f"{board.accuracy:.0%}", low=f"{board.accuracy_low:.0%}",
                       high=f"{board.accuracy_high:.0%}", stated=f"{board.card.stated_accuracy:.0%}"))
    return lines
