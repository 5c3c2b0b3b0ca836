"""The app's strings, English and Simplified Chinese (the audience this tool began with): the API over the catalogue.

The catalogue lives in :mod:`inspector.base.catalogue`, one module per page or area, in the order of the app's menu:
``common`` (the navigation and words every page shares), ``sidebar`` (the sidebar, its share link and the run each
page opens with), then ``inspect``, ``heads``, ``census`` (a census folder on the Heads page), ``attribution``,
``lessons``, ``groundtruth`` and ``compare``. Inside a module, entries are grouped by what shows them (the page's
view, its analysis's sentences, its charts) in the order that code names them. Each entry is a tuple ``(key, English,
中文)``, the languages in the order of :data:`LANGUAGES`, side by side. This module merges them into
:data:`CATALOGUE` and fails at import on a key defined twice or an entry without every language.

:func:`t` looks a key up and fills its ``{placeholders}`` with ``str.format``; every key has the same placeholders in
every language (tests/test_i18n.py checks it). English is the default and the fallback: a key missing from the
catalogue is a programming error and raises. Most keys appear literally in the code that shows them; the ones built
at runtime are listed by family in :data:`DYNAMIC_KEY_FAMILIES`, and tests/test_i18n.py fails on a key that is neither
named in the code nor in a family (an unused key), and on a family that matches no key.

A :class:`Notice` is a sentence a library function writes for the person — a memory retry, a heatmap's note, what a
share link asked for that could not be shown — that is its English text and remembers its key and values, so a page
shows it in its own language (:func:`notice_text`). Answers of the Lessons page are catalogue entries too, filled with
the numbers a lesson measured (:class:`inspector.analyses.lessons.Answer`).

Charts speak the page's language too: every builder in :mod:`inspector.charts` takes ``lang`` and draws its
titles, axes, legends, tooltips and category names from here, so a figure exported from a Chinese page is Chinese
(tests/chart_text.py reads what a chart shows; the chart tests build each one in 简体中文 and find no English).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from string import Formatter
from types import ModuleType

from inspector.base.catalogue import (
    atlas,
    attribution,
    census,
    common,
    compare,
    generate,
    groundtruth,
    heads,
    hosting,
    inspect,
    lecture,
    lessons,
    lessons_decoder,
    mechanism,
    roles,
    sidebar,
)

LANGUAGES: tuple[str, ...] = ("en", "zh")
DEFAULT_LANGUAGE = "en"
LANGUAGE_NAMES: Mapping[str, str] = {"en": "English", "zh": "简体中文"}

# The catalogue's modules in the order of the app's menu (the sidebar and shared words first).
PAGE_MODULES: tuple[ModuleType, ...] = (common, sidebar, inspect, heads, roles, census, atlas, attribution, lessons,
                                        lessons_decoder, groundtruth, compare, generate, mechanism, lecture,
                                        hosting)

# Keys built at runtime, by family: ``{name}`` stands for one part of a key (letters, digits, ``_`` and ``-``, no
# dot). Each family names the code that builds it; every other key appears literally in the code that shows it.
DYNAMIC_KEY_FAMILIES: tuple[str, ...] = (
    # the job a hosted refusal names (inspector.serving.jobs: JOB_NAMES and plan_job): f"job.{kind}"
    "job.{kind}",
    # measure_words (inspector.analyses.heads), the Answer values of lessons 2 and 4b (inspector.analyses.lessons),
    # the output-change help (views/compare.py), Answered.show (views/lesson_quiz.py): f"measure.{kind}"
    "measure.{kind}",
    # method_label (inspector.analyses.attribution.methods): f"method.{method}"
    "method.{name}",
    # a shipped model's kind (inspector.core.model_folders._shipped_kind_key): f"model.shipped.{folder}"
    "model.shipped.{name}",
    # views/sidebar.sidebar, the example menu's titles: {example.title: f"example.{example.slug}"}
    "example.{slug}",
    # unknown-token warning (inspector.charts.sentences.unknown_tokens): f"unknown.script.{found.script}"
    "unknown.script.{script}",
    # D2's table of position kinds (views/lessons_decoder.draw_rope): f"lesson10.position.{kind}"
    "lesson10.position.{kind}",
    # ablation words (inspector.analyses.heads), the pruning note (inspector.charts.heads) and the removal radio and
    # grid caption (views/heads.py): f"heads.mode.{mode}"
    "heads.mode.{mode}",
    # views/heads.py: the colour-by menu f"heads.grid.{name}", the where-table's columns f"heads.column.{category}",
    # the redundant pairs' columns f"heads.pairs.{name}"
    "heads.grid.{name}",
    "heads.column.{category}",
    "heads.pairs.{name}",
    # inspector.charts.sentences.roles: role_name f"roles.role.{role}", verdict f"roles.measure.{role}_{measure}"
    "roles.role.{role}",
    "roles.measure.{role}_{measure}",
    # inspector.charts.roles: the causal chart's axis f"chart.roles.y_{measure}"
    "chart.roles.y_{measure}",
    # views/heads_roles.py: the top-heads table's columns f"roles.page.column_{name}"
    "roles.page.column_{name}",
    # flags and marks of collapsed and diffuse heads (inspector.charts.heads): f"chart.heads.{kind}.collapsed" and
    # f"chart.heads.{kind}.diffuse"
    "chart.heads.{kind}.collapsed",
    "chart.heads.{kind}.diffuse",
    # census_report (inspector.charts.sentences.census): f"census.report_{kind}", f"census.report_no_{kind}"
    "census.report_{kind}",
    "census.report_no_{kind}",
    # statistic and unit names (inspector.charts.census): f"chart.census.stat.{statistic}",
    # f"chart.census.unit.{statistic if statistic in STATISTIC_UNITS else 'share'}"
    "chart.census.stat.{statistic}",
    "chart.census.unit.{statistic}",
    # views/attribution.py: the target's description f"attribution.page.target_{target.kind.replace('-', '_')}",
    # the corpus table's columns f"attribution.page.column_{name}"
    "attribution.page.target_{kind}",
    "attribution.page.column_{name}",
    # views/lesson_page.LessonView.header and views/lessons.py over the lesson registry
    # (inspector.analyses.lessons.registry, Lesson.key = f"lesson{number}"): t(f"{lesson.key}.title"),
    # t(lesson.key + ".question"), t(lesson.key + ".explain")
    "lesson{n}.title",
    "lesson{n}.question",
    "lesson{n}.explain",
    # views/pages.navigation over the page registry (inspector.output.pages, PageSpec.nav_key): f"nav.{name}"
    "nav.{page}",
    # the position lesson (inspector.analyses.lessons): f"lesson3.answer.{kind}", and += ".none" when no head is
    # positional
    "lesson3.answer.{kind}",
    "lesson3.answer.{kind}.none",
    # views/lessons.py, lesson 5's roles: {role: t(f"lesson5.role.{role}", lang) for role in (...)}
    "lesson5.role.{role}",
    # views/lesson_quiz._decoder_questions: the choices t(f"quiz.rope.a{i}"), t(f"quiz.sink.a{i}") for i in 0 … 2
    "quiz.rope.a{i}",
    "quiz.sink.a{i}",
    # task_words (inspector.charts.sentences.groundtruth): f"gt.task.{spec_task.name}.{field}"; the scoreboard's
    # summary: f"gt.variant.{board.card.variant}"
    "gt.task.{task}.{field}",
    "gt.variant.{variant}",
    # the example chart's roles (inspector.charts.groundtruth): f"chart.gt.role.{role}"
    "chart.gt.role.{role}",
    # views/compare.py: the mode radio f"compare.mode_{m}", the colour-by menu f"compare.colour_{m}"
    "compare.mode_{mode}",
    # views/generate.py: how a run ended, f"generate.finish.{result.finish}"
    "generate.finish.{finish}",
    "compare.colour_{metric}",
    # inspector.base.errors.error_text: an error's class sentence f"error.kind.{error_kind(err)}" (ERROR_KINDS)
    "error.kind.{kind}",
)


def _merged(modules: Iterable[ModuleType], languages: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """The entries of ``modules`` as one ``{key: {language: text}}``; raises ValueError on a key defined twice or an
    entry that is not ``(key, one non-empty text per language)``."""
    merged: dict[str, dict[str, str]] = {}
    home: dict[str, str] = {}
    for module in modules:
        for entry in module.ENTRIES:
            key = entry[0] if entry and isinstance(entry[0], str) else repr(entry)[:60]
            if (len(entry) != 1 + len(languages)
                    or not all(isinstance(text, str) and text.strip() for text in entry)):
                raise ValueError(f"{module.__name__}: the entry {key!r} is not (key, {', '.join(languages)}) with "
                                 f"every text non-empty — got {len(entry) - 1} text(s); give it one text per language "
                                 "(a missing comma joins two strings into one)")
            if key in merged:
                raise ValueError(f"{module.__name__}: {key!r} is defined twice (also in {home[key]}); a key has one "
                                 "entry — delete one, or rename it if they mean different things")
            merged[key], home[key] = dict(zip(languages, entry[1:])), module.__name__
    return merged


CATALOGUE: dict[str, dict[str, str]] = _merged(PAGE_MODULES, LANGUAGES)


# A plural choice inside a template: ``{n|text|texts}`` is "text" when the value of ``n`` is 1 (or "1"), else "texts"
# (English: "1 text", "2 texts"). Chinese has no plural forms and needs none. The count itself is written as usual
# ("{n} {n|text|texts}"); ``n`` counts as a placeholder of the entry.
_PLURAL = re.compile(r"\{(\w+)\|([^{}|]*)\|([^{}|]*)\}")


def _plural_forms(template: str, values: dict[str, object]) -> str:
    return _PLURAL.sub(lambda m: m[2] if str(values[m[1]]).replace(",", "") in ("1", "1.0") else m[3], template)


def _placeholders(template: str) -> set[str]:
    return ({name for _, name, _, _ in Formatter().parse(_PLURAL.sub("", template)) if name}
            | {m[1] for m in _PLURAL.finditer(template)})


def placeholders(key: str, lang: str) -> set[str]:
    """The ``{names}`` that ``key`` expects in ``lang`` (tests check every language expects the same)."""
    return _placeholders(CATALOGUE[key][lang])


def t(key: str, lang: str = DEFAULT_LANGUAGE, /, **values: object) -> str:
    """The catalogue string ``key`` in ``lang`` (English for an unsupported language), filled with ``values``.

    Raises KeyError for an unknown key or a missing placeholder value: both are bugs in the caller."""
    entry = CATALOGUE[key]
    template = entry.get(lang if lang in LANGUAGES else DEFAULT_LANGUAGE, entry[DEFAULT_LANGUAGE])
    if _PLURAL.search(template):
        template = _plural_forms(template, values)
    return template.format(**values) if values or _placeholders(template) else template


class Notice(str):
    """A sentence for the person about how a result was made (a retry after running out of memory, a memory budget
    that kept fewer layers' weights, a share link's value that could not be used). It *is* its English text — code
    that reads notices as strings (logs, JSON, tests) keeps working — and remembers its catalogue key and values, so
    a page shows it in the session's language with :meth:`text` (:func:`notice_text`). A value that is a Notice
    itself (a clause) is translated with it. Pickles by key and values (cached captures carry it)."""

    key: str
    values: dict[str, object]

    def __new__(cls, key: str, /, **values: object) -> Notice:
        notice = super().__new__(cls, t(key, DEFAULT_LANGUAGE, **values))
        notice.key, notice.values = key, dict(values)
        return notice

    def __reduce__(self) -> tuple:
        return _rebuild_notice, (self.key, self.values)

    def text(self, lang: str = DEFAULT_LANGUAGE) -> str:
        return t(self.key, lang, **{name: value.text(lang) if isinstance(value, Notice) else value
                                    for name, value in self.values.items()})


def _rebuild_notice(key: str, values: dict[str, object]) -> Notice:
    return Notice(key, **values)


def device_label(device: object) -> str:
    """A torch device as a sentence names it: "CPU", "CUDA", "CUDA:1", "MPS" (torch writes "cpu", which read as a
    typo in a Chinese sentence; issue 31)."""
    return str(device).upper()


def notice_text(notice: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """``notice`` in ``lang``: a :class:`Notice` translated, any other string as it is."""
    return notice.text(lang) if isinstance(notice, Notice) else notice
