"""Integration test of the GPU path without a GPU: the real binary, with the CUDA driver module
pointed at the host-memory stand-in (IC_CUDA_LIBRARY, set by tests/meson.build), exchanging the
arrays of a test GPU library (tests/probes/fakegpu.py) over DLPack and the CUDA Array Interface.

Everything the driver does here is its GPU code path: pointer attributes from the driver,
the verification kernels (run by the stand-in through their host build), and streams that
queue work like a GPU's, so a producer that skips synchronisation reads as stale data.

Usage: test_gpu.py INTEROPCHECK_BINARY
"""
import json
import os
import tempfile

import taplib


def main(tap, args):
    binary = args[0]
    if not os.environ.get("IC_CUDA_LIBRARY"):
        tap.skip("IC_CUDA_LIBRARY is not set: built without GPU support, no stand-in to load")
        return
    probes = os.path.join(taplib.source_root(), "tests", "probes")
    listed = json.loads(taplib.run(binary, "list", "--json", "--probe-dir", probes,
                                   env={"IC_CUDA_LIBRARY": os.environ["IC_CUDA_LIBRARY"]}).stdout)
    cuda = listed["devices"]["cuda"]
    tap.ok(cuda["available"] and "stand-in" in cuda["detail"],
           "list says the CUDA device is available, through the stand-in", cuda)

    missing = taplib.run(binary, "list", "--json",
                         env={"IC_CUDA_LIBRARY": "/nonexistent/libcuda.so.1"}).stdout
    gone = json.loads(missing)["devices"]["cuda"]
    tap.ok(not gone["available"] and "/nonexistent/libcuda.so.1" in gone["detail"],
           "without a driver, list says GPU cases cannot run and why", gone)

    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "gpu.json")
        proc = taplib.run(binary, "--probe-dir", probes, "--producer", "fakegpu", "--consumer",
                          "fakegpu,interopcheck", "--device", "cuda", "--timeout", "30", "-o", out)
        tap.ok(proc.returncode == 1, "exit status 1: the broken exports fail",
               proc.stdout + proc.stderr)
        report = taplib.load_valid_report(tap, out)
        cases = taplib.cases_by_id(report)
        expect = taplib.case_expecter(tap, cases)

        for protocol, consumer in (("dlpack", "interopcheck"),
                                   ("cuda_array_interface", "interopcheck"),
                                   ("cuda_array_interface", "fakegpu")):
            prefix = f"{protocol}.fakegpu.{consumer}.cuda"
            expect(f"{prefix}.float32.strided", "pass",
                   "a correct device export passes, its contents checked by the GPU kernels",
                   checks={"contents": "pass", "zero_copy": "pass"})
            rule = "dlpack.device_pointer" if protocol == "dlpack" else "cai.device_pointer"
            expect(f"{prefix}.int8.contiguous", "fail",
                   "host memory claimed as device memory is caught by the driver", rule=rule,
                   text="does not know")
            expect(f"{prefix}.uint8.contiguous", "fail",
                   "a span past the end of the allocation is caught", rule=rule,
                   text="outside its allocation")
            expect(f"{prefix}.float32.flat.stream_order", "pass",
                   "a producer that orders the consumer after its queued writes passes")
            expect(f"{prefix}.float64.flat.stream_order", "fail",
                   "a producer that skips synchronisation is caught as stale data",
                   rule="dlpack.stream_order" if protocol == "dlpack" else "cai.stream_order",
                   text="before the producer's queued writes finished")
        for dtype, memory in (("int32", "pinned host (kDLCUDAHost)"),
                              ("uint16", "managed (kDLCUDAManaged)")):
            for protocol in ("dlpack", "dlpack_capsule", "cuda_array_interface"):
                expect(f"{protocol}.fakegpu.interopcheck.cuda.{dtype}.strided", "pass",
                       f"{memory} memory is typed and checked correctly")
            expect(f"cuda_array_interface.fakegpu.fakegpu.cuda.{dtype}.flat.stream_order", "pass",
                   f"stream ordering holds for {memory} memory")
        expect("dlpack_capsule.fakegpu.interopcheck.cuda.float32.transposed", "pass",
               "a legacy capsule of device memory from a to_dlpack function is checked")
        expect("dlpack.fakegpu.interopcheck.cuda.int16.contiguous", "fail",
               "a capsule naming device 1 for memory of device 0 fails",
               text="differs from __dlpack_device__()")
        for variant in ("stream_1", "stream_2", "stream_handle", "stream_minus_1"):
            expect(f"dlpack.fakegpu.interopcheck.cuda.float32.flat.{variant}", "pass",
                   f"__dlpack__ with {variant.replace('_', '=', 1)} is honoured")
        zero = cases.get("dlpack.fakegpu.interopcheck.cuda.float32.flat.stream_0", {})
        note = zero.get("checks", {}).get("export", {}).get("note") or ""
        tap.ok("[warning: dlpack.stream_value] stream=0 was accepted" in note,
               "a producer that accepts the ambiguous stream=0 is warned about (the spec's "
               "'should raise')", zero)
        for consumer in ("interopcheck", "fakegpu"):
            expect(f"cuda_array_interface.fakegpu.{consumer}.cuda.float32.flat.readonly", "fail",
                   "a read-only array exported as writable over the CUDA Array Interface fails",
                   rule="cai.readonly")
        expect("dlpack.fakegpu.interopcheck.cuda.float32.flat.readonly", "pass",
               "a read-only array with DLPack's read-only flag passes")
        expect("dlpack.fakegpu.interopcheck.cuda.float32.flat.legacy", "unsupported",
               "a producer may refuse legacy capsules with BufferError", text="BufferError")
        # A library that can hand over its contents but not their address (TensorFlow on a
        # GPU): contents compared on the host copy, zero-copy reported as not checked.
        for case_id in ("cuda_array_interface.fakegpu.fakegpu.cuda.uint32.strided",
                        "cuda_array_interface.fakegpu.fakegpu.cuda.uint32.offset"):
            expect(case_id, "pass",
                   "contents-only descriptions are compared on the host, zero-copy not claimed",
                   checks={"contents": "pass", "zero_copy": "skip"})
        expect("cuda_array_interface.fakegpu.fakegpu.cuda.uint32.flat.stream_order",
               "unsupported", "no writes are queued into an array whose address is unknown",
               text="not their address")
        for consumer in ("interopcheck", "fakegpu"):
            expect(f"cuda_array_interface.fakegpu.{consumer}.cuda.int64.flat.stream_order",
                   "pass", "a version 2 export (no stream key) of an array on the legacy "
                   "default stream is read after that stream, as consumers of version 2 do")
        for protocol in ("dlpack", "cuda_array_interface"):
            expect(f"{protocol}.fakegpu.interopcheck.cuda.float32.ndim32", "pass",
                   "32 dimensions (29 of extent 1) are merged down to what the GPU kernels take",
                   checks={"contents": "pass"})
        devices = report["environment"]["devices"]
        tap.ok(devices["cuda"]["available"], "the report records the CUDA device as available",
               devices)

        # A consumer that dies on its first import: the pair's later cases run isolated. A GPU
        # case must not run in a forked child, where the driver (the stand-in, like the real
        # one) refuses every call; it runs in a worker of its own.
        out = os.path.join(workdir, "crash.json")
        marker = os.path.join(workdir, "aborted")
        proc = taplib.run(binary, "--probe-dir", probes, "--producer", "fakegpu", "--consumer",
                          "fakegpu", "--protocol", "cuda_array_interface", "--device", "cuda",
                          "--timeout", "30", "-o", out,
                          env={"IC_CUDA_LIBRARY": os.environ["IC_CUDA_LIBRARY"],
                               "FAKEGPU_ABORT_ONCE": marker})
        report = taplib.load_valid_report(tap, out)
        outcomes = [c["outcome"] for c in report["cases"]]
        tap.ok(outcomes.count("crash") == 1 and os.path.exists(marker),
               "the consumer's first import crashed, once", proc.stderr[-2000:])
        errors = [(c["id"], c.get("diagnostic")) for c in report["cases"]
                  if c["outcome"] == "error"]
        tap.ok(not errors and outcomes.count("pass") >= 20,
               "the crashing pair's other cases ran on the GPU: no errors, "
               f"{outcomes.count('pass')} passed", errors[:3])
        expect = taplib.case_expecter(tap, taplib.cases_by_id(report))
        expect("cuda_array_interface.fakegpu.fakegpu.cuda.float32.strided", "pass",
               "a case of the crashed pair passes, its contents checked on the GPU",
               checks={"contents": "pass"})

        # A producer that refuses stream=0 (disallowed, no exception named) with AssertionError,
        # as PyTorch does: a conformant refusal, not a refusal by the wrong exception.
        out = os.path.join(workdir, "stream0.json")
        taplib.run(binary, "--probe-dir", probes, "--producer", "fakegpu", "--consumer",
                   "interopcheck", "--protocol", "dlpack", "--dtype", "float32", "--layout",
                   "flat", "--device", "cuda", "-o", out,
                   env={"IC_CUDA_LIBRARY": os.environ["IC_CUDA_LIBRARY"],
                        "FAKEGPU_REFUSE_STREAM_0": "1"})
        report = taplib.load_valid_report(tap, out)
        expect = taplib.case_expecter(tap, taplib.cases_by_id(report))
        expect("dlpack.fakegpu.interopcheck.cuda.float32.flat.stream_0", "pass",
               "a refusal of stream=0 passes whatever its exception (the spec names none)",
               checks={"export": "pass"})


if __name__ == "__main__":
    taplib.main(main)
