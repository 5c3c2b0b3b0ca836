"""The attribution lab (inspector/analyses/attribution/): each method checked against what it must satisfy —
IG completeness, occlusion on linear toys, rank-correlation limits, uniform weights through the attention
function equal to uniform weights by hand, the adversarial search's constraint, ERASER on a known ranking —
and the report on every kind of target, on tiny random models."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoModelForCausalLM, BertForMaskedLM, BertForSequenceClassification

from inspector.analyses.attribution import (
    FIRST_LOOK_METHODS,
    METHODS,
    AttributionSettings,
    TargetSpec,
    agreement,
    attention_rollout,
    attribute,
    bootstrap_mean_interval,
    corpus_agreement,
    counterfactual_attention,
    eraser_faithfulness,
    first_look_settings,
    leave_one_out,
    method_scores,
    occlusion_on_embeddings,
    random_tau_interval,
    ranking_agreement,
    report_json,
    top_k_overlap,
    word_level,
)
from inspector.base.errors import InvalidRequestError, InvalidTextError
from inspector.charts.attribution import (
    agreement_chart,
    counterfactual_chart,
    decay_chart,
    faithfulness_frame,
    head_tau_chart,
    scores_chart,
)
from inspector.core.forward import encode_text, forward
from inspector.core.loading import load_model
from tests.conftest import make_tokenizer, tiny_config
from tests.tolerances import close

TEXT = "the animal did n't cross the street because it was too tired ."
REFERENCE = "a cat sat on the mat ."
FAST = AttributionSettings(ig_steps=8, permutations=10)


def _save(folder, model):
    model.save_pretrained(folder, safe_serialization=True)
    make_tokenizer().save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def headed_models(tmp_path_factory, tiny_model_dirs):
    """Tiny models of every target kind: no head (bert), masked LM, causal LM (gpt2), classifier."""
    root = tmp_path_factory.mktemp("attribution-models")
    torch.manual_seed(0)
    masked = BertForMaskedLM(tiny_config("bert"))
    torch.manual_seed(1)
    classifier_config = tiny_config("bert")
    classifier_config.num_labels = 3
    classifier = BertForSequenceClassification(classifier_config)
    torch.manual_seed(2)
    causal = AutoModelForCausalLM.from_config(tiny_config("gpt2"))
    # Default initialisation gives a tiny model near-uniform attention; larger weights give it sharp rows,
    # so replacing a row by uniform weights visibly changes the output.
    sharp_config = tiny_config("bert")
    sharp_config.initializer_range = 0.3
    torch.manual_seed(3)
    sharp = AutoModel.from_config(sharp_config)
    return {
        "none": load_model(str(tiny_model_dirs["bert"])),
        "sharp": load_model(_save(root / "sharp", sharp)),
        "masked-lm": load_model(_save(root / "masked", masked)),
        "classifier": load_model(_save(root / "classifier", classifier)),
        "causal-lm": load_model(_save(root / "causal", causal)),
    }


# ------------------------------------------------------------------------------------------ pure pieces

def test_kendall_of_identical_rankings_is_one_and_of_reversed_minus_one():
    scores = np.array([0.3, 0.1, 0.9, 0.5, 0.7])
    tau, rho = ranking_agreement(scores, scores * 2 + 1)
    assert tau == pytest.approx(1.0) and rho == pytest.approx(1.0)
    tau, rho = ranking_agreement(scores, -scores)
    assert tau == pytest.approx(-1.0) and rho == pytest.approx(-1.0)
    assert top_k_overlap(scores, scores, 2) == 1.0 and top_k_overlap(scores, -scores, 2) == 0.0


def test_random_tau_band_is_centred_on_zero_and_narrows_with_length():
    short, long = random_tau_interval(6, samples=500), random_tau_interval(60, samples=500)
    assert short[0] < 0 < short[1] and long[0] < 0 < long[1]
    assert long[1] - long[0] < short[1] - short[0]


def test_agreement_matrix_is_symmetric_with_unit_diagonal():
    rng = np.random.default_rng(0)
    scores = {name: rng.random(9) for name in ("a", "b", "c")}
    content = np.ones(9, dtype=bool)
    content[0] = False
    result = agreement(scores, content, k=3)
    assert result.methods == ("a", "b", "c")
    np.testing.assert_allclose(np.diag(result.kendall), 1.0)
    np.testing.assert_allclose(result.kendall, result.kendall.T)
    tau = ranking_agreement(scores["a"][1:], scores["c"][1:])[0]
    assert result.kendall[0, 2] == pytest.approx(tau)


def test_occlusion_on_a_linear_toy_recovers_its_weights():
    torch.manual_seed(0)
    n, hidden = 7, 5
    direction = torch.randn(hidden)
    embeds = torch.randn(1, n, hidden)
    replacement = torch.zeros(hidden)

    def linear(batch):  # f(E) = Σ_j E_j · direction: token j contributes E_j · direction
        return (batch @ direction).sum(dim=1)

    positions = [1, 2, 4, 6]
    scores = occlusion_on_embeddings(linear, embeds, replacement, positions, per_eval=3)
    np.testing.assert_allclose(scores, (embeds[0, positions] @ direction).double().numpy(), atol=1e-5)

    weights = {10: 0.5, 11: -2.0, 12: 3.0, 13: 0.25}  # f(ids) = Σ weight[id]: deleting j removes weight[id_j]
    ids = [1, 10, 11, 12, 13, 2]
    evaluate = lambda rows: np.array([sum(weights.get(t, 0.0) for t in row) for row in rows])  # noqa: E731
    np.testing.assert_allclose(leave_one_out(evaluate, ids, [1, 2, 3, 4], float(evaluate([ids])[0])),
                               [0.5, -2.0, 3.0, 0.25])


def test_a_perfect_rankings_comprehensiveness_beats_random():
    rng = np.random.default_rng(0)
    n = 40
    ids = list(range(100, 100 + n))
    weights = {t: w for t, w in zip(ids, rng.exponential(size=n))}
    protected = np.zeros(n, dtype=bool)
    protected[[0, -1]] = True

    def evaluate(rows):  # linear toy: f = Σ weight of the tokens present; [MASK] (id 4) weighs nothing
        values = np.array([sum(weights.get(t, 0.0) for t in row if t != 4) for row in rows])
        return values, np.full(len(rows), -1)

    f0 = float(evaluate([ids])[0][0])
    perfect = np.array([weights[t] for t in ids])
    scores = {"perfect": perfect, "random": rng.random(n), "reversed": -perfect}
    for mode in ("mask", "delete"):
        result = eraser_faithfulness(evaluate, ids, protected, f0, scores, mode=mode, replacement=(4, "[MASK]"))
        comp, suff = result.aopc_comprehensiveness, result.aopc_sufficiency
        assert comp[0] > comp[1] > comp[2], comp
        assert suff[0] < suff[1] < suff[2], suff
        assert result.curve[:, 0] == pytest.approx([f0] * 3)  # nothing removed yet
        assert result.flip_fraction[0] <= result.flip_fraction[1]
    assert result.removal == "delete" and result.replacement is None


def test_rollout_of_identity_attention_is_identity_and_rows_sum_to_one():
    n = 5
    eye = np.broadcast_to(np.eye(n), (3, n, n))
    np.testing.assert_allclose(attention_rollout([eye, eye]), np.eye(n))
    rng = np.random.default_rng(0)
    layers = [rng.dirichlet(np.ones(n), size=(2, n)) for _ in range(3)]
    np.testing.assert_allclose(attention_rollout(layers).sum(axis=-1), 1.0)


def test_word_level_sums_pieces_and_bootstrap_brackets_the_mean():
    scores = np.array([np.nan, 1.0, 2.0, 4.0, np.nan])
    np.testing.assert_allclose(word_level(scores, np.array([-1, 0, 0, 1, -1])), [3.0, 4.0])
    samples = np.random.default_rng(0).normal(0.3, 0.1, size=(30, 2, 2))
    mean, low, high = bootstrap_mean_interval(samples, resamples=500)
    assert np.all(low <= mean) and np.all(mean <= high)


# ------------------------------------------------------------------------------------- on tiny models

@pytest.mark.parametrize("arch", ("bert", "distilbert", "gpt2", "llama"))
def test_inputs_embeds_reproduce_input_ids(tiny_model_dirs, arch):
    loaded = load_model(str(tiny_model_dirs[arch]))
    inputs = encode_text(loaded, TEXT).inputs
    embeds = loaded.model.get_input_embeddings()(inputs["input_ids"])
    by_ids = forward(loaded, inputs).outputs.last_hidden_state
    by_embeds = forward(loaded, {"inputs_embeds": embeds, "attention_mask": inputs["attention_mask"]})
    close(by_embeds.outputs.last_hidden_state, by_ids, "hidden")


def test_integrated_gradients_are_complete_within_the_convergence_delta(headed_models):
    loaded = headed_models["none"]
    report = attribute(loaded, TEXT, spec=TargetSpec(reference=REFERENCE),
                       settings=AttributionSettings(ig_steps=48, methods=("integrated_gradients",), head_grid=False,
                                                    permutations=0))
    ig = report.ig
    total = float(np.sum(report.scores["integrated_gradients"]))
    gap = report.target.value - ig.baseline_value
    # Completeness: Σ IG = f(x) − f(baseline) up to Captum's own convergence delta (which it computes as
    # exactly this difference; the check ties our reported f values and scores to it).
    assert abs(total - gap) <= abs(ig.delta) + 1e-5
    assert abs(ig.delta) < 0.05 * abs(gap) + 1e-4, (ig.delta, gap)
    assert report.scores["integrated_gradients"][report.special].tolist() == [0.0, 0.0]  # baseline keeps specials


def test_uniform_row_through_the_backend_equals_uniform_weights_by_hand(headed_models):
    loaded = headed_models["sharp"]
    layer, query = 1, 3
    result = counterfactual_attention(loaded, TEXT, spec=TargetSpec(reference=REFERENCE), layer=layer, query=query,
                                      permutations=3, adversarial=False)
    eager = AutoModel.from_pretrained(loaded.info.source, attn_implementation="eager").eval()
    self_attention = eager.encoder.layer[layer].attention.self
    inputs = encode_text(loaded, TEXT).inputs
    reference_inputs = encode_text(loaded, REFERENCE).inputs

    def uniform_row(module, args, output):
        hidden = args[0]
        batch, n, _ = hidden.shape
        values = module.value(hidden).view(batch, n, -1, module.attention_head_size)  # (batch, n, heads, d)
        context = output[0].clone()
        context[:, query] = values.mean(dim=1).reshape(batch, -1)  # every head: weight 1/n on every key
        return (context, *output[1:])

    def sentence_embedding(model_inputs):
        with torch.no_grad():
            hidden = eager(**model_inputs).last_hidden_state[0]
        return torch.nn.functional.normalize(hidden.mean(dim=0), dim=0)

    reference = sentence_embedding(reference_inputs)
    f0 = float(sentence_embedding(inputs) @ reference)
    handle = self_attention.register_forward_hook(uniform_row)
    try:
        f_uniform = float(sentence_embedding(inputs) @ reference)
    finally:
        handle.remove()
    assert result.uniform_change == pytest.approx(abs(f_uniform - f0), abs=1e-5)
    assert result.uniform_change > 1e-3 and result.uniform_jsd > 0.05
    np.testing.assert_allclose(result.uniform, np.full(len(result.uniform), 1 / len(result.uniform)))


def test_adversarial_search_keeps_the_output_and_beats_uniform_jsd(headed_models):
    loaded = headed_models["sharp"]
    seen = []
    result = counterfactual_attention(loaded, TEXT, spec=TargetSpec(reference=REFERENCE), layer=1, head=2,
                                      permutations=20, steps=120,
                                      progress=lambda done, total, note: seen.append(done / total))
    assert result.adversarial is not None
    assert result.adversarial_change <= result.epsilon
    assert result.adversarial_jsd > result.uniform_jsd
    assert result.adversarial.sum() == pytest.approx(1.0, abs=1e-5)
    assert 0 < result.adversarial_steps <= 120 and seen and seen[-1] <= 1.0
    assert len(result.permutation_changes) == 20 and f"{result.adversarial_jsd:.2f}" in result.verdict


@pytest.mark.parametrize("kind", ("none", "masked-lm", "causal-lm", "classifier"))
@pytest.mark.parametrize("removal", ("mask", "delete"))
def test_report_on_every_target_kind(headed_models, kind, removal):
    loaded = headed_models[kind]
    text = TEXT.replace("street", "[MASK]") if kind == "masked-lm" else TEXT
    report = attribute(loaded, text, spec=TargetSpec(reference=REFERENCE),
                       settings=AttributionSettings(ig_steps=8, permutations=5, removal=removal))
    expected_kind = {"none": "similarity", "masked-lm": "masked-token", "causal-lm": "next-token",
                     "classifier": "class"}[kind]
    assert report.target.kind == expected_kind and report.target.description
    assert tuple(report.scores) == METHODS and not report.skipped
    n = len(report.tokens)
    for method, values in report.scores.items():
        assert values.shape == (n,)
        assert np.isfinite(values[~report.protected]).all(), method
    if kind == "masked-lm":
        assert report.protected[report.target.position] and report.query == report.target.position
    if kind == "causal-lm":
        assert report.query == n - 1
    assert report.agreement.head_tau.shape == (loaded.info.num_layers, loaded.info.num_heads)
    np.testing.assert_allclose(report.scores["attention"].sum(), 1.0, atol=1e-5)
    faithful = report.faithfulness
    assert faithful.comprehensiveness.shape == (len(METHODS), 5) and faithful.removal == removal
    assert faithful.curve[:, 0] == pytest.approx([report.target.value] * len(METHODS), abs=1e-5)
    assert report.counterfactual is not None and report.counterfactual.adversarial is None
    payload = report_json(report)
    assert payload["agreement"]["methods"] == list(METHODS) and payload["target"]["kind"] == expected_kind


def test_occlusion_by_mask_equals_the_masked_text_through_input_ids(headed_models):
    loaded = headed_models["none"]
    report = attribute(loaded, TEXT, spec=TargetSpec(reference=REFERENCE),
                       settings=AttributionSettings(methods=("occlusion",), head_grid=False, permutations=0))
    inputs = encode_text(loaded, TEXT).inputs
    masked = copy.deepcopy(inputs)
    masked["input_ids"][0, 2] = loaded.tokenizer.mask_token_id
    # the ids route, independent of Captum's embeddings
    from inspector.analyses.attribution.targets import evaluate_rows as _evaluate_rows
    from inspector.analyses.attribution.targets import setup_problem as _setup

    problem, _, _ = _setup(loaded, TEXT, TargetSpec(reference=REFERENCE), "torch", 2**26)
    value = _evaluate_rows(problem, [masked["input_ids"][0].tolist()])[0][0]
    assert report.scores["occlusion"][2] == pytest.approx(report.target.value - value, abs=1e-5)


def test_bad_requests_are_clear_errors(headed_models):
    with pytest.raises(InvalidTextError, match="MASK"):
        attribute(headed_models["masked-lm"], TEXT, settings=FAST)
    with pytest.raises(InvalidRequestError, match="layers 0–1"):
        attribute(headed_models["none"], TEXT, settings=AttributionSettings(layer=4))
    with pytest.raises(InvalidRequestError, match="tokens 0–"):
        attribute(headed_models["none"], TEXT, settings=AttributionSettings(query=99))
    with pytest.raises(InvalidRequestError, match="unknown attribution methods"):
        AttributionSettings(methods=("attention", "shap"))
    with pytest.raises(InvalidRequestError, match="single token"):
        attribute(headed_models["causal-lm"], TEXT, spec=TargetSpec(token="the cat"), settings=FAST)


def test_corpus_agreement_gives_intervals_per_pair(headed_models):
    texts = [TEXT, "a cat sat on the mat and a dog ran fast .", "one two three four five six seven ."]
    result = corpus_agreement(headed_models["none"], texts, spec=TargetSpec(reference=REFERENCE),
                              settings=AttributionSettings(ig_steps=4, methods=("attention", "gradient", "occlusion")),
                              resamples=200)
    assert result.per_text.shape == (3, 3, 3)
    assert np.all(result.low <= result.mean + 1e-12) and np.all(result.mean <= result.high + 1e-12)


def test_cli_attribute_writes_the_report_json(tmp_path, headed_models):
    from inspector.cli import main

    out = tmp_path / "attribution.json"
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat .\n\na dog ran fast .\n", encoding="utf-8")
    folder = headed_models["sharp"].info.source
    assert main(["attribute", "--model", folder, "--text", TEXT, "--reference", REFERENCE, "--ig-steps", "4",
                 "--permutations", "5", "--adversarial-steps", "5", "--layer", "1", "--head", "0", "--json",
                 str(out), "--corpus", str(corpus)]) == 0
    import json

    payload = json.loads(out.read_text())
    assert payload["target"]["kind"] == "similarity" and payload["layer"] == 1 and payload["head"] == 0
    assert payload["agreement"]["methods"] == list(METHODS)
    assert len(payload["agreement"]["kendall"]) == len(METHODS)
    assert set(payload["scores"]) == set(METHODS) and len(payload["scores"]["attention"]) == len(payload["tokens"])
    assert payload["faithfulness"]["bins"] == [0.01, 0.05, 0.1, 0.2, 0.5]
    counterfactual = payload["counterfactual"]
    assert counterfactual["adversarial_steps"] == 5 and len(counterfactual["permutation_changes"]) == 5
    assert counterfactual["verdict"]
    corpus_agreement = payload["corpus_agreement"]
    assert corpus_agreement["texts"] == 2 and len(corpus_agreement["kendall_low_95"]) == len(METHODS)


def test_cli_attribute_bad_input_exits_2(capsys, headed_models):
    from inspector.cli import main

    assert main(["attribute", "--model", headed_models["masked-lm"].info.source, "--text", TEXT,
                 "--adversarial-steps", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and "MASK" in err[-1]


def test_masked_lm_rows_are_read_at_the_targets_mask_even_with_other_masks(headed_models):
    from inspector.analyses.attribution.targets import evaluate_rows as _evaluate_rows
    from inspector.analyses.attribution.targets import setup_problem as _setup

    loaded = headed_models["masked-lm"]
    text = TEXT.replace("street", "[MASK]")
    problem, _, _ = _setup(loaded, text, TargetSpec(), "torch", 2**26)
    ids = problem.input_ids[0].tolist()
    masked_first = list(ids)
    masked_first[1] = loaded.tokenizer.mask_token_id  # a removal by [MASK] before the target's own [MASK]
    deleted = ids[:1] + ids[2:]  # a deletion before it shifts the target one position left
    values, _ = _evaluate_rows(problem, [masked_first, deleted])
    for row, value, position in ((masked_first, values[0], problem.target.position),
                                 (deleted, values[1], problem.target.position - 1)):
        logits = forward(loaded, {"input_ids": torch.tensor([row]),
                                  "attention_mask": torch.ones(1, len(row), dtype=torch.long)}).outputs.logits
        expected = torch.log_softmax(logits[0, position].float(), dim=-1)[problem.target.token_id]
        assert value == pytest.approx(float(expected), abs=1e-5)


def test_scores_only_path_skips_faithfulness(headed_models):
    settings = AttributionSettings(ig_steps=4, faithfulness=False, permutations=0, head_grid=False)
    report = attribute(headed_models["classifier"], TEXT, spec=TargetSpec(class_index=1), settings=settings)
    assert report.faithfulness is None and report.counterfactual is None and report.agreement.head_tau is None
    assert report.target.class_index == 1 and set(report.scores) == set(METHODS)
    assert report_json(report)["faithfulness"] is None
    # The scores alone (what the ground-truth scoreboard ranks): the same numbers, without the agreement.
    scored = method_scores(headed_models["classifier"], TEXT, spec=TargetSpec(class_index=1), settings=settings)
    assert scored.tokens == report.tokens and scored.query == report.query and scored.target == report.target
    assert np.array_equal(scored.protected, report.protected) and list(scored.scores) == list(report.scores)
    for method, values in report.scores.items():
        np.testing.assert_array_equal(scored.scores[method], values)


@pytest.mark.parametrize("slide", (False, True))
def test_attribution_charts_are_valid_vega_lite_with_tokens_as_data(headed_models, slide):

    text = "the <b>cat</b> sat on the mat ."
    report = attribute(headed_models["none"], text, spec=TargetSpec(reference=REFERENCE), settings=FAST)
    agreed = report.agreement
    charts = [scores_chart(report, slide=slide), scores_chart(report, words=True, slide=slide),
              agreement_chart(agreed.methods, agreed.kendall, name="Kendall τ", slide=slide),
              head_tau_chart(agreed.head_tau, slide=slide), decay_chart(report.faithfulness, slide=slide),
              counterfactual_chart(report.tokens, report.counterfactual, slide=slide)]
    for chart in charts:
        spec = chart.to_dict()  # validates against the Vega-Lite schema
        assert ("axis" in spec.get("config", {})) == slide  # slide mode: large type
    assert len(faithfulness_frame(report.faithfulness)) == len(METHODS)
    heat = charts[0].to_dict()
    values = [row for data in heat["datasets"].values() for row in data]
    assert {row["text"] for row in values} >= set(report.tokens)  # raw strings travel as data, drawn as text


def test_attribution_charts_in_chinese_show_no_english_but_names_and_tokens(headed_models):
    from dataclasses import replace

    from inspector.analyses.attribution import METHOD_LABELS, method_label
    from inspector.base.i18n import t
    from tests.chart_text import chart_strings, english_words

    report = attribute(headed_models["none"], TEXT, spec=TargetSpec(reference=REFERENCE), settings=FAST)
    agreed, faithful = report.agreement, report.faithfulness
    # The adversarial row is drawn only after the page's search; a stand-in row gives the chart its third facet.
    cf = replace(report.counterfactual, adversarial=report.counterfactual.uniform, adversarial_jsd=0.25,
                 adversarial_change=0.004)
    # The methods are named in Chinese too (issue 17): their English labels are not among the names allowed.
    names = {*report.tokens, *report.words, faithful.replacement}

    def builders(lang):
        overlap = t("attribution.page.overlap", lang, k=agreed.k)
        return {"scores": scores_chart(report, lang=lang), "words": scores_chart(report, words=True, lang=lang),
                "agreement": agreement_chart(agreed.methods, agreed.top_k, name=overlap, low=0.0, lang=lang),
                "corpus": agreement_chart(agreed.methods, agreed.kendall, lang=lang,
                                          name=t("chart.attribution.mean_kendall", lang)),
                "head tau": head_tau_chart(agreed.head_tau, lang=lang),
                "decay": decay_chart(faithful, lang=lang), "decay slide": decay_chart(faithful, slide=True, lang=lang),
                "counterfactual": counterfactual_chart(report.tokens, cf, lang=lang)}

    chinese = {name: english_words(chart_strings(chart.to_dict()), allowed=names)
               for name, chart in builders("zh").items()}
    assert chinese == {name: [] for name in chinese}
    english = {name: english_words(chart_strings(chart.to_dict()), allowed=names)
               for name, chart in builders("en").items()}
    assert all(english.values()), english  # the check sees English where it is
    # The method axes (data, which chart_strings reads only for legends) carry the labels of the chart's language.
    for lang, built in (("zh", builders("zh")), ("en", builders("en"))):
        labels = {method_label(m, lang) for m in report.scores}
        for name in ("scores", "words", "decay"):
            shown = {row["method"] for rows in built[name].to_dict()["datasets"].values() for row in rows}
            assert shown == labels, (lang, name)
        cells = {row["a"] for rows in built["agreement"].to_dict()["datasets"].values() for row in rows}
        assert cells == {method_label(m, lang) for m in agreed.methods}, lang
    assert method_label("integrated_gradients", "zh") == "积分梯度"
    columns = list(faithfulness_frame(faithful, "zh").columns)
    assert english_words(columns, allowed=names) == [] and len(columns) == 4 + 2 * len(faithful.bins)
    assert list(faithfulness_frame(faithful, "zh").iloc[:, 0]) == [method_label(m, "zh") for m in faithful.methods]
    assert list(faithfulness_frame(faithful).iloc[:, 0]) == [METHOD_LABELS[m] for m in faithful.methods]
    assert list(faithfulness_frame(faithful).columns)[:4] == ["method", "AOPC comprehensiveness ↑",
                                                              "AOPC sufficiency ↓", "flip at (fraction removed)"]

    # Each method keeps its colour in both languages: the scale follows the methods' order, not their translated
    # names, which sort differently (issue 31: the legend's colours swapped between languages).
    def colours(lang):
        scale = builders(lang)["decay"].to_dict()["encoding"]["color"]["scale"]
        return [scale["range"][scale["domain"].index(method_label(m, lang))] for m in faithful.methods]

    assert colours("en") == colours("zh") and len(set(colours("en"))) == len(faithful.methods)


def test_attribution_cells_show_whole_tokens_or_none(headed_models):
    """Issue 31: at 1000 px the heat-text cells were cut to "t…", "h…". A token is written in its cell whole when
    it fits the drawn cell, else not at all (the axis and the tooltip name it)."""
    import re

    import vl_convert

    report = attribute(headed_models["none"], "the unbelievably uncharacteristic cat sat", spec=TargetSpec(
        reference=REFERENCE), settings=FAST)
    for width, whole in ((160, False), (2400, True)):
        spec = scores_chart(report, words=True).properties(width=width).to_dict()
        svg = vl_convert.vegalite_to_svg(spec)
        cells = re.findall(r'<g class="mark-text role-mark[^"]*"[^>]*>(.*?)</g>', svg, re.S)
        written = [text for group in cells for text in re.findall(r"<text[^>]*>([^<]*)</text>", group)]
        assert not [text for text in written if text.endswith("…")], written
        assert ("uncharacteristic" in written) == whole, (width, written)


# ------------------------------------------------------------------------------------ the method registry

@pytest.fixture
def position_method():
    """A tenth method, registered for one test and removed after it: the score of a token is its position."""
    from inspector.analyses.attribution import AttributionMethod, register, unregister

    method = register(AttributionMethod(name="position", label="position (toy)",
                                        score=lambda context: np.arange(context.n, dtype=float)))
    try:
        yield method
    finally:
        unregister("position")


def test_a_registered_method_runs_through_attribute_like_the_built_ins(headed_models, position_method):
    from inspector.analyses.attribution import METHOD_LABELS, REGISTRY, method_label

    settings = AttributionSettings(methods=("attention", "position"), ig_steps=4, permutations=0, head_grid=False)
    report = attribute(headed_models["none"], TEXT, spec=TargetSpec(reference=REFERENCE), settings=settings)
    assert tuple(report.scores) == ("attention", "position") == report.agreement.methods
    np.testing.assert_array_equal(report.scores["position"], np.arange(len(report.tokens)))
    assert report.faithfulness.methods == ("attention", "position") and "position" in report.timings
    assert METHOD_LABELS["position"] == "position (toy)" and REGISTRY["position"] is position_method
    assert method_label("position", "zh") == "position (toy)"  # no catalogue entry: its author's label everywhere
    assert report_json(report)["scores"]["position"] == list(range(len(report.tokens)))


def test_the_registry_keeps_the_built_in_order_and_enforces_the_contract(headed_models):
    from inspector.analyses.attribution import METHOD_LABELS, REGISTRY, AttributionMethod, register, unregister

    assert tuple(REGISTRY) == METHODS and tuple(METHOD_LABELS) == METHODS
    assert METHOD_LABELS["grad_x_input"] == "gradient × input"
    assert [m for m in METHODS if REGISTRY[m].completeness] == ["integrated_gradients"]
    assert [m for m in METHODS if REGISTRY[m].reads_attention] == ["attention", "rollout", "norm"]
    assert {m for m in METHODS if REGISTRY[m].needs_gradients} == {"gradient", "grad_x_input", "integrated_gradients"}
    with pytest.raises(ValueError, match="already registered"):
        register(REGISTRY["random"])
    with pytest.raises(ValueError, match="built-in"):
        unregister("random")
    with pytest.raises(ValueError, match="convergence"):
        AttributionMethod(name="complete", label="complete", score=lambda context: None, completeness=True)
    register(AttributionMethod(name="too_short", label="too short", score=lambda context: np.zeros(2)))
    try:
        with pytest.raises(ValueError, match="too_short.*shape"):
            attribute(headed_models["none"], TEXT, spec=TargetSpec(reference=REFERENCE),
                      settings=AttributionSettings(methods=("too_short",), head_grid=False, permutations=0,
                                                   faithfulness=False))
    finally:
        unregister("too_short")
    assert "too_short" not in REGISTRY and "too_short" not in METHOD_LABELS


def test_every_built_in_method_is_named_in_every_language():
    from inspector.analyses.attribution import METHOD_LABELS, method_label
    from inspector.base.i18n import CATALOGUE, LANGUAGES

    for method in METHODS:
        # English is the registry's label word for word (English pages, JSON and the CLI keep their text).
        assert method_label(method) == method_label(method, "en") == METHOD_LABELS[method]
        assert CATALOGUE[f"method.{method}"]["en"] == METHOD_LABELS[method]
        assert any("\u4e00" <= char <= "\u9fff" for char in method_label(method, "zh")), method
    assert len({method_label(m, lang) for m in METHODS for lang in LANGUAGES}) == len(METHODS) * len(LANGUAGES)
    assert method_label("grad_x_input", "zh") == "梯度 × 输入" and method_label("random", "zh") == "随机（基线）"
    assert method_label("integrated_gradients", "fr") == "integrated gradients"  # English for other languages
    with pytest.raises(KeyError):
        method_label("no_such_method", "zh")


def test_saliency_and_gradient_times_input_share_one_backward(headed_models, monkeypatch):
    from captum.attr import InputXGradient, Saliency

    calls = []
    original = Saliency.attribute
    monkeypatch.setattr(Saliency, "attribute", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    loaded = headed_models["none"]
    settings = AttributionSettings(methods=("gradient", "grad_x_input"), head_grid=False, permutations=0,
                                   faithfulness=False)
    report = attribute(loaded, TEXT, spec=TargetSpec(reference=REFERENCE), settings=settings)
    assert len(calls) == 1 and set(report.timings) >= {"gradient", "grad_x_input"}
    from inspector.analyses.attribution.targets import embed_forward, setup_problem, token_embeddings

    problem, _, _ = setup_problem(loaded, TEXT, TargetSpec(reference=REFERENCE), "torch", 2**26)
    embeds = token_embeddings(problem, problem.input_ids)
    by_captum = InputXGradient(embed_forward(problem)).attribute(embeds.clone().requires_grad_(True))
    expected = by_captum[0].detach().float().sum(dim=-1).double().numpy()
    np.testing.assert_allclose(report.scores["grad_x_input"], expected, rtol=1e-5, atol=1e-7)


def test_verdict_and_flip_rule_speak_english_and_chinese(headed_models):
    report = attribute(headed_models["sharp"], TEXT, spec=TargetSpec(reference=REFERENCE), settings=FAST)
    cf = report.counterfactual
    assert cf.verdict == cf.verdict_text("en") and cf.verdict.startswith(f"At layer {cf.layer}, every head, query")
    assert f"{len(cf.permutation_changes)} random permutations" in cf.verdict
    assert "Run the adversarial search" in cf.verdict
    chinese = cf.verdict_text("zh")
    assert "对抗搜索" in chinese and f"{cf.uniform_change:.3g}" in chinese
    rule = report.faithfulness.flip_rule
    assert rule.startswith("f falls below") and report_json(report)["faithfulness"]["flip_rule"] == rule
    assert "中点" in report.faithfulness.flip_rule_text("zh")
    classifier = attribute(headed_models["classifier"], TEXT, settings=AttributionSettings(ig_steps=4, permutations=0,
                                                                                            head_grid=False))
    assert classifier.faithfulness.flip_rule == "the predicted class changes"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_counterfactual_verdict_states_its_bands_and_flips_at_them(lang):
    """Issue 44 item 4: "almost entirely / substantially / only mildly different" name the share of the largest JSD
    each stands for, and the verdict (not a unique explanation, or constrained) changes just above and below 40 %."""
    from inspector.analyses.attribution.counterfactual import (
        ENTIRELY_DIFFERENT,
        JS_MAX,
        SUBSTANTIALLY_DIFFERENT,
        CounterfactualAttention,
    )

    row = np.full(4, 0.25)

    def verdict(share: float) -> str:
        return CounterfactualAttention(layer=0, head=1, query=2, original=row, uniform=row, uniform_change=0.0,
                                       uniform_jsd=0.0, permutation_changes=np.zeros(3), max_weight=0.25,
                                       epsilon=0.01, adversarial=row, adversarial_jsd=share * JS_MAX,
                                       adversarial_change=0.0, adversarial_steps=10,
                                       adversarial_converged=True).verdict_text(lang)

    words = {"en": ("almost entirely", "substantially", "only mildly", "not a unique explanation", "does constrain"),
             "zh": ("几乎完全不同", "明显不同", "仅略有不同", "不是输出的唯一解释", "确实约束")}[lang]
    above_entirely, above_substantially = verdict(ENTIRELY_DIFFERENT + 1e-6), verdict(SUBSTANTIALLY_DIFFERENT + 1e-6)
    at_substantially = verdict(SUBSTANTIALLY_DIFFERENT)
    assert words[0] in above_entirely and "80%" in above_entirely
    assert words[1] in verdict(ENTIRELY_DIFFERENT) and words[1] in above_substantially
    assert words[3] in above_substantially
    assert words[2] in at_substantially and "40%" in at_substantially and words[4] in at_substantially
    # A search that found no row says nothing either way: once "so this attention is constrained by the output".
    none_found = CounterfactualAttention(layer=0, head=1, query=2, original=row, uniform=row, uniform_change=0.0,
                                         uniform_jsd=0.0, permutation_changes=np.zeros(3), max_weight=0.25,
                                         epsilon=0.01, adversarial_steps=10).verdict_text(lang)
    assert {"en": "is not shown", "zh": "并不能显示"}[lang] in none_found and words[4] not in none_found


@pytest.mark.parametrize("kind", ["none", "causal-lm"])
def test_the_first_look_gives_the_full_report_s_scores_of_its_methods(headed_models, kind):
    """What the page draws first (issue 44): first_look_settings keeps the quick methods and drops the rest; their
    scores are exactly the full report's."""
    settings = AttributionSettings(ig_steps=4, permutations=5)
    first = attribute(headed_models[kind], TEXT, settings=first_look_settings(settings))
    full = attribute(headed_models[kind], TEXT, settings=settings)
    assert tuple(first.scores) == FIRST_LOOK_METHODS and set(FIRST_LOOK_METHODS) < set(full.scores)
    assert first.faithfulness is None and first.counterfactual is None and first.agreement.head_tau is None
    assert first.target == full.target and first.query == full.query
    for method, values in first.scores.items():
        np.testing.assert_array_equal(values, full.scores[method], err_msg=method)


