"""Per-row attention entropy for every layer of a long input: peak memory and time, ours vs eager.

The foundation issue's question: "Per-row entropy for all layers at n = 4096 on a 4-layer tiny model: peak
memory ours vs eager ``output_attentions=True``, and time, same run." Two ways to get the same numbers:

* ``ours``: the model loaded with ``attn_implementation="inspector"``; every layer's entropy comes out of
  :func:`kernels.hf.inspector_attention` (torch backend, query blocks), so no ``(heads, n, n)`` tensor is kept.
* ``eager``: the same weights with ``attn_implementation="eager"`` and ``output_attentions=True``; the entropy
  is ``-Σ p log p`` over each row of the returned ``(batch, heads, n, n)`` weights of every layer.

Memory on CPU: PyTorch's CPU allocations are invisible to ``tracemalloc``, so each (variant, n) runs in its
own fresh subprocess (this script re-invoking itself with ``--variant``), which reports its peak resident set
size (``getrusage(RUSAGE_SELF).ru_maxrss``) and the resident set size measured just before the measured
forwards (after building the model and a 16-token warm-up forward). Time: median of ``--repeats`` forwards
plus entropy extraction, after one full-size warm-up. Correctness: the parent compares the two variants'
entropies (max abs difference, nats) and checks that both built the same weights (equal parameter checksums).

Run from the repository root::

    python -m benchmarks.entropy_memory                       # n = 1024, 2048, 4096
    python -m benchmarks.entropy_memory --lengths 512 4096 --write-docs
"""

from __future__ import annotations

import argparse
import copy
import functools
import gc
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.report import OtherLoad, benchmark_parser, finish

SEED = 0
VARIANTS = ("ours", "eager")
DEFAULT_LENGTHS = (1024, 2048, 4096)
TOLERANCE_NATS = 1e-4
SECTION_TITLE = "Per-row entropy memory (CPU)"

# The tiny random BERT of the issue; sizes chosen so attention, not the weights, dominates memory.
MODEL_SIZES = dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=512,
                   vocab_size=1000)
WARMUP_TOKENS = 16


def _rss_kib() -> int:
    """Current resident set size of this process, KiB (Linux ``/proc/self/status``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("VmRSS not found in /proc/self/status; this benchmark needs Linux")


def _peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def _build_model(variant: str, max_positions: int):
    """The seeded tiny BERT, with its attention routed through ours or transformers' eager implementation."""
    import torch
    from transformers import AutoModel, BertConfig

    import kernels.hf  # noqa: F401  (registers the "inspector" attention implementation)

    config = BertConfig(max_position_embeddings=max_positions, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, **MODEL_SIZES)
    torch.manual_seed(SEED)
    implementation = kernels.hf.IMPLEMENTATION_NAME if variant == "ours" else "eager"
    # from_config writes _attn_implementation into the config it is given: never share one between models.
    model = AutoModel.from_config(copy.deepcopy(config), attn_implementation=implementation).eval()
    model.requires_grad_(False)
    return model


def _entropy_ours(model, input_ids, attention_mask, block_size: int | None = None):
    """Every layer's per-row entropy from the inspector backend: (layers, heads, q_len) float32."""
    import torch

    from kernels.hf import AttentionRequest, attention_request

    request = AttentionRequest(stats=("entropy", "lse", "sink"), weights_layers=None, block_size=block_size)
    with torch.inference_mode(), attention_request(request):
        model(input_ids=input_ids, attention_mask=attention_mask)
    return torch.stack([record.stats["entropy"][0] for record in request.records])


def _entropy_eager(model, input_ids, attention_mask):
    """Every layer's per-row entropy from eager ``output_attentions``: (layers, heads, q_len) float32."""
    import torch

    from kernels.reference import row_entropy

    with torch.inference_mode():
        outputs = model(input_ids=input_ids, attention_mask=attention_mask, output_attentions=True)
        return torch.stack([row_entropy(p[0]) for p in outputs.attentions])  # (batch, heads, n, n) per layer


