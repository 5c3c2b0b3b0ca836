"""Attribution lab: is attention an explanation? Per-token scores from attention and from methods that
measure what the output depends on, how well they agree, how faithful each is, and how far the attention
itself can be changed without changing the output.

The package, by concern:

- :mod:`~inspector.analyses.attribution.targets` — the problem: one scalar target f(x) per model type
  (:class:`TargetSpec` → :class:`Target`, stated in words on the page), f on batches of token rows and of
  input embeddings, batch sizing;
- :mod:`~inspector.analyses.attribution.methods` — the methods behind one contract (:class:`AttributionMethod`: a
  prepared problem in, one score per token out) and the :data:`REGISTRY` every caller reads; :data:`METHODS`
  is the built-in nine in order, :data:`METHOD_LABELS` their labels (and those of any method registered later),
  :func:`method_label` a label in a page's language;
- :mod:`~inspector.analyses.attribution.rank_agreement` — Kendall τ, Spearman ρ, top-k overlap, the random-τ band,
corpus
  bootstrap intervals;
- :mod:`~inspector.analyses.attribution.faithfulness` — ERASER comprehensiveness/sufficiency, decay curves, flips;
- :mod:`~inspector.analyses.attribution.counterfactual` — uniform, permuted and adversarial attention rows;
- :mod:`~inspector.analyses.attribution.report` — :func:`attribute`, the one call that loops over the registry
  (:func:`method_scores`: its scores alone, for callers that compare them with a known answer), and the JSON
  converters.

Each module's docstring cites the papers it implements and says when to prefer each measure.
"""

from inspector.analyses.attribution.counterfactual import (
                                             MIN_GAIN,
                                             PATIENCE,
                                             AdversarialRow,
                                             CounterfactualAttention,
                                             adversarial_search,
                                             counterfactual_attention,
)
from inspector.analyses.attribution.faithfulness import (
                                             CURVE_FRACTIONS,
                                             FAITHFULNESS_BINS,
                                             Faithfulness,
                                             eraser_faithfulness,
                                             model_faithfulness,
)
from inspector.analyses.attribution.methods import (
    COMPLETENESS_GAP,
                                             METHOD_LABELS,
                                             METHODS,
                                             REGISTRY,
                                             AttributionMethod,
                                             IntegratedGradientsRun,
                                             MethodContext,
                                             attention_rollout,
                                             attribution_method,
                                             leave_one_out,
                                             method_label,
                                             occlusion_on_embeddings,
                                             register,
                                             unregister,
)
from inspector.analyses.attribution.rank_agreement import (
                                             NORMAL_TAU_FROM,
                                             RANDOM_TAU_SAMPLES,
                                             Agreement,
                                             CorpusAgreement,
                                             agreement,
                                             bootstrap_mean_interval,
                                             head_tau_grid,
                                             random_tau_interval,
                                             ranking_agreement,
                                             top_k_overlap,
)
from inspector.analyses.attribution.report import (
                                             FIRST_LOOK_METHODS,
                                             LONG_TEXT_TOKENS,
                                             AttributionReport,
                                             AttributionSettings,
                                             MethodScores,
                                             attribute,
                                             corpus_agreement,
                                             counterfactual_json,
                                             first_look_settings,
                                             method_scores,
                                             report_json,
                                             word_level,
)
from inspector.analyses.attribution.targets import (
    DEFAULT_REFERENCE,
    QueryChoice,
    RemovalMode,
    Target,
    TargetKind,
    TargetSpec,
    batch_size_for,
    removal_modes,
    resolve_target,
)

__all__ = [
    "AdversarialRow", "Agreement", "AttributionMethod", "AttributionReport", "AttributionSettings",
    "COMPLETENESS_GAP", "CURVE_FRACTIONS", "CorpusAgreement", "CounterfactualAttention", "DEFAULT_REFERENCE",
    "FAITHFULNESS_BINS", "FIRST_LOOK_METHODS",
    "Faithfulness", "IntegratedGradientsRun", "LONG_TEXT_TOKENS", "METHODS",
    "METHOD_LABELS", "MIN_GAIN", "MethodContext", "MethodScores", "NORMAL_TAU_FROM", "PATIENCE", "QueryChoice",
    "RANDOM_TAU_SAMPLES", "REGISTRY", "RemovalMode", "Target", "TargetKind", "TargetSpec", "adversarial_search",
    "agreement", "attention_rollout", "attribute", "attribution_method", "batch_size_for", "bootstrap_mean_interval",
    "corpus_agreement", "counterfactual_attention", "counterfactual_json", "eraser_faithfulness",
    "first_look_settings", "head_tau_grid", "leave_one_out", "method_label", "method_scores", "model_faithfulness",
    "occlusion_on_embeddings",
    "random_tau_interval", "removal_modes",
    "ranking_agreement", "register", "report_json", "resolve_target", "top_k_overlap", "unregister", "word_level",
]
