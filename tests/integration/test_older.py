"""Integration test: older releases are tested, not charged with the probes' mistakes.

Each older release set of tests/older/*.txt has its own environment (.venv-older/NAME, made by
scripts/setup-envs with the Python interopcheck embeds). A reduced matrix of NumPy, PyTorch and
JAX runs in each and in the pinned environment; every library loads at the version its file pins,
is exercised both ways, and no case is an error (a probe that assumed today's API would show as
one, or as a library failure that the same case does not show today: each such failure is
listed). The reports are merged into one, whose cases name the run they came from.
Usage: test_older.py INTEROPCHECK_BINARY
"""
import glob
import json
import os
import re
import tempfile

import taplib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBRARIES = ("numpy", "torch", "jax")
MATRIX = ("--producer", ",".join(LIBRARIES), "--consumer", ",".join(LIBRARIES) + ",interopcheck",
          "--protocol", "dlpack,dlpack_capsule,array_interface,buffer,array", "--dtype",
          "float32,int64,bool,float16", "--layout", "flat,strided,offset,scalar,contiguous")


def pins(requirements):
    """{library: version} of a requirements file's name==version lines."""
    found = {}
    for line in open(requirements):
        m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line)
        if m:
            found[m.group(1).lower()] = m.group(2)
    return found


def run_set(tap, binary, name, python, out):
    args = [binary, *MATRIX, "-o", out, "-q"]
    if python:
        args[1:1] = ["--python", python]
    proc = taplib.run(*args)
    tap.ok(proc.returncode in (0, 1) and os.path.exists(out),
           f"{name}: the reduced matrix ran (exit status {proc.returncode})",
           f"{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}")
    return taplib.load_report(out) if os.path.exists(out) else {"cases": [], "environment": {}}


def main(tap, args):
    binary = args[0]
    sets = sorted(glob.glob(os.path.join(ROOT, "tests", "older", "*.txt")))
    tap.ok(len(sets) >= 2, "at least two older release sets are pinned", sets)
    with tempfile.TemporaryDirectory() as workdir:
        current = run_set(tap, binary, "the pinned set", None, os.path.join(workdir, "now.json"))
        now = {c["id"]: c for c in current["cases"]}
        outs = [os.path.join(workdir, "now.json")]
        for requirements in sets:
            name = os.path.basename(requirements)[:-len(".txt")]
            python = os.path.join(ROOT, ".venv-older", name, "bin", "python")
            if not tap.ok(os.access(python, os.X_OK), f"{name}: its environment exists "
                          "(scripts/setup-envs)", python):
                continue
            out = os.path.join(workdir, f"{name}.json")
            report = run_set(tap, binary, name, python, out)
            outs.append(out)
            libs = {lib["name"]: lib for lib in report["environment"].get("libraries", [])}
            want = pins(requirements)
            for lib in LIBRARIES:
                got = libs.get(lib, {})
                # a local version suffix (torch's +cu124) is the build, not the release
                version = (got.get("version") or "").split("+")[0]
                tap.ok(got.get("status") == "loaded" and version == want[lib],
                       f"{name}: {lib} {want[lib]} loads", got)
                ran = [c for c in report["cases"] if lib in (c["producer"], c["consumer"])
                       and c["outcome"] in ("pass", "fail")]
                tap.ok(any(c["producer"] == lib for c in ran) and
                       any(c["consumer"] == lib for c in ran),
                       f"{name}: {lib} is exercised as producer and consumer "
                       f"({len(ran)} cases ran)", None)
            errors = [(c["id"], c.get("diagnostic")) for c in report["cases"]
                      if c["outcome"] == "error"]
            tap.ok(not errors, f"{name}: no case is an error (nothing the probes got wrong)",
                   errors[:10])
            # a failure the pinned set does not show is the older release's, or ours: each is
            # listed, and none may be charged for an exception of a probe file
            new = [c for c in report["cases"] if c["outcome"] == "fail" and
                   now.get(c["id"], {}).get("outcome") != "fail"]
            # what a probe that assumed today's API causes: an exception of its own code, or a
            # call with keywords the library's function predates
            ours = [(c["id"], c.get("diagnostic")) for c in new
                    if "unexpected keyword argument" in (c.get("diagnostic") or "") and
                    c["consumer"] in LIBRARIES and (c.get("variant") or "").startswith("from_")
                    or "probes/" in json.dumps(c.get("checks", {}))]
            tap.ok(not ours, f"{name}: no failure comes from a probe's own code "
                   f"({len(new)} failures the pinned set does not have)", ours[:10])
        merged = os.path.join(workdir, "older.json")
        proc = taplib.run(binary, "merge", *outs, "-o", merged)
        tap.ok(proc.returncode == 0, "the reports merge into one", proc.stderr)
        if proc.returncode == 0:
            report = taplib.load_report(merged)
            total = sum(len(taplib.load_report(o)["cases"]) for o in outs)
            tap.ok(len(report["cases"]) == total,
                   f"the merged report holds every run's cases ({total})", len(report["cases"]))
            keep = os.environ.get("INTEROPCHECK_OLDER_REPORT")
            if keep:  # the closing note's merged report
                with open(keep, "w") as f:
                    json.dump(report, f)


if __name__ == "__main__":
    taplib.main(main)
