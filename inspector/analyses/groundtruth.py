"""Ground-truth lab (issue #8): score every attribution method on models where the causal token is known.

The project trains small models on tasks whose answer depends on one token by construction
(:mod:`inspector.analyses.tasks`; the training scripts are ``training/*.py``) and ships them under ``assets/models/``,
each with a model card, ``groundtruth.json`` (:class:`ModelCard`): the task, the accuracy it reached on fresh
data, and — for the deceptive model — the bound its attention on the causal token stays under.

:func:`score_example` runs every method of :mod:`inspector.analyses.attribution` on one generated example (the
methods the Attribution page's :func:`~inspector.analyses.attribution.attribute` runs, through its
:func:`~inspector.analyses.attribution.method_scores`; the target the correct answer: the true class's
probability, or the log-probability of the word to be copied) and ranks the causal token among the content tokens;
:func:`scoreboard` does it over N fresh examples and reports, per method:

- **top-1 hit rate** — the causal token ranked first — and **top-k hit rate**, each with a 95 % Wilson
  interval (``scipy.stats.binomtest``);
- **mean rank** of the causal token (1 = first; ties count against the method, so a constant score ranks
  last), with a 95 % bootstrap interval over examples;
- the **chance** level of each: a random ranking of the same texts (exact, from their lengths).

Alongside: the model's accuracy on the same examples (Wilson interval), the mean attention weight on the causal
token (every layer, head and query row other than its own — under a causal mask, the rows after it; the
quantity the deceptive model was trained to keep small, :func:`causal_attention_mass`) and, per head, how often
that head's attention row — the row the attention method reads — peaks on the causal token.

Methods are ranked by their signed score (higher = more support for the target), as the Attribution page shows
them: in these tasks the causal token supports the correct answer, so a method that gives it a large negative
score has it backwards. Two more views: the top-1 hit rate by |score| (a method that singles the token out with
the wrong sign), and — for induction, where the two A's take part in the copy — whether the top token is any of
the mechanism's tokens.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from scipy import stats

from inspector.analyses.attribution import (
    METHODS,
    AttributionSettings,
    TargetSpec,
    bootstrap_mean_interval,
    method_scores,
)
from inspector.analyses.tasks import FRESH_SEED, Example, Task, generate, task
from inspector.base.display import Displayable
from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import Notice
from inspector.base.jsonable import to_jsonable
from inspector.base.progress import Progress, no_progress
from inspector.core.forward import encode_text, forward
from inspector.core.loading import CARD_NAME, DEFAULT_MODEL, LoadedModel, shipped_choices
from inspector.core.model_folders import model_name

Variant = Literal["honest", "deceptive"]
DEFAULT_TOP_K = 3
DEFAULT_EXAMPLES = 100
# What the Ground truth page scores after a Stop, and first of every request: about a fifth of the default's time.
# The first examples of a request are the same at any size (one generator from one seed), so they are a true part of
# it. When all of them would take longer than FIRST_VIEW_S at the pace of the first ones (a busy server), the page shows
# the first ones' scoreboard and scores the rest on request (issue 31, item 5: the first view's target).
FEWER_EXAMPLES = 20
FIRST_VIEW_S = 20.0
MAX_EXAMPLES = 2000
# Integrated-gradients points: the task models are small and their targets smooth; 16 keeps the scoreboard fast.
IG_STEPS = 16


@dataclass(frozen=True)
class ModelCard:
    """A ground-truth model's ``groundtruth.json``. task: its :class:`~inspector.analyses.tasks.Task`; variant: honest
    or
    deceptive (trained to look away from the causal token); label: its name in the model picker;
    stated_accuracy: the accuracy it promises on fresh data; accuracy: what its training run measured, on
    ``accuracy_examples`` fresh examples; causal_attention_mass: the mean attention on the causal token then;
    attention_bound: the bound that mass stays under (deceptive only); training: how it was trained (command,
    steps, seconds, versions)."""

    task: Task
    variant: Variant
    label: str
    stated_accuracy: float
    accuracy: float
    accuracy_examples: int
    causal_attention_mass: float
    attention_bound: float | None
    training: dict

    def __post_init__(self) -> None:
        if not 0 < self.stated_accuracy <= 1 or not 0 <= self.accuracy <= 1:
            raise ValueError("ModelCard accuracies must be shares in [0, 1]")


def read_card(folder: str | Path, name: str | None = None) -> ModelCard:
    """The model card of the model in ``folder``; :class:`InvalidRequestError` if it has none or it is malformed.
    ``name``: the model's name (``ModelInfo.name``), as the messages name it — a bundled decoder's folder is a cache
    folder a visitor never picked (issue 39); None: the folder's own name."""
    path = Path(folder) / CARD_NAME
    model = model_name(name) if name is not None else Path(folder).name
    if not path.is_file():
        raise InvalidRequestError(f"'{model}' has no {CARD_NAME}: ground-truth scoring needs a model trained on a "
                                  "task whose causal token is known — pick one of the shipped models "
                                  f"({', '.join(shipped_choices()) or 'none found'}) or train one with training/*.py",
                                  notice=Notice("gt.error.no_card", model=model, choices=_ground_truth_models()))
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return ModelCard(task=task(raw["task"]), variant=raw["variant"],
                         label=str(raw.get("label") or Path(folder).name),
                         stated_accuracy=float(raw["stated_accuracy"]), accuracy=float(raw["accuracy"]["value"]),
                         accuracy_examples=int(raw["accuracy"]["examples"]),
                         causal_attention_mass=float(raw["causal_attention_mass"]),
                         attention_bound=None if raw.get("attention_bound") is None else float(raw["attention_bound"]),
                         training=dict(raw.get("training", {})))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InvalidRequestError(f"{path} is not a readable model card ({err}); retrain the model with its "
                                  "training script", notice=Notice("gt.error.bad_card", model=model)) from err


