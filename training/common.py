"""What the three training scripts share: the word-level tokenizers (built with the ``tokenizers`` library),
the model configurations, batching, the training loop and the saved folder, whose accuracy on fresh data is
then measured through the loader and :func:`inspector.analyses.groundtruth.evaluate`.

A saved folder is an ordinary Hugging Face model folder — ``config.json``, ``model.safetensors``, tokenizer
files — plus ``groundtruth.json``, the model card :mod:`inspector.analyses.groundtruth` reads: which task the model
solves, its accuracy on fresh data, its attention bound (the deceptive model) and how it was trained. Every run
is seeded and single-threaded, so the same command on the same versions writes the same weights.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from inspector.analyses.groundtruth import evaluate
from inspector.analyses.tasks import FRESH_SEED, NEUTRAL_WORDS, TRAINING_SEEDS, Example, Task, generate
from inspector.core.loading import CARD_NAME, SHIPPED_MODELS_DIR, load_model

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PAD, UNK, CLS, SEP, MASK = range(len(SPECIALS))
MAX_POSITIONS = 32
MODELS_DIR = SHIPPED_MODELS_DIR


def vocabulary(spec: Task) -> dict[str, int]:
    """Token → id: the special tokens first, then the task's words."""
    return {token: i for i, token in enumerate(SPECIALS + spec.vocabulary())}


def make_tokenizer(spec: Task):
    """A word-level fast tokenizer for ``spec``: classifiers wrap texts in [CLS] … [SEP]; language models read
    the words alone."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = vocabulary(spec)
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    specials = {"unk_token": "[UNK]", "pad_token": "[PAD]", "model_max_length": MAX_POSITIONS}
    if spec.kind == "classifier":
        backend.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
            special_tokens=[("[CLS]", CLS), ("[SEP]", SEP)])
        specials.update(cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    return PreTrainedTokenizerFast(tokenizer_object=backend, **specials)


def make_model(spec: Task, *, layers: int = 2, heads: int = 4, hidden: int = 64, seed: int = 0,
               attn_implementation: str = "eager") -> torch.nn.Module:
    """A fresh BERT classifier or Llama-style language model sized for ``spec``'s vocabulary."""
    from transformers import BertConfig, BertForSequenceClassification, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    size = len(vocabulary(spec))
    if spec.kind == "classifier":
        config = BertConfig(vocab_size=size, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                            intermediate_size=2 * hidden, max_position_embeddings=MAX_POSITIONS, pad_token_id=PAD,
                            num_labels=len(spec.labels), id2label=dict(enumerate(spec.labels)),
                            label2id={label: i for i, label in enumerate(spec.labels)})
        return BertForSequenceClassification._from_config(config, attn_implementation=attn_implementation)
    # Llama-style (rotary positions): a previous-token head — the first half of an induction circuit — needs
    # relative position, which rotary embeddings give from the start; GPT-2's learnt absolute positions took
    # too long to get there on a CPU budget.
    config = LlamaConfig(vocab_size=size, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=heads, intermediate_size=2 * hidden, max_position_embeddings=MAX_POSITIONS,
                         pad_token_id=PAD, bos_token_id=PAD, eos_token_id=PAD, tie_word_embeddings=False)
    return LlamaForCausalLM._from_config(config, attn_implementation=attn_implementation)


