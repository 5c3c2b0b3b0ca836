"""The two CPU paths of issue 43 against the plain oracle: kernels/fused_cpu.py (statistics from the fused CPU op's
log-sum-exp) and kernels/compiled_cpu.py (this project's compiled kernel). The tests of the contract run on both
(the ``attention`` fixture); the fused path's fp32 rounding criterion has its own."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import kernels.fused_cpu as fused_cpu
from kernels.compiled_cpu import compiled_attention
from kernels.fused_cpu import fused_attention, fused_unavailable_reason
from kernels.reference import (
    materialize_weights,
    reference_attention,
    row_entropy,
    visible_keys_mask,
)
from tests.test_reference import CASES, padding_mask, random_qkv
from tests.tolerances import close

AWKWARD = [  # (q_len, k_len, causal, window, padded, heads, kv_heads): flash-attention's awkward sizes
    (97, 97, True, None, True, 4, 2),
    (200, 200, False, 7, True, 4, 1),  # bidirectional with a window, multi-query
    (1, 1025, True, None, True, 4, 2),  # a decode step against a long cache
    (1, 1025, True, 300, False, 4, 4),  # a decode step whose window hides the first keys
    (3, 200, True, 64, True, 4, 2),  # several new queries against a cache (explicit causal mask)
]


@pytest.fixture(scope="module", params=["fused", "compiled"])
def attention(request, compiled_cpu_kernel):
    """Each CPU path's attention function (the compiled one once the session has built it)."""
    if request.param == "compiled":
        if compiled_cpu_kernel is not None:
            pytest.skip(f"the compiled CPU kernel is unavailable here: {compiled_cpu_kernel}")
        return compiled_attention
    return fused_attention


def float64_oracle(q, k, v, *, causal, scale, key_padding_mask=None, window=None):
    """The definition evaluated in float64 throughout (reference_attention computes in fp32): output, weights."""
    group = q.shape[1] // k.shape[1]
    keys, values = k.double().repeat_interleave(group, dim=1), v.double().repeat_interleave(group, dim=1)
    visible = visible_keys_mask(q.shape[2], k.shape[2], causal=causal, window=window,
                                key_padding_mask=key_padding_mask)
    scores = (q.double() @ keys.transpose(-1, -2) * scale).masked_fill(~visible, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(nan=0.0)
    return weights @ values, weights


@pytest.mark.parametrize("q_len,k_len,causal,window,padded,heads,kv_heads", CASES + AWKWARD)
def test_matches_the_oracle(attention, q_len, k_len, causal, window, padded, heads, kv_heads):
    q, k, v = random_qkv(heads=heads, kv_heads=kv_heads, q_len=q_len, k_len=k_len, seed=1)
    mask = padding_mask(2, k_len, seed=1) if padded else None
    kwargs = dict(causal=causal, scale=0.25, key_padding_mask=mask, window=window)
    out, stats = attention(q, k, v, stats=("entropy", "lse", "sink"), **kwargs)
    ref_out, ref_weights = reference_attention(q, k, v, **kwargs)
    close(out, ref_out, "output")
    close(stats["entropy"], row_entropy(ref_weights), "entropy")
    close(stats["sink"], ref_weights[..., 0], "weights")
    close(materialize_weights(q, k, lse=stats["lse"], **kwargs), ref_weights, "weights")
    assert list(stats) == ["entropy", "lse", "sink"]
    assert all(s.dtype == torch.float32 and s.shape == (2, heads, q_len) for s in stats.values())
    assert out.dtype == q.dtype and out.shape == q.shape


def test_only_the_statistics_asked_for_are_returned(attention):
    q, k, v = random_qkv(q_len=12, k_len=12, seed=2)
    _, stats = attention(q, k, v, causal=True, scale=0.3, stats=("sink",))
    assert list(stats) == ["sink"]


def test_fully_masked_rows_follow_the_contract(attention):
    q, k, v = random_qkv(batch=1, q_len=6, k_len=6)
    mask = torch.tensor([[False, False, True, True, True, True]])  # left padding under a causal mask
    out, stats = attention(q, k, v, causal=True, scale=0.4, key_padding_mask=mask,
                                 stats=("entropy", "lse", "sink"))
    for tensor in (out, stats["entropy"], stats["sink"]):
        assert not torch.isnan(tensor).any()
    assert torch.equal(out[:, :, :2], torch.zeros_like(out[:, :, :2]))
    assert torch.isneginf(stats["lse"][:, :, :2]).all() and torch.isfinite(stats["lse"][:, :, 2:]).all()
    assert (stats["entropy"][:, :, :2] == 0).all() and (stats["sink"][:, :, :2] == 0).all()
    weights = materialize_weights(q, k, lse=stats["lse"], causal=True, scale=0.4, key_padding_mask=mask)
    assert torch.equal(weights[:, :, :2], torch.zeros_like(weights[:, :, :2]))


def test_sixteen_bit_inputs_keep_fp32_statistics(attention):
    q, k, v = random_qkv(q_len=10, k_len=10, dtype=torch.bfloat16)
    out, stats = attention(q, k, v, causal=False, scale=0.3)
    _, ref_weights = reference_attention(q.float(), k.float(), v.float(), causal=False, scale=0.3)
    assert out.dtype == torch.bfloat16 and stats["entropy"].dtype == torch.float32
    close(stats["entropy"], row_entropy(ref_weights), "entropy", "bf16")


@pytest.mark.parametrize("magnitude", [30.0, 100.0, 300.0])
@pytest.mark.parametrize("shared_key", [0.0, 5.0])
def test_large_scores_keep_the_entropy_within_the_table(attention, magnitude, shared_key):
    """|s| up to ~magnitude: LSE − scale·q·ō_K cancels; centring and float64 keep the entropy in the table."""
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, heads, 300, 16, generator=g) for heads in (4, 2, 2))
    q = q / q.norm(dim=-1, keepdim=True) * math.sqrt(magnitude)
    k = k / k.norm(dim=-1, keepdim=True) * math.sqrt(magnitude) + shared_key * torch.randn(16, generator=g)
    kwargs = dict(causal=True, scale=1.0)
    _, stats = attention(q, k, v, stats=("entropy", "lse", "sink"), **kwargs)
    _, exact = float64_oracle(q, k, v, **kwargs)
    _, oracle = reference_attention(q, k, v, **kwargs)
    scores = q @ k.repeat_interleave(2, dim=1).transpose(-1, -2)
    assert scores.tril().abs().max() > 0.8 * magnitude  # the case exists: scores of that size are attended
    if attention is fused_attention or magnitude <= 100:
        # The compiled kernel rounds the scores in fp32 as the fp32 oracle, SDPA and eager attention do: at |s| ≈ 300
        # with a shared key component that alone leaves the table against float64 (1.3× seen, the oracle's too).
        close(stats["entropy"], row_entropy(exact), "entropy")
    if magnitude <= 100 or attention is compiled_attention:
        # The fused path's float64 keys call is closer to the truth than the fp32 oracle at |s| ≈ 300 (1.7e-5 seen).
        close(stats["entropy"], row_entropy(oracle), "entropy")
    close(stats["sink"], exact[..., 0], "weights")


