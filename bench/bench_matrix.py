"""Benchmark of interopcheck on the default library set: what the tool costs beyond the work it
cannot avoid.

1. Import floor: a fresh interpreter loads every probe (importing its library) once, in the
   order interopcheck's workers use; the median of a few runs. No tool can test these
   libraries in less time than it takes to import them.
   Against it: the wall time of `interopcheck --all`. Ratio 1 = wall time / import floor.
2. Case cost: the median duration of a case interopcheck ran (build the arrays, export through
   the proxy, import, describe, check everything in C, collect), against the median of the bare
   exchange call it verifies (the consumer's import of the producer's export, nothing else),
   timed in one interpreter for the same cases. Ratio 2 = case median / bare-call median.
   The same in the worker, on warm caches: the run's cases' time summed by stage
   (run.timing.stages_s, measured by the worker around each step of a case), against the
   stage that is the bare exchange call (`import`: the consumer's import through the proxy).
   Printed with each stage's share, and the ratio of our checks in C alone to that call.

Usage: bench_matrix.py INTEROPCHECK [--python PY] [--jobs N] [--samples N] [--device NAME]
                       [--report FILE] [--ledger]
The run has no crash ledger (src/record/ic_ledger.h): it is the first run in its environment.
With --ledger, `--all` runs twice with one new ledger folder, and both runs are shown side by
side: the first, which writes the ledger, and the second, which isolates the pairs that
crashed in the first from its start (ratio 1 is then given for each).
With --device (cpu, cuda), the run is `--all --device NAME` and the bare calls build their
arrays on that device; the import floor is then the libraries that have cases on it. With
--report, an existing report (.json or .json.gz) is used instead of a new run (the wall time is
then the report's duration).
3. Memory: the supervisor's peak resident memory (VmHWM of the interopcheck process itself,
   not its workers), read from /proc every 20 ms while `--all` runs (a peak in the last 20 ms
   before it exits would be missed; VmHWM only grows, so any later read sees an earlier peak).
   Target: 64 MiB, whatever the number of cases.
4. CPU: the user and system time of the run (interopcheck and every process it reaped, its
   workers' own children with them), against its wall time on the cores it may use: where
   they are all busy, the wall time is the CPU time spread over them, and a run gets shorter
   only by spending less CPU.
Prints both ratios, the peak and the CPU time, and a JSON line for dashboards.
"""
import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Both timing scripts load probes as the driver does: _probekit first, each probe by path.
LOAD_PROBES = r"""
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
load("_probekit", f"{probes_dir}/_probekit.py")
"""

# Runs in a fresh interpreter: loads the probes in the order given, prints seconds as JSON.
IMPORT_FLOOR = r"""
import importlib.util, json, sys, time
probes_dir, names = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
""" + LOAD_PROBES + r"""for name in names:
    load(f"interopcheck_probe_{name}", f"{probes_dir}/{name}.py").load()
print("BENCH_RESULT", json.dumps(time.perf_counter() - start), flush=True)
"""

# Runs in a fresh interpreter: times the bare exchange of each case given on stdin.
BARE_CALLS = r"""
import importlib.util, json, sys, time, gc
probes_dir = sys.argv[1]
cases = json.load(sys.stdin)
probes = {}
""" + LOAD_PROBES + r"""def probe(name):
    if name not in probes:
        probes[name] = load(f"interopcheck_probe_{name}", f"{probes_dir}/{name}.py")
        probes[name].load()
    return probes[name]
layouts = json.loads(sys.argv[2])
results = []
for case in cases:
    producer, consumer = probe(case["producer"]), probe(case["consumer"])
    base_len, ops = layouts[case["layout"]]
    itemsize = sys.modules["_probekit"].ITEMSIZE[case["dtype"]]
    data = bytes(base_len * itemsize)
    on = {} if case["device"] == "cpu" else {"device": case["device"]}
    x = producer.build(data, case["dtype"], [tuple(op) for op in ops], **on)
    export = getattr(producer, "export", lambda a, p: a)
    best = None
    for _ in range(5):
        t0 = time.perf_counter()
        try:
            y = consumer.consume(export(x, case["protocol"]), case["protocol"], case["dtype"])
        except Exception:
            break  # the bare call differs from the proxied one here: leave the case out
        elapsed = time.perf_counter() - t0
        del y
        best = elapsed if best is None else min(best, elapsed)
    if best is not None:
        results.append(best * 1e3)
print("BENCH_RESULT", json.dumps(results), flush=True)
"""

