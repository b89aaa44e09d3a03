"""Benchmark of interopcheck against what users would write instead: a pytest suite and a plain
one-process Python loop doing the same cases and checks (harness_cases.py, test_harness.py).

In one run, on one case selection (the harness's libraries, protocols and layouts, the CPU):
  (a) interopcheck on the selection, wall time (it writes the report the others replay);
  (b) pytest over the report's cases the harness can do the same way, wall time;
  (c) the plain loop over the same cases in one fresh interpreter, wall time.
Each side starts a fresh process and imports its libraries itself; before them, one untimed
import of the libraries warms the page cache so that no side pays for the disk.

Usage: bench_harness.py INTEROPCHECK [--python PY] [--libraries A,B] [--jobs N]
Prints each wall time, the ratios pytest / interopcheck and loop / interopcheck, how many
verdicts agree, and a JSON line for dashboards. interopcheck runs more cases than the harness
replays (variants, the value-view layouts' refusals): both counts are printed.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from bench_matrix import LAYOUTS, import_floor
from harness_cases import LIBRARIES, PROTOCOLS, VALUE_VIEW_LAYOUTS

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def timed(command, **kwargs):
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, **kwargs)
    return time.perf_counter() - start, done


def pytest_counts(output):
    """pytest's closing line ('15701 passed, 1019 xfailed, 15 warnings in 13.67s') as a dict."""
    last = output.strip().splitlines()[-1] if output.strip() else ""
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", last) if word != "warnings"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("interopcheck")
    parser.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    parser.add_argument("--jobs", type=int, default=0)
    args = parser.parse_args()
    libraries = args.libraries
    layouts = ",".join(name for name in LAYOUTS if name not in VALUE_VIEW_LAYOUTS)
    floor = import_floor(args.python, os.path.join(ROOT, "probes"), libraries.split(","), runs=1)

    with tempfile.TemporaryDirectory() as workdir:
        report_path = os.path.join(workdir, "selection.json")
        command = [args.interopcheck, "--producer", libraries, "--consumer", libraries,
                   "--protocol", ",".join(PROTOCOLS), "--layout", layouts, "--device", "cpu",
                   "-o", report_path, "-q", "--python", args.python]
        if args.jobs:
            command += ["-j", str(args.jobs)]
        tool_wall, done = timed(command)
        if done.returncode not in (0, 1):  # 1: some case failed, which is what it reports
            sys.exit(f"interopcheck exited {done.returncode}:\n{done.stdout}{done.stderr}")
        with open(report_path, encoding="utf-8") as handle:
            report = json.load(handle)

        env = dict(os.environ, HARNESS_REPORT=report_path, HARNESS_LIBRARIES=libraries)
        pytest_wall, done = timed([args.python, "-m", "pytest", "bench/test_harness.py", "-q",
                                   "-p", "no:cacheprovider"], env=env)
        counts = pytest_counts(done.stdout)
        if done.returncode not in (0, 1) or not counts:
            sys.exit(f"pytest exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr}")

        loop_wall, done = timed([args.python, "bench/harness_cases.py", report_path,
                                 "--libraries", libraries, "--json"])
        if done.returncode not in (0, 1):
            sys.exit(f"the loop exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr}")
        loop = json.loads(done.stdout.strip().splitlines()[-1])

    timing = report["run"].get("timing") or {}
    print(f"libraries: {libraries}; protocols: {', '.join(PROTOCOLS)}; layouts: {layouts}")
    print(f"import floor (one fresh interpreter importing them): {floor:.2f} s")
    print(f"(a) interopcheck: {tool_wall:.2f} s wall, {report['summary']['total']} cases, "
          f"{report['run']['jobs']} workers")
    print(f"(b) pytest:       {pytest_wall:.2f} s wall, {loop['cases']} of those cases: "
          + ", ".join(f"{n} {word}" for word, n in counts.items()))
    print(f"(c) plain loop:   {loop_wall:.2f} s wall, the same {loop['cases']} cases")
    print(f"ratio pytest / interopcheck: {pytest_wall / tool_wall:.2f}")
    print(f"ratio loop / interopcheck:   {loop_wall / tool_wall:.2f}")
    print(f"verdicts: {loop['agree']} agree, {loop['beyond']} differ where interopcheck checks "
          f"what the harness does not, {loop['disagree']} disagree")
    for why, n in sorted(loop["left_out"].items()):
        print(f"  not replayed: {n} cases, {why}")
    print(json.dumps({"import_floor_s": floor, "interopcheck_wall_s": tool_wall,
                      "pytest_wall_s": pytest_wall, "loop_wall_s": loop_wall,
                      "ratio_pytest_to_interopcheck": pytest_wall / tool_wall,
                      "ratio_loop_to_interopcheck": loop_wall / tool_wall,
                      "interopcheck_cases": report["summary"]["total"],
                      "harness_cases": loop["cases"], "agree": loop["agree"],
                      "beyond": loop["beyond"], "disagree": loop["disagree"],
                      "pytest": counts, "jobs": report["run"]["jobs"], "timing": timing}))
    return 1 if loop["disagree"] or counts.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
