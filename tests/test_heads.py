"""The head report (inspector/analyses/heads.py), its statistics (inspector/analyses/metrics.py), redundancy measures
(inspector/analyses/redundancy.py), per-sequence ablation in the attention function, and ``python -m inspector
heads``."""

import json
import math
import warnings
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoModel, AutoModelForSequenceClassification

from inspector.analyses.divergence import JS_MAX
from inspector.analyses.head_importance import layer_normalized
from inspector.analyses.head_progress import ReportProgress
from inspector.analyses.heads import (
    CORPUS_PATH,
    INDUCTION_HEAD_SCORE,
    HeadStatistics,
    head_first_look,
    head_report,
    read_corpus,
    report_json,
    with_thresholds,
)
from inspector.analyses.metrics import (
    TOKEN_CATEGORIES,
    HealthThresholds,
    head_entropy_from_rows,
    is_punctuation,
    mean_attention_distance,
    sink_scores,
    token_category_mass,
)
from inspector.analyses.redundancy import (
    classical_mds,
    cluster_order,
    contribution_similarity,
    js_divergence_matrix,
)
from inspector.base.errors import InvalidRequestError
from inspector.charts.sentences.heads import health_report
from inspector.cli import main
from inspector.core.forward import encode_text, forward
from inspector.core.loading import load_model
from kernels.hf import HeadAblation, HeadGate, SequenceHeadAblation, WeightEdit
from tests.conftest import make_tokenizer, save_tiny_model, tiny_config
from tests.tolerances import close

TEXT = "the animal did n't cross the street because it was too tired ."
OTHER = "a cat sat on the mat , and the dog ran fast"
SIGNAL = (1, 2)  # the one head of the hand-built model whose output reaches the residual stream


@pytest.fixture(scope="module")
def signal_model(tmp_path_factory):
    """A tiny BERT in which only head SIGNAL writes into the residual stream: every other head's slice of the
    attention output projection W_O is zero, so removing any other head cannot change anything."""
    folder = tmp_path_factory.mktemp("signal-bert")
    config = tiny_config("bert")
    torch.manual_seed(3)
    model = AutoModel.from_config(config, attn_implementation="eager").eval()
    d = config.hidden_size // config.num_attention_heads
    with torch.no_grad():
        for layer, block in enumerate(model.encoder.layer):
            weight = block.attention.output.dense.weight  # (hidden, heads·d): input columns per head
            for head in range(config.num_attention_heads):
                if (layer, head) != SIGNAL:
                    weight[:, head * d:(head + 1) * d] = 0
            weight[:, SIGNAL[1] * d:(SIGNAL[1] + 1) * d] *= 4  # a clear signal above LayerNorm's rescaling
    model.save_pretrained(folder, safe_serialization=True)
    make_tokenizer().save_pretrained(folder)
    return load_model(str(folder))


# ------------------------------------------------------------------------------------------------- statistics

def _edited_entropy(loaded, edit):
    """Head entropy of layer 0 after replacing every head's weights by ``edit`` through the attention function."""
    inputs = encode_text(loaded, TEXT).inputs
    heads = tuple(range(loaded.info.num_heads))
    result = forward(loaded, inputs, interventions=[WeightEdit(0, heads, edit)], weights_layers="all")
    record = result.records[0]
    rows = record.stats["entropy"][0].numpy()[None]  # (1, heads, n)
    return head_entropy_from_rows(rows, record.visible_keys[:1].numpy()), record.weights[0].numpy()


def test_uniform_rows_give_log_n_and_one_hot_rows_give_zero(tiny_bert):
    n = encode_text(tiny_bert, TEXT).inputs["input_ids"].shape[1]
    uniform, _ = _edited_entropy(tiny_bert, lambda w, visible: torch.full_like(w, 1.0 / w.shape[-1]))
    np.testing.assert_allclose(uniform.raw, math.log(n), rtol=1e-5)
    np.testing.assert_allclose(uniform.normalized, 1.0, rtol=1e-5)
    eye = lambda w, visible: torch.eye(w.shape[-1]).expand_as(w).clone()  # noqa: E731
    one_hot, weights = _edited_entropy(tiny_bert, eye)
    np.testing.assert_allclose(one_hot.raw, 0.0, atol=1e-6)
    np.testing.assert_allclose(one_hot.normalized, 0.0, atol=1e-6)
    # Every row on itself: Clark's "self" share is 1 and the head looks 0 tokens away.
    mass = token_category_mass(weights[None], ["[CLS]"] + ["x"] * (n - 2) + ["[SEP]"],
                               np.array([True] + [False] * (n - 2) + [True]))
    np.testing.assert_allclose(mass[0, :, TOKEN_CATEGORIES.index("self")], 1.0, rtol=1e-6)
    np.testing.assert_allclose(mean_attention_distance(weights[None]), 0.0, atol=1e-6)


def test_token_categories_previous_next_and_punctuation():
    n = 5
    previous = np.zeros((1, 1, n, n))
    previous[0, 0, 0, 0] = 1.0
    previous[0, 0, np.arange(1, n), np.arange(n - 1)] = 1.0
    tokens = ["[CLS]", "hi", ",", "Ġ!", "[SEP]"]
    special = np.array([True, False, False, False, True])
    mass = token_category_mass(previous, tokens, special)[0, 0]
    assert mass[TOKEN_CATEGORIES.index("previous")] == pytest.approx(1.0)
    assert mass[TOKEN_CATEGORIES.index("next")] == pytest.approx(0.0)
    assert mass[TOKEN_CATEGORIES.index("[CLS]")] == pytest.approx(2 / n)  # rows 0 and 1 land on [CLS]
    assert mass[TOKEN_CATEGORIES.index("punctuation")] == pytest.approx(2 / n)  # rows 3 and 4 land on , and !
    assert is_punctuation("##.") and is_punctuation("Ġ?") and not is_punctuation("Ġa") and not is_punctuation("")


