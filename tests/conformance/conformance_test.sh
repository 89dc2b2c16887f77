#!/usr/bin/env bash
# The ONNX conformance run of the test command: see onnx_conformance.cc.
set -uo pipefail
dir="$(dirname "$0")"
bin="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-__main__}/tests/conformance/onnx_conformance"
[[ -x "$bin" ]] || bin="$dir/onnx_conformance"
known="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-__main__}/tests/conformance/known_failures.txt"
[[ -f "$known" ]] || known="$dir/known_failures.txt"
"$bin" --jobs=2 --known_failures="$known"
