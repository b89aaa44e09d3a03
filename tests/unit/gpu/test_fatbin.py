"""Checks the verification kernels' fatbin as nvcc built it, and that interopcheck embeds it.

A fatbin is a container (fatbinary.h in the CUDA toolkit describes it): a 16-byte header
(magic 0xBA55ED50, version, header size, size of the entries), then one entry per image, each
with a header that gives its kind (1 PTX, 2 ELF machine code), its size and its SM architecture.
The driver picks the ELF image of the GPU's architecture, or JIT-compiles the newest PTX it can;
so the fatbin must hold machine code for every architecture the build asked for and PTX for
the newest. This parses the file itself (the toolkit's cuobjdump is not always installed).

Usage: test_fatbin.py FATBIN INTEROPCHECK_BINARY ARCHS PTX_ARCH   (ARCHS: comma-separated)
"""
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2


def entries(blob):
    magic, version, header_size, entries_size = struct.unpack_from("<IHHQ", blob, 0)
    if magic != FATBIN_MAGIC:
        raise ValueError(f"magic {magic:#x}, not {FATBIN_MAGIC:#x}")
    found, offset, end = [], header_size, header_size + entries_size
    if end != len(blob):
        raise ValueError(f"the header says {end} bytes, the file has {len(blob)}")
    while offset < end:
        kind, _, entry_header, payload = struct.unpack_from("<HHIQ", blob, offset)
        arch = struct.unpack_from("<I", blob, offset + 28)[0]
        found.append((kind, arch, payload))
        offset += entry_header + payload
    if offset != end:
        raise ValueError(f"the entries end at {offset}, not at {end}")
    return found


def main(fatbin_path, binary_path, archs, ptx_arch):
    wanted = sorted(int(a) for a in archs.split(","))
    with open(fatbin_path, "rb") as handle:
        blob = handle.read()
    results = []
    try:
        images = entries(blob)
        results.append((True, f"the fatbin parses: {len(images)} images in {len(blob)} bytes", ""))
    except (ValueError, struct.error) as exc:
        results.append((False, "the fatbin parses", str(exc)))
        images = []
    elf = sorted(arch for kind, arch, _ in images if kind == KIND_ELF)
    ptx = sorted(arch for kind, arch, _ in images if kind == KIND_PTX)
    results.append((elf == wanted, "machine code for sm_" + ", sm_".join(map(str, wanted)),
                    f"ELF images for {elf}"))
    results.append((ptx == [int(ptx_arch)], f"PTX for compute_{ptx_arch} only, for newer GPUs",
                    f"PTX images for {ptx}"))
    results.append((all(size > 0 for _, _, size in images), "no image is empty", ""))
    with open(binary_path, "rb") as handle:
        binary = handle.read()
    results.append((blob in binary, "interopcheck embeds the fatbin byte for byte",
                    f"{len(blob)} bytes not found in {binary_path}"))
    print(f"1..{len(results)}")
    for number, (ok, name, diag) in enumerate(results, 1):
        print(f"{'ok' if ok else 'not ok'} {number} - {name}")
        if not ok and diag:
            print(f"# {diag}")
    return 0 if all(ok for ok, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
