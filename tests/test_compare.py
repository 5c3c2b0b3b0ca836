"""inspector.analyses.compare (issue 20): token alignment on hand-built cases, the per-row math on hand-made weights, a
head built to attend to a fixed token moving by exactly the expected mass, identical inputs giving zero, the
two-model path (same shape: a table; different shape or tokenizer: a clear message), and the CLI twin."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from inspector.analyses.compare import (
    JS_MAX,
    IncomparableModelsError,
    TextRun,
    compare,
    compare_rows,
    comparison_json,
    head_pair,
)
from inspector.analyses.token_alignment import align_tokens, default_query, resolve_token
from inspector.base.errors import InvalidRequestError, InvalidTextError
from inspector.base.i18n import LANGUAGES
from inspector.charts.sentences.compare import comparison_sentence
from inspector.cli import main
from inspector.core.capture import Capture, OutputSummary
from inspector.core.loading import load_model
from inspector.core.outputs import ModelOutput

ROOT = Path(__file__).resolve().parents[1]
TIRED = "The animal didn't cross the street because it was too tired."
WIDE = "The animal didn't cross the street because it was too wide."


# ------------------------------------------------------------------------------------------------ alignment

def _pairs(alignment) -> list[tuple[int, int]]:
    return [tuple(pair) for pair in alignment.pairs.tolist()]


def test_alignment_of_a_substituted_word_pairs_the_slot_and_marks_it():
    a = ["[CLS]", "the", "cat", "was", "tired", "[SEP]"]
    b = ["[CLS]", "the", "cat", "was", "wide", "[SEP]"]
    alignment = align_tokens(a, b)
    assert _pairs(alignment) == [(i, i) for i in range(6)]
    assert alignment.kinds == ("equal",) * 4 + ("replace", "equal")
    assert alignment.differs_a.tolist() == [False] * 4 + [True, False] == alignment.differs_b.tolist()
    assert alignment.common_prefix == 4
    assert default_query(alignment) == 4  # the replaced slot itself


def test_alignment_of_an_inserted_word_leaves_it_unpaired():
    a = ["[CLS]", "the", "cat", "sat", "[SEP]"]
    b = ["[CLS]", "the", "big", "cat", "sat", "[SEP]"]
    alignment = align_tokens(a, b)
    assert _pairs(alignment) == [(0, 0), (1, 1), (2, 3), (3, 4), (4, 5)]
    assert set(alignment.kinds) == {"equal"}
    assert alignment.differs_b.tolist() == [False, False, True, False, False, False]
    assert not alignment.differs_a.any()
    assert alignment.partner_b[2] == -1 and alignment.partner_a[2] == 3
    assert default_query(alignment) == 2  # first paired token after the insertion: "cat"


def test_alignment_of_a_deleted_word_leaves_it_unpaired_on_the_other_side():
    a = ["[CLS]", "it", "is", "not", "red", "[SEP]"]
    b = ["[CLS]", "it", "is", "red", "[SEP]"]
    alignment = align_tokens(a, b)
    assert _pairs(alignment) == [(0, 0), (1, 1), (2, 2), (4, 3), (5, 4)]
    assert alignment.differs_a.tolist() == [False, False, False, True, False, False]
    assert alignment.partner_a[3] == -1
    assert default_query(alignment) == 4  # "red"


def test_a_replaced_span_of_unequal_length_pairs_up_to_the_shorter_side():
    a = ["x", "too", "tired", "y"]
    b = ["x", "very", "wide", "and", "long", "y"]
    alignment = align_tokens(a, b)
    assert _pairs(alignment) == [(0, 0), (1, 1), (2, 2), (3, 5)]
    assert alignment.kinds == ("equal", "replace", "replace", "equal")
    assert alignment.differs_b.tolist() == [False, True, True, True, True, False]


def test_tokens_are_found_by_string_or_position_and_must_have_a_partner():
    a = ["[CLS]", "the", "animal", "was", "tired", "[SEP]"]
    b = ["[CLS]", "the", "big", "animal", "was", "wide", "[SEP]"]
    alignment = align_tokens(a, b)
    assert resolve_token("Animal", a, b, alignment) == (2, 3)
    assert resolve_token("wide", a, b, alignment) == (4, 5)  # found through B's side of the replaced slot
    assert resolve_token(3, a, b, alignment) == (3, 4)
    with pytest.raises(InvalidRequestError, match="not a token both texts have"):
        resolve_token("big", a, b, alignment)
    with pytest.raises(InvalidRequestError, match="does not exist"):
        resolve_token(17, a, b, alignment)


# ------------------------------------------------------------------------------------------------ row math

def test_a_pure_transfer_between_two_keys_reads_as_exactly_that_mass():
    # Key 1 at position 1, key 2 at position 3, of four aligned tokens; 0.4 of the mass moves from 1 to 3.
    row_a = np.array([0.1, 0.6, 0.2, 0.1])
    row_b = np.array([0.1, 0.2, 0.2, 0.5])
    pairs = np.array([[i, i] for i in range(4)])
    result = compare_rows(row_a[None, None], row_b[None, None], pairs, keys=((1, 1), (3, 3)))
    assert result.key_shift[0, 0] == pytest.approx(0.4, abs=1e-12)
    np.testing.assert_allclose(result.key_mass_a[0, 0], [0.6, 0.1])
    np.testing.assert_allclose(result.key_mass_b[0, 0], [0.2, 0.5])
    # Reversed keys: the same move read the other way.
    reverse = compare_rows(row_a[None, None], row_b[None, None], pairs, keys=((3, 3), (1, 1)))
    assert reverse.key_shift[0, 0] == pytest.approx(-0.4, abs=1e-12)


def test_unaligned_keys_go_to_one_other_bucket_per_side():
    # B has an inserted token (position 2) that takes half of the mass; A has none.
    row_a = np.array([0.5, 0.5])
    row_b = np.array([0.25, 0.25, 0.5])
    pairs = np.array([[0, 0], [1, 1]])
    result = compare_rows(row_a[None, None], row_b[None, None], pairs)
    np.testing.assert_allclose(result.aligned_a[0, 0], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(result.aligned_b[0, 0], [0.25, 0.25, 0.5])
    m = (result.aligned_a[0, 0] + result.aligned_b[0, 0]) / 2
    expected = 0.5 * sum(p * math.log(p / q) for p, q in zip(result.aligned_a[0, 0], m) if p > 0) + \
        0.5 * sum(p * math.log(p / q) for p, q in zip(result.aligned_b[0, 0], m) if p > 0)
    assert result.js[0, 0] == pytest.approx(expected, abs=1e-12)


# ------------------------------------------------------------------------------------------------ compare_runs

def _run(tokens: list[str], weights: np.ndarray, text: str, embedding: np.ndarray) -> TextRun:
    """A TextRun built by hand: one layer, heads given by ``weights (heads, n, n)``, an embedding output."""
    n = len(tokens)
    heads = weights.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.nansum(np.where(weights > 0, weights * np.log(weights), 0.0), axis=-1)[None].astype(np.float32)
    special = np.array([tok.startswith("[") for tok in tokens])
    result = Capture(model_name="hand-made", text=text, tokens=tuple(tokens), token_ids=np.arange(n, dtype=np.int64),
                     offsets=np.zeros((n, 2), np.int32), special=special, entropy=entropy,
                     lse=np.zeros((1, heads, n), np.float32), sink_mass=weights[None, :, :, 0].astype(np.float32),
                     visible_keys=np.full((1, n), n, np.int32), causal=False, windows=(None,),
                     weights={0: weights.astype(np.float32)},
                     output=OutputSummary(kind="embedding", embedding=embedding.astype(np.float32)), backend="torch")
    vector = torch.nn.functional.normalize(torch.tensor(embedding, dtype=torch.float32), dim=0)
    return TextRun(capture=result, output=ModelOutput(kind="embedding", vector=vector))


def _fixed_target_weights(n: int, target: int, query: int, heads: int = 2) -> np.ndarray:
    """Head 0: the query row puts all its mass on ``target``; head 1 and every other row: uniform."""
    weights = np.full((heads, n, n), 1.0 / n)
    weights[0, query] = 0.0
    weights[0, query, target] = 1.0
    return weights


def test_a_head_built_to_attend_to_a_fixed_token_moves_by_exactly_the_expected_mass():
    tokens_a = ["[CLS]", "the", "animal", "crossed", "the", "street", "because", "it", "was", "tired", "[SEP]"]
    tokens_b = tokens_a[:9] + ["wide", "[SEP]"]
    # A: head 0's "it" attends only to "animal" (2); B: only to "street" (5). Head 1 is uniform in both.
    run_a = _run(tokens_a, _fixed_target_weights(11, target=2, query=7), "a", np.ones(4))
    run_b = _run(tokens_b, _fixed_target_weights(11, target=5, query=7), "b", np.array([1.0, 1.0, 1.0, 0.0]))
    from inspector.analyses.compare import compare_runs

    result = compare_runs(run_a, run_b, query="it", keys=("animal", "street"))
    assert result.query == (7, 7) and result.keys == ((2, 2), (5, 5))
    assert result.key_shift[0, 0] == pytest.approx(1.0, abs=1e-7)  # the whole row moved
    assert result.key_shift[0, 1] == pytest.approx(0.0, abs=1e-7)
    assert result.js[0, 0] == pytest.approx(JS_MAX, abs=1e-6) and result.js[0, 1] == pytest.approx(0.0, abs=1e-7)
    assert result.ranked[0].tolist() == [0, 0]
    assert result.moved_heads == 1
    assert result.output.change == pytest.approx(1 - 3 / math.sqrt(12), abs=1e-6)
    pair = head_pair(result, 0, 0)
    assert pair.difference[pair.query_row, 5] == pytest.approx(1.0) and pair.difference[pair.query_row, 2] == -1.0
    # Half of head 0's row moved instead: the shift is exactly one half.
    half = _fixed_target_weights(11, target=2, query=7)
    half[0, 7, 2], half[0, 7, 5] = 0.5, 0.5
    assert compare_runs(run_a, _run(tokens_b, half, "b", np.ones(4)), query=7).key_shift[0, 0] == pytest.approx(0.5)
    # The default query is the replaced slot; its rows are uniform in both, so nothing moved there.
    default = compare_runs(run_a, run_b)
    assert default.query == (9, 9) and float(np.abs(default.js).max()) == pytest.approx(0.0, abs=1e-7)


# ------------------------------------------------------------------------------------------------ real models

@pytest.fixture(scope="module")
def tired_wide(bundled):
    return compare(bundled, TIRED, bundled, WIDE, query="it", backend="torch")


def test_the_tired_wide_pair_on_the_bundled_model(tired_wide):
    result = tired_wide
    assert result.js.shape == (6, 12) and result.ranked.shape == (72, 2)
    assert result.token_label(result.query) == "it"
    assert [result.token_label(k) for k in result.keys] == ["animal", "street"]
    assert result.alignment.differs_a.sum() == 1 and result.tokens_a[result.alignment.differs_a.argmax()] == "tired"
    assert (result.js >= 0).all() and (result.js <= JS_MAX).all() and result.js.max() > 0.01
    js_sorted = result.js[tuple(result.ranked.T)]
    assert (np.diff(js_sorted) <= 0).all()
    assert result.output.kind == "embedding" and 0 < result.output.change < 1
    for lang in LANGUAGES:
        sentence = comparison_sentence(result, lang)
        assert "72" in sentence and "animal" in sentence and f"{result.output.change:.4f}" in sentence
    json.dumps(comparison_json(result, comparison_sentence(result)), allow_nan=False)


def test_identical_inputs_give_zero_everywhere(bundled):
    result = compare(bundled, TIRED, bundled, TIRED, query="it", backend="torch")
    assert result.alignment.identical
    for array in (result.js, result.entropy_change, result.key_shift):
        assert float(np.abs(array).max()) == 0.0
    assert result.output.change == 0.0 and result.moved_heads == 0
    pair = head_pair(result, 2, 3)
    assert float(np.abs(pair.difference).max()) == 0.0


def test_bad_inputs_say_what_is_wrong(bundled):
    with pytest.raises(InvalidRequestError, match="“giraffe” is not a token both texts have"):
        compare(bundled, TIRED, bundled, WIDE, query="giraffe")
    with pytest.raises(InvalidRequestError, match="same token"):
        compare(bundled, TIRED, bundled, WIDE, keys=("animal", "animal"))
    with pytest.raises(InvalidTextError, match="empty"):
        compare(bundled, TIRED, bundled, "  ")
    with pytest.raises(InvalidTextError, match="at most 256 tokens"):
        compare(bundled, TIRED, bundled, "word " * 300)


def test_two_models_of_one_shape_and_tokenizer_give_the_table(tiny_model_dirs):
    bert, roberta = load_model(str(tiny_model_dirs["bert"])), load_model(str(tiny_model_dirs["roberta"]))
    result = compare(bert, "the animal did n't cross the street because it was too tired .", roberta,
                     "the animal did n't cross the street because it was too tired .", query="it")
    assert result.js.shape == (2, 4) and result.alignment.identical
    assert result.js.max() > 0  # different random weights attend differently
    assert result.keys is not None


def test_two_models_of_different_shapes_get_a_clear_message(tiny_model_dirs, bundled):
    bert, qwen = load_model(str(tiny_model_dirs["bert"])), load_model(str(tiny_model_dirs["qwen2"]))
    with pytest.raises(IncomparableModelsError, match=r"2 layers × 4 heads .* 3 × 4: heads can only be compared"):
        compare(bert, "the cat sat", qwen, "the cat sat")
    with pytest.raises(IncomparableModelsError, match="6 layers × 12 heads"):
        compare(bundled, "the cat sat", bert, "the cat sat")


def test_two_models_whose_tokenizers_split_the_text_differently_get_a_clear_message(tiny_model_dirs, tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    from tests.conftest import SPECIALS, VOCAB_WORDS, save_tiny_model

    folder = save_tiny_model(tmp_path / "bert-other-tokenizer", "bert", seed=1)
    vocab = {tok: i for i, tok in enumerate(SPECIALS + [w for w in VOCAB_WORDS if w != "tired"])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                            sep_token="[SEP]", mask_token="[MASK]", model_max_length=64).save_pretrained(folder)
    bert, other = load_model(str(tiny_model_dirs["bert"])), load_model(str(folder))
    with pytest.raises(IncomparableModelsError, match="split the text differently"):
        compare(bert, "the cat was tired", other, "the cat was tired")


# ------------------------------------------------------------------------------------------------ CLI twin

def test_cli_writes_the_same_numbers(tmp_path, tired_wide):
    out = tmp_path / "compare.json"
    assert main(["compare", "--text", TIRED, "--text-b", WIDE, "--query", "it", "--keys", "animal,street",
                 "--backend", "torch", "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    assert payload == json.loads(json.dumps(comparison_json(tired_wide, comparison_sentence(tired_wide))))


def test_cli_bad_input_exits_2_with_one_line():
    """The real entry point: status 2, one line on stderr (no progress bar, no traceback), nothing on stdout."""
    done = subprocess.run([sys.executable, "-m", "inspector", "compare", "--text", TIRED, "--text-b", "",
                           "--json", "-"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "empty" in lines[0], done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("extra, message", [
    (["--text-b", WIDE, "--query", "giraffe"], "“giraffe” is not a token both texts have"),
    (["--text-b", WIDE, "--keys", "animal"], "--keys 'animal': expected two tokens"),
    ([], "nothing to compare"),
])
def test_cli_bad_options_exit_2_with_a_message(capsys, extra, message):
    assert main(["compare", "--text", TIRED, *extra, "--json", "-"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert err[-1].startswith("error: ") and message in err[-1] and captured.out == ""
    assert not any("Traceback" in line for line in err)


# ------------------------------------------------------------------------------------------------ charts

@pytest.mark.parametrize("slide", [False, True])
def test_the_charts_are_valid_vega_lite(tired_wide, slide):
    import altair as alt

    from inspector.charts.base import HEAD_SELECTION
    from inspector.charts.compare import (
        head_difference_chart,
        head_heatmap_chart,
        movement_grid_chart,
        query_rows_chart,
        ranked_heads_chart,
    )

    pair = head_pair(tired_wide, 3, 1)
    charts = [movement_grid_chart(tired_wide, metric, selected=(3, 1), slide=slide)
              for metric in ("js", "shift", "entropy")]
    charts += [ranked_heads_chart(tired_wide, slide=slide), head_heatmap_chart(pair, "A", slide=slide),
               head_heatmap_chart(pair, "B", slide=slide), head_difference_chart(pair, slide=slide),
               query_rows_chart(pair, slide=slide)]
    with alt.utils.schemapi.debug_mode(True):  # the app turns validation off; check the specs here
        specs = [chart.to_dict(validate=True) for chart in charts]
    assert HEAD_SELECTION in json.dumps(specs[0])
    assert len(specs[4]["datasets"][next(iter(specs[4]["datasets"]))]) == 16 * 16


_TITLED_CHANNELS = ("x", "y", "color", "fill", "stroke", "shape", "row", "column", "facet", "tooltip")


def untitled_fields(spec, symbols: frozenset[str] = frozenset()) -> list[str]:
    """Fields a chart encodes without a title: Vega then shows the field's name (English, or a column id) as the
    axis, legend or tooltip title — which :func:`tests.chart_text.chart_strings` cannot see. ``symbols``: fields
    whose name is a symbol both languages read (d, n)."""
    found = []
    if isinstance(spec, dict):
        for key, inner in spec.items():
            if key in ("datasets", "data"):
                continue
            if key in _TITLED_CHANNELS:
                for channel in inner if isinstance(inner, list) else [inner]:
                    if (isinstance(channel, dict) and isinstance(channel.get("field"), str) and "title" not in channel
                            and channel["field"] not in symbols):
                        found.append(f"{key}: {channel['field']}")
            found += untitled_fields(inner, symbols)
    elif isinstance(spec, list):
        for inner in spec:
            found += untitled_fields(inner, symbols)
    return found


def _compare_charts(comparison, pair, lang: str, slide: bool) -> dict:
    from inspector.charts.compare import (
        GRID_METRICS,
        head_difference_chart,
        head_heatmap_chart,
        movement_grid_chart,
        query_rows_chart,
        ranked_heads_chart,
    )

    metrics = [m for m in GRID_METRICS if m != "shift" or comparison.key_shift is not None]
    charts = {f"grid {metric}": movement_grid_chart(comparison, metric, selected=(3, 1), slide=slide, lang=lang)
              for metric in metrics}
    charts |= {"ranked": ranked_heads_chart(comparison, slide=slide, lang=lang),
               "heatmap A": head_heatmap_chart(pair, "A", slide=slide, lang=lang),
               "heatmap B": head_heatmap_chart(pair, "B", slide=slide, lang=lang),
               "difference": head_difference_chart(pair, slide=slide, lang=lang),
               "query rows": query_rows_chart(pair, slide=slide, lang=lang)}
    return charts


@pytest.mark.parametrize("slide", [False, True])
def test_the_charts_in_chinese_show_no_english(tired_wide, slide):
    """Issue 17: every text a reader sees on a Compare chart in 简体中文 — titles, axes, legends, tooltips, the "other"
    bucket — is Chinese; tokens and the model's name are data. The same charts in English do show English words,
    so the check can fail."""
    from tests.chart_text import chart_strings, english_words

    pair = head_pair(tired_wide, 3, 1)
    allowed = {*tired_wide.tokens_a, *tired_wide.tokens_b, *pair.labels_a, *pair.labels_b, *pair.pair_labels,
               tired_wide.model_a, tired_wide.model_b}
    for lang in ("zh", "en"):
        for name, chart in _compare_charts(tired_wide, pair, lang, slide).items():
            spec = chart.to_dict()
            found = english_words(chart_strings(spec), allowed=allowed)
            if lang == "zh":
                assert found == [] and untitled_fields(spec) == [], (name, found, untitled_fields(spec))
            else:
                assert found, name


# ------------------------------------------------------------------------------------------------ share links

def test_compare_link_state_round_trips_and_malformed_values_fall_back():
    from inspector.output.share import (
        PLAIN_TEXT_MAX_CHARS,
        CompareState,
        ViewState,
        compare_share_url,
        decode_compare,
        encode_compare,
    )

    state = CompareState(text_b="The cat sat.", model_b="shipped:induction", query="10", keys=("2", "street"))
    assert decode_compare(encode_compare(state)) == (state, ())
    assert encode_compare(CompareState()) == {}  # the defaults travel as nothing
    long = CompareState(text_b="word " * PLAIN_TEXT_MAX_CHARS)
    assert "tzb" in encode_compare(long) and decode_compare(encode_compare(long))[0] == long
    url = compare_share_url("http://host/compare?x=1#f", ViewState(page="compare"), state)
    assert url.startswith("http://host/compare?v=1&page=compare&text_b=") and "#" not in url
    fallback, warnings = decode_compare({"model_b": "../etc", "query": "x" * 500, "keys": "a,b,c", "tzb": "%%%"})
    assert fallback == CompareState() and len(warnings) == 4
    assert decode_compare({"text_b": " "})[0] == CompareState() and "text_b" in decode_compare({"text_b": " "})[1][0]
    assert all(isinstance(w, str) for w in warnings)
    assert decode_compare({"model_b": "org/model"}, models=["default"])[0].model_b is None  # hosted allow-list
    assert decode_compare(["not", "a", "mapping"]) == (CompareState(), ())
