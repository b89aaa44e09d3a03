"""Integration test of the command line: help, version, usage and environment errors with exit
status 2, `list`, probe directories added at run time, and the progress line on a terminal.

Usage: test_cli.py INTEROPCHECK_BINARY
"""
import glob
import json
import os
import pty
import subprocess
import tempfile

import taplib


def other_python(current_version):
    """An installed interpreter of another minor version, or None."""
    candidates = glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")) + \
        ["/usr/bin/python3"]
    for path in candidates:
        try:
            out = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            continue
        if out and out != current_version:
            return path, out
    return None, None


def run_on_terminal(command, term):
    """Runs `command` with stderr on a pseudo-terminal of type `term`: (status, what the
    terminal got, stdout)."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=terminal, text=True,
                            env={**os.environ, "TERM": term})
    os.close(terminal)
    seen = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    proc.wait(timeout=300)
    os.close(controller)
    return proc.returncode, seen, proc.stdout.read()


def check_collect_only(tap, binary):
    """--collect-only lists the ids a run of the same selection reports, writes nothing, and
    refuses the options of a report."""
    selection = ["--producer", "numpy,py_bytes", "--consumer", "numpy,torch",
                 "--protocol", "dlpack,buffer", "--dtype", "float32,int8"]
    with tempfile.TemporaryDirectory() as workdir:
        proc = subprocess.run([os.path.abspath(binary), *selection, "--collect-only"],
                              capture_output=True, text=True, cwd=workdir, timeout=600)
        ids = proc.stdout.split()
        left = os.listdir(workdir)
        out = os.path.join(workdir, "r.json")
        run = taplib.run(binary, *selection, "-o", out, "-q")
        report = taplib.load_report(out) if os.path.exists(out) else {"cases": []}
        ran = [c for c in report["cases"] if c.get("duration_ms", 0) > 0]
        tap.ok(proc.returncode == 0 and ids and ids == [c["id"] for c in report["cases"]]
               and not left,
               f"--collect-only lists the {len(ids)} case ids of the run's report, in its order, "
               "and writes nothing", (proc.returncode, ids[:3], left, proc.stderr[-300:]))
        tap.ok(f"{len(ids)} cases: {len(ran)} would run" in proc.stderr,
               "... and says on stderr how many would run", (len(ran), proc.stderr[-300:]))
    proc = taplib.run(binary, *selection, "--collect-only", "-o", "x.json")
    tap.ok(proc.returncode == 2 and "--collect-only writes no report" in proc.stderr,
           "--collect-only with -o is a usage error", proc.stderr)
    proc = taplib.run(binary, "diff", "a.json", "b.json", "--collect-only")
    tap.ok(proc.returncode == 2 and "--collect-only lists the cases a run" in proc.stderr,
           "--collect-only on another command is a usage error", proc.stderr)


def check_last_failed(tap, binary):
    """--last-failed runs again exactly the cases that failed, with the report's seed and probe
    directories, into a new report that says so."""
    selection = ["--producer", "numpy", "--consumer", "eralib,numpy", "--protocol", "dlpack",
                 "--layout", "flat", "--dtype", "float32,int32"]
    with tempfile.TemporaryDirectory() as workdir:
        first, again = os.path.join(workdir, "first.json"), os.path.join(workdir, "again.json")
        taplib.run_with_test_probes(binary, first, *selection, "-q")
        report = taplib.load_report(first) if os.path.exists(first) else {"cases": []}
        failed = {c["id"]: c["outcome"] for c in report["cases"]
                  if c["outcome"] in ("fail", "crash", "timeout", "error")}
        proc = taplib.run(binary, "--last-failed", first, "-o", again, "-q")
        rerun = taplib.load_report(again) if os.path.exists(again) else {"cases": [], "run": {}}
        tap.ok(proc.returncode == 1 and failed and
               {c["id"]: c["outcome"] for c in rerun["cases"]} == failed,
               f"--last-failed runs again the {len(failed)} failed cases of "
               f"{len(report['cases'])}, and they fail again",
               (proc.returncode, proc.stderr[-600:]))
        errors = taplib.schema_errors(rerun) if rerun.get("schema") else ["no report"]
        tap.ok(rerun["run"].get("last_failed") == first and not errors and
               set(rerun["run"]["filters"]["consumer"]) <= {"eralib", "numpy"},
               "its report names the report it came from and validates",
               (rerun["run"], errors[:3]))
        proc = taplib.run(binary, "--resume", again)
        tap.ok(proc.returncode == 2 and "cannot be resumed" in proc.stderr,
               "a --last-failed run's report is not resumed (its filters are not its cases)",
               proc.stderr)
        passed = os.path.join(workdir, "passed.json")
        taplib.run(binary, "--producer", "numpy", "--consumer", "numpy", "--protocol", "dlpack",
                   "--dtype", "float32", "--layout", "flat", "-o", passed, "-q")
        proc = taplib.run(binary, "--last-failed", passed)
        tap.ok(proc.returncode == 4 and "nothing to run again" in proc.stderr,
               "--last-failed of a report without failures: exit 4, saying so", proc.stderr)
    proc = taplib.run(binary, "--last-failed", "x.json", "--all")
    tap.ok(proc.returncode == 2 and "takes its selection and seed from REPORT" in proc.stderr,
           "--last-failed with --all is a usage error", proc.stderr)


def check_verbose(tap, binary):
    """-v: a line per case, its outcome and id, a failure's rule, severity and culprit."""
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "v.json")
        proc = taplib.run_with_test_probes(binary, out, "--producer", "numpy", "--consumer",
                                           "eralib", "--protocol", "dlpack", "--layout", "flat",
                                           "--dtype", "float32,int32", "-v")
        report = taplib.load_report(out) if os.path.exists(out) else {"cases": []}
        lines = {}
        for line in proc.stdout.splitlines():
            words = line.split()
            if len(words) >= 2 and words[1].startswith("dlpack."):
                lines[words[1]] = line
        wanted = {c["id"]: c for c in report["cases"]}
        right = all(lines.get(i, "").startswith(c["outcome"]) and
                    (c["outcome"] != "fail" or
                     f"[{c['rule']}, {c['severity']}, {c['culprit']}]" in lines[i])
                    for i, c in wanted.items())
        tap.ok(wanted and set(lines) == set(wanted) and right,
               f"-v prints each of the {len(wanted)} cases with its outcome, and a failure's rule, "
               "severity and culprit", proc.stdout[:800])
    proc = taplib.run(binary, "--all", "-v", "-q")
    tap.ok(proc.returncode == 2 and "-v and -q" in proc.stderr, "-v with -q is a usage error",
           proc.stderr)


