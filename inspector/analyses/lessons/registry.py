"""The lesson registry (issue 39, Build 3): every lesson behind one contract, in the style of the attribution methods'
registry (:mod:`inspector.analyses.attribution.methods`), so the Lessons page and ``inspector lessons`` loop over it.

A :class:`Lesson` is its number (a link's ``lesson=N``, its catalogue keys ``lessonN.*``), its slug (its key in the
command's JSON and in ``--lessons``), the part of the page it belongs to (the sidebar's model, the decoder section's,
or the quiz), and up to two measurements over one :class:`LessonContext` — ``compute`` (runs with the page) and
``on_request`` (costs seconds: a button on the page; the command runs it when the lesson is asked for). Each returns
a frozen dataclass of numbers whose ``answer`` (an :class:`~inspector.analyses.lessons.common.Answer`, a catalogue
key and its values) the page and the command write in the reader's language. :func:`lesson_json` writes any of them.

The charts and tables of each lesson are drawn by the page (``views/lessons_*.py``, one function per slug, checked
against this registry by tests/test_lessons_registry.py); the quiz questions read the results of the lessons they ask
about. Adding a lesson: its measurement in a module of this package, ``register_lesson(Lesson(...))`` below, its
``lessonN.*`` sentences in the catalogue, its drawing function in the view.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from inspector.analyses.lessons.capacity import head_dim_lesson, position_codes_lesson
from inspector.analyses.lessons.common import DEFAULT_LENGTHS, Answer, _run, position_kind
from inspector.analyses.lessons.decoder import causal_lesson, gqa_lesson, rope_lesson
from inspector.analyses.lessons.encoder import (
    ScalingSweep,
    _default_sweep,
    definition_lesson,
    entropy_lesson,
    multi_head_lesson,
    position_lesson,
    real_scaling_lesson,
    why_qk_lesson,
)
from inspector.analyses.lessons.geometry import linear_lesson, qk_space_lesson, window_lesson
from inspector.analyses.lessons.mechanism import lesson_pair, mechanism_lesson
from inspector.analyses.lessons.sinks import SINK_TOKENS, projections_lesson, sinks_lesson, streaming_perplexity
from inspector.analyses.lessons.timing import complexity_lesson, leave_one_out
from inspector.analyses.metrics import HeadEntropy
from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import CATALOGUE, DEFAULT_LANGUAGE, LANGUAGES
from inspector.base.jsonable import to_jsonable
from inspector.base.progress import Progress
from inspector.core.loading import LoadedModel

Part = Literal["encoder", "decoder", "quiz"]
PARTS: tuple[str, ...] = get_args(Part)  # the page's order: the sidebar's model, the decoder section, the quiz


class LessonContext:
    """What a lesson measures on: ``loaded`` (the sidebar's model; the decoder section's for a decoder lesson), the
    text, the layer and head (checked against the model), the backend, ``contrast`` (a decoder lesson's encoder beside
    it: the bidirectional, absolute-position contrast), ``lengths`` (the lengths n the timing lessons time — lesson 7,
    the window and linear-attention lessons; None: each lesson's own default), a ``progress`` callback and ``lang``
    (the reader's language: a lesson that brings its own example, D9's pair, takes it in that language).

    The lessons of one part share work through :meth:`shared` (the encoder lessons' one baseline forward, lesson 1's
    result that lessons 2 and 4 read): one context is one request, never cached itself."""

    def __init__(self, loaded: LoadedModel, text: str, layer: int, head: int, *, backend: str = "torch",
                 contrast: LoadedModel | None = None, lengths: Sequence[int] | None = None,
                 progress: Progress | None = None, lang: str = DEFAULT_LANGUAGE):
        self.loaded, self.text, self.backend, self.contrast, self.lang = loaded, text, backend, contrast, lang
        self.layer, self.head = loaded.info.check_layer(layer), loaded.info.check_head(head)
        self.lengths, self.progress = (None if lengths is None else tuple(lengths)), progress
        self._shared: dict[str, Any] = {}

    def shared(self, name: str, make: Callable[[], Any]) -> Any:
        """``make()`` once per context under ``name``."""
        if name not in self._shared:
            self._shared[name] = make()
        return self._shared[name]

    @property
    def run(self):
        """The encoder lessons' baseline forward (Q, K, V and the weights of the chosen layer kept)."""
        return self.shared("run", lambda: _run(self.loaded, self.text, self.layer, self.head, self.backend))

    def needs_contrast(self) -> LoadedModel:
        if self.contrast is None:
            raise InvalidRequestError("the decoder lessons compare the decoder with an encoder beside it; give one "
                                      "(the command's --model, the page's sidebar model or MiniLM)")
        return self.contrast


@dataclass(frozen=True)
class ScalingLesson:
    """Lesson 4: the seeded simulation over d_k (``sweep``) and the three scales on the chosen head (``real``)."""

    sweep: ScalingSweep
    real: Any  # inspector.analyses.lessons.encoder.RealScaling

    @property
    def answers(self) -> tuple[Answer, ...]:
        return self.sweep.answer, self.real.answer


@dataclass(frozen=True)
class StreamingLesson:
    """Lesson D4's on-request part: perplexity of ``tokens`` tokens with a window-only cache, the window plus
    ``sinks`` sink tokens, and full attention (``perplexity``, in that order)."""

    tokens: int
    window: int
    sinks: int
    perplexity: tuple[float, float, float]

    @property
    def answer(self) -> Answer:
        ppl = self.perplexity
        return Answer("lesson12.stream", {"tokens": str(self.tokens), "window": str(self.window),
                                          "sinks": str(self.sinks), "window_ppl": f"{ppl[0]:.1f}",
                                          "sink_ppl": f"{ppl[1]:.1f}", "full_ppl": f"{ppl[2]:.1f}"})


def _always(_: LoadedModel) -> bool:
    return True


@dataclass(frozen=True)
class Lesson:
    """One lesson. number: 1 … :func:`lesson_count` (``lesson=N`` in a link, ``lessonN.*`` in the catalogue). slug: its
    JSON key. part: where the page draws it. compute / on_request: ``(LessonContext) -> result`` (a frozen dataclass
    with ``answer`` or ``answers``); at least one. applies: whether the lesson can run on a model (the window lesson
    needs sliding-window layers); the page says why not, the command leaves it out with a note. follows: the lesson
    of the same part it is drawn right after (a lesson added later beside the one it extends); None: by number.
    reads_language: the result depends on the reader's language (D9 brings its example pair in it); every other
    lesson's result is the same numbers in both languages, its sentences written at drawing time."""

    number: int
    slug: str
    part: Part
    compute: Callable[[LessonContext], Any] | None = None
    on_request: Callable[[LessonContext], Any] | None = None
    applies: Callable[[LoadedModel], bool] = _always
    follows: int | None = None
    reads_language: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.number, bool) or not isinstance(self.number, int) or self.number < 1:
            raise ValueError(f"Lesson.number must be a positive int; got {self.number!r}")
        if self.part not in PARTS:
            raise ValueError(f"lesson {self.slug!r}: part must be one of {PARTS}; got {self.part!r}")
        if self.compute is None and self.on_request is None:
            raise ValueError(f"lesson {self.slug!r}: give compute, on_request or both")

    @property
    def key(self) -> str:
        """The catalogue prefix of the lesson's sentences (``lessonN``)."""
        return f"lesson{self.number}"


