"""Integration test: a supervisor nothing can fool or stop.

A library that attacks the worker it runs in (tests/probes/hostile_channel.py: garbage on
every descriptor, a forged result, half a frame, an oversized frame, a forked child that
crashes or keeps the channel open, a worker that stops itself) costs its own case, recorded
with the right outcome, and every other case of the run is still there.

Usage: test_supervisor.py INTEROPCHECK_BINARY
"""
import collections
import json
import os
import signal
import subprocess
import tempfile
import time

import taplib

DTYPES = ["int8", "int16", "int32", "uint8", "uint16", "float32", "float64", "complex64",
          "bool", "uint32", "int64"]

# dtype -> (outcome, text the diagnostic must hold)
EXPECTED = {
    "int8": ("error", "worker protocol violation: bytes that are not a frame header"),
    "int16": ("error", "worker protocol violation: a message \"end\" for request 1"),
    "int32": ("crash", "a child process the case started (pid"),
    "uint8": ("crash", "died with SIGSEGV; then the worker died with exit status 1"),
    "uint16": ("timeout", "no result after 5 s"),
    "float32": ("crash", "the worker died with exit status 0 during this case"),
    "float64": ("error", "worker protocol violation: the worker stopped in the middle of a frame"),
    "complex64": ("error", "worker protocol violation: a frame of 2147483648 bytes"),
    "bool": ("error", "worker protocol violation: bytes that are not a frame header (00)"),
    "uint32": ("error", "worker protocol violation: the case wrote to the private channel"),
    "int64": ("pass", ""),
}


def check_hostile_channel(tap, binary, probes, workdir):
    out = os.path.join(workdir, "hostile.json")
    pidfile = os.path.join(workdir, "child.pid")
    start = time.monotonic()
    proc = taplib.run(binary, "--probe-dir", probes, "--producer", "numpy", "--consumer",
                      "hostile_channel,numpy", "--protocol", "dlpack", "--layout", "contiguous",
                      "--dtype", ",".join(DTYPES), "--timeout", "5", "-j", "2", "-o", out, "-q",
                      env={"IC_TEST_PIDFILE": pidfile}, timeout=300)
    elapsed = time.monotonic() - start
    tap.ok(proc.returncode == 1 and os.path.exists(out),
           f"a run with the hostile library ends (status {proc.returncode}, {elapsed:.0f} s)",
           proc.stdout + proc.stderr)
    if not os.path.exists(out):
        return
    report = taplib.load_report(out)
    errors = taplib.schema_errors(report)
    tap.ok(not errors, "its report validates against reports/schema", "\n".join(errors[:10]))
    cases = taplib.cases_by_id(report)
    rows = []
    for dtype in DTYPES:
        case = cases.get(f"dlpack.numpy.hostile_channel.cpu.{dtype}.contiguous", {})
        outcome, text = EXPECTED[dtype]
        rows.append(f"{dtype:9} {case.get('outcome', '-'):8} {case.get('diagnostic', '')[:90]}")
        tap.ok(case.get("outcome") == outcome and text in case.get("diagnostic", ""),
               f"{dtype}: {outcome}{': ' + text if text else ''}", case)
    tap.diag("hostile channel outcomes:\n" + "\n".join(rows))
    crash = cases.get("dlpack.numpy.hostile_channel.cpu.int32.contiguous", {})
    tap.ok(crash.get("side") == "consumer" and crash.get("culprit") == "hostile_channel",
           "a forked child's crash is charged to the library that forked it", crash)
    numpy = [cases.get(f"dlpack.numpy.numpy.cpu.{d}.contiguous", {}).get("outcome")
             for d in DTYPES if d not in ("uint16",)]
    tap.ok(numpy and all(o == "pass" for o in numpy),
           "every plain numpy case of the run passes (none was lost or charged)", numpy)
    with open(os.path.splitext(out)[0] + ".jsonl", "rb") as handle:
        stream = handle.read()
    tap.ok(b"garbage" not in stream.replace(b"last output: garbage", b""),
           "garbage written to every descriptor never reaches the result stream")
    child = int(open(pidfile).read()) if os.path.exists(pidfile) else 0
    alive = child > 0 and os.path.exists(f"/proc/{child}") and \
        "Z" not in open(f"/proc/{child}/stat").read().split(")")[-1].split()[0]
    tap.ok(child > 0 and not alive,
           f"the child that kept the channel open (pid {child}) was killed with its group")


SLOW = ["--producer", "slowlib", "--consumer", "slowlib", "--protocol", "dlpack", "-j", "1"]