def test_the_float64_switch_is_what_keeps_large_scores_exact(monkeypatch):
    """Forcing fp32 at |s| ≈ 300 loses more than the table allows: the switch is needed, not decoration."""
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, heads, 300, 16, generator=g) for heads in (4, 2, 2))
    q, k = (t / t.norm(dim=-1, keepdim=True) * math.sqrt(300.0) for t in (q, k))
    _, exact = float64_oracle(q, k, v, causal=True, scale=1.0)
    monkeypatch.setattr(fused_cpu, "FP32_ROUNDING_FACTOR", 0.0)
    _, stats = fused_attention(q, k, v, causal=True, scale=1.0)
    assert (stats["entropy"].double() - row_entropy(exact)).abs().max() > 1e-5


def _cancelling_head(*, hide_first_key: bool):
    """One causal head of 1,024 keys (d 64) with a distinct attended key and queries leaning towards it, scaled so
    that the old criterion's bound (Cauchy–Schwarz on mean-centred keys, FP32_SCORE_LIMIT 24) is 23.5: exact
    centred scores up to ~21. ``hide_first_key``: key 0 is a padded key far from the others (so centring on it
    helps nothing)."""
    g = torch.Generator().manual_seed(8)
    q, k = torch.randn(1, 1, 1024, 64, generator=g), torch.randn(1, 1, 1024, 64, generator=g)
    attended = torch.randn(64, generator=g)
    q = q + 1.5 * attended
    k[0, 0, int(hide_first_key)] = 3 * attended
    mask = None
    if hide_first_key:
        k[0, 0, 0] = 20 * torch.randn(64, generator=g)
        mask = torch.ones(1, 1024, dtype=torch.bool)
        mask[0, 0] = False
    seen = k[:, :, int(hide_first_key):]
    centred = seen - seen.mean(dim=2, keepdim=True)
    scale = 23.5 / float(q.norm(dim=-1).max() * centred.norm(dim=-1).max())
    return q, k, mask, scale, centred


def test_scores_under_the_old_fp32_limit_can_miss_the_table():
    """The old criterion took fp32 wherever the mean-centred scores' Cauchy–Schwarz bound was ≤ 24; on this head
    that fp32 entropy misses the table (2.3×), and fused_attention's must not."""
    q, k, _, scale, centred = _cancelling_head(hide_first_key=False)
    _, exact = float64_oracle(q, k, k, causal=True, scale=scale)
    exact_entropy = row_entropy(exact)
    mean_key, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, centred, centred, 0.0, True,
                                                                              scale=scale)
    old = lse.double() - torch.linalg.vecdot(q.double(), mean_key.double()) * scale  # the old all-fp32 entropy
    with pytest.raises(AssertionError):
        close(old, exact_entropy, "entropy")
    _, stats = fused_attention(q, k, k, causal=True, scale=scale)
    close(stats["entropy"], exact_entropy, "entropy")


