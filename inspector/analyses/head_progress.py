"""How far a head report (:func:`inspector.analyses.heads.head_report`) has got, for the Heads page's bar and its
label: the report's :data:`~inspector.base.progress.Progress` calls, with the caller's clock and the number of texts,
read as a share of the job, texts done, a rate and an ETA. A snapshot the page builds from each call, not a second
progress callback (:mod:`inspector.base.progress`: a job knows only done, total and a note; the clock is the
caller's).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReportProgress:
    """How far a head report has got, for a progress bar and its label: ``done`` of ``total`` work units (the
    numbers :func:`head_report` passes to its progress callback) over ``texts`` texts, ``elapsed`` seconds after
    it started.

    The units are the report's estimated cost (token-copies forwarded, see :func:`head_report`), counted over
    both passes, so :attr:`fraction` is the share of the whole job and the bar moves at an even pace. The label
    counts :attr:`texts_done` — the fraction in texts — so the bar and its count of texts always agree.
    """

    done: int
    total: int
    texts: int
    elapsed: float

    def __post_init__(self) -> None:
        if self.total <= 0 or not 0 <= self.done <= self.total:
            raise ValueError(f"ReportProgress: need 0 <= done <= total and total > 0, got {self.done} of {self.total}")
        if self.texts < 1 or self.elapsed < 0:
            raise ValueError(f"ReportProgress: need texts >= 1 and elapsed >= 0, got {self.texts} and {self.elapsed}")

    @property
    def fraction(self) -> float:
        """Share of the work done, in [0, 1]."""
        return self.done / self.total

    @property
    def texts_done(self) -> int:
        """Texts' worth of work done: the fraction in texts, rounded down (all texts only when everything is)."""
        return self.texts if self.done == self.total else min(self.texts - 1, int(self.fraction * self.texts))

    @property
    def rate(self) -> float | None:
        """Texts per second so far (texts' worth of work per second of elapsed time); None before any work."""
        if self.done == 0 or self.elapsed <= 0:
            return None
        return self.fraction * self.texts / self.elapsed

    @property
    def eta(self) -> float | None:
        """Seconds left if the rest goes at the pace so far; None before any work (no pace to go by)."""
        if self.done == 0:
            return None
        return self.elapsed * (self.total - self.done) / self.done

    def label_values(self) -> dict[str, str]:
        """The numbers a progress label shows, as text: ``percent`` ("40%"), ``done`` and ``n`` (texts' worth
        done, of how many), ``rate`` (texts/s) and ``eta`` (whole seconds left); "…" where not known yet."""
        rate, eta = self.rate, self.eta
        return {"percent": f"{int(100 * self.fraction)}%", "done": str(self.texts_done), "n": str(self.texts),
                "rate": "…" if rate is None else f"{rate:.2f}" if rate < 10 else f"{rate:.0f}",
                "eta": "…" if eta is None else f"{eta:.0f}"}
