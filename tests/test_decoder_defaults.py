"""A decoder's defaults make sense (issue 44, item 10): the default attribution target is a word, not "↵↵"; an
integrated-gradients completeness gap is flagged past its threshold; Generate shows a chosen newline as ↵ and names
the end token apart from the text; its step axes tick whole steps; lesson 1's sharpest row and the quiz's query skip
the rows that see one key; the Inspect heatmap keeps square cells in its 1000 px column."""

from __future__ import annotations

import pickle
import re
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from inspector.analyses.attribution import COMPLETENESS_GAP, resolve_target
from inspector.analyses.attribution.methods import IntegratedGradientsRun
from inspector.analyses.attribution.targets import default_token
from inspector.analyses.generate import generate
from inspector.analyses.lessons import quiz_queries, seeing_rows, sharpest_pair
from inspector.base.i18n import t
from inspector.charts.base import WIDE_COLUMN_PX
from inspector.charts.generate import kv_cache_chart, sink_chart
from inspector.charts.inspect import attention_heatmap_chart
from inspector.core.token_codec import TokenCodec
from tests.test_charts import _view
from tests.test_generate import PROMPT, decoders  # noqa: F401  (the tiny causal LMs, a fixture)

# ------------------------------------------------------------------------------------ the default target


def _whitespace_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {"<eos>": 0, "<unk>": 1, "\n\n": 2, "the": 3, "cat": 4}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", eos_token="<eos>")


def test_the_default_target_passes_over_whitespace_and_special_predictions():
    tokenizer = _whitespace_tokenizer()
    loaded = SimpleNamespace(tokenizer=tokenizer, codec=TokenCodec(tokenizer))
    # Ranked: <eos> (special), "\n\n" (whitespace only), then "cat" — the word is explained.
    assert default_token(loaded, torch.tensor([5.0, -9.0, 4.0, 1.0, 3.0])) == 4
    assert default_token(loaded, torch.tensor([1.0, -9.0, 0.0, 1.0, 3.0])) == 4  # a word on top is kept
    # A word anywhere among the most likely candidates is preferred to whitespace, however far down.
    assert default_token(loaded, torch.tensor([5.0, -9.0, 4.0, -20.0, -30.0])) == 3


def test_a_skipped_top_prediction_is_stated_in_the_target(decoders, monkeypatch):  # noqa: F811
    import inspector.analyses.attribution.targets as targets

    loaded = decoders["llama"]
    plain = resolve_target(loaded, PROMPT)
    assert plain.skipped is None and "(the model's top prediction)" in plain.description
    # A model whose top prediction is a special token: the target names it and explains the next word instead.
    special = loaded.tokenizer.convert_tokens_to_ids("[SEP]")
    original = targets.forward

    def forward_preferring_sep(*args, **kwargs):
        result = original(*args, **kwargs)
        logits = result.outputs.logits.clone()
        logits[..., special] = 1e4
        result.outputs = SimpleNamespace(**{**vars(result.outputs), "logits": logits})
        return result

    monkeypatch.setattr(targets, "forward", forward_preferring_sep)
    target = resolve_target(loaded, PROMPT)
    assert target.skipped == "[SEP]" and target.token != "[SEP]"
    assert "its top prediction “[SEP]” is whitespace or a special token" in target.description
    # The page words it from target.skipped in Chinese (views/attribution.py runs as a page, so not imported here).
    assert "“[SEP]”是空白或特殊词元" in t("attribution.page.target_skipped", "zh", skipped=target.skipped)


# ------------------------------------------------------------------------------------ IG completeness


def test_an_integrated_gradients_gap_past_the_threshold_is_flagged():
    run = IntegratedGradientsRun(steps=16, internal_batch_size=8, delta=15.0, baseline_value=-2.0, baseline="pad")
    assert run.relative_gap(-5.0) == pytest.approx(5.0) and run.incomplete(-5.0)  # the gap of 15
    at_threshold = replace(run, delta=COMPLETENESS_GAP * 4.0)  # f(x) − f(baseline) = −4: exactly at the threshold
    assert not at_threshold.incomplete(-6.0) and replace(run, delta=COMPLETENESS_GAP * 4.0 + 1e-6).incomplete(-6.0)
    assert not replace(run, delta=0.0).incomplete(-2.0) and replace(run, delta=0.1).incomplete(-2.0)
    for lang, words in (("en", "incomplete"), ("zh", "不满足完备性")):
        sentence = t("attribution.page.ig_incomplete", lang, gap="500%", threshold="5%", delta="15", change="-3")
        assert words in sentence and "500%" in sentence and "5%" in sentence


# ------------------------------------------------------------------------------------ Generate


