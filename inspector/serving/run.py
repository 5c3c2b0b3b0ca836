"""One run for every page and every command (issue 39, item 1): a :class:`Request` is planned once (:func:`plan`),
then run (:func:`run`) — the same limits, retries and progress in the browser and on the command line.

:func:`plan` reads what was asked and the instance's :class:`~inspector.serving.hosting.HostingPolicy` and decides,
before anything runs, from one formula (:func:`inspector.core.budget.attention_bytes`):

- ``inspect`` (the Inspect page, ``inspector analyze``): the token limit — the model's positions, or fewer when one
  layer's n×n weights would not fit the policy's weights budget — and which layers' exact weights to keep (every one
  asked for while they fit, else the layer on screen with a notice);
- a long job (:data:`~inspector.serving.jobs.JOB_KINDS`): the job's hosted token limit, and how many corpus texts,
  examples or new tokens it runs (:func:`inspector.serving.jobs.plan_job`); ``generate`` also keeps only the layers'
  weights that fit the budget, with a notice, or is refused when not even one layer's fit.

The text of an ``inspect`` or ``generate`` request is tokenised here, once: the plan carries the encoding to the
forward (:attr:`Plan.encodings`), so a run never tokenises its text again.

:func:`run` holds, for the work it is given: one of the server's run slots (:mod:`inspector.serving.run_queue`,
reporting a wait through ``on_wait``), the one deadline (:func:`inspector.core.deadline.job_deadline`, started once
the slot is held), the progress contract checked against the deadline and ``should_stop``, and turns running out of
memory into one line. :func:`run_capture` adds the Inspect run's retries: fewer weights, then the CPU
(:func:`inspector.core.capture.capture_within_memory`).

A page whose job calls cached functions runs it with :meth:`Plan.running` instead: the slot is then taken as the
job's first forward starts (a job whose results all come from caches never queues). That is the one place where
the core calls back into what the run gave it (:func:`inspector.core.deadline.admit_job`); a command, and the Inspect
page's cache miss, take the slot at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal, TypeVar, get_args

from inspector.base.errors import DeviceOutOfMemoryError, InvalidTextError, OverBudgetError
from inspector.base.i18n import DEFAULT_LANGUAGE, Notice, t
from inspector.base.limits import MAX_TEXT_CHARS
from inspector.base.progress import Progress, no_progress
from inspector.core.budget import attention_bytes, max_tokens, tokens_within
from inspector.core.capture import Capture, WeightsChoice, capture_within_memory, is_out_of_memory, release_memory
from inspector.core.deadline import JobDeadline, check_deadline, job_deadline
from inspector.core.forward import EncodedText, encode_text
from inspector.core.loading import LoadedModel, ModelInfo
from inspector.core.model_folders import model_name
from inspector.serving.hosting import HostingPolicy
from inspector.serving.jobs import JobPlan, plan_job
from inspector.serving.run_queue import OnWait, RunQueue, process_queue

RunKind = Literal["inspect", "heads", "attribution", "lessons", "compare", "groundtruth", "generate", "mechanism",
                  "roles", "census"]
RUN_KINDS: tuple[str, ...] = get_args(RunKind)
T = TypeVar("T")


@dataclass(frozen=True)
class Request:
    """What a page or a command asks to run, before any planning.

    ``kind``: :data:`RunKind`. ``texts``: the texts the reader gave (the text, a prompt, two texts, a corpus).
    ``count``: corpus texts, examples or new tokens asked for (None: the job has none). ``weights``: the layers whose
    exact n×n weights the run keeps (``"all"``, layer indices, or None) — ``inspect`` and ``generate`` only.
    ``layer``: the layer on screen, kept when not every layer fits. ``truncate``: cut a text past the model's
    positions instead of refusing it. ``chat``: a ``generate`` prompt is a user turn of the chat template.
    """

    kind: str
    texts: tuple[str, ...] = ()
    count: int | None = None
    weights: WeightsChoice = "all"
    layer: int = 0
    truncate: bool = False
    chat: bool = False

    def __post_init__(self) -> None:
        if self.kind not in RUN_KINDS:
            raise ValueError(f"Request.kind {self.kind!r} is not one of {RUN_KINDS}")
        if not isinstance(self.texts, tuple):
            object.__setattr__(self, "texts", tuple(self.texts))
        if isinstance(self.weights, list):
            object.__setattr__(self, "weights", tuple(int(layer) for layer in self.weights))
        if self.kind in ("inspect", "generate") and len(self.texts) != 1:
            raise ValueError(f"a {self.kind} Request reads one text; got {len(self.texts)}")


@dataclass(frozen=True)
class Plan:
    """What one request will do, decided before it runs.

    ``request``: what was asked. ``job``: the hosted job plan (deadline, token limit, what was kept of ``count``).
    ``lengths``: tokens of each text (empty when no limit needed them). ``encodings``: the ``inspect`` or ``generate``
    text tokenised once, for the forward. ``weights``: the layers whose exact weights the run keeps. ``notices``: why
    the run does less than was asked (fewer layers' weights, texts, examples or new tokens), shown before it runs.
    """

    request: Request
    job: JobPlan
    lengths: tuple[int, ...] = ()
    encodings: tuple[EncodedText, ...] = field(default=(), compare=False, repr=False)
    weights: WeightsChoice = None
    notices: tuple[Notice, ...] = ()
    on_wait: OnWait | None = field(default=None, compare=False, repr=False)

    @property
    def deadline_s(self) -> float | None:
        return self.job.deadline_s

    @property
    def max_tokens(self) -> int | None:
        return self.job.max_tokens

    @property
    def keep(self) -> int | None:
        return self.job.keep

    @property
    def notice(self) -> Notice | None:
        """The first notice (a page shows them all; most plans have at most one)."""
        return self.notices[0] if self.notices else None

    def kept(self, items: Sequence) -> Sequence:
        """``items`` cut to :attr:`keep` (all of them when nothing was cut)."""
        return self.job.kept(items)

    def running(self, on_wait: OnWait | None = None, *, until: JobDeadline | None = None):
        """A page's job: hold the deadline for the ``with`` block and take a run slot as its first forward starts
        (see the module docstring); ``on_wait(position, running)`` while it waits, ``on_wait(0, running)`` once it
        has its slot after waiting. ``until``: the deadline an earlier block of this job ended with
        (:func:`~inspector.core.deadline.current_deadline` read inside it) — the job's second part, after the page
        drew the first part's results outside any block, keeps the first part's instant."""
        return holding(self, on_wait=on_wait or self.on_wait, lazy=True, until=until)


def job_name(kind: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """The run's name in a deadline message ("the Heads report")."""
    return t(f"job.{kind}", lang)


def plan(request: Request, loaded: LoadedModel | None, policy: HostingPolicy, *,
         encoded: EncodedText | None = None) -> Plan:
    """Plan ``request`` on ``loaded`` under ``policy`` (module docstring). Raises, before anything runs,
    :class:`InvalidTextError` (a text the model cannot read, one past the characters or tokens allowed) and
    :class:`OverBudgetError` (past a hosted job's limit, or weights that cannot fit at all). ``loaded`` may be None
    for a ``census``, whose engine loads the model itself.

    ``encoded``: an ``inspect`` request's text already tokenised by ``encode_text(loaded, text, truncate=True)`` (a
    page's cached encoding, which its unknown-token warning read): the plan and the forward reuse it unless it was
    cut and the request does not truncate — then the text is tokenised here, to refuse it in the usual words."""
    for text in request.texts:
        if isinstance(text, str) and len(text) > MAX_TEXT_CHARS:
            raise InvalidTextError(f"the text has {len(text):,} characters; this app reads at most "
                                   f"{MAX_TEXT_CHARS:,} (a long paste would stall the page before the model could "
                                   "refuse it) — paste a shorter passage",
                                   notice=Notice("error.text_too_many_characters", characters=f"{len(text):,}",
                                                 limit=f"{MAX_TEXT_CHARS:,}"))
    if request.kind == "inspect":
        return _plan_inspect(request, loaded, policy, encoded)
    if request.kind == "census":  # a batch job over a corpus (its engine loads the model): a run slot, no deadline
        return Plan(request=request, job=JobPlan(kind="census", deadline_s=None, max_tokens=None))
    encodings: tuple[EncodedText, ...] = ()
    lengths: list[int] | None = None
    if request.kind == "generate":
        encodings = (_encode_prompt(loaded, request.texts[0], request.chat),)
        lengths = [len(encodings[0].tokens)]
    job = plan_job(policy, request.kind, loaded, request.texts, count=request.count, lengths=lengths)
    notices = () if job.notice is None else (job.notice,)
    weights: WeightsChoice = None
    if request.kind == "generate":
        weights, notice = _generate_weights(request, loaded.info, lengths[0] + (job.keep or 0), policy)
        notices += () if notice is None else (notice,)
    return Plan(request=request, job=job, lengths=tuple(lengths or ()), encodings=encodings, weights=weights,
                notices=notices)


def _encode_prompt(loaded: LoadedModel, prompt: str, chat: bool) -> EncodedText:
    """The generate prompt as :func:`inspector.analyses.generate.generate` reads it (its chat template applied)."""
    from inspector.analyses.generate import render_prompt

    text, add_special = render_prompt(loaded, prompt, chat=chat)
    return encode_text(loaded, text, add_special_tokens=add_special)


def _wanted_layers(weights: WeightsChoice, info: ModelInfo) -> tuple[int, ...]:
    if weights is None:
        return ()
    if isinstance(weights, str):
        return tuple(range(info.num_layers))
    return tuple(sorted({info.check_layer(int(layer), "a weights layer") for layer in weights}))


def _plan_inspect(request: Request, loaded: LoadedModel, policy: HostingPolicy,
                  encoded: EncodedText | None) -> Plan:
    """The Inspect run: every layer's statistics, and exact weights for the layers asked for while they fit the
    policy's weights budget — else the layer on screen, with a notice; a text whose one layer would not fit is
    refused."""
    info, budget = loaded.info, policy.weights_budget_bytes
    if encoded is None or (encoded.truncated and not request.truncate):
        encoded = encode_text(loaded, request.texts[0], truncate=request.truncate)  # raises past the positions
    n = len(encoded.tokens)
    wanted = _wanted_layers(request.weights, info)
    limit = info.max_positions
    if wanted:
        limit = max_tokens(info, budget)
        if n > limit:
            raise InvalidTextError(
                f"the text has {n:,} tokens; {info.name}'s attention weights for one layer ({info.num_heads} heads × "
                f"{n:,}²) would not fit the {budget / 2**20:,.0f} MiB this server gives one request, which allows "
                f"{limit:,} tokens — shorten the text or run the app on a machine with a larger "
                "INSPECTOR_WEIGHTS_BUDGET_MB",
                notice=Notice("error.weights_too_large", tokens=f"{n:,}", model=model_name(info.name),
                              mib=f"{budget / 2**20:,.0f}", limit=f"{limit:,}"))
    weights, notices = request.weights, ()
    needed = attention_bytes(info, n, layers=len(wanted))
    if wanted and needed > budget:
        layer = int(request.layer) if int(request.layer) in wanted else wanted[0]
        weights = (layer,)
        notices = (Notice("notice.weights_budget", n=f"{n:,}", budget=f"{budget / 2**20:,.0f}",
                          needed=f"{needed / 2**20:,.0f}", layer=layer),)
    job = JobPlan(kind="inspect", deadline_s=policy.deadline_s, max_tokens=limit)
    return Plan(request=request, job=job, lengths=(n,), encodings=(encoded,), weights=weights, notices=notices)


def _generate_weights(request: Request, info: ModelInfo, positions: int,
                      policy: HostingPolicy) -> tuple[WeightsChoice, Notice | None]:
    """The layers whose attention rows a generation keeps: the prefill materialises each wanted layer's n×n weights
    and the run keeps their rows (two copies, :data:`~inspector.base.limits.JOB_MEMORY_COPIES`); as many wanted
    layers as fit the weights budget, the first ones, with a notice — or a refusal when not one fits."""
    from inspector.base.limits import JOB_MEMORY_COPIES

    wanted = _wanted_layers(request.weights, info)
    copies, budget = JOB_MEMORY_COPIES["generate"], policy.weights_budget_bytes
    if not wanted or attention_bytes(info, positions, copies, layers=len(wanted)) <= budget:
        return request.weights, None
    fit = budget // attention_bytes(info, positions, copies, layers=1)
    if fit < 1:
        raise OverBudgetError(Notice("notice.generate_weights_refused", n=f"{positions:,}", model=model_name(info.name),
                                     mib=f"{budget / 2**20:,.0f}",
                                     longest=f"{tokens_within(info, budget, copies, layers=1):,}"))
    kept = wanted[:fit]
    return kept, Notice("notice.generate_weights", n=f"{positions:,}", kept=len(kept), asked=len(wanted),
                        mib=f"{budget / 2**20:,.0f}", layers=", ".join(str(layer) for layer in kept))


@contextmanager
def _run_slot(on_wait: OnWait | None, queue: RunQueue | None = None) -> Iterator[None]:
    """One of the process's run slots, reporting the wait; ``on_wait(0, running)`` once a run that waited has it."""
    queue = queue or process_queue()
    waited = False

    def report(position: int, running: int) -> None:
        nonlocal waited
        waited = True
        if on_wait is not None:
            on_wait(position, running)

    with queue.slot(report):
        if waited and on_wait is not None:
            on_wait(0, queue.running)
        yield


@contextmanager
def holding(plan: Plan, *, on_wait: OnWait | None = None, queue: RunQueue | None = None,
            lazy: bool = False, until: JobDeadline | None = None) -> Iterator[None]:
    """The run's slot and its one deadline for the ``with`` block. ``lazy``: the slot is taken as the first forward
    inside starts (a page's job over cached functions); otherwise at once, and the deadline starts once it is held.
    ``until`` (lazy only): an earlier block's deadline, kept (:meth:`Plan.running`)."""
    name = Notice(f"job.{plan.job.kind}")  # its catalogue name: a deadline's notice says it in the page's language
    if lazy:
        with job_deadline(plan.deadline_s, name, admit=lambda: _run_slot(on_wait, queue), until=until):
            yield
        return
    with _run_slot(on_wait, queue), job_deadline(plan.deadline_s, name):
        yield


def checked_progress(progress: Progress, should_stop: Callable[[], bool] | None) -> Progress:
    """``progress`` that first checks the run's deadline and ``should_stop`` (a reader's Stop) between steps."""

    def report(done: int, total: int, note: str) -> None:
        check_deadline()
        if should_stop is not None and should_stop():
            raise RunStopped
        progress(done, total, note)

    return report


class RunStopped(Exception):
    """Raised inside a run's progress when its ``should_stop`` said so; :func:`run` lets it through to the caller."""


def run(plan: Plan, work: Callable[[Progress], T], *, progress: Progress = no_progress,
        on_wait: OnWait | None = None, should_stop: Callable[[], bool] | None = None,
        queue: RunQueue | None = None) -> T:
    """``work(progress)`` inside the run (module docstring): a run slot (waiting in line, ``on_wait(position,
    running)``), then the plan's one deadline; the ``progress`` handed to ``work`` checks the deadline and
    ``should_stop`` on each call. Running out of memory ends in :class:`DeviceOutOfMemoryError` after the memory
    is given back."""
    failure = None
    with holding(plan, on_wait=on_wait, queue=queue):
        try:
            return work(checked_progress(progress, should_stop))
        except RuntimeError as err:  # torch.OutOfMemoryError is a RuntimeError
            if not is_out_of_memory(err):
                raise
            failure = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
    release_memory(None)  # outside the except block: the traceback's tensors are gone by now
    raise DeviceOutOfMemoryError(f"{job_name(plan.job.kind)} ran out of memory ({failure}); the machine is short of "
                                 "memory — try a shorter text, ask for less or pick a smaller model",
                                 notice=Notice("error.out_of_memory", job=Notice(f"job.{plan.job.kind}")))


def run_capture(plan: Plan, loaded: LoadedModel, *, backend: str = "auto",
                cpu_model: Callable[[], LoadedModel] | None = None, on_wait: OnWait | None = None,
                queue: RunQueue | None = None) -> Capture:
    """The ``inspect`` run: :func:`run` over the capture of the plan's encoding, retried out of memory with the
    layer on screen's weights only, then on ``cpu_model`` when given (the capture's ``notices`` say so)."""
    if plan.job.kind != "inspect":
        raise ValueError(f"run_capture runs an inspect plan; got {plan.job.kind!r}")
    encoded = plan.encodings[0]
    keep_layer = plan.weights[0] if isinstance(plan.weights, tuple) and plan.weights else plan.request.layer
    return run(plan, lambda progress: capture_within_memory(
        loaded, plan.request.texts[0], encoded=encoded, backend=backend, weights=plan.weights, keep_layer=keep_layer,
        cpu_model=cpu_model), on_wait=on_wait, queue=queue)