def test_sink_scores_follow_gu_et_al():
    n = 4
    causal = np.tril(np.ones((n, n), dtype=bool))[None]
    all_on_first = np.zeros((1, 1, n, n))
    all_on_first[..., 0] = 1.0
    np.testing.assert_allclose(sink_scores(all_on_first, causal)[0, 0], [1, 0, 0, 0])
    uniform_causal = causal[None] / causal.sum(axis=-1, keepdims=True)[None]
    # Key k is seen by the n − k queries i ≥ k, each giving it 1/(i + 1).
    expected = [sum(1 / (i + 1) for i in range(k, n)) / (n - k) for k in range(n)]
    np.testing.assert_allclose(sink_scores(uniform_causal, causal)[0, 0], expected, rtol=1e-6)
    everything = np.ones((1, n, n), dtype=bool)
    np.testing.assert_allclose(sink_scores(np.full((1, 1, n, n), 1 / n), everything), 1 / n, rtol=1e-6)


def test_thresholds_are_validated_with_a_clear_error():
    with pytest.raises(InvalidRequestError, match="collapsed"):
        HealthThresholds(collapsed=0.9, diffuse=0.1)
    with pytest.raises(InvalidRequestError, match="sink"):
        HealthThresholds(sink=0.0)


# ------------------------------------------------------------------------------------------------- redundancy

@st.composite
def attention_rows(draw):
    heads, n = draw(st.integers(1, 6)), draw(st.integers(1, 7))
    raw = draw(st.lists(st.floats(0.0, 10.0), min_size=heads * n * n, max_size=heads * n * n))
    weights = np.asarray(raw).reshape(heads, n, n) + 1e-9
    return weights / weights.sum(axis=-1, keepdims=True)


@settings(max_examples=40, deadline=None)
@given(attention_rows())
def test_js_matrix_is_symmetric_zero_on_the_diagonal_and_within_ln2(weights):
    js = js_divergence_matrix(weights)
    assert js.shape == (weights.shape[0],) * 2
    np.testing.assert_array_equal(js, js.T)
    np.testing.assert_array_equal(np.diag(js), 0.0)
    assert (js >= 0).all() and (js <= JS_MAX).all()


def test_js_of_identical_and_disjoint_heads():
    n = 6
    first = np.zeros((n, n))
    first[:, 0] = 1
    last = np.zeros((n, n))
    last[:, -1] = 1
    js = js_divergence_matrix(np.stack([first, first, last]))
    assert js[0, 1] == 0.0
    assert JS_MAX - 0.01 < js[0, 2] <= JS_MAX  # one-hot on different keys: ln 2 up to Clark's 0.001/n smoothing


def test_cluster_order_and_mds_recover_points_on_a_line():
    points = np.array([0.0, 5.0, 1.0, 6.0, 0.5])
    distance = np.abs(points[:, None] - points[None, :])
    order = cluster_order(distance)
    assert sorted(order.tolist()) == list(range(5))
    assert {frozenset(order[:3].tolist()), frozenset(order[2:].tolist())} & {frozenset({0, 2, 4})}
    coords = classical_mds(distance)
    recovered = np.linalg.norm(coords[:, None] - coords[None, :], axis=-1)
    np.testing.assert_allclose(recovered, distance, atol=1e-5)


def test_contribution_similarity_cosine_and_cka():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 8))
    rotation, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    heads = np.stack([x, -x, 3 * x @ rotation, rng.normal(size=(5, 8)), np.zeros((5, 8))])
    cosine, cka = contribution_similarity(heads)
    assert cosine[0, 1] == pytest.approx(-1.0) and cka[0, 1] == pytest.approx(1.0)
    assert cka[0, 2] == pytest.approx(1.0, abs=1e-6)  # CKA ignores rotation and scale; cosine does not
    assert abs(cosine[0, 2]) < 0.99
    assert cka[0, 3] < 0.99 and cka[4, 4] == 0.0 and cosine[0, 0] == 1.0
    np.testing.assert_array_equal(cka, cka.T)


# ----------------------------------------------------------------------------------- per-sequence interventions

@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_sequence_ablation_equals_one_ablation_per_sequence(tiny_bert, mode):
    inputs = encode_text(tiny_bert, TEXT).inputs
    sets = [(0,), (1, 3), ()]
    mask = torch.zeros(len(sets), tiny_bert.info.num_heads, dtype=torch.bool)
    for b, heads in enumerate(sets):
        mask[b, list(heads)] = True
    copies = {name: value.expand(len(sets), -1) for name, value in inputs.items()}
    batched = forward(tiny_bert, copies, interventions=[SequenceHeadAblation(1, mask, mode)]).outputs.last_hidden_state
    for b, heads in enumerate(sets):
        one = forward(tiny_bert, inputs, interventions=[HeadAblation(1, heads, mode)] if heads else [])
        close(batched[b:b + 1], one.outputs.last_hidden_state, "hidden")


def test_per_sequence_gates_equal_shared_gates(tiny_bert):
    inputs = encode_text(tiny_bert, TEXT).inputs
    gates = torch.tensor([[1.0, 0.5, 1.0, 0.0], [0.2, 1.0, 1.0, 1.0]])
    copies = {name: value.expand(2, -1) for name, value in inputs.items()}
    batched = forward(tiny_bert, copies, interventions=[HeadGate(0, gates)]).outputs.last_hidden_state
    for b in range(2):
        close(batched[b:b + 1], forward(tiny_bert, inputs, interventions=[HeadGate(0, gates[b])])
              .outputs.last_hidden_state, "hidden")
    with pytest.raises(InvalidRequestError, match="SequenceHeadAblation"):
        forward(tiny_bert, inputs, interventions=[SequenceHeadAblation(0, torch.ones(3, 4, dtype=torch.bool))])


