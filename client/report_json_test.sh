#!/bin/bash
# `graphopt optimize --report-json` on real models through the in-process optimizer: the
# document's totals agree with its own per-pass entries and with the model written (counted
# by `graphopt inspect`), for ONNX and graphopt outputs, with and without passes.
#
# Usage (from the sh_test): report_json_test.sh GRAPHOPT_BINARY FILE... (the model.onnx files
# among FILEs are checked; a corpus model's test data beside it is skipped).
set -euo pipefail

readonly GRAPHOPT="${1:?usage: $0 GRAPHOPT_BINARY MODEL.onnx...}"
shift
readonly PYTHON=/usr/bin/python3
readonly TMP="${TEST_TMPDIR:-$(mktemp -d)}"

# Nodes of a model file as `graphopt inspect` reports them ("graph: NAME, N nodes").
count_nodes() {
  "${GRAPHOPT}" inspect "$1" | sed -n 's/^  graph: .*, \([0-9,]*\) nodes$/\1/p' | tr -d ,
}

checks=0
for model in "$@"; do
  [[ "${model}" == */model.onnx ]] || continue
  for case in "-O2 out.onnx" "-O3 out.pb" "-O0 out.onnx" "-O1 out.pbtxt"; do
    read -r level output <<<"${case}"
    out="${TMP}/${output}"
    report="${TMP}/report.json"
    rm -f "${out}" "${report}"
    "${GRAPHOPT}" optimize "${model}" -o "${out}" "${level}" --report-json "${report}" -q
    written="$(count_nodes "${out}")"
    if [[ -z "${written}" ]]; then
      echo "FAIL: no node count from graphopt inspect ${out}" >&2
      exit 1
    fi
    "${PYTHON}" - "${report}" "${written}" "${model} ${level} -> ${output}" <<'PY'
import json
import sys

path, written, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
r = json.load(open(path))
passes = r["passes"]
errors = []

def expect(name, got, want):
    if got != want:
        errors.append(f"{name}: {got!r}, expected {want!r}")

expect("written_nodes", r["written_nodes"], written)
expect("pass_runs", r["pass_runs"], len(passes))
expect("passes_changed", r["passes_changed"], sum(1 for p in passes if p["changed"]))
expect("pass_time_us", r["pass_time_us"], sum(p["wall_time_us"] for p in passes))
expect("verify_time_us", r["verify_time_us"], sum(p["verify_time_us"] for p in passes))
if passes:
    expect("nodes_before", r["nodes_before"], passes[0]["nodes_before"])
    expect("nodes_after", r["nodes_after"], passes[-1]["nodes_after"])
    # Each pass starts from what the one before left.
    for a, b in zip(passes, passes[1:]):
        expect(f"{b['name']}.nodes_before", b["nodes_before"], a["nodes_after"])
    # The pipeline's total covers its passes.
    if r["total_time_us"] < r["pass_time_us"]:
        errors.append(f"total_time_us {r['total_time_us']} < pass_time_us {r['pass_time_us']}")
else:
    expect("nodes_before", r["nodes_before"], written)
# What the pipeline left is what was written.
expect("nodes_after", r["nodes_after"], written)
if written <= 0:
    errors.append(f"the model written has {written} nodes")
if errors:
    print(f"FAIL: {what}: " + "; ".join(errors), file=sys.stderr)
    sys.exit(1)
print(f"ok: {what}: {r['nodes_before']} -> {r['nodes_after']} nodes, "
      f"{r['pass_runs']} passes ({r['passes_changed']} changed)")
PY
    checks=$((checks + 1))
  done
done
if (( checks == 0 )); then
  echo "FAIL: no model.onnx among the arguments" >&2
  exit 1
fi
echo "${checks} reports checked"
