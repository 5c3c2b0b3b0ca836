"""inspector/analyses/lessons.py: each lesson's computation on hand-made tensors or tiny random models, and answers that
cite the numbers they measured (in every language of the catalogue)."""

from __future__ import annotations

import json
import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from inspector.analyses.lessons import (
    COLLAPSED_BELOW,
    DIFFUSE_ABOVE,
    POSITIONAL_HEAD_MIN_WEIGHT,
    Answer,
    all_lessons,
    asymmetry_index,
    attention_target,
    complexity_lesson,
    diagonal_share,
    effective_rank,
    leave_one_out,
    lessons_json,
    mean_weight_by_offset,
    position_kind,
    scaling_sweep,
    softmax_jacobian,
    softmax_jacobian_norm,
)
from inspector.analyses.lessons.capacity import (
    BOTTLENECK_DIMS,
    BOTTLENECK_KEYS,
    KEEPS_PATTERN_BELOW,
    bottleneck_sweep,
    head_dim_lesson,
    position_codes_lesson,
    rank_cut_kl,
    sinusoidal_codes,
)
from inspector.analyses.lessons.common import VERDICT_ALPHA, _f, _pct, rank_trend
from inspector.analyses.lessons.encoder import DEPTH_ANSWERS, depth_trend
from inspector.analyses.lessons.registry import LessonContext, compute_part
from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import LANGUAGES
from inspector.core.loading import load_model
from kernels.reference import visible_keys_mask
from tests.tolerances import close

# 14 tokens with [CLS]/[SEP]: more than the tiny models' d_k = 8, so rank(S) ≤ d_k is a real bound.
TEXT = "the animal did n't cross the street because it was too tired ."


@pytest.fixture(scope="module")
def lessons(tiny_models):
    return {arch: all_lessons(loaded, TEXT, 1, 2, importance=arch == "bert") for arch, loaded in tiny_models.items()}


@pytest.fixture(scope="module")
def previous_token_lessons(previous_token_bert_dir):
    """Lessons for layer 0, head 0 of the tiny BERT whose head 0 attends to the previous token by construction
    (tests/conftest.py: save_previous_token_bert) — positional and collapsed, the cases random weights lack."""
    return all_lessons(load_model(str(previous_token_bert_dir)), TEXT, 0, 0)


def test_asymmetry_index_is_zero_for_tied_projections_and_positive_otherwise():
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 11, 8, generator=generator, dtype=torch.float64).numpy()
    assert asymmetry_index(q, q) == pytest.approx(0.0, abs=1e-12)
    assert asymmetry_index(q, k) > 0.5
    # An antisymmetric S reaches the maximum, ‖2S‖/‖S‖ = 2: S = qkᵀ − kqᵀ written as [q, k]·[k, −q]ᵀ.
    assert asymmetry_index(np.hstack([q, k]), np.hstack([k, -q])) == pytest.approx(2.0, rel=1e-9)


def test_asymmetry_is_zero_when_the_model_has_w_q_equal_w_k(tiny_model_dirs):
    loaded = load_model(str(tiny_model_dirs["bert"]))  # this test's own copy: it may change its weights
    attention = loaded.model.encoder.layer[1].attention.self
    with torch.no_grad():
        attention.key.weight.copy_(attention.query.weight)
        attention.key.bias.copy_(attention.query.bias)
    result = all_lessons(loaded, TEXT, 1, 0)
    np.testing.assert_allclose(result.why_qk.asymmetry, 0.0, atol=1e-6)
    assert (all_lessons(loaded, TEXT, 0, 0).why_qk.asymmetry > 0.1).all()


def test_diagonal_share_counts_rows_that_look_at_themselves():
    scores = np.array([[5.0, 1, 0], [0, 1, 3], [0, 0, 9]])
    visible = np.ones((3, 3), bool)
    assert diagonal_share(scores, visible) == pytest.approx(2 / 3)
    causal = np.tril(visible)
    assert diagonal_share(scores, causal) == pytest.approx(1.0)  # row 0 sees one key and is not counted


def test_a_number_that_rounds_to_zero_prints_without_a_minus_sign():
    """Issue 44: Lesson 4 printed a saturated entropy of about −1e-9 nats as "-0.00"; D7 printed ρ = "-0.03" beside
    its threshold "−0.50" (a hyphen against a minus sign)."""
    assert _f(-1e-9) == "0.00" and _f(-0.004) == "0.00" and _f(-0.0) == "0.00" and _f(-4e-5, 4) == "0.0000"
    # a negative number that does not round to zero keeps its sign, the minus sign U+2212
    assert _f(-0.005001) == "\u22120.01" and _f(-0.5) == "\u22120.50"
    assert _pct(-0.004) == "0%" and _pct(-0.006) == "\u22121%"


