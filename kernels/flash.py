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
whose language patching is process-global, runs one kernel at a time.

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

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch

from kernels.reference import STAT_NAMES, StatName, check_attention_inputs, select_heads_and_rows

LOG2E = 1.4426950408889634
MAX_HEAD_DIM = 256
SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

NO_GPU_MESSAGE = ("the Triton backend is not available here: Triton kernels need an NVIDIA GPU and this machine "
                  "has none. Choose the torch or auto backend (or set TRITON_INTERPRET=1 to run the kernels slowly "
                  "on the CPU interpreter).")


class TritonUnavailableError(RuntimeError):
    """The Triton kernels cannot run on these tensors here (no GPU and no interpreter, or no Triton)."""


# ----------------------------------------------------------------------------------------------- where it runs


def interpreter_enabled() -> bool:
    """Whether Triton's CPU interpreter is on (``TRITON_INTERPRET=1``), read now rather than at import."""
    try:
        import triton
    except ImportError:
        return False
    return bool(triton.knobs.runtime.interpret)


def triton_unavailable_reason(device: torch.device | str, *, dtype: torch.dtype | None = None,
                              head_dim: int | None = None) -> str | None:
    """None when the kernels can run on tensors on ``device`` (and, when given, of ``dtype`` and ``head_dim``);
    otherwise a message saying what, why and the fix."""
    if dtype is not None and dtype not in SUPPORTED_DTYPES:
        return (f"the Triton backend computes in float32, float16 or bfloat16, and this model runs in "
                f"{str(dtype).removeprefix('torch.')}; choose the torch backend")
    if head_dim is not None and head_dim > MAX_HEAD_DIM:
        return (f"the Triton backend supports head_dim up to {MAX_HEAD_DIM}, and this model's is {head_dim}; "
                "choose the torch backend")
    try:
        import triton  # noqa: F401
    except ImportError as err:
        return (f"the Triton backend is not available here: the triton package cannot be imported ({err}). "
                "Choose the torch or auto backend, or install the triton version pinned in requirements.txt.")
    if interpreter_enabled() or _COMPILE_ONLY.get() is not None:
        return None
    device = torch.device(device)
    if device.type == "cuda":
        return None if torch.cuda.is_available() else NO_GPU_MESSAGE
    if torch.cuda.is_available():
        return (f"the Triton backend runs on CUDA tensors, but these are on {device.type}; move the model to the GPU "
                "or choose the torch or auto backend")
    return NO_GPU_MESSAGE


def triton_usable(device: torch.device | str) -> bool:
    return triton_unavailable_reason(device) is None


# ----------------------------------------------------------------------------------------- configs and launching


@dataclass(frozen=True)
class KernelConfig:
    """Tile sizes and launch options of one kernel launch. For the dK/dV kernel ``block_n`` is its key block
    (the outer loop) and ``block_m`` the query tile it iterates over."""

    block_m: int
    block_n: int
    num_warps: int = 4
    num_stages: int = 2


# One configuration under the interpreter: it runs programs one after another in NumPy, so tiles only need
# to be small enough to exercise several blocks and phases at test sizes.
INTERPRETER_CONFIG = KernelConfig(block_m=32, block_n=32, num_warps=1, num_stages=1)

