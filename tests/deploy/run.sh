#!/bin/bash
# Runs one Python test of tests/deploy under Bazel with Debian's /usr/bin/python3, or with
# $GRAPHOPT_PYTHON (scripts/install_python_deps.sh's venv) when the test needs PyPI packages.
set -euo pipefail
readonly HERE="${TEST_SRCDIR:?}/graphopt/tests/deploy"
# Bazel's strict action environment leaves the sbin folders (debootstrap, chroot) off PATH.
export PATH="/usr/local/sbin:/usr/sbin:/sbin:${PATH}"
# Bazel leaves HOME unset in tests run outside the sandbox; podman and buildah want one.
export HOME="${HOME:-${TEST_TMPDIR:?}}"
export PYTHONPATH="${HERE}${PYTHONPATH:+:${PYTHONPATH}}"
python=/usr/bin/python3
if [[ "${1}" == --venv ]]; then
  python="${GRAPHOPT_PYTHON:-/usr/bin/python3}"
  shift
fi
exec "${python}" -u "${HERE}/$1" "${@:2}"
