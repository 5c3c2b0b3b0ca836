"""The one call the Attribution page, ``python -m inspector attribute`` and the ground-truth scoreboard make:
:func:`attribute` sets the problem up, runs every requested method of :data:`REGISTRY` through the one contract
(timing each), and adds agreement, ERASER faithfulness, the layer × head τ grid and the uniform/permutation
counterfactual; :func:`report_json` and :func:`counterfactual_json` turn the results into the command line's
JSON.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from inspector.analyses.attribution.counterfactual import CounterfactualAttention, counterfactual_rows
from inspector.analyses.attribution.faithfulness import Faithfulness, model_faithfulness
from inspector.analyses.attribution.methods import METHODS, REGISTRY, IntegratedGradientsRun, MethodContext
from inspector.analyses.attribution.rank_agreement import (
    Agreement,
    CorpusAgreement,
    agreement,
    corpus_kendall,
    head_tau_grid,
)
from inspector.analyses.attribution.targets import (
    EncodingFacts,
    Problem,
    QueryChoice,
    RemovalMode,
    Target,
    TargetSpec,
    query_index,
    setup_problem,
)
from inspector.base.display import Displayable
from inspector.base.errors import InvalidRequestError, UnsupportedModelError
from inspector.base.jsonable import to_jsonable
from inspector.base.limits import ATTRIBUTION_MEMORY_BUDGET_BYTES
from inspector.base.progress import Progress, no_progress
from inspector.core.forward import ForwardResult
from inspector.core.loading import LoadedModel

# Every removal-based method costs about one forward per content token (occlusion, value zeroing) or per curve
# point and method (ERASER): past this length the page asks before running them (benchmarks.attribution_methods
# times 64 tokens).
LONG_TEXT_TOKENS = 128


@dataclass(frozen=True)
class AttributionSettings:
    """How :func:`attribute` runs. layer: the layer for raw attention, norm, value zeroing and the
    counterfactual (None = last); head: None = mean over heads; query: row the layer-local methods read
    (None = the target's token for language models, else the last token of a causal model or the first);
    methods: names from :data:`REGISTRY` (default: the built-in :data:`METHODS`); ig_steps: integrated-gradients
    points; removal: occlusion and ERASER by [MASK] replacement or deletion; top_k: for top-k overlap;
    head_grid: compute the layer × head τ grid; permutations: for the counterfactual row (0 = skip the
    counterfactual); faithfulness: run ERASER (False: scores and agreement only — the fast path for scoring
    methods against a known answer)."""

    layer: int | None = None
    head: int | None = None
    query: QueryChoice = None
    methods: tuple[str, ...] = METHODS
    ig_steps: int = 16
    removal: RemovalMode = "mask"
    top_k: int = 5
    head_grid: bool = True
    permutations: int = 100
    faithfulness: bool = True
    seed: int = 0
    budget_bytes: int = ATTRIBUTION_MEMORY_BUDGET_BYTES

    def __post_init__(self) -> None:
        unknown = sorted(set(self.methods) - set(REGISTRY))
        if unknown:
            raise InvalidRequestError(f"unknown attribution methods {unknown}; choose from {', '.join(REGISTRY)}")
        if self.removal not in ("mask", "delete"):
            raise InvalidRequestError(f"removal must be 'mask' or 'delete', got {self.removal!r}")
        if not 1 <= self.ig_steps <= 1024:
            raise InvalidRequestError(f"ig_steps must be between 1 and 1024, got {self.ig_steps}")


# The methods a page draws first (issue 44): read off the baseline forward, or one backward shared by two — a few
# forwards' time, where integrated gradients, occlusion, value zeroing, ERASER and the counterfactual run
# hundreds of sequences between them.
FIRST_LOOK_METHODS = ("attention", "rollout", "norm", "gradient", "grad_x_input", "random")


def first_look_settings(settings: AttributionSettings) -> AttributionSettings:
    """``settings`` cut to what a page draws first: the methods of :data:`FIRST_LOOK_METHODS` among
    ``settings.methods`` and their agreement — no layer × head grid, no faithfulness, no counterfactual.
    :func:`attribute` with them gives those methods' scores exactly as with ``settings`` (every method is computed on
    its own from the same baseline), within a few forwards' time."""
    return replace(settings, methods=tuple(name for name in settings.methods if name in FIRST_LOOK_METHODS),
                   head_grid=False, faithfulness=False, permutations=0)


