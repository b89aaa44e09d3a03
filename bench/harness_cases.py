"""What a user would write instead of interopcheck: the same exchanges and the cheap checks, in
Python, case by case, against the verdicts of an interopcheck report.

For each case of the report that the harness can do the same way (see select()), it loads the
two probes as the driver does, builds the producer's array from interopcheck's own byte pattern
through the layout's ops, hands the export to the consumer's probe behind a wrapper that offers
the case's protocol only, and checks with NumPy what is cheap to express: the values are the
expected view's byte for byte, the shape and dtype survive, and, where the report says zero-copy
was checked, the import starts at the producer's first element. Its verdict is pass, fail or
refused; interopcheck's `unsupported` is a refusal too.

Not checked here (interopcheck checks them in C): the export's own validity, strides, read-only,
deleters and buffer releases, write-through, compute, and which refusals the protocol allows. A
case that interopcheck failed on those alone is counted as beyond the harness, not hidden.

The plain loop (no pytest): harness_cases.py REPORT.json [--libraries A,B] [--json]
The pytest form is test_harness.py; bench_harness.py times interopcheck, pytest and this loop.
"""
import argparse
import collections
import ctypes
import importlib.util
import json
import math
import os
import sys
import time

import numpy as np

from bench_matrix import LAYOUTS, LOAD_PROBES

HERE = os.path.dirname(os.path.abspath(__file__))
PROBES_DIR = os.path.join(os.path.dirname(HERE), "probes")

# Fast CPU libraries that import in the shared environment without crashing; a library with a
# long import (TensorFlow, JAX, paddle) would only make every side wait for it.
LIBRARIES = ("numpy", "torch", "py_array", "py_memoryview", "py_ctypes", "pyarrow",
             "array_api_strict")
# The protocols a Python wrapper can offer alone, as the driver's proxy does.
PROTOCOLS = ("dlpack", "buffer", "array_interface", "array")
# Under a lazy negation or conjugation describe() shows memory holding other values by
# construction; what the import means there needs the library's flags, not NumPy.
VALUE_VIEW_LAYOUTS = ("neg_view", "conj_view")
# The checks the harness makes itself; an interopcheck failure on any other is beyond it.
HARNESS_CHECKS = ("contents", "dtype", "shape", "zero_copy")
VERDICTS = {"pass": "pass", "fail": "fail", "unsupported": "refused"}
# PEP 3118's struct formats and the array interface's typestr have no names for these: NumPy
# exports them as raw bytes ('V2'), so their dtype cannot survive either protocol.
NAMELESS = dict.fromkeys(("buffer", "array_interface"),
                         ("bfloat16", "float8_e4m3fn", "float8_e5m2", "int4", "uint4"))


# --- interopcheck's byte pattern (src/core/ic_kernel_logic.h), element by element -----------

MASK = (1 << 64) - 1
BOOL, INT, UINT, FLOAT, BFLOAT, COMPLEX, FLOAT8_E4M3FN, FLOAT8_E5M2, NIBBLE = range(9)
VALUE_CLASS = {"bool": BOOL, "bfloat16": BFLOAT, "float8_e4m3fn": FLOAT8_E4M3FN,
               "float8_e5m2": FLOAT8_E5M2, "int4": NIBBLE, "uint4": NIBBLE}


def value_class(dtype):
    if dtype in VALUE_CLASS:
        return VALUE_CLASS[dtype]
    for prefix, kind in (("uint", UINT), ("int", INT), ("float", FLOAT), ("complex", COMPLEX)):
        if dtype.startswith(prefix):
            return kind
    raise ValueError(f"no value class for {dtype}")


def mix(x):
    """splitmix64's finaliser, in 64-bit arithmetic."""
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def draw(seed, index, lane=0):
    return mix(seed ^ mix((index * 2 + lane) & MASK))


def pattern_seed(run_seed, case_id):
    """The case's seed: FNV-1a of its id, mixed with the run's seed."""
    digest = 0xCBF29CE484222325
    for byte in case_id.encode():
        digest = ((digest ^ byte) * 0x100000001B3) & MASK
    return mix(run_seed ^ digest)


def float_bits(r, bits, exp_bits, spread):
    """A finite normal float whose exponent lies within `spread` of the bias."""
    mant_bits = bits - 1 - exp_bits
    bias = (1 << (exp_bits - 1)) - 1
    exponent = bias - spread + (r >> 40) % (2 * spread + 1)
    return ((r >> 63) << (bits - 1)) | (exponent << mant_bits) | (r & ((1 << mant_bits) - 1))


