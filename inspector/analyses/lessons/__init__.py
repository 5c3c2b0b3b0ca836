"""Lessons: the questions about attention people fumble, each answered by a measurement on the loaded model and the
reader's text, with an answer composed from the measured numbers (a catalogue key and its values, written in every
language of :mod:`inspector.base.i18n`) — not canned prose. Every lesson is registered behind one contract in
:mod:`.registry` (:data:`LESSONS`), which the Lessons page and ``inspector lessons`` loop over.

The package, by job:

- :mod:`.common` — the :class:`Answer`, the encoder lessons' one baseline forward, small shared measures;
- :mod:`.encoder` — lessons 1–6 (definition, why Q and K, position, √d_k, multi-head, entropy per layer);
- :mod:`.timing` — lesson 7 (O(n²) against the flash path, timed live) and the quiz's measurements (lesson 8);
- :mod:`.decoder` — D1–D3 (causal vs bidirectional, RoPE, grouped-query attention);
- :mod:`.sinks` — D4 (attention sinks, streaming-LLM perplexity) and D8 (the head's projections);
- :mod:`.capacity` — lessons 18 (a head dimension too small: the low-rank bottleneck) and 19 (sinusoidal, learned
  and rotary position codes side by side);
- :mod:`.geometry` — D5–D7 (sliding windows, linear attention, the query–key space);
- :mod:`.mechanism` — D9 (the token the heads look at against the heads the answer needs: activation patching);
- :mod:`.registry` — the :class:`Lesson` contract, :class:`LessonContext` and the registry;
- :mod:`.aggregate` — lessons 1–7 / the decoder lessons in one call, for scripts and benchmarks.

The names below are the package's face; the papers each lesson implements are cited in its module.
"""

from inspector.analyses.lessons.aggregate import (
    DecoderLessons,
    Lessons,
    all_lessons,
    decoder_lessons,
    decoder_lessons_json,
    lessons_json,
)
from inspector.analyses.lessons.capacity import (
    HeadDimLesson,
    PositionCodesLesson,
    bottleneck_sweep,
    head_dim_lesson,
    position_codes_lesson,
    rank_cut_kl,
    sinusoidal_codes,
)
from inspector.analyses.lessons.common import (
    BUSY_SPREAD,
    COLLAPSED_BELOW,
    DEFAULT_LENGTHS,
    DIFFUSE_ABOVE,
    POSITIONAL_HEAD_MIN_WEIGHT,
    SCALE_NAMES,
    Answer,
    asymmetry_index,
    diagonal_share,
    effective_rank,
    position_kind,
    softmax_jacobian,
    softmax_jacobian_norm,
)
from inspector.analyses.lessons.decoder import (
    SINK_TOKENS,
    CausalLesson,
    GQALesson,
    RopeLesson,
    causal_lesson,
    gqa_lesson,
    kind_name_key,
    rope_frequencies,
    rope_lesson,
    rotate,
)
from inspector.analyses.lessons.encoder import (
    DefinitionLesson,
    EntropyLesson,
    MultiHeadLesson,
    PositionLesson,
    RealScaling,
    ScalingSweep,
    WhyQKLesson,
    control_inputs,
    definition_lesson,
    entropy_lesson,
    has_repeated_span,
    mean_weight_by_offset,
    multi_head_lesson,
    position_lesson,
    real_scaling_lesson,
    scaling_sweep,
    sharpest_pair,
    why_qk_lesson,
)
from inspector.analyses.lessons.geometry import (
    LinearLesson,
    QKSpaceLesson,
    WindowLesson,
    linear_lesson,
    qk_space_lesson,
    window_lesson,
)
from inspector.analyses.lessons.mechanism import (
    MechanismLesson,
    MechanismPair,
    lesson_pair,
    mechanism_lesson,
    pair_from_text,
)
from inspector.analyses.lessons.registry import (
    LESSONS,
    PARTS,
    Lesson,
    LessonContext,
    ScalingLesson,
    StreamingLesson,
    compute_part,
    lesson_answers,
    lesson_count,
    lesson_json,
    lessons_of,
    register_lesson,
    run_requested,
)
from inspector.analyses.lessons.sinks import (
    ProjectionsLesson,
    SinksLesson,
    head_projections,
    keep_keys_edit,
    projections_lesson,
    sinks_lesson,
    streaming_keep,
    streaming_perplexity,
)
from inspector.analyses.lessons.timing import (
    ComplexityLesson,
    TokenImportance,
    attention_target,
    complexity_lesson,
    exponent_interval,
    leave_one_out,
    timing_spread,
)
from inspector.base.examples import long_corpus_text as long_text

__all__ = [
    "Answer",
    "BUSY_SPREAD",
    "COLLAPSED_BELOW",
    "CausalLesson",
    "ComplexityLesson",
    "DEFAULT_LENGTHS",
    "DIFFUSE_ABOVE",
    "DecoderLessons",
    "DefinitionLesson",
    "EntropyLesson",
    "GQALesson",
    "HeadDimLesson",
    "LESSONS",
    "Lesson",
    "LessonContext",
    "Lessons",
    "LinearLesson",
    "MechanismLesson",
    "MechanismPair",
    "MultiHeadLesson",
    "PARTS",
    "POSITIONAL_HEAD_MIN_WEIGHT",
    "PositionCodesLesson",
    "PositionLesson",
    "ProjectionsLesson",
    "QKSpaceLesson",
    "RealScaling",
    "RopeLesson",
    "SCALE_NAMES",
    "SINK_TOKENS",
    "ScalingLesson",
    "ScalingSweep",
    "SinksLesson",
    "StreamingLesson",
    "TokenImportance",
    "WhyQKLesson",
    "WindowLesson",
    "all_lessons",
    "asymmetry_index",
    "attention_target",
    "bottleneck_sweep",
    "causal_lesson",
    "complexity_lesson",
    "compute_part",
    "control_inputs",
    "decoder_lessons",
    "decoder_lessons_json",
    "definition_lesson",
    "diagonal_share",
    "effective_rank",
    "entropy_lesson",
    "exponent_interval",
    "gqa_lesson",
    "has_repeated_span",
    "head_dim_lesson",
    "head_projections",
    "keep_keys_edit",
    "kind_name_key",
    "leave_one_out",
    "lesson_answers",
    "lesson_count",
    "lesson_json",
    "lesson_pair",
    "lessons_json",
    "lessons_of",
    "linear_lesson",
    "long_text",
    "mechanism_lesson",
    "mean_weight_by_offset",
    "multi_head_lesson",
    "pair_from_text",
    "position_codes_lesson",
    "position_kind",
    "position_lesson",
    "projections_lesson",
    "qk_space_lesson",
    "rank_cut_kl",
    "real_scaling_lesson",
    "register_lesson",
    "rope_frequencies",
    "rope_lesson",
    "rotate",
    "run_requested",
    "scaling_sweep",
    "sharpest_pair",
    "sinks_lesson",
    "sinusoidal_codes",
    "softmax_jacobian",
    "softmax_jacobian_norm",
    "streaming_keep",
    "streaming_perplexity",
    "timing_spread",
    "why_qk_lesson",
    "window_lesson",
]
