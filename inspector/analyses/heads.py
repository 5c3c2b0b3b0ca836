"""The head report (issue #5): per-head statistics, redundancy and importance — every statistic paired with what
happens to the model's output when the heads are removed.

One call, :func:`head_report`, serves the Heads page and ``python -m inspector heads``, so both show the same
numbers. For each text it runs, through the one attention function (:mod:`kernels.hf`, nothing attached to
the shared model):

1. one plain forward that keeps every layer's exact weights and each head's value and output →
   entropy (raw, normalised), Clark et al.'s token-category masses, Gu et al.'s sink scores and the mean attention
   distance (reduced by the census engine's own batched reductions,
   :func:`inspector.analyses.census.batch_statistics`, so
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
from typing import Literal

import numpy as np
import torch

from inspector.analyses.batching import batch_statistics, length_buckets, padded_batch
from inspector.analyses.metrics import (
    REPORT_HEADS_PER_KIND,
    TOKEN_CATEGORIES,
    HealthFlags,
    HealthThresholds,
    flagged_heads,
    health_flags,
    induction_score,
    norm_weighted_attention,
    token_category_masks,
    token_category_mass,
)
from inspector.analyses.redundancy import classical_mds, cluster_order, contribution_similarity, js_divergence_matrix
from inspector.base.assets import ASSETS_DIR
from inspector.base.display import Displayable
from inspector.base.errors import InvalidRequestError, InvalidTextError
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.base.jsonable import to_jsonable
from inspector.base.progress import Progress, no_progress
from inspector.base.textfiles import read_file_lines
from inspector.core.forward import backend_for, encode_text, forward
from inspector.core.loading import LoadedModel, ModelInfo, model_label
from inspector.core.outputs import (
    ModelOutput,
    OutputKind,
    head_writes,
    model_output,
    output_change_name,
    output_changes,
)
from kernels.hf import HeadGate, ResumeAt, SequenceHeadAblation

AblationMode = Literal["zero", "mean"]

CORPUS_PATH = ASSETS_DIR / "corpus" / "sentences.txt"
# Texts in a report: enough for a corpus verdict, few enough that a page request stays bounded.
MAX_TEXTS = 500
PRUNING_STEP = 0.1
REDUNDANT_PAIRS = 5
# Embeddings have no label to take a loss against: L is their projection on this many fixed random directions
# orthogonal to the unablated embedding (see gradient_importance).
EMBEDDING_DIRECTIONS = 8
# Copies per batched forward without gradients: copies × padded tokens stays under this, so long texts do not blow
# up memory.
_BATCH_TOKENS = 8192
# Texts whose first pass runs together (see head_report): their single-head ablation copies × padded tokens.
_GROUP_TOKENS = 8192
# Copies per forward and backward: copies × padded tokens × hidden size stays under this (a backward keeps every
# layer's activations), with one text's copies at the least.
_GRADIENT_ELEMENTS = 2 ** 20
# A forward and backward costs about this many forwards of the same batch (DESIGN.md: backward 2.5× forward).
_BACKWARD_COST = 3


# The census's mass columns in the order of inspector.analyses.metrics.TOKEN_CATEGORIES (HeadStatistics.token_mass).
_CENSUS_MASSES = ("cls", "sep", "punctuation", "self", "previous", "next")

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
    classes. timings: seconds per stage."""

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

    def head_name(self, flat: int) -> str:
        layer, head = divmod(int(flat), self.num_heads)
        return f"L{layer}H{head}"


@dataclass(frozen=True)
class ReportProgress:
    """How far a head report has got, for a progress bar and its label: ``done`` of ``total`` work units (the
    numbers :func:`head_report` passes to its progress callback) over ``texts`` texts, ``elapsed`` seconds after
    it started.

    The units are the report's estimated cost (token-copies forwarded, see :func:`head_report`), counted over
    both passes, so :attr:`fraction` is the share of the whole job and the bar moves at an even pace. The label
    counts :attr:`texts_done` — the fraction in texts — so the bar and its count of texts always agree.
    """

    done: int
    total: int
    texts: int
    elapsed: float

    def __post_init__(self) -> None:
        if self.total <= 0 or not 0 <= self.done <= self.total:
            raise ValueError(f"ReportProgress: need 0 <= done <= total and total > 0, got {self.done} of {self.total}")
        if self.texts < 1 or self.elapsed < 0:
            raise ValueError(f"ReportProgress: need texts >= 1 and elapsed >= 0, got {self.texts} and {self.elapsed}")

    @property
    def fraction(self) -> float:
        """Share of the work done, in [0, 1]."""
        return self.done / self.total

    @property
    def texts_done(self) -> int:
        """Texts' worth of work done: the fraction in texts, rounded down (all texts only when everything is)."""
        return self.texts if self.done == self.total else min(self.texts - 1, int(self.fraction * self.texts))

    @property
    def rate(self) -> float | None:
        """Texts per second so far (texts' worth of work per second of elapsed time); None before any work."""
        if self.done == 0 or self.elapsed <= 0:
            return None
        return self.fraction * self.texts / self.elapsed

    @property
    def eta(self) -> float | None:
        """Seconds left if the rest goes at the pace so far; None before any work (no pace to go by)."""
        if self.done == 0:
            return None
        return self.elapsed * (self.total - self.done) / self.done

    def label_values(self) -> dict[str, str]:
        """The numbers a progress label shows, as text: ``percent`` ("40%"), ``done`` and ``n`` (texts' worth
        done, of how many), ``rate`` (texts/s) and ``eta`` (whole seconds left); "…" where not known yet."""
        rate, eta = self.rate, self.eta
        return {"percent": f"{int(100 * self.fraction)}%", "done": str(self.texts_done), "n": str(self.texts),
                "rate": "…" if rate is None else f"{rate:.2f}" if rate < 10 else f"{rate:.0f}",
                "eta": "…" if eta is None else f"{eta:.0f}"}


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
                                  "text per line") from err
    texts = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not texts:
        raise InvalidTextError(f"the corpus {path} has no texts; put one sentence per line")
    return texts


