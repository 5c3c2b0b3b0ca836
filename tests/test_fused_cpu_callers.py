"""Every page's forward takes the fused CPU path (issue 43): Inspect's capture, Generate's prefill and steps, the
census and roles batches, and the Heads report's forwards that need no gradient. A spy on the torch backend
records which path each attention call took; the blocked path may run only where the fused one cannot be exact
(autograd recording), and says so."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

import kernels.hf as hf
from inspector.analyses import roles_causal
from inspector.analyses.census.input import InputRow
from inspector.analyses.census.measure import measure_rows
from inspector.analyses.generate import generate
from inspector.analyses.heads import head_report
from inspector.core.capture import capture
from inspector.core.loading import load_model
from tests.conftest import make_tokenizer, tiny_config

TEXT = "the animal did n't cross the street because it was too tired ."


@pytest.fixture
def paths(monkeypatch) -> list[str]:
    """The path of every torch-backend attention call made while the test runs, in order."""
    seen: list[str] = []
    original = hf._torch_backend

    def spy(*args, **kwargs):
        out, stats, path = original(*args, **kwargs)
        seen.append(path)
        return out, stats, path

    monkeypatch.setattr(hf, "_torch_backend", spy)
    return seen


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    """A tiny Llama with its LM head, loaded through the project's loader."""
    folder = tmp_path_factory.mktemp("tiny-lm") / "llama"
    torch.manual_seed(3)
    AutoModelForCausalLM.from_config(tiny_config("llama"), attn_implementation="eager").save_pretrained(folder)
    make_tokenizer().save_pretrained(folder)
    return load_model(str(folder), device="cpu")


def test_capture_takes_the_fused_path(tiny_models, paths):
    loaded = tiny_models["llama"]
    capture(loaded, TEXT, backend="torch", weights=[0])
    assert len(paths) == loaded.info.num_layers and set(paths) == {"fused"}


def test_generate_prefill_and_every_step_take_the_fused_path(tiny_lm, paths):
    result = generate(tiny_lm, TEXT, max_new_tokens=5, stop_at_eos=False, backend="torch")
    layers = tiny_lm.info.num_layers
    assert result.steps == 5 and len(paths) >= layers * 5  # the prefill and one forward per new token at least
    assert set(paths) == {"fused"}


def test_census_batches_take_the_fused_path(tiny_models, paths):
    texts = [TEXT, "one two three", "the street was too tired because it did n't cross"]
    rows = [InputRow(i, f"t:{i}", text) for i, text in enumerate(texts)]
    measured, errors = measure_rows(tiny_models["bert"], rows, batch_tokens=60, backend="torch")
    assert errors == [] and len(measured) == 3
    assert paths and set(paths) == {"fused"}


def test_roles_batches_take_the_fused_path(tiny_llama, paths):
    roles_causal.head_roles(tiny_llama, repeat=8, batch=4, top_k=2, seeds=2)
    assert paths and set(paths) == {"fused"}


def test_heads_report_is_fused_except_where_it_needs_gradients(tiny_bert, paths):
    head_report(tiny_bert, TEXT, pairs=1, pruning_step=1.0)
    fused = [p for p in paths if p == "fused"]
    blocked = [p for p in paths if p != "fused"]
    assert fused and len(fused) > len(blocked)
    assert all(p.startswith("blocked: autograd records") for p in blocked)  # the gradient importance only


def test_the_blocked_path_runs_with_its_reason_where_fused_cannot(tiny_models, paths):
    """Autograd recording and an explicit block size go to the blocked path; the numbers agree with the fused."""
    from inspector.core.forward import forward

    loaded = tiny_models["llama"]
    inputs = dict(loaded.tokenizer(TEXT, return_tensors="pt"))
    with torch.no_grad():
        fused = forward(loaded, inputs, backend="torch").records
    embeds = loaded.model.get_input_embeddings()(inputs["input_ids"]).detach().requires_grad_()
    recorded = forward(loaded, {"inputs_embeds": embeds, "attention_mask": inputs["attention_mask"]},
                       backend="torch", grad=True).records  # gradients flow to the embeddings: autograd records
    assert {r.path for r in fused} == {"fused"}
    assert all(r.path.startswith("blocked: autograd records") for r in recorded)
    for a, b in zip(fused, recorded):
        torch.testing.assert_close(a.stats["entropy"], b.stats["entropy"], atol=1e-5, rtol=1e-5)
    request = hf.AttentionRequest(block_size=4)
    with torch.no_grad(), hf.attention_request(request):
        loaded.model(**inputs)
    assert all(r.path.startswith("blocked: the request sets a query block size") for r in request.records)
