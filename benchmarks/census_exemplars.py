"""Census exemplars on CPU (issue 41, Measure and Build 4): what ``--exemplars K`` costs, and the Ray engine's
exemplars against the local engine's.

(1) **Overhead** — one subprocess loads the bundled model once (one torch thread), then runs the census of the
    first ``--texts`` sentences of ``assets/corpus/census-sentences.txt`` without exemplars and with ``--exemplars
    K``, in turns (the order swapped each round), ``--repeats`` rounds; each census into a fresh folder with the
    loaded model, so a time is measuring, writing shards, summary and (with K) the exemplar files. The table gives
    the medians of the wall time and of the process's CPU time (the fairer ratio on a shared machine, where the
    wall time also counts waiting for a core) and the folders' bytes (shards, exemplar files).
(2) **Engines** — the first ``--slice`` sentences with ``--exemplars K``: the local engine, then the Ray engine (2
    one-thread actors, Ray started by the census and shut down after), each in its own subprocess (time includes
    the model load and Ray's start; peak memory is the summed RSS of the subprocess and its descendants, Ray's
    raylet and actors included, sampled every 0.2 s); then their files are compared: byte for byte (the exemplar
    files and every shard file), and slot by slot (each top and decile slot's text and query). A Ray engine that
    cannot start (its raylet times out on a busy machine) is reported as not measured, and the rest is still
    written.

Run from the repository root::

    python -m benchmarks.census_exemplars --texts 200 --slice 2000 --repeats 5 --write-docs

``--engines-only`` runs (2) alone and prints its rows (the whole corpus: ``--slice 15192``); it writes no docs.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.census_throughput import _texts, _tree_rss_bytes
from benchmarks.report import REPO_ROOT, benchmark_parser, system_busy_seconds, write_report

SECTION_TITLE = "Census exemplars: overhead and the Ray engine (CPU)"


def _folder_bytes(folder: Path, pattern: str) -> int:
    return sum(p.stat().st_size for p in folder.glob(pattern))


def _phase_overhead(count: int, k: int, repeats: int) -> dict:
    import torch

    from inspector import load_model
    from inspector.analyses.census.run import census
    from inspector.core.loading import compiled_kernel

    torch.set_num_threads(1)
    compiled_kernel(wait=True)  # both runs on the CPU path a user's census takes (where it cannot be built, the other)
    loaded = load_model("default")
    texts = _texts(count)
    times: dict[str, list[float]] = {"without": [], "with": []}
    cpu: dict[str, list[float]] = {"without": [], "with": []}
    sizes: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "texts.txt"
        source.write_text("\n".join(texts) + "\n", encoding="utf-8")
        census("default", source, out=Path(folder) / "warm", loaded=loaded, limit=16, backend="torch", progress=None)
        for round_number in range(repeats):
            ways = ("without", "with") if round_number % 2 == 0 else ("with", "without")
            for way in ways:
                out = Path(folder) / f"{way}-{round_number}"
                started, started_cpu = time.perf_counter(), time.process_time()
                census("default", source, out=out, loaded=loaded, backend="torch", progress=None,
                       exemplars=k if way == "with" else 0)
                times[way].append(time.perf_counter() - started)
                cpu[way].append(time.process_time() - started_cpu)
                sizes[way] = {"shards": _folder_bytes(out / "shards", "part-*.parquet"),
                              "shard_exemplars": _folder_bytes(out / "shards", "exemplars-*.parquet"),
                              "exemplar_files": _folder_bytes(out, "exemplar*.parquet")}
                shutil.rmtree(out)
    return {"times": times, "cpu": cpu, "sizes": sizes, "texts": len(texts)}


def _phase_engine(engine: str, count: int, k: int, out: Path) -> dict:
    import torch

    from inspector.analyses.census.run import census

    torch.set_num_threads(1)
    texts = _texts(count)
    source = out.parent / f"{out.name}-texts.txt"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    started = time.perf_counter()
    summary = census("default", source, out=out, engine=engine, actors=2, num_cpus=2, backend="torch",
                     progress=None, exemplars=k)
    return {"seconds": time.perf_counter() - started, "texts": summary.texts, "tokens": summary.tokens}


def _subprocess(arguments: list[str]) -> dict:
    """The phase's JSON result and its peak memory, or {"failed": the last line it wrote} when it did not finish."""
    command = [sys.executable, "-m", "benchmarks.census_exemplars", *arguments]
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, OMP_NUM_THREADS="1"))
    peak = [0]

    def sample() -> None:
        while process.poll() is None:
            peak[0] = max(peak[0], _tree_rss_bytes(process.pid))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, errors = process.communicate()
    sampler.join()
    if process.returncode != 0:
        last = [line.strip() for line in errors.splitlines() if line.strip()] or [f"status {process.returncode}"]
        print(errors, file=sys.stderr)
        return {"failed": last[-1][:200]}
    result = json.loads(output.strip().splitlines()[-1])
    result["peak_mib"] = peak[0] / 2**20
    return result


