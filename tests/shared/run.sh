#!/bin/bash
# Runs one Python test of tests/shared under Bazel with Debian's /usr/bin/python3 (grpcio,
# protobuf), with the wire contract's generated stubs (tests:wire_py) importable as `proto`.
set -euo pipefail
readonly HERE="${TEST_SRCDIR:?}/graphopt/tests/shared"
export PYTHONPATH="${HERE}${PYTHONPATH:+:${PYTHONPATH}}"
exec /usr/bin/python3 -u "${HERE}/$1" "${@:2}"
