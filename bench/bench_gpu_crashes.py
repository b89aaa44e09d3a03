"""Benchmark of a crash-heavy GPU run: how much wall time the crashes of a pair cost.

On a GPU, a case of a pair that crashed cannot run in a forked child (the CUDA driver refuses a
child of a process that initialised it), so each crash costs a worker and its imports. On the
H100 (2026-11-26) 43 such crashes (torch on negative strides) made the GPU matrix 150 s, the
imports of restarted workers alone 108 s. This runs the same shape of work without a GPU: the
test library fakegpu on the stand-in driver, importing in FAKEGPU_LOAD_DELAY seconds (as torch
and CuPy take), whose consumer aborts on every array of the offset layout (8 elements) over
the CUDA Array Interface, so that after the first crash every later one is an isolated case.

Usage: bench_gpu_crashes.py INTEROPCHECK [--standin LIB] [--jobs N] [--delay S]
Prints the wall time, the crashes, the workers started and the restarts, and a JSON line.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("interopcheck")
    parser.add_argument("--standin", help="the stand-in driver (default: beside the build's "
                        "tests/, as meson builds it)")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--delay", type=float, default=1.0)
    args = parser.parse_args()
    build = os.path.dirname(os.path.dirname(os.path.abspath(args.interopcheck)))
    standin = args.standin or os.path.join(build, "tests", "libic_cuda_standin.so")
    if not os.path.exists(standin):
        print(f"no stand-in driver at {standin}: build with GPU support, or pass --standin")
        return 77
    env = dict(os.environ, IC_CUDA_LIBRARY=standin, FAKEGPU_ABORT_EXTENT="8",
               FAKEGPU_LOAD_DELAY=str(args.delay))
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "crashes.json")
        command = [args.interopcheck, "--probe-dir", os.path.join(ROOT, "tests", "probes"),
                   "--producer", "fakegpu", "--consumer", "fakegpu", "--protocol",
                   "cuda_array_interface", "--device", "cuda", "-j", str(args.jobs), "-q",
                   "--timeout", "30", "-o", out]
        start = time.perf_counter()
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        with open(out, encoding="utf-8") as handle:
            report = json.load(handle)
    timing = report["run"].get("timing") or {}
    crashes = sum(1 for c in report["cases"] if c["outcome"] == "crash")
    ran = sum(1 for c in report["cases"] if c["duration_ms"] > 0 or c["outcome"] == "crash")
    print(f"{ran} cases run, {crashes} crashes, {args.jobs} workers, imports of {args.delay} s")
    print(f"wall {wall:.2f} s; workers started {timing.get('workers_started')}, "
          f"restarts {timing.get('restarts')}, re-imports {timing.get('reimport_s', 0):.2f} s "
          f"(summed), starts declined {timing.get('starts_declined')}")
    print(json.dumps({"wall_s": wall, "crashes": crashes, "jobs": args.jobs,
                      "timing": timing}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