def layer_normalized(raw: np.ndarray) -> np.ndarray:
    """Michel et al.'s per-layer normalisation: each layer's scores divided by their ℓ2 norm (0 stays 0)."""
    norms = np.linalg.norm(raw, axis=-1, keepdims=True)
    return np.divide(raw, norms, out=np.zeros_like(raw, dtype=np.float64), where=norms > 0).astype(np.float32)


def _row_chunks(lengths: Sequence[int], copies: int | Sequence[int], budget: int,
                minimum: int = 1) -> list[list[tuple[int, int]]]:
    """Rows (text k, copy c) — copies ``range(copies)``, or the given copy indices — of every text, cut into
    consecutive forwards of at most ``budget`` padded tokens (rows × longest text; at least ``minimum`` rows
    each)."""
    chosen = range(copies) if isinstance(copies, int) else copies
    rows = [(k, c) for k in range(len(lengths)) for c in chosen]
    if not rows:
        return []
    per_forward = max(minimum, budget // max(lengths))
    # Forwards of equal size: 288 rows at 273 a forward run as 144 + 144, not 273 + a wasteful 15.
    per_forward = -(-len(rows) // -(-len(rows) // per_forward))
    return [rows[start:start + per_forward] for start in range(0, len(rows), per_forward)]


def _texts_changes(loaded: LoadedModel, ids: Sequence[torch.Tensor], bases: Sequence[ModelOutput],
                   masks: torch.Tensor, mode: AblationMode, backend: str,
                   layer_outputs: Sequence[torch.Tensor] | None = None) -> np.ndarray:
    """Output change of each text for each ablation set: ``ids`` (K texts, each (T,)), their unablated outputs,
    masks (S, L, H) bool — set s removes the heads where it is True. (K, S) float32. The K · S copies run in
    right-padded batched forwards of at most :data:`_BATCH_TOKENS` padded tokens.

    ``layer_outputs``: every transformer block's output for the K texts as one right-padded batch ((K, n,
    hidden) per layer, from the forward that gave ``bases``). With them each copy starts at the first layer its
    set ablates (:class:`kernels.hf.ResumeAt`): below it the copy is the unablated text, whose block outputs
    are these. Copies are then grouped by that layer and padded to the same n."""
    layers = masks.shape[1]
    changes = np.zeros((len(ids), masks.shape[0]), dtype=np.float32)
    lengths = [int(row.shape[0]) for row in ids]
    # Each set's first ablated layer ((S, L) ablated-anywhere flags, first True), or 0 for every set.
    starts = (masks.flatten(2).any(dim=2).int().argmax(dim=1).tolist() if layer_outputs is not None
              else [0] * masks.shape[0])
    width = int(layer_outputs[0].shape[1]) if layer_outputs is not None else None
    for start in sorted(set(starts)):
        sets = [s for s in range(masks.shape[0]) if starts[s] == start]
        for part in _row_chunks(lengths, sets, _BATCH_TOKENS):
            row_masks = masks[[s for _, s in part]]  # (R, L, H)
            interventions = [SequenceHeadAblation(layer, row_masks[:, layer], mode) for layer in range(layers)
                             if row_masks[:, layer].any()]
            batch = padded_batch(loaded, [ids[k] for k, _ in part], width)
            resume = None
            if start > 0:
                texts = torch.tensor([k for k, _ in part], device=layer_outputs[0].device)
                resume = ResumeAt(start, tuple(output[texts] for output in layer_outputs[:start]))
            result = forward(loaded, batch, interventions=interventions, backend=backend, stats=(), resume=resume)
            found = output_changes(loaded, result, batch, [bases[k] for k, _ in part])
            for r, (k, s) in enumerate(part):
                changes[k, s] = found[r]
    return changes


def _ablated_changes(loaded: LoadedModel, inputs: dict[str, torch.Tensor], base: ModelOutput, masks: torch.Tensor,
                     mode: AblationMode, backend: str) -> np.ndarray:
    """Output change for each ablation set: masks (S, L, H) bool — set s removes the heads where it is True.
    Runs batched forwards of copies of the text (chunked to :data:`_BATCH_TOKENS` tokens)."""
    return _texts_changes(loaded, [inputs["input_ids"][0]], [base], masks, mode, backend)[0]


def _texts_gradients(loaded: LoadedModel, ids: Sequence[torch.Tensor], bases: Sequence[ModelOutput],
                     backend: str) -> np.ndarray:
    """:func:`gradient_importance` of K texts at once: (K, L, H) float32. Texts are rows of right-padded
    batches, each row with its own gates, so as rows never mix, each row's gate gradient is that of its own loss.
    A distribution or logits output has one loss per text: one backward of their sum. An embedding has one loss
    per direction: one forward, then one backward per direction — vmapped together on the torch backend
    (``is_grads_batched``), one after another on Triton, whose backward kernel has no batching rule."""
    info = loaded.info
    device = loaded.device
    embedding = bases[0].kind == "embedding"
    copies = EMBEDDING_DIRECTIONS if embedding else 1
    directions = []
    if embedding:
        for base in bases:
            generator = torch.Generator().manual_seed(0)
            found = torch.randn(copies, base.vector.shape[0], generator=generator)
            found = found - (found @ base.vector)[:, None] * base.vector[None, :]  # ⊥ e
            directions.append(torch.nn.functional.normalize(found, dim=1).to(device))
    squares = torch.zeros(len(ids), info.num_layers, info.num_heads, dtype=torch.float32)
    # A backward keeps every layer's activations (and an embedding's vmapped one makes `copies` of each gradient
    # at a time): the batch is held to a token budget that shrinks as the hidden size grows, one text at least.
    budget = max(1, _GRADIENT_ELEMENTS // (info.hidden_size * copies))
    for part in _row_chunks([int(row.shape[0]) for row in ids], 1, budget):
        texts = [k for k, _ in part]
        gates = [torch.ones(len(part), info.num_heads, device=device, requires_grad=True)
                 for _ in range(info.num_layers)]
        batch = padded_batch(loaded, [ids[k] for k in texts])
        result = forward(loaded, batch, interventions=[HeadGate(layer, gate) for layer, gate in enumerate(gates)],
                         backend=backend, grad=True, stats=())
        vectors = [model_output(loaded, result, batch, keep_graph=True, sequence=r).vector for r in range(len(part))]
        with torch.enable_grad():
            if embedding:
                stacked = torch.stack(vectors)  # (R, hidden)
                along = torch.stack([directions[k] for k in texts], dim=1)  # (copies, R, hidden): L_c = ⟨r_c, e⟩
                if backend == "torch":
                    grads = torch.autograd.grad((stacked,), gates, grad_outputs=(along,), is_grads_batched=True)
                else:
                    grads = [torch.stack(found) for found in zip(*(
                        torch.autograd.grad((stacked,), gates, grad_outputs=(along[c],), retain_graph=c + 1 < copies)
                        for c in range(copies)))]
                per_gate = torch.stack([g.detach().float().cpu() for g in grads], dim=2)  # (copies, R, L, H)
            else:
                losses = []
                for vector, k in zip(vectors, texts):
                    log_probs = vector if bases[k].kind == "distribution" else torch.log_softmax(vector, dim=-1)
                    losses.append(-log_probs[int(bases[k].vector.argmax())])  # logits → log p of the top one
                grads = torch.autograd.grad(sum(losses), gates)
                per_gate = torch.stack([g.detach().float().cpu() for g in grads], dim=1)[None]  # (1, R, L, H)
        for r, k in enumerate(texts):
            squares[k] += per_gate[:, r].pow(2).sum(dim=0)
    return squares.sqrt().numpy().astype(np.float32)


def gradient_importance(loaded: LoadedModel, inputs: dict[str, torch.Tensor], base: ModelOutput,
                        backend: str) -> np.ndarray:
    """Michel et al. (2019)'s head importance for one text before per-layer normalisation: |∂L/∂g_h| at
    gates g = 1 (:class:`HeadGate` on every layer; the model's parameters get no gradient). (L, H) float32.

    L is a loss whose first-order change says how much the output moves — the output-change measures
    themselves are useless here, since a distance is at its minimum (gradient 0) at g = 1:

    - next-token distribution / class logits: Michel's own setting with the model's prediction as the label,
      L = −log p(ŷ) with ŷ the unablated model's top token or class;
    - sentence embedding (no label exists): L_b = ⟨r_b, e(g_b)⟩ for :data:`EMBEDDING_DIRECTIONS` fixed random
      unit directions r_b orthogonal to the unablated embedding e (one copy of the text per direction, each
      with its own gates), and I_h = √Σ_b (∂L_b/∂g_{b,h})² — an estimate, proportional in expectation, of
      ‖∂e/∂g_h‖, the first-order distance the unit embedding moves when the head's gate moves. Directions
      come from a fixed seed, so the numbers are reproducible; the per-layer normalisation removes the scale.
    """
    return _texts_gradients(loaded, [inputs["input_ids"][0]], [base], backend)[0]


def _texts_statistics(loaded: LoadedModel, ids: Sequence[torch.Tensor], backend: str,
                      ) -> tuple[list[tuple[dict[str, np.ndarray], tuple[str, ...], np.ndarray, ModelOutput]],
                                 list[torch.Tensor]]:
    """The per-text statistics of K texts from one right-padded batched forward that keeps every layer's
    weights and each head's value and output: per text, the :class:`HeadStatistics` fields but the two
    importances, its tokens, its per-key sink scores (L, H, T) and its unablated output. Each text's weights,
    values and outputs are cut to its own T tokens before any statistic is taken. Also every transformer
    block's output for the batch (empty when the model cannot resume at a layer), what the ablated copies
    start from (:func:`_texts_changes`)."""
    info = loaded.info
    layers, heads = info.num_layers, info.num_heads
    batch = padded_batch(loaded, ids)
    base_run = forward(loaded, batch, backend=backend, weights_layers="all", keep=("value", "output"),
                       keep_layers="all", keep_layer_outputs=loaded.can_resume)
    records = base_run.records
    all_weights = torch.stack([r.weights for r in records], dim=1).float().cpu()  # (K, L, H, n, n), a copy
    width = batch["input_ids"].shape[1]
    special_ids = set(getattr(loaded.tokenizer, "all_special_ids", []))
    lengths = [int(row.shape[0]) for row in ids]
    tokens_of, special_of = [], []
    category_masks = np.zeros((len(ids), width, 3), dtype=np.float64)
    for k, row in enumerate(ids):
        token_ids = row.tolist()
        tokens_of.append(tuple(str(t) for t in loaded.tokenizer.convert_ids_to_tokens(token_ids)))
        special_of.append(np.array([i in special_ids for i in token_ids], dtype=bool))
        category_masks[k, :lengths[k]] = token_category_masks(tokens_of[k], special_of[k]).T
    # Entropy, the category masses, sink scores and distances: the census's own reductions of this batch
    # (inspector.analyses.batching.batch_statistics), so a head's numbers here and in a census are one computation. They
    # overwrite the records' weights, which all_weights has copied for the statistics below.
    reduced, all_key_scores = batch_statistics(records, lambda record: record.weights, lengths, category_masks)
    census = {name: value.float().cpu().numpy() for name, value in reduced.items()}  # (K, L, H) each
    all_key_scores = all_key_scores.float().cpu().numpy()  # (K, L, H, n)
    # What each head writes, for the whole batch per layer: (K, H, n, hidden) values' and outputs' writes.
    value_writes, output_writes = [], []
    for layer, record in enumerate(records):
        for name, into in (("value", value_writes), ("output", output_writes)):
            vectors = record.tensors[name]  # (K, heads or kv_heads, n, head_dim)
            flat = vectors.transpose(0, 1).reshape(vectors.shape[1], -1, vectors.shape[-1])
            into.append(head_writes(loaded, layer, flat).view(heads, len(ids), width, -1).transpose(0, 1))
    out = []
    for k, row in enumerate(ids):
        n, tokens, special = lengths[k], tokens_of[k], special_of[k]
        weights = all_weights[k, :, :, :n, :n].numpy()  # (L, H, T, T)
        value_norms = torch.stack([w[k, :, :n].norm(dim=-1) for w in value_writes]).cpu().numpy()  # (L, H, T)
        contribution = torch.cat([w[k, :, :n] for w in output_writes]).cpu().numpy()  # (N, T, hidden)
        cosine, cka = contribution_similarity(contribution)
        key_scores = all_key_scores[k, :, :, :n]
        stats = dict(
            entropy=census["entropy"][k], entropy_normalized=census["entropy_normalized"][k],
            layer_entropy=census["entropy"][k].mean(axis=-1),
            token_mass=np.stack([census[f"mass_{name}"][k] for name in _CENSUS_MASSES], axis=-1),
            norm_token_mass=token_category_mass(norm_weighted_attention(weights, value_norms), tokens, special),
            first_token_sink=census["first_token_sink"][k], max_sink_score=census["max_sink_score"][k],
            mean_distance=census["mean_distance"][k],
            induction=induction_score(weights, row.cpu().numpy(), special),
            js_divergence=js_divergence_matrix(weights.reshape(layers * heads, n, n)),
            contribution_cosine=cosine, contribution_cka=cka,
        )
        out.append((stats, tokens, key_scores, model_output(loaded, base_run, batch, sequence=k)))
    return out, base_run.layer_outputs


def _text_statistics(loaded: LoadedModel, text: str, mode: AblationMode,
                     backend: str) -> tuple[HeadStatistics, tuple[str, ...], np.ndarray, dict]:
    """Statistics of one text, its tokens, its per-key sink scores (L, H, T) and the tensors the second pass
    reuses (the encoded inputs and the unablated output)."""
    inputs = encode_text(loaded, text).inputs
    stats, tokens, key_scores, base = _group_statistics(loaded, [inputs], mode, backend)[0]
    return stats, tokens, key_scores, {"inputs": inputs, "base": base}


def _group_statistics(loaded: LoadedModel, inputs: Sequence[dict[str, torch.Tensor]], mode: AblationMode,
                      backend: str) -> list[tuple]:
    """The first pass over a group of texts (encoded, batch of one each): per text its :class:`HeadStatistics`,
    its tokens, per-key sink scores and its unablated output — one batched forward for the statistics, then
    every text's single-head ablations (each copy starting at its head's layer) and gated gradients batched
    together."""
    info = loaded.info
    layers, heads = info.num_layers, info.num_heads
    ids = [item["input_ids"][0] for item in inputs]
    measured, layer_outputs = _texts_statistics(loaded, ids, backend)
    bases = [base for *_, base in measured]
    single = torch.eye(layers * heads, dtype=torch.bool).view(layers * heads, layers, heads)  # copy b ablates head b
    # Each copy starts at its head's layer: on 6 layers that skips 15 of the 36 layer runs of a head's 6 copies.
    ablation = _texts_changes(loaded, ids, bases, single, mode, backend,
                              layer_outputs or None).reshape(len(ids), layers, heads)
    gradients = _texts_gradients(loaded, ids, bases, backend)
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


def head_report(loaded: LoadedModel, texts: Sequence[str] | str, *,
                thresholds: HealthThresholds = HealthThresholds(), ablation: AblationMode = "zero",
                backend: str = "torch", pairs: int = REDUNDANT_PAIRS, pruning_step: float = PRUNING_STEP,
                progress: Progress | None = None) -> HeadReport:
    """The full head report of ``loaded`` over ``texts`` (one text, or a corpus — see the module docstring).

    ``ablation``: remove heads by zeroing their output or replacing it by its mean over the text. ``progress``
    (:mod:`inspector.base.progress`) is called after each text of each pass (2 × len(texts) calls); done and
    total count work units — each text's tokens times the copies of it forwarded (a backward counted as
    :data:`_BACKWARD_COST` forwards) — so done / total is the share of the whole job, not of the calls
    (:class:`ReportProgress` turns them into a fraction, texts/s and an ETA). Texts of one length group finish
    together, so their calls come together once the group's forwards are done (a few texts at a time; a
    callback that raises — the page's Stop — stops the report there).
    Raises :class:`InvalidTextError` / :class:`InvalidRequestError` for bad texts or options before the slow part
    where it can."""
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
    backend = backend_for(loaded, backend)
    # Every text's length and ids are checked before any slow work; the lengths also weigh the progress.
    encoded = [encode_text(loaded, text).inputs for text in texts]
    lengths = [int(item["input_ids"].shape[1]) for item in encoded]
    info = loaded.info
    layers, heads = info.num_layers, info.num_heads
    n = layers * heads
    pair_count = min(pairs, n * (n - 1) // 2)
    steps = np.unique(np.round(np.arange(0.0, 1.0 + 1e-9, pruning_step) * n).astype(np.int64))
    if steps[-1] != n:
        steps = np.append(steps, n)
    # Work per text, in copies forwarded: the plain forward; one copy per head ablated, each running only the
    # layers from its head's on when the model can resume (a head at layer l: (L − l) / L of a forward); the
    # gated forward and its backward (one per direction for an embedding model, 1 otherwise — not known before
    # the first output, so estimated as the larger); then each pair ablated together and each pruning step but
    # the first.
    ablation_copies = heads * (layers + 1) // 2 if loaded.can_resume else n
    first_pass = 1 + ablation_copies + 1 + (_BACKWARD_COST - 1) * EMBEDDING_DIRECTIONS
    second_pass = pair_count + len(steps) - 1
    total = sum(lengths) * (first_pass + second_pass)
    done = 0
    report_progress = progress or no_progress
    timings: dict[str, float] = {}

    started = time.perf_counter()
    count = len(texts)
    per_text: list = [None] * count
    tokens: list = [None] * count
    key_scores: list = [None] * count
    bases: list = [None] * count
    finished = 0
    # Texts of about one length share their forwards (right-padded, see batching.padded_batch): a group's single-head
    # ablation copies fill about one batch of _GROUP_TOKENS padded tokens, big enough for efficient matrix
    # products on a CPU, small enough that the progress callback (and with it the page's Stop) comes every few
    # texts. The callback still comes once per text, when its group is done.
    for group in length_buckets(lengths, max(1, _GROUP_TOKENS // n)):
        for index, (stats, text_tokens, scores, base) in zip(
                group, _group_statistics(loaded, [encoded[i] for i in group], ablation, backend)):
            per_text[index], tokens[index], key_scores[index], bases[index] = stats, text_tokens, scores, base
            finished += 1
            done += lengths[index] * first_pass
            report_progress(done, total, f"Statistics, single-head ablations and gradients: text {finished} of "
                                         f"{count} ({100 * done / total:.0f}% of the work)")
    statistics = HeadStatistics.mean(per_text)
    timings["statistics"] = time.perf_counter() - started

    started = time.perf_counter()
    importance_gradient = layer_normalized(statistics.gradient_raw.astype(np.float64))
    chosen = most_redundant_pairs(statistics.js_divergence, pair_count)
    order = pruning_order(importance_gradient)
    # Only the pairs ablated together and the pruning steps need new forwards: a pair's heads ablated one at a
    # time are single-head ablations the first pass measured on the same texts (their corpus mean is
    # importance_ablation), and step 0 removes nothing, so its change is 0 by definition.
    masks = torch.zeros(len(chosen) + len(steps) - 1, n, dtype=torch.bool)
    for p, (first, second) in enumerate(chosen):
        masks[p, [first, second]] = True
    for s, removed in enumerate(steps[1:]):
        masks[len(chosen) + s, order[:removed]] = True
    changes = np.zeros((count, masks.shape[0]), dtype=np.float64)
    finished = 0
    for group in length_buckets(lengths, max(1, _GROUP_TOKENS // masks.shape[0])):
        group_changes = _texts_changes(loaded, [encoded[i]["input_ids"][0] for i in group], [bases[i] for i in group],
                                       masks.view(-1, layers, heads), ablation, backend)
        for index, row in zip(group, group_changes):
            changes[index] = row
            finished += 1
            done += lengths[index] * second_pass
            report_progress(done, total, f"Redundant pairs and pruning: text {finished} of {count} "
                                         f"({100 * done / total:.0f}% of the work)")
    mean_changes = changes.mean(axis=0)
    single = statistics.importance_ablation.ravel()
    pruning_changes = np.concatenate([[0.0], mean_changes[len(chosen):]])
    timings["pairs_and_pruning"] = time.perf_counter() - started

    base = bases[0]
    return HeadReport(
        info=info, texts=texts, tokens=tuple(tokens), thresholds=thresholds, ablation_mode=ablation,
        output_kind=base.kind, change_name=output_change_name(base.kind), statistics=statistics,
        per_text=tuple(per_text), key_sink_scores=tuple(key_scores), importance_gradient=importance_gradient,
        flags=health_flags(statistics.entropy_normalized, statistics.max_sink_score, thresholds),
        order=cluster_order(statistics.js_divergence), mds=classical_mds(statistics.js_divergence),
        pairs=RedundantPairs(heads=chosen, js_divergence=statistics.js_divergence[chosen[:, 0], chosen[:, 1]],
                             change_first=single[chosen[:, 0]].astype(np.float32),
                             change_second=single[chosen[:, 1]].astype(np.float32),
                             change_both=mean_changes[:len(chosen)].astype(np.float32)),
        pruning=PruningCurve(fraction=(steps / n).astype(np.float32), heads_removed=steps,
                             change=pruning_changes.astype(np.float32), order=order),
        backend=backend, timings=timings,
    )


# ------------------------------------------------------------------------------------------- words and numbers

# A head counts as an induction head when, on average, a repeated token puts more than this share of its attention
# on the token that followed its earlier occurrence: two-fifths of the budget on a key chosen by content, where an
# even spread gives it 1/(keys the row sees). Olsson et al. (2022) measure the same "prefix matching" score on
# repeated random tokens, where clear induction heads score far higher; 0.4 is this project's cut-off, not theirs,
# and the report states it wherever it is used.
INDUCTION_HEAD_SCORE = 0.4
# A head "moves little value" through its sinks when its norm-weighted share on [CLS]/[SEP] is below this
# fraction of its attention share there (Kobayashi et al. 2020 show sink attention with small ‖f(x)‖).
_SINK_VALUE_RATIO = 0.5
_SINK_ATTENTION_SHARE = 0.3


def _percent(x: float) -> str:
    return f"{100 * x:.0f}%"


# Token categories named in words; the others ([CLS], [SEP]) are token strings, shown as they are.
_CATEGORY_KEYS = {"self": "heads.category.self", "previous": "heads.category.previous",
                  "next": "heads.category.next", "punctuation": "heads.category.punctuation"}


def _head_words(layer: int, head: int, lang: str) -> str:
    return t("heads.report.head", lang, layer=layer, head=head)


def measure_words(report: HeadReport, lang: str) -> str:
    """The output measure in words. English keeps :func:`output_change_name`'s wording — the one the JSON and
    the charts carry — so the English report reads as it always has; other languages take the catalogue's."""
    return report.change_name if lang == DEFAULT_LANGUAGE else t(f"measure.{report.output_kind}", lang)


def _where_it_looks(report: HeadReport, layer: int, head: int, lang: str) -> str:
    mass = report.statistics.token_mass[layer, head]
    top = int(np.argmax(mass))
    category = TOKEN_CATEGORIES[top]
    target = (t(_CATEGORY_KEYS[category], lang) if category in _CATEGORY_KEYS
              else t("heads.category.token", lang, token=category))
    return t("heads.report.looks", lang, share=_percent(mass[top]), target=target)


def _ablation_words(report: HeadReport, layer: int, head: int, lang: str) -> str:
    change = float(report.statistics.importance_ablation[layer, head])
    ranks = np.argsort(-report.statistics.importance_ablation.ravel(), kind="stable")
    rank = int(np.nonzero(ranks == layer * report.num_heads + head)[0][0]) + 1
    return t("heads.report.ablation", lang, mode=t(f"heads.mode.{report.ablation_mode}", lang),
             change=f"{change:.4f}", measure=measure_words(report, lang), rank=rank, total=ranks.size)


def _induction_words(induction: np.ndarray, lang: str = DEFAULT_LANGUAGE) -> str:
    """One line on induction heads (Olsson et al. 2022) from the (L, H) induction scores (NaN: nothing repeats)."""
    if np.isnan(induction).all():
        return t("heads.report.no_repeats", lang)
    scores = np.where(np.isnan(induction), -np.inf, induction)
    order = np.argsort(-scores.ravel(), kind="stable")
    found = [int(flat) for flat in order if scores.flat[flat] > INDUCTION_HEAD_SCORE]
    if not found:
        top = np.unravel_index(int(order[0]), induction.shape)
        return t("heads.report.no_induction", lang, threshold=_percent(INDUCTION_HEAD_SCORE),
                 highest=f"{induction[top]:.2f}", head=_head_words(int(top[0]), int(top[1]), lang))
    heads = induction.shape[1]
    named = t("heads.report.list_separator", lang).join(
        t("heads.report.scored_head", lang, head=_head_words(flat // heads, flat % heads, lang),
          score=f"{induction.flat[flat]:.2f}") for flat in found[:REPORT_HEADS_PER_KIND])
    more = (t("heads.report.and_more_inline", lang, n=len(found) - REPORT_HEADS_PER_KIND)
            if len(found) > REPORT_HEADS_PER_KIND else "")
    return t("heads.report.induction", lang, threshold=f"{INDUCTION_HEAD_SCORE:g}", named=named, more=more)


def _pair_verdict(both: float, first: float, second: float) -> str:
    """The catalogue key of what ablating a pair together says about its redundancy."""
    if both <= 1.25 * max(first, second):
        return "heads.report.pair_redundant"
    if both < 0.9 * (first + second):
        return "heads.report.pair_partly_redundant"
    return "heads.report.pair_not_redundant"


def health_report(report: HeadReport, lang: str = DEFAULT_LANGUAGE, *,
                  per_kind: int | None = REPORT_HEADS_PER_KIND) -> list[str]:
    """The health report in plain words, in ``lang`` (:data:`inspector.base.i18n.LANGUAGES`): one line per finding,
    each citing its threshold and numbers, every line a catalogue sentence filled with the measured numbers. At
    most ``per_kind`` collapsed and diffuse heads each, then "… and N more." (``per_kind=None``: every head)."""
    stats, thresholds, flags = report.statistics, report.thresholds, report.flags
    n_texts = len(report.texts)
    measure = measure_words(report, lang)
    lines = [t("heads.report.measured", lang,
               texts=t("heads.report.texts_one" if n_texts == 1 else "heads.report.texts_many", lang, n=n_texts),
               tokens=sum(len(tokens) for tokens in report.tokens), model=model_label(report.info.name, lang),
               collapsed=f"{thresholds.collapsed:g}", diffuse=f"{thresholds.diffuse:g}", sink=f"{thresholds.sink:g}")]

    def name(layer: int, head: int) -> str:
        return _head_words(int(layer), int(head), lang)

    def listed(mask: np.ndarray, key: np.ndarray, describe: Callable[[int, int], str], none: str) -> None:
        named, more = flagged_heads(mask, key, per_kind)
        if not named:
            lines.append(none)
            return
        lines.extend(describe(layer, head) for layer, head in named)
        if more:
            lines.append(t("heads.report.and_more", lang, n=more))

    listed(flags.collapsed, stats.entropy_normalized,
           lambda layer, head: t("heads.report.collapsed", lang, head=name(layer, head),
                          entropy=f"{stats.entropy_normalized[layer, head]:.2f}", threshold=f"{thresholds.collapsed:g}",
                          looks=_where_it_looks(report, layer, head, lang),
                          ablation=_ablation_words(report, layer, head, lang)),
           t("heads.report.no_collapsed", lang, threshold=f"{thresholds.collapsed:g}",
             lowest=f"{np.nanmin(stats.entropy_normalized):.2f}"))
    listed(flags.diffuse, -stats.entropy_normalized,
           lambda layer, head: t("heads.report.diffuse", lang, head=name(layer, head),
                          entropy=f"{stats.entropy_normalized[layer, head]:.2f}", threshold=f"{thresholds.diffuse:g}",
                          ablation=_ablation_words(report, layer, head, lang)),
           t("heads.report.no_diffuse", lang, threshold=f"{thresholds.diffuse:g}",
             highest=f"{np.nanmax(stats.entropy_normalized):.2f}"))

    first = stats.first_token_sink
    lines.append(t("heads.report.sinks", lang, sinks=int(flags.sink.sum()), heads=flags.sink.size,
                   threshold=f"{thresholds.sink:g}", first=int((first > thresholds.sink).sum()),
                   highest=f"{first.max():.2f}", head=name(*np.unravel_index(int(first.argmax()), first.shape))))
    special_attention = stats.token_mass[..., :2].sum(axis=-1)
    special_value = stats.norm_token_mass[..., :2].sum(axis=-1)
    idle = (special_attention > _SINK_ATTENTION_SHARE) & (special_value < _SINK_VALUE_RATIO * special_attention)
    listed(idle, special_value - special_attention,
           lambda layer, head: t("heads.report.idle_sink", lang, head=name(layer, head),
                          attention=_percent(special_attention[layer, head]),
                          value=_percent(special_value[layer, head]),
                          ablation=_ablation_words(report, layer, head, lang)),
           t("heads.report.no_idle_sink", lang, share=_percent(_SINK_ATTENTION_SHARE)))
    lines.append(_induction_words(stats.induction, lang))

    ablation = stats.importance_ablation
    top_ablation = np.unravel_index(int(ablation.argmax()), ablation.shape)
    top_gradient = np.unravel_index(int(report.importance_gradient.argmax()), ablation.shape)
    from scipy.stats import spearmanr

    if np.ptp(ablation) > 0 and np.ptp(report.importance_gradient) > 0:
        rho = spearmanr(ablation.ravel(), report.importance_gradient.ravel()).statistic
        agreement = t("heads.report.rankings_agree", lang, rho=f"{rho:.2f}")
    else:
        agreement = t("heads.report.rankings_incomparable", lang)
    lines.append(t("heads.report.most_important", lang, ablation_head=name(*top_ablation), measure=measure,
                   ablation=f"{ablation[top_ablation]:.4f}", gradient_head=name(*top_gradient),
                   gradient=f"{report.importance_gradient[top_gradient]:.2f}", agreement=agreement))
    pairs = report.pairs
    for p in range(min(2, len(pairs.heads))):
        a, b = (report.head_name(x) for x in pairs.heads[p])
        verdict = _pair_verdict(pairs.change_both[p], pairs.change_first[p], pairs.change_second[p])
        lines.append(t("heads.report.pair", lang, a=a, b=b, js=f"{pairs.js_divergence[p]:.3f}",
                       first=f"{pairs.change_first[p]:.4f}", second=f"{pairs.change_second[p]:.4f}",
                       both=f"{pairs.change_both[p]:.4f}", verdict=t(verdict, lang)))
    curve = report.pruning
    half = int(np.argmin(np.abs(curve.fraction - 0.5)))
    lines.append(t("heads.report.pruning", lang, removed=curve.heads_removed[half], heads=curve.order.size,
                   share=_percent(curve.fraction[half]), half=f"{curve.change[half]:.4f}",
                   everything=f"{curve.change[-1]:.4f}", measure=measure))
    return lines


def report_json(report: HeadReport, lang: str = DEFAULT_LANGUAGE) -> dict:
    """The numbers of ``report`` as JSON-ready data (the CLI's ``--json`` and the page's download), its health
    report in ``lang``."""
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
        "health_report": health_report(report, lang),
        "timings": {k: round(v, 3) for k, v in report.timings.items()},
    }, significant_digits=7)
