"""The Generate page's charts (issue 28), over a finished :class:`~inspector.analyses.generate.Generation`: the chosen
step's attention row for one head over prompt + generated tokens, the same row in every head of the layer (small
multiples as one head × position strip), the step's next-token candidates, the entropy of every head at every step,
the sink mass per step, and the KV cache's size per step next to what it would be with one key/value head per query
head. Builders compute nothing and take ``lang``; tokens are data and stay as they are.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from inspector.analyses.generate import Generation
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.base.tokens import is_byte_level, readable_token
from inspector.charts.base import (
    ENTROPY_SCHEME,
    FULL_WIDTH_PX,
    HALF_COLUMN_PX,
    SELECTION_COLOR,
    chart_title,
    largest_weight,
    may_thin,
    style_chart,
    thinned_note,
    token_axis,
    token_labels,
    weight_scale,
)

PROMPT_COLOR, GENERATED_COLOR = "#3b528b", "#e66101"
_HEAD_ROW_PX, _SLIDE_HEAD_ROW_PX = 18, 24


def _check_step(result: Generation, step: int) -> int:
    if not 0 <= int(step) < result.steps:
        raise ValueError(f"step {step} is outside 0–{result.steps - 1}")
    return int(step)


def _row_labels(result: Generation, step: int) -> list[str]:
    """Labels of the keys step ``step`` saw: positions 0 … prompt_len + step − 1."""
    return token_labels(result.all_tokens[:result.prompt_len + step])


def chosen_label(result: Generation, step: int) -> str:
    """``"12: ␣Paris"``: the token step ``step`` chose, at its position in the whole text, as the row labels show it."""
    return token_labels(result.all_tokens[:result.prompt_len + step + 1])[-1]


def _readable(result: Generation, tokens) -> list[str]:
    """``tokens`` of this run as labels show them (Ġ, Ċ, ▁ as ␣ and ↵), byte-level read from the whole text."""
    byte_level = is_byte_level(result.all_tokens)
    return [readable_token(str(token), byte_level) for token in tokens]


def row_data(result: Generation, layer: int, step: int) -> pd.DataFrame:
    """One row per (head, key) the step saw: ``head``, ``key`` (label), ``part`` (prompt or generated), ``weight``."""
    rows = result.weights[layer][step, :, :result.prompt_len + step]  # (heads, keys)
    labels = _row_labels(result, step)
    heads, keys = rows.shape
    head_index, key_index = np.meshgrid(np.arange(heads), np.arange(keys), indexing="ij")
    return pd.DataFrame({"head": head_index.ravel(), "key": np.asarray(labels, dtype=object)[key_index.ravel()],
                         "generated": key_index.ravel() >= result.prompt_len, "weight": rows.ravel().astype(float)})


def attention_row_chart(result: Generation, layer: int, head: int, step: int, *, slide: bool = False,
                        lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """Bars of the step's attention row for one head over every earlier token, prompt and generated coloured apart."""
    step = _check_step(result, step)
    labels = _row_labels(result, step)
    data = row_data(result, layer, step)
    data = data[data["head"] == head].assign(
        part=lambda d: np.where(d["generated"], t("chart.generate.generated", lang), t("chart.generate.prompt", lang)))
    subtitle = [t("chart.generate.row_subtitle", lang, token=chosen_label(result, step))]
    if may_thin(labels, FULL_WIDTH_PX, slide):
        subtitle.append(thinned_note(lang))
    parts = [t("chart.generate.prompt", lang), t("chart.generate.generated", lang)]
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("key:O", title=None, sort=labels, axis=token_axis(labels, horizontal=True, slide=slide)),
        y=alt.Y("weight:Q", title=t("chart.generate.weight", lang), scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("part:N", title=None, scale=alt.Scale(domain=parts, range=[PROMPT_COLOR, GENERATED_COLOR]),
                        legend=alt.Legend(orient="top")),
        tooltip=[alt.Tooltip("key:N", title=t("chart.generate.key", lang)),
                 alt.Tooltip("weight:Q", title=t("chart.generate.weight", lang), format=".3f")],
    ).properties(title=chart_title(t("chart.generate.row_title", lang, layer=layer, head=head, step=step), subtitle,
                                   slide=slide), height=260 if slide else 200)
    return style_chart(chart, slide)


