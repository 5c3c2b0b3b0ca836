"""Decoding speed of the Generate page's library call (issue 28) against transformers, on the bundled decoders.

For each model, a prompt cut to about ``--prompt-tokens`` tokens and ``--new-tokens`` greedy tokens (the end token
does not stop any variant), each variant in its own process (so each peak RSS is its own), one thread:

- ``ours``: :func:`inspector.analyses.generate.generate` — prefill, then one query a step against the KV cache through
  the inspector's attention function, entropy / LSE / sink mass of every layer × head recorded at every step;
- ``eager``: transformers ``generate(do_sample=False)`` with eager attention and its KV cache;
- ``recompute``: no cache — the whole sequence forwarded again each step (eager attention, logits of the last
  position only);
- ``ours+weights``: ``ours`` with one layer's exact attention rows kept as well (the middle layer).

Each variant reports wall seconds for the whole generation (prefill included), tokens/s, the model's load RSS and
the peak RSS of its process, and its tokens — all four must agree. Run: ``python -m benchmarks.generate_decoding``
(``--json OUT`` to keep the numbers). Never collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

MODELS = ("bundled:gemma-3-270m", "bundled:smollm2-135m")
VARIANTS = ("ours", "eager", "recompute", "ours+weights")
PARAGRAPH = ("The history of the printing press begins in the fifteenth century, when Johannes Gutenberg combined "
             "movable metal type, oil-based inks and a wooden press adapted from those used to make wine. Books, "
             "which had been copied by hand for centuries, could now be produced in hundreds of identical copies, "
             "and within fifty years presses were running in more than two hundred cities across Europe. Scholars "
             "argue about how quickly the new technology changed the way people read, wrote and thought, but few "
             "doubt that it spread ideas faster than any invention before it. ")


def rss_mib() -> float:
    """This process's peak resident set size so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def prompt_of(loaded, tokens: int) -> str:
    """A prose prompt cut at a token boundary so that it tokenises to about ``tokens`` tokens (BOS included)."""
    text = PARAGRAPH * 8
    encoding = loaded.codec.encode(text, return_offsets_mapping=True)
    return text[:encoding["offset_mapping"][tokens - 1][1]]  # a leading BOS has the offsets (0, 0)


def run_variant(model: str, variant: str, prompt_tokens: int, new_tokens: int) -> dict:
    import torch

    torch.set_num_threads(1)
    from transformers import AutoModelForCausalLM

    from inspector.analyses.generate import generate
    from inspector.core.loading import load_model

    loaded = load_model(model, device="cpu")
    prompt = prompt_of(loaded, prompt_tokens)
    ids = loaded.codec.encode(prompt, return_tensors="pt")["input_ids"]
    eager = None
    if variant in ("eager", "recompute"):
        eager = AutoModelForCausalLM.from_pretrained(loaded.info.source, attn_implementation="eager").eval()
        eager.generation_config.eos_token_id = None
        eager.generation_config.pad_token_id = 0
        del loaded  # the eager copy alone, as a transformers user would have it
    load_rss = rss_mib()
    started = time.perf_counter()
    with torch.inference_mode():
        if variant in ("ours", "ours+weights"):
            weights = [loaded.info.num_layers // 2] if variant == "ours+weights" else None
            result = generate(loaded, prompt, max_new_tokens=new_tokens, weights=weights, stop_at_eos=False,
                              backend="torch")
            tokens = result.token_ids.tolist()
            prefill = result.prefill_s
        elif variant == "eager":
            out = eager.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                                 min_new_tokens=new_tokens, do_sample=False)
            tokens = out[0, ids.shape[1]:].tolist()
            prefill = None
        else:
            sequence = ids
            tokens = []
            prefill = None
            for _ in range(new_tokens):
                logits = eager(input_ids=sequence, use_cache=False, logits_to_keep=1).logits[0, -1]
                token = int(torch.argmax(logits))
                tokens.append(token)
                sequence = torch.cat([sequence, torch.tensor([[token]])], dim=1)
    seconds = time.perf_counter() - started
    return {"model": model, "variant": variant, "prompt_tokens": int(ids.shape[1]), "new_tokens": len(tokens),
            "seconds": seconds, "tokens_per_s": len(tokens) / seconds, "prefill_s": prefill,
            "load_rss_mib": load_rss, "peak_rss_mib": rss_mib(), "tokens": tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--json", metavar="OUT")
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "VARIANT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_variant(args.one[0], args.one[1], args.prompt_tokens, args.new_tokens)))
        return
    with open("/proc/loadavg") as load:
        print(f"load average before: {load.read().strip()}", flush=True)
    rows = []
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    for model in args.models.split(","):
        for variant in args.variants.split(","):
            done = subprocess.run([sys.executable, "-m", "benchmarks.generate_decoding", "--one", model, variant,
                                   "--prompt-tokens", str(args.prompt_tokens), "--new-tokens", str(args.new_tokens)],
                                  capture_output=True, text=True, env=env, check=False)
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
                raise SystemExit(f"{model} {variant} failed")
            row = json.loads(done.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(f"{model:22s} {variant:13s} prompt {row['prompt_tokens']:4d}  {row['new_tokens']} new  "
                  f"{row['seconds']:7.2f} s  {row['tokens_per_s']:6.2f} tok/s  load RSS {row['load_rss_mib']:6.0f} MiB"
                  f"  peak RSS {row['peak_rss_mib']:6.0f} MiB", flush=True)
        same = {tuple(r["tokens"]) for r in rows if r["model"] == model}
        print(f"{model}: all variants wrote the same tokens: {len(same) == 1}", flush=True)
    with open("/proc/loadavg") as load:
        print(f"load average after: {load.read().strip()}", flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
