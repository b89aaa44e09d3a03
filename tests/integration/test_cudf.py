"""Integration test: cuDF, in an environment of its own (tests/extra/cudf.txt; its pins conflict
with the pinned set's), is tested where it runs and says why where it cannot.

On a machine without a CUDA driver or device, `import cudf` works and its first allocation
fails: the probe loads, lists no device, and gives the allocation's error as its notes["cuda"]
reason (not an import error); its cases are then unsupported with that reason. On a machine
with a GPU it lists the CUDA device instead, and its cases run.
Usage: test_cudf.py INTEROPCHECK_BINARY
"""
import os
import tempfile

import taplib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = os.path.join(ROOT, ".venv-extra", "cudf", "bin", "python")


def main(tap, args):
    binary = args[0]
    if not tap.ok(os.access(PYTHON, os.X_OK), "cuDF's environment exists (scripts/setup-envs)",
                  PYTHON):
        return
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "cudf.json")
        proc = taplib.run(binary, "--python", PYTHON, "--producer", "cudf,numpy", "--consumer",
                          "cudf,numpy,interopcheck", "--dtype", "float32,int64", "--layout",
                          "flat", "-o", out, "-q")
        tap.ok(proc.returncode in (0, 1) and os.path.exists(out),
               f"a run with cuDF in it completes (exit status {proc.returncode})", proc.stderr)
        if not os.path.exists(out):
            return
        report = taplib.load_report(out)
        cudf = {lib["name"]: lib for lib in report["environment"]["libraries"]}.get("cudf", {})
        tap.ok(cudf.get("status") == "loaded" and (cudf.get("version") or "").startswith("26.10"),
               "cuDF loads, at the pinned release (not an import error)", cudf)
        cuda_note = (cudf.get("device_notes") or {}).get("cuda", "")
        has_gpu = "cuda" in (cudf.get("devices") or [])
        tap.ok(has_gpu or cuda_note.startswith("no usable CUDA device"),
               "without a GPU, cuDF says why as its reason: " + (cuda_note[:90] or "(a GPU)"),
               cudf)
        cases = [c for c in report["cases"] if "cudf" in (c["producer"], c["consumer"])]
        if has_gpu:
            tap.ok(any(c["outcome"] in ("pass", "fail") for c in cases),
                   "with a GPU, cuDF's cases run", len(cases))
        else:
            tap.ok(not any(c["outcome"] in ("error", "crash") for c in cases),
                   f"its {len(cases)} cases are never errors of ours", None)


if __name__ == "__main__":
    taplib.main(main)
