"""Integration test: the lazy value-view layouts (neg_view, conj_view), and torch's tensor
variants (requires_grad, subclass).

A test library whose neg_view arrays keep the negated elements in memory under a flag
(tests/probes/lazylib.py) fails exchange.contents, charged to it as the producer, where its
DLPack export loses the flag (float32), and passes where it resolves the flag into a copy it
flags (float64); the reproducer reproduces. Probes that do not build lazy views leave both
layouts out with the kit's reason. torch refuses to export a tensor that records gradients
over DLPack with BufferError (unsupported, the spec's refusal), and an nn.Parameter passes.
Usage: test_lazy_views.py INTEROPCHECK_BINARY
"""
import os
import tempfile

import taplib

SELECTION = ("--producer", "lazylib,numpy", "--consumer", "numpy,interopcheck", "--protocol",
             "dlpack", "--dtype", "float32,float64", "--layout", "contiguous,neg_view,conj_view")


def check_cases(tap, cases, expect):
    for consumer in ("numpy", "interopcheck"):
        prefix = f"dlpack.lazylib.{consumer}.cpu"
        expect(f"{prefix}.float32.neg_view", "fail",
               f"an export that loses the negation flag fails ({consumer})",
               rule="exchange.contents", text="the export: 24 of 24 elements differ")
        case = cases.get(f"{prefix}.float32.neg_view", {})
        tap.ok(case.get("side") == "producer" and case.get("severity") == "harmful",
               "... charged to the producer, harmful", case)
        expect(f"{prefix}.float64.neg_view", "pass",
               f"an export that resolves the flag into a flagged copy passes ({consumer})",
               checks={"contents": "pass"})
    expect("dlpack.lazylib.interopcheck.cpu.float64.neg_view.legacy", "unsupported",
           "a legacy request it cannot answer without an unflagged copy is refused")
    case = cases.get("dlpack.numpy.numpy.cpu.float32.neg_view", {})
    tap.ok(case.get("outcome") == "unsupported" and
           "no lazy negation or conjugation views" in case.get("diagnostic", ""),
           "a library without lazy views leaves the layout out, saying why", case)


def main(tap, args):
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "lazy.json")
        report, cases, expect = taplib.run_failing_selection(
            tap, args[0], out, "an export lost its negation flag", *SELECTION)
        check_cases(tap, cases, expect)
        taplib.check_findings(tap, args[0], out, report, "lazylib", ["exchange.contents"],
                              "producer")
        check_tensor_variants(tap, args[0], os.path.join(workdir, "variants.json"))


def check_tensor_variants(tap, binary, out):
    proc = taplib.run(binary, "--producer", "torch,numpy", "--consumer", "numpy,interopcheck",
                      "--protocol", "dlpack", "--dtype", "float32,int32", "--layout",
                      "requires_grad,subclass", "-o", out, "-q")
    tap.ok(proc.returncode in (0, 1), "torch's tensor variants ran", proc.stderr)
    cases = taplib.cases_by_id(taplib.load_report(out))
    for consumer in ("numpy", "interopcheck"):
        case = cases.get(f"dlpack.torch.{consumer}.cpu.float32.requires_grad", {})
        tap.ok(case.get("outcome") == "unsupported" and "BufferError" in
               case.get("diagnostic", ""),
               f"a tensor recording gradients is refused with BufferError ({consumer})", case)
        for dtype in ("float32", "int32"):
            case = cases.get(f"dlpack.torch.{consumer}.cpu.{dtype}.subclass", {})
            tap.ok(case.get("outcome") == "pass" and
                   case.get("checks", {}).get("contents", {}).get("status") == "pass",
                   f"an nn.Parameter exports its elements ({consumer}, {dtype})", case)
    case = cases.get("dlpack.numpy.numpy.cpu.float32.subclass", {})
    tap.ok(case.get("outcome") == "unsupported" and
           "no gradient-recording arrays or array subclasses" in case.get("diagnostic", ""),
           "a library without them leaves the layouts out, saying why", case)


if __name__ == "__main__":
    taplib.main(main)
