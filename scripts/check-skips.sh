#!/usr/bin/env bash
# check-skips.sh CTEST_LOG: fails when ctest skipped a test that is not on the documented list
# (tests/allowed-skips.txt). A skip hides a test that did not run: on this project's
# machines every test runs, and a GoogleTest set-up failure (SetUpTestSuite) shows up in
# ctest as "Skipped", not as a failure.
set -euo pipefail
log=${1:?usage: check-skips.sh CTEST_LOG}
allowed="$(dirname "$0")/../tests/allowed-skips.txt"
skipped=$(sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) .*\*\*\*Skipped.*/\1/p' "$log" | sort -u)
[ -z "$skipped" ] && exit 0
bad=0
while read -r name; do
  if ! grep -qxF "$name" <(grep -v '^#' "$allowed" 2>/dev/null || true); then
    echo "check-skips: $name was skipped, and is not on tests/allowed-skips.txt" >&2
    bad=1
  fi
done <<< "$skipped"
exit $bad