def card_for(loaded: LoadedModel) -> ModelCard:
    """The model card of a loaded model (its folder is ``info.source``)."""
    if loaded.info.source == DEFAULT_MODEL:
        raise InvalidRequestError("the bundled all-MiniLM-L6-v2 has no known causal tokens; pick one of the "
                                  f"ground-truth models ({', '.join(shipped_choices())})",
                                  notice=Notice("gt.error.bundled_no_card", choices=_ground_truth_models()))
    return read_card(loaded.info.source, loaded.info.name)


def _ground_truth_models() -> str:
    """The shipped models as their menu names them, for a sentence that asks to pick one: a
    :class:`~inspector.base.i18n.Notice` of each name and the list's separator, so a 简体中文 sentence lists them in
    Chinese (issue 44 item 9: "请选一个已知答案模型（Ground truth: … (shipped), …）")."""
    names = [model_name(spec) for spec in shipped_choices()]
    if not names:
        return "—"
    listed = names[-1]
    for name in reversed(names[:-1]):
        listed = Notice("gt.models_listed", first=name, rest=listed)
    return listed


# ------------------------------------------------------------------------------------------- one example

def rank_of(scores: np.ndarray, content: np.ndarray, position: int) -> int:
    """1-based rank of ``position`` among the ``content`` positions by descending score. Ties count against it
    (every other content token scoring at least as high ranks above it); NaN scores rank last."""
    values = np.where(np.isfinite(scores), scores, -np.inf)
    others = content.copy()
    others[position] = False
    own = values[position]
    if not np.isfinite(own):
        return int(content.sum())
    return 1 + int((values[others] >= own).sum())


