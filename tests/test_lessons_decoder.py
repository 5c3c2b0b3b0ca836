"""The decoder-era lessons (issue 30) against independent computations on tiny random models: RoPE shift
invariance on a Llama-style model and not on BERT, the un-rotation against the projection, window zeros on a
Mistral-style model, KV bytes from config shapes, linear attention against its direct formula, the query–key
normalisation leaving attention unchanged, the sink edits against softmax over the kept keys, the projections
against the kept q/k/v; and the mends of lessons 3 and 7."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import inspector.analyses.lessons as D
from inspector.analyses.lessons import (
    BUSY_SPREAD,
    Answer,
    all_lessons,
    complexity_lesson,
    control_inputs,
    exponent_interval,
    has_repeated_span,
    timing_spread,
)
from inspector.analyses.lessons import geometry as G
from inspector.analyses.lessons.common import TIME_SHOWS_SQUARE_FROM
from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import LANGUAGES
from inspector.core.budget import weight_bytes
from inspector.core.forward import encode_text, forward
from inspector.core.loading import load_model
from inspector.core.model_folders import model_label
from kernels.reference import blocked_attention, reference_attention, visible_keys_mask
from tests.conftest import save_tiny_model

TEXT = "the animal did n't cross the street because it was too tired ."


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    """Tiny causal LMs with heads (next-token distributions): Llama (RoPE, 4 heads on 2 key/value heads) and Mistral
    (a window of 4), and the tiny BERT (absolute positions)."""
    root = tmp_path_factory.mktemp("decoder-lessons")
    return {arch: load_model(str(save_tiny_model(root / arch, arch, with_head=arch != "bert")))
            for arch in ("llama", "mistral", "bert")}


@pytest.fixture(scope="module")
def lessons(lm):
    return D.decoder_lessons(lm["bert"], lm["llama"], TEXT, 1, 2)


# ---------------------------------------------------------------------------------------------------- RoPE


def test_rope_shift_leaves_scores_unchanged_but_not_on_bert(lessons):
    rope = lessons.rope
    assert rope.rope.position == "rope" and rope.rope.shift > 0
    assert rope.rope.relative_score_change < 1e-5 and rope.rope.value_change < 1e-5
    assert rope.absolute is not None and rope.absolute.position == "absolute"
    assert rope.absolute.relative_score_change > 1e-2 and rope.absolute.value_change > 1e-2
    # The pair's score depends on the offset only: the same curve at two absolute positions.
    assert rope.offset_gap < 1e-9 and np.ptp(rope.offset_scores[0]) > 0
    assert rope.answer.key == "lesson10.answer.contrast"
    assert rope.answer.terms == {"rounding": "lessons.rope.rounding", "conclusion": "lesson10.conclusion.shown"}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_rope_concludes_offset_only_when_the_shift_changes_scores_by_rounding(lang):
    """D2 wrote "— rounding" and "So RoPE puts position into the scores as the offset … only" whatever the shift did
    (issue 44 item 4): both now follow a stated share of the largest score, just below and just above it."""
    from inspector.analyses.lessons.common import ROUNDING_SHARE, rounding_term
    from inspector.base.i18n import t

    assert rounding_term(ROUNDING_SHARE) == "lessons.rope.rounding"
    assert rounding_term(ROUNDING_SHARE * (1 + 1e-9)) == "lessons.rope.not_rounding"
    assert {"en": "not shown", "zh": "未能显示"}[lang] in t("lesson10.conclusion.not_shown", lang)
    values = {"model": "m", "shift": "100", "rope_change": "0.3", "rope_rel": "2.0e-02", "rope_v": "0", "layer": "5",
              "head": "1", "gap": "0", "p1": "64", "p2": "96", "span": "64", "rounding_limit": "1e-03",
              "thetas": "θ = 10,000", "slowest": "58,470"}
    text = D.Answer("lesson10.answer", values, {"rounding": "lessons.rope.not_rounding",
                                                "conclusion": "lesson10.conclusion.not_shown"}).text(lang)
    assert "1e-03" in text and t("lessons.rope.not_rounding", lang) in text
    assert ("as the offset between query and key only" not in text) and ("整段文本一起平移，得分不变" not in text)


def test_rope_unrotation_recovers_the_projection(lm):
    """rotate(q, −position) undoes the model's rotary embedding: at layer 0 it equals q_proj(LN(x)), computed here
    from the model's own modules without the attention function."""
    loaded = lm["llama"]
    encoded = encode_text(loaded, TEXT)
    result = forward(loaded, encoded.inputs, keep=("query",), keep_layers=frozenset({0}), stop_after=0)
    rotated = result.records[0].tensors["query"][0].double().numpy()  # (heads, n, d)
    freq = D.rope_frequencies(loaded)["all"]
    n = rotated.shape[1]
    plain = D.rotate(rotated, -np.arange(n), freq)
    model = loaded.model.model
    with torch.no_grad():
        x = model.layers[0].input_layernorm(model.embed_tokens(encoded.inputs["input_ids"]))
        q = model.layers[0].self_attn.q_proj(x)[0].double().numpy()  # (n, heads·d)
    d = loaded.info.head_dim
    expected = q.reshape(n, -1, d).transpose(1, 0, 2)
    np.testing.assert_allclose(plain, expected, atol=1e-5)
    assert D.rope_frequencies(lm["bert"]) == {}
    with pytest.raises(InvalidRequestError, match="rotary"):
        D.rope_lesson(lm["bert"], TEXT, 0, 0)


