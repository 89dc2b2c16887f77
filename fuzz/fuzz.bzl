"""fuzz_target: a libFuzzer binary and its smoke test (see docs/fuzzing.md)."""

def fuzz_target(
        name,
        srcs,
        deps,
        seed_mode,
        seed_inputs,
        seed_data = [],
        dict = None,
        max_len = 65536,
        timeout_s = 10,
        runs = 2000,
        max_total_time = 60):
    """A libFuzzer target `name` and the test `name + "_smoke"`.

    Both are tagged manual: they build only with clang (--config=fuzz), so `//...` under the
    default gcc build skips them; //fuzz:smoke lists the smoke tests.

    Args:
      name: the fuzzer binary.
      srcs, deps: as cc_binary's; srcs define LLVMFuzzerTestOneInput.
      seed_mode: make_seeds' MODE for this target's corpus.
      seed_inputs: files and folders make_seeds reads (runfiles paths or absolute paths).
      seed_data: targets providing the runfiles among seed_inputs.
      dict: a libFuzzer dictionary file, or None.
      max_len, timeout_s: libFuzzer's -max_len and -timeout (seconds per input).
      runs: libFuzzer's -runs for the smoke test: inputs run in all, seeds included.
      max_total_time: a cap on the smoke run's seconds (-max_total_time).
    """
    native.cc_binary(
        name = name,
        srcs = srcs,
        deps = deps,
        linkopts = ["-fsanitize=fuzzer"],
        tags = ["manual"],
    )
    args = [
        "--fuzzer=$(location :%s)" % name,
        "--seed_tool=$(location :make_seeds)",
        "--seed_mode=" + seed_mode,
        "--max_len=%d" % max_len,
        "--timeout=%d" % timeout_s,
        "--runs=%d" % runs,
        "--max_total_time=%d" % max_total_time,
    ]
    # Inputs that once crashed the target, replayed first (fuzz/regressions/<name>/).
    regressions = native.glob(["regressions/%s/*" % name])
    args += ["--replay=$(location %s)" % r for r in regressions]
    data = [":" + name, ":make_seeds"] + seed_data + regressions
    if dict:
        args.append("--dict=$(location %s)" % dict)
        data.append(dict)
    native.sh_test(
        name = name + "_smoke",
        size = "medium",
        srcs = ["smoke.sh"],
        args = args + seed_inputs,
        data = data,
        tags = ["manual", "fuzz"],
    )
