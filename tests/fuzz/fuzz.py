"""Builds and runs interopcheck's libFuzzer harnesses (tests/fuzz/, docs/fuzzing.md).

    fuzz.py smoke ...            the test suite's smoke test: every harness briefly, as TAP
    fuzz.py build [NAME...]      configure build-fuzz/ with clang (once) and build harnesses
    fuzz.py run NAME [-- ARG...] a long run of one harness on its working corpus

`smoke` runs each harness for a few thousand inputs (at most a few seconds) from its seed
corpus, with a fixed seed, and reports "ok" when it ended without a crash, a sanitizer report,
a leak or a broken invariant; otherwise "not ok" with the reproducer libFuzzer saved. It uses
harnesses built in the current build (--bin-dir), or configures and builds a clang build of
its own first (--nested), or only reports itself skipped (--skip REASON).

`run` works in build-fuzz/ at the top of the source tree (--build-dir to change): the
working corpus is build-fuzz/corpus/NAME (new inputs go there; the seeds of
tests/fuzz/corpus/NAME are read too and never written), crashes go to
build-fuzz/artifacts/NAME/. Arguments after "--" go to libFuzzer, e.g. -runs=10000000.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))

# Harnesses that read the same file format share their seeds and dictionary.
SHARED = {"report_views": "report"}


def harnesses():
    """The harness names, as tests/fuzz/meson.build lists them (one list to keep)."""
    with open(os.path.join(HERE, "meson.build")) as f:
        text = f.read()
    listing = re.search(r"^fuzz_harnesses = \[(.*?)^\]", text, re.S | re.M).group(1)
    return re.findall(r"^\s*'(\w+)'", listing, re.M)


def sanitizer_env(source):
    """The sanitizer settings of every harness run, each for a reason:
    - ASan: abort_on_error=0 and the default exit code, so libFuzzer reports the crash and
      saves the input; detect_leaks=1 (LeakSanitizer after inputs that allocated more than
      they freed), with the suppressions of tests/sanitize/lsan.supp, which only name the
      embedded interpreter's own allocations; symbolize=1 for readable stacks.
    - UBSan: print_stacktrace=1 (the harnesses are built with -fno-sanitize-recover, so a
      finding stops the run)."""
    env = dict(os.environ)
    supp = os.path.join(source, "tests", "sanitize", "lsan.supp")
    env["ASAN_OPTIONS"] = "detect_leaks=1:symbolize=1:abort_on_error=0"
    env["LSAN_OPTIONS"] = f"suppressions={supp}:print_suppressions=0"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    return env


def find_tool(name, python):
    """meson beside the interpreter (the project's virtual environment), else on PATH."""
    if python:
        beside = os.path.join(os.path.dirname(python), name)
        if os.access(beside, os.X_OK):
            return beside
    found = shutil.which(name)
    if not found:
        sys.exit(f"fuzz: {name} not found")
    return found


def configure(build_dir, source, cc, python, log):
    """A clang build with ASan + UBSan and the harnesses (once; ninja reconfigures later)."""
    if os.path.exists(os.path.join(build_dir, "build.ninja")):
        return 0
    meson = find_tool("meson", python)
    # -Dwerror=false: clang warns where gcc, the project's compiler, does not, and the tool's
    # own warnings are the main build's business (-Werror there); the harnesses themselves
    # are compiled with -Werror (tests/fuzz/meson.build). No CUDA: nothing here needs nvcc.
    cmd = [meson, "setup", build_dir, source, "-Dfuzz=enabled", "-Dcuda=disabled",
           "-Dbuildtype=debugoptimized", "-Db_sanitize=address,undefined", "-Db_lundef=false",
           "-Dwerror=false"]
    if python:
        cmd.append(f"-Dpython={python}")
    env = dict(os.environ, CC=cc)
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if proc.returncode != 0:
        log(f"meson setup failed ({' '.join(cmd)}):\n{proc.stdout[-3000:]}")
        shutil.rmtree(build_dir, ignore_errors=True)  # a half-made build is retried next time
    return proc.returncode


def build(build_dir, names, log):
    ninja = shutil.which("ninja") or "ninja"
    targets = [f"tests/fuzz/fuzz_{name}" for name in names]
    proc = subprocess.run([ninja, "-C", build_dir, *targets], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        log(f"ninja failed:\n{proc.stdout[-4000:]}")
    return proc.returncode


def libfuzzer_args(name, source):
    args = ["-timeout=20", "-rss_limit_mb=4096", "-print_final_stats=1"]
    dictionary = os.path.join(source, "tests", "fuzz", "dict", f"{SHARED.get(name, name)}.dict")
    if os.path.exists(dictionary):
        args.append(f"-dict={dictionary}")
    return args


STAT = re.compile(r"^stat::(\w+):\s+(\d+)", re.M)
COVERAGE = re.compile(r"cov: (\d+) ft: (\d+)")


def smoke_one(name, bin_dir, source, out, runs, seconds):
    """Runs one harness briefly; returns (ok, summary, details)."""
    binary = os.path.join(bin_dir, f"fuzz_{name}")
    if not os.access(binary, os.X_OK):
        return False, "not built", f"{binary} is missing"
    work = os.path.join(out, name)
    shutil.rmtree(work, ignore_errors=True)
    corpus = os.path.join(work, "corpus")
    os.makedirs(corpus)
    seeds = os.path.join(source, "tests", "fuzz", "corpus", SHARED.get(name, name))
    cmd = [binary, f"-runs={runs}", f"-max_total_time={seconds}", "-seed=1",
           f"-artifact_prefix={work}/", *libfuzzer_args(name, source), corpus]
    if os.path.isdir(seeds):
        cmd.append(seeds)
    started = time.monotonic()
    proc = subprocess.run(cmd, env=sanitizer_env(source), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace",
                          timeout=seconds + 300)
    elapsed = time.monotonic() - started
    stats = dict(STAT.findall(proc.stdout))
    cov = COVERAGE.findall(proc.stdout)
    runs = int(stats.get("number_of_executed_units", 0))
    # libFuzzer's own exec/s is 0 for runs under a second; this one counts the start too
    summary = (f"{runs} runs in {elapsed:.2f} s, {runs / elapsed:.0f} exec/s, "
               f"cov {cov[-1][0] if cov else '?'}")
    artifacts = [f for f in os.listdir(work) if f != "corpus"]
    ok = proc.returncode == 0 and not artifacts
    details = None
    if not ok:
        details = (f"exit status {proc.returncode}; reproducer(s) in {work}: "
                   f"{', '.join(artifacts) or 'none'}\n"
                   f"reproduce: {binary} {os.path.join(work, artifacts[0]) if artifacts else ''}\n"
                   + proc.stdout[-6000:])
    return ok, summary, details


def cmd_smoke(args):
    names = args.names or harnesses()
    if args.skip:
        print(f"1..0 # SKIP {args.skip}", flush=True)
        return 0
    lines = []

    def log(text):
        lines.append(text)

    bin_dir = args.bin_dir
    if args.nested:
        if configure(args.nested, args.source, args.cc, args.python, log) != 0 or \
                build(args.nested, names, log) != 0:
            print("not ok 1 - the clang build of the fuzz harnesses", flush=True)
            for line in "\n".join(lines).splitlines()[-60:]:
                print(f"#   {line}")
            print("1..1")
            return 1
        bin_dir = os.path.join(args.nested, "tests", "fuzz")
    os.makedirs(args.out, exist_ok=True)
    failed = 0
    for number, name in enumerate(names, 1):
        ok, summary, details = smoke_one(name, bin_dir, args.source, args.out, args.runs,
                                         args.seconds)
        print(f"{'' if ok else 'not '}ok {number} - fuzz_{name} runs without a crash "
              f"({summary})", flush=True)
        if not ok:
            failed += 1
            for line in details.splitlines()[-80:]:
                print(f"#   {line}", flush=True)
    print(f"1..{len(names)}", flush=True)
    return 1 if failed else 0


def cmd_build(args):
    build_dir = os.path.abspath(args.build_dir)
    python = args.python or os.path.join(SOURCE, ".venv", "bin", "python")
    cc = args.cc or shutil.which("clang") or "clang"
    names = args.names or harnesses()
    if configure(build_dir, SOURCE, cc, python if os.path.exists(python) else None,
                 lambda text: print(text, file=sys.stderr)) != 0:
        return 2
    return 2 if build(build_dir, names, lambda text: print(text, file=sys.stderr)) else 0


def cmd_run(args):
    build_dir = os.path.abspath(args.build_dir)
    args.names = [args.name]
    if cmd_build(args) != 0:
        return 2
    corpus = os.path.join(build_dir, "corpus", args.name)
    artifacts = os.path.join(build_dir, "artifacts", args.name)
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(artifacts, exist_ok=True)
    seeds = os.path.join(SOURCE, "tests", "fuzz", "corpus", SHARED.get(args.name, args.name))
    cmd = [os.path.join(build_dir, "tests", "fuzz", f"fuzz_{args.name}"),
           f"-artifact_prefix={artifacts}/", *libfuzzer_args(args.name, SOURCE), *args.extra,
           corpus]
    if os.path.isdir(seeds):
        cmd.append(seeds)
    print("fuzz: " + " ".join(cmd), file=sys.stderr, flush=True)
    return subprocess.call(cmd, env=sanitizer_env(SOURCE))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    smoke = sub.add_parser("smoke", help="run every harness briefly (TAP)")
    smoke.add_argument("--source", default=SOURCE)
    smoke.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "interopcheck-fuzz"))
    smoke.add_argument("--bin-dir")
    smoke.add_argument("--nested", help="build directory of a clang build made here")
    smoke.add_argument("--cc", default="clang")
    smoke.add_argument("--python")
    smoke.add_argument("--skip", help="report the test skipped for this reason")
    smoke.add_argument("--runs", type=int, default=4000)
    smoke.add_argument("--seconds", type=int, default=5)
    smoke.add_argument("names", nargs="*")

    for name in ("build", "run"):
        p = sub.add_parser(name)
        p.add_argument("--build-dir", default=os.path.join(SOURCE, "build-fuzz"))
        p.add_argument("--cc")
        p.add_argument("--python")
        if name == "build":
            p.add_argument("names", nargs="*")
        else:
            p.add_argument("name", help="a harness: " + ", ".join(harnesses()))
            p.add_argument("extra", nargs=argparse.REMAINDER)

    args = parser.parse_args()
    if args.command == "smoke":
        return cmd_smoke(args)
    if args.command == "build":
        return cmd_build(args)
    args.extra = [a for a in args.extra if a != "--"]
    return cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
