"""The decoder lessons' on-request experiments on the bundled decoders, timed once (issue 30): D4's streaming-LLM
perplexity (window only / window + 4 sinks / full attention on the bundled corpus) and D5's local-vs-global window
layers (exact zeros beyond the window; blocked attention with and without the window as n grows, median of repeats).
Prints one line per figure with its wall time and /proc/loadavg before and after; run it through the machine's quiet
gate when the timings are quoted (docs/BENCHMARKS.md, "Decoder-era lessons").

    .venv/bin/python -m benchmarks.lessons_decoder_runs bundled:gemma-3-270m bundled:smollm2-135m
"""

from __future__ import annotations

import argparse
import time

import kernels.hf  # noqa: F401  (registers the inspector attention implementation)
from inspector.analyses.lessons import streaming_perplexity, window_lesson
from inspector.core.loading import load_model


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--backend", default="auto")
    args = parser.parse_args()
    print(f"loadavg before: {loadavg()}", flush=True)
    for spec in args.models:
        started = time.perf_counter()
        loaded = load_model(spec, device="cpu")
        print(f"{spec}: loaded in {time.perf_counter() - started:.1f} s", flush=True)
        if loaded.info.sliding_window is not None:
            started = time.perf_counter()
            window = window_lesson(loaded, backend=args.backend)
            print(f"{spec} D5: {time.perf_counter() - started:.1f} s; window {window.window}, local layers "
                  f"{len(window.local_layers)}, global {len(window.global_layers)}, n {window.n}; largest weight "
                  f"beyond the window (local layer {window.local_layer}) {float(window.beyond_local.max()):.3g}; "
                  f"global layer {window.global_layer} mean mass there "
                  f"{float(window.beyond_global.mean()) if window.beyond_global is not None else float('nan'):.3g}; "
                  f"spread {window.spread:.2f}; reach {window.reach}", flush=True)
            for n, lm, gm, lb, gb in zip(window.lengths, window.local_ms, window.global_ms, window.local_bytes,
                                         window.global_bytes):
                print(f"  n={int(n)}: local {lm:.2f} ms, global {gm:.2f} ms; scores {lb / 2**20:.2f} vs "
                      f"{gb / 2**20:.2f} MiB", flush=True)
            print(f"  answer: {window.answer.text('en')}", flush=True)
        started = time.perf_counter()
        tokens, window_size, ppl = streaming_perplexity(loaded, backend=args.backend)
        print(f"{spec} D4 streaming: {time.perf_counter() - started:.1f} s; {tokens} tokens, window {window_size}: "
              f"window only {ppl[0]:.1f}, + 4 sinks {ppl[1]:.1f}, full {ppl[2]:.1f}", flush=True)
        print(f"loadavg: {loadavg()}", flush=True)


if __name__ == "__main__":
    main()
