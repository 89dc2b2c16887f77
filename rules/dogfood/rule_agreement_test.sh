#!/bin/bash
# The rule-language shape rules of onnx_ops.pbtxt against the builtin C++ shape functions on
# every model of libonnx-testdata (node, pytorch-converted, pytorch-operator, simple) and of
# //models:corpus, each also with its inputs' dims made symbolic. Fails on any difference.
#
# Usage: rule_agreement_test.sh COMPARE_RULES ONNX_OPS CORPUS_FILE...
set -euo pipefail

tool="$1"
ops="$2"
shift 2

testdata=/usr/share/libonnx-testdata/data
suites=()
for suite in node pytorch-converted pytorch-operator simple; do
  if [[ ! -d "$testdata/$suite" ]]; then
    echo "error: $testdata/$suite is missing (scripts/install_deps.sh installs it)" >&2
    exit 1
  fi
  suites+=("$testdata/$suite")
done

# //models:corpus lists every file of each model; only the model.onnx files are models.
corpus=()
for f in "$@"; do
  [[ "$f" == */model.onnx ]] && corpus+=("$f")
done
if (( ${#corpus[@]} == 0 )); then
  echo "error: //models:corpus gave no model.onnx files" >&2
  exit 1
fi

exec "$tool" --ops="$ops" --symbolic "${suites[@]}" "${corpus[@]}"
