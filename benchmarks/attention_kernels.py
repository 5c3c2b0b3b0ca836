"""Attention kernels on the GPU: our Triton FlashAttention against PyTorch's SDPA backends and eager attention.

Issue 3's benchmark. One process, the same tensors for every contender:

* ``ours``: :func:`kernels.flash.flash_attention` plain (no statistics), with entropy + log-sum-exp fused, and
  :func:`kernels.flash.materialize_weights` for one head (all rows, float32) from that LSE;
* SDPA pinned with ``torch.nn.attention.sdpa_kernel`` to FLASH_ATTENTION, CUDNN_ATTENTION (when this torch has
  it) and EFFICIENT_ATTENTION — a backend that refuses an input is reported as such, not silently replaced;
* eager ``matmul → softmax (fp32) → matmul``, skipped (and said so) where its n×n tensors would not fit.

Shapes (bfloat16): B·N = 16k tokens, H·D = 2048, N ∈ {512, 2k, 8k, 16k}, D ∈ {64, 128}, causal off/on; and
B = 1, Hq = 32, Hkv = 8 (GQA), D = 128, N ∈ {4k, 16k, 32k}, causal. Times are medians of
``triton.testing.do_bench``; TFLOP/s counts 4·B·H·N²·D for the forward (halved when causal) and 2.5× that for
the backward (shared/DESIGN.md). A calibration row (an 8192³ bfloat16 matmul, and a write-only ``fill_`` of
2 GiB) gives the achievable compute and write bandwidth, so figures read as a share of them. Peak memory (ours
vs eager) is ``torch.cuda.max_memory_allocated`` above the inputs at 8k and 32k. Correctness is checked in the
run: ours against a float32 oracle on a slice of every shape (flash-attention's rule: error ≤ 2 × SDPA's), the
fused entropy and the materialised weights against the oracle, and the backward on a reduced copy.

Before timing, every kernel variant the run will launch is compiled in parallel worker processes
(:mod:`kernels.flash_aot`), filling Triton's on-disk cache, so compilation does not eat the time budget.

Run from the repository root on a GPU machine (``benchmarks/gpu_check.sh`` does)::

    python -m benchmarks.attention_kernels --out OUTDIR            # writes OUTDIR/attention_kernels.{md,json}
    python -m benchmarks.attention_kernels --out OUTDIR --write-docs

``--smoke`` runs tiny shapes on the CPU through Triton's interpreter with SDPA's MATH backend and eager as the
baselines: it exercises every code path (checks, tables) and proves nothing about speed — its output is
labelled as such and must never be presented as performance.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import math
import multiprocessing
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.report import command_line, gpu_lines, provenance_lines, shown_argv, write_raw_json, write_section

SECTION_TITLE = "Attention kernels (GPU)"
GIB = 2**30

# Correctness thresholds for the in-run checks (bfloat16 inputs; statistics and weights are float32).
STATS_ATOL = 1e-3  # entropy/LSE/weights vs the fp32 oracle: fp32 arithmetic on exact bf16 products, summed in tiles
FP32_OUTPUT_ATOL = 1e-4  # smoke mode runs float32, where the 2× rule is meaningless (both errors ~1e-7)


@dataclass(frozen=True)
class Shape:
    batch: int
    heads: int
    kv_heads: int
    n: int
    dim: int
    causal: bool
    sweep: str

    @property
    def label(self) -> str:
        heads = f"{self.heads}" if self.heads == self.kv_heads else f"{self.heads}/{self.kv_heads}"
        return f"B={self.batch} H={heads} N={self.n} D={self.dim} {'causal' if self.causal else 'full'}"

    def forward_flops(self) -> float:
        flops = 4.0 * self.batch * self.heads * self.n * self.n * self.dim
        return flops / 2 if self.causal else flops


def gpu_shapes() -> list[Shape]:
    shapes = []
    for dim in (64, 128):
        for n in (512, 2048, 8192, 16384):
            for causal in (False, True):
                shapes.append(Shape(16384 // n, 2048 // dim, 2048 // dim, n, dim, causal, "B·N = 16k, H·D = 2048"))
    shapes += [Shape(1, 32, 8, n, 128, True, "GQA 32/8") for n in (4096, 16384, 32768)]
    return shapes


def smoke_shapes() -> list[Shape]:
    shapes = [Shape(64 // n, 64 // dim, 64 // dim, n, dim, causal, "B·N = 64, H·D = 64 (smoke)")
              for dim in (16, 32) for n in (16, 32) for causal in (False, True)]
    return shapes + [Shape(1, 4, 2, n, 16, True, "GQA 4/2 (smoke)") for n in (32, 64)]


@dataclass
class Row:
    """Everything measured for one shape: times in ms (None = not run, with the reason in ``notes``)."""

    shape: Shape
    forward_ms: dict[str, float | None] = field(default_factory=dict)
    backward_ms: dict[str, float | None] = field(default_factory=dict)
    materialize_ms: float | None = None
    materialize_bytes: int = 0
    notes: dict[str, str] = field(default_factory=dict)
    checks: dict[str, float | bool | str] = field(default_factory=dict)
    peak_mib: dict[str, float | None] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------- contenders


class Bench:
    """Timing and memory on the device at hand: do_bench medians on CUDA, perf_counter medians on the CPU."""

    def __init__(self, device: str, warmup_ms: int, rep_ms: int, cpu_samples: int = 3) -> None:
        self.device, self.warmup_ms, self.rep_ms, self.cpu_samples = device, warmup_ms, rep_ms, cpu_samples

    def time_ms(self, fn) -> float:
        if self.device == "cuda":
            import triton.testing

            return float(triton.testing.do_bench(fn, warmup=self.warmup_ms, rep=self.rep_ms, return_mode="median"))
        if self.cpu_samples > 1:
            fn()  # a warm-up call
        samples = []
        for _ in range(self.cpu_samples):
            started = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - started) * 1e3)
        return statistics.median(samples)

    def peak_mib(self, fn) -> float | None:
        """Peak memory fn allocates above what was allocated before it ran (CUDA only)."""
        if self.device != "cuda":
            return None
        import torch

        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        result = fn()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - before
        del result
        return peak / 2**20


def sdpa_backends(smoke: bool) -> dict[str, object]:
    """The SDPA backends to pin, by report name (the MATH backend stands in for all of them in smoke mode)."""
    from torch.nn.attention import SDPBackend

    if smoke:
        return {"SDPA math": SDPBackend.MATH}
    backends = {"SDPA flash": SDPBackend.FLASH_ATTENTION}
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        backends["SDPA cuDNN"] = SDPBackend.CUDNN_ATTENTION
    backends["SDPA efficient"] = SDPBackend.EFFICIENT_ATTENTION
    return backends


def make_sdpa(backend, q, k, v, *, causal: bool, scale: float):
    """A zero-argument SDPA call pinned to ``backend``, probed once; GQA via ``enable_gqa`` or, where the backend
    refuses that, K/V expanded beforehand (outside the timing). Returns (fn, note) or (None, reason)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel

    group = q.shape[1] // k.shape[1]
    attempts = [({"enable_gqa": True} if group > 1 else {}, k, v, "")]
    if group > 1:
        attempts.append(({}, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), "K/V expanded"))
    reason = ""
    for extra, keys, values, note in attempts:
        def call(keys=keys, values=values, extra=extra):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, keys, values, is_causal=causal, scale=scale, **extra)
        try:
            call()
            return call, note
        except (RuntimeError, TypeError, ValueError) as err:
            reason = str(err).strip().splitlines()[0][:120] if str(err).strip() else type(err).__name__
            if q.is_cuda:
                torch.cuda.synchronize()
    return None, f"refused: {reason}"