# ------------------------------------------------------------------------------------------------- the report

def test_importance_ranks_the_hand_built_signal_head_first(signal_model):
    report = head_report(signal_model, TEXT)
    heads = signal_model.info.num_heads
    flat = SIGNAL[0] * heads + SIGNAL[1]
    ablation = report.statistics.importance_ablation.ravel()
    assert int(ablation.argmax()) == flat and ablation[flat] > 1e-4
    np.testing.assert_allclose(np.delete(ablation, flat), 0.0, atol=1e-6)
    gradient = report.importance_gradient.ravel()
    assert int(gradient.argmax()) == flat and gradient[flat] == pytest.approx(1.0)  # alone in its layer: ℓ2 = itself
    np.testing.assert_allclose(np.delete(gradient, flat), 0.0, atol=1e-6)
    assert report.pruning.order[-1] == flat  # pruned last
    assert report.pruning.change[0] == pytest.approx(0.0, abs=1e-6) and report.pruning.change[-1] > 1e-4


def test_corpus_mode_is_the_mean_of_single_text_runs(tiny_bert):
    texts = [TEXT, OTHER, "one two three"]
    corpus = head_report(tiny_bert, texts)
    singles = [head_report(tiny_bert, text) for text in texts]
    for index, single in enumerate(singles):  # the corpus runs them in one padded batch: equal up to rounding
        _assert_same_statistics(corpus.per_text[index], single.statistics)
        np.testing.assert_allclose(corpus.key_sink_scores[index], single.key_sink_scores[0], rtol=1e-5, atol=1e-6)
    assert np.isnan(singles[2].statistics.induction).all()  # "one two three" repeats no token: skipped, not 0
    for f in fields(HeadStatistics):  # the corpus numbers are exactly the mean of its per-text numbers
        mean = np.nanmean if f.name in ("entropy_normalized", "induction") else np.mean
        expected = mean([getattr(s, f.name).astype(np.float64) for s in corpus.per_text], axis=0)
        np.testing.assert_allclose(getattr(corpus.statistics, f.name), expected, rtol=1e-6, atol=1e-7,
                                   err_msg=f.name)
    np.testing.assert_allclose(corpus.importance_gradient,
                               layer_normalized(np.mean([s.gradient_raw for s in corpus.per_text], axis=0)),
                               rtol=1e-6)


def _assert_same_statistics(batched: HeadStatistics, single: HeadStatistics) -> None:
    """A text's statistics measured in a right-padded batch of texts against its own single-text run: equal up
    to float rounding. The importances are small differences of O(1) numbers (1 − cos, a KL), so they get an
    absolute term of a few ulps of those numbers."""
    for f in fields(HeadStatistics):
        np.testing.assert_allclose(getattr(batched, f.name), getattr(single, f.name), rtol=1e-4, atol=1e-6,
                                   err_msg=f.name)


