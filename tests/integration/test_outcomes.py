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
        report = taplib.load_valid_report(tap, out)
        cases = taplib.cases_by_id(report)
        expect = taplib.case_expecter(tap, cases)

        expect("dlpack.badlib.numpy.cpu.float32.contiguous", "pass", "a correct export passes")
        expect("dlpack.badlib.numpy.cpu.int8.contiguous", "unsupported",
               "a BufferError refusal is unsupported, with the message",
               text="badlib cannot export int8")
        expect("dlpack.badlib.numpy.cpu.int16.contiguous", "fail",
               "a ValueError refusal breaks the BufferError rule", rule="exchange.refusal")
        case = cases.get("dlpack.badlib.numpy.cpu.uint8.contiguous", {})
        tap.ok(case.get("outcome") == "fail" and
               case.get("checks", {}).get("zero_copy", {}).get("status") == "fail" and
               case.get("checks", {}).get("contents", {}).get("status") == "fail",
               "exporting another array's memory fails zero_copy and contents", case)
        expect("dlpack.numpy.badlib.cpu.float64.contiguous", "crash",
               "a consumer that segfaults is a crash named by its signal", text="SIGSEGV")
        expect("dlpack.numpy.badlib.cpu.int32.contiguous", "crash",
               "a consumer that aborts is a crash named SIGABRT", text="SIGABRT")
        text = cases.get("dlpack.numpy.badlib.cpu.int32.contiguous", {}).get("diagnostic", "")
        tap.ok("what():  badlib cannot take negative strides" in text and "frame #" not in text,
               "... its last output is the exception's message, without the C++ backtrace", text)
        case = cases.get("dlpack.badlib.badlib.cpu.int32.contiguous", {})
        tap.ok(case.get("outcome") == "crash" and case.get("rule") == "dlpack.strides" and
               case.get("side") == "producer" and case.get("culprit") == "badlib" and
               "after badlib handed it an export that breaks dlpack.strides" in
               case.get("diagnostic", "") and "SIGABRT" in case.get("diagnostic", ""),
               "a consumer that dies of an export breaking a harmful rule: a crash charged to "
               "the producer, under that rule", case)
        expect("dlpack.numpy.badlib.cpu.complex64.contiguous", "timeout",
               "a consumer that hangs is a timeout", text="5 s")
        expect("dlpack.badlib.badlib.cpu.float32.scalar", "error",
               "a probe whose build() raises is the tool's error, not the library's failure",
               text="could not build")
        expect("dlpack.badlib.numpy.cpu.int8.scalar", "unsupported",
               "a build() that raises NotImplementedError: the library cannot make that array",
               text="cannot build")
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
                          "float32", "--layout", "flat", "--producer", "numpy", "-o", out2)
        tap.ok(proc.returncode == 3 and
               "broken_import could not be tested: its import raised: ImportError: libbroken" in
               proc.stderr and "crash_on_import could not be tested: its import crashed" in
               proc.stderr,
               "a selected library that is installed but whose import raises or crashes: exit "
               "status 3, and a line saying which and what its import raised",
               f"status {proc.returncode}\n{proc.stderr}")
        tap.ok("missing_lib is not installed, so it is not tested" in proc.stderr and
               "missing_lib could not be tested" not in proc.stderr,
               "a library that is merely not installed, and not named, is a note", proc.stderr)
        report = taplib.load_report(out2)
        libs = {lib["name"]: lib for lib in report["environment"]["libraries"]}
        crashed = libs.get("crash_on_import", {})
        tap.ok(crashed.get("status") == "import_crash" and "SIGSEGV" in (crashed.get("error") or ""),
               "a library whose import kills the worker is recorded as import_crash", crashed)
        missing = libs.get("missing_lib", {})
        tap.ok(missing.get("status") == "not_installed" and
               "interopcheck_no_such_library" in (missing.get("error") or ""),
               "a library that is not installed is recorded as such, with the message", missing)
        broken = libs.get("broken_import", {})
        tap.ok(broken.get("status") == "import_error" and
               "libbroken.so.1" in (broken.get("error") or ""),
               "a library whose import raises is recorded with its message", broken)
        bad = libs.get("bad_name", libs.get("Bad-Name", {}))
        tap.ok(any(lib["status"] == "invalid_probe" and "Bad-Name.py" in (lib.get("error") or "")
                   for lib in report["environment"]["libraries"]),
               "a probe file with an invalid name is reported, not loaded", bad)
        torch_case = taplib.cases_by_id(report).get("dlpack.numpy.torch.cpu.float32.flat", {})
        tap.ok(torch_case.get("outcome") == "pass",
               "the other libraries are still tested after an import crash", torch_case)

        check_exit_statuses(tap, binary, probes, workdir)
        check_readonly(tap, binary, probes, workdir)
        check_arrow(tap, binary, probes, workdir)
        check_arrow_stream(tap, binary, probes, workdir)
        check_arrow_bools(tap, binary, workdir)

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


