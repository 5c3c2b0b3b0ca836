"""Chart builders: the data behind each chart has one row per cell, token labels stay unique when tokens
repeat, axes keep sentence order, and the specs are valid Vega-Lite (``to_dict`` validates the schema)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pytest

from inspector.charts import attention_heatmap_chart, entropy_grid_chart, token_labels
from inspector.metrics import HeadEntropy

# "the" repeats and there are more than ten positions, so label order would go wrong if sorted as text.
TOKENS = ("[CLS]", "the", "cat", "sat", "on", "the", "mat", "and", "the", "dog", "sat", "too", "[SEP]")


def _row_stochastic(q_len: int, seed: int = 0) -> np.ndarray:
    scores = np.random.default_rng(seed).normal(size=(q_len, q_len))
    weights = np.exp(scores)
    return (weights / weights.sum(axis=-1, keepdims=True)).astype(np.float32)  # (q_len, k_len)


def _head_entropy(layers: int = 3, heads: int = 5) -> HeadEntropy:
    raw = np.random.default_rng(1).uniform(0.1, 2.5, size=(layers, heads)).astype(np.float32)
    normalized = (raw / 2.5).astype(np.float32)
    normalized[0, 0] = np.nan  # a head whose rows all see one key has no normalised entropy
    return HeadEntropy(raw=raw, normalized=normalized, layer_mean=raw.mean(axis=-1))


def _layer_data(chart: alt.LayerChart):
    return chart.layer[0].data if chart.data is alt.Undefined else chart.data


def test_token_labels_are_unique_and_keep_the_token():
    labels = token_labels(TOKENS)
    assert len(labels) == len(set(labels)) == len(TOKENS)
    assert labels[1] == "1: the" and labels[5] == "5: the"
    assert all(label.endswith(token) for label, token in zip(labels, TOKENS))


def test_attention_heatmap_has_one_row_per_query_key_pair():
    weights = _row_stochastic(len(TOKENS))
    chart = attention_heatmap_chart(weights, TOKENS, title="Layer 2, head 7")
    data = chart.data
    n = len(TOKENS)
    assert len(data) == n * n
    assert data["query"].nunique() == data["key"].nunique() == n
    np.testing.assert_allclose(data["weight"].to_numpy(), weights.ravel(), rtol=1e-6)
    row = data[(data.query_position == 5) & (data.key_position == 8)].iloc[0]
    assert (row["query"], row["key"], row["query_token"], row["key_token"]) == ("5: the", "8: the", "the", "the")
    assert row["weight"] == pytest.approx(weights[5, 8])

    spec = chart.to_dict()
    labels = token_labels(TOKENS)
    assert spec["encoding"]["x"]["sort"] == labels and spec["encoding"]["y"]["sort"] == labels
    assert {t["field"] for t in spec["encoding"]["tooltip"]} == {"query", "key", "weight"}
    assert spec["title"] == "Layer 2, head 7"


@pytest.mark.parametrize("shape", [(4, 4), (13, 12), (13,)])
def test_attention_heatmap_rejects_weights_that_do_not_match_the_tokens(shape):
    with pytest.raises(ValueError, match="expected"):
        attention_heatmap_chart(np.zeros(shape), TOKENS)


def test_attention_heatmap_cells_shrink_for_long_texts_but_stay_visible():
    short = attention_heatmap_chart(_row_stochastic(3), ("a", "b", "c")).to_dict()
    tokens = tuple(f"t{i}" for i in range(200))
    long = attention_heatmap_chart(_row_stochastic(200), tokens)
    assert short["width"]["step"] > long.width.step >= 4


def test_entropy_grid_has_one_row_per_head_and_outlines_the_selected_head():
    entropy = _head_entropy(layers=3, heads=5)
    chart = entropy_grid_chart(entropy, selected=(2, 4))
    data = _layer_data(chart)
    assert len(data) == 3 * 5
    assert set(zip(data["layer"], data["head"])) == {(l, h) for l in range(3) for h in range(5)}
    cell = data[(data["layer"] == 1) & (data["head"] == 3)].iloc[0]
    assert cell["raw"] == pytest.approx(entropy.raw[1, 3])
    assert cell["normalized"] == pytest.approx(entropy.normalized[1, 3])
    assert np.isnan(data[(data["layer"] == 0) & (data["head"] == 0)].iloc[0]["normalized"])

    spec = chart.to_dict()
    filters = [t["filter"] for layer in spec["layer"] for t in layer.get("transform", [])]
    assert filters and "2" in str(filters[0]) and "4" in str(filters[0])


def test_entropy_grid_without_selection_has_no_outline():
    spec = entropy_grid_chart(_head_entropy()).to_dict()
    assert not any(layer.get("transform") for layer in spec["layer"])
