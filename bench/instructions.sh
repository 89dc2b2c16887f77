#!/usr/bin/env bash
# Instructions executed by the default pipeline per node, for 10^3..10^6-node synthetic graphs,
# counted by callgrind (repeatable, unlike time on a shared VM). Shows the algorithmic scaling;
# bench/scaling.sh shows time, which also includes the memory hierarchy.
# Usage: bench/instructions.sh [MAX_NODES]   (default 1000000; the largest takes a few minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
max=${1:-1000000}
bazel build -c opt //bench:pipeline_once >/dev/null 2>&1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf "%10s %16s %10s %20s\n" nodes instructions "ins/node" "ratio vs 10x fewer"
prev=""
for n in 1000 10000 100000 1000000; do
  (( n <= max )) || break
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/cg.$n" \
    .bazel/bin/bench/pipeline_once "$n" >/dev/null 2>"$out/log.$n"
  ins=$(grep -E '^totals:' "$out/cg.$n" | head -1 | awk '{print $2}')
  ratio="-"
  if [[ -n "$prev" ]]; then ratio=$(python3 -c "print(f'{$ins / $prev:.2f}x')"); fi
  printf "%10d %16d %10.0f %20s\n" "$n" "$ins" "$(python3 -c "print($ins / $n)")" "$ratio"
  prev=$ins
done
