#!/usr/bin/env bash
# Runs the pipeline benchmark (10^3..10^6 nodes) and prints time per node and the time ratio for
# each 10x step in graph size. Target: 10x more nodes costs at most 12x more time.
# Usage: bench/scaling.sh [--repetitions N]
set -euo pipefail
cd "$(dirname "$0")/.."
reps=5
if [[ "${1:-}" == "--repetitions" ]]; then reps=$2; fi
bazel build -c opt //bench:pipeline_benchmark >/dev/null
out=$(mktemp)
.bazel/bin/bench/pipeline_benchmark --benchmark_repetitions="$reps" \
  --benchmark_report_aggregates_only=true --benchmark_format=json >"$out"
python3 - "$out" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
med = {}
for b in data["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    name, size = b["run_name"].split("/")[:2]
    med.setdefault(name, {})[int(size)] = b["real_time"]  # milliseconds
worst = 0.0
for name, times in med.items():
    print(f"\n{name} (median of repetitions)")
    print(f"{'nodes':>10} {'time ms':>12} {'ns/node':>10} {'ratio vs 10x fewer':>20}")
    prev = None
    for size in sorted(times):
        t = times[size]
        ratio = t / times[prev] if prev else None
        if ratio:
            worst = max(worst, ratio)
        print(f"{size:>10} {t:>12.2f} {t * 1e6 / size:>10.1f} "
              f"{(f'{ratio:.2f}x') if ratio else '-':>20}")
        prev = size
print(f"\nworst 10x-step ratio: {worst:.2f}x (target <= 12x): {'OK' if worst <= 12 else 'MISSED'}")
PY
rm -f "$out"