def float8_walk(seed, exp_bits, spread):
    """The 8-bit float codes' walk: (first code, step, number of codes); a step prime to their
    number, so neighbours differ."""
    mantissas = 1 << (7 - exp_bits)
    codes = 2 * mantissas * (2 * spread + 1)
    step = draw(seed, -2) % codes | 1
    while math.gcd(step, codes) != 1:
        step += 2
    return draw(seed, -1) % codes, step, codes


def float8_code(k, exp_bits, spread):
    mant_bits = 7 - exp_bits
    mantissas = 1 << mant_bits
    exponent = (1 << (exp_bits - 1)) - 1 - spread + (k >> 1) // mantissas
    return ((k & 1) << 7) | (exponent << mant_bits) | (k >> 1) % mantissas


def pattern(dtype, size, count, seed):
    """The `count` elements of `size` bytes of the case's base, as interopcheck fills them:
    little-endian bytes."""
    kind = value_class(dtype)
    start, step = draw(seed, -1), draw(seed, -2) | 1
    float8 = {FLOAT8_E4M3FN: (4, 5), FLOAT8_E5M2: (5, 10)}.get(kind)
    if float8:
        first, walk, codes = float8_walk(seed, *float8)
    widths = {2: (16, 5, 12), 4: (32, 8, 40), 8: (64, 11, 200)}
    out = []
    for i in range(count):
        r = draw(seed, i)
        if kind == BOOL:
            value = 1 if i == 0 else 0 if i == count - 1 else (r >> 33) & 1
        elif kind in (INT, UINT):
            value = (start + i * step) & MASK if size <= 2 else r
        elif kind == NIBBLE:
            value = (start + i * step) & 0xF
        elif kind == FLOAT:
            value = float_bits(r, *widths[size])
        elif kind == BFLOAT:
            value = float_bits(r, 16, 8, 40)
        elif float8:
            value = float8_code((first + i * walk) % codes, *float8)
        else:  # complex: two floats of half the size, the imaginary part from the second lane
            half = size // 2
            real = float_bits(r, *widths[half])
            value = real | float_bits(draw(seed, i, 1), *widths[half]) << (8 * half)
        out.append((value & ((1 << (8 * size)) - 1)).to_bytes(size, "little"))
    # Wide random values could repeat end to end: interopcheck flips the last element's lowest
    # bit then, so that the base is never a palindrome.
    if count >= 2 and kind not in (BOOL, NIBBLE) and not (kind in (INT, UINT) and size <= 2):
        if out[-1] == out[0]:
            out[-1] = bytes([out[-1][0] ^ 1]) + out[-1][1:]
    return b"".join(out)


# --- the expected view and the import, as raw elements ---------------------------------------

RAW = {1: np.dtype("u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8"),
       16: np.dtype("V16")}


def _same_elements(x, _):
    return x


def expected_view(base, itemsize, ops):
    """The layout's view of the base in NumPy (the probe kit's apply_ops, as the probes build
    it): elements as raw unsigned integers of the dtype's size, so that every dtype (bfloat16,
    the 8-bit floats) compares by its bytes. unit_stride changes a size-1 dimension's stride,
    requires_grad, subclass and other_device the array's type or place: no element."""
    x = np.frombuffer(base, RAW[itemsize])
    return sys.modules["_probekit"].apply_ops(
        x, ops, xp=np, **dict.fromkeys(("unit_stride", "requires_grad", "subclass",
                                         "other_device"), _same_elements))


def elements(description, itemsize):
    """describe()'s array as a NumPy array of raw elements over the same memory, and the address
    of its first element (None where the probe gave only the bytes)."""
    raw = RAW[itemsize]
    if "bytes" in description:
        return np.frombuffer(description["bytes"], raw).reshape(description["shape"]), None
    if "buffer" in description:
        x = np.asarray(memoryview(description["buffer"])).view(raw)
        return x, x.__array_interface__["data"][0]
    shape, address = description["shape"], description["data"]
    strides = description["strides"]
    if strides is None:
        strides = [itemsize * int(np.prod(shape[d + 1:])) for d in range(len(shape))]
    if 0 in shape:
        return np.empty(shape, raw), address
    low = sum(s * (n - 1) for s, n in zip(strides, shape) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(strides, shape) if s > 0) + itemsize
    memory = (ctypes.c_char * (high - low)).from_address(address + low)
    return np.ndarray(shape, raw, buffer=memory, offset=-low, strides=strides), address


