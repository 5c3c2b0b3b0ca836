"""Altair (Vega-Lite) charts over results the library has already computed.

Every builder takes finished numbers (a :class:`~inspector.metrics.HeadEntropy`, one head's weights) and
returns an ``altair.Chart`` — nothing here computes an analysis, and nothing imports Streamlit, so the same
charts serve the UI, figure export and notebooks. Vega renders token strings as text marks and escapes them
in tooltips, so user text never reaches the page as HTML.

Tokens are labelled ``"<position>: <token>"`` (:func:`token_labels`): Vega-Lite merges equal values on an
ordinal axis, so two occurrences of "the" would otherwise collapse into one row. Axes list the labels in
sentence order explicitly, because the default ordinal sort is alphabetical ("10: …" before "2: …").
"""

from __future__ import annotations

from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from inspector.metrics import HeadEntropy

# Perceptually uniform palettes that survive greyscale printing: viridis runs dark (focused heads) to
# yellow (diffuse heads); blues runs light (no weight) to dark (all of the budget).
ENTROPY_SCHEME = "viridis"
WEIGHT_SCHEME = "blues"

# Heatmap cells shrink with the text so a 512-token input still fits on a screen; clamp to stay clickable.
_MAX_CELL_PX = 28
_MIN_CELL_PX = 4
_HEATMAP_TARGET_PX = 560


def token_labels(tokens: Sequence[str]) -> list[str]:
    """One label per position, unique even when a token repeats: ``["0: [CLS]", "1: the", …]``."""
    return [f"{position}: {token}" for position, token in enumerate(tokens)]


def entropy_grid_chart(entropy: HeadEntropy, *, selected: tuple[int, int] | None = None) -> alt.LayerChart:
    """Layer × head grid coloured by normalised entropy (0 = all weight on one key, 1 = uniform).

    One row of data per (layer, head): ``layer``, ``head``, ``normalized`` and ``raw`` (nats). Heads whose
    every row sees a single key have a NaN normalised entropy and are drawn grey. ``selected`` =
    (layer, head) outlines that cell.
    """
    layers, heads = entropy.raw.shape
    layer_index, head_index = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")  # (layers, heads)
    data = pd.DataFrame({
        "layer": layer_index.ravel(),
        "head": head_index.ravel(),
        "normalized": entropy.normalized.ravel().astype(float),
        "raw": entropy.raw.ravel().astype(float),
    })
    base = alt.Chart(data).encode(
        x=alt.X("head:O", title="head", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("layer:O", title="layer"),
        tooltip=[alt.Tooltip("layer:O"), alt.Tooltip("head:O"),
                 alt.Tooltip("normalized:Q", title="entropy / log(keys)", format=".3f"),
                 alt.Tooltip("raw:Q", title="entropy (nats)", format=".3f")],
    )
    cells = base.mark_rect().encode(
        color=alt.Color("normalized:Q", title="entropy (normalised)",
                        scale=alt.Scale(scheme=ENTROPY_SCHEME, domain=[0, 1]),
                        # Below the grid, so a 12-head grid plus legend fits a narrow column.
                        legend=alt.Legend(orient="bottom", direction="horizontal")),
    )
    # Vega-Lite drops rows with a NaN colour value; a grey layer underneath keeps those cells visible.
    undefined = base.mark_rect(color="#d0d0d0")
    layers_drawn = [undefined, cells]
    if selected is not None:
        layer, head = selected
        outline = base.mark_rect(fill=None, stroke="#ff4b4b", strokeWidth=3).transform_filter(
            (alt.datum.layer == int(layer)) & (alt.datum.head == int(head)))
        layers_drawn.append(outline)
    return alt.layer(*layers_drawn).properties(
        title="Head entropy: how spread out each head's attention is",
        width=alt.Step(26), height=alt.Step(26),
    )


def attention_heatmap_chart(weights: np.ndarray, tokens: Sequence[str], *, title: str | None = None) -> alt.Chart:
    """Heatmap of one head's attention: row = query token, column = key token, colour = weight.

    weights: (q_len, k_len) — each row sums to 1 over the keys that query could see. tokens: the q_len
    token strings (keys are the same tokens: self-attention). One row of data per (query, key) with
    ``query`` / ``key`` labels, their positions and raw tokens, and ``weight``.
    """
    weights = np.asarray(weights)
    if weights.ndim != 2 or weights.shape[0] != len(tokens) or weights.shape[1] != len(tokens):
        raise ValueError(f"weights has shape {weights.shape}; expected ({len(tokens)}, {len(tokens)}) for "
                         f"{len(tokens)} tokens")
    q_len, k_len = weights.shape
    labels = token_labels(tokens)
    query_index, key_index = np.meshgrid(np.arange(q_len), np.arange(k_len), indexing="ij")  # (q_len, k_len)
    token_array = np.asarray(tokens, dtype=object)
    label_array = np.asarray(labels, dtype=object)
    data = pd.DataFrame({
        "query": label_array[query_index.ravel()],
        "key": label_array[key_index.ravel()],
        "query_token": token_array[query_index.ravel()],
        "key_token": token_array[key_index.ravel()],
        "query_position": query_index.ravel(),
        "key_position": key_index.ravel(),
        "weight": weights.ravel().astype(float),
    })
    cell = int(np.clip(_HEATMAP_TARGET_PX // max(k_len, 1), _MIN_CELL_PX, _MAX_CELL_PX))
    return alt.Chart(data).mark_rect().encode(
        x=alt.X("key:O", title="key (attended to)", sort=labels, axis=alt.Axis(labelAngle=-60, labelLimit=120)),
        y=alt.Y("query:O", title="query (attending)", sort=labels, axis=alt.Axis(labelLimit=120)),
        color=alt.Color("weight:Q", title="weight", scale=alt.Scale(scheme=WEIGHT_SCHEME, domain=[0, 1])),
        tooltip=[alt.Tooltip("query:N", title="query"), alt.Tooltip("key:N", title="key"),
                 alt.Tooltip("weight:Q", format=".3f")],
    ).properties(title=title or "Attention weights", width=alt.Step(cell), height=alt.Step(cell))
