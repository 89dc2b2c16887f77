#!/usr/bin/env bash
# Installs what graphopt needs to build and test on Debian 12, from Debian's packages only.
# Idempotent: does nothing when everything is present.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap default-jdk-headless g++ pkg-config python3
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libssl-dev openssl libdnnl-dev
  libonnx-dev libonnx-testdata python3-onnx python3-numpy python3-protobuf python3-grpcio
  python3-torch python3-torchvision python3-venv
  # The multi-host test (tests:netns_cluster_test): network namespaces, veths and a bridge.
  iproute2
  # The fuzz and tsan configurations (fuzz/, scripts/tsan.sh): clang with its sanitizer and
  # libFuzzer runtimes, LLVM's OpenMP for clang's -fopenmp, llvm-symbolizer for their reports.
  clang-14 libclang-rt-14-dev libomp-14-dev llvm-14
  # Shared state of server replicas (etcd/): the tests start real etcd members.
  etcd-server
  # deploy/build-images.sh and its test: offline images from Debian packages, run with runc.
  buildah podman runc debootstrap
  # tests:manifests_test's kubernetes-validate (PyPI, in the venv) uses these from Debian.
  python3-yaml python3-attr python3-typing-extensions
  # tests/prometheus_test: Prometheus (and promtool) scrape the server's and worker's metrics.
  prometheus
)

# The tests redirect into /dev/null inside Bazel's read-only sandbox; that works only while it
# is the character device. A tool that once renamed a file over it (as root) leaves a plain
# file there, and every such redirect then fails with "Read-only file system". Put it back.
if [[ ! -c /dev/null ]]; then
  echo "install_deps: /dev/null is not the null device (a plain file replaced it); recreating it"
  if [[ $(id -u) -eq 0 ]]; then
    rm -f /dev/null && mknod -m 666 /dev/null c 1 3
  else
    sudo rm -f /dev/null && sudo mknod -m 666 /dev/null c 1 3
  fi
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install_deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install_deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