def causal_row_weights(weights: torch.Tensor, causal: torch.Tensor, mask: torch.Tensor, *,
                       causal_mask: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Every query row's weight on the causal token and which rows count. weights: (batch, layers, heads, n, n);
    causal: (batch,) token positions; mask: (batch, n) real tokens. Returns (batch, layers, heads, n) weights and
    (batch, n) float row flags: real rows other than the causal token's own — under a causal mask
    (``causal_mask``), the rows after it, the only ones that can see it. Differentiable: the deceptive model's
    training penalty is built on it."""
    index = causal.view(-1, 1, 1, 1, 1).expand(*weights.shape[:4], 1)
    on_causal = weights.gather(-1, index)[..., 0]
    positions = torch.arange(weights.shape[-1], device=weights.device)[None]  # (1, n)
    rows = mask.bool() & (positions != causal[:, None])
    if causal_mask:
        rows &= positions > causal[:, None]
    return on_causal, rows.to(on_causal.dtype)


def causal_attention_mass(weights: torch.Tensor, causal: torch.Tensor, mask: torch.Tensor, *,
                          causal_mask: bool) -> torch.Tensor:
    """(batch,) the mean weight on the causal token over every layer, head and counted row
    (:func:`causal_row_weights`) — the number the deceptive model's card bounds."""
    on_causal, rows = causal_row_weights(weights, causal, mask, causal_mask=causal_mask)
    return (on_causal.mean(dim=(1, 2)) * rows).sum(dim=1) / rows.sum(dim=1).clamp_min(1)


@dataclass(frozen=True)
class Evaluation:
    """The model itself on N examples. predicted: N outputs (class labels or words); correct: (N,) bool;
    probability: (N,) the model's probability of the correct answer; attention_mass: (N,) mean attention on the
    causal token (:func:`causal_attention_mass`); head_peaks: (N, layers, heads) bool — that head's attention
    row peaks on the causal token among the content tokens (the row the attention method reads: [CLS] for a
    classifier, the last token for a language model); head_weight: (N, layers, heads) the weight that row puts on
    the causal token — a head can rank it first among the content tokens with almost none of its weight."""

    predicted: tuple[str, ...]
    correct: np.ndarray
    probability: np.ndarray
    attention_mass: np.ndarray
    head_peaks: np.ndarray
    head_weight: np.ndarray

    def __post_init__(self) -> None:
        count = len(self.predicted)
        if any(a.shape[:1] != (count,) for a in (self.correct, self.probability, self.attention_mass, self.head_peaks,
                                                 self.head_weight)):
            raise ValueError("Evaluation: one entry per example in every array")

    @property
    def accuracy(self) -> float:
        return float(self.correct.mean())


def _token_offset(loaded: LoadedModel, example: Example) -> int:
    """Tokens before the first word (a classifier's [CLS]); checks the tokenizer reads one token per word."""
    word_ids = loaded.codec.word_ids(example.text)
    starts = [i for i, w in enumerate(word_ids) if w == 0]
    if len([w for w in word_ids if w is not None]) != len(example.words) or not starts:
        raise InvalidRequestError(f"{loaded.info.name}'s tokenizer does not read one token per word of the task; "
                                  "ground-truth examples need the task's own tokenizer (saved by its training script)")
    return starts[0]


def evaluate(loaded: LoadedModel, examples: Sequence[Example], spec_task: Task, *, backend: str = "torch",
             batch_size: int = 128) -> Evaluation:
    """Run the model on ``examples`` of ``spec_task`` (batched, right-padded, through the one attention function)
    and read its answers, its probability of the correct one and its attention on the causal token. The training
    scripts measure their models' cards with it too."""
    special_ids = torch.tensor(sorted(set(loaded.codec.all_special_ids())))
    pad = loaded.codec.special_token_id("pad")
    pad = pad if pad is not None else 0
    predicted, correct, probability, masses, peaks, head_weight = [], [], [], [], [], []
    for start in range(0, len(examples), batch_size):
        chunk = examples[start:start + batch_size]
        rows = [encode_text(loaded, example.text).encoding["input_ids"][0] for example in chunk]  # on the CPU
        width = max(len(row) for row in rows)
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, :len(row)], mask[i, :len(row)] = row, 1
        causal = torch.tensor([example.causal + _token_offset(loaded, example) for example in chunk])
        device = loaded.device
        result = forward(loaded, {"input_ids": ids.to(device), "attention_mask": mask.to(device)}, backend=backend,
                         weights_layers="all", stats=())
        weights = torch.stack([r.weights.float().cpu() for r in result.records], dim=1)  # (batch, L, H, n, n)
        masses.append(causal_attention_mass(weights, causal, mask, causal_mask=loaded.info.causal))
        batch = torch.arange(len(rows))
        query = mask.sum(dim=1) - 1 if spec_task.kind == "causal-lm" else torch.zeros(len(rows), dtype=torch.long)
        content = mask.bool() & ~torch.isin(ids, special_ids)  # (batch, n)
        read = weights[batch, :, :, query, :]  # (batch, L, H, n): the two index tensors pick one row per sequence
        head_weight.append(read[batch, :, :, causal])
        peaks.append(read.masked_fill(~content[:, None, None, :], -1.0).argmax(dim=-1) == causal[:, None, None])
        logits = result.outputs.logits.float().cpu()
        logits = logits if spec_task.kind == "classifier" else logits[batch, query]
        probs = torch.softmax(logits, dim=-1)
        if spec_task.kind == "classifier":
            answers = torch.tensor([int(example.label) for example in chunk])
            names = [loaded.info.labels[int(i)] for i in probs.argmax(dim=-1)]
        else:
            answers = torch.tensor([int(i) for i in loaded.codec.vocabulary_ids([example.answer for example in chunk])])
            names = [str(t) for t in loaded.codec.token_strings(probs.argmax(dim=-1).tolist())]
        predicted.extend(names)
        correct.append(probs.argmax(dim=-1) == answers)
        probability.append(probs[batch, answers])
    return Evaluation(predicted=tuple(predicted), correct=torch.cat(correct).numpy(),
                      probability=torch.cat(probability).double().numpy(),
                      attention_mass=torch.cat(masses).double().numpy(), head_peaks=torch.cat(peaks).numpy(),
                      head_weight=torch.cat(head_weight).double().numpy())


