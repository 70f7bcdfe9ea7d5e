#!/usr/bin/env bash
# One device call: kernel GPU tests, then `tmakit bench --tune` (every layout variant of the
# three kernels, defaults re-measured last), from binaries built here and carried in
# .gpu/tune/ (git-ignored). Logs go to $OUT; a short table is printed last.
#   here:   cmake --build build-tune --target tmakit test_gpu_kernels &&
#           mkdir -p .gpu/tune && cp build-tune/tools/tmakit build-tune/tests/gpu/test_gpu_kernels .gpu/tune/
#   there:  bench/gpu_tune.sh [bench filter glob, as tmakit bench --filter]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gpu_tune}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv >"$out/gpu.txt" 2>&1
timeout "${TESTS_TIMEOUT_S:-120}" .gpu/tune/test_gpu_kernels --gtest_brief=1 >"$out/tests.log" 2>&1
tests_rc=$?
filter=${1:-}
timeout "${BENCH_TIMEOUT_S:-165}" .gpu/tune/tmakit bench --tune ${filter:+--filter "$filter"} \
  --json "$out/bench.json" >"$out/bench_table.txt" 2>"$out/bench_progress.log"
bench_rc=$?
echo "== tests rc=$tests_rc"; tail -4 "$out/tests.log"
echo "== bench rc=$bench_rc"; cat "$out/gpu.txt"
# short table: case, GB/s, ratio to memcpy (from the progress lines)
grep -E "GB/s|FAILED|error" "$out/bench_progress.log" | sed -E 's/^\[[0-9]+\/[0-9]+\] //; s/ \.\.\. / /; s/ GB\/s//; s/x memcpy//'
