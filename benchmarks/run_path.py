"""The one run against the code before it (issue 39, item 1): the Inspect, Generate and Heads pages' library path,
timed side by side for two checkouts in interleaved rounds, so a shared machine's load falls on both alike.

Each round runs one fresh process per checkout (its own ``PYTHONPATH``, so the checkout's ``inspector`` is the one
imported — printed in the output), in alternating order, and each process times, after a warm-up of each:

- **inspect** at 32, 128 and 512 tokens: the page's run on a cache miss — before: ``plan_request`` then
  ``capture_within_memory`` holding a run slot; now: :func:`inspector.serving.run.plan` then
  :func:`~inspector.serving.run.run_capture` (the text tokenised once);
- **generate**: the page's run on ``bundled:smollm2-135m`` (a 128-token prompt, 16 new tokens, greedy, every layer's
  rows kept, as the page asks) — before: ``plan_job`` then ``generate`` inside ``job.running()``; now: the plan (the
  prompt tokenised once) then ``generate(encoded=…)`` inside :func:`~inspector.serving.run.run`;
- **heads**: the Heads page's report over the first ``--texts`` corpus texts inside the job's ``running()`` block.

Run from the repository root (``--base`` is a checkout of the earlier code, e.g. ``git archive 1cf9936 | tar -x -C
/tmp/run-base``)::

    python -m benchmarks.run_path --base /tmp/run-base --rounds 3
    python -m benchmarks.run_path --base /tmp/run-base --rounds 3 --blocked  # one CPU attention path on both sides
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSPECT_TOKENS = (32, 128, 512)
PROMPT_TOKENS, NEW_TOKENS = 128, 16
_WORDS = "the quick brown fox jumps over a lazy dog while birds sing in tall green trees".split()


def _text(tokenizer, tokens: int) -> str:
    """Exactly ``tokens`` tokens for the bundled encoder, [CLS] and [SEP] included."""
    words = tokens - 2
    for _ in range(8):
        text = " ".join(_WORDS[i % len(_WORDS)] for i in range(words))
        got = len(tokenizer(text)["input_ids"])
        if got == tokens:
            return text
        words += tokens - got
    raise RuntimeError(f"no text of {tokens} tokens")


def _timed(call, repeats: int) -> float:
    call()  # warm-up
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def _use_the_blocked_path() -> None:
    """Where the checkout has the fused CPU kernel (kernels/fused_cpu.py), make it unavailable, so the torch backend
    takes the blocked path with its stated reason — the only CPU path the earlier code had."""
    try:
        import kernels.fused_cpu as fused
    except ImportError:  # the earlier code: the blocked path already
        return
    fused._FLASH_CPU = None


def _child(texts: int, repeats: int) -> dict:
    """In the checkout on ``PYTHONPATH``: the three pages' runs, timed (seconds, medians)."""
    import inspector
    from inspector.analyses.generate import generate
    from inspector.analyses.heads import CORPUS_PATH, head_report, read_corpus
    from inspector.core.loading import load_model
    from inspector.serving.hosting import HostingPolicy

    policy, new = HostingPolicy(), Path(inspector.__file__).resolve().parents[1] == ROOT
    encoder, decoder = load_model("default"), load_model("bundled:smollm2-135m", device="cpu")
    corpus = read_corpus(CORPUS_PATH)[:texts]
    prompt = " ".join(_WORDS[i % len(_WORDS)] for i in range(200))
    # The same prompt for both checkouts: the earlier code has no token codec, so its tokenizer cuts the prompt.
    if new:
        prompt = decoder.codec.decode(decoder.codec.input_ids(prompt)[:PROMPT_TOKENS - 1])
    else:
        ids = decoder.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        prompt = decoder.tokenizer.decode(ids[:PROMPT_TOKENS - 1])
    if new:
        from inspector.serving.run import Request, plan, run, run_capture

        def inspect(text):
            return run_capture(plan(Request(kind="inspect", texts=(text,), weights="all"), encoder, policy), encoder)

        def write():
            job = plan(Request(kind="generate", texts=(prompt,), count=NEW_TOKENS, weights="all"), decoder, policy)
            return run(job, lambda progress: generate(decoder, prompt, max_new_tokens=job.keep, weights=job.weights,
                                                      stop_at_eos=False, encoded=job.encodings[0]))

        def heads():
            job = plan(Request(kind="heads", texts=tuple(corpus), count=len(corpus)), encoder, policy)
            with job.running():
                return head_report(encoder, list(job.kept(corpus)))
    else:
        from inspector.core.budget import plan_request
        from inspector.core.capture import capture_within_memory
        from inspector.serving.jobs import plan_job
        from inspector.serving.run_queue import process_queue

        def inspect(text):
            planned = plan_request(encoder, text, 0, budget_bytes=policy.weights_budget_bytes)
            with process_queue().slot():
                return capture_within_memory(encoder, text, weights="all" if planned.weights_layers is None
                                             else planned.weights_layers, keep_layer=0, deadline_s=policy.deadline_s)

        def write():
            job = plan_job(policy, "generate", decoder, [prompt], count=NEW_TOKENS)
            with job.running():
                return generate(decoder, prompt, max_new_tokens=job.keep, weights="all", stop_at_eos=False)

        def heads():
            job = plan_job(policy, "heads", encoder, corpus, count=len(corpus))
            with job.running():
                return head_report(encoder, list(job.kept(corpus)))

    row = {"code": str(Path(inspector.__file__).resolve().parents[1]), "prompt_tokens": len(write().prompt_tokens)}
    for tokens in INSPECT_TOKENS:
        text = _text(encoder.tokenizer, tokens)
        row[f"inspect_{tokens}"] = _timed(lambda: inspect(text), repeats)
    row["generate"] = _timed(write, 1)
    row["heads"] = _timed(heads, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    global INSPECT_TOKENS, PROMPT_TOKENS, NEW_TOKENS  # the child reads the sizes the parent was given
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, help="a checkout of the earlier code (omit in the child)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--texts", type=int, default=20, help="corpus texts of the Heads report (default: 20)")
    parser.add_argument("--repeats", type=int, default=5, help="timed inspect runs per length (default: 5)")
    parser.add_argument("--tokens", type=int, nargs="+", default=list(INSPECT_TOKENS), help="inspect lengths")
    parser.add_argument("--prompt-tokens", type=int, default=PROMPT_TOKENS)
    parser.add_argument("--new-tokens", type=int, default=NEW_TOKENS)
    parser.add_argument("--blocked", action="store_true",
                        help="run this checkout's attention on the blocked CPU path, as the earlier code did, so the "
                             "comparison isolates the run's plumbing from issue 43's fused CPU kernel")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    INSPECT_TOKENS, PROMPT_TOKENS, NEW_TOKENS = tuple(args.tokens), args.prompt_tokens, args.new_tokens
    if args.child:
        if args.blocked:
            _use_the_blocked_path()
        print(json.dumps(_child(args.texts, args.repeats)))
        return 0
    runs: dict[str, list[dict]] = {"before": [], "now": []}
    for round_ in range(args.rounds):
        order = [("before", args.base), ("now", ROOT)]
        for name, code in order if round_ % 2 == 0 else order[::-1]:
            env = {**os.environ, "PYTHONPATH": str(code)}
            blocked = ["--blocked"] if args.blocked else []
            # The script by path (the earlier checkout has no copy of it), the checkout's package on PYTHONPATH.
            sizes = ["--tokens", *map(str, INSPECT_TOKENS), "--prompt-tokens", str(PROMPT_TOKENS), "--new-tokens",
                     str(NEW_TOKENS), "--texts", str(args.texts), "--repeats", str(args.repeats)]
            done = subprocess.run([sys.executable, __file__, "--child", *blocked, *sizes], cwd=code, env=env,
                                  capture_output=True, text=True, check=True)
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(name, runs[name][-1], open("/proc/loadavg").read().strip(), file=sys.stderr, flush=True)
    keys = [f"inspect_{n}" for n in INSPECT_TOKENS] + ["generate", "heads"]
    print("| run | before, median s | now, median s | now ÷ before |\n|---|---:|---:|---:|")
    for key in keys:
        before = statistics.median(r[key] for r in runs["before"])
        now = statistics.median(r[key] for r in runs["now"])
        print(f"| {key} | {before:.3f} | {now:.3f} | {now / before:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
