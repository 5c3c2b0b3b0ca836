"""Lesson 7 (what attention costs as n grows, timed live) and the quiz's measurements (lesson 8)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch

from inspector.analyses.attribution import batch_size_for
from inspector.analyses.lessons.common import (
    BUSY_SPREAD,
    DEFAULT_LENGTHS,
    EXPONENT_RESAMPLES,
    QUERY_BLOCK,
    TIME_SHOWS_SQUARE_FROM,
    TIMING_REPEATS,
    TIMING_WARMUPS,
    Answer,
    _check_shapes,
    _f,
    _pct,
)
from inspector.analyses.lessons.encoder import DefinitionLesson
from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import Notice, device_label
from inspector.base.progress import Progress, no_progress
from inspector.core.budget import weight_bytes
from inspector.core.deadline import check_deadline
from inspector.core.forward import encode_text, forward
from inspector.core.loading import LoadedModel
from inspector.core.outputs import model_output, output_change
from kernels.reference import blocked_attention, default_block_size, reference_attention

# -------------------------------------------------------------------------------------------------- lesson 7


@dataclass(frozen=True)
class ComplexityLesson:
    """Lesson 7, measured live. lengths: (L,). materialised_ms, flash_ms: (L,) median wall time of ``repeats``
    runs of :func:`kernels.reference.reference_attention` (all n×n weights in fp32) and of the flash path (Triton
    FlashAttention on CUDA, :func:`kernels.reference.blocked_attention` query blocks elsewhere), warm-ups excluded;
    materialised_runs_ms, flash_runs_ms: (L, repeats) every timed run. time_exponent: b of time ≈ a·n^b fitted to
    the materialised medians, exponent_low / exponent_high its 95% bootstrap interval (:func:`exponent_interval`);
    spread: :func:`timing_spread` of both paths' runs; busy: spread > :data:`BUSY_SPREAD`.
    materialised_bytes, flash_bytes: (L,) what each holds beyond Q, K, V and O in theory. measured_*_bytes: (L,)
    peak allocation measured by CUDA's allocator; NaN on the CPU, where PyTorch reports no peak.

    The measures that no busy machine disturbs: weight_bytes: (L,) bytes of the n×n weights the materialised path
    allocated (the tensor it returned, equal to :func:`inspector.core.budget.weight_bytes`); flops: (L,) the
    multiply-adds counted, 2·n²·d for QKᵀ and 2·n²·d for AV per head; bytes_exponent, flops_exponent: their fitted
    growth (2 by construction, so the page can show O(n²) whatever the timings do). max_abs_delta: (L,) max |Δ|
    between the flash path's output and the materialised one on the same Q, K, V — blocked equals materialised."""

    device: str
    flash_backend: str
    heads: int
    d_k: int
    dtype: str
    lengths: np.ndarray
    materialised_ms: np.ndarray
    flash_ms: np.ndarray
    materialised_bytes: np.ndarray
    flash_bytes: np.ndarray
    measured_materialised_bytes: np.ndarray
    measured_flash_bytes: np.ndarray
    time_exponent: float
    answer: Answer
    materialised_runs_ms: np.ndarray = field(default_factory=lambda: np.zeros((0, 1)))
    flash_runs_ms: np.ndarray = field(default_factory=lambda: np.zeros((0, 1)))
    exponent_low: float = math.nan
    exponent_high: float = math.nan
    spread: float = math.nan
    busy: bool = False
    weight_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    flops: np.ndarray = field(default_factory=lambda: np.zeros(0))
    bytes_exponent: float = math.nan
    flops_exponent: float = math.nan
    max_abs_delta: np.ndarray = field(default_factory=lambda: np.zeros(0))
    counted: Answer | None = None

    def __post_init__(self) -> None:
        _check_shapes(self, {name: (len(self.lengths),) for name in
                             ("materialised_ms", "flash_ms", "materialised_bytes", "flash_bytes",
                              "measured_materialised_bytes", "measured_flash_bytes", "weight_bytes", "flops",
                              "max_abs_delta")})
        _check_shapes(self, {name: (len(self.lengths), self.materialised_runs_ms.shape[1])
                             for name in ("materialised_runs_ms", "flash_runs_ms")})

    @property
    def answers(self) -> tuple[Answer, ...]:
        """The counted measures and max |Δ| first (they hold on any machine), then what the clock said."""
        return (self.answer,) if self.counted is None else (self.counted, self.answer)


