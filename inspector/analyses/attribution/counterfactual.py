"""Counterfactual attention, through the one attention function: how far can one attention row change while f
stays the same?

The chosen row is replaced by uniform weights (Wiegreffe & Pinter 2019), by random permutations of itself
(Jain & Wallace 2019: median |Δf| against the row's largest weight), and — :func:`adversarial_search`, a
separate and far slower step — by the row an optimiser finds as different as possible from the model's own
with the output unchanged (Jain & Wallace: K = 5 candidates batched, Adam lr 0.01, ≤ 500 steps, loss
−JSD(α′, α) + 500·ReLU(|Δf| − ε), ε = 0.01). JSD in nats (at most ln 2 ≈ 0.693), unsmoothed
(:func:`inspector.analyses.divergence.jensen_shannon`, the differentiable variant). A large JSD with |Δf| ≤ ε says
the attention map is not a unique explanation of the output.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from inspector.analyses.attribution.targets import (
    Problem,
    QueryChoice,
    TargetSpec,
    query_index,
    setup_problem,
    target_forward,
)
from inspector.analyses.divergence import JS_MAX, jensen_shannon
from inspector.base.i18n import DEFAULT_LANGUAGE, t
from inspector.base.limits import ATTRIBUTION_MEMORY_BUDGET_BYTES
from inspector.base.progress import Progress
from inspector.core.forward import ForwardResult
from inspector.core.loading import LoadedModel
from kernels.hf import WeightEdit

# The adversarial search stops once its best JSD (with |Δf| ≤ ε) has not grown by MIN_GAIN nats in PATIENCE steps.
MIN_GAIN, PATIENCE = 1e-3, 50
# Shares of JS_MAX above which the adversarial row is called almost entirely / substantially different.
ENTIRELY_DIFFERENT, SUBSTANTIALLY_DIFFERENT = 0.8, 0.4


@dataclass(frozen=True)
class CounterfactualAttention:
    """What happens to f when one attention row is replaced (Jain & Wallace 2019; Wiegreffe & Pinter 2019).

    layer, head (None = every head of the layer gets the new row; the original is then their mean), query:
    the row edited; query_token: its token string. original, uniform: (n,) float64 rows. uniform_change: |Δf|
    with uniform weights; uniform_jsd: JSD(uniform, original), nats. permutation_changes: (P,) |Δf| for P random
    permutations of the row among its visible keys; max_weight: the row's largest weight. adversarial: (n,) the
    best row found with |Δf| ≤ epsilon (None if not run or none found), adversarial_jsd / adversarial_change /
    adversarial_steps (0: not run) / adversarial_seconds; adversarial_converged: the search stopped because its
    best JSD stopped growing, not because it ran out of steps. :meth:`verdict_text`: one sentence built from
    these numbers."""

    layer: int
    head: int | None
    query: int
    original: np.ndarray
    uniform: np.ndarray
    uniform_change: float
    uniform_jsd: float
    permutation_changes: np.ndarray
    max_weight: float
    epsilon: float
    adversarial: np.ndarray | None = None
    adversarial_jsd: float | None = None
    adversarial_change: float | None = None
    adversarial_steps: int = 0
    adversarial_seconds: float = 0.0
    query_token: str = ""
    adversarial_converged: bool = False

    def __post_init__(self) -> None:
        n = self.original.shape
        if self.uniform.shape != n or (self.adversarial is not None and self.adversarial.shape != n):
            raise ValueError("CounterfactualAttention rows must all have the original row's shape")
        if self.adversarial_change is not None and self.adversarial_change > self.epsilon + 1e-9:
            raise ValueError("the adversarial row must keep |Δf| ≤ epsilon")
        if (self.adversarial is None) != (self.adversarial_jsd is None):
            raise ValueError("CounterfactualAttention: adversarial and adversarial_jsd are given together")

    @property
    def permutation_median(self) -> float:
        return float(np.median(self.permutation_changes)) if len(self.permutation_changes) else float("nan")

    def verdict_text(self, lang: str = DEFAULT_LANGUAGE) -> str:
        """The counterfactual in one sentence, in ``lang``: what uniform and permuted rows did to f, and what the
        adversarial row says about the attention as an explanation."""
        where = t("attribution.where_every_head" if self.head is None else "attribution.where_head", lang,
                  layer=self.layer, head=self.head, query=self.query, token=self.query_token)
        uniform = t("attribution.uniform", lang, change=self.uniform_change, jsd=self.uniform_jsd,
                    permutations=len(self.permutation_changes), median=self.permutation_median,
                    max_weight=self.max_weight)
        if self.adversarial_steps == 0:
            return t("attribution.verdict_not_run", lang, where=where, uniform=uniform)
        if self.adversarial is None:
            return t("attribution.verdict_none_found", lang, where=where, uniform=uniform, epsilon=self.epsilon)
        share = self.adversarial_jsd / JS_MAX
        strength = ("attribution.strength_entirely" if share > ENTIRELY_DIFFERENT
                    else "attribution.strength_substantially" if share > SUBSTANTIALLY_DIFFERENT
                    else "attribution.strength_mildly")
        if share > SUBSTANTIALLY_DIFFERENT:
            conclusion = t("attribution.conclusion_not_unique", lang)
        elif self.adversarial_converged:
            conclusion = t("attribution.conclusion_constrained", lang)
        else:
            conclusion = t("attribution.conclusion_still_improving", lang, steps=self.adversarial_steps)
        bands = {"entirely": f"{ENTIRELY_DIFFERENT:.0%}", "substantially": f"{SUBSTANTIALLY_DIFFERENT:.0%}"}
        return t("attribution.verdict_found", lang, where=where, strength=t(strength, lang, **bands),
                 jsd=self.adversarial_jsd,
                 jsd_max=JS_MAX, change=self.adversarial_change, epsilon=self.epsilon, uniform=uniform,
                 conclusion=conclusion)

    @property
    def verdict(self) -> str:
        """:meth:`verdict_text` in English (the JSON's and the command line's ``verdict``)."""
        return self.verdict_text()


@dataclass(frozen=True)
class AdversarialRow:
    """What :func:`adversarial_search` found. row: (n,) the best row with |Δf| ≤ ε (None: none found);
    jsd, change: its JSD from the original (nats) and |Δf|; steps: optimiser steps run; seconds; converged:
    stopped because the best JSD stopped growing."""

    row: torch.Tensor | None
    jsd: float | None
    change: float | None
    steps: int
    seconds: float
    converged: bool


def _row_edit(layer: int, heads: tuple[int, ...], query: int, rows: torch.Tensor) -> WeightEdit:
    """Replace row ``query`` of ``heads`` by ``rows`` (batch, n) — one row per sequence of the batch."""

    def edit(weights: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        new = weights.clone()
        new[:, :, query, :] = rows[:, None, :].to(weights.dtype)
        return new

    return WeightEdit(layer, heads, edit)


def f_with_rows(problem: Problem, layer: int, heads: tuple[int, ...], query: int, rows: torch.Tensor, *,
                grad: bool = False) -> torch.Tensor:
    """(batch,) f with row ``query`` of ``heads`` in ``layer`` replaced by each of ``rows`` (batch, n). Below
    ``layer`` every copy is the text itself: the forward starts at ``layer`` from the baseline's block outputs where
    the model can (on the default last layer, one layer of the model runs per row)."""
    batch = rows.shape[0]
    inputs = {"input_ids": problem.input_ids.expand(batch, -1),
              "attention_mask": problem.attention_mask.expand(batch, -1)}
    return target_forward(problem, inputs, grad=grad, interventions=[_row_edit(layer, heads, query, rows)],
                          resume=problem.resume_at(layer, batch))[0]


def adversarial_search(problem: Problem, layer: int, heads: tuple[int, ...], query: int, original: torch.Tensor, *,
                       generator: torch.Generator, candidates: int = 5, steps: int = 500, lr: float = 0.01,
                       epsilon: float = 0.01, penalty: float = 500.0,
                       progress: Progress | None = None) -> AdversarialRow:
    """Jain & Wallace's adversarial attention: ``candidates`` rows over the visible keys of ``original`` (n,),
    optimised together with Adam on −JSD(α′, α) + penalty·ReLU(|Δf| − ε); the best row that keeps |Δf| ≤ ε.
    Stops early once the best valid JSD has not grown by :data:`MIN_GAIN` in :data:`PATIENCE` steps.
    ``progress`` (:mod:`inspector.base.progress`) counts optimiser steps, called after each; stopping early
    reports all ``steps`` done."""
    started = time.perf_counter()
    f0 = problem.target.value
    positions = (original > 0).nonzero()[:, 0]
    # Diverse starts: candidate 0 at the model's own row, the others ever further from it (noise of standard
    # deviation 1.5·k on the logits), so the search does not depend on small steps from one start.
    spread = 1.5 * torch.arange(candidates, dtype=torch.float32)[:, None]
    noise = torch.randn(candidates, len(positions), generator=generator) * spread
    logits = (torch.log(original[positions].clamp_min(1e-6)).cpu()[None] + noise).to(original.device)
    logits.requires_grad_(True)
    optimizer = torch.optim.Adam([logits], lr=lr)
    best_jsd, best_row, best_change, last_gain, done, converged = -1.0, None, None, 0, 0, False
    for step in range(steps):
        probs = torch.softmax(logits, dim=-1)  # (K, visible)
        candidate = torch.zeros(candidates, len(original), device=original.device).index_copy(1, positions, probs)
        f = f_with_rows(problem, layer, heads, query, candidate, grad=True)
        change = (f - f0).abs()
        jsd = jensen_shannon(candidate, original[None], smoothing=0.0)  # Jain & Wallace: unsmoothed
        loss = (-jsd + penalty * torch.relu(change - epsilon)).sum()
        with torch.no_grad():
            valid = change <= epsilon
            if valid.any():
                pick = int(torch.where(valid, jsd, torch.full_like(jsd, -1.0)).argmax())
                if float(jsd[pick]) > best_jsd + MIN_GAIN:
                    last_gain = step
                if float(jsd[pick]) > best_jsd:
                    best_jsd, best_change = float(jsd[pick]), float(change[pick])
                    best_row = candidate[pick].detach().clone()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        done = step + 1
        if step - last_gain >= PATIENCE and best_row is not None:
            converged = True
        if progress is not None:
            where = f"converged after {done} steps" if converged else f"step {done}/{steps}"
            progress(steps if converged else done, steps,
                     f"adversarial search: {where}, best JSD {max(best_jsd, 0):.3f} nats")
        if converged:
            break
    return AdversarialRow(row=best_row, jsd=best_jsd if best_row is not None else None, change=best_change,
                          steps=done, seconds=time.perf_counter() - started, converged=converged)


def counterfactual_rows(problem: Problem, base: ForwardResult, *, layer: int | None, head: int | None,
                        query: QueryChoice, permutations: int, adversarial: bool, candidates: int = 5,
                        steps: int = 500, lr: float = 0.01, epsilon: float = 0.01, penalty: float = 500.0,
                        seed: int = 0, progress: Progress | None = None) -> CounterfactualAttention:
    """:func:`counterfactual_attention` on an already set-up problem and its baseline forward."""
    loaded = problem.loaded
    info = loaded.info
    layer = info.num_layers - 1 if layer is None else info.check_layer(layer)
    head = None if head is None else info.check_head(head)
    q = query_index(query, problem)
    heads = tuple(range(info.num_heads)) if head is None else (head,)
    weights = base.records[layer].weights[0].float()  # (heads, n, n)
    original = weights[list(heads), q, :].mean(dim=0)  # (n,)
    visible = original > 0
    f0 = problem.target.value
    # One generator for the permutations and then the search's starting noise: a seed gives one whole result.
    generator = torch.Generator().manual_seed(seed)

    uniform = visible.float() / visible.sum()
    perms = []
    positions = visible.nonzero()[:, 0]
    for _ in range(permutations):
        row = torch.zeros_like(original)
        row[positions] = original[positions][torch.randperm(len(positions), generator=generator)]
        perms.append(row)
    rows = torch.stack([uniform, *perms])
    changes = (f_with_rows(problem, layer, heads, q, rows).float().cpu() - f0).abs().numpy()
    token = loaded.codec.token_strings(problem.input_ids[0].tolist())[q]
    searched: dict = {}
    if adversarial:
        found = adversarial_search(problem, layer, heads, q, original, generator=generator, candidates=candidates,
                                   steps=steps, lr=lr, epsilon=epsilon, penalty=penalty, progress=progress)
        searched = dict(adversarial=None if found.row is None else found.row.double().cpu().numpy(),
                        adversarial_jsd=found.jsd, adversarial_change=found.change, adversarial_steps=found.steps,
                        adversarial_seconds=found.seconds, adversarial_converged=found.converged)
    return CounterfactualAttention(layer=layer, head=head, query=q, query_token=str(token),
                                   original=original.detach().double().cpu().numpy(),
                                   uniform=uniform.detach().double().cpu().numpy(), uniform_change=float(changes[0]),
                                   uniform_jsd=float(jensen_shannon(uniform, original, smoothing=0.0)),
                                   permutation_changes=changes[1:].astype(float), max_weight=float(original.max()),
                                   epsilon=epsilon, **searched)


def counterfactual_attention(loaded: LoadedModel, text: str, *, spec: TargetSpec = TargetSpec(),
                             layer: int | None = None, head: int | None = None, query: QueryChoice = None,
                             permutations: int = 100, adversarial: bool = True, candidates: int = 5,
                             steps: int = 500, lr: float = 0.01, epsilon: float = 0.01, penalty: float = 500.0,
                             seed: int = 0, backend: str = "torch",
                             progress: Progress | None = None) -> CounterfactualAttention:
    """Replace one attention row at (``layer``, ``head``, ``query``) through the attention function and
    measure f (see the module docstring). ``layer`` None = the last layer; ``head`` None = every head.
    The adversarial search stops early once its best valid JSD has not grown by :data:`MIN_GAIN` in
    :data:`PATIENCE` steps."""
    problem, base, _ = setup_problem(loaded, text, spec, backend, ATTRIBUTION_MEMORY_BUDGET_BYTES)
    return counterfactual_rows(problem, base, layer=layer, head=head, query=query, permutations=permutations,
                               adversarial=adversarial, candidates=candidates, steps=steps, lr=lr, epsilon=epsilon,
                               penalty=penalty, seed=seed, progress=progress)