def same_bytes(got, want, dtype):
    """Element bytes in C order, as interopcheck compares them: bools by truth, the 4-bit
    integers by their low half (what a byte holds above it is the library's business)."""
    a = np.frombuffer(got.tobytes(), np.uint8)
    b = np.frombuffer(want.tobytes(), np.uint8)
    if a.size != b.size:
        return False
    if dtype == "bool":
        return np.array_equal(a != 0, b != 0)
    if dtype in ("int4", "uint4"):
        return np.array_equal(a & 0xF, b & 0xF)
    return np.array_equal(a, b)


# --- offering one protocol only --------------------------------------------------------------
# A consumer handed the producer's array itself could take another protocol (NumPy prefers
# __array_interface__ to the buffer protocol, for one): as interopcheck's proxy does, each
# wrapper offers the case's protocol and nothing else, passing the consumer's request on.

class OnlyDLPack:
    def __init__(self, obj):
        self._obj = obj

    def __dlpack__(self, *args, **kwargs):
        return self._obj.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._obj.__dlpack_device__()


class OnlyArrayInterface:
    def __init__(self, obj):
        self._obj = obj

    @property
    def __array_interface__(self):
        return self._obj.__array_interface__


class OnlyArray:
    def __init__(self, obj):
        self._obj = obj

    def __array__(self, *args, **kwargs):
        return self._obj.__array__(*args, **kwargs)


class OnlyBuffer:
    """PEP 688: the consumer's flags go on to the producer's own buffer."""

    def __init__(self, obj):
        self._obj = obj

    def __buffer__(self, flags):
        return self._obj.__buffer__(flags)

    def __release_buffer__(self, view):
        view.release()


ONLY = {"dlpack": OnlyDLPack, "array_interface": OnlyArrayInterface, "array": OnlyArray,
        "buffer": OnlyBuffer}


# --- probes, loaded once per process ---------------------------------------------------------

class Probes:
    """Each probe loaded on first use, as the driver loads it, and its load() table."""

    def __init__(self, probes_dir=PROBES_DIR):
        # the loader bench_matrix's timing scripts use: _probekit first, each probe by path
        self.scope = {"importlib": importlib, "sys": sys, "probes_dir": probes_dir}
        exec(LOAD_PROBES, self.scope)
        self.itemsize = sys.modules["_probekit"].ITEMSIZE
        self.dir = probes_dir
        self.loaded = {}

    def __getitem__(self, name):
        if name not in self.loaded:
            module = self.scope["load"](f"interopcheck_probe_{name}", f"{self.dir}/{name}.py")
            self.loaded[name] = (module, module.load())
        return self.loaded[name]


def run_case(probes, case, run_seed):
    """One exchange and its checks: ("pass" | "fail" | "refused", why)."""
    producer, made = probes[case["producer"]]
    consumer, takes = probes[case["consumer"]]
    protocol, dtype, layout = case["protocol"], case["dtype"], case["layout"]
    if dtype not in made["dtypes"]:
        return "refused", f"{case['producer']} has no {dtype} arrays"
    if layout not in made["layouts"]:
        return "refused", f"{case['producer']} cannot make a {layout} view"
    imports = takes["imports"].get(protocol)
    if protocol not in made["exports"] or imports is None:
        return "refused", f"no {protocol} between these two"
    if dtype in NAMELESS.get(protocol, ()):
        return "refused", f"{protocol} has no name for {dtype}"

    itemsize = probes.itemsize[dtype]
    base_len, ops = LAYOUTS[layout]
    base = pattern(dtype, itemsize, base_len, pattern_seed(run_seed, case["id"]))
    ops = [tuple(op) for op in ops]
    x = producer.build(base, dtype, ops, False)
    export = producer.export(x, protocol) if hasattr(producer, "export") else x
    try:
        y = consumer.consume(ONLY[protocol](export), protocol, dtype)
    except Exception as exc:  # any exception: the consumer (or the producer it called) refused
        return "refused", f"{type(exc).__name__}: {exc}"

    want = expected_view(base, itemsize, ops)
    got_description = consumer.describe(y)
    got, got_address = elements(got_description, itemsize)
    # Sharing is checked where the consumer's import promises it and the report says
    # interopcheck could check it (an empty array has no element to locate).
    checked = case["checks"].get("zero_copy", {}).get("status") in ("pass", "fail")
    if imports.get("zero_copy") and checked:
        _, address = elements(producer.describe(x), itemsize)
        if got_address is not None and address is not None and got_address != address:
            return "fail", "zero_copy: the import is not the producer's memory"
    if imports.get("typed", True):
        if got_description["dtype"] != dtype:
            return "fail", f"dtype: {got_description['dtype']} for {dtype}"
        if list(got.shape) != list(want.shape):
            return "fail", f"shape: {list(got.shape)} for {list(want.shape)}"
        if not same_bytes(got, want, dtype):
            return "fail", "contents: the import's elements differ"
        return "pass", ""
    # An untyped import holds flat bytes: in C order, or in the export's memory order where
    # it is the export's memory.
    if same_bytes(got, want, dtype) or same_bytes(got, np.ravel(want, order="K"), dtype):
        return "pass", ""
    return "fail", "contents: the untyped import's bytes differ"


