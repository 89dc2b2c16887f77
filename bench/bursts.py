"""Contenders timed in interleaved bursts (bench/runtime_vs_ort.py, bench/runtime_ab.py).

Each contender is a process that speaks the --bursts protocol of bench/run_model_bench and
bench/ort_run.py: it loads and warms up, prints {"ready": true}, then for each stdin line "N"
makes its warm-up runs again and N timed ones and prints that burst's {"median_ms", ...}; at the
end of stdin it prints the line over all its timed runs and exits. Running the contenders'
bursts one after another, a fraction of a second apart, lets them see the same machine on a
host whose speed changes for seconds at a time (docs/performance.md, night of 2026-12-06).
"""
import json
import os
import subprocess
import tempfile
import time


class Contender:
    """One contender's process in --bursts mode."""

    def __init__(self, name, cmd):
        self.name = name
        self.cmd = cmd
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd + ["--bursts"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.bursts = []
        self._read()  # {"ready": true} once it has loaded the model and warmed up

    def _fail(self):
        self.err.seek(0)
        return RuntimeError(f"{' '.join(self.cmd)} failed: {self.err.read().decode()[-800:]}")

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            raise self._fail()
        return json.loads(line)

    def burst(self, runs):
        self.proc.stdin.write(f"{runs}\n")
        self.proc.stdin.flush()
        self.bursts.append(self._read()["median_ms"])

    def finish(self):
        """Ends the process; returns (its line over all runs, its peak RSS in MiB)."""
        self.proc.stdin.close()
        total = self._read()
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        if self.proc.returncode != 0:
            raise self._fail()
        self.err.close()
        return total, usage.ru_maxrss / 1024.0


def interleaved_trial(contenders, runs, burst, gap_s, order):
    """Starts the contenders [(name, cmd)], then runs bursts of `burst` runs until each has made
    `runs`: burst round t runs the contenders in the index order order(t), with gap_s of quiet
    before each burst (an idle ORT keeps a thread spinning for ~50 ms). Returns {name: (median
    over its runs, peak RSS MiB, its burst medians)}."""
    procs = []
    try:
        for name, cmd in contenders:
            procs.append(Contender(name, cmd))
        done, turn = 0, 0
        while done < runs:
            n = min(burst, runs - done)
            for i in order(turn):
                time.sleep(gap_s)
                procs[i].burst(n)
            done += n
            turn += 1
        result = {}
        for c in procs:
            total, rss = c.finish()
            result[c.name] = (total["median_ms"], rss, c.bursts)
        return result
    finally:
        for c in procs:
            if c.proc.poll() is None:
                c.proc.kill()
                c.proc.wait()