def test_a_next_token_target_runs_the_head_only_at_the_rows_it_reads(headed_models, monkeypatch):
    """f on rows of several lengths (removal by deletion, ERASER) computes the language-model head at each row's
    last real token only (``logits_to_keep``, issue 44: Gemma's 262k-word head cost more than its body), and gives
    what the full logits give, row by row."""
    from inspector.analyses.attribution import targets

    loaded = headed_models["causal-lm"]
    problem = targets.setup_problem(loaded, TEXT, TargetSpec(), "torch", 2**30)[0]
    ids = problem.input_ids[0].tolist()
    rows = [ids, ids[:-2], ids[1:], ids[:3]]
    widths = []
    real_forward = targets.forward

    def recording(*args, **kwargs):
        result = real_forward(*args, **kwargs)
        widths.append(result.outputs.logits.shape[1])
        return result

    monkeypatch.setattr(targets, "forward", recording)
    values, decisions = targets.evaluate_rows(problem, rows)
    assert widths == [len({len(row) for row in rows})]  # one position per distinct length, not every position
    monkeypatch.undo()
    for row, value, decision in zip(rows, values, decisions):
        inputs = {"input_ids": torch.tensor([row]), "attention_mask": torch.ones(1, len(row), dtype=torch.long)}
        outputs = forward(loaded, inputs, stats=()).outputs
        assert outputs.logits.shape[1] == len(row)  # the reference: the head at every position
        f, top = targets.target_values(problem, outputs, inputs["attention_mask"], inputs["input_ids"])
        np.testing.assert_allclose(value, float(f[0]), rtol=1e-5, atol=1e-6)
        assert decision == int(top[0])


@pytest.mark.parametrize("kind", ["sharp", "causal-lm"])
def test_rows_started_at_their_layer_equal_rows_run_through_every_layer(headed_models, kind, monkeypatch):
    """Value zeroing and the counterfactual rows change the text only from their layer on, so their forwards start
    there from the baseline's block outputs (issue 44): the same numbers as forwards through every layer."""
    from inspector.analyses.attribution import targets

    loaded = headed_models[kind]
    assert loaded.can_resume
    settings = AttributionSettings(layer=1, methods=("value_zeroing", "random"), ig_steps=4, permutations=6,
                                   faithfulness=False, head_grid=False)
    resumed = attribute(loaded, TEXT, settings=settings)
    monkeypatch.setattr(targets.Problem, "resume_at", lambda self, layer, batch: None)
    full = attribute(loaded, TEXT, settings=settings)
    np.testing.assert_allclose(resumed.scores["value_zeroing"], full.scores["value_zeroing"], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose([resumed.counterfactual.uniform_change, *resumed.counterfactual.permutation_changes],
                               [full.counterfactual.uniform_change, *full.counterfactual.permutation_changes],
                               rtol=1e-4, atol=1e-6)
