#!/usr/bin/env python3
"""Counts the tests of one or more `bazel test` runs from their test.xml files and prints the
CI line "N passed, N failed[, N skipped]"; exits 1 when anything failed.

  count_tests.py [--bep=FILE]... RC TESTLOGS TARGETS_FILE [RC TESTLOGS TARGETS_FILE ...]

One triple per bazel invocation: its exit status, its `bazel info bazel-testlogs` folder (each
configuration has its own) and a file listing the test labels it ran. --bep names a
--build_event_json_file of those invocations: a test whose cases all passed in test.xml but
that Bazel saw fail (it crashed or a sanitizer made it exit non-zero after the last case) then
counts one failure more. Used by scripts/test.sh (the gcc build and the fuzz smoke runs) and
scripts/tsan.sh.
"""
import json
import os
import sys
import xml.etree.ElementTree as ET


def bazel_verdicts(paths):
    """label -> Bazel's overall test status ("PASSED", "FAILED", ...) from BEP JSON files."""
    verdicts = {}
    for path in paths:
        if not os.path.exists(path):
            continue
        for line in open(path, errors="replace"):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            label = event.get("id", {}).get("testSummary", {}).get("label")
            if label and "testSummary" in event:
                verdicts[label] = event["testSummary"].get("overallStatus", "PASSED")
    return verdicts


def main(argv):
    bep = [a.split("=", 1)[1] for a in argv if a.startswith("--bep=")]
    argv = [a for a in argv if not a.startswith("--bep=")]
    if len(argv) < 3 or len(argv) % 3:
        sys.exit("usage: count_tests.py [--bep=FILE]... RC TESTLOGS TARGETS_FILE [...]")
    verdicts = bazel_verdicts(bep)
    passed = failed = skipped = 0
    failures = []
    roots = []
    for i in range(0, len(argv), 3):
        rc, root, targets_file = int(argv[i]), argv[i + 1], argv[i + 2]
        roots.append(root)
        for label in open(targets_file).read().split():
            failed_before = failed
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
                bad = any(int(s.get("failures", 0)) + int(s.get("errors", 0))
                          for s in suites.iter("testsuite"))
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
            if failed == failed_before and verdicts.get(label, "PASSED") not in ("PASSED", "FLAKY"):
                failed += 1
                failures.append(f"{label} ({verdicts[label]} after its cases passed: see its log)")
        # Bazel exit 3 means tests failed (counted above); any other non-zero means something
        # did not build.
        if rc not in (0, 3):
            failed += 1
            failures.append(f"bazel exited {rc} (build failure: see above)")
    # The conformance counts (tests/conformance), repeated from their logs.
    for label in ("tests/conformance/conformance_test", "tests/conformance/corpus_models_test"):
        for root in roots:
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
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
