"""Lesson 7 (what attention costs as n grows, timed live) and the quiz's measurements (lesson 8)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from inspector.analyses.attribution import batch_size_for
from inspector.analyses.lessons.common import (
    BUSY_SPREAD,
    DEFAULT_LENGTHS,
    EXPONENT_RESAMPLES,
    TIMING_REPEATS,
    Answer,
    _check_shapes,
    _f,
    _pct,
)
from inspector.analyses.lessons.encoder import DefinitionLesson
from inspector.base.errors import InvalidRequestError
from inspector.base.i18n import device_label
from inspector.base.progress import Progress, no_progress
from inspector.core.budget import weights_bytes
from inspector.core.forward import encode_text, forward
from inspector.core.loading import LoadedModel
from inspector.core.outputs import model_output, output_change
from kernels.reference import blocked_attention, default_block_size, reference_attention

# -------------------------------------------------------------------------------------------------- lesson 7


@dataclass(frozen=True)
class ComplexityLesson:
    """Lesson 7, measured live. lengths: (L,). materialised_ms, flash_ms: (L,) median wall time of ``repeats``
    runs of :func:`kernels.reference.reference_attention` (all n×n weights in fp32) and of the flash path (Triton
    FlashAttention on CUDA, :func:`kernels.reference.blocked_attention` query blocks elsewhere);
    materialised_runs_ms, flash_runs_ms: (L, repeats) every run. time_exponent: b of time ≈ a·n^b fitted to the
    materialised medians, exponent_low / exponent_high its 95% bootstrap interval (:func:`exponent_interval`);
    spread: :func:`timing_spread` of both paths' runs; busy: spread > :data:`BUSY_SPREAD`.
    materialised_bytes, flash_bytes: (L,) what each holds beyond Q, K, V and O in theory. measured_*_bytes: (L,)
    peak allocation measured by CUDA's allocator; NaN on the CPU, where PyTorch reports no peak."""

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

    def __post_init__(self) -> None:
        _check_shapes(self, {name: (len(self.lengths),) for name in
                             ("materialised_ms", "flash_ms", "materialised_bytes", "flash_bytes",
                              "measured_materialised_bytes", "measured_flash_bytes")})
        _check_shapes(self, {name: (len(self.lengths), self.materialised_runs_ms.shape[1])
                             for name in ("materialised_runs_ms", "flash_runs_ms")})


