"""Attention and every per-row statistic from this project's compiled CPU kernel (issue 43).

:file:`kernels/attention_cpu.cpp` computes, per block of query rows, the scores with one batched GEMM, then in
one pass over each row (in cache) its maximum, ``exp(s − m)``, ``l = Σ e`` and ``t = Σ e·(s − m)``, then the
output with a second GEMM. So the statistics come exactly and almost for free: ``lse = m + log l``, entropy
``log l − t / l`` (two non-negative terms: nothing cancels, whatever the scores' size — the weakness of deriving it
from a fused op's log-sum-exp, :mod:`kernels.fused_cpu`) and sink mass ``e₀ / l``. It covers what
:func:`kernels.reference.blocked_attention` covers — causal and bidirectional attention, 2-D key padding, sliding
windows, KV caches and decode steps (queries are the last ``q_len`` positions), GQA/MQA without copying keys —
and computes in float32 (16-bit inputs are upcast, like the blocked path; float64 inputs stay on the blocked path).

The kernel is C++ against the installed torch's headers, built by the system C++ compiler the first time it is
needed (about 10 s on 2 cores) into a cache folder named by everything the binary depends on: the source, torch's
version, the compiler, its flags and this CPU's instruction-set flags (``-march=native``: a cache copied to another
CPU is rebuilt, never run). :func:`ensure` builds or loads it — in the background (the app, the library's first
model load: pages keep working on the other paths meanwhile) or waiting (``python -m inspector prepare``, the
tests). Where there is no compiler, the build fails, or ``INSPECTOR_COMPILED_CPU=0`` turns it off,
:func:`unavailable_reason` says why and the caller takes the fused or blocked path (:mod:`kernels.hf`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

import torch

from kernels.reference import StatName, check_attention_inputs

SOURCE = Path(__file__).with_name("attention_cpu.cpp")
SWITCH_ENV = "INSPECTOR_COMPILED_CPU"  # "0" turns the compiled kernel off
FOLDER_ENV = "INSPECTOR_KERNEL_DIR"  # where the built library is kept (default: the model cache's kernels folder)
LIBRARY_NAME = "libinspector_attention_cpu.so"
BUILD_TIMEOUT_S = 600
# Query rows per block: with every head of a block at once, the blocks' scores stay in cache and causal blocks
# skip the keys none of their rows sees (benchmarks/cpu_statistics.py; docs/BENCHMARKS.md, issue 43).
BLOCK_ROWS = 64


class _State:
    """The one library this process loads: whether it is ready, and otherwise why not."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ready = False
        self.reason = "the compiled kernel has not been built or loaded in this process (kernels.compiled_cpu.ensure)"
        self.thread: threading.Thread | None = None


_state = _State()


def _compiler() -> str | None:
    chosen = os.environ.get("CXX", "").strip()
    if chosen:
        return shutil.which(chosen)
    return next((found for name in ("g++", "c++", "clang++") if (found := shutil.which(name))), None)


def _cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def build_command(compiler: str, output: Path) -> list[str]:
    """The compiler call: the kernel as a shared library linked against the installed torch."""
    from torch.utils import cpp_extension

    includes = [f"-I{path}" for path in cpp_extension.include_paths()]
    libraries = cpp_extension.library_paths()
    links = [f"-L{path}" for path in libraries] + [f"-Wl,-rpath,{path}" for path in libraries]
    return [compiler, "-O3", "-std=c++20", "-fPIC", "-shared", "-march=native", "-fopenmp", "-w",
            f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}", *includes, str(SOURCE),
            *links, "-lc10", "-ltorch_cpu", "-o", str(output)]


def library_folder(root: Path, compiler: str) -> Path:
    """Where the library built by ``compiler`` lives under ``root``: a folder named by a hash of everything the
    binary depends on."""
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    digest = hashlib.sha256()
    for part in (SOURCE.read_bytes(), torch.__version__.encode(), version.encode(), _cpu_flags().encode(),
                 " ".join(build_command(compiler, Path("out"))).encode(), platform.machine().encode()):
        digest.update(part)
        digest.update(b"\0")
    return root / f"attention-cpu-{digest.hexdigest()[:16]}"


