"""Integration test: guarded reads (issue 9, point 5). A producer that points its exports at
memory that is not there (tests/probes/hostile_memory.py) is a `fail` under the rule of that
protocol, charged to the producer, and the worker lives on: no case crashes, every planned case
is in the report, and the normal cases around the broken ones pass.

Usage: test_guard.py INTEROPCHECK_BINARY
"""
import os
import tempfile

import taplib

PROTOCOLS = ("dlpack", "array_interface", "array_struct", "buffer")
PRODUCERS = ("hostile_memory", "numpy")
CONSUMERS = ("interopcheck", "numpy", "hostile_memory")
DTYPES = ("float32", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "float64",
          "complex64", "uint64", "complex128")
LAYOUTS = ("flat", "contiguous")
# What each consumer imports (the others' cases are unsupported, with the reason).
IMPORTS = {"interopcheck": set(PROTOCOLS), "numpy": set(PROTOCOLS), "hostile_memory": {"dlpack"}}

# (protocol, dtype) -> (rule, what the producer did, the consumers that see it: None for every
# consumer of the protocol, else those that ask the producer again after importing).
BROKEN = {
    ("dlpack", "int8"): ("dlpack.address", "a byte_offset of 2**40", None),
    ("dlpack", "int16"): ("dlpack.address", "data in an unmapped page", None),
    ("dlpack", "int32"): ("dlpack.shape_strides", "a shape array in an unmapped page", None),
    ("dlpack", "int64"): ("dlpack.managed_tensor", "a capsule pointing at an unmapped page", None),
    ("array_interface", "uint8"): ("array_interface.data", "data[0] in an unmapped page", None),
    ("array_struct", "uint16"): ("array_struct.memory", "a struct whose data is unmapped", None),
    ("buffer", "uint32"): ("buffer.fields", "a buffer over an unmapped page", None),
    ("dlpack", "float64"): ("dlpack.deleter_early", "its own deleter called while in use",
                            {"hostile_memory"}),
    ("dlpack", "complex64"): ("dlpack.capsule_name", "one capsule handed out twice",
                              {"hostile_memory"}),
    ("dlpack", "uint64"): ("dlpack.address", "its export's memory taken away while in use",
                           {"hostile_memory"}),
}
# The consumer's own misbehaviour: (protocol, dtype) -> rule, whatever the producer.
CONSUMER_BROKEN = {("dlpack", "complex128"): "exchange.contents"}


def expected_failure(case):
    """(rule, what) for a plain case that hostile_memory makes fail, else None."""
    if case["variant"] is not None:
        return None
    key = (case["protocol"], case["dtype"])
    if case["consumer"] == "hostile_memory" and key in CONSUMER_BROKEN:
        return CONSUMER_BROKEN[key], "an import over nothing"
    if case["producer"] != "hostile_memory":
        return None
    broken = BROKEN.get((case["protocol"], case["dtype"]))
    if not broken:
        return None
    rule, what, consumers = broken
    if consumers is not None and case["consumer"] not in consumers:
        return None
    return rule, what