@pytest.mark.parametrize("arch", ["bert", "gpt2", "mistral"])
@pytest.mark.parametrize("ablation", ["zero", "mean"])
def test_batched_corpus_equals_one_text_at_a_time_on_ragged_lengths(tmp_path, arch, ablation):
    """The corpus report runs texts of about one length in one right-padded batch (statistics, single-head
    ablations, gated gradients, pairs and pruning): every per-text number must be the text's own single-text
    number — for an encoder, a causal LM (next-token KL, last real token) and a sliding-window model."""
    from inspector.analyses.batching import length_buckets
    from inspector.analyses.head_importance import ablated_changes
    from inspector.analyses.heads import _GROUP_TOKENS
    from inspector.core.outputs import model_output

    loaded = load_model(str(save_tiny_model(tmp_path / arch, arch, with_head=arch != "bert")))
    texts = [TEXT, OTHER, "the cat sat on the mat , and the dog ran", "one two three four five six"]
    lengths = [int(encode_text(loaded, text).inputs["input_ids"].shape[1]) for text in texts]
    groups = length_buckets(lengths, _GROUP_TOKENS // (loaded.info.num_layers * loaded.info.num_heads))
    assert any(len({lengths[i] for i in group}) > 1 for group in groups)  # some batch really is padded
    corpus = head_report(loaded, texts, ablation=ablation)
    assert corpus.output_kind == ("embedding" if arch == "bert" else "distribution")
    for index, text in enumerate(texts):
        single = head_report(loaded, text, ablation=ablation)
        _assert_same_statistics(corpus.per_text[index], single.statistics)
        np.testing.assert_allclose(corpus.key_sink_scores[index], single.key_sink_scores[0], rtol=1e-5, atol=1e-6)
        assert corpus.tokens[index] == single.tokens[0]
    # The second pass, batched too: each pair ablated together, one text at a time without padding.
    layers, heads = loaded.info.num_layers, loaded.info.num_heads
    masks = torch.zeros(len(corpus.pairs.heads), layers * heads, dtype=torch.bool)
    for p, pair in enumerate(corpus.pairs.heads):
        masks[p, pair] = True
    direct = []
    for text in texts:
        inputs = encode_text(loaded, text).inputs
        base = model_output(loaded, forward(loaded, inputs, stats=()), inputs)
        direct.append(ablated_changes(loaded, inputs, base, masks.view(-1, layers, heads), ablation, "torch"))
    np.testing.assert_allclose(corpus.pairs.change_both, np.mean(direct, axis=0), rtol=1e-4, atol=1e-6)


def test_report_numbers_words_and_thresholds(tiny_bert):
    report = head_report(tiny_bert, TEXT, ablation="mean")
    n = tiny_bert.info.num_layers * tiny_bert.info.num_heads
    assert report.pruning.heads_removed[0] == 0 and report.pruning.heads_removed[-1] == n
    assert np.all(np.diff(report.pruning.fraction) > 0)
    assert report.pairs.heads.shape == (5, 2) and np.all(np.diff(report.pairs.js_divergence) >= 0)
    assert np.all(report.pairs.heads[:, 0] < report.pairs.heads[:, 1])
    lines = health_report(report)
    assert "collapsed = normalised entropy < 0.1" in lines[0] and "sink score > 0.3" in lines[0]
    # A random tiny model attends almost uniformly (normalised entropy ≈ 0.99998): every head is diffuse, and
    # collapsed only under a threshold above that.
    assert report.flags.diffuse.all() and not report.flags.collapsed.any()
    strict = with_thresholds(report, HealthThresholds(collapsed=0.99999, diffuse=1.0))
    assert strict.flags.collapsed.all() and not strict.flags.diffuse.any()
    assert any("< 0.99999 (collapsed)" in line for line in health_report(strict))
    json.dumps(report_json(report, health_report(report)), allow_nan=False)


def test_a_flagged_entropy_prints_on_the_side_of_the_threshold_it_lies(tiny_bert):
    """Issue 44 (walkthrough, MiniLM in 简体中文): "归一化熵 0.90 > 0.9（弥散）" — a head at 0.9004 printed as equal to
    the threshold it exceeds. The printed number keeps as many decimals as it needs to compare as the measured one
    does."""
    import re

    report = head_report(tiny_bert, TEXT)
    entropy = report.statistics.entropy_normalized  # ≈ 0.99998 on a random tiny model
    just_below = float(np.nanmin(entropy)) - 1e-6   # every head diffuse, by less than any 2-decimal rounding shows
    cases = ((HealthThresholds(collapsed=0.99999, diffuse=1.0), "<", 0.99999),
             (HealthThresholds(collapsed=0.1, diffuse=just_below), ">", just_below))
    for thresholds, sign, threshold in cases:
        for lang in ("en", "zh"):
            lines = health_report(with_thresholds(report, thresholds), lang, per_kind=None)
            printed = [float(m) for line in lines for m in re.findall(rf"(\d\.\d+) {sign} {threshold:g}", line)]
            assert len(printed) == entropy.size, lines
            assert all(value < threshold if sign == "<" else value > threshold for value in printed), printed
    assert any("normalised entropy 1.00 > 0.9 (diffuse)" in line for line in health_report(report))  # 2 decimals


def test_the_map_s_layer_legend_stays_within_the_plot_s_height(tiny_bert):
    """Issue 44 walkthrough: on SmolLM2 (30 layers) the Heads page's MDS map listed its layers in one column that ran
    200 px below the plot at 1400 px. The legend takes as many columns as its entries need to fit the height."""
    from inspector.charts.heads import _LEGEND_ROW_PX, layer_legend, mds_chart

    for layers, height in ((30, 300), (30, 420), (18, 300), (6, 300), (1, 300)):
        columns = layer_legend(layers, height).columns
        rows = -(-layers // columns)
        assert (rows + 1) * _LEGEND_ROW_PX <= height, (layers, height, columns)  # + 1: the legend's title
        assert columns == 1 or -(-layers // (columns - 1)) * _LEGEND_ROW_PX > height - _LEGEND_ROW_PX  # no spare one
    assert layer_legend(6, 300).columns == 1 and layer_legend(30, 300).columns == 3
    report = head_report(tiny_bert, TEXT)
    legend = mds_chart(report).to_dict(validate=True)["encoding"]["color"]["legend"]
    assert legend == {"columns": 1, "symbolLimit": 0}


def test_pairs_reuse_the_single_head_ablations_and_match_a_direct_measurement(tiny_bert):
    """The second pass forwards only the pairs ablated together and the pruning steps; a pair's heads ablated
    one at a time are the first pass's single-head numbers — the same as ablating them afresh."""
    from inspector.analyses.head_importance import ablated_changes
    from inspector.core.outputs import model_output

    report = head_report(tiny_bert, TEXT)
    layers, heads = tiny_bert.info.num_layers, tiny_bert.info.num_heads
    inputs = encode_text(tiny_bert, TEXT).inputs
    base = model_output(tiny_bert, forward(tiny_bert, inputs, backend="torch", stats=()), inputs)
    masks = torch.zeros(3, layers * heads, dtype=torch.bool)
    first, second = report.pairs.heads[0]
    masks[0, first] = masks[1, second] = True
    masks[2, [first, second]] = True
    direct = ablated_changes(tiny_bert, inputs, base, masks.view(3, layers, heads), "zero", "torch")
    measured = [report.pairs.change_first[0], report.pairs.change_second[0], report.pairs.change_both[0]]
    np.testing.assert_allclose(measured, direct, rtol=1e-4, atol=1e-7)
    assert report.pruning.change[0] == 0.0  # nothing removed: no forward, 0 by definition


def test_progress_reports_the_share_of_the_whole_job(tiny_bert):
    calls = []
    texts = [TEXT, OTHER, "one two three"]
    head_report(tiny_bert, texts, progress=lambda done, total, label: calls.append((done, total, label)))
    done = [c[0] for c in calls]
    assert len({c[1] for c in calls}) == 1 and done[-1] == calls[0][1]  # one total; it ends at the total
    assert all(b > a for a, b in zip(done, done[1:]))
    # The second pass reports once per text; the first after each of its forwards (statistics, each batch of
    # ablated copies, then the gradients).
    second = next(i for i, call in enumerate(calls) if call[2].startswith("Redundant pairs"))
    assert len(calls) - second == len(texts) and second >= 3
    # The first pass (ablating every head, gradients) is most of the work: after it the bar is past half. (On this
    # 2-layer model each ablated copy resumes at its head's layer, so the copies weigh 1.5 forwards of 2, not 2.)
    assert done[second - 1] / calls[0][1] > 0.6
    assert "Redundant pairs and pruning: text 3 of 3 (100% of the work)" == calls[-1][2]


def test_one_text_s_progress_moves_before_its_first_pass_ends(tmp_path):
    """Issue 44: a single text's bar sat at 0 until the whole first pass was done. Now the report calls after the
    statistics forward (the first and smallest share), after each batch of ablated copies (one per layer the
    copies resume at) and after the gradients, then after the second pass, with increasing fractions up to 1."""
    lm = load_model(str(save_tiny_model(tmp_path / "gpt2-lm", "gpt2", with_head=True)))
    calls = []
    head_report(lm, TEXT, progress=lambda done, total, label: calls.append((done, total, label)))
    fractions = [done / total for done, total, _ in calls]
    assert all(b > a for a, b in zip(fractions, fractions[1:])) and fractions[-1] == 1.0
    notes = [note.split(" (")[0] for _, _, note in calls]
    batches = lm.info.num_layers if lm.can_resume else 1  # copies grouped by the layer they resume at
    assert notes == ["Statistics: text 1 of 1", *["Single-head ablations: text 1 of 1"] * batches,
                     "Statistics, single-head ablations and gradients: text 1 of 1",
                     "Redundant pairs and pruning: text 1 of 1"]
    assert 0 < fractions[0] < 0.1  # the statistics forward: one copy of the text of about 40


@pytest.mark.parametrize("arch", ["bert", "gpt2"])
def test_the_first_look_is_the_report_s_statistics_without_its_importances(tmp_path, arch):
    """head_first_look (what the Heads page draws first, issue 44): every statistic of the plain forward, the
    cluster order, the map and the special tokens exactly as the full report has them; no importance (NaN), no
    pairs, no pruning curve, and marked incomplete."""
    loaded = load_model(str(save_tiny_model(tmp_path / arch, arch, with_head=arch != "bert")))
    texts = [TEXT, OTHER, "one two three"]
    first, full = head_first_look(loaded, texts), head_report(loaded, texts)
    assert not first.complete and full.complete
    for f in fields(HeadStatistics):
        if f.name in ("importance_ablation", "gradient_raw"):
            assert np.isnan(getattr(first.statistics, f.name)).all()
        else:
            np.testing.assert_array_equal(getattr(first.statistics, f.name), getattr(full.statistics, f.name),
                                          err_msg=f.name)
    np.testing.assert_array_equal(first.order, full.order)
    np.testing.assert_array_equal(first.mds, full.mds)
    for mine, theirs in zip(first.key_sink_scores, full.key_sink_scores):
        np.testing.assert_array_equal(mine, theirs)
    assert (first.tokens, first.special_tokens, first.output_kind) == (full.tokens, full.special_tokens,
                                                                       full.output_kind)
    assert np.isnan(first.importance_gradient).all() and first.pairs.heads.shape == (0, 2)
    assert first.pruning.change.size == 0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=30), st.integers(1, 200),
       st.floats(0.01, 5.0))
def test_report_progress_fraction_label_and_eta(steps, texts, seconds_per_unit):
    """A fake callback sequence: the fraction grows within [0, 1], the label's count of texts is the fraction
    in texts (so bar and label agree), the rate is texts/s and the ETA is what is left at the pace so far."""
    total = sum(steps)
    done, previous = 0, -1.0
    for step in steps:
        done += step
        now = ReportProgress(done=done, total=total, texts=texts, elapsed=done * seconds_per_unit)
        assert 0.0 <= now.fraction <= 1.0 and now.fraction > previous
        previous = now.fraction
        assert now.texts_done / texts <= now.fraction + 1e-12
        assert now.fraction < (now.texts_done + 1) / texts or now.texts_done == texts
        assert (now.texts_done == texts) == (done == total)
        # Even pace: the rate is texts per (total · seconds per unit), the ETA the units left at that pace.
        assert now.rate == pytest.approx(texts / (total * seconds_per_unit))
        assert now.eta == pytest.approx((total - done) * seconds_per_unit)
        values = now.label_values()
        assert values["done"] == str(now.texts_done) and values["n"] == str(texts)
        assert int(values["percent"].rstrip("%")) == int(100 * now.fraction)
    assert now.eta == 0.0 and now.label_values()["percent"] == "100%"


def test_report_progress_before_any_work_and_bad_values():
    start = ReportProgress(done=0, total=10, texts=4, elapsed=0.0)
    assert start.fraction == 0.0 and start.texts_done == 0 and start.rate is None and start.eta is None
    assert start.label_values()["rate"] == "…" and start.label_values()["eta"] == "…"
    almost = ReportProgress(done=999, total=1000, texts=4, elapsed=1.0)
    assert almost.texts_done == 3 and almost.label_values()["percent"] == "99%"  # never "all" before the end
    for bad in ({"done": 11, "total": 10}, {"done": -1, "total": 10}, {"done": 0, "total": 0}):
        with pytest.raises(ValueError):
            ReportProgress(texts=4, elapsed=1.0, **bad)


def _statistics(layers=1, heads=2, **values):
    """A HeadStatistics of zeros with the given fields replaced (no model needed)."""
    n = layers * heads
    shapes = {"layer_entropy": (layers,), "token_mass": (layers, heads, len(TOKEN_CATEGORIES)),
              "norm_token_mass": (layers, heads, len(TOKEN_CATEGORIES)), "js_divergence": (n, n),
              "contribution_cosine": (n, n), "contribution_cka": (n, n)}
    return HeadStatistics(**{f.name: np.asarray(values.get(f.name, np.zeros(shapes.get(f.name, (layers, heads)))),
                                                dtype=np.float32) for f in fields(HeadStatistics)})


def test_corpus_mean_of_induction_skips_texts_without_repeats():
    nan = np.full((1, 2), np.nan)
    items = [_statistics(induction=[[0.2, 0.9]]), _statistics(induction=nan), _statistics(induction=[[0.4, 0.1]])]
    np.testing.assert_allclose(HeadStatistics.mean(items).induction, [[0.3, 0.5]], rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "mean of empty slice" warning when no text repeats anything
        assert np.isnan(HeadStatistics.mean([_statistics(induction=nan)] * 2).induction).all()
    with pytest.raises(ValueError, match="induction"):
        _statistics(induction=np.zeros((2, 2)))


def test_induction_in_the_report_words_json_and_grid(tiny_bert):
    from inspector.charts.heads import head_grid_chart, head_table

    # No word repeats (the tokenizer knows every one of them), so no row can measure induction.
    report = head_report(tiny_bert, "a cat sat on the mat")
    assert np.isnan(report.statistics.induction).all()
    assert ("No token repeats in the text, so induction heads cannot show here: give a text that repeats a phrase "
            "(… A B … A) to find them.") in health_report(report)
    payload = report_json(report, health_report(report))
    json.dumps(payload, allow_nan=False)
    assert payload["induction"]["threshold"] == INDUCTION_HEAD_SCORE
    assert all(value is None for row in payload["induction"]["score"] for value in row)
    spec = head_grid_chart(report, "induction").to_dict(validate=True)  # every cell grey, a valid chart
    assert spec["title"]["text"] == "Heads coloured by induction score (Olsson et al.)"
    assert set(head_table(report)["induction_text"]) == {"none (no token repeats)"}

    scores = np.zeros_like(report.statistics.induction)
    scores[1, 2], scores[0, 3], scores[1, 0] = 0.93, 0.55, INDUCTION_HEAD_SCORE  # exactly at the threshold: not one
    found = replace(report, statistics=replace(report.statistics, induction=scores))
    assert ("Induction heads (a repeated token attends to the token that followed its earlier occurrence — Olsson et "
            "al. 2022; score > 0.4): Layer 1 head 2 (0.93), Layer 0 head 3 (0.55).") in health_report(found)
    weak = np.full_like(scores, 0.05)
    weak[0, 1] = 0.12
    none_found = replace(report, statistics=replace(report.statistics, induction=weak))
    assert ("No induction head: no head puts more than 40% of a repeated token's attention on the token after its "
            "earlier occurrence (highest 0.12, Layer 0 head 1).") in health_report(none_found)
    assert list(head_table(none_found)["induction_text"])[:2] == ["0.050", "0.120"]


def test_language_models_and_classifiers_are_judged_in_their_own_terms(tmp_path):
    lm = load_model(str(save_tiny_model(tmp_path / "gpt2-lm", "gpt2", with_head=True)))
    torch.manual_seed(0)
    classifier = AutoModelForSequenceClassification.from_config(tiny_config("bert"), attn_implementation="eager")
    classifier.save_pretrained(tmp_path / "bert-cls", safe_serialization=True)
    make_tokenizer().save_pretrained(tmp_path / "bert-cls")
    for loaded, kind in ((lm, "distribution"), (load_model(str(tmp_path / "bert-cls")), "logits")):
        report = head_report(loaded, [TEXT, OTHER])
        assert report.output_kind == kind
        assert (report.statistics.importance_ablation > 0).any() and (report.statistics.gradient_raw > 0).any()
        assert np.all(np.isfinite(report.pruning.change)) and report.pruning.change[-1] > 0


def test_a_batch_of_output_changes_equals_output_change_row_by_row(tmp_path, tiny_bert):
    from inspector.analyses.batching import padded_batch
    from inspector.core.outputs import model_output, output_change, output_changes

    lm = load_model(str(save_tiny_model(tmp_path / "gpt2-lm", "gpt2", with_head=True)))
    torch.manual_seed(0)
    classifier = AutoModelForSequenceClassification.from_config(tiny_config("bert"), attn_implementation="eager")
    classifier.save_pretrained(tmp_path / "bert-cls", safe_serialization=True)
    make_tokenizer().save_pretrained(tmp_path / "bert-cls")
    texts = [TEXT, OTHER, "one two three"]
    for loaded, kind in ((tiny_bert, "embedding"), (lm, "distribution"),
                         (load_model(str(tmp_path / "bert-cls")), "logits")):
        ids = [encode_text(loaded, text).inputs["input_ids"][0] for text in texts]
        batch = padded_batch(loaded, ids)
        encoded = [encode_text(loaded, text).inputs for text in texts]
        bases = [model_output(loaded, forward(loaded, inputs, stats=()), inputs) for inputs in encoded]
        ablated = forward(loaded, batch, stats=(), interventions=[HeadAblation(0, (1,))])
        rows = [output_change(bases[b], model_output(loaded, ablated, batch, sequence=b)) for b in range(len(texts))]
        assert bases[0].kind == kind and min(rows) > 0
        np.testing.assert_allclose(output_changes(loaded, ablated, batch, bases), rows, rtol=1e-5, atol=1e-7,
                                   err_msg=kind)


@pytest.mark.parametrize("arch", ["bert", "gpt2", "mistral"])
@pytest.mark.parametrize("ablation", ["zero", "mean"])
def test_ablated_copies_resumed_at_their_heads_layer_equal_whole_forwards(tmp_path, arch, ablation):
    """Each single-head ablation copy starts at its head's layer from the unablated batch's block outputs
    (right-padded, ragged lengths); its output change equals the copy run through every layer."""
    from inspector.analyses.head_importance import texts_changes
    from inspector.analyses.head_statistics import texts_statistics

    loaded = load_model(str(save_tiny_model(tmp_path / arch, arch, with_head=arch != "bert")))
    assert loaded.can_resume
    ids = [encode_text(loaded, text).inputs["input_ids"][0] for text in (TEXT, OTHER, "one two three")]
    measured, outputs = texts_statistics(loaded, ids, "torch")
    assert len(outputs) == loaded.info.num_layers and len({int(row.shape[0]) for row in ids}) > 1
    layers, heads = loaded.info.num_layers, loaded.info.num_heads
    single = torch.eye(layers * heads, dtype=torch.bool).view(layers * heads, layers, heads)
    bases = [base for *_, base in measured]
    resumed = texts_changes(loaded, ids, bases, single, ablation, "torch", outputs)
    whole = texts_changes(loaded, ids, bases, single, ablation, "torch")
    # Something to compare: a random encoder attends almost uniformly, so the mean over its tokens is each token's
    # own output and mean ablation changes nothing; zero ablation, or any causal model, does change the output.
    assert (whole > 0).any() or (arch, ablation) == ("bert", "mean")
    np.testing.assert_allclose(resumed, whole, rtol=1e-4, atol=1e-7)


def test_gradient_importance_is_the_same_vmapped_or_one_direction_at_a_time(tiny_bert, monkeypatch):
    """An embedding's directions share one forward; the torch backend vmaps their backwards, Triton (whose
    backward kernel has no batching rule) runs them one after another. Both give the same importances."""
    from inspector.analyses.head_importance import texts_gradients
    from inspector.core.outputs import model_output

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    ids = [encode_text(tiny_bert, text).inputs["input_ids"][0] for text in (TEXT, OTHER)]
    encoded = [encode_text(tiny_bert, text).inputs for text in (TEXT, OTHER)]
    bases = [model_output(tiny_bert, forward(tiny_bert, inputs, stats=()), inputs) for inputs in encoded]
    vmapped = texts_gradients(tiny_bert, ids, bases, "torch")
    one_at_a_time = texts_gradients(tiny_bert, ids, bases, "triton")
    assert (vmapped > 0).all()
    np.testing.assert_allclose(one_at_a_time, vmapped, rtol=1e-4, atol=1e-6)


def test_bundled_corpus_is_varied_and_readable():
    texts = read_corpus(CORPUS_PATH)
    assert 100 <= len(texts) <= 200 and len(set(texts)) == len(texts)
    with pytest.raises(InvalidRequestError, match="cannot read"):
        read_corpus(Path("/nonexistent/corpus.txt"))


# ------------------------------------------------------------------------------------------------------ CLI

def test_cli_heads_writes_the_documented_json(tmp_path, tiny_model_dirs):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(f"# two texts\n{TEXT}\n\n{OTHER}\n", encoding="utf-8")
    out = tmp_path / "heads.json"
    assert main(["heads", "--model", str(tiny_model_dirs["gpt2"]), "--corpus", str(corpus), "--json", str(out),
                 "--collapsed", "0.2"]) == 0
    payload = json.loads(out.read_text())
    for key in ("entropy", "entropy_normalized", "special_token_mass", "sink_scores", "js_distance", "importance",
                "pruning_curve", "thresholds", "model"):
        assert key in payload
    assert payload["thresholds"]["collapsed"] == 0.2 and payload["model"]["causal"] is True
    assert len(payload["texts"]) == 2 and len(payload["sink_scores"]["per_text"]) == 2
    assert payload["output_measure"]["kind"] == "embedding"
    js = np.array(payload["js_distance"])
    assert js.shape == (8, 8) and np.allclose(js, js.T)
    assert set(payload["importance"]) >= {"ablation", "gradient"}
    assert set(payload["special_token_mass"]) == set(TOKEN_CATEGORIES)


def test_cli_heads_bad_input_exits_2(tmp_path, tiny_model_dirs, capsys):
    model = str(tiny_model_dirs["bert"])
    assert main(["heads", "--model", model, "--text", "  ", "--json", str(tmp_path / "o.json")]) == 2
    assert main(["heads", "--model", model, "--text", TEXT, "--sink", "2"]) == 2
    assert main(["heads", "--model", model, "--corpus", str(tmp_path / "missing.txt")]) == 2
    assert capsys.readouterr().err.count("error:") == 3


def test_head_charts_are_valid_vega_lite_in_both_modes(tiny_bert):
    from inspector.charts.heads import GRID_METRICS, head_grid_chart, head_matrix_chart, mds_chart, pruning_chart

    report = head_report(tiny_bert, TEXT)
    for slide in (False, True):
        for metric in GRID_METRICS:
            spec = head_grid_chart(report, metric, selected=(1, 2), slide=slide).to_dict(validate=True)
            assert [p["name"] for p in spec["params"]] == ["head_pick"]  # Altair lifts the click selection to the top
        head_matrix_chart(report, report.statistics.js_divergence, title="JS", legend="nats", domain=(0.0, JS_MAX),
                          slide=slide).to_dict(validate=True)
        mds_chart(report, slide=slide).to_dict(validate=True)
        pruning_chart(report, slide=slide).to_dict(validate=True)
    with pytest.raises(ValueError, match="metric"):
        head_grid_chart(report, "colour")


# ---- issue 17: the Heads charts speak the page's language

# Authors cited by name in both languages (Olsson et al. → Olsson 等).
_AUTHORS = ("Olsson", "Michel", "Clark")


def _head_charts(report, lang: str) -> dict:
    from inspector.base.i18n import t
    from inspector.charts.heads import GRID_METRICS, head_grid_chart, head_matrix_chart, mds_chart, pruning_chart

    charts = {}
    for slide in (False, True):
        for metric in GRID_METRICS:
            charts[f"grid-{metric}-{slide}"] = head_grid_chart(report, metric, selected=(1, 2), slide=slide,
                                                               lang=lang)
        # The Heads page's two matrices, titled as the page titles them.
        charts[f"js-{slide}"] = head_matrix_chart(report, report.statistics.js_divergence,
                                                  title=t("chart.heads.js_title", lang),
                                                  legend=t("chart.heads.js_legend", lang), domain=(0.0, JS_MAX),
                                                  slide=slide, lang=lang)
        charts[f"cka-{slide}"] = head_matrix_chart(report, report.statistics.contribution_cka,
                                                   title=t("chart.heads.cka_title", lang),
                                                   legend=t("chart.heads.cka_legend", lang), domain=(0.0, 1.0),
                                                   scheme="magma", slide=slide, lang=lang)
        charts[f"mds-{slide}"] = mds_chart(report, slide=slide, lang=lang)
        charts[f"pruning-{slide}"] = pruning_chart(report, slide=slide, lang=lang)
    return charts


def test_head_charts_in_chinese_show_no_english_words(bundled):
    import altair as alt

    from inspector.charts.heads import head_grid_chart, pruning_chart
    from inspector.charts.sentences.heads import measure_words
    from tests.chart_text import chart_strings, english_words

    report = head_report(bundled, "the cat sat on the mat , the cat ran")
    flagged = with_thresholds(report, HealthThresholds(collapsed=0.3, diffuse=0.7))  # C and D marks on the grid
    assert flagged.flags.collapsed.any() and flagged.flags.diffuse.any()
    no_repeats = replace(flagged, statistics=replace(flagged.statistics,
                                                     induction=np.full_like(flagged.statistics.induction, np.nan)))
    chinese, english = _head_charts(flagged, "zh"), _head_charts(flagged, "en")
    for lang, charts in (("zh", chinese), ("en", english)):  # a mean ablation; a text without an induction score
        charts["mean-pruning"] = pruning_chart(replace(flagged, ablation_mode="mean"), lang=lang)
        charts["no-induction-grid"] = head_grid_chart(no_repeats, "induction", lang=lang)
    with alt.data_transformers.disable_max_rows():  # 72 × 72 heads: 5,184 rows, over Altair's default limit
        specs = {name: (chart.to_dict(validate=True), english[name].to_dict()) for name, chart in chinese.items()}
    for name, (zh, en) in specs.items():
        assert english_words(chart_strings(zh), allowed=_AUTHORS) == [], name
        assert english_words(chart_strings(en), allowed=_AUTHORS), name  # the check can fail
    # 72 heads do not all get a label in the matrices: the note says so, in Chinese.
    assert any("注意力头" in line for line in specs["js-False"][0]["title"]["subtitle"])
    grid, english_grid = specs["grid-entropy-False"]
    data = next(iter(grid["datasets"].values()))
    assert {row["mark"] for row in data} == {"坍", "弥", ""} and {row["flag"] for row in data} == {"坍缩", "弥散", ""}
    assert {row["mark"] for row in next(iter(english_grid["datasets"].values()))} == {"C", "D", ""}
    pruning, english_pruning = specs["pruning-False"]
    assert pruning["layer"][0]["encoding"]["y"]["title"] == measure_words(flagged, "zh")
    # English stays as it was: the measure's own name and the ablation mode's word.
    assert english_pruning["layer"][0]["encoding"]["y"]["title"] == flagged.change_name
    assert "removal: mean ablation" in " ".join(specs["mean-pruning"][1]["title"]["subtitle"])
    assert "换成均值消融" in " ".join(specs["mean-pruning"][0]["title"]["subtitle"])
    induction = next(iter(specs["no-induction-grid"][0]["datasets"].values()))
    assert {row["induction_text"] for row in induction} == {"无（没有重复的词元）"}


def test_head_table_words_follow_the_language(tiny_bert):
    from inspector.charts.heads import head_table

    report = head_report(tiny_bert, "a cat sat on the mat")  # no token repeats: no induction score
    assert set(head_table(report, "zh")["induction_text"]) == {"无（没有重复的词元）"}
    assert list(head_table(report, "zh").columns) == list(head_table(report).columns)  # fields stay English


def test_a_corpus_line_holding_a_unicode_line_separator_stays_one_text(tmp_path):
    """Issue 33: the Heads corpus and ``--corpus`` files break at newlines only, as the census does."""
    from inspector.analyses.heads import read_corpus
    from inspector.cli.common import read_lines

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("one\u2028still one\ntwo\x0cstill two\r\n# a comment\n", encoding="utf-8")
    assert read_corpus(corpus) == ["one\u2028still one", "two\x0cstill two"]
    corpus.write_text("one\u2028still one\ntwo\x0cstill two\r\n", encoding="utf-8")
    assert read_lines(str(corpus), "--corpus") == ["one\u2028still one", "two\x0cstill two"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_pair_verdict_states_its_thresholds_and_flips_at_them(lang):
    """Issue 44 item 4: the redundancy verdict of two heads ablated together names the factors it was judged by, and
    changes just above and just below each: REDUNDANT_FACTOR × the larger alone, ADDITIVE_FACTOR × the two added."""
    from inspector.charts.sentences.heads import ADDITIVE_FACTOR, REDUNDANT_FACTOR, pair_verdict

    first, second = 0.4, 0.3
    limit, total = REDUNDANT_FACTOR * first, ADDITIVE_FACTOR * (first + second)
    eps = 1e-9
    assert pair_verdict(limit, first, second, lang)[0] == "heads.report.pair_redundant"
    assert pair_verdict(limit + eps, first, second, lang)[0] == "heads.report.pair_partly_redundant"
    assert pair_verdict(total - eps, first, second, lang)[0] == "heads.report.pair_partly_redundant"
    assert pair_verdict(total, first, second, lang)[0] == "heads.report.pair_not_redundant"
    for both in (limit, (limit + total) / 2, total):
        sentence = pair_verdict(both, first, second, lang)[1]
        assert f"{REDUNDANT_FACTOR:g}" in sentence or f"{ADDITIVE_FACTOR:g}" in sentence
        assert f"{limit:.4f}" in sentence or f"{total:.4f}" in sentence