# ---------------------------------------------------------------------------------------------------- causal


def test_causal_lesson_masks_and_tie(lessons):
    causal = lessons.causal
    n = len(causal.decoder_tokens)
    np.testing.assert_array_equal(causal.decoder_visible, np.tril(np.ones((n, n), bool)))
    assert causal.encoder_visible.all()
    assert (causal.asymmetry > 0.1).all() and causal.tied_asymmetry.max() < 1e-12
    assert causal.kl_head >= 0 and causal.kl_layer >= 0
    assert causal.answer.values["enc_share"] == "100%"


# ---------------------------------------------------------------------------------------------- grouped-query


def test_kv_bytes_come_from_config_shapes(lessons):
    gqa = lessons.gqa
    np.testing.assert_array_equal(gqa.kv_head_of, [0, 0, 1, 1])  # 4 query heads on 2 key/value heads
    own = gqa.rows[0]
    assert own.bytes_per_token == 2 * 2 * 2 * 8 * 2  # K and V × layers × kv heads × head_dim × 2 bytes
    assert own.bytes_one_kv_per_query == 2 * 2 * 4 * 8 * 2 and own.saving == 2
    by_name = {row.model: row for row in gqa.rows}
    smol, gemma = by_name["bundled:smollm2-135m"], by_name["bundled:gemma-3-270m"]
    # Named by spec, so a page words them in its language (issue 44 item 9: D3's table said "SmolLM2-135M-Instruct
    # (bundled)" on a 简体中文 page, next to "Gemma 3 270M（内置）").
    assert model_label(smol.model, "zh") == "SmolLM2-135M-Instruct（内置）"
    assert model_label(gemma.model, "zh") == "Gemma 3 270M（内置）"
    assert smol.bytes_per_token == 2 * 30 * 3 * 64 * 2 and smol.saving == 3
    assert gemma.bytes_per_token == 2 * 18 * 1 * 256 * 2 and gemma.saving == 4
    # JS between heads: symmetric, zero on the diagonal, both kinds of pair present.
    np.testing.assert_allclose(gqa.js, gqa.js.T)
    assert np.all(np.diag(gqa.js) == 0) and math.isfinite(gqa.shared_js) and math.isfinite(gqa.other_js)


# ------------------------------------------------------------------------------------------------------ sinks


def test_keep_keys_edit_is_softmax_over_the_kept_keys():
    generator = torch.Generator().manual_seed(0)
    scores = torch.randn(1, 2, 7, 7, generator=generator, dtype=torch.float64)
    causal = torch.tril(torch.ones(7, 7, dtype=torch.bool))
    weights = torch.softmax(scores.masked_fill(~causal, -math.inf), dim=-1)
    keep = D.streaming_keep(7, 3, 1)
    edited = D.keep_keys_edit(keep)(weights, causal)
    direct = torch.softmax(scores.masked_fill(~keep, -math.inf), dim=-1)
    torch.testing.assert_close(edited, direct)
    assert keep[6].tolist() == [True, False, False, False, True, True, True]  # the sink and the 3 most recent


