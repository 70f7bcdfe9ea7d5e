#!/usr/bin/env bash
# scripts/gpu_check run against a stand-in pack (no GPU): stand-in GoogleTest binaries and a
# stand-in compute-sanitizer. What it runs in each part, what it counts as passed, and that a
# step it did not run (the sanitizer budget spent) is not a pass.
# Usage: test_gpu_check.sh <path to scripts/gpu_check>
set -uo pipefail
script=$(realpath "${1:?usage: test_gpu_check.sh <path to scripts/gpu_check>}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=SCRIPTDIR/expect.sh
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"

# The pack: two of the binaries the sanitizer plan names, each a stand-in that prints a gtest
# summary (a failure when FAIL_<name> is set) and logs its arguments.
pack=$work/pack
mkdir -p "$pack/bin" "$pack/examples" "$work/path"
echo "packed by test_gpu_check.sh" >"$pack/MANIFEST"
for name in test_device_copy test_gpu_gemm; do
  cat >"$pack/bin/$name" <<STUB
#!/usr/bin/env bash
echo "$name \$*" >>"$work/calls"
if [ -n "\${FAIL_$name:-}" ]; then
  echo "[  PASSED  ] 2 tests."
  echo "[  FAILED  ] 1 test, listed below:"
  exit 1
fi
echo "[  PASSED  ] 3 tests."
STUB
  chmod +x "$pack/bin/$name"
done
# compute-sanitizer: runs the binary after its own options; SANITIZER_ERRORS errors reported
cat >"$work/path/compute-sanitizer" <<'STUB'
#!/usr/bin/env bash
while [ "${1#--}" != "$1" ]; do shift 2; done
"$@"
rc=$?
echo "========= ERROR SUMMARY: ${SANITIZER_ERRORS:-0} errors"
exit $rc
STUB
chmod +x "$work/path/compute-sanitizer"

check() {  # check [VAR=value ...]: run the stand-in pack; output in $out, status in $rc
  : >"$work/calls"
  out=$(env PATH="$work/path:$PATH" GPU_CHECK_DIR="$pack" GPU_CHECK_SKIP_PYTHON=1 OUT= "$@" \
    bash "$script" run 2>&1)
  rc=$?
  calls=$(cat "$work/calls")
}
# the sanitizer plan's runs of the pack's two binaries, read from the script's own list
sanitizer_runs=$(sed -n '/^sanitize_plan=(/,/^)/p' "$script" |
  grep -cE '^ *"[a-z]+ (test_device_copy|test_gpu_gemm) ')
expect "the plan runs both binaries under a sanitizer" test "$sanitizer_runs" -ge 2

# 1. everything passes
check
expect "all passed: exit 0" test "$rc" -eq 0
expect "all passed: summary" has "total: $((2 + sanitizer_runs + 1)) steps, 0 not passed" "$out"
expect "all passed: the part named" has "GPU check summary, part all" "$out"
expect "all passed: a plain run of each binary" has "test_gpu_gemm --gtest_color=no" "$calls"
expect "all passed: a sanitizer run" has \
  "test_gpu_gemm --gtest_color=no --gtest_filter=GemmFastAccumulation.WideTilesSmall" "$calls"
expect "all passed: a sanitizer row" has "racecheck test_gpu_gemm [GemmFastAccumulation" "$out"
expect "all passed: the Python step said skipped" has "GPU_CHECK_SKIP_PYTHON set" "$out"

# 2. the budget spent before the sanitizers: each run NOT RUN, and not a pass
check GPU_CHECK_BUDGET_S=-1
expect "budget spent: exit 1" test "$rc" -eq 1
expect "budget spent: every sanitizer run counted" has \
  "total: $((2 + sanitizer_runs + 1)) steps, $sanitizer_runs not passed" "$out"
expect "budget spent: the row names the run" has "memcheck test_gpu_gemm [Gemm.Fp16Output" "$out"
expect "budget spent: said why" has "NOT RUN   over -1s budget" "$out"
expect "budget spent: no sanitizer run" lacks "--gtest_filter" "$calls"

# 3. the two parts, each alone
check GPU_CHECK_PART=tests
expect "tests part: exit 0" test "$rc" -eq 0
expect "tests part: no sanitizer run" lacks "--gtest_filter" "$calls"
expect "tests part: the binaries" test "$(grep -c -- "--gtest_color=no$" <<<"$calls")" -eq 2
expect "tests part: summary" has "part tests" "$out"
expect "tests part: steps" has "total: 3 steps, 0 not passed" "$out"
check GPU_CHECK_PART=sanitize GPU_CHECK_BUDGET_S=60
expect "sanitize part: exit 0" test "$rc" -eq 0
expect "sanitize part: no plain run" test "$(grep -c -- "--gtest_color=no$" <<<"$calls")" -eq 0
expect "sanitize part: every sanitizer run" test \
  "$(grep -c -- "--gtest_filter" <<<"$calls")" -eq "$sanitizer_runs"
expect "sanitize part: steps" has "total: $sanitizer_runs steps, 0 not passed" "$out"

# the tests part's two halves, for shorter calls
check GPU_CHECK_PART=binaries
expect "binaries part: exit 0" test "$rc" -eq 0
expect "binaries part: the binaries" test "$(grep -c -- "--gtest_color=no$" <<<"$calls")" -eq 2
expect "binaries part: no sanitizer run" lacks "--gtest_filter" "$calls"
expect "binaries part: no Python step" lacks "python package" "$out"
expect "binaries part: steps" has "total: 2 steps, 0 not passed" "$out"
check GPU_CHECK_PART=python
expect "python part: no binary run" test ! -s "$work/calls"
expect "python part: the Python step alone" has "GPU_CHECK_SKIP_PYTHON set" "$out"
expect "python part: summary" has "part python" "$out"

# 4. failures: a failing binary, and a sanitizer's errors
check FAIL_test_device_copy=1 GPU_CHECK_PART=tests
expect "failing binary: exit 1" test "$rc" -eq 1
expect "failing binary: its row" has "test_device_copy" "$(grep "FAIL " <<<"$out")"
expect "failing binary: counted" has "1 not passed" "$out"
check SANITIZER_ERRORS=2 GPU_CHECK_PART=sanitize
expect "sanitizer errors: exit 1" test "$rc" -eq 1
expect "sanitizer errors: each run failed" has "$sanitizer_runs not passed" "$out"
expect "sanitizer errors: the count shown" has "errors 2" "$out"

# 5. a part that does not exist: refused before anything runs
check GPU_CHECK_PART=everything
expect "unknown part: exit 2" test "$rc" -eq 2
expect "unknown part: named" has \
  "GPU_CHECK_PART is 'everything'; use all, tests, binaries, python or sanitize" "$out"
expect "unknown part: nothing ran" test ! -s "$work/calls"

expect_summary