def test_variance_sweep_grows_like_d_with_slope_one():
    sweep = scaling_sweep()
    assert sweep.slope == pytest.approx(1.0, abs=0.1)
    assert sweep.entropy.shape == (3, len(sweep.dims))
    # 1/d tends to uniform, no scaling to one-hot; 1/√d stays in between at every d.
    assert sweep.entropy[2, -1] == pytest.approx(math.log(sweep.keys), abs=0.05)
    assert sweep.max_weight[0, -1] > 0.8 and sweep.jacobian_norm[0, -1] < sweep.jacobian_norm[1, -1]
    assert np.ptp(sweep.entropy[1]) < 0.3
    assert scaling_sweep(seed=0).slope == sweep.slope  # seeded


def test_softmax_jacobian_formula_equals_autograd():
    scores = torch.randn(7, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    by_autograd = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, dim=-1), scores)
    close(softmax_jacobian(torch.softmax(scores, dim=-1)), by_autograd, "weights")
    # The sweep's closed form of its norm equals the norm of the matrix.
    p = torch.softmax(torch.randn(5, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(4)), dim=-1)
    close(softmax_jacobian_norm(p), torch.linalg.matrix_norm(softmax_jacobian(p)), "weights")
    one_hot = torch.tensor([0.0, 1.0, 0.0])
    assert float(torch.linalg.matrix_norm(softmax_jacobian(one_hot))) == 0.0


@pytest.mark.parametrize("arch", ["bert", "llama", "gpt2"])
def test_tying_through_the_backend_equals_recomputing_by_hand(lessons, arch):
    definition, why = lessons[arch].definition, lessons[arch].why_qk
    q = torch.from_numpy(definition.query)
    n = len(definition.tokens)
    causal = arch != "bert"
    visible = visible_keys_mask(n, n, causal=causal)[0, 0]
    scores = (q @ q.T * definition.scale).masked_fill(~visible, float("-inf"))
    close(why.tied_weights, torch.softmax(scores, dim=-1), "weights")
    assert why.weight_change > 0
    # And the untied weights are softmax(QKᵀ·scale) of the kept tensors.
    k = torch.from_numpy(definition.key)
    close(definition.weights, torch.softmax((q @ k.T * definition.scale).masked_fill(~visible, float("-inf")), -1),
          "weights")
    close(definition.row_sums, np.ones(n), "weights")
    assert definition.pre_norm == (arch != "bert")  # GPT-2 and Llama normalise before attention: X = LN(x)


@pytest.mark.parametrize("arch", ["bert", "llama", "gpt2"])
def test_effective_rank_of_scores_is_at_most_d_k(lessons, arch):
    multi = lessons[arch].multi_head
    n = len(lessons[arch].definition.tokens)
    assert n > multi.d_k, "the test needs more tokens than d_k for the bound to bite"
    assert (multi.scores_rank <= multi.d_k).all()
    assert (multi.scores_effective_rank <= multi.scores_rank + 1e-9).all()
    assert multi.contribution_share.sum() == pytest.approx(1.0)
    assert set(multi.role) <= {"offset", "special", "content"}


def test_effective_rank_on_hand_made_matrices():
    assert effective_rank(np.eye(5)) == pytest.approx(5.0)
    rank_two = np.outer([1.0, 2, 3], [1.0, 0, 1]) + np.outer([0.0, 1, 0], [2.0, 1, 0])
    assert 1.0 <= effective_rank(rank_two) <= 2.0 + 1e-9


def test_position_offsets_pick_out_a_previous_token_head():
    n = 6
    previous = np.eye(n, k=-1)
    previous[0, 0] = 1.0
    uniform = np.full((n, n), 1 / n)
    offsets, by_offset = mean_weight_by_offset(np.stack([previous, uniform]))
    assert offsets[by_offset[0].argmax()] == 1 and by_offset[0].max() == pytest.approx(1.0)
    np.testing.assert_allclose(by_offset[1], 1 / n)


