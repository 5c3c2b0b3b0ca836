"""The shipped head atlases (issue 41, Build 3): regenerate ``assets/atlas/<model>/`` for the three bundled models over
the bundled census corpus, and measure what the issue asks of them — the atlas's first draw (read + the scatter's
Vega-Lite spec) under 2 s, and a head card's live row under 1 s on each bundled model.

For each model: ``python -m inspector census --model SPEC --data bundled --limit N --exemplars K --roles --out
WORK/NAME`` (a child process; resumes a WORK folder a killed run left), then
:func:`inspector.analyses.atlas.export_atlas` into ``assets/atlas/NAME`` (manifest, summary, roles, exemplars and
the exemplars' texts: no shards). ``--limit`` is the corpus prefix measured (the first N texts of
assets/corpus/census-sentences.txt; the whole corpus is 15,192 texts); without it each model gets the prefix its
shipped atlas was made of (:data:`SHIPPED_LIMITS`). ``--measure-only`` skips the census and
measures the atlases already shipped. Each model's live row is the top context of its top induction head
(loaded first, not timed; then the median of three rows).

Run from the repository root (it is slow on a busy machine: nice it)::

    nice -n 15 python -m benchmarks.atlases --exemplars 20          # the shipped atlases, as they were made
    nice -n 15 python -m benchmarks.atlases --models gemma-3-270m --limit 300
    python -m benchmarks.atlases --measure-only --write-docs
    make atlases
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.report import REPO_ROOT, OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Head atlas (CPU)"
MODELS = {"default": "default", "gemma-3-270m": "bundled:gemma-3-270m", "smollm2-135m": "bundled:smollm2-135m"}
# The corpus prefix each shipped atlas measures: as many texts as a census finished in about 20 minutes on the busy
# 2-core machine they were made on (assets/atlas/README.md).
SHIPPED_LIMITS = {"default": 1_000, "gemma-3-270m": 100, "smollm2-135m": 50}
DEFAULT_EXEMPLARS = 20
SHARD_SIZE = 50


def run_census(spec: str, out: Path, *, limit: int, exemplars: int) -> float:
    """The census of ``spec`` into ``out`` (a child process; shards of 50 texts, so a killed run resumes near where
    it stopped); its wall seconds."""
    command = [sys.executable, "-m", "inspector", "census", "--model", spec, "--data", "bundled", "--limit",
               str(limit), "--shard-size", str(SHARD_SIZE), "--exemplars", str(exemplars), "--roles", "--out",
               str(out)]
    print(" ".join(command), file=sys.stderr)
    started = time.perf_counter()
    subprocess.run(command, cwd=REPO_ROOT, check=True)
    return time.perf_counter() - started


def measure(name: str, folder: Path) -> dict:
    """The first draw (read the atlas + build its scatter's spec) and the live row of its top induction head's top
    context: seconds, with the other processes' load."""
    from inspector.analyses.atlas import atlas_metrics, live_row, read_atlas
    from inspector.charts.atlas import atlas_scatter_chart
    from inspector.core.loading import load_model

    with OtherLoad() as load:
        started = time.perf_counter()
        atlas = read_atlas(folder)
        atlas_scatter_chart(atlas, "entropy_normalized", "induction", "layer", title=name).to_dict()
        first_draw = time.perf_counter() - started
    induction = atlas_metrics(atlas)["induction"].mean
    layer, head = (int(i) for i in divmod(int(induction.argmax()), atlas.shape[1]))
    context = atlas.exemplars.of_head(layer, head, "induction", "top")[0]
    text = atlas.text_of(context.text_index)
    loaded = load_model(atlas.model_spec, device="cpu")
    live_row(loaded, text, layer, head, context.query)  # warm-up
    rows = []
    with OtherLoad() as row_load:
        for _ in range(3):
            started = time.perf_counter()
            live_row(loaded, text, layer, head, context.query)
            rows.append(time.perf_counter() - started)
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return {"name": name, "texts": atlas.summary.texts, "heads": atlas.shape[0] * atlas.shape[1],
            "contexts": len(atlas.exemplars.value), "mb": size / 2**20, "first_draw": first_draw,
            "draw_load": load.cores, "head": f"L{layer}H{head}",
            "tokens": len(atlas.exemplars.texts[context.text_index]),
            "row": statistics.median(rows), "row_load": row_load.cores,
            "limit": atlas.summary.manifest.get("input", {}).get("limit")}


def main(argv: list[str] | None = None) -> None:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--limit", type=int, help="the corpus prefix (first N texts) of every model's census "
                        "(default: each shipped atlas's own, SHIPPED_LIMITS)")
    parser.add_argument("--exemplars", type=int, default=DEFAULT_EXEMPLARS, help="top contexts per head (K)")
    parser.add_argument("--work", default="/tmp/atlas-census", help="where the censuses (with shards) are written")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--measure-only", action="store_true", help="measure the shipped atlases; run no census")
    args = parser.parse_args(argv)
    from inspector.analyses.atlas import ATLAS_DIR, export_atlas

    census_seconds = {}
    if not args.measure_only:
        for name in args.models:
            work = Path(args.work) / name
            limit = SHIPPED_LIMITS[name] if args.limit is None else args.limit
            census_seconds[name] = run_census(MODELS[name], work, limit=limit, exemplars=args.exemplars)
            export_atlas(work, ATLAS_DIR / name)
    rows = [measure(name, ATLAS_DIR / name) for name in args.models]
    table = "\n".join([
        "| atlas | texts | heads | contexts | size | first draw | other load | live row (head, tokens) | other load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(f"| {r['name']} | {r['texts']:,} | {r['heads']} | {r['contexts']:,} | {r['mb']:.2f} MB | "
          f"{r['first_draw']:.2f} s | {r['draw_load']:.2f} CPUs | {1000 * r['row']:.0f} ms ({r['head']}, "
          f"{r['tokens']}) | {r['row_load']:.2f} CPUs |" for r in rows)])
    notes = ["First draw: read_atlas (manifest, summary, roles, exemplars, texts — every check) and the scatter's "
             "Vega-Lite spec, in a process that has imported the library; targets: under 2 s.",
             "Live row: one forward of the top context of the model's top induction head (by the probe's score), "
             "only that layer's weights kept; median of 3 after a warm-up; target: under 1 s."]
    notes.append("Corpus: the first " + ", ".join(f"{r['limit']:,} ({r['name']})" for r in rows if r["limit"]) +
                 " texts of assets/corpus/census-sentences.txt (15,192 in all), not the whole corpus.")
    if census_seconds:
        notes.append("Census (child process, --roles included): " + ", ".join(
            f"{name} {seconds:.0f} s" for name, seconds in census_seconds.items()) + ".")
    finish(args.write_docs, SECTION_TITLE, "The shipped atlases: size, first draw and a card's live row.",
           module="benchmarks.atlases", argv=argv, shapes="the shipped atlases (assets/atlas/*)", table=table,
           notes=notes)


if __name__ == "__main__":
    main()
