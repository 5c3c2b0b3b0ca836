"""Lessons 1–7 and the quiz's leave-one-out in one call (tests, benchmarks and scripts; the page and the command loop
over :data:`inspector.analyses.lessons.registry.LESSONS`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from inspector.analyses.lessons.common import (
    Answer,
    _run,
    position_kind,
)
from inspector.analyses.lessons.decoder import (
    CausalLesson,
    GQALesson,
    RopeLesson,
    causal_lesson,
    gqa_lesson,
    rope_lesson,
)
from inspector.analyses.lessons.encoder import (
    DefinitionLesson,
    EntropyLesson,
    MultiHeadLesson,
    PositionLesson,
    RealScaling,
    ScalingSweep,
    WhyQKLesson,
    _default_sweep,
    definition_lesson,
    entropy_lesson,
    multi_head_lesson,
    position_lesson,
    real_scaling_lesson,
    why_qk_lesson,
)
from inspector.analyses.lessons.geometry import QKSpaceLesson, qk_space_lesson
from inspector.analyses.lessons.sinks import ProjectionsLesson, SinksLesson, projections_lesson, sinks_lesson
from inspector.analyses.lessons.timing import ComplexityLesson, TokenImportance, complexity_lesson, leave_one_out
from inspector.analyses.metrics import HeadEntropy
from inspector.base.display import Displayable
from inspector.base.jsonable import to_jsonable
from inspector.core.loading import LoadedModel

# -------------------------------------------------------------------------------------------------- all of them


@dataclass(frozen=True)
class Lessons(Displayable):
    """Every lesson for one model, text, layer and head. ``complexity`` and ``importance`` are None when not
    asked for (they cost extra time: timings, and one forward per token)."""

    model: str
    text: str
    backend: str
    definition: DefinitionLesson
    why_qk: WhyQKLesson
    position: PositionLesson
    sweep: ScalingSweep
    scaling: RealScaling
    multi_head: MultiHeadLesson
    entropy: EntropyLesson
    complexity: ComplexityLesson | None = None
    importance: TokenImportance | None = None


def all_lessons(loaded: LoadedModel, text: str, layer: int, head: int, *, backend: str = "torch",
                timing_lengths: Sequence[int] | None = None, importance: bool = False) -> Lessons:
    """Run lessons 1–6 on ``text`` for ``layer`` and ``head``; lesson 7 when ``timing_lengths`` is given (with the
    model's heads and head size); the leave-one-out of the quiz when ``importance``."""
    run = _run(loaded, text, layer, head, backend)
    definition = definition_lesson(run)
    position = position_lesson(run)
    info = loaded.info
    return Lessons(
        model=info.name, text=text, backend=backend, definition=definition, why_qk=why_qk_lesson(run, definition),
        position=position, sweep=_default_sweep(), scaling=real_scaling_lesson(run, definition),
        multi_head=multi_head_lesson(run, position), entropy=entropy_lesson(run),
        complexity=(complexity_lesson(timing_lengths, heads=info.num_heads, d_k=info.head_dim,
                                      device=loaded.device)
                    if timing_lengths else None),
        importance=leave_one_out(loaded, text, backend=backend) if importance else None)


def lessons_json(lessons: Lessons, lang: str = "en") -> dict:
    """Every number of ``lessons`` as plain JSON (NaN → null), answers written in ``lang``."""
    return to_jsonable(lessons, overrides={Answer: lambda answer: answer.text(lang),
                                           HeadEntropy: lambda h: {"raw": h.raw, "normalized": h.normalized}})


# ------------------------------------------------------------------------------------------------ all of them


@dataclass(frozen=True)
class DecoderLessons(Displayable):
    """The decoder-era lessons that run on every page load (each a few forwards of the text); the streaming, window
    and linear-attention timings run on request (:func:`streaming_perplexity`, and
    :mod:`inspector.analyses.lessons.geometry`'s ``window_lesson`` and ``linear_lesson``)."""

    model: str
    encoder: str
    text: str
    layer: int
    head: int
    causal: CausalLesson
    rope: RopeLesson
    gqa: GQALesson
    sinks: SinksLesson
    qk_space: QKSpaceLesson
    projections: ProjectionsLesson


def decoder_lessons(encoder: LoadedModel, decoder: LoadedModel, text: str, layer: int, head: int, *,
                    backend: str = "torch") -> DecoderLessons:
    """Lessons D1–D4, D7 and D8 on ``decoder`` (a causal LM with RoPE) for ``layer`` and ``head``, with ``encoder``
    (an absolute-position encoder such as MiniLM) as the contrast of D1 and D2."""
    layer, head = decoder.info.check_layer(layer), decoder.info.check_head(head)
    return DecoderLessons(
        model=decoder.info.name, encoder=encoder.info.name, text=text, layer=layer, head=head,
        causal=causal_lesson(encoder, decoder, text, layer, head, backend=backend),
        rope=rope_lesson(decoder, text, layer, head, absolute=encoder if position_kind(encoder) == "absolute"
                         else None, backend=backend),
        gqa=gqa_lesson(decoder, text, layer, extra=(encoder,), backend=backend),
        sinks=sinks_lesson(decoder, text, layer, stream=False, backend=backend),
        qk_space=qk_space_lesson(decoder, text, layer, head, backend=backend),
        projections=projections_lesson(decoder, layer, head))


def decoder_lessons_json(lessons: DecoderLessons, lang: str = "en") -> dict:
    """Every number of ``lessons`` as plain JSON (NaN → null), answers written in ``lang``."""
    return to_jsonable(lessons, overrides={Answer: lambda answer: answer.text(lang)})

