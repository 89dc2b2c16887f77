#!/usr/bin/env bash
# Creates <repo>/.venv for the Python tests (tests/onnx_roundtrip_test.py): Debian's Python 3.11
# with its system packages visible (torch, torchvision, onnx, numpy, protobuf, grpcio, all from
# scripts/install_deps.sh) plus ONNX Runtime from PyPI.
#
# ONNX Runtime's wheel asks for newer protobuf than Debian's 3.21.12 (Python 4.21.12); pip must not
# replace Debian's protobuf, numpy, onnx or torch, so the wheel is installed with --no-deps together
# with the only pure-Python dependencies it needs at run time (flatbuffers, packaging).
#
# Idempotent: does nothing when the venv is complete. Needs PyPI only when something is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly SYSTEM_PYTHON=/usr/bin/python3
readonly VENV="${PWD}/.venv"
readonly VENV_PYTHON="${VENV}/bin/python"
# Pinned so that every machine tests against the same runtime.
# kubernetes-validate (tests:manifests_test) and the jsonschema it needs (Debian's is too old);
# its other dependencies (PyYAML, attrs, typing-extensions) are Debian's.
readonly PIP_PACKAGES=(onnxruntime==1.30.0 flatbuffers==25.2.10 packaging==25.0
  kubernetes-validate==1.37.0 jsonschema==4.26.0 jsonschema-specifications==2025.9.1
  referencing==0.37.0 rpds-py==2026.9.1 importlib-resources==7.1.0)

# The wheels client/python:pip_install_test installs into a fresh venv (graphopt_client's PyPI
# dependencies with its onnx extra, and setuptools for building its wheel), kept here so that
# the test needs no network.
readonly WHEELHOUSE="${VENV}/wheelhouse"
readonly WHEELHOUSE_PACKAGES=(grpcio==1.68.1 protobuf==5.29.5 setuptools==75.8.0 onnx==1.17.0
  numpy==1.26.4)

wheelhouse_complete() {
  local spec
  for spec in "${WHEELHOUSE_PACKAGES[@]}"; do
    compgen -G "${WHEELHOUSE}/${spec%%==*}-${spec##*==}-*.whl" >/dev/null || return 1
  done
}

# Succeeds, printing the versions in use, when the venv is complete: every pinned package at its
# version, and Debian's own packages still the ones imported (not shadowed by anything in the venv).
check_venv() {
  "${VENV_PYTHON}" - "${PIP_PACKAGES[@]}" <<'PY'
import importlib.metadata as md
import sys

for spec in sys.argv[1:]:
    name, want = spec.split("==")
    try:
        have = md.version(name)
    except md.PackageNotFoundError:
        sys.exit(f"{name} is not installed")
    if have != want:
        sys.exit(f"{name} is {have}, want {want}")

import google.protobuf, numpy, onnx, onnxruntime, torch  # noqa: E401 (all must import)
import kubernetes_validate  # noqa: F401

for module in (google.protobuf, numpy, onnx, torch):
    if not module.__file__.startswith("/usr/lib/python3/dist-packages/"):
        sys.exit(f"{module.__name__} comes from {module.__file__}, not from Debian's packages")

print(f"install_python_deps: onnxruntime {onnxruntime.__version__} "
      f"({', '.join(onnxruntime.get_available_providers())}), onnx {onnx.__version__}, "
      f"torch {torch.__version__}, numpy {numpy.__version__}, "
      f"protobuf {google.protobuf.__version__}")
PY
}

# Succeeds when ${VENV} is a venv of ${SYSTEM_PYTHON} that sees the system site packages.
venv_reusable() {
  [[ -x "${VENV_PYTHON}" ]] &&
    grep -qx 'include-system-site-packages = true' "${VENV}/pyvenv.cfg" 2>/dev/null &&
    [[ "$("${VENV_PYTHON}" -c 'import sys; print(sys.base_prefix)' 2>/dev/null)" == "/usr" ]]
}

if [[ ! -x "${SYSTEM_PYTHON}" ]]; then
  echo "install_python_deps: ${SYSTEM_PYTHON} is missing (run scripts/install_deps.sh)" >&2
  exit 1
fi

if [[ -x "${VENV_PYTHON}" ]] && versions=$(check_venv 2>/dev/null) && wheelhouse_complete; then
  echo "install_python_deps: ${VENV} complete"
  echo "${versions}"
  exit 0
fi

# A venv made by another interpreter (or without system site packages) cannot be reused.
if [[ -d "${VENV}" ]] && ! venv_reusable; then
  echo "install_python_deps: ${VENV} is not a venv of ${SYSTEM_PYTHON} with system packages;" \
    "recreating it"
  rm -rf "${VENV}"
fi

if [[ ! -d "${VENV}" ]]; then
  echo "install_python_deps: creating ${VENV} (${SYSTEM_PYTHON} -m venv --system-site-packages)"
  "${SYSTEM_PYTHON}" -m venv --system-site-packages "${VENV}"
fi

echo "install_python_deps: installing ${PIP_PACKAGES[*]} (--no-deps)"
"${VENV_PYTHON}" -m pip install --quiet --disable-pip-version-check --no-input --no-deps \
  "${PIP_PACKAGES[@]}"

if ! wheelhouse_complete; then
  echo "install_python_deps: downloading ${WHEELHOUSE_PACKAGES[*]} into ${WHEELHOUSE}"
  "${VENV_PYTHON}" -m pip download --quiet --disable-pip-version-check --no-input --no-deps \
    --only-binary=:all: -d "${WHEELHOUSE}" "${WHEELHOUSE_PACKAGES[@]}"
fi

if ! check_venv || ! wheelhouse_complete; then
  echo "install_python_deps: ${VENV} is still incomplete (see above)" >&2
  exit 1
fi
