"""Compile the flash kernels for a named GPU without one: what :mod:`kernels.flash` *would* launch, built to a cubin.

Inside :func:`compile_only`, every kernel launch of :func:`kernels.flash.flash_attention`,
:func:`kernels.flash.materialize_weights` and the backward compiles instead of running — with the same argument
specialisation (16-byte alignment, strides equal to 1) a real launch on that GPU would get, because it goes
through Triton's own argument binder — for the forced tile configuration or, without one, for every candidate
the tuner would try. Inputs may be CPU tensors. Triton's wheel ships ``ptxas``, so this reaches machine code.

It catches what the CPU interpreter cannot: the compiler's typing rules, ``tl.dot`` shape limits, register and
shared-memory budgets. It is used by ``tests/test_flash.py`` (sm_90, the H200's architecture) and can pre-fill
Triton's on-disk cache before a GPU run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kernels.flash_launch import _COMPILE_ONLY, KernelConfig, launch_kwargs

# Dynamic shared memory one block may use on sm_90 (H100/H200): 227 KiB.
SM90_SHARED_MEMORY_BYTES = 232448


@dataclass(frozen=True)
class CompiledVariant:
    """One kernel variant compiled ahead of time. ``shared``: bytes of shared memory per block."""

    kernel: str
    config: KernelConfig
    constexprs: tuple
    shared: int
    num_warps: int


@contextlib.contextmanager
def compile_only(arch: int = 90, warp_size: int = 32,
                 kernels: Sequence[str] | None = None) -> Iterator[list[CompiledVariant]]:
    """Within the block, kernel launches compile for CUDA ``sm_{arch}`` and are recorded; nothing runs.

    ``kernels``: compile only these kernels (names as in ``kernels.flash_launch.COMPILED_CONFIGS``); others are skipped.
    Compiled kernels land in Triton's on-disk cache under the key a real launch computes (same source, target,
    options and specialisation), so a later launch on that GPU loads instead of compiling.
    """
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    target = GPUTarget("cuda", arch, warp_size)
    backend = make_backend(target)
    compiled: list[CompiledVariant] = []

    def compile_launch(name, kernel, config: KernelConfig, args, constexprs) -> None:
        if kernels is not None and name not in kernels:
            return
        # The two options JITFunction.run adds before binding (triton 3.7), so the cache key matches a launch's.
        kwargs = dict(launch_kwargs(kernel, config, constexprs), debug=bool(knobs.runtime.debug),
                      instrumentation_mode=knobs.compilation.instrumentation_mode)
        binder = create_function_from_signature(kernel.signature, kernel.params, backend)
        bound_args, specialization, options = binder(*args, **kwargs)
        options, signature, constants, attrs = kernel._pack_args(backend, kwargs, bound_args, specialization,
                                                                 options)
        source = triton.compiler.ASTSource(kernel, signature, constants, attrs)
        result = triton.compile(source, target=target, options=options.__dict__)
        compiled.append(CompiledVariant(kernel=name, config=config, constexprs=tuple(sorted(constexprs.items())),
                                        shared=int(result.metadata.shared), num_warps=int(result.metadata.num_warps)))

    token = _COMPILE_ONLY.set(compile_launch)
    try:
        yield compiled
    finally:
        _COMPILE_ONLY.reset(token)
