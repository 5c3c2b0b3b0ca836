"""Census numbers that the intra-op thread count cannot change (issue 41: the local and Ray engines give identical
exemplars, so they must give identical float32 values).

torch's CPU matrix products run on MKL, and MKL splits a product differently for different thread counts: the same
batch measured by MiniLM with 1 and 2 torch threads differs by up to 6.7e-6 in a statistic and 3.8e-5 in an
exemplar value (400 census texts, torch 2.13.0+cpu, MKL 2024.2) — enough to move a rounded value across a rounding
step. The local engine runs with the process's threads, a Ray actor with its share of the cores.

MKL's strict conditional numerical reproducibility mode (``MKL_CBWR_STRICT``: "bitwise identical results regardless
of the number of threads" for ?gemm) removes that: with it, 1 and 2 threads gave the same bits as 1 thread without
it, at no measurable cost (400 texts: 1.02 s with 2 threads either way). It can only be chosen before a process's
first MKL call, so :func:`strict_cpu_math` asks for it at the start of a census and of each Ray actor; where MKL
ran before in non-strict mode (a test session, the app), or where torch has no MKL to ask, :func:`census_threads`
measures with one intra-op thread instead (1.6 s for those 400 texts on 2 cores: 1.6×), which gives the same bits.

Caveats: MKL's "auto" branch follows the CPU's instruction set, so machines of different CPUs (a heterogeneous Ray
cluster) may still differ; GPU kernels are not covered (same batches, same kernels, but no promise is made)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
from collections.abc import Iterator
from pathlib import Path

import torch

_MKL_CBWR_STRICT = 0x10000  # mkl_cbwr.h
_MKL_CBWR_ALL = -1  # ask for every setting


@functools.cache
def _mkl() -> ctypes.CDLL | None:
    """torch's own MKL (linked into libtorch_cpu), or None where this torch has none to ask."""
    if not torch.backends.mkl.is_available():
        return None
    try:
        library = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
        library.mkl_serv_cbwr_get.restype = library.mkl_serv_cbwr_set.restype = ctypes.c_int
        library.mkl_serv_cbwr_get_auto_branch.restype = ctypes.c_int
        return library
    except (OSError, AttributeError):  # another platform's library name, or an MKL without these entry points
        return None


def strict_cpu_math() -> bool:
    """Ask MKL for its strict mode (on this CPU's own branch) unless it is on already; whether it is on now."""
    mkl = _mkl()
    if mkl is None:
        return False
    if mkl.mkl_serv_cbwr_get(_MKL_CBWR_ALL) & _MKL_CBWR_STRICT:
        return True
    # Refused (MKL_CBWR_ERR_MODE_CHANGE_FAILURE) once this process has made an MKL call.
    return mkl.mkl_serv_cbwr_set(mkl.mkl_serv_cbwr_get_auto_branch() | _MKL_CBWR_STRICT) == 0


@contextlib.contextmanager
def census_threads(device: torch.device | str) -> Iterator[None]:
    """Measure on ``device`` with numbers no thread count changes: as it is where MKL's strict mode is on (or the
    device is not the CPU), else with one intra-op thread, the process's count restored afterwards."""
    if torch.device(device).type != "cpu" or strict_cpu_math():
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
