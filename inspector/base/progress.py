"""The one progress contract for every long job (issue 26): the Heads report, the census, the Ground-truth
scoreboard, the attribution report and its adversarial search, the corpus agreement and Lesson 7's timings all
take a ``progress`` callback of this one type, and every page and command shows it the same way
(``views.progress_bar`` on a page, :func:`print_progress` on a command line).

``progress(done, total, note)``:

- ``done``, ``total``: work units finished so far and in the whole job, 0 ≤ done ≤ total and total > 0, so
  ``done / total`` is the share of the job a bar shows. The units are the job's own — texts, examples,
  optimiser steps, lengths timed, or (the Heads report) token-copies forwarded — and each job's docstring
  names them; ``done`` never goes down within a job.
- ``note``: one line in English saying where the job is, for a command line ("text 3 of 10", "adversarial
  search: step 40/500, best JSD 0.412 nats"). A page words its own label, in its language, from ``done`` and
  ``total``.

A job calls it as it goes, and a job that finishes makes its last call with done == total (a search that
converges early reports its whole budget as done), so a command line can end its line and a bar reach its end
there. A callback that raises stops the job at that call (the Heads page's Stop button, Ctrl-C in a census).

Three positional values, not a dataclass, because that is all a job knows: how long a job has taken is the
caller's clock (the Heads page's rate and ETA, :class:`inspector.analyses.head_progress.ReportProgress`), and a job
whose command line shows a rate says it in its note (the census).

Every job takes this one type, by this name — no alias, no other shape (a conversion's stages and the attribution
report's stages speak in percent through it). What merely looks like it is a different thing with its own name: a
run's place in the server's queue (:data:`inspector.serving.run_queue.OnWait`, ``(position, running)``), the words a
page's bar shows for a step (``views.progress_bar.ProgressLabel``, returning text), a page's status line
(``views.session.StatusLine``, which shows a stage, not a share of a job).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

Progress = Callable[[int, int, str], None]


def no_progress(done: int, total: int, note: str) -> None:
    """The :data:`Progress` that shows nothing: a job's default when no callback is given."""


def print_progress(done: int, total: int, note: str) -> None:
    """The command line's :data:`Progress`: ``note`` on one stderr line, rewritten in place (cleared to the end
    of the line on a terminal; followed by three spaces elsewhere, as a log shows it), ended with a newline once
    done == total."""
    clear = "\x1b[K" if sys.stderr.isatty() else "   "
    print(f"\r{note}{clear}", end="" if done < total else "\n", file=sys.stderr, flush=True)
