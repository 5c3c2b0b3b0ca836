"""kernels/flash.py on a CUDA GPU: bfloat16/float16 against the float32 oracle, head_dim 256, long sequences, the
backward, every tuning candidate, concurrent first calls, a tiny model end to end.

Marker ``gpu``: ``benchmarks/gpu_check.sh`` runs these (``pytest -m gpu``); on a machine without CUDA each test
skips itself when it runs (nothing probes the device at import). Low-precision outputs and gradients are judged
by flash-attention's rule: error against the float32 oracle ≤ 2 × plain PyTorch's error at the same precision.
This module imports nothing from the app (no streamlit) and needs no hypothesis.
"""

import threading

import pytest
import torch

from kernels import flash
from kernels.flash import COMPILED_CONFIGS, KernelConfig, flash_attention, forced_config, materialize_weights
from kernels.reference import blocked_attention, reference_attention, row_entropy
from tests.tolerances import close, plain_attention_same_dtype, within_twice_plain_error

pytestmark = pytest.mark.gpu

DEVICE = "cuda"


# One small tile for every kernel unless a test says otherwise: each tuning candidate is a compile of a few
# seconds, and correctness of every candidate has its own test below.
SMALL_TILES = KernelConfig(32, 32, 4, 2)


@pytest.fixture(autouse=True)
def cuda_compiler(monkeypatch):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (benchmarks/gpu_check.sh runs these on one)")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # the compiled kernels, never the interpreter
    with forced_config(SMALL_TILES):
        yield


