"""The head report (issue #5): per-head statistics, redundancy and importance — every statistic paired with what
happens to the model's output when the heads are removed.

One call, :func:`head_report`, serves the Heads page and ``python -m inspector heads``, so both show the same
numbers. For each text it runs, through the one attention function (:mod:`kernels.hf`, nothing attached to
the shared model):

1. one plain forward that keeps every layer's exact weights and each head's value and output →
   entropy (raw, normalised), Clark et al.'s token-category masses, Gu et al.'s sink scores and the mean attention
   distance (reduced by the census engine's own batched reductions,
   :func:`inspector.analyses.batching.batch_statistics`, so
   a corpus census and this report give one computation's numbers), Olsson et al.'s induction score,
   Kobayashi et al.'s norm-weighted category masses, Clark's JS divergence between heads and the cosine / linear
   CKA between what heads write (:mod:`inspector.analyses.metrics`, :mod:`inspector.analyses.redundancy`);
2. batched forwards over copies of the text, copy b ablating head b alone (:class:`SequenceHeadAblation`):
   the **ablation importance** of each head = the output change it causes, in the model's own terms
   (:func:`inspector.core.outputs.output_change`: embedding cosine distance, next-token KL, logit change).
   Below its head's layer a copy is the text itself, so each copy starts there from the plain forward's block
   outputs (:class:`kernels.hf.ResumeAt`): on 6 layers the 72 copies run 252 layer forwards instead of 432;
3. one forward and backward with a gate of 1 on every head (:class:`HeadGate`): Michel et al. 2019's **gradient
   importance** I_h = |∂L/∂g_h| at g = 1, normalised by the ℓ2 norm of its layer (Michel's per-layer
   normalisation) — see :func:`gradient_importance` for what L is for each kind of model.

Then, once the per-text numbers are averaged, a second pass over the texts measures what the averages
suggest: the most redundant pairs (smallest JS divergence) ablated one at a time and together, and the
**pruning curve**: heads removed in order of increasing gradient importance, 10 % of them at a time.

**Corpus mode** is the same report over many texts: every per-text statistic in :class:`HeadStatistics`
is the plain mean of the single-text values (exactly, by construction — :meth:`HeadStatistics.mean`), so a
verdict is never drawn from one sentence. The pair and pruning measurements are means over the texts too,
of ablations chosen from the corpus averages.

**Batched over texts, with the single-text numbers.** Texts are grouped by length the way the census groups them
(:func:`inspector.analyses.batching.length_buckets`), and a group's texts share each of the forwards above: right-padded
batches (:func:`inspector.analyses.batching.padded_batch` — every text keeps positions 0 … T − 1, padded keys get
exactly zero weight, a real query never sees one) whose rows are (text, copy) pairs, each statistic then taken over the
text's own T tokens. Bigger matrix products use a CPU better at these sizes (T ≈ 10–30 tokens, and a head's copies are
only 12 rows of a group), while every per-text number stays its single-text number up to float rounding
(tests/test_heads.py checks BERT, a GPT-2 LM and a sliding-window Mistral on ragged lengths, and the resumed
copies against copies run through every layer).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np
import torch

from inspector.analyses.batching import length_buckets
from inspector.analyses.head_importance import (
    AblationMode,
    layer_normalized,
    texts_changes,
    texts_gradients,
)
from inspector.analyses.head_progress import WorkCounter, WorkPlan, work_plan
from inspector.analyses.head_statistics import texts_statistics
from inspector.analyses.metrics import (
    TOKEN_CATEGORIES,
    HealthFlags,
    HealthThresholds,
    health_flags,
    token_category_masks,
)
from inspector.analyses.redundancy import classical_mds, cluster_order
from inspector.base.assets import ASSETS_DIR
from inspector.base.display import Displayable
from inspector.base.errors import InvalidRequestError, InvalidTextError
from inspector.base.i18n import Notice
from inspector.base.jsonable import to_jsonable
from inspector.base.progress import Progress, no_progress
from inspector.base.textfiles import read_file_lines
from inspector.core.forward import backend_for, encode_text
from inspector.core.loading import LoadedModel, ModelInfo
from inspector.core.outputs import (
    OutputKind,
    output_change_name,
)

CORPUS_PATH = ASSETS_DIR / "corpus" / "sentences.txt"
# Texts in a report: enough for a corpus verdict, few enough that a page request stays bounded.
MAX_TEXTS = 500
PRUNING_STEP = 0.1
REDUNDANT_PAIRS = 5
# Texts whose first pass runs together (see head_report): their single-head ablation copies × padded tokens.
_GROUP_TOKENS = 8192


# A head counts as an induction head when, on average, a repeated token puts more than this share of its attention
# on the token that followed its earlier occurrence: two-fifths of the budget on a key chosen by content, where an
# even spread gives it 1/(keys the row sees). Olsson et al. (2022) measure the same "prefix matching" score on
# repeated random tokens, where clear induction heads score far higher; 0.4 is this project's cut-off, not theirs,
# and the report states it wherever it is used.
INDUCTION_HEAD_SCORE = 0.4

# HeadStatistics fields that are NaN where a text cannot measure them; their corpus mean skips those texts.
_NAN_SKIPPING_FIELDS = ("entropy_normalized", "induction")


@dataclass(frozen=True)
class HeadStatistics:
    """Per-head numbers for one text, or their mean over a corpus. L = layers, H = heads, N = L·H (heads in
    layer-major order: flat index = layer · H + head).

    entropy: (L, H) nats, mean row entropy. entropy_normalized: (L, H) in [0, 1]. layer_entropy: (L,) nats.
    token_mass: (L, H, 6) — share of attention on each of :data:`inspector.analyses.metrics.TOKEN_CATEGORIES`.
    norm_token_mass: (L, H, 6) — the same shares of the norm-weighted attention ‖α_ij f(x_j)‖ (Kobayashi).
    first_token_sink: (L, H) — the first key's sink score (= mean weight on it). max_sink_score: (L, H) — the
    largest sink score over the keys (Gu et al.). mean_distance: (L, H) tokens.
    induction: (L, H) in [0, 1] — Olsson et al.'s induction score (:func:`inspector.analyses.metrics.induction_score`);
    NaN when the text repeats no token (a corpus mean skips those texts).
    js_divergence: (N, N) nats in [0, ln 2]. contribution_cosine, contribution_cka: (N, N).
    importance_ablation: (L, H) — output change when the head alone is ablated (the model's own measure).
    gradient_raw: (L, H) — |∂L/∂g_h| before Michel's per-layer normalisation (normalise the mean, not the texts).
    """

    entropy: np.ndarray
    entropy_normalized: np.ndarray
    layer_entropy: np.ndarray
    token_mass: np.ndarray
    norm_token_mass: np.ndarray
    first_token_sink: np.ndarray
    max_sink_score: np.ndarray
    mean_distance: np.ndarray
    induction: np.ndarray
    js_divergence: np.ndarray
    contribution_cosine: np.ndarray
    contribution_cka: np.ndarray
    importance_ablation: np.ndarray
    gradient_raw: np.ndarray

    def __post_init__(self) -> None:
        layers, heads = self.entropy.shape
        n = layers * heads
        expected = {"entropy_normalized": (layers, heads), "layer_entropy": (layers,),
                    "token_mass": (layers, heads, len(TOKEN_CATEGORIES)),
                    "norm_token_mass": (layers, heads, len(TOKEN_CATEGORIES)), "first_token_sink": (layers, heads),
                    "max_sink_score": (layers, heads), "mean_distance": (layers, heads), "induction": (layers, heads),
                    "js_divergence": (n, n), "contribution_cosine": (n, n), "contribution_cka": (n, n),
                    "importance_ablation": (layers, heads), "gradient_raw": (layers, heads)}
        for name, shape in expected.items():
            if getattr(self, name).shape != shape:
                raise ValueError(f"HeadStatistics.{name} has shape {getattr(self, name).shape}, expected {shape}")
        if not np.allclose(self.js_divergence, self.js_divergence.T) or (self.js_divergence < 0).any():
            raise ValueError("HeadStatistics.js_divergence must be symmetric and non-negative")

    @staticmethod
    def mean(items: Sequence[HeadStatistics]) -> HeadStatistics:
        """Field-by-field mean over texts (NaN entropies — one-token texts — and NaN induction scores — texts that
        repeat no token — are skipped; a head stays NaN only when every text is NaN for it)."""
        if not items:
            raise ValueError("HeadStatistics.mean needs at least one item")

        def average(name: str) -> np.ndarray:
            stacked = np.stack([getattr(item, name) for item in items]).astype(np.float64)
            if name in _NAN_SKIPPING_FIELDS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # "mean of empty slice" for all-NaN heads
                    return np.nanmean(stacked, axis=0).astype(np.float32)
            return stacked.mean(axis=0).astype(np.float32)

        return HeadStatistics(**{f.name: average(f.name) for f in fields(HeadStatistics)})


@dataclass(frozen=True)
class RedundantPairs:
    """The most redundant head pairs (smallest corpus-mean JS divergence) and what ablating them does.

    heads: (P, 2) int flat head indices (layer · H + head). js_divergence: (P,) nats. change_first,
    change_second, change_both: (P,) — mean output change with the first head, the second, and both ablated.
    Redundant heads show change_both ≈ max(first, second); heads that each carry something show
    change_both ≈ first + second or more."""

    heads: np.ndarray
    js_divergence: np.ndarray
    change_first: np.ndarray
    change_second: np.ndarray
    change_both: np.ndarray

    def __post_init__(self) -> None:
        p = self.heads.shape[0]
        if self.heads.shape != (p, 2) or any(getattr(self, n).shape != (p,) for n in
                                             ("js_divergence", "change_first", "change_second", "change_both")):
            raise ValueError("RedundantPairs arrays must be (P, 2) and (P,)")


@dataclass(frozen=True)
class PruningCurve:
    """Heads removed in order of increasing gradient importance (Michel et al. 2019, figure 3).

    fraction: (S,) share of all heads removed (0, 0.1, …, 1). heads_removed: (S,) int. change: (S,) mean output
    change against the unpruned model, in the model's own measure (0 = identical). order: (N,) int flat head
    indices, least important first — the first ``heads_removed[s]`` of them are ablated at step s."""

    fraction: np.ndarray
    heads_removed: np.ndarray
    change: np.ndarray
    order: np.ndarray

    def __post_init__(self) -> None:
        s = self.fraction.shape[0]
        if self.heads_removed.shape != (s,) or self.change.shape != (s,):
            raise ValueError("PruningCurve: fraction, heads_removed and change must have one length")
        if np.any(np.diff(self.heads_removed) < 0) or sorted(self.order.tolist()) != list(range(len(self.order))):
            raise ValueError("PruningCurve: heads_removed must grow and order must be a permutation of the heads")


@dataclass(frozen=True)
class HeadReport(Displayable):
    """Everything the Heads page and ``python -m inspector heads`` show, for one text or a corpus.

    info: the model. texts: the texts (one in single-text mode). tokens: per text, the tokenizer's strings.
    statistics: the mean over texts (:class:`HeadStatistics`); per_text: one per text. key_sink_scores: per
    text, (L, H, q_len_t) Gu et al. sink score of every key. output_kind / change_name: the output measure.
    ablation_mode: "zero" or "mean". importance_gradient: (L, H) Michel's score of the corpus mean, each
    layer divided by its ℓ2 norm. flags: heads crossing ``thresholds``. order: (N,) clustered order of the
    heads by JS divergence. mds: (N, 2) classical-MDS map of the JS divergence. pairs, pruning: see their
    classes. timings: seconds per stage. special_tokens: the model's own tokens in the two special categories of
    :data:`TOKEN_CATEGORIES` over the texts, in order of first appearance — ``([CLS]'s, [SEP]'s)``: ``(("<bos>",),
    ())`` on Gemma, ``((), ())`` when the tokenizer adds none (issue 44: a decoder's report spoke of [CLS]/[SEP]).
    complete: False for :func:`head_first_look`'s statistics-only report (importances NaN, pairs and pruning
    empty)."""

    info: ModelInfo
    texts: tuple[str, ...]
    tokens: tuple[tuple[str, ...], ...]
    thresholds: HealthThresholds
    ablation_mode: AblationMode
    output_kind: OutputKind
    change_name: str
    statistics: HeadStatistics
    per_text: tuple[HeadStatistics, ...]
    key_sink_scores: tuple[np.ndarray, ...]
    importance_gradient: np.ndarray
    flags: HealthFlags
    order: np.ndarray
    mds: np.ndarray
    pairs: RedundantPairs
    pruning: PruningCurve
    backend: str
    timings: dict
    special_tokens: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    complete: bool = True

    def __post_init__(self) -> None:
        layers, heads = self.statistics.entropy.shape
        n = layers * heads
        if len(self.texts) != len(self.per_text) or len(self.texts) != len(self.tokens) \
                or len(self.texts) != len(self.key_sink_scores):
            raise ValueError("HeadReport: one entry per text in texts, tokens, per_text and key_sink_scores")
        if self.importance_gradient.shape != (layers, heads) or self.order.shape != (n,) or self.mds.shape != (n, 2):
            raise ValueError("HeadReport: importance_gradient (L, H), order (N,) and mds (N, 2) expected")
        for tokens, scores in zip(self.tokens, self.key_sink_scores):
            if scores.shape != (layers, heads, len(tokens)):
                raise ValueError(f"HeadReport.key_sink_scores entry {scores.shape} does not match its tokens")

    @property
    def num_heads(self) -> int:
        return self.statistics.entropy.shape[1]

    def category_shown(self, category: str) -> bool:
        """Whether a column of :data:`TOKEN_CATEGORIES` can hold anything on this model: a special category needs
        its tokens in the texts, and "next" needs bidirectional attention (a causal mask makes it 0 by
        construction)."""
        if category in TOKEN_CATEGORIES[:2]:
            return bool(self.special_tokens[TOKEN_CATEGORIES.index(category)])
        return not (category == "next" and self.info.causal)

    def category_name(self, category: str) -> str:
        """A special category of :data:`TOKEN_CATEGORIES` by this model's own tokens ("<bos>", "[SEP]",
        "</s>/<pad>"); any other category as it is."""
        if category in TOKEN_CATEGORIES[:2] and self.special_tokens[TOKEN_CATEGORIES.index(category)]:
            return "/".join(self.special_tokens[TOKEN_CATEGORIES.index(category)])
        return category

    def head_name(self, flat: int) -> str:
        layer, head = divmod(int(flat), self.num_heads)
        return f"L{layer}H{head}"


def with_thresholds(report: HeadReport, thresholds: HealthThresholds) -> HeadReport:
    """``report`` judged by other thresholds: only the flags change, so no model call is needed."""
    return replace(report, thresholds=thresholds, flags=health_flags(report.statistics.entropy_normalized,
                                                                     report.statistics.max_sink_score, thresholds))


def read_corpus(path: str | Path = CORPUS_PATH) -> list[str]:
    """Non-empty lines of a UTF-8 text file (lines starting with ``#`` are comments), one text each."""
    try:
        lines = read_file_lines(path)
    except (OSError, UnicodeDecodeError) as err:
        raise InvalidRequestError(f"cannot read the corpus {path}: {err} — give a UTF-8 text file with one "
                                  "text per line", notice=Notice("heads.error.corpus_unreadable")) from err
    texts = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not texts:
        raise InvalidTextError(f"the corpus {path} has no texts; put one sentence per line",
                               notice=Notice("heads.error.corpus_unreadable"))
    return texts


def _text_statistics(loaded: LoadedModel, text: str, mode: AblationMode,
                     backend: str) -> tuple[HeadStatistics, tuple[str, ...], np.ndarray, dict]:
    """Statistics of one text, its tokens, its per-key sink scores (L, H, T) and the tensors the second pass
    reuses (the encoded inputs and the unablated output)."""
    inputs = encode_text(loaded, text).inputs
    stats, tokens, key_scores, base = _group_statistics(loaded, [inputs], mode, backend)[0]
    return stats, tokens, key_scores, {"inputs": inputs, "base": base}


def _group_statistics(loaded: LoadedModel, inputs: Sequence[dict[str, torch.Tensor]], mode: AblationMode,
                      backend: str, advance: Callable[[int, str], None] | None = None) -> list[tuple]:
    """The first pass over a group of texts (encoded, batch of one each): per text its :class:`HeadStatistics`,
    its tokens, per-key sink scores and its unablated output — one batched forward for the statistics, then
    every text's single-head ablations (each copy starting at its head's layer) and gated gradients batched
    together. ``advance(units, stage)``: told the layers × tokens run after the statistics forward and after
    each batch of ablated copies (:class:`WorkPlan`'s units; the gradients are the caller's to count)."""
    info = loaded.info
    layers, heads = info.num_layers, info.num_heads
    ids = [item["input_ids"][0] for item in inputs]
    measured, layer_outputs = texts_statistics(loaded, ids, backend)
    if advance is not None:
        advance(layers * sum(int(row.shape[0]) for row in ids), "Statistics")
    bases = [base for *_, base in measured]
    single = torch.eye(layers * heads, dtype=torch.bool).view(layers * heads, layers, heads)  # copy b ablates head b
    # Each copy starts at its head's layer: on 6 layers that skips 15 of the 36 layer runs of a head's 6 copies.
    ablation = texts_changes(loaded, ids, bases, single, mode, backend, layer_outputs or None,
                             None if advance is None else lambda units: advance(units, "Single-head ablations")
                             ).reshape(len(ids), layers, heads)
    gradients = texts_gradients(loaded, ids, bases, backend)
    return [(HeadStatistics(**stats, importance_ablation=ablation[k], gradient_raw=gradients[k]), tokens, key_scores,
             base) for k, (stats, tokens, key_scores, base) in enumerate(measured)]


def most_redundant_pairs(js: np.ndarray, count: int) -> np.ndarray:
    """(count, 2) flat head indices of the pairs with the smallest JS divergence (distinct heads, i < j)."""
    upper = np.triu_indices(js.shape[0], k=1)
    best = np.argsort(js[upper], kind="stable")[:count]
    return np.stack([upper[0][best], upper[1][best]], axis=1).astype(np.int64)


def pruning_order(importance: np.ndarray) -> np.ndarray:
    """(N,) flat head indices, least important first (ties by index, so the order is reproducible)."""
    return np.argsort(importance.ravel(), kind="stable").astype(np.int64)


def _first_pass(loaded: LoadedModel, encoded: list[dict[str, torch.Tensor]], plan: WorkPlan, ablation: AblationMode,
                backend: str, counter: WorkCounter) -> tuple[list, list, list, list]:
    """Per text, in input order: its :class:`HeadStatistics`, tokens, per-key sink scores and unablated output."""
    count = len(encoded)
    per_text: list = [None] * count
    tokens: list = [None] * count
    key_scores: list = [None] * count
    bases: list = [None] * count
    finished = 0
    # Texts of about one length share their forwards (right-padded, see batching.padded_batch): a group's single-head
    # ablation copies fill about one batch of _GROUP_TOKENS padded tokens, big enough for efficient matrix
    # products on a CPU, small enough that the progress callback (and with it the page's Stop) comes every few
    # texts. Within a group the callback comes after each of its forwards (the statistics, each batch of ablated
    # copies, the gradients), so a single text's bar moves too.
    for group in length_buckets(plan.lengths, max(1, _GROUP_TOKENS // plan.heads)):
        first, last = finished + 1, finished + len(group)
        texts = f"text {first} of {count}" if first == last else f"texts {first}–{last} of {count}"
        before = counter.done

        def advance(units: int, stage: str, texts: str = texts) -> None:
            counter.advance(units, f"{stage}: {texts}")

        for index, (stats, text_tokens, scores, base) in zip(
                group, _group_statistics(loaded, [encoded[i] for i in group], ablation, backend, advance)):
            per_text[index], tokens[index], key_scores[index], bases[index] = stats, text_tokens, scores, base
        finished = last
        # The gradients: the rest of the group's share (their estimate, head_progress.work_plan): each group ends there.
        advance(before + sum(plan.lengths[i] for i in group) * plan.first_pass - counter.done,
                "Statistics, single-head ablations and gradients")
    return per_text, tokens, key_scores, bases


def _second_pass(loaded: LoadedModel, encoded: list[dict[str, torch.Tensor]], bases: list, plan: WorkPlan,
                 chosen: np.ndarray, order: np.ndarray, ablation: AblationMode, backend: str,
                 counter: WorkCounter) -> np.ndarray:
    """The mean output change over the texts of each chosen pair ablated together, then of each pruning step but
    the first: (pairs + steps − 1,) float64."""
    info = loaded.info
    # Only the pairs ablated together and the pruning steps need new forwards: a pair's heads ablated one at a
    # time are single-head ablations the first pass measured on the same texts (their corpus mean is
    # importance_ablation), and step 0 removes nothing, so its change is 0 by definition.
    masks = torch.zeros(len(chosen) + len(plan.steps) - 1, plan.heads, dtype=torch.bool)
    for p, (first, second) in enumerate(chosen):
        masks[p, [first, second]] = True
    for s, removed in enumerate(plan.steps[1:]):
        masks[len(chosen) + s, order[:removed]] = True
    count = len(encoded)
    changes = np.zeros((count, masks.shape[0]), dtype=np.float64)
    finished = 0
    for group in length_buckets(plan.lengths, max(1, _GROUP_TOKENS // masks.shape[0])):
        group_changes = texts_changes(loaded, [encoded[i]["input_ids"][0] for i in group], [bases[i] for i in group],
                                      masks.view(-1, info.num_layers, info.num_heads), ablation, backend)
        for index, row in zip(group, group_changes):
            changes[index] = row
            finished += 1
            counter.advance(plan.lengths[index] * plan.second_pass,
                            f"Redundant pairs and pruning: text {finished} of {count}")
    return changes.mean(axis=0)


def _checked(loaded: LoadedModel, texts: Sequence[str] | str, ablation: AblationMode,
             pruning_step: float) -> tuple[tuple[str, ...], list]:
    """The texts as a tuple and their encodings (:class:`~inspector.core.forward.EncodedText`), every text and
    option checked before any slow work."""
    texts = (texts,) if isinstance(texts, str) else tuple(texts)
    if not texts:
        raise InvalidTextError("no texts to analyse; give a text or a corpus with at least one line")
    if len(texts) > MAX_TEXTS:
        raise InvalidRequestError(f"{len(texts)} texts: the head report takes at most {MAX_TEXTS} — use a smaller "
                                  "corpus")
    if ablation not in ("zero", "mean"):
        raise InvalidRequestError(f"ablation must be 'zero' or 'mean', got {ablation!r}")
    if not 0 < pruning_step <= 1:
        raise InvalidRequestError(f"pruning_step must be in (0, 1], got {pruning_step}")
    return texts, [encode_text(loaded, text) for text in texts]


def _assembled(loaded: LoadedModel, texts: tuple[str, ...], encodings: list, measured: tuple[list, list, list, list],
               thresholds: HealthThresholds, ablation: AblationMode, backend: str, timings: dict, *,
               importance_gradient: np.ndarray, pairs: RedundantPairs, pruning: PruningCurve,
               complete: bool) -> HeadReport:
    """A :class:`HeadReport` from the first pass's per-text results (statistics, tokens, key sink scores, bases)
    and the rest."""
    per_text, tokens, key_scores, bases = measured
    statistics = HeadStatistics.mean(per_text)
    base = bases[0]
    return HeadReport(
        info=loaded.info, texts=texts, tokens=tuple(tokens), thresholds=thresholds, ablation_mode=ablation,
        output_kind=base.kind, change_name=output_change_name(base.kind), statistics=statistics,
        per_text=tuple(per_text), key_sink_scores=tuple(key_scores), importance_gradient=importance_gradient,
        flags=health_flags(statistics.entropy_normalized, statistics.max_sink_score, thresholds),
        order=cluster_order(statistics.js_divergence), mds=classical_mds(statistics.js_divergence),
        pairs=pairs, pruning=pruning, backend=backend, timings=timings, special_tokens=_special_tokens(encodings),
        complete=complete)


def head_first_look(loaded: LoadedModel, texts: Sequence[str] | str, *,
                    thresholds: HealthThresholds = HealthThresholds(), ablation: AblationMode = "zero",
                    backend: str = "torch") -> HeadReport:
    """What :func:`head_report` measures from the plain forwards alone — entropy, the category masses, sinks,
    distances, induction, the norm-weighted masses, JS divergence and CKA between heads, their cluster order and
    map — as a :class:`HeadReport` with ``complete`` False: no ablation or gradient importance (NaN), no
    redundant pairs, no pruning curve. One batched forward per length group (on a CPU about 1/40 of the report on
    a bundled decoder): a page draws these at once and the rest when the report is done. Every number is the
    report's own — the same forwards over the same length groups, reduced by the same code."""
    texts, encodings = _checked(loaded, texts, ablation, PRUNING_STEP)
    backend = backend_for(loaded, backend)
    encoded = [encoding.inputs for encoding in encodings]
    lengths = [int(item["input_ids"].shape[1]) for item in encoded]
    info = loaded.info
    layers, heads = info.num_layers, info.num_heads
    measured: tuple[list, list, list, list] = ([None] * len(texts), [None] * len(texts), [None] * len(texts),
                                               [None] * len(texts))
    started = time.perf_counter()
    unmeasured = np.full((layers, heads), np.nan, dtype=np.float32)
    for group in length_buckets(lengths, max(1, _GROUP_TOKENS // (layers * heads))):
        for index, (stats, tokens, scores, base) in zip(
                group, texts_statistics(loaded, [encoded[i]["input_ids"][0] for i in group], backend)[0]):
            measured[0][index] = HeadStatistics(**stats, importance_ablation=unmeasured, gradient_raw=unmeasured)
            measured[1][index], measured[2][index], measured[3][index] = tokens, scores, base
    n = layers * heads
    return _assembled(
        loaded, texts, encodings, measured, thresholds, ablation, backend,
        {"statistics": time.perf_counter() - started}, importance_gradient=unmeasured,
        pairs=RedundantPairs(heads=np.zeros((0, 2), dtype=np.int64), js_divergence=np.zeros(0, dtype=np.float32),
                             change_first=np.zeros(0, dtype=np.float32), change_second=np.zeros(0, dtype=np.float32),
                             change_both=np.zeros(0, dtype=np.float32)),
        pruning=PruningCurve(fraction=np.zeros(0, dtype=np.float32), heads_removed=np.zeros(0, dtype=np.int64),
                             change=np.zeros(0, dtype=np.float32), order=np.arange(n, dtype=np.int64)),
        complete=False)


def head_report(loaded: LoadedModel, texts: Sequence[str] | str, *,
                thresholds: HealthThresholds = HealthThresholds(), ablation: AblationMode = "zero",
                backend: str = "torch", pairs: int = REDUNDANT_PAIRS, pruning_step: float = PRUNING_STEP,
                progress: Progress | None = None) -> HeadReport:
    """The full head report of ``loaded`` over ``texts`` (one text, or a corpus — see the module docstring).

    ``ablation``: remove heads by zeroing their output or replacing it by its mean over the text. ``progress``
    (:mod:`inspector.base.progress`) is called after each batched forward of the first pass (the statistics, each
    batch of ablated copies, the gradients — so one text's bar moves too) and after each text of the second;
    done and total count work units — each text's tokens times the layers its copies run (a backward counted
    as :data:`_BACKWARD_COST` forwards) — so done / total is the share of the whole job, not of the calls
    (:class:`~inspector.analyses.head_progress.ReportProgress` turns them into a fraction, texts/s and an ETA).
    Texts of one length group share their forwards, so their calls name the group's texts (a callback that
    raises — the page's Stop — stops the report there). :func:`head_first_look` gives the statistics alone,
    within seconds. Raises :class:`InvalidTextError` / :class:`InvalidRequestError` for bad texts or options
    before the slow part where it can."""
    texts, encodings = _checked(loaded, texts, ablation, pruning_step)
    backend = backend_for(loaded, backend)
    encoded = [encoding.inputs for encoding in encodings]
    plan = work_plan(loaded, [int(item["input_ids"].shape[1]) for item in encoded], pairs, pruning_step)
    counter = WorkCounter(progress or no_progress, plan.total)
    timings: dict[str, float] = {}

    started = time.perf_counter()
    measured = _first_pass(loaded, encoded, plan, ablation, backend, counter)
    statistics = HeadStatistics.mean(measured[0])
    timings["statistics"] = time.perf_counter() - started

    started = time.perf_counter()
    importance_gradient = layer_normalized(statistics.gradient_raw.astype(np.float64))
    chosen = most_redundant_pairs(statistics.js_divergence, plan.pair_count)
    order = pruning_order(importance_gradient)
    mean_changes = _second_pass(loaded, encoded, measured[3], plan, chosen, order, ablation, backend, counter)
    single = statistics.importance_ablation.ravel()
    pruning_changes = np.concatenate([[0.0], mean_changes[len(chosen):]])
    timings["pairs_and_pruning"] = time.perf_counter() - started
    steps, n = plan.steps, plan.heads
    return _assembled(
        loaded, texts, encodings, measured, thresholds, ablation, backend, timings,
        importance_gradient=importance_gradient,
        pairs=RedundantPairs(heads=chosen, js_divergence=statistics.js_divergence[chosen[:, 0], chosen[:, 1]],
                             change_first=single[chosen[:, 0]].astype(np.float32),
                             change_second=single[chosen[:, 1]].astype(np.float32),
                             change_both=mean_changes[:len(chosen)].astype(np.float32)),
        pruning=PruningCurve(fraction=(steps / n).astype(np.float32), heads_removed=steps,
                             change=pruning_changes.astype(np.float32), order=order),
        complete=True)


def _special_tokens(encodings) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The distinct token strings of the two special categories of :data:`TOKEN_CATEGORIES` over ``encodings``
    (:class:`~inspector.core.forward.EncodedText`), each in order of first appearance."""
    found: tuple[dict, dict] = ({}, {})
    for encoding in encodings:
        masks = token_category_masks(encoding.tokens, encoding.special)
        for category in (0, 1):
            found[category].update(dict.fromkeys(tok for tok, hit in zip(encoding.tokens, masks[category]) if hit))
    return tuple(found[0]), tuple(found[1])


def report_json(report: HeadReport, health: Sequence[str]) -> dict:
    """The numbers of ``report`` as JSON-ready data (the CLI's ``--json`` and the page's download), with ``health``,
    its health report's lines in the reader's language (:func:`inspector.charts.sentences.heads.health_report`)."""
    stats = report.statistics
    by_category = lambda mass: {c: mass[..., i] for i, c in enumerate(TOKEN_CATEGORIES)}  # noqa: E731
    heads = [report.head_name(i) for i in range(report.order.size)]
    # Every float to 7 significant digits: a float32 carries no more, and the file stays small.
    return to_jsonable({
        "model": report.info.as_json(),
        "texts": list(report.texts),
        "tokens": [list(t) for t in report.tokens],
        "backend": report.backend,
        "thresholds": {"collapsed": report.thresholds.collapsed, "diffuse": report.thresholds.diffuse,
                       "sink": report.thresholds.sink},
        "ablation_mode": report.ablation_mode,
        "output_measure": {"kind": report.output_kind, "change": report.change_name},
        "entropy": stats.entropy,
        "entropy_normalized": stats.entropy_normalized,
        "layer_entropy": stats.layer_entropy,
        "special_token_mass": by_category(stats.token_mass),
        "norm_weighted_special_token_mass": by_category(stats.norm_token_mass),
        "sink_scores": {"first_token": stats.first_token_sink, "max": stats.max_sink_score,
                        "per_text": list(report.key_sink_scores)},
        "mean_attention_distance": stats.mean_distance,
        "induction": {"score": stats.induction, "threshold": INDUCTION_HEAD_SCORE},
        "flags": {"collapsed": report.flags.collapsed.tolist(), "diffuse": report.flags.diffuse.tolist(),
                  "sink": report.flags.sink.tolist()},
        "heads": heads,
        "js_distance": stats.js_divergence,
        "cluster_order": report.order.tolist(),
        "mds": report.mds,
        "contribution_similarity": {"cosine": stats.contribution_cosine,
                                    "cka": stats.contribution_cka},
        "importance": {"ablation": stats.importance_ablation,
                       "gradient": report.importance_gradient,
                       "gradient_raw": stats.gradient_raw},
        "redundant_pairs": [{"heads": [heads[a], heads[b]], "js_divergence": float(report.pairs.js_divergence[p]),
                             "change_first": float(report.pairs.change_first[p]),
                             "change_second": float(report.pairs.change_second[p]),
                             "change_both": float(report.pairs.change_both[p])}
                            for p, (a, b) in enumerate(report.pairs.heads)],
        "pruning_curve": {"fraction": report.pruning.fraction,
                          "heads_removed": report.pruning.heads_removed.tolist(),
                          "change": report.pruning.change,
                          "order": [heads[i] for i in report.pruning.order]},
        "health_report": list(health),
        "timings": {k: round(v, 3) for k, v in report.timings.items()},
    }, significant_digits=7)