def test_position_kind_and_positional_lesson(tiny_models, lessons):
    assert position_kind(tiny_models["bert"]) == "absolute" and position_kind(tiny_models["gpt2"]) == "absolute"
    assert position_kind(tiny_models["llama"]) == "rope"
    position = lessons["llama"].position
    # Random weights attend almost uniformly: no head is positional, and the answer says so in a sentence of its
    # own (issue 17), not "0 head(s) … on one offset: —".
    assert position.positional_heads == () and (position.best_weight <= POSITIONAL_HEAD_MIN_WEIGHT).all()
    assert position.answer.key == "lesson3.answer.rope.none"
    assert "count" not in position.answer.values and "heads" not in position.answer.phrases
    assert "no head puts more than" in position.answer.text("en")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_previous_token_head_is_found_positional_and_named_in_the_answer(previous_token_lessons, lang):
    position = previous_token_lessons.position
    assert position.kind == "absolute" and position.positional_heads == (0,)
    assert position.best_offset[0] == 1 and position.best_weight[0] > 0.99  # i − j = +1: the previous token
    assert (position.best_weight[1:] < POSITIONAL_HEAD_MIN_WEIGHT).all()
    assert position.answer.values["count"] == "1" and position.answer.values["top_head"] == "0"
    answer = position.answer.text(lang)
    # In the reader's language's brackets and colon (issue 44: "2 (i−j = +1: 1.00)" stood in a Chinese sentence).
    assert {"en": "0 (i−j = +1: 1.00)", "zh": "0（i−j = +1：1.00）"}[lang] in answer
    if lang == "zh":
        assert " (" not in answer and ": " not in answer, answer
    # Lesson 5 gives the same head the "offset" role, and only that one.
    assert previous_token_lessons.multi_head.role == ("offset", "content", "content", "content")


def test_real_scaling_uses_the_models_scale_in_the_middle(lessons):
    scaling = lessons["bert"].scaling
    assert scaling.scales[1] == pytest.approx(scaling.d_k ** -0.5) and scaling.output_change[1] == 0.0
    # Dividing by d_k instead of √d_k flattens the weights; not dividing sharpens them.
    assert scaling.normalized_entropy[2] > scaling.normalized_entropy[1]
    assert scaling.max_weight[0] > scaling.max_weight[2]


def test_entropy_lesson_alarms_use_the_thresholds(lessons):
    lesson = lessons["bert"].entropy
    normalized = lesson.entropy.normalized
    assert {(layer, h) for layer, h in zip(*np.nonzero(normalized < COLLAPSED_BELOW))} == set(lesson.collapsed)
    assert {(layer, h) for layer, h in zip(*np.nonzero(normalized > DIFFUSE_ABOVE))} == set(lesson.diffuse)
    assert lesson.answer.key == DEPTH_ANSWERS[depth_trend(lesson.layer_normalized).verdict]
    assert lesson.collapsed == () and len(lesson.diffuse) > 0  # random weights: nothing collapses


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_collapsed_head_raises_the_alarm(previous_token_lessons, lang):
    lesson = previous_token_lessons.entropy
    assert lesson.entropy.normalized[0, 0] < COLLAPSED_BELOW
    assert lesson.collapsed == ((0, 0),)  # the constructed head, and no random one
    assert lesson.answer.values["collapsed"] == "1" and lesson.answer.lists["collapsed_list"] == ("L0H0",)
    assert "L0H0" in lesson.answer.text(lang)
    # The heads are listed with the language's separator (issue 44: "L0H0, L0H3, L0H7" in a Chinese sentence).
    assert len(lesson.diffuse) > 1
    listed = {"en": ", ", "zh": "、"}[lang].join(f"L{layer}H{h}" for layer, h in lesson.diffuse[:8])
    assert listed in lesson.answer.text(lang)
    diffuse = zip(*np.nonzero(lesson.entropy.normalized > DIFFUSE_ABOVE))
    assert {(int(layer), int(head)) for layer, head in diffuse} == set(lesson.diffuse)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_answers_contain_the_numbers_they_cite(lessons, lang):
    result = lessons["bert"]
    for name in ("definition", "why_qk", "position", "sweep", "scaling", "multi_head", "entropy"):
        answer = getattr(result, name).answer
        text = answer.text(lang)
        for key, value in answer.values.items():
            assert value in text, (name, key, value, lang)
    # … and those numbers are the measured ones, not decoration.
    why, sweep, scaling = result.why_qk, result.sweep, result.scaling
    assert f"{100 * why.xx_diagonal_share:.0f}%" in why.answer.text(lang)
    assert f"{why.asymmetry[2]:.2f}" in why.answer.text(lang)
    assert f"{sweep.slope:.2f}" in sweep.answer.text(lang)
    assert f"{scaling.normalized_entropy[0]:.2f}" in scaling.answer.text(lang)
    assert f"{result.definition.weights.max(axis=-1).max():.2f}" in result.definition.answer.text(lang)


def test_answer_terms_are_translated():
    answer = Answer("lesson2.answer", {k: "1" for k in ("xx_share", "qk_share", "qk_mean", "asym", "asym_min",
                                                        "asym_max", "head", "layer", "tied_share", "tv", "entropy",
                                                        "tied_entropy", "change", "asym_far")},
                    {"measure": "measure.embedding", "symmetry": "lessons.asymmetry.near"})
    assert "cosine distance" in answer.text("en") and "余弦距离" in answer.text("zh")
    assert "not shown to be far from symmetric" in answer.text("en") and "未能显示 S 远非对称" in answer.text("zh")