def _compare(first: Path, second: Path) -> str:
    """'identical' or what differs between two folders' exemplar and shard files, with how many slots agree."""
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from inspector.analyses.census.exemplar_files import EXEMPLAR_TEXTS_FILE, EXEMPLARS_FILE

    a, b = (pq.read_table(folder / EXEMPLARS_FILE) for folder in (first, second))
    files = [EXEMPLARS_FILE, EXEMPLAR_TEXTS_FILE, *(f"shards/{p.name}" for p in sorted((first / "shards").iterdir()))]
    same_bytes = all((second / name).is_file() and (first / name).read_bytes() == (second / name).read_bytes()
                     for name in files)
    slots = {}
    for kind in ("top", "decile"):  # a slot: (statistic, layer, head, rank) → the text and query it names
        named = [{(r["statistic"], r["layer"], r["head"], r["rank"]): (r["text_index"], r["query"])
                  for r in t.filter(pc.equal(t.column("kind"), kind)).select(
                      ["statistic", "layer", "head", "rank", "text_index", "query"]).to_pylist()} for t in (a, b)]
        slots[kind] = (sum(named[1].get(slot) == found for slot, found in named[0].items()), len(named[0]))
    summary = (f"{slots['top'][0]:,} of {slots['top'][1]:,} top slots and {slots['decile'][0]:,} of "
               f"{slots['decile'][1]:,} decile samples name the same text and query; "
               f"{'every' if same_bytes else 'not every'} exemplar and shard file ({len(files)}) byte-identical")
    if same_bytes:
        return f"identical: {summary}"
    if a.num_rows != b.num_rows:
        return f"different: {a.num_rows} rows against {b.num_rows}; {summary}"
    differing = [name for name in a.schema.names if name not in ("value", "key_weights")
                 and a.column(name).to_pylist() != b.column(name).to_pylist()]
    gaps = np.abs(a.column("value").to_numpy() - b.column("value").to_numpy())
    value_gap = float(np.max(gaps, initial=0.0))
    weights = [np.concatenate([np.asarray(row, np.float64) for row in t.column("key_weights").to_pylist()] or
                              [np.zeros(0)]) for t in (a, b)]
    weight_gap = float(np.max(np.abs(weights[0] - weights[1]), initial=0.0)) if len(weights[0]) == len(weights[1]) \
        else float("nan")
    texts_equal = pq.read_table(first / EXEMPLAR_TEXTS_FILE).equals(pq.read_table(second / EXEMPLAR_TEXTS_FILE))
    if differing or not texts_equal:
        return (f"different: columns {differing}, largest value gap {value_gap:.2e}, texts equal {texts_equal}; "
                f"{summary}")
    if value_gap > 1e-5:  # the same rows; a value's float32 row sum differs between two batchings (padding)
        at = int(np.argmax(gaps))
        value = abs(float(a.column("value")[at].as_py()))
        return (f"the same rows ({a.num_rows}: every column but value and key_weights equal; exemplar texts equal), "
                f"values up to {value_gap:.1e} apart ({a.column('statistic')[at].as_py()}, a value of {value:.2f}: "
                f"{value_gap / max(value, 1e-12):.0e} of it — float32 row sums of two batchings; key weights up to "
                f"{weight_gap:.1e} apart)")
    return (f"equal within 1e-5 ({a.num_rows} rows; largest value gap {value_gap:.1e}, key weight gap "
            f"{weight_gap:.1e}; exemplar texts equal): {summary}")


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--texts", type=int, default=200, help="sentences for the overhead runs (default 200)")
    parser.add_argument("--slice", type=int, default=2000, help="sentences for the engine runs (default 2000)")
    parser.add_argument("--exemplars", type=int, default=20, help="K (default 20)")
    parser.add_argument("--repeats", type=int, default=5, help="overhead rounds (default 5)")
    parser.add_argument("--engines-only", action="store_true",
                        help="run the engine comparison (2) alone and print it; writes no docs")
    parser.add_argument("--phase", choices=("overhead", "local", "ray"), help=_hidden())
    parser.add_argument("--out", help=_hidden())
    args = parser.parse_args(argv)
    if args.phase == "overhead":
        print(json.dumps(_phase_overhead(args.texts, args.exemplars, args.repeats)))
        return 0
    if args.phase:
        print(json.dumps(_phase_engine(args.phase, args.slice, args.exemplars, Path(args.out))))
        return 0
    common = ["--texts", str(args.texts), "--slice", str(args.slice), "--exemplars", str(args.exemplars),
              "--repeats", str(args.repeats)]
    if args.engines_only and args.write_docs:
        parser.error("--engines-only writes no docs: its figures go into the section by hand")
    wall, busy, before = time.perf_counter(), system_busy_seconds(), os.times()
    with tempfile.TemporaryDirectory() as folder:
        if not args.engines_only:
            print("overhead …", file=sys.stderr, flush=True)
            overhead = _subprocess(["--phase", "overhead", *common])
        engines = {}
        for engine in ("local", "ray"):
            print(f"{engine} engine …", file=sys.stderr, flush=True)
            engines[engine] = _subprocess(["--phase", engine, "--out", str(Path(folder) / engine), *common])
        failed = [f"{engine}: {engines[engine]['failed']}" for engine in engines if "failed" in engines[engine]]
        equality = f"not compared ({'; '.join(failed)})" if failed else _compare(Path(folder) / "local",
                                                                                 Path(folder) / "ray")
    ours = sum(os.times()[:4]) - sum(before[:4])  # this process and its reaped subprocesses
    other_cores = max(0.0, system_busy_seconds() - busy - ours) / (time.perf_counter() - wall)
    if args.engines_only:
        for engine, result in engines.items():
            print(f"{engine}: {json.dumps(result)}")
        print(f"Ray against local, {args.slice} texts: {equality}.")
        print(f"Other processes' load during the runs: {other_cores:.2f} CPUs")
        return 0
    without, with_k = (statistics.median(overhead["times"][way]) for way in ("without", "with"))
    cpu_without, cpu_with = (statistics.median(overhead["cpu"][way]) for way in ("without", "with"))
    sizes = overhead["sizes"]
    k = args.exemplars
    rows = ["| run | texts | seconds (median) | CPU seconds (median) | texts/s | peak memory (MiB) | every run (s) |",
            "|---|---:|---:|---:|---:|---:|---|"]
    for way, label in (("without", "(1) census, no exemplars"), ("with", f"(1) census, --exemplars {k}")):
        found = overhead["times"][way]
        seconds = statistics.median(found)
        rows.append(f"| {label} | {overhead['texts']} | {seconds:.2f} | {statistics.median(overhead['cpu'][way]):.2f} "
                    f"| {overhead['texts'] / seconds:.1f} | — | {', '.join(f'{t:.2f}' for t in found)} |")
    for engine, label in (("local", f"(2) local engine, --exemplars {k}"), ("ray", f"(2) Ray engine, 2 actors, "
                                                                                     f"--exemplars {k}")):
        r = engines[engine]
        if "failed" in r:
            rows.append(f"| {label} | {args.slice} | not measured: {r['failed']} | — | — | — | — |")
            continue
        rows.append(f"| {label} | {r['texts']} | {r['seconds']:.1f} | — | {r['texts'] / r['seconds']:.1f} "
                    f"| {r['peak_mib']:.0f} | {r['seconds']:.1f} |")
    table = "\n".join(rows)
    notes = [
        f"- Overhead of --exemplars {k}: {100 * (with_k / without - 1):+.1f} % wall time and "
        f"{100 * (cpu_with / cpu_without - 1):+.1f} % CPU time by the medians of {args.repeats} rounds "
        "(target ≤ 15 %).",
        f"- Bytes of the {overhead['texts']}-text folder: shards {sizes['without']['shards']:,} without exemplars, "
        f"{sizes['with']['shards']:,} with (token strings and each text's best row per statistic and head); "
        f"the shards' top-{k} files {sizes['with']['shard_exemplars']:,}; exemplars.parquet + "
        f"exemplar_texts.parquet {sizes['with']['exemplar_files']:,}.",
        f"- Ray against local, {args.slice} texts: {equality}.",
        f"- Other processes' load during the runs: {other_cores:.2f} CPUs of the 2 (busy time of the machine minus "
        "this benchmark's own processes'; Ray's actors, not its children, count as others) — the machine was shared "
        "with other jobs, so the figures were taken under load and the ratios matter more than the rates.",
        *_derived_notes(sizes, overhead["texts"], k),
    ]
    print(table)
    print("\n".join(notes))
    if args.write_docs:
        shapes = (f"bundled all-MiniLM-L6-v2 (6 layers × 12 heads), float32 on CPU, one torch thread a process; "
                  f"the first {args.texts} and {args.slice} sentences of the census corpus; K = {k}")
        write_report(SECTION_TITLE, "What keeping exemplars costs the census, and the Ray engine's exemplars "
                                    "against the local engine's.",
                     module="benchmarks.census_exemplars", argv=list(argv if argv is not None else sys.argv[1:]),
                     shapes=shapes, table=table, notes=notes)
    return 0