@contextmanager
def _quiet_threads(device: torch.device):
    """One intra-op thread while timing on a CPU: on a busy 2-core machine a second thread mostly waits for a core
    another process holds, which is what made runs of one length spread by more than their median (issue 44)."""
    if device.type != "cpu":
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _timed_once(fn, device: torch.device) -> tuple[float, float]:
    """(wall time of one ``fn()`` in milliseconds, peak extra bytes it allocated on CUDA or NaN)."""
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device) if cuda else 0
    started = time.perf_counter()
    fn()
    if cuda:
        torch.cuda.synchronize(device)
    elapsed = 1000 * (time.perf_counter() - started)
    return elapsed, (float(torch.cuda.max_memory_allocated(device) - before) if cuda else math.nan)


def growth_exponent(lengths: np.ndarray, values: np.ndarray) -> float:
    """b of value ≈ a·n^b, least squares on log–log over ``lengths`` (L,) and ``values`` (L,) > 0; NaN for fewer
    than two distinct lengths."""
    lengths = np.asarray(lengths, dtype=np.float64)
    if len(np.unique(lengths)) < 2:
        return math.nan
    return float(np.polyfit(np.log(lengths), np.log(np.asarray(values, dtype=np.float64)), 1)[0])


def exponent_interval(lengths: np.ndarray, runs_ms: np.ndarray, *, resamples: int = EXPONENT_RESAMPLES,
                      seed: int = 0) -> tuple[float, float, float]:
    """The growth exponent b of time ≈ a·n^b, fitted (least squares on log–log) to the median of each length's
    runs, and a 95% bootstrap interval for it: each resample draws, for every length, one of its runs at random
    and fits again (the spread of the runs — a busy machine — widens the interval; the fit's own residuals do
    not enter). ``lengths``: (L,) ≥ 2 distinct; ``runs_ms``: (L, repeats). Returns (exponent, low, high); NaNs
    for fewer than two lengths."""
    lengths = np.asarray(lengths, dtype=np.float64)
    runs = np.asarray(runs_ms, dtype=np.float64)
    if len(np.unique(lengths)) < 2:
        return math.nan, math.nan, math.nan
    x = np.log(lengths)
    exponent = growth_exponent(lengths, np.median(runs, axis=1))
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, runs.shape[1], size=(resamples, len(lengths)))  # (resamples, L)
    sampled = np.log(runs[np.arange(len(lengths))[None, :], picks])  # (resamples, L)
    centred = x - x.mean()
    slopes = (sampled - sampled.mean(axis=1, keepdims=True)) @ centred / (centred @ centred)  # (resamples,)
    low, high = np.percentile(slopes, [2.5, 97.5])
    return exponent, float(low), float(high)


def timing_spread(runs_ms: np.ndarray) -> float:
    """The largest relative spread of one length's runs, (q75 − q25) / median over ``runs_ms`` (L, repeats):
    0 on a quiet machine; above :data:`BUSY_SPREAD` the machine was too busy for the timings to be trusted."""
    runs = np.asarray(runs_ms, dtype=np.float64)
    q25, q50, q75 = np.percentile(runs, [25, 50, 75], axis=1)
    return float(((q75 - q25) / np.maximum(q50, 1e-12)).max())