def test_quiz_reveals_come_from_the_measurements(lessons):
    definition = lessons["bert"].definition
    key, weight = attention_target(definition, 3)
    assert weight == definition.weights[3].max() and key == definition.weights[3].argmax()
    with pytest.raises(InvalidRequestError, match="outside"):
        attention_target(definition, 99)
    importance = lessons["bert"].importance
    assert np.isnan(importance.change[0]) and np.isnan(importance.change[-1])  # [CLS], [SEP] are not deleted
    assert importance.best == int(np.nanargmax(importance.change)) and np.nanmax(importance.change) > 0


def test_leave_one_out_keeps_the_predicted_position_of_a_causal_lm(tiny_model_dirs, tmp_path):
    from tests.conftest import save_tiny_model

    loaded = load_model(str(save_tiny_model(tmp_path / "gpt2-lm", "gpt2", with_head=True)))
    importance = leave_one_out(loaded, "the cat sat on the mat")
    assert np.isnan(importance.change[-1]) and np.isfinite(importance.change[1:-2]).all()
    assert importance.measure == "distribution"


def test_complexity_lesson_measures_both_paths_with_tiny_sizes():
    lesson = complexity_lesson((16, 48), heads=2, d_k=8, device="cpu", repeats=1)
    assert (lesson.materialised_ms > 0).all() and (lesson.flash_ms > 0).all()
    assert lesson.materialised_bytes[1] == 2 * 2 * 48 * 48 * 4
    assert np.isnan(lesson.measured_materialised_bytes).all()  # no allocator peak on the CPU
    assert "blocked" in lesson.flash_backend
    with pytest.raises(InvalidRequestError):
        complexity_lesson((), device="cpu")


def test_bad_layer_or_head_is_a_clear_error(tiny_models):
    with pytest.raises(InvalidRequestError, match="layers 0–1"):
        all_lessons(tiny_models["bert"], TEXT, 5, 0)
    with pytest.raises(InvalidRequestError, match="heads 0–3"):
        all_lessons(tiny_models["bert"], TEXT, 0, 9)


def test_lessons_json_is_plain_json_in_both_languages(lessons):
    for lang in LANGUAGES:
        payload = lessons_json(lessons["bert"], lang)
        text = json.dumps(payload, ensure_ascii=False, allow_nan=False)
        assert payload["sweep"]["slope"] == lessons["bert"].sweep.slope
        assert payload["why_qk"]["answer"] == lessons["bert"].why_qk.answer.text(lang)
        assert len(payload["definition"]["weights"]) == len(lessons["bert"].definition.tokens)
        assert "importance" in text


def test_cli_writes_every_lessons_numbers(tiny_model_dirs, tmp_path, capsys):
    from inspector.cli import main

    out = tmp_path / "lessons.json"
    assert main(["lessons", "--model", str(tiny_model_dirs["llama"]), "--text", TEXT, "--layer", "1", "--head", "3",
                 "--lang", "zh", "--lengths", "16,32", "--json", str(out)]) == 0
    payload = json.loads(out.read_text(encoding="utf-8"))
    lessons = payload["lessons"]
    assert list(lessons) == ["definition", "why_qk", "position", "scaling", "multi_head", "entropy", "complexity",
                             "quiz", "head_dim", "position_codes"]  # every lesson of the sidebar's model, by number
    assert payload["skipped"] == {}
    assert lessons["scaling"]["result"]["sweep"]["slope"] and lessons["quiz"]["requested"]["change"]
    assert payload["lang"] == "zh" and "旋转位置编码" in lessons["position"]["result"]["answer"]
    assert lessons["complexity"]["requested"]["lengths"] == [16, 32] and payload["model"]["num_heads"] == 4
    assert main(["lessons", "--model", str(tiny_model_dirs["llama"]), "--text", TEXT, "--layer", "7"]) == 2
    assert "layers 0–1" in capsys.readouterr().err


