"""Integration test: every outcome the driver must tell apart, from a deliberately broken test
library (tests/probes/badlib.py), and libraries whose import fails or kills the process.

A crash or a hang costs one case: every other case of the run is still reported.
Usage: test_outcomes.py INTEROPCHECK_BINARY
"""
import os
import tempfile

import taplib


def main(tap, args):
    binary = args[0]
    probes = os.path.join(taplib.source_root(), "tests", "probes")
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "outcomes.json")
        proc = taplib.run(binary, "--probe-dir", probes, "--producer", "badlib,numpy",
                          "--consumer", "badlib,numpy", "--protocol", "dlpack", "--layout",
                          "contiguous,scalar", "--dtype",
                          "float32,int8,int16,uint8,float64,int32,complex64", "--timeout", "5",
                          "-j", "2", "-o", out)
        tap.ok(proc.returncode == 1, "exit status 1: cases failed, crashed or timed out",
               f"status {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        tap.ok("\r" not in proc.stderr, "no progress line when stderr is not a terminal",
               repr(proc.stderr[:300]))
        report = taplib.load_report(out)
        errors = taplib.schema_errors(report)
        tap.ok(not errors, "the report validates against reports/schema", "\n".join(errors[:20]))
        cases = taplib.cases_by_id(report)

        def expect(case_id, outcome, name, text=None, rule=None):
            case = cases.get(case_id, {})
            good = case.get("outcome") == outcome
            if text is not None:
                good = good and text in case.get("diagnostic", "")
            if rule is not None:
                good = good and case.get("rule") == rule
            tap.ok(good, f"{case_id}: {name}", case)

        expect("dlpack.badlib.numpy.cpu.float32.contiguous", "pass", "a correct export passes")
        expect("dlpack.badlib.numpy.cpu.int8.contiguous", "unsupported",
               "a BufferError refusal is unsupported, with the message",
               text="badlib cannot export int8")
        expect("dlpack.badlib.numpy.cpu.int16.contiguous", "fail",
               "a ValueError refusal breaks the BufferError rule", rule="dlpack 2.3 errors")
        case = cases.get("dlpack.badlib.numpy.cpu.uint8.contiguous", {})
        tap.ok(case.get("outcome") == "fail" and
               case.get("checks", {}).get("zero_copy", {}).get("status") == "fail" and
               case.get("checks", {}).get("contents", {}).get("status") == "fail",
               "exporting another array's memory fails zero_copy and contents", case)
        expect("dlpack.numpy.badlib.cpu.float64.contiguous", "crash",
               "a consumer that segfaults is a crash named by its signal", text="SIGSEGV")
        expect("dlpack.numpy.badlib.cpu.int32.contiguous", "crash",
               "a consumer that aborts is a crash named SIGABRT", text="SIGABRT")
        expect("dlpack.numpy.badlib.cpu.complex64.contiguous", "timeout",
               "a consumer that hangs is a timeout", text="5 s")
        expect("dlpack.badlib.badlib.cpu.float32.scalar", "error",
               "a probe whose build() raises is the tool's error, not the library's failure",
               text="could not build")
        expect("dlpack.numpy.numpy.cpu.float64.contiguous", "pass",
               "the case after a crash still runs and passes")
        expect("dlpack.numpy.numpy.cpu.complex64.contiguous", "pass",
               "the case after a timeout still runs and passes")
        expect("dlpack.numpy.badlib.cpu.float64.scalar", "crash",
               "the next crash is caught by a fresh worker too", text="SIGSEGV")

        planned = {(c["producer"], c["consumer"], c["dtype"], c["layout"], c["variant"])
                   for c in report["cases"] if c["protocol"] == "dlpack"}
        expected = {(p, c, d, l, None) for p in ("badlib", "numpy") for c in ("badlib", "numpy")
                    for d in ("float32", "int8", "int16", "uint8", "float64", "int32", "complex64")
                    for l in ("contiguous", "scalar")}
        tap.ok(expected <= planned, "no case was lost: every producer x consumer x dtype x layout "
               "is in the report", sorted(expected - planned)[:10])

        libs = {lib["name"]: lib for lib in report["environment"]["libraries"]}
        tap.ok(libs.get("badlib", {}).get("version") == "0.0.1",
               "the test library's version is recorded", libs.get("badlib"))

        out2 = os.path.join(workdir, "imports.json")
        proc = taplib.run(binary, "--probe-dir", probes, "--protocol", "dlpack", "--dtype",
                          "float32", "--layout", "flat", "--producer", "numpy", "-o", out2, "-q")
        report = taplib.load_report(out2)
        libs = {lib["name"]: lib for lib in report["environment"]["libraries"]}
        crashed = libs.get("crash_on_import", {})
        tap.ok(crashed.get("status") == "import_crash" and "SIGSEGV" in (crashed.get("error") or ""),
               "a library whose import kills the worker is recorded as import_crash", crashed)
        missing = libs.get("missing_lib", {})
        tap.ok(missing.get("status") == "import_error" and
               "interopcheck_no_such_library" in (missing.get("error") or ""),
               "a library that fails to import is recorded with its message", missing)
        bad = libs.get("bad_name", libs.get("Bad-Name", {}))
        tap.ok(any(lib["status"] == "invalid_probe" and "Bad-Name.py" in (lib.get("error") or "")
                   for lib in report["environment"]["libraries"]),
               "a probe file with an invalid name is reported, not loaded", bad)
        torch_case = taplib.cases_by_id(report).get("dlpack.numpy.torch.cpu.float32.flat", {})
        tap.ok(torch_case.get("outcome") == "pass",
               "the other libraries are still tested after an import crash", torch_case)

        # Two libraries that coexist only in one import order (as paddle and tensorflow do),
        # met by a fresh worker (after a crash) in the other order: the order is learned and
        # the case runs again instead of being lost as an error.
        out3 = os.path.join(workdir, "order.json")
        taplib.run(binary, "--probe-dir", probes, "--producer", "order_first,order_second",
                   "--consumer", "order_first,order_second", "--dtype", "float32,int8",
                   "--layout", "flat", "-j", "1", "-o", out3, "-q")
        cases = taplib.cases_by_id(taplib.load_report(out3))
        crashed = cases.get("dlpack.order_second.order_second.cpu.int8.flat", {})
        later = cases.get("array_interface.order_first.order_first.cpu.float32.flat", {})
        tap.ok(crashed.get("outcome") == "crash" and later.get("outcome") == "pass",
               "an import-order conflict met at run time is learned and the case runs again",
               [crashed, later])


if __name__ == "__main__":
    taplib.main(main)