def complexity_lesson(lengths: Sequence[int] = DEFAULT_LENGTHS, *, heads: int = 12, d_k: int = 64,
                      device: str | torch.device | None = None, repeats: int = TIMING_REPEATS,
                      warmups: int = TIMING_WARMUPS, seed: int = 0,
                      progress: Progress | None = None) -> ComplexityLesson:
    """Time ``softmax(QKᵀ/√d)V`` for one sequence of each length with ``heads`` heads of size ``d_k``, and count
    what does not depend on the clock (the n×n weights' bytes, the FLOPs, max |Δ| flash vs materialised).

    Made for a busy machine (issue 44: every run flagged busy, one curve V-shaped with exponent 0.47): ``warmups``
    untimed rounds over every length first (allocator, kernels and caches settle; the first length no longer pays
    them), then ``repeats`` rounds, each timing every length once in turn — a burst of load then hits every length
    alike instead of one — on one CPU thread (:func:`_quiet_threads`); each length reports the median of its runs.
    ``progress`` (:mod:`inspector.base.progress`) counts rounds: called before each (done = rounds finished, total =
    ``warmups + repeats``) and at the end; a job's deadline is checked before each length."""
    from kernels import flash

    if not lengths or min(lengths) < 1 or repeats < 1 or warmups < 0:
        raise InvalidRequestError(f"lengths must be positive, repeats ≥ 1 and warm-ups ≥ 0; got {list(lengths)}, "
                                  f"{repeats}, {warmups}")
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    use_triton = device.type == "cuda" and flash.triton_usable(device)
    dtype = torch.float16 if use_triton else torch.float32
    generator = torch.Generator(device=device).manual_seed(seed)
    scale = d_k ** -0.5
    inputs = [tuple(torch.randn(1, heads, n, d_k, generator=generator, device=device, dtype=dtype) for _ in range(3))
              for n in lengths]  # (q, k, v) per length, each (1, heads, n, d_k)

    def block(n: int) -> int:  # queries per block: at most QUERY_BLOCK, so every n above it is really blocked
        return min(n, QUERY_BLOCK, default_block_size(1, heads, n))

    def materialised(q, k, v):
        return reference_attention(q, k, v, causal=False, scale=scale)

    def flash_path(q, k, v):
        if use_triton:
            return flash.flash_attention(q, k, v, causal=False, scale=scale, stats=("lse",))
        return blocked_attention(q, k, v, causal=False, scale=scale, stats=("lse",), block_size=block(q.shape[2]))

    rounds = warmups + repeats
    announce = progress or no_progress
    mat_runs, flash_runs = np.zeros((len(lengths), repeats)), np.zeros((len(lengths), repeats))
    mat_peak, flash_peak = np.full(len(lengths), math.nan), np.full(len(lengths), math.nan)
    with torch.inference_mode(), _quiet_threads(device):
        for done in range(rounds):
            announce(done, rounds, f"round {done + 1} of {rounds}")
            for index, qkv in enumerate(inputs):
                check_deadline(f"before timing n = {qkv[0].shape[2]}")  # a run's deadline binds between lengths
                mat_ms, mat_bytes = _timed_once(lambda: materialised(*qkv), device)
                flash_ms, flash_extra = _timed_once(lambda: flash_path(*qkv), device)
                if done >= warmups:
                    mat_runs[index, done - warmups], flash_runs[index, done - warmups] = mat_ms, flash_ms
                    mat_peak[index] = np.fmax(mat_peak[index], mat_bytes)
                    flash_peak[index] = np.fmax(flash_peak[index], flash_extra)
        weight_sizes, deltas = [], []
        for qkv in inputs:  # untimed: the weights the materialised path allocates, and blocked = materialised
            reference_out, weights = materialised(*qkv)
            weight_sizes.append(weights.element_size() * weights.nelement())
            deltas.append(float((flash_path(*qkv)[0].float() - reference_out.float()).abs().max()))
    announce(rounds, rounds, "done")
    lengths_array = np.asarray(lengths, dtype=np.int64)
    mat_ms, flash_ms = np.median(mat_runs, axis=1), np.median(flash_runs, axis=1)
    exponent, low, high = exponent_interval(lengths_array, mat_runs)
    spread = max(timing_spread(mat_runs), timing_spread(flash_runs))
    busy = spread > BUSY_SPREAD
    mat_theory = [weight_bytes(heads, n, copies=2) for n in lengths]  # fp32 scores and weights, both n×n
    if use_triton:
        flash_theory = [heads * n * 4 for n in lengths]  # the fp32 log-sum-exp; score tiles live in on-chip memory
    else:
        flash_theory = [weight_bytes(heads, block(n), keys=n) for n in lengths]  # one block of fp32 scores
    flops = np.asarray([2 * (2 * n * n * d_k) * heads for n in lengths], dtype=np.float64)  # QKᵀ and AV, per head
    sizes = np.asarray(weight_sizes, dtype=np.float64)
    bytes_exponent, flops_exponent = growth_exponent(lengths_array, sizes), growth_exponent(lengths_array, flops)
    backend = "Triton FlashAttention" if use_triton else "blocked PyTorch (query blocks)"
    backend_key = {"backend": "backend.triton" if use_triton else "backend.blocked"}
    last = len(lengths) - 1
    values = {"device": device_label(device), "n": str(int(lengths_array[last])),
              "mat_ms": _f(mat_ms[last], 1), "flash_ms": _f(flash_ms[last], 1),
              "mat_mb": _f(mat_theory[last] / 2**20, 1), "flash_mb": _f(flash_theory[last] / 2**20, 1),
              "exponent": _f(exponent), "low": _f(low), "high": _f(high), "repeats": str(repeats),
              "warmups": str(warmups), "spread": _pct(spread), "busy": _pct(BUSY_SPREAD), "heads": str(heads),
              "d_k": str(d_k)}
    counted = Answer("lesson7.counted", {
        "n": values["n"], "heads": str(heads), "d_k": str(d_k), "weights_mb": _f(sizes[last] / 2**20, 1),
        "bytes_exponent": _f(bytes_exponent), "gflops": f"{flops[last] / 1e9:.3g}",
        "flops_exponent": _f(flops_exponent),
        "delta": f"{deltas[last]:.1e}", "dtype": str(dtype).removeprefix("torch.")}, backend_key)
    return ComplexityLesson(
        device=str(device), flash_backend=backend, heads=heads, d_k=d_k, dtype=str(dtype).removeprefix("torch."),
        lengths=lengths_array, materialised_ms=mat_ms, flash_ms=flash_ms,
        materialised_bytes=np.asarray(mat_theory, dtype=np.float64),
        flash_bytes=np.asarray(flash_theory, dtype=np.float64),
        measured_materialised_bytes=mat_peak, measured_flash_bytes=flash_peak,
        time_exponent=exponent, materialised_runs_ms=mat_runs, flash_runs_ms=flash_runs, exponent_low=low,
        exponent_high=high, spread=spread, busy=busy, weight_bytes=sizes, flops=flops, bytes_exponent=bytes_exponent,
        flops_exponent=flops_exponent, max_abs_delta=np.asarray(deltas), counted=counted,
        answer=Answer(_timing_verdict(busy, exponent), {**values, "threshold": _f(TIME_SHOWS_SQUARE_FROM, 1)},
                      backend_key))