@dataclass(frozen=True)
class AttributionReport(Displayable):
    """Every method's per-token scores for one (model, text, target), their agreement and faithfulness.

    tokens: n token strings; special: (n,) bool; protected: (n,) bool — never removed or ranked (specials and
    a masked LM's [MASK]); word_ids: (n,) int32 (−1 for specials); words: one string per word id.
    scores: {method: (n,) float64} (NaN where undefined), in registry order; word_scores: {method: (words,)
    float64} — the sum over each word's pieces. layer/head/query: what the layer-local methods read.
    convergence: {method: its completeness bookkeeping} for the methods that satisfy completeness (``ig``:
    integrated gradients'). skipped: {method: why it could not run}. timings: seconds per method and stage."""

    model_name: str
    text: str
    target: Target
    tokens: tuple[str, ...]
    special: np.ndarray
    protected: np.ndarray
    word_ids: np.ndarray
    words: tuple[str, ...]
    layer: int
    head: int | None
    query: int
    removal: RemovalMode
    scores: dict[str, np.ndarray]
    word_scores: dict[str, np.ndarray]
    agreement: Agreement
    faithfulness: Faithfulness | None
    convergence: dict[str, IntegratedGradientsRun]
    counterfactual: CounterfactualAttention | None
    skipped: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.tokens)
        for name in ("special", "protected", "word_ids"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"AttributionReport.{name} has shape {getattr(self, name).shape}, expected {(n,)}")
        for method, values in self.scores.items():
            if values.shape != (n,):
                raise ValueError(f"AttributionReport.scores[{method!r}] has shape {values.shape}, expected {(n,)}")
            if self.word_scores[method].shape != (len(self.words),):
                raise ValueError(f"AttributionReport.word_scores[{method!r}] does not match the "
                                 f"{len(self.words)} words")
        if self.agreement.methods != tuple(self.scores):
            raise ValueError("AttributionReport.agreement must cover exactly the scored methods, in order")
        if not set(self.convergence) <= set(self.scores):
            raise ValueError("AttributionReport.convergence must belong to scored methods")

    @property
    def ig(self) -> IntegratedGradientsRun | None:
        """Integrated gradients' bookkeeping (steps, baseline, convergence delta), if it ran."""
        return self.convergence.get("integrated_gradients")


def _words(text: str, tokens: Sequence[str], word_ids: np.ndarray, offsets: np.ndarray | None) -> tuple[str, ...]:
    count = int(word_ids.max()) + 1 if len(word_ids) else 0
    words = []
    for w in range(count):
        members = np.flatnonzero(word_ids == w)
        if offsets is not None and len(members) and offsets[members].max() > 0:
            words.append(text[int(offsets[members, 0].min()):int(offsets[members, 1].max())])
        else:
            words.append("".join(tokens[i].removeprefix("##") for i in members))
    return tuple(words)


def word_level(scores: np.ndarray, word_ids: np.ndarray) -> np.ndarray:
    """(n,) token scores → (words,) sums over each word's pieces (specials, word id −1, dropped; a word whose
    pieces are all NaN stays NaN)."""
    count = int(word_ids.max()) + 1 if len(word_ids) else 0
    out = np.full(count, np.nan)
    for w in range(count):
        values = scores[word_ids == w]
        if np.isfinite(values).any():
            out[w] = np.nansum(values)
    return out


@dataclass(frozen=True)
class MethodScores:
    """Every method's per-token scores for one (model, text, target) and nothing else — what :func:`attribute`
    computes before it compares the methods (agreement, faithfulness, the counterfactual). tokens: n token
    strings; protected: (n,) bool, never ranked; query: the row the layer-local methods read; scores: {method:
    (n,) float64} in registry order; convergence, skipped, timings: as in :class:`AttributionReport`."""

    target: Target
    tokens: tuple[str, ...]
    protected: np.ndarray
    query: int
    scores: dict[str, np.ndarray]
    convergence: dict[str, IntegratedGradientsRun]
    skipped: dict[str, str]
    timings: dict[str, float]

    def __post_init__(self) -> None:
        n = len(self.tokens)
        if self.protected.shape != (n,) or any(values.shape != (n,) for values in self.scores.values()):
            raise ValueError(f"MethodScores: protected and every method's scores must be ({n},)")


@dataclass(frozen=True)
class _Scored:
    """:func:`_score_methods`'s working state, which :func:`attribute` goes on from."""

    problem: Problem
    base: ForwardResult
    facts: EncodingFacts
    context: MethodContext
    scores: MethodScores


