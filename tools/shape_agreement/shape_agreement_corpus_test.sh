#!/bin/bash
# graphopt's type and shape inference against ONNX's on every model of libonnx-testdata
# (node, pytorch-converted, pytorch-operator, simple) and of //models:corpus, each also with its
# inputs' dims made symbolic. Fails on any disagreement not listed in expected_differences.txt.
#
# Usage: shape_agreement_corpus_test.sh SHAPE_AGREEMENT EXPECTED_FILE CORPUS_FILE...
set -euo pipefail

tool="$1"
expected="$2"
shift 2

testdata=/usr/share/libonnx-testdata/data
suites=()
for suite in node pytorch-converted pytorch-operator simple; do
  if [[ ! -d "$testdata/$suite" ]]; then
    echo "error: $testdata/$suite is missing: install libonnx-testdata (scripts/install_deps.sh)" >&2
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
echo "libonnx-testdata: $(find "${suites[@]}" -name model.onnx | wc -l) models; //models:corpus: ${#corpus[@]} models"

exec "$tool" --symbolic --expected="$expected" "${suites[@]}" "${corpus[@]}"