def _timed(fn, device: torch.device, repeats: int) -> tuple[list[float], float]:
    """(every one of ``repeats`` runs' wall time in milliseconds, peak extra bytes or NaN) of ``fn()`` after one
    warm-up call."""
    cuda = device.type == "cuda"
    fn()
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device) if cuda else 0
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize(device)
        times.append(1000 * (time.perf_counter() - started))
    peak = float(torch.cuda.max_memory_allocated(device) - before) if cuda else math.nan
    return times, peak


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
    exponent = float(np.polyfit(x, np.log(np.median(runs, axis=1)), 1)[0])
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
                      device: str | torch.device | None = None, repeats: int = TIMING_REPEATS, seed: int = 0,
                      progress: Progress | None = None) -> ComplexityLesson:
    """Time ``softmax(QKᵀ/√d)V`` for one sequence of each length with ``heads`` heads of size ``d_k``.
    ``progress`` (:mod:`inspector.base.progress`) counts lengths timed, called before each (done = its index in
    ``lengths``) and at the end."""
    from kernels import flash

    if not lengths or min(lengths) < 1 or repeats < 1:
        raise InvalidRequestError(f"lengths must be positive and repeats ≥ 1; got {list(lengths)}, {repeats}")
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    use_triton = device.type == "cuda" and flash.triton_usable(device)
    dtype = torch.float16 if use_triton else torch.float32
    generator = torch.Generator(device=device).manual_seed(seed)
    scale = d_k ** -0.5
    rows = {name: [] for name in ("mat_ms", "flash_ms", "mat_bytes", "flash_bytes", "mat_peak", "flash_peak")}
    announce = progress or no_progress
    for index, n in enumerate(lengths):
        announce(index, len(lengths), f"timing n = {n}")
        q, k, v = (torch.randn(1, heads, n, d_k, generator=generator, device=device, dtype=dtype) for _ in range(3))
        with torch.inference_mode():
            runs, peak = _timed(lambda: reference_attention(q, k, v, causal=False, scale=scale), device, repeats)
            rows["mat_ms"].append(runs)
            rows["mat_peak"].append(peak)
            if use_triton:
                flash_fn = lambda: flash.flash_attention(q, k, v, causal=False, scale=scale, stats=("lse",))  # noqa: E731
                extra = heads * n * 4  # the fp32 log-sum-exp; score tiles live in on-chip memory
            else:
                flash_fn = lambda: blocked_attention(q, k, v, causal=False, scale=scale, stats=("lse",))  # noqa: E731
                extra = weights_bytes(heads, min(n, default_block_size(1, heads, n)), n)  # one block of fp32 scores
            runs, peak = _timed(flash_fn, device, repeats)
        rows["flash_ms"].append(runs)
        rows["flash_peak"].append(peak)
        rows["mat_bytes"].append(weights_bytes(heads, n, n, copies=2))  # fp32 scores and weights, both n×n
        rows["flash_bytes"].append(extra)
    announce(len(lengths), len(lengths), "done")
    lengths_array = np.asarray(lengths, dtype=np.int64)
    mat_runs, flash_runs = np.asarray(rows["mat_ms"]), np.asarray(rows["flash_ms"])  # (L, repeats)
    mat_ms, flash_ms = np.median(mat_runs, axis=1), np.median(flash_runs, axis=1)
    exponent, low, high = exponent_interval(lengths_array, mat_runs)
    spread = max(timing_spread(mat_runs), timing_spread(flash_runs))
    busy = spread > BUSY_SPREAD
    backend = "Triton FlashAttention" if use_triton else "blocked PyTorch (query blocks)"
    last = len(lengths) - 1
    values = {"device": device_label(device), "n": str(int(lengths_array[last])),
              "mat_ms": _f(mat_ms[last], 1), "flash_ms": _f(flash_ms[last], 1),
              "mat_mb": _f(rows["mat_bytes"][last] / 2**20, 1), "flash_mb": _f(rows["flash_bytes"][last] / 2**20, 1),
              "exponent": _f(exponent), "low": _f(low), "high": _f(high), "repeats": str(repeats),
              "spread": _pct(spread), "heads": str(heads), "d_k": str(d_k)}
    return ComplexityLesson(
        device=str(device), flash_backend=backend, heads=heads, d_k=d_k, dtype=str(dtype).removeprefix("torch."),
        lengths=lengths_array, materialised_ms=mat_ms, flash_ms=flash_ms,
        materialised_bytes=np.asarray(rows["mat_bytes"], dtype=np.float64),
        flash_bytes=np.asarray(rows["flash_bytes"], dtype=np.float64),
        measured_materialised_bytes=np.asarray(rows["mat_peak"]), measured_flash_bytes=np.asarray(rows["flash_peak"]),
        time_exponent=exponent, materialised_runs_ms=mat_runs, flash_runs_ms=flash_runs, exponent_low=low,
        exponent_high=high, spread=spread, busy=busy,
        answer=Answer("lesson7.answer.busy" if busy else "lesson7.answer", values,
                      {"backend": "backend.triton" if use_triton else "backend.blocked"}))


# -------------------------------------------------------------------------------------------------- lesson 8


def attention_target(definition: DefinitionLesson, query: int) -> tuple[int, float]:
    """The key the head sends most of ``query``'s budget to, and that weight (the quiz's reveal)."""
    if not 0 <= query < len(definition.tokens):
        raise InvalidRequestError(f"query position {query} is outside the text's {len(definition.tokens)} tokens")
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
                                  "text")
    return TokenImportance(tokens=tokens, change=change, measure=base.kind, best=int(np.nanargmax(change)))