# The layouts of src/core/ic_layout.c, as probes receive them.
LAYOUTS = {
    "contiguous": (24, [["reshape", [2, 3, 4]]]),
    "flat": (24, []),
    "fortran": (24, [["reshape", [4, 3, 2]], ["permute", [2, 1, 0]]]),
    "transposed": (24, [["reshape", [2, 3, 4]], ["permute", [1, 0, 2]]]),
    "strided": (31, [["slice", [[1, None, 3]]]]),
    "reversed": (12, [["slice", [[None, None, -1]]]]),
    "offset": (16, [["slice", [[5, 13, 1]]]]),
    "scalar": (1, [["reshape", []]]),
    "empty": (0, []),
    "unit_dims": (12, [["reshape", [2, 6, 1]], ["permute", [0, 2, 1]]]),
    "broadcast": (4, [["reshape", [1, 4]], ["broadcast", [3, 4]]]),
    "unit_dims_odd": (12, [["reshape", [2, 1, 6]], ["unit_stride", [1, 3]]]),
    "broadcast_inner": (3, [["reshape", [3, 1]], ["broadcast", [3, 4]]]),
    "ndim32": (24, [["reshape", [2, 3, 4] + [1] * 29]]),
    "neg_view": (24, [["reshape", [2, 3, 4]], ["neg_view", []]]),
    "conj_view": (24, [["reshape", [2, 3, 4]], ["conj_view", []]]),
    "requires_grad": (24, [["reshape", [2, 3, 4]], ["requires_grad", []]]),
    "subclass": (24, [["reshape", [2, 3, 4]], ["subclass", []]]),
    "other_device": (24, [["reshape", [2, 3, 4]], ["other_device", []]]),
}


def result_of(stdout):
    """The value a helper interpreter printed; libraries may print other lines (pydlpack
    reports leaks at exit)."""
    for line in stdout.splitlines():
        if line.startswith("BENCH_RESULT "):
            return json.loads(line[len("BENCH_RESULT "):])
    raise RuntimeError("the helper interpreter printed no result:\n" + stdout[-2000:])


def import_floor(python, probes_dir, names, runs=3):
    times = []
    for _ in range(runs):
        out = subprocess.run([python, "-c", IMPORT_FLOOR, probes_dir, *names], capture_output=True,
                             text=True, check=True)
        times.append(result_of(out.stdout))
    return statistics.median(times)


def phase_breakdown(report, wall):
    """The report's run.timing as (label, value) lines: discovery, the cases' wall time and
    what the workers spent it on, restarts, and the rest (planning, reports, stopping)."""
    timing = report["run"].get("timing")
    if not timing:
        return []
    rest = wall - timing["discovery_s"] - timing["cases_wall_s"]
    return [
        ("discovery (importing every library once, in a worker)", f"{timing['discovery_s']:.2f} s"),
        ("  the second worker's imports meanwhile (prewarming)",
         f"{timing.get('prewarm_import_s', 0):.2f} s"),
        ("  cases run meanwhile, in copies of discovery's worker",
         f"{timing.get('early_cases', 0)} in {timing.get('early_workers', 0)}"),
        ("running the cases (wall)", f"{timing['cases_wall_s']:.2f} s"),
        ("  workers' first import of each library", f"{timing['import_s']:.2f} s"),
        ("  re-imports in workers started after a crash or a stop", f"{timing['reimport_s']:.2f} s"),
        ("  exchange work (case begin, or a pipelined case's end before, to end)",
         f"{timing['case_s']:.2f} s"),
        ("  round trips: a request sent to its case's begin (none pipelined)",
         f"{timing['wait_s']:.2f} s"),
        ("  workers started / of them restarts", f"{timing['workers_started']} / {timing['restarts']}"),
        ("  of them, copies of the template (no imports)", f"{timing.get('workers_copied', 0)}"),
        ("  of them, lean: a crashing pair's own, importing it alone",
         f"{timing.get('workers_lean', 0)}"),
        ("  cases of crashing pairs run isolated", f"{timing['isolated_cases']}"),
        ("  worker starts declined (imports would not pay)", f"{timing.get('starts_declined', 0)}"),
        ("  pairs isolated from the start (crash ledger)", f"{timing.get('ledger_pairs', 0)}"),
        ("planning, reports, reproducers and stopping (wall)", f"{rest:.2f} s"),
    ]


