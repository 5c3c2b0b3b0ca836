"""The Mechanism analyses on the bundled decoders, side by side with TransformerLens 4.3 (issue 40): direct logit
attribution + logit lens at 64 tokens, and activation patching of every head plus the residual picture for the
capital-city pair — times and the numbers compared.

TransformerLens runs in its own environment (never the app's requirements), booting the same prepared bundled folder
offline with ``TransformerBridge.boot_transformers(folder)`` in compatibility mode
(``benchmarks/mechanism_transformer_lens.py``), on the very token ids the inspector used. Our rounds run before and
after its rounds (its boot is not timed against it); the medians are compared.

Run from the repository root::

    python -m benchmarks.mechanism --tl-python /work/tl-venv/bin/python
    python -m benchmarks.mechanism --tl-python /work/tl-venv/bin/python --rounds 3 --write-docs
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.report import REPO_ROOT, OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Mechanism: direct logit attribution and activation patching (CPU, vs TransformerLens)"
MODELS = ("bundled:smollm2-135m", "bundled:gemma-3-270m")
CLEAN = "The capital of France is Paris. The capital of Italy is"
CORRUPTED = "The capital of France is Paris. The capital of Spain is"
ANSWER, CONTRAST = " Rome", " Madrid"
LONG_TEXT = ("The capital of France is Paris, a city on the Seine known for its museums, cafes and long avenues. "
             "Visitors often take the train from London, which crosses the Channel in a little over two hours, and "
             "then walk from the station to the river. The capital of Italy is")
DLA_TOKENS = 64


def _long_text(loaded) -> str:
    """:data:`LONG_TEXT` cut (from the front, whole words) to at most :data:`DLA_TOKENS` tokens for this tokenizer."""
    from inspector.core.forward import encode_text

    words = LONG_TEXT.split(" ")
    while len(encode_text(loaded, " ".join(words)).tokens) > DLA_TOKENS:
        words = words[1:]
    return " ".join(words)


def _ours(loaded, text: str, rounds: int) -> dict:
    from inspector.analyses.mechanism import activation_patching, direct_logit_attribution

    times: dict[str, list[float]] = {"dla": [], "patch": []}
    for _ in range(rounds):
        start = time.perf_counter()
        dla = direct_logit_attribution(loaded, text, answer=ANSWER, contrast=CONTRAST)
        times["dla"].append(time.perf_counter() - start)
        start = time.perf_counter()
        patched = activation_patching(loaded, CLEAN, CORRUPTED, answer=ANSWER, contrast=CONTRAST, top_heads=0)
        times["patch"].append(time.perf_counter() - start)
    return {"times": times, "dla": dla, "patched": patched}


def _transformer_lens(python: str, loaded, text: str, rounds: int) -> dict:
    from inspector.analyses.mechanism import token_id
    from inspector.core.forward import encode_text

    def ids(value: str) -> list[int]:
        return encode_text(loaded, value).inputs["input_ids"][0].tolist()

    job = {"folder": loaded.info.source, "dla_ids": ids(text), "clean_ids": ids(CLEAN),
           "corrupted_ids": ids(CORRUPTED), "answer_id": token_id(loaded, ANSWER, "answer"),
           "contrast_id": token_id(loaded, CONTRAST, "contrast"), "rounds": rounds}
    done = subprocess.run([python, str(REPO_ROOT / "benchmarks" / "mechanism_transformer_lens.py")],
                          input=json.dumps(job), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"TransformerLens run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _row(loaded, text: str, ours: dict, theirs: dict | None, other_cores: float) -> str:
    info, dla, patched = loaded.info, ours["dla"], ours["patched"]
    n_dla, n_pair = len(dla.tokens), len(patched.clean_tokens)
    dla_s, patch_s = statistics.median(ours["times"]["dla"]), statistics.median(ours["times"]["patch"])
    cells = [f"{info.name}", f"{info.num_layers}×{info.num_heads}", f"{n_dla}", f"**{dla_s:.2f}**", f"{n_pair}",
             f"**{patch_s:.1f}**"]
    if theirs is None:
        cells += ["—"] * 5
    else:
        tl_dla = statistics.median(theirs["dla_s"])
        tl_patch = statistics.median([a + b for a, b in zip(theirs["patch_heads_s"], theirs["patch_resid_s"],
                                                            strict=True)])
        heads = patched.restored(patched.heads)
        residual = patched.restored(patched.residual)
        dla_gap = float(np.abs(np.array(theirs["dla_heads"]) - dla.heads).max())
        heads_gap = float(np.abs(np.array(theirs["patch_heads"]) - heads).max())
        resid_gap = float(np.abs(np.array(theirs["patch_resid"]) - residual).max())
        cells += [f"{tl_dla:.2f}", f"{tl_patch:.1f}", f"**{tl_patch / patch_s:.0f}×**",
                  f"{dla_gap:.1e} (of {np.abs(dla.heads).max():.2f})",
                  f"heads {heads_gap:.1e}, residual {resid_gap:.1e}"]
    cells.append(f"{other_cores:.2f}")
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of each side (median reported)")
    parser.add_argument("--tl-python", help="the TransformerLens environment's python (omit: ours only)")
    args = parser.parse_args(argv)

    import torch

    from inspector.core.loading import load_model

    loads, rows, shapes = [open("/proc/loadavg").read().strip()], [], []
    for spec in args.models:
        loaded = load_model(spec, device="cpu")
        text = _long_text(loaded)
        with OtherLoad() as other:
            _ours(loaded, text, 1)  # warm-up
            ours = _ours(loaded, text, (args.rounds + 1) // 2)
            theirs = _transformer_lens(args.tl_python, loaded, text, args.rounds) if args.tl_python else None
            after = _ours(loaded, text, args.rounds // 2)
        for key in ours["times"]:
            ours["times"][key] += after["times"][key]
        rows.append(_row(loaded, text, ours, theirs, other.cores))
        print(rows[-1], file=sys.stderr, flush=True)
        info = loaded.info
        shapes.append(f"{info.name} ({info.architecture}, {info.num_layers} layers × {info.num_heads} heads, "
                      f"{info.num_kv_heads} kv heads, vocabulary {info.vocab_size:,})")
        loads.append(open("/proc/loadavg").read().strip())
        if theirs is not None:
            (Path("/tmp") / f"mechanism-tl-{info.name.replace(':', '-')}.json").write_text(json.dumps(theirs))
    table = "\n".join([
        "| model | layers×heads | DLA tokens | DLA + logit lens, s | pair tokens | patching (every head + residual "
        "× position + MLPs), s | TL DLA, s | TL head + resid_pre patching, s | TL ÷ ours (patching) | max |DLA "
        "per head − TL| | max |normalised patching − TL| | other processes' load (CPUs) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|",
        *rows,
    ])
    notes = [
        f"- Pair: clean {CLEAN!r}, corrupted {CORRUPTED!r}, metric logit({ANSWER!r}) − logit({CONTRAST!r}) at the "
        "last position, normalised 0 = corrupted, 1 = clean. DLA text: the same sentence led by a paragraph, cut to "
        f"at most {DLA_TOKENS} tokens; target the same logit difference.",
        "- Ours: `direct_logit_attribution` (one forward + every head's write + the logit lens) and "
        "`activation_patching(top_heads=0)` (every head at every position, every MLP, the residual before every layer "
        "at every position). TransformerLens 4.3.0 (separate venv, torch 2.13.0, transformers 5.24.0): "
        "`run_with_cache` + `stack_head_results` + `apply_ln_to_stack` for DLA; "
        "`patching.get_act_patch_attn_head_out_all_pos` + `patching.get_act_patch_resid_pre` (plus the clean "
        "`run_with_cache` and corrupted forward they need) for patching — TL patches no MLPs in that time.",
        f"- Median of {args.rounds} rounds per side after a warm-up; ours ran before and after TL's rounds. torch "
        f"threads {torch.get_num_threads()}. The machine was shared with other agents: load averages "
        + " → ".join(loads) + ".",
    ]
    finish(args.write_docs, SECTION_TITLE, "Issue 40's Mechanism analyses on the bundled decoders against "
           "TransformerLens.", module="benchmarks.mechanism", argv=argv, shapes="; ".join(shapes), table=table,
           notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
