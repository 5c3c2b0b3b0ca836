"""How far a head report (:func:`inspector.analyses.heads.head_report`) has got, for the Heads page's bar and its
label: the report's :data:`~inspector.base.progress.Progress` calls, with the caller's clock and the number of texts,
read as a share of the job, texts done, a rate and an ETA. A snapshot the page builds from each call, not a second
progress callback (:mod:`inspector.base.progress`: a job knows only done, total and a note; the clock is the
caller's). Also the report's own side of those calls: what its work is (:class:`WorkPlan`, in layers run per
token) and how much is done (:class:`WorkCounter`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inspector.analyses.head_importance import EMBEDDING_DIRECTIONS
from inspector.base.progress import Progress
from inspector.core.loading import LoadedModel

# A forward and backward costs about this many forwards of the same batch (DESIGN.md: backward 2.5× forward).
BACKWARD_COST = 3


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


@dataclass(frozen=True)
class WorkPlan:
    """What :func:`~inspector.analyses.heads.head_report` runs: every text's tokens (``lengths``), the L × H
    ``heads``, the pairs ablated together, the pruning ``steps`` (heads removed, from 0 to all), and the work of
    each text's two passes per token (``first_pass``, ``second_pass``, in layers run; ``total`` over all texts)
    that weighs the progress."""

    lengths: list[int]
    heads: int
    pair_count: int
    steps: np.ndarray
    first_pass: int
    second_pass: int

    @property
    def total(self) -> int:
        return sum(self.lengths) * (self.first_pass + self.second_pass)


def work_plan(loaded: LoadedModel, lengths: list[int], pairs: int, pruning_step: float) -> WorkPlan:
    """The :class:`WorkPlan` of a head report of ``loaded`` over texts of ``lengths`` tokens."""
    info = loaded.info
    layers, heads = info.num_layers, info.num_heads
    n = layers * heads
    pair_count = min(pairs, n * (n - 1) // 2)
    steps = np.unique(np.round(np.arange(0.0, 1.0 + 1e-9, pruning_step) * n).astype(np.int64))
    if steps[-1] != n:
        steps = np.append(steps, n)
    # Work per token, in layers run (a copy running every layer counts L): the plain forward; one copy per head
    # ablated, each running only the layers from its head's on when the model can resume (H · (L + … + 1)); the
    # gated forward and its backward (one per direction for an embedding model, 1 otherwise — not known before
    # the first output, so estimated as the larger); then each pair ablated together and each pruning step but
    # the first, every layer each. In layers, not copies, so the progress can move after each batched forward.
    ablation_layers = heads * layers * (layers + 1) // 2 if loaded.can_resume else n * layers
    first_pass = layers + ablation_layers + layers * (1 + (BACKWARD_COST - 1) * EMBEDDING_DIRECTIONS)
    return WorkPlan(lengths=lengths, heads=n, pair_count=pair_count, steps=steps,
                    first_pass=first_pass, second_pass=(pair_count + len(steps) - 1) * layers)


class WorkCounter:
    """The work done so far (in :class:`WorkPlan` units), told to the report's :data:`Progress` at each advance."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0

    def advance(self, units: int, note: str) -> None:
        self.done += units
        self.progress(self.done, self.total, f"{note} ({100 * self.done / self.total:.0f}% of the work)")