# Candidates tuned on the GPU, per kernel and per head-dim class (padded head_dim ≤ 128, or 256). Each was
# compiled for sm_90 with kernels.flash_aot and the bundled ptxas (bfloat16, causal; the forward plain and with
# every statistic) at head_dim 64 and 128, or 256 for its class: of those 50 builds only two spill registers, a
# little — the forward at head_dim 128 plain with 32×32 tiles (4 bytes) and with statistics at 128×128 (64
# bytes). Shapes that spilled more were dropped, and a loop over the GQA group inside the dK/dV kernel, which
# spilled kilobytes, became one program per query head. The small first tile serves short inputs, the app's
# usual case; pruning (_fits) drops tiles that do not suit the input's size.
COMPILED_CONFIGS: dict[str, dict[str, tuple[KernelConfig, ...]]] = {
    "forward": {
        "d128": (KernelConfig(32, 32, 4, 2), KernelConfig(64, 64, 4, 3), KernelConfig(128, 64, 8, 3),
                 KernelConfig(128, 128, 8, 3)),
        "d256": (KernelConfig(32, 32, 4, 2), KernelConfig(64, 32, 8, 2)),
    },
    "materialize": {
        "d128": (KernelConfig(32, 32, 4, 2), KernelConfig(64, 128, 4, 2), KernelConfig(128, 128, 8, 2)),
        "d256": (KernelConfig(32, 32, 4, 2), KernelConfig(64, 64, 4, 2), KernelConfig(64, 128, 8, 2)),
    },
    "backward_dkdv": {
        "d128": (KernelConfig(32, 32, 4, 2), KernelConfig(32, 64, 4, 2), KernelConfig(64, 64, 8, 2),
                 KernelConfig(32, 128, 8, 2)),
        "d256": (KernelConfig(16, 32, 4, 2), KernelConfig(64, 32, 8, 2)),
    },
    "backward_dq": {
        "d128": (KernelConfig(32, 32, 4, 2), KernelConfig(64, 64, 8, 2), KernelConfig(128, 32, 8, 2),
                 KernelConfig(128, 64, 8, 2)),
        "d256": (KernelConfig(16, 32, 4, 2), KernelConfig(32, 32, 4, 2), KernelConfig(64, 32, 8, 2)),
    },
    "backward_delta": {
        "d128": (KernelConfig(64, 16, 4, 1),),
        "d256": (KernelConfig(32, 16, 4, 1),),
    },
}

# Tuning time per candidate (ms) for triton.testing.do_bench: enough to rank tiles, small enough that a new
# shape bucket costs well under a second.
_TUNE_WARMUP_MS = 5
_TUNE_REP_MS = 20

# Forced tile configurations by kernel name (the key None: every other kernel); a missing entry means "tune".
_FORCED_CONFIG: contextvars.ContextVar[dict[str | None, KernelConfig | None]] = contextvars.ContextVar(
    "flash_forced_config", default={})
# Set by kernels.flash_aot.compile_only: launches compile for a named GPU instead of running (no GPU needed).
_COMPILE_ONLY: contextvars.ContextVar[Callable | None] = contextvars.ContextVar("flash_compile_only", default=None)


@contextlib.contextmanager
def forced_config(config: KernelConfig | None, kernels: Sequence[str] | None = None) -> Iterator[None]:
    """Launch the kernels named in ``kernels`` (default: all; names as in :data:`COMPILED_CONFIGS`) with ``config``
    in this context, without tuning — for tests of each tile shape. Nested contexts refine the outer one (a
    per-kernel choice inside an all-kernel one); ``config=None`` restores tuning for those kernels."""
    outer = _FORCED_CONFIG.get()
    forced = {None: config} if kernels is None else {**outer, **{name: config for name in kernels}}
    token = _FORCED_CONFIG.set(forced)
    try:
        yield
    finally:
        _FORCED_CONFIG.reset(token)


def launch_kwargs(kernel, config: KernelConfig, constexprs: dict) -> dict:
    """Keyword arguments of one launch: the kernel's constexprs, the tile sizes it declares, launch options.
    (Triton's compiler rejects a keyword the kernel does not declare; its interpreter would ignore it.)"""
    tiles = {name: value for name, value in (("BLOCK_M", config.block_m), ("BLOCK_N", config.block_n))
             if name in kernel.arg_names}
    return dict(constexprs, **tiles, num_warps=config.num_warps, num_stages=config.num_stages)


def _next_pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def _length_bucket(n: int) -> int:
    """Tuning is shared by lengths in the same power-of-two bucket (capped: long inputs tune alike)."""
    return min(_next_pow2(max(1, n)), 8192)


_INTERPRETED_HELPERS: dict[str, Callable] = {}


