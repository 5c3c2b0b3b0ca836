"""Where the compiled CPU kernel is off or unavailable (:mod:`kernels.compiled_cpu`; this module switches it off),
every page's forward routes each attention call by :func:`kernels.fused_cpu.fused_is_faster` (issue 43):
Inspect's capture, Generate's prefill and steps, the census and roles batches, and the Heads report's forwards
that need no gradient. A spy on the torch backend records which path each call took and its lengths; the blocked
path runs where the rule says it is faster, and where the fused one cannot be exact (autograd recording), and
says which. The tiny models' texts are far shorter than the rule's threshold, so most tests lower it
(:data:`SMALL_THRESHOLD`) to make both paths occur; one test reads the real threshold on the bundled MiniLM."""

from __future__ import annotations

import pytest
import torch

import kernels.compiled_cpu as compiled_cpu
import kernels.fused_cpu as fused_cpu
import kernels.hf as hf
from inspector.analyses import roles_causal
from inspector.analyses.census.input import InputRow
from inspector.analyses.census.measure import measure_rows
from inspector.analyses.generate import generate
from inspector.analyses.heads import head_report
from inspector.core.capture import capture
from inspector.core.loading import load_model

TEXT = "the animal did n't cross the street because it was too tired ."  # 15 tokens with [CLS] and [SEP]
# The tiny models' head size is 8: 1 × 8 tokens instead of 10 × 8 sends TEXT's 15 × 15 pairs to the fused path, a
# decode step and "one two" (4 × 4) to the blocked one.
SMALL_THRESHOLD = 1
FASTER = "blocked: faster for "


@pytest.fixture(autouse=True)
def compiled_kernel_off(monkeypatch) -> None:
    """The routing between the fused and the blocked path is what the compiled kernel's fallback relies on."""
    monkeypatch.setenv(compiled_cpu.SWITCH_ENV, "0")


@pytest.fixture
def small_threshold(monkeypatch) -> None:
    monkeypatch.setattr(fused_cpu, "FUSED_MIN_LENGTH_PER_HEAD_DIM", SMALL_THRESHOLD)


def assert_routed_by_the_rule(calls: list[tuple[str, int, int, int]]) -> None:
    """Each call that could be fused took the path the rule names for its lengths and head size."""
    assert calls
    for path, q_len, k_len, head_dim in calls:
        if fused_cpu.fused_is_faster(q_len, k_len, head_dim):
            assert path == "fused", (path, q_len, k_len)
        else:
            assert path == f"{FASTER}{q_len} queries × {k_len} keys of size {head_dim} (fused_cpu.fused_is_faster)"


def test_the_rule_sends_decode_steps_and_short_sequences_to_the_blocked_path():
    for head_dim in (32, 64, 256):  # MiniLM, SmolLM2, Gemma 3
        assert not fused_cpu.fused_is_faster(1, 4096, head_dim)  # a decode step, however long the cache
        assert not fused_cpu.fused_is_faster(128, 128, head_dim)  # a census text
    assert fused_cpu.fused_is_faster(320, 320, 32) and not fused_cpu.fused_is_faster(319, 320, 32)
    assert fused_cpu.fused_is_faster(512, 512, 32)  # MiniLM's longest input
    assert not fused_cpu.fused_is_faster(512, 512, 64) and fused_cpu.fused_is_faster(2048, 2048, 64)  # SmolLM2
    assert not fused_cpu.fused_is_faster(2048, 2048, 256) and fused_cpu.fused_is_faster(2560, 2560, 256)  # Gemma 3
    assert fused_cpu.fused_is_faster(400, 1024, 64)  # a cache with several queries: the pairs decide


def test_capture_is_routed_by_length(tiny_models, calls, small_threshold):
    loaded = tiny_models["llama"]
    capture(loaded, TEXT, backend="torch", weights=[0])
    capture(loaded, "one two", backend="torch", weights=[0])
    layers = loaded.info.num_layers
    assert [path for path, *_ in calls[:layers]] == ["fused"] * layers
    assert all(path.startswith(FASTER) for path, *_ in calls[layers:]) and len(calls) == 2 * layers
    assert_routed_by_the_rule(calls)


def test_capture_on_minilm_is_fused_at_512_tokens_and_blocked_at_128(calls):
    """The real threshold on the bundled MiniLM (6 layers): its longest input goes fused, a short one blocked."""
    from benchmarks.inspect_latency import text_of_length

    loaded = load_model("default", device="cpu")
    for tokens in (512, 128):
        capture(loaded, text_of_length(loaded.tokenizer, tokens), backend="torch", weights=[0])
    layers = loaded.info.num_layers
    assert [c[0] for c in calls[:layers]] == ["fused"] * layers and len(calls) == 2 * layers
    assert all(path.startswith(FASTER) for path, *_ in calls[layers:])
    assert_routed_by_the_rule(calls)


def test_generate_prefill_is_fused_and_every_step_blocked(tiny_lm, calls, small_threshold):
    result = generate(tiny_lm, TEXT, max_new_tokens=5, stop_at_eos=False, backend="torch")
    layers = tiny_lm.info.num_layers
    assert result.steps == 5 and len(calls) >= layers * 5  # the prefill and one forward per new token at least
    prefill, steps = calls[:layers], calls[layers:]
    assert {path for path, *_ in prefill} == {"fused"}
    assert steps and all(q_len == 1 and path.startswith(FASTER) for path, q_len, *_ in steps)
    assert_routed_by_the_rule(calls)


def test_census_batches_are_routed_by_length(tiny_models, calls, small_threshold):
    texts = [TEXT, "one two", "the street was too tired because it did n't cross"]
    rows = [InputRow(i, f"t:{i}", text) for i, text in enumerate(texts)]
    measured, errors = measure_rows(tiny_models["bert"], rows, batch_tokens=60, backend="torch")
    assert errors == [] and len(measured) == 3
    assert {path.split(" ")[0] for path, *_ in calls} == {"fused", "blocked:"}  # long batches fused, short not
    assert_routed_by_the_rule(calls)


def test_roles_batches_are_routed_by_length(tiny_llama, calls, small_threshold):
    roles_causal.head_roles(tiny_llama, repeat=8, batch=4, top_k=2, seeds=2)
    assert "fused" in {path for path, *_ in calls}
    assert_routed_by_the_rule(calls)


def test_heads_report_is_routed_by_length_except_where_it_needs_gradients(tiny_bert, calls, small_threshold):
    head_report(tiny_bert, TEXT, pairs=1, pruning_step=1.0)
    recorded = [c for c in calls if c[0].startswith("blocked: autograd records")]  # the gradient importance only
    routed = [c for c in calls if c not in recorded]
    assert recorded and len([c for c in routed if c[0] == "fused"]) > len(recorded)
    assert_routed_by_the_rule(routed)


def test_the_blocked_path_runs_with_its_reason_where_fused_cannot(tiny_models, small_threshold):
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