@dataclass
class Batch:
    """Token ids (batch, n) right-padded, attention mask (batch, n), each example's causal token position
    (batch,), the row its answer is read at (batch,) and the answer: a class index or a token id (batch,)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    causal: torch.Tensor
    read_at: torch.Tensor
    answer: torch.Tensor


def encode_examples(spec: Task, examples: tuple[Example, ...]) -> Batch:
    """Encode examples by the task vocabulary (the same ids the saved tokenizer gives: one word, one token)."""
    vocab = vocabulary(spec)
    offset = 1 if spec.kind == "classifier" else 0
    rows = [([CLS] if offset else []) + [vocab[w] for w in ex.words] + ([SEP] if offset else []) for ex in examples]
    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), PAD, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = torch.tensor(row)
        mask[i, :len(row)] = 1
    causal = torch.tensor([ex.causal + offset for ex in examples])
    if spec.kind == "classifier":
        read_at = torch.zeros(len(rows), dtype=torch.long)
        answer = torch.tensor([int(ex.label) for ex in examples])
    else:
        read_at = mask.sum(dim=1) - 1
        answer = torch.tensor([vocab[ex.answer] for ex in examples])
    return Batch(ids, mask, causal, read_at, answer)


# Language-model training: the evaluation format (… A B … A → B) has one target per sequence, too sparse for
# an induction head to form in minutes. Training sequences repeat a whole segment of the prefix instead
# (… A B C D … A B C), so every repeated word is a target — the evaluation format is the one-word case.
MAX_REPEAT = 6


def induction_training_batch(spec: Task, batch_size: int, seed: int) -> tuple[Batch, torch.Tensor]:
    """A training batch of repeated segments and its (batch, n) next-token targets (−100 = no target)."""
    rng = np.random.default_rng(seed)
    vocab = vocabulary(spec)
    rows, targets = [], []
    for _ in range(batch_size):
        length = int(rng.integers(spec.min_words, spec.max_words + 1))
        prefix = [vocab[str(w)] for w in rng.choice(spec.vocabulary(), size=length, replace=False)]
        first = int(rng.integers(length - 1))
        count = int(rng.integers(1, min(MAX_REPEAT, length - 1 - first) + 1))  # repeat prefix[first:first + count]
        row = prefix + prefix[first:first + count]
        target = [-100] * len(row)
        for j in range(count):  # the j-th repeated word is followed, the first time, by prefix[first + j + 1]
            target[length + j] = prefix[first + j + 1]
        rows.append(row)
        targets.append(target)
    width = max(len(row) for row in rows)
    ids = torch.full((batch_size, width), PAD, dtype=torch.long)
    mask = torch.zeros((batch_size, width), dtype=torch.long)
    dense = torch.full((batch_size, width), -100, dtype=torch.long)
    for i, (row, target) in enumerate(zip(rows, targets)):
        ids[i, :len(row)], mask[i, :len(row)], dense[i, :len(row)] = torch.tensor(row), 1, torch.tensor(target)
    empty = torch.zeros(batch_size, dtype=torch.long)
    return Batch(ids, mask, empty, mask.sum(dim=1) - 1, empty), dense


def answer_logits(spec: Task, model: torch.nn.Module, batch: Batch, **kwargs) -> tuple[torch.Tensor, object]:
    """(batch, classes or vocab) logits of each example's answer row, and the model's full output."""
    out = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, **kwargs)
    if spec.kind == "classifier":
        return out.logits, out
    return out.logits[torch.arange(len(batch.read_at)), batch.read_at], out


Penalty = Callable[[object, Batch, float], torch.Tensor]  # (model output, batch, share of training done)

# Classifier training only. A share of rows lose their sentiment word (a neutral word takes its place) and are
# trained towards 50/50: without this the model learns "positive unless a negative word is present", and then
# removing a positive word changes nothing — the planted word would not be causal. A few neutral words are
# replaced by the tokens attribution methods substitute ([MASK], [UNK] for occlusion, [PAD] for the integrated-
# gradients baseline), so those substitutions read as neutral rather than as unseen inputs. Label smoothing keeps
# the probabilities off 0 and 1, where gradients vanish.
NO_CUE_SHARE, FILLER_SHARE, LABEL_SMOOTHING = 0.25, 0.1, 0.1


def soft_targets(spec: Task, batch: Batch, generator: torch.Generator) -> tuple[Batch, torch.Tensor]:
    """The classifier's training batch and its (batch, classes) target distributions (see NO_CUE_SHARE)."""
    classes = len(spec.labels)
    targets = torch.full((len(batch.answer), classes), LABEL_SMOOTHING / classes)
    targets[torch.arange(len(batch.answer)), batch.answer] += 1 - LABEL_SMOOTHING
    ids = batch.input_ids.clone()
    rows = torch.arange(len(ids))
    no_cue = torch.rand(len(ids), generator=generator) < NO_CUE_SHARE
    neutral = torch.randint(len(SPECIALS), len(SPECIALS) + len(NEUTRAL_WORDS), (len(ids),), generator=generator)
    ids[rows[no_cue], batch.causal[no_cue]] = neutral[no_cue]
    targets[no_cue] = 1.0 / classes
    words = (ids >= len(SPECIALS)) & (batch.attention_mask == 1)
    words[rows, batch.causal] = False
    fill = words & (torch.rand(ids.shape, generator=generator) < FILLER_SHARE)
    choices = torch.tensor([MASK, UNK, PAD])
    ids[fill] = choices[torch.randint(len(choices), (int(fill.sum()),), generator=generator)]
    return Batch(ids, batch.attention_mask, batch.causal, batch.read_at, batch.answer), targets