def check_gzip(tap, binary):
    """-o NAME.gz writes the report gzip-compressed, its views and stream beside it by the name
    without .gz, and every reader takes it; a damaged one is an error naming it."""
    import gzip
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "r.json.gz")
        proc = taplib.run(binary, "--producer", "numpy,py_bytes", "--consumer", "numpy",
                          "--protocol", "dlpack,buffer", "--dtype", "float32,int8", "-o", out, "-q")
        with open(out, "rb") as handle:
            head = handle.read(2)
        report = json.load(gzip.open(out)) if head == b"\x1f\x8b" else {"cases": []}
        tap.ok(proc.returncode == 0 and report["cases"] and
               os.path.exists(os.path.join(workdir, "r.jsonl")) and
               os.path.exists(os.path.join(workdir, "r.html")),
               "-o r.json.gz: a gzip report; its stream r.jsonl and dashboard r.html beside it",
               (proc.returncode, head, os.listdir(workdir), proc.stderr[-300:]))
        markdown = os.path.join(workdir, "m.md")
        proc = taplib.run(binary, "report", out, "--markdown", markdown)
        diff = taplib.run(binary, "diff", out, out)
        merged = os.path.join(workdir, "m.json.gz")
        merge = taplib.run(binary, "merge", out, out, "-o", merged)
        tap.ok(proc.returncode == 0 and os.path.exists(markdown) and diff.returncode == 0 and
               f"{len(report['cases'])} unchanged" in diff.stdout and merge.returncode == 0 and
               len(json.load(gzip.open(merged))["cases"]) == 2 * len(report["cases"]),
               "report, diff and merge read it; merge -o m.json.gz writes gzip too",
               (proc.stderr, diff.stdout[-300:], merge.stderr))
        damaged = os.path.join(workdir, "damaged.json.gz")
        with open(out, "rb") as src, open(damaged, "wb") as dst:
            dst.write(src.read()[:200])
        proc = taplib.run(binary, "report", damaged, "--markdown", markdown)
        tap.ok(proc.returncode == 2 and "damaged.json.gz" in proc.stderr,
               "a cut gzip report is an error that names it", proc.stderr)