@pytest.mark.parametrize("slide", [False, True])
def test_lesson_charts_are_valid_vega_lite(lessons, slide):
    import altair as alt

    from inspector.charts import lessons as charts

    result = lessons["llama"]
    tokens = result.definition.tokens
    built = [charts.weights_chart(result.definition.weights, tokens, title="A", slide=slide),
             charts.tied_weights_chart(result.why_qk, tokens, title="tied", slide=slide),
             charts.asymmetry_chart(result.why_qk, title="asym", slide=slide),
             charts.offset_chart(result.position, title="offsets", slide=slide),
             charts.sweep_chart(result.sweep, title="sweep", slide=slide),
             charts.variance_chart(result.sweep, title="variance", slide=slide),
             charts.contribution_chart(result.multi_head, {"offset": "o", "special": "s", "content": "c"},
                                       title="heads", slide=slide),
             charts.complexity_chart(complexity_lesson((16, 32), heads=2, d_k=8, device="cpu", repeats=1),
                                     title="time", slide=slide)]
    with alt.data_transformers.disable_max_rows():
        for chart in built:
            spec = chart.to_dict(validate=True)
            assert ("axis" in spec.get("config", {})) == slide  # slide mode sets the axis font sizes


@pytest.mark.parametrize("slide", [False, True])
def test_lesson_charts_in_chinese_show_no_english(lessons, slide):
    """Issue 17: every text a reader sees on a Lessons chart in 简体中文 — the page's titles, axes, legends, tooltips,
    the thinned-axis note, the paths of the complexity chart — is Chinese; tokens, the model and the device are data,
    symbols (d, n, i − j, Var(q·k)) stay symbols. The same charts in English do show English words, so the check
    can fail."""
    from inspector.base.i18n import t
    from inspector.charts import lessons as charts
    from tests.chart_text import chart_strings, english_words
    from tests.test_compare import untitled_fields

    result = lessons["llama"]
    tokens = result.definition.tokens
    timing = complexity_lesson((16, 32), heads=2, d_k=8, device="cpu", repeats=1)
    allowed = {*tokens, result.model, timing.device, "Var"}  # Var(q·k): the variance's symbol
    colours = {}
    for lang in ("zh", "en"):
        roles = {role: t(f"lesson5.role.{role}", lang) for role in ("offset", "special", "content")}
        # A role keeps its colour in both languages (issue 31: the legend's colours swapped between languages).
        scale = charts.contribution_chart(result.multi_head, roles, title="", lang=lang).to_dict()["encoding"][
            "color"]["scale"]
        colours[lang] = {role: scale["range"][scale["domain"].index(name)] for role, name in roles.items()
                         if name in scale["domain"]}
        paths = charts.complexity_chart(timing, title="", lang=lang).to_dict()["encoding"]["color"]
        assert paths["legend"]["labelLimit"] >= 400 and len(paths["scale"]["domain"]) == 2  # whole names, fixed order
        built = {
            "weights": charts.weights_chart(result.definition.weights, tokens, slide=slide, lang=lang,
                                            title=t("lesson1.chart", lang, layer=1, head=2)),
            "tied": charts.tied_weights_chart(result.why_qk, tokens, title=t("lesson2.chart_tied", lang, head=2),
                                              slide=slide, lang=lang),
            "asymmetry": charts.asymmetry_chart(result.why_qk, title=t("lesson2.chart_asym", lang), slide=slide,
                                                lang=lang),
            "offset": charts.offset_chart(result.position, title=t("lesson3.chart", lang, layer=1), slide=slide,
                                          lang=lang),
            "sweep": charts.sweep_chart(result.sweep, title=t("lesson4.sweep_chart", lang), slide=slide, lang=lang),
            "variance": charts.variance_chart(result.sweep, title=t("lesson4.variance_chart", lang), slide=slide,
                                              lang=lang),
            "contribution": charts.contribution_chart(result.multi_head, roles, title=t("lesson5.chart", lang, layer=1),
                                                      slide=slide, lang=lang),
            "complexity": charts.complexity_chart(timing, title=t("lesson7.chart", lang, device=timing.device),
                                                  slide=slide, lang=lang)}
        for name, chart in built.items():
            spec = chart.to_dict()
            found = english_words(chart_strings(spec), allowed=allowed)
            if lang == "zh":
                # d and n are symbols; the sweep's log(keys) rule shares the lines' titled y axis.
                untitled = untitled_fields(spec, frozenset({"d", "n", "uniform"}))
                assert found == [] and untitled == [], (name, found, untitled)
            else:
                assert found, name
    assert colours["en"] == colours["zh"] and colours["en"]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_position_answer_without_a_positional_head_says_so(tiny_models, lang):
    # Layer 0 of the tiny random BERT spreads its weight: no head reaches the positional threshold (asserted).
    position = all_lessons(tiny_models["bert"], TEXT, 0, 0).position
    assert not position.positional_heads
    assert position.answer.key == "lesson3.answer.absolute.none"
    text = position.answer.text(lang)
    assert "—" not in text and "0 head" not in text and "{" not in text
    assert ("no head puts more than" if lang == "en" else "没有哪个头") in text
    assert all(value in text for value in position.answer.values.values())