def build(root: Path) -> Path:
    """The library built under ``root``, built now unless it is there: one process or thread builds, the others
    wait on a file lock and find it. Raises :class:`Unavailable` with the reason where it cannot be built."""
    compiler = _compiler()
    if compiler is None:
        raise Unavailable("no C++ compiler (g++, c++ or clang++; or $CXX) is on PATH to build the compiled kernel")
    folder = library_folder(root, compiler)
    library = folder / LIBRARY_NAME
    if not library.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not library.is_file():
                partial = folder / f"{LIBRARY_NAME}.{os.getpid()}.partial"
                log = folder / "build.log"
                try:
                    done = subprocess.run(build_command(compiler, partial), capture_output=True, text=True,
                                          timeout=BUILD_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    partial.unlink(missing_ok=True)
                    raise Unavailable(f"building the compiled kernel took over {BUILD_TIMEOUT_S} s") from None
                log.write_text(done.stdout + done.stderr)
                if done.returncode != 0:
                    partial.unlink(missing_ok=True)
                    last = (done.stderr.strip().splitlines() or ["no message"])[-1][:200]
                    raise Unavailable(f"building the compiled kernel failed ({last}); the log is {log}")
                os.replace(partial, library)  # atomic: another process sees the whole library or none
    return library


class Unavailable(Exception):
    """Why the compiled kernel cannot be built (a sentence)."""


def _built(root: Path) -> bool:
    """Whether the library for this source, torch, compiler and CPU is built under ``root``."""
    compiler = _compiler()
    try:
        return compiler is not None and (library_folder(root, compiler) / LIBRARY_NAME).is_file()
    except (OSError, subprocess.SubprocessError):
        return False


def _settle(root: Path, *, locked: bool = False) -> None:
    """Build and load the library; set the state's ``ready``, or its ``reason`` (``locked``: the caller holds the
    state's lock)."""
    try:
        torch.ops.load_library(str(build(root)))
    except Unavailable as err:
        reason = str(err)
    except (OSError, RuntimeError, subprocess.SubprocessError) as err:
        reason = f"the compiled kernel could not be built or loaded ({type(err).__name__}: {str(err)[:200]})"
    else:
        with contextlib.nullcontext() if locked else _state.lock:
            _state.ready = True
        return
    with contextlib.nullcontext() if locked else _state.lock:
        _state.reason = reason


def ensure(root: Path, *, wait: bool) -> str | None:
    """Build (once per cache, under ``root``) and load the compiled kernel. ``wait=False`` builds in a background
    thread when the library is not built yet, so the caller goes on (its attention takes the other paths until the
    kernel is ready). Returns None once it is loaded, else why it is not (yet)."""
    if os.environ.get(SWITCH_ENV, "").strip() == "0":
        return f"{SWITCH_ENV}=0 turns the compiled kernel off"
    with _state.lock:
        if _state.ready:
            return None
        running = _state.thread
        if running is None and _built(root):  # built on this machine already: load it now, so every call of this
            _settle(root, locked=True)        # process (a census's first batch too) takes one path
            return None if _state.ready else _state.reason
        if running is None:
            _state.reason = "the compiled kernel is being built (about 10 s, once per machine)"
            running = _state.thread = threading.Thread(target=_settle, args=(root,), name="compile-attention-cpu",
                                                       daemon=True)
            running.start()
    if wait:
        running.join()
    with _state.lock:
        return None if _state.ready else _state.reason


def unavailable_reason(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> str | None:
    """Why the compiled kernel cannot compute this call, or None when it can."""
    if os.environ.get(SWITCH_ENV, "").strip() == "0":
        return f"{SWITCH_ENV}=0 turns the compiled kernel off"
    if not _state.ready:
        return _state.reason
    if not q.is_cpu:  # every layer of every forward asks: is_cpu costs a sixth of building q.device
        return f"the tensors are on {q.device.type}; the compiled kernel runs on the CPU only"
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return "autograd records this forward and the compiled kernel has no backward"
    if q.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return f"{q.dtype} inputs; the compiled kernel computes in float32"
    return None


def compiled_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    scale: float,
    key_padding_mask: torch.Tensor | None = None,
    window: int | None = None,
    stats: Sequence[StatName] = ("entropy", "lse", "sink"),
    block_rows: int = 0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """:func:`kernels.reference.blocked_attention`'s contract through the compiled kernel: ``out`` like ``q``
    (dtype included) and float32 ``(batch, heads, q_len)`` statistics. ``block_rows``: query rows per block (0: the
    kernel picks them so a block's scores stay in cache). Not differentiable: check :func:`unavailable_reason`
    first."""
    out, computed, _ = run(q, k, v, causal=causal, scale=scale, key_padding_mask=key_padding_mask, window=window,
                           stats=stats, block_rows=block_rows, with_weights=False)
    return out, computed


def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, scale: float,
        key_padding_mask: torch.Tensor | None, window: int | None, stats: Sequence[StatName], with_weights: bool,
        block_rows: int = 0) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor | None]:
    """:func:`compiled_attention`, and with ``with_weights`` every head's exact weights, float32 ``(batch, heads,
    q_len, k_len)``: each row's ``exp(s − m) / l``, written while the row's block is in cache (what
    :func:`kernels.reference.materialize_weights` would compute again from the log-sum-exp); None without."""
    check_attention_inputs(q, k, v, key_padding_mask, window, stats)
    reason = unavailable_reason(q, k, v)
    if reason is not None:
        raise ValueError(f"the compiled CPU kernel cannot run this call: {reason}")
    return launch(q, k, v, causal=causal, scale=scale, key_padding_mask=key_padding_mask, window=window, stats=stats,
                  with_weights=with_weights, block_rows=block_rows)


def launch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, scale: float,
           key_padding_mask: torch.Tensor | None, window: int | None, stats: Sequence[StatName], with_weights: bool,
           block_rows: int = 0) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor | None]:
    """:func:`run` for a caller that has already checked the inputs (``check_attention_inputs``) and
    :func:`unavailable_reason`: the attention function, once per layer of every forward, checks both itself."""
    if block_rows < 0:
        raise ValueError(f"block_rows must be 0 (the kernel picks) or positive; got {block_rows}")
    padding = None if key_padding_mask is None else key_padding_mask.to(device=q.device).contiguous()
    dtype = q.dtype
    # The kernel reads any strides (transformers passes transposed views); 16-bit inputs are upcast here.
    if dtype != torch.float32 or k.dtype != torch.float32 or v.dtype != torch.float32:
        q, k, v = q.float(), k.float(), v.float()
    out, lse, entropy, sink, weights = torch.ops.inspector_cpu.attention_stats(
        q, k, v, float(scale), bool(causal), window or 0, padding, block_rows, with_weights)
    computed = {"lse": lse, "entropy": entropy, "sink": sink}
    return (out if out.dtype == dtype else out.to(dtype), {name: computed[name] for name in stats},
            weights if with_weights else None)