def main(tap, args):
    binary = args[0]
    probes = os.path.join(taplib.source_root(), "tests", "probes")
    with tempfile.TemporaryDirectory() as workdir:
        out = os.path.join(workdir, "guard.json")
        proc = taplib.run(binary, "--probe-dir", probes, "--producer", ",".join(PRODUCERS),
                          "--consumer", ",".join(CONSUMERS), "--protocol", ",".join(PROTOCOLS),
                          "--dtype", ",".join(DTYPES), "--layout", ",".join(LAYOUTS),
                          "--timeout", "60", "-j", "2", "-o", out, "-q")
        tap.ok(proc.returncode == 1, "exit status 1: the broken exports failed",
               f"status {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        report = taplib.load_valid_report(tap, out)
        cases = report["cases"]
        by_id = taplib.cases_by_id(report)

        dead = [c["id"] + ": " + c["outcome"] for c in cases
                if c["outcome"] in ("crash", "timeout", "error")]
        tap.ok(not dead, "no case crashed, hung or failed the tool: the worker lived through every "
               "unreadable address", dead[:20])

        planned = {f"{p}.{prod}.{cons}.cpu.{d}.{l}" for p in PROTOCOLS for prod in PRODUCERS
                   for cons in CONSUMERS if p in IMPORTS[cons] for d in DTYPES for l in LAYOUTS}
        missing = sorted(planned - set(by_id))
        tap.ok(not missing, f"every planned case is in the report ({len(planned)} plain cases, "
               f"{len(cases)} with the variants)", missing[:20])

        # Each misbehaviour: a fail under its protocol's rule, charged to the producer.
        for (protocol, dtype), (rule, what, consumers) in sorted(BROKEN.items()):
            for consumer in sorted(consumers or IMPORTS):
                if protocol not in IMPORTS[consumer]:
                    continue
                for layout in LAYOUTS:
                    case_id = f"{protocol}.hostile_memory.{consumer}.cpu.{dtype}.{layout}"
                    case = by_id.get(case_id, {})
                    tap.ok(case.get("outcome") == "fail" and case.get("rule") == rule and
                           case.get("side") == "producer" and
                           case.get("culprit") == "hostile_memory",
                           f"{case_id}: {what} is a fail under {rule}, the producer's", case)

        # Memory taken away after a valid export is caught when the export is compared.
        case = by_id.get("dlpack.hostile_memory.hostile_memory.cpu.uint64.flat", {})
        tap.ok(case.get("checks", {}).get("export", {}).get("status") == "pass" and
               case.get("checks", {}).get("contents", {}).get("status") == "fail" and
               "readable when exported" in case.get("diagnostic", ""),
               "memory taken away after a valid export fails the contents check, not the export",
               case)

        # A consumer whose import points at nothing: its own fail, whoever produced.
        for producer in PRODUCERS:
            for layout in LAYOUTS:
                case_id = f"dlpack.{producer}.hostile_memory.cpu.complex128.{layout}"
                case = by_id.get(case_id, {})
                tap.ok(case.get("outcome") == "fail" and case.get("rule") == "exchange.contents"
                       and case.get("side") == "consumer" and
                       case.get("culprit") == "hostile_memory",
                       f"{case_id}: an import over an unmapped page is the consumer's "
                       "exchange.contents", case)

        # The withheld exports never reached a library consumer: numpy was told BufferError.
        for dtype in ("int8", "int16", "int32", "int64"):
            case = by_id.get(f"dlpack.hostile_memory.numpy.cpu.{dtype}.flat", {})
            note = case.get("checks", {}).get("import", {}).get("note", "")
            tap.ok("withheld" in note and "BufferError" in note,
                   f"dlpack {dtype}: the unreadable export was withheld from numpy (BufferError)",
                   case)
        case = by_id.get("buffer.hostile_memory.numpy.cpu.uint32.flat", {})
        tap.ok(case.get("checks", {}).get("lifetime", {}).get("status") == "pass",
               "buffer uint32: the withheld buffer was released once (lifetime passes)", case)

        # The early deleter: seen, held back, and the consumer's own call still went through.
        case = by_id.get("dlpack.hostile_memory.hostile_memory.cpu.float64.flat", {})
        lifetime = case.get("checks", {}).get("lifetime", {})
        tap.ok(lifetime.get("status") == "fail" and "held" in lifetime.get("note", "") and
               "deleter_once" not in case.get("diagnostic", ""),
               "the producer's early deleter call fails lifetime, and the consumer is not blamed "
               "for a double call", case)

        # Everything else passes: the neighbours of every broken case, both directions.
        wrong = []
        for case in cases:
            if case["variant"] is not None or case["outcome"] == "unsupported":
                continue
            if expected_failure(case) is None and case["outcome"] != "pass":
                wrong.append(f"{case['id']}: {case['outcome']} {case.get('rule')}: "
                             f"{case.get('diagnostic', '')[:200]}")
        passed = sum(1 for c in cases if c["variant"] is None and c["outcome"] == "pass")
        tap.ok(not wrong and passed >= 100,
               f"every other plain case passes ({passed} of them), around each broken one",
               "\n".join(wrong[:20]))
        for protocol in PROTOCOLS:
            case_id = f"{protocol}.hostile_memory.interopcheck.cpu.float32.flat"
            tap.ok(by_id.get(case_id, {}).get("outcome") == "pass",
                   f"{case_id}: the library's correct exports pass", by_id.get(case_id))

        check_lifetime_second_look(tap, binary, probes, workdir)
        check_lifetime_old_cycle(tap, binary, probes, workdir)


def check_lifetime_second_look(tap, binary, probes, workdir):
    """A consumer that calls one deleter twice and leaks another export: the leak gets a
    second look after a full collection, and the double call, settled at the first look, is
    still reported after it (on the first case of the pair too)."""
    out = os.path.join(workdir, "lifetime.json")
    taplib.run(binary, "--probe-dir", probes, "--producer", "numpy", "--consumer",
               "hostile_memory", "--protocol", "dlpack", "--dtype", "bool", "--layout",
               "contiguous,flat", "-o", out, "-q")
    for case in taplib.load_report(out)["cases"]:
        if case.get("variant") in ("legacy_only", "versioned_only"):
            continue  # a producer of another era: the consumer's own request fails first
        note = case.get("checks", {}).get("lifetime", {}).get("note", "")
        tap.ok(case["outcome"] == "fail" and case.get("side") == "consumer" and
               "called 2 times" in note and "never called" in note,
               f"{case['id']}: both the double deleter call and the leak are reported", case)


def check_lifetime_old_cycle(tap, binary, probes, workdir):
    """Workers freeze what their imports left (gc.freeze, so that a full collection is quick),
    and a consumer's import held in a cycle of the oldest generation is still freed by the
    second look's full collection: its deleter runs, and the case passes (tests/probes/cyclelib.py
    refuses where nothing is frozen). With -j2, in discovery's worker and in its copy."""
    out = os.path.join(workdir, "cycle.json")
    proc = taplib.run(binary, "--probe-dir", probes, "--producer", "numpy", "--consumer",
                      "cyclelib", "--protocol", "dlpack", "--dtype", "float32,int16", "--layout",
                      "contiguous,flat", "-j", "2", "-o", out, "-q")
    cases = taplib.load_report(out)["cases"] if os.path.exists(out) else []
    plain = [c for c in cases if c.get("variant") not in ("legacy_only", "versioned_only")]
    tap.ok(plain and all(c["outcome"] == "pass" for c in plain),
           f"a consumer whose import sits in an old cycle: its deleter runs at the full "
           f"collection, in workers that froze their imports ({len(plain)} cases pass)",
           ([c for c in plain if c["outcome"] != "pass"][:3], proc.stderr[-800:]))


if __name__ == "__main__":
    taplib.main(main)
