"""The process's heap, kept for the next forward (issue 43).

A forward allocates and frees the same sizes over and over. glibc's malloc gives freed memory at the top of its heap
back to the system once more than its trim threshold lies free there, and the next forward's allocations of the same
sizes then fault every page in again: a 128-token MiniLM capture took about 700 page faults (0.5–0.7 ms of a 23 ms
forward on one thread) that transformers' plain SDPA forward in the same process did not, and a 2,048-token SmolLM2
capture about 100,000 for the hidden states it keeps (130 ms of 2 s). ``M_TOP_PAD`` keeps up to :data:`TOP_PAD_BYTES`
of it mapped instead, so the next forward reuses it (none of those faults are left; a block over 32 MiB, which glibc
maps apart, still faults in: layer 0's weights at 2,048 tokens).

Setting the top pad also stops glibc raising its mmap threshold as large blocks are freed, which it otherwise does up
to 32 MiB: frozen wherever the process's history had left it, blocks above it were mapped and faulted in at every use
(SmolLM2 at 2,048 tokens: 80,000 faults a capture in a process that had loaded MiniLM first, none in another). So
``M_MMAP_THRESHOLD`` is set to those 32 MiB first (:data:`MMAP_THRESHOLD_BYTES`).

The memory kept is what the last forward used and the next one takes again, so a server's peak does not grow. The
first model load applies it (:func:`inspector.core.loading.load_model`); glibc only — elsewhere nothing changes — and
``INSPECTOR_KEEP_HEAP=0`` leaves the allocator as it is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

TOP_PAD_BYTES = 256 * 2**20  # SmolLM2's hidden states at 2,048 tokens: 141 MiB
SWITCH_ENV = "INSPECTOR_KEEP_HEAP"  # "0" leaves glibc's malloc as it is
MMAP_THRESHOLD_BYTES = 32 * 2**20  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit): bigger blocks are mapped apart
_M_TOP_PAD = -2  # glibc's malloc.h
_M_MMAP_THRESHOLD = -3

_lock = threading.Lock()
_applied: list[bool] = []  # [whether mallopt took it], once tried


def keep_freed_heap() -> bool:
    """Ask glibc's malloc to keep :data:`TOP_PAD_BYTES` of freed heap mapped (once per process): True when it took
    the setting, False where it is switched off, not glibc, or refused."""
    with _lock:
        if not _applied:
            _applied.append(_apply())
        return _applied[0]


def _apply() -> bool:
    if os.environ.get(SWITCH_ENV, "").strip() == "0":
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # no C library to open, or one without mallopt (macOS, musl)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # The threshold first (a glibc whose heaps are smaller refuses it and keeps its own), then the pad, which would
    # otherwise freeze the threshold wherever the process's history left it.
    mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    return mallopt(_M_TOP_PAD, TOP_PAD_BYTES) == 1
