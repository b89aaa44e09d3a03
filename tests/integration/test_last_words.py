"""Integration test: a crash's diagnostic quotes the case's own last output, and its side
comes from the case's own Python stack (tests/probes/lastwords.py).

A worker's output is one pipe for its imports and every case it ran, and the copies it forks
for a crashing pair write to it too: what came before the case (an import's greeting, the
Python stack of the copy that died on the case before) is not the case's.
Usage: test_last_words.py INTEROPCHECK_BINARY
"""
import os
import resource
import subprocess
import tempfile

import taplib


def allow_cores():
    """In the child: core files allowed, as on a machine set up for debugging."""
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


def core_pattern():
    try:
        with open("/proc/sys/kernel/core_pattern") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def main(tap, args):
    binary = os.path.abspath(args[0])  # the run has a folder of its own as its cwd
    probes = os.path.join(taplib.source_root(), "tests", "probes")
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "words.json")
        # Run where core files are allowed, in a folder of its own: the workers write none
        env = dict(os.environ, INTEROPCHECK_LEDGER_DIR="")
        env.pop("INTEROPCHECK_PROBE_PATH", None)
        proc = subprocess.run([binary, "--probe-dir", probes, "--producer", "numpy",
                               "--consumer", "lastwords", "--protocol", "dlpack", "--layout",
                               "contiguous", "--dtype", "bool,float32,int8,int16,int32", "-j", "1",
                               "-o", out], capture_output=True, text=True, env=env,
                              cwd=workdir, preexec_fn=allow_cores, timeout=600)
        tap.ok(proc.returncode == 1, "exit status 1: cases crashed",
               f"status {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        pattern = core_pattern()
        if pattern.startswith("/") or pattern.startswith("|") or not pattern:
            tap.skip(f"core files go elsewhere here (core_pattern {pattern!r})")
        else:
            cores = [name for name in os.listdir(workdir) if name.startswith("core")]
            tap.ok(not cores, "three crashes wrote no core file (a worker holding TensorFlow "
                   "and torch maps gigabytes)", cores)
        report = taplib.load_valid_report(tap, out)
        cases = taplib.cases_by_id(report)
        case = {d: cases.get(f"dlpack.numpy.lastwords.cpu.{d}.contiguous", {})
                for d in ("bool", "float32", "int8", "int16", "int32")}
        text = {d: c.get("diagnostic", "") for d, c in case.items()}
        tap.ok(case["float32"].get("outcome") == "pass" and case["bool"].get("outcome") == "pass",
               "the correct imports pass", (case["float32"], case["bool"]))
        tap.ok(all(case[d].get("outcome") == "crash" for d in ("int8", "int16", "int32")),
               "the three that die crash", [case[d].get("outcome") for d in case])
        tap.ok(not any("greeting" in t for t in text.values()),
               "no crash quotes what the library wrote when it was imported", text)
        tap.ok(case["int8"].get("side") == "consumer" and
               "last output: lastwords: cannot take this import" in text["int8"] and
               "Fatal Python error" not in text["int8"],
               "a segfault quotes the line the case wrote before it, not the Python stack, "
               "though the supervisor (stopped by the case before) read them after that case's "
               "end", case["int8"])
        tap.ok(case["int16"].get("side") == "consumer" and
               "Check failed: IsAligned() ptr = 0x55c76f2b7145" in text["int16"] and
               "Check failure stack trace" not in text["int16"] and "@     0x" not in text["int16"],
               "a failed CHECK quotes its message, without the backtrace absl writes after it",
               case["int16"])
        # int32 runs in a forked copy right after int16's died in another: int16's Python
        # stack is in the same output, and must not be taken for this case's
        tap.ok(case["int32"].get("side") == "both" and "innermost" not in text["int32"] and
               "consume()" not in text["int32"] and "Check failed" not in text["int32"],
               "a death by SIGKILL, which leaves no Python stack, names no call and is charged "
               "to both sides: the case before's stack does not speak for it", case["int32"])

if __name__ == "__main__":
    taplib.main(main)