def test_sinks_lesson_measures_mass_and_removal(lm):
    sinks = D.sinks_lesson(lm["llama"], TEXT, 1, stream=False)
    encoded = encode_text(lm["llama"], TEXT)
    result = forward(lm["llama"], encoded.inputs, weights_layers="all")
    by_hand = [r.weights[0, :, 1:, 0].mean().item() for r in result.records]  # row 0 can only see token 0
    np.testing.assert_allclose(sinks.sink_mass, by_hand, rtol=1e-5)
    assert sinks.key_share.sum() == pytest.approx(1.0)
    assert sinks.removal_change_layer > 0 and sinks.removal_change_all > 0
    assert ((0 <= sinks.norm_share) & (sinks.norm_share <= 1)).all()


def test_streaming_perplexity_full_cache_equals_plain_perplexity(lm):
    loaded = lm["llama"]
    tokens, window, (window_ppl, sink_ppl, full_ppl) = D.streaming_perplexity(loaded, tokens=40, window=8, sinks=2)
    assert (tokens, window) == (40, 8)
    encoded = encode_text(loaded, D.long_text(), truncate=True)
    inputs = {name: tensor[:, :40] for name, tensor in encoded.inputs.items()}
    with torch.no_grad():
        logits = loaded.model(**inputs).logits[0, :-1]
    nll = torch.nn.functional.cross_entropy(logits, inputs["input_ids"][0, 1:], reduction="none")[10:]
    assert full_ppl == pytest.approx(float(torch.exp(nll.mean())), rel=1e-4)
    assert min(window_ppl, sink_ppl) > 0


# ---------------------------------------------------------------------------------------------------- windows


def test_window_weights_beyond_the_window_are_exactly_zero(lm):
    lesson = G.window_lesson(lm["mistral"], text=" ".join(["the cat sat on mat and dog ran fast"] * 2),
                             lengths=(16, 32), repeats=2)
    assert lesson.window == 4 and lesson.global_layers == () and lesson.n > 4
    assert (lesson.beyond_local == 0).all()
    assert lesson.local_bytes[1] == 4 * 32 * 4 * 4 and lesson.global_bytes[1] == 4 * 32 * 32 * 4
    assert lesson.reach == 2 * 3
    with pytest.raises(InvalidRequestError, match="sliding-window"):
        G.window_lesson(lm["llama"])


@pytest.mark.parametrize("window", [None, 1, 3, 7, 40])
def test_banded_attention_is_causal_windowed_attention_reading_only_the_keys_it_needs(window):
    """The timed windowed and global layers: the oracle's output, blocks that cross the window's edge included."""
    from kernels.reference import reference_attention

    generator = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, 3, 37, 8, generator=generator, dtype=torch.float64) for _ in range(3))
    expected, _ = reference_attention(q, k, v, causal=True, scale=0.3, window=window)
    assert torch.allclose(G.banded_attention(q, k, v, scale=0.3, window=window, block=5), expected.double(),
                          atol=1e-5)


# ------------------------------------------------------------------------------------------------- linear attention


@pytest.mark.parametrize("causal", [False, True])
def test_linear_attention_equals_its_direct_formula(causal):
    generator = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 11, 5, generator=generator, dtype=torch.float64) for _ in range(3))
    fq, fk = torch.nn.functional.elu(q) + 1, torch.nn.functional.elu(k) + 1
    kernel = fq @ fk.transpose(-1, -2)
    if causal:
        kernel = torch.tril(kernel)
    direct = (kernel / kernel.sum(-1, keepdim=True)) @ v
    torch.testing.assert_close(G.linear_attention(q, k, v, causal=causal), direct)
    visible = visible_keys_mask(11, 11, causal=causal)[0, 0]
    torch.testing.assert_close(G.linear_weights(q, k, visible) @ v, direct)