def check_readonly(tap, binary, probes, workdir):
    """Read-only flags that lie, each charged to the side that lied (tests/probes/rolib.py)."""
    out = os.path.join(workdir, "readonly.json")
    proc = taplib.run(binary, "--probe-dir", probes, "--producer", "rolib,numpy", "--consumer",
                      "numpy,rolib", "--protocol", "array_interface,array_struct", "--dtype",
                      "float32,float64,int32,int16", "--layout", "flat,contiguous", "-o", out,
                      "-q")
    tap.ok(proc.returncode == 1, "read-only lies: exit status 1", proc.stderr)
    cases = taplib.cases_by_id(taplib.load_report(out))

    def expect(case_id, outcome, rule=None, side=None):
        case = cases.get(case_id, {})
        tap.ok(case.get("outcome") == outcome and case.get("rule") == rule and
               case.get("side") == side and
               (rule is None or case.get("checks", {}).get("readonly", {}).get("status") == "fail"),
               f"{case_id}: {outcome}{' under ' + rule + ' (' + side + ')' if rule else ''}", case)

    expect("array_interface.rolib.numpy.cpu.float32.flat.readonly", "fail",
           "array_interface.readonly", "producer")
    expect("array_struct.rolib.numpy.cpu.float32.flat.readonly", "fail", "array_struct.flags",
           "producer")
    expect("array_interface.rolib.numpy.cpu.float64.flat.readonly", "pass")
    expect("array_interface.numpy.rolib.cpu.int32.flat.readonly", "fail", "exchange.readonly",
           "consumer")
    expect("array_interface.numpy.rolib.cpu.int16.flat", "fail", "exchange.writable", "consumer")
    expect("array_interface.numpy.rolib.cpu.float64.flat.readonly", "pass")
    expect("array_interface.numpy.rolib.cpu.float64.flat", "pass")


def _expecter(tap, cases):
    """expect(case_id, outcome, rule, side, check): one TAP line on a case of `cases`."""
    def expect(case_id, outcome, rule=None, side=None, check=None):
        case = cases.get(case_id, {})
        tap.ok(case.get("outcome") == outcome and case.get("rule") == rule and
               case.get("side") == side and
               (check is None or case.get("checks", {}).get(check, {}).get("status") == "fail"),
               f"{case_id}: {outcome}{' under ' + rule + ' (' + side + ')' if rule else ''}", case)
    return expect


