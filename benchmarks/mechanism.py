"""The Mechanism analyses on the bundled decoders, side by side with TransformerLens 4.3 (issue 40): direct logit
attribution + logit lens at 64 tokens, and activation patching of every head plus the residual picture for the
capital-city pair — times and the numbers compared.

TransformerLens runs in its own environment (never the app's requirements), booting the same prepared bundled folder
offline with ``TransformerBridge.boot_transformers(folder)`` in compatibility mode
(``benchmarks/mechanism_transformer_lens.py``), on the very token ids the inspector used. Our rounds run before and
after its rounds (its boot is not timed against it); the medians are compared.

With ``--reference`` the TransformerLens numbers for the capital-city pair (per-head direct logit attribution on the
clean text, per-head patching over all positions, resid_pre patching by layer and position) are written, with the token
ids, versions and command, to the file the slow tests compare the inspector against
(``tests/test_mechanism_reference.py``; CI has no TransformerLens).

Run from the repository root::

    python -m benchmarks.mechanism --tl-python /work/tl-venv/bin/python
    python -m benchmarks.mechanism --tl-python /work/tl-venv/bin/python --rounds 3 --write-docs \\
        --reference tests/data/transformer_lens_reference.json
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.report import REPO_ROOT, OtherLoad, benchmark_parser, command_line, finish, shown_argv

SECTION_TITLE = "Mechanism: direct logit attribution and activation patching (CPU, vs TransformerLens)"
MODELS = ("bundled:smollm2-135m", "bundled:gemma-3-270m")
CLEAN = "The capital of France is Paris. The capital of Italy is"
CORRUPTED = "The capital of France is Paris. The capital of Spain is"
ANSWER, CONTRAST = " Rome", " Madrid"
LONG_TEXT = ("The capital of France is Paris, a city on the Seine known for its museums, cafes and long avenues. "
             "Visitors often take the train from London, which crosses the Channel in a little over two hours, and "
             "then walk from the station to the river. The capital of Italy is")
DLA_TOKENS = 64
DLA_TARGET_S, PATCH_TARGET_S, SPEEDUP_TARGET = 2.0, 15.0, 20.0  # issue 40's targets
REFERENCE_DIGITS = 5


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


def _ids(loaded, text: str) -> list[int]:
    from inspector.core.forward import encode_text

    return encode_text(loaded, text).inputs["input_ids"][0].tolist()


def _transformer_lens(python: str, loaded, text: str, rounds: int) -> dict:
    from inspector.analyses.mechanism import token_id

    job = {"folder": loaded.info.source, "dla_ids": _ids(loaded, text), "clean_ids": _ids(loaded, CLEAN),
           "corrupted_ids": _ids(loaded, CORRUPTED), "answer_id": token_id(loaded, ANSWER, "answer"),
           "contrast_id": token_id(loaded, CONTRAST, "contrast"), "rounds": rounds}
    # Its progress bars and errors go to our stderr as they come; the result is its last stdout line.
    done = subprocess.run([python, str(REPO_ROOT / "benchmarks" / "mechanism_transformer_lens.py")],
                          input=json.dumps(job), stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"TransformerLens run failed (exit {done.returncode}; its stderr is above)")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _figures(loaded, ours: dict, theirs: dict | None) -> dict:
    """One model's measured figures: our medians, TransformerLens's (None without it) and the largest gaps."""
    dla, patched = ours["dla"], ours["patched"]
    figures = {"model": loaded.info.name, "shape": f"{loaded.info.num_layers}×{loaded.info.num_heads}",
               "dla_tokens": len(dla.tokens), "pair_tokens": len(patched.clean_tokens),
               "dla_s": statistics.median(ours["times"]["dla"]), "patch_s": statistics.median(ours["times"]["patch"]),
               "tl_dla_s": None}
    if theirs is not None:
        figures.update(
            tl_dla_s=statistics.median(theirs["dla_s"]),
            tl_patch_s=statistics.median([a + b for a, b in zip(theirs["patch_heads_s"], theirs["patch_resid_s"],
                                                                strict=True)]),
            dla_gap=float(np.abs(np.array(theirs["dla_heads"]) - dla.heads).max()),
            dla_scale=float(np.abs(dla.heads).max()),
            heads_gap=float(np.abs(np.array(theirs["patch_heads"]) - patched.restored(patched.heads)).max()),
            resid_gap=float(np.abs(np.array(theirs["patch_resid"]) - patched.restored(patched.residual)).max()))
        figures["speedup"] = figures["tl_patch_s"] / figures["patch_s"]
    return figures


def _row(figures: dict, other_cores: float) -> str:
    cells = [figures["model"], figures["shape"], f"{figures['dla_tokens']}", f"**{figures['dla_s']:.2f}**",
             f"{figures['pair_tokens']}", f"**{figures['patch_s']:.1f}**"]
    if figures["tl_dla_s"] is None:
        cells += ["—"] * 5
    else:
        cells += [f"{figures['tl_dla_s']:.2f}", f"{figures['tl_patch_s']:.1f}", f"**{figures['speedup']:.0f}×**",
                  f"{figures['dla_gap']:.1e} (of {figures['dla_scale']:.2f})",
                  f"heads {figures['heads_gap']:.1e}, residual {figures['resid_gap']:.1e}"]
    cells.append(f"{other_cores:.2f}")
    return "| " + " | ".join(cells) + " |"


def _verdicts(measured: list[dict]) -> list[str]:
    """Issue 40's three targets, each met or not on every measured model."""
    def verdict(ok: bool) -> str:
        return "**met**" if ok else "**not met**"

    lines = [f"- Target DLA + logit lens at {DLA_TOKENS} tokens under {DLA_TARGET_S:g} s: "
             + "; ".join(f"{f['model']} {f['dla_s']:.2f} s {verdict(f['dla_s'] < DLA_TARGET_S)}" for f in measured),
             f"- Target patching every head + the residual picture under {PATCH_TARGET_S:g} s: "
             + "; ".join(f"{f['model']} {f['patch_s']:.1f} s {verdict(f['patch_s'] < PATCH_TARGET_S)}"
                         for f in measured)]
    compared = [f for f in measured if f["tl_dla_s"] is not None]
    if compared:
        lines.append(f"- Target at least {SPEEDUP_TARGET:g}× faster than TransformerLens's head + resid_pre "
                     "patching: " + "; ".join(f"{f['model']} {f['speedup']:.1f}× "
                                              f"{verdict(f['speedup'] >= SPEEDUP_TARGET)}" for f in compared))
    else:
        lines.append("- Target against TransformerLens: not measured in this run (no --tl-python).")
    return lines


