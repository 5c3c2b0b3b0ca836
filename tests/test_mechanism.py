"""The mechanism analyses (issue 40) on tiny random Llama-, GPT-2- and Gemma-3-style decoders: the three sum rules, each
decomposition against an independent computation with plain forward hooks on an eager copy of the model, the patching
identities, and one clear typed error per bad input."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM

from inspector.analyses.attribution.targets import default_token
from inspector.analyses.mechanism import (
    LengthMismatchError,
    activation_patching,
    direct_logit_attribution,
    patching_run,
    score_attribution,
)
from inspector.base.errors import InvalidRequestError, UnsupportedModelError
from inspector.core.loading import load_model
from tests.conftest import save_tiny_model

ARCHES = ("llama", "gpt2", "gemma3")
TEXT = "the cat sat on the mat because it was tired"  # 12 tokens with [CLS] … [SEP]
CORRUPTED = "the dog sat on the mat because it was tired"


def save_with_biases(folder, arch):
    """A tiny LM whose biases and norm weights are random too (initialisation leaves them 0 and 1, which would hide
    a bias or a norm's gain handled wrong)."""
    save_tiny_model(folder, arch, with_head=True)
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager")
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() == 1:
                parameter.add_(0.2 * torch.randn(parameter.shape, generator=generator))
    model.save_pretrained(folder, safe_serialization=True)
    return folder


@pytest.fixture(scope="module")
def lm_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-lms")
    return {arch: save_with_biases(root / arch, arch) for arch in ARCHES}


@pytest.fixture(scope="module")
def lms(lm_dirs):
    return {arch: load_model(str(folder)) for arch, folder in lm_dirs.items()}


def eager_model(folder):
    return AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval().requires_grad_(False)


def ids_of(loaded, text):
    return loaded.tokenizer(text, return_tensors="pt")["input_ids"]


def blocks(model):
    return model.transformer.h if hasattr(model, "transformer") else model.model.layers


def final_norm(model):
    return model.transformer.ln_f if hasattr(model, "transformer") else model.model.norm


def eps(norm):
    return getattr(norm, "variance_epsilon", None) or norm.eps


def capture(model, ids, modules: dict, *, inputs=False):
    """Run ``model`` on ``ids`` with plain forward hooks recording each named module's output (or first input)."""
    seen, handles = {}, []
    for name, module in modules.items():
        def hook(mod, args, out, name=name):
            seen[name] = (args[0] if inputs else (out[0] if isinstance(out, tuple) else out)).detach()
        handles.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            logits = model(ids).logits
    finally:
        for handle in handles:
            handle.remove()
    return seen, logits


# --------------------------------------------------------------------------------------------- direct logit attribution


@pytest.mark.parametrize("arch", ARCHES)
def test_dla_sum_rule_and_target_is_the_models_logit(lms, lm_dirs, arch):
    result = direct_logit_attribution(lms[arch], TEXT, contrast="dog")
    assert abs(result.residual) <= 1e-4 * max(1.0, abs(result.target))
    total = result.heads.sum() + result.mlps.sum() + result.attention_biases.sum() + result.embeddings.sum()
    assert total + result.bias == pytest.approx(result.target, abs=1e-4)
    model = eager_model(lm_dirs[arch])
    with torch.no_grad():
        logits = model(ids_of(lms[arch], TEXT)).logits[0, -1]
    assert result.answer_id == default_token(lms[arch], logits)  # its most likely word (a tiny model: not [SEP])
    assert result.target == pytest.approx(float(logits[result.answer_id] - logits[result.contrast_id]), abs=1e-4)
    assert result.lens.top_ids[-1, 0] == int(logits.argmax())  # the lens's last row is the model's prediction
    assert np.all((result.attention_to_key >= 0) & (result.attention_to_key <= 1))
    if arch == "gpt2":
        assert result.embedding_names == ("embedding", "position") and np.any(result.attention_biases != 0)
    if arch == "gemma3":
        assert "post-attention norms" in result.frozen


@pytest.mark.parametrize("arch", ARCHES)
def test_dla_heads_and_mlps_match_hooks(lms, lm_dirs, arch):
    """Each head's and MLP's direct contribution, recomputed from plain hooks: the output projection's input split
    by head and multiplied by its slice of the weight, Gemma's post-attention norm and the final norm frozen by hand."""
    loaded, model = lms[arch], eager_model(lm_dirs[arch])
    result = direct_logit_attribution(loaded, TEXT)
    layers = blocks(model)
    gpt2 = arch == "gpt2"
    projections = {f"o{i}": (b.attn.c_proj if gpt2 else b.self_attn.o_proj) for i, b in enumerate(layers)}
    mlps = {f"m{i}": (b.post_feedforward_layernorm if arch == "gemma3" else b.mlp) for i, b in enumerate(layers)}
    seen_in, _ = capture(model, ids_of(loaded, TEXT), {**projections, "final": final_norm(model)}, inputs=True)
    seen_out, _ = capture(model, ids_of(loaded, TEXT), {**projections, **mlps})
    final = seen_in["final"][0, -1].double()
    if gpt2:
        centred = final - final.mean()
        scale = final_norm(model).weight.double() / torch.sqrt(centred.pow(2).mean() + eps(final_norm(model)))
    else:
        centred = final
        gain = final_norm(model).weight.double() + (1.0 if arch == "gemma3" else 0.0)
        scale = gain / torch.sqrt(final.pow(2).mean() + eps(final_norm(model)))
    direction = model.get_output_embeddings().weight[result.answer_id].double()

    def direct(write):
        write = write.double()
        if gpt2:
            write = write - write.mean()
        return float((write * scale) @ direction)

    head_dim = loaded.info.head_dim
    for layer, block in enumerate(layers):
        heads_in = seen_in[f"o{layer}"][0, -1].double()  # (heads · d,)
        for head in range(loaded.info.num_heads):
            piece = heads_in[head * head_dim:(head + 1) * head_dim]
            if gpt2:
                write = piece @ block.attn.c_proj.weight.double()[head * head_dim:(head + 1) * head_dim]
            else:
                write = block.self_attn.o_proj.weight.double()[:, head * head_dim:(head + 1) * head_dim] @ piece
            if arch == "gemma3":
                projected = seen_out[f"o{layer}"][0, -1].double()
                norm = block.post_attention_layernorm
                write = write * (1 + norm.weight.double()) / torch.sqrt(projected.pow(2).mean() + eps(norm))
            assert result.heads[layer, head] == pytest.approx(direct(write), abs=1e-5)
        assert result.mlps[layer] == pytest.approx(direct(seen_out[f"m{layer}"][0, -1]), abs=1e-5)


# ----------------------------------------------------------------------------------------------- score attribution


@pytest.mark.parametrize("arch", ARCHES)
def test_score_attribution_sum_rule_and_eager_weights(lms, lm_dirs, arch):
    """The table sums to the score; the difference of two keys' scores is the log-ratio of the eager model's own
    attention weights (an independent computation: output_attentions of an eager copy)."""
    loaded = lms[arch]
    model = eager_model(lm_dirs[arch])
    with torch.no_grad():
        weights = model(ids_of(loaded, TEXT), output_attentions=True).attentions
    for layer in range(loaded.info.num_layers):
        result = score_attribution(loaded, TEXT, layer=layer, head=1, query_position=-1, key_position=9)
        assert abs(result.residual) <= 1e-4 * max(1.0, abs(result.score))
        assert result.table.sum() == pytest.approx(result.score, abs=1e-4)
        assert result.products.sum() == pytest.approx(result.score, abs=1e-4)
        assert result.query_marginal().sum() == pytest.approx(result.key_marginal().sum())
        assert result.runner_up is not None and result.runner_up != 9
        row = weights[layer][0, 1, result.query_position].double()
        expected = float(torch.log(row[9]) - torch.log(row[result.runner_up]))
        assert result.table.sum() - result.runner_up_table.sum() == pytest.approx(expected, abs=1e-4)
        assert result.rotary == (arch != "gpt2")
        if arch == "gpt2":
            assert result.score_unrotated == pytest.approx(result.score, abs=1e-6)
        if arch == "gemma3":
            assert {"query norm", "key norm"} <= set(result.frozen)
        per_layer = loaded.info.num_heads + 1 + (arch == "gpt2")  # heads, the MLP, GPT-2's output bias
        assert len(result.components) == 1 + (arch == "gpt2") + layer * per_layer + 1


def test_score_charts_name_every_component_in_chinese(lms):
    """GPT-2 has every kind of component (embedding, position, heads, MLPs, attention biases, bias): the charts write
    each in Chinese, and the frozen norms too — no English word left but the model's own head and MLP labels."""
    from inspector.charts.mechanism import component_text, score_marginals_chart, score_pairs_chart
    from views.mechanism_panels import frozen_text

    result = score_attribution(lms["gpt2"], TEXT, layer=1, head=1, query_position=-1, key_position=9)
    kinds = {name.split(" ", 1)[-1] if name.startswith("L") else name for name in result.components}
    assert {"embedding", "position", "bias", "attn bias", "MLP"} <= kinds
    shown = [component_text(name, "zh") for name in result.components]
    english = re.compile(r"embedding|position|bias|attn")
    assert not [text for text in shown if english.search(text)], shown
    assert component_text("L0H3", "zh") == "L0H3" and component_text("L2 attn bias", "zh") == "L2 注意力偏置"
    for chart in (score_pairs_chart(result, lang="zh"), score_marginals_chart(result, lang="zh")):
        labels = set(chart.data["pair" if "pair" in chart.data else "component"])
        assert not [label for label in labels if english.search(label)], labels
    assert frozen_text(("input norm", "query norm", "key norm"), "zh") == "输入归一化，查询归一化，键归一化"
    assert frozen_text(("final norm", "some new norm"), "en") == "final norm, some new norm"


def test_score_attribution_refuses_a_key_outside_the_window(lms):
    with pytest.raises(InvalidRequestError, match="sliding window of 4"):
        score_attribution(lms["gemma3"], TEXT, layer=0, head=0, query_position=11, key_position=2)


# ----------------------------------------------------------------------------------------------- activation patching


@pytest.mark.parametrize("arch", ARCHES)
def test_patching_identical_texts_changes_nothing(lms, arch):
    result = activation_patching(lms[arch], TEXT, TEXT, answer="cat", contrast="dog", top_heads=2)
    for values in (result.heads, result.mlps, result.residual, result.head_positions):
        np.testing.assert_allclose(values, result.corrupted_value, atol=1e-5)
        assert np.all(result.restored(values) == 0)


@pytest.mark.parametrize("arch", ARCHES)
def test_patching_identities(lms, lm_dirs, arch):
    """Residual before layer 0 at every position = the clean run; every head of a layer = the layer's attention
    output patched with a plain hook on an eager copy; one head = its slice of the output projection's input."""
    loaded = lms[arch]
    run, tokens, _ = patching_run(loaded, TEXT, CORRUPTED, answer="cat", contrast="dog")
    n, heads = len(tokens), loaded.info.num_heads
    clean_value = float(run.metric(run.clean.block_outputs[-1][None, -1])[0])
    for layer in range(loaded.info.num_layers):
        restored = run.residual_patch(layer, torch.ones(1, n, dtype=torch.bool))
        assert restored[0] == pytest.approx(clean_value, abs=1e-4)
    model = eager_model(lm_dirs[arch])
    attention = [b.attn if arch == "gpt2" else b.self_attn for b in blocks(model)]
    projections = [a.c_proj if arch == "gpt2" else a.o_proj for a in attention]
    clean_attention, _ = capture(model, ids_of(loaded, TEXT), dict(enumerate(attention)))
    clean_heads, _ = capture(model, ids_of(loaded, TEXT), dict(enumerate(projections)), inputs=True)
    answer, contrast = run.answer_id, run.contrast_id
    for layer in range(loaded.info.num_layers):
        ours = run.head_patch(layer, torch.ones(1, heads, n, dtype=torch.bool))[0]
        handle = attention[layer].register_forward_hook(
            lambda mod, args, out, layer=layer: (clean_attention[layer], *out[1:]))
        try:
            with torch.no_grad():
                logits = model(ids_of(loaded, CORRUPTED)).logits[0, -1]
        finally:
            handle.remove()
        assert ours == pytest.approx(float(logits[answer] - logits[contrast]), abs=1e-4)
        head, d = 1, loaded.info.head_dim
        mask = torch.zeros(1, heads, n, dtype=torch.bool)
        mask[0, head] = True

        def patch_slice(mod, args, layer=layer, head=head):
            patched = args[0].clone()
            patched[..., head * d:(head + 1) * d] = clean_heads[layer][..., head * d:(head + 1) * d]
            return (patched, *args[1:])

        handle = projections[layer].register_forward_pre_hook(patch_slice)
        try:
            with torch.no_grad():
                logits = model(ids_of(loaded, CORRUPTED)).logits[0, -1]
        finally:
            handle.remove()
        assert run.head_patch(layer, mask)[0] == pytest.approx(float(logits[answer] - logits[contrast]), abs=1e-4)


def test_patching_result_normalises(lms):
    result = activation_patching(lms["llama"], TEXT, CORRUPTED, answer="cat", contrast="dog", top_heads=2)
    assert result.restored(result.clean_value) == pytest.approx(1.0)
    assert result.restored(result.corrupted_value) == pytest.approx(0.0)
    assert result.top_heads.shape == (2, 2) and result.head_positions.shape == (2, len(result.clean_tokens))
    # the tokens before the corrupted word are the same in both texts: patching them restores nothing
    np.testing.assert_allclose(result.residual[:, :2], result.corrupted_value, atol=1e-5)


# ----------------------------------------------------------------------------------------------------- bad input


def test_bad_input_is_one_clear_typed_error(lms, tiny_bert):
    llama = lms["llama"]
    with pytest.raises(LengthMismatchError, match=r"12 tokens .* 13 "):
        activation_patching(llama, TEXT, CORRUPTED + " fast", answer="cat", contrast="dog")
    with pytest.raises(InvalidRequestError, match="is 2 tokens"):
        direct_logit_attribution(llama, TEXT, answer="cat dog")
    with pytest.raises(InvalidRequestError, match="outside the text's 12 tokens"):
        direct_logit_attribution(llama, TEXT, position=12)
    with pytest.raises(UnsupportedModelError, match="bundled:smollm2-135m"):
        direct_logit_attribution(tiny_bert, TEXT)
    with pytest.raises(InvalidRequestError, match="heads 0–3"):
        score_attribution(llama, TEXT, layer=0, head=4, query_position=3, key_position=1)
    with pytest.raises(InvalidRequestError, match="comes after"):
        score_attribution(llama, TEXT, layer=0, head=0, query_position=3, key_position=5)


# ----------------------------------------------------------------------------------------------- the commands


def test_explain_and_patch_commands_write_the_librarys_numbers(lms, lm_dirs, tmp_path):
    import json

    from inspector.cli import main

    folder, loaded = str(lm_dirs["gemma3"]), lms["gemma3"]
    out = tmp_path / "explain.json"
    assert main(["explain", "--model", folder, "--text", TEXT, "--contrast", "dog", "--score", "1,1,11,9",
                 "--json", str(out)]) == 0
    written = json.loads(out.read_text())
    dla = direct_logit_attribution(loaded, TEXT, contrast="dog")
    np.testing.assert_allclose(written["direct_logit_attribution"]["heads"], dla.heads, rtol=1e-6, atol=1e-7)
    assert written["direct_logit_attribution"]["target"] == pytest.approx(dla.target)
    score = score_attribution(loaded, TEXT, layer=1, head=1, query_position=11, key_position=9)
    np.testing.assert_allclose(written["score_attribution"]["table"], score.table, rtol=1e-6, atol=1e-7)
    out = tmp_path / "patch.json"
    assert main(["patch", "--model", folder, "--clean", TEXT, "--corrupted", CORRUPTED, "--answer", "cat",
                 "--contrast", "dog", "--top-heads", "2", "--json", str(out)]) == 0
    patched = activation_patching(loaded, TEXT, CORRUPTED, answer="cat", contrast="dog", top_heads=2)
    written = json.loads(out.read_text())["patching"]
    np.testing.assert_allclose(written["heads"], patched.restored(patched.heads), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(written["residual"], patched.restored(patched.residual), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("arguments, says", [
    (["patch", "--clean", TEXT, "--corrupted", CORRUPTED + " fast", "--answer", "cat", "--contrast", "dog"],
     "12 tokens"),
    (["patch", "--clean", TEXT, "--corrupted", CORRUPTED, "--answer", "cat dog", "--contrast", "dog"], "is 2 tokens"),
    (["explain", "--text", TEXT, "--position", "40"], "outside the text's 12 tokens"),
    (["explain", "--text", TEXT, "--score", "0,9,3,1"], "heads 0–3"),
    (["explain", "--text", TEXT, "--score", "0,1,3"], "LAYER,HEAD,QUERY,KEY"),
])
def test_commands_refuse_bad_input_in_one_line(lm_dirs, capsys, arguments, says):
    from inspector.cli import main

    assert main([*arguments, "--model", str(lm_dirs["llama"])]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and says in error and "\n" not in error


def test_commands_name_the_decoders_for_an_encoder(tiny_model_dirs, capsys):
    from inspector.cli import main

    assert main(["explain", "--model", str(tiny_model_dirs["bert"]), "--text", TEXT]) == 2
    error = capsys.readouterr().err.strip()
    assert "bundled:smollm2-135m" in error and "bundled:gemma-3-270m" in error and "\n" not in error


def test_hosted_commands_refuse_a_text_past_the_mechanism_limit(lm_dirs, tmp_path, monkeypatch, capsys):
    """``explain`` and ``patch`` plan a "mechanism" run under the hosting policy, as the Mechanism page does (issue 39):
    with ``INSPECTOR_HOSTED=1`` a text past the hosted token limit is refused in one line, exit 2, before any forward.
    The limit here is the job memory's (1 MiB holds 16 copies of a 2-layer × 4-head model's attention up to 45 tokens)
    and the text's 52 tokens are within the model's 64 positions, so only the hosted plan refuses it."""
    from inspector.cli import main

    long_text = " ".join([TEXT] * 5)  # 50 words, 52 tokens
    long_corrupted = " ".join([CORRUPTED] * 5)
    commands = {"explain": ["explain", "--text", long_text, "--json", "-"],
                "patch": ["patch", "--clean", long_text, "--corrupted", long_corrupted, "--answer", "cat",
                          "--contrast", "dog", "--json", "-"]}
    allow_list = tmp_path / "allowed.toml"
    allow_list.write_text(f'[[shipped]]\nname = "tiny-llama"\npath = "{lm_dirs["llama"]}"\n', encoding="utf-8")
    for argv in commands.values():  # locally nothing caps them
        assert main([*argv, "--model", str(lm_dirs["llama"])]) == 0
    capsys.readouterr()
    monkeypatch.setenv("INSPECTOR_HOSTED", "1")
    monkeypatch.setenv("INSPECTOR_ALLOWED_MODELS", str(allow_list))
    monkeypatch.setenv("INSPECTOR_JOB_MEMORY_MB", "1")
    for command, argv in commands.items():
        assert main([*argv, "--model", "tiny-llama"]) == 2, command
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: the text has 52 tokens; on this hosted instance the "
                                                       "mechanism run reads at most 45 tokens"), (command, lines)
        assert captured.out == ""


def test_the_default_answer_is_a_word_not_gemmas_blank_line(gemma):
    """Issue 44 item 10 on the Mechanism page: with no answer named, Gemma 3's top next token after a sentence is a
    blank line ("↵↵"), which explains nothing about the text; the default is its most likely word, as on Attribution."""
    text = "The animal didn't cross the street because it was too tired."
    result = direct_logit_attribution(gemma, text)
    assert gemma.codec.decode([result.answer_id]).strip() and result.answer_id not in gemma.codec.all_special_ids()
    top = int(result.lens.top_ids[-1, 0])  # the final layer's top token: the model's own prediction
    assert top != result.answer_id and not gemma.codec.decode([top]).strip()
