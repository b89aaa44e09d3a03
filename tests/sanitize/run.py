"""The sanitizer run of interopcheck (`scripts/test --sanitize`): AddressSanitizer,
UndefinedBehaviorSanitizer and LeakSanitizer over the unit tests and over real runs.

1. Configures build-sanitize/ (the project's compiler, -Db_sanitize=address,undefined) and
   builds it.
2. Runs the unit tests there (`meson test --suite unit`, extra arguments passed on).
3. Runs the real binary: the matrix of NumPy and the interpreter's own bytes and memoryview
   (every protocol, dtype and layout they share), the test probes' badlib for the failure
   paths (findings, reproducers), then `report` with expectations, `diff`, `merge` and
   `repro` on what those runs wrote.

Every process (test binaries, the supervisor and each worker) writes its sanitizer reports to
a file of its own under build-sanitize/sanitize/logs/, so that a report in a worker, whose
output only reaches a case's diagnostic, cannot go unseen: a step passes when its exit status
is the expected one and it left no such file. The last line is "N passed, N failed" over the
unit tests' TAP results and these steps, like scripts/test's.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build-sanitize")
OUT = os.path.join(BUILD, "sanitize")
LOGS = os.path.join(OUT, "logs")
SUPPRESSIONS = os.path.join(ROOT, "tests", "sanitize", "lsan.supp")


def sanitizer_env():
    """The sanitizers' settings, each for a reason:
    ASAN_OPTIONS
      log_path            one report file per process (see the module's comment).
      detect_leaks=1      LeakSanitizer at every process's exit (the default on x86-64 Linux,
                          said explicitly); the interpreter's own blocks are suppressed by
                          tests/sanitize/lsan.supp, which says why for each.
      allocator_may_return_null=1
                          an array library that asks for more memory than there is expects
                          NULL and raises MemoryError, as in a normal run; ASan's default
                          would end the worker instead.
      (verify_asan_link_order stays on: every instrumented program is linked with ASan's
      runtime, which therefore loads first; the only uninstrumented program started, the
      environment's python asked for its version, does not load the runtime at all.)
    UBSAN_OPTIONS
      log_path, print_stacktrace=1
                          reports with their stacks in the same directory; UBSan recovers
                          (the build's default), so one run shows every site.
    LSAN_OPTIONS
      suppressions        tests/sanitize/lsan.supp; print_suppressions=0 keeps the logs of
                          clean runs empty."""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = (f"log_path={LOGS}/asan:detect_leaks=1:allocator_may_return_null=1")
    env["UBSAN_OPTIONS"] = f"log_path={LOGS}/ubsan:print_stacktrace=1"
    env["LSAN_OPTIONS"] = f"suppressions={SUPPRESSIONS}:print_suppressions=0"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("INTEROPCHECK_PROBE_PATH", None)
    return env


class Steps:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.count = 0

    def check(self, ok, name, detail=""):
        self.count += 1
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'' if ok else 'not '}ok {self.count} - {name}", flush=True)
        if not ok and detail:
            for line in detail.splitlines()[-60:]:
                print(f"#   {line}", flush=True)
        return ok


def new_reports(before):
    """Sanitizer report files written since `before` (a set of paths), with their text."""
    found = []
    for path in sorted(set(glob.glob(os.path.join(LOGS, "*"))) - before):
        with open(path, errors="replace") as f:
            found.append(f"--- {os.path.basename(path)}\n{f.read()[:4000]}")
    return found


def step(steps, name, cmd, expect_status=(0,), env=None, cwd=ROOT):
    before = set(glob.glob(os.path.join(LOGS, "*")))
    proc = subprocess.run(cmd, cwd=cwd, env=env or sanitizer_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace")
    reports = new_reports(before)
    ok = proc.returncode in expect_status and not reports
    detail = (f"$ {' '.join(cmd)}\nexit status {proc.returncode} (expected "
              f"{' or '.join(map(str, expect_status))})\n" + "\n".join(reports) +
              "\n" + proc.stdout[-3000:])
    steps.check(ok, name, detail)
    return proc


def configure(venv):
    meson = os.path.join(venv, "bin", "meson")
    python = os.path.join(venv, "bin", "python")
    # -Db_lundef=false: the CUDA stand-in libraries that test_cuda loads are linked with the
    # sanitizers but take the runtime's symbols from the executable, which --no-undefined
    # refuses. -Dwerror=false: gcc's flow warnings (-Warray-bounds, -Wstringop-overflow) see
    # the instrumented code and warn where the plain build does not (gcc 12 on ic_expect.c's
    # memmove after a BOM); warnings are the main build's business, which keeps -Werror.
    # -Dfuzz=disabled: the fuzz harnesses have their own build (docs/fuzzing.md).
    cmd = [meson, "setup", BUILD, ROOT, f"-Dpython={python}", "-Db_sanitize=address,undefined",
           "-Db_lundef=false", "-Dwerror=false", "-Dfuzz=disabled"]
    if os.path.exists(os.path.join(BUILD, "build.ninja")):
        cmd.insert(2, "--reconfigure")
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        print(proc.stdout[-4000:], file=sys.stderr)
        return False
    proc = subprocess.run([meson, "compile", "-C", BUILD], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        print(proc.stdout[-6000:], file=sys.stderr)
        return False
    return True


def unit_tests(steps, venv, extra):
    """The unit tests; returns (passed, failed) of their TAP lines (scripts/count_tap.py)."""
    meson = os.path.join(venv, "bin", "meson")
    before = set(glob.glob(os.path.join(LOGS, "*")))
    shutil.rmtree(os.path.join(BUILD, "tests", "rules-fired"), ignore_errors=True)
    subprocess.run([meson, "test", "-C", BUILD, "--no-rebuild", "--print-errorlogs",
                    "--suite", "unit", *extra], env=sanitizer_env())
    counted = subprocess.run([os.path.join(venv, "bin", "python"),
                              os.path.join(ROOT, "scripts", "count_tap.py"),
                              os.path.join(BUILD, "meson-logs", "testlog.json")],
                             stdout=subprocess.PIPE, text=True)
    match = re.search(r"(\d+) passed, (\d+) failed", counted.stdout)
    for line in counted.stdout.splitlines():
        if not re.fullmatch(r"\d+ passed, \d+ failed", line):
            print(f"# unit tests: {line}")
    reports = new_reports(before)
    steps.check(not reports, "the unit tests leave no sanitizer report", "\n".join(reports))
    return (int(match.group(1)), int(match.group(2))) if match else (0, 1)


def outcomes(path):
    with open(path) as f:
        report = json.load(f)
    counts = {}
    for case in report["cases"]:
        counts[case["outcome"]] = counts.get(case["outcome"], 0) + 1
    return report, counts


def real_runs(steps):
    binary = os.path.join(BUILD, "src", "interopcheck")
    run_json = os.path.join(OUT, "run.json")
    bad_json = os.path.join(OUT, "badlib.json")
    # Failures of the libraries are findings, not sanitizer reports: exit status 1 is fine.
    step(steps, "numpy, bytes and memoryview matrix under ASan + UBSan",
         [binary, "--producer", "numpy,py_bytes,py_memoryview",
          "--consumer", "numpy,interopcheck,py_memoryview", "-o", run_json], (0, 1))
    if os.path.exists(run_json):
        _, counts = outcomes(run_json)
        broken = {k: v for k, v in counts.items() if k in ("crash", "timeout", "error")}
        steps.check(not broken and counts.get("pass", 0) > 0,
                    f"the matrix ran: {counts}", f"outcomes {counts}")
    # badlib's crashing and hanging dtypes are left out: ASan's own SEGV handler would turn
    # its deliberate SIGSEGV into an exit status, which is not what that case tests.
    env = sanitizer_env()
    env["INTEROPCHECK_PROBE_PATH"] = os.path.join(ROOT, "tests", "probes")
    step(steps, "badlib's failures under ASan + UBSan",
         [binary, "--producer", "badlib", "--consumer", "numpy,interopcheck",
          "--dtype", "int16,uint8,float32", "--layout", "contiguous,strided", "-o", bad_json],
         (1,), env=env)
    # The Arrow protocols' C side: streams read, replayed and released (streamlib breaks them),
    # requested schemas made and released, DuckDB's repeated scans.
    step(steps, "Arrow arrays and streams under ASan + UBSan",
         [binary, "--producer", "streamlib,arrowlib,pyarrow,polars",
          "--consumer", "streamlib,pyarrow,polars,duckdb,interopcheck", "--protocol",
          "arrow,arrow_stream", "--dtype", "float64,float32,int32,int16,uint8,uint16",
          "--layout", "flat,offset,empty", "-o", os.path.join(OUT, "arrow.json")], (1,), env=env)
    if not (os.path.exists(run_json) and os.path.exists(bad_json)):
        steps.check(False, "the views, diff, merge and repro (no reports to read)")
        return
    expect = os.path.join(ROOT, "tests", "fuzz", "corpus", "expect", "known.txt")
    step(steps, "report: HTML, JUnit and Markdown with expectations",
         [binary, "report", bad_json, "--expect", expect, "--junit",
          os.path.join(OUT, "cases.xml"), "--junit-cases", "--markdown",
          os.path.join(OUT, "summary.md")])
    step(steps, "diff of the two runs", [binary, "diff", run_json, bad_json], (0, 1))
    step(steps, "merge of the two runs",
         [binary, "merge", run_json, bad_json, "-o", os.path.join(OUT, "merged.json")])
    # badlib has no reproducers; NumPy's findings in the matrix do, when it has any.
    report, _ = outcomes(run_json)
    findings = [f for f in report.get("findings") or [] if f.get("reproducer")]
    if findings:
        step(steps, "repro prints a reproducer", [binary, "repro", run_json, findings[0]["id"]])


def main(argv):
    venv = os.environ.get("INTEROPCHECK_VENV", os.path.join(ROOT, ".venv"))
    if not os.path.exists(os.path.join(venv, "bin", "meson")):
        print("test: no virtual environment: run scripts/setup first", file=sys.stderr)
        return 2
    if not configure(venv):
        print("test: the sanitizer build failed (build-sanitize/)", file=sys.stderr)
        return 2
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(LOGS)
    steps = Steps()
    unit_passed, unit_failed = unit_tests(steps, venv, argv)
    real_runs(steps)
    passed, failed = unit_passed + steps.passed, unit_failed + steps.failed
    print(f"sanitizer logs: {LOGS}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