@dataclass(frozen=True)
class ExampleScores:
    """Every method on one example. tokens: n token strings; position: the causal token's index; supporting:
    indices of the tokens the mechanism also reads (induction: the two A's); content: (n,) bool — the tokens
    ranked (not special); query: the row the layer-local methods read; scores: {method: (n,) float64}; ranks:
    {method: 1-based rank of the causal token}; mechanism_ranks: {method: the best rank of the causal and
    supporting tokens} — for induction, whether a method found the circuit's tokens at all; magnitude_ranks:
    {method: the causal token's rank by |score|} — a signed method can single the token out with the wrong sign
    (gradient × input under LayerNorm does); answer: the correct output; model: :func:`evaluate` on this one
    example; target: f in words."""

    example: Example
    tokens: tuple[str, ...]
    position: int
    supporting: tuple[int, ...]
    content: np.ndarray
    query: int
    scores: dict[str, np.ndarray]
    ranks: dict[str, int]
    mechanism_ranks: dict[str, int]
    magnitude_ranks: dict[str, int]
    model: Evaluation
    target: str

    def __post_init__(self) -> None:
        n = len(self.tokens)
        if self.content.shape != (n,) or not self.content[self.position]:
            raise ValueError("ExampleScores.content must be (n,) and include the causal token")
        for method, values in self.scores.items():
            if values.shape != (n,) or not 1 <= self.ranks[method] <= int(self.content.sum()):
                raise ValueError(f"ExampleScores: {method!r} scores must be (n,) with a rank among the content tokens")

    @property
    def answer(self) -> str:
        return self.example.answer

    @property
    def predicted(self) -> str:
        return self.model.predicted[0]


def score_example(loaded: LoadedModel, example: Example, card: ModelCard, *,
                  methods: Sequence[str] = METHODS, backend: str = "torch") -> ExampleScores:
    """Every method in ``methods`` on ``example`` (see the module docstring) and the causal token's rank in each."""
    offset = _token_offset(loaded, example)
    position = example.causal + offset
    spec = TargetSpec(class_index=example.label) if card.task.kind == "classifier" else TargetSpec(token=example.answer)
    settings = AttributionSettings(methods=tuple(methods), ig_steps=IG_STEPS, head_grid=False, permutations=0,
                                   faithfulness=False)
    # The methods' scores alone: the ranks need nothing else attribute() computes (its agreement between methods
    # cost as long as the methods themselves over a scoreboard; issue 31).
    report = method_scores(loaded, example.text, spec=spec, settings=settings, backend=backend)
    content = ~report.protected
    supporting = tuple(i + offset for i in example.supporting)
    return ExampleScores(example=example, tokens=report.tokens, position=position, supporting=supporting,
                         content=content, query=report.query, scores=report.scores,
                         ranks={method: rank_of(values, content, position) for method, values in report.scores.items()},
                         mechanism_ranks={method: min(rank_of(values, content, p) for p in (position, *supporting))
                                          for method, values in report.scores.items()},
                         magnitude_ranks={method: rank_of(np.abs(values), content, position)
                                          for method, values in report.scores.items()},
                         model=evaluate(loaded, (example,), card.task, backend=backend),
                         target=report.target.description)


