"""Watch a causal language model write (issue 28): each new token's attention over the KV cache, the choices the
model had, entropy and sink mass per step.

:func:`generate` prefills the prompt once, then decodes one query a step against transformers' KV cache
(``DynamicCache``), every forward through the one attention function (:func:`inspector.core.forward.forward`,
an :class:`kernels.hf.AttentionRequest` per forward). Step ``t`` is the forward whose last query picks generated
token ``t``: step 0 is the prefill (its last row), step ``t ≥ 1`` the decode of token ``t − 1`` — a single query
at position ``prompt_len − 1 + t`` that sees the ``prompt_len + t`` keys before it. Every step records, for every
layer × head, the fused per-row statistics the backend computes anyway (entropy, log-sum-exp, the mass on the
first token — Xiao et al. 2023's attention sink); exact weights are materialised only for the layers asked for.

Choosing the next token follows transformers' order: logits / temperature, then top-k, then top-p (nucleus,
Holtzman et al. 2020: the smallest set of most likely tokens whose mass reaches ``top_p``), renormalised, then a
draw from a ``torch.Generator`` seeded by ``seed`` — the same seed gives the same text. ``temperature == 0`` is
greedy (the arg-max, as ``generate(do_sample=False)``); the candidates shown are then the model's own
probabilities (temperature 1, unfiltered), since the greedy distribution is a single spike.

A chat prompt (the instruct model) is rendered with the tokenizer's own chat template, through transformers'
sandboxed Jinja renderer (``apply_chat_template``), and tokenised without adding special tokens a second time.

Not supported: beam search, batches of prompts, repetition penalties — one prompt, one path, every step measured.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch

from inspector.base.display import Displayable
from inspector.base.errors import InvalidRequestError, InvalidTextError, UnsupportedModelError
from inspector.base.i18n import Notice
from inspector.base.progress import Progress, no_progress
from inspector.core.forward import EncodedText, check_every_layer_ran, encode_text, forward
from inspector.core.loading import LoadedModel
from inspector.core.model_folders import model_name
from inspector.core.token_codec import TokenCodec

# The longest generation one call makes: the page's slider and the CLI stop here (a CPU writes ~10 tokens/s).
MAX_NEW_TOKENS = 512
# How many next-token candidates each step keeps (the page's bar chart).
CANDIDATES = 10

Finish = Literal["length", "eos", "stopped"]


def _decoder_check(loaded: LoadedModel) -> None:
    info = loaded.info
    if not info.causal or info.head != "causal-lm":
        raise UnsupportedModelError(
            f"{info.name} is not a causal language model (it is {info.architecture}, head {info.head!r}), so it "
            "cannot write text; pick bundled:smollm2-135m or bundled:gemma-3-270m",
            notice=Notice("generate.error.not_decoder", model=model_name(info.name)))


# Below this, logits / temperature overflows float32 (a 1e-40 or 5e-324 typed in crashed the draw, issue 45 item 4);
# 0.01 already makes the most likely token win any gap of 0.5 logits by e^50.
MIN_TEMPERATURE = 0.01


@dataclass(frozen=True)
class SamplingOptions:
    """How each next token is chosen. ``temperature`` 0 = greedy; ``top_k`` None = no top-k cut; ``top_p`` in
    (0, 1] (1 = no nucleus cut); ``seed`` seeds the draws."""

    temperature: float = 0.0
    top_k: int | None = None
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.temperature, (int, float)) or not math.isfinite(self.temperature) \
                or self.temperature < 0:
            raise InvalidRequestError(f"temperature {self.temperature} must be a finite number ≥ 0 (0 = greedy: "
                                      "always the most likely token); try 0.7")
        if 0 < self.temperature < MIN_TEMPERATURE:
            raise InvalidRequestError(f"temperature {self.temperature:g} is below {MIN_TEMPERATURE:g}, the smallest "
                                      "one float32 logits can be divided by; use 0 for greedy, or at least "
                                      f"{MIN_TEMPERATURE:g}")
        if self.top_k is not None and (not isinstance(self.top_k, int) or self.top_k < 1):
            raise InvalidRequestError(f"top-k {self.top_k} must be a whole number ≥ 1 (the k most likely tokens "
                                      "are kept); leave it unset for no cut")
        if not isinstance(self.top_p, (int, float)) or not math.isfinite(self.top_p) or not 0 < self.top_p <= 1:
            raise InvalidRequestError(f"top-p {self.top_p} must be in (0, 1] (the share of probability mass kept; "
                                      "1 = no cut); try 0.9")
        if not isinstance(self.seed, int) or not 0 <= self.seed < 2**63:
            raise InvalidRequestError(f"seed {self.seed} must be a whole number from 0 to 2^63 − 1")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def next_token_distribution(logits: torch.Tensor, options: SamplingOptions) -> torch.Tensor:
    """(vocab,) float32 probabilities the next token is drawn from: softmax(logits / temperature) with everything
    outside the top-k and the top-p nucleus set to 0, renormalised. Greedy (temperature 0): the model's own
    softmax, unfiltered (the arg-max is taken from it)."""
    logits = logits.float()
    if options.greedy:
        return torch.softmax(logits, dim=-1)
    # The largest score becomes 0 before dividing, so no temperature ≥ MIN_TEMPERATURE overflows to inf / NaN.
    scores = (logits - logits.max()) / options.temperature
    if options.top_k is not None and options.top_k < scores.shape[-1]:
        kth = torch.topk(scores, options.top_k).values[-1]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    if options.top_p < 1:
        sorted_probs, order = torch.sort(probs, descending=True)
        before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs  # mass of the tokens more likely than each
        drop_sorted = before >= options.top_p
        # The most likely token is always kept, even for a top-p that float32 rounds to 0 (1e-300, issue 45).
        drop_sorted[0] = False
        drop = torch.zeros_like(drop_sorted).scatter(0, order, drop_sorted)
        probs = probs.masked_fill(drop, 0.0)
        probs = probs / probs.sum()
    return probs


@dataclass(frozen=True)
class Generation(Displayable):
    """One prompt's generation, every step measured. ``steps`` = how many tokens were generated (T); step ``t``'s
    query is the token at position ``prompt_len − 1 + t`` and its keys the ``prompt_len + t`` tokens before and
    including it (the module docstring). ``positions`` = prompt_len + T − 1, the longest row.

    prompt_tokens / prompt_ids: the tokenizer's strings and (prompt_len,) int64 ids, special tokens included
    (the chat template's markers for a chat prompt). prompt_text: what was tokenised (the rendered template).
    token_ids: (T,) int64 generated ids; tokens: their token strings (the tokenizer's own, ``Ġ`` and ``▁`` included);
    pieces: each one decoded on its own, as it reads in the text; text: the generated ids decoded.
    candidate_ids: (T, CANDIDATES) int64 — each step's most likely next tokens by ``candidate_probs`` (T,
    CANDIDATES) float32, probabilities of the distribution the token was chosen from (see
    :func:`next_token_distribution`), descending. chosen_prob: (T,) float32; chosen_rank: (T,) int32, the
    chosen token's rank in that distribution (0 = most likely; always 0 when greedy).
    entropy, lse, sink_mass: (T, layers, heads) float32 — each step's query row: entropy (nats), log-sum-exp of
    the scaled scores, weight on the first token (0 where a sliding window no longer sees it).
    visible_keys: (T, layers) int32 — keys each step's query could attend to (prompt_len + t, fewer in a window).
    weights: {layer: (T, heads, positions) float32} — the exact rows for the layers asked for; row t covers
    positions 0 … prompt_len + t − 1 and is 0 beyond (and before a sliding window).
    kv_cache_bytes: (T, layers) int64 — each layer's cache (keys and values) after step t's forward.
    kv_cache_bytes_mha: (T, layers) int64 — the same cache with one key/value head per query head (the
    grouped-query saving: × heads / kv_heads, from the model's shapes).
    prefill_s: seconds of the prefill forward; step_s: (T,) float64 seconds each step took, sampling included
    (step 0 = the prefill's). finish: ``length`` (max_new_tokens reached), ``eos`` (the model ended its text; the
    end token is included) or ``stopped`` (``should_stop``).
    """

    model_name: str
    prompt: str
    chat: bool
    prompt_text: str
    prompt_tokens: tuple[str, ...]
    prompt_ids: np.ndarray
    token_ids: np.ndarray
    tokens: tuple[str, ...]
    pieces: tuple[str, ...]
    text: str
    candidate_ids: np.ndarray
    candidate_tokens: tuple[tuple[str, ...], ...]
    candidate_probs: np.ndarray
    chosen_prob: np.ndarray
    chosen_rank: np.ndarray
    entropy: np.ndarray
    lse: np.ndarray
    sink_mass: np.ndarray
    visible_keys: np.ndarray
    windows: tuple[int | None, ...]
    weights: dict[int, np.ndarray]
    kv_cache_bytes: np.ndarray
    kv_cache_bytes_mha: np.ndarray
    prefill_s: float
    step_s: np.ndarray
    options: SamplingOptions
    max_new_tokens: int
    finish: Finish
    backend: str
    num_heads: int
    num_kv_heads: int
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        steps, prompt_len = len(self.token_ids), len(self.prompt_ids)
        layers, heads = (self.entropy.shape[1], self.entropy.shape[2]) if self.entropy.ndim == 3 else (0, 0)
        problems = []
        if not 1 <= steps <= self.max_new_tokens:
            problems.append(f"{steps} tokens for max_new_tokens {self.max_new_tokens}")
        if len(self.tokens) != steps or len(self.pieces) != steps or len(self.prompt_tokens) != prompt_len:
            problems.append("token strings do not match the ids")
        for name in ("entropy", "lse", "sink_mass"):
            if getattr(self, name).shape != (steps, layers, heads):
                problems.append(f"{name} {getattr(self, name).shape} ≠ {(steps, layers, heads)}")
        for name in ("visible_keys", "kv_cache_bytes", "kv_cache_bytes_mha"):
            if getattr(self, name).shape != (steps, layers):
                problems.append(f"{name} {getattr(self, name).shape} ≠ {(steps, layers)}")
        if self.candidate_ids.shape != self.candidate_probs.shape or self.candidate_ids.shape[0] != steps:
            problems.append("candidate arrays disagree")
        for layer, rows in self.weights.items():
            if rows.shape != (steps, heads, self.positions):
                problems.append(f"weights of layer {layer} {rows.shape} ≠ {(steps, heads, self.positions)}")
        if self.step_s.shape != (steps,) or len(self.windows) != layers:
            problems.append("step times or windows do not match")
        if self.finish not in ("length", "eos", "stopped"):
            problems.append(f"finish {self.finish!r}")
        if problems:
            raise ValueError("inconsistent Generation: " + "; ".join(problems))

    @property
    def steps(self) -> int:
        return len(self.token_ids)

    def reading_text(self) -> tuple[str, str | None]:
        """The generated text as a person reads it, and the end token the model stopped at, named apart (None
        unless ``finish == "eos"``): SmolLM2's text ended in a raw ``<|im_end|>`` (issue 44). ``text`` itself keeps
        every token, for the JSON."""
        if self.finish != "eos":
            return self.text, None
        return self.text.removesuffix(self.pieces[-1]), self.pieces[-1]

    @property
    def prompt_len(self) -> int:
        return len(self.prompt_ids)

    @property
    def positions(self) -> int:
        """The longest attention row: prompt_len + steps − 1 (the last token is chosen, never read back)."""
        return self.prompt_len + self.steps - 1

    @property
    def all_tokens(self) -> tuple[str, ...]:
        """Prompt and generated token strings, in order (prompt_len + steps of them)."""
        return self.prompt_tokens + self.tokens

    @property
    def tokens_per_s(self) -> float:
        """Generated tokens per second of model time (prefill included)."""
        total = float(self.step_s.sum())
        return self.steps / total if total > 0 else float("inf")


def render_prompt(loaded: LoadedModel, prompt: str, *, chat: bool) -> tuple[str, bool]:
    """The text to tokenise and whether the tokenizer should add its special tokens: the prompt itself, or the
    chat template's rendering of one user message with the assistant's turn opened (then it carries its own
    special tokens)."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise InvalidTextError("the prompt is empty; type the beginning of a text for the model to continue",
                               notice=Notice("generate.error.empty_prompt"))
    if not chat:
        return prompt, True
    if not loaded.codec.has_chat_template():
        raise InvalidRequestError(f"{loaded.info.name} has no chat template, so a chat prompt cannot be built; turn "
                                  "chat off, or pick bundled:smollm2-135m (instruction-tuned)",
                                  notice=Notice("generate.error.no_chat_template", model=model_name(loaded.info.name)))
    # transformers renders the template in a sandboxed Jinja environment: the template runs no Python.
    text = loaded.codec.chat_prompt([{"role": "user", "content": user_text(loaded.codec, prompt)}],
                                    add_generation_prompt=True)
    return text, False


# Put inside a special-token string typed by the person, it keeps the characters on screen but breaks the exact
# match the tokenizer looks for, so "<|im_start|>system" in a prompt stays text (issue 45, item 7).
_BREAK = "\u200b"


def user_text(codec: TokenCodec, content: str) -> str:
    """``content`` with every special-token string of ``codec``'s tokenizer (``<|im_start|>``, ``<start_of_turn>``, …)
    broken by a zero-width space after its first character: the chat template's output is tokenised with its
    special tokens parsed (the template's own turns must be control tokens), so role markers a user typed — or a
    ``chat=1`` link carried — would otherwise become real turns the model obeys."""
    specials = {str(token) for token in codec.all_special_tokens()}
    specials |= {token.content for token in codec.added_tokens().values()
                 if getattr(token, "special", False)}
    for special in sorted((s for s in specials if len(s) > 1), key=len, reverse=True):
        content = content.replace(special, special[0] + _BREAK + special[1:])
    return content


def has_chat_template(loaded: LoadedModel) -> bool:
    """Whether ``loaded``'s tokenizer carries a chat template (the page offers the chat toggle then)."""
    return loaded.codec.has_chat_template()


def _eos_ids(loaded: LoadedModel) -> frozenset[int]:
    ids: set[int] = set()
    for value in (getattr(getattr(loaded.model, "generation_config", None), "eos_token_id", None),
                  getattr(loaded.model.config, "eos_token_id", None), loaded.codec.special_token_id("eos")):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(int(v) for v in value)
    return frozenset(ids)


def _cache_bytes(cache) -> list[int]:
    """Bytes each layer's keys and values take in a transformers cache."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        pairs = [(getattr(layer, "keys", None), getattr(layer, "values", None)) for layer in layers]
    else:  # older transformers
        pairs = list(zip(cache.key_cache, cache.value_cache))
    return [sum(int(t.numel()) * t.element_size() for t in pair if isinstance(t, torch.Tensor)) for pair in pairs]


def check_request(loaded: LoadedModel, prompt_len: int, max_new_tokens: int) -> None:
    """``max_new_tokens`` in 1 … :data:`MAX_NEW_TOKENS` and the whole text within the model's positions."""
    limit = loaded.info.max_positions
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise InvalidRequestError(f"max new tokens {max_new_tokens} must be at least 1; ask for 32, say")
    if max_new_tokens > MAX_NEW_TOKENS:
        raise InvalidRequestError(f"max new tokens {max_new_tokens:,} is more than the {MAX_NEW_TOKENS} one run "
                                  "writes here; ask for fewer")
    if prompt_len + max_new_tokens > limit:
        raise InvalidRequestError(f"the prompt has {prompt_len} tokens and {max_new_tokens} new ones would make "
                                  f"{prompt_len + max_new_tokens}, past the {limit:,} positions {loaded.info.name} "
                                  f"reads; ask for at most {max(limit - prompt_len, 0)} new tokens or shorten the "
                                  "prompt", notice=Notice("generate.error.past_positions", prompt=prompt_len,
                                                          new=max_new_tokens, limit=f"{limit:,}",
                                                          model=model_name(loaded.info.name),
                                                          room=max(limit - prompt_len, 0)))


def generate(
    loaded: LoadedModel,
    prompt: str,
    *,
    max_new_tokens: int = 32,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float = 1.0,
    seed: int = 0,
    chat: bool = False,
    weights: Iterable[int] | Literal["all"] | None = None,
    backend: str = "auto",
    stop_at_eos: bool = True,
    progress: Progress = no_progress,
    on_token: Callable[[int, str, str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    encoded: EncodedText | None = None,
) -> Generation:
    """Continue ``prompt`` by up to ``max_new_tokens`` tokens, measuring every step (see :class:`Generation`).

    ``weights``: the layers whose exact attention rows to keep (``"all"``, indices, or None). ``chat``: render the
    prompt with the model's chat template (:func:`render_prompt`). ``stop_at_eos``: end at the model's
    end-of-text token, as transformers' ``generate`` does. ``progress(done, total, note)``: the project's progress
    contract, once per token (units: tokens; a callback that raises stops the run). ``on_token(step, token,
    text)``: the new token's string and the generated text so far, for a page that streams them.
    ``should_stop()``: polled before each step; True ends the run there with ``finish == "stopped"`` and the
    steps so far. ``encoded``: the prompt as :func:`render_prompt` and :func:`~inspector.core.forward.encode_text`
    made it for the run's plan (:func:`inspector.serving.run.plan`), so the prompt is tokenised once; None: here.

    Raises :class:`InvalidTextError` (empty prompt, past the model's length), :class:`InvalidRequestError` (bad
    sampling options, max_new_tokens 0 or past the positions, a layer the model lacks, chat without a template),
    :class:`UnsupportedModelError` (not a causal LM), and what :func:`inspector.core.forward.forward` raises."""
    options = SamplingOptions(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    _decoder_check(loaded)
    info = loaded.info
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        check_request(loaded, 0, max_new_tokens)  # refuses before the prompt is even tokenised
    text, add_special = render_prompt(loaded, prompt, chat=chat)
    if encoded is None:
        encoded = encode_text(loaded, text, add_special_tokens=add_special)
    prompt_ids = encoded.inputs["input_ids"].to(loaded.device)  # (1, prompt_len)
    prompt_len = prompt_ids.shape[1]
    check_request(loaded, prompt_len, max_new_tokens)
    layers_wanted = _layers_wanted(info, weights)
    eos = _eos_ids(loaded) if stop_at_eos else frozenset()

    from transformers import DynamicCache

    cache = DynamicCache(config=loaded.model.config)
    generator = torch.Generator(device="cpu").manual_seed(options.seed)
    device = loaded.device
    trace = _Trace(rows={layer: [] for layer in sorted(layers_wanted)})
    windows: tuple[int | None, ...] = ()
    finish: Finish = "length"
    prefill_s = 0.0
    backend_ran = "torch"
    inputs = {"input_ids": prompt_ids}
    for step in range(max_new_tokens):
        if should_stop is not None and step > 0 and should_stop():
            finish = "stopped"
            break
        started = time.perf_counter()
        result = forward(loaded, inputs, backend=backend, weights_layers=layers_wanted or None,
                         stats=("entropy", "lse", "sink"), cache=cache, logits_to_keep=1)
        backend_ran, records = result.backend, result.records
        check_every_layer_ran(loaded, records)
        trace.keep(records, prompt_len + step)
        windows = tuple(r.window for r in records)
        token, probs = _choose_token(result.outputs.logits[0, -1], options, generator)
        trace.choose(token, probs, options.greedy, _cache_bytes(cache))
        elapsed = time.perf_counter() - started
        if step == 0:
            prefill_s = elapsed
        trace.step_s.append(elapsed)
        token_text = _token_string(loaded, token)
        progress(step + 1, max_new_tokens, f"token {step + 1}/{max_new_tokens}: {token_text!r}")
        if on_token is not None:
            on_token(step, token_text, _decode(loaded, trace.ids))
        if token in eos:
            finish = "eos"
            break
        inputs = {"input_ids": torch.tensor([[token]], device=device)}
    if finish != "length" and trace.ids:
        progress(max_new_tokens, max_new_tokens, f"{len(trace.ids)} tokens ({finish})")

    candidate_ids = torch.stack(trace.cand_ids).numpy().astype(np.int64)
    candidate_tokens = tuple(tuple(_shown_tokens(loaded, row.tolist())) for row in candidate_ids)
    tokens = tuple(_shown_tokens(loaded, trace.ids))
    pieces = tuple(loaded.codec.decode([i], skip_special_tokens=False) for i in trace.ids)
    return Generation(
        model_name=info.name, prompt=prompt, chat=chat, prompt_text=text, prompt_tokens=encoded.tokens,
        prompt_ids=prompt_ids[0].cpu().numpy().astype(np.int64), token_ids=np.asarray(trace.ids, dtype=np.int64),
        tokens=tokens, pieces=pieces, text=_decode(loaded, trace.ids), candidate_ids=candidate_ids,
        candidate_tokens=candidate_tokens, **trace.arrays(info.num_heads, info.num_kv_heads, prompt_len),
        windows=windows, prefill_s=prefill_s, options=options,
        max_new_tokens=max_new_tokens, finish=finish, backend=backend_ran, num_heads=info.num_heads,
        num_kv_heads=info.num_kv_heads)


def _choose_token(logits: torch.Tensor, options: SamplingOptions, generator: torch.Generator,
                  ) -> tuple[int, torch.Tensor]:
    """The next token from the last position's ``logits`` (vocab,) — the arg-max when greedy, else a draw — and the
    sampling distribution it came from."""
    probs = next_token_distribution(logits, options)
    if options.greedy:
        return int(torch.argmax(logits)), probs
    return int(torch.multinomial(probs.cpu(), 1, generator=generator)), probs


def _layers_wanted(info, weights: Iterable[int] | Literal["all"] | None) -> frozenset[int]:
    """The layers whose attention rows :func:`generate` keeps, each checked against the model."""
    if weights == "all":
        return frozenset(range(info.num_layers))
    if weights is None:
        return frozenset()
    return frozenset(info.check_layer(int(layer), "a weights layer") for layer in weights)


@dataclass
class _Trace:
    """What :func:`generate` gathers step by step (T = the steps so far): per step the last query's statistics
    (layers, heads), visible keys (layers,), the kept weight rows of ``rows``' layers, the token chosen with its
    probability, rank and the top candidates, the KV cache's bytes per layer and the step's seconds."""

    rows: dict[int, list[tuple[int, torch.Tensor]]]
    ids: list[int] = field(default_factory=list)
    stats: dict[str, list[torch.Tensor]] = field(default_factory=lambda: {"entropy": [], "lse": [], "sink": []})
    visible: list[torch.Tensor] = field(default_factory=list)
    cand_ids: list[torch.Tensor] = field(default_factory=list)
    cand_probs: list[torch.Tensor] = field(default_factory=list)
    chosen_prob: list[float] = field(default_factory=list)
    chosen_rank: list[int] = field(default_factory=list)
    kv_bytes: list = field(default_factory=list)
    step_s: list[float] = field(default_factory=list)

    def keep(self, records, seen: int) -> None:
        """One step's last-query statistics, visible keys and kept weight rows; ``seen``: the tokens the cache holds
        after this step's forward."""
        for name in self.stats:
            # (layers, heads): the last query's row of each layer (the prefill has prompt_len queries, a decode 1)
            self.stats[name].append(torch.stack([r.stats[name][0, :, -1] for r in records]))
        slid = [r.layer for r in records if r.k_len is not None and r.k_len < seen]
        if slid:  # the cache dropped token 0: its first key is a later token, and token 0's weight is 0
            self.stats["sink"][-1][slid] = 0.0
        self.visible.append(torch.stack([r.visible_keys[0, -1] for r in records]))
        for record in records:
            if record.weights is not None:
                self.rows[record.layer].append((seen, record.weights[0, :, -1]))  # (heads, k_len) over the last k_len

    def choose(self, token: int, probs: torch.Tensor, greedy: bool, kv_bytes) -> None:
        """The step's token, drawn from ``probs`` (vocab,), with its candidates and the cache's bytes after it."""
        top = torch.topk(probs, min(CANDIDATES, probs.shape[-1]))
        self.cand_ids.append(top.indices.cpu())
        self.cand_probs.append(top.values.cpu())
        self.chosen_prob.append(float(probs[token]))
        # greedy: the arg-max of the logits is the softmax's largest entry (softmax is monotone), rank 0
        self.chosen_rank.append(0 if greedy else int((probs > probs[token]).sum()))
        self.kv_bytes.append(kv_bytes)
        self.ids.append(token)

    def arrays(self, heads: int, kv_heads: int, prompt_len: int) -> dict:
        """The :class:`Generation` fields these steps fill, as arrays."""
        steps = len(self.ids)
        stacked = {name: torch.stack(values).float().cpu().numpy() for name, values in self.stats.items()}
        kv = np.asarray(self.kv_bytes, dtype=np.int64)  # (T, layers)
        return dict(
            candidate_probs=torch.stack(self.cand_probs).float().numpy(),
            chosen_prob=np.asarray(self.chosen_prob, dtype=np.float32),
            chosen_rank=np.asarray(self.chosen_rank, dtype=np.int32),
            entropy=stacked["entropy"], lse=stacked["lse"], sink_mass=stacked["sink"],
            visible_keys=torch.stack(self.visible).cpu().numpy().astype(np.int32),  # (T, layers)
            weights={layer: _weights_rows(layer_rows, steps, heads, prompt_len + steps - 1)
                     for layer, layer_rows in self.rows.items()},
            kv_cache_bytes=kv, kv_cache_bytes_mha=kv * (heads // max(kv_heads, 1)),
            step_s=np.asarray(self.step_s, dtype=np.float64))


def _weights_rows(layer_rows: list[tuple[int, torch.Tensor]], steps: int, heads: int, positions: int) -> np.ndarray:
    """One layer's kept rows as (steps, heads, positions) float32, zero where a step's query saw no key."""
    full = np.zeros((steps, heads, positions), dtype=np.float32)
    for t, (seen, row) in enumerate(layer_rows):
        k_len = row.shape[-1]
        full[t, :, seen - k_len:seen] = row.float().cpu().numpy()  # a cache that slid keeps the last keys
    return full


def _shown_tokens(loaded: LoadedModel, ids: list[int]) -> list[str]:
    return [str(t) for t in loaded.codec.token_strings(ids)]


def _token_string(loaded: LoadedModel, token: int) -> str:
    return str(loaded.codec.token_string(token))


def _decode(loaded: LoadedModel, ids: list[int]) -> str:
    return loaded.codec.decode(ids, skip_special_tokens=False)


def generation_json(result: Generation) -> dict:
    """The CLI's and the page's export: every number of ``result`` as plain JSON types."""
    return {
        "model": result.model_name, "prompt": result.prompt, "chat": result.chat, "prompt_text": result.prompt_text,
        "backend": result.backend,
        "options": {"max_new_tokens": result.max_new_tokens, "temperature": result.options.temperature,
                    "top_k": result.options.top_k, "top_p": result.options.top_p, "seed": result.options.seed},
        "prompt_tokens": list(result.prompt_tokens), "prompt_ids": result.prompt_ids,
        "tokens": list(result.tokens), "pieces": list(result.pieces), "token_ids": result.token_ids,
        "text": result.text, "finish": result.finish,
        "candidates": [[{"token": tok, "id": int(i), "p": float(p)} for tok, i, p in zip(toks, ids, probs)]
                       for toks, ids, probs in zip(result.candidate_tokens, result.candidate_ids,
                                                   result.candidate_probs)],
        "chosen_prob": result.chosen_prob, "chosen_rank": result.chosen_rank,
        "entropy": result.entropy, "lse": result.lse, "sink_mass": result.sink_mass,
        "visible_keys": result.visible_keys, "windows": list(result.windows),
        "attention": {str(layer): rows for layer, rows in result.weights.items()},
        "kv_cache_bytes": result.kv_cache_bytes, "kv_cache_bytes_mha": result.kv_cache_bytes_mha,
        "num_heads": result.num_heads, "num_kv_heads": result.num_kv_heads,
        "prefill_s": result.prefill_s, "step_s": result.step_s, "tokens_per_s": result.tokens_per_s,
    }
