"""The causal test of head roles and the whole roles view (issue 29; the probe and its scores are
:mod:`inspector.analyses.roles`).

**Causal test** (:func:`causal_test`): a pattern seen is not a pattern used. For each of induction, previous-token
and sink, the top-k heads by score are removed and what the role should carry is measured on the same probe —

- induction: the loss (cross-entropy, nats) of the repeated half's predictions (tokens R + 2 … 2R) rises;
- previous-token: the loss of the first half's predictions (tokens 2 … R) rises;
- sink: the output changes (KL(p ‖ p′), nats, at the first copy's positions 1 … R — ordinary prediction from random
  context; position 0 sees only the first token, which it keeps) when the first token's weight is removed from the
  head's rows and the rows renormalised (a :class:`kernels.hf.WeightEdit`);

induction and previous-token heads are mean-ablated (:class:`kernels.hf.SequenceHeadAblation`, mode ``mean``: the
head keeps its mean output over the sequence, loses what depends on the token). The same is done to as many
**random heads of the same layers** (other heads of those layers where there are enough), over several seeds.
Models without a language-model head (encoders) measure the cosine distance of the final hidden states at the
same positions instead of a loss. The role heads' rise has a 95 % t interval over the probe sequences, the random
heads' over the seeds; the role is **causal** on this model when its interval lies wholly above the random one
and above 0.
**Cost** (what makes the whole view a few forwards): the probe and the causal test share one unablated forward
(:func:`probe_forward`: the weights for the scores, every block's output and the logits for the test's baseline).
Every configuration of a role (role heads, then each seed's random heads) runs as copies of the probe batch in
batched forwards, started at the lowest ablated layer from the unablated forward's block outputs
(:class:`kernels.hf.ResumeAt`), without statistics; in a causal model the copies read the probe only up to the last
position the measure reads (later tokens cannot change a prediction there; the previous-token and sink tests read
R + 1 tokens, and a mean-ablated head's mean is over the tokens read). The language-model head runs only at the
measured positions, a vocabulary chunk at a time from the final hidden states (:class:`_ChunkedHead`, checked
against the model's own logits; otherwise the model's head through ``logits_to_keep``, as many copies a forward as
2^27 logits hold). The measures read each copy's logits once: a log-sum-exp over the vocabulary and the target's
logit (loss), or a row-wise dot product with the unablated distribution (KL(p ‖ p′) = Σ p log p − Σ p · logits′ +
log-sum-exp).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from inspector.analyses.roles import (
    CAUSAL_ROLES,
    DEFAULT_BATCH,
    DEFAULT_SEED,
    DEFAULT_SEEDS,
    DEFAULT_TOP_K,
    DEFAULT_WINDOW,
    ROLE_THRESHOLDS,
    ROLES,
    SINK_EPSILON,
    CausalTest,
    ProbeSpec,
    Role,
    RolesResult,
    check_options,
    default_repeat,
    dominant_roles,
    make_probe,
    mean_interval,
    probe_forward,
    probe_inputs,
    probe_scores,
    takes_logits_to_keep,
)
from inspector.base.errors import InvalidRequestError
from inspector.base.progress import Progress, no_progress
from inspector.core.deadline import check_deadline
from inspector.core.forward import forward
from inspector.core.loading import LoadedModel
from kernels.hf import Intervention, ResumeAt, SequenceHeadAblation, WeightEdit

# Tokens one causal-test forward may hold (copies × batch × length), and logits (copies × batch × measured positions ×
# vocabulary: 2^27 float32 = 512 MB, Gemma's 262k-token vocabulary at one to three copies a forward).
_FORWARD_TOKENS = 4096
_LOGITS_BUDGET = 2**27
_VOCAB_CHUNK = 4096  # ids a chunk of the language-model head (2.6 MB of Gemma's weights; 4k–32k ran alike here)


def random_same_layer_heads(heads: Sequence[tuple[int, int]], num_heads: int, rng: np.random.Generator,
                            num_layers: int | None = None) -> tuple[tuple[int, int], ...]:
    """As many random heads as ``heads``, none of them one of ``heads``, layer for layer: in each layer, from the
    layer's other heads; where a layer has too few (every head of a small layer has the role), the rest from the
    other layers' heads (``num_layers`` given), so the comparison never ablates the role's own heads."""
    taken = set((int(layer), int(head)) for layer, head in heads)
    chosen: list[tuple[int, int]] = []
    missing = 0
    for layer in sorted({layer for layer, _ in taken}):
        wanted = sum(1 for other, _ in taken if other == layer)
        others = [h for h in range(num_heads) if (layer, h) not in taken]
        picked = rng.choice(others, size=min(wanted, len(others)), replace=False) if others else []
        chosen.extend((layer, int(h)) for h in picked)
        missing += wanted - len(picked)
    if missing:
        layers = range(num_layers) if num_layers is not None else sorted({layer for layer, _ in taken})
        pool = [(layer, h) for layer in layers for h in range(num_heads)
                if (layer, h) not in taken and (layer, h) not in chosen]
        if len(pool) < missing:
            raise InvalidRequestError(f"the causal test needs {len(taken)} heads that are not the role's own to "
                                      f"compare with, and the model has {len(pool) + len(chosen)} — pick a smaller "
                                      "--top-k")
        chosen.extend(pool[i] for i in rng.choice(len(pool), size=missing, replace=False))
    return tuple(sorted(chosen))


def _first_token_removed(selected: torch.Tensor):
    """A :class:`WeightEdit` function: the rows of sequences/heads where ``selected`` (batch, heads) is True lose the
    first key's weight and are renormalised over the rest (a row that sees only the first key keeps it)."""

    def edit(weights: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        removed = weights.clone()
        removed[..., 0] = 0.0
        total = removed.sum(dim=-1, keepdim=True)
        renormalised = torch.where(total > 0, removed / total.clamp_min(1e-30), weights)
        return torch.where(selected.to(weights.device)[:, :, None, None], renormalised, weights)

    return edit


def _measured_positions(role: Role, repeat: int, n: int) -> np.ndarray:
    """Positions whose prediction (logits at p predict token p + 1) or hidden state the role's measure reads."""
    if role == "induction":
        return np.arange(repeat + 1, 2 * repeat)  # predicts tokens R + 2 … 2R: the repeat, after its first token
    if role == "previous":
        return np.arange(1, repeat)  # predicts tokens 2 … R
    # Sink: the first copy's positions 1 … R, ordinary next-token prediction from random context (position 0 sees
    # only the first key, which it keeps, so its output never changes). As many positions as the other roles read,
    # and a causal model's copies read only the first R + 1 tokens.
    return np.arange(1, repeat + 1)


@dataclass(frozen=True)
class _ChunkedHead:
    """The language-model head read a vocabulary chunk at a time: ``logits = softcap(hidden @ weight.T + bias)`` for
    :data:`_VOCAB_CHUNK` ids at once, so a measure over the vocabulary (a log-sum-exp, a target's logit, a dot product
    with a distribution) never holds a (rows × vocabulary) tensor and the matrix product stays in cache (about 15 %
    faster than one product over Gemma's 262k ids on this machine). Built only when it reproduces the model's own
    logits (:meth:`of`); a model whose head does more (a scale, a bias on the hidden state) keeps the model's head."""

    weight: torch.Tensor  # (vocab, hidden)
    bias: torch.Tensor | None  # (vocab,)
    softcap: float | None

    @classmethod
    def of(cls, loaded: LoadedModel, hidden: torch.Tensor, logits: torch.Tensor) -> _ChunkedHead | None:
        """The chunked twin of ``loaded``'s head, checked against the unablated probe's final hidden states
        ``hidden`` (batch, n, d) and its logits (batch, n, vocab) at the first sequence's last position; None when
        the model's head is not a plain linear layer (with Gemma 2's final soft-capping) or the check fails."""
        module = loaded.model.get_output_embeddings() if hasattr(loaded.model, "get_output_embeddings") else None
        if not isinstance(module, torch.nn.Linear) or module.weight.shape[0] != logits.shape[-1]:
            return None
        config = getattr(loaded.model.config, "get_text_config", lambda: loaded.model.config)()
        softcap = getattr(config, "final_logit_softcapping", None)
        head = cls(weight=module.weight.detach(), bias=None if module.bias is None else module.bias.detach(),
                   softcap=float(softcap) if softcap else None)
        row = hidden[:1, -1:].float()
        expected = logits[:1, -1:].float()
        mine = torch.cat([chunk for _, chunk in head.chunks(row)], dim=-1)
        scale = float(expected.abs().max()) or 1.0
        return head if torch.allclose(mine, expected, rtol=1e-4, atol=1e-4 * scale) else None

    def chunks(self, hidden: torch.Tensor):
        """(start, logits of ids start … start + chunk − 1) for ``hidden`` (…, d), chunk by chunk."""
        hidden = hidden.to(self.weight.dtype)
        for start in range(0, self.weight.shape[0], _VOCAB_CHUNK):
            stop = start + _VOCAB_CHUNK
            bias = None if self.bias is None else self.bias[start:stop]
            yield start, self._capped(torch.nn.functional.linear(hidden, self.weight[start:stop], bias).float())

    def target_logits(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """(…,) the logit of ``targets`` (…) for ``hidden`` (…, d): one dot product per row."""
        logit = (hidden.to(self.weight.dtype) * self.weight[targets]).sum(dim=-1)
        if self.bias is not None:
            logit = logit + self.bias[targets]
        return self._capped(logit.float())

    def _capped(self, logits: torch.Tensor) -> torch.Tensor:
        return logits if self.softcap is None else torch.tanh(logits / self.softcap) * self.softcap


@dataclass
class _BaseRun:
    """The unablated probe's forward (:func:`probe_forward` with ``for_causal``): its kept block outputs (for
    :class:`ResumeAt`) and its logits (causal LMs, (batch, n, vocab)) or final hidden states (encoders); ``head``:
    the chunked language-model head the ablated copies are measured with (None: they use the model's own)."""

    loaded: LoadedModel
    probe: ProbeSpec
    layer_outputs: list[torch.Tensor]
    logits: torch.Tensor | None
    hidden: torch.Tensor | None
    head: _ChunkedHead | None = None

    @classmethod
    def of(cls, loaded: LoadedModel, probe: ProbeSpec, forwarded) -> _BaseRun:
        outputs = forwarded.outputs
        causal_lm = loaded.info.head == "causal-lm"
        hidden = outputs.hidden_states[-1].detach()
        logits = outputs.logits.detach() if causal_lm else None
        return cls(loaded=loaded, probe=probe, layer_outputs=forwarded.layer_outputs, logits=logits,
                   hidden=None if causal_lm else hidden,
                   head=_ChunkedHead.of(loaded, hidden, logits) if causal_lm else None)

    def baseline(self, role: Role, positions: np.ndarray, targets: torch.Tensor | None) -> dict[str, torch.Tensor]:
        """What the unablated probe says at ``positions``: ``logp`` (batch, P) — the log-probability of
        ``targets``; or, for the sink's KL, ``p`` (batch, P, vocab) and ``plogp`` (batch, P) — Σ p log p; or, for an
        encoder, ``unit`` (batch, P, hidden) — the unit final hidden states."""
        index = torch.as_tensor(positions)
        if self.logits is None:
            hidden = self.hidden[:, index.to(self.hidden.device)]
            return {"unit": torch.nn.functional.normalize(hidden.float(), dim=-1)}
        log_probs = torch.log_softmax(self.logits[:, index.to(self.logits.device)].float(), dim=-1)
        if targets is not None:
            return {"logp": log_probs.gather(-1, targets.to(log_probs.device)[..., None])[..., 0]}
        probs = log_probs.exp()
        return {"p": probs, "plogp": torch.einsum("bpv,bpv->bp", probs, log_probs)}


def _base_run(loaded: LoadedModel, probe: ProbeSpec, backend: str, interventions: Sequence[Intervention] = (),
              ) -> _BaseRun:
    return _BaseRun.of(loaded, probe, probe_forward(loaded, probe, backend=backend, interventions=interventions,
                                                    for_causal=True))


def _copy_rises(loaded: LoadedModel, role: Role, base: dict[str, torch.Tensor], outputs, positions: np.ndarray,
                targets: torch.Tensor | None, copies: int, head: _ChunkedHead | None = None) -> list[np.ndarray]:
    """(batch,) the measure's rise per sequence for each of ``copies`` copies of the probe batch in ``outputs``:
    the loss rise (causal LM: induction, previous-token), the mean KL(p ‖ p′) (causal LM: sink) or the mean cosine
    distance of the final hidden states (encoders). Lean on memory: one log-sum-exp pass over the vocabulary and a
    gather or a row-wise dot product per copy, never a second (copies × batch × P × vocab) tensor; with ``head``
    (the chunked language-model head) the logits are made here from the final hidden states, a chunk at a time."""
    index = torch.as_tensor(positions)
    if "unit" in base:
        hidden = outputs.hidden_states[-1]
        unit = torch.nn.functional.normalize(hidden[:, index.to(hidden.device)].float(), dim=-1)
        batch = base["unit"].shape[0]
        return [(1.0 - (unit[c * batch:(c + 1) * batch] * base["unit"]).sum(dim=-1)).mean(dim=-1).double().cpu()
                .numpy() for c in range(copies)]
    if head is not None:
        return _chunked_rises(head, base, outputs.hidden_states[-1], index, targets, copies)
    logits = outputs.logits  # (copies × batch, P, vocab) with logits_to_keep, else (copies × batch, n, vocab)
    if logits.shape[1] != len(positions):
        logits = logits[:, index.to(logits.device)]
    logits = logits.float()
    rises = []
    batch = logits.shape[0] // copies
    for c in range(copies):
        part = logits[c * batch:(c + 1) * batch]
        lse = torch.logsumexp(part, dim=-1)  # (batch, P)
        if "p" in base:  # KL(p ‖ p′) = Σ p log p − Σ p · logits′ + log-sum-exp(logits′)
            kl = base["plogp"] - torch.einsum("bpv,bpv->bp", base["p"], part) + lse
            rises.append(kl.clamp_min(0).mean(dim=-1).double().cpu().numpy())
        else:  # −log p′(target) − (−log p(target))
            new = part.gather(-1, targets.to(part.device)[..., None])[..., 0] - lse
            rises.append((base["logp"] - new).mean(dim=-1).double().cpu().numpy())
    return rises


def _chunked_rises(head: _ChunkedHead, base: dict[str, torch.Tensor], hidden: torch.Tensor, index: torch.Tensor,
                   targets: torch.Tensor | None, copies: int) -> list[np.ndarray]:
    """:func:`_copy_rises` from the final hidden states (copies × batch, n, d) through the chunked head: every copy's
    log-sum-exp (and, for the KL, Σ p · logits′) accumulated chunk by chunk over the vocabulary."""
    rows = hidden[:, index.to(hidden.device)]  # (copies × batch, P, d)
    batch, count = rows.shape[0] // copies, rows.shape[1]
    flat = rows.reshape(copies, batch * count, rows.shape[-1])
    p = base["p"].reshape(batch * count, -1) if "p" in base else None
    lse_parts, dot = [], torch.zeros(copies, batch * count)
    for start, logits in head.chunks(flat):  # (copies, batch × P, chunk)
        lse_parts.append(torch.logsumexp(logits, dim=-1))
        if p is not None:
            dot += torch.einsum("crv,rv->cr", logits, p[:, start:start + logits.shape[-1]].to(logits.device)).cpu()
    lse = torch.logsumexp(torch.stack(lse_parts, dim=-1), dim=-1).cpu().reshape(copies, batch, count)
    if p is not None:  # KL(p ‖ p′) = Σ p log p − Σ p · logits′ + log-sum-exp(logits′)
        kl = base["plogp"].cpu() - dot.reshape(copies, batch, count) + lse
        return list(kl.clamp_min(0).mean(dim=-1).double().numpy())
    tiled = targets.to(rows.device).repeat(copies, 1)  # (copies × batch, P)
    new = head.target_logits(rows, tiled).cpu().reshape(copies, batch, count) - lse
    return list((base["logp"].cpu() - new).mean(dim=-1).double().numpy())


def causal_test(loaded: LoadedModel, probe: ProbeSpec, role: Role, heads: Sequence[tuple[int, int]], *,
                seeds: int = DEFAULT_SEEDS, seed: int = DEFAULT_SEED, backend: str = "torch",
                base_run: _BaseRun | None = None, interventions: Sequence[Intervention] = ()) -> CausalTest:
    """The causal test of ``role`` (one of :data:`CAUSAL_ROLES`) for ``heads`` against ``seeds`` draws of random
    heads of the same layers (see the module docstring). ``base_run``: the probe's unablated forward that kept its
    block outputs and logits (:func:`_base_run`), shared by the roles and the scores. ``interventions``: applied to
    every forward (the model under test is the model with them, e.g. a head forced into a role)."""
    if role not in CAUSAL_ROLES:
        raise InvalidRequestError(f"no causal test for the {role!r} role; choose one of {CAUSAL_ROLES}")
    info = loaded.info
    heads = tuple((int(layer), int(head)) for layer, head in heads)
    rng = np.random.default_rng([seed, CAUSAL_ROLES.index(role)])
    random_sets = tuple(random_same_layer_heads(heads, info.num_heads, rng, info.num_layers)
                        for _ in range(seeds))
    configs = (heads, *random_sets)
    base_run = base_run or _base_run(loaded, probe, backend, interventions)
    positions = _measured_positions(role, probe.repeat, probe.length)
    ids = torch.from_numpy(probe.ids)
    targets = ids[:, positions + 1] if role != "sink" and info.head == "causal-lm" else None
    base = base_run.baseline(role, positions, targets)
    first_layer = min(layer for config in configs for layer, _ in config)
    per_forward = max(1, _FORWARD_TOKENS // (probe.batch * probe.length))
    if info.head == "causal-lm" and base_run.head is None:
        per_forward = max(1, min(per_forward, _LOGITS_BUDGET // (probe.batch * len(positions) * info.vocab_size)))
    rises: list[np.ndarray] = []
    for start in range(0, len(configs), per_forward):
        check_deadline(f"before the causal test's copies {start + 1}–{start + per_forward} of {role}")
        group = configs[start:start + per_forward]
        rises.extend(_ablated_rises(loaded, probe, role, group, first_layer, base_run, positions, targets, base,
                                    backend, interventions))
    role_rises, random_rises = rises[0], np.array([r.mean() for r in rises[1:]])
    role_rise, role_low, role_high = (float(v) for v in mean_interval(role_rises, (-np.inf, np.inf)))
    random_mean, random_low, random_high = (float(v) for v in mean_interval(random_rises, (-np.inf, np.inf)))
    baseline = float((-base["logp"]).mean()) if targets is not None else 0.0
    measure = ("hidden" if info.head != "causal-lm" else "kl" if role == "sink" else "loss")
    return CausalTest(role=role, heads=heads, measure=measure, baseline=baseline, role_rise=role_rise,
                      role_low=role_low, role_high=role_high, random_heads=random_sets, random_rises=random_rises,
                      random_mean=random_mean, random_low=random_low, random_high=random_high,
                      causal=bool(role_low > max(random_high, 0.0)))


def _ablated_rises(loaded: LoadedModel, probe: ProbeSpec, role: Role, configs: Sequence[tuple[tuple[int, int], ...]],
                   first_layer: int, base_run: _BaseRun, positions: np.ndarray, targets: torch.Tensor | None,
                   base: dict[str, torch.Tensor], backend: str, extra: Sequence[Intervention] = (),
                   ) -> list[np.ndarray]:
    """One batched forward: copy c of the probe batch has ``configs[c]`` removed. (batch,) rises per config."""
    info, batch = loaded.info, probe.batch
    copies = len(configs)
    # A causal model's prediction at p never reads a later token: the copies read the probe up to the last measured
    # position (the previous-token test, half of it; the ablated heads' mean is over the tokens read).
    end = int(positions.max()) + 1 if info.causal else probe.length
    ids = np.tile(probe.ids[:, :end], (copies, 1))  # (copies × batch, end): copy c is rows c·batch … (c + 1)·batch − 1
    inputs = probe_inputs(loaded, ids)
    interventions = []
    for layer in sorted({layer for config in configs for layer, _ in config}):
        mask = torch.zeros(copies * batch, info.num_heads, dtype=torch.bool)
        for c, config in enumerate(configs):
            for at, head in config:
                if at == layer:
                    mask[c * batch:(c + 1) * batch, head] = True
        mask = mask.to(loaded.device)
        if role == "sink":
            interventions.append(WeightEdit(layer=layer, heads=tuple(range(info.num_heads)),
                                            edit=_first_token_removed(mask)))
        else:
            interventions.append(SequenceHeadAblation(layer=layer, mask=mask, mode="mean"))
    first_layer = min([first_layer, *(item.layer for item in extra)])
    interventions.extend(extra)
    resume = None
    if base_run.layer_outputs and first_layer > 0:
        resume = ResumeAt(layer=first_layer, outputs=tuple(
            out[:, :end].repeat(copies, *([1] * (out.dim() - 1))) for out in base_run.layer_outputs[:first_layer]))
    if info.head == "causal-lm" and takes_logits_to_keep(loaded):  # the model's head: the measured positions only,
        kept = positions[:0] if base_run.head is not None else positions  # or none when the chunked head reads them
        inputs["logits_to_keep"] = torch.as_tensor(kept, device=loaded.device)
    result = forward(loaded, inputs, interventions=interventions, backend=backend, stats=(), resume=resume)
    tiled = targets.to(loaded.device) if targets is not None else None
    return _copy_rises(loaded, role, base, result.outputs, positions, tiled, copies, base_run.head)


# ------------------------------------------------------------------------------------------------ the whole view


def head_roles(loaded: LoadedModel, *, repeat: int | None = None, batch: int = DEFAULT_BATCH,
               top_k: int = DEFAULT_TOP_K, window: int = DEFAULT_WINDOW, seed: int = DEFAULT_SEED,
               seeds: int = DEFAULT_SEEDS, backend: str = "torch", causal: bool = True,
               thresholds: dict[str, float] | None = None, interventions: Sequence[Intervention] = (),
               progress: Progress = no_progress) -> RolesResult:
    """Probe every head of ``loaded`` (``repeat`` random ids, default :func:`default_repeat`; ``batch``
    sequences; ``seed``), assign dominant roles, and — when ``causal`` — run the causal test of the top ``top_k``
    heads of each role of :data:`CAUSAL_ROLES` against ``seeds`` random draws. Raises
    :class:`InvalidRequestError` for bad options (:func:`check_options`). ``interventions`` apply to every forward
    (the roles of an edited model: a head forced into a role by a :class:`kernels.hf.WeightEdit`). ``progress``
    (:mod:`inspector.base.progress`) counts stages: the probe, then each role's causal test when ``causal``. Inside a
    job's deadline (:func:`inspector.core.deadline.job_deadline`) every forward stops between layers past it, and the
    causal test between its groups of copies (:class:`inspector.base.errors.DeadlineExceededError`)."""
    info = loaded.info
    repeat = default_repeat(loaded) if repeat is None else repeat
    check_options(repeat=repeat, batch=batch, top_k=top_k, window=window, seeds=seeds,
                  num_heads=info.num_layers * info.num_heads // 2, max_positions=info.max_positions, seed=seed)
    thresholds = dict(thresholds or ROLE_THRESHOLDS)
    probe = make_probe(loaded, repeat=repeat, batch=batch, seed=seed)
    # One unablated forward for both parts: the weights for the scores, the block outputs and logits for the test.
    forwarded = probe_forward(loaded, probe, backend=backend, interventions=interventions, for_causal=causal)
    per_sequence, sink_scores, windows, example = probe_scores(loaded, probe, window=window, backend=backend,
                                                               forwarded=forwarded)
    scores, low, high = {}, {}, {}
    for role in ROLES:
        mean, bottom, top = mean_interval(per_sequence[role])
        scores[role], low[role], high[role] = (np.clip(mean, 0, 1).astype(np.float32), bottom.astype(np.float32),
                                               top.astype(np.float32))
    sink_rate = (sink_scores > SINK_EPSILON).mean(axis=0).astype(np.float32)
    dominant = dominant_roles(scores, thresholds)
    result = RolesResult(model=info.name, probe=probe, window=window, top_k=top_k, seeds=seeds, thresholds=thresholds,
                         scores=scores, low=low, high=high, sink_rate=sink_rate, dominant=dominant, windows=windows,
                         weights_example=example)
    stages = 1 + (len(CAUSAL_ROLES) if causal else 0)
    progress(1, stages, "roles: probe measured")
    if not causal:
        return result
    base_run = _BaseRun.of(loaded, probe, forwarded)
    del forwarded  # the records' weights are in the scores now
    tests = []
    for done, role in enumerate(CAUSAL_ROLES, start=2):
        check_deadline(f"before the causal test of {role}")
        tests.append(causal_test(loaded, probe, role, result.top_heads(role), seeds=seeds, seed=seed, backend=backend,
                                 base_run=base_run, interventions=interventions))
        progress(done, stages, f"roles: causal test of {role} ({done - 1} of {len(CAUSAL_ROLES)})")
    tests = tuple(tests)
    return RolesResult(**{**result.__dict__, "tests": tests})


