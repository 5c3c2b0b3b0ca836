"""One table of numeric tolerances, keyed by what is compared. Every entry says why it is what it is."""

import torch

# (atol, rtol) for torch.testing.assert_close.
TOLERANCES = {
    # Same fp32 maths, different op order (blocked vs full, our softmax vs torch's): a few ulps of O(1) values.
    ("fp32", "weights"): (1e-6, 1e-5),
    ("fp32", "output"): (1e-5, 1e-5),
    # Hidden states pass through several layers with LayerNorm; errors of 1e-7 per op compound a little.
    ("fp32", "hidden"): (1e-4, 1e-4),
    # Entropy is a sum over keys of p·log p: allow the sum's rounding on top of the weights'.
    ("fp32", "entropy"): (1e-5, 1e-5),
    # Log-sum-exp is O(log k_len + |scores|) ≈ 1–10, not O(1): the relative term carries it.
    ("fp32", "lse"): (1e-5, 1e-5),
    # Gradients through the Triton backward (weights recomputed from the LSE, tiled sums) against autograd
    # through the oracle: both fp32, but dS = P·(dP − Δ) subtracts O(1) terms, losing a few more ulps.
    ("fp32", "grad"): (2e-5, 1e-4),
    # 16-bit inputs: the kernels take the q·k products exactly in fp32 (fp16/bf16 products fit) and keep every
    # statistic in fp32, so statistics differ from the fp32 oracle on the upcast inputs only by summation order
    # (on GPU tensor cores the order differs more than on the interpreter; 1e-4 covers both).
    ("fp16", "entropy"): (1e-4, 1e-4),
    ("fp16", "lse"): (1e-4, 1e-4),
    ("fp16", "weights"): (1e-5, 1e-3),  # weights written as fp16: 2^-11 relative rounding
    ("bf16", "entropy"): (1e-4, 1e-4),
    ("bf16", "lse"): (1e-4, 1e-4),
    ("bf16", "weights"): (1e-5, 4e-3),  # weights written as bf16: 2^-9 relative rounding
    # A 16-bit output has no fixed tolerance: tests judge it by flash-attention's rule (error against the fp32
    # oracle ≤ 2 × plain PyTorch's error at the same precision), see tests/test_flash.py.
    # The acceptance criterion of the foundation issue for the CLI against eager: 1e-4 entropy, 1e-5 weights.
    ("cli", "entropy"): (1e-4, 0.0),
    ("cli", "weights"): (1e-5, 0.0),
    # The mechanism analyses against TransformerLens's recorded numbers (tests/test_mechanism_reference.py): both
    # fp32 on the same weights in a different order through up to 30 layers; the largest gaps measured were 9.3e-6
    # (direct logit attribution, logit units, values up to 4.9) and 1.3e-6 (normalised patching), and the reference
    # is rounded to 1e-5. 1e-4 leaves ten times that for another CPU's BLAS; a head or position mixed up moves a
    # value by more than 0.05 (the tests check the reference has such effects).
    ("fp32", "vs transformer_lens"): (1e-4, 0.0),
}


def close(actual, expected, kind: str, precision: str = "fp32", *, atol: float | None = None,
          rtol: float | None = None) -> None:
    """assert_close with the table's tolerance; an explicit atol/rtol override must carry a comment at the call."""
    table_atol, table_rtol = TOLERANCES[(precision, kind)]
    torch.testing.assert_close(torch.as_tensor(actual).double(), torch.as_tensor(expected).double(),
                               atol=table_atol if atol is None else atol, rtol=table_rtol if rtol is None else rtol)


def plain_attention_same_dtype(q, k, v, *, causal, scale, key_padding_mask=None, window=None):
    """Plain PyTorch attention computed in the inputs' own precision (no upcast): matmul, softmax, matmul —
    the baseline of flash-attention's low-precision rule. Rows that see no key come out NaN here; compare rows
    that see at least one key."""
    from kernels.reference import visible_keys_mask

    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    visible = visible_keys_mask(q.shape[2], k.shape[2], causal=causal, window=window,
                                key_padding_mask=key_padding_mask, device=q.device)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    weights = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
    return torch.matmul(weights, v)


def within_twice_plain_error(actual, oracle_fp32, plain_same_dtype, *, slack: float = 1e-6) -> None:
    """flash-attention's rule for a low-precision kernel: max|actual − oracle| ≤ 2·max|plain − oracle| (+ slack for
    the case where both are exact), over the rows (last axis = features) where plain attention is defined: a row
    that sees no key is NaN there and is checked separately (0 by the contract)."""
    defined = ~torch.isnan(plain_same_dtype).any(dim=-1)
    ours = (actual.double() - oracle_fp32.double())[defined].abs().max().item()
    plain = (plain_same_dtype.double() - oracle_fp32.double())[defined].abs().max().item()
    assert ours <= 2 * plain + slack, f"error {ours:.3g} exceeds twice plain PyTorch's {plain:.3g}"
