"""One plan per long job, so every page stays inside a hosted instance's deadline and memory budget (issue 33,
item 1): Heads, Attribution, Lessons, Compare, Ground truth and Generate.

Before a job starts, :func:`plan_job` reads what it was asked (its texts, and how many corpus texts, examples or
new tokens) and the instance's :class:`~inspector.serving.hosting.HostingPolicy`, and either refuses it in one
line (:class:`OverBudgetError`: a text past the job's token limit for this model) or shrinks it with a
:class:`~inspector.base.i18n.Notice` (fewer corpus texts, examples or new tokens). It is one part of the one
planner, :func:`inspector.serving.run.plan`, which runs the job (:func:`inspector.serving.run.run`: the run slot and
the deadline).

The token limit of a job on a model is the smaller of

- time: :data:`~inspector.base.limits.HOSTED_JOB_TOKENS` for the bundled MiniLM, scaled by
  √(reference parameters / the model's parameters) — an estimate from single runs (docs/BENCHMARKS.md "Hosted
  jobs"); the deadline is what guarantees the bound;
- memory: the longest n whose :data:`~inspector.base.limits.JOB_MEMORY_COPIES` copies of every layer's n×n
  float32 attention fit :attr:`HostingPolicy.job_memory_bytes`;
- the model's own positions.

Outside hosted mode nothing is capped (a local ``make app`` runs anything) and the deadline is the policy's —
none unless ``INSPECTOR_DEADLINE_S`` is set.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from inspector.base.errors import OverBudgetError
from inspector.base.i18n import DEFAULT_LANGUAGE, Notice, t
from inspector.base.limits import (
    HOSTED_CORPUS_TOKENS,
    HOSTED_GENERATE_NEW_TOKENS,
    HOSTED_GROUNDTRUTH_EXAMPLES,
    HOSTED_JOB_REFERENCE_PARAMETERS,
    HOSTED_JOB_TOKENS,
    JOB_MEMORY_COPIES,
)
from inspector.core.budget import count_tokens, tokens_within
from inspector.core.loading import LoadedModel, ModelInfo
from inspector.core.model_folders import model_name
from inspector.serving.hosting import HostingPolicy

JobKind = Literal["heads", "attribution", "lessons", "compare", "groundtruth", "generate", "mechanism", "roles"]
JOB_KINDS: tuple[str, ...] = get_args(JobKind)
# The job's name in a message (English, as every library error; the catalogue's f"job.{kind}" in a page's refusal).
JOB_NAMES = {kind: t(f"job.{kind}", DEFAULT_LANGUAGE) for kind in JOB_KINDS}


def job_token_limit(kind: str, info: ModelInfo, policy: HostingPolicy) -> int | None:
    """The longest text ``kind`` may read on ``info`` under ``policy`` (module docstring); None = no limit (not
    hosted, or a job with no text of the reader's, like the scoreboard)."""
    if not policy.hosted or kind not in HOSTED_JOB_TOKENS:
        return None
    scale = min(1.0, math.sqrt(HOSTED_JOB_REFERENCE_PARAMETERS / max(info.num_parameters, 1)))
    by_time = max(16, int(HOSTED_JOB_TOKENS[kind] * scale))
    by_memory = tokens_within(info, policy.job_memory_bytes, JOB_MEMORY_COPIES[kind])
    return max(1, min(by_time, by_memory, info.max_positions))


def count_limit(kind: str, policy: HostingPolicy) -> int | None:
    """The most examples (``groundtruth``) or new tokens (``generate``) one request of ``kind`` may ask for under
    ``policy`` — a page's widget range; None = no limit (not hosted, or a job without such a count)."""
    if not policy.hosted:
        return None
    return {"groundtruth": HOSTED_GROUNDTRUTH_EXAMPLES, "generate": HOSTED_GENERATE_NEW_TOKENS}.get(kind)


@dataclass(frozen=True)
class JobPlan:
    """What one job may do, decided before it starts.

    ``kind``: the job (:data:`JobKind`). ``deadline_s``: seconds it may run (None = none). ``max_tokens``: the
    longest text it may read (None = no limit; every text given was within it). ``keep``: how many of the
    requested items (corpus texts, examples, new tokens) it runs — ``requested`` when nothing was cut, None when
    the job has no such count. ``notice``: why fewer were kept, or None when nothing was cut.
    """

    kind: str
    deadline_s: float | None
    max_tokens: int | None
    requested: int | None = None
    keep: int | None = None
    notice: Notice | None = None

    def __post_init__(self) -> None:
        if self.kind not in (*JOB_KINDS, "inspect", "census"):
            raise ValueError(f"JobPlan.kind {self.kind!r} is not one of {JOB_KINDS}, 'inspect' or 'census'")
        if (self.requested is None) != (self.keep is None):
            raise ValueError("JobPlan.keep is set exactly when a count was requested")
        if self.keep is not None and not 0 < self.keep <= self.requested:
            raise ValueError(f"JobPlan.keep {self.keep} is not in 1..requested ({self.requested})")
        if (self.notice is not None) != (self.keep is not None and self.keep < self.requested):
            raise ValueError("JobPlan.notice must explain exactly the plans that cut the request")

    def kept(self, items: Sequence) -> Sequence:
        """``items`` cut to :attr:`keep` (all of them when nothing was cut)."""
        return items if self.keep is None else items[:self.keep]


def plan_job(policy: HostingPolicy, kind: str, loaded: LoadedModel, texts: Sequence[str] = (), *,
             count: int | None = None, lengths: Sequence[int] | None = None) -> JobPlan:
    """Plan ``kind`` on ``loaded`` for ``texts`` under ``policy`` (module docstring). ``count``: the corpus
    texts, examples or new tokens asked for (None: the job has no such count; for a Heads corpus run it is
    ``len(texts)``). ``lengths``: the texts' token counts when the caller already tokenised them
    (:func:`inspector.serving.run.plan`), so they are not tokenised twice.

    Raises :class:`OverBudgetError` — before anything runs — when a text is longer than the job's token limit,
    and :class:`InvalidTextError` for a text the model cannot read at all."""
    if kind not in JOB_KINDS:
        raise ValueError(f"plan_job: unknown job {kind!r}; one of {JOB_KINDS}")
    info = loaded.info
    limit = job_token_limit(kind, info, policy)
    if limit is None:
        lengths = []
    elif lengths is None:
        lengths = [count_tokens(loaded, text) for text in texts]
    else:
        lengths = list(lengths)
    if kind == "heads" and count is not None and count > 1:
        return _plan_corpus(policy, loaded, lengths, count, limit)
    for length in lengths:
        if length > limit:
            # A Notice: its English text for the CLI and logs, its key for a page in the reader's language.
            raise OverBudgetError(Notice("notice.job_refused", length=f"{length:,}", job=Notice(f"job.{kind}"),
                                         limit=f"{limit:,}", model=model_name(info.name),
                                         seconds=f"{policy.deadline_s or 0:g}",
                                         mib=f"{policy.job_memory_bytes / 2**20:,.0f}"))
    keep, notice = count, None
    if policy.hosted and count is not None:
        if kind == "groundtruth" and count > HOSTED_GROUNDTRUTH_EXAMPLES:
            keep = HOSTED_GROUNDTRUTH_EXAMPLES
            notice = Notice("notice.job_examples", asked=count, kept=keep)
        if kind == "generate":
            room = max(1, min(HOSTED_GENERATE_NEW_TOKENS, (limit or count) - max(lengths, default=0)))
            if count > room:
                keep = room
                notice = Notice("notice.job_new_tokens", asked=count, kept=keep)
    return JobPlan(kind=kind, deadline_s=policy.deadline_s, max_tokens=limit, requested=count, keep=keep,
                   notice=notice)


def _plan_corpus(policy: HostingPolicy, loaded: LoadedModel, lengths: list[int], count: int,
                 limit: int | None) -> JobPlan:
    """A Heads corpus run: the first texts whose tokens together fit :data:`HOSTED_CORPUS_TOKENS` (scaled like a
    text's limit), each within the text limit (a corpus text past it is left out with the rest)."""
    keep, notice = count, None
    if limit is not None:
        budget = HOSTED_CORPUS_TOKENS * limit // HOSTED_JOB_TOKENS["heads"]
        total, keep = 0, 0
        for length in lengths[:count]:
            if length > limit or total + length > budget:
                break
            total, keep = total + length, keep + 1
        if keep < 2:
            raise OverBudgetError(f"the corpus's first texts already take more than the {budget:,} tokens this hosted "
                                  f"instance gives one Heads corpus run with {loaded.info.name} — run it on your own "
                                  "machine (make app)",
                                  notice=Notice("error.corpus_too_large", tokens=f"{budget:,}",
                                                model=model_name(loaded.info.name)))
        if keep < count:
            notice = Notice("notice.job_corpus", asked=count, kept=keep, tokens=f"{budget:,}")
    return JobPlan(kind="heads", deadline_s=policy.deadline_s, max_tokens=limit, requested=count, keep=keep,
                   notice=notice)