def measure_variant(variant: str, n: int, repeats: int, max_positions: int, entropy_out: Path,
                    block_size: int | None = None) -> dict:
    """Run one variant at one length in this (fresh) process; save its entropies, return its figures."""
    import torch

    model = _build_model(variant, max_positions)
    if variant == "ours":
        from kernels.reference import default_block_size

        extract = functools.partial(_entropy_ours, block_size=block_size)
        block_rows = block_size or default_block_size(1, MODEL_SIZES["num_attention_heads"], n)
    else:
        extract, block_rows = _entropy_eager, None
    generator = torch.Generator().manual_seed(SEED)
    input_ids = torch.randint(0, MODEL_SIZES["vocab_size"], (1, n), generator=generator)  # (batch, n)
    attention_mask = torch.ones_like(input_ids)
    extract(model, input_ids[:, :WARMUP_TOKENS], attention_mask[:, :WARMUP_TOKENS])
    gc.collect()

    rss_before = _rss_kib()
    peak_before = _peak_rss_kib()
    entropy = extract(model, input_ids, attention_mask)  # full-size warm-up: counts for memory, not for time
    seconds = []
    with OtherLoad() as other_load:
        for _ in range(repeats):
            started = time.perf_counter()
            entropy = extract(model, input_ids, attention_mask)
            seconds.append(time.perf_counter() - started)
    peak = _peak_rss_kib()
    np.save(entropy_out, entropy.float().numpy())
    weights_checksum = float(sum(p.double().sum() for p in model.parameters()))
    return dict(variant=variant, n=n, rss_before_kib=rss_before, peak_before_kib=peak_before, peak_kib=peak,
                seconds=seconds, other_load_cores=other_load.cores, entropy_shape=list(entropy.shape),
                weights_checksum=weights_checksum, torch_threads=torch.get_num_threads(), block_rows=block_rows)


