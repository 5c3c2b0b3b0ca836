"""Issue 33's hostile requests against a hosted instance, and its cache memory: how long each request runs and
the server's resident memory, before and after the fixes, in the same run.

Each measurement runs the app in a fresh Python process with ``INSPECTOR_HOSTED=1``, driven by Streamlit's
``AppTest`` (the app's script and caches as a server runs them; no browser, no network — nothing leaves this
machine), from a source tree given on the command line, so the same script measures the code before the fixes
(``--before``, e.g. a ``git archive`` of the earlier commit) and after (this checkout):

- ``cache``: the Inspect page on N different ~440-token texts, one after another (issue 33, item 11: 40 texts took
  a hosted server from 782 to 2,689 MB); the process's RSS before the first and after each text;
- ``hostile``: the issue's long requests, each once — Attribution with every method on 512 tokens, Heads,
  Lessons and Compare at 512 tokens, a Ground-truth scoreboard of 500 examples, the Heads corpus — with each
  request's wall time, whether the page refused or cut it (its one-line error or notice), and the process's peak RSS.
  Bounded: each request has a wall-clock limit (``--request-timeout``), and the old code's 240 s / 8 GB
  Attribution run is not repeated unless asked (``--hostile-before``).

Run from the repository root (a 2-CPU machine takes ~10 min)::

    git archive 894f421 | tar -x -C /tmp/before
    python -m benchmarks.hosted_limits --before /tmp/before --texts 40 --write-docs
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

SECTION_TITLE = "Hosted limits and cache memory (issue 33)"
TOKENS = 440
HOSTILE_TOKENS = 512


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _texts(loaded, count: int, tokens: int) -> list[str]:
    """``count`` different texts of about ``tokens`` tokens each (different words, so no two share a cache key)."""
    from inspector.core.budget import count_tokens

    vocabulary = ("river mountain engine garden letter window station summer market silver theory forest doctor "
                  "bridge planet village winter music castle ocean signal paper harbor kitchen valley museum "
                  "lantern meadow circuit archive").split()
    texts = []
    for index in range(count):
        words = [vocabulary[(index * 7 + k * (index % 5 + 1)) % len(vocabulary)] for k in range(tokens)]
        words[0] = f"text{index}"
        size = tokens - 2
        while count_tokens(loaded, " ".join(words[:size]), truncate=True) > tokens - 2:
            size -= 4
        texts.append(" ".join(words[:size]) + ".")
    return texts


def _worker(tree: Path, part: str, count: int, timeout: float) -> dict:
    """Runs in the child process: the app of ``tree``, hosted, under AppTest."""
    sys.path.insert(0, str(tree))
    os.chdir(tree)
    os.environ["INSPECTOR_HOSTED"] = "1"
    from streamlit.testing.v1 import AppTest

    from inspector.core.loading import load_model

    app = str(tree / "app.py")
    loaded = load_model("default")
    out: dict = {"tree": str(tree)}

    def run(page: str, query: dict, setup=None) -> tuple[float, AppTest]:
        at = AppTest.from_file(app, default_timeout=timeout)
        for name, value in query.items():
            at.query_params[name] = value
        started = time.perf_counter()
        try:
            at.switch_page(page).run()
            if setup is not None:
                setup(at)
        except RuntimeError as err:  # AppTest's timeout
            out.setdefault("timeouts", []).append(f"{page}: {err}")
        return time.perf_counter() - started, at

    if part == "cache":
        texts = _texts(loaded, count, TOKENS)
        run("views/inspect.py", {"text": "A warm-up sentence."})
        rss = [_rss_mib()]
        seconds = []
        for text in texts:
            elapsed, at = run("views/inspect.py", {"text": text})
            seconds.append(elapsed)
            rss.append(_rss_mib())
        out.update(rss=rss, seconds=seconds, peak=_peak_mib())
        return out

    from inspector.core.budget import count_tokens

    long_text = _texts(loaded, 1, HOSTILE_TOKENS)[0]
    n = count_tokens(loaded, long_text)

    def every_method(at: AppTest) -> None:  # the old page asks first past 128 tokens
        toggles = [tg for tg in at.toggle if tg.key == "attr_long"]
        if toggles:
            toggles[0].set_value(True).run()

    def corpus(at: AppTest) -> None:
        at.radio(key="heads_mode").set_value("corpus").run()

    def examples(at: AppTest) -> None:
        at.number_input(key="gt_examples").set_value(500).run()

    requests = [
        (f"Attribution, every method, {n} tokens", "views/attribution.py", {"text": long_text}, every_method),
        (f"Heads, {n} tokens", "views/heads.py", {"text": long_text}, None),
        (f"Lessons, {n} tokens", "views/lessons.py", {"text": long_text}, None),
        (f"Compare, {n} tokens", "views/compare.py", {"text": long_text}, None),
        (f"Inspect, {n} tokens", "views/inspect.py", {"text": long_text}, None),
        ("Heads, the whole corpus", "views/heads.py", {}, corpus),
        ("Ground truth, 500 examples", "views/groundtruth.py", {}, examples),
    ]
    rows = []
    for name, page, query, setup in requests:
        before = _rss_mib()
        elapsed, at = run(page, query, setup)
        said = [e.value for e in at.error] + [i.value for i in at.info if "hosted" in i.value]
        rows.append({"request": name, "seconds": elapsed, "rss_before": before, "rss_after": _rss_mib(),
                     "peak": _peak_mib(), "said": said[:2], "exception": [e.value for e in at.exception][:1]})
    out.update(rows=rows, peak=_peak_mib(), tokens=n)
    return out


def _measure(tree: Path, part: str, count: int, timeout: float, budget_s: float) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", part, "--tree", str(tree),
               "--texts", str(count), "--request-timeout", str(timeout)]
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, timeout=budget_s,
                          env={**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")})
    if done.returncode != 0:
        raise RuntimeError(f"the {part} worker on {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    from benchmarks.report import OtherLoad, benchmark_parser, finish

    parser = benchmark_parser(__doc__, SECTION_TITLE)
    parser.add_argument("--before", type=Path, required=True, help="the source tree before the fixes")
    parser.add_argument("--texts", type=int, default=40)
    parser.add_argument("--request-timeout", type=float, default=300.0)
    parser.add_argument("--hostile-before", action="store_true",
                        help="also send the hostile requests to the old code (minutes, GBs)")
    args = parser.parse_args(argv)
    after = Path(__file__).resolve().parent.parent
    load = os.getloadavg()
    with OtherLoad() as other:
        cache = {label: _measure(tree, "cache", args.texts, args.request_timeout, 3600)
                 for label, tree in (("before", args.before), ("after", after))}
        hostile = {"after": _measure(after, "hostile", 0, args.request_timeout, 3600)}
        if args.hostile_before:
            hostile["before"] = _measure(args.before, "hostile", 0, args.request_timeout, 7200)
    lines = [f"| code | RSS before the first text, MiB | after {args.texts} texts, MiB | growth, MiB | peak, MiB "
             "| slowest text, s |", "|---|---:|---:|---:|---:|---:|"]
    for label, result in cache.items():
        rss = result["rss"]
        lines.append(f"| {label} | {rss[0]:,.0f} | {rss[-1]:,.0f} | {rss[-1] - rss[0]:,.0f} | {result['peak']:,.0f} "
                     f"| {max(result['seconds']):.1f} |")
    lines += ["", "| code | hostile request | wall, s | RSS after, MiB | peak so far, MiB | what the page said |",
              "|---|---|---:|---:|---:|---|"]
    for label, result in hostile.items():
        for row in result["rows"]:
            said = "; ".join(row["said"] + row["exception"]).replace("|", "/").replace("\n", " ")[:160] or "ran"
            lines.append(f"| {label} | {row['request']} | {row['seconds']:.1f} | {row['rss_after']:,.0f} "
                         f"| {row['peak']:,.0f} | {said} |")
    longest = max(row["seconds"] for row in hostile["after"]["rows"])
    summary = (f"After the fixes, {args.texts} different ~{TOKENS}-token texts on a hosted Inspect page grow the "
               f"process by {cache['after']['rss'][-1] - cache['after']['rss'][0]:,.0f} MiB (before: "
               f"{cache['before']['rss'][-1] - cache['before']['rss'][0]:,.0f} MiB); under the hostile requests the "
               f"longest request took {longest:.1f} s and the process peaked at {hostile['after']['peak']:,.0f} MiB.")
    notes = [f"- Load average when started: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; other processes used "
             f"{other.cores:.2f} cores on average during the run (this benchmark's own worker processes included; a "
             "shared 2-core machine with other engineers' jobs: times are loaded).",
             "- AppTest runs the app's scripts and caches in one process, as the server would; Streamlit's "
             "websocket layer and the browser are not part of these figures."]
    finish(args.write_docs, SECTION_TITLE, summary, module="benchmarks.hosted_limits", argv=argv,
           shapes=f"all-MiniLM-L6-v2 (6 × 12 heads), {args.texts} texts of ~{TOKENS} tokens; hostile requests at "
                  f"{HOSTILE_TOKENS} tokens", table="\n".join(lines), notes=notes)
    print(json.dumps({"cache": cache, "hostile": hostile})[:4000], file=sys.stderr)
    return 0


if __name__ == "__main__":
    if "--worker" in sys.argv:
        import argparse

        worker = argparse.ArgumentParser()
        worker.add_argument("--worker")
        worker.add_argument("--tree", type=Path)
        worker.add_argument("--texts", type=int)
        worker.add_argument("--request-timeout", type=float)
        ns = worker.parse_args()
        print(json.dumps(_worker(ns.tree, ns.worker, ns.texts, ns.request_timeout)))
    else:
        sys.exit(main())
