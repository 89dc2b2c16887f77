"""Checks recorded one by one and written as JUnit XML to $XML_OUTPUT_FILE, so that the test
command counts each (scripts/count_tests.py): passed, failed, or skipped with its reason.

A check's name may be decided while it runs (Checks.rename), e.g. to say whether a container
or a chroot ran the image.
"""

import os
import sys
import time
import traceback
import xml.etree.ElementTree as ET

START = time.time()


def log(msg):
    print(f"[{time.time() - START:6.1f}s] {msg}", flush=True)


class Skip(Exception):
    """Raised inside a check: the check is reported as skipped, with this reason."""


class Checks:
    def __init__(self, suite):
        self.suite = suite
        self.cases = []  # (name, kind, detail, seconds); kind: ok, failure, skipped
        self._name = None

    def rename(self, name):
        self._name = name

    def run(self, name, fn, *args):
        """Runs fn(*args) as the check `name`; returns its result, or None when it did not pass."""
        self._name = name
        start = time.time()
        log(f"--- {name}")
        try:
            result = fn(*args)
        except Skip as e:
            self._add(self._name, "skipped", str(e), start)
            log(f"SKIPPED {self._name}: {e}")
            return None
        except Exception:  # noqa: BLE001 (every failure is this check's, reported below)
            detail = traceback.format_exc()
            self._add(self._name, "failure", detail, start)
            log(f"FAILED {self._name}\n{detail}")
            return None
        self._add(self._name, "ok", "", start)
        log(f"ok {self._name}")
        return result

    def skip(self, name, reason):
        self._add(name, "skipped", reason, time.time())
        log(f"SKIPPED {name}: {reason}")

    def _add(self, name, kind, detail, start):
        self.cases.append((name, kind, detail, time.time() - start))

    def finish(self):
        """Writes the XML, prints a summary and exits 1 when any check failed."""
        failed = [c for c in self.cases if c[1] == "failure"]
        skipped = [c for c in self.cases if c[1] == "skipped"]
        path = os.environ.get("XML_OUTPUT_FILE")
        if path:
            root = ET.Element("testsuites")
            s = ET.SubElement(root, "testsuite", name=self.suite, tests=str(len(self.cases)),
                              failures=str(len(failed)), errors="0", skipped=str(len(skipped)))
            for name, kind, detail, seconds in self.cases:
                c = ET.SubElement(s, "testcase", classname=self.suite, name=name,
                                  time=f"{seconds:.3f}")
                if kind == "failure":
                    ET.SubElement(c, "failure", message=detail.strip().splitlines()[-1]).text = detail
                elif kind == "skipped":
                    ET.SubElement(c, "skipped", message=detail)
            ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
        log(f"{len(self.cases) - len(failed) - len(skipped)} passed, {len(failed)} failed, "
            f"{len(skipped)} skipped")
        sys.exit(1 if failed else 0)
