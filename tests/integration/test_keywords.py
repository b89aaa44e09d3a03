"""Integration test: consumers called with from_dlpack's keywords (copy=, device=).

NumPy takes copy=True, copy=False, copy=None and device="cpu", passes them on to the producer
(the request records what it asked) and keeps their promises. A test consumer that takes the
keywords and does the opposite (tests/probes/copylib.py) fails exchange.consumer_copy and
exchange.consumer_no_copy, charged to it, with reproducers that reproduce; a consumer whose
probe declares no keywords gets no keyword cases.
Usage: test_keywords.py INTEROPCHECK_BINARY
"""
import os
import tempfile

import taplib

# variant: what NumPy must have asked of the producer
REQUESTS = {"from_copy": "copy=True", "from_no_copy": "copy=False", "from_copy_none": "copy=None",
            "from_device": "dl_device=(1, 0)"}


def main(tap, args):
    binary = args[0]
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "keywords.json")
        report, cases, expect = taplib.run_failing_selection(
            tap, binary, out, "a consumer broke its keywords", "--producer", "numpy",
            "--consumer", "copylib,numpy,badlib", "--protocol", "dlpack", "--layout", "flat",
            "--dtype", "float32")

        for variant, asked in REQUESTS.items():
            case_id = f"dlpack.numpy.numpy.cpu.float32.flat.{variant}"
            expect(case_id, "pass", f"NumPy keeps from_dlpack's {variant} promise",
                   checks={"zero_copy": "pass"})
            tap.ok(asked in cases.get(case_id, {}).get("request", ""),
                   f"... and asked the producer for {asked}", cases.get(case_id))
        for variant in ("from_copy_none", "from_device"):
            expect(f"dlpack.numpy.copylib.cpu.float32.flat.{variant}", "pass",
                   f"a consumer given {variant} that behaves passes")
        expect("dlpack.numpy.copylib.cpu.float32.flat.from_copy", "fail",
               "copy=True answered with the producer's memory fails exchange.consumer_copy",
               rule="exchange.consumer_copy", text="the producer's own memory")
        expect("dlpack.numpy.copylib.cpu.float32.flat.from_no_copy", "fail",
               "copy=False answered with a copy fails exchange.consumer_no_copy",
               rule="exchange.consumer_no_copy", text="it copied where it was told not to")
        tap.ok(not any(c["id"].startswith("dlpack.numpy.badlib.") and
                       (c.get("variant") or "").startswith("from_") for c in report["cases"]),
               "a consumer whose probe declares no keywords gets no keyword cases")

        findings = [f for f in report["findings"] if f["culprit"] == "copylib"]
        tap.ok(sorted(f["rule"] for f in findings) ==
               ["exchange.consumer_copy", "exchange.consumer_no_copy"] and
               all(f["side"] == "consumer" and f["severity"] == "harmful" for f in findings),
               "two harmful findings of copylib, as the consumer", findings)
        for finding in findings:
            taplib.check_reproduces(tap, binary, out, finding)


if __name__ == "__main__":
    taplib.main(main)