def test_linear_lesson_rows_and_output(lm):
    lesson = G.linear_lesson(lm["llama"], TEXT, 1, 1, lengths=(16, 32), repeats=2)
    assert lesson.answer.terms["blur"] == G.blur_term(lesson.entropy_softmax, lesson.entropy_linear)
    assert "0.05" in lesson.answer.text("en") and "0.05" in lesson.answer.text("zh")
    np.testing.assert_allclose(lesson.linear.sum(-1), 1.0, atol=1e-9)
    assert np.triu(lesson.linear, 1).max() == 0  # causal: no weight on the future
    assert (lesson.js >= 0).all() and lesson.js[0] == pytest.approx(0.0, abs=1e-12)  # row 0 has one key
    assert lesson.output_change >= 0 and lesson.answer.key in ("lesson14.answer", "lesson14.answer.busy")


def test_linear_lesson_concludes_lost_sharpness_only_when_the_head_blurs(lm):
    """Issue 44, item 4 (audit of the Lessons page's sentences): D6 ended "So linear attention gives up the sharpness
    of softmax routing" after any entropy change, "not shown to be blurrier" included. Its last sentence now follows
    the blur verdict, at the verdict's own threshold."""
    lesson = G.linear_lesson(lm["llama"], TEXT, 1, 1, lengths=(16, 32), repeats=2)
    blurred = lesson.answer.terms["blur"] == "lessons.linear.blurrier"
    assert lesson.answer.terms["conclusion"] == "lesson14.conclusion." + ("blurrier" if blurred else "not_blurrier")
    # Both endings, written from this lesson's numbers, in every language.
    for blur, ending in (("lessons.linear.blurrier", "blurrier"), ("lessons.linear.not_blurrier", "not_blurrier")):
        for lang in LANGUAGES:
            answer = Answer(lesson.answer.key, lesson.answer.values,
                            {**lesson.answer.terms, "blur": blur, "conclusion": f"lesson14.conclusion.{ending}"})
            text = answer.text(lang)
            gives_up = "So linear attention gives up" in text if lang == "en" else "所以线性注意力放弃的是" in text
            assert gives_up == (ending == "blurrier"), text
    # The verdict's boundary: BLUR_MARGIN nats higher is blurrier, a hair less is not.
    assert G.blur_term(1.0, 1.0 + G.BLUR_MARGIN) == "lessons.linear.blurrier"
    assert G.blur_term(1.0, 1.0 + G.BLUR_MARGIN - 1e-9) == "lessons.linear.not_blurrier"


def test_every_timing_answer_states_the_spread_past_which_the_machine_is_too_busy(lm):
    """Issue 44, item 4 (audit): lessons 7, D5 and D6 said "the machine was too busy to trust the timings" — and
    trusted them otherwise — without the threshold (BUSY_SPREAD). Every variant of their answers, busy or quiet,
    states it, in every language."""
    busy = f"{100 * BUSY_SPREAD:.0f}%"
    complexity = complexity_lesson((16, 32), heads=2, d_k=8, device="cpu", repeats=2, warmups=1)
    window = G.window_lesson(lm["mistral"], text=" ".join(["the cat sat on mat and dog ran fast"] * 2),
                             lengths=(16, 32), repeats=2)
    linear = G.linear_lesson(lm["llama"], TEXT, 1, 1, lengths=(16, 32), repeats=2)
    variants = ((complexity.answer, ("lesson7.answer", "lesson7.answer.busy")),
                (window.answer, ("lesson13.answer", "lesson13.answer.busy", "lesson13.answer.local",
                                 "lesson13.answer.local.busy")),
                (linear.answer, ("lesson14.answer", "lesson14.answer.busy")))
    for answer, keys in variants:
        assert answer.values["busy"] == busy
        for key in keys:
            for lang in LANGUAGES:
                text = Answer(key, answer.values, answer.terms, lists=answer.lists).text(lang)
                assert busy in text, (key, lang, text)
                if key.endswith(".busy"):
                    assert (f"more than {busy}" in text) if lang == "en" else (f"超过 {busy}" in text), text