# ------------------------------------------------------------------------------------------- the scoreboard

def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (``scipy.stats.binomtest``)."""
    interval = stats.binomtest(int(successes), int(trials)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(interval.low), float(interval.high)


def chance_hit_rate(content_counts: np.ndarray, k: int) -> float:
    """The mean top-k hit rate of a uniformly random ranking: k/n per example (one causal token among n)."""
    return float(np.mean(np.minimum(k, content_counts) / content_counts))


def hit_rates(ranks: np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(m,) share of examples with rank ≤ k in ``ranks`` (N, m), and its (m,) Wilson 95 % interval."""
    hits = (ranks <= k).sum(axis=0)
    interval = np.array([wilson_interval(h, len(ranks)) for h in hits]).reshape(-1, 2)
    return hits / len(ranks), interval[:, 0], interval[:, 1]


def aggregate_ranks(ranks: np.ndarray, content: np.ndarray, k: int) -> dict[str, np.ndarray]:
    """Hit rates and mean ranks from ``ranks`` (N, m) — the causal token's rank per example and method — and
    ``content`` (N,), how many tokens each example ranked: top1 / topk (m,) with Wilson ``*_low`` / ``*_high``,
    mean_rank (m,) with its bootstrap interval."""
    out: dict[str, np.ndarray] = {}
    out["top1"], out["top1_low"], out["top1_high"] = hit_rates(ranks, 1)
    out["topk"], out["topk_low"], out["topk_high"] = hit_rates(ranks, k)
    out["mean_rank"], out["mean_rank_low"], out["mean_rank_high"] = bootstrap_mean_interval(ranks.astype(np.float64))
    return out


@dataclass(frozen=True)
class Scoreboard(Displayable):
    """Every method over N fresh examples of a ground-truth model.

    methods: m names; k: the k of top-k; seed: the examples' seed. ranks: (N, m) int, the causal token's rank
    per example and method; content: (N,) int, how many tokens were ranked. top1 / topk / mean_rank: (m,), each
    with (m,) ``*_low`` / ``*_high`` 95 % intervals (Wilson; bootstrap for the mean rank). chance_top1,
    chance_topk, chance_rank: a random ranking's values. accuracy (with its interval): the model's, on these
    examples. attention_mass: (N,) mean attention on the causal token per example. head_top1: (layers, heads)
    share of examples in which that head's attention row peaks on the causal token; head_weight: (layers, heads)
    that row's mean weight on it. mechanism_top1 (m,), with its Wilson interval: the share of examples whose
    top-ranked token is the causal token or a supporting one (equal to top1 for tasks without supporting tokens).
    magnitude_top1 (m,), with its interval: top-1 when ranking by |score|."""

    model_name: str
    card: ModelCard
    methods: tuple[str, ...]
    k: int
    seed: int
    ranks: np.ndarray
    content: np.ndarray
    top1: np.ndarray
    top1_low: np.ndarray
    top1_high: np.ndarray
    topk: np.ndarray
    topk_low: np.ndarray
    topk_high: np.ndarray
    mean_rank: np.ndarray
    mean_rank_low: np.ndarray
    mean_rank_high: np.ndarray
    chance_top1: float
    chance_topk: float
    chance_rank: float
    accuracy: float
    accuracy_low: float
    accuracy_high: float
    attention_mass: np.ndarray
    head_top1: np.ndarray
    head_weight: np.ndarray
    mechanism_top1: np.ndarray
    mechanism_top1_low: np.ndarray
    mechanism_top1_high: np.ndarray
    magnitude_top1: np.ndarray
    magnitude_top1_low: np.ndarray
    magnitude_top1_high: np.ndarray
    seconds: float

    def __post_init__(self) -> None:
        count, m = len(self.content), len(self.methods)
        if self.ranks.shape != (count, m) or self.attention_mass.shape != (count,):
            raise ValueError("Scoreboard: ranks must be (N, m) and attention_mass (N,)")
        for name in ("top1", "top1_low", "top1_high", "topk", "topk_low", "topk_high", "mean_rank", "mean_rank_low",
                     "mean_rank_high", "mechanism_top1", "mechanism_top1_low", "mechanism_top1_high", "magnitude_top1",
                     "magnitude_top1_low", "magnitude_top1_high"):
            if getattr(self, name).shape != (m,):
                raise ValueError(f"Scoreboard.{name} must have one value per method")
        if np.any(self.ranks < 1) or np.any(self.ranks > self.content[:, None]):
            raise ValueError("Scoreboard: every rank must lie between 1 and the number of ranked tokens")

    @property
    def examples(self) -> int:
        return len(self.content)

    def mass_interval(self) -> tuple[float, float, float]:
        """Mean attention on the causal token and its 95 % bootstrap interval."""
        mean, low, high = bootstrap_mean_interval(self.attention_mass[:, None])
        return float(mean[0]), float(low[0]), float(high[0])


