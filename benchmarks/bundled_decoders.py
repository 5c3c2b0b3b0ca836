"""The bundled decoders on CPU (issue 27): preparation, load, memory, and the Inspect call against eager attention.

For each bundled decoder (Gemma 3 270M, SmolLM2-135M-Instruct):

- **first preparation**: ``python -m inspector prepare --model bundled:NAME`` in a fresh subprocess with an empty
  cache folder (``INSPECTOR_CACHE_DIR`` = a temporary folder): SHA-256 check, GGUF → fp32 safetensors, wall time;
- **later load**: ``load_model("bundled:NAME")`` from the prepared folder in a fresh subprocess (median of
  ``--load-repeats``), and the process's resident memory (VmRSS) right after; the same load from a bf16 copy of
  the folder (widened to fp32 on load, as the CPU path computes), with both folders' size on disk — the figures
  behind the fp32-on-disk choice of inspector/core/bundled.py;
- **Inspect**: ``capture(loaded, text, weights=[0])`` (forward through the inspector backend + every layer's
  entropies + one layer's exact weights) against transformers' eager attention on the same prepared folder with
  ``output_attentions=True`` (every layer's n × n weights), both timed in this one process, median of ``--repeats``
  after one warm-up, at ``--tokens`` lengths (special tokens included).

Run from the repository root (the machine's other load is recorded, see benchmarks/report.py)::

    python -m benchmarks.bundled_decoders
    python -m benchmarks.bundled_decoders --tokens 16 128 512 2048 --repeats 3 --write-docs
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.inspect_latency import text_of_length
from benchmarks.report import REPO_ROOT, OtherLoad, benchmark_parser, finish

SECTION_TITLE = "Bundled decoders (CPU)"
DEFAULT_TOKENS = (16, 128, 512)
MODELS = ("bundled:gemma-3-270m", "bundled:smollm2-135m")

_LOAD_CODE = """
import json, sys, time
{imports}
started = time.perf_counter()
{load}
seconds = time.perf_counter() - started
rss = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS:"))
print(json.dumps({{"seconds": seconds, "rss_mib": rss / 1024}}))
"""
# (imports, the timed load): the imports (torch, transformers: ~3 s) are not part of the load time.
_OURS = ("import torch, transformers; from inspector import load_model", "load_model({spec!r}, device='cpu')")
_PLAIN = ("import torch; from transformers import AutoModelForCausalLM",
          "AutoModelForCausalLM.from_pretrained({folder!r}, dtype=torch.float32)")


def _python(code: str, env: dict | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), **(env or {})))
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1])
    return json.loads(done.stdout.strip().splitlines()[-1])


def first_preparation(spec: str) -> float:
    """Seconds of ``python -m inspector prepare`` into an empty cache (a subprocess, so nothing is warm)."""
    with tempfile.TemporaryDirectory() as cache:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "inspector", "prepare", "--model", spec], cwd=REPO_ROOT, check=True,
                       capture_output=True, timeout=1800,
                       env=dict(os.environ, INSPECTOR_CACHE_DIR=cache, PYTHONPATH=str(REPO_ROOT)))
        return time.perf_counter() - started


def _folder_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 2**20


def loads(spec: str, folder: Path, repeats: int) -> dict:
    """Median later load through the project's loader and VmRSS after it; fp32 vs bf16 folders by plain
    transformers (same code, only the file differs)."""
    import torch
    from transformers import AutoModelForCausalLM

    def fresh_loads(imports: str, load: str) -> list[dict]:
        return [_python(_LOAD_CODE.format(imports=imports, load=load)) for _ in range(repeats)]

    ours = fresh_loads(_OURS[0], _OURS[1].format(spec=spec))
    fp32 = fresh_loads(_PLAIN[0], _PLAIN[1].format(folder=str(folder)))
    with tempfile.TemporaryDirectory() as scratch:
        bf16_folder = Path(scratch) / "bf16"
        AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).save_pretrained(bf16_folder)
        bf16 = fresh_loads(_PLAIN[0], _PLAIN[1].format(folder=str(bf16_folder)))
        bf16_mib = _folder_mib(bf16_folder)
    return dict(ours_s=statistics.median(r["seconds"] for r in ours),
                rss_mib=statistics.median(r["rss_mib"] for r in ours),
                fp32_s=statistics.median(r["seconds"] for r in fp32),
                bf16_s=statistics.median(r["seconds"] for r in bf16),
                fp32_mib=_folder_mib(folder), bf16_mib=bf16_mib)


def _timed(call, repeats: int) -> tuple[list[float], float]:
    call()  # warm-up
    seconds = []
    with OtherLoad() as other:
        for _ in range(repeats):
            started = time.perf_counter()
            call()
            seconds.append(time.perf_counter() - started)
    return seconds, other.cores


def inspect_rows(spec: str, lengths: list[int], repeats: int) -> tuple[list[dict], object]:
    import torch
    from transformers import AutoModelForCausalLM

    from inspector import capture, load_model
    from inspector.core.budget import attention_bytes

    loaded = load_model(spec, device="cpu")
    eager = AutoModelForCausalLM.from_pretrained(loaded.info.source, attn_implementation="eager",
                                                 dtype=torch.float32).eval()
    rows = []
    for tokens in lengths:
        text = text_of_length(loaded.tokenizer, tokens)
        result = capture(loaded, text, weights=[0])
        if len(result.tokens) != tokens:
            raise RuntimeError(f"{spec}: capture saw {len(result.tokens)} tokens, expected {tokens}")
        encoded = loaded.codec.encode(text, return_tensors="pt")

        def run_eager():
            with torch.no_grad():
                return eager(**encoded, output_attentions=True, use_cache=False)

        ours_s, ours_load = _timed(lambda: capture(loaded, text, weights=[0]), repeats)
        eager_s, eager_load = _timed(run_eager, repeats)
        info = loaded.info
        rows.append(dict(spec=spec, tokens=tokens, ours=ours_s, eager=eager_s, other=max(ours_load, eager_load),
                         ours_weights_mib=result.weights[0].nbytes / 2**20,
                         eager_weights_mib=attention_bytes(info, tokens) / 2**20))
        print(f"  {spec} {tokens} tokens: ours {statistics.median(ours_s) * 1000:.0f} ms, eager "
              f"{statistics.median(eager_s) * 1000:.0f} ms", file=sys.stderr, flush=True)
    return rows, loaded.info


def _ms(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{statistics.median(ms):.0f} ({min(ms):.0f}–{max(ms):.0f})"


def main(argv: list[str] | None = None) -> int:
    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--tokens", type=int, nargs="+", default=list(DEFAULT_TOKENS),
                        help="text lengths in tokens, special tokens included (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per length and path (default: 3)")
    parser.add_argument("--load-repeats", type=int, default=3, help="fresh-process loads per model (default: 3)")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.load_repeats < 1:
        parser.error("--repeats and --load-repeats must be at least 1")

    from inspector.core.bundled import prepare

    lengths = sorted(set(args.tokens))
    setup, inspect, infos = [], [], {}
    for spec in args.models:
        print(f"{spec}: first preparation …", file=sys.stderr, flush=True)
        prepared_s = first_preparation(spec)
        folder = prepare(spec)  # the default cache, as the app uses it
        setup.append(dict(spec=spec, prepared_s=prepared_s, **loads(spec, folder, args.load_repeats)))
        rows, infos[spec] = inspect_rows(spec, lengths, args.repeats)
        inspect.extend(rows)

    table = "\n".join([
        "| model | first preparation s | later load s (ours) | RSS after load MiB | fp32 folder MiB / load s "
        "| bf16 folder MiB / load s |",
        "|---|---:|---:|---:|---:|---:|",
        *(f"| {r['spec']} | {r['prepared_s']:.1f} | {r['ours_s']:.2f} | {r['rss_mib']:.0f} "
          f"| {r['fp32_mib']:.0f} / {r['fp32_s']:.2f} | {r['bf16_mib']:.0f} / {r['bf16_s']:.2f} |" for r in setup),
        "",
        "| model | tokens | Inspect (ours), median (min–max) ms | eager + output_attentions, median (min–max) ms "
        "| ours ÷ eager | weights returned: ours (1 layer) / eager (all) MiB | other load (CPUs) |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(f"| {r['spec']} | {r['tokens']} | {_ms(r['ours'])} | {_ms(r['eager'])} "
          f"| {statistics.median(r['ours']) / statistics.median(r['eager']):.2f} "
          f"| {r['ours_weights_mib']:.2f} / {r['eager_weights_mib']:.1f} | {r['other']:.2f} |" for r in inspect),
    ])
    import torch

    notes = [
        "- First preparation: `python -m inspector prepare --model SPEC` in a fresh process with an empty "
        "`INSPECTOR_CACHE_DIR` (SHA-256 of the GGUF, tokenizer and tensors read by transformers' GGUF loader, "
        "dequantised to fp32, `save_pretrained` as safetensors, rename), wall time, one run.",
        f"- Later load: `load_model(SPEC, device='cpu')` in a fresh process (after importing torch and "
        f"transformers, which is not counted), median of {args.load_repeats}, "
        "the prepared folder in the operating system's file cache; RSS = VmRSS right after. fp32 / bf16 columns: "
        "plain `AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)` of the prepared folder and of a "
        "bf16 copy of it (both loaded as fp32, the CPU path), median of the same number of fresh processes.",
        f"- Inspect: `capture(loaded, text, weights=[0])` against `model(**encoded, output_attentions=True, "
        f"use_cache=False)` of the same folder with `attn_implementation='eager'`, median of {args.repeats} after "
        "one warm-up each, in one process. Weights returned: bytes of the attention weights each path hands back "
        "(ours: layer 0's heads × n × n; eager: every layer's), computed from the shapes — not a peak-memory "
        "measurement. Texts are repeated words; the token counts include the tokenizer's special tokens "
        "(Gemma adds `<bos>`, SmolLM2 adds none).",
        f"- torch threads: {torch.get_num_threads()}. Other load: CPUs other processes kept busy during the timed "
        "calls (benchmarks/report.py `OtherLoad`); this machine is shared with other engineers' jobs, and rows "
        "where it is well above 0 are contended.",
    ]
    shapes = "; ".join(f"{spec}: {info.architecture}, {info.num_layers} layers × {info.num_heads} heads "
                       f"({info.num_kv_heads} key/value), head_dim {info.head_dim}, fp32 on cpu"
                       for spec, info in infos.items()) + f"; batch 1 × {', '.join(map(str, lengths))} tokens"
    finish(args.write_docs, SECTION_TITLE,
           "The two bundled decoders: one-time preparation, later loads, and the Inspect call against eager.",
           module="benchmarks.bundled_decoders", argv=argv, shapes=shapes, table=table, notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