@contextlib.contextmanager
def _interpreter_builds_of_language_helpers() -> Iterator[None]:
    """Swap interpreter builds of Triton's ``@jit`` language helpers (``tl.sum``, ``tl.max``, ``tl.zeros`` …) into
    ``triton.language`` for the duration of one interpreted launch.

    Triton 3.x builds those helpers for one mode when *triton itself* is imported (``triton.jit`` reads
    ``TRITON_INTERPRET`` then), so a process that imported triton without the variable has compiler-only helpers
    that the interpreter cannot call ("Cannot call @triton.jit'd outside of the scope of a kernel"). Our kernels
    call the helpers as ``tl.<name>``, which this swap covers; helpers that call other helpers internally are
    not covered, and the kernels use none. The helpers' own module needs ``triton.language.core`` patched for the
    interpreter; Triton's ``InterpretedFunction.__call__`` would patch it and never undo it (breaking later
    compilation in the same process), so this patches it through Triton's (internal, 3.7) ``_patch_lang`` and
    restores it on exit. Runs under the interpreter lock. Nothing is swapped when triton was imported with the
    interpreter on (its helpers are interpreter builds already).
    """
    import triton.language as tl
    from triton.runtime import interpreter
    from triton.runtime.jit import JITFunction

    swapped = {name: helper for name, helper in vars(tl).items() if isinstance(helper, JITFunction)}
    if not swapped:
        yield
        return
    for name, helper in swapped.items():
        if name not in _INTERPRETED_HELPERS:
            _INTERPRETED_HELPERS[name] = interpreter.InterpretedFunction(helper.fn).rewrite()
    core_patches = interpreter._patch_lang(next(iter(swapped.values())).fn)
    try:
        for name in swapped:
            setattr(tl, name, _INTERPRETED_HELPERS[name])
        yield
    finally:
        for name, helper in swapped.items():
            setattr(tl, name, helper)
        core_patches.restore()


