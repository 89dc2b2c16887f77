#!/usr/bin/env python3
"""A/B of two pipeline_once builds, pass by pass, at two graph sizes.

For trying a change to the passes or the IR against the scaling target (bench/scaling.sh):
build //bench:pipeline_once before and after the change, copy each binary aside, and run

    bench/pass_scaling_ab.py [--repetitions R] [--sizes SMALL LARGE] BEFORE AFTER

Both binaries run `pipeline_once N --warmup 4 --passes` R times at each size, interleaved
(before, after, before, ...), so that a noisy minute lands on both. Prints each pass's median
microseconds for both builds at both sizes, each build's ratio between the sizes, and the
medians of the per-run totals. Single runs move by +-10% on these VMs: use R >= 5.
"""
import argparse
import collections
import statistics
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--sizes", type=int, nargs=2, default=[10000, 100000])
    parser.add_argument("before")
    parser.add_argument("after")
    args = parser.parse_args()
    builds = [args.before, args.after]
    times = collections.defaultdict(list)
    names = []
    for _ in range(args.repetitions):
        for binary in builds:
            for size in args.sizes:
                run = subprocess.run([binary, str(size), "--warmup", "4", "--passes"],
                                     capture_output=True, text=True)
                if run.returncode != 0:
                    sys.exit(f"{binary} {size} failed: {run.stderr.strip()}")
                total = 0.0
                for line in run.stdout.splitlines()[1:]:
                    if not line.endswith(" us"):
                        continue  # the page-fault count
                    parts = line.split()
                    us, name = float(parts[-2]), " ".join(parts[:-2])
                    if name not in names:
                        names.append(name)
                    times[(binary, size, name)].append(us)
                    total += us
                times[(binary, size, "total (median of runs)")].append(total)
    names.append("total (median of runs)")
    small, large = args.sizes
    print(f"{'pass':36} {'before ' + str(small):>14} {'before ' + str(large):>14} "
          f"{'after ' + str(small):>14} {'after ' + str(large):>14} {'ratio before':>13} "
          f"{'ratio after':>12}")
    for name in names:
        row = [statistics.median(times[(b, s, name)]) for b in builds for s in args.sizes]
        ratios = [row[1] / row[0] if row[0] else float("nan"),
                  row[3] / row[2] if row[2] else float("nan")]
        print(f"{name[:36]:36} " + " ".join(f"{v:14.0f}" for v in row) +
              f" {ratios[0]:12.1f}x {ratios[1]:11.1f}x")
    print(f"(medians of {args.repetitions} runs, microseconds; target for a 10x step: <= 12x)")


if __name__ == "__main__":
    main()
