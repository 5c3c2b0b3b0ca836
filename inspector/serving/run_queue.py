"""A per-process cap on concurrent heavy runs (a model forward), with a first-come queue whose visitors see their
place in it — so a class opening one link at once waits in line instead of piling up forwards that share the
cores and all finish late.

One :class:`RunQueue` per server process (:func:`process_queue`), shared by every session's script thread. A run
holds a *slot* while it computes; at most ``slots`` are held at once; the others wait in arrival order. The queue
has a length cap and a wait limit: a run that would be queued past ``max_waiting``, or that waits longer than
``max_wait_s``, is refused with :class:`ServerBusyError` — one line for the visitor rather than a page that never
finishes.

How it is used: every run takes its slot through :func:`inspector.serving.run.run` (at once: a command, the Inspect
page's cache miss) or :meth:`inspector.serving.run.Plan.running` (as a page job's first forward starts, so a job
served from caches never queues) — :meth:`RunQueue.slot` is the one way in.

Environment (read by :meth:`QueuePolicy.from_env`; hosted defaults apply with ``INSPECTOR_HOSTED=1``, locally no
cap unless set):

- ``INSPECTOR_MAX_CONCURRENT_RUNS``: slots per process (hosted default :data:`HOSTED_SLOTS`).
- ``INSPECTOR_MAX_QUEUED_RUNS``: runs that may wait at once (hosted default :data:`HOSTED_MAX_WAITING`).
- ``INSPECTOR_QUEUE_WAIT_S``: seconds a run may wait for its slot (hosted default :data:`HOSTED_MAX_WAIT_S`).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

from inspector.base.errors import InspectorError
from inspector.base.i18n import Notice
from inspector.serving.hosting import positive_setting

# What a run waiting in line hears, ``on_wait(position, running)`` (position 1 = next; 0 once a run that waited holds
# its slot): a place in a queue, not a job's :data:`~inspector.base.progress.Progress` — it has no total and no note.
OnWait = Callable[[int, int], None]

# Two forwards at once on a 2-core replica keep both cores busy without each getting half a core for twice as long;
# more queue. A class of 60 opening the bundled model's page waits ~60 × 0.2 s / 2 in the worst case.
HOSTED_SLOTS = 2
HOSTED_MAX_WAITING = 64
HOSTED_MAX_WAIT_S = 120.0
# How often a waiting run wakes to report its position and let Streamlit stop it (a rerun, a closed tab).
POLL_S = 0.25
_TRUE = ("1", "true", "yes", "on")


class ServerBusyError(InspectorError):
    """The run queue is full, or a run waited past the limit. ``args[0]`` is a :class:`Notice` (``queue.busy`` or
    ``queue.waited_too_long``), so a page shows it in the visitor's language."""


@dataclass(frozen=True)
class QueuePolicy:
    """``slots``: concurrent heavy runs (None = no cap); ``max_waiting``: runs that may wait; ``max_wait_s``: how
    long one may."""

    slots: int | None = None
    max_waiting: int = HOSTED_MAX_WAITING
    max_wait_s: float = HOSTED_MAX_WAIT_S

    def __post_init__(self) -> None:
        if self.slots is not None and self.slots < 1:
            raise ValueError(f"QueuePolicy.slots must be ≥ 1 or None; got {self.slots}")
        if self.max_waiting < 0 or self.max_wait_s <= 0:
            raise ValueError(f"QueuePolicy needs max_waiting ≥ 0 and max_wait_s > 0; got {self.max_waiting}, "
                             f"{self.max_wait_s}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> QueuePolicy:
        hosted = environ.get("INSPECTOR_HOSTED", "").strip().lower() in _TRUE
        slots = positive_setting(environ, "INSPECTOR_MAX_CONCURRENT_RUNS", int, "2")
        return cls(slots=slots or (HOSTED_SLOTS if hosted else None),
                   max_waiting=positive_setting(environ, "INSPECTOR_MAX_QUEUED_RUNS", int, "2") or HOSTED_MAX_WAITING,
                   max_wait_s=positive_setting(environ, "INSPECTOR_QUEUE_WAIT_S", float, "2") or HOSTED_MAX_WAIT_S)


class _Holder(threading.local):
    """Per thread: whether it holds a slot (nested heavy calls reuse it)."""

    holding = False


class RunQueue:
    """At most ``policy.slots`` holders at once; the rest wait first come, first served (see the module docstring).
    Thread-safe; one per process."""

    def __init__(self, policy: QueuePolicy):
        self.policy = policy
        self._lock = threading.Condition()
        self._running = 0
        self._waiting: deque[object] = deque()
        self._local = _Holder()

    @property
    def running(self) -> int:
        return self._running

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _free(self) -> bool:
        return self.policy.slots is None or self._running < self.policy.slots

    @contextmanager
    def slot(self, on_wait: OnWait | None = None) -> Iterator[None]:
        """Hold a slot for the body. Free and nobody waiting: at once. Otherwise wait in line, calling
        ``on_wait(position, running)`` (position 1 = next) on every wake-up. A thread that already holds a slot
        passes through. Raises :class:`ServerBusyError` past ``max_waiting`` or ``max_wait_s``."""
        if self._local.holding:
            yield
            return
        ticket = object()
        with self._lock:
            if self._free() and not self._waiting:
                self._running += 1
                ticket = None
            elif len(self._waiting) >= self.policy.max_waiting:
                raise ServerBusyError(Notice("queue.busy", waiting=len(self._waiting)))
            else:
                self._waiting.append(ticket)
        if ticket is not None:
            self._wait_turn(ticket, on_wait)
        self._local.holding = True
        try:
            yield
        finally:
            self._local.holding = False
            with self._lock:
                self._running -= 1
                self._lock.notify_all()

    def _wait_turn(self, ticket: object, on_wait: OnWait | None) -> None:
        started = time.monotonic()
        try:
            while True:
                with self._lock:
                    if self._waiting[0] is ticket and self._free():
                        self._waiting.popleft()
                        self._running += 1
                        self._lock.notify_all()
                        return
                    position, running = self._waiting.index(ticket) + 1, self._running
                if time.monotonic() - started > self.policy.max_wait_s:
                    raise ServerBusyError(Notice("queue.waited_too_long", seconds=round(self.policy.max_wait_s)))
                if on_wait is not None:
                    on_wait(position, running)  # may raise: Streamlit stops a script here on a rerun or a closed tab
                with self._lock:
                    self._lock.wait(POLL_S)
        except BaseException:
            with self._lock:
                if ticket in self._waiting:
                    self._waiting.remove(ticket)
                    self._lock.notify_all()
            raise


@lru_cache(maxsize=1)
def process_queue() -> RunQueue:
    """This server process's queue, configured from the environment once."""
    return RunQueue(QueuePolicy.from_env())

