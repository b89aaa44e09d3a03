"""Integration test: the DLPack C exchange API (the dlpack protocol's c_api variant).

interopcheck's own consumer imports through type(x).__dlpack_c_exchange_api__ of producers
whose probe says they publish it. A test library's table (tests/probes/capilib.py) that exports
what __dlpack__ exports passes (float32); one whose export is other memory fails
dlpack.c_api_agrees (int32); a table of major version 2 fails dlpack.c_api_table (int16); one
whose current_work_stream fails for the CPU fails dlpack.c_api_stream (uint8); all
charged to the producer, with reproducers that reproduce. Where torch publishes the table, its
c_api cases are run and pass on plain layouts. As a consumer (the from_c_api variant), a
library imports through its own table's managed_tensor_to_py_object_no_sync: capilib's
releases float32 tensors and leaks int32 ones (dlpack.deleter_once, the consumer's); torch's
imports of NumPy's arrays pass.
Usage: test_c_api.py INTEROPCHECK_BINARY
"""
import os
import tempfile

import taplib

SELECTION = ("--producer", "capilib,torch,numpy", "--consumer", "interopcheck,capilib,torch",
             "--protocol", "dlpack", "--layout", "contiguous,flat", "--dtype",
             "float32,int32,int16,uint8")


def check_cases(tap, cases, expect):
    for layout in ("contiguous", "flat"):
        prefix = "dlpack.capilib.interopcheck.cpu"
        expect(f"{prefix}.float32.{layout}.c_api", "pass",
               f"a table whose export agrees with __dlpack__ passes ({layout})",
               checks={"contents": "pass", "lifetime": "pass"})
        expect(f"{prefix}.int32.{layout}.c_api", "fail",
               f"an export of other memory than __dlpack__'s fails ({layout})",
               rule="dlpack.c_api_agrees", text="differ in the first element's address")
        expect(f"{prefix}.int16.{layout}.c_api", "fail",
               f"a table of major version 2 fails ({layout})", rule="dlpack.c_api_table",
               text="the table's version is 2.0")
        expect(f"{prefix}.uint8.{layout}.c_api", "fail",
               f"a current_work_stream that fails for the array's device fails ({layout})",
               rule="dlpack.c_api_stream", text="current_work_stream(1, 0) returned -1")
    expect("dlpack.numpy.capilib.cpu.float32.flat.from_c_api", "pass",
           "a consumer's own table that takes the tensor and releases it passes",
           checks={"contents": "pass", "lifetime": "pass"})
    expect("dlpack.numpy.capilib.cpu.int32.flat.from_c_api", "fail",
           "a consumer's table that never releases the tensor leaks it: dlpack.deleter_once",
           rule="dlpack.deleter_once", text="its deleter was never called")
    tap.ok(not any(c["id"].startswith("dlpack.numpy.") and c.get("variant") == "c_api"
                   for c in cases.values()),
           "a producer whose probe does not say it has the table gets no c_api cases")
    torch_cases = [c for c in cases.values()
                   if (c["id"].startswith("dlpack.torch.interopcheck.") and
                       c.get("variant") == "c_api") or
                   (c["id"].startswith("dlpack.numpy.torch.") and
                    c.get("variant") == "from_c_api")]
    if torch_cases:
        tap.ok(all(c["outcome"] == "pass" for c in torch_cases),
               f"torch's {len(torch_cases)} cases through its table pass (as the producer, and "
               "as the consumer of NumPy's arrays)",
               [c for c in torch_cases if c["outcome"] != "pass"][:2])
    else:
        tap.skip("this torch publishes no __dlpack_c_exchange_api__")


def main(tap, args):
    # capilib's reproducers make its arrays through the probe file itself
    root = taplib.source_root()
    os.environ["TESTLIB_DIR"] = os.path.join(root, "tests", "probes")
    os.environ["TESTLIB_KIT"] = os.path.join(root, "probes")
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "c_api.json")
        report, cases, expect = taplib.run_failing_selection(
            tap, args[0], out, "a C exchange API table broke its rules", *SELECTION)
        check_cases(tap, cases, expect)
        taplib.check_findings(tap, args[0], out, report, "capilib",
                              ["dlpack.c_api_agrees", "dlpack.c_api_stream", "dlpack.c_api_table"],
                              "producer")
        imports = {"findings": [f for f in report["findings"]
                                if ".from_c_api" in f.get("example", "")]}
        taplib.check_findings(tap, args[0], out, imports, "capilib", ["dlpack.deleter_once"],
                              "consumer")

if __name__ == "__main__":
    taplib.main(main)