def eager_attention(q, k, v, *, causal: bool, scale: float, causal_mask=None):
    """matmul → softmax in fp32 → matmul, as transformers' eager attention does (K/V repeated for GQA)."""
    import torch

    group = q.shape[1] // k.shape[1]
    if group > 1:
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    if causal:
        scores = scores.masked_fill(causal_mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(weights, v)


def eager_bytes(shape: Shape, element_bytes: int, backward: bool) -> int:
    """What eager holds at its peak: two copies of the scores (the matmul and its scaled/masked copy), the fp32
    softmax and the weights — about twice that with autograd."""
    per = shape.batch * shape.heads * shape.n * shape.n
    total = per * (3 * element_bytes + 4)
    return total * 2 if backward else total


def time_or_note(bench: Bench, fn, device: str) -> tuple[float | None, str]:
    """Time ``fn``; an out-of-memory becomes a note instead of losing the shape's other measurements."""
    import torch

    try:
        return bench.time_ms(fn), ""
    except (getattr(torch, "OutOfMemoryError", MemoryError), MemoryError):
        if device == "cuda":
            torch.cuda.empty_cache()
        return None, "out of memory"


# ------------------------------------------------------------------------------------------------ correctness


def oracle_slice(q, k, v, shape: Shape, scale: float, rows: int):
    """Float32 attention output, weights, entropy and LSE for batch 0, heads 0–1, the last ``rows`` queries."""
    import torch

    from kernels.reference import row_entropy

    group = shape.heads // shape.kv_heads
    heads = [0, 1]
    qs = q[0, heads, -rows:].float()  # (2, rows, d)
    ks = k[0, [h // group for h in heads]].float()
    vs = v[0, [h // group for h in heads]].float()
    scores = torch.matmul(qs, ks.transpose(-1, -2)) * scale
    if shape.causal:
        positions = torch.arange(shape.n - rows, shape.n, device=q.device)[:, None]
        scores = scores.masked_fill(torch.arange(shape.n, device=q.device)[None, :] > positions, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, vs), weights, row_entropy(weights), lse


def max_abs(a, b) -> float:
    return float((a.double() - b.double()).abs().max())


def check_backward(shape: Shape, dtype, device: str, scale: float) -> dict[str, float | bool]:
    """Our gradients on a reduced copy (batch 1, the first KV group, ≤ 2048 tokens) against the fp32 oracle,
    judged by the 2× rule against plain PyTorch attention at the same precision."""
    import torch

    from kernels.flash import flash_attention
    from kernels.reference import reference_attention

    n = min(shape.n, 2048)
    group = shape.heads // shape.kv_heads
    g = torch.Generator(device=device).manual_seed(1)
    q = torch.randn(1, group, n, shape.dim, device=device, generator=g).to(dtype)
    k = torch.randn(1, 1, n, shape.dim, device=device, generator=g).to(dtype)
    v = torch.randn(1, 1, n, shape.dim, device=device, generator=g).to(dtype)
    grad_out = torch.randn(q.shape, device=device, generator=g).to(dtype)
    mask = torch.ones(n, n, dtype=torch.bool, device=device).triu(1) if shape.causal else None

    def grads(fn, *tensors):
        tensors = [t.detach().clone().requires_grad_() for t in tensors]
        return torch.autograd.grad(fn(*tensors), tensors, grad_out.to(tensors[0].dtype))

    ours = grads(lambda *t: flash_attention(*t, causal=shape.causal, scale=scale, stats=())[0], q, k, v)
    oracle = grads(lambda *t: reference_attention(*t, causal=shape.causal, scale=scale)[0],
                   q.float(), k.float(), v.float())
    plain = grads(lambda *t: eager_attention(*t, causal=shape.causal, scale=scale, causal_mask=mask), q, k, v)
    ours_err = max(max_abs(a, b) for a, b in zip(ours, oracle))
    plain_err = max(max_abs(a, b) for a, b in zip(plain, oracle))
    ok = ours_err <= FP32_OUTPUT_ATOL if dtype == torch.float32 else ours_err <= 2 * plain_err + 1e-4
    return {"grad_err": ours_err, "grad_plain_err": plain_err, "grad_ok": bool(ok)}


# ---------------------------------------------------------------------------------------------- one shape, all


def measure_shape(shape: Shape, bench: Bench, *, dtype, device: str, smoke: bool, with_eager_memory: bool,
                  budget_left) -> Row:
    import torch

    from inspector.core.budget import weight_bytes
    from kernels.flash import flash_attention, materialize_weights

    row = Row(shape)
    scale = shape.dim ** -0.5
    g = torch.Generator(device=device).manual_seed(0)
    q = torch.randn(shape.batch, shape.heads, shape.n, shape.dim, device=device, generator=g).to(dtype)
    k = torch.randn(shape.batch, shape.kv_heads, shape.n, shape.dim, device=device, generator=g).to(dtype)
    v = torch.randn(shape.batch, shape.kv_heads, shape.n, shape.dim, device=device, generator=g).to(dtype)
    element = q.element_size()

    # Forward: ours plain, ours with entropy + LSE, the SDPA backends, eager.
    ours_plain = lambda: flash_attention(q, k, v, causal=shape.causal, scale=scale, stats=())[0]  # noqa: E731
    ours_stats = lambda: flash_attention(q, k, v, causal=shape.causal, scale=scale,  # noqa: E731
                                         stats=("entropy", "lse"))
    with torch.no_grad():
        row.forward_ms["ours"] = bench.time_ms(ours_plain)
        row.forward_ms["ours +entropy/LSE"] = bench.time_ms(ours_stats)
        out, stats = ours_stats()
        sdpa_out = None
        for name, backend in sdpa_backends(smoke).items():
            fn, note = make_sdpa(backend, q, k, v, causal=shape.causal, scale=scale)
            row.forward_ms[name] = bench.time_ms(fn) if fn is not None else None
            if note:
                row.notes[name] = note
            if fn is not None and sdpa_out is None:
                sdpa_out, row.checks["reference SDPA"] = fn(), name
        free = torch.cuda.mem_get_info()[0] if device == "cuda" else 64 * GIB
        need = eager_bytes(shape, element, backward=False)
        causal_mask = (torch.ones(shape.n, shape.n, dtype=torch.bool, device=device).triu(1)
                       if shape.causal else None)
        eager = lambda: eager_attention(q, k, v, causal=shape.causal, scale=scale,  # noqa: E731
                                        causal_mask=causal_mask)
        if need < 0.6 * free:
            row.forward_ms["eager"], note = time_or_note(bench, eager, device)
            if note:
                row.notes["eager"] = note
        else:
            row.forward_ms["eager"] = None
            row.notes["eager"] = f"skipped: needs ≈{need / GIB:.0f} GiB"

        # Correctness on a slice, against float32.
        rows = min(128, shape.n)
        oracle_out, oracle_weights, oracle_entropy, oracle_lse = oracle_slice(q, k, v, shape, scale, rows)
        ours_err = max_abs(out[0, :2, -rows:], oracle_out)
        sdpa_err = max_abs(sdpa_out[0, :2, -rows:], oracle_out) if sdpa_out is not None else float("nan")
        row.checks.update(out_err=ours_err, sdpa_err=sdpa_err,
                          entropy_err=max_abs(stats["entropy"][0, :2, -rows:], oracle_entropy),
                          lse_err=max_abs(stats["lse"][0, :2, -rows:], oracle_lse))
        if dtype == torch.float32:
            row.checks["out_ok"] = ours_err <= FP32_OUTPUT_ATOL
        else:
            row.checks["out_ok"] = bool(ours_err <= 2 * sdpa_err + 1e-4)
        row.checks["stats_ok"] = bool(row.checks["entropy_err"] <= STATS_ATOL and row.checks["lse_err"] <= STATS_ATOL)

        # Materialise one head (all rows, float32) from the fused LSE. The LSE is bound as a default argument
        # because `stats` is deleted below; `materialize` is deleted with it, so the LSE is freed just as before.
        materialize = lambda lse=stats["lse"]: materialize_weights(q, k, lse=lse, causal=shape.causal,  # noqa: E731
                                                                   scale=scale, heads=[0])
        row.materialize_bytes = weight_bytes(shape.batch, shape.n)  # one head's fp32 weights per sequence
        if row.materialize_bytes < 0.3 * free:
            row.materialize_ms = bench.time_ms(materialize)
            weights = materialize()
            row.checks["weights_err"] = max_abs(weights[0, 0, -rows:], oracle_weights[0])
            del weights
        else:
            row.notes["materialise"] = f"skipped: {row.materialize_bytes / GIB:.0f} GiB output"
        row.checks["weights_ok"] = bool(row.checks.get("weights_err", 0.0) <= STATS_ATOL)

        if with_eager_memory:
            row.peak_mib["ours"] = bench.peak_mib(ours_plain)
            row.peak_mib["ours +entropy/LSE"] = bench.peak_mib(ours_stats)
            row.peak_mib["eager"] = bench.peak_mib(eager) if row.forward_ms["eager"] is not None else None
        del out, stats, sdpa_out, materialize

    # Backward: d(q, k, v) of a fixed upstream gradient, forward excluded from the timing.
    if budget_left() > 0:
        grad_out = torch.randn(q.shape, device=device, generator=g).to(dtype)
        qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))

        def backward_of(forward):
            out = forward(qg, kg, vg)
            return lambda: torch.autograd.grad(out, (qg, kg, vg), grad_out, retain_graph=True)

        row.backward_ms["ours"] = bench.time_ms(backward_of(
            lambda a, b, c: flash_attention(a, b, c, causal=shape.causal, scale=scale, stats=())[0]))
        for name, backend in sdpa_backends(smoke).items():
            fn, _ = make_sdpa(backend, qg, kg, vg, causal=shape.causal, scale=scale)
            if fn is None:
                row.backward_ms[name] = None
                continue
            try:
                row.backward_ms[name] = bench.time_ms(backward_of(lambda a, b, c, fn=fn: fn()))
            except RuntimeError as err:  # a backend may run forward but not backward for some inputs
                row.backward_ms[name] = None
                row.notes[f"{name} backward"] = str(err).splitlines()[0][:120]
        need = eager_bytes(shape, element, backward=True)
        row.backward_ms["eager"] = None
        if need < 0.6 * free:
            try:
                row.backward_ms["eager"], _ = time_or_note(bench, backward_of(
                    lambda a, b, c: eager_attention(a, b, c, causal=shape.causal, scale=scale,
                                                    causal_mask=causal_mask)), device)
            except (getattr(torch, "OutOfMemoryError", MemoryError), MemoryError):  # its forward, building the graph
                torch.cuda.empty_cache()
        row.checks.update(check_backward(shape, dtype, device, scale))
        del qg, kg, vg, grad_out
    else:
        row.notes["backward"] = "not measured: time budget spent"
    if device == "cuda":
        torch.cuda.empty_cache()
    return row


# ----------------------------------------------------------------------------------------------- calibration


def calibrate(bench: Bench, device: str, smoke: bool) -> dict[str, float]:
    import torch

    if smoke:
        a = torch.randn(256, 256)
        ms = bench.time_ms(lambda a=a: a @ a)  # bound as a default: `a` is deleted further down, outside this branch
        return {"matmul_n": 256, "matmul_dtype": "float32", "matmul_tflops": 2 * 256**3 / ms / 1e9,
                "fill_bytes": 0, "write_gbps": float("nan")}
    # The tensors are bound as default arguments because they are deleted right after timing (to free 2 GiB
    # before the next measurement); the lambdas are temporaries, so they do not keep them alive.
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    ms = bench.time_ms(lambda a=a, b=b: a @ b)
    del a, b
    buffer = torch.empty(2 * GIB // 4, device=device, dtype=torch.float32)
    fill_ms = bench.time_ms(lambda buffer=buffer: buffer.fill_(1.0))
    del buffer
    return {"matmul_n": 8192, "matmul_dtype": "bfloat16", "matmul_tflops": 2 * 8192**3 / ms / 1e9,
            "fill_bytes": 2 * GIB, "write_gbps": 2 * GIB / fill_ms / 1e6}


# --------------------------------------------------------------------------------------------- pre-compiling


def _precompile_job(job: tuple) -> str:
    """Worker: compile one kernel's candidates for one variant (no GPU touched; fills Triton's disk cache)."""
    kind, dim, causal, gqa, arch = job
    import torch

    from kernels import flash
    from kernels.flash_aot import compile_only

    # Compile-relevant properties (dtype, head_dim, flags, GQA or not, 16-byte alignment of every stride and
    # pointer) are those of the real shapes; 512 tokens admit every tuning candidate.
    n, heads = 512, 2
    q = torch.empty(1, heads, n, dim, dtype=torch.bfloat16)
    k = torch.empty(1, 1 if gqa else heads, n, dim, dtype=torch.bfloat16)
    lse = torch.zeros(1, heads, n)
    scale = dim ** -0.5
    started = time.perf_counter()
    kernel = {"plain": "forward", "lse": "forward", "stats": "forward", "materialize": "materialize",
              "backward": None}[kind]
    with compile_only(arch=arch, kernels=None if kernel is None else [kernel]):
        if kind in ("plain", "lse", "stats"):
            wanted = {"plain": (), "lse": ("lse",), "stats": ("entropy", "lse")}[kind]
            flash.flash_attention(q, k, k, causal=causal, scale=scale, stats=wanted)
        elif kind == "materialize":
            flash.materialize_weights(q, k, lse=lse, causal=causal, scale=scale, heads=[0])
        else:
            geo = flash._geometry(q, k, k)
            padding, _ = flash._padding_arg(None, q.device)
            flash._backward(q, q, k, k, q, lse, causal=causal, scale=scale, padding=padding, has_padding=False,
                            window=None, geo=geo)
    return f"{kind} D={dim} causal={causal} gqa={gqa}: {time.perf_counter() - started:.1f}s"


def precompile(shapes: list[Shape], workers: int, arch: int) -> float:
    """Compile every variant the run will launch, in parallel processes; returns the wall time it took."""
    jobs = sorted({(kind, s.dim, s.causal, kind == "backward" and s.heads != s.kv_heads, arch)
                   for s in shapes for kind in ("backward", "stats", "plain", "lse", "materialize")})
    jobs.sort(key=lambda job: job[0] != "backward")  # the slowest compiles first
    started = time.perf_counter()
    context = multiprocessing.get_context("spawn")  # the parent holds CUDA; workers never touch it
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for done in pool.map(_precompile_job, jobs):
            print(f"  precompiled {done}", file=sys.stderr, flush=True)
    return time.perf_counter() - started


# --------------------------------------------------------------------------------------------------- reporting


def _ms(value: float | None, note: str = "") -> str:
    if value is None:
        return note or "—"
    return f"{value:.3f}"


def _rate(value: float) -> str:
    """TFLOP/s to a sensible precision (smoke runs on a CPU interpreter reach thousandths)."""
    return f"{value:.0f}" if value >= 10 else f"{value:.2g}"


def _ms_tflops(value: float | None, flops: float, note: str = "") -> str:
    if value is None:
        return note or "—"
    return f"{value:.3f} ({_rate(flops / value / 1e9)})"


def _best_sdpa(times: dict[str, float | None]) -> tuple[str, float] | None:
    candidates = [(name, t) for name, t in times.items() if name.startswith("SDPA") and t is not None]
    return min(candidates, key=lambda pair: pair[1]) if candidates else None


def tables(rows: list[Row], calibration: dict, sdpa_names: list[str]) -> str:
    peak = calibration["matmul_tflops"]
    lines = ["**Calibration**", "", "| measurement | value |", "|---|---:|",
             f"| {calibration['matmul_n']}³ {calibration['matmul_dtype']} matmul | {_rate(peak)} TFLOP/s |"]
    if calibration["fill_bytes"]:
        lines.append(f"| write-only `fill_` of {calibration['fill_bytes'] / GIB:.0f} GiB | "
                     f"{calibration['write_gbps']:.0f} GB/s |")
    contenders = ["ours", "ours +entropy/LSE", *sdpa_names, "eager"]
    lines += ["", "**Forward** — median ms (TFLOP/s)", "",
              "| shape | " + " | ".join(contenders) + " | entropy/LSE overhead | ours / best SDPA "
              "| ours, share of matmul | correct (out err ours / SDPA; entropy, LSE err) |",
              "|---|" + "---:|" * (len(contenders) + 4)]
    for row in rows:
        flops = row.shape.forward_flops()
        cells = [_ms_tflops(row.forward_ms.get(name), flops, row.notes.get(name, "")) for name in contenders]
        plain, stats = row.forward_ms.get("ours"), row.forward_ms.get("ours +entropy/LSE")
        overhead = f"{(stats / plain - 1) * 100:+.1f}%" if plain and stats else "—"
        best = _best_sdpa(row.forward_ms)
        ratio = f"{best[1] / plain:.2f}× ({best[0].removeprefix('SDPA ')})" if best and plain else "—"
        share = f"{flops / plain / 1e9 / peak * 100:.0f}%" if plain else "—"
        c = row.checks
        verdict = "ok" if c.get("out_ok") and c.get("stats_ok") else "FAIL"
        correct = (f"{verdict}: {c.get('out_err', float('nan')):.1e} / {c.get('sdpa_err', float('nan')):.1e}; "
                   f"{c.get('entropy_err', float('nan')):.1e}, {c.get('lse_err', float('nan')):.1e}")
        lines.append(f"| {row.shape.label} | " + " | ".join(cells) + f" | {overhead} | {ratio} | {share} | {correct} |")

    backward_names = ["ours", *sdpa_names, "eager"]
    lines += ["", "**Backward** — median ms (TFLOP/s at 2.5 × forward FLOPs), forward excluded", "",
              "| shape | " + " | ".join(backward_names) + " | ours / best SDPA | correct (grad err ours / plain, "
              "reduced copy) |", "|---|" + "---:|" * (len(backward_names) + 2)]
    for row in rows:
        if not row.backward_ms:
            lines.append(f"| {row.shape.label} | " + " | ".join(["not measured"] * len(backward_names)) + " | — | — |")
            continue
        flops = 2.5 * row.shape.forward_flops()
        cells = [_ms_tflops(row.backward_ms.get(name), flops, "n/a") for name in backward_names]
        best, ours = _best_sdpa(row.backward_ms), row.backward_ms.get("ours")
        ratio = f"{best[1] / ours:.2f}× ({best[0].removeprefix('SDPA ')})" if best and ours else "—"
        c = row.checks
        correct = (f"{'ok' if c.get('grad_ok') else 'FAIL'}: {c.get('grad_err', float('nan')):.1e} / "
                   f"{c.get('grad_plain_err', float('nan')):.1e}")
        lines.append(f"| {row.shape.label} | " + " | ".join(cells) + f" | {ratio} | {correct} |")

    lines += ["", "**Materialise one head** (all rows, float32, from the fused LSE)", "",
              "| shape | output | time ms | write-only time for those bytes ms | ratio | weights err |",
              "|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        write_ms = (row.materialize_bytes / (calibration["write_gbps"] * 1e6)
                    if calibration["fill_bytes"] else float("nan"))
        ratio = f"{row.materialize_ms / write_ms:.2f}×" if row.materialize_ms and math.isfinite(write_ms) else "—"
        write_cell = f"{write_ms:.3f}" if math.isfinite(write_ms) else "n/a"
        err = row.checks.get("weights_err")
        lines.append(f"| {row.shape.label} | {row.materialize_bytes / 2**20:,.0f} MiB | "
                     f"{_ms(row.materialize_ms, row.notes.get('materialise', ''))} | {write_cell} | {ratio} | "
                     f"{'—' if err is None else f'{err:.1e}'} |")

    memory_rows = [row for row in rows if row.peak_mib]
    if memory_rows:
        lines += ["", "**Peak memory** above the inputs (`torch.cuda.max_memory_allocated`)", "",
                  "| shape | ours MiB | ours +entropy/LSE MiB | eager MiB | eager / ours |",
                  "|---|---:|---:|---:|---:|"]
        def mib(value: float | None) -> str:
            return "n/a (CPU)" if value is None else f"{value:,.1f}"

        for row in memory_rows:
            ours, eager = row.peak_mib.get("ours"), row.peak_mib.get("eager")
            eager_cell = mib(eager) if eager is not None or "eager" not in row.notes else row.notes["eager"]
            ratio = f"{eager / ours:.0f}×" if eager and ours else "—"
            lines.append(f"| {row.shape.label} | {mib(ours)} | {mib(row.peak_mib.get('ours +entropy/LSE'))} | "
                         f"{eager_cell} | {ratio} |")
    return "\n".join(lines)


def targets(rows: list[Row], calibration: dict) -> list[str]:
    """The issue's four GPU targets, judged only from what this run measured."""
    def verdict(ok: bool | None) -> str:
        return "not measured" if ok is None else ("met" if ok else "NOT met")

    fwd = [(r, _best_sdpa(r.forward_ms)) for r in rows if r.shape.dim == 128 and r.shape.n >= 4096]
    fwd_ratios = [best[1] / r.forward_ms["ours"] for r, best in fwd if best and r.forward_ms.get("ours")]
    overheads = [r.forward_ms["ours +entropy/LSE"] / r.forward_ms["ours"] - 1 for r in rows
                 if r.forward_ms.get("ours") and r.forward_ms.get("ours +entropy/LSE")]
    bwd_ratios = [best[1] / r.backward_ms["ours"] for r in rows
                  if (best := _best_sdpa(r.backward_ms)) and r.backward_ms.get("ours")]
    mat = [r for r in rows if r.shape.n == 16384 and r.materialize_ms and calibration["fill_bytes"]]
    mat_ratios = [r.materialize_ms / (r.materialize_bytes / (calibration["write_gbps"] * 1e6)) for r in mat]
    lines = [
        f"- Forward ≥ 1.0× SDPA's best backend at D = 128, N ≥ 4k: worst ratio "
        f"{min(fwd_ratios):.2f}× over {len(fwd_ratios)} shapes — {verdict(min(fwd_ratios) >= 1.0)}"
        if fwd_ratios else "- Forward ≥ 1.0× SDPA's best at D = 128, N ≥ 4k: not measured",
        f"- Fused entropy + LSE ≤ 10% over the plain forward: worst {max(overheads) * 100:+.1f}% — "
        f"{verdict(max(overheads) <= 0.10)}" if overheads else "- Fused entropy ≤ 10%: not measured",
        f"- Backward ≥ 0.8× SDPA's best: worst ratio {min(bwd_ratios):.2f}× — {verdict(min(bwd_ratios) >= 0.8)}"
        if bwd_ratios else "- Backward ≥ 0.8× SDPA's best: not measured",
        f"- Materialising one head at N = 16k within 1.5× of its write-only time: worst {max(mat_ratios):.2f}× — "
        f"{verdict(max(mat_ratios) <= 1.5)}" if mat_ratios else
        "- Materialising one head at N = 16k within 1.5× of its write time: not measured",
    ]
    return lines


def report(rows: list[Row], calibration: dict, *, smoke: bool, device: str, argv: list[str], shapes_text: str,
           bench: Bench, precompile_s: float | None, elapsed_s: float, budget_s: float, skipped: list[Shape]) -> str:
    prov = provenance_lines(command_line("benchmarks.attention_kernels", argv), shapes_text, gpu=device == "cuda")
    summary = ("**SMOKE RUN on the CPU interpreter: these are NOT performance numbers.** It only shows that the "
               "benchmark's code paths, checks and tables work." if smoke else
               "Our Triton FlashAttention (plain, with fused entropy + LSE, and materialising one head) against "
               "PyTorch SDPA pinned to each backend and eager attention, same process, same tensors.")
    timing = ("`triton.testing.do_bench` median, warmup "
              f"{bench.warmup_ms} ms, rep {bench.rep_ms} ms" if device == "cuda" else
              f"`time.perf_counter` median of {bench.cpu_samples} after one warm-up call" if bench.cpu_samples > 1
              else "`time.perf_counter`, one call (smoke: the code paths and checks, not speed)")
    notes = [
        f"- Times: {timing}. TFLOP/s in parentheses: forward 4·B·H·N²·D (halved when causal); backward 2.5× that.",
        "- ours / best SDPA > 1 means ours is faster. Entropy/LSE overhead: (ours +entropy/LSE) / ours − 1.",
        "- Correctness, in the run: ours and the first SDPA backend that ran, against a float32 oracle on batch 0, "
        "heads 0–1, the last 128 query rows (ok: ours ≤ 2 × SDPA's error); entropy and LSE of those rows "
        f"(≤ {STATS_ATOL:g}); materialised weights of those rows (≤ {STATS_ATOL:g}); gradients on a reduced copy "
        "(batch 1, one KV group, ≤ 2048 tokens) against the float32 oracle (ok: ≤ 2 × plain PyTorch's error).",
        "- Write-only time: the output bytes at the `fill_` bandwidth of the calibration row.",
        "- Eager is skipped (and says so) where its n×n tensors would exceed 60% of free GPU memory.",
        "- Kernel compilation: "
        f"{'parallel pre-compile took ' + f'{precompile_s:.0f} s' if precompile_s else 'none ahead of time'}; "
        f"per-shape tuning happens on the first call, outside the timed region. Run time {elapsed_s:.0f} s "
        f"(budget {budget_s:.0f} s).",
    ]
    if skipped:
        notes.append("- Not measured (time budget spent, or the run was still going when this was written): "
                     + "; ".join(s.label for s in skipped) + ".")
    parts = [summary, "", *prov, *gpu_lines(device), ""]
    if not smoke:
        parts += ["**Targets** (issue 3; judged from this run only)", "", *targets(rows, calibration), ""]
    parts += [tables(rows, calibration, list(sdpa_backends(smoke))), "", *notes]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("bench-out"),
                        help="folder for attention_kernels.md and attention_kernels.json (default: %(default)s)")
    parser.add_argument("--write-docs", action="store_true",
                        help=f"also replace the '{SECTION_TITLE}' section of docs/BENCHMARKS.md")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny shapes on the CPU interpreter (code-path check only; not performance)")
    parser.add_argument("--budget-s", type=float, default=330.0,
                        help="stop starting new shapes after this many seconds (default: %(default)s)")
    parser.add_argument("--warmup-ms", type=int, default=10, help="do_bench warmup per measurement (ms)")
    parser.add_argument("--rep-ms", type=int, default=40, help="do_bench repetition time per measurement (ms)")
    parser.add_argument("--precompile-workers", type=int, default=min(16, os.cpu_count() or 1),
                        help="processes compiling kernel variants before timing (0: none)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    shown = shown_argv(argv)

    if args.smoke:
        os.environ["TRITON_INTERPRET"] = "1"  # read when kernels launch, so setting it here is enough
    import torch

    device = "cpu" if args.smoke else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA GPU here; run with --smoke for the CPU code-path check", file=sys.stderr)
        return 2
    dtype = torch.float32 if args.smoke else torch.bfloat16
    shapes = smoke_shapes() if args.smoke else gpu_shapes()
    bench = Bench(device, args.warmup_ms, args.rep_ms, cpu_samples=1 if args.smoke else 3)

    precompile_s = None
    if device == "cuda" and args.precompile_workers > 0:
        major, minor = torch.cuda.get_device_capability()
        try:
            precompile_s = precompile(shapes, args.precompile_workers, major * 10 + minor)
        except Exception as err:  # an optimisation only: the run compiles on first use anyway
            print(f"  pre-compile failed ({type(err).__name__}: {err}); compiling on first use", file=sys.stderr)

    calibration = calibrate(bench, device, args.smoke)
    print(f"calibration: {calibration}", file=sys.stderr, flush=True)
    budget_left = lambda: args.budget_s - (time.perf_counter() - started)  # noqa: E731
    rows, skipped = [], []
    shapes_text = (f"{dtype}; " + "; ".join(sorted({s.sweep for s in shapes})) +
                   "; queries = keys (self-attention), scale = D^-0.5, random normal inputs (seed 0)")

    def write_outputs(final: bool) -> str:
        """The section and raw numbers so far: rewritten after every shape, so a run cut short keeps its rows."""
        pending = [] if final else shapes[len(rows) + len(skipped):]
        body = report(rows, calibration, smoke=args.smoke, device=device, argv=shown, shapes_text=shapes_text,
                      bench=bench, precompile_s=precompile_s, elapsed_s=time.perf_counter() - started,
                      budget_s=args.budget_s, skipped=skipped + pending)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "attention_kernels.md").write_text(f"## {SECTION_TITLE}\n\n{body}\n")
        raw = {"complete": final, "calibration": calibration, "smoke": args.smoke, "precompile_s": precompile_s,
               "elapsed_s": time.perf_counter() - started, "rows": [asdict(row) for row in rows],
               "not_measured": [asdict(s) for s in skipped + pending]}
        if device == "cuda":
            from kernels.flash import LAUNCHER

            raw["tuned_configs"] = {repr(key): asdict(config) for key, config in LAUNCHER.chosen_configs().items()}
            raw["tuning_timings_ms"] = {repr(key): {repr(config): timing for config, timing in timings.items()}
                                        for key, timings in dict(LAUNCHER.tuning_log).items()}
        write_raw_json(args.out / "attention_kernels.json", raw)
        return body

    memory_at = {8192, 32768} if not args.smoke else {32, 64}
    for shape in shapes:
        if budget_left() <= 0:
            skipped.append(shape)
            continue
        shape_started = time.perf_counter()
        with_memory = shape.n in memory_at and shape.causal and (shape.dim == 128 or args.smoke)
        try:
            rows.append(measure_shape(shape, bench, dtype=dtype, device=device, smoke=args.smoke,
                                      with_eager_memory=with_memory, budget_left=budget_left))
        except (getattr(torch, "OutOfMemoryError", MemoryError), MemoryError) as err:
            row = Row(shape)
            row.notes["ours"] = f"out of memory: {str(err).splitlines()[0][:80]}"
            row.checks["out_ok"] = False
            rows.append(row)
            if device == "cuda":
                torch.cuda.empty_cache()
        print(f"  {shape.label}: {time.perf_counter() - shape_started:.1f}s, forward "
              f"{ {k: (round(v, 3) if v else v) for k, v in rows[-1].forward_ms.items()} }, checks "
              f"{rows[-1].checks}", file=sys.stderr, flush=True)
        write_outputs(final=False)

    body = write_outputs(final=True)
    print(body)
    if args.write_docs:
        if args.smoke:
            print("not writing docs/BENCHMARKS.md from a smoke run (it measures nothing)", file=sys.stderr)
        else:
            write_section(SECTION_TITLE, body)
    failed = [row.shape.label for row in rows
              if not all(row.checks.get(key, True) for key in ("out_ok", "stats_ok", "weights_ok", "grad_ok"))]
    if failed:
        print(f"correctness check FAILED for: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
