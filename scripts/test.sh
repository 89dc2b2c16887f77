#!/usr/bin/env bash
# README command (b): installs what is missing, builds everything and runs the whole test suite.
# Ends with the line "N passed, N failed" and exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh || { echo "0 passed, 1 failed"; exit 1; }
scripts/install_python_deps.sh || { echo "0 passed, 1 failed"; exit 1; }

BAZEL_FLAGS=()
if [[ "${CI:-}" == "true" ]]; then BAZEL_FLAGS+=(--config=ci); fi

targets=$(mktemp)
trap 'rm -f "$targets"; bazel shutdown >/dev/null 2>&1' EXIT

bazel test "${BAZEL_FLAGS[@]}" --keep_going --test_env=GRAPHOPT_PYTHON="$PWD/.venv/bin/python" \
  //... "$@"
rc=$?

# Every test target of this run (cached results included) is counted from its test.xml.
bazel query 'tests(//...) except attr(tags, manual, //...)' \
  --output=label >"$targets" 2>/dev/null
testlogs=$(bazel info "${BAZEL_FLAGS[@]}" bazel-testlogs 2>/dev/null)
python3 - "$testlogs" "$targets" "$rc" <<'PY'
import os, sys, xml.etree.ElementTree as ET
root, targets_file, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
passed = failed = skipped = 0
failures = []
for label in open(targets_file).read().split():
    target = label.lstrip("/").replace(":", "/")
    path = os.path.join(root, target, "test.xml")
    if not os.path.exists(path):
        failed += 1
        failures.append(label + " (no result: did not build or did not run)")
        continue
    try:
        suites = ET.parse(path).getroot()
    except ET.ParseError:
        failed += 1
        failures.append(target + " (unreadable test.xml)")
        continue
    cases = list(suites.iter("testcase"))
    if not cases:
        # A test binary without gtest cases (a shell test): one case, judged by its result.
        bad = any(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites.iter("testsuite"))
        if bad:
            failed += 1
            failures.append(target)
        else:
            passed += 1
        continue
    for c in cases:
        if c.find("failure") is not None or c.find("error") is not None:
            failed += 1
            failures.append(f"{target}: {c.get('classname')}.{c.get('name')}")
        elif c.get("result") == "suppressed" or c.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
# Bazel exit 3 means tests failed (counted above); any other non-zero means something did not build.
if rc not in (0, 3):
    failed += 1
    failures.append(f"bazel exited {rc} (build failure: see above)")
# The conformance counts (tests/conformance), repeated from their logs.
for label in ("tests/conformance/conformance_test", "tests/conformance/corpus_models_test"):
    log = os.path.join(root, label, "test.log")
    if os.path.exists(log):
        for l in open(log, errors="replace"):
            if l.startswith("conformance ") or l.startswith("known failures:"):
                print(f"{label.rsplit('/', 1)[1]}: {l.rstrip()}")
for f in failures:
    print("FAILED:", f)
line = f"{passed} passed, {failed} failed"
if skipped:
    line += f", {skipped} skipped"
print(line)
sys.exit(1 if failed else 0)
PY