def test_a_listed_numbers_answer_joins_them_in_the_readers_language():
    """D5 names Gemma's global layers: "5, 11, 17" in English, "5、11、17" in Chinese (not ASCII commas)."""
    from inspector.analyses.lessons import Answer

    answer = Answer("lessons.named_value", {"name": "layers"}, lists={"value": ("5", "11", "17")})
    assert answer.text("en") == "layers: 5, 11, 17"
    assert answer.text("zh").endswith("5、11、17")
    assert Answer("lessons.named_value", {"name": "layers"}, lists={"value": ()}).text("en") == "layers: —"


# ----------------------------------------------------------------- lessons 18 and 19 (issue 44, item 11)


def test_the_bottleneck_simulation_falls_to_zero_only_when_d_k_reaches_n():
    """Random dense targets over n = 32 keys: rank(QKᵀ) ≤ d_k, so the best KL stays well above 0 for a narrow head and
    reaches ~0 at d_k = n (Bhojanapalli et al. 2020)."""
    kl = bottleneck_sweep()
    assert len(kl) == len(BOTTLENECK_DIMS) and BOTTLENECK_DIMS[-1] == BOTTLENECK_KEYS
    assert kl[0] > 0.2 and kl[-1] < 1e-3
    assert all(later <= earlier + 1e-6 for earlier, later in zip(kl, kl[1:]))  # a wider head never does worse


def test_a_rank_cut_of_the_heads_scores_is_exact_at_full_rank(tiny_models):
    context = LessonContext(tiny_models["bert"], TEXT, 1, 2)
    definition = compute_part("encoder", context)["definition"]
    lesson = head_dim_lesson(definition, simulated=np.zeros(len(BOTTLENECK_DIMS)))
    n, d_k = len(definition.tokens), definition.d_k
    assert d_k < n and list(lesson.ranks) == list(range(1, d_k + 1))
    # Rank d_k keeps S = QKᵀ·scale whole (its rank is at most d_k): the weights come back, up to the fp32 rounding of
    # the model's scores.
    assert lesson.head_kl[-1] < 1e-6 and lesson.head_kl[0] > 100 * lesson.head_kl[-1]
    assert lesson.needed is None or lesson.head_kl[lesson.needed - 1] < KEEPS_PATTERN_BELOW
    for lang in LANGUAGES:
        text = lesson.answer.text(lang)
        assert f"d_k = {d_k}" in text and _f(lesson.head_kl[0]) in text


def test_a_rank_cut_of_a_causal_heads_scores_forms_no_zero_times_infinity():
    """A causal head's masked keys have weight 0 and a cut score of −inf: they add nothing, and the sum never forms
    0·∞ (a RuntimeWarning from NumPy on every decoder's Lesson 18, found by the hosted sweep)."""
    rng = np.random.default_rng(0)
    n, d_k = 6, 2
    q, k = rng.normal(size=(n, d_k)), rng.normal(size=(n, d_k))
    visible = np.tril(np.ones((n, n), bool))
    scores = np.where(visible, q @ k.T, 0.0)
    weights = np.where(visible, np.exp(scores), 0.0)
    weights /= weights.sum(axis=-1, keepdims=True)
    definition = SimpleNamespace(scores=scores, visible=visible, weights=weights, d_k=d_k)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kls = rank_cut_kl(definition)
    assert np.isfinite(kls).all() and len(kls) == d_k and kls.min() >= -1e-12  # a KL: never below 0


def test_the_sinusoidal_formula_and_rope_depend_on_the_offset_alone_a_learned_table_does_not(tiny_models):
    codes = sinusoidal_codes(5, 6)
    assert np.allclose(codes[:, 0], np.sin(np.arange(5))) and np.allclose(codes[:, 1], np.cos(np.arange(5)))
    assert np.allclose(codes[:, 4], np.sin(np.arange(5) / 10000 ** (4 / 6)))
    bert = position_codes_lesson(tiny_models["bert"])  # learned absolute positions (random init: no structure)
    assert bert.sinusoidal[0] == pytest.approx(1) and bert.rope[0] == pytest.approx(1)
    assert bert.sinusoidal_spread.max() < 1e-9 and bert.rope_spread.max() < 1e-9
    assert bert.learned is not None and bert.learned_spread[1:].mean() > 1e-3
    assert bert.rope_source == "formula" and bert.answer.key == "lesson19.answer"
    llama = position_codes_lesson(tiny_models["llama"])
    assert llama.learned is None and llama.rope_source == "model" and llama.answer.key == "lesson19.answer.no_table"
    for lang in LANGUAGES:
        assert bert.answer.values["learned_spread"] in bert.answer.text(lang)
        assert llama.answer.values["sin_near"] in llama.answer.text(lang)
    # "Not a function of the offset alone" only past the formulas' rounding threshold (issue 44 item 4).
    from inspector.analyses.lessons.capacity import RELATIVE_ONLY_BELOW, learned_verdict

    assert bert.answer.terms["learned_verdict"] == "lesson19.learned.not_relative"
    assert learned_verdict(RELATIVE_ONLY_BELOW) == "lesson19.learned.not_relative"
    assert learned_verdict(RELATIVE_ONLY_BELOW * (1 - 1e-9)) == "lesson19.learned.relative"


