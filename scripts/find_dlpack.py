"""Print where an installed package keeps a DLPack >= 1.3 header, for meson.build.

Output: two lines, the include directory and the header's path relative to it. Exit status 1
with a message on stderr when no package provides one. The candidates are the wheels listed in
../shared/docs/libraries.md section 5; Debian's libdlpack-dev (0.6) is too old on purpose.
"""
import importlib.util
import os
import sys


def candidates():
    spec = importlib.util.find_spec("tvm_ffi")
    if spec and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            yield os.path.join(root, "include"), "dlpack/dlpack.h"
    spec = importlib.util.find_spec("pyarrow")
    if spec and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            yield os.path.join(root, "include"), "arrow/c/dlpack_abi.h"


def lacks(path):
    """Why the header at path cannot serve interopcheck, or None. The C code uses the DLPack C
    exchange API and the versioned tensor as C types: pyarrow's dlpack_abi.h (DLPack 1.0, written
    for C++) declares the versioned tensor as a struct tag only and has no exchange API."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    if "DLPackExchangeAPI" not in text:
        return "no DLPackExchangeAPI (the C exchange API of DLPack 1.3)"
    if "} DLManagedTensorVersioned;" not in text:
        return "DLManagedTensorVersioned is not a C typedef"
    return None


def main():
    refused = []
    for include_dir, header in candidates():
        path = os.path.join(include_dir, header)
        if not os.path.isfile(path):
            continue
        reason = lacks(path)
        if reason is None:
            print(include_dir)
            print(header)
            return 0
        refused.append(f"{path}: {reason}")
    sys.stderr.write("no usable DLPack >= 1.3 header found"
                     + "".join(f"\n  {line}" for line in refused)
                     + "\ninstall apache-tvm-ffi into this Python (pip install apache-tvm-ffi), "
                     "or pass -Ddlpack_include=DIR\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
