"""Integration test: the producer's array is freed once the exchange is over.

A producer whose exports keep its arrays alive (tests/probes/leaklib.py, int32) fails
exchange.owner_released, charged to it, with NumPy as the consumer and with interopcheck's own;
one that frees them (float32) passes; one that keeps every array alive, exported or not (int16:
a cache of its own, which the control array shows) is not charged. The reproducer reproduces.
Usage: test_owner.py INTEROPCHECK_BINARY
"""
import os
import tempfile

import taplib


SELECTION = ("--producer", "leaklib", "--consumer", "numpy,interopcheck", "--protocol", "dlpack",
             "--layout", "contiguous,flat", "--dtype", "float32,int32,int16")


def check_cases(tap, expect):
    for consumer in ("numpy", "interopcheck"):
        for layout in ("contiguous", "flat"):
            prefix = f"dlpack.leaklib.{consumer}.cpu"
            expect(f"{prefix}.int32.{layout}", "fail",
                   f"an export that keeps the array alive fails ({consumer}, {layout})",
                   rule="exchange.owner_released",
                   text="a fresh array of the same kind is freed at once",
                   checks={"lifetime": "fail"})
            expect(f"{prefix}.float32.{layout}", "pass",
                   f"an array freed once the consumer let go passes ({consumer}, {layout})",
                   checks={"lifetime": "pass"})
            expect(f"{prefix}.int16.{layout}", "pass",
                   f"a library that keeps every array alive is not charged ({consumer}, "
                   f"{layout})", checks={"lifetime": "pass"})


def main(tap, args):
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "owner.json")
        report, _, expect = taplib.run_failing_selection(tap, args[0], out,
                                                         "an export leaked its array", *SELECTION)
        check_cases(tap, expect)
        findings = [f for f in report["findings"] if f["rule"] == "exchange.owner_released"]
        tap.ok(len(findings) >= 1 and all(f["culprit"] == "leaklib" and f["side"] == "producer"
                                          and f["severity"] == "harmful" for f in findings),
               "findings of leaklib as the producer, harmful", findings)
        for finding in findings:
            if ".numpy." in finding.get("example", ""):
                taplib.check_reproduces(tap, args[0], out, finding)

if __name__ == "__main__":
    taplib.main(main)
