"""Integration test: every consumer meets a producer of another DLPack era.

In the legacy_only variant interopcheck's proxy answers as a producer older than max_version
(TypeError for max_version, dl_device and copy; a retry without them works), in
versioned_only as one that exports versioned capsules only (BufferError without max_version).
NumPy retries and asks with max_version: it passes both. A test consumer
(tests/probes/eralib.py) that never retries fails dlpack.consumer_retry, and one that never
asks with max_version fails dlpack.consumer_max_version, both charged to the consumer; the
retry failure's reproducer plays the old producer and reproduces.
Usage: test_eras.py INTEROPCHECK_BINARY
"""
import os
import tempfile

import taplib

# case -> (outcome, rule, what it shows)
EXPECTED = {
    "numpy.float32.flat.legacy_only": ("pass", None, "NumPy retries without max_version"),
    "numpy.int32.flat.legacy_only": ("pass", None, "NumPy retries without max_version"),
    "numpy.float32.flat.versioned_only": ("pass", None, "NumPy asks with max_version"),
    "numpy.int32.flat.versioned_only": ("pass", None, "NumPy asks with max_version"),
    "eralib.float32.flat.legacy_only": (
        "fail", "dlpack.consumer_retry", "a consumer that does not retry without max_version"),
    "eralib.float32.flat.versioned_only": (
        "pass", None, "a consumer that asks with max_version meets a versioned-only producer"),
    "eralib.int32.flat.versioned_only": (
        "fail", "dlpack.consumer_max_version",
        "a consumer that never asks with max_version meets a versioned-only producer"),
}


def main(tap, args):
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "eras.json")
        report, _, expect = taplib.run_failing_selection(
            tap, args[0], out, "consumers failed producers of other eras", "--producer", "numpy",
            "--consumer", "eralib,numpy", "--protocol", "dlpack", "--layout", "flat", "--dtype",
            "float32,int32")
        for case, (outcome, rule, what) in EXPECTED.items():
            consumer, rest = case.split(".", 1)
            expect(f"dlpack.numpy.{consumer}.cpu.{rest}", outcome, f"{what}: {outcome}",
                   rule=rule)
        retry = {"findings": [f for f in report["findings"]
                              if f["rule"] == "dlpack.consumer_retry"]}
        taplib.check_findings(tap, args[0], out, retry, "eralib", ["dlpack.consumer_retry"],
                              "consumer")


if __name__ == "__main__":
    taplib.main(main)
