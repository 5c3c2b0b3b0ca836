"""The lecture path (issue 31, item 7): the storyline DESIGN.md tells — attention as soft addressing, where Q, K and V
come from, why not softmax(XXᵀ)X, why √d_k, what multi-head splits, where position enters, entropy per head,
attention ≠ explanation, O(n²) and FlashAttention, causal vs bidirectional, RoPE, sinks, sliding windows, linear
attention, which heads a prediction needs (activation patching) and generation with the KV cache — as an ordered
tuple of steps (issue 31 item 7, issue 44 item 8).

A step is data, not code: the catalogue keys of its title and of its one sentence of what to look at, and the share
link that opens it — a :class:`~inspector.output.share.ViewState` (page, model, text, layer, head) plus the page's
own parameters (the Lessons section, the Generate run) — so a step opens exactly as a share link does, and
tests/test_lecture.py reads every step back through the share-link parser (:func:`step_params` →
:func:`~inspector.output.share.decode_view`) and checks that every page and lesson it names exists: the path cannot
rot when a page or a lesson moves. The Lecture page (``views/lecture.py``) shows the steps; its own link carries
``lecture=SLUG``, the step on screen.

Encoder steps run on the bundled MiniLM (``default``); decoder steps on the bundled SmolLM2 (fast) or Gemma 3 270M
(sliding windows, two RoPE bases, strong sinks). For 简体中文 readers every step opens on Gemma with the Chinese twin
of its text (:meth:`LectureStep.view_for`). The layers and heads were picked on these texts (CPU, fp32): MiniLM's
layer 3, head 1 sends 0.68 of the row of "it" to "animal" and 0.05 to "street"; its layer 0, head 2 is the sharpest
head (normalised entropy ≈ 0); Gemma's layer 5, head 1 puts 0.99 of the mean row on ``<bos>``; SmolLM2's layer 16,
head 4 puts 0.92 of the last row of the Mechanism pair on " Italy", yet is not among the three heads whose
patching restores " Rome" most (lesson D9).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, get_args
from urllib.parse import urlencode

from inspector.base.examples import EXAMPLES, mechanism_example
from inspector.base.i18n import DEFAULT_LANGUAGE, Notice
from inspector.core.loading import DEFAULT_MODEL
from inspector.output.pages import PAGE_REGISTRY, lecture_targets, page_url
from inspector.output.share import (
    LESSON_COUNT,
    GenerateState,
    ViewState,
    encode_generate,
    encode_lesson,
    encode_view,
)

LECTURE_PAGE = "lecture"
LECTURE_PARAM = "lecture"  # the Lecture page's own link parameter: the slug of the step on screen
GEMMA = "bundled:gemma-3-270m"
SMOLLM2 = "bundled:smollm2-135m"
# The chart a step's slide shows, drawn from one cached forward of the step's model (or, for "sweep", lesson 4's
# simulation, which needs no model): one head's heatmap, every head of the layer, the layer × head entropy grid;
# "agreement": how far attention and the attribution methods agree (Kendall τ), from one fast attribution run.
ChartKind = Literal["heatmap", "heads", "entropy", "sweep", "agreement"]
CHART_KINDS: tuple[str, ...] = get_args(ChartKind)
_SLUG = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")

_ANIMAL = EXAMPLES[0].text  # "The animal didn't cross the street because it was too tired."
_PROMPT = "The capital of France is Paris. The capital of Italy is"
# 简体中文 readers walk the path on Gemma (the bundled model that reads Chinese) with the same sentence and prompt in
# Chinese (issue 44: they got the English sentence on MiniLM and SmolLM2).
ZH_MODEL = GEMMA
ZH_TEXTS = {_ANIMAL: "动物没有过马路，因为它太累了。", _PROMPT: mechanism_example("zh")["clean"]}
_GEMMA_LAYERS, _GEMMA_HEADS = 18, 4  # Gemma 3 270M: every zh step's layer and head must exist there
_PAIR = mechanism_example("en")  # the Mechanism page's English pair; its clean text is _PROMPT


@dataclass(frozen=True)
class LectureStep:
    """One step of the lecture path.

    slug: the step's name in the Lecture page's link (``lecture=slug``). title_key, look_key: catalogue keys of the
    step's title and of its one sentence of what to look at. view: the page, model, text, layer and head the step
    opens (``lang`` is the reader's, set by :func:`step_params`; ``page`` is never the Lecture page). lesson: the
    Lessons section it opens (1 … :data:`~inspector.output.share.LESSON_COUNT`; Lessons steps only). generate: the
    Generate page's run and step (Generate steps only). own: the page's own link parameters as (name, value) pairs,
    each one of its :attr:`~inspector.output.pages.PageSpec.link_keys` (the Mechanism page's corrupted text, answer
    and contrast). chart: the chart the step's slide shows (one of :data:`CHART_KINDS`), or None for a title slide —
    the step's own chart needs the page's full run. zh_on_gemma: whether 简体中文 readers get the step on Gemma with
    the Chinese twin of its text (:meth:`view_for`); False keeps it as written in every language (the Mechanism step:
    its own parameters are the English pair SmolLM2 reads, and its head 4 has no twin among Gemma's 4 heads)."""

    slug: str
    title_key: str
    look_key: str
    view: ViewState
    lesson: int | None = None
    generate: GenerateState | None = None
    own: tuple[tuple[str, str], ...] = ()
    chart: ChartKind | None = None
    zh_on_gemma: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.slug, str) or not _SLUG.fullmatch(self.slug):
            raise ValueError(f"LectureStep.slug must be lower-case words joined by '-'; got {self.slug!r}")
        if self.view.page not in lecture_targets():
            raise ValueError(f"step {self.slug!r}: page {self.view.page!r} is not a page a step can open "
                             f"({', '.join(lecture_targets())})")
        if self.view.lang != DEFAULT_LANGUAGE:
            raise ValueError(f"step {self.slug!r}: the language is the reader's, not the step's")
        if self.lesson is not None and (self.view.page != "lessons" or isinstance(self.lesson, bool)
                                        or not isinstance(self.lesson, int) or not 1 <= self.lesson <= LESSON_COUNT):
            raise ValueError(f"step {self.slug!r}: lesson {self.lesson!r} needs the Lessons page and a number from 1 "
                             f"to {LESSON_COUNT}")
        if self.generate is not None and self.view.page != "generate":
            raise ValueError(f"step {self.slug!r}: Generate settings need the Generate page")
        keys = PAGE_REGISTRY[self.view.page].link_keys
        if not all(isinstance(pair, tuple) and len(pair) == 2 and pair[0] in keys and isinstance(pair[1], str)
                   for pair in self.own):
            raise ValueError(f"step {self.slug!r}: own must be (name, text) pairs of page {self.view.page!r}'s link "
                             f"parameters {keys}; got {self.own!r}")
        if self.chart is not None and self.chart not in CHART_KINDS:
            raise ValueError(f"step {self.slug!r}: chart {self.chart!r} is not one of {CHART_KINDS}")
        if self.zh_on_gemma and (self.view.text not in ZH_TEXTS
                                 or not (self.view.layer < _GEMMA_LAYERS and self.view.head < _GEMMA_HEADS)):
            raise ValueError(f"step {self.slug!r}: its text needs a Chinese twin in ZH_TEXTS and its layer and head "
                             f"must exist on Gemma ({_GEMMA_LAYERS} layers × {_GEMMA_HEADS} heads) for zh readers")

    def view_for(self, lang: str) -> ViewState:
        """The view the step opens for a reader of ``lang``: its own, or in 简体中文 Gemma with the Chinese twin of its
        text (same page, layer and head); ``lang`` set."""
        if lang == "zh" and self.zh_on_gemma:
            return replace(self.view, model=ZH_MODEL, text=ZH_TEXTS[self.view.text], lang=lang)
        return replace(self.view, lang=lang)


LECTURE: tuple[LectureStep, ...] = (
    LectureStep("soft-addressing", "lecture.soft.title", "lecture.soft.look",
                ViewState(page="inspect", model=DEFAULT_MODEL, text=_ANIMAL, layer=3, head=1), chart="heatmap"),
    LectureStep("qkv", "lecture.qkv.title", "lecture.qkv.look",
                ViewState(page="lessons", model=SMOLLM2, text=_ANIMAL, layer=3, head=0), lesson=16),
    LectureStep("why-not-xx", "lecture.why_xx.title", "lecture.why_xx.look",
                ViewState(page="lessons", model=DEFAULT_MODEL, text=_ANIMAL, layer=3, head=1), lesson=2),
    LectureStep("sqrt-d", "lecture.sqrt_d.title", "lecture.sqrt_d.look",
                ViewState(page="lessons", model=DEFAULT_MODEL, text=_ANIMAL, layer=3, head=1), lesson=4,
                chart="sweep"),
    LectureStep("multi-head", "lecture.multi_head.title", "lecture.multi_head.look",
                ViewState(page="lessons", model=DEFAULT_MODEL, text=_ANIMAL, layer=3, head=1), lesson=5,
                chart="heads"),
    LectureStep("position", "lecture.position.title", "lecture.position.look",
                ViewState(page="lessons", model=DEFAULT_MODEL, text=_ANIMAL, layer=3, head=1), lesson=3),
    LectureStep("entropy", "lecture.entropy.title", "lecture.entropy.look",
                ViewState(page="inspect", model=DEFAULT_MODEL, text=_ANIMAL, layer=0, head=2), chart="entropy"),
    LectureStep("not-explanation", "lecture.explanation.title", "lecture.explanation.look",
                ViewState(page="attribution", model=DEFAULT_MODEL, text=_ANIMAL, layer=3, head=1),
                chart="agreement"),
    LectureStep("complexity", "lecture.complexity.title", "lecture.complexity.look",
                ViewState(page="lessons", model=DEFAULT_MODEL, text=_ANIMAL, layer=3, head=1), lesson=7),
    LectureStep("causal", "lecture.causal.title", "lecture.causal.look",
                ViewState(page="lessons", model=SMOLLM2, text=_ANIMAL, layer=3, head=0), lesson=9, chart="heatmap"),
    LectureStep("rope", "lecture.rope.title", "lecture.rope.look",
                ViewState(page="lessons", model=GEMMA, text=_ANIMAL, layer=3, head=0), lesson=10),
    LectureStep("sinks", "lecture.sinks.title", "lecture.sinks.look",
                ViewState(page="inspect", model=GEMMA, text=_ANIMAL, layer=5, head=1), chart="heatmap"),
    LectureStep("windows", "lecture.windows.title", "lecture.windows.look",
                ViewState(page="lessons", model=GEMMA, text=_ANIMAL, layer=5, head=1), lesson=13),
    LectureStep("linear", "lecture.linear.title", "lecture.linear.look",
                ViewState(page="lessons", model=SMOLLM2, text=_ANIMAL, layer=3, head=0), lesson=14),
    LectureStep("mechanism", "lecture.mechanism.title", "lecture.mechanism.look",
                ViewState(page="mechanism", model=SMOLLM2, text=_PAIR["clean"], layer=16, head=4),
                own=(("mcorrupt", _PAIR["corrupted"]), ("manswer", _PAIR["answer"]),
                     ("mcontrast", _PAIR["contrast"])), zh_on_gemma=False),
    LectureStep("generate", "lecture.generate.title", "lecture.generate.look",
                ViewState(page="generate", model=SMOLLM2, text=_PROMPT, layer=3, head=0),
                generate=GenerateState(new=8, step=0)),
)


def step_index(slug: str) -> int | None:
    """The position of the step named ``slug`` in :data:`LECTURE`, or None."""
    return next((i for i, step in enumerate(LECTURE) if step.slug == slug), None)


def step_params(step: LectureStep, lang: str = DEFAULT_LANGUAGE) -> dict[str, str]:
    """The query parameters of ``step``'s share link for a reader of ``lang``: the view's, then the page's own."""
    params = encode_view(step.view_for(lang))
    if step.lesson is not None:
        params.update(encode_lesson(step.lesson))
    if step.generate is not None:
        params.update(encode_generate(step.generate))
    params.update(step.own)
    return params


def step_url(base_url: str, step: LectureStep, lang: str = DEFAULT_LANGUAGE) -> str:
    """``step``'s share link, on the app at ``base_url``: what "Open this step" opens."""
    return f"{page_url(base_url, step.view.page)}?{urlencode(step_params(step, lang))}"


def decode_lecture(params: Mapping[str, str | Sequence[str]]) -> tuple[int, tuple[Notice, ...]]:
    """The step a Lecture link asks for (``lecture=SLUG``; the first step when there is none), and a warning when
    the link names no step. Never raises."""
    value = params.get(LECTURE_PARAM) if isinstance(params, Mapping) else None
    if isinstance(value, (list, tuple)):
        value = value[-1] if value else None
    if value is None:
        return 0, ()
    index = step_index(value) if isinstance(value, str) else None
    if index is None:
        shown = repr(value)[:40]
        return 0, (Notice("lecture.bad_step", value=shown, first=LECTURE[0].slug),)
    return index, ()


def encode_lecture(index: int) -> dict[str, str]:
    """The Lecture page's own parameter for the step at ``index``, to add to :func:`encode_view`'s."""
    return {LECTURE_PARAM: LECTURE[index].slug}
