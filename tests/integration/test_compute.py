"""Integration test: the compute check, the consumer's own operation on what it imported.

A test library that imports right and computes wrong (tests/probes/computelib.py), next to NumPy,
which computes right: wrong values fail exchange.compute, an exception fails
exchange.compute_error, an abort is a crash; all are charged to the consumer. A dtype the
library declares it cannot compute with, an operation that computes nothing, a probe without
compute() and a probe whose operation changes the dtype are never silent passes of the check.
The reproducers of the three failures reproduce them.
Usage: test_compute.py INTEROPCHECK_BINARY
"""
import os
import tempfile

import taplib

DTYPES = "float32,int32,int16,uint16,float64,int8,uint8,int64"


def main(tap, args):
    binary = args[0]
    probes = os.path.join(taplib.source_root(), "tests", "probes")
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "compute.json")
        proc = taplib.run(binary, "--probe-dir", probes, "--producer", "numpy", "--consumer",
                          "computelib,numpy,badlib", "--protocol", "dlpack", "--layout",
                          "contiguous,flat", "--dtype", DTYPES, "-j", "2", "-o", out)
        tap.ok(proc.returncode == 1, "exit status 1: cases failed and crashed",
               f"status {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        report = taplib.load_valid_report(tap, out)
        cases = taplib.cases_by_id(report)
        expect = taplib.case_expecter(tap, cases)

        for dtype in DTYPES.split(","):
            expect(f"dlpack.numpy.numpy.cpu.{dtype}.contiguous", "pass",
                   "NumPy computes with its import of NumPy's array (y * 1): compute passes",
                   checks={"contents": "pass", "compute": "pass"})
        expect("dlpack.numpy.computelib.cpu.float32.contiguous", "pass",
               "an import a library computes right with passes",
               checks={"contents": "pass", "compute": "pass"})
        expect("dlpack.numpy.computelib.cpu.int32.contiguous", "fail",
               "an import that holds the right elements and computes to other values fails "
               "exchange.compute", rule="exchange.compute",
               checks={"contents": "pass", "compute": "fail"})
        case = cases.get("dlpack.numpy.computelib.cpu.int32.flat", {})
        tap.ok(case.get("side") == "consumer" and case.get("severity") == "harmful" and
               "24 of 24 elements differ" in case.get("diagnostic", ""),
               "... charged to the consumer, harmful, saying how many elements differ", case)
        expect("dlpack.numpy.computelib.cpu.int16.contiguous", "fail",
               "an operation that raises on an import the library accepted fails "
               "exchange.compute_error, with what it raised", rule="exchange.compute_error",
               text="ValueError: computelib cannot compute with int16",
               checks={"contents": "pass", "compute": "fail"})
        expect("dlpack.numpy.computelib.cpu.uint16.contiguous", "pass",
               "an operation that raises on the library's own arrays of the dtype too is the "
               "library's coverage, not the exchange's: compute skipped, saying so",
               checks={"contents": "pass", "compute": "skip"})
        note = cases.get("dlpack.numpy.computelib.cpu.uint16.flat", {}).get(
            "checks", {}).get("compute", {}).get("note", "")
        tap.ok("on an array of its own" in note and "no uint16 kernels" in note,
               "... the note says its own array raised too, and what", note)
        case = cases.get("dlpack.numpy.computelib.cpu.int16.flat", {})
        tap.ok(case.get("side") == "consumer" and case.get("severity") == "nonconformant",
               "... charged to the consumer, nonconformant", case)
        for layout in ("contiguous", "flat"):
            case = cases.get(f"dlpack.numpy.computelib.cpu.float64.{layout}", {})
            tap.ok(case.get("outcome") == "crash" and case.get("rule") == "exchange.crash" and
                   case.get("side") == "consumer" and "SIGABRT" in case.get("diagnostic", "")
                   and "in compute() of probes/computelib.py" in case.get("diagnostic", ""),
                   f"{case.get('id')}: an abort while computing with the import is the "
                   "consumer's crash, in its compute()", case)
        case = cases.get("dlpack.numpy.computelib.cpu.int8.contiguous", {})
        compute = case.get("checks", {}).get("compute", {})
        tap.ok(case.get("outcome") == "pass" and compute.get("status") == "skip" and
               "computelib has no int8 kernels" in compute.get("note", ""),
               "a dtype the probe declares its library cannot compute with: compute skipped, "
               "with the probe's reason", case)
        case = cases.get("dlpack.numpy.computelib.cpu.uint8.contiguous", {})
        compute = case.get("checks", {}).get("compute", {})
        tap.ok(compute.get("status") == "skip" and "nothing was computed" in compute.get("note", ""),
               "an operation that returns the import itself computed nothing: skipped, not "
               "passed", case)
        expect("dlpack.numpy.computelib.cpu.int64.contiguous", "error",
               "an operation that changes the dtype is the probe's mistake: error",
               text="its operation must keep the dtype")
        case = cases.get("dlpack.numpy.badlib.cpu.float32.contiguous", {})
        compute = case.get("checks", {}).get("compute", {})
        tap.ok(case.get("outcome") == "pass" and compute.get("status") == "skip" and
               "offers no compute()" in compute.get("note", ""),
               "a probe without compute(): the check is skipped with a note saying so", case)

        findings = {f["rule"]: f for f in report["findings"] if f["culprit"] == "computelib"}
        for rule in ("exchange.compute", "exchange.compute_error", "exchange.crash"):
            finding = findings.get(rule, {})
            tap.ok(finding.get("side") == "consumer" and "reproducer" in finding,
                   f"a finding of computelib under {rule}, with a reproducer", finding)
            if "reproducer" not in finding:
                continue
            taplib.check_reproduces(tap, binary, out, finding)


if __name__ == "__main__":
    taplib.main(main)
