"""Integration test: the 8-bit floats (float8_e4m3fn, float8_e5m2).

The pattern generator gives them finite normal values, DLPack carries them as
kDLFloat8_e4m3fn / kDLFloat8_e5m2, and the probes that have them (torch, jax, NumPy through
ml_dtypes) build them. torch and JAX exchange both kinds over DLPack, each way and into
interopcheck's own consumer, and JAX computes with the import; NumPy refuses them over DLPack
with BufferError (unsupported). Over __array_interface__, NumPy writes ml_dtypes' float8_e4m3fn
as raw bytes ("<V1": unsupported, the typestr has no name for it) and float8_e5m2 as "<f1", a
float size the typestr does not have: array_interface.typestr, the producer's, whose reproducer
reproduces. A probe without them leaves them out with the kit's reason.
Usage: test_float8.py INTEROPCHECK_BINARY
"""
import os
import tempfile

import taplib

KINDS = ("float8_e4m3fn", "float8_e5m2")


def main(tap, args):
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "float8.json")
        report, cases, expect = taplib.run_failing_selection(
            tap, args[0], out, "NumPy's typestr of float8_e5m2 is <f1", "--producer",
            "torch,jax,numpy,mlx", "--consumer", "torch,jax,numpy,interopcheck",
            "--protocol", "dlpack,array_interface", "--dtype", ",".join(KINDS), "--layout",
            "contiguous")
        for kind in KINDS:
            for producer, consumer in (("torch", "jax"), ("jax", "torch"),
                                       ("torch", "interopcheck"), ("jax", "interopcheck")):
                expect(f"dlpack.{producer}.{consumer}.cpu.{kind}.contiguous", "pass",
                       "exchanged over DLPack", checks={"contents": "pass", "dtype": "pass"})
            expect(f"dlpack.torch.jax.cpu.{kind}.contiguous", "pass",
                   "JAX computes with the import", checks={"compute": "pass"})
            expect(f"dlpack.torch.numpy.cpu.{kind}.contiguous", "unsupported",
                   "NumPy refuses to import it", text="BufferError")
            expect(f"dlpack.numpy.torch.cpu.{kind}.contiguous", "unsupported",
                   "NumPy refuses to export it", text="BufferError")
            case = cases.get(f"dlpack.mlx.torch.cpu.{kind}.contiguous", {})
            tap.ok(case.get("outcome") == "unsupported" and
                   "no 8-bit float types" in case.get("diagnostic", ""),
                   f"a probe without 8-bit floats leaves {kind} out, saying why", case)
        expect("array_interface.numpy.interopcheck.cpu.float8_e4m3fn.contiguous", "unsupported",
               "raw bytes under <V1: the typestr has no name for it",
               text="array_interface has no name for float8_e4m3fn")
        expect("array_interface.numpy.interopcheck.cpu.float8_e5m2.contiguous", "fail",
               "<f1 is no float size of the typestr", rule="array_interface.typestr")
        findings = [f for f in report["findings"] if f["rule"] == "array_interface.typestr"]
        tap.ok(len(findings) == 1 and findings[0]["culprit"] == "numpy" and
               findings[0]["side"] == "producer", "one finding, NumPy's as the producer",
               findings)
        for finding in findings[:1]:
            taplib.check_reproduces(tap, args[0], out, finding)


if __name__ == "__main__":
    taplib.main(main)