def test_multi_head_roles_state_their_thresholds(lessons):
    """Lesson 5 counted heads that "follow an offset" and "look mostly at special tokens" without saying what that
    takes (issue 44 item 4): the answer names both thresholds."""
    from inspector.analyses.lessons import POSITIONAL_HEAD_MIN_WEIGHT
    from inspector.analyses.lessons.common import SPECIAL_HEAD_MIN_WEIGHT

    answer = lessons["bert"].multi_head.answer
    for lang in LANGUAGES:
        text = answer.text(lang)
        assert f"{POSITIONAL_HEAD_MIN_WEIGHT:.2f}" in text and f"{SPECIAL_HEAD_MIN_WEIGHT:.2f}" in text


# ------------------------------------------------------------------------- verdicts with a threshold (issue 44)


def test_depth_trend_holds_only_below_its_threshold():
    """Lesson 6 says “shallow broad, deep sharp” holds only when a one-sided Spearman test shows entropy falling with
    depth (p < VERDICT_ALPHA); the shallow mean being larger is not enough. At the boundary: the same layers judged
    with α just above and just below their own p."""
    falling = np.array([0.9, 0.85, 0.8, 0.82, 0.7, 0.72, 0.6, 0.65, 0.5, 0.55])
    trend = depth_trend(falling)
    assert trend.rho < 0 and trend.p < VERDICT_ALPHA and trend.verdict == "shown"
    assert rank_trend(np.arange(10), falling, claimed="less", alpha=trend.p * 1.01).verdict == "shown"
    assert rank_trend(np.arange(10), falling, claimed="less", alpha=trend.p * 0.99).verdict == "not_shown"
    # As on issue 44's Gemma (shallow 0.56 > deep 0.53, ρ = −0.06 over 18 layers): not shown, whatever the means say.
    weak = np.array([0.50, 0.62, 0.55, 0.58, 0.51, 0.60, 0.57, 0.54, 0.59,
                     0.52, 0.61, 0.50, 0.56, 0.53, 0.49, 0.58, 0.51, 0.55])
    assert weak[:9].mean() > weak[9:].mean()
    trend = depth_trend(weak)
    assert trend.rho < 0 and trend.p > VERDICT_ALPHA and trend.verdict == "not_shown"  # a weak negative ρ
    rising = falling[::-1]
    assert depth_trend(rising).verdict == "opposite"
    assert depth_trend(np.full(6, 0.5)).verdict == "not_shown"  # no order at all


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("verdict", ["shown", "opposite", "not_shown"])
def test_lesson6_states_its_test_in_every_verdict(verdict, lang):
    from inspector.analyses.lessons.common import Answer

    values = {"shallow": "0.56", "deep": "0.53", "rho": "-0.06", "p": "0.41", "p_opposite": "0.59", "alpha": "0.05",
              "collapsed": "0", "diffuse": "1", "low": "0.10", "high": "0.90", "heads": "72", "layers": "18",
              "collapsed_list": "—", "diffuse_list": "L5H1"}
    text = Answer(DEPTH_ANSWERS[verdict], values).text(lang)
    assert "ρ = -0.06" in text and "0.05" in text and "Spearman" in text
    if verdict == "not_shown":
        assert ("not shown" in text) if lang == "en" else ("未能显示" in text)
        assert "holds here" not in text and "成立" not in text


