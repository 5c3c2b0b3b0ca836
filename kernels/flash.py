"""FlashAttention in Triton with fused per-row statistics, exact weights on request, and a backward pass.

This is the fast path of the kernel contract in ``shared/DESIGN.md``; :mod:`kernels.reference` is the readable
oracle that answers to the same contract, and every behaviour below is tested against it.

What is supported
-----------------
* :func:`flash_attention` — ``q (batch, heads, q_len, head_dim)``, ``k, v (batch, kv_heads, k_len, head_dim)``;
  grouped-query attention (``heads`` a multiple of ``kv_heads``); ``causal``; ``key_padding_mask`` (bool
  ``(batch, k_len)``, True = real token); sliding ``window`` (query at position p sees keys j with
  p − window < j); ``q_len ≤ k_len`` with the queries at the *last* ``q_len`` positions (a KV cache); any
  lengths (not only block multiples); ``head_dim`` 1–256 (16–256 tested; 80 and 96 included; lanes are
  padded to a power of two); float32, float16, bfloat16; an explicit ``scale`` (0 is a valid scale).
  Online softmax over key tiles (FlashAttention-2): the ``q_len × k_len`` matrix never exists. The
  optional statistics — ``lse`` (log-sum-exp of the scaled scores), ``entropy`` (nats, the stable
  online update of DESIGN.md › Numerics) and ``sink`` (weight on key 0) — are compile-time flags, so the
  plain forward compiles without them. All statistics are float32 ``(batch, heads, q_len)``.
* :func:`materialize_weights` — exact ``P = exp(S·scale − LSE)`` from the forward's LSE for the heads and
  the query rows asked for, written tile by tile in float32, bfloat16 or float16; it allocates exactly
  ``batch × len(heads) × rows × k_len`` elements.
* Backward (FlashAttention-2 style: dK/dV per key block and query head — summed over each GQA group
  afterwards in float32 — and dQ per query block, weights recomputed from the LSE) behind
  :class:`FlashAttentionFunction`. :func:`flash_attention`
  uses it whenever autograd is recording and an input requires grad, and the plain forward otherwise.
  Gradients flow through the output only; the statistics are returned detached.
* A row that sees no key at all (left padding under a causal mask) is defined as in the reference: output
  0, weights 0, entropy 0, sink 0, log-sum-exp −inf; its gradients are 0. No NaN anywhere.

Where it runs
-------------
On CUDA tensors the kernels are compiled (and, per shape bucket, tuned over a few block configurations on
first use). With ``TRITON_INTERPRET=1`` Triton's interpreter runs them on CPU tensors — slowly, for tests
and teaching. The mode is read when a kernel is *launched*, not when this module is imported, so importing
never probes a device and one process may switch modes. Otherwise asking for Triton without a GPU raises
:class:`TritonUnavailableError` saying what to do instead. The first launch of each kernel variant (and
its tuning) happens under a lock per variant, so concurrent first calls compile once; the interpreter,
whose language patching is process-global, runs one kernel at a time. All of that — the device checks, the tile
configurations, tuning and the launcher — is :mod:`kernels.flash_launch`; this module launches through it.

How it was tested
-----------------
``tests/test_flash.py`` (CPU, interpreter, float32 and float16): against :func:`kernels.reference.reference_attention`
for q_len/k_len ∈ {1, 17, 97, 129, 200}, head_dim ∈ {16, 32, 64, 80, 96, 128, 256}, causal and not, padding,
GQA, windows, q_len ≠ k_len, several block shapes, property tests (hypothesis); float16 by flash-attention's
rule (error against the float32 reference ≤ 2 × that of plain PyTorch float16 attention); LSE, entropy, sink
mass; materialised weights against the reference weights; gradients against autograd through the reference;
every kernel variant compiled ahead of time for sm_90 (Hopper) on the CPU (:mod:`kernels.flash_aot`).
``tests/test_hf_adapter.py``: tiny models (BERT, GPT-2, Llama, Mistral, Qwen2) through the Triton backend equal
eager attention and the torch backend, KV-cache decoding, gradients.
``tests/test_flash_gpu.py`` (marker ``gpu``, run by ``benchmarks/gpu_check.sh``): bfloat16/float16 on CUDA,
head_dim 256, long sequences, backward, and every tuning configuration.

Known caveats
-------------
* As of this writing the compiled kernels have not run on a GPU: no GPU was lent to the session that wrote
  them. They are checked by the interpreter and by ahead-of-time compilation for sm_90; the GPU tests and
  ``benchmarks/gpu_check.sh`` are ready to run.
* Triton builds its own language helpers (``tl.sum``, ``tl.max`` …) for one mode when *triton* is imported.
  Interpreted launches swap in interpreter builds for their duration, so a process that imported triton
  normally can still interpret; the reverse is not done: with ``TRITON_INTERPRET=1`` set when triton is
  imported, that process can only interpret.
* The interpreter's bfloat16 arithmetic is not faithful; bfloat16 is tested on the GPU only.
* float32 uses IEEE fp32 dot products (not TF32) so it matches the reference to ~1e-6; it is correspondingly
  slower than the 16-bit paths.
* head_dim is padded to a power of two inside the kernel (80 → 128), which costs compute at those sizes.
* Weights from :func:`materialize_weights` are not differentiable; with autograd recording, the attention
  function (``kernels.hf``) materialises weights through the torch path instead.
* GPU performance figures: see ``docs/BENCHMARKS.md`` — they are recorded only when measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

# Where the kernels run and how they are launched (kernels/flash_launch.py); the names other code imports from here
# (the device checks, the tile configurations, forced_config, the launcher) stay importable from this module.
from kernels.flash_launch import (
    COMPILED_CONFIGS,
    LAUNCHER,
    MAX_HEAD_DIM,
    SUPPORTED_DTYPES,
    KernelConfig,
    TritonUnavailableError,
    fitting_tiles,
    forced_config,
    interpreter_enabled,
    length_bucket,
    next_pow2,
    triton_cdiv,
    triton_unavailable_reason,
    triton_usable,
)
from kernels.reference import STAT_NAMES, StatName, check_attention_inputs, select_heads_and_rows

LOG2E = 1.4426950408889634


# ------------------------------------------------------------------------------------------------- validation


@dataclass(frozen=True)
class _Geometry:
    batch: int
    heads: int
    kv_heads: int
    q_len: int
    k_len: int
    head_dim: int
    block_d: int

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads


def _check_runnable(*tensors: torch.Tensor) -> None:
    reason = triton_unavailable_reason(tensors[0].device)
    if reason is not None:
        raise TritonUnavailableError(reason)


def _geometry(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor | None) -> _Geometry:
    tensors = [t for t in (q, k, v) if t is not None]
    if any(t.dtype not in SUPPORTED_DTYPES for t in tensors) or len({t.dtype for t in tensors}) != 1:
        raise ValueError(f"q, k, v must share one dtype among float32, float16, bfloat16; got "
                         f"{[str(t.dtype) for t in tensors]}")
    if len({t.device for t in tensors}) != 1:
        raise ValueError(f"q, k, v must be on one device; got {[str(t.device) for t in tensors]}")
    batch, heads, q_len, head_dim = q.shape
    if not 1 <= head_dim <= MAX_HEAD_DIM:
        raise ValueError(f"head_dim {head_dim} is outside the supported 1–{MAX_HEAD_DIM}")
    return _Geometry(batch, heads, k.shape[1], q_len, k.shape[2], head_dim, max(16, next_pow2(head_dim)))


def _rows_last(t: torch.Tensor) -> torch.Tensor:
    """Kernels read head_dim as the fastest axis; copy only when it is not."""
    return t if t.stride(-1) == 1 else t.contiguous()


def _padding_arg(key_padding_mask: torch.Tensor | None, device: torch.device) -> tuple[torch.Tensor, bool]:
    """The padding mask as int8 ``(batch, k_len)`` (1 = real token), or a dummy when there is none."""
    if key_padding_mask is None:
        return torch.empty(1, dtype=torch.int8, device=device), False
    return key_padding_mask.to(device=device, dtype=torch.int8).contiguous(), True


def _dot_precision(dtype: torch.dtype) -> str:
    # float32 inputs: IEEE products (the reference's maths); 16-bit inputs: tensor cores, fp32 accumulation.
    return "ieee" if dtype == torch.float32 else "tf32"




# ---------------------------------------------------------------------------------------------------- forward


def _forward(q, k, v, *, causal: bool, scale: float, padding: torch.Tensor, has_padding: bool, window: int | None,
             want: frozenset[str], geo: _Geometry) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    device = q.device
    # Written as (batch, q_len, heads, head_dim) and returned as a (batch, heads, q_len, head_dim) view, so the
    # transformers adapter's transpose back is free.
    out = torch.empty((geo.batch, geo.q_len, geo.heads, geo.head_dim), dtype=q.dtype, device=device).transpose(1, 2)
    stats = {name: torch.empty((geo.batch, geo.heads, geo.q_len), dtype=torch.float32, device=device)
             for name in want}
    if out.numel() == 0:
        return out, stats
    dummy = torch.empty(1, dtype=torch.float32, device=device)
    args = [q, k, v, out, stats.get("lse", dummy), stats.get("entropy", dummy), stats.get("sink", dummy), padding,
            *q.stride(), *k.stride(), *v.stride(), *out.stride(), padding.stride(0),
            geo.heads, geo.q_len, geo.k_len, geo.group, window or 0, float(scale) * LOG2E]
    constexprs = dict(HEAD_DIM=geo.head_dim, BLOCK_D=geo.block_d, CAUSAL=bool(causal), HAS_WINDOW=window is not None,
                      HAS_PADDING=has_padding, STORE_LSE="lse" in want, STORE_ENTROPY="entropy" in want,
                      STORE_SINK="sink" in want, DOT_PRECISION=_dot_precision(q.dtype))
    variant = (str(q.dtype), tuple(sorted(constexprs.items())), length_bucket(geo.q_len), length_bucket(geo.k_len))
    LAUNCHER.launch("forward", grid=lambda c: (triton_cdiv(geo.q_len, c.block_m), geo.batch * geo.heads),
                    args=args, constexprs=constexprs, variant=variant, fits=fitting_tiles(geo.q_len, geo.k_len),
                    device=device)
    return out, stats




# --------------------------------------------------------------------------------------------------- backward


def _backward(dout, q, k, v, out, lse, *, causal, scale, padding, has_padding, window, geo: _Geometry):
    device = q.device
    dout = _rows_last(dout)
    dq = torch.empty((geo.batch, geo.heads, geo.q_len, geo.head_dim), dtype=q.dtype, device=device)
    # dK/dV per *query* head; with GQA in float32 and summed over each group afterwards (FlashAttention-2's way).
    per_head_dtype = k.dtype if geo.group == 1 else torch.float32
    dk = torch.empty((geo.batch, geo.heads, geo.k_len, geo.head_dim), dtype=per_head_dtype, device=device)
    dv = torch.empty_like(dk)
    if dq.numel() == 0 or dk.numel() == 0:
        return dq.zero_(), _sum_group(dk.zero_(), geo, k.dtype), _sum_group(dv.zero_(), geo, k.dtype)
    delta = torch.empty((geo.batch, geo.heads, geo.q_len), dtype=torch.float32, device=device)
    common = dict(HEAD_DIM=geo.head_dim, BLOCK_D=geo.block_d)
    LAUNCHER.launch("backward_delta", grid=lambda c: (triton_cdiv(geo.q_len, c.block_m), geo.batch * geo.heads),
                    args=[out, dout, delta, *out.stride(), *dout.stride(), geo.heads, geo.q_len],
                    constexprs=common, variant=(str(q.dtype), geo.block_d), fits=lambda c: True, device=device)
    masks = dict(CAUSAL=bool(causal), HAS_WINDOW=window is not None, HAS_PADDING=has_padding,
                 DOT_PRECISION=_dot_precision(q.dtype))
    shared = [*q.stride(), *k.stride(), *v.stride(), *dout.stride()]
    scalars = [geo.heads, geo.q_len, geo.k_len, geo.group, window or 0, float(scale) * LOG2E, float(scale)]
    variant = (str(q.dtype), tuple(sorted({**common, **masks}.items())), length_bucket(geo.q_len),
               length_bucket(geo.k_len))
    LAUNCHER.launch("backward_dkdv", grid=lambda c: (triton_cdiv(geo.k_len, c.block_n), geo.batch * geo.heads),
                    args=[q, k, v, dout, dk, dv, lse, delta, padding, *shared, *dk.stride(), padding.stride(0),
                          *scalars],
                    constexprs={**common, **masks}, variant=variant, fits=fitting_tiles(geo.q_len, geo.k_len),
                    device=device)
    LAUNCHER.launch("backward_dq", grid=lambda c: (triton_cdiv(geo.q_len, c.block_m), geo.batch * geo.heads),
                    args=[q, k, v, dout, dq, lse, delta, padding, *shared, *dq.stride(), padding.stride(0), *scalars],
                    constexprs={**common, **masks}, variant=variant, fits=fitting_tiles(geo.q_len, geo.k_len),
                    device=device)
    return dq, _sum_group(dk, geo, k.dtype), _sum_group(dv, geo, k.dtype)


def _sum_group(per_head: torch.Tensor, geo: _Geometry, dtype: torch.dtype) -> torch.Tensor:
    """(batch, heads, k_len, d) per query head → (batch, kv_heads, k_len, d): sum each GQA group."""
    if geo.group == 1:
        return per_head
    grouped = per_head.view(geo.batch, geo.kv_heads, geo.group, geo.k_len, geo.head_dim)
    return grouped.sum(dim=2).to(dtype)


class FlashAttentionFunction(torch.autograd.Function):
    """Autograd wrapper: the Triton forward (LSE always kept for the backward) and the Triton backward.

    ``apply(q, k, v, padding_int8, has_padding, causal, scale, window, want_entropy, want_sink)`` returns
    ``(out, lse, entropy or None, sink or None)``; only ``out`` is differentiable.
    """

    @staticmethod
    def forward(ctx, q, k, v, padding, has_padding, causal, scale, window, want_entropy, want_sink):
        geo = _geometry(q, k, v)
        want = frozenset({"lse"} | ({"entropy"} if want_entropy else set()) | ({"sink"} if want_sink else set()))
        out, stats = _forward(q, k, v, causal=causal, scale=scale, padding=padding, has_padding=has_padding,
                              window=window, want=want, geo=geo)
        ctx.save_for_backward(q, k, v, out, stats["lse"], padding)
        ctx.settings = dict(causal=causal, scale=scale, has_padding=has_padding, window=window, geo=geo)
        returned = (out, stats["lse"], stats.get("entropy"), stats.get("sink"))
        ctx.mark_non_differentiable(*(t for t in returned[1:] if t is not None))
        return returned

    @staticmethod
    def backward(ctx, dout, *_stat_grads):
        q, k, v, out, lse, padding = ctx.saved_tensors
        dq, dk, dv = _backward(dout, q, k, v, out, lse, padding=padding, **ctx.settings)
        return dq, dk, dv, None, None, None, None, None, None, None


# ------------------------------------------------------------------------------------------------- public API


def flash_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    scale: float,
    key_padding_mask: torch.Tensor | None = None,
    window: int | None = None,
    stats: Sequence[StatName] = ("entropy", "lse"),
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Exact attention ``softmax(q·kᵀ·scale + mask)·v`` with the requested per-row statistics, never n×n.

    Returns ``out (batch, heads, q_len, head_dim)`` in ``q``'s dtype (a view of a ``(batch, q_len, heads,
    head_dim)`` buffer) and a dict of float32 ``(batch, heads, q_len)`` tensors for the names in ``stats``
    among ``"entropy"`` (nats), ``"lse"`` and ``"sink"``. Differentiable with respect to ``q, k, v`` through
    ``out`` when autograd is recording.
    """
    check_attention_inputs(q, k, v, key_padding_mask, window, stats)
    geo = _geometry(q, k, v)
    _check_runnable(q)
    want = frozenset(stats)
    q, k, v = _rows_last(q), _rows_last(k), _rows_last(v)
    padding, has_padding = _padding_arg(key_padding_mask, q.device)
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        out, lse, entropy, sink = FlashAttentionFunction.apply(q, k, v, padding, has_padding, bool(causal),
                                                               float(scale), window, "entropy" in want, "sink" in want)
        found = {"lse": lse, "entropy": entropy, "sink": sink}
        return out, {name: found[name] for name in stats}
    out, found = _forward(q, k, v, causal=causal, scale=scale, padding=padding, has_padding=has_padding,
                          window=window, want=want, geo=geo)
    return out, {name: found[name] for name in stats}


