#!/usr/bin/env bash
# Debian's oneDNN 2.6 (what the runtime links) against a oneDNN 3 from PyPI on the corpus CNNs'
# convolutions (bench/conv_layers.cc, built once against each), interleaved, same run.
# The wheel is the one built on GNU OpenMP like Debian's (onednn-cpu-gomp, oneDNN 3.2); PyPI's
# newer `onednn` wheels are built for SYCL and TBB and need Intel's DPC++ runtime and an OpenCL
# CPU device besides. Nothing is installed: the wheels are unpacked into a temporary folder.
# Usage: bench/onednn_version_ab.sh [--rounds N] [--threads 1,2] [--set resnet50|mobilenet_v2_dw]
#                                   [--version 2023.2.0]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=4
threads=1,2
set_name=resnet50
version=2023.2.0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --set) set_name=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--threads 1,2] [--set S] [--version V]" >&2; exit 2 ;;
  esac
done
bazel build -c opt //bench:conv_layers >/dev/null 2>&1 || { echo "build of //bench:conv_layers failed" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching onednn-cpu-gomp $version and its headers from PyPI ..." >&2
python3 -m pip download --quiet --no-deps -d "$tmp/wheels" \
  "onednn-cpu-gomp==$version" "onednn-devel-cpu-gomp==$version" >&2
for w in "$tmp"/wheels/*.whl; do python3 -m zipfile -e "$w" "$tmp/unpacked"; done
inc=$(find "$tmp/unpacked" -path '*include/oneapi/dnnl/dnnl.hpp' | head -1)
inc=${inc%/oneapi/dnnl/dnnl.hpp}
lib=$(dirname "$(find "$tmp/unpacked" -name 'libdnnl.so.3' | head -1)")
[[ -n "$inc" && -n "$lib" ]] || { echo "the wheels hold no oneDNN headers or library" >&2; exit 1; }
g++ -O2 -std=c++17 -fopenmp bench/conv_layers.cc -o "$tmp/conv_layers_v3" -I. -I"$inc" \
  -L"$lib" -ldnnl -Wl,-rpath,"$lib"
for t in ${threads//,/ }; do
  for _ in $(seq "$rounds"); do
    .bazel/bin/bench/conv_layers --set "$set_name" --threads "$t"
    "$tmp/conv_layers_v3" --set "$set_name" --threads "$t"
  done
done | python3 -c '
import collections, re, statistics, sys
runs = collections.defaultdict(list)
for line in sys.stdin:
    m = re.match(r"oneDNN (\S+), (\S+), (\d+) thread.*runs ([\d.]+) ms", line)
    if m:
        runs[(int(m.group(3)), m.group(1))].append(float(m.group(4)))
for t in sorted({k[0] for k in runs}):
    v = sorted(k[1] for k in runs if k[0] == t)
    base, new = v[0], v[-1]
    a, b = statistics.median(runs[(t, base)]), statistics.median(runs[(t, new)])
    print(f"{t} thread(s): oneDNN {base} {a:.2f} ms, oneDNN {new} {b:.2f} ms, ratio {b / a:.3f} "
          f"(medians of {len(runs[(t, base)])} rounds)")
'
