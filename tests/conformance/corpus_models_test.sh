#!/usr/bin/env bash
# Every model of the real-model corpus runs on graphopt's runtime and matches torch's outputs.
set -uo pipefail
root="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-__main__}"
"$root/tests/conformance/onnx_conformance" --data_dir="$root/models" --suites=corpus \
  --rtol=1e-4 --atol=1e-5 --jobs=1 --threads=2 --timeout_s=300 --verbose >"${TEST_TMPDIR:-/tmp}/out.txt"
rc=$?
cat "${TEST_TMPDIR:-/tmp}/out.txt"
if ! grep -qE '^conformance all +([0-9]+)/ *\1 passed' "${TEST_TMPDIR:-/tmp}/out.txt"; then
  echo "FAILED: not every corpus model matches torch"
  exit 1
fi
exit "$rc"