def _timing_verdict(busy: bool, exponent: float) -> str:
    """Lesson 7's answer key: too busy to read (spread past :data:`BUSY_SPREAD`), a time exponent short of
    :data:`TIME_SHOWS_SQUARE_FROM` (NaN included), or the n² shown."""
    if busy:
        return "lesson7.answer.busy"
    return "lesson7.answer" if exponent >= TIME_SHOWS_SQUARE_FROM else "lesson7.answer.flat"


# -------------------------------------------------------------------------------------------------- lesson 8


def attention_target(definition: DefinitionLesson, query: int) -> tuple[int, float]:
    """The key the head sends most of ``query``'s budget to, and that weight (the quiz's reveal)."""
    if not 0 <= query < len(definition.tokens):
        raise InvalidRequestError(f"query position {query} is outside the text's {len(definition.tokens)} tokens",
                                  notice=Notice("lessons.error.query", query=query, tokens=len(definition.tokens)))
    row = definition.weights[query]
    return int(row.argmax()), float(row.max())


@dataclass(frozen=True)
class TokenImportance:
    """Leave-one-out (Jain & Wallace 2019): the output change when each token is deleted from the text.
    change: (q_len,) float64, NaN for tokens not deleted (special tokens and the output position). measure: the
    output kind compared (:func:`inspector.core.outputs.output_change_name`)."""

    tokens: tuple[str, ...]
    change: np.ndarray
    measure: str
    best: int

    def __post_init__(self) -> None:
        _check_shapes(self, {"change": (len(self.tokens),)})


def leave_one_out(loaded: LoadedModel, text: str, *, backend: str = "torch") -> TokenImportance:
    encoded = encode_text(loaded, text)
    inputs, tokens, special, device = encoded.inputs, encoded.tokens, encoded.special, loaded.device
    base_result = forward(loaded, inputs, backend=backend)
    base = model_output(loaded, base_result, inputs)
    change = np.full(len(tokens), np.nan)
    left_out = [p for p in range(len(tokens)) if not special[p] and p != base.position]
    # Every deletion leaves n − 1 tokens, so the texts batch without padding, as many per forward as fit.
    chunk = batch_size_for(loaded, len(tokens) - 1, backward=False)
    for start in range(0, len(left_out), chunk):
        positions = left_out[start:start + chunk]
        keep = torch.tensor([[i for i in range(len(tokens)) if i != p] for p in positions], device=device)
        reduced = {name: tensor[0][keep] for name, tensor in inputs.items()}  # (len(positions), n − 1)
        result = forward(loaded, reduced, backend=backend, stats=())
        for b, position in enumerate(positions):
            change[position] = output_change(base, model_output(loaded, result, reduced, sequence=b))
    if not np.isfinite(change).any():
        raise InvalidRequestError("the text has no token that can be left out (only special tokens); type a longer "
                                  "text", notice=Notice("lessons.error.nothing_to_leave_out"))
    return TokenImportance(tokens=tokens, change=change, measure=base.kind, best=int(np.nanargmax(change)))


