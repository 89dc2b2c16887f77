#!/usr/bin/env bash
# The infer_shape pass with the C++ shape functions against the same pass with the rule-language
# shape rules of rules/dogfood/onnx_ops.pbtxt (issue 4, item 9: rule evaluation adds at most 2x
# to infer_shape time). Runs bench/rule_infer_shape_benchmark with warm-up and repetitions and
# prints the medians and the rule/cpp ratios per graph, then per op on the synthetic graph. The
# repetitions of all the benchmarks run in a random order, so that a burst of load on a shared
# machine falls on the C++ and the rule side alike rather than on one of them.
# Usage: bench/rules_vs_cpp.sh [--repetitions N] [--min_time SECONDS] [--filter REGEX]
#                              [--binary PATH]
# --filter: only the benchmarks matching REGEX ("InferShape/" for the passes only); --binary: a
# prebuilt rule_infer_shape_benchmark (another revision's, for before/after figures) instead of
# building this tree's. The machine's load average is printed with the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=7
min_time=0.5
filter=.
bin=
while (( $# > 0 )); do
  case "$1" in
    --repetitions) reps=$2; shift 2 ;;
    --min_time) min_time=$2; shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --binary) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--repetitions N] [--min_time SECONDS] [--filter REGEX] [--binary PATH]" >&2
       exit 2 ;;
  esac
done
targets="//models:corpus"
[[ -z "$bin" ]] && targets="$targets //bench:rule_infer_shape_benchmark"
if ! log=$(bazel build -c opt $targets 2>&1); then
  echo "$log" >&2
  exit 1
fi
bin=${bin:-.bazel/bin/bench/rule_infer_shape_benchmark}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
"$bin" --ops=rules/dogfood/onnx_ops.pbtxt \
  --corpus_dir=.bazel/bin/models/corpus --benchmark_min_warmup_time=0.2 \
  --benchmark_min_time="$min_time" --benchmark_repetitions="$reps" \
  --benchmark_filter="$filter" --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true --benchmark_format=json >"$out"
echo "load average before/after: $load_before / $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$out" "$reps" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
med = {}  # (kind, graph, op) -> {"cpp": us, "rule": us}
nodes = {}
for b in data["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    parts = [p for p in b["run_name"].split("/") if p != "real_time"]
    kind, graph, impl = parts[0], parts[1], parts[-1]
    op = parts[2] if kind == "InferShapeOfOp" else ""
    med.setdefault((kind, graph, op), {})[impl] = b["real_time"]  # microseconds
    if "nodes" in b:
        nodes[graph] = int(b["nodes"])
# The repetitions ran in a random order: report in a fixed one.
graph_order = ["resnet50", "resnet50@sym", "mobilenet_v2", "mobilenet_v2@sym",
               "transformer_encoder", "transformer_encoder@sym", "mlp", "mlp@sym",
               "rule_ops_synthetic", "rule_ops_synthetic@static"]
op_order = ["Add", "MatMul", "Gemm", "Conv", "Transpose", "Concat", "Reshape", "ReduceMean",
            "Softmax", "Gather"]
def rank(names, name):
    return names.index(name) if name in names else len(names)
med = dict(sorted(med.items(), key=lambda kv: (kv[0][0], rank(graph_order, kv[0][1]),
                                                kv[0][1], rank(op_order, kv[0][2]))))
print(f"medians of {sys.argv[2]} repetitions (real time)\n")
print("infer_shape pass per graph")
print(f"{'graph':<28} {'nodes':>6} {'C++ us':>10} {'rule us':>10} {'rule/C++':>9}")
worst = 0.0
for (kind, graph, op), t in med.items():
    if kind != "InferShape" or "cpp" not in t or "rule" not in t:
        continue
    ratio = t["rule"] / t["cpp"]
    worst = max(worst, ratio)
    print(f"{graph:<28} {nodes.get(graph, 0):>6} {t['cpp']:>10.1f} {t['rule']:>10.1f} "
          f"{ratio:>8.2f}x")
print(f"\nworst pass ratio: {worst:.2f}x (target <= 2x): {'OK' if worst <= 2 else 'MISSED'}")
print("\nper op on the synthetic graphs (InferNodeShapes of that op's nodes only)")
print(f"{'graph':<28} {'op':<11} {'C++ us':>10} {'rule us':>10} {'rule/C++':>9}")
for (kind, graph, op), t in med.items():
    if kind != "InferShapeOfOp" or "cpp" not in t or "rule" not in t:
        continue
    print(f"{graph:<28} {op:<11} {t['cpp']:>10.1f} {t['rule']:>10.1f} "
          f"{t['rule'] / t['cpp']:>8.2f}x")
PY
