"""Interventions through the one attention function (kernels/hf.py) and the experiments core
(inspector/core/outputs.py): each equals the same change made by hand."""

import pytest
import torch

from inspector.base.errors import InvalidRequestError
from inspector.core.forward import encode_text, forward
from inspector.core.loading import load_model
from inspector.core.outputs import model_output, output_change, output_projection
from kernels.hf import HeadAblation, HeadGate, ScoreScale, TieKeysToQueries, WeightEdit
from kernels.reference import reference_attention
from tests.conftest import TINY_ARCHITECTURES
from tests.tolerances import close

TEXT = "the animal did n't cross the street because it was too tired ."
ARCHS = ("bert", "distilbert", "gpt2", "llama")


@pytest.fixture(scope="module")
def models(tiny_model_dirs):
    return {arch: load_model(str(tiny_model_dirs[arch])) for arch in ARCHS}


def _output_projection_module(loaded, layer):
    names = ("attention.output.dense", "attention.out_lin", "attn.c_proj", "self_attn.o_proj")
    found = [m for name, m in loaded.model.named_modules() if name.endswith(names)]
    return found[layer]


@pytest.mark.parametrize("arch", ARCHS)
def test_zero_ablation_equals_zeroing_the_head_by_hand(models, arch):
    loaded = models[arch]
    inputs = encode_text(loaded, TEXT).inputs
    layer, head, d = 1, 2, loaded.info.head_dim
    ablated = forward(loaded, inputs, interventions=[HeadAblation(layer, (head,))]).outputs.last_hidden_state

    def zero_head(module, args):
        x = args[0].clone()
        x[..., head * d:(head + 1) * d] = 0
        return (x,)

    handle = _output_projection_module(loaded, layer).register_forward_pre_hook(zero_head)
    try:
        by_hand = forward(loaded, inputs).outputs.last_hidden_state
    finally:
        handle.remove()
    close(ablated, by_hand, "hidden")
    assert not torch.allclose(ablated, forward(loaded, inputs).outputs.last_hidden_state)


def test_mean_ablation_replaces_the_head_output_by_its_mean(models):
    loaded = models["bert"]
    inputs = encode_text(loaded, TEXT).inputs
    plain = forward(loaded, inputs, keep=("output",), keep_layers="all")
    ablated = forward(loaded, inputs, interventions=[HeadAblation(0, (1, 3), mode="mean")], keep=("output",),
                      keep_layers=frozenset({0}))
    before, after = plain.records[0].tensors["output"], ablated.records[0].tensors["output"]
    close(after[:, [1, 3]], before[:, [1, 3]].mean(dim=2, keepdim=True).expand_as(after[:, [1, 3]]), "hidden")
    close(after[:, [0, 2]], before[:, [0, 2]], "hidden")


def test_gate_of_ones_changes_nothing_and_carries_the_gradient(models):
    loaded = models["gpt2"]
    inputs = encode_text(loaded, TEXT).inputs
    gate = torch.ones(loaded.info.num_heads, requires_grad=True)
    result = forward(loaded, inputs, interventions=[HeadGate(1, gate)], grad=True)
    close(result.outputs.last_hidden_state.detach(), forward(loaded, inputs).outputs.last_hidden_state, "hidden")
    result.outputs.last_hidden_state.pow(2).sum().backward()
    assert gate.grad is not None and gate.grad.abs().sum() > 0


@pytest.mark.parametrize("arch", ("bert", "llama"))
def test_score_scale_equals_recomputing_with_that_scale(models, arch):
    loaded = models[arch]
    inputs = encode_text(loaded, TEXT).inputs
    causal = TINY_ARCHITECTURES[arch][1]
    result = forward(loaded, inputs, interventions=[ScoreScale(0, (1,), 1.0)], weights_layers="all",
                     keep=("query", "key", "value"), keep_layers="all")
    record = result.records[0]
    q, k, v = (record.tensors[name] for name in ("query", "key", "value"))
    _, by_hand = reference_attention(q, k, v, causal=causal, scale=1.0)
    _, unchanged = reference_attention(q, k, v, causal=causal, scale=record.scale)
    close(record.weights[:, 1], by_hand[:, 1], "weights")
    close(record.weights[:, 0], unchanged[:, 0], "weights")


@pytest.mark.parametrize("arch", ("bert", "llama"))
def test_tied_keys_equal_recomputing_with_queries_as_keys(models, arch):
    loaded = models[arch]
    inputs = encode_text(loaded, TEXT).inputs
    causal = TINY_ARCHITECTURES[arch][1]
    result = forward(loaded, inputs, interventions=[TieKeysToQueries(1, (0,))], weights_layers="all",
                     keep=("query", "key", "value"), keep_layers="all")
    record = result.records[1]
    q, k, v = (record.tensors[name] for name in ("query", "key", "value"))
    _, by_hand = reference_attention(q[:, :1], q[:, :1], v[:, :1], causal=causal, scale=record.scale)
    close(record.weights[:, 0], by_hand[:, 0], "weights")
    # Under GQA head 1 shares head 0's key head; tying head 0 must leave head 1 alone.
    _, untouched = reference_attention(q, k, v, causal=causal, scale=record.scale)
    close(record.weights[:, 1], untouched[:, 1], "weights")


