"""Integration test: the 4-bit integers (int4, uint4), one element a byte.

The pattern puts a 4-bit value in the low half of a zero byte, and elements compare by that half
(ml_dtypes leaves the high half zero, torch's int8 viewed as int4 sign-extends). DLPack spells
them (kDLInt or kDLUInt, 4 bits) with DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, which only a
versioned capsule carries. The test library nibblelib exports int4 that way (interopcheck's
consumer reads it, strided too) and uint4 as uint8 (exchange.dtype, the producer's). Among the
real libraries: torch exports its int4 as int8 (exchange.dtype, harmful: a consumer reads the
low half as a byte; the reproducer reproduces), JAX refuses to export them with an error that is
not BufferError, and NumPy (ml_dtypes) and JAX exchange them over __array__ and compute with
them. A probe without them leaves them out with the kit's reason.
Usage: test_int4.py INTEROPCHECK_BINARY
"""
import os
import tempfile

import taplib


def main(tap, args):
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "int4.json")
        report, cases, expect = taplib.run_failing_selection(
            tap, args[0], out, "torch exports int4 as int8", "--producer",
            "nibblelib,torch,jax,numpy,mlx", "--consumer", "interopcheck,numpy,torch",
            "--protocol", "dlpack,array", "--dtype", "int4,uint4", "--layout",
            "contiguous,flat,strided")
        for layout in ("flat", "strided"):
            expect(f"dlpack.nibblelib.interopcheck.cpu.int4.{layout}", "pass",
                   "padded int4 read by interopcheck's consumer",
                   checks={"contents": "pass", "dtype": "pass", "strides": "pass"})
            expect(f"dlpack.nibblelib.interopcheck.cpu.uint4.{layout}", "fail",
                   "uint4 exported as uint8", rule="exchange.dtype")
        expect("dlpack.nibblelib.interopcheck.cpu.int4.flat.legacy", "unsupported",
               "a legacy capsule cannot say padded: refused", text="BufferError")
        expect("dlpack.nibblelib.numpy.cpu.int4.flat", "unsupported",
               "NumPy refuses a 4-bit import", text="BufferError")
        for kind in ("int4", "uint4"):
            case = cases.get(f"dlpack.torch.interopcheck.cpu.{kind}.contiguous", {})
            tap.ok(case.get("outcome") == "fail" and case.get("rule") == "exchange.dtype" and
                   case.get("culprit") == "torch" and case.get("severity") == "harmful",
                   f"torch exports {kind} as an 8-bit integer: harmful, torch's", case)
            expect(f"dlpack.jax.interopcheck.cpu.{kind}.contiguous", "fail",
                   "JAX refuses with JaxRuntimeError, not BufferError", rule="exchange.refusal",
                   text="JaxRuntimeError")
            expect(f"array.numpy.numpy.cpu.{kind}.contiguous", "pass",
                   "NumPy (ml_dtypes) over __array__, computing with it",
                   checks={"contents": "pass", "dtype": "pass", "compute": "pass"})
            expect(f"array.jax.numpy.cpu.{kind}.contiguous", "pass",
                   "JAX's packed 4-bit array over __array__", checks={"contents": "pass"})
            case = cases.get(f"dlpack.mlx.interopcheck.cpu.{kind}.flat", {})
            tap.ok(case.get("outcome") == "unsupported" and
                   "no 4-bit integer types" in case.get("diagnostic", ""),
                   f"a probe without 4-bit integers leaves {kind} out, saying why", case)
        findings = [f for f in report["findings"]
                    if f["rule"] == "exchange.dtype" and f["culprit"] == "torch"]
        tap.ok(len(findings) == 1 and findings[0]["side"] == "producer",
               "one finding for torch's 4-bit exports", findings)
        for finding in findings[:1]:
            taplib.check_reproduces(tap, args[0], out, finding)


if __name__ == "__main__":
    taplib.main(main)