def _run_child(variant: str, n: int, repeats: int, max_positions: int, entropy_out: Path,
               block_size: int | None) -> dict:
    command = [sys.executable, "-m", "benchmarks.entropy_memory", "--variant", variant, "--n", str(n),
               "--repeats", str(repeats), "--max-positions", str(max_positions), "--entropy-out", str(entropy_out)]
    if block_size is not None:
        command += ["--block-size", str(block_size)]
    done = subprocess.run(command, cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{variant} at n={n} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _mib(kib: int) -> str:
    return f"{kib / 1024:,.0f}"


def _seconds(figures: dict) -> str:
    seconds = figures["seconds"]
    return f"{statistics.median(seconds):.3f} ({min(seconds):.3f}–{max(seconds):.3f})"


def _table(rows: list[dict]) -> str:
    lines = [
        "| n | ours: queries per block | ours: peak − before (MiB) | eager: peak − before (MiB) | eager / ours "
        "| ours: peak RSS (MiB) "
        "| eager: peak RSS (MiB) | ours: time, median (min–max) s | eager: time, median (min–max) s "
        "| other processes' load, ours / eager (CPUs) | max abs entropy diff (nats) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        ours, eager = row["ours"], row["eager"]
        ratio = eager["delta_kib"] / ours["delta_kib"] if ours["delta_kib"] > 0 else float("nan")
        verdict = "ok" if row["max_abs_diff"] <= TOLERANCE_NATS else "FAIL"
        lines.append(
            f"| {row['n']} | {min(ours['block_rows'], row['n'])} | {_mib(ours['delta_kib'])} "
            f"| {_mib(eager['delta_kib'])} | {ratio:.1f}× "
            f"| {_mib(ours['peak_kib'])} | {_mib(eager['peak_kib'])} | {_seconds(ours)} | {_seconds(eager)} "
            f"| {ours['other_load_cores']:.2f} / {eager['other_load_cores']:.2f} "
            f"| {row['max_abs_diff']:.1e} ({verdict}) |")
    return "\n".join(lines)


def _notes(rows: list[dict], repeats: int) -> list[str]:
    from inspector.core.budget import weight_bytes

    layers, heads = MODEL_SIZES["num_hidden_layers"], MODEL_SIZES["num_attention_heads"]
    notes = [
        f"- Peak − before: `ru_maxrss` after the measured forwards minus the resident set size just before them "
        f"(model built, {WARMUP_TOKENS}-token warm-up done); each variant and n in its own fresh process. "
        f"Peak RSS is the process's absolute high-water mark (Python + torch + transformers + model). One process "
        "per cell: allocator and thread timing make the smaller deltas vary by tens of MiB between runs.",
        f"- Time: median of {repeats} forwards + entropy extraction (`time.perf_counter`), after one full-size "
        "warm-up; `torch.inference_mode()`; batch 1; all-ones attention mask; torch's default thread count "
        f"({rows[0]['ours']['torch_threads']}), thread settings from the environment left as they were.",
        "- Other processes' load: CPUs other processes kept busy during the timed forwards (machine busy time from "
        "`/proc/stat` minus this process's CPU time, over wall time). This machine is shared; times measured while "
        "it is well above 0 are contended and slower than an idle machine would give.",
        f"- Correctness: max |H_ours − H_eager| over all {layers} layers × {heads} heads × n rows, tolerance "
        f"{TOLERANCE_NATS:g} nats; the two processes built the same seeded weights (equal float64 parameter "
        "checksums, checked).",
        "- For scale (computed, not measured): the weights `output_attentions` keeps are "
        "layers × heads × n² × 4 B = "
        + ", ".join(f"{weight_bytes(layers * heads, row['n']) / 2**20:,.0f} MiB at n = {row['n']}"
                    for row in rows) + ".",
    ]
    for row in rows:
        for variant in VARIANTS:
            figures = row[variant]
            if figures["peak_before_kib"] >= figures["peak_kib"]:
                notes.append(f"- Caution: {variant} at n = {row['n']} did not raise the process's peak above its "
                             "pre-forward peak, so its delta is an upper bound.")
    return notes


def run_sweep(lengths: list[int], repeats: int, block_size: int | None) -> list[dict]:
    max_positions = max(4096, *lengths)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for n in lengths:
            row: dict = {"n": n}
            entropies = {}
            for variant in VARIANTS:
                out = Path(scratch) / f"{variant}-{n}.npy"
                figures = _run_child(variant, n, repeats, max_positions, out, block_size)
                figures["delta_kib"] = figures["peak_kib"] - figures["rss_before_kib"]
                row[variant] = figures
                entropies[variant] = np.load(out)
                print(f"  n={n} {variant}: peak−before {_mib(figures['delta_kib'])} MiB, peak "
                      f"{_mib(figures['peak_kib'])} MiB, time {_seconds(figures)} s, other load "
                      f"{figures['other_load_cores']:.2f} CPUs", file=sys.stderr, flush=True)
            if row["ours"]["weights_checksum"] != row["eager"]["weights_checksum"]:
                raise RuntimeError(f"the two processes built different weights at n={n}; the comparison is void")
            if entropies["ours"].shape != entropies["eager"].shape:
                raise RuntimeError(f"entropy shapes differ at n={n}: {entropies['ours'].shape} vs "
                                   f"{entropies['eager'].shape}")
            row["max_abs_diff"] = float(np.abs(entropies["ours"] - entropies["eager"]).max())
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--lengths", type=int, nargs="+", default=list(DEFAULT_LENGTHS),
                        help="sequence lengths to measure (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="timed forwards per variant (default: 3)")
    parser.add_argument("--block-size", type=int, default=None,
                        help="queries per block on ours' torch path (default: the library's "
                             "kernels.reference.default_block_size)")
    # Internal: the parent re-invokes this script once per (variant, n) so each gets a fresh process.
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--max-positions", type=int, default=4096, help=argparse.SUPPRESS)
    parser.add_argument("--entropy-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    if args.variant is not None:
        print(json.dumps(measure_variant(args.variant, args.n, args.repeats, args.max_positions, args.entropy_out,
                                         args.block_size)))
        return 0

    lengths = sorted(set(args.lengths))
    if lengths[0] < 1:
        parser.error("--lengths must be positive")
    if args.block_size is not None and args.block_size < 1:
        parser.error("--block-size must be positive")
    print(f"measuring n = {lengths}, {args.repeats} timed repeats, each variant in a fresh process…",
          file=sys.stderr, flush=True)
    rows = run_sweep(lengths, args.repeats, args.block_size)
    table = _table(rows)
    notes = _notes(rows, args.repeats)
    failed = [row["n"] for row in rows if not row["max_abs_diff"] <= TOLERANCE_NATS]
    sizes = MODEL_SIZES
    head_dim = sizes["hidden_size"] // sizes["num_attention_heads"]
    shapes = (f"random BERT (seed {SEED}): {sizes['num_hidden_layers']} layers, hidden {sizes['hidden_size']}, "
              f"{sizes['num_attention_heads']} heads (head_dim {head_dim}), "
              f"intermediate {sizes['intermediate_size']}, vocab {sizes['vocab_size']}, max positions "
              f"{max(4096, *lengths)}; input batch 1 × n random ids, float32, CPU")
    finish(args.write_docs, SECTION_TITLE,
           "Per-row attention entropy for every layer, computed by the inspector backend (`ours`, query "
           "blocks, no n×n tensor kept) and from eager `output_attentions=True` (`eager`), in the same run.",
           module="benchmarks.entropy_memory", argv=argv, shapes=shapes, table=table, notes=notes)
    if failed:
        print(f"entropy mismatch above {TOLERANCE_NATS:g} nats at n = {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
