"""Benchmark of how `interopcheck --all` scales with its workers: -j1 against -jN (N: the
cores this process may use, 2 on the machines the targets were set on), run in turn.

Target (issue 12, point 5): -j2 at least 1.7 times as fast as -j1 on 2 cores.

Each pair runs `--all -q -j1`, then `--all -q -jN`, with the same Python and probes, each with a
crash ledger folder of its own that a first, untimed run of the same -j fills, so that both
sides isolate the pairs that crash from their start (as a user's second run does). Runs taken
in turn share whatever the machine is doing meanwhile; their wall times still move by a few
tenths of a second from pair to pair, so every pair is printed, and the median of the ratios.
For each run the report's phases (run.timing) say where the difference lies: discovery (the
imports, and with -jN the cases run meanwhile), the cases' wall time, and the rest (planning,
the reports, stopping), with the workers' summed case time and their CPU time.

Usage: bench_jobs.py INTEROPCHECK [--python PY] [--pairs N] [--jobs N]
Prints one line per run, the ratio of each pair, and a JSON line for dashboards.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run_all(interopcheck, python, jobs, out, ledger_dir):
    """One `--all` run: (wall seconds, CPU seconds of the process tree, the report's timing)."""
    command = [interopcheck, "--all", "-q", "-j", str(jobs), "--python", python, "-o", out]
    env = dict(os.environ, INTEROPCHECK_LEDGER_DIR=ledger_dir)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # exit status 1 is a run that found failures, which --all does: only a report counts
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(out, encoding="utf-8") as handle:
        report = json.load(handle)
    os.unlink(out)
    return wall, cpu, report["run"]["timing"], report["summary"]["total"]


def describe(jobs, wall, cpu, timing):
    rest = wall - timing["discovery_s"] - timing["cases_wall_s"]
    return (f"  -j{jobs}: {wall:6.2f} s wall, {cpu:6.2f} s CPU; discovery {timing['discovery_s']:.2f} s "
            f"({timing.get('early_cases', 0)} cases meanwhile), cases {timing['cases_wall_s']:.2f} s, "
            f"the rest {rest:.2f} s; workers' case time {timing['case_s']:.2f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("interopcheck")
    parser.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    if args.jobs < 2:
        print("bench_jobs: this process may use one core: nothing to scale to", file=sys.stderr)
        return 77

    ratios, walls = [], {1: [], args.jobs: []}
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "all.json")
        ledgers = {j: os.path.join(workdir, f"ledger-j{j}") for j in (1, args.jobs)}
        for jobs, ledger in ledgers.items():  # untimed: fills each side's crash ledger
            run_all(args.interopcheck, args.python, jobs, out, ledger)
        cases = None
        for pair in range(1, args.pairs + 1):
            print(f"pair {pair}:")
            times = {}
            for jobs in (1, args.jobs):
                wall, cpu, timing, cases = run_all(args.interopcheck, args.python, jobs, out,
                                                   ledgers[jobs])
                times[jobs] = wall
                walls[jobs].append(wall)
                print(describe(jobs, wall, cpu, timing), flush=True)
            ratios.append(times[1] / times[args.jobs])
            print(f"  ratio -j1 / -j{args.jobs}: {ratios[-1]:.2f}", flush=True)

    median = statistics.median(ratios)
    print(f"{cases} cases; -j1 / -j{args.jobs} over {len(ratios)} pairs: "
          + ", ".join(f"{r:.2f}" for r in ratios) + f" (median {median:.2f}; target 1.7 on 2 cores)")
    print(json.dumps({"jobs": args.jobs, "cases": cases, "ratios": ratios, "median_ratio": median,
                      "wall_j1_s": walls[1], f"wall_j{args.jobs}_s": walls[args.jobs]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