def run_watched(command, env):
    """Runs command; returns its supervisor's peak VmHWM in KiB (None where /proc has none) and
    the CPU seconds (user, system) of the command and of every process under it that was
    waited for: interopcheck reaps its workers, and they their own children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=env)
    peak = [None]

    def watch():
        path = f"/proc/{proc.pid}/status"
        while proc.poll() is None:
            try:
                with open(path, encoding="ascii") as status:
                    for line in status:
                        if line.startswith("VmHWM:"):
                            peak[0] = int(line.split()[1])
            except (OSError, ValueError):
                pass
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    proc.wait()
    watcher.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return peak[0], (after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("interopcheck")
    parser.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--device")
    parser.add_argument("--report")
    parser.add_argument("--ledger", action="store_true")
    args = parser.parse_args()
    probes_dir = os.path.join(ROOT, "probes")

    peak_kib = cpu = None
    if args.report:
        opener = gzip.open if args.report.endswith(".gz") else open
        with opener(args.report, "rt", encoding="utf-8") as handle:
            report = json.load(handle)
        wall = report["run"]["duration_s"]
    else:
        earlier = []  # (wall, report, peak) of the runs before the last, with --ledger
        with tempfile.TemporaryDirectory() as workdir:
            out = os.path.join(workdir, "all.json")
            command = [args.interopcheck, "--all", "-q", "--python", args.python, "-o", out]
            if args.jobs:
                command += ["-j", str(args.jobs)]
            if args.device:
                command += ["--device", args.device]
            cache = os.path.join(workdir, "cache") if args.ledger else ""
            env = dict(os.environ, INTEROPCHECK_LEDGER_DIR=cache)
            for run in range(2 if args.ledger else 1):
                start = time.perf_counter()
                peak_kib, cpu = run_watched(command, env)
                wall = time.perf_counter() - start
                with open(out, encoding="utf-8") as handle:
                    report = json.load(handle)
                if args.ledger and run == 0:
                    earlier.append((wall, report, peak_kib))

    loaded = [lib["name"] for lib in report["environment"]["libraries"]
              if lib["status"] == "loaded"]
    if args.device:
        # only the libraries that have cases on that device: the others are never imported
        # by a worker (discovery, which imports them all, is in the wall time)
        used = {c[side] for c in report["cases"] if c["duration_ms"] > 0
                for side in ("producer", "consumer")}
        loaded = [name for name in loaded if name in used]
    # The order workers import in: the catalog's, with no worker ever needing all at once
    # more than the discovery worker does.
    floor = import_floor(args.python, probes_dir, loaded)

    ran = [c for c in report["cases"] if c["duration_ms"] > 0 and c["outcome"] == "pass"
           and c["consumer"] != "interopcheck" and c["variant"] is None]
    step = max(1, len(ran) // args.samples)
    sample = ran[::step][:args.samples]
    case_median = statistics.median(c["duration_ms"] for c in sample)
    out = subprocess.run([args.python, "-c", BARE_CALLS, probes_dir, json.dumps(LAYOUTS)],
                         input=json.dumps(sample), capture_output=True, text=True, check=True)
    bare = result_of(out.stdout)
    bare_median = statistics.median(bare)

    cases_total = report["summary"]["total"]
    cases_run = sum(1 for c in report["cases"] if c["duration_ms"] > 0)
    jobs = report["run"]["jobs"]
    print(f"libraries: {len(loaded)} ({', '.join(loaded)})")
    print(f"import floor (one fresh interpreter importing them all): {floor:.2f} s")
    print(f"interopcheck --all: {wall:.2f} s wall, {cases_total} cases ({cases_run} run, "
          f"the rest decided at plan time), {jobs} workers")
    print(f"ratio 1, --all wall time / import floor: {wall / floor:.2f}")
    print(f"median case: {case_median * 1e3:.1f} us over {len(sample)} passing cases; "
          f"median bare exchange call of the same cases: {bare_median * 1e3:.1f} us")
    print(f"ratio 2, case / bare exchange call: {case_median / bare_median:.2f}")
    stages = (report["run"].get("timing") or {}).get("stages_s")
    if stages and stages.get("import"):
        total = sum(stages.values())
        print(f"in the worker, summed over the {cases_run} cases run: {total:.2f} s, of which")
        for name, seconds in stages.items():
            print(f"  {name:<14} {seconds:8.2f} s {100 * seconds / total:5.1f} %")
        print(f"ratio 2 in the worker, all stages / the import call: {total / stages['import']:.2f}; "
              f"our checks in C / the import call: {stages['checks'] / stages['import']:.2f}")
        # What verifying adds to the exchange: building and exporting the array and the import
        # call are what any exchange costs; the rest is there to check it (the consumer's
        # operation included: "the consumer can compute with what it got" is one of the checks).
        verifying = sum(stages.get(name, 0.0) for name in
                        ("describe", "checks", "compute", "write_through", "relay", "lifetime"))
        print(f"ratio 2 in the worker, what verifying adds (descriptions, our checks in C, the "
              f"consumer's operation, write-through, relay, letting go) / the import call: "
              f"{verifying / stages['import']:.2f}; without the consumer's operation: "
              f"{(verifying - stages.get('compute', 0.0)) / stages['import']:.2f}")
        # The same on warm caches: the cases whose worker had built that producer's array of
        # that dtype and layout, and had that consumer import that protocol, dtype and layout,
        # before (run.timing.stages_warm_s): what a library compiles or caches for a new shape
        # (JAX's import and y * 1) is paid once a process, not a case.
        warm = (report["run"].get("timing") or {}).get("stages_warm_s")
        if warm and warm.get("import"):
            warm_verifying = sum(warm.get(name, 0.0) for name in
                                 ("describe", "checks", "compute", "write_through", "relay",
                                  "lifetime"))
            print(f"ratio 2 in the worker on warm caches ({report['run']['timing']['warm_cases']}"
                  f" of the {cases_run} cases): what verifying adds / the import call: "
                  f"{warm_verifying / warm['import']:.2f}; without the consumer's operation: "
                  f"{(warm_verifying - warm.get('compute', 0.0)) / warm['import']:.2f}; "
                  f"our checks in C alone: {warm['checks'] / warm['import']:.2f}")
        # What ratio 1 would be if the cases waited for every import: the import floor, then
        # the cases' own stages spread evenly over the workers with nothing else (no round
        # trips, no reports, no restarts). Cases that run while discovery imports (early
        # cases) can take a run below it; without them, most of it is the libraries' own calls.
        bound = floor + total / jobs
        print(f"ratio 1 with these stages after the imports on {jobs} workers (the import floor, "
              f"then the stages spread evenly, nothing else): {bound:.2f} s, {bound / floor:.2f}")
    if cpu is not None:
        # Where every core is busy, the wall time is the CPU time spread over the cores: less
        # CPU is then the only way to a shorter run, and what runs when only moves work around.
        cores = len(os.sched_getaffinity(0))
        used = cpu[0] + cpu[1]
        staged = f"; the cases' stages {total:.2f} s of it" if stages and stages.get("import") \
            else ""
        print(f"CPU time of the run (interopcheck and the processes it waited for): {used:.2f} s "
              f"(user {cpu[0]:.2f} s, system {cpu[1]:.2f} s) in {wall:.2f} s of wall time on "
              f"{cores} cores: busy {100 * used / (wall * cores):.0f} %{staged}")
    if peak_kib is not None:
        print(f"supervisor peak memory (VmHWM): {peak_kib / 1024:.1f} MiB for {cases_total} "
              f"cases (target 64 MiB)"
              + (f"; first run {earlier[0][2] / 1024:.1f} MiB" if earlier and earlier[0][2]
                 else ""))
    phases = phase_breakdown(report, wall)
    if phases and earlier:
        first_wall, first_report, _ = earlier[0]
        first = dict(phase_breakdown(first_report, first_wall))
        print(f"ratio 1 of the first run (no ledger yet): {first_wall / floor:.2f} "
              f"({first_wall:.2f} s); of the second (the first's ledger): {wall / floor:.2f}")
        print("where the wall time went (workers' seconds are summed over the workers):")
        print(f"  {'':<58} {'first run':>14} {'second run':>14}")
        for label, value in phases:
            print(f"  {label:<58} {first.get(label, '-'):>14} {value:>14}")
        same = {c["id"]: c["outcome"] for c in first_report["cases"]} == \
            {c["id"]: c["outcome"] for c in report["cases"]}
        print(f"every case's outcome the same in both runs: {same}")
    elif phases:
        print("where the wall time went (workers' seconds are summed over the workers):")
        for label, value in phases:
            print(f"  {label:<58} {value}")
    print(json.dumps({"import_floor_s": floor, "all_wall_s": wall, "ratio_wall_to_floor":
                      wall / floor, "case_median_ms": case_median, "bare_call_median_ms":
                      bare_median, "ratio_case_to_bare": case_median / bare_median,
                      "cases": cases_total, "cases_run": cases_run, "jobs": jobs,
                      "supervisor_peak_kib": peak_kib,
                      "cpu_user_s": cpu[0] if cpu else None, "cpu_system_s": cpu[1] if cpu else None,
                      "timing": report["run"].get("timing")}))


if __name__ == "__main__":
    sys.exit(main())
