"""The rules table against the code, the tests and the rules document.

Runs last (meson: lowest priority, alone). Every other test appends the rule ids it saw fire to
a file in the directory given as the second argument (C unit tests through test_diag.h, Python
tests through taplib.load_report). This test fails when
  - docs/rules.md is not what `interopcheck rules --format markdown` prints;
  - a rule of the table fired in no test (a rule nothing makes fire is unverified);
  - something cites a rule the table does not hold: a fired id, a probe's deviation, a rule
    the reproducer generator knows.
The C code cannot cite a rule outside the table at all: rules are enum values there.
"""
import ast
import glob
import json
import os

import taplib


def table(binary):
    proc = taplib.run(binary, "rules", "--format", "json")
    return proc, ({rule["id"]: rule for rule in json.loads(proc.stdout)}
                  if proc.returncode == 0 else {})


def fired_rules(directory):
    fired = {}
    for path in glob.glob(os.path.join(directory, "*.txt")):
        name = os.path.basename(path)[:-4]
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    fired.setdefault(line.strip(), set()).add(name)
    return fired


def probe_deviation_rules(root):
    """The rule ids probes/*.py declare in their deviations, read without importing them."""
    cited = []
    for path in sorted(glob.glob(os.path.join(root, "probes", "*.py"))):
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
                if "rule" in keys and "side" in keys and "link" in keys:
                    value = node.values[keys.index("rule")]
                    if isinstance(value, ast.Constant):
                        cited.append((os.path.basename(path), value.value))
    return cited


def generator_rules(root):
    """The rule ids probes/_repro.py has reproducers for (the keys of RULES and the ids
    _choose compares with)."""
    tree = ast.parse(open(os.path.join(root, "probes", "_repro.py"), encoding="utf-8").read())
    cited = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text.count(".") == 1 and text.split(".")[0] in (
                    "exchange", "python", "dlpack", "buffer", "array_interface", "array_struct",
                    "array", "cai") and text.replace(".", "").replace("_", "").isalnum():
                cited.add(text)
    return cited


def test(tap, args):
    binary, fired_dir = args[0], args[1]
    root = taplib.source_root()
    proc, rules = table(binary)
    tap.ok(proc.returncode == 0 and len(rules) > 50,
           f"interopcheck rules --format json lists the table ({len(rules)} rules)", proc.stderr)

    markdown = taplib.run(binary, "rules", "--format", "markdown").stdout
    with open(os.path.join(root, "docs", "rules.md"), encoding="utf-8") as handle:
        committed = handle.read()
    tap.ok(committed == markdown,
           "docs/rules.md is what `interopcheck rules --format markdown` prints (regenerate it "
           "with: build/src/interopcheck rules --format markdown > docs/rules.md)")
    missing_anchor = [rule for rule in rules if f'<a id="{rule.replace(".", "-")}"></a>' not in committed]
    tap.ok(not missing_anchor, "every rule has its anchor in docs/rules.md, which reports link to",
           missing_anchor)

    fired = fired_rules(fired_dir)
    unknown = sorted(set(fired) - set(rules))
    tap.ok(not unknown, "every rule a test saw fire is in the table", unknown)
    unfired = sorted(set(rules) - set(fired))
    tap.ok(fired and not unfired,
           f"every rule of the table fired in some test ({len(rules) - len(unfired)} of "
           f"{len(rules)}; the files are in {fired_dir})",
           "no test makes these fire: " + ", ".join(unfired))

    deviations = probe_deviation_rules(root)
    bad = [f"{probe}: {rule}" for probe, rule in deviations if rule not in rules]
    tap.ok(deviations and not bad,
           f"the probes' deviations cite rules of the table ({len(deviations)} deviations)", bad)
    generated = generator_rules(root)
    bad = sorted(generated - set(rules))
    tap.ok(generated and not bad,
           f"the reproducer generator knows only rules of the table ({len(generated)} rules)", bad)


if __name__ == "__main__":
    taplib.main(test)