# -------------------------------------------------------------------------------------------- query–key space


def test_qk_normalisation_leaves_attention_unchanged(lessons):
    generator = np.random.default_rng(0)
    q, k = generator.normal(size=(9, 6)) * 3, generator.normal(size=(9, 6)) + 2
    q2, k2, _, _ = G.normalise_qk(q, k)
    visible = np.tril(np.ones((9, 9), bool))
    np.testing.assert_allclose(G._softmax_rows(q2 @ k2.T, visible), G._softmax_rows(q @ k.T, visible), atol=1e-12)
    assert np.linalg.norm(q2, axis=-1).mean() == pytest.approx(np.linalg.norm(k2, axis=-1).mean())
    space = lessons.qk_space
    assert space.unchanged < 1e-10 and -1 <= space.spearman <= 1 and 0 < space.explained <= 1
    assert space.norm_gap.shape == (2,) and (space.norm_gap > 0).all()


# ------------------------------------------------------------------------------------------------ projections


def test_projections_reproduce_the_kept_values(lm, lessons):
    """x W_V^h at layer 0 equals the value the attention function received (V is not rotated)."""
    loaded = lm["llama"]
    matrices = D.head_projections(loaded, 0, 3)
    encoded = encode_text(loaded, TEXT)
    result = forward(loaded, encoded.inputs, keep=("value",), keep_layers=frozenset({0}), stop_after=0)
    model = loaded.model.model
    with torch.no_grad():
        x = model.layers[0].input_layernorm(model.embed_tokens(encoded.inputs["input_ids"]))[0].double().numpy()
    np.testing.assert_allclose(x @ matrices["W_V"], result.records[0].tensors["value"][0, 1].double().numpy(),
                               atol=1e-5)  # head 3 reads key/value head 1
    projections = lessons.projections
    assert projections.shapes == {"W_Q": (32, 8), "W_K": (32, 8), "W_V": (32, 8), "W_O": (8, 32), "W_QK": (32, 32)}
    sigma = projections.singular["W_QK"]
    assert (sigma[8:] < sigma[0] * 1e-6).all()  # rank ≤ d_k
    assert projections.answer.values["qk_rank"] == "8"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_decoder_answer_is_written_in_both_languages(lessons, lang):
    for lesson in (lessons.causal, lessons.rope, lessons.gqa, lessons.sinks, lessons.qk_space, lessons.projections):
        text = lesson.answer.text(lang)
        assert "{" not in text and len(text) > 80
    assert lessons.rope.rope.shift and str(lessons.rope.rope.shift) in lessons.rope.answer.text(lang)
    json_text = D.decoder_lessons_json(lessons, lang)
    assert json_text["causal"]["answer"] == lessons.causal.answer.text(lang)


def test_decoder_lessons_refuse_an_encoder(lm):
    with pytest.raises(InvalidRequestError, match="causal language model"):
        D.decoder_lessons(lm["bert"], lm["bert"], TEXT, 0, 0)


# ------------------------------------------------------------------------------------------- mends: lessons 7, 3


def test_exponent_interval_covers_the_true_exponent_and_widens_with_noise():
    lengths = np.array([128, 256, 512, 1024])
    rng = np.random.default_rng(0)
    quiet = (lengths[:, None] / 128.0) ** 2 * (1 + 0.01 * rng.standard_normal((4, 7)))
    exponent, low, high = exponent_interval(lengths, quiet)
    assert exponent == pytest.approx(2.0, abs=0.02) and low <= 2.0 <= high and high - low < 0.05
    noisy = (lengths[:, None] / 128.0) ** 2 * np.exp(0.5 * rng.standard_normal((4, 7)))
    _, noisy_low, noisy_high = exponent_interval(lengths, noisy)
    assert noisy_high - noisy_low > 5 * (high - low)
    assert timing_spread(quiet) < BUSY_SPREAD < timing_spread(noisy)


