#!/usr/bin/env bash
# The README's test command (and .ci/run's): every test binary of the workspace, then the tests
# that could not run here, with their reasons, as the last thing printed.
#
#   scripts/test.sh               # cargo test --all-targets --no-fail-fast
#   scripts/test.sh -p mm         # more arguments go to cargo test
#
# --no-fail-fast: a failing binary does not hide the ones after it (cargo stops at the first
# otherwise). The suites on mm-testkit's harness add each test they skip (a missing acpx, a
# kernel without Landlock, no real model server…) to the file MM_SKIPPED_FILE names, instead of
# listing it after their own summary in the middle of the output; this script lists them all
# once cargo is done. Under CI=true a test that cannot run fails instead. The exit code is
# cargo's.
set -uo pipefail

cd "$(dirname "$0")/.."

skipped=$(mktemp "${TMPDIR:-/tmp}/mm-skipped.XXXXXX") || exit 1
trap 'rm -f "$skipped"' EXIT

MM_SKIPPED_FILE=$skipped cargo test --all-targets --no-fail-fast "$@"
rc=$?

echo
if [ "$rc" -eq 0 ]; then
    echo "scripts/test.sh: every test binary passed"
else
    echo "scripts/test.sh: cargo test exited $rc (the failures are above, under \"failures:\" and \"error: … target(s) failed\")"
fi
if [ -s "$skipped" ]; then
    n=$(wc -l <"$skipped")
    echo "skipped: $n test(s) that cannot run here (under CI=true they fail):"
    sort "$skipped" | sed 's/^/    /'
else
    echo "skipped: none"
fi
exit "$rc"
