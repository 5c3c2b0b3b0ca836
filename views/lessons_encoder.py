"""The Lessons page's lessons 1–7, 18 and 19 on the sidebar's model, one drawing per registered lesson (:data:`DRAW`,
by slug, in the page's order): tables, charts (:mod:`inspector.charts.lessons`) and the answers the library wrote from
the numbers. Lesson 7 times on request, with its own lengths."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from inspector import InspectorError
from inspector.analyses.lessons import DEFAULT_LENGTHS, SCALE_NAMES, sharpest_pair
from inspector.analyses.lessons.common import TIMING_WARMUPS
from inspector.analyses.lessons.registry import LESSONS
from inspector.base.i18n import device_label, notice_text, t
from inspector.base.tokens import readable_tokens
from inspector.charts import lessons as charts
from inspector.charts.inspect import entropy_by_layer_chart
from inspector.output.pages import PAGE_REGISTRY
from inspector.serving.option_plan import plan_timing, timing_choices
from views import session
from views.lesson_page import Draw, LessonView, lesson_context
from views.progress_bar import progress_bar

TIMING_CHOICES = (128, 256, 512, 1024, 2048, 4096)


def draw_definition(page: LessonView, definition) -> None:
    lang = page.lang
    st.markdown(f"**{t('lesson1.shapes', lang)}**")
    shapes = [("X", definition.x), ("Q", definition.query), ("K", definition.key), ("V", definition.value),
              ("S = QKᵀ·scale", definition.scores), ("A = softmax(S)", definition.weights),
              ("O = AV", definition.output)]
    st.dataframe(pd.DataFrame({t("lesson1.col_tensor", lang): [name for name, _ in shapes],
                               t("lesson1.col_shape", lang): [" × ".join(map(str, m.shape)) for _, m in shapes],
                               t("lesson1.col_values", lang): [", ".join(f"{v:.3f}" for v in m[0, :5])
                                                                for _, m in shapes]}),
                 hide_index=True)
    if definition.position == "rope":
        st.caption(t("lesson1.rope_note", lang))
    page.show("lesson1-weights", charts.weights_chart(
        definition.weights, definition.tokens, title=t("lesson1.chart", lang, layer=page.layer, head=page.head),
        slide=page.slide, lang=lang, keep=sharpest_pair(definition.weights, definition.visible)))
    st.dataframe(pd.DataFrame({t("lesson1.col_query", lang): readable_tokens(definition.tokens),
                               "Σ_j A_ij": definition.row_sums}),
                 hide_index=True, height=180, column_config={"Σ_j A_ij": st.column_config.NumberColumn(format="%.7f")})
    st.caption(t("lesson1.products", lang))
    st.page_link(PAGE_REGISTRY["mechanism"].script, label=t("lesson1.products_link", lang),
                 icon=":material/arrow_forward:")
    page.answer(definition)


def draw_why_qk(page: LessonView, why_qk) -> None:
    lang, slide = page.lang, page.slide
    page.show("lesson2-asymmetry", charts.asymmetry_chart(why_qk, title=t("lesson2.chart_asym", lang), slide=slide,
                                                          lang=lang))
    page.show("lesson2-tied", charts.tied_weights_chart(why_qk, page.results["definition"].tokens,
                                                        title=t("lesson2.chart_tied", lang, head=page.head),
                                                        slide=slide, lang=lang))
    page.answer(why_qk)


def draw_position(page: LessonView, position) -> None:
    page.show("lesson3-offsets", charts.offset_chart(position, title=t("lesson3.chart", page.lang, layer=page.layer),
                                                     slide=page.slide, lang=page.lang))
    page.answer(position)


def draw_scaling(page: LessonView, scaling) -> None:
    lang, slide = page.lang, page.slide
    sweep, real = scaling.sweep, scaling.real
    st.caption(t("lessons.simulation", lang, queries=sweep.queries, keys=sweep.keys, seed=sweep.seed))
    page.show_pair(("lesson4-variance", charts.variance_chart(sweep, title=t("lesson4.variance_chart", lang),
                                                             slide=slide, lang=lang)),
                   ("lesson4-sweep", charts.sweep_chart(sweep, title=t("lesson4.sweep_chart", lang), slide=slide,
                                                        lang=lang)))
    table = pd.DataFrame([{"d": int(d), t("lesson4.table_scale", lang): name,
                           t("lesson4.table_variance", lang): sweep.score_variance[j],
                           t("lesson4.table_entropy_nats", lang): sweep.entropy[i, j],
                           t("lesson4.table_max", lang): sweep.max_weight[i, j],
                           t("lesson4.table_jacobian", lang): sweep.jacobian_norm[i, j]}
                          for j, d in enumerate(sweep.dims) for i, name in enumerate(SCALE_NAMES)])
    # The Jacobian's column under its symbol, the words in its help: the table then fits a 1000 px window.
    jacobian = st.column_config.Column("‖J‖_F", help=t("lesson4.table_jacobian", lang) + "\n\n"
                                       + t("lesson4.jacobian_help", lang))
    st.dataframe(table, hide_index=True, height=240, column_config={t("lesson4.table_jacobian", lang): jacobian})
    st.dataframe(pd.DataFrame({t("lesson4.table_scale", lang): [f"{n} = {s:.4g}"
                                                                for n, s in zip(SCALE_NAMES, real.scales)],
                               t("lesson4.table_entropy", lang): real.normalized_entropy,
                               t("lesson4.table_max", lang): real.max_weight,
                               t("lesson4.table_change", lang): real.output_change}), hide_index=True)
    page.answer(scaling)


def draw_head_dim(page: LessonView, lesson) -> None:
    lang, slide = page.lang, page.slide
    st.caption(t("lesson18.limits", lang, keys=lesson.keys, steps=lesson.steps, seed=lesson.seed))
    page.show_pair(("lesson18-simulation", charts.bottleneck_chart(lesson, title=t("lesson18.sim_chart", lang),
                                                                   slide=slide, lang=lang)),
                   ("lesson18-head", charts.rank_cut_chart(lesson, title=t("lesson18.head_chart", lang,
                                                                           layer=page.layer, head=page.head),
                                                           slide=slide, lang=lang)))
    page.answer(lesson)


def draw_position_codes(page: LessonView, lesson) -> None:
    lang = page.lang
    names = {"sinusoidal": t("lesson19.code.sinusoidal", lang, d=lesson.d_model),
             "learned": t("lesson19.code.learned", lang), "rope": t("lesson19.code.rope", lang, d=lesson.rope_dim)}
    page.show("lesson19-codes", charts.position_codes_chart(lesson, names, title=t("lesson19.chart", lang),
                                                            slide=page.slide, lang=lang))
    rows = [(code, values, spread) for code, values, spread in
            (("sinusoidal", lesson.sinusoidal, lesson.sinusoidal_spread),
             ("learned", lesson.learned, lesson.learned_spread), ("rope", lesson.rope, lesson.rope_spread))
            if values is not None]
    far = int(lesson.offsets[-1])
    st.dataframe(pd.DataFrame({t("lesson19.col_code", lang): [names[code] for code, _, _ in rows],
                               t("lesson19.col_near", lang): [values[1] for _, values, _ in rows],
                               t("lesson19.col_far", lang, far=far): [values[-1] for _, values, _ in rows],
                               t("lesson19.col_spread", lang): [f"{spread[1:].mean():.1e}" for _, _, spread in rows]}),
                 hide_index=True)
    page.answer(lesson)


def draw_multi_head(page: LessonView, multi) -> None:
    lang = page.lang
    # The library names the steps; the two that are words are worded here, the symbols stay as they are.
    steps = {"split": t("lesson5.step.split", lang), "concat · W_O": t("lesson5.step.concat", lang)}
    st.dataframe(pd.DataFrame({t("lesson5.col_step", lang): [steps.get(step, step) for step, _ in multi.reshape],
                               t("lesson5.col_shape", lang): [" × ".join(map(str, shape))
                                                              for _, shape in multi.reshape]}),
                 hide_index=True)
    roles = {role: t(f"lesson5.role.{role}", lang) for role in ("offset", "special", "content")}
    page.show("lesson5-contributions", charts.contribution_chart(
        multi, roles, title=t("lesson5.chart", lang, layer=page.layer), slide=page.slide, lang=lang))
    page.answer(multi)


def draw_entropy(page: LessonView, entropy) -> None:
    page.show("lesson6-entropy", entropy_by_layer_chart(entropy.entropy, slide=page.slide, lang=page.lang))
    page.answer(entropy)


def measured_mib(peak_bytes, device: str, lang: str) -> list[str]:
    """Measured peaks as MiB text; where nothing was measured (NaN: the CPU reports no peak) the table says so
    instead of showing "None"."""
    return [t("lesson7.not_measured", lang, device=device_label(device)) if not np.isfinite(value)
            else f"{value / 2**20:.2f}"
            for value in np.asarray(peak_bytes, dtype=np.float64)]


def draw_complexity(page: LessonView, _: object) -> None:
    """Timed on request, live (never cached: the reader asks for a fresh measurement), at the lengths chosen; the
    counted measures (bytes, FLOPs, max |Δ|) beside the times, and recomputation explained."""
    lang = page.lang
    st.caption(t("lesson7.recompute", lang))
    # The lengths offered are those this server's memory and deadline allow on their own (issue 45, item 7: n = 4,096
    # added 2.4 GB to a hosted server); a choice carried over from before is kept only while it is offered.
    policy, info = session.hosting_policy(), page.info
    offered = timing_choices(info.num_heads, info.head_dim, TIMING_CHOICES, policy)
    if "timing_lengths" in st.session_state:
        st.session_state["timing_lengths"] = [n for n in st.session_state["timing_lengths"] if n in offered]
        default = None
    else:
        default = [n for n in DEFAULT_LENGTHS if n in offered]
    lengths = st.multiselect(t("lesson7.lengths", lang), offered, default=default, key="timing_lengths",
                             placeholder=t("lesson7.lengths_placeholder", lang))
    if st.button(t("lesson7.run", lang), key="timing_run", disabled=not lengths):
        # Rounds over every length: before each, done = rounds finished; the last call (done == total) keeps its label.
        with progress_bar(None, lambda done, total, note: t("lesson7.measuring", lang, round=min(done + 1, total),
                                                          rounds=total, warmups=TIMING_WARMUPS)) as bar:
            try:
                planned = plan_timing(info.num_heads, info.head_dim, lengths, policy)  # together, within the budget
                for notice in planned.notices:
                    st.info(notice_text(notice, lang), icon=":material/timer:")
                context = lesson_context(page.spec, None, page.text, page.backend, page.layer, page.head,
                                         planned.values["lengths"], bar)
                with session.plan_job("lessons", session.cached_model(page.spec), lang).running():  # the deadline
                    st.session_state["timing"] = LESSONS["complexity"].on_request(context)
            except (InspectorError, RuntimeError) as err:  # RuntimeError: out of memory at a large n
                session.show_error(err, lang)
    timing = st.session_state.get("timing")
    if timing is None:
        return
    # One above the other: side by side at 1000 px, the legends' longer 简体中文 entries ("(n / n₀)²，即 O(n²) 参考线")
    # ran past their half column and were cut (issue 44 walkthrough).
    page.show("lesson7-complexity", charts.complexity_chart(
        timing, title=t("lesson7.chart", lang, device=device_label(timing.device)), slide=page.slide, lang=lang))
    page.show("lesson7-growth", charts.growth_chart(timing, title=t("lesson7.growth_chart", lang), slide=page.slide,
                                                    lang=lang))
    mib = 2**20
    st.dataframe(pd.DataFrame({"n": timing.lengths, t("lesson7.col_mat_ms", lang): timing.materialised_ms,
                               t("lesson7.col_flash_ms", lang): timing.flash_ms,
                               t("lesson7.col_weight_bytes", lang): timing.weight_bytes / mib,
                               t("lesson7.col_gflops", lang): timing.flops / 1e9,
                               t("lesson7.col_delta", lang): [f"{delta:.1e}" for delta in timing.max_abs_delta],
                               t("lesson7.col_mat_theory", lang): timing.materialised_bytes / mib,
                               t("lesson7.col_flash_theory", lang): timing.flash_bytes / mib,
                               t("lesson7.col_mat_measured", lang): measured_mib(
                                   timing.measured_materialised_bytes, timing.device, lang),
                               t("lesson7.col_flash_measured", lang): measured_mib(
                                   timing.measured_flash_bytes, timing.device, lang)}),
                 hide_index=True)
    st.caption(t("lesson7.memory_note", lang))
    page.answer(timing)


DRAW: dict[str, Draw] = {"definition": draw_definition, "why_qk": draw_why_qk, "position": draw_position,
                         "position_codes": draw_position_codes, "scaling": draw_scaling, "head_dim": draw_head_dim,
                         "multi_head": draw_multi_head, "entropy": draw_entropy, "complexity": draw_complexity}