@dataclass(frozen=True)
class ScoredExamples:
    """The first examples of a request, scored (:func:`score_examples`): examples: one :class:`ExampleScores` per
    example, in the order the task's generator made them from ``seed``; seconds: how long scoring them took."""

    seed: int
    examples: tuple[ExampleScores, ...]
    seconds: float

    def __post_init__(self) -> None:
        if not self.examples or self.seconds < 0:
            raise ValueError("ScoredExamples needs at least one example and a non-negative time")

    def pace(self, count: int) -> float:
        """Seconds ``count`` examples would take at the pace these were scored."""
        return self.seconds * count / len(self.examples)


def score_examples(loaded: LoadedModel, examples: int, *, seed: int = FRESH_SEED, methods: Sequence[str] = METHODS,
                   backend: str = "torch", progress: Progress | None = None,
                   scored: ScoredExamples | None = None) -> ScoredExamples:
    """:func:`score_example` on the first ``examples`` fresh examples of the model's task (from ``seed``). The first
    examples of a request are the same at every size (one generator from one seed): ``scored``, the first of them
    scored earlier, are kept and only the rest scored. ``progress`` (:mod:`inspector.base.progress`) counts the
    examples scored, called before each and at the end."""
    card = card_for(loaded)
    if not 1 <= examples <= MAX_EXAMPLES:
        raise InvalidRequestError(f"examples must be between 1 and {MAX_EXAMPLES}, got {examples}")
    kept = () if scored is None else scored.examples
    wanted = generate(card.task.name, examples, seed=seed)
    if scored is not None and (scored.seed != seed or len(kept) > examples
                               or any(s.example != e for s, e in zip(kept, wanted, strict=False))):
        raise InvalidRequestError("the examples scored earlier are not the first of this request (another seed, "
                                  "task or size); score the request from its first example")
    say = progress or no_progress
    started = time.perf_counter()
    done = list(kept)
    for index in range(len(kept), examples):
        say(index, examples, f"example {index + 1} of {examples}")
        done.append(score_example(loaded, wanted[index], card, methods=methods, backend=backend))
    say(examples, examples, "done")
    spent = time.perf_counter() - started + (0.0 if scored is None else scored.seconds)
    return ScoredExamples(seed=seed, examples=tuple(done), seconds=spent)