LESSONS: dict[str, Lesson] = {}


def register_lesson(lesson: Lesson) -> Lesson:
    """Add ``lesson`` after checking it against the others: a new slug, the next number, and its title in every
    language of the catalogue."""
    if lesson.slug in LESSONS:
        raise ValueError(f"a lesson named {lesson.slug!r} is already registered")
    if lesson.number != len(LESSONS) + 1:
        raise ValueError(f"lesson {lesson.slug!r}: number {lesson.number} is not the next one ({len(LESSONS) + 1})")
    title = f"{lesson.key}.title"
    if not all(CATALOGUE.get(title, {}).get(lang, "").strip() for lang in LANGUAGES):
        raise ValueError(f"lesson {lesson.slug!r}: the catalogue has no {title!r} in every language")
    LESSONS[lesson.slug] = lesson
    return lesson


def lesson_count() -> int:
    return len(LESSONS)


def lessons_of(part: str) -> tuple[Lesson, ...]:
    """The registered lessons of ``part`` in the page's order: by number, each lesson that ``follows`` another right
    after it."""
    def place(lesson: Lesson) -> tuple[int, int]:
        return (lesson.number, 0) if lesson.follows is None else (lesson.follows, lesson.number)

    return tuple(sorted((lesson for lesson in LESSONS.values() if lesson.part == part), key=place))


def lesson_answers(result: Any) -> tuple[Answer, ...]:
    """Every answer a lesson's result writes (``answers``, else its one ``answer``; none for the quiz's measure)."""
    answers = getattr(result, "answers", None)
    if answers is not None:
        return tuple(answers)
    answer = getattr(result, "answer", None)
    return () if answer is None else (answer,)


def lesson_json(result: Any, lang: str = "en") -> Any:
    """A lesson's result as plain JSON (NaN → null), its answers written in ``lang``."""
    return to_jsonable(result, overrides={Answer: lambda answer: answer.text(lang),
                                          HeadEntropy: lambda h: {"raw": h.raw, "normalized": h.normalized}})


# ------------------------------------------------------------------------------------------------ the lessons


def _definition(c: LessonContext):
    return c.shared("definition", lambda: definition_lesson(c.run))


