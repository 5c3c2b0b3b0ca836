"""A deadline for a whole job (a Heads report, an attribution run, the lessons, a comparison, a scoreboard,
a generation): one instant, held in a context variable, that every forward inside the job honours and that the
job's progress calls check (issue 33, item 1).

A single forward already takes its own ``deadline_s`` (:func:`inspector.core.forward.forward`); a long job is
hundreds of forwards, each well inside any deadline. :func:`job_deadline` sets the job's instant for the code
inside its ``with`` block: every :func:`~inspector.core.forward.forward` it runs stops as an attention layer
starts past that instant, and :func:`check_deadline` — called from a job's progress callback between its steps,
where backward passes and NumPy work happen — stops it there. Both raise :class:`DeadlineExceededError` with
one line naming the job and the seconds it was given.

Cooperative: nothing is interrupted mid-layer, so a job overruns by at most one layer or one step. A context
variable, not a global: each Streamlit session runs its script in its own thread, and one session's deadline
must not stop another's job.

Admission (issue 32): a job may also be given ``admit``, a context manager factory — on a hosted server, a slot of
the process's run queue (:mod:`inspector.serving.run_queue`). It is entered lazily, by :func:`admit_job` as the
job's first forward starts, and left when the job's block ends: a job whose results all come from a cache never
queues, one that computes holds a slot for the whole job. The job's deadline moves by the time it waited for
admission, so time spent waiting in line (bounded by the queue's own limit) is not taken from the run's deadline —
and only that: the job's own work before its first forward (tokenising a corpus, planning) still counts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from inspector.base.errors import DeadlineExceededError
from inspector.base.i18n import Notice


@dataclass(frozen=True)
class JobDeadline:
    """``at``: the ``time.monotonic()`` instant past which the job stops; ``seconds``: what it was given;
    ``job``: its name in the message ("the Heads report")."""

    at: float
    seconds: float
    job: str

    def __post_init__(self) -> None:
        if not self.seconds >= 0:
            raise ValueError(f"JobDeadline.seconds must be 0 or more; got {self.seconds}")

    def message(self, where: str) -> str:
        return (f"{self.job} did not finish within the {self.seconds:g} s this server gives one request (stopped "
                f"{where}); the server may be busy or the text long — try again, shorten the text or ask for less, "
                "or run the app on your own machine (make app) for long jobs")

    def error(self, where: str) -> DeadlineExceededError:
        """The error that stops the job: :meth:`message` for the CLI and logs, and a notice for a page (without
        ``where``, which names the code's step). ``job`` may be a :class:`Notice` (a job's catalogue name)."""
        return DeadlineExceededError(self.message(where),
                                     notice=Notice("error.deadline", job=self.job, seconds=f"{self.seconds:g}"))


@dataclass
class _Admission:
    """A job's admission, mutable while the job runs: the factory, what it entered, and the deadline to restart."""

    admit: Callable[[], AbstractContextManager]
    deadline: JobDeadline | None
    entered: ExitStack = field(default_factory=ExitStack)
    admitted: bool = False


_JOB: ContextVar[JobDeadline | None] = ContextVar("inspector_job_deadline", default=None)
_ADMISSION: ContextVar[_Admission | None] = ContextVar("inspector_job_admission", default=None)


@contextmanager
def job_deadline(seconds: float | None, job: str, admit: Callable[[], AbstractContextManager] | None = None, *,
                 until: JobDeadline | None = None) -> Iterator[JobDeadline | None]:
    """Inside the block, every forward and every :func:`check_deadline` stops past ``seconds`` from now
    (None: no deadline — the block runs as it would without it). A deadline already set by an outer block
    stays if it comes sooner. ``admit``: entered at the job's first forward and left when the block ends (see
    the module docstring); None: the job starts at once. ``until``: the deadline of an earlier block of the same
    job, kept (its instant and its seconds) — a job that draws between its parts does so outside both blocks, and
    its second part ends when the first would have (None: a new deadline from now)."""
    if until is not None and seconds is not None:
        mine = JobDeadline(at=until.at, seconds=until.seconds, job=job)
    else:
        mine = None if seconds is None else JobDeadline(at=time.monotonic() + seconds, seconds=seconds, job=job)
    outer = _JOB.get()
    token = _JOB.set(outer if mine is None or (outer is not None and outer.at <= mine.at) else mine)
    admission = None if admit is None else _Admission(admit=admit, deadline=mine)
    admission_token = _ADMISSION.set(admission) if admission is not None else None
    try:
        with admission.entered if admission is not None else ExitStack():
            yield _JOB.get()
    finally:
        if admission_token is not None:
            _ADMISSION.reset(admission_token)
        _JOB.reset(token)


def admit_job() -> None:
    """Enter the current job's admission if it has one and has not yet (a forward calls this as it starts); may
    wait, and raises what the admission raises (a full queue). The job's deadline then moves by the time it waited
    (a restart from now would also forgive the work done before the first forward: a hosted sweep saw Heads corpus
    runs end 0.4 s past their deadline, the corpus's tokenising)."""
    admission = _ADMISSION.get()
    if admission is None or admission.admitted:
        return
    started = time.monotonic()
    admission.entered.enter_context(admission.admit())
    waited = time.monotonic() - started
    admission.admitted = True
    if admission.deadline is not None and _JOB.get() is admission.deadline:
        restarted = JobDeadline(at=admission.deadline.at + waited,
                                seconds=admission.deadline.seconds, job=admission.deadline.job)
        admission.deadline = restarted
        _JOB.set(restarted)  # undone with the job's own token when its block ends


def current_deadline() -> JobDeadline | None:
    """The deadline of the job this code runs in, or None."""
    return _JOB.get()


def check_deadline(where: str = "between two steps") -> None:
    """Raise :class:`DeadlineExceededError` when the current job's deadline has passed (no-op outside a job)."""
    deadline = _JOB.get()
    if deadline is not None and time.monotonic() > deadline.at:
        raise deadline.error(where)
