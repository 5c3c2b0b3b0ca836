"""kernels/reference.py: the blocked torch path and materialise-from-LSE against the plain oracle."""

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.reference import (
    blocked_attention,
    check_attention_inputs,
    materialize_weights,
    reference_attention,
    row_entropy,
    visible_key_counts,
    visible_keys_mask,
)
from tests.tolerances import close


def naive_attention(q, k, v, *, causal, scale, key_padding_mask=None, window=None):
    """Loop-per-row attention written from the definition, independent of the reference's helpers."""
    batch, heads, q_len, _ = q.shape
    k_len = k.shape[2]
    group = heads // k.shape[1]
    out = torch.zeros(batch, heads, q_len, v.shape[-1], dtype=torch.float64)
    weights = torch.zeros(batch, heads, q_len, k_len, dtype=torch.float64)
    for b in range(batch):
        for h in range(heads):
            for i in range(q_len):
                pos = k_len - q_len + i
                keys = [j for j in range(k_len)
                        if (not causal or j <= pos) and (window is None or j > pos - window)
                        and (key_padding_mask is None or bool(key_padding_mask[b, j]))]
                if not keys:
                    continue
                s = torch.stack([q[b, h, i].double() @ k[b, h // group, j].double() * scale for j in keys])
                p = torch.softmax(s, dim=0)
                weights[b, h, i, keys] = p
                out[b, h, i] = p @ v[b, h // group, keys].double()
    return out, weights


def random_qkv(batch=2, heads=4, kv_heads=2, q_len=9, k_len=9, dim=8, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, q_len, dim, generator=g, dtype=dtype)
    k = torch.randn(batch, kv_heads, k_len, dim, generator=g, dtype=dtype)
    v = torch.randn(batch, kv_heads, k_len, dim, generator=g, dtype=dtype)
    return q, k, v


def padding_mask(batch, k_len, seed=0):
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(batch, k_len, dtype=torch.bool)
    for b in range(1, batch):
        mask[b, torch.randint(1, k_len, (1,), generator=g).item():] = False
    return mask


CASES = [  # (q_len, k_len, causal, window, padded, heads, kv_heads)
    (1, 1, False, None, False, 4, 4),
    (17, 17, True, None, True, 4, 2),
    (9, 9, False, None, True, 4, 1),
    (13, 13, True, 5, False, 4, 2),
    (5, 12, True, None, True, 2, 2),  # a KV cache: queries are the last 5 positions
    (7, 20, True, 4, True, 4, 4),
]


@pytest.mark.parametrize("q_len,k_len,causal,window,padded,heads,kv_heads", CASES)
def test_reference_matches_the_definition(q_len, k_len, causal, window, padded, heads, kv_heads):
    q, k, v = random_qkv(heads=heads, kv_heads=kv_heads, q_len=q_len, k_len=k_len)
    mask = padding_mask(2, k_len) if padded else None
    out, weights = reference_attention(q, k, v, causal=causal, scale=0.3, key_padding_mask=mask, window=window)
    expected_out, expected_weights = naive_attention(q, k, v, causal=causal, scale=0.3, key_padding_mask=mask,
                                                     window=window)
    close(weights, expected_weights, "weights")
    close(out, expected_out, "output")


@pytest.mark.parametrize("q_len,k_len,causal,window,padded,heads,kv_heads", CASES)
@pytest.mark.parametrize("block_size", [1, 4, None])
def test_blocked_matches_reference_with_stats(q_len, k_len, causal, window, padded, heads, kv_heads, block_size):
    q, k, v = random_qkv(heads=heads, kv_heads=kv_heads, q_len=q_len, k_len=k_len, seed=1)
    mask = padding_mask(2, k_len, seed=1) if padded else None
    kwargs = dict(causal=causal, scale=0.25, key_padding_mask=mask, window=window)
    out, stats = blocked_attention(q, k, v, stats=("entropy", "lse", "sink"), block_size=block_size, **kwargs)
    ref_out, ref_weights = reference_attention(q, k, v, **kwargs)
    close(out, ref_out, "output")
    close(stats["entropy"], row_entropy(ref_weights), "entropy")
    close(stats["sink"], ref_weights[..., 0], "weights")
    weights = materialize_weights(q, k, lse=stats["lse"], **kwargs)
    close(weights, ref_weights, "weights")
    assert set(stats) == {"entropy", "lse", "sink"}
    assert all(s.dtype == torch.float32 and s.shape == (2, heads, q_len) for s in stats.values())


def test_materialize_selected_heads_and_rows_only():
    q, k, v = random_qkv(q_len=11, k_len=11, seed=2)
    _, stats = blocked_attention(q, k, v, causal=True, scale=0.5)
    _, full = reference_attention(q, k, v, causal=True, scale=0.5)
    part = materialize_weights(q, k, lse=stats["lse"], causal=True, scale=0.5, heads=[3, 1], rows=slice(4, 9))
    assert part.shape == (2, 2, 5, 11)
    close(part, full[:, [3, 1], 4:9], "weights")


def test_fully_masked_rows_are_defined():
    q, k, v = random_qkv(batch=1, q_len=6, k_len=6)
    mask = torch.tensor([[False, False, True, True, True, True]])  # left padding under a causal mask
    out, stats = blocked_attention(q, k, v, causal=True, scale=0.4, key_padding_mask=mask,
                                   stats=("entropy", "lse", "sink"))
    weights = materialize_weights(q, k, lse=stats["lse"], causal=True, scale=0.4, key_padding_mask=mask)
    for tensor in (out, stats["entropy"], stats["sink"], weights):
        assert not torch.isnan(tensor).any()
    assert torch.equal(out[:, :, :2], torch.zeros_like(out[:, :, :2]))
    assert torch.equal(weights[:, :, :2], torch.zeros_like(weights[:, :, :2]))
    assert torch.isneginf(stats["lse"][:, :, :2]).all()
    assert (stats["entropy"][:, :, :2] == 0).all()


ROWS = [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.2, 0.3, 0.5], [0.0, 0.0, 0.0]]  # zeros, one-hot, spread, all masked


def _entropy_by_hand(row) -> float:
    return -sum(p * math.log(p) for p in row if p > 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_entropy_of_an_array_is_the_definition(dtype):
    rows = np.array(ROWS, dtype=dtype)
    entropy = row_entropy(rows)
    assert isinstance(entropy, np.ndarray) and entropy.dtype == dtype and entropy.shape == (4,)
    np.testing.assert_allclose(entropy, [_entropy_by_hand(r) for r in ROWS], rtol=1e-6, atol=1e-7)
    assert row_entropy(rows[None]).shape == (1, 4)  # the last axis only


def test_row_entropy_of_a_tensor_is_the_array_s_and_its_gradient_is_finite_at_zero_weights():
    rows = torch.tensor(ROWS, dtype=torch.float64)
    assert torch.equal(row_entropy(rows), torch.from_numpy(row_entropy(rows.numpy())))
    tracked = rows.clone().requires_grad_()
    entropy = row_entropy(tracked)
    assert torch.equal(entropy.detach(), row_entropy(rows))
    entropy.sum().backward()
    assert torch.isfinite(tracked.grad).all()
    assert (tracked.grad[rows == 0] == 0).all()  # 0·log 0 contributes nothing, and no gradient
    positive = rows > 0
    torch.testing.assert_close(tracked.grad[positive], -(torch.log(rows[positive]) + 1))


# Σ p log p written by hand: xlogy, scipy's entr, or "p * log(p" — only the one row_entropy may.
_HAND_ENTROPY = re.compile(r"xlogy|\bentr\b|\b(\w+) \* (?:np|torch|math)\.log\(\1\b")
_ENTROPY_HOME = "kernels/reference.py"
# Lines that hold p log p and are no entropy, each with why. The test fails when an entry no longer matches.
_NOT_AN_ENTROPY = {
    "inspector/analyses/lessons/capacity.py": "KL(target ‖ fitted) term by term: t log t − t log f cancel element by "
                                              "element, which −H(t) − Σ t log f would not near KL = 0",
}


def test_one_row_entropy():
    """Issue 39: one entropy function. The fused kernels (Triton, the fused CPU path) accumulate the statistic
    without the rows, in their own terms; everything that holds the rows calls kernels.reference.row_entropy."""
    root = Path(__file__).resolve().parents[1]
    files = [p for folder in ("inspector", "kernels", "views", "benchmarks", "training")
             for p in sorted((root / folder).rglob("*.py"))]
    assert any(p.name == "divergence.py" for p in files)
    found = {(p.relative_to(root).as_posix(), number, line.strip()) for p in files
             if p.relative_to(root).as_posix() != _ENTROPY_HOME
             for number, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if _HAND_ENTROPY.search(line)}
    offenders = [f"{path}:{number}: {line}" for path, number, line in sorted(found) if path not in _NOT_AN_ENTROPY]
    assert not offenders, "use kernels.reference.row_entropy:\n" + "\n".join(offenders)
    assert {path for path, _, _ in found} >= set(_NOT_AN_ENTROPY)  # every exception is still needed
    for old in ("entr(weights).sum(axis=-1)", "-torch.special.xlogy(p, p).sum(-1)",
                "-(p * np.log(p)).sum()", "p * torch.log(p.clamp_min(1e-30))"):
        assert _HAND_ENTROPY.search(old), old  # each way it was written before


def test_gradients_flow_through_the_blocked_path():
    q, k, v = (t.double().requires_grad_() for t in random_qkv(q_len=7, k_len=7, seed=3))
    out, _ = blocked_attention(q, k, v, causal=True, scale=0.3, block_size=3)
    ref, _ = reference_attention(q, k, v, causal=True, scale=0.3)
    grads = torch.autograd.grad(out.square().sum(), (q, k, v))
    ref_grads = torch.autograd.grad(ref.square().sum(), (q, k, v))
    for g, r in zip(grads, ref_grads):
        close(g, r, "output")  # both paths upcast to fp32 internally


def test_fp16_inputs_keep_fp32_statistics():
    q, k, v = random_qkv(q_len=10, k_len=10, dtype=torch.float16)
    out, stats = blocked_attention(q, k, v, causal=False, scale=0.3)
    ref_out, ref_weights = reference_attention(q.float(), k.float(), v.float(), causal=False, scale=0.3)
    assert out.dtype == torch.float16 and stats["entropy"].dtype == torch.float32
    # Our fp16 output must be no worse than twice plain PyTorch fp16 attention's error against fp32.
    torch_fp16 = torch.nn.functional.scaled_dot_product_attention(
        q, k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1), scale=0.3)
    ours_err = (out.float() - ref_out).abs().max()
    torch_err = (torch_fp16.float() - ref_out).abs().max()
    assert ours_err <= 2 * torch_err + 1e-6
    # fp16 scores carry ~1e-3 relative error into the softmax, so the entropy is compared at that level.
    close(stats["entropy"], row_entropy(ref_weights), "entropy", atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("causal,window,padded", [(True, None, True), (False, 3, True), (True, 2, False),
                                                  (False, None, False)])
def test_visible_key_counts_equal_the_mask(causal, window, padded):
    mask = padding_mask(3, 12, seed=4) if padded else None
    for q_len in (1, 5, 12):
        dense = visible_keys_mask(q_len, 12, causal=causal, window=window, key_padding_mask=mask).sum(-1)[:, 0]
        counts = visible_key_counts(q_len, 12, causal=causal, window=window, key_padding_mask=mask)
        assert torch.equal(counts, dense)


@pytest.mark.parametrize("bad", [
    dict(q=(2, 3, 4, 8), k=(2, 2, 4, 8)),  # 3 query heads over 2 kv heads
    dict(q=(2, 4, 9, 8), k=(2, 2, 4, 8)),  # more queries than keys
    dict(q=(2, 4, 4, 8), k=(2, 2, 4, 6)),  # head_dim mismatch
])
def test_contract_violations_raise_clear_errors(bad):
    q, k = torch.zeros(bad["q"]), torch.zeros(bad["k"])
    with pytest.raises(ValueError, match="heads|q_len|head_dim"):
        check_attention_inputs(q, k, k, None, None)
    with pytest.raises(ValueError, match="unknown statistics"):
        blocked_attention(torch.zeros(1, 1, 2, 4), torch.zeros(1, 1, 2, 4), torch.zeros(1, 1, 2, 4),
                          causal=False, scale=1.0, stats=("variance",))


@settings(max_examples=40, deadline=None)
@given(q_len=st.integers(1, 12), extra_keys=st.integers(0, 6), heads=st.sampled_from([1, 2, 4]),
       causal=st.booleans(), window=st.one_of(st.none(), st.integers(1, 8)), pad_from=st.integers(1, 18),
       seed=st.integers(0, 2**16), scale=st.floats(0.01, 4.0))
def test_properties_rows_sum_to_one_masked_zero_entropy_bounded(q_len, extra_keys, heads, causal, window, pad_from,
                                                                seed, scale):
    k_len = q_len + extra_keys
    q, k, v = random_qkv(batch=1, heads=heads, kv_heads=1, q_len=q_len, k_len=k_len, dim=4, seed=seed)
    mask = torch.arange(k_len)[None, :] < pad_from  # right padding from pad_from on
    kwargs = dict(causal=causal, scale=scale, key_padding_mask=mask, window=window)
    _, stats = blocked_attention(q, k, v, stats=("entropy", "lse"), **kwargs)
    weights = materialize_weights(q, k, lse=stats["lse"], **kwargs)
    visible = visible_keys_mask(q_len, k_len, causal=causal, window=window, key_padding_mask=mask)
    counts = visible.sum(-1)  # (1, 1, q_len)
    sums = weights.sum(-1)
    assert torch.allclose(sums[counts.expand_as(sums) > 0], torch.tensor(1.0), atol=1e-5)
    assert (weights.masked_select(~visible.expand_as(weights)) == 0).all()
    upper = torch.log(counts.clamp_min(1).float()).expand_as(stats["entropy"])
    assert (stats["entropy"] >= -1e-6).all() and (stats["entropy"] <= upper + 1e-5).all()
    assert math.isfinite(float(stats["entropy"].sum()))
