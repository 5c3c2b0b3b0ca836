"""Where the fused CPU path is faster than the blocked one (issue 43): the measurement behind
:func:`kernels.fused_cpu.fused_is_faster`.

Both CPU paths of the ``torch`` backend — :func:`kernels.fused_cpu.fused_attention` and
:func:`kernels.reference.blocked_attention` — timed on the same real attention inputs of the bundled models: the
queries, keys and values three layers (first, middle, last) receive in a forward of a text of each length
(``batch`` texts, right-padded, lengths spread over the upper half, for batches), every statistic. Decode steps
(q length 1) are each text's last query against all its keys. Interleaved rounds (fused, blocked, fused, …) after a
warm-up, medians summed over the layers.

Run from the repository root::

    python -m benchmarks.fused_routing
    python -m benchmarks.fused_routing --models default --lengths 16 128 --batches 1 16 --write-docs
"""

from __future__ import annotations

import statistics
import sys
import time

from benchmarks.inspect_latency import text_of_length
from benchmarks.report import OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Fused or blocked: the CPU routing rule (issue 43)"
MODELS = ("default", "bundled:smollm2-135m", "bundled:gemma-3-270m")
STATS = ("entropy", "lse", "sink")


def layer_inputs(loaded, tokens: int, batch: int) -> list[dict]:
    """The attention inputs of three layers in a forward of ``batch`` texts of up to ``tokens`` tokens."""
    import torch

    import kernels.hf as hf
    from inspector.core.forward import forward

    layers = {0, loaded.info.num_layers // 2, loaded.info.num_layers - 1}
    lengths = [tokens - (i * tokens) // (2 * batch) for i in range(batch)]  # tokens down to about tokens / 2
    texts = [text_of_length(loaded.tokenizer, max(n, 4)) for n in lengths]
    encoded = loaded.tokenizer(texts, return_tensors="pt", padding=True)
    seen: list[dict] = []
    original = hf._torch_backend

    def spy(query, key, value, **kwargs):
        if len(seen) < loaded.info.num_layers:
            seen.append(dict(q=query, k=key, v=value, causal=kwargs["causal"], scale=kwargs["scale"],
                             key_padding_mask=kwargs["padding"], window=kwargs["window"]))
        return original(query, key, value, **kwargs)

    hf._torch_backend = spy
    try:
        with torch.no_grad():
            forward(loaded, dict(encoded), backend="torch")
    finally:
        hf._torch_backend = original
    return [call for i, call in enumerate(seen) if i in layers]


def _decode_step(call: dict) -> dict:
    """The last query of the longest text against all its keys: a decode step's shape and values."""
    return dict(call, q=call["q"][:, :, -1:])


def time_paths(calls: list[dict], rounds: int, clock) -> dict[str, float]:
    """Seconds per path by ``clock`` (medians over rounds, summed over the calls), interleaved call by call."""
    import torch

    from kernels.fused_cpu import fused_attention
    from kernels.reference import blocked_attention

    paths = {"fused": fused_attention, "blocked": blocked_attention}
    totals = {name: 0.0 for name in paths}
    with torch.no_grad():
        for call in calls:
            args = dict(call)
            q, k, v = args.pop("q"), args.pop("k"), args.pop("v")
            seconds: dict[str, list[float]] = {name: [] for name in paths}
            for name, path in paths.items():
                path(q, k, v, stats=STATS, **args)  # warm-up
            for _ in range(rounds):
                for name, path in paths.items():
                    started = clock()
                    path(q, k, v, stats=STATS, **args)
                    seconds[name].append(clock() - started)
            for name in paths:
                totals[name] += statistics.median(seconds[name])
    return totals


def model_rows(spec: str, lengths: list[int], batches: list[int], rounds: int,
               clock) -> tuple[list[dict], object]:
    from inspector import load_model

    loaded = load_model(spec, device="cpu")
    rows = []
    for batch in batches:
        for tokens in lengths:
            if batch * tokens > 16 * 512 or tokens > loaded.info.max_positions:  # long batches are no page's work
                continue
            calls = layer_inputs(loaded, tokens, batch)
            for q_len, chosen in (("1", [_decode_step(c) for c in calls]), (str(tokens), calls)):
                with OtherLoad() as other:
                    seconds = time_paths(chosen, rounds, clock)
                row = dict(spec=spec, batch=batch, q_len=q_len, k_len=tokens, other=other.cores, **seconds)
                rows.append(row)
                print(f"  {spec} batch {batch} q {q_len} k {tokens}: fused {seconds['fused'] * 1000:.2f} ms, "
                      f"blocked {seconds['blocked'] * 1000:.2f} ms", file=sys.stderr, flush=True)
    return rows, loaded.info


def _table(rows: list[dict], head_dims: dict[str, int]) -> str:
    """One line per model, batch and length: the decode step's and the whole sequence's times, fused ÷ blocked,
    and the path :func:`kernels.fused_cpu.fused_is_faster` picks for the sequence."""
    from kernels.fused_cpu import fused_is_faster

    pairs: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        pairs.setdefault((r["spec"], r["batch"], r["k_len"]), {})["decode" if r["q_len"] == "1" else "sequence"] = r
    lines = ["| model (head_dim) | batch | tokens | decode step: fused / blocked ms | fused ÷ blocked "
             "| whole sequence: fused / blocked ms | fused ÷ blocked | rule picks (sequence) | other load (CPUs) |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    for (spec, batch, tokens), measured in pairs.items():
        cells = [f"{m['fused'] * 1000:,.2f} / {m['blocked'] * 1000:,.2f} | **{m['fused'] / m['blocked']:.2f}**"
                 for m in (measured["decode"], measured["sequence"])]
        pick = "fused" if fused_is_faster(tokens, tokens, head_dims[spec]) else "blocked"
        other = max(m["other"] for m in measured.values())
        lines.append(f"| {spec} ({head_dims[spec]}) | {batch} | {tokens:,} | {cells[0]} | {cells[1]} | {pick} "
                     f"| {other:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--lengths", nargs="+", type=int, default=[16, 32, 64, 128, 512, 2048])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timed rounds per call (default: 5)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="one torch thread, timed by the thread's CPU time: the work each path does, without "
                             "the waits a shared machine adds to wall-clock time")
    args = parser.parse_args(argv)
    import torch

    if args.cpu_time:
        torch.set_num_threads(1)  # every kernel then runs in the calling thread, which thread_time measures
    clock = time.thread_time if args.cpu_time else time.perf_counter

    rows, infos = [], {}
    for spec in args.models:
        measured, infos[spec] = model_rows(spec, args.lengths, args.batches, args.rounds, clock)
        rows.extend(measured)
    shapes = "; ".join(f"{spec}: {info.num_layers} layers × {info.num_heads} heads ({info.num_kv_heads} key/value), "
                       f"head_dim {info.head_dim}" for spec, info in infos.items()) + "; fp32 on cpu"
    notes = [f"- Three layers per model (first, middle, last), {args.rounds} interleaved rounds after a warm-up, "
             f"medians summed; every statistic; torch threads: {torch.get_num_threads()}; "
             f"{'the thread CPU time' if args.cpu_time else 'wall-clock time'}. Batches longer than "
             "16 × 512 tokens are skipped."]
    finish(args.write_docs, SECTION_TITLE,
           "The two CPU paths of the `torch` backend on the same real attention inputs: where the fused one is "
           "faster, which `kernels.fused_cpu.fused_is_faster` encodes.",
           module="benchmarks.fused_routing", argv=argv, shapes=shapes,
           table=_table(rows, {spec: info.head_dim for spec, info in infos.items()}), notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