def check_command_options(tap, binary):
    """An option the command does not read is a usage error naming the command and the option,
    never silently ignored."""
    for args, command, option in ((["diff", "a.json", "b.json", "-o", "out.md"], "diff",
                                   "-o/--output"),
                                  (["merge", "a.json", "b.json", "-o", "c.json", "--format",
                                    "text"], "merge", "--format"),
                                  (["report", "a.json", "--python", "/usr/bin/python3"],
                                   "report", "--python"),
                                  (["rules", "--all"], "rules", "-a/--all"),
                                  (["--all", "--format", "text"], "a run", "--format")):
        proc = taplib.run(binary, *args)
        said = f"{command} does not take" if command == "a run" else \
            f"'{command}' does not take"
        tap.ok(proc.returncode == 2 and f"{said} {option}" in proc.stderr,
               f"{' '.join(args)}: a usage error, '{command}' does not take {option}",
               proc.stderr)


def check_completion(tap, binary):
    """`completion bash` is a script bash sources whose function completes options, the
    registries' names (after a comma too), probe names and commands."""
    with tempfile.TemporaryDirectory() as workdir:
        script = os.path.join(workdir, "completion.sh")
        proc = taplib.run(binary, "completion", "bash")
        with open(script, "w", encoding="utf-8") as handle:
            handle.write(proc.stdout)
        asks = {"interopcheck --proto": "--protocol",
                "interopcheck --protocol dlpack,arr":
                    "dlpack,array_interface dlpack,array_struct dlpack,array dlpack,arrow "
                    "dlpack,arrow_device dlpack,arrow_stream",
                "interopcheck --dtype float8": "float8_e4m3fn float8_e5m2",
                "interopcheck --consumer numpy,interop": "numpy,interopcheck",
                "interopcheck --producer pyarr": "pyarrow pyarrow_tensor",
                "interopcheck mer": "merge"}
        for line, expected in asks.items():
            got = subprocess.run(
                ["bash", "-c", 'source "$1"; read -ra COMP_WORDS <<< "$2"; '
                 'COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _interopcheck; echo "${COMPREPLY[*]}"',
                 "_", script, line], capture_output=True, text=True, cwd=workdir, timeout=60)
            tap.ok(proc.returncode == 0 and got.stdout.strip() == expected,
                   f"completion of '{line}': {expected}", (got.stdout, got.stderr))
    proc = taplib.run(binary, "completion", "zsh")
    tap.ok(proc.returncode == 0 and "bashcompinit" in proc.stdout and "_interopcheck" in proc.stdout,
           "completion zsh: the same function, through bashcompinit", proc.stdout[:300])
    proc = taplib.run(binary, "completion", "fish")
    tap.ok(proc.returncode == 2 and "bash or zsh" in proc.stderr,
           "completion of another shell is a usage error", proc.stderr)


def check_man_page(tap, binary):
    """The man page meson builds next to the binary is made from --help: it holds every option
    --help lists, and groff renders it without a warning."""
    import re
    import shutil
    page = os.path.join(os.path.dirname(os.path.abspath(binary)), "interopcheck.1")
    text = open(page, encoding="utf-8").read() if os.path.exists(page) else ""
    options = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", taplib.run(binary, "--help").stdout))
    missing = sorted(o for o in options if o.replace("-", "\\-") not in text)
    tap.ok(text.startswith(".TH INTEROPCHECK 1") and ".SH NAME" in text and options
           and not missing,
           f"the man page holds all {len(options)} options of --help", missing[:10])
    if not shutil.which("groff"):
        tap.skip("groff is not installed: the page is not rendered")
        return
    proc = subprocess.run(["groff", "-man", "-Tascii", "-ww", page], capture_output=True,
                          text=True, timeout=60)
    plain = re.sub(".\b", "", proc.stdout)  # bold and underline are overstruck
    tap.ok(proc.returncode == 0 and not proc.stderr.strip() and "--last-failed" in plain,
           "groff renders it without a warning", proc.stderr[:500])