def test_complexity_lesson_reports_medians_and_an_interval():
    lesson = complexity_lesson((16, 48), heads=2, d_k=8, device="cpu", repeats=3)
    assert lesson.materialised_runs_ms.shape == (2, 3)
    np.testing.assert_allclose(lesson.materialised_ms, np.median(lesson.materialised_runs_ms, axis=1))
    assert lesson.exponent_low <= lesson.time_exponent <= lesson.exponent_high or not lesson.busy
    assert lesson.answer.key in (("lesson7.answer.busy",) if lesson.busy else ("lesson7.answer", "lesson7.answer.flat"))
    assert lesson.answer.values["repeats"] == "3"


def test_control_text_has_no_repeats_and_keeps_the_specials(tiny_bert):
    encoded = encode_text(tiny_bert, "the cat sat on the mat the cat sat on the mat")
    ids = encoded.inputs["input_ids"][0].tolist()
    assert has_repeated_span(ids, encoded.special.tolist())
    control = control_inputs(tiny_bert, encoded.inputs, encoded.special)["input_ids"][0].tolist()
    assert len(control) == len(ids) and control[0] == ids[0] and control[-1] == ids[-1]
    assert len(set(control[1:-1])) == len(control) - 2 and not has_repeated_span(control, encoded.special.tolist())


def test_induction_heads_on_a_repeated_text_are_not_called_positional():
    """The shipped induction model (assets/models/induction) on twelve words said twice: its layer-1 heads put ~0.9
    of their weight on offset +11 — the token after the earlier copy — which the old lesson called positional
    (issue 30). On the control text without repeats that offset gets ~0.1: induction, not position. Its layer-0
    previous-token head keeps offset +1 on the control and stays positional."""
    loaded = load_model("shipped:induction")
    words = "table river window garden paper stone music yellow seven market bridge cloud".split()
    text = " ".join(words + words)
    induction = all_lessons(loaded, text, 1, 0).position
    assert (induction.best_offset == 11).all() and (induction.best_weight > 0.8).all()
    assert induction.positional_heads == () and induction.repeat_heads == (0, 1, 2, 3)
    assert (induction.control_weight < 0.3).all() and induction.repeated
    assert induction.control_answer.key == "lesson3.control.induction"
    assert "induction" in induction.control_answer.text("en") and "归纳头" in induction.control_answer.text("zh")
    assert induction.answer.key == "lesson3.answer.rope.none"
    previous = all_lessons(loaded, text, 0, 0).position
    assert previous.positional_heads == (1,) and previous.best_offset[1] == 1 and previous.control_weight[1] > 0.5
    assert previous.control_answer.key == "lesson3.control.holds"


def test_cli_writes_the_decoder_lessons(lm, tmp_path):
    import json

    from inspector.cli import main

    folder = tmp_path / "llama-lm"
    save_tiny_model(folder, "llama", with_head=True)
    bert = tmp_path / "bert"
    save_tiny_model(bert, "bert")
    out = tmp_path / "lessons.json"
    assert main(["lessons", "--model", str(bert), "--decoder", str(folder), "--decoder-layer", "1",
                 "--decoder-head", "2", "--text", TEXT, "--lang", "zh", "--lengths", "none", "--json", str(out)]) == 0
    written = json.loads(out.read_text(encoding="utf-8"))
    payload, lessons = written["decoder"], written["lessons"]
    assert payload["layer"] == 1 and payload["head"] == 2 and payload["model"]["num_kv_heads"] == 2
    rope = lessons["rope"]["result"]["rope"]
    assert rope["score_change"] < 1e-5 * rope["score_max"] and "奈特" in lessons["causal"]["result"]["answer"]
    gqa = lessons["gqa"]["result"]
    assert gqa["kv_head_of"] == [0, 0, 1, 1] and "键/值头" in gqa["answer"]
    assert written["skipped"] == {"complexity": "--lengths none", "window": f"does not apply to {folder.name}"}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_rope_answer_names_each_kind_of_layer_in_a_sentence(lang):
    """Issue 44 item 9: Gemma's two kinds of layer read "每 全局：5,640,334，局部（窗口）：58,470 个词元转一圈" — a
    named list dropped inside a sentence built around one number. The list now follows the words it answers."""
    values = {"model": "m", "shift": "100", "rope_change": "1e-6", "rope_rel": "1e-7", "rope_v": "0", "layer": "5",
              "head": "1", "gap": "0", "p1": "64", "p2": "96", "span": "64", "rounding_limit": "1e-03"}
    named = {"thetas": (("chart.decoder.global", "θ = 1,000,000"), ("chart.decoder.local", "θ = 10,000")),
             "slowest": (("chart.decoder.global", "5,640,334"), ("chart.decoder.local", "58,470"))}
    terms = {"rounding": "lessons.rope.rounding", "conclusion": "lesson10.conclusion.shown"}
    text = D.Answer("lesson10.answer", values, terms, named=named).text(lang)
    expected = {"en": "Tokens per full turn of the slowest pair — global: 5,640,334, local (window): 58,470.",
                "zh": "最慢的一对坐标转一整圈所需的词元数——全局：5,640,334，局部（窗口）：58,470。"}[lang]
    assert expected in text and "每 全局" not in text and "turns once in global" not in text


