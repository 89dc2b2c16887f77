#!/usr/bin/env bash
# Instructions per infer_shape pass (per graph) and per InferNodeShapes call (per op, on the
# synthetic graph), C++ shape functions against the rule-language rules of
# rules/dogfood/onnx_ops.pbtxt, counted by callgrind around the timed loop only: repeatable,
# unlike the wall-clock medians of bench/rules_vs_cpp.sh on a shared VM.
# Usage: bench/rule_instructions.sh [--graphs "G1 G2 ..."] [--ops "Op1 Op2 ..."] [--n N]
#                                   [--binary PATH]
# --binary: a prebuilt rule_infer_shape_benchmark (another revision's) instead of this tree's.
set -euo pipefail
cd "$(dirname "$0")/.."
graphs="resnet50 resnet50@sym mobilenet_v2 mobilenet_v2@sym transformer_encoder transformer_encoder@sym mlp mlp@sym rule_ops_synthetic rule_ops_synthetic@static"
ops="Add MatMul Gemm Conv Transpose Concat Reshape ReduceMean Softmax Gather"
n=5
bin=
while (( $# > 0 )); do
  case "$1" in
    --graphs) graphs=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --binary) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--graphs \"G ...\"] [--ops \"Op ...\"] [--n N] [--binary PATH]" >&2
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
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Instructions of one run of `--loop=$1`, divided by $2.
count() {
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/cg" \
    "$bin" --ops=rules/dogfood/onnx_ops.pbtxt --corpus_dir=.bazel/bin/models/corpus \
    "--loop=$1" >"$out/stdout" 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
  local ins
  ins=$(grep -E '^totals:' "$out/cg" | head -1 | awk '{print $2}')
  echo $(( ins / $2 ))
}
printf "%-28s %14s %14s %9s\n" "infer_shape pass" "C++ ins" "rule ins" "rule/C++"
for g in $graphs; do
  c=$(count "$g,cpp,$n" "$n")
  r=$(count "$g,rule,$n" "$n")
  printf "%-28s %14d %14d %8.2fx\n" "$g" "$c" "$r" "$(python3 -c "print($r / $c)")"
done
[[ -z "$ops" ]] && exit 0
printf "\n%-28s %14s %14s %9s\n" "per call (rule_ops_synthetic)" "C++ ins" "rule ins" "rule/C++"
for op in $ops; do
  c=$(count "rule_ops_synthetic,$op,cpp,$n" "$n")
  nodes=$(awk '/^nodes/ {print $2}' "$out/stdout")
  r=$(count "rule_ops_synthetic,$op,rule,$n" "$n")
  c=$(( c / nodes )); r=$(( r / nodes ))
  printf "%-28s %14d %14d %8.2fx\n" "$op" "$c" "$r" "$(python3 -c "print($r / $c)")"
done