def _derived_notes(sizes: dict[str, dict[str, int]], texts: int, k: int) -> list[str]:
    """What the measured bytes imply for 1M texts on a 7B model (32 layers × 32 heads) — derived, not measured."""
    heads, measured_heads, statistics_count = 32 * 32, 6 * 12, 5
    per_text = (sizes["with"]["shards"] - sizes["without"]["shards"]) / texts  # token strings and the best rows
    per_head = per_text / measured_heads  # the token strings are counted in, so this is an upper bound
    return [
        f"- **Derived, not measured: 1M texts on a 7B model (32 layers × 32 heads) with GPU actors on the Triton "
        f"path.** Storage: {per_text:,.0f} B a text here over {measured_heads} heads, ≤ {per_head:,.0f} B a text "
        f"and head, so ≤ {per_head * heads / 1e3:,.0f} KB a text and ≤ {per_head * heads * 1e6 / 1e9:,.0f} GB of "
        f"shard columns for 1M texts; each 1,000-text shard's top-{k} file ≈ {statistics_count} × {heads} × {k} "
        f"rows × 29 B ≈ {statistics_count * heads * k * 29 / 1e6:.1f} MB. Compute: the exemplars read each "
        "layer's materialised weights for the rows they keep only (each text's best row and each batch's top "
        f"K, per statistic and head: {statistics_count} · B · H + {statistics_count} · H · K rows of n), and rank "
        "every row with a few passes over its five (B, H, n) row values — against the forward's and the "
        "statistics' passes over B · H · n · n weights, a few per cent on a GPU. A limit: the decile step reads "
        f"every text's best row per statistic and head at once (1M × {statistics_count} × {heads} × 36 B ≈ "
        f"{1e6 * statistics_count * heads * 36 / 1e9:,.0f} GB): at that scale it needs a pass per statistic or "
        "layer, not yet written.",
    ]


def _hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    sys.exit(main())