def test_uniform_weight_edit_equals_uniform_weights_by_hand(models):
    loaded = models["gpt2"]
    inputs = encode_text(loaded, TEXT).inputs

    def uniform(weights, visible):
        ones = visible.expand_as(weights).float()
        return ones / ones.sum(dim=-1, keepdim=True)

    result = forward(loaded, inputs, interventions=[WeightEdit(0, (2,), uniform)], weights_layers="all",
                     keep=("value", "output"), keep_layers="all")
    record = result.records[0]
    n = inputs["input_ids"].shape[1]
    expected = torch.tril(torch.ones(n, n)) / torch.arange(1, n + 1)[:, None]
    close(record.weights[0, 2], expected, "weights")
    close(record.tensors["output"][0, 2], expected @ record.tensors["value"][0, 2], "hidden")
    close(record.stats["entropy"][0, 2], torch.log(torch.arange(1, n + 1).float()), "entropy")


def test_bad_heads_and_layers_are_clear_errors(models):
    loaded = models["bert"]
    inputs = encode_text(loaded, TEXT).inputs
    with pytest.raises(InvalidRequestError, match="heads 0–3"):
        forward(loaded, inputs, interventions=[HeadAblation(0, (7,))])
    with pytest.raises(InvalidRequestError, match="layers 0–1"):
        forward(loaded, inputs, interventions=[HeadAblation(5, (0,))])


@pytest.mark.parametrize("arch", ARCHS)
def test_output_projection_split_by_head_sums_to_the_projection(models, arch):
    loaded = models[arch]
    inputs = encode_text(loaded, TEXT).inputs
    layer = 1
    record = forward(loaded, inputs, keep=("output",), keep_layers="all").records[layer]
    out = record.tensors["output"][0]  # (heads, q_len, head_dim)
    weight, bias = output_projection(loaded, layer)
    per_head = torch.einsum("hqd,hdo->hqo", out, weight)
    total = per_head.sum(dim=0) + (bias if bias is not None else 0)
    module = _output_projection_module(loaded, layer)
    close(total, module(out.transpose(0, 1).reshape(out.shape[1], -1)), "hidden")


@pytest.mark.parametrize("arch", ("bert", "gpt2"))
def test_output_change_is_zero_for_no_change_and_positive_after_ablation(models, arch):
    loaded = models[arch]
    inputs = encode_text(loaded, TEXT).inputs
    base = model_output(loaded, forward(loaded, inputs), inputs)
    again = model_output(loaded, forward(loaded, inputs), inputs)
    assert output_change(base, again) == pytest.approx(0.0, abs=1e-6)
    heads = tuple(range(loaded.info.num_heads))
    ablated = forward(loaded, inputs, interventions=[HeadAblation(0, heads), HeadAblation(1, heads)])
    assert output_change(base, model_output(loaded, ablated, inputs)) > 1e-4


def _every_intervention_on_both_backends(loaded) -> None:
    """Every intervention kind through the Triton kernel equals the torch backend, gradients included: the
    interventions live in the attention function, not in a backend."""
    inputs = encode_text(loaded, TEXT).inputs

    def uniform(weights, visible):
        ones = visible.expand_as(weights).float()
        return ones / ones.sum(dim=-1, keepdim=True)

    results = {}
    for backend in ("torch", "triton"):
        gate = torch.ones(loaded.info.num_heads, requires_grad=True, device=inputs["input_ids"].device)
        interventions = [ScoreScale(0, (0,), 0.5), TieKeysToQueries(0, (3,)), WeightEdit(1, (1,), uniform),
                         HeadAblation(1, (2,), mode="mean"), HeadGate(1, gate)]
        result = forward(loaded, inputs, interventions=interventions, backend=backend, weights_layers="all",
                         grad=True)
        hidden = result.outputs.last_hidden_state
        hidden.pow(2).sum().backward()
        results[backend] = (hidden.detach(), [r.weights for r in result.records], gate.grad)
    close(results["triton"][0], results["torch"][0], "hidden")
    for ours, reference in zip(results["triton"][1], results["torch"][1]):
        close(ours, reference, "weights")
    close(results["triton"][2], results["torch"][2], "grad")


def test_interventions_give_the_same_result_on_the_triton_backend(models, monkeypatch):
    """On the CPU through the Triton interpreter."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    if next(models["llama"].model.parameters()).is_cuda:
        pytest.skip("the tiny models loaded on the GPU; the gpu-marked test below covers this there")
    _every_intervention_on_both_backends(models["llama"])


@pytest.mark.gpu
def test_interventions_give_the_same_result_on_the_gpu_triton_kernel(tiny_model_dirs):
    """The compiled kernels on a CUDA GPU (run by benchmarks/gpu_check.sh)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (benchmarks/gpu_check.sh runs these on one)")
    _every_intervention_on_both_backends(load_model(str(tiny_model_dirs["llama"]), device="cuda"))