@pytest.mark.parametrize("lang", LANGUAGES)
def test_symmetry_and_parking_verdicts_flip_at_their_thresholds(lang):
    """Lessons 2 and D1 said “S is far from symmetric” and D4 “a parking spot, not a source” whatever the numbers
    (issue 44 item 4): each is now a term chosen by a stated threshold, just above and just below it."""
    from inspector.analyses.lessons.common import ASYMMETRY_FAR, PARKING_RATIO, asymmetry_term
    from inspector.analyses.lessons.sinks import parking_term
    from inspector.base.i18n import t

    assert asymmetry_term(ASYMMETRY_FAR) == "lessons.asymmetry.far"
    assert asymmetry_term(ASYMMETRY_FAR - 1e-9) == "lessons.asymmetry.near"
    assert parking_term(0.6, PARKING_RATIO * 0.6 - 1e-9) == "lessons.sink.parking"
    assert parking_term(0.6, PARKING_RATIO * 0.6) == "lessons.sink.not_parking"
    from inspector.analyses.lessons.common import BLUR_MARGIN
    from inspector.analyses.lessons.geometry import blur_term

    assert blur_term(1.0, 1.0 + BLUR_MARGIN) == "lessons.linear.blurrier"  # D6's "blurrier"
    assert blur_term(1.0, 1.0 + BLUR_MARGIN - 1e-9) == "lessons.linear.not_blurrier"
    shown = {"en": "not shown", "zh": "未能显示"}[lang]
    assert shown in t("lessons.asymmetry.near", lang) and shown in t("lessons.sink.not_parking", lang)
    assert shown in t("lessons.linear.not_blurrier", lang)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_scaling_verdicts_flip_at_their_thresholds_and_state_them(lang):
    """Lesson 4a said "saturated" and "close to uniform", 4b "nearly uniform", whatever the numbers (issue 44 item 4):
    each is now a term chosen by the Heads page's collapsed / diffuse thresholds on the normalised entropy, just below
    and just above them, and the answers state the threshold and the measured share."""
    from inspector.analyses.lessons.common import saturation_term, uniformity_term
    from inspector.base.i18n import t

    assert saturation_term(COLLAPSED_BELOW - 1e-9) == "lessons.scale.saturated"
    assert saturation_term(COLLAPSED_BELOW) == "lessons.scale.not_saturated"
    assert uniformity_term(DIFFUSE_ABOVE + 1e-9) == "lessons.scale.uniform"
    assert uniformity_term(DIFFUSE_ABOVE) == "lessons.scale.not_uniform"
    shown = {"en": "not shown", "zh": "未能显示"}[lang]
    assert shown in t("lessons.scale.not_saturated", lang) and shown in t("lessons.scale.not_uniform", lang)
    sweep = scaling_sweep()  # at d = 1024 the unscaled rows are one-hot and the 1/d rows flat: both verdicts shown
    assert sweep.answer.terms == {"saturation": "lessons.scale.saturated", "uniformity": "lessons.scale.uniform"}
    text = sweep.answer.text(lang)
    assert f"{COLLAPSED_BELOW:.2f}" in text and f"{DIFFUSE_ABOVE:.2f}" in text
    assert sweep.answer.values["n1"] in text and sweep.answer.values["n3"] in text
    # A sweep that stops at small d: unscaled scores are not yet saturated, and the answer says so.
    small = scaling_sweep((2, 4), keys=8)
    assert small.answer.terms["saturation"] == "lessons.scale.not_saturated"
    assert t("lessons.scale.not_saturated", lang) in small.answer.text(lang)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_sink_answer_concludes_only_when_the_first_token_is_a_parking_spot(lang):
    """D4 read "… of the weight but only … of the norm-weighted attention" and concluded "so a sink exists because…"
    whatever the shares (issue 44 item 4): both now follow the stated parking threshold."""
    from inspector.analyses.lessons.common import PARKING_RATIO, Answer
    from inspector.analyses.lessons.sinks import parking_term

    values = {"model": "m", "layers": "18", "top_layer": "5", "top_mass": "90%", "mean_mass": "60%", "layer": "5",
              "weight_share": "60%", "norm_share": "40%", "v_first": "0.1", "v_rest": "1.0", "change_layer": "1e-3",
              "change_all": "1e-2", "ratio": "0.50", "parking_limit": "30%"}
    for norm_share, conclusion in ((PARKING_RATIO * 0.6 - 1e-9, "parking"), (PARKING_RATIO * 0.6, "not_parking")):
        parking = parking_term(0.6, norm_share)
        assert parking.endswith(conclusion)
        text = Answer("lesson12.answer", values, {"measure": "measure.distribution", "parking": parking,
                                                  "conclusion": f"lesson12.conclusion.{conclusion}"}).text(lang)
        assert ("but only" not in text) and ("却只" not in text)
        assert ("sink exists because" in text or "汇点之所以存在" in text) == (conclusion == "parking")
        assert "0.50" in text and "30%" in text


def test_the_why_qk_answer_names_its_threshold(lessons):
    answer = lessons["bert"].why_qk.answer
    assert answer.values["asym_far"] == "0.50" and answer.terms["symmetry"].startswith("lessons.asymmetry.")
    assert "at least 0.50" in answer.text("en") and "至少 0.50" in answer.text("zh")