def start(binary, probes, out, *extra, mark="interrupt"):
    """Starts a run of the slow library in the background, marked in its environment so that
    its workers can be found afterwards."""
    env = dict(os.environ, IC_TEST_MARK=mark)
    env.pop("INTEROPCHECK_PROBE_PATH", None)
    return subprocess.Popen([binary, "--probe-dir", probes, *SLOW, "-o", out, "-q", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def wait_for_cases(stream, count, limit=60):
    """Waits until the stream holds `count` case lines that needed a worker."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if os.path.exists(stream):
            with open(stream, encoding="utf-8", errors="replace") as handle:
                if handle.read().count('"outcome":"pass"') >= count:
                    return True
        time.sleep(0.05)
    return False


def workers_of(mark):
    """Processes whose environment carries IC_TEST_MARK=mark (a run's workers)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                if f"IC_TEST_MARK={mark}".encode() in handle.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            continue
    return found


def case_ids(path):
    with open(path, encoding="utf-8") as handle:
        return {c["id"]: c["outcome"] for c in json.load(handle)["cases"]}


def check_interrupt(tap, binary, probes, workdir):
    full = os.path.join(workdir, "full.json")
    proc = taplib.run(binary, "--probe-dir", probes, *SLOW, "-o", full, "-q")
    expected = case_ids(full) if proc.returncode == 0 else {}
    tap.ok(len(expected) > 21, "an uninterrupted run of the slow library", proc.stderr)

    out = os.path.join(workdir, "int.json")
    run = start(binary, probes, out, mark="sigint")
    began = wait_for_cases(os.path.splitext(out)[0] + ".jsonl", 3)
    run.send_signal(signal.SIGINT)
    stdout, stderr = run.communicate(timeout=60)
    report = taplib.load_report(out) if os.path.exists(out) else {}
    errors = taplib.schema_errors(report) if report else ["no report"]
    finished = case_ids(out) if report else {}
    tap.ok(began and run.returncode == 130 and report.get("interrupted") is True and not errors
           and 0 < len(finished) < len(expected),
           f"SIGINT: exit status 130, a valid report marked interrupted with the {len(finished)} "
           f"finished of {len(expected)} cases", (run.returncode, stderr, errors[:5]))
    tap.ok(os.path.exists(os.path.splitext(out)[0] + ".html") and
           "interopcheck --resume" in stderr,
           "SIGINT: the dashboard is written and the message says how to finish", stderr)
    tap.ok(all(finished[k] == expected.get(k) for k in finished),
           "SIGINT: every case in the report finished with its uninterrupted outcome")
    time.sleep(0.2)
    tap.ok(not workers_of("sigint"), "SIGINT: no worker is left", workers_of("sigint"))

    proc = taplib.run(binary, "--resume", out, "-q")
    resumed = case_ids(out) if os.path.exists(out) else {}
    report = taplib.load_report(out)
    tap.ok(proc.returncode == 0 and report.get("interrupted") is False and resumed == expected,
           "--resume runs exactly the missing cases: the case set and outcomes of an "
           "uninterrupted run", (proc.returncode, proc.stderr, len(resumed), len(expected)))

    out = os.path.join(workdir, "term.json")
    run = start(binary, probes, out, mark="sigterm")
    wait_for_cases(os.path.splitext(out)[0] + ".jsonl", 2)
    run.send_signal(signal.SIGTERM)
    run.communicate(timeout=60)
    tap.ok(run.returncode == 143 and taplib.load_report(out).get("interrupted") is True,
           "SIGTERM (a CI runner cancelling): exit status 143, the report written", run.returncode)

    out = os.path.join(workdir, "twice.json")
    run = start(binary, probes, out, mark="twice")
    wait_for_cases(os.path.splitext(out)[0] + ".jsonl", 2)
    run.send_signal(signal.SIGINT)
    run.send_signal(signal.SIGINT)
    begun = time.monotonic()
    run.communicate(timeout=60)
    time.sleep(0.3)
    tap.ok(run.returncode == 130 and time.monotonic() - begun < 2 and not workers_of("twice"),
           "a second SIGINT leaves at once, and the workers go with it", run.returncode)

    out = os.path.join(workdir, "killed.json")
    stream = os.path.splitext(out)[0] + ".jsonl"
    run = start(binary, probes, out, mark="kill")
    wait_for_cases(stream, 3)
    run.kill()
    run.communicate(timeout=60)
    time.sleep(0.3)
    tap.ok(not workers_of("kill"), "SIGKILL: the workers die with the supervisor")
    time.sleep(1.1)  # so that a finish time taken from the clock would show
    proc = taplib.run(binary, "report", stream)
    rebuilt = taplib.load_report(out) if os.path.exists(out) else {}
    last_write = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(os.stat(stream).st_mtime))
    finished = rebuilt.get("run", {}).get("finished")
    tap.ok(finished == last_write,
           "report FILE.jsonl: the run finished when its stream was last written, not when read",
           f"finished {finished}, stream last written {last_write}")
    tap.ok(proc.returncode == 0 and rebuilt.get("interrupted") is True and
           not taplib.schema_errors(rebuilt) and 0 < len(rebuilt.get("cases", [])),
           "report FILE.jsonl of a killed run: a valid report, marked interrupted, and its views",
           proc.stdout + proc.stderr)
    os.remove(out)
    proc = taplib.run(binary, "--resume", stream, "-q")
    tap.ok(proc.returncode == 0 and os.path.exists(out) and case_ids(out) == expected,
           "--resume FILE.jsonl after a SIGKILL completes the run to the uninterrupted case set",
           proc.stderr)


def check_outputs(tap, binary, probes, workdir):
    """Every output is checked before the first case; nothing but regular files is replaced."""
    # /proc/self takes no new files, not even from root (as CI runs)
    locked = "/proc/self" if os.geteuid() == 0 else os.path.join(workdir, "locked")
    if locked != "/proc/self":
        os.mkdir(locked, 0o500)
    link = os.path.join(workdir, "link.json")
    os.symlink(os.path.join(workdir, "target.json"), link)
    for args, what, text in (
            (["-o", os.path.join(locked, "r.json")], "an unwritable directory", "not writable"),
            (["-o", os.path.join(workdir, "missing", "r.json")], "a missing directory",
             "does not exist"),
            (["-o", "/dev/null"], "a device", "is a character device"),
            (["-o", os.path.join(workdir, "ok.json"), "--junit", workdir], "a directory",
             "is a directory"),
            (["-o", link], "a symbolic link", "is a symbolic link")):
        began = time.monotonic()
        proc = taplib.run(binary, "--probe-dir", probes, *SLOW, *args, "-q")
        took = time.monotonic() - began
        tap.ok(proc.returncode == 2 and text in proc.stderr and took < 3 and
               not os.path.exists(os.path.join(workdir, "ok.json")),
               f"an output that is {what} is refused before anything runs ({took:.1f} s)",
               proc.stderr)
    tap.ok(os.path.islink(link) and not os.path.exists(os.path.join(workdir, "target.json")),
           "the symbolic link is left as it was")
    if locked != "/proc/self":
        os.chmod(locked, 0o700)


MANY_PROBE = '''"""One of many identical test libraries (written by test_supervisor.py)."""
import _probekit

np = None


def load():
    global np
    import numpy as _np

    np = _np
    return {"version": "0.0.1", "devices": ["cpu"], "dtypes": ["float32"], "layouts": ["flat"],
            "notes": {}, "readonly": False,
            "exports": {"dlpack": {"call": "numpy.ndarray.__dlpack__"}},
            "imports": {"dlpack": {"call": "numpy.from_dlpack(obj)", "zero_copy": True,
                                   "typed": True, "readonly": True}}}


def build(data, dtype, ops, readonly=False):
    return _probekit.apply_ops(_probekit.numpy_from_bytes(np, data, dtype), ops)


def describe(x):
    return _probekit.numpy_like_description(x)


def consume(obj, protocol, dtype):
    return np.from_dlpack(obj)
'''


def check_many_probes(tap, binary, workdir):
    """No fixed limit a user can reach: 300 probes, all named on the command line."""
    many = os.path.join(workdir, "many")
    os.mkdir(many)
    names = [f"lib_{i:03d}" for i in range(300)]
    for name in names:
        with open(os.path.join(many, name + ".py"), "w", encoding="utf-8") as handle:
            handle.write(MANY_PROBE)
    proc = taplib.run(binary, "list", "--json", "--probe-dir", many)
    listed = json.loads(proc.stdout)["libraries"] if proc.returncode == 0 else []
    ours = [lib for lib in listed if lib["name"].startswith("lib_")]
    tap.ok(len(ours) == 300 and all(lib.get("status") == "loaded" for lib in ours),
           f"list: 300 probes in one directory are all loaded ({len(ours)})", proc.stderr[-500:])
    out = os.path.join(workdir, "many.json")
    proc = taplib.run(binary, "--probe-dir", many, "--producer", ",".join(names), "--consumer",
                      "lib_000,lib_299", "--protocol", "dlpack", "--dtype", "float32",
                      "--layout", "flat", "-o", out, "-q")
    cases = case_ids(out) if os.path.exists(out) else {}
    ran = [k for k, v in cases.items() if v == "pass" and k.count(".") == 5]  # no variant
    tap.ok(proc.returncode == 0 and len(ran) == 600 and
           all(f"dlpack.{n}.lib_299.cpu.float32.flat" in cases for n in names),
           f"a run naming all 300 as producers runs every pair ({len(ran)} passes)",
           proc.stderr[-500:])


def check_ledger(tap, binary, probes, workdir):
    """The crash ledger (src/record/ic_ledger.h): a pair whose case crashed is isolated from
    the start of the next run in the same environment, which then loses no worker to it, and
    every case keeps its outcome."""
    cache = os.path.join(workdir, "cache")
    args = ["--probe-dir", probes, "--producer", "numpy", "--consumer", "badlib,numpy",
            "--protocol", "dlpack", "--dtype", "float64,float32,int16", "--layout",
            "contiguous,scalar", "-j", "1", "-q"]

    def run(name, cache_dir):
        out = os.path.join(workdir, name + ".json")
        proc = taplib.run(binary, *args, "-o", out, env={"INTEROPCHECK_LEDGER_DIR": cache_dir})
        if not os.path.exists(out):
            return proc, None, {}
        report = taplib.load_report(out)
        outcomes = {c["id"]: c["outcome"] for c in report["cases"]}
        return proc, report["run"]["timing"], outcomes

    proc, first, outcomes = run("ledger1", cache)
    ledgers = [os.path.join(cache, f) for f in os.listdir(cache)] if os.path.isdir(cache) else []
    lines = open(ledgers[0], encoding="utf-8").read().splitlines() if len(ledgers) == 1 else []
    crashed = sorted(i for i, o in outcomes.items() if o == "crash")
    tap.ok(first and first["restarts"] >= 1 and first["ledger_pairs"] == 0 and crashed,
           f"a first run loses a worker to numpy -> badlib ({len(crashed)} crashes, "
           f"{first and first['restarts']} restarts)", (first, proc.stderr[-1500:]))
    tap.ok(len(lines) == 1 and lines[0].startswith("dlpack\tnumpy\t") and
           lines[0].endswith("\tbadlib\t0.0.1"),
           "it writes the crash ledger: one line, the pair, the protocol, both versions", lines)

    proc, second, outcomes2 = run("ledger2", cache)
    pair_cases = [i for i in outcomes2 if i.startswith("dlpack.numpy.badlib.")]
    tap.ok(second and second["ledger_pairs"] == 1 and second["restarts"] == 0 and
           second["isolated_cases"] == len(pair_cases),
           f"the next run isolates the pair from its start: {second and second['isolated_cases']}"
           f" of its cases forked, no restart", second)
    tap.ok(outcomes2 == outcomes and outcomes,
           f"and every case keeps its outcome ({len(outcomes)} cases)",
           {i: (outcomes.get(i), outcomes2.get(i)) for i in set(outcomes) | set(outcomes2)
            if outcomes.get(i) != outcomes2.get(i)})

    with open(ledgers[0], "w", encoding="utf-8") as handle:
        handle.write(lines[0].replace("\t0.0.1", "\t0.0.0") + "\nnot a ledger line\n")
    proc, third, outcomes3 = run("ledger3", cache)
    rewritten = open(ledgers[0], encoding="utf-8").read().splitlines()
    tap.ok(third and third["ledger_pairs"] == 0 and third["restarts"] >= 1 and
           outcomes3 == outcomes and rewritten == lines,
           "a ledger line of another version of a library is not applied (it may have mended "
           "the crash); the crash is recorded again with the version now", (third, rewritten))

    proc, fourth, outcomes4 = run("ledger4", "")
    tap.ok(fourth and fourth["ledger_pairs"] == 0 and outcomes4 == outcomes,
           "INTEROPCHECK_LEDGER_DIR set and empty: no ledger", fourth)


def run_timed(binary, workdir, name, args, env):
    """Runs a -j1 selection without a crash ledger: (proc, run.timing, {case id: outcome}),
    the last two empty when no report was written."""
    out = os.path.join(workdir, name + ".json")
    proc = taplib.run(binary, *args, "-j", "1", "-q", "-o", out,
                      env={"INTEROPCHECK_LEDGER_DIR": "", **env})
    if not os.path.exists(out):
        return proc, {}, {}
    report = taplib.load_report(out)
    return proc, report["run"]["timing"], {c["id"]: c["outcome"] for c in report["cases"]}


def check_lean(tap, binary, probes, workdir):
    """With a large template (tests/probes/biglib.py holds 600 MiB), the isolated cases of a
    crashing pair cheap to import (numpy -> badlib) run in a lean worker, started afresh,
    importing only the pair, and forking each case's child from that: one such worker, and
    every case's outcome is that of a run whose workers all import afresh
    (INTEROPCHECK_COPIES=0, where no worker is lean)."""
    def run(name, env):
        return run_timed(binary, workdir, name,
                         ["--probe-dir", probes, "--producer", "numpy", "--consumer",
                          "badlib,biglib", "--protocol", "dlpack", "--dtype", "float32,float64",
                          "--layout", "contiguous,scalar"], env)

    proc, lean, outcomes = run("lean", {})
    crashes = sum(1 for o in outcomes.values() if o == "crash")
    tap.ok(lean and lean["workers_lean"] == 1 and lean["isolated_cases"] >= 1 and crashes >= 2,
           f"a crashing pair cheap to import beside a large template runs its isolated cases in "
           f"one lean worker ({crashes} crashes, {lean and lean['isolated_cases']} isolated)",
           (lean, proc.stderr[-800:]))
    proc, fresh, outcomes_fresh = run("lean-no-copies", {"INTEROPCHECK_COPIES": "0"})
    tap.ok(fresh and fresh["workers_lean"] == 0 and outcomes and outcomes_fresh == outcomes,
           f"and every case's outcome is that of workers importing afresh ({len(outcomes)} cases)",
           (fresh, {i: (outcomes.get(i), outcomes_fresh.get(i))
                    for i in set(outcomes) | set(outcomes_fresh)
                    if outcomes.get(i) != outcomes_fresh.get(i)}))


def check_lean_given_up(tap, binary, probes, workdir):
    """A lean worker that cannot make its imports within its budget is given up, charging no
    case: tests/probes/reimport_hangs.py imports quickly in discovery and hangs in any later
    process, so the lean worker started for its crashing pair hangs; the pair's cases then run
    in a copy of the template, with their own outcomes, and no lean worker is tried again."""
    imports = os.path.join(workdir, "lean-imports")
    os.mkdir(imports)
    out = os.path.join(workdir, "lean.json")
    proc = taplib.run(binary, "--probe-dir", probes, "--producer", "numpy", "--consumer",
                      "reimport_hangs,biglib", "--protocol", "dlpack", "--dtype",
                      "float32,float64", "--layout", "contiguous,flat", "--import-timeout",
                      "60", "-j", "1", "-o", out, "-q", timeout=120,
                      env={"IC_TEST_IMPORT_DIR": imports, "INTEROPCHECK_LEDGER_DIR": ""})
    report = taplib.load_report(out) if os.path.exists(out) else {"cases": [], "run": {}}
    timing = report["run"].get("timing", {})
    crashing = ("reimport_hangs", "float64")
    wrong = [(c["id"], c["outcome"]) for c in report["cases"]
             if c["outcome"] != ("crash" if (c["consumer"], c["dtype"]) == crashing else "pass")]
    tap.ok(report["cases"] and not wrong and len(os.listdir(imports)) == 2 and
           timing.get("workers_lean") == 1 and timing.get("workers_copied", 0) >= 1,
           f"a lean worker whose import hangs is given up: the {len(report['cases'])} cases "
           f"keep their outcomes (to reimport_hangs, float32 pass and float64 crash), none an "
           f"import error, "
           f"and no second lean worker is tried ({len(os.listdir(imports))} imports)",
           (wrong[:5], timing, proc.stderr[-800:]))


def check_prewarm(tap, binary, probes, workdir):
    """Where workers cannot be copies of the template (INTEROPCHECK_COPIES=0 here), -j2 has
    discovery start the second worker and have it import each library discovery has imported
    (src/run/README.md, prewarming): the run starts with two workers holding the libraries,
    and no case's outcome depends on which worker ran it. A library whose import kills the
    process sends discovery down its crash path, which moves libraries in the import order:
    the second worker is then waited for, and the run is the same. Where copies are made (the
    default) nothing imports beside discovery, and the second worker is a copy."""
    def run(name, producers, jobs, copies="0", consumers="numpy,copylib,computelib"):
        out = os.path.join(workdir, name + ".json")
        proc = taplib.run(binary, "--probe-dir", probes, "--producer", producers, "--consumer",
                          consumers, "--protocol", "dlpack,array_interface",
                          "--dtype", "float32,int16,float64", "-j", str(jobs), "-o", out, "-q",
                          env={"INTEROPCHECK_COPIES": copies})
        if not os.path.exists(out):
            return proc, None, {}
        report = taplib.load_report(out)
        return proc, report["run"]["timing"], {c["id"]: c["outcome"] for c in report["cases"]}

    proc1, one, outcomes1 = run("prewarm1", "numpy,copylib", 1)
    stages = (one or {}).get("stages_s", {})
    names = ["build", "export", "import", "describe", "checks", "compute", "write_through",
             "relay", "lifetime"]
    spent = sum(stages.values())
    tap.ok(list(stages) == names and stages["import"] > 0 and stages["build"] > 0 and
           0.5 * one["case_s"] <= spent <= one["case_s"] + 0.01,
           f"run.timing.stages_s splits the cases' time by stage ({spent:.3f} s of case_s "
           f"{one and one['case_s']:.3f} s; the bare import call {stages.get('import', 0):.3f} s)",
           one)
    warm = (one or {}).get("stages_warm_s", {})
    tap.ok(list(warm) == names and 0 < one["warm_cases"] < len(outcomes1) and
           all(warm[name] <= stages[name] for name in names) and warm["import"] > 0,
           f"run.timing.stages_warm_s sums the stages of the {one and one['warm_cases']} cases "
           f"whose worker had built that array and made that import before (numpy -> computelib "
           f"after copylib -> computelib): a part of stages_s", (one, len(outcomes1)))
    proc2, two, outcomes2 = run("prewarm2", "numpy,copylib", 2)
    tap.ok(one and one["prewarm_import_s"] == 0 and two and two["prewarm_import_s"] > 0 and
           two["workers_started"] >= 1 and two["import_s"] == 0,
           "-j2 prewarms the second worker during discovery: it imports nothing in the run "
           f"({two and two['prewarm_import_s']:.2f} s of imports beside discovery; -j1 none)",
           (one, two, proc2.stderr[-800:]))
    tap.ok(outcomes1 and outcomes2 == outcomes1 and "pass" in outcomes1.values(),
           f"and every case's outcome is -j1's ({len(outcomes1)} cases)",
           {i: (outcomes1.get(i), outcomes2.get(i)) for i in set(outcomes1) | set(outcomes2)
            if outcomes1.get(i) != outcomes2.get(i)})
    proc4, four, outcomes4 = run("prewarm4", "numpy,copylib", 2, copies="1")
    tap.ok(four and four["prewarm_import_s"] == 0 and four["workers_copied"] >= 1 and
           four["import_s"] == 0 and outcomes4 == outcomes1,
           "with copies, -j2 imports nothing beside discovery: its second worker is a copy of "
           "the template, which imports nothing in the run, and every outcome is -j1's", four)
    # Discovery's order: numpy (probes/), then tests/probes by name: writelib after forkless.
    proc5, five, _ = run("prewarm5", "numpy,forkless", 2, copies="1", consumers="numpy,writelib")
    tap.ok(five and five["prewarm_import_s"] > 0 and five["workers_copied"] == 0,
           "with copies on, a library that rules copies out (forkless says fork=False) starts "
           "the prewarming from the next import on: the second worker still imports beside "
           "discovery", (five, proc5.stderr[-800:]))
    proc3, three, outcomes3 = run("prewarm3", "numpy,crash_on_import,copylib", 2)
    same = {i: o for i, o in outcomes3.items() if i in outcomes1}
    tap.ok(proc3.returncode == 3 and "crash_on_import could not be tested" in proc3.stderr and
           three and same == outcomes1,
           "a library that kills its importer during a prewarmed discovery is reported (exit "
           "status 3) and changes no outcome of the others", (three, proc3.stderr[-800:]))


def check_prewarm_failure(tap, binary, probes, workdir):
    """A prewarming import that hangs (tests/probes/second_import_hangs.py: the second import
    of the library, the prewarming worker's) is no case's failure: that worker is given up after
    the import timeout, its cases run again, and every outcome is -j1's."""
    def run(name, jobs):
        imports = os.path.join(workdir, name + "-imports")
        os.mkdir(imports)
        out = os.path.join(workdir, name + ".json")
        proc = taplib.run(binary, "--probe-dir", probes, "--producer", "numpy,second_import_hangs",
                          "--consumer", "numpy,second_import_hangs", "--protocol", "dlpack",
                          "--dtype", "float32,int16", "--import-timeout", "3", "-j", str(jobs),
                          "-o", out, "-q", timeout=120,
                          env={"IC_TEST_IMPORT_DIR": imports, "INTEROPCHECK_COPIES": "0"})
        if not os.path.exists(out):
            return proc, {}, []
        report = taplib.load_report(out)
        return proc, {c["id"]: c["outcome"] for c in report["cases"]}, os.listdir(imports)

    proc1, outcomes1, _ = run("hang1", 1)
    proc2, outcomes2, imports2 = run("hang2", 2)
    # The hang happened: slot 1 imported (its worker then given up, and its slot's next worker
    # started afresh, whose import is quick), beside discovery's import in slot 0.
    hung = any(name.startswith("import-1-") for name in imports2)
    tap.ok(outcomes1 and outcomes2 == outcomes1 and "error" not in outcomes2.values() and hung,
           f"a prewarming import that hangs charges no case: every outcome is -j1's "
           f"({len(outcomes2)} cases, {len(imports2)} imports of the library, slot 1's hung)",
           ({i: (outcomes1.get(i), outcomes2.get(i)) for i in set(outcomes1) | set(outcomes2)
             if outcomes1.get(i) != outcomes2.get(i)}, proc2.stderr[-800:]))


def check_no_fork(tap, binary, probes, workdir):
    """A library whose probe says a fork cannot use it ("fork": false, as JAX's with a GPU
    plugin, whose threads a forked process lacks): once a case of its pair crashed, the pair's later cases run in a
    worker, not in the forked child a worker serves isolated cases from, where they would wait
    forever and read as the library's timeouts. tests/probes/forkless.py crashes on int16 and
    hangs in any process but the one that ran its load()."""
    args = ["--probe-dir", probes, "--producer", "numpy", "--consumer", "forkless",
            "--protocol", "dlpack", "--dtype", "float32,int16", "--layout", "contiguous,scalar",
            "-j", "1", "--timeout", "2", "-q"]

    def run(name, says):
        out = os.path.join(workdir, name + ".json")
        env = {"INTEROPCHECK_LEDGER_DIR": "", "IC_TEST_FORKLESS_SAYS": says}
        proc = taplib.run(binary, *args, "-o", out, env=env)
        report = taplib.load_report(out) if os.path.exists(out) else {}
        outcomes = {c["id"]: c["outcome"] for c in report.get("cases", [])}
        return proc, report.get("run", {}).get("timing", {}), outcomes

    pair = "dlpack.numpy.forkless.cpu."
    want = {pair + "int16.contiguous": "crash", pair + "int16.scalar": "crash",
            pair + "float32.contiguous": "pass", pair + "float32.scalar": "pass"}
    proc, timing, outcomes = run("forkless", "")
    tap.ok(outcomes == want and timing.get("isolated_cases") == 0,
           "a pair of a library that says fork=False runs its cases after a crash in a worker: "
           "they pass, and none is forked", (outcomes, timing, proc.stderr[-800:]))
    proc, timing, outcomes = run("forkless-says-fork", "fork")
    timeouts = [i for i, o in outcomes.items() if o == "timeout"]
    tap.ok(timeouts and timing.get("isolated_cases", 0) > 0,
           f"the control: the same library saying fork=True has its isolated cases forked, and "
           f"they hang ({len(timeouts)} timeouts)", (outcomes, timing))


def check_copies(tap, binary, probes, workdir):
    """After discovery the supervisor keeps a copy of discovery's worker, which holds every
    import and runs nothing (src/run/README.md, copies): a worker started later, after a crash,
    is a copy of it, importing nothing, and every case keeps the outcome it has in a run whose
    workers import their libraries themselves (INTEROPCHECK_COPIES=0). A library whose probe
    says fork=False is never copied: then every worker imports."""
    def run(name, consumers, env):
        return run_timed(binary, workdir, name,
                         ["--probe-dir", probes, "--producer", "numpy", "--consumer", consumers,
                          "--protocol", "dlpack,array_interface", "--dtype",
                          "float64,float32,int16", "--layout", "contiguous,scalar"], env)

    proc, copied, outcomes = run("copies", "badlib,numpy", {})
    crashes = sum(1 for o in outcomes.values() if o == "crash")
    tap.ok(copied and copied["restarts"] >= 1 and
           copied["workers_copied"] == copied["workers_started"] and
           copied["reimport_s"] == 0 and crashes >= 1,
           f"a worker started after a crash is a copy holding the imports "
           f"({copied.get('restarts')} restarts, {copied.get('workers_copied')} copies, "
           f"{copied.get('reimport_s')} s imported again)", (copied, proc.stderr[-1500:]))
    proc, fresh, outcomes_fresh = run("no-copies", "badlib,numpy", {"INTEROPCHECK_COPIES": "0"})
    tap.ok(fresh and fresh["workers_copied"] == 0 and fresh["restarts"] >= 1 and
           outcomes_fresh == outcomes and outcomes,
           f"INTEROPCHECK_COPIES=0: workers import afresh, and every case's outcome is the same "
           f"({len(outcomes)} cases)",
           (fresh, {i: (outcomes.get(i), outcomes_fresh.get(i))
                    for i in set(outcomes) | set(outcomes_fresh)
                    if outcomes.get(i) != outcomes_fresh.get(i)}))
    proc, forkless, _ = run("copies-forkless", "badlib,forkless", {})
    tap.ok(forkless and forkless["restarts"] >= 1 and forkless["workers_copied"] == 0,
           "with a library that says fork=False loaded, no worker is a copy "
           f"({forkless.get('restarts')} restarts)", forkless)


def check_early(tap, binary, probes, workdir):
    """With two workers or more, the pairs of the libraries discovery has imported run while it
    imports the next (src/run/README.md, early cases): tests/probes/slowimport.py takes 1.5 s to
    import, after numpy and badlib, whose cases run meanwhile in a copy of discovery's worker.
    A crash there (numpy -> badlib, float64) ends that copy and isolates the pair for the run;
    a case that hangs there when discovery ends (complex64) is given up and runs again in the
    run. Either way every case keeps the outcome it has at -j1, where nothing runs early, and
    nothing runs early where workers cannot be copies (INTEROPCHECK_COPIES=0)."""
    def run(name, dtypes, jobs, env=None):
        out = os.path.join(workdir, name + ".json")
        proc = taplib.run(binary, "--probe-dir", probes, "--producer", "numpy,badlib,slowimport",
                          "--consumer", "numpy,badlib,slowimport", "--protocol", "dlpack",
                          "--dtype", dtypes, "--layout", "contiguous,scalar", "--timeout", "2",
                          "-j", str(jobs), "-q", "-o", out, timeout=120,
                          env={"INTEROPCHECK_LEDGER_DIR": "", **(env or {})})
        if not os.path.exists(out):
            return proc, {}, {}
        report = taplib.load_report(out)
        return proc, report["run"]["timing"], {c["id"]: c["outcome"] for c in report["cases"]}

    def differing(a, b):
        return {i: (a.get(i), b.get(i)) for i in set(a) | set(b) if a.get(i) != b.get(i)}

    at_j1 = {}
    for dtypes, what, outcome in (("float32,float64", "a crash", "crash"),
                                  ("float32,complex64", "a case hanging", "timeout")):
        name = outcome + "-early"
        _, alone, at_j1[dtypes] = run(name + "-j1", dtypes, 1)
        proc, early, outcomes = run(name + "-j2", dtypes, 2)
        badlib = [o for i, o in outcomes.items() if i.startswith("dlpack.numpy.badlib.")]
        tap.ok(alone.get("early_cases") == 0 and early.get("early_cases", 0) >= 1 and
               outcome in badlib,
               f"-j2 runs {early.get('early_cases')} cases while slowimport imports, {what} "
               f"among them (-j1: {alone.get('early_cases')})", (early, proc.stderr[-800:]))
        tap.ok(at_j1[dtypes] and outcomes == at_j1[dtypes] and "pass" in outcomes.values(),
               f"and with {what} there, every case's outcome is -j1's ({len(outcomes)} cases)",
               differing(at_j1[dtypes], outcomes))
    proc, fresh, outcomes = run("early-no-copies", "float32,float64", 2,
                                {"INTEROPCHECK_COPIES": "0"})
    tap.ok(fresh.get("early_cases") == 0 and outcomes == at_j1["float32,float64"],
           "where workers cannot be copies (INTEROPCHECK_COPIES=0) nothing runs early, and "
           "every outcome is the same", (fresh, differing(at_j1["float32,float64"], outcomes)))


def check_early_compiles(tap, binary, probes, workdir):
    """A consumer whose probe says it compiles for each new shape and dtype (tests/probes/
    jitlib.py, "compiles") has no case run while discovery imports: every copy of discovery's
    worker that ran its cases would compile them again. Its imports are logged with their time,
    and slowimport's, the last, logs when it ends: with the flag no import of jitlib's comes
    before that, while numpy's cases still run early; without it (IC_TEST_JIT_COMPILES=0) some
    do. Either way every outcome is the same."""
    def run(name, compiles):
        out = os.path.join(workdir, name + ".json")
        log = os.path.join(workdir, name + ".log")
        proc = taplib.run(binary, "--probe-dir", probes, "--producer", "numpy,jitlib,slowimport",
                          "--consumer", "numpy,jitlib,slowimport", "--protocol", "dlpack",
                          "--dtype", "float32,float64,complex64", "--layout", "contiguous,scalar",
                          "-j", "2", "-q", "-o", out, timeout=120,
                          env={"INTEROPCHECK_LEDGER_DIR": "", "IC_TEST_JIT_LOG": log,
                               "IC_TEST_JIT_COMPILES": "1" if compiles else "0"})
        if not os.path.exists(out) or not os.path.exists(log):
            return proc, {}, {}, 0, 0
        report = taplib.load_report(out)
        with open(log) as f:
            lines = [line.split() for line in f]
        loaded = min((float(t) for what, t in lines if what == "loaded"), default=0.0)
        before = sum(what == "import" and float(t) < loaded for what, t in lines)
        imports = sum(what == "import" for what, _ in lines)
        return (proc, report["run"]["timing"], {c["id"]: c["outcome"] for c in report["cases"]},
                before, imports)

    proc, timing, flagged, before, imports = run("compiles", True)
    tap.ok(loaded_ok := (imports > 0 and before == 0 and timing.get("early_cases", 0) >= 1),
           f"a consumer that compiles runs no case early: {before} of its {imports} imports "
           f"before discovery ended, {timing.get('early_cases')} other cases early",
           (timing, proc.stderr[-800:]))
    proc, timing, plain, before, imports = run("compiles-not-said", False)
    tap.ok(before >= 1 and imports > 0,
           f"the same library not saying so has {before} of its {imports} imports run early",
           (timing, proc.stderr[-800:]))
    tap.ok(loaded_ok and flagged and flagged == plain and "pass" in flagged.values(),
           f"and every outcome is the same ({len(flagged)} cases)",
           {i: (flagged.get(i), plain.get(i)) for i in set(flagged) | set(plain)
            if flagged.get(i) != plain.get(i)})


def read_events(log):
    """The [what, pid] lines a test probe logged (_testkit.log_event); none without a log."""
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [line.split() for line in f]


def check_warm(tap, binary, probes, workdir):
    """A probe's warm() (tests/probes/warmlib.py) runs right after its load(), once in each
    process that loads it, and in no copy of such a process: cases run in processes that never
    logged a load or a warm (discovery's worker's copies). With a warm() that raises, every
    outcome is the same. slowimport keeps discovery going while copies run cases early.
    Which processes run warmlib's cases is the scheduler's choice (discovery's worker may take
    them all, as it did once in CI): the run is made again, up to three times, until a copy ran
    some, and the checks are of that run."""
    def run(name, raises):
        out = os.path.join(workdir, name + ".json")
        log = os.path.join(workdir, name + ".log")
        proc = taplib.run(binary, "--probe-dir", probes, "--producer", "numpy,warmlib,slowimport",
                          "--consumer", "numpy,warmlib,slowimport", "--protocol", "dlpack",
                          "-j", "2", "-q", "-o", out, timeout=120,
                          env={"INTEROPCHECK_LEDGER_DIR": "", "IC_TEST_WARM_LOG": log,
                               "IC_TEST_WARM_RAISE": "1" if raises else "0"})
        lines = read_events(log)
        outcomes = {}
        if os.path.exists(out):
            outcomes = {c["id"]: c["outcome"] for c in taplib.load_report(out)["cases"]}
        return proc, lines, outcomes

    for attempt in range(3):
        proc, lines, plain = run(f"warm{attempt}", False)
        loaders = [pid for what, pid in lines if what == "load"]
        copies = {pid for what, pid in lines if what == "build"} - set(loaders)
        if copies:
            break
    warmers = [pid for what, pid in lines if what == "warm"]
    # each process's own lines: its load, then its warm, before any case it builds
    order = {pid: [what for what, p in lines if p == pid and what != "build"] for pid in loaders}
    tap.ok(loaders and sorted(loaders) == sorted(warmers) and len(set(loaders)) == len(loaders)
           and all(seq == ["load", "warm"] for seq in order.values()),
           f"warm() runs once, after load(), in each of the {len(set(loaders))} processes that "
           "load the probe", (lines[:40], proc.stderr[-800:]))
    tap.ok(copies and "pass" in plain.values(),
           f"and in none of the {len(copies)} copies that ran its cases (run {attempt + 1})",
           sorted(collections.Counter(tuple(line) for line in lines).items()))
    proc, lines, raised = run("warm-raises", True)
    tap.ok(any(what == "warm" for what, _ in lines) and plain and raised == plain,
           f"a warm() that raises changes no outcome ({len(plain)} cases)",
           ({i: (plain.get(i), raised.get(i)) for i in set(plain) | set(raised)
             if plain.get(i) != raised.get(i)}, proc.stderr[-800:]))


def check_signal_taken(tap, binary, probes, workdir):
    """A library that takes SIGSEGV's handler from faulthandler in one case (sigtaker, as paddle
    does after its import) costs the next case no Python stack: the worker installs
    faulthandler's handlers again before each case where they changed, so the crash of a later
    case in the same process is charged to the side at work, the consumer."""
    out = os.path.join(workdir, "sigtaker.json")
    log = os.path.join(workdir, "sigtaker.log")
    proc = taplib.run(binary, "--probe-dir", probes, "--producer", "numpy", "--consumer",
                      "sigtaker", "--protocol", "dlpack", "-j", "1", "-q", "-o", out,
                      timeout=120, env={"INTEROPCHECK_LEDGER_DIR": "", "IC_TEST_SIGTAKER_LOG": log})
    events = read_events(log)
    cases = {}
    if os.path.exists(out):
        cases = {c["id"]: c for c in taplib.load_report(out)["cases"]}
    crash = cases.get("dlpack.numpy.sigtaker.cpu.float64.contiguous", {})
    # the crash came in a process that had had its handler taken in an earlier case
    crashed_in = [pid for what, pid in events if what == "crash"]
    taken_first = bool(crashed_in) and any(
        what == "take" and pid == crashed_in[0] for what, pid in events[:events.index(
            ["crash", crashed_in[0]])])
    tap.ok(taken_first and crash.get("outcome") == "crash" and crash.get("side") == "consumer"
           and "consume() of" in crash.get("diagnostic", ""),
           "a case after one whose library took SIGSEGV's handler crashes with its Python stack: "
           "charged to the consumer",
           (events, {k: crash.get(k) for k in ("outcome", "side", "diagnostic")},
            proc.stderr[-800:]))


def check_preloaded(tap, binary, probes, workdir):
    """A library whose module an earlier import brought in is loaded next, ahead of catalog
    order (ic_discover_pick): preload_a's import leaves preload_z's module in sys.modules, so
    preload_z is loaded before preload_m. Without preload_a, catalog order stands. Either way
    every case's outcome is the same."""
    def run(name, libs):
        out = os.path.join(workdir, name + ".json")
        proc = taplib.run(binary, "--probe-dir", probes, "--producer", libs, "--consumer", libs,
                          "-q", "-o", out, timeout=120, env={"INTEROPCHECK_LEDGER_DIR": ""})
        if not os.path.exists(out):
            return proc, {}, {}
        report = taplib.load_report(out)
        versions = {lib["name"]: lib.get("version") for lib in report["environment"]["libraries"]}
        return proc, versions, {c["id"]: c["outcome"] for c in report["cases"]}

    proc, versions, outcomes = run("preloaded", "preload_a,preload_m,preload_z")
    passed = sum(o == "pass" for o in outcomes.values())
    tap.ok(versions.get("preload_z") == "before-m" and passed >= 9 and
           set(outcomes.values()) <= {"pass", "unsupported"},
           "a library an earlier import brought in is loaded next, ahead of catalog order "
           f"(preload_z {versions.get('preload_z')}; {passed} cases pass, none fails)",
           ({k: versions.get(k) for k in ("preload_a", "preload_m", "preload_z")},
            proc.stderr[-800:]))
    proc, versions, outcomes = run("catalog-order", "preload_m,preload_z")
    passed = sum(o == "pass" for o in outcomes.values())
    tap.ok(versions.get("preload_z") == "after-m" and passed >= 4 and
           set(outcomes.values()) <= {"pass", "unsupported"},
           f"without it, catalog order stands (preload_z {versions.get('preload_z')}; "
           f"{passed} cases pass)",
           ({k: versions.get(k) for k in ("preload_m", "preload_z")}, proc.stderr[-800:]))


def check_defer_alike(tap, binary, probes, workdir):
    """Once a case of an isolated pair crashed, the pair's cases of that dtype or layout not
    handed out yet run after its others (ic_defer_alike): numpy -> badlib dies on every float64
    case, and after the first of those deaths, the stream holds the pair's other cases before
    the float64 ones. Every outcome stays what the dtype decides. The pair has more cases left
    after that death (18) than a worker holds (sixteen), so some are still in the plan: they
    are ordered too (before, they came after the alike ones the worker held)."""
    out = os.path.join(workdir, "alike.json")
    proc = taplib.run(binary, "--probe-dir", probes, "--producer", "numpy", "--consumer", "badlib",
                      "--protocol", "dlpack", "--dtype", "float32,float64,int16,uint8", "--layout",
                      "contiguous,flat,scalar,strided,reversed,offset", "-j", "1", "-q", "-o", out,
                      env={"INTEROPCHECK_LEDGER_DIR": ""})
    lines, stream = [], out[:-len(".json")] + ".jsonl"
    if os.path.exists(stream):
        with open(stream, encoding="utf-8") as handle:
            lines = [json.loads(line) for line in handle if line.strip()]
    ran = [c for c in lines if c.get("type") == "case" and c.get("consumer") == "badlib" and
           c.get("outcome") in ("pass", "crash")]
    first = next((i for i, c in enumerate(ran) if c["outcome"] == "crash"), None)
    after = ran[first + 1:] if first is not None else []
    alike = [c["dtype"] == ran[first]["dtype"] or c["layout"] == ran[first]["layout"]
             for c in after] if first is not None else []
    tap.ok(first is not None and alike and alike == sorted(alike) and True in alike and
           False in alike,
           "after a pair's first crash, its cases of that dtype or layout run after its others "
           f"({alike.count(False)} others, then {alike.count(True)} alike)",
           ([(c["dtype"], c["layout"], c["variant"], c["outcome"]) for c in ran],
            proc.stderr[-800:]))
    wrong = [c["id"] for c in ran if (c["outcome"] == "crash") != (c["dtype"] == "float64")]
    tap.ok(ran and not wrong, f"and every outcome is the dtype's ({len(ran)} cases)", wrong)


def main(tap, args):
    binary = args[0]
    probes = os.path.join(taplib.source_root(), "tests", "probes")
    with tempfile.TemporaryDirectory() as workdir:
        check_hostile_channel(tap, binary, probes, workdir)
        check_interrupt(tap, binary, probes, workdir)
        check_outputs(tap, binary, probes, workdir)
        check_many_probes(tap, binary, workdir)
        check_ledger(tap, binary, probes, workdir)
        check_no_fork(tap, binary, probes, workdir)
        check_copies(tap, binary, probes, workdir)
        check_lean(tap, binary, probes, workdir)
        check_lean_given_up(tap, binary, probes, workdir)
        check_prewarm(tap, binary, probes, workdir)
        check_prewarm_failure(tap, binary, probes, workdir)
        check_early(tap, binary, probes, workdir)
        check_early_compiles(tap, binary, probes, workdir)
        check_warm(tap, binary, probes, workdir)
        check_signal_taken(tap, binary, probes, workdir)
        check_preloaded(tap, binary, probes, workdir)
        check_defer_alike(tap, binary, probes, workdir)


if __name__ == "__main__":
    taplib.main(main)
