#!/usr/bin/env bash
# Which pass makes the 10x step of bench/scaling.sh cost more than 10x: runs the default
# pipeline over synthetic graphs of two sizes (bench/pipeline_once --warmup 4 --passes, the
# benchmark loop's heap state), R times each, interleaved, and prints each pass's median
# microseconds at both sizes and their ratio. Single runs move by +-10% on these VMs: look at
# the medians of 7 or more.
# Usage: bench/pass_scaling.sh [--repetitions R] [--sizes SMALL LARGE]
set -euo pipefail
cd "$(dirname "$0")/.."
reps=7
small=10000
large=100000
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repetitions) reps=$2; shift 2 ;;
    --sizes) small=$2; large=$3; shift 3 ;;
    *) echo "usage: $0 [--repetitions R] [--sizes SMALL LARGE]" >&2; exit 2 ;;
  esac
done
bazel build -c opt //bench:pipeline_once >/dev/null 2>&1 || { echo "build of //bench:pipeline_once failed" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$reps"); do
  for n in "$small" "$large"; do
    .bazel/bin/bench/pipeline_once "$n" --warmup 4 --passes | sed 1d | sed "s/^/$n /" >>"$out"
  done
done
python3 - "$out" "$small" "$large" <<'PY'
import collections, statistics, sys
path, small, large = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
times = collections.defaultdict(list)
names = []
for line in open(path):
    if not line.rstrip().endswith(" us"):
        continue  # the page-fault count
    parts = line.split()
    size, us, name = int(parts[0]), float(parts[-2]), " ".join(parts[1:-2])
    times[(name, size)].append(us)
    if name not in names:
        names.append(name)
step = large / small
print(f"{'pass':40} {f'{small} us':>12} {f'{large} us':>12} {'ratio':>8}  (medians of {len(times[(names[0], small)])})")
total_small = total_large = 0.0
for name in names:
    a, b = statistics.median(times[(name, small)]), statistics.median(times[(name, large)])
    total_small += a
    total_large += b
    ratio = f"{b / a:.1f}x" if a > 0 else "-"
    print(f"{name:40} {a:12.0f} {b:12.0f} {ratio:>8}")
target = "  (target for a 10x step: <= 12x)" if step == 10 else ""
print(f"{'sum of medians':40} {total_small:12.0f} {total_large:12.0f} "
      f"{total_large / total_small:7.1f}x{target}")
PY
