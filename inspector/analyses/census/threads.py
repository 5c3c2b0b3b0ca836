"""Census numbers that the intra-op thread count cannot change (issue 41: the local and Ray engines give identical
exemplars, so they must give identical float32 values).

torch's CPU matrix products run on MKL, and MKL splits a product differently for different thread counts: the same
batch measured by MiniLM with 1 and 2 torch threads differs by up to 6.7e-6 in a statistic and 3.8e-5 in an
exemplar value (400 census texts, torch 2.13.0+cpu, MKL 2024.2) — enough to move a rounded value across a rounding
step. The local engine runs with the process's threads, a Ray actor with its share of the cores.

MKL's strict conditional numerical reproducibility mode (``MKL_CBWR_STRICT``: "bitwise identical results regardless
of the number of threads" for ?gemm) removes that, at no measurable cost (400 texts: 1.02 s with 2 threads either
way). But it is another computation: at one thread it gave the same bits as plain MKL on one batching of 400 texts
and not on another (a third of the texts of one 100-text shard moved by up to 6e-7). So a census picks one of two
modes and every process that measures for it uses the same:

- **strict** — :func:`ask_strict_cpu_math` turns the mode on; it can only do so before a process's first MKL call,
  so :func:`inspector.analyses.census.run.census` asks at its start, before loading the model (the command line
  gets it), and a Ray actor asks before loading its copy;
- **one thread** — where MKL ran before in this process in plain mode (a test session, the app), or torch has no
  MKL to ask: :func:`census_threads` measures with one intra-op thread (those 400 texts: 1.6 s on 2 cores, 1.6×),
  and the Ray actors are told to stay in plain mode, so they measure with one thread too.

Caveats: MKL's "auto" branch follows the CPU's instruction set, so machines of different CPUs (a heterogeneous Ray
cluster) may still differ; a run resumed in a process of the other mode measures its shards in that mode (the
manifest does not record it); GPU kernels are not covered (same batches, same kernels, but no promise is made)."""

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


def strict_cpu_math_on() -> bool:
    """Whether MKL's strict mode is on in this process (False where torch has no MKL to ask)."""
    mkl = _mkl()
    return mkl is not None and bool(mkl.mkl_serv_cbwr_get(_MKL_CBWR_ALL) & _MKL_CBWR_STRICT)


def ask_strict_cpu_math() -> bool:
    """Turn MKL's strict mode on (on this CPU's own branch) unless it is on already; whether it is on now. Refused
    (MKL_CBWR_ERR_MODE_CHANGE_FAILURE) once this process has made an MKL call in plain mode."""
    if strict_cpu_math_on():
        return True
    mkl = _mkl()
    return mkl is not None and mkl.mkl_serv_cbwr_set(mkl.mkl_serv_cbwr_get_auto_branch() | _MKL_CBWR_STRICT) == 0


@contextlib.contextmanager
def census_threads(device: torch.device | str) -> Iterator[None]:
    """Measure on ``device`` with numbers no thread count changes: as it is where MKL's strict mode is on (or the
    device is not the CPU), else with one intra-op thread, the process's count restored afterwards."""
    if torch.device(device).type != "cpu" or strict_cpu_math_on():
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
