#!/bin/bash
# Runs one Python test file of this package under Bazel with Debian's /usr/bin/python3, which has
# grpcio, protobuf, onnx, numpy and torch. (Bazel 4.2.3's py_test does not run here: its stub
# starts with "#!/usr/bin/env python" and Debian 12 has no `python`; pointing it elsewhere needs
# a registered Python toolchain in the WORKSPACE.)
#
# Usage (sh_test args): run_python_test.sh TEST_FILE [ARGS...]; TEST_FILE is relative to this
# package. The package folder in the runfiles, which holds graphopt_client with its generated
# _proto stubs, goes on PYTHONPATH.
set -euo pipefail

readonly RUNFILES="${TEST_SRCDIR:?not run by bazel test}/${TEST_WORKSPACE:-graphopt}"
readonly PACKAGE_DIR="${RUNFILES}/client/python"
readonly TEST_FILE="${1:?usage: run_python_test.sh TEST_FILE [ARGS...]}"
shift

export PYTHONPATH="${PACKAGE_DIR}${PYTHONPATH:+:${PYTHONPATH}}"
# The runfiles tree is not ours to write .pyc files into.
export PYTHONDONTWRITEBYTECODE=1
# -P: do not put the script's directory first on sys.path. Python resolves the runfiles symlink
# to the source tree, whose graphopt_client/ lacks the generated _proto stubs.
exec /usr/bin/python3 -P -u "${PACKAGE_DIR}/${TEST_FILE}" "$@"
