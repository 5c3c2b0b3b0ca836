"""The TransformerLens side of ``benchmarks/mechanism.py`` — run by the SEPARATE TransformerLens environment
(``python3.11 -m venv /work/tl-venv && /work/tl-venv/bin/pip install transformer-lens==4.3.* torch==2.13.0
transformers==5.24.0``; never the app's). Reads one JSON job on stdin — a prepared bundled folder, the token ids the
inspector used, the answer and contrast ids, rounds — boots the folder offline with
``TransformerBridge.boot_transformers(folder)`` in compatibility mode, and prints one JSON line: direct logit
attribution per head on the DLA text and on the clean text (``stack_head_results`` + ``apply_ln_to_stack``),
``patching.get_act_patch_attn_head_out_all_pos`` and ``patching.get_act_patch_resid_pre`` with the normalised
logit-difference metric, their times per round, and the versions that ran.

A model with post-attention norms (Gemma 3's sandwich norm): TransformerLens's head results are taken before that norm
(their sum is its ``hook_in``), so they are not what a head writes into the residual stream. Each head's result is
multiplied by the norm's measured diagonal map at the position (``hook_out / hook_in``, the norm with its scale frozen
at the value the forward measured), as the inspector's direct logit attribution freezes it, before
``apply_ln_to_stack``."""

from __future__ import annotations

import json
import os
import sys
import time
from importlib import metadata

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformer_lens import patching  # noqa: E402
from transformer_lens.model_bridge import TransformerBridge  # noqa: E402


def head_dla(model, cache, direction: torch.Tensor) -> torch.Tensor:
    """(layers, heads) direct logit attribution of every head at the last position: each head's write (frozen
    through a post-attention norm, see the module docstring) through the final norm at its cached scale, onto
    ``direction`` (the unembedding's answer − contrast column)."""
    layers, heads = model.cfg.n_layers, model.cfg.n_heads
    stack = cache.stack_head_results(layer=-1, pos_slice=-1)  # (layers · heads, batch, d_model)
    if "blocks.0.ln1_post.hook_in" in cache:
        frozen = torch.stack([cache[f"blocks.{layer}.ln1_post.hook_out"][0, -1]
                              / cache[f"blocks.{layer}.ln1_post.hook_in"][0, -1] for layer in range(layers)])
        stack = (stack.reshape(layers, heads, *stack.shape[1:]) * frozen[:, None, None]).reshape(stack.shape)
    return (cache.apply_ln_to_stack(stack, layer=-1, pos_slice=-1) @ direction)[:, 0].reshape(layers, heads)


def main() -> None:
    job = json.loads(sys.stdin.read())
    torch.set_grad_enabled(False)
    started = time.perf_counter()
    model = TransformerBridge.boot_transformers(job["folder"], device="cpu")
    model.enable_compatibility_mode(disable_warnings=True)
    boot_s = time.perf_counter() - started
    answer, contrast = job["answer_id"], job["contrast_id"]
    direction = model.W_U[:, answer] - model.W_U[:, contrast]
    dla_ids = torch.tensor([job["dla_ids"]])
    clean, corrupted = torch.tensor([job["clean_ids"]]), torch.tensor([job["corrupted_ids"]])
    result: dict = {"boot_s": boot_s, "dla_s": [], "patch_heads_s": [], "patch_resid_s": [],
                    "torch_threads": torch.get_num_threads(),
                    "versions": {name: metadata.version(name) for name in ("transformer-lens", "torch",
                                                                            "transformers")}}
    for _ in range(job["rounds"]):
        t0 = time.perf_counter()
        _, cache = model.run_with_cache(dla_ids)
        heads = head_dla(model, cache, direction)
        result["dla_s"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        clean_logits, clean_cache = model.run_with_cache(clean)
        corrupted_logits = model(corrupted)

        def difference(logits):
            return logits[0, -1, answer] - logits[0, -1, contrast]

        clean_value, corrupted_value = float(difference(clean_logits)), float(difference(corrupted_logits))

        def metric(logits):
            return (difference(logits) - corrupted_value) / (clean_value - corrupted_value)

        head_patch = patching.get_act_patch_attn_head_out_all_pos(model, corrupted, clean_cache, metric)
        result["patch_heads_s"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        resid_patch = patching.get_act_patch_resid_pre(model, corrupted, clean_cache, metric)
        result["patch_resid_s"].append(time.perf_counter() - t0)
    result.update(dla_heads=heads.tolist(), clean_dla_heads=head_dla(model, clean_cache, direction).tolist(),
                  patch_heads=torch.as_tensor(head_patch).tolist(), patch_resid=torch.as_tensor(resid_patch).tolist(),
                  clean_value=clean_value, corrupted_value=corrupted_value)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
