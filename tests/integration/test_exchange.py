"""Integration test: the real binary against real libraries, asserting what the specs promise.

Usage: test_exchange.py INTEROPCHECK_BINARY
"""
import json
import os
import tempfile

import taplib


def check_numpy_torch(tap, binary, workdir):
    out = os.path.join(workdir, "numpy_torch.json")
    proc = taplib.run(binary, "--producer", "numpy", "--consumer", "torch,interopcheck",
                      "--protocol", "dlpack", "--dtype", "float32,bool,bfloat16", "-o", out, "-q")
    tap.ok(proc.returncode == 0,
           "numpy -> torch over DLPack: exit status 0 (torch's refusal of reversed views is "
           "allowed)", proc.stdout + proc.stderr)
    report = taplib.load_report(out)
    errors = taplib.schema_errors(report)
    tap.ok(not errors, "the report validates against reports/schema", "\n".join(errors[:20]))
    cases = taplib.cases_by_id(report)

    reversed_case = cases.get("dlpack.numpy.torch.cpu.float32.reversed", {})
    imported = reversed_case.get("checks", {}).get("import", {})
    tap.ok(reversed_case.get("outcome") == "unsupported" and "rule" not in reversed_case and
           imported.get("rule") == "dlpack.consumer_refusal" and
           imported.get("severity") == "note" and "RuntimeError" in imported.get("note", ""),
           "torch's RuntimeError for a negative stride is a refusal (a DLPack consumer is only "
           "advised to raise BufferError), with the note dlpack.consumer_refusal",
           reversed_case)
    case = cases.get("dlpack.numpy.torch.cpu.float32.contiguous")
    tap.ok(case is not None and case["outcome"] == "pass",
           "dlpack.numpy.torch.cpu.float32.contiguous passes", case)
    checks = (case or {}).get("checks", {})
    for name in ("export", "import", "zero_copy", "contents", "dtype", "shape", "strides",
                 "device", "compute", "lifetime"):
        tap.ok(checks.get(name, {}).get("status") == "pass", f"... its {name} check passed",
               checks.get(name))
    tap.ok("dltensor_versioned" in (case or {}).get("exported", ""),
           "torch asked for and got a versioned capsule", case and case.get("exported"))

    offset = cases.get("dlpack.numpy.torch.cpu.float32.offset", {})
    tap.ok(offset.get("outcome") == "pass", "an offset view (byte_offset or pointer) passes",
           offset)

    bf16 = cases.get("dlpack.numpy.torch.cpu.bfloat16.contiguous", {})
    tap.ok(bf16.get("outcome") == "unsupported" and "BufferError" in bf16.get("diagnostic", ""),
           "NumPy's BufferError for bfloat16 is unsupported, with its message", bf16)

    legacy = cases.get("dlpack.numpy.interopcheck.cpu.float32.contiguous.legacy", {})
    tap.ok(legacy.get("outcome") == "pass" and legacy.get("exported") == "dltensor",
           "__dlpack__() without max_version gives numpy's legacy capsule", legacy)
    stream = cases.get("dlpack.numpy.interopcheck.cpu.float32.flat.cpu_stream", {})
    tap.ok(stream.get("outcome") == "pass",
           "numpy refuses stream=1 on a CPU array, as dlpack.cpu_stream requires", stream)
    ro = cases.get("dlpack.numpy.interopcheck.cpu.float32.flat.readonly", {})
    tap.ok(ro.get("outcome") == "pass" and "flags=0x1" in ro.get("exported", ""),
           "a read-only numpy array exports with the READ_ONLY flag", ro)

    summary = report["summary"]["protocols"]["dlpack"]
    cell = [c for c in summary["cells"] if c["producer"] == "numpy" and c["consumer"] == "torch"]
    tap.ok(len(cell) == 1 and cell[0]["total"] == sum(cell[0]["outcomes"].values()),
           "the summary has the numpy x torch cell with consistent counts", cell)
    tap.ok(report["summary"]["total"] == len(report["cases"]),
           "summary total equals the number of cases")

    stream_path = out[:-len("json")] + "jsonl"
    with open(stream_path, encoding="utf-8") as handle:
        lines = [line for line in handle if line.strip()]
    tap.ok(len(lines) == len(report["cases"]) + 2,
           "the .jsonl stream has a run line, one line per case and an end line",
           f"{len(lines)} lines for {len(report['cases'])} cases")
    # The run writes its report from the stream, reading each case back from its line
    # (src/report/ic_plan_cases.h): every case of the report is its stream line, in plan
    # order, with only its finding added.
    streamed = {}
    for line in lines:
        item = json.loads(line)
        if item.pop("type", None) == "case":
            streamed[item["id"]] = item
    differing = []
    for case in report["cases"]:
        expected = dict(streamed.get(case["id"], {}))
        if "finding" in case:
            expected["finding"] = case["finding"]
        if expected != case or list(expected) != list(case):
            differing.append(case["id"])
    tap.ok(not differing and len(streamed) == len(report["cases"]),
           "each case of the report is its line of the stream, keys in the same order, with its "
           "finding added", differing[:3])


def check_untyped_and_buffer(tap, binary, workdir):
    out = os.path.join(workdir, "buffer.json")
    proc = taplib.run(binary, "--producer", "numpy,py_bytearray", "--consumer",
                      "torch,py_memoryview,interopcheck", "--protocol", "buffer", "--dtype",
                      "uint8,float32", "--layout", "contiguous,flat,fortran", "-o", out, "-q")
    report = taplib.load_report(out)
    cases = taplib.cases_by_id(report)
    case = cases.get("buffer.numpy.py_memoryview.cpu.float32.contiguous", {})
    tap.ok(case.get("outcome") == "pass" and
           case.get("checks", {}).get("zero_copy", {}).get("status") == "pass",
           "memoryview of a numpy array shares its memory and passes", case)
    case = cases.get("buffer.py_bytearray.torch.cpu.uint8.flat", {})
    tap.ok(case.get("outcome") == "pass" and
           case.get("checks", {}).get("dtype", {}).get("status") == "skip",
           "torch.frombuffer is untyped: contents checked, dtype skipped", case)
    contig = cases.get("buffer.numpy.interopcheck.cpu.float32.fortran.contig", {})
    tap.ok(contig.get("outcome") == "pass" and "as it must" in
           contig.get("checks", {}).get("export", {}).get("note", ""),
           "a Fortran array refuses a C-contiguous buffer request, as it must", contig)


def main(tap, args):
    binary = args[0]
    with tempfile.TemporaryDirectory() as workdir:
        check_numpy_torch(tap, binary, workdir)
        check_untyped_and_buffer(tap, binary, workdir)


if __name__ == "__main__":
    taplib.main(main)
