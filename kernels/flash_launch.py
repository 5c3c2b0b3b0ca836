"""Where the flash kernels of :mod:`kernels.flash` run and how they are launched: whether Triton can run here (a GPU,
the CPU interpreter, or neither — :class:`TritonUnavailableError` says what to do), the tile configurations each
kernel is compiled and tuned over (:data:`COMPILED_CONFIGS`), and the one thread-safe launcher (:data:`LAUNCHER`)
that builds each kernel once per mode, tunes once per shape bucket and runs the interpreter one launch at a time.

:mod:`kernels.flash` owns the attention contract (validation, the forward, the backward, the autograd wrapper,
materialised weights) and launches every kernel through :data:`LAUNCHER`; :mod:`kernels.flash_kernels` holds the
Triton kernels themselves; :mod:`kernels.flash_aot` compiles through this launcher for a named GPU
(:data:`_COMPILE_ONLY`). The module docstring of :mod:`kernels.flash` is the spec: what is supported, how it was
tested, known caveats.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch

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
# usual case; pruning (fitting_tiles) drops tiles that do not suit the input's size.
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


def next_pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def length_bucket(n: int) -> int:
    """Tuning is shared by lengths in the same power-of-two bucket (capped: long inputs tune alike)."""
    return min(next_pow2(max(1, n)), 8192)


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


def fitting_tiles(rows: int, cols: int) -> Callable[[KernelConfig], bool]:
    """Candidate tiles worth tuning for this input: none larger than it needs (rounded up to 16), and on long
    inputs none below 2048 elements (the small-input tiles: they do not win there, and each candidate costs a
    compile)."""
    rows_cap, cols_cap = max(16, next_pow2(rows)), max(16, next_pow2(cols))
    long_input = rows >= 1024 and cols >= 1024
    return lambda c: (c.block_m <= rows_cap and c.block_n <= cols_cap
                      and not (long_input and c.block_m * c.block_n < 2048))


def triton_cdiv(a: int, b: int) -> int:
    """⌈a / b⌉: the programs a grid needs to cover ``a`` in blocks of ``b``."""
    return -(-a // b)
