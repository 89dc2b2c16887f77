"""The benchmarks' timed processes (bench/runtime_vs_ort.py, runtime_ab.py, memory_plan_bench.py):
one measurement per process (`run`), or contenders timed in interleaved bursts.

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


def _wait(proc, cmd, err):
    """Waits for proc (started from cmd, its stderr in the file err); returns its peak RSS in MiB
    as wait4 reports it. Linux carries the forking process's peak into the child across exec,
    so a child smaller than this (Python) process reads as this one's size: the contenders also
    print their own VmHWM as "peak_rss_mib", which the callers prefer. Raises with the end of
    its stderr when it failed."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err.seek(0)
        raise RuntimeError(f"{' '.join(cmd)} failed: {err.read().decode()[-800:]}")
    return usage.ru_maxrss / 1024.0


def run(cmd):
    """Runs cmd; returns (the JSON object of its last stdout line, its peak RSS in MiB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        rss = _wait(proc, cmd, err)
        out.seek(0)
        result = json.loads(out.read().decode().strip().splitlines()[-1])
        return result, result.get("peak_rss_mib", rss)


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

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            _wait(self.proc, self.cmd, self.err)  # raises with its stderr when it failed
            raise RuntimeError(f"{' '.join(self.cmd)} ended without answering")
        return json.loads(line)

    def burst(self, runs):
        self.proc.stdin.write(f"{runs}\n")
        self.proc.stdin.flush()
        self.bursts.append(self._read()["median_ms"])

    def finish(self):
        """Ends the process; returns (its line over all runs, its peak RSS in MiB)."""
        self.proc.stdin.close()
        total = self._read()
        rss = _wait(self.proc, self.cmd, self.err)
        self.err.close()
        return total, total.get("peak_rss_mib", rss)


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
