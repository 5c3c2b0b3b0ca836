"""Statistics at fused-kernel speed on the CPU (issue 43): ours against transformers' SDPA and eager attention, and
the census's and Generate's throughput before and after, all in one run.

- **Inspect**: ``capture(loaded, text, weights=[0])`` — the forward through the one attention function, every
  layer's entropy, log-sum-exp and sink mass, and layer 0's exact weights — against the same folder loaded with
  ``attn_implementation="sdpa"`` and ``"eager"`` from the same text (the tokenizer, then a plain forward, no
  statistics, ``use_cache=False`` and ``logits_to_keep=1`` for the decoders, whose prediction capture reads at the
  last token; SDPA's forward alone on the text tokenised beforehand too): MiniLM (the default
  model) at 128/512 tokens, each bundled decoder at 128/512/2,048. Interleaved rounds (ours, SDPA, SDPA's forward,
  eager, ours, …) after one warm-up each — more for short rows (``--min-seconds``) — medians.
- **Census and Generate, before and after**: the census's texts/s (``measure_rows`` on the default model) and
  Generate's tokens/s (``generate`` on SmolLM2, greedy, every step's statistics) in child processes, each tree
  in turn per round: ``before`` is ``git archive BEFORE`` extracted to a temporary folder, ``after`` this checkout.

Run from the repository root (the machine's other load is recorded, see benchmarks/report.py)::

    python -m benchmarks.cpu_statistics
    python -m benchmarks.cpu_statistics --rounds 3 --write-docs
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from benchmarks.inspect_latency import text_of_length
from benchmarks.report import REPO_ROOT, OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Statistics at fused-kernel speed (CPU)"
ROWS = {"default": (128, 512), "bundled:smollm2-135m": (128, 512, 2048), "bundled:gemma-3-270m": (128, 512, 2048)}
BEFORE = "8560586"  # main before the compiled CPU kernel: the fused op or the blocked path, by fused_is_faster

_THROUGHPUT_CODE = """
import json, time
import torch
from benchmarks.inspect_latency import text_of_length
from inspector import load_model
try:
    from inspector.analyses.census.input import InputRow
    from inspector.analyses.census.measure import measure_rows
except ImportError:  # before the census became a package
    from inspector.analyses.census import InputRow, measure_rows
from inspector.analyses.generate import generate
try:  # the compiled CPU kernel (issue 43): built and loaded before the clock starts, where the tree has it
    from inspector.core.loading import compiled_kernel
    compiled_kernel(wait=True)
except ImportError:
    pass
try:  # as census() does, before the first matrix product: else measure_rows pins one thread (census/threads.py)
    from inspector.analyses.census.threads import ask_strict_cpu_math
    if {census}:
        ask_strict_cpu_math()
except ImportError:
    pass
if not {census}:  # Generate in a process of its own, in plain MKL mode as the app runs it
    decoder = load_model("bundled:smollm2-135m", device="cpu")
    generate(decoder, "The history of the", max_new_tokens=4, stop_at_eos=False, backend="torch")  # warm-up
    started = time.perf_counter()
    result = generate(decoder, "The history of the", max_new_tokens={new_tokens}, stop_at_eos=False, backend="torch")
    print(json.dumps({{"tokens_per_s": result.steps / (time.perf_counter() - started)}}))
    raise SystemExit(0)