def test_the_rounding_estimate_sends_heads_to_float64_where_fp32_misses(monkeypatch):
    """Key 0 padded and far away: centring on it does not help, the estimate must send the head to float64
    (forced fp32 misses the table)."""
    q, k, mask, scale, _ = _cancelling_head(hide_first_key=True)
    kwargs = dict(causal=True, scale=scale, key_padding_mask=mask)
    _, exact = float64_oracle(q, k, k, **kwargs)
    _, stats = fused_attention(q, k, k, **kwargs)
    close(stats["entropy"], row_entropy(exact), "entropy")
    monkeypatch.setattr(fused_cpu, "FP32_ROUNDING_FACTOR", 0.0)  # the estimate never asks for float64
    _, fp32 = fused_attention(q, k, k, **kwargs)
    with pytest.raises(AssertionError):
        close(fp32["entropy"], row_entropy(exact), "entropy")


def test_unavailable_reasons_name_the_cause():
    q, k, v = random_qkv(q_len=4, k_len=4)
    assert fused_unavailable_reason(q, k, v) is None
    assert "autograd" in fused_unavailable_reason(q.requires_grad_(), k, v)
    with torch.no_grad():
        assert fused_unavailable_reason(q, k, v) is None
    assert "head size" in fused_unavailable_reason(q.detach(), k, v[..., :4])
    with pytest.raises(ValueError, match="autograd"):
        fused_attention(q, k, v, causal=True, scale=0.5)


@settings(max_examples=40, deadline=None)
@given(q_len=st.integers(1, 12), extra_keys=st.integers(0, 6), heads=st.sampled_from([1, 2, 4]),
       causal=st.booleans(), window=st.one_of(st.none(), st.integers(1, 8)), pad_from=st.integers(1, 18),
       seed=st.integers(0, 2**16), scale=st.floats(0.01, 30.0))
def test_properties_entropy_bounded_by_visible_keys(attention, q_len, extra_keys, heads, causal, window, pad_from,
                                                    seed, scale):
    k_len = q_len + extra_keys
    q, k, v = random_qkv(batch=1, heads=heads, kv_heads=1, q_len=q_len, k_len=k_len, dim=4, seed=seed)
    mask = torch.arange(k_len)[None, :] < pad_from  # right padding from pad_from on
    kwargs = dict(causal=causal, scale=scale, key_padding_mask=mask, window=window)
    _, stats = attention(q, k, v, stats=("entropy", "lse", "sink"), **kwargs)
    counts = visible_keys_mask(q_len, k_len, causal=causal, window=window, key_padding_mask=mask).sum(-1)
    upper = torch.log(counts.clamp_min(1).float()).expand_as(stats["entropy"])
    assert (stats["entropy"] >= 0).all() and (stats["entropy"] <= upper).all()
    assert ((stats["sink"] >= 0) & (stats["sink"] <= 1 + 1e-6)).all()
    _, weights = reference_attention(q, k, v, **kwargs)
    close(stats["entropy"], row_entropy(weights), "entropy")


@settings(max_examples=25, deadline=None)
@given(k_len=st.integers(2, 40), target=st.data(), heads=st.sampled_from([1, 3]), seed=st.integers(0, 2**16))
def test_properties_all_mass_on_one_key(attention, k_len, target, heads, seed):
    """A query aligned with one key far beyond the others: entropy ≈ 0, all the weight (and the sink mass when that
    key is key 0) on it — the rows where LSE and Σ p·s are nearly equal and large."""
    chosen = target.draw(st.integers(0, k_len - 1))
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(1, 1, k_len, 8, generator=g) * 0.1
    k[0, 0, chosen] = 0.0
    k[0, 0, chosen, 0] = 1.0
    q = torch.zeros(1, heads, k_len, 8)
    q[..., 0] = 60.0  # score 60 on the chosen key, |s| ≤ ~6 elsewhere (scale 1)
    v = torch.randn(1, 1, k_len, 8, generator=g)
    out, stats = attention(q, k, v, causal=False, scale=1.0, stats=("entropy", "lse", "sink"))
    close(stats["entropy"], torch.zeros_like(stats["entropy"]), "entropy")
    close(out, v[:, :, chosen].expand_as(out), "output")
    close(stats["sink"], torch.full_like(stats["sink"], float(chosen == 0)), "weights")
    close(stats["lse"], torch.full_like(stats["lse"], 60.0), "lse")