# --- cases and verdicts ----------------------------------------------------------------------

def read_report(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def select(report, libraries=LIBRARIES):
    """The report's cases the harness can do the same way: plain exchanges on the CPU between
    two of `libraries` over a protocol a wrapper can offer, with a verdict (no crash, timeout
    or error). Returns them, and a count of the others by why they were left out."""
    chosen, left_out = [], collections.Counter()
    for case in report["cases"]:
        if case["consumer"] == "interopcheck":
            left_out["interopcheck's own consumer"] += 1
        elif case["variant"] is not None:
            left_out["a variant (negotiation, read-only, another DLPack era)"] += 1
        elif case["device"] != "cpu" or case["protocol"] not in PROTOCOLS:
            left_out["a device or protocol the harness does not offer"] += 1
        elif case["producer"] not in libraries or case["consumer"] not in libraries:
            left_out["a library outside the selection"] += 1
        elif case["layout"] in VALUE_VIEW_LAYOUTS:
            left_out["a lazy negation or conjugation view"] += 1
        elif case["outcome"] not in VERDICTS:
            left_out[f"outcome {case['outcome']}"] += 1
        else:
            chosen.append(case)
    return chosen, left_out


def beyond_harness(case):
    """Why interopcheck's verdict rests on a check the harness does not make, or None."""
    if case["outcome"] != "fail":
        return None
    failed = sorted(name for name, check in case["checks"].items() if check["status"] == "fail")
    if any(name in HARNESS_CHECKS for name in failed):
        return None
    rules = sorted({case["checks"][name].get("rule", "?") for name in failed})
    return f"interopcheck failed it on {', '.join(failed) or 'its diagnostic'} " \
           f"({', '.join(rules)}), which the harness does not check"


def compare(case, verdict):
    """'agree', 'beyond' (they differ where interopcheck checks more) or 'disagree'."""
    if verdict == VERDICTS[case["outcome"]]:
        return "agree"
    return "beyond" if beyond_harness(case) else "disagree"


def run_seed(report):
    return int(report["run"]["seed"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    parser.add_argument("--json", action="store_true", help="end with one JSON line of counts")
    args = parser.parse_args()
    start = time.perf_counter()
    report = read_report(args.report)
    cases, left_out = select(report, tuple(args.libraries.split(",")))
    probes, seed = Probes(), run_seed(report)
    counts, verdicts, disagreements = collections.Counter(), collections.Counter(), []
    for case in cases:
        verdict, why = run_case(probes, case, seed)
        verdicts[verdict] += 1
        outcome = compare(case, verdict)
        counts[outcome] += 1
        if outcome == "disagree":
            disagreements.append(f"{case['id']}: interopcheck {case['outcome']}, harness "
                                 f"{verdict} ({why})")
    elapsed = time.perf_counter() - start
    print(f"{len(cases)} cases in {elapsed:.2f} s: {counts['agree']} agree, {counts['beyond']} "
          f"beyond the harness, {counts['disagree']} disagree; harness verdicts "
          f"{dict(verdicts)}; left out of the report: {sum(left_out.values())}")
    for line in disagreements[:20]:
        print("  " + line)
    if args.json:
        print(json.dumps({"cases": len(cases), "agree": counts["agree"],
                          "beyond": counts["beyond"], "disagree": counts["disagree"],
                          "verdicts": dict(verdicts), "left_out": dict(left_out)}))
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