encoder = load_model("default", device="cpu")
rows = [InputRow(i, f"t:{{i}}", text_of_length(encoder.tokenizer, 16 + (i * 37) % 112)) for i in range({texts})]
measure_rows(encoder, rows[:8], backend="torch")  # warm-up
started = time.perf_counter()
measured, errors = measure_rows(encoder, rows, backend="torch")
census_s = time.perf_counter() - started
assert not errors and len(measured) == len(rows)
print(json.dumps({{"texts_per_s": len(rows) / census_s}}))
"""


def _models(spec: str):
    """(ours, sdpa, eager): the project's loaded model and transformers' two twins of the same folder."""
    import torch
    from transformers import AutoModel, AutoModelForCausalLM

    from inspector import load_model

    loaded = load_model(spec, device="cpu")
    auto = AutoModel if spec == "default" else AutoModelForCausalLM
    folder = loaded.model.config._name_or_path  # the folder the loader read ("default" names the bundled one)
    twins = [auto.from_pretrained(folder, attn_implementation=name, dtype=torch.float32).eval()
             for name in ("sdpa", "eager")]
    return loaded, *twins


def inspect_rows(spec: str, lengths: tuple[int, ...], rounds: int, min_seconds: float) -> tuple[list[dict], object]:
    """Interleaved rounds of ours / SDPA (from text, and its forward alone) / eager at each length — at least
    ``rounds``, and enough that ours takes ``min_seconds`` in all: seconds per call, and the other load."""
    import torch

    import kernels.hf as hf
    from inspector import capture
    from inspector.core.loading import compiled_kernel

    compiled_kernel(wait=True)  # the path every row should take; where it cannot be built, the row says which ran
    loaded, sdpa, eager = _models(spec)
    rows = []
    for tokens in lengths:
        text = text_of_length(loaded.tokenizer, tokens)
        encoded = loaded.tokenizer(text, return_tensors="pt")
        # A decoder's prediction is its last token's: capture runs the head there alone, and so does the baseline.
        extra = {} if spec == "default" else {"use_cache": False, "logits_to_keep": 1}

        def plain(model, encoded=encoded, extra=extra):
            with torch.no_grad():
                return model(**encoded, **extra)

        def from_text(model, text=text, extra=extra):
            """What a user of transformers runs for a text: the tokenizer, then the forward (capture takes text)."""
            with torch.no_grad():
                return model(**loaded.tokenizer(text, return_tensors="pt"), **extra)

        calls = {"ours": lambda text=text: capture(loaded, text, weights=[0]),
                 "sdpa": lambda: from_text(sdpa), "sdpa_forward": lambda: plain(sdpa),
                 "eager": lambda: from_text(eager)}
        request = hf.AttentionRequest(stats=("entropy", "lse", "sink"))
        with torch.no_grad(), hf.attention_request(request):
            loaded.model(**encoded, **extra)
        paths = sorted({record.path.split(":")[0] for record in request.records})
        got = len(capture(loaded, text, weights=[0]).tokens)
        if got != tokens:
            raise RuntimeError(f"{spec}: capture saw {got} tokens, expected {tokens}")
        for call in calls.values():
            call()  # warm-up
        one_call = []
        for _ in range(3):
            started = time.perf_counter()
            calls["ours"]()
            one_call.append(time.perf_counter() - started)
        # Short rows take more rounds: a median of 3 calls of 15 ms moves by several per cent between runs.
        row_rounds = max(rounds, math.ceil(min_seconds / max(min(one_call), 1e-3)))
        seconds: dict[str, list[float]] = {name: [] for name in calls}
        with OtherLoad() as other:
            for _ in range(row_rounds):
                for name, call in calls.items():
                    started = time.perf_counter()
                    call()
                    seconds[name].append(time.perf_counter() - started)
        rows.append(dict(spec=spec, tokens=tokens, other=other.cores, loadavg=_loadavg(), path="/".join(paths),
                         rounds=row_rounds, **seconds))
        print(f"  {spec} {tokens}: " + ", ".join(f"{n} {statistics.median(s) * 1000:.0f} ms"
                                                 for n, s in seconds.items()), file=sys.stderr, flush=True)
    return rows, loaded.info


LAYER_SHAPE = (1, 9, 3, 2048, 64)  # batch, query heads, key/value heads, tokens, head_dim: one SmolLM2 layer, causal


def layer_alone(rounds: int) -> list[tuple[str, float]]:
    """One causal layer's attention alone (issue 43's own table): every CPU path of ours, with every statistic, against
    PyTorch's fused CPU flash op (which SDPA runs) and eager softmax(QKᵀ)V; medians of interleaved rounds, seconds."""
    import torch

    from kernels.compiled_cpu import compiled_attention, unavailable_reason
    from kernels.fused_cpu import fused_attention
    from kernels.reference import blocked_attention

    batch, heads, kv_heads, tokens, dim = LAYER_SHAPE
    g = torch.Generator().manual_seed(0)
    q = torch.randn(batch, heads, tokens, dim, generator=g)
    k, v = (torch.randn(batch, kv_heads, tokens, dim, generator=g) for _ in range(2))
    keys, values = (t.repeat_interleave(heads // kv_heads, dim=1) for t in (k, v))
    scale = dim**-0.5
    causal = torch.ones(tokens, tokens, dtype=torch.bool).tril()
    paths = {
        "PyTorch's fused CPU flash op (SDPA's kernel; output and log-sum-exp only)":
            lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, keys, values, 0.0, True,
                                                                               scale=scale),
        "eager softmax(QKᵀ)V (no statistic)": lambda: torch.softmax(
            (q @ keys.transpose(-1, -2) * scale).masked_fill(~causal, float("-inf")), dim=-1) @ values,
        "ours, compiled kernel (every statistic)": lambda: compiled_attention(q, k, v, causal=True, scale=scale),
        "ours, fused op + keys call (every statistic)": lambda: fused_attention(q, k, v, causal=True, scale=scale),
        "ours, blocked PyTorch (every statistic)":
            lambda: blocked_attention(q, k, v, causal=True, scale=scale, stats=("entropy", "lse", "sink")),
    }
    if unavailable_reason(q, k, v) is not None:
        del paths["ours, compiled kernel (every statistic)"]
    seconds: dict[str, list[float]] = {name: [] for name in paths}
    with torch.no_grad():
        for call in paths.values():
            call()  # warm-up
        for _ in range(rounds):
            for name, call in paths.items():
                started = time.perf_counter()
                call()
                seconds[name].append(time.perf_counter() - started)
    return [(name, statistics.median(values)) for name, values in seconds.items()]


def _loadavg() -> str:
    return " / ".join(Path("/proc/loadavg").read_text().split()[:3])


def _extract_before(commit: str, into: Path) -> Path:
    archive = into / "before.tar"
    subprocess.run(["git", "archive", "--format=tar", "-o", str(archive), commit], cwd=REPO_ROOT, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def _throughput(tree: Path, texts: int, new_tokens: int) -> dict:
    """The census's texts/s and Generate's tokens/s of ``tree``, each in a child process of its own."""
    result: dict = {}
    for census in (True, False):
        code = _THROUGHPUT_CODE.format(texts=texts, new_tokens=new_tokens, census=census)
        done = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, timeout=1800,
                              env=dict(os.environ, PYTHONPATH=str(tree)))
        if done.returncode != 0:
            raise RuntimeError(f"{tree}: {done.stderr.strip().splitlines()[-1]}")
        result.update(json.loads(done.stdout.strip().splitlines()[-1]))
    return result


def throughput_rounds(rounds: int, texts: int, new_tokens: int) -> dict[str, list[dict]]:
    """Census texts/s and Generate tokens/s of the ``before`` tree and this one, alternating per round."""
    results: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as scratch:
        trees = {"before": _extract_before(BEFORE, Path(scratch)), "after": REPO_ROOT}
        for _ in range(rounds):
            for name, tree in trees.items():
                with OtherLoad() as other:
                    result = _throughput(tree, texts, new_tokens)
                results[name].append(dict(result, other=other.cores))
                print(f"  {name}: {result}", file=sys.stderr, flush=True)
    return results


def _ms(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{statistics.median(ms):,.0f} ({min(ms):,.0f}–{max(ms):,.0f})"


def _tables(inspect: list[dict], throughput: dict[str, list[dict]], layer: list[tuple[str, float]]) -> str:
    def ratio(row, name):
        return statistics.median(row["ours"]) / statistics.median(row[name])

    lines = ["| model | tokens | our path | rounds | ours, median (min–max) ms | SDPA from text ms | SDPA forward "
             "alone ms | eager from text ms | ours ÷ SDPA | ours ÷ SDPA's forward alone | ours ÷ eager "
             "| other load (CPUs) | load average |", "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['spec']} | {r['tokens']:,} | {r['path']} | {r['rounds']} | {_ms(r['ours'])} | {_ms(r['sdpa'])} "
              f"| {_ms(r['sdpa_forward'])} | {_ms(r['eager'])} | **{ratio(r, 'sdpa'):.3f}** "
              f"| {ratio(r, 'sdpa_forward'):.3f} | {ratio(r, 'eager'):.2f} | {r['other']:.2f} | {r['loadavg']} |"
              for r in inspect]
    if throughput:
        lines += ["", "| code | census texts/s, median (min–max) | Generate tokens/s, median (min–max) "
                  "| other load (CPUs) |", "|---|---:|---:|---:|"]
        for name, results in throughput.items():
            cells = []
            for key in ("texts_per_s", "tokens_per_s"):
                values = [r[key] for r in results]
                cells.append(f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})")
            label = (f"before ({BEFORE}: fused or blocked by `fused_is_faster`)" if name == "before"
                     else "after (this checkout: the compiled CPU kernel)")
            lines.append(f"| {label} | {cells[0]} | {cells[1]} | {max(r['other'] for r in results):.2f} |")
    if layer:
        op = layer[0][1]
        lines += ["", f"| one causal layer alone, (batch, heads, kv heads, tokens, head_dim) = {LAYER_SHAPE} | ms "
                  "| ÷ the fused op |", "|---|---:|---:|"]
        lines += [f"| {name} | {value * 1000:,.1f} | {value / op:.2f} |" for name, value in layer]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved timed rounds per row, at least (default: 3)")
    parser.add_argument("--min-seconds", type=float, default=2.0,
                        help="more rounds for short rows, until ours takes this long in all (default: %(default)s)")
    parser.add_argument("--models", nargs="+", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--max-tokens", type=int, default=2048, help="skip longer rows (default: %(default)s)")
    parser.add_argument("--texts", type=int, default=64, help="census texts per throughput run (default: 64)")
    parser.add_argument("--new-tokens", type=int, default=32, help="Generate's new tokens per run (default: 32)")
    parser.add_argument("--throughput-rounds", type=int, default=2,
                        help="before/after child-process rounds; 0 skips them (default: 2)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if not 0 <= args.min_seconds <= 600:
        parser.error("--min-seconds must be between 0 and 600")
    started_load = _loadavg()
    inspect, infos = [], {}
    for spec in args.models:
        lengths = tuple(n for n in ROWS[spec] if n <= args.max_tokens)
        rows, infos[spec] = inspect_rows(spec, lengths, args.rounds, args.min_seconds)
        inspect.extend(rows)
    layer = layer_alone(max(args.rounds, 5))
    throughput = throughput_rounds(args.throughput_rounds, args.texts, args.new_tokens) if args.throughput_rounds \
        else {}
    import torch

    notes = [
        f"- Inspect: `capture(loaded, text, weights=[0])` (the text tokenised and validated, every layer's "
        "entropy, log-sum-exp and sink mass + layer 0's exact weights) against the same folder loaded with "
        "`attn_implementation='sdpa'` and `'eager'`, each from the same text: its tokenizer call "
        "(`tokenizer(text, return_tensors='pt')`) and a plain forward (`use_cache=False` for the decoders, and "
        "`logits_to_keep=1`: the head at the last token only, as capture runs it to read the prediction); "
        "'SDPA forward alone' is that forward on the text tokenised beforehand. At least "
        f"{args.rounds} interleaved rounds after one warm-up each, and enough that ours takes {args.min_seconds:g} s "
        "in all (the 'rounds' column); medians; texts are repeated words, token counts include special tokens.",
        f"- Census / Generate: child processes, `before` = `git archive {BEFORE}` extracted to a temporary folder "
        f"(the fused or blocked path), `after` = this checkout (the compiled kernel), alternating, "
        f"{args.throughput_rounds} rounds each; census = "
        f"`measure_rows` of {args.texts} texts of 16–127 tokens on the default model (all statistics, default "
        f"batching; the `after` tree's census, like `census()`, in MKL's strict mode, asked for before the first "
        "matrix product — without it `measure_rows` measures on one thread, see census/threads.py); Generate (a "
        "child of its own, plain MKL mode) = "
        f"`generate(bundled:smollm2-135m, 'The history of the', max_new_tokens="
        f"{args.new_tokens})`, greedy, every step's statistics, prefill included in the time.",
        f"- torch threads: {torch.get_num_threads()}. The machine was shared with other agents' jobs (tests, "
        f"servers) throughout: load average {started_load} when the run started and {_loadavg()} when it ended; "
        "'other load' is the CPUs other processes kept busy during each row. Contended rows read as such; the "
        "ratios compare calls interleaved in the same minutes.",
    ]
    shapes = "; ".join(f"{spec}: {info.architecture}, {info.num_layers} layers × {info.num_heads} heads "
                       f"({info.num_kv_heads} key/value), head_dim {info.head_dim}, fp32 on cpu"
                       for spec, info in infos.items()) + "; batch 1"
    finish(args.write_docs, SECTION_TITLE,
           "Ours (every statistic + one layer's weights) against transformers' SDPA and eager attention; the "
           "census's and Generate's throughput before and after the compiled CPU kernel (issue 43). Ours runs "
           "every attention call through the compiled kernel (`kernels/attention_cpu.cpp`) where it is built; the "
           "'our path' column names the path the row's forward took.",
           module="benchmarks.cpu_statistics", argv=argv, shapes=shapes, table=_tables(inspect, throughput, layer),
           notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