def test_generate_names_the_end_token_and_shows_a_newline_as_a_symbol(decoders, tmp_path):  # noqa: F811
    from streamlit.testing.v1 import AppTest

    result = generate(decoders["llama"], PROMPT, max_new_tokens=3, weights=[0], stop_at_eos=False)
    ended = replace(result, pieces=(result.pieces[0], "\n", "<|im_end|>"), finish="eos",
                    text=result.pieces[0] + "\n" + "<|im_end|>")
    assert ended.reading_text() == (result.pieces[0] + "\n", "<|im_end|>")
    assert result.reading_text() == (result.text, None)
    saved = tmp_path / "result.pkl"
    saved.write_bytes(pickle.dumps((ended, decoders["llama"].info)))

    def page(path):
        import pickle
        from pathlib import Path

        from views.generate_results import show_results

        generation, info = pickle.loads(Path(path).read_bytes())
        show_results(generation, ("request",), info, slide=False, first_token_s=None, lang="en")

    at = AppTest.from_function(page, args=(str(saved),), default_timeout=60)
    at.session_state["generate_step"] = 1
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    step_line = next(m.value for m in at.markdown if m.value.startswith("Step 1"))
    assert "“↵”" in step_line and "\n" not in step_line
    assert "<|im_end|>" not in at.code[0].value
    captions = [c.value.replace("\\", "") for c in at.caption]  # Markdown escapes in the caption
    assert any("<|im_end|>" in c and "end token" in c for c in captions), captions


def test_step_axes_tick_whole_steps(decoders):  # noqa: F811
    import vl_convert

    result = generate(decoders["llama"], PROMPT, max_new_tokens=3, weights=[0], stop_at_eos=False)
    for chart in (sink_chart(result, 0), kv_cache_chart(result)):
        spec = chart.to_dict()
        axis = next(layer["encoding"]["x"]["axis"] for layer in spec["layer"] if "x" in layer.get("encoding", {}))
        assert axis["tickMinStep"] == 1 and axis["format"] == "d"
        svg = vl_convert.vegalite_to_svg(spec)
        ticks = re.findall(r'<text[^>]*>([0-9.]+)</text>', svg)
        assert "0.5" not in ticks and "1.5" not in ticks and "1" in ticks


# ------------------------------------------------------------------------------------ lesson 1 and the quiz


def test_the_sharpest_row_skips_rows_that_see_one_key():
    n = 4
    visible = np.tril(np.ones((n, n), dtype=bool))  # causal: row 0 sees only itself
    weights = np.tril(np.full((n, n), 0.1))
    weights[0, 0] = 1.0  # by construction
    weights[2] = [0.1, 0.8, 0.1, 0.0]
    weights[1] = [0.5, 0.5, 0.0, 0.0]
    weights[3] = [0.25, 0.25, 0.25, 0.25]
    assert sharpest_pair(weights) == (0, 0)  # what lesson 1 said on a decoder: <bos> → itself
    assert sharpest_pair(weights, visible) == (2, 1)
    assert seeing_rows(visible).tolist() == [False, True, True, True]
    assert seeing_rows(np.ones((3, 3), dtype=bool)).all()
    assert seeing_rows(np.eye(1, dtype=bool)).tolist() == [True]  # one token: nothing else to ask about
    assert "causal" in t("lesson1.sharpest_seeing", "en") and "因果" in t("lesson1.sharpest_seeing", "zh")


def test_the_quiz_never_defaults_to_a_query_that_sees_only_itself():
    causal = np.tril(np.ones((4, 4), dtype=bool))
    no_specials = np.zeros(4, dtype=bool)  # SmolLM2 adds no <bos>: token 0 is content but sees only itself
    assert quiz_queries(no_specials, causal) == [1, 2, 3]
    assert quiz_queries(np.array([True, False, False, False]), causal) == [1, 2, 3]  # <bos> as Gemma adds it
    encoder = np.ones((4, 4), dtype=bool)
    assert quiz_queries(np.array([True, False, False, True]), encoder) == [1, 2]  # [CLS] … [SEP]
    assert quiz_queries(np.array([False]), np.ones((1, 1), dtype=bool)) == [0]  # one token: nothing else to ask


# ------------------------------------------------------------------------------------ Inspect heatmap at 1000 px


def test_the_screen_heatmap_keeps_square_cells_in_its_column():
    view = _view()  # 13 tokens: 28 px cells for an export
    export = attention_heatmap_chart(view).to_dict()
    screen = attention_heatmap_chart(view, column_px=WIDE_COLUMN_PX).to_dict()
    assert export["width"]["step"] == export["height"]["step"] == 28
    cell = screen["height"]["step"]
    assert screen["width"]["step"] == cell < 28
    # Streamlit fits the plot's width to the column (less the query labels and axis title): the rows follow.
    drawn = WIDE_COLUMN_PX - 110 - 20
    assert 0.8 <= (drawn / len(view.key_labels)) / cell <= 1.25
