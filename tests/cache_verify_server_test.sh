#!/bin/bash
# The Optimize result cache and verification on request through the real binaries: a
# graphopt-server on a free loopback port (metrics on another), driven by the graphopt CLI.
# - resnet50 (its weights sent ahead as blobs) at -O2: the first request is a miss, the repeat a
#   hit with the very same output bytes, --no-cache runs again (no cache line) with the same
#   bytes, a changed pipeline misses; the Prometheus counters say the same by tenant.
# - --verify on the corpus MLP: the per-output table; an unbound symbolic dim names the input
#   and the dim; a tolerance no float computation meets fails with the output named. How much
#   faster a hit is, is measured by bench/optimize_cache.sh, not asserted here.
set -euo pipefail

source "${TEST_SRCDIR:?}/graphopt/tests/server_test_lib.sh"
readonly MLP="${RUNFILES}/models/corpus/mlp/model.onnx"
readonly RESNET50="${RUNFILES}/models/corpus/resnet50/model.onnx"
readonly METRICS_PORT_FILE="${TMP}/metrics_port"

require_binaries
start_server --wait "${METRICS_PORT_FILE}" --threads 2 \
  --metrics_listen 127.0.0.1:0 --metrics_port_file "${METRICS_PORT_FILE}"
readonly METRICS="http://127.0.0.1:$(cat "${METRICS_PORT_FILE}")/metrics"

scrape() {  # scrape FILE
  /usr/bin/python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
    "${METRICS}" >"$1" || fail "cannot scrape ${METRICS}"
}

# --- The result cache on resnet50. -----------------------------------------------------------
run_expect 0 "${TMP}/r1.out" "${TMP}/r1.err" \
  "${CLI}" optimize "${RESNET50}" -O2 -o "${TMP}/r1.onnx" --server "${ADDR}"
expect_grep '^cache: miss$' "${TMP}/r1.out" "the first resnet50 request is not a miss"
run_expect 0 "${TMP}/r2.out" "${TMP}/r2.err" \
  "${CLI}" optimize "${RESNET50}" -O2 -o "${TMP}/r2.onnx" --server "${ADDR}"
expect_grep '^cache: hit$' "${TMP}/r2.out" "the repeated resnet50 request is not a hit"
cmp -s "${TMP}/r1.onnx" "${TMP}/r2.onnx" || fail "the cache hit wrote other bytes than the miss"
run_expect 0 "${TMP}/r3.out" "${TMP}/r3.err" \
  "${CLI}" optimize "${RESNET50}" -O2 -o "${TMP}/r3.onnx" --server "${ADDR}" --no-cache
expect_no_grep '^cache:' "${TMP}/r3.out" "--no-cache still reports the cache"
cmp -s "${TMP}/r1.onnx" "${TMP}/r3.onnx" || fail "--no-cache wrote other bytes than the miss"
run_expect 0 "${TMP}/r4.out" "${TMP}/r4.err" \
  "${CLI}" optimize "${RESNET50}" -O1 -o "${TMP}/r4.onnx" --server "${ADDR}"
expect_grep '^cache: miss$' "${TMP}/r4.out" "another level is not a miss"
expect_grep 'cache=hit' "${SERVER_LOG}" "the server's log line has no cache=hit"

scrape "${TMP}/metrics.txt"
expect_grep '^graphopt_optimize_cache_hits_total\{tenant="default"\} 1$' "${TMP}/metrics.txt"
expect_grep '^graphopt_optimize_cache_misses_total\{tenant="default"\} 2$' "${TMP}/metrics.txt"
expect_grep '^graphopt_optimize_cache_entries\{tenant="default"\} 2$' "${TMP}/metrics.txt"
expect_grep '^graphopt_optimize_cache_bytes\{tenant="default"\} [1-9][0-9]*$' "${TMP}/metrics.txt"
expect_grep '^graphopt_optimize_cache_budget_bytes 268435456$' "${TMP}/metrics.txt"

# --- Verification on request. ------------------------------------------------------------------
run_expect 0 "${TMP}/v1.out" "${TMP}/v1.err" \
  "${CLI}" optimize "${MLP}" -O3 -o "${TMP}/v1.onnx" --server "${ADDR}" --verify \
  --bind batch=2 --verify-seed 5
expect_grep '^verification: passed$' "${TMP}/v1.out"
expect_grep '^logits +[0-9.e+-]+ +[0-9.e+-]+ +ok$' "${TMP}/v1.out" "no table row for logits"
expect_grep '^generated inputs \(seed 5\): x$' "${TMP}/v1.out"
expect_grep 'verify=passed' "${SERVER_LOG}"

run_expect 1 "${TMP}/v2.out" "${TMP}/v2.err" \
  "${CLI}" optimize "${MLP}" -O3 -o "${TMP}/v2.onnx" --server "${ADDR}" --verify
expect_grep "INVALID_ARGUMENT.*input 'x' dim 0 is symbolic 'batch'" "${TMP}/v2.err"

# -O3's fused kernels (kept as such in a graphopt graph; a portable ONNX result runs their
# standard-op bodies) round differently from the unfused ones: no output meets 1e-300.
run_expect 1 "${TMP}/v3.out" "${TMP}/v3.err" \
  "${CLI}" optimize "${MLP}" -O3 -o "${TMP}/v3.pb" --server "${ADDR}" --verify \
  --bind batch=2 --tolerance 1e-300 --atol 1e-300
expect_grep "FAILED_PRECONDITION.*verification failed: output 'logits' max abs error" "${TMP}/v3.err"
[[ ! -e "${TMP}/v3.pb" ]] || fail "a failed verification still wrote its output"

stop_server
echo "PASS"