def test_complexity_lesson_counts_bytes_and_flops_that_grow_exactly_as_n_squared():
    """The measures no busy machine disturbs (issue 44, item 5): the bytes of the n×n weights the materialised path
    allocated — the budget's one formula — and the FLOPs of QKᵀ and AV, 2·n²·d each per head; both fit n^2."""
    lengths, heads, d_k = (24, 80, 200), 3, 8
    lesson = complexity_lesson(lengths, heads=heads, d_k=d_k, device="cpu", repeats=2, warmups=1)
    assert list(lesson.weight_bytes) == [weight_bytes(heads, n) for n in lengths]
    assert list(lesson.weight_bytes) == [heads * n * n * 4 for n in lengths]
    assert list(lesson.flops) == [heads * (2 * n * n * d_k + 2 * n * n * d_k) for n in lengths]
    assert lesson.bytes_exponent == pytest.approx(2.0, abs=1e-9)
    assert lesson.flops_exponent == pytest.approx(2.0, abs=1e-9)
    assert lesson.answers[0].key == "lesson7.counted" and lesson.answers[0].values["bytes_exponent"] == "2.00"
    assert lesson.materialised_runs_ms.shape == (3, 2)  # the warm-up round is not among the runs


def test_complexity_lesson_max_delta_is_blocked_against_materialised_on_its_own_inputs():
    lengths, heads, d_k = (40, 150), 2, 16
    lesson = complexity_lesson(lengths, heads=heads, d_k=d_k, device="cpu", repeats=1, warmups=0)
    generator = torch.Generator().manual_seed(0)  # the lesson's inputs: seed 0, (q, k, v) per length in order
    expected = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the lesson measures
    try:
        for n in lengths:
            q, k, v = (torch.randn(1, heads, n, d_k, generator=generator) for _ in range(3))
            reference, _ = reference_attention(q, k, v, causal=False, scale=d_k ** -0.5)
            blocked, _ = blocked_attention(q, k, v, causal=False, scale=d_k ** -0.5, stats=("lse",), block_size=64)
            expected.append(float((blocked - reference).abs().max()))
    finally:
        torch.set_num_threads(threads)
    np.testing.assert_allclose(lesson.max_abs_delta, expected, rtol=1e-6)
    assert 0 < lesson.max_abs_delta[1] < 1e-5  # 150 queries in three blocks of 64: equal up to rounding
    assert lesson.answers[0].values["delta"] == f"{expected[-1]:.1e}"


def test_complexity_answer_says_when_the_clock_shows_nothing():
    """A busy run says its timings show nothing about the growth; a quiet one whose exponent stays flat says the clock
    did not show n² and points at the counted measures — neither claims O(n²) from the times."""
    lesson = complexity_lesson((16, 32), heads=2, d_k=8, device="cpu", repeats=3, warmups=1)
    expected = ("lesson7.answer.busy" if lesson.busy else
                "lesson7.answer" if lesson.time_exponent >= TIME_SHOWS_SQUARE_FROM else "lesson7.answer.flat")
    assert lesson.answer.key == expected
    for lang in LANGUAGES:
        busy = Answer("lesson7.answer.busy", lesson.answer.values, lesson.answer.terms).text(lang)
        flat = Answer("lesson7.answer.flat", lesson.answer.values, lesson.answer.terms).text(lang)
        assert ("too busy to trust" in busy and "show nothing about the growth" in busy) if lang == "en" else \
            ("不可信" in busy and "不能说明增长规律" in busy)
        assert ("did not show the square growth" in flat) if lang == "en" else ("没有显示出平方增长" in flat)