def scoreboard(loaded: LoadedModel, examples: int = DEFAULT_EXAMPLES, *, seed: int = FRESH_SEED,
               k: int = DEFAULT_TOP_K, methods: Sequence[str] = METHODS, backend: str = "torch",
               progress: Progress | None = None, scored: ScoredExamples | None = None) -> Scoreboard:
    """:func:`score_example` on ``examples`` fresh examples of the model's task (from ``seed``), aggregated.
    ``progress`` (:mod:`inspector.base.progress`) counts examples scored, called before each and at the end;
    ``scored``: the first examples, scored earlier (:func:`score_examples`), which are not scored again."""
    card = card_for(loaded)
    if k < 1:
        raise InvalidRequestError(f"top-k needs k ≥ 1, got {k}")
    run = score_examples(loaded, examples, seed=seed, methods=methods, backend=backend, progress=progress,
                         scored=scored)
    started = time.perf_counter()  # the scoring's own time is run.seconds (earlier examples' included)
    done = run.examples
    names = tuple(done[0].ranks)
    ranks = np.array([[s.ranks[m] for m in names] for s in done], dtype=np.int64)  # (N, m)
    content = np.array([int(s.content.sum()) for s in done], dtype=np.int64)
    mechanism = hit_rates(np.array([[s.mechanism_ranks[m] for m in names] for s in done], dtype=np.int64))
    magnitude = hit_rates(np.array([[s.magnitude_ranks[m] for m in names] for s in done], dtype=np.int64))
    correct = int(sum(s.model.correct[0] for s in done))
    accuracy_low, accuracy_high = wilson_interval(correct, examples)
    return Scoreboard(
        model_name=loaded.info.name, card=card, methods=names, k=k, seed=seed, ranks=ranks, content=content,
        **aggregate_ranks(ranks, content, k), chance_top1=chance_hit_rate(content, 1),
        chance_topk=chance_hit_rate(content, k), chance_rank=float(np.mean((content + 1) / 2)),
        accuracy=correct / examples, accuracy_low=accuracy_low, accuracy_high=accuracy_high,
        attention_mass=np.array([s.model.attention_mass[0] for s in done]),
        head_top1=np.mean([s.model.head_peaks[0] for s in done], axis=0),
        head_weight=np.mean([s.model.head_weight[0] for s in done], axis=0),
        mechanism_top1=mechanism[0], mechanism_top1_low=mechanism[1], mechanism_top1_high=mechanism[2],
        magnitude_top1=magnitude[0], magnitude_top1_low=magnitude[1], magnitude_top1_high=magnitude[2],
        seconds=run.seconds + time.perf_counter() - started)


def scoreboard_json(board: Scoreboard) -> dict:
    """The scoreboard as plain JSON-ready values (the CLI's output)."""
    mass, mass_low, mass_high = board.mass_interval()
    card = board.card
    return to_jsonable({
        "model": board.model_name, "task": card.task.name, "variant": card.variant, "truth": card.task.truth,
        "examples": board.examples, "seed": board.seed, "k": board.k,
        "card": {"stated_accuracy": card.stated_accuracy, "training_accuracy": card.accuracy,
                 "attention_bound": card.attention_bound, "training": card.training},
        "accuracy": {"value": board.accuracy, "low_95": board.accuracy_low, "high_95": board.accuracy_high},
        "causal_attention_mass": {"mean": mass, "low_95": mass_low, "high_95": mass_high,
                                  "bound": card.attention_bound},
        "chance": {"top1": board.chance_top1, "topk": board.chance_topk, "mean_rank": board.chance_rank},
        "methods": {m: {"top1": board.top1[i], "top1_95": [board.top1_low[i], board.top1_high[i]],
                        "topk": board.topk[i], "topk_95": [board.topk_low[i], board.topk_high[i]],
                        "mean_rank": board.mean_rank[i],
                        "mean_rank_95": [board.mean_rank_low[i], board.mean_rank_high[i]],
                        "mechanism_top1": board.mechanism_top1[i],
                        "mechanism_top1_95": [board.mechanism_top1_low[i], board.mechanism_top1_high[i]],
                        "magnitude_top1": board.magnitude_top1[i],
                        "magnitude_top1_95": [board.magnitude_top1_low[i], board.magnitude_top1_high[i]]}
                    for i, m in enumerate(board.methods)},
        "head_top1": board.head_top1, "head_weight_on_causal": board.head_weight, "seconds": board.seconds,
    })


def example_json(scored: ExampleScores) -> dict:
    """One scored example as plain JSON-ready values."""
    return to_jsonable({"text": scored.example.text, "tokens": list(scored.tokens), "causal_position": scored.position,
                        "supporting_positions": list(scored.supporting), "answer": scored.answer,
                        "predicted": scored.predicted, "probability": scored.model.probability[0],
                        "target": scored.target, "attention_mass": scored.model.attention_mass[0],
                        "ranks": scored.ranks, "mechanism_ranks": scored.mechanism_ranks,
                        "magnitude_ranks": scored.magnitude_ranks, "scores": scored.scores})


def top_ranked_tokens(scored: ExampleScores) -> dict[str, int]:
    """Per method, the position of the content token it ranks first (the first of equal scores; NaN last)."""
    top = {}
    for method, values in scored.scores.items():
        top[method] = int(np.argmax(np.where(scored.content & np.isfinite(values), values, -np.inf)))
    return top
