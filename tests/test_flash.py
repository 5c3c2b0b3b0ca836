"""kernels/flash.py on the CPU: Triton's interpreter against the reference oracle, and every kernel compiled for
sm_90 (Hopper) ahead of time. GPU runs of the same kernels are in tests/test_flash_gpu.py (marker ``gpu``).

Each test turns the interpreter on for itself (``TRITON_INTERPRET=1`` via monkeypatch): the kernels read the mode
when launched, so nothing here depends on the environment pytest was started in.
"""

import math
import threading

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels.flash import (
    COMPILED_CONFIGS,
    KernelConfig,
    TritonUnavailableError,
    flash_attention,
    forced_config,
    materialize_weights,
)
from kernels.reference import reference_attention, row_entropy, visible_keys_mask
from tests.tolerances import close, plain_attention_same_dtype, within_twice_plain_error


@pytest.fixture(autouse=True)
def triton_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def make_inputs(*, batch=2, heads=4, kv_heads=2, q_len=9, k_len=9, dim=16, seed=0, dtype=torch.float32,
                padded=False, left_padding=False):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, q_len, dim, generator=g).to(dtype)
    k = torch.randn(batch, kv_heads, k_len, dim, generator=g).to(dtype)
    v = torch.randn(batch, kv_heads, k_len, dim, generator=g).to(dtype)
    mask = None
    if padded:  # the last sequence of the batch is shorter: right padding, or left padding (decoders)
        mask = torch.ones(batch, k_len, dtype=torch.bool)
        cut = max(1, k_len // 3)
        if left_padding:
            mask[-1, :cut] = False
        else:
            mask[-1, k_len - cut:] = False
    return q, k, v, mask


def check_against_reference(q, k, v, mask, *, causal, scale, window):
    stats_names = ("entropy", "lse", "sink")
    out, stats = flash_attention(q, k, v, causal=causal, scale=scale, key_padding_mask=mask, window=window,
                                 stats=stats_names)
    ref_out, ref_weights = reference_attention(q, k, v, causal=causal, scale=scale, key_padding_mask=mask,
                                               window=window)
    close(out, ref_out, "output")
    assert set(stats) == set(stats_names)
    assert all(s.dtype == torch.float32 and s.shape == q.shape[:3] for s in stats.values())
    close(stats["entropy"], row_entropy(ref_weights), "entropy")
    close(stats["sink"], ref_weights[..., 0], "weights")
    visible = visible_keys_mask(q.shape[2], k.shape[2], causal=causal, window=window, key_padding_mask=mask)
    scores = torch.matmul(q.double(), k.double().repeat_interleave(q.shape[1] // k.shape[1], 1).transpose(-1, -2))
    expected_lse = torch.logsumexp((scores * scale).masked_fill(~visible, float("-inf")), dim=-1)
    close(stats["lse"], expected_lse, "lse")
    weights = materialize_weights(q, k, lse=stats["lse"], causal=causal, scale=scale, key_padding_mask=mask,
                                  window=window)
    close(weights, ref_weights, "weights")
    return out, stats, weights


# (q_len, k_len, head_dim, causal, window, padded, heads, kv_heads): every length in {1, 17, 97, 129, 200} and every
# head_dim in {16, 32, 64, 80, 128} occurs, each with and without the causal mask; windows, padding, GQA and
# q_len < k_len (queries are the last positions, as with a KV cache) are spread across them.
FORWARD_CASES = [
    (1, 1, 16, False, None, False, 2, 2),
    (1, 1, 64, True, None, False, 2, 1),
    (1, 200, 64, True, None, True, 4, 2),
    (17, 17, 16, True, None, True, 4, 2),
    (17, 17, 80, False, None, False, 2, 1),
    (97, 97, 32, True, 20, False, 4, 4),
    (97, 97, 128, False, 33, True, 4, 2),
    (129, 129, 64, True, None, False, 2, 2),
    (129, 129, 80, False, None, True, 4, 1),
    (200, 200, 128, True, 64, True, 4, 2),
    (200, 200, 32, False, None, False, 2, 2),
    (17, 129, 128, True, None, True, 2, 1),
    (97, 200, 16, True, 50, True, 4, 2),
    (129, 200, 80, False, 70, False, 2, 2),
    (1, 17, 32, False, 5, True, 2, 1),
    (33, 33, 96, True, None, True, 2, 1),  # 96 and 256 beyond the CPU list: the lane padding and the
    (17, 40, 256, False, 9, False, 2, 2),  # largest head_dim, cheaply at these lengths
]


@pytest.mark.parametrize("q_len,k_len,dim,causal,window,padded,heads,kv_heads", FORWARD_CASES)
def test_forward_statistics_and_weights_match_the_reference(q_len, k_len, dim, causal, window, padded, heads,
                                                             kv_heads):
    q, k, v, mask = make_inputs(heads=heads, kv_heads=kv_heads, q_len=q_len, k_len=k_len, dim=dim, padded=padded,
                                seed=q_len + dim)
    check_against_reference(q, k, v, mask, causal=causal, scale=dim ** -0.5, window=window)


@pytest.mark.parametrize("block_m,block_n,causal,window", [(16, 32, True, 21), (32, 16, False, 9),
                                                            (64, 16, True, None), (16, 64, True, 7)])
def test_other_tile_shapes(block_m, block_n, causal, window):
    """Tiles smaller and larger than the interpreter's default, and unequal, move every phase boundary."""
    q, k, v, mask = make_inputs(heads=2, kv_heads=1, q_len=50, k_len=70, dim=16, padded=True, left_padding=True)
    with forced_config(KernelConfig(block_m, block_n)):
        check_against_reference(q, k, v, mask, causal=causal, scale=0.3, window=window)
        check_gradients(q, k, v, mask, causal=causal, scale=0.3, window=window)


def test_fully_masked_rows_are_defined():
    """Left padding under a causal mask: the first queries see no key at all (the reference's convention)."""
    q, k, v, _ = make_inputs(batch=1, q_len=6, k_len=6, dim=16)
    mask = torch.tensor([[False, False, True, True, True, True]])
    out, stats, weights = check_against_reference(q, k, v, mask, causal=True, scale=0.4, window=None)
    for tensor in (out, stats["entropy"], stats["sink"], weights):
        assert not torch.isnan(tensor).any()
    assert torch.equal(out[:, :, :2], torch.zeros_like(out[:, :, :2]))
    assert torch.equal(weights[:, :, :2], torch.zeros_like(weights[:, :, :2]))
    assert torch.isneginf(stats["lse"][:, :, :2]).all()
    assert (stats["entropy"][:, :, :2] == 0).all() and (stats["sink"][:, :, :2] == 0).all()
    grads = check_gradients(q, k, v, mask, causal=True, scale=0.4, window=None)
    assert (grads[0][:, :, :2] == 0).all()  # no key seen: the query gets no gradient


@pytest.mark.parametrize("scale", [0.0, -0.7, 3.0])
def test_scale_is_explicit_zero_included(scale):
    q, k, v, mask = make_inputs(q_len=17, k_len=17, dim=16, padded=True)
    out, stats, _ = check_against_reference(q, k, v, mask, causal=True, scale=scale, window=None)
    if scale == 0.0:  # uniform weights over the visible keys: entropy = log(count)
        counts = visible_keys_mask(17, 17, causal=True, key_padding_mask=mask).sum(-1).expand_as(stats["entropy"])
        close(stats["entropy"], torch.log(counts.double()), "entropy")


def test_requested_statistics_only_and_defaults():
    q, k, v, _ = make_inputs(q_len=9, k_len=9)
    _, stats = flash_attention(q, k, v, causal=False, scale=0.5)
    assert set(stats) == {"entropy", "lse"}
    out, none = flash_attention(q, k, v, causal=False, scale=0.5, stats=())
    assert none == {} and out.shape == q.shape
    _, sink_only = flash_attention(q, k, v, causal=False, scale=0.5, stats=("sink",))
    assert set(sink_only) == {"sink"}
    with pytest.raises(ValueError, match="unknown statistics"):
        flash_attention(q, k, v, causal=False, scale=0.5, stats=("variance",))


@pytest.mark.parametrize("q_len,k_len,dim,causal,window,padded", [
    (17, 17, 16, True, None, True),
    (97, 97, 64, False, None, True),
    (40, 97, 80, True, 30, False),
    (129, 129, 32, False, 17, True),
])
def test_fp16_output_within_twice_plain_pytorch_error(q_len, k_len, dim, causal, window, padded):
    q, k, v, mask = make_inputs(q_len=q_len, k_len=k_len, dim=dim, dtype=torch.float16, padded=padded, seed=7)
    kwargs = dict(causal=causal, scale=dim ** -0.5, key_padding_mask=mask, window=window)
    out, stats = flash_attention(q, k, v, stats=("entropy", "lse", "sink"), **kwargs)
    assert out.dtype == torch.float16 and all(s.dtype == torch.float32 for s in stats.values())
    oracle, oracle_weights = reference_attention(q.float(), k.float(), v.float(), **kwargs)
    within_twice_plain_error(out, oracle, plain_attention_same_dtype(q, k, v, **kwargs))
    close(stats["entropy"], row_entropy(oracle_weights), "entropy", "fp16")
    close(stats["sink"], oracle_weights[..., 0], "entropy", "fp16")
    weights = materialize_weights(q, k, lse=stats["lse"], dtype=torch.float16, **kwargs)
    assert weights.dtype == torch.float16
    close(weights, oracle_weights, "weights", "fp16")


def test_materialize_only_what_was_asked():
    q, k, v, mask = make_inputs(heads=4, kv_heads=1, q_len=97, k_len=129, dim=32, padded=True)
    kwargs = dict(causal=True, scale=0.2, key_padding_mask=mask, window=40)
    _, stats = flash_attention(q, k, v, stats=("lse",), **kwargs)
    _, full = reference_attention(q, k, v, **kwargs)
    part = materialize_weights(q, k, lse=stats["lse"], heads=[3, 1], rows=slice(4, 90), **kwargs)
    assert part.shape == (2, 2, 86, 129) and part.dtype == torch.float32
    close(part, full[:, [3, 1], 4:90], "weights")
    one_row = materialize_weights(q, k, lse=stats["lse"], heads=[0], rows=slice(96, 97), **kwargs)
    close(one_row, full[:, :1, 96:], "weights")
    assert materialize_weights(q, k, lse=stats["lse"], heads=[], **kwargs).shape == (2, 0, 97, 129)
    with pytest.raises(ValueError, match="heads"):
        materialize_weights(q, k, lse=stats["lse"], heads=[4], **kwargs)
    with pytest.raises(ValueError, match="step"):
        materialize_weights(q, k, lse=stats["lse"], rows=slice(0, 10, 2), **kwargs)
    with pytest.raises(ValueError, match="lse"):
        materialize_weights(q, k, lse=stats["lse"][:, :2], **kwargs)


def check_gradients(q, k, v, mask, *, causal, scale, window):
    """Gradients of a random linear function of the output, ours against autograd through the oracle."""
    q, k, v = (t.detach().clone().requires_grad_() for t in (q, k, v))
    grad_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(5))
    out, stats = flash_attention(q, k, v, causal=causal, scale=scale, key_padding_mask=mask, window=window)
    assert out.requires_grad and not any(s.requires_grad for s in stats.values())
    ours = torch.autograd.grad(out, (q, k, v), grad_out)
    ref, _ = reference_attention(q, k, v, causal=causal, scale=scale, key_padding_mask=mask, window=window)
    expected = torch.autograd.grad(ref, (q, k, v), grad_out)
    for name, g, r in zip("qkv", ours, expected):
        assert g.shape == r.shape and g.dtype == r.dtype, name
        close(g, r, "grad")
    return ours


@pytest.mark.parametrize("q_len,k_len,dim,causal,window,padded,heads,kv_heads", [
    (17, 17, 16, True, None, True, 4, 2),
    (97, 97, 32, False, None, True, 4, 1),
    (97, 97, 64, True, 20, False, 2, 2),
    (40, 129, 80, True, None, True, 4, 2),
    (129, 200, 32, False, 70, True, 2, 1),
    (1, 1, 16, False, None, False, 1, 1),
])
def test_backward_matches_autograd_through_the_reference(q_len, k_len, dim, causal, window, padded, heads,
                                                         kv_heads):
    q, k, v, mask = make_inputs(heads=heads, kv_heads=kv_heads, q_len=q_len, k_len=k_len, dim=dim, padded=padded,
                                left_padding=causal, seed=11)
    check_gradients(q, k, v, mask, causal=causal, scale=dim ** -0.5, window=window)


def test_plain_forward_without_autograd():
    q, k, v, _ = make_inputs()
    q.requires_grad_()
    with torch.no_grad():
        out, _ = flash_attention(q, k, v, causal=True, scale=0.3)
    assert not out.requires_grad and out.grad_fn is None
    with torch.inference_mode():
        assert not flash_attention(q, k, v, causal=True, scale=0.3)[0].requires_grad
    out, _ = flash_attention(q, k, v, causal=True, scale=0.3)
    assert type(out.grad_fn).__name__ == "FlashAttentionFunctionBackward"


def test_without_gpu_or_interpreter_the_error_says_what_to_do(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET")
    q, k, v, _ = make_inputs()
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: CPU tensors get a different message (covered by the GPU tests)")
    with pytest.raises(TritonUnavailableError, match="NVIDIA GPU.*torch or auto backend.*TRITON_INTERPRET=1"):
        flash_attention(q, k, v, causal=True, scale=0.3)
    with pytest.raises(TritonUnavailableError, match="NVIDIA GPU"):
        materialize_weights(q, k, lse=torch.zeros(q.shape[:3]), causal=True, scale=0.3)


def test_the_mode_is_read_at_launch_not_at_import(monkeypatch):
    """One process: interpreter on, off (a clear error on a CPU-only machine), on again."""
    q, k, v, _ = make_inputs()
    expected, _ = reference_attention(q, k, v, causal=False, scale=0.3)
    close(flash_attention(q, k, v, causal=False, scale=0.3)[0], expected, "output")
    if not torch.cuda.is_available():
        monkeypatch.delenv("TRITON_INTERPRET")
        with pytest.raises(TritonUnavailableError):
            flash_attention(q, k, v, causal=False, scale=0.3)
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    close(flash_attention(q, k, v, causal=False, scale=0.3)[0], expected, "output")


def test_the_interpreter_leaves_triton_language_as_it_found_it():
    """Interpreted launches must not leave triton.language patched, or later compilation in the process breaks."""
    import triton.language as tl

    def snapshot():
        return {module.__name__: dict(vars(module)) for module in (tl, tl.core, tl.math)} | {
            "tensor": dict(vars(tl.core.tensor))}

    before = snapshot()
    q, k, v, _ = make_inputs(q_len=20, k_len=20)
    _, stats = flash_attention(q, k, v, causal=True, scale=0.3, stats=("entropy", "lse", "sink"))
    materialize_weights(q, k, lse=stats["lse"], causal=True, scale=0.3)
    after = snapshot()
    for space in before:
        changed = sorted(name for name in before[space] if before[space][name] is not after[space].get(name))
        assert not changed, f"{space}: {changed}"


def test_concurrent_first_calls_give_each_caller_its_own_result():
    inputs = [make_inputs(q_len=n, k_len=n, dim=d, seed=n) for n, d in ((33, 16), (17, 32), (50, 16), (9, 64))]
    results, errors = {}, []

    def work(i):
        try:
            q, k, v, _ = inputs[i]
            results[i] = flash_attention(q, k, v, causal=True, scale=0.25, stats=("entropy",))
        except Exception as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, (q, k, v, _) in enumerate(inputs):
        ref_out, ref_weights = reference_attention(q, k, v, causal=True, scale=0.25)
        close(results[i][0], ref_out, "output")
        close(results[i][1]["entropy"], row_entropy(ref_weights), "entropy")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q_len=st.integers(1, 40), extra_keys=st.integers(0, 30), group=st.sampled_from([1, 2]),
       causal=st.booleans(), window=st.one_of(st.none(), st.integers(1, 50)), pad_from=st.integers(1, 70),
       seed=st.integers(0, 2**16), scale=st.floats(0.0, 3.0))
def test_properties_rows_sum_to_one_masked_zero_entropy_bounded(q_len, extra_keys, group, causal, window, pad_from,
                                                                seed, scale):
    k_len = q_len + extra_keys
    q, k, v, _ = make_inputs(batch=1, heads=2 * group, kv_heads=2, q_len=q_len, k_len=k_len, dim=16, seed=seed)
    mask = torch.arange(k_len)[None, :] < pad_from
    kwargs = dict(causal=causal, scale=scale, key_padding_mask=mask, window=window)
    out, stats = flash_attention(q, k, v, stats=("entropy", "lse", "sink"), **kwargs)
    weights = materialize_weights(q, k, lse=stats["lse"], **kwargs)
    visible = visible_keys_mask(q_len, k_len, causal=causal, window=window, key_padding_mask=mask)
    counts = visible.sum(-1).expand_as(stats["entropy"])
    sums = weights.sum(-1)
    assert torch.allclose(sums[counts > 0], torch.tensor(1.0), atol=1e-5)
    assert (sums[counts == 0] == 0).all() and (out.abs().sum(-1)[counts == 0] == 0).all()
    assert (weights.masked_select(~visible.expand_as(weights)) == 0).all()
    assert (stats["entropy"] >= 0).all() and (stats["entropy"] <= torch.log(counts.clamp_min(1).float()) + 1e-5).all()
    assert ((stats["sink"] >= 0) & (stats["sink"] <= 1 + 1e-6)).all()
    assert math.isfinite(float(stats["entropy"].sum() + out.sum()))


def test_input_validation():
    q, k, v, _ = make_inputs()
    with pytest.raises(ValueError, match="dtype"):
        flash_attention(q, k.double(), v, causal=True, scale=0.3)
    with pytest.raises(ValueError, match="head_dim"):
        big = torch.zeros(1, 1, 4, 512)
        flash_attention(big, big, big, causal=True, scale=0.3)
    with pytest.raises(ValueError, match="heads"):
        flash_attention(q[:, :3], k, v, causal=True, scale=0.3)


def test_non_contiguous_inputs_as_transformers_passes_them():
    """transformers hands (batch, len, heads, d) projections transposed to (batch, heads, len, d), and slices."""
    g = torch.Generator().manual_seed(3)
    q = torch.randn(2, 20, 4, 16, generator=g).transpose(1, 2)
    kv = torch.randn(2, 23, 2, 2, 16, generator=g)
    k, v = kv[:, :, 0].transpose(1, 2), kv[:, :, 1].transpose(1, 2)
    check_against_reference(q, k, v, None, causal=True, scale=0.25, window=None)
    check_gradients(q, k, v, None, causal=True, scale=0.25, window=None)


# ------------------------------------------------------------------------------------ compiled for sm_90 (H200)


def _aot_inputs(dim, dtype, gqa=True):
    q = torch.randn(2, 4, 300, dim).to(dtype).requires_grad_()
    kv = torch.randn(2, 2 if gqa else 4, 300, dim).to(dtype)
    return q, kv


@pytest.mark.slow
def test_every_kernel_variant_compiles_for_hopper(monkeypatch):
    """What the CPU interpreter cannot check: the compiler's typing rules, tl.dot shapes, shared memory. Every tuning
    candidate at head_dim 128 in bfloat16 with all features on (the GPU benchmark's case), and one candidate for
    head_dim 80 (padded lanes), head_dim 256 (its own tile class) and float32 (IEEE dots), built to a cubin for
    sm_90 — the same argument specialisation a launch on the H200 would get — with its shared memory within the
    GPU's limit. About two minutes on two CPU cores with an empty Triton cache; seconds once cached."""
    from kernels.flash_aot import SM90_SHARED_MEMORY_BYTES, compile_only

    monkeypatch.delenv("TRITON_INTERPRET")

    def run_everything(q, kv, mask):
        o, stats = flash_attention(q, kv, kv, causal=True, scale=0.1, key_padding_mask=mask, window=64,
                                   stats=("entropy", "lse", "sink"))
        o.sum().backward()
        materialize_weights(q.detach(), kv, lse=torch.zeros(q.shape[:3]), causal=True, scale=0.1,
                            key_padding_mask=mask, window=64, heads=[1], dtype=torch.bfloat16)

    mask = torch.ones(2, 300, dtype=torch.bool)
    with compile_only() as compiled:
        run_everything(*_aot_inputs(128, torch.bfloat16), mask)  # every candidate (nothing forced)
        for dim, dtype in ((80, torch.bfloat16), (256, torch.bfloat16), (128, torch.float32)):
            head_class = "d256" if dim > 128 else "d128"
            with forced_config(COMPILED_CONFIGS["forward"][head_class][0]):
                run_everything(*_aot_inputs(dim, dtype), mask)
        with forced_config(COMPILED_CONFIGS["forward"]["d128"][-1]), torch.no_grad():
            q, kv = _aot_inputs(128, torch.bfloat16)
            flash_attention(q, kv, kv, causal=False, scale=0.1, stats=())  # the plain forward, no masks at all
    kinds = {variant.kernel for variant in compiled}
    assert kinds == {"forward", "materialize", "backward_delta", "backward_dkdv", "backward_dq"}
    every_d128 = sum(len(configs["d128"]) for configs in COMPILED_CONFIGS.values())
    assert len(compiled) >= every_d128
    too_big = [v for v in compiled if v.shared > SM90_SHARED_MEMORY_BYTES]
    assert not too_big, f"variants over the shared-memory limit: {too_big}"


# ------------------------------------------------------------------------------- the GPU benchmark's code path


@pytest.mark.slow
def test_benchmark_smoke_mode_runs_its_checks_and_writes_well_formed_tables(tmp_path):
    """``benchmarks/attention_kernels.py --smoke`` (CPU interpreter, tiny shapes): every in-run correctness check
    passes and every table has the shape of its header. Its timings mean nothing and are not looked at."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "benchmarks.attention_kernels", "--smoke", "--out", str(tmp_path)],
                          cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    section = (tmp_path / "attention_kernels.md").read_text()
    assert section.startswith("## Attention kernels (GPU)\n") and "NOT performance numbers" in section
    tables, current = [], []
    for line in section.splitlines() + [""]:
        if line.startswith("|"):
            current.append([cell.strip() for cell in line.strip("|").split("|")])
        elif current:
            tables.append(current)
            current = []
    assert len(tables) == 5  # calibration, forward, backward, materialise, peak memory
    for table in tables:
        assert len({len(row) for row in table}) == 1, table[0]
        assert set("".join(table[1])) <= set("-:")  # the alignment row
    raw = json.loads((tmp_path / "attention_kernels.json").read_text())
    assert raw["complete"] and raw["smoke"] and not raw["not_measured"]
    forward, backward = tables[1][2:], tables[2][2:]
    assert len(forward) == len(backward) == len(raw["rows"]) == 10
    assert all(row[-1].startswith("ok") for row in forward + backward)
