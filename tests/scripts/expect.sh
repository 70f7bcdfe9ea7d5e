# shellcheck shell=bash
# The script tests' checks, sourced by them: `expect WHAT COMMAND...` counts COMMAND's
# success as a pass and prints "FAIL: WHAT" otherwise; `expect_summary` prints the counts and
# returns non-zero when anything failed (the test's exit status).
passed=0
failed=0
expect() {  # expect WHAT COMMAND...
  local what=$1
  shift
  if "$@"; then passed=$((passed + 1)); else echo "FAIL: $what"; failed=$((failed + 1)); fi
}
has() { grep -qF -- "$1" <<<"$2"; }     # has TEXT IN
lacks() { ! grep -qF -- "$1" <<<"$2"; } # lacks TEXT IN
expect_summary() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
