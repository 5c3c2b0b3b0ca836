"""The ground-truth lab (issue #8): the tasks, the shipped models' promises, scoring and its CLI twin."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from inspector.analyses.groundtruth import (
    aggregate_ranks,
    card_for,
    causal_attention_mass,
    chance_hit_rate,
    evaluate,
    example_json,
    rank_of,
    read_card,
    score_example,
    score_examples,
    scoreboard,
    scoreboard_json,
    top_ranked_tokens,
    wilson_interval,
)
from inspector.analyses.tasks import FRESH_SEED, NEUTRAL_WORDS, TASKS, generate
from inspector.base.errors import InvalidRequestError, ModelNotFoundError
from inspector.charts.sentences.groundtruth import mechanism_found, reading
from inspector.cli import main
from inspector.core.loading import load_model, shipped_choices

SHIPPED = ("planted-token", "induction", "deceptive-attention")
# Fresh examples for the accuracy promise: a seed neither training (below FRESH_SEED) nor the card's own check used.
ACCURACY_EXAMPLES, ACCURACY_SEED = 1000, FRESH_SEED + 12_345


@pytest.fixture(scope="module")
def shipped():
    return {name: load_model(f"shipped:{name}", device="cpu") for name in SHIPPED}


# ------------------------------------------------------------------------------------------------ tasks

def test_generated_examples_are_reproducible_and_the_causal_token_decides_them():
    first, again = generate("planted-token", 50, seed=7), generate("planted-token", 50, seed=7)
    assert first == again and first != generate("planted-token", 50, seed=8)
    for example in first:
        cue = example.words[example.causal]
        assert cue not in NEUTRAL_WORDS
        assert all(w in NEUTRAL_WORDS for i, w in enumerate(example.words) if i != example.causal)
        assert example.answer == ("positive" if example.label == 1 else "negative")
    for example in generate("induction", 50, seed=7):
        a = example.words[-1]
        first_a, last = example.supporting
        assert example.words.count(a) == 2 and example.words[first_a] == a and last == len(example.words) - 1
        assert example.causal == first_a + 1 and example.words[example.causal] == example.answer
        assert len(set(example.words[:-1])) == len(example.words) - 1  # the prefix repeats nothing


def test_unknown_tasks_and_counts_are_refused():
    with pytest.raises(InvalidRequestError, match="unknown task"):
        generate("sentiment", 3)
    with pytest.raises(InvalidRequestError, match="between 1 and"):
        generate("induction", 0)


# ------------------------------------------------------------------------------------------------ the models

def test_the_shipped_models_load_by_spec_and_are_offered_in_the_picker(shipped):
    choices = shipped_choices()
    assert {f"shipped:{name}" for name in SHIPPED} <= set(choices)
    assert all("Ground truth" in label for label in choices.values())
    assert shipped["planted-token"].info.head == "classifier" and shipped["induction"].info.causal
    with pytest.raises(ModelNotFoundError, match="shipped:induction"):
        load_model("shipped:no-such-model")
    with pytest.raises(ModelNotFoundError):
        load_model("shipped:../models/induction")


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_model_reaches_its_stated_accuracy_on_fresh_data(shipped, name):
    loaded = shipped[name]
    card = card_for(loaded)
    assert card.stated_accuracy >= 0.95
    examples = generate(card.task.name, ACCURACY_EXAMPLES, seed=ACCURACY_SEED)
    measured = evaluate(loaded, examples, card.task)
    assert measured.accuracy >= card.stated_accuracy, f"{name}: {measured.accuracy:.3f} < {card.stated_accuracy}"


def test_the_deceptive_model_keeps_its_attention_off_the_causal_token(shipped):
    deceptive, honest = card_for(shipped["deceptive-attention"]), card_for(shipped["planted-token"])
    assert deceptive.variant == "deceptive" and deceptive.attention_bound is not None
    examples = generate("planted-token", 300, seed=ACCURACY_SEED)
    masked = evaluate(shipped["deceptive-attention"], examples, deceptive.task).attention_mass
    plain = evaluate(shipped["planted-token"], examples, honest.task).attention_mass
    assert masked.mean() < deceptive.attention_bound
    # The same task without the penalty reads the planted word heavily: the bound is the training's doing.
    assert plain.mean() > 20 * deceptive.attention_bound


def test_bundled_and_cardless_models_are_refused_with_the_reason(bundled, tmp_path):
    with pytest.raises(InvalidRequestError, match="no known causal tokens"):
        card_for(bundled)
    with pytest.raises(InvalidRequestError, match="has no groundtruth.json"):
        read_card(tmp_path)
    (tmp_path / "groundtruth.json").write_text('{"task": "planted-token"}')
    with pytest.raises(InvalidRequestError, match="not a readable model card"):
        read_card(tmp_path)


# ------------------------------------------------------------------------------------------------ scoring

def test_rank_counts_ties_against_the_method_and_nan_last():
    content = np.array([False, True, True, True, True, False])
    scores = np.array([np.nan, 0.1, 0.5, 0.5, 0.2, 9.0])
    assert rank_of(scores, content, 4) == 3  # 0.5 and 0.5 above it; the special token's 9.0 is not ranked
    assert rank_of(scores, content, 2) == 2  # its tie with position 3 counts against it
    assert rank_of(np.full(6, 1.0), content, 1) == 4  # a constant score ranks last
    assert rank_of(np.array([0, np.nan, 1, 2, 3, 0.0]), content, 1) == 4


def test_aggregating_a_hand_built_case():
    ranks = np.array([[1, 3], [2, 1], [1, 5], [1, 2]])  # 4 examples × 2 methods
    content = np.array([4, 5, 5, 10])
    board = aggregate_ranks(ranks, content, k=2)
    np.testing.assert_allclose(board["top1"], [3 / 4, 1 / 4])
    np.testing.assert_allclose(board["topk"], [1.0, 2 / 4])
    np.testing.assert_allclose(board["mean_rank"], [5 / 4, 11 / 4])
    assert np.all(board["mean_rank_low"] <= board["mean_rank"])
    assert np.all(board["mean_rank"] <= board["mean_rank_high"])
    assert board["top1_low"][0] == pytest.approx(wilson_interval(3, 4)[0])
    assert chance_hit_rate(content, 1) == pytest.approx(np.mean([1 / 4, 1 / 5, 1 / 5, 1 / 10]))
    assert chance_hit_rate(content, 5) == pytest.approx(np.mean([1, 1, 1, 1 / 2]))
    low, high = wilson_interval(0, 20)
    assert low == 0.0 and 0.1 < high < 0.2  # Wilson: 0 of 20 still allows up to ~16 %


def test_causal_attention_mass_counts_other_rows_that_can_see_the_token():
    import torch

    weights = torch.zeros(1, 1, 1, 3, 3)
    weights[0, 0, 0] = torch.tensor([[1.0, 0, 0], [0.5, 0.5, 0], [0.2, 0.2, 0.6]])
    mask = torch.ones(1, 3)
    # Causal token 1: rows 0 (its own excluded) … encoder counts rows 0 and 2, decoder only row 2.
    assert float(causal_attention_mass(weights, torch.tensor([1]), mask, causal_mask=False)[0]) == pytest.approx(0.1)
    assert float(causal_attention_mass(weights, torch.tensor([1]), mask, causal_mask=True)[0]) == pytest.approx(0.2)


def test_one_example_ranks_the_planted_word_first_by_occlusion(shipped):
    loaded = shipped["planted-token"]
    example = generate("planted-token", 1, seed=FRESH_SEED)[0]
    scored = score_example(loaded, example, card_for(loaded))
    assert scored.tokens[scored.position] == example.words[example.causal]
    assert scored.ranks["occlusion"] == 1 and scored.predicted == example.answer
    payload = example_json(scored)
    assert payload["causal_position"] == scored.position and set(payload["ranks"]) == set(scored.scores)
    json.dumps(payload, allow_nan=False)


def test_induction_example_marks_both_a_tokens(shipped):
    loaded = shipped["induction"]
    example = generate("induction", 1, seed=FRESH_SEED)[0]
    scored = score_example(loaded, example, card_for(loaded), methods=("attention", "occlusion"))
    first_a, last_a = scored.supporting
    assert scored.tokens[first_a] == scored.tokens[last_a] == example.words[-1]
    assert scored.query == last_a and scored.mechanism_ranks["occlusion"] == 1
    assert all(scored.mechanism_ranks[m] <= scored.ranks[m] for m in scored.ranks)


def test_scoreboard_on_the_deceptive_model_shows_attention_failing_where_occlusion_and_ig_find_the_token(shipped):
    board = scoreboard(shipped["deceptive-attention"], 20, k=3)
    top1 = dict(zip(board.methods, board.top1))
    assert board.accuracy == 1.0 and board.ranks.shape == (20, len(board.methods))
    assert top1["occlusion"] >= 0.9 and top1["integrated_gradients"] >= 0.9
    assert top1["attention"] <= 0.1 and top1["norm"] <= 0.1
    # Gradient × input singles the planted word out, with the wrong sign (LayerNorm makes e·∂f/∂e near zero).
    magnitude = dict(zip(board.methods, board.magnitude_top1))
    assert top1["grad_x_input"] <= 0.1 and magnitude["grad_x_input"] >= 0.9
    # No last-layer head's attention finds it. Layer-0 heads still rank it first among the content tokens — with a
    # weight far too small to see on a heatmap: the penalty bought small weights, not a different ranking.
    assert board.head_top1[-1].max() <= 0.1 and board.head_weight.max() < 10 * board.card.attention_bound
    payload = scoreboard_json(board)
    json.dumps(payload, allow_nan=False)
    assert payload["causal_attention_mass"]["bound"] == card_for(shipped["deceptive-attention"]).attention_bound


def test_a_scoreboard_continues_from_its_first_examples_scored_earlier(shipped):
    """Issue 31, item 5: the page scores the first examples of a request first; the whole scoreboard reuses them
    (never scored twice) and equals one scored from scratch; the first ones of another seed are refused."""
    loaded = shipped["planted-token"]
    first = score_examples(loaded, 2)
    assert [s.example for s in first.examples] == list(generate("planted-token", 2, seed=FRESH_SEED))
    assert first.pace(4) == pytest.approx(2 * first.seconds)
    calls = []
    continued = scoreboard(loaded, 4, scored=first, progress=lambda done, total, note: calls.append(done))
    assert calls == [2, 3, 4]  # only the last two were scored
    whole = scoreboard(loaded, 4)
    for name in ("ranks", "content", "top1", "mean_rank", "attention_mass", "head_top1", "head_weight"):
        np.testing.assert_array_equal(getattr(continued, name), getattr(whole, name))
    assert continued.seconds >= first.seconds
    with pytest.raises(InvalidRequestError, match="not the first of this request"):
        scoreboard(loaded, 4, seed=FRESH_SEED + 1, scored=first)


def test_reading_contrasts_attention_with_occlusion_on_the_deceptive_model(shipped):
    board = scoreboard(shipped["deceptive-attention"], 12, methods=("attention", "rollout", "norm", "occlusion",
                                                                       "integrated_gradients", "random"))
    lines = reading(board)
    better = next(line for line in lines if line.startswith("Better than chance"))
    assert "occlusion" in better and "integrated gradients" in better and "raw attention" not in better
    assert any(line.startswith("The random baseline") for line in lines)
    contrast = next(line for line in lines if line.startswith("Attention-based methods"))
    assert "Pruthi et al. 2020" in contrast and f"bound of {board.card.attention_bound:.1%}" in contrast
    # The layer-0 heads rank the cue first with a weight no heatmap would show; the reading says so.
    assert any("peaks on the causal token" in line and "near-zero weights" in line for line in lines)
    # Always last: a method that ranks the token last on average is worse than chance, not "random".
    m, last_rank = len(board.methods), float(board.content.max())
    last = replace(board, mean_rank=np.full(m, last_rank), mean_rank_low=np.full(m, last_rank), top1=np.zeros(m),
                   top1_low=np.zeros(m), top1_high=np.full(m, 0.2))
    assert any(line.startswith("Worse than chance") and "raw attention" in line for line in reading(last))
    assert not any(line.startswith("Better than chance") for line in reading(last))


def test_reading_names_a_method_that_finds_the_token_with_the_wrong_sign(shipped):
    board = scoreboard(shipped["planted-token"], 12, methods=("grad_x_input", "occlusion"))
    flipped = next(line for line in reading(board) if line.startswith("Right token, wrong sign"))
    assert "gradient × input" in flipped and "occlusion" not in flipped


def test_reading_names_methods_that_find_the_induction_mechanism_but_not_b(shipped):
    board = scoreboard(shipped["induction"], 12, methods=("attention", "occlusion"))
    lines = reading(board)
    assert not any("Pruthi" in line for line in lines)  # an honest model
    if mechanism_found(board, 1):
        assert any(line.startswith("Found the mechanism") and "occlusion" in line for line in lines)
    # A hand-made gap: occlusion ranks B first in 20 % of examples and B or an A in all of them.
    gap = replace(board, top1=np.array([1.0, 0.2]), top1_low=np.array([0.8, 0.1]), top1_high=np.array([1.0, 0.4]),
                  mechanism_top1=np.array([1.0, 1.0]), mechanism_top1_low=np.array([0.8, 0.8]),
                  mechanism_top1_high=np.array([1.0, 1.0]))
    found = next(line for line in reading(gap) if line.startswith("Found the mechanism"))
    assert "occlusion (leave-one-out) ranks B first in 20% [10%–40%] but B or one of the A's in 100% [80%–100%]" \
        in found and "95 % interval" in found
    assert "raw attention" not in found


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_mechanism_verdict_needs_intervals_apart(shipped, lang):
    """Issue 44 item 4: "found the mechanism" was also written for a 10-point gap on a few examples. Now only when the
    "B or an A" interval lies above the "B" interval — just above: found; touching: not shown, with the intervals."""
    board = scoreboard(shipped["induction"], 4, methods=("attention", "occlusion"))

    found, unsure = ("Found the mechanism", "Not shown") if lang == "en" else ("找到了机制", "未能显示")

    def verdict(mechanism_low: float) -> list[str]:
        made = replace(board, top1=np.array([1.0, 0.3]), top1_low=np.array([0.9, 0.1]),
                       top1_high=np.array([1.0, 0.5]), mechanism_top1=np.array([1.0, 0.7]),
                       mechanism_top1_low=np.array([0.9, mechanism_low]), mechanism_top1_high=np.array([1.0, 0.9]))
        return [line for line in reading(made, lang) if line.startswith((found, unsure))]

    above, touching = verdict(0.5 + 1e-6), verdict(0.5)
    assert len(above) == 1 and above[0].startswith(found) and "[10%–50%]" in above[0] and "70%" in above[0]
    assert len(touching) == 1 and touching[0].startswith(unsure) and "[50%–90%]" in touching[0]
    assert " 4 " in touching[0]  # the examples the intervals come from


def test_top_ranked_tokens_skip_special_tokens_and_nan(shipped):
    loaded = shipped["deceptive-attention"]
    example = generate("planted-token", 1, seed=FRESH_SEED)[0]
    scored = score_example(loaded, example, card_for(loaded), methods=("occlusion", "rollout"))
    top = top_ranked_tokens(scored)
    assert top["occlusion"] == scored.position  # its special tokens are NaN
    # Rollout gives [CLS] its largest score on this model; [CLS] is not a content token, so it is not ranked.
    assert int(np.argmax(scored.scores["rollout"])) == 0 and scored.content[top["rollout"]]


def test_cli_twin_writes_the_scoreboard(tmp_path, capsys):
    out = tmp_path / "gt.json"
    assert main(["groundtruth", "--model", "shipped:planted-token", "--examples", "3", "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    assert payload["task"] == "planted-token" and payload["examples"] == 3
    assert set(payload["methods"]) >= {"attention", "occlusion", "integrated_gradients"}
    assert "top-1" in capsys.readouterr().out
    assert main(["groundtruth", "--model", "default", "--examples", "3"]) == 2
    assert "no known causal tokens" in capsys.readouterr().err


@pytest.mark.parametrize("script", ["planted_token", "induction", "deceptive_attention"])
def test_each_training_script_runs_end_to_end_in_smoke_mode(script, tmp_path):
    import importlib

    module = importlib.import_module(f"training.{script}")
    out = tmp_path / script
    assert module.common.main(module.RECIPE, module.__doc__, ["--smoke", "--out", str(out)]) == 0
    card = read_card(out)
    assert card.training["smoke"] and card.training["steps"] == 5
    loaded = load_model(str(out), device="cpu")
    assert loaded.info.num_layers == 2 and card.task.name == module.RECIPE.task.name


def test_task_descriptions_name_their_truth():
    for spec in TASKS.values():
        assert spec.truth and spec.description


def test_the_heads_page_finds_the_induction_circuit(shipped):
    from inspector.analyses.heads import head_report
    from inspector.analyses.metrics import TOKEN_CATEGORIES
    from inspector.charts.sentences.heads import health_report

    example = generate("induction", 1, seed=FRESH_SEED)[0]
    report = head_report(shipped["induction"], example.text)
    induction = report.statistics.induction
    previous = report.statistics.token_mass[..., TOKEN_CATEGORIES.index("previous")]
    assert induction[1].max() > 0.9 and induction[0].max() < 0.4  # the copy happens in the second layer
    assert previous[0].max() > 0.8  # fed by a previous-token head in the first (Olsson et al.'s circuit)
    assert any(line.startswith("Induction heads") and "Layer 1 head" in line for line in health_report(report))


def test_training_is_reproducible(tmp_path):
    from safetensors.torch import load_file

    from training import common, deceptive_attention

    for name in ("first", "second"):
        assert common.main(deceptive_attention.RECIPE, deceptive_attention.__doc__,
                           ["--smoke", "--out", str(tmp_path / name)]) == 0
    first, second = (load_file(tmp_path / name / "model.safetensors") for name in ("first", "second"))
    assert first.keys() == second.keys() and all(bool((first[k] == second[k]).all()) for k in first)
    import torch

    assert not torch.are_deterministic_algorithms_enabled()  # the scripts' settings do not leak into the caller


@pytest.mark.parametrize("seed", ["-1", str(2**40), "1e3"])
def test_cli_refuses_a_bad_seed_in_one_line(capsys, seed):
    """Issue 45, item 5: ``groundtruth --seed -1`` gave a traceback."""
    assert main(["groundtruth", "--model", "shipped:planted-token", "--examples", "3", "--seed", seed]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--seed" in err and "Traceback" not in err
