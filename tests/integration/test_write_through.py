"""Integration test: the write-through check, a write through one side read through the other.

NumPy writes through every layout it shares (contiguous, strided, reversed, offset) and passes. A
test library that shares memory at import and then loses writes (tests/probes/writelib.py) is
charged by what the shared bytes show: a write that never reached them is the writer's, a write
that reached them and is not read is the reader's, on either side of the exchange. A side that
cannot write (a refusal, a probe without write()) and a read-only array are never passes of the
check. The reproducer of a lost write reproduces it.
Usage: test_write_through.py INTEROPCHECK_BINARY
"""
import os
import tempfile

import taplib

LAYOUTS = ("contiguous", "strided", "reversed", "offset")

# The lost writes, per case prefix (the layout follows): the side charged and what the note says
LOST = {
    "dlpack.numpy.writelib.cpu.int32": ("consumer", "still holds the old bytes",
                                        "a consumer that writes to a copy of its import"),
    "dlpack.writelib.numpy.cpu.int32": ("producer", "writelib's write went somewhere else",
                                        "a producer that writes to a copy of its array"),
    "dlpack.writelib.numpy.cpu.int16": ("producer", "holds the write, so writelib reads",
                                        "a producer that reads a snapshot, in memory that holds "
                                        "the consumer's write"),
    "dlpack.numpy.writelib.cpu.int16": ("consumer", "numpy wrote 0",
                                        "a consumer that reads a snapshot, missing the producer's "
                                        "write"),
}


def write_check(case):
    return case.get("checks", {}).get("write_through", {})


def main(tap, args):
    binary = args[0]
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "write.json")
        report, cases, expect = taplib.run_failing_selection(
            tap, binary, out, "writes were lost", "--producer", "numpy,writelib", "--consumer",
            "writelib,numpy,badlib", "--protocol", "dlpack", "--layout",
            ",".join(LAYOUTS + ("flat",)), "--dtype", "float32,int32,int16,uint8", "-j", "2")

        for layout in LAYOUTS:
            expect(f"dlpack.numpy.numpy.cpu.int32.{layout}", "pass",
                   f"NumPy writes through a {layout} import and reads its producer's writes",
                   checks={"write_through": "pass"})
            expect(f"dlpack.numpy.writelib.cpu.float32.{layout}", "pass",
                   f"a library that writes the shared memory passes ({layout})",
                   checks={"write_through": "pass"})
            for prefix, (side, text, name) in LOST.items():
                case = cases.get(f"{prefix}.{layout}", {})
                tap.ok(case.get("outcome") == "fail" and
                       case.get("rule") == "exchange.write_through" and
                       case.get("side") == side and case.get("severity") == "harmful" and
                       text in write_check(case).get("note", ""),
                       f"{name}: harmful, the {side}'s ({layout})", case)

        case = cases.get("dlpack.numpy.writelib.cpu.uint8.contiguous", {})
        check = write_check(case)
        tap.ok(case.get("outcome") == "pass" and check.get("status") == "pass" and
               "writelib writing at [1,2,3] raised ValueError: writelib arrays of uint8 are "
               "immutable; numpy wrote 0 at [1,0,0], writelib read it" in check.get("note", ""),
               "a write the library refuses: that direction is said not checked (with what it "
               "raised), the other one passes", case)
        case = cases.get("dlpack.numpy.badlib.cpu.float32.contiguous", {})
        check = write_check(case)
        tap.ok(check.get("status") == "skip" and "offers no write()" in check.get("note", ""),
               "a probe without write() or read(): skipped, saying so", case)
        case = cases.get("dlpack.numpy.numpy.cpu.float32.flat.readonly", {})
        check = write_check(case)
        tap.ok(check.get("status") == "skip" and "read-only" in check.get("note", ""),
               "a read-only array is not written: skipped", case)

        findings = [f for f in report["findings"] if f["rule"] == "exchange.write_through"]
        tap.ok({f["side"] for f in findings} == {"producer", "consumer"} and
               all(f["culprit"] == "writelib" for f in findings),
               "findings of writelib only, as producer and as consumer",
               [(f["culprit"], f["side"]) for f in findings])
        for finding in findings:
            tap.ok("reproducer" in finding, f"{finding['id']} has a reproducer", finding)
            if ".int32." in finding.get("example", "") and "reproducer" in finding:
                taplib.check_reproduces(tap, binary, out, finding)

if __name__ == "__main__":
    taplib.main(main)