def check_one_case(tap, binary):
    """--case ID runs that case alone; with --no-fork in this process, printing the result the
    report holds for it, with the run's exit status."""
    probes = os.path.join(taplib.source_root(), "tests", "probes")
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "r.json")
        taplib.run_with_test_probes(binary, out, "--producer", "numpy", "--consumer",
                                    "eralib,torch", "--protocol", "dlpack", "--layout", "flat",
                                    "--dtype", "float32,int32", "-q")
        report = taplib.load_report(out) if os.path.exists(out) else {"cases": []}
        cases = {c["id"]: c for c in report["cases"]}
        for case_id, status in (("dlpack.numpy.torch.cpu.float32.flat", 0),
                                ("dlpack.numpy.eralib.cpu.int32.flat", 1)):
            proc = taplib.run(binary, "--probe-dir", probes, "--case", case_id, "--no-fork")
            try:
                got = json.loads(proc.stdout)
            except ValueError:
                got = {}
            want = cases.get(case_id, {})
            same = {k: got.get(k) for k in ("outcome", "rule", "side", "severity")} == \
                {k: want.get(k) for k in ("outcome", "rule", "side", "severity")} and \
                {n: c["status"] for n, c in got.get("checks", {}).items()} == \
                {n: c["status"] for n, c in want.get("checks", {}).items()}
            tap.ok(proc.returncode == status and want and same,
                   f"--case {case_id} --no-fork: the run's outcome, rule and checks, exit {status}",
                   (proc.returncode, proc.stderr[-500:], got.get("outcome"), want.get("outcome")))
        one = os.path.join(workdir, "one.json")
        proc = taplib.run(binary, "--probe-dir", probes, "--case",
                          "dlpack.numpy.eralib.cpu.int32.flat", "-o", one, "-q")
        alone = taplib.load_report(one) if os.path.exists(one) else {"cases": []}
        tap.ok(proc.returncode == 1 and [c["id"] for c in alone["cases"]] ==
               ["dlpack.numpy.eralib.cpu.int32.flat"],
               "--case without --no-fork: a run whose report holds that case alone",
               proc.stderr[-300:])
    for args, status, said in ((["--case", "dlpack.py_bytes.numpy.cpu.float16.flat"], 4,
                                "is not a case of this environment"),
                               (["--case", "nonsense", "--no-fork"], 2, "not a case id"),
                               (["--all", "--no-fork"], 2, "give it with --case ID")):
        proc = taplib.run(binary, *args)
        tap.ok(proc.returncode == status and said in proc.stderr,
               f"{' '.join(args)}: exit {status}, '{said}'", proc.stderr)


def check_size(tap, binary):
    """--size 70K: the 1-D layouts move 71 680 elements (strided from 215 041), the report
    says so, and the exchanges still pass."""
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "size.json")
        proc = taplib.run(binary, "--producer", "numpy", "--consumer", "interopcheck,numpy",
                          "--protocol", "dlpack,buffer", "--dtype", "float64,int16",
                          "--layout", "flat,strided,reversed", "--size", "70K", "-o", out, "-q")
        report = taplib.load_report(out) if os.path.exists(out) else {"cases": [], "run": {}}
        plain = [c for c in report["cases"] if c["variant"] is None]
        tap.ok(proc.returncode == 0 and report["run"].get("size") == 71680 and len(plain) == 24
               and all(c["outcome"] == "pass" for c in plain),
               "--size 70K: 24 plain cases of 71 680 elements pass, run.size records it",
               proc.stderr[-1500:] + str([(c["id"], c["outcome"]) for c in plain
                                          if c["outcome"] != "pass"])[:1500])
        errors = taplib.schema_errors(report) if report.get("schema") else ["no report"]
        tap.ok(not errors, "... and its report validates", "\n".join(errors[:5]))


