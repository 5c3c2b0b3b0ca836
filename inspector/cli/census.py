"""``python -m inspector census``: the Heads page's per-head statistics over a whole dataset, into a folder of
Parquet shards with a manifest, an error list and a summary (:mod:`inspector.analyses.census`); resumable, on this
machine or on a Ray cluster."""

from __future__ import annotations

import argparse

from inspector.cli.common import BACKENDS, run_request, write_json

HELP = "census: per-head statistics over a corpus (Parquet shards + summary; local or Ray); --roles: head roles"
REPORT_LINES_SHOWN = 6


def add_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--data", metavar="PATH",
                     help="a .txt file (one text per line), a .jsonl or .parquet file (see --column), or a folder "
                          "of them; 'bundled' = assets/corpus/census-sentences.txt")
    sub.add_argument("--column", default="text", help="the text column of .jsonl/.parquet input (default: text)")
    sub.add_argument("--out", required=True, metavar="DIR", help="output folder (rerun into it to resume)")
    sub.add_argument("--engine", default="local", choices=["local", "ray"], help="local (default) or ray")
    sub.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS, else a local Ray)")
    sub.add_argument("--actors", type=int, default=2, help="Ray actors, each loading the model once (default 2)")
    sub.add_argument("--gpus-per-actor", type=float, default=0.0, help="GPUs per Ray actor (default 0)")
    sub.add_argument("--num-cpus", type=int, help="CPUs of a Ray started here (default: all)")
    sub.add_argument("--batch-tokens", type=int, default=None,
                     help="padded tokens per batch (batch size × longest text; default 8192)")
    sub.add_argument("--shard-size", type=int, default=None, help="input rows per Parquet shard (default 1000)")
    sub.add_argument("--limit", type=int, help="measure only the first N rows")
    sub.add_argument("--truncate", action="store_true",
                     help="cut texts longer than the model's positions instead of listing them in errors.jsonl")
    sub.add_argument("--backend", default="auto", choices=BACKENDS, help="attention backend")
    sub.add_argument("--exemplars", type=int, default=0, metavar="K",
                     help="also keep, per head and statistic (lowest entropy, sink mass, previous token, induction, "
                          "distance), the top K contexts and one sample per decile (1–100; default 0 = none)")
    sub.add_argument("--exemplar-seed", type=int, default=0, help="--exemplars: decile sampling seed (default 0)")
    sub.add_argument("--roles", action="store_true",
                     help="also (or, without --data, only) probe the head roles into OUT/roles.json — no corpus "
                          "needed; compare folders of several models")
    sub.add_argument("--repeat", type=int, default=None, help="--roles: random ids per probe half (default 20)")
    sub.add_argument("--top-k", type=int, default=3, help="--roles: heads per role in the causal test (default 3)")
    sub.add_argument("--seed", type=int, default=0, help="--roles: probe seed (default 0)")


def run(args: argparse.Namespace) -> None:
    from inspector.analyses.census.input import CENSUS_CORPUS_PATH
    from inspector.analyses.census.measure import DEFAULT_BATCH_TOKENS
    from inspector.analyses.census.run import DEFAULT_SHARD_SIZE, census
    from inspector.analyses.census.summary import summary_json
    from inspector.analyses.roles import DEFAULT_BATCH, DEFAULT_REPEAT, DEFAULT_SEEDS, DEFAULT_WINDOW, check_options
    from inspector.base.errors import InvalidRequestError
    from inspector.charts.sentences.census import census_report
    from inspector.serving.run import Request

    if args.data is None and not args.roles:
        raise InvalidRequestError("census needs --data PATH (a corpus), or --roles (head roles by probe, no corpus)")
    if args.roles:
        check_options(repeat=DEFAULT_REPEAT if args.repeat is None else args.repeat, batch=DEFAULT_BATCH,
                      top_k=args.top_k, window=DEFAULT_WINDOW, seeds=DEFAULT_SEEDS, seed=args.seed)
    if args.data is None:
        run_roles(args)
        return
    data = CENSUS_CORPUS_PATH if args.data == "bundled" else args.data
    _, summary = run_request(Request(kind="census"), None, lambda plan, progress: census(
        args.model, data, out=args.out, engine=args.engine, column=args.column, limit=args.limit,
        truncate=args.truncate, batch_tokens=DEFAULT_BATCH_TOKENS if args.batch_tokens is None else args.batch_tokens,
        shard_size=DEFAULT_SHARD_SIZE if args.shard_size is None else args.shard_size, backend=args.backend,
        device=args.device, dtype=args.dtype, address=args.address, actors=args.actors,
        gpus_per_actor=args.gpus_per_actor, num_cpus=args.num_cpus, report=census_report, exemplars=args.exemplars,
        exemplar_seed=args.exemplar_seed))
    if args.json:
        write_json(summary_json(summary, census_report), args.json)
    if args.json != "-":
        lines = census_report(summary)
        print(f"summary: {summary.folder}/summary.json ({summary.texts} texts, {summary.errors} in errors.jsonl)")
        if args.exemplars:
            print(f"exemplars: {summary.folder}/exemplars.parquet, {summary.folder}/exemplar_texts.parquet")
        print("\n".join(lines[:REPORT_LINES_SHOWN]))
    if args.roles:
        run_roles(args)


def run_roles(args: argparse.Namespace) -> None:
    """``census --roles``: the head roles into OUT/roles.json, and the report's lines."""
    from inspector.analyses.census.roles import ROLES_FILE, census_roles
    from inspector.charts.sentences.roles import roles_words
    from inspector.serving.run import Request

    _, payload = run_request(Request(kind="census"), None, lambda plan, progress: census_roles(
        args.model, args.out, words=roles_words, device=args.device, dtype=args.dtype, backend=args.backend,
        repeat=args.repeat, top_k=args.top_k, seed=args.seed))
    if args.json and args.data is None:
        write_json(payload, args.json)
    if args.json != "-":
        print(f"roles: {args.out}/{ROLES_FILE}")
        print("\n".join(payload["report"]))