def materialize_weights(
    q: torch.Tensor,
    k: torch.Tensor,
    *,
    lse: torch.Tensor,
    causal: bool,
    scale: float,
    key_padding_mask: torch.Tensor | None = None,
    window: int | None = None,
    heads: Sequence[int] | None = None,
    rows: slice | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Exact attention weights ``exp(q·kᵀ·scale − lse)`` for the heads and query rows asked for.

    ``lse`` is the float32 ``(batch, heads, q_len)`` log-sum-exp from :func:`flash_attention`. Returns
    ``(batch, len(heads), rows, k_len)`` in ``dtype`` (float32, bfloat16 or float16); nothing larger is
    allocated. Invisible keys get exactly 0; a row that sees no key is all 0.
    """
    check_attention_inputs(q, k, k, key_padding_mask, window)
    geo = _geometry(q, k, None)
    batch, num_heads, q_len = geo.batch, geo.heads, geo.q_len
    if tuple(lse.shape) != (batch, num_heads, q_len):
        raise ValueError(f"lse must have shape {(batch, num_heads, q_len)}; got {tuple(lse.shape)}")
    if dtype not in SUPPORTED_DTYPES:
        raise ValueError(f"weights dtype must be one of {SUPPORTED_DTYPES}; got {dtype}")
    head_idx, rows = select_heads_and_rows(num_heads, q_len, heads, rows)
    start, num_rows = rows.start, rows.stop - rows.start
    _check_runnable(q)
    device = q.device
    weights = torch.empty((batch, len(head_idx), num_rows, geo.k_len), dtype=dtype, device=device)
    if weights.numel() == 0:
        return weights
    q, k = _rows_last(q), _rows_last(k)
    lse = lse.to(device=device, dtype=torch.float32)
    padding, has_padding = _padding_arg(key_padding_mask, device)
    head_tensor = torch.tensor(head_idx, dtype=torch.int32, device=device)
    args = [q, k, lse, head_tensor, weights, padding, *q.stride(), *k.stride(), *lse.stride(), *weights.stride(),
            padding.stride(0), len(head_idx), start, num_rows, q_len, geo.k_len, geo.group, window or 0,
            float(scale) * LOG2E]
    constexprs = dict(HEAD_DIM=geo.head_dim, BLOCK_D=geo.block_d, CAUSAL=bool(causal), HAS_WINDOW=window is not None,
                      HAS_PADDING=has_padding, DOT_PRECISION=_dot_precision(q.dtype))
    variant = (str(q.dtype), str(dtype), tuple(sorted(constexprs.items())), length_bucket(num_rows),
               length_bucket(geo.k_len))
    LAUNCHER.launch("materialize",
                    grid=lambda c: (triton_cdiv(geo.k_len, c.block_n), triton_cdiv(num_rows, c.block_m),
                                    batch * len(head_idx)),
                    args=args, constexprs=constexprs, variant=variant, fits=fitting_tiles(num_rows, geo.k_len),
                    device=device)
    return weights


__all__ = ["COMPILED_CONFIGS", "LAUNCHER", "FlashAttentionFunction", "KernelConfig", "TritonUnavailableError",
           "flash_attention", "forced_config", "interpreter_enabled", "materialize_weights",
           "triton_unavailable_reason", "triton_usable", "STAT_NAMES"]
