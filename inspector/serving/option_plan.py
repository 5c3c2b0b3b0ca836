"""The ranges of a page's size options and their plan on a hosted instance, from the model and the policy (issue 45,
items 1 and 7): the Heads page's roles probe (repeat length R, batch B) and Lesson 7's timed lengths n.

A hosted visitor's option used to run whatever it asked: roles on Gemma at R = 256, B = 8 took the server to 9 GB
and killed it; MiniLM at R = 255, B = 16 ran 174.5 s against a 60 s deadline at 3.6 GB; Lesson 7 at n = 4,096 added
2.4 GB. Here every such option is costed before it runs — the bytes of its largest tensors and its arithmetic — and
checked against :attr:`HostingPolicy.job_memory_bytes` and :data:`PLANNED_SHARE` of the deadline:

- :func:`roles_ranges` / :func:`timing_choices`: the widget's range (what the page offers);
- :func:`plan_roles` / :func:`plan_timing`: what a request asked, shrunk to fit with a :class:`Notice` saying so, or
  refused (:class:`OverBudgetError`) when not even the smallest run fits.

The deadline still binds while the run goes (the roles' causal test and Lesson 7 check it between their steps): the
estimate is a plan, not a promise. Outside hosted mode nothing is planned (a local ``make app`` runs anything).

**The roles probe's cost** (n = 2R + 1 tokens, B sequences, L × H heads, vocabulary V, hidden size d, S random-head
seeds; :mod:`inspector.analyses.roles_causal`): memory — every layer's n×n weights of the probe batch, held
:data:`ROLES_WEIGHT_COPIES` times (the forward's records, the stacked copy the scores read, one layer's temporaries),
plus, for a language model, the probe's logits at every position (B · n · V float32) and the causal test's baseline
distributions over half of them (:data:`ROLES_LOGIT_COPIES` in all); time — the forwards of the probe and of the 3 ×
(1 + S) ablated copies (2 · body parameters · tokens, 4 · L · H · d_head · n per token for QKᵀ and AV), the
language-model head at the measured positions (2 · V · d per row) and the per-element work on the n×n weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from inspector.base.errors import OverBudgetError
from inspector.base.i18n import Notice
from inspector.base.limits import HOSTED_RESULT_CACHE_BYTES
from inspector.core.budget import weight_bytes
from inspector.core.loading import ModelInfo
from inspector.core.model_folders import model_name
from inspector.serving.hosting import HostingPolicy

# Arithmetic a hosted 2-core server does per second on these forwards, and seconds per n×n weight element touched
# outside the matrix products (softmax, masks, the scores' reductions). Fitted to two runs (docs/BENCHMARKS.md
# "Planned options"): Gemma 3 270M's roles at the defaults, 18.7 s (matrix products: ~2.0e12 operations), and MiniLM's
# at R = 255, B = 16, 174.5 s on the hosted server of issue 45 (4.8e9 weight elements after its products' share).
HOSTED_OPERATIONS_PER_S = 1.07e11
HOSTED_ELEMENT_S = 29e-9
# A plan takes at most this share of the deadline: the estimate is rough and the server shared; the deadline binds
# the rest while it runs.
PLANNED_SHARE = 0.5
ROLES_WEIGHT_COPIES = 3  # the records' weights, their stacked copy for the scores, a layer's temporaries
ROLES_LOGIT_COPIES = 2.5  # the probe's logits (B · n · V), and the baseline's log-probabilities and p at half of them
ROLES_CAUSAL_ROLES = 3  # induction, previous-token, sink (inspector.analyses.roles.CAUSAL_ROLES)
MIN_REPEAT, MIN_BATCH = 2, 2  # the probe's own smallest (inspector.analyses.roles.check_options)
# Lesson 7 holds the scores and the weights of one length (2 · heads · n² float32) and the reference's temporaries.
TIMING_COPIES = 3
TIMING_ROUNDS = 9  # inspector.analyses.lessons.common: TIMING_WARMUPS + TIMING_REPEATS rounds over every length


@dataclass(frozen=True)
class Cost:
    """What a run holds at its peak (``bytes``) and the seconds it is estimated to take on a hosted server."""

    bytes: int
    seconds: float

    def fits(self, policy: HostingPolicy) -> bool:
        """Whether the run fits ``policy``: always outside hosted mode; else its bytes within the job memory and its
        seconds within :data:`PLANNED_SHARE` of the deadline (when there is one)."""
        if not policy.hosted:
            return True
        in_time = policy.deadline_s is None or self.seconds <= PLANNED_SHARE * policy.deadline_s
        return self.bytes <= policy.job_memory_bytes and in_time


def _forward_seconds(info: ModelInfo, tokens: float, n: int, head_rows: float = 0) -> float:
    """Estimated seconds of forwards over ``tokens`` tokens of sequences n long, and the language-model head on
    ``head_rows`` rows."""
    body = max(info.num_parameters - info.vocab_size * info.hidden_size, info.num_parameters // 4)
    operations = (2 * body * tokens + 4 * info.num_layers * info.num_heads * info.head_dim * n * tokens
                  + 2 * info.vocab_size * info.hidden_size * head_rows)
    elements = info.num_layers * info.num_heads * n * tokens  # every head's n×n weights of every sequence
    return operations / HOSTED_OPERATIONS_PER_S + elements * HOSTED_ELEMENT_S


def roles_cost(info: ModelInfo, repeat: int, batch: int, seeds: int = 4) -> Cost:
    """The cost of :func:`inspector.analyses.roles_causal.head_roles` (probe and causal test) at ``repeat`` ×
    ``batch`` with ``seeds`` random-head seeds (module docstring)."""
    n = 2 * repeat + 1
    language_model = info.head == "causal-lm"
    held = weight_bytes(info.num_layers * info.num_heads, n, ROLES_WEIGHT_COPIES * batch)
    if language_model:
        held += int(ROLES_LOGIT_COPIES * batch * n * info.vocab_size * 4)
    copies = 1 + ROLES_CAUSAL_ROLES * (1 + seeds)  # the probe, then each role's heads and seeds' random heads
    head_rows = (batch * n + (copies - 1) * batch * repeat) if language_model else 0
    return Cost(bytes=held, seconds=_forward_seconds(info, batch * n * copies, n, head_rows))


@dataclass(frozen=True)
class RolesRanges:
    """The roles options a page offers for a model under a policy: ``repeat`` up to ``max_repeat`` (at the smallest
    batch) and ``batch`` up to ``max_batch`` (at the repeat length it was computed for)."""

    max_repeat: int
    max_batch: int


def _largest(low: int, high: int, fits) -> int:
    """The largest value in [low, high] for which ``fits`` holds (``fits`` monotone: true, then false); ``low - 1``
    when not even ``low`` fits."""
    if not fits(low):
        return low - 1
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low


def roles_ranges(info: ModelInfo, policy: HostingPolicy, repeat: int | None = None, *, seeds: int = 4,
                 max_batch: int = 256) -> RolesRanges:
    """The widget ranges: the longest R whose probe fits the model's positions and (hosted) the policy at the
    smallest batch, and the largest batch (at most ``max_batch``) that fits at ``repeat`` (default: that longest R).
    Either is below its minimum (R < 2, B < 2) when not even the smallest run fits."""
    by_positions = max(MIN_REPEAT, (info.max_positions - 1) // 2)
    longest = _largest(MIN_REPEAT, by_positions,
                       lambda r: roles_cost(info, r, MIN_BATCH, seeds).fits(policy))
    at = min(longest, repeat) if repeat is not None else longest
    widest = _largest(MIN_BATCH, max_batch, lambda b: roles_cost(info, max(at, MIN_REPEAT), b, seeds).fits(policy))
    return RolesRanges(max_repeat=longest, max_batch=widest)


@dataclass(frozen=True)
class OptionPlan:
    """What a run does after its plan: ``values`` (option → the value it runs with) and ``notices`` (why a value is
    less than asked, in the reader's language once shown; empty when nothing was cut)."""

    values: dict
    notices: tuple[Notice, ...] = ()


def _budget_words(cost: Cost, policy: HostingPolicy) -> dict[str, str]:
    return {"mib": f"{policy.job_memory_bytes / 2**20:,.0f}", "seconds": f"{policy.deadline_s or 0:g}",
            "needed_mib": f"{cost.bytes / 2**20:,.1f}", "needed_s": f"{cost.seconds:,.1f}"}


def plan_roles(info: ModelInfo, policy: HostingPolicy, repeat: int, batch: int, seeds: int = 4) -> OptionPlan:
    """The roles run for ``repeat`` × ``batch``: as asked when it fits, else the batch shrunk (to 2 at least), then
    the repeat length, with a notice; :class:`OverBudgetError` when not even R = 2, B = 2 fits."""
    asked = roles_cost(info, repeat, batch, seeds)
    if asked.fits(policy):
        return OptionPlan({"repeat": repeat, "batch": batch})
    ranges = roles_ranges(info, policy, repeat, seeds=seeds, max_batch=batch)
    if ranges.max_repeat < MIN_REPEAT:
        raise OverBudgetError(Notice("notice.roles_refused", model=model_name(info.name),
                                     **_budget_words(roles_cost(info, MIN_REPEAT, MIN_BATCH, seeds), policy)))
    # The batch shrinks first (to 2 at least), then the repeat length: ranges.max_batch is the largest batch at the
    # repeat length kept, which fits at batch 2 by the range's definition.
    kept_repeat, kept_batch = min(repeat, ranges.max_repeat), max(MIN_BATCH, ranges.max_batch)
    return OptionPlan({"repeat": kept_repeat, "batch": kept_batch},
                      (Notice("notice.roles_shrunk", repeat=repeat, batch=batch, kept_repeat=kept_repeat,
                              kept_batch=kept_batch, model=model_name(info.name), **_budget_words(asked, policy)),))


def timing_cost(heads: int, d_k: int, lengths: Sequence[int]) -> Cost:
    """Lesson 7's cost (:func:`inspector.analyses.lessons.timing.complexity_lesson`): the largest length's scores and
    weights held at once, and every round timing both paths at every length."""
    if not lengths:
        return Cost(bytes=0, seconds=0.0)
    held = weight_bytes(heads, max(lengths), TIMING_COPIES)
    operations = sum(2 * 2 * (2 * n * n * d_k) * heads for n in lengths)  # QKᵀ and AV, both paths
    elements = sum(2 * heads * n * n for n in lengths)
    seconds = TIMING_ROUNDS * (operations / HOSTED_OPERATIONS_PER_S + elements * HOSTED_ELEMENT_S)
    return Cost(bytes=held, seconds=seconds)


def timing_choices(heads: int, d_k: int, choices: Sequence[int], policy: HostingPolicy) -> tuple[int, ...]:
    """The lengths Lesson 7 offers: those of ``choices`` that fit the policy alone."""
    return tuple(n for n in choices if timing_cost(heads, d_k, (n,)).fits(policy))


def plan_timing(heads: int, d_k: int, lengths: Sequence[int], policy: HostingPolicy) -> OptionPlan:
    """Lesson 7 at ``lengths`` (sorted): the longest lengths dropped until the rest fit, with a notice naming them;
    :class:`OverBudgetError` when not even the shortest fits."""
    lengths = sorted(int(n) for n in lengths)
    kept = list(lengths)
    while kept and not timing_cost(heads, d_k, kept).fits(policy):
        kept.pop()
    if not kept:
        cost = timing_cost(heads, d_k, lengths[:1])
        raise OverBudgetError(Notice("notice.timing_refused", n=f"{lengths[0]:,}", **_budget_words(cost, policy)))
    if len(kept) == len(lengths):
        return OptionPlan({"lengths": tuple(kept)})
    dropped = ", ".join(f"{n:,}" for n in lengths[len(kept):])
    return OptionPlan({"lengths": tuple(kept)},
                      (Notice("notice.timing_shrunk", dropped=dropped,
                              **_budget_words(timing_cost(heads, d_k, lengths), policy)),))


def server_budget_bytes(warm_bytes: int, policy: HostingPolicy, slots: int = 1) -> int:
    """The resident memory a hosted server is planned to stay under: ``warm_bytes`` (the process with its models
    loaded and every page drawn once), plus ``slots`` jobs running at once, each within
    :attr:`HostingPolicy.job_memory_bytes`, plus one request's exact weights
    (:attr:`HostingPolicy.weights_budget_bytes`) and the result caches' byte budget
    (:data:`~inspector.base.limits.HOSTED_RESULT_CACHE_BYTES`). The hosted sweep (benchmarks/option_sweep.py) holds a
    server to it with one request at a time (``slots=1``)."""
    return warm_bytes + slots * policy.job_memory_bytes + policy.weights_budget_bytes + HOSTED_RESULT_CACHE_BYTES