def layer_rows_chart(result: Generation, layer: int, step: int, *, selected_head: int | None = None,
                     slide: bool = False, lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """The step's row in every head of the layer: a head × key strip, one line per head (small multiples that
    share the key axis), the selected head outlined."""
    step = _check_step(result, step)
    labels = _row_labels(result, step)
    data = row_data(result, layer, step)
    row_px = _SLIDE_HEAD_ROW_PX if slide else _HEAD_ROW_PX
    subtitle = [t("chart.generate.heads_subtitle", lang, token=chosen_label(result, step))]
    if may_thin(labels, FULL_WIDTH_PX, slide):
        subtitle.append(thinned_note(lang))
    high = largest_weight(result.weights[layer][step])
    base = alt.Chart(data).encode(
        x=alt.X("key:O", title=None, sort=labels, axis=token_axis(labels, horizontal=True, slide=slide)),
        y=alt.Y("head:O", title=t("chart.generate.head", lang)),
        tooltip=[alt.Tooltip("head:O", title=t("chart.generate.head", lang)),
                 alt.Tooltip("key:N", title=t("chart.generate.key", lang)),
                 alt.Tooltip("weight:Q", title=t("chart.generate.weight", lang), format=".3f")])
    drawn = [base.mark_rect().encode(color=alt.Color("weight:Q", title=t("chart.generate.weight", lang),
                                                     scale=weight_scale(slide, high),
                                                     legend=alt.Legend(orient="bottom", direction="horizontal")))]
    if selected_head is not None:
        drawn.append(base.mark_rect(fill=None, stroke="black" if slide else SELECTION_COLOR, strokeWidth=1.5)
                     .transform_filter(alt.datum.head == int(selected_head)))
    chart = alt.layer(*drawn).properties(
        title=chart_title(t("chart.generate.heads_title", lang, layer=layer, step=step), subtitle, slide=slide),
        height=alt.Step(row_px))
    return style_chart(chart, slide)


def candidates_chart(result: Generation, step: int, *, slide: bool = False,
                     lang: str = DEFAULT_LANGUAGE) -> alt.Chart:
    """The step's most likely next tokens (the distribution the token was chosen from), the chosen one marked."""
    step = _check_step(result, step)
    names = [f"{rank + 1}. {token}" for rank, token in enumerate(_readable(result, result.candidate_tokens[step]))]
    chosen = result.candidate_ids[step] == result.token_ids[step]
    data = pd.DataFrame({"token": names, "p": result.candidate_probs[step].astype(float),
                         "chosen": np.where(chosen, t("chart.generate.chosen", lang),
                                            t("chart.generate.not_chosen", lang))})
    subtitle = [t("chart.generate.candidates_subtitle_greedy" if result.options.greedy
                  else "chart.generate.candidates_subtitle", lang, p=f"{float(result.chosen_prob[step]):.3f}",
                  rank=int(result.chosen_rank[step]) + 1)]
    kinds = [t("chart.generate.chosen", lang), t("chart.generate.not_chosen", lang)]
    chart = alt.Chart(data).mark_bar().encode(
        y=alt.Y("token:N", title=None, sort=names, axis=alt.Axis(labelOverlap=False, labelFlush=False,
                                                                 labelLimit=200 if slide else 120)),
        x=alt.X("p:Q", title=t("chart.generate.probability", lang), scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("chosen:N", title=None, scale=alt.Scale(domain=kinds, range=[GENERATED_COLOR, "#9e9e9e"]),
                        legend=alt.Legend(orient="bottom")),
        tooltip=[alt.Tooltip("token:N", title=t("chart.generate.token", lang)),
                 alt.Tooltip("p:Q", title=t("chart.generate.probability", lang), format=".4f")],
    ).properties(title=chart_title(t("chart.generate.candidates_title", lang, step=step), subtitle,
                                   width=HALF_COLUMN_PX, slide=slide), height=alt.Step(24 if slide else 16))
    return style_chart(chart, slide)


def entropy_strip_chart(result: Generation, layer: int, *, step: int | None = None, slide: bool = False,
                        lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """Entropy of every head of ``layer`` at every step (x: step, y: head), the chosen step outlined — which heads
    sharpen (darker) when the model copies a token it has seen."""
    entropy = result.entropy[:, layer]  # (steps, heads)
    steps, heads = entropy.shape
    step_index, head_index = np.meshgrid(np.arange(steps), np.arange(heads), indexing="ij")
    tokens = np.asarray(_readable(result, result.tokens), dtype=object)[step_index.ravel()]
    data = pd.DataFrame({"step": step_index.ravel(), "head": head_index.ravel(), "token": tokens,
                         "entropy": entropy.ravel().astype(float)})
    base = alt.Chart(data).encode(
        x=alt.X("step:O", title=t("chart.generate.step", lang),
                axis=alt.Axis(labelAngle=0, labelExpr=f"datum.value % {max(1, steps // 16)} == 0 ? datum.label : ''")),
        y=alt.Y("head:O", title=t("chart.generate.head", lang)),
        tooltip=[alt.Tooltip("step:O", title=t("chart.generate.step", lang)),
                 alt.Tooltip("token:N", title=t("chart.generate.token", lang)),
                 alt.Tooltip("head:O", title=t("chart.generate.head", lang)),
                 alt.Tooltip("entropy:Q", title=t("chart.generate.entropy", lang), format=".3f")])
    drawn = [base.mark_rect().encode(color=alt.Color("entropy:Q", title=t("chart.generate.entropy", lang),
                                                     scale=alt.Scale(scheme=ENTROPY_SCHEME),
                                                     legend=alt.Legend(orient="bottom", direction="horizontal")))]
    if step is not None:
        drawn.append(base.mark_rect(fill=None, stroke="black" if slide else SELECTION_COLOR, strokeWidth=1.5)
                     .transform_filter(alt.datum.step == int(step)))
    chart = alt.layer(*drawn).properties(
        title=chart_title(t("chart.generate.entropy_title", lang, layer=layer),
                          [t("chart.generate.entropy_subtitle", lang)], slide=slide),
        height=alt.Step(_SLIDE_HEAD_ROW_PX if slide else _HEAD_ROW_PX))
    return style_chart(chart, slide)


def _step_rule(step: int | None, slide: bool) -> list[alt.Chart]:
    if step is None:
        return []
    return [alt.Chart(pd.DataFrame({"step": [int(step)]})).mark_rule(
        color="black" if slide else SELECTION_COLOR, strokeDash=[4, 3]).encode(x="step:Q")]


# Steps are whole numbers: a short generation's axis read 0, 0.5, 1, 1.5 … (issue 44).
STEP_AXIS = alt.Axis(tickMinStep=1, format="d")


def sink_chart(result: Generation, layer: int, *, step: int | None = None, slide: bool = False,
               lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """Attention on the first token per step: the mean over the heads of ``layer`` and over the whole model."""
    steps = np.arange(result.steps)
    names = [t("chart.generate.sink_layer", lang, layer=layer), t("chart.generate.sink_model", lang)]
    data = pd.DataFrame({"step": np.concatenate([steps, steps]),
                         "series": [names[0]] * result.steps + [names[1]] * result.steps,
                         "sink": np.concatenate([result.sink_mass[:, layer].mean(axis=1),
                                                 result.sink_mass.mean(axis=(1, 2))]).astype(float)})
    lines = alt.Chart(data).mark_line(point=result.steps <= 64).encode(
        x=alt.X("step:Q", title=t("chart.generate.step", lang), axis=STEP_AXIS,
                scale=alt.Scale(domain=[0, max(result.steps - 1, 1)], nice=False)),  # no empty steps past the last
        y=alt.Y("sink:Q", title=t("chart.generate.sink", lang), scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("series:N", title=None, scale=alt.Scale(domain=names, range=[GENERATED_COLOR, PROMPT_COLOR]),
                        legend=alt.Legend(orient="bottom", direction="vertical")),  # one per line: a half column
        tooltip=[alt.Tooltip("step:Q", title=t("chart.generate.step", lang)), alt.Tooltip("series:N", title=None),
                 alt.Tooltip("sink:Q", title=t("chart.generate.sink", lang), format=".3f")])
    chart = alt.layer(lines, *_step_rule(step, slide)).properties(
        title=chart_title(t("chart.generate.sink_title", lang), [t("chart.generate.sink_subtitle", lang)],
                          width=HALF_COLUMN_PX, slide=slide), height=220 if slide else 180)
    return style_chart(chart, slide)


def kv_cache_chart(result: Generation, *, step: int | None = None, slide: bool = False,
                   lang: str = DEFAULT_LANGUAGE) -> alt.LayerChart:
    """The KV cache's size (all layers, MiB) after each step, and the same cache with one key/value head per query
    head — the grouped-query saving, measured from the model's shapes."""
    steps = np.arange(result.steps)
    names = [t("chart.generate.kv_actual", lang, kv_heads=result.num_kv_heads),
             t("chart.generate.kv_mha", lang, heads=result.num_heads)]
    mib = 2.0**20
    data = pd.DataFrame({"step": np.concatenate([steps, steps]),
                         "series": [names[0]] * result.steps + [names[1]] * result.steps,
                         "mib": np.concatenate([result.kv_cache_bytes.sum(axis=1),
                                                result.kv_cache_bytes_mha.sum(axis=1)]) / mib})
    lines = alt.Chart(data).mark_line().encode(
        x=alt.X("step:Q", title=t("chart.generate.step", lang), axis=STEP_AXIS,
                scale=alt.Scale(domain=[0, max(result.steps - 1, 1)], nice=False)),  # no empty steps past the last
        y=alt.Y("mib:Q", title=t("chart.generate.kv_axis", lang), scale=alt.Scale(zero=True)),
        color=alt.Color("series:N", title=None, scale=alt.Scale(domain=names, range=[GENERATED_COLOR, "#9e9e9e"]),
                        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=400)),
        tooltip=[alt.Tooltip("step:Q", title=t("chart.generate.step", lang)), alt.Tooltip("series:N", title=None),
                 alt.Tooltip("mib:Q", title=t("chart.generate.kv_axis", lang), format=".3f")])
    chart = alt.layer(lines, *_step_rule(step, slide)).properties(
        title=chart_title(t("chart.generate.kv_title", lang), [t("chart.generate.kv_subtitle", lang)],
                          width=HALF_COLUMN_PX, slide=slide), height=220 if slide else 180)
    return style_chart(chart, slide)
