"""Two models of different shapes on one text (issue 27; inspector.analyses.compare_shapes): the pieces both
tokenizers agree on, entropy by relative depth, one piece's attention by piece, the page and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from inspector import capture
from inspector.analyses.compare_shapes import common_segments, compare_shapes, shapes_json
from inspector.base.errors import InvalidRequestError
from inspector.charts.compare_shapes import shapes_attention_chart, shapes_entropy_chart
from inspector.charts.sentences.compare import shapes_sentence, shapes_words
from inspector.cli import main
from inspector.core.loading import load_model

TEXT = "the animal did n't cross the street because it was too tired ."


@pytest.fixture(scope="module")
def llama3_dir(tmp_path_factory):
    """A causal Llama of 3 layers × 4 heads (2 key/value heads) on the tiny models' tokenizer."""
    import torch
    from transformers import AutoModel, LlamaConfig

    from tests.conftest import VOCAB_SIZE, make_tokenizer

    folder = tmp_path_factory.mktemp("llama3")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB_SIZE, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                         num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64, pad_token_id=0,
                         bos_token_id=2, eos_token_id=3)
    AutoModel.from_config(config, attn_implementation="eager").save_pretrained(folder, safe_serialization=True)
    make_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def two_shapes(tiny_model_dirs, llama3_dir):
    """A 2 × 4 bidirectional BERT and a 3 × 4 causal Llama on one tokenizer."""
    return load_model(str(tiny_model_dirs["bert"])), load_model(str(llama3_dir))


def _shape(loaded):
    return loaded.info.num_layers, loaded.info.num_heads, loaded.info.num_kv_heads


def test_what_is_compared_between_models_of_different_shapes(two_shapes):
    bert, qwen = two_shapes
    a, b = capture(bert, TEXT, weights="all"), capture(qwen, TEXT, weights="all")
    result = compare_shapes(a, b, _shape(bert), _shape(qwen))
    assert result.segments[result.query] == "tired"  # the last piece with a letter in it
    assert len(result.depth_a) == 2 and len(result.depth_b) == 3
    np.testing.assert_allclose(result.depth_b, [1 / 6, 1 / 2, 5 / 6])
    assert result.attention_a.shape == result.attention_b.shape == (len(result.segments) + 1,)
    # A causal model's query sees nothing after it: the piece after "tired" gets none of its attention.
    assert result.attention_b[result.query + 1:-1].sum() == 0 and result.attention_a[result.query + 1:-1].sum() > 0
    # The by-hand oracle for B: the query's last token's row, mean over layers and heads, summed per piece.
    position = max(i for i, tok in enumerate(b.tokens) if tok == "tired")
    row = np.mean([b.weights[layer][:, position].mean(axis=0) for layer in range(3)], axis=0)
    assert result.attention_b[result.query] == pytest.approx(row[position], abs=1e-6)
    assert result.attention_b[-1] == pytest.approx(row[0] + row[-1], abs=1e-6)  # [CLS] and [SEP]
    assert 0 < result.js <= np.log(2)
    assert "tired" in shapes_sentence(result, "en") and "tired" in shapes_sentence(result, "zh")
    payload = shapes_json(result, **shapes_words(result))
    assert payload["kind"] == "different-shapes" and payload["output"]["comparable"] is False
    json.dumps(payload, allow_nan=False)
    with pytest.raises(InvalidRequestError):
        compare_shapes(a, b, _shape(bert), _shape(qwen), query=99)
    names = ("A", "B")
    assert shapes_entropy_chart(result, names, lang="zh").to_dict()["encoding"]["x"]["scale"]["domain"] == [0, 1]
    assert shapes_attention_chart(result, names).to_dict()["encoding"]["xOffset"]["field"] == "model"


def test_segments_are_the_pieces_both_tokenizers_start(two_shapes):
    bert, _ = two_shapes
    a = capture(bert, TEXT, weights=None)

    class Other:  # a tokenizer that keeps "the animal" together and starts its words at the space before them
        text = TEXT
        tokens = ("<s>", "the animal", " did", " n't cross the street because it was too tired .")
        special = np.array([True, False, False, False])
        offsets = np.array([[0, 0], [0, 10], [10, 14], [14, len(TEXT)]])

    assert [TEXT[s:e] for s, e in common_segments(TEXT, a, Other)] == [
        "the animal", "did", "n't cross the street because it was too tired ."]


def test_cli_compares_models_of_different_shapes_on_one_text(tiny_model_dirs, llama3_dir, tmp_path):
    out = tmp_path / "shapes.json"
    assert main(["compare", "--model", str(tiny_model_dirs["bert"]), "--model-b", str(llama3_dir),
                 "--text", TEXT, "--json", str(out)]) == 0
    payload = json.loads(out.read_text(encoding="utf-8"))
    assert payload["kind"] == "different-shapes" and payload["query"]["text"] == "tired"
    assert payload["shape_a"]["layers"] == 2 and payload["shape_b"]["layers"] == 3
    assert main(["compare", "--model", str(tiny_model_dirs["bert"]), "--model-b", str(llama3_dir),
                 "--text", TEXT, "--keys", "animal,street", "--json", "-"]) == 2
