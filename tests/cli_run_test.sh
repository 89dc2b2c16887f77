#!/bin/bash
# `graphopt run` on every model of the real-model corpus: torch's test inputs given as .npy
# files, outputs written with -o and compared with torch's outputs (1e-4 relative); random
# inputs, --profile (--profile-nodes) and --repeat; and clear errors for bad arguments.
set -euo pipefail

readonly RUNFILES="${TEST_SRCDIR:?}/graphopt"
readonly CLI="${RUNFILES}/client/graphopt"
readonly CHECK="${RUNFILES}/tests/cli_run_check.py"
readonly CORPUS="${RUNFILES}/models/corpus"
readonly TMP="${TEST_TMPDIR:?}"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

for model in mlp lstm transformer_encoder mobilenet_v2 mobilenet_v2_bn resnet18 resnet50; do
  dir="${CORPUS}/${model}"
  mkdir -p "${TMP}/${model}/in" "${TMP}/${model}/out"
  args=()
  while IFS= read -r spec; do args+=(--input "${spec}"); done \
    < <(/usr/bin/python3 "${CHECK}" inputs "${dir}" "${TMP}/${model}/in")
  "${CLI}" run "${dir}/model.onnx" "${args[@]}" -o "${TMP}/${model}/out" --threads 2 \
    >"${TMP}/${model}/log" 2>&1 || { cat "${TMP}/${model}/log"; fail "${model}: graphopt run failed"; }
  grep -q '^output ' "${TMP}/${model}/log" || fail "${model}: no output summary"
  result=$(/usr/bin/python3 "${CHECK}" compare "${dir}" "${TMP}/${model}/out") ||
    fail "${model}: ${result}"
  echo "${model}: ${result}"
done

# Random inputs (with a bound symbolic batch), the profile table and repeated runs.
out=$("${CLI}" run "${CORPUS}/mlp/model.onnx" --bind batch=3 --profile --repeat 3)
grep -qE '^input +x +float32\[3,' <<<"${out}" || fail "random input not [3,...]: ${out}"
grep -q 'median of 3' <<<"${out}" || fail "no median line: ${out}"
grep -qE '^Gemm|^MatMul' <<<"${out}" || fail "no per-op table: ${out}"
grep -q 'slowest nodes' <<<"${out}" || fail "no slowest nodes: ${out}"
# --profile-nodes: how many of the slowest nodes are listed (after the section's header line).
out=$("${CLI}" run "${CORPUS}/mlp/model.onnx" --bind batch=3 --profile --profile-nodes 2)
listed=$(sed -n '/^slowest nodes/,$p' <<<"${out}" | tail -n +3 | grep -c .)
[[ ${listed} -eq 2 ]] || fail "--profile-nodes 2 listed ${listed} nodes: ${out}"
out=$("${CLI}" run "${CORPUS}/mlp/model.onnx" --bind batch=3 --profile --profile-nodes 0)
grep -q 'slowest nodes' <<<"${out}" && fail "--profile-nodes 0 still lists nodes: ${out}"
grep -qE '^Gemm|^MatMul' <<<"${out}" || fail "--profile-nodes 0 lost the per-op table: ${out}"

# Errors: an input the model lacks, a malformed --input, a missing file.
set +e
msg=$("${CLI}" run "${CORPUS}/mlp/model.onnx" --input nope=/dev/null 2>&1); rc=$?
[[ ${rc} -eq 2 || ${rc} -eq 1 ]] && grep -q "nope" <<<"${msg}" || fail "unknown input: rc=${rc} ${msg}"
msg=$("${CLI}" run "${CORPUS}/mlp/model.onnx" --input x 2>&1); rc=$?
[[ ${rc} -eq 2 ]] && grep -q "NAME=FILE.npy" <<<"${msg}" || fail "malformed --input: rc=${rc} ${msg}"
# A memory budget below the run's needs fails before the allocation, naming the node.
msg=$("${CLI}" run "${CORPUS}/mlp/model.onnx" --bind batch=100000 --memory-limit-mb 1 2>&1); rc=$?
[[ ${rc} -eq 1 ]] && grep -q "RESOURCE_EXHAUSTED: node '.*over the execution's memory budget" \
  <<<"${msg}" || fail "--memory-limit-mb 1: rc=${rc} ${msg}"
"${CLI}" run "${CORPUS}/mlp/model.onnx" --bind batch=3 --memory-limit-mb 64 >/dev/null 2>&1 ||
  fail "--memory-limit-mb 64 failed a small run"
msg=$("${CLI}" run "${TMP}/missing.onnx" 2>&1); rc=$?
[[ ${rc} -eq 1 ]] && grep -q "missing.onnx" <<<"${msg}" || fail "missing model: rc=${rc} ${msg}"
echo "PASS"