def _rounded(value, digits: int = REFERENCE_DIGITS):
    """``value`` (nested lists of floats) with every float rounded to ``digits`` decimals."""
    if isinstance(value, list):
        return [_rounded(item, digits) for item in value]
    return round(value, digits) if isinstance(value, float) else value


def _reference_entry(loaded, theirs: dict, command: str) -> dict:
    """One model's TransformerLens numbers for the pair, with what they were computed on and by."""
    from inspector.analyses.mechanism import token_id

    return {
        "command": command, "versions": theirs["versions"], "prepared_folder": Path(loaded.info.source).name,
        "clean_ids": _ids(loaded, CLEAN), "corrupted_ids": _ids(loaded, CORRUPTED),
        "answer_id": token_id(loaded, ANSWER, "answer"), "contrast_id": token_id(loaded, CONTRAST, "contrast"),
        "clean_logit_diff": _rounded(theirs["clean_value"]),
        "corrupted_logit_diff": _rounded(theirs["corrupted_value"]),
        "dla_heads": _rounded(theirs["clean_dla_heads"]), "patch_heads": _rounded(theirs["patch_heads"]),
        "patch_resid": _rounded(theirs["patch_resid"]),
    }


def write_reference(path: Path, entries: dict[str, dict]) -> None:
    """Write (or update, model by model) the TransformerLens reference file the slow tests read."""
    reference = json.loads(path.read_text()) if path.exists() else {"models": {}}
    reference.update({
        "about": "TransformerLens's numbers for one prompt pair per bundled decoder, written by "
                 "benchmarks/mechanism.py --reference; read by tests/test_mechanism_reference.py (CI has no "
                 "TransformerLens). dla_heads: direct logit attribution of each head (layers × heads) at the clean "
                 "text's last position onto logit(answer) − logit(contrast), post-attention norms frozen (see "
                 "benchmarks/mechanism_transformer_lens.py); patch_heads: get_act_patch_attn_head_out_all_pos "
                 "(layers × heads), patch_resid: get_act_patch_resid_pre (layers × positions), both with the "
                 "normalised logit difference (0 = corrupted, 1 = clean). Floats rounded to "
                 f"{REFERENCE_DIGITS} decimals.",
        "pair": {"clean": CLEAN, "corrupted": CORRUPTED, "answer": ANSWER, "contrast": CONTRAST},
    })
    reference["models"].update(entries)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(reference, indent=1, ensure_ascii=False)
    # One line per innermost list of numbers (a row of heads or positions), not one line per number.
    text = re.sub(r"\[[^\[\]{}\"]*\]", lambda match: re.sub(r"\s+", " ", match.group(0)).replace("[ ", "[")
                  .replace(" ]", "]"), text)
    path.write_text(text + "\n")
    print(f"wrote {path}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of each side (median reported)")
    parser.add_argument("--tl-python", help="the TransformerLens environment's python (omit: ours only)")
    parser.add_argument("--tl-rounds", type=int, help="timed rounds of TransformerLens (default: --rounds)")
    parser.add_argument("--reference", type=Path, help="also write TransformerLens's numbers for the pair to this "
                        "JSON file (the slow tests' reference; needs --tl-python)")
    args = parser.parse_args(argv)
    tl_rounds = args.rounds if args.tl_rounds is None else args.tl_rounds
    if args.reference and not args.tl_python:
        parser.error("--reference needs --tl-python")

    import torch

    from inspector.core.loading import load_model

    loads, rows, shapes, entries, versions = [open("/proc/loadavg").read().strip()], [], [], {}, None
    measured = []
    command = command_line("benchmarks.mechanism", shown_argv(argv))
    for spec in args.models:
        loaded = load_model(spec, device="cpu")
        text = _long_text(loaded)
        with OtherLoad() as other:
            _ours(loaded, text, 1)  # warm-up
            ours = _ours(loaded, text, (args.rounds + 1) // 2)
            theirs = _transformer_lens(args.tl_python, loaded, text, tl_rounds) if args.tl_python else None
            after = _ours(loaded, text, args.rounds // 2)
        for key in ours["times"]:
            ours["times"][key] += after["times"][key]
        measured.append(_figures(loaded, ours, theirs))
        rows.append(_row(measured[-1], other.cores))
        print(rows[-1], file=sys.stderr, flush=True)
        info = loaded.info
        shapes.append(f"{info.name} ({info.architecture}, {info.num_layers} layers × {info.num_heads} heads, "
                      f"{info.num_kv_heads} kv heads, vocabulary {info.vocab_size:,})")
        loads.append(open("/proc/loadavg").read().strip())
        if theirs is not None:
            versions = theirs["versions"]
            entries[spec] = _reference_entry(loaded, theirs, command)
            (Path("/tmp") / f"mechanism-tl-{info.name.replace(':', '-')}.json").write_text(json.dumps(theirs))
    if args.reference:
        write_reference(args.reference, entries)
    table = "\n".join([
        "| model | layers×heads | DLA tokens | DLA + logit lens, s | pair tokens | patching (every head + residual "
        "× position + MLPs), s | TL DLA, s | TL head + resid_pre patching, s | TL ÷ ours (patching) | max |DLA "
        "per head − TL| | max |normalised patching − TL| | other processes' load (CPUs) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|",
        *rows,
    ])
    tl = "TransformerLens" if versions is None else (
        f"TransformerLens {versions['transformer-lens']} (separate venv, torch {versions['torch']}, transformers "
        f"{versions['transformers']})")
    notes = [
        f"- Pair: clean {CLEAN!r}, corrupted {CORRUPTED!r}, metric logit({ANSWER!r}) − logit({CONTRAST!r}) at the "
        "last position, normalised 0 = corrupted, 1 = clean. DLA text: the same sentence led by a paragraph, cut to "
        f"at most {DLA_TOKENS} tokens; target the same logit difference.",
        "- Ours: `direct_logit_attribution` (one forward + every head's write + the logit lens) and "
        "`activation_patching(top_heads=0)` (every head at every position, every MLP, the residual before every layer "
        f"at every position). {tl}, booted offline from the same prepared folder with "
        "`TransformerBridge.boot_transformers` in compatibility mode, fed the very token ids ours used: "
        "`run_with_cache` + `stack_head_results` + `apply_ln_to_stack` for DLA (Gemma: each head's result through "
        "its post-attention norm frozen at the measured scale, as ours); "
        "`patching.get_act_patch_attn_head_out_all_pos` + `patching.get_act_patch_resid_pre` (plus the clean "
        "`run_with_cache` and corrupted forward they need) for patching — TL patches no MLPs in that time. Its boot "
        "is not timed.",
        f"- Both sides in the same run, per model: a warm-up of ours, {(args.rounds + 1) // 2} round(s) of ours, "
        f"{tl_rounds if args.tl_python else 0} round(s) of TransformerLens, {args.rounds // 2} round(s) of ours; "
        f"medians. torch threads {torch.get_num_threads()} on each side (OMP_NUM_THREADS, inherited by "
        "TransformerLens's process). The machine was shared with other agents' processes (the last column: CPUs "
        "they kept busy during the model's rounds); load averages " + " → ".join(loads) + ". The kernel shares the "
        "CPUs between sessions (autogroup), so under that load a process gets a fraction of a core whatever its nice "
        "value, and with two threads one mostly waits on the other (a trial of TransformerLens's head patching on "
        "SmolLM2 with 2 threads took 4–8 s per patched forward): hence one thread on each side.",
        *_verdicts(measured),
        "- The verdicts are for this run, under the load in the last column: a contended time is not an idle "
        "machine's. Each side's rounds ran under the same load, so the ratio is the fairer figure.",
    ]
    finish(args.write_docs, SECTION_TITLE, "Issue 40's Mechanism analyses on the bundled decoders against "
           "TransformerLens.", module="benchmarks.mechanism", argv=argv, shapes="; ".join(shapes), table=table,
           notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
