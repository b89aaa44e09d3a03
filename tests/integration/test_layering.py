"""Source test: every folder of src/ is a stage that includes only what its README allows.

Each src/<stage>/README.md has a line "May include: a, b, c." (or "nothing outside <stage>" or
"every stage"); every quoted #include of a file of that stage must name a header of the stage
itself or of a stage on that line. A header that two folders both hold, or a source file in
src/ outside every stage, fails the test too. And no stage but protocols/ names a protocol,
one of its variants or one of its rules (docs/adding-a-protocol.md): the others ask the
protocol's ops.

Usage: test_layering.py
"""
import os
import re

import taplib

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def allowed_stages(readme, stages):
    with open(readme, encoding="utf-8") as handle:
        text = handle.read()
    match = re.search(r"^May include: (.+)$", text, re.M)
    if not match:
        return None
    words = match.group(1).rstrip(".")
    if words.startswith("every stage"):
        return set(stages)
    if words.startswith("nothing"):
        return set()
    return {w.strip().split(" ")[0] for w in words.split(",")}


def main(tap, args):
    src = os.path.join(taplib.source_root(), "src")
    stages = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    home = {}
    twice = []
    loose = [f for f in os.listdir(src) if f.endswith((".c", ".h"))]
    tap.ok(not loose, "every source file lives in a stage folder", loose)
    for stage in stages:
        for root, _, files in os.walk(os.path.join(src, stage)):
            for name in files:
                if name.endswith((".h", ".c", ".cu")):
                    if name in home:
                        twice.append(name)
                    home[name] = stage
    tap.ok(not twice, "no file name is in two stages", twice)
    for stage in stages:
        readme = os.path.join(src, stage, "README.md")
        allowed = allowed_stages(readme, stages) if os.path.exists(readme) else None
        if not tap.ok(allowed is not None,
                      f"src/{stage}/README.md says what the stage may include"):
            continue
        unknown = allowed - set(stages)
        tap.ok(not unknown, f"{stage}: its README names only stages that exist", unknown)
        wrong = []
        for root, _, files in os.walk(os.path.join(src, stage)):
            for name in sorted(files):
                if not name.endswith((".h", ".c", ".cu")):
                    continue
                with open(os.path.join(root, name), encoding="utf-8") as handle:
                    for include in INCLUDE.findall(handle.read()):
                        other = home.get(os.path.basename(include))
                        if other and other != stage and other not in allowed:
                            wrong.append(f"{name} includes {include} ({other})")
        tap.ok(not wrong, f"{stage}: includes only {', '.join(sorted(allowed)) or 'itself'}",
               wrong)
    check_protocol_names(tap, src, stages)


# What only a protocol module (and the registry, src/core/ic_protocol.h and .c) may name: a
# protocol, a variant of one, a rule of a protocol's family. The generic names stay allowed.
PROTOCOL_NAME = re.compile(r"\bIC_(?:PROTOCOL|VARIANT|RULE)_[A-Z0-9_]+\b")
GENERIC = re.compile(r"^IC_(?:PROTOCOL_COUNT|VARIANT_(?:NONE|COUNT|READONLY|FROM_\w+)|"
                     r"RULE_(?:NONE|COUNT|SECTION_\w+|EXCHANGE_\w+|PYTHON_\w+))$")
REGISTRY = {"ic_protocol.h", "ic_protocol.c", "ic_rules.h", "ic_rules.c"}


def check_protocol_names(tap, src, stages):
    named = []
    for stage in stages:
        if stage == "protocols":
            continue
        for root, _, files in os.walk(os.path.join(src, stage)):
            for name in sorted(files):
                if not name.endswith((".h", ".c")) or name in REGISTRY:
                    continue
                with open(os.path.join(root, name), encoding="utf-8") as handle:
                    found = {n for n in PROTOCOL_NAME.findall(handle.read())
                             if not GENERIC.match(n)}
                named += [f"{stage}/{name}: {n}" for n in sorted(found)]
    tap.ok(not named, "no stage but protocols/ names a protocol, its variants or its rules",
           named)


if __name__ == "__main__":
    taplib.main(main)
