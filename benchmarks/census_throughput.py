"""Census throughput on CPU (issue 16): the same sentences of ``assets/corpus/census-sentences.txt`` through the
bundled model four ways, each in a fresh subprocess so its peak memory is its own:

(a) ``capture`` — a loop of :func:`inspector.core.capture.capture` per text with every layer's weights, reduced with
    the Heads page's metric functions (token-category masses, sink scores, distance): the one-text path;
(b) ``local`` — :func:`inspector.analyses.census.run.census`, engine ``local`` (length-bucketed padded batches, one
    layer's weights materialised at a time);
(c) ``ray`` — the same census on Ray Data with ``--actors`` actors (Ray started by the census with 2 CPUs and
    shut down after; the time includes Ray's start and each actor loading the model);
(d) ``eager`` — transformers' eager attention with ``output_attentions=True``, batched exactly like (b) (the same
    buckets), entropy computed from the returned weights over each text's real queries (entropy only).

Texts/s and tokens/s count the real tokens of the texts measured (special tokens included, padding not). Peak
memory is the largest summed RSS of the subprocess and its descendants (Ray's raylet and actors included),
sampled every 0.2 s from ``/proc``.

Run from the repository root::

    python -m benchmarks.census_throughput --texts 200
    python -m benchmarks.census_throughput --texts 2000 --write-docs
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.report import REPO_ROOT, benchmark_parser, system_busy_seconds, write_report

SECTION_TITLE = "Corpus census throughput (CPU)"
WAYS = ("capture", "local", "ray", "eager")
LABELS = {"capture": "(a) capture per text", "local": "(b) census, local engine",
          "ray": "(c) census, Ray engine", "eager": "(d) transformers eager, output_attentions=True, batched"}


def _texts(count: int) -> list[str]:
    from inspector.analyses.census.input import CENSUS_CORPUS_PATH, read_input

    rows = read_input(CENSUS_CORPUS_PATH, limit=count).rows
    return [row.value for row in rows]


def _run_capture(texts: list[str]) -> int:
    import numpy as np

    from inspector import capture, load_model
    from inspector.analyses.metrics import mean_attention_distance, sink_scores, token_category_mass

    loaded = load_model("default")
    special_ids = set(loaded.tokenizer.all_special_ids)
    tokens = 0
    for text in texts:
        result = capture(loaded, text, backend="torch", weights="all")
        weights = np.stack([result.weights[layer] for layer in range(result.num_layers)])  # (L, H, T, T)
        n = weights.shape[-1]
        special = np.array([i in special_ids for i in result.token_ids.tolist()])
        visible = np.ones((result.num_layers, n, n), dtype=bool)
        token_category_mass(weights, result.tokens, special)
        sink_scores(weights, visible)
        mean_attention_distance(weights)
        tokens += n
    return tokens


def _run_census(texts: list[str], engine: str, actors: int, batch_tokens: int) -> int:
    from inspector.analyses.census.run import census

    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "texts.txt"
        source.write_text("\n".join(texts) + "\n", encoding="utf-8")
        summary = census("default", source, out=Path(folder) / "out", engine=engine, actors=actors, num_cpus=2,
                         batch_tokens=batch_tokens, backend="torch", progress=None)
    return summary.tokens


def _run_eager(texts: list[str], batch_tokens: int) -> int:
    import torch
    from transformers import AutoModel, AutoTokenizer

    from inspector.analyses.batching import length_buckets
    from inspector.core.loading import bundled_model_path
    from kernels.reference import row_entropy

    folder = bundled_model_path()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    ids = [tokenizer(text)["input_ids"] for text in texts]
    lengths = [len(i) for i in ids]
    with torch.inference_mode():
        for bucket in length_buckets(lengths, batch_tokens):
            n = max(lengths[i] for i in bucket)
            input_ids = torch.zeros((len(bucket), n), dtype=torch.long)
            mask = torch.zeros((len(bucket), n), dtype=torch.long)
            for b, i in enumerate(bucket):
                input_ids[b, :lengths[i]], mask[b, :lengths[i]] = torch.tensor(ids[i]), 1
            attentions = model(input_ids=input_ids, attention_mask=mask, output_attentions=True).attentions
            real = mask.bool()[:, None, :]  # (B, 1, n) real queries
            for weights in attentions:  # (B, H, n, n) per layer
                rows = row_entropy(weights)  # (B, H, n)
                (rows * real).sum(dim=-1) / real.sum(dim=-1)  # mean entropy over real queries, (B, H)
    return sum(lengths)


def _phase(way: str, count: int, actors: int, batch_tokens: int) -> None:
    """One way, in this (sub)process: prints {"seconds", "tokens", "texts", "load_seconds"} as JSON."""
    import torch

    # One thread per process: on this shared 2-core machine two OpenMP threads per process run ~10× slower
    # than one when other jobs hold the cores (measured while writing this). Ray's actors take one each.
    torch.set_num_threads(1)
    texts = _texts(count)
    if way in ("capture", "local"):
        from inspector import load_model

        load_model("default")  # warm the import and file caches, as the other ways get
    started = time.perf_counter()
    if way == "capture":
        tokens = _run_capture(texts)
    elif way == "eager":
        tokens = _run_eager(texts, batch_tokens)
    else:
        tokens = _run_census(texts, way, actors, batch_tokens)
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "tokens": tokens, "texts": len(texts), "threads": torch.get_num_threads()}))


def _tree_rss_bytes(root: int) -> int:
    """Summed resident memory of ``root`` and every descendant (from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                parents[int(entry)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    total = 0
    for pid in tree:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def _measure(way: str, count: int, actors: int, batch_tokens: int) -> dict:
    command = [sys.executable, "-m", "benchmarks.census_throughput", "--phase", way, "--texts", str(count),
               "--actors", str(actors), "--batch-tokens", str(batch_tokens)]
    environment = dict(os.environ, OMP_NUM_THREADS="1")
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True, env=environment)
    peak = [0]

    def sample() -> None:
        while process.poll() is None:
            peak[0] = max(peak[0], _tree_rss_bytes(process.pid))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"{way} failed with status {process.returncode}")
    result = json.loads(output.strip().splitlines()[-1])
    result["peak_mib"] = peak[0] / 2**20
    return result


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--texts", type=int, default=10_000, help="sentences from the census corpus (default 10000)")
    parser.add_argument("--actors", type=int, default=2, help="Ray actors for (c) (default 2)")
    parser.add_argument("--batch-tokens", type=int, default=None, help="padded tokens per batch (census default)")
    parser.add_argument("--ways", default=",".join(WAYS), help=f"comma list of {', '.join(WAYS)}")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs of each way in --repeat-ways, taken in turn (a, b, c, d, b, d, …); the table "
                             "shows each way's median run and lists every run (default 1)")
    parser.add_argument("--repeat-ways", default="local,eager",
                        help="the ways --repeats applies to (default local,eager: the pair one target compares; "
                             "on a shared machine one run of each can differ by ±10%% from load alone)")
    parser.add_argument("--phase", choices=WAYS, help=argparse_hidden())
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    from inspector.analyses.census.measure import DEFAULT_BATCH_TOKENS

    batch_tokens = args.batch_tokens or DEFAULT_BATCH_TOKENS
    if args.phase:
        _phase(args.phase, args.texts, args.actors, batch_tokens)
        return 0
    ways = [w.strip() for w in args.ways.split(",") if w.strip()]
    repeated = {w.strip() for w in args.repeat_ways.split(",") if w.strip()}
    unknown = sorted((set(ways) | repeated) - set(WAYS))
    if unknown:
        parser.error(f"unknown ways {unknown}; choose from {', '.join(WAYS)}")
    # Round 1 runs every way; later rounds only the repeated ones, in the same order, so each repeated way's runs
    # are spread over the whole benchmark and meet the same load.
    order = ways + [way for _ in range(args.repeats - 1) for way in ways if way in repeated]
    runs: dict[str, list[dict]] = {way: [] for way in ways}
    wall, busy, before = time.perf_counter(), system_busy_seconds(), os.times()
    for way in order:
        print(f"{LABELS[way]} …", file=sys.stderr, flush=True)
        runs[way].append(_measure(way, args.texts, args.actors, batch_tokens))
        print(f"  {runs[way][-1]}", file=sys.stderr, flush=True)
    after = os.times()
    results = {way: sorted(found, key=lambda r: r["seconds"])[(len(found) - 1) // 2] for way, found in runs.items()}
    ours = sum(after[:4]) - sum(before[:4])  # this process and its reaped children (the ways' subprocesses)
    other_cores = max(0.0, system_busy_seconds() - busy - ours) / (time.perf_counter() - wall)
    rows = ["| way | texts | tokens | seconds | texts/s | tokens/s | peak memory (MiB) | vs (a) | every run (s) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    base = results.get("capture")
    every_run = {way: ", ".join(f"{run['seconds']:.1f}" for run in found) for way, found in runs.items()}
    for way, r in results.items():
        rate = r["texts"] / r["seconds"]
        speedup = f"{rate / (base['texts'] / base['seconds']):.2f}×" if base else "—"
        rows.append(f"| {LABELS[way]} | {r['texts']} | {r['tokens']} | {r['seconds']:.1f} | {rate:.1f} "
                    f"| {r['tokens'] / r['seconds']:.0f} | {r['peak_mib']:.0f} | {speedup} "
                    f"| {every_run[way]} |")
    table = "\n".join(rows)
    notes = [
        f"- Same {args.texts} sentences (the first of `assets/corpus/census-sentences.txt`) for every way, "
        f"batch budget {batch_tokens} padded tokens for (b)–(d), torch backend, float32, one torch thread per "
        "process (OMP_NUM_THREADS=1; (c) runs two actors of one thread each, so it has two cores where (a), (b) "
        "and (d) have one), each way in its own subprocess after the model files were read once (the time "
        "includes the model load inside the census and Ray's start for (c), not the interpreter's imports).",
        f"- Other processes' load during the runs: {other_cores:.2f} CPUs of the 2 (busy time of the machine minus "
        "this benchmark's own processes'; Ray's actors, not children of the benchmark, count as others) — this "
        "machine was shared with other jobs, so every figure was taken under load and the ratios matter more "
        "than the rates.",
        f"- Runs: {args.repeats} of each of {', '.join(LABELS[w].split(' ')[0] for w in ways if w in repeated)} and "
        "one of each other way, in turns (every way once, then the repeated ones again); a row shows its way's "
        "median run (by time), and its last column every run in order.",
    ]
    print(table)
    print("\n".join(notes))
    if args.write_docs:
        shapes = (f"bundled all-MiniLM-L6-v2 (6 layers × 12 heads, hidden 384), float32 on CPU; {args.texts} "
                  "sentences of 5–60 words from the census corpus")
        write_report(SECTION_TITLE, "The census against the one-text path and plain transformers, same texts.",
                     module="benchmarks.census_throughput", argv=list(argv if argv is not None else sys.argv[1:]),
                     shapes=shapes, table=table, notes=notes)
    return 0


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    sys.exit(main())