def main(tap, args):
    binary = args[0]

    proc = taplib.run(binary, "--help")
    tap.ok(proc.returncode == 0 and "--all" in proc.stdout and "--probe-dir" in proc.stdout
           and "Exit status" in proc.stdout, "--help explains options and exit status",
           proc.stdout[:500])

    proc = taplib.run(binary, "--version")
    tap.ok(proc.returncode == 0 and "DLPack header 1." in proc.stdout,
           "--version names the DLPack header version of the build", proc.stdout)

    proc = taplib.run(binary)
    tap.ok(proc.returncode == 2 and "--all" in proc.stderr,
           "no selection is a usage error (exit 2) that suggests --all", proc.stderr)

    proc = taplib.run(binary, "--dtype", "float128")
    tap.ok(proc.returncode == 2 and "float128" in proc.stderr and "float32" in proc.stderr,
           "an unknown dtype is a usage error that lists the valid ones", proc.stderr)

    proc = taplib.run(binary, "--producer", "no_such_library")
    tap.ok(proc.returncode == 2 and "no probe named 'no_such_library'" in proc.stderr
           and "numpy" in proc.stderr, "an unknown library is a usage error that lists probes",
           proc.stderr)

    proc = taplib.run(binary, "--all", "--size", "0")
    tap.ok(proc.returncode == 2 and "--size takes a number of elements" in proc.stderr,
           "--size 0 is a usage error that says what --size takes", proc.stderr)

    check_size(tap, binary)
    check_collect_only(tap, binary)
    check_last_failed(tap, binary)
    check_verbose(tap, binary)
    check_gzip(tap, binary)
    check_command_options(tap, binary)
    check_completion(tap, binary)
    check_man_page(tap, binary)
    check_one_case(tap, binary)

    proc = taplib.run(binary, "--all", "--bogus")
    tap.ok(proc.returncode == 2 and "--bogus" in proc.stderr, "an unknown option is exit 2",
           proc.stderr)

    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    built = version.split("built with Python ")[1].split()[0]
    path, other = other_python(built)
    if path:
        proc = taplib.run(binary, "list", "--python", path)
        tap.ok(proc.returncode == 2 and f"Python {other}" in proc.stderr and "meson setup" in
               proc.stderr, f"an interpreter of Python {other} is refused with what to rebuild",
               proc.stderr)
    else:
        tap.skip("no interpreter of another Python version is installed")

    proc = taplib.run(binary, "list", "--python", "/nonexistent/bin/python")
    tap.ok(proc.returncode == 2 and "/nonexistent/bin/python" in proc.stderr,
           "a missing interpreter is an environment error naming the path", proc.stderr)

    proc = taplib.run(binary, "list")
    lines = proc.stdout.splitlines()
    numpy_line = next((line for line in lines if line.startswith("numpy ")), "")
    tap.ok(proc.returncode == 0 and "exports:" in numpy_line and "dlpack" in numpy_line,
           "list shows numpy with its version and exports", proc.stdout[:2000])
    tap.ok(any(line.startswith("interopcheck ") for line in lines),
           "list shows interopcheck's own consumer", proc.stdout[-800:])

    proc = taplib.run(binary, "list", "--json")
    try:
        listed = json.loads(proc.stdout)
        libs = {lib["name"]: lib for lib in listed["libraries"]}
        good = libs["numpy"]["status"] == "loaded" and "dlpack" in libs["numpy"]["exports"] \
            and "numpy.from_dlpack" in json.dumps(libs["numpy"]["calls"])
    except (ValueError, KeyError) as exc:
        good, listed = False, exc
    tap.ok(good, "list --json gives each library's protocols and calls", str(listed)[:800])

    probes = os.path.join(taplib.source_root(), "tests", "probes")
    proc = taplib.run(binary, "list", env={"INTEROPCHECK_PROBE_PATH": probes})
    tap.ok(any(line.startswith("badlib ") for line in proc.stdout.splitlines()),
           "INTEROPCHECK_PROBE_PATH adds a probe directory without rebuilding", proc.stdout[-1500:])

    with tempfile.TemporaryDirectory() as override:
        source = os.path.join(taplib.source_root(), "probes", "numpy.py")
        with open(source, encoding="utf-8") as handle:
            text = handle.read()
        patched = text.replace("np.__version__,", '"9.9.9-patched",')  # load_info's version
        with open(os.path.join(override, "numpy.py"), "w", encoding="utf-8") as handle:
            handle.write(patched)
        proc = taplib.run(binary, "list", "--probe-dir", override)
        numpy_line = next((l for l in proc.stdout.splitlines() if l.startswith("numpy ")), "")
        tap.ok(patched != text and "9.9.9-patched" in numpy_line,
               "a --probe-dir probe replaces the built-in probe of the same name", numpy_line)

    # Progress: redrawn in place on a terminal, plain lines elsewhere (a CI log, TERM=dumb).
    with tempfile.TemporaryDirectory() as workdir:
        command = [binary, "--producer", "numpy", "--consumer", "numpy", "--protocol", "dlpack",
                   "--dtype", "float32", "-o", os.path.join(workdir, "r.json")]
        returncode, seen, out = run_on_terminal(command, "xterm")
        tap.ok(returncode == 0 and b"\r\x1b[K[" in seen and b"/" in seen,
               "a terminal gets a progress line redrawn in place (cases done of total)",
               seen[-300:])
        tap.ok("report: " in out, "the run says where the report went")
        html = os.path.join(workdir, "r.html")
        tap.ok(f"html: {html}" in out and os.path.exists(html) and
               open(html, "rb").read(15) == b"<!DOCTYPE html>",
               "a run writes the dashboard next to its JSON and says where", out)
        returncode, seen, out = run_on_terminal(command, "dumb")
        tap.ok(returncode == 0 and b"\x1b" not in seen and b"interopcheck: [" in seen,
               "TERM=dumb: plain progress lines, no escape codes", seen[-300:])
        proc = taplib.run(*command)
        lines = [line for line in proc.stderr.splitlines() if line.startswith("interopcheck: [")]
        tap.ok(proc.returncode == 0 and "\x1b" not in proc.stderr and "\r" not in proc.stderr
               and lines and lines[-1].startswith("interopcheck: [") and " s" in lines[-1],
               "stderr piped (a CI log): plain lines, the last with the cases done and the time",
               proc.stderr[-500:])

    # --junit and --markdown on a run write those views too, from the same report.
    with tempfile.TemporaryDirectory() as workdir:
        junit = os.path.join(workdir, "cases.xml")
        markdown = os.path.join(workdir, "summary.md")
        proc = taplib.run(binary, "--producer", "numpy", "--consumer", "torch", "--protocol", "dlpack",
                   "--dtype", "float32", "-o", os.path.join(workdir, "r.json"), "-q",
                   "--junit", junit, "--junit-cases", "--markdown", markdown, "--html",
                   os.path.join(workdir, "board.html"))
        report = taplib.load_report(os.path.join(workdir, "r.json"))
        ok = proc.returncode == 0 and all(os.path.exists(p) for p in (junit, markdown)) and \
            os.path.exists(os.path.join(workdir, "board.html"))
        xml = open(junit).read() if ok else ""
        testcases = xml.count("<testcase ") if ok else -1
        verdicts = [c for c in report["cases"] if c["outcome"] != "unsupported"]
        # the findings suite holds one passing testcase when there is no finding
        tap.ok(ok and testcases == len(verdicts) + max(len(report["findings"]), 1) and
               len(verdicts) < len(report["cases"]) and 'message="unsupported' not in xml,
               "--junit --junit-cases, --markdown and --html on a run: one testcase per finding "
               "(or one saying there is none) and per case with a verdict, unsupported ones "
               "left out", (proc.returncode, testcases, proc.stdout, proc.stderr))
        every = os.path.join(workdir, "every.xml")
        proc = taplib.run(binary, "report", os.path.join(workdir, "r.json"), "--junit", every,
                          "--junit-cases", "--junit-unsupported")
        testcases = open(every).read().count("<testcase ") if proc.returncode == 0 else -1
        tap.ok(testcases == len(report["cases"]) + max(len(report["findings"]), 1),
               "--junit-unsupported: unsupported cases too", (testcases, proc.stderr))
        proc = taplib.run(binary, "report", os.path.join(workdir, "r.json"), "--junit", every,
                          "--junit-unsupported")
        tap.ok(proc.returncode == 2 and "give both" in proc.stderr,
               "--junit-unsupported without --junit-cases is a usage error", proc.stderr)
        small = os.path.join(workdir, "small.md")
        proc = taplib.run(binary, "report", os.path.join(workdir, "r.json"), "--markdown", small,
                          "--markdown-max", "4096")
        size = os.path.getsize(small) if os.path.exists(small) else -1
        tap.ok(proc.returncode == 0 and 0 < size <= 4096,
               f"--markdown-max caps the summary ({size} bytes of at most 4096)", proc.stderr)
        proc = taplib.run(binary, "report", os.path.join(workdir, "r.json"), "--markdown-max",
                          "100")
        tap.ok(proc.returncode == 2 and "4096" in proc.stderr,
               "a --markdown-max too small to hold a summary is a usage error", proc.stderr)
        proc = taplib.run(binary, "report", os.path.join(workdir, "r.json"), "--strict")
        tap.ok(proc.returncode == 2 and "--strict" in proc.stderr,
               "report refuses --strict, which could not gate anything there", proc.stderr)


if __name__ == "__main__":
    taplib.main(main)