class _Launcher:
    """Builds each kernel once per mode, tunes once per (kernel, variant, shape bucket), launches thread-safely."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._kernels: dict[tuple[str, bool], object] = {}
        self._chosen: dict[tuple, KernelConfig] = {}
        self._warm: set[tuple] = set()
        self._key_locks: dict[tuple, threading.Lock] = {}
        self._interpreter_lock = threading.Lock()
        self.tuning_log: dict[tuple, dict[KernelConfig, float | str]] = {}

    def _kernel(self, name: str, interpret: bool):
        with self._guard:
            kernel = self._kernels.get((name, interpret))
            if kernel is None:
                from kernels.flash_kernels import build

                kernel = self._kernels[(name, interpret)] = build(name, interpret)
            return kernel

    def _lock_for(self, key: tuple) -> threading.Lock:
        with self._guard:
            return self._key_locks.setdefault(key, threading.Lock())

    def launch(self, name: str, *, grid: Callable[[KernelConfig], tuple[int, ...]], args: Sequence,
               constexprs: dict, variant: tuple, fits: Callable[[KernelConfig], bool], device: torch.device) -> None:
        """Launch kernel ``name``. ``variant`` identifies the compiled variant and shape bucket (the tuning key);
        ``fits`` says which candidate tiles are sensible for this input."""
        compile_only = _COMPILE_ONLY.get()
        interpret = interpreter_enabled() and compile_only is None
        kernel = self._kernel(name, interpret)
        forcing = _FORCED_CONFIG.get()
        forced = forcing[name] if name in forcing else forcing.get(None)
        if compile_only is not None:
            head_class = "d256" if constexprs["BLOCK_D"] > 128 else "d128"
            for config in [forced] if forced else self._candidates(name, head_class, fits):
                compile_only(name, kernel, config, args, constexprs)
            return
        if interpret:
            config = forced or INTERPRETER_CONFIG
            # The interpreter patches triton.language process-wide while it runs: one launch at a time.
            with self._interpreter_lock, _interpreter_builds_of_language_helpers():
                self._run(kernel, config, grid, args, constexprs)
            return
        with torch.cuda.device(device):
            if forced is not None:
                self._run_first_under_lock(kernel, forced, grid, args, constexprs, (name, variant, forced))
                return
            key = (name, variant)
            config = self._chosen.get(key)
            if config is None:
                with self._lock_for(key):
                    config = self._chosen.get(key)
                    if config is None:
                        config = self._chosen[key] = self._tune(name, kernel, key, grid, args, constexprs, fits,
                                                                 variant)
            self._run_first_under_lock(kernel, config, grid, args, constexprs, (name, variant, config))

    @staticmethod
    def _candidates(name: str, head_class: str, fits: Callable[[KernelConfig], bool]) -> list[KernelConfig]:
        configs = COMPILED_CONFIGS[name][head_class]
        return [c for c in configs if fits(c)] or [configs[0]]

    @staticmethod
    def _run(kernel, config: KernelConfig, grid, args, constexprs) -> None:
        kernel[grid(config)](*args, **launch_kwargs(kernel, config, constexprs))

    def _run_first_under_lock(self, kernel, config, grid, args, constexprs, warm_key) -> None:
        if warm_key in self._warm:
            self._run(kernel, config, grid, args, constexprs)
            return
        with self._lock_for(warm_key):  # the first launch compiles: once, even when threads race to it
            self._run(kernel, config, grid, args, constexprs)
            self._warm.add(warm_key)

    def _tune(self, name, kernel, key, grid, args, constexprs, fits, variant) -> KernelConfig:
        import triton.testing

        candidates = self._candidates(name, "d256" if constexprs["BLOCK_D"] > 128 else "d128", fits)
        if len(candidates) == 1:
            return candidates[0]
        timings: dict[KernelConfig, float | str] = {}
        for config in candidates:
            try:
                self._run_first_under_lock(kernel, config, grid, args, constexprs, (name, variant, config))
                timings[config] = triton.testing.do_bench(
                    lambda: self._run(kernel, config, grid, args, constexprs),
                    warmup=_TUNE_WARMUP_MS, rep=_TUNE_REP_MS)
            except Exception as err:  # a tile that does not fit (shared memory, registers): skip it, say why
                timings[config] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        self.tuning_log[key] = timings
        measured = {c: t for c, t in timings.items() if isinstance(t, float)}
        if not measured:
            raise RuntimeError(f"no tile configuration of the {name} kernel ran for {variant}: {timings}")
        return min(measured, key=measured.get)

    def chosen_configs(self) -> dict[tuple, KernelConfig]:
        """The configuration picked per (kernel, variant/bucket) so far (for benchmark reports)."""
        with self._guard:
            return dict(self._chosen)


LAUNCHER = _Launcher()


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
    return _Geometry(batch, heads, k.shape[1], q_len, k.shape[2], head_dim, max(16, _next_pow2(head_dim)))


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


def _fits(rows: int, cols: int) -> Callable[[KernelConfig], bool]:
    """Candidate tiles worth tuning for this input: none larger than it needs (rounded up to 16), and on long
    inputs none below 2048 elements (the small-input tiles: they do not win there, and each candidate costs a
    compile)."""
    rows_cap, cols_cap = max(16, _next_pow2(rows)), max(16, _next_pow2(cols))
    long_input = rows >= 1024 and cols >= 1024
    return lambda c: (c.block_m <= rows_cap and c.block_n <= cols_cap
                      and not (long_input and c.block_m * c.block_n < 2048))


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
    variant = (str(q.dtype), tuple(sorted(constexprs.items())), _length_bucket(geo.q_len), _length_bucket(geo.k_len))
    LAUNCHER.launch("forward", grid=lambda c: (triton_cdiv(geo.q_len, c.block_m), geo.batch * geo.heads),
                    args=args, constexprs=constexprs, variant=variant, fits=_fits(geo.q_len, geo.k_len), device=device)
    return out, stats


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


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
    variant = (str(q.dtype), tuple(sorted({**common, **masks}.items())), _length_bucket(geo.q_len),
               _length_bucket(geo.k_len))
    LAUNCHER.launch("backward_dkdv", grid=lambda c: (triton_cdiv(geo.k_len, c.block_n), geo.batch * geo.heads),
                    args=[q, k, v, dout, dk, dv, lse, delta, padding, *shared, *dk.stride(), padding.stride(0),
                          *scalars],
                    constexprs={**common, **masks}, variant=variant, fits=_fits(geo.q_len, geo.k_len), device=device)
    LAUNCHER.launch("backward_dq", grid=lambda c: (triton_cdiv(geo.q_len, c.block_m), geo.batch * geo.heads),
                    args=[q, k, v, dout, dq, lse, delta, padding, *shared, *dq.stride(), padding.stride(0), *scalars],
                    constexprs={**common, **masks}, variant=variant, fits=_fits(geo.q_len, geo.k_len), device=device)
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
    variant = (str(q.dtype), str(dtype), tuple(sorted(constexprs.items())), _length_bucket(num_rows),
               _length_bucket(geo.k_len))
    LAUNCHER.launch("materialize",
                    grid=lambda c: (triton_cdiv(geo.k_len, c.block_n), triton_cdiv(num_rows, c.block_m),
                                    batch * len(head_idx)),
                    args=args, constexprs=constexprs, variant=variant, fits=_fits(num_rows, geo.k_len), device=device)
    return weights


__all__ = ["FlashAttentionFunction", "KernelConfig", "TritonUnavailableError", "flash_attention", "forced_config",
           "interpreter_enabled", "materialize_weights", "triton_unavailable_reason", "triton_usable", "STAT_NAMES"]
