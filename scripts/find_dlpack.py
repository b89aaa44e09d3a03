"""Print where an installed package keeps a DLPack >= 1.0 header, for meson.build.

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


def main():
    for include_dir, header in candidates():
        if os.path.isfile(os.path.join(include_dir, header)):
            print(include_dir)
            print(header)
            return 0
    sys.stderr.write("no DLPack >= 1.0 header found: install apache-tvm-ffi or pyarrow into "
                     "this Python (pip install apache-tvm-ffi), or pass -Ddlpack_include=DIR\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
