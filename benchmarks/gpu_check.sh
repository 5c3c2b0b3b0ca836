#!/usr/bin/env bash
# Issue 3's GPU check: the gpu-marked kernel tests, then the attention-kernel benchmark, in under 8 minutes.
#
# Run on the GPU machine from the repository root:      bash benchmarks/gpu_check.sh
# Everything lands in "$OUT" (default ./gpu-out):
#   environment.txt                 nvidia-smi, versions, commit (if the checkout has git metadata)
#   pytest.log, pytest.xml          tests/test_flash_gpu.py, tests/test_interventions.py (pytest -m gpu)
#   benchmark.log                   the benchmark's progress and stderr
#   attention_kernels.md / .json    the "Attention kernels (GPU)" section and the raw numbers; merge the section
#                                   into docs/BENCHMARKS.md on the development machine with
#                                   benchmarks.report.write_section (or run the benchmark with --write-docs)
#   summary.txt                     what ran, how long, exit codes
#
# pytest may be missing from the GPU image. This script then puts ./.gpu-deps on PYTHONPATH; prepare that folder
# on the development machine (it is git-ignored, so carry it to the GPU machine explicitly):
#     .venv/bin/pip install --target .gpu-deps pytest pytest-timeout hypothesis pytest-xdist
# pytest-xdist is optional: with it the tests run in parallel processes (their time is mostly kernel compiles).
# If pytest still cannot be imported, the tests are reported as not run and the benchmark runs anyway.
#
# Time guard: the tests get at most TEST_BUDGET_S seconds (default 170), the benchmark what remains of
# TOTAL_BUDGET_S (default 450) less a margin; `timeout` stops whichever overruns. The benchmark stops starting
# new shapes when its own budget is spent and rewrites its table after every shape, so a run cut short still
# leaves what it measured. SMOKE=1 runs the benchmark's CPU smoke mode instead (to try this script without a
# GPU; its numbers mean nothing). PYTHON picks the interpreter (default: python3, else python).
set -uo pipefail
cd "$(dirname "$0")/.."

OUT="${OUT:-./gpu-out}"
TOTAL_BUDGET_S="${TOTAL_BUDGET_S:-450}"
TEST_BUDGET_S="${TEST_BUDGET_S:-170}"
PYTHON="${PYTHON:-$(command -v python3 || command -v python)}"
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
unset TRITON_INTERPRET  # the compiled kernels: Triton reads this when kernels launch
started=$(date +%s)
elapsed() { echo $(( $(date +%s) - started )); }
with_timeout() {  # with_timeout SECONDS command...: coreutils timeout when present
  local seconds=$1; shift
  if command -v timeout >/dev/null; then timeout --kill-after=10 "$seconds" "$@"; else "$@"; fi
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo 'unknown (no git metadata in this copy)')"
  echo "python: $PYTHON"
  "$PYTHON" -c 'import sys, torch, triton, transformers; print("python", sys.version.split()[0], "| torch",
torch.__version__, "| CUDA", torch.version.cuda, "| triton", triton.__version__, "| transformers",
transformers.__version__); print("GPU:", torch.cuda.get_device_name() if torch.cuda.is_available() else "none")'
  command -v nvidia-smi >/dev/null && nvidia-smi
} > "$OUT/environment.txt" 2>&1

# ---- tests (marker gpu)
if ! "$PYTHON" -c "import pytest" 2>/dev/null && [ -d .gpu-deps ]; then
  export PYTHONPATH="$PWD/.gpu-deps${PYTHONPATH:+:$PYTHONPATH}"
fi
test_rc=0
if "$PYTHON" -c "import pytest" 2>/dev/null; then
  parallel=()
  if "$PYTHON" -c "import xdist" 2>/dev/null; then
    parallel=(-n "$(( $(nproc) < 8 ? $(nproc) : 8 ))")
  fi
  echo "running GPU tests (budget ${TEST_BUDGET_S}s, ${parallel[*]:-serial})…"
  with_timeout "$TEST_BUDGET_S" "$PYTHON" -m pytest tests/test_flash_gpu.py tests/test_interventions.py -m gpu -v -rs -p no:cacheprovider \
    "${parallel[@]}" --junitxml="$OUT/pytest.xml" > "$OUT/pytest.log" 2>&1
  test_rc=$?
  tail -n 3 "$OUT/pytest.log"
else
  echo "pytest cannot be imported (not installed, no .gpu-deps): GPU tests NOT run" | tee "$OUT/pytest.log"
  test_rc=127
fi
test_s=$(elapsed)

# ---- benchmark
remaining=$(( TOTAL_BUDGET_S - test_s - 15 ))
bench_budget=$(( remaining - 75 ))  # the shape in progress, the final write and process exit fit in the rest
bench_args=(--out "$OUT" --budget-s "$bench_budget")
if [ "${SMOKE:-0}" = "1" ]; then bench_args+=(--smoke); fi
echo "running the benchmark (hard limit ${remaining}s, starts no shape after ${bench_budget}s)…"
with_timeout "$remaining" "$PYTHON" -m benchmarks.attention_kernels "${bench_args[@]}" > "$OUT/benchmark.log" 2>&1
bench_rc=$?
total_s=$(elapsed)

{
  echo "tests: exit $test_rc after ${test_s}s (124/137: cut by the time guard; 127: pytest missing)"
  echo "benchmark: exit $bench_rc after $(( total_s - test_s ))s (1: a correctness check failed; 124/137: cut)"
  echo "total: ${total_s}s of the ${TOTAL_BUDGET_S}s budget"
  grep -E "passed|failed|error" "$OUT/pytest.log" | tail -n 1
  [ -f "$OUT/attention_kernels.json" ] && "$PYTHON" -c 'import json, sys
raw = json.load(open(sys.argv[1]))
print("benchmark rows:", len(raw["rows"]), "| complete:", raw["complete"], "| not measured:", len(raw["not_measured"]))' \
    "$OUT/attention_kernels.json"
} | tee "$OUT/summary.txt"
exit $(( test_rc != 0 ? test_rc : bench_rc ))