def test_nearness_is_read_only_from_a_strong_negative_correlation():
    """D7 (issue 44 item 4): ρ = −0.22 was read as “closer means a higher score”. The picture may be read that way
    only when ρ ≤ −QK_MIN_RHO and the one-sided test gives p < VERDICT_ALPHA; at the boundary, the same data judged
    with a threshold just below and just above its own |ρ|."""
    from inspector.analyses.lessons.common import QK_MIN_RHO, VERDICT_ALPHA

    generator = np.random.default_rng(0)
    distance = generator.random(400)
    for noise, readable in ((0.05, True), (2.0, False)):
        dot = -distance + noise * generator.normal(size=400)
        rho, p, shown = G.nearness_verdict(distance, dot)
        assert shown == readable and (rho <= -QK_MIN_RHO) == readable
        assert G.nearness_verdict(distance, dot, min_rho=abs(rho) - 1e-3)[2] == (p < VERDICT_ALPHA)
        assert not G.nearness_verdict(distance, dot, min_rho=abs(rho) + 1e-3)[2]
    weak = -distance + 4.0 * generator.normal(size=400)  # about ρ = −0.2: significant with 400 pairs, still weak
    rho, p, shown = G.nearness_verdict(distance, weak)
    assert -QK_MIN_RHO < rho < 0 and p < VERDICT_ALPHA and not shown
    assert not G.nearness_verdict(distance, distance)[2]  # farther means higher: never readable as nearer


@pytest.mark.parametrize("lang", LANGUAGES)
def test_qk_space_answer_states_its_threshold(lessons, lang):
    space = lessons.qk_space
    text = space.answer.text(lang)
    assert "−0.50" in text and "p = " in text and "0.05" in text
    weak = space.answer.key == "lesson15.answer.weak"
    assert weak == (("not shown" in text) if lang == "en" else ("未能显示" in text))


def test_lesson1_names_byte_level_tokens_as_the_pages_show_them():
    """Issue 44 walkthrough (SmolLM2, 简体中文): lesson 1's answer named its sharpest row's tokens raw, "Ġthe", where
    every chart and table reads "␣the"."""
    from inspector.analyses.lessons.common import _run
    from inspector.analyses.lessons.encoder import definition_lesson
    from inspector.base.tokens import readable_tokens

    run = _run(load_model("bundled:smollm2-135m"), "The animal didn't cross the street because it was too tired.",
               0, 0, "torch")
    lesson = definition_lesson(run)
    shown = readable_tokens(run.tokens)
    assert any(token.startswith("Ġ") for token in run.tokens)  # byte-level BPE: the case that was raw
    assert lesson.answer.values["query"] in shown and lesson.answer.values["key"] in shown
    for lang in LANGUAGES:
        assert "Ġ" not in lesson.answer.text(lang)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_d2_names_each_position_kind_in_words(lm, lang):
    """Issue 44 walkthrough: D2's table showed position_kind's raw "rope" / "absolute" on a 简体中文 page. Every kind
    position_kind returns has its words in the catalogue, in each language."""
    from inspector.analyses.lessons.common import position_kind
    from inspector.base.i18n import t

    assert {position_kind(loaded) for loaded in lm.values()} == {"rope", "absolute"}
    words = {kind: t(f"lesson10.position.{kind}", lang) for kind in ("rope", "absolute", "relative", "unknown")}
    assert len(set(words.values())) == 4 and all(not word.startswith("lesson10.") for word in words.values())
    if lang == "zh":
        assert words["absolute"] == "学到的绝对位置" and words["rope"] == "RoPE（旋转）"