def make_inputs(*, batch=2, heads=4, kv_heads=2, q_len=97, k_len=97, dim=64, dtype=torch.bfloat16, seed=0,
                padded=False):
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    q = torch.randn(batch, heads, q_len, dim, generator=g, device=DEVICE).to(dtype)
    k = torch.randn(batch, kv_heads, k_len, dim, generator=g, device=DEVICE).to(dtype)
    v = torch.randn(batch, kv_heads, k_len, dim, generator=g, device=DEVICE).to(dtype)
    mask = None
    if padded:  # left padding on the last sequence: under a causal mask its first queries see nothing
        mask = torch.ones(batch, k_len, dtype=torch.bool, device=DEVICE)
        mask[-1, : max(1, k_len // 4)] = False
    return q, k, v, mask


def precision(dtype):
    return {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}[dtype]


# The forward and backward oracle tests take the same case tuples, named by these fields and these ids.
CASE_FIELDS = "dtype,q_len,k_len,dim,causal,window,padded,kv_heads"


def case_id(value):
    return precision(value) if isinstance(value, torch.dtype) else str(value)


def check_forward(q, k, v, mask, *, causal, scale, window):
    kwargs = dict(causal=causal, scale=scale, key_padding_mask=mask, window=window)
    out, stats = flash_attention(q, k, v, stats=("entropy", "lse", "sink"), **kwargs)
    oracle, oracle_weights = reference_attention(q.float(), k.float(), v.float(), **kwargs)
    if q.dtype == torch.float32:
        close(out, oracle, "output")
    else:
        within_twice_plain_error(out, oracle, plain_attention_same_dtype(q, k, v, **kwargs))
    p = precision(q.dtype)
    close(stats["entropy"], row_entropy(oracle_weights), "entropy", p)
    close(stats["sink"], oracle_weights[..., 0], "entropy", p)
    weights = materialize_weights(q, k, lse=stats["lse"], heads=[q.shape[1] - 1], **kwargs)
    close(weights, oracle_weights[:, -1:], "weights", "fp16" if p == "fp16" else ("bf16" if p == "bf16" else "fp32"))
    return out, stats


@pytest.mark.parametrize(CASE_FIELDS, [
    (torch.bfloat16, 1, 1, 64, False, None, False, 4),
    (torch.bfloat16, 97, 97, 80, True, None, True, 2),
    (torch.bfloat16, 200, 200, 128, False, 64, True, 1),
    (torch.bfloat16, 129, 129, 96, True, 33, False, 2),
    (torch.bfloat16, 513, 513, 256, True, None, True, 2),
    (torch.bfloat16, 300, 4097, 64, True, None, False, 2),  # a KV cache: 300 queries at the end of 4097 keys
    (torch.bfloat16, 4097, 4097, 128, True, None, True, 2),
    (torch.float16, 97, 97, 80, True, None, True, 2),
    (torch.float16, 4097, 4097, 128, True, None, True, 2),
    (torch.float16, 513, 513, 256, False, 100, False, 1),
], ids=case_id)
def test_low_precision_forward_against_the_oracle(dtype, q_len, k_len, dim, causal, window, padded, kv_heads):
    q, k, v, mask = make_inputs(q_len=q_len, k_len=k_len, dim=dim, dtype=dtype, kv_heads=kv_heads, padded=padded,
                                seed=q_len)
    check_forward(q, k, v, mask, causal=causal, scale=dim ** -0.5, window=window)


def test_float32_on_the_gpu_matches_the_oracle_to_float32_tolerance():
    q, k, v, mask = make_inputs(q_len=333, k_len=333, dim=128, dtype=torch.float32, padded=True)
    check_forward(q, k, v, mask, causal=True, scale=0.1, window=100)


def test_materialize_bf16_and_fp32_rows_of_one_head_at_16k():
    q, k, v, _ = make_inputs(batch=1, heads=2, kv_heads=1, q_len=16384, k_len=16384, dim=128, seed=1)
    _, stats = flash_attention(q, k, v, causal=True, scale=128 ** -0.5, stats=("lse",))
    rows = slice(16384 - 512, 16384)  # the last 512 rows of head 1: the reference for them fits easily
    expected = torch.softmax((q[:, 1:2, rows].float() @ k.float().transpose(-1, -2)) * 128 ** -0.5
                             + torch.triu(torch.full((512, 16384), float("-inf"), device=DEVICE), 16384 - 512 + 1),
                             dim=-1)
    for dtype, p in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
        weights = materialize_weights(q, k, lse=stats["lse"], causal=True, scale=128 ** -0.5, heads=[1], rows=rows,
                                      dtype=dtype)
        assert weights.shape == (1, 1, 512, 16384) and weights.dtype == dtype
        # bf16 inputs: the kernel's scores and torch's fp32 matmul of the same bf16 values differ by summation order.
        close(weights, expected, "weights", p, atol=1e-4 if p == "fp32" else None)


def test_long_sequence_statistics_against_the_blocked_torch_path():
    q, k, v, mask = make_inputs(batch=1, heads=2, kv_heads=1, q_len=16384, k_len=16384, dim=128, padded=False)
    _, stats = flash_attention(q, k, v, causal=True, scale=128 ** -0.5, stats=("entropy", "lse", "sink"))
    _, expected = blocked_attention(q.float(), k.float(), v.float(), causal=True, scale=128 ** -0.5,
                                    stats=("entropy", "lse", "sink"))
    close(stats["entropy"], expected["entropy"], "entropy", "bf16")
    close(stats["lse"], expected["lse"], "lse", "bf16")
    close(stats["sink"], expected["sink"], "entropy", "bf16")


def check_backward(q, k, v, mask, *, causal, scale, window):
    kwargs = dict(causal=causal, scale=scale, key_padding_mask=mask, window=window)
    grad_out = torch.randn(q.shape, device=DEVICE, generator=torch.Generator(device=DEVICE).manual_seed(3))

    def grads(fn, *inputs):
        inputs = [t.detach().clone().requires_grad_() for t in inputs]
        return torch.autograd.grad(fn(*inputs), inputs, grad_out.to(inputs[0].dtype))

    ours = grads(lambda *t: flash_attention(*t, stats=(), **kwargs)[0], q, k, v)
    oracle = grads(lambda *t: reference_attention(*t, **kwargs)[0], q.float(), k.float(), v.float())
    if q.dtype == torch.float32:
        for g, r in zip(ours, oracle):
            close(g, r, "grad")
        return
    plain = grads(lambda *t: plain_attention_same_dtype(*t, **kwargs), q, k, v)
    for name, g, r, b in zip("qkv", ours, oracle, plain):
        assert g.dtype == q.dtype, name
        within_twice_plain_error(g, r, b, slack=1e-3)


@pytest.mark.parametrize(CASE_FIELDS, [
    (torch.bfloat16, 97, 97, 64, True, None, True, 2),
    (torch.bfloat16, 200, 200, 128, False, 50, False, 4),
    (torch.bfloat16, 1024, 1024, 128, True, None, False, 1),
    (torch.bfloat16, 257, 257, 256, True, None, False, 2),
    (torch.bfloat16, 100, 700, 80, True, 300, True, 2),
    (torch.float16, 1024, 1024, 128, True, None, False, 1),
], ids=case_id)
def test_low_precision_backward_against_the_oracle(dtype, q_len, k_len, dim, causal, window, padded, kv_heads):
    q, k, v, mask = make_inputs(q_len=q_len, k_len=k_len, dim=dim, dtype=dtype, kv_heads=kv_heads, padded=padded,
                                seed=k_len)
    check_backward(q, k, v, mask, causal=causal, scale=dim ** -0.5, window=window)


def test_float32_backward_on_the_gpu():
    q, k, v, mask = make_inputs(q_len=150, k_len=150, dim=64, dtype=torch.float32, padded=True)
    check_backward(q, k, v, mask, causal=True, scale=0.125, window=None)


@pytest.mark.parametrize("kernel,head_class,index", [
    (kernel, head_class, index)
    for kernel, classes in COMPILED_CONFIGS.items() if kernel != "backward_delta"
    for head_class, configs in classes.items() for index in range(len(configs))])
def test_every_tuning_candidate_is_correct(kernel, head_class, index):
    config = COMPILED_CONFIGS[kernel][head_class][index]
    dim = 256 if head_class == "d256" else 128
    q, k, v, mask = make_inputs(q_len=300, k_len=300, dim=dim, padded=True, seed=index)
    with forced_config(config, kernels=[kernel]):
        if kernel in ("forward", "materialize"):
            check_forward(q, k, v, mask, causal=True, scale=dim ** -0.5, window=120)
        else:
            check_backward(q, k, v, mask, causal=True, scale=dim ** -0.5, window=120)


def test_concurrent_first_calls_compile_once_and_answer_each_caller():
    """Eight threads ask for one variant nobody has compiled yet (head_dim 48): one compile and tune, eight results."""
    inputs = [make_inputs(q_len=264 + 8 * i, k_len=264 + 8 * i, dim=48, seed=i) for i in range(8)]  # one bucket
    results, errors = {}, []

    def work(i):
        try:
            q, k, v, _ = inputs[i]
            with forced_config(None, kernels=["forward"]):  # this test is about the tuner: let it tune
                results[i] = flash_attention(q, k, v, causal=True, scale=0.2, stats=("entropy",))
        except Exception as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, (q, k, v, _) in enumerate(inputs):
        _, oracle_weights = reference_attention(q.float(), k.float(), v.float(), causal=True, scale=0.2)
        close(results[i][1]["entropy"], row_entropy(oracle_weights), "entropy", "bf16")
    chosen = [key for key in flash.LAUNCHER.chosen_configs() if key[0] == "forward" and ("HEAD_DIM", 48) in key[1][1]]
    assert len(chosen) == 1, chosen  # all eight lengths share one bucket: tuned once


def test_tiny_model_on_the_gpu_through_the_triton_backend_equals_eager():
    from kernels.hf import AttentionRequest, attention_request, resolve_backend
    from tests.conftest import model_pair

    assert resolve_backend("auto", DEVICE) == "triton"
    with pytest.raises(Exception, match="CUDA tensors"):
        resolve_backend("triton", "cpu")
    eager, ours = (model.to(DEVICE) for model in model_pair("llama", seed=2))
    ids = torch.randint(5, 40, (2, 37), device=DEVICE)
    mask = torch.ones(2, 37, dtype=torch.long, device=DEVICE)
    mask[1, :5] = 0
    real = mask.bool()
    request = AttentionRequest(backend="triton", weights_layers="all")
    with torch.no_grad():
        expected = eager(input_ids=ids, attention_mask=mask, output_attentions=True)
        with attention_request(request):
            actual = ours(input_ids=ids, attention_mask=mask).last_hidden_state
    close(actual[real], expected.last_hidden_state[real], "hidden")
    assert len(request.records) == len(expected.attentions)  # else the zip below compares nothing
    for record, eager_weights in zip(request.records, expected.attentions):
        rows = real[:, None, :, None].expand_as(eager_weights)
        close(record.weights[rows], eager_weights[rows], "weights")