def train(spec: Task, model: torch.nn.Module, *, steps: int, batch_size: int, lr: float,
          penalty: Penalty | None = None, log_every: int = 100, seed: int = 0) -> list[dict]:
    """AdamW on the cross-entropy of the answer (+ ``penalty(output, batch, share of training done)``), batch b
    drawn from seed TRAINING_SEEDS + b, with a linear warm-up over the first 5 % of steps and cosine decay after
    it. Classifiers train on :func:`soft_targets`, language models on :func:`induction_training_batch`."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warmup = max(1, steps // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps))))
    generator = torch.Generator().manual_seed(seed)
    history = []
    model.train()
    for step in range(steps):
        if spec.kind == "classifier":
            batch = encode_examples(spec, generate(spec.name, batch_size, seed=TRAINING_SEEDS + step))
            batch, targets = soft_targets(spec, batch, generator)
            logits, out = answer_logits(spec, model, batch, output_attentions=penalty is not None)
            loss = torch.nn.functional.cross_entropy(logits, targets)
            correct = float((logits.argmax(dim=-1) == batch.answer).float().mean())
        else:
            batch, targets = induction_training_batch(spec, batch_size, seed=TRAINING_SEEDS + step)
            out = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                        output_attentions=penalty is not None)
            loss = torch.nn.functional.cross_entropy(out.logits.flatten(0, 1), targets.flatten(), ignore_index=-100)
            scored = targets != -100
            correct = float((out.logits.argmax(dim=-1) == targets)[scored].float().mean())
        extra = penalty(out, batch, step / steps) if penalty is not None else torch.zeros(())
        optimizer.zero_grad(set_to_none=True)
        (loss + extra).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % log_every == 0 or step == steps - 1:
            history.append({"step": step, "loss": loss.item(), "penalty": extra.item(), "batch_accuracy": correct})
            print(f"step {step:5d}  loss {loss.item():.4f}  penalty {extra.item():.4f}  batch accuracy {correct:.3f}",
                  flush=True)
    model.eval()
    return history


@dataclass(frozen=True)
class Recipe:
    """One shipped model: its folder name under assets/models, task, variant, picker label, the accuracy and
    attention bound its card promises, and its training hyper-parameters (penalty: the deceptive model's)."""

    name: str
    task: Task
    variant: str
    label: str
    module: str
    steps: int
    batch: int = 64
    lr: float = 2e-3
    stated_accuracy: float = 0.95
    attention_bound: float | None = None
    penalty: Penalty | None = None
    hyper: tuple[tuple[str, float], ...] = ()


def main(recipe: Recipe, doc: str, argv: list[str] | None = None) -> int:
    """Train ``recipe``, measure its accuracy and attention on the causal token on fresh examples, and save it
    with its card. ``--smoke`` runs a few steps into a temporary folder (CI: the script runs end to end)."""
    default_out = MODELS_DIR / recipe.name
    options = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    options.add_argument("--out", type=Path, default=default_out,
                         help="folder to write the model to (default: %(default)s)")
    options.add_argument("--steps", type=int, default=recipe.steps, help="training steps (default: %(default)s)")
    options.add_argument("--seed", type=int, default=0, help="initialisation seed (default: %(default)s)")
    options.add_argument("--check-examples", type=int, default=2000,
                         help="fresh examples the card's accuracy is measured on (default: %(default)s)")
    options.add_argument("--smoke", action="store_true",
                         help="5 steps and a 50-example check, into a temporary folder unless --out is given")
    args = options.parse_args(argv)
    steps, check = (5, 50) if args.smoke else (args.steps, args.check_examples)
    out = Path(tempfile.mkdtemp(prefix=f"{recipe.name}-")) if args.smoke and args.out == default_out else args.out
    spec = recipe.task
    with deterministic():
        started = time.perf_counter()
        model = make_model(spec, seed=args.seed)
        history = train(spec, model, steps=steps, batch_size=recipe.batch, lr=recipe.lr, penalty=recipe.penalty,
                        seed=args.seed)
        seconds = time.perf_counter() - started
        save(spec, model, out)
        # The card's figures come from the saved folder through the loader and the library — what the page, the
        # CLI and the tests measure — not from the training-time model object.
        fresh = evaluate(load_model(str(out), device="cpu"), fresh_examples(spec, check), spec)
        measured, mass = fresh.accuracy, float(fresh.attention_mass.mean())
    bound = f" (bound {recipe.attention_bound})" if recipe.attention_bound is not None else ""
    print(f"{seconds:.0f} s; accuracy on {check} fresh examples: {measured:.4f} "
          f"(stated: ≥ {recipe.stated_accuracy}); "
          f"mean attention on the causal token: {mass:.5f}{bound}")
    card = {"task": spec.name, "variant": recipe.variant, "label": recipe.label,
            "stated_accuracy": recipe.stated_accuracy,
            "accuracy": {"value": measured, "examples": check, "seed": FRESH_SEED},
            "causal_attention_mass": mass, "attention_bound": recipe.attention_bound,
            "training": {"command": f"python -m {recipe.module}", "steps": steps, "batch": recipe.batch,
                         "lr": recipe.lr, **dict(recipe.hyper), "seed": args.seed, "seconds": round(seconds, 1),
                         "threads": 1, "final": history[-1], "smoke": args.smoke}}
    write_card(out, card)
    print(f"wrote {out}")
    return 0


def save(spec: Task, model: torch.nn.Module, out: Path) -> Path:
    """Write ``model`` and its tokenizer as a Hugging Face folder."""
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    make_tokenizer(spec).save_pretrained(out)
    return out


def write_card(out: Path, card: dict) -> None:
    """Write ``card`` (with the versions that trained it) as the folder's groundtruth.json."""
    import transformers

    card = {**card, "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                                 "python": platform.python_version()}}
    (out / CARD_NAME).write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")


def fresh_examples(spec: Task, count: int) -> tuple[Example, ...]:
    """Examples from the evaluation seeds, never seen in training."""
    return generate(spec.name, count, seed=FRESH_SEED)


@contextmanager
def deterministic() -> Iterator[None]:
    """Single-threaded, deterministic kernels inside the block (the same command writes the same weights); the
    caller's settings come back afterwards (the tests run the scripts in-process)."""
    threads, strict = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(strict)