def check_arrow(tap, binary, probes, workdir):
    """The Arrow PyCapsule interface broken on each side (tests/probes/arrowlib.py), and
    pyarrow's own exchanges, which pass."""
    out = os.path.join(workdir, "arrow.json")
    proc = taplib.run(binary, "--probe-dir", probes, "--producer", "arrowlib,pyarrow",
                      "--consumer", "arrowlib,pyarrow,interopcheck", "--protocol",
                      "arrow,arrow_device", "--dtype", "float64,float32,int32,int16,uint8,uint16",
                      "--layout", "flat", "-o", out, "-q")
    tap.ok(proc.returncode == 1, "arrow: the broken exchanges fail: exit status 1", proc.stderr)
    cases = taplib.cases_by_id(taplib.load_report(out))

    expect = _expecter(tap, cases)

    for consumer in ("pyarrow", "interopcheck", "arrowlib"):
        expect(f"arrow.arrowlib.{consumer}.cpu.int32.flat", "fail", "arrow.buffers", "producer",
               "export")
        expect(f"arrow.arrowlib.{consumer}.cpu.int16.flat", "fail", "arrow.capsules",
               "producer", "export")
        expect(f"arrow.pyarrow.{consumer}.cpu.uint16.flat", "pass")
    expect("arrow.arrowlib.pyarrow.cpu.float64.flat", "pass")
    expect("arrow.arrowlib.interopcheck.cpu.float64.flat", "pass")
    expect("arrow.pyarrow.arrowlib.cpu.uint8.flat", "fail", "arrow.release", "consumer",
           "lifetime")
    expect("arrow.pyarrow.interopcheck.cpu.uint8.flat", "pass")
    for consumer in ("pyarrow", "interopcheck"):
        expect(f"arrow_device.arrowlib.{consumer}.cpu.uint16.flat", "fail", "arrow.device",
               "producer", "export")
        expect(f"arrow_device.pyarrow.{consumer}.cpu.uint16.flat", "pass")
    expect("arrow_device.arrowlib.interopcheck.cpu.float32.flat.unknown_keyword", "fail",
           "arrow.device_keywords", "producer", "export")
    expect("arrow_device.pyarrow.interopcheck.cpu.float32.flat.unknown_keyword", "pass")
    expect("arrow.arrowlib.interopcheck.cpu.uint8.flat.requested_schema", "fail",
           "arrow.requested_schema", "producer", "export")
    expect("arrow.arrowlib.interopcheck.cpu.uint8.flat", "pass")
    expect("arrow.pyarrow.interopcheck.cpu.uint8.flat.requested_schema", "pass")
    # nulls: a producer that drops its validity bitmap, a consumer that drops the one it got
    for consumer in ("pyarrow", "interopcheck"):
        expect(f"arrow.arrowlib.{consumer}.cpu.float32.flat.nulls", "fail", "arrow.nulls",
               "producer", "contents")
        expect(f"arrow.pyarrow.{consumer}.cpu.float32.flat.nulls", "pass")
        expect(f"arrow_device.pyarrow.{consumer}.cpu.float64.flat.nulls", "pass")
    expect("arrow.pyarrow.arrowlib.cpu.float32.flat.nulls", "fail", "arrow.nulls", "consumer",
           "contents")
    expect("arrow.pyarrow.arrowlib.cpu.float32.flat", "pass")
    expect("arrow.arrowlib.interopcheck.cpu.float64.flat.nulls", "pass")
    # relay: the consumer's Arrow import handed on over DLPack
    expect("arrow.pyarrow.arrowlib.cpu.uint16.flat.relay_dlpack", "fail", "exchange.relay",
           "consumer", "relay")
    for case_id in ("arrow.pyarrow.arrowlib.cpu.float64.flat.relay_dlpack",
                    "arrow.arrowlib.pyarrow.cpu.float64.flat.relay_dlpack"):
        case = cases.get(case_id, {})
        tap.ok(case.get("outcome") == "pass" and
               case.get("checks", {}).get("relay", {}).get("status") == "pass",
               f"{case_id}: pass, its relay check made and held", case)


def check_arrow_stream(tap, binary, probes, workdir):
    """Arrow streams broken on each side (tests/probes/streamlib.py), and pyarrow's and
    polars' own, which pass; a failing stream's reproducer reproduces it."""
    out = os.path.join(workdir, "arrow_stream.json")
    os.environ["TESTLIB_DIR"] = probes  # for the reproducer (streamlib's REPRO)
    os.environ["TESTLIB_KIT"] = os.path.join(os.path.dirname(os.path.dirname(probes)), "probes")
    proc = taplib.run(binary, "--probe-dir", probes, "--producer", "streamlib,pyarrow,polars",
                      "--consumer", "streamlib,pyarrow,polars,duckdb,interopcheck", "--protocol",
                      "arrow_stream", "--dtype", "float64,float32,int32,int16,uint8,uint16",
                      "--layout", "flat", "-o", out, "-q")
    tap.ok(proc.returncode == 1, "arrow_stream: the broken exchanges fail: exit status 1",
           proc.stderr)
    report = taplib.load_report(out)
    taplib.record_rules(report)
    cases = taplib.cases_by_id(report)

    expect = _expecter(tap, cases)

    for consumer in ("pyarrow", "polars", "interopcheck"):
        expect(f"arrow_stream.streamlib.{consumer}.cpu.int32.flat", "fail", "arrow.stream",
               "producer", "export")
        expect(f"arrow_stream.streamlib.{consumer}.cpu.int16.flat", "fail", "exchange.contents",
               "producer", "contents")
        # 24 arrays of one element: joined and compared, their sharing not judged
        expect(f"arrow_stream.streamlib.{consumer}.cpu.float32.flat", "pass")
        expect(f"arrow_stream.streamlib.{consumer}.cpu.float64.flat", "pass")
        for producer in ("pyarrow", "polars"):
            expect(f"arrow_stream.{producer}.{consumer}.cpu.uint16.flat", "pass")
            expect(f"arrow_stream.{producer}.{consumer}.cpu.uint8.flat", "pass")
    expect("arrow_stream.pyarrow.streamlib.cpu.uint16.flat", "pass")
    # DuckDB asks for a stream on each scan: every one is followed, the first one's view kept
    for producer in ("pyarrow", "polars"):
        expect(f"arrow_stream.{producer}.duckdb.cpu.uint16.flat", "pass")
    expect("arrow_stream.streamlib.interopcheck.cpu.uint8.flat.requested_schema", "fail",
           "arrow.requested_schema", "producer", "export")
    for producer in ("pyarrow", "polars"):
        expect(f"arrow_stream.{producer}.interopcheck.cpu.uint8.flat.requested_schema", "pass")
    expect("arrow_stream.pyarrow.streamlib.cpu.uint8.flat", "fail", "arrow.release", "consumer",
           "lifetime")
    findings = {f["id"].rsplit(".", 1)[0]: f for f in report.get("findings", [])}
    stream = findings.get("streamlib.arrow.stream")
    tap.ok(stream is not None, "the failing stream is a finding: streamlib.arrow.stream",
           sorted(findings))
    if stream:
        taplib.check_reproduces(tap, binary, out, stream)


