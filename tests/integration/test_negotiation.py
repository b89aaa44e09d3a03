"""Integration test: DLPack's negotiation edges that the eras do not cover.

used_capsule: interopcheck's proxy hands each library consumer the producer's capsule renamed
used_* (as if handed out twice); a consumer must refuse it. NumPy passes; a test consumer that
renames it back and imports (tests/probes/negolib.py) fails
dlpack.consumer_used_capsule, the consumer's, and the tensor's deleter still runs exactly once.
A producer that flags IS_COPIED on an export of the array's own memory fails dlpack.copy_flag.
Both findings' reproducers reproduce.
Usage: test_negotiation.py INTEROPCHECK_BINARY
"""
import os
import tempfile

import taplib


def main(tap, args):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.environ["TESTLIB_DIR"] = os.path.join(root, "tests", "probes")  # for the reproducers
    os.environ["TESTLIB_KIT"] = os.path.join(root, "probes")
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "negotiation.json")
        report, cases, expect = taplib.run_failing_selection(
            tap, args[0], out, "a consumer imported a used capsule; a producer lied IS_COPIED",
            "--producer", "numpy,negolib", "--consumer", "negolib,numpy,interopcheck",
            "--protocol", "dlpack", "--layout", "flat", "--dtype", "float32,int16,int32")
        expect("dlpack.numpy.numpy.cpu.float32.flat.used_capsule", "pass",
               "NumPy refuses a used capsule: pass")
        expect("dlpack.numpy.negolib.cpu.float32.flat", "pass",
               "the consumer that ignores used names imports a fresh capsule: pass")
        expect("dlpack.numpy.negolib.cpu.float32.flat.used_capsule", "fail",
               "a consumer that imports a used capsule: fail", rule="dlpack.consumer_used_capsule")
        case = cases.get("dlpack.numpy.negolib.cpu.float32.flat.used_capsule", {})
        tap.ok(case.get("side") == "consumer" and
               case.get("checks", {}).get("lifetime", {}).get("status") == "pass",
               "... charged to the consumer, and the deleter ran exactly once", case)
        tap.ok(not any(c.get("variant") == "used_capsule" for c in report["cases"]
                       if c["consumer"] == "interopcheck"),
               "interopcheck's own consumer is not given used capsules", None)
        for consumer in ("numpy", "interopcheck"):
            expect(f"dlpack.negolib.{consumer}.cpu.int16.flat", "fail",
                   "an export flagged IS_COPIED over the array's own memory: fail",
                   rule="dlpack.copy_flag")
            expect(f"dlpack.negolib.{consumer}.cpu.int32.flat", "pass",
                   "an export without the flag: pass")
        taplib.check_findings(tap, args[0], out, report, "negolib",
                              ["dlpack.consumer_used_capsule"], "consumer")
        copied = [f for f in report["findings"]
                  if f["culprit"] == "negolib" and f["rule"] == "dlpack.copy_flag"]
        tap.ok(copied and all(f["side"] == "producer" for f in copied),
               "the IS_COPIED finding is the producer's", copied)
        for finding in copied[:1]:
            taplib.check_reproduces(tap, args[0], out, finding)


if __name__ == "__main__":
    taplib.main(main)