def _position(c: LessonContext):
    return c.shared("position", lambda: position_lesson(c.run))


def _timed(c: LessonContext) -> dict:
    """The context's timing lengths for a timing lesson, when it has any (else the lesson's own)."""
    return {} if c.lengths is None else {"lengths": c.lengths}


def _has_window(loaded: LoadedModel) -> bool:
    return loaded.info.sliding_window is not None


def _streaming(c: LessonContext) -> StreamingLesson:
    tokens, window, perplexity = streaming_perplexity(c.loaded, backend=c.backend)
    return StreamingLesson(tokens=tokens, window=window, sinks=SINK_TOKENS, perplexity=perplexity)


def _rope(c: LessonContext):
    contrast = c.needs_contrast()
    return rope_lesson(c.loaded, c.text, c.layer, c.head, backend=c.backend,
                       absolute=contrast if position_kind(contrast) == "absolute" else None)


register_lesson(Lesson(1, "definition", "encoder", compute=_definition))
register_lesson(Lesson(2, "why_qk", "encoder", compute=lambda c: why_qk_lesson(c.run, _definition(c))))
register_lesson(Lesson(3, "position", "encoder", compute=_position))
register_lesson(Lesson(4, "scaling", "encoder", compute=lambda c: ScalingLesson(
    sweep=_default_sweep(), real=real_scaling_lesson(c.run, _definition(c)))))
register_lesson(Lesson(5, "multi_head", "encoder", compute=lambda c: multi_head_lesson(c.run, _position(c))))
register_lesson(Lesson(6, "entropy", "encoder", compute=lambda c: entropy_lesson(c.run)))
register_lesson(Lesson(7, "complexity", "encoder", on_request=lambda c: complexity_lesson(
    c.lengths or DEFAULT_LENGTHS, heads=c.loaded.info.num_heads, d_k=c.loaded.info.head_dim, device=c.loaded.device,
    progress=c.progress)))
# The quiz asks about lesson 1's weights (its result, on the page) and measures which token matters most on request.
register_lesson(Lesson(8, "quiz", "quiz", on_request=lambda c: leave_one_out(c.loaded, c.text, backend=c.backend)))
register_lesson(Lesson(9, "causal", "decoder", compute=lambda c: causal_lesson(
    c.needs_contrast(), c.loaded, c.text, c.layer, c.head, backend=c.backend)))
register_lesson(Lesson(10, "rope", "decoder", compute=_rope))
register_lesson(Lesson(11, "gqa", "decoder", compute=lambda c: gqa_lesson(
    c.loaded, c.text, c.layer, extra=(c.needs_contrast(),), backend=c.backend)))
register_lesson(Lesson(12, "sinks", "decoder", compute=lambda c: sinks_lesson(
    c.loaded, c.text, c.layer, stream=False, backend=c.backend), on_request=_streaming))
register_lesson(Lesson(13, "window", "decoder", on_request=lambda c: window_lesson(
    c.loaded, backend=c.backend, **_timed(c)),
                       applies=_has_window))
register_lesson(Lesson(14, "linear", "decoder", on_request=lambda c: linear_lesson(
    c.loaded, c.text, c.layer, c.head, backend=c.backend, **_timed(c))))
register_lesson(Lesson(15, "qk_space", "decoder", compute=lambda c: qk_space_lesson(
    c.loaded, c.text, c.layer, c.head, backend=c.backend)))
register_lesson(Lesson(16, "projections", "decoder", compute=lambda c: projections_lesson(c.loaded, c.layer,
                                                                                         c.head)))
# D9 patches every head of the decoder (seconds on a bundled one): on request.
register_lesson(Lesson(17, "mechanism", "decoder", on_request=lambda c: mechanism_lesson(
    c.loaded, lesson_pair(c.loaded, c.lang, c.text), progress=c.progress), reads_language=True))
# Issue 44, item 11: seed points that had no experiment, drawn beside the lessons they extend.
register_lesson(Lesson(18, "head_dim", "encoder", compute=lambda c: head_dim_lesson(_definition(c)), follows=4))
register_lesson(Lesson(19, "position_codes", "encoder", compute=lambda c: position_codes_lesson(c.loaded),
                       follows=3))


def compute_part(part: str, context: LessonContext) -> dict[str, Any]:
    """The ``compute`` results of every lesson of ``part`` that applies to the context's model, by slug (the page's
    one cached call per part)."""
    return {lesson.slug: lesson.compute(context) for lesson in lessons_of(part)
            if lesson.compute is not None and lesson.applies(context.loaded)}


def run_requested(slug: str, context: LessonContext) -> Any:
    """Lesson ``slug``'s on-request measurement (a button on the page)."""
    lesson = LESSONS[slug]
    if lesson.on_request is None:
        raise InvalidRequestError(f"lesson {slug!r} has nothing to run on request")
    return lesson.on_request(context)