def check_arrow_bools(tap, binary, workdir):
    """Arrow's bit-packed booleans, unpacked in C and compared, also from a bit offset (the
    offset layout's slice starts at bit 5)."""
    out = os.path.join(workdir, "arrow_bools.json")
    proc = taplib.run(binary, "--producer", "pyarrow,nanoarrow,polars", "--consumer",
                      "pyarrow,polars,interopcheck", "--protocol", "arrow,arrow_stream",
                      "--dtype", "bool", "--layout", "flat,offset", "-o", out, "-q")
    tap.ok(proc.returncode in (0, 1), "Arrow booleans: the run completes", proc.stderr)
    cases = [c for c in taplib.load_report(out)["cases"] if c["outcome"] != "unsupported"
             and not c.get("variant")]
    compared = [c for c in cases if c["outcome"] == "pass" and
                c.get("checks", {}).get("contents", {}).get("status") == "pass"]
    tap.ok(len(cases) >= 20 and len(compared) == len(cases),
           f"Arrow booleans are compared element by element ({len(compared)} of {len(cases)} "
           "cases pass their contents check)",
           [(c["id"], c["outcome"], c.get("diagnostic")) for c in cases if c not in compared])
    offset = [c for c in compared if c["layout"] == "offset" and c["protocol"] == "arrow"]
    tap.ok(any("offset 5" in (c.get("exported") or "") for c in offset),
           "... also from a bit offset (offset 5)", [c.get("exported") for c in offset])


def check_exit_statuses(tap, binary, probes, workdir):
    """The statuses that keep CI from going green when nothing was tested (issue 8, point 5)."""
    out = os.path.join(workdir, "status.json")
    proc = taplib.run(binary, "--probe-dir", probes, "--producer", "numpy", "--consumer",
                      "numpy,missing_lib", "--protocol", "dlpack", "--dtype", "float32",
                      "--layout", "flat", "-o", out, "-q")
    tap.ok(proc.returncode == 3 and "missing_lib could not be tested: it is not installed" in
           proc.stderr and "ModuleNotFoundError" in proc.stderr,
           "a library named with --consumer that is not installed: exit status 3, naming it",
           f"status {proc.returncode}\n{proc.stderr}")
    proc = taplib.run(binary, "--producer", "numpy", "--consumer", "numpy", "--protocol",
                      "cuda_array_interface", "--device", "cpu", "-o", out, "-q")
    tap.ok(proc.returncode == 4 and "nothing was tested: the selection has no case" in proc.stderr,
           "a selection that runs no case: exit status 4", f"status {proc.returncode}\n{proc.stderr}")
    proc = taplib.run(binary, "--probe-dir", probes, "--producer", "badlib", "--consumer", "numpy",
                      "--protocol", "dlpack", "--dtype", "float32", "--layout", "scalar", "-o",
                      out, "-q")
    report = taplib.load_report(out)
    tap.ok(proc.returncode == 4 and "none of the 1 cases reached a verdict" in proc.stderr and
           [c["outcome"] for c in report["cases"]] == ["error"],
           "a run in which every case is an error: exit status 4",
           f"status {proc.returncode}\n{proc.stderr}")
    help_text = taplib.run(binary, "--help").stdout
    tap.ok(all(f"  {n}  " in help_text or f" {n} " in help_text for n in ("0", "1", "2", "3", "4"))
           and "could not be tested" in help_text and "nothing was tested" in help_text,
           "--help documents every exit status", help_text[-1500:])


if __name__ == "__main__":
    taplib.main(main)