def _score_methods(loaded: LoadedModel, text: str, spec: TargetSpec, settings: AttributionSettings, backend: str,
                   progress: Progress) -> _Scored:
    """Set the problem up and run every method in ``settings.methods`` through the registry's one contract;
    ``progress`` hears percent of :func:`attribute`'s job (the baseline at 5, the methods up to 60)."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    progress(5, 100, "running the model")
    problem, base, facts = setup_problem(loaded, text, spec, backend, settings.budget_bytes)
    info = loaded.info
    layer = info.num_layers - 1 if settings.layer is None else info.check_layer(settings.layer)
    head = None if settings.head is None else info.check_head(settings.head)
    query = query_index(settings.query, problem)
    timings["baseline"] = time.perf_counter() - started
    context = MethodContext(problem=problem, base=base, layer=layer, head=head, query=query,
                            ig_steps=settings.ig_steps, removal=settings.removal, seed=settings.seed)

    chosen = [method for name, method in REGISTRY.items() if name in settings.methods]
    scores: dict[str, np.ndarray] = {}
    convergence: dict[str, IntegratedGradientsRun] = {}
    skipped: dict[str, str] = {}
    for done, method in enumerate(chosen):
        progress(5 + 55 * done // len(chosen), 100, method.label)
        started = time.perf_counter()
        try:
            scores[method.name] = method(context)
            if method.completeness:
                convergence[method.name] = method.convergence(context)
        except UnsupportedModelError as err:
            skipped[method.name] = str(err)
        timings[method.name] = time.perf_counter() - started
    return _Scored(problem=problem, base=base, facts=facts, context=context, scores=MethodScores(
        target=problem.target, tokens=facts.tokens, protected=problem.protected, query=query, scores=scores,
        convergence=convergence, skipped=skipped, timings=timings))


def method_scores(loaded: LoadedModel, text: str, *, spec: TargetSpec = TargetSpec(),
                  settings: AttributionSettings = AttributionSettings(), backend: str = "torch") -> MethodScores:
    """Every method in ``settings.methods`` on ``text`` — the scores :func:`attribute` starts from, without its
    agreement, faithfulness, head grid and counterfactual. The ground-truth scoreboard ranks one token by each
    method's scores a hundred times over and reads nothing else: the pairwise agreement alone (36 Kendall τ and
    Spearman ρ per text) took about as long as every method together (issue 31)."""
    return _score_methods(loaded, text, spec, settings, backend, no_progress).scores


def attribute(loaded: LoadedModel, text: str, *, spec: TargetSpec = TargetSpec(),
              settings: AttributionSettings = AttributionSettings(), backend: str = "torch",
              progress: Progress | None = None) -> AttributionReport:
    """Every method in ``settings.methods`` on ``text``, their agreement, ERASER faithfulness, the layer ×
    head τ grid and (``settings.permutations`` > 0) the uniform/permutation counterfactual — the one call the
    Attribution page and ``python -m inspector attribute`` make. The adversarial search is separate
    (:func:`~inspector.analyses.attribution.counterfactual_attention`): it takes far longer than everything else
    together. A method that cannot run on this model (:class:`UnsupportedModelError`) is listed in ``skipped``.
    ``progress`` (:mod:`inspector.base.progress`) counts percent of the job, each stage weighted by its usual
    share: the baseline 5, the methods 55, faithfulness 25, the counterfactual 15."""
    progress = progress or no_progress
    scored = _score_methods(loaded, text, spec, settings, backend, progress)
    problem, base, facts, context = scored.problem, scored.base, scored.facts, scored.context
    scores, timings = scored.scores.scores, dict(scored.scores.timings)
    layer, head, query = context.layer, context.head, context.query
    content = ~problem.protected
    head_tau = None
    if settings.head_grid:
        started = time.perf_counter()
        head_tau = head_tau_grid(context.query_rows(), context.occlusion(), content)
        timings["head_grid"] = time.perf_counter() - started
    agreed = agreement(scores, content, k=settings.top_k, seed=settings.seed, head_tau=head_tau)
    faithful = None
    if settings.faithfulness:
        progress(60, 100, "faithfulness (ERASER)")
        started = time.perf_counter()
        faithful = model_faithfulness(problem, scores, settings.removal)
        timings["faithfulness"] = time.perf_counter() - started
    counterfactual = None
    if settings.permutations > 0:
        progress(85, 100, "counterfactual attention")
        started = time.perf_counter()
        counterfactual = counterfactual_rows(problem, base, layer=layer, head=head, query=query,
                                             permutations=settings.permutations, adversarial=False, seed=settings.seed)
        timings["counterfactual"] = time.perf_counter() - started
    words = _words(text, facts.tokens, facts.word_ids, facts.offsets)
    progress(100, 100, "done")
    return AttributionReport(
        model_name=loaded.info.name, text=text, target=problem.target, tokens=facts.tokens, special=facts.special,
        protected=problem.protected, word_ids=facts.word_ids, words=words, layer=layer, head=head,
        query=query, removal=settings.removal, scores=scores,
        word_scores={m: word_level(v, facts.word_ids) for m, v in scores.items()}, agreement=agreed,
        faithfulness=faithful, convergence=scored.scores.convergence, counterfactual=counterfactual,
        skipped=scored.scores.skipped, timings=timings)


def corpus_agreement(loaded: LoadedModel, texts: Sequence[str], *, spec: TargetSpec = TargetSpec(),
                     settings: AttributionSettings = AttributionSettings(), backend: str = "torch",
                     resamples: int = 2000, progress: Progress | None = None) -> CorpusAgreement:
    """:func:`attribute` on each text (no counterfactual, no head grid) and the bootstrap interval of the
    mean Kendall τ of every pair of methods. ``progress`` (:mod:`inspector.base.progress`) counts texts, called
    after each."""
    if len(texts) < 2:
        raise InvalidRequestError("a corpus needs at least two texts for a bootstrap interval")
    light = replace(settings, head_grid=False, permutations=0, faithfulness=False)
    per_text, methods = [], None
    announce = progress or no_progress
    for i, text in enumerate(texts):
        report = attribute(loaded, text, spec=spec, settings=light, backend=backend)
        methods = methods or report.agreement.methods
        if report.agreement.methods != methods:
            raise InvalidRequestError("the methods that could run differ between the corpus texts")
        per_text.append(report.agreement.kendall)
        announce(i + 1, len(texts), f"text {i + 1} of {len(texts)}")
    return corpus_kendall(methods, per_text, resamples)


# ------------------------------------------------------------------------------------------------- JSON

def report_json(report: AttributionReport) -> dict:
    """The numbers of a report as plain JSON-ready values (the CLI's output)."""

    cf = report.counterfactual
    faithful = report.faithfulness
    payload = {
        "model": report.model_name, "text": report.text,
        "target": {k: v for k, v in report.target.__dict__.items()},
        "tokens": list(report.tokens), "protected": report.protected, "words": list(report.words),
        "layer": report.layer, "head": report.head, "query": report.query, "removal": report.removal,
        "scores": report.scores, "word_scores": report.word_scores, "skipped": report.skipped,
        "integrated_gradients": report.ig.__dict__ if report.ig else None,
        "agreement": {"methods": list(report.agreement.methods), "kendall": report.agreement.kendall,
                      "spearman": report.agreement.spearman, "top_k_overlap": report.agreement.top_k,
                      "k": report.agreement.k, "random_tau_95": list(report.agreement.random_tau),
                      "head_tau_vs_occlusion": report.agreement.head_tau},
        "faithfulness": None if faithful is None else {
            "methods": list(faithful.methods), "bins": faithful.bins, "removal": faithful.removal,
            "replacement": faithful.replacement, "comprehensiveness": faithful.comprehensiveness,
            "sufficiency": faithful.sufficiency, "aopc_comprehensiveness": faithful.aopc_comprehensiveness,
            "aopc_sufficiency": faithful.aopc_sufficiency, "curve_fractions": faithful.curve_fractions,
            "curve": faithful.curve, "flip_fraction": faithful.flip_fraction, "flip_rule": faithful.flip_rule},
        "counterfactual": counterfactual_json(cf) if cf is not None else None,
        "timings": report.timings,
    }
    return to_jsonable(payload)


# The counterfactual's JSON fields (kept as they were when the verdict was a stored English string).
_COUNTERFACTUAL_FIELDS = ("layer", "head", "query", "original", "uniform", "uniform_change", "uniform_jsd",
                          "permutation_changes", "max_weight", "epsilon", "adversarial", "adversarial_jsd",
                          "adversarial_change", "adversarial_steps", "adversarial_seconds", "verdict",
                          "permutation_median")


def counterfactual_json(cf: CounterfactualAttention) -> dict:
    """A counterfactual's numbers and its English verdict as JSON-ready values."""

    return to_jsonable({name: getattr(cf, name) for name in _COUNTERFACTUAL_FIELDS})
