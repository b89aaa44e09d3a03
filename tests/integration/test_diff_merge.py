"""Integration test: expectations files, diffs and merged reports, on real runs of the binary.

The environments to compare come from overrides of the numpy probe in a --probe-dir: each
reports numpy's real version with a suffix of its own and hands back a copy of what numpy
imports in one dtype, so the zero-copy check fails there. Two overrides that break different
dtypes make a regression and an improvement between two otherwise equal runs.
Usage: test_diff_merge.py INTEROPCHECK_BINARY
"""
import json
import os
import re
import tempfile

import taplib

SELECTION = ["--producer", "numpy,torch", "--consumer", "numpy,torch,interopcheck"]
FAILING = ("fail", "crash", "timeout")
# The order of ic_diff.h, best first; x-outcomes rank as what they were observed as.
SEVERITY = {"pass": 0, "xpass": 0, "unsupported": 1, "fail": 2, "error": 2, "xfail": 2,
            "waived": 2, "crash": 3, "timeout": 3}


def numpy_override(workdir, tag, broken_dtype):
    """A probe directory whose numpy.py is the built-in one, with numpy's version + '+tag' and
    a copy returned from every import in `broken_dtype`."""
    source_path = os.path.join(taplib.source_root(), "probes", "numpy.py")
    with open(source_path, encoding="utf-8") as handle:
        source = handle.read()
    version = "np.__version__,"  # the version argument of load_info()
    consume = "def consume(obj, protocol, dtype, **keywords):\n"
    assert version in source and consume in source, "probes/numpy.py changed shape"
    source = source.replace(version, f'np.__version__ + "+{tag}",')
    source = source.replace(consume, consume + (
        f"    if dtype == {broken_dtype!r}:\n"
        "        imported = np.from_dlpack(obj) if protocol == 'dlpack' else np.asarray(obj)\n"
        "        return imported.copy()\n"))
    directory = os.path.join(workdir, f"probes_{tag}")
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "numpy.py"), "w", encoding="utf-8") as handle:
        handle.write(source)
    return directory


def run_report(binary, out, *extra, probe_dir=None, selection=SELECTION):
    args = list(selection) + ["-o", out, "-q", *extra]
    if probe_dir:
        args = ["--probe-dir", probe_dir] + args
    return taplib.run(binary, *args)


def severity(case):
    observed = (case.get("expectation") or {}).get("observed")
    if case["outcome"] in ("xfail", "xpass", "waived") and observed in SEVERITY and \
            observed not in ("xfail", "xpass", "waived"):
        return SEVERITY[observed]
    return SEVERITY.get(case["outcome"], 2)


def classify(base, head, key=lambda c: c["id"]):
    """The counts a diff must report, computed here from the two reports."""
    before = {key(c): c for c in base["cases"]}
    after = {key(c): c for c in head["cases"]}
    counts = dict(regressed=0, improved=0, changed=0, added=0, removed=0, unchanged=0)
    for k in before.keys() & after.keys():
        a, b = before[k], after[k]
        if severity(b) > severity(a):
            counts["regressed"] += 1
        elif severity(b) < severity(a):
            counts["improved"] += 1
        elif (a["outcome"], a.get("rule")) != (b["outcome"], b.get("rule")) or \
                mask(a.get("diagnostic", "")) != mask(b.get("diagnostic", "")):
            counts["changed"] += 1
        else:
            counts["unchanged"] += 1
    counts["added"] = len(after.keys() - before.keys())
    counts["removed"] = len(before.keys() - after.keys())
    return counts


def mask(diagnostic):
    diagnostic = re.sub(r"0[xX][0-9a-fA-F]{8,}", "ADDR", diagnostic)
    return re.sub(r"aligned to [0-9]+", "aligned to N", diagnostic)


def counts_of(output):
    """The counts line of a diff, as a dict."""
    match = re.search(r"(\d+) regressed\**, (\d+) improved, (\d+) changed, (\d+) added, "
                      r"(\d+) removed, (\d+) unchanged", output)
    if not match:
        return None
    names = ("regressed", "improved", "changed", "added", "removed", "unchanged")
    return dict(zip(names, map(int, match.groups())))


def write(path, text):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


# --- Expectations ---------------------------------------------------------------------------

def check_expectations(tap, binary, workdir):
    plain_path = os.path.join(workdir, "plain.json")
    proc = run_report(binary, plain_path)
    plain = taplib.load_report(plain_path)
    fails = [c for c in plain["cases"] if c["outcome"] in FAILING]
    passes = [c for c in plain["cases"] if c["outcome"] == "pass"]
    if not fails or not passes or proc.returncode != 1:
        tap.skip(f"numpy and torch have no known failures here (status {proc.returncode})")
        return

    # A group whose cases all fail gets a wildcard entry; the other failures exact ids.
    groups = {}
    for c in plain["cases"]:
        groups.setdefault(".".join(c["id"].split(".")[:5]), []).append(c)
    wildcard = next((g for g, cs in sorted(groups.items())
                     if all(c["outcome"] in FAILING for c in cs)), None)
    lines = ["# known failures of numpy and torch", ""]
    if wildcard:
        lines.append(f"{wildcard}.**   every layout fails   https://example.org/issues/1#c2")
    for c in fails:
        if not wildcard or not c["id"].startswith(wildcard + "."):
            lines.append(f"{c['id']}  fails: {c.get('rule', c['outcome'])}  # exact id")
    expect_path = write(os.path.join(workdir, "known.txt"), "\n".join(lines) + "\n")

    out = os.path.join(workdir, "expected.json")
    proc = run_report(binary, out, "--expect", expect_path)
    tap.ok(proc.returncode == 0, "every known failure expected: exit status 0",
           f"status {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    report = taplib.load_report(out)
    errors = taplib.schema_errors(report)
    tap.ok(not errors, "the report with expectations validates against the schema",
           "\n".join(errors[:20]))
    cases = taplib.cases_by_id(report)
    xfails = [cases[c["id"]] for c in fails]
    tap.ok(all(c["outcome"] == "xfail" for c in xfails), f"the {len(fails)} failures are xfail",
           [c["id"] for c in xfails if c["outcome"] != "xfail"][:10])
    tap.ok(all(c["expectation"]["observed"] == o["outcome"] for c, o in zip(xfails, fails)),
           "each keeps the outcome it was observed as")
    tap.ok(all(c.get("rule") == o.get("rule") for c, o in zip(xfails, fails)),
           "each keeps its rule")
    if wildcard:
        covered = [c for c in xfails if c["id"].startswith(wildcard + ".")]
        tap.ok(covered and all(c["expectation"]["pattern"] == wildcard + ".**" and
                               c["expectation"]["link"] == "https://example.org/issues/1#c2" and
                               c["expectation"]["reason"] == "every layout fails"
                               for c in covered),
               "the wildcard entry covers its group, with its reason and link", covered[:2])
    others = [c for c in xfails if not wildcard or not c["id"].startswith(wildcard + ".")]
    tap.ok(all(c["expectation"]["link"] is None and "exact id" not in c["expectation"]["reason"]
               for c in others), "exact entries: no link, the comment is not in the reason",
           others[:2])
    outcomes = report["summary"]["outcomes"]
    tap.ok(outcomes["xfail"] == len(fails) and outcomes["fail"] == 0 and
           outcomes["pass"] == len(passes),
           "the summary is recounted: xfail counted, no fail", outcomes)
    cells_ok = all(sum(cell["outcomes"].values()) == cell["total"]
                   for p in report["summary"]["protocols"].values() for cell in p["cells"])
    xfail_in_cells = sum(cell["outcomes"]["xfail"]
                         for p in report["summary"]["protocols"].values() for cell in p["cells"])
    tap.ok(cells_ok and xfail_in_cells == len(fails), "the cells are recounted too",
           xfail_in_cells)
    by_cell = {}
    for c in report["cases"]:
        key = (c["protocol"], c["producer"], c["consumer"], c["device"])
        by_cell.setdefault(key, {}).setdefault(c["outcome"], 0)
        by_cell[key][c["outcome"]] += 1
    wrong = [(p, cell["producer"], cell["consumer"]) for p, entry in
             report["summary"]["protocols"].items() for cell in entry["cells"]
             if {o: n for o, n in cell["outcomes"].items() if n} !=
             by_cell.get((p, cell["producer"], cell["consumer"], cell["device"]), {})]
    tap.ok(not wrong, "every cell's counts are its own cases' outcomes", wrong[:3])
    tap.ok(f"{len(fails)} xfail" in proc.stdout and "xfail" in proc.stdout.split("\n")[0],
           "the summary line counts xfail", proc.stdout[:300])
    tap.ok("warning" not in proc.stderr, "no entry is stale", proc.stderr)

    # A passing case with an expectation, and an entry that matches nothing.
    passing = passes[0]["id"]
    extra = "\n".join(lines + [f"{passing}  expected to fail, but fixed upstream",
                               "dlpack.no_such_lib.numpy.cpu.*.*  a library no longer tested"])
    stale_path = write(os.path.join(workdir, "stale.txt"), extra + "\n")
    stale_line = len(lines) + 2
    proc = run_report(binary, out, "--expect", stale_path)
    report = taplib.load_report(out)
    tap.ok(proc.returncode == 0 and taplib.cases_by_id(report)[passing]["outcome"] == "xpass",
           "a pass that an entry expects to fail is xpass, and without --strict the run passes",
           f"status {proc.returncode}\n{proc.stderr}")
    tap.ok("xpass" in proc.stderr and "1 cases passed" in proc.stderr,
           "the xpass is reported on stderr", proc.stderr)
    tap.ok(f"{stale_path}:{stale_line}: dlpack.no_such_lib.numpy.cpu.*.*" in proc.stderr and
           "warning" in proc.stderr,
           "a stale entry is warned about with its file and line", proc.stderr)
    proc = run_report(binary, out, "--expect", stale_path, "--strict")
    tap.ok(proc.returncode == 1, "with --strict the xpass fails the run",
           f"status {proc.returncode}\n{proc.stderr}")

    bad_path = write(os.path.join(workdir, "bad.txt"),
                     "# fine\ndlpack.numpy.torch.cpu.float32.contiguous ok\ndlpack.numpy oops\n")
    missing_out = os.path.join(workdir, "never.json")
    proc = run_report(binary, missing_out, "--expect", bad_path)
    tap.ok(proc.returncode == 2 and f"{bad_path}:3:" in proc.stderr and
           not os.path.exists(missing_out),
           "a malformed line: exit status 2 with FILE:LINE, and nothing runs",
           f"status {proc.returncode}\n{proc.stderr}")

    # The file is UTF-8 text: a NUL byte (a UTF-16 file, say) or a byte that is not UTF-8 stops
    # the run with the line and column.
    entry = b"dlpack.numpy.torch.cpu.float32.contiguous  "
    for name, content, why, what in (
            ("nul.txt", b"# fine\n" + entry + b"a reason\0 hidden\n", "NUL byte at column 52",
             "a NUL byte"),
            ("latin1.txt", b"# fine\n" + entry + b"caf\xe9\n", "0xe9 at column 47 is not valid",
             "Latin-1 text")):
        path = os.path.join(workdir, name)
        with open(path, "wb") as handle:
            handle.write(content)
        proc = run_report(binary, missing_out, "--expect", path)
        tap.ok(proc.returncode == 2 and f"{path}:2:" in proc.stderr and why in proc.stderr and
               not os.path.exists(missing_out),
               f"an expectations file with {what}: exit status 2 with FILE:LINE and the column, "
               "and nothing runs", f"status {proc.returncode}\n{proc.stderr}")

    # --fail-on: which outcomes make the exit status 1.
    proc = run_report(binary, out, "--fail-on", "crash,timeout")
    tap.ok(proc.returncode == 0, "--fail-on crash,timeout: failures alone pass the run",
           f"status {proc.returncode}\n{proc.stderr}")
    unsupported = taplib.load_report(out)["summary"]["outcomes"]["unsupported"]
    proc = run_report(binary, out, "--fail-on", "unsupported")
    tap.ok(unsupported > 0 and proc.returncode == 1, "--fail-on unsupported: exit status 1",
           f"status {proc.returncode}, {unsupported} unsupported")
    proc = run_report(binary, out, "--fail-on", "fail", "--fail-on", "xfail", "--expect",
                      expect_path)
    tap.ok(proc.returncode == 1, "--fail-on fail --fail-on xfail: expected failures fail the run",
           f"status {proc.returncode}\n{proc.stderr}")
    proc = run_report(binary, missing_out, "--fail-on", "fail,crashed")
    tap.ok(proc.returncode == 2 and "'crashed'" in proc.stderr and
           "pass fail unsupported crash timeout error xfail xpass waived" in proc.stderr,
           "an unknown --fail-on outcome is a usage error listing the valid names",
           proc.stderr)
    proc = taplib.run(binary, "--help")
    tap.ok(all(word in proc.stdout for word in ("--expect FILE", "--strict", "--fail-on LIST",
                                                 "interopcheck diff", "interopcheck merge")),
           "--help documents --expect, --strict, --fail-on, diff and merge", proc.stdout[-2000:])


# --- Diffs ----------------------------------------------------------------------------------

def check_diff(tap, binary, workdir, runs):
    base, head = runs["a"], runs["b"]
    a, b = taplib.load_report(base), taplib.load_report(head)
    numpy_version = next(lib["version"] for lib in a["environment"]["libraries"]
                         if lib["name"] == "numpy")
    torch_version = next(lib["version"] for lib in a["environment"]["libraries"]
                         if lib["name"] == "torch")
    expected = classify(a, b)
    tap.ok(expected["regressed"] > 0 and expected["improved"] > 0,
           "the two environments differ by regressions and improvements", expected)

    proc = taplib.run(binary, "diff", base, head)
    out = proc.stdout
    tap.ok(proc.returncode == 1, "diff: exit status 1 when a case regressed",
           f"status {proc.returncode}\n{proc.stderr}")
    tap.ok(counts_of(out) == expected, "diff counts what the reports say", [counts_of(out),
                                                                               expected])
    head_lines = out.split("\n\n")[1] if "\n\n" in out else ""
    tap.ok(f"numpy: {numpy_version} -> {numpy_version.replace('+ica', '+icb')}  (changed)"
           in head_lines and f"torch: {torch_version} -> {torch_version}\n" in head_lines + "\n",
           "the versions of both sides come first, the changed one marked", head_lines)
    regressed = out.split("\nregressed (")[1].split("\n\n")[0] if "\nregressed (" in out else ""
    improved = out.split("\nimproved (")[1].split("\n\n")[0] if "\nimproved (" in out else ""
    tap.ok(".uint16." in regressed and ".int16." not in regressed and
           re.search(r": pass -> fail \[", regressed),
           "the regressions are the newly broken dtype's cases, with the rule", regressed[:600])
    tap.ok(".int16." in improved and ".uint16." not in improved and
           ": fail -> pass, was [" in improved,
           "the improvements are the fixed dtype's, with what used to be wrong", improved[:600])

    proc = taplib.run(binary, "diff", base, head, "--format", "markdown")
    md = proc.stdout
    tap.ok(proc.returncode == 1 and md.startswith("## interopcheck diff"),
           "diff --format markdown: a heading, exit status 1", md[:300])
    tap.ok(counts_of(md) == expected and f"**{expected['regressed']} regressed**" in md,
           "Markdown: the same counts, regressions in bold", md[:800])
    tap.ok(re.search(r"\| \*\*`numpy`\*\* \| `[^`]+\+ica` \| `[^`]+\+icb` \| changed \|", md),
           "Markdown: a versions table marking numpy changed", md[:800])
    tap.ok(f"### Regressed ({expected['regressed']})" in md and
           f"<details><summary>Improved ({expected['improved']})</summary>" in md,
           "Markdown: regressions open, improvements folded", md[:1200])
    rows = [line for line in md.splitlines()
            if re.match(r"\| `[a-z0-9_]+(\.[a-z0-9_]+){5,6}` \|", line)]
    widths = {len(re.findall(r"(?<!\\)\|", line)) for line in rows}
    tap.ok(len(rows) >= expected["regressed"] + 2 and widths == {6},
           "Markdown: every table row has its columns", widths)

    proc = taplib.run(binary, "diff", base, base)
    tap.ok(proc.returncode == 0 and counts_of(proc.stdout) ==
           dict(regressed=0, improved=0, changed=0, added=0, removed=0,
                unchanged=len(a["cases"])),
           "a report against itself: nothing changed, exit status 0", proc.stdout[-300:])
    proc = taplib.run(binary, "diff", head, base, "--format", "markdown")
    tap.ok(proc.returncode == 1 and counts_of(proc.stdout) == classify(b, a),
           "the other way round, regressions and improvements swap", counts_of(proc.stdout))

    # Diagnostics: a crash's last output is not compared (it varies run to run); any other
    # difference is a change, shown next to what it was.
    edited = json.loads(json.dumps(a))
    first, second = edited["cases"][0], edited["cases"][1]
    first.update(outcome="crash", rule=None,
                 diagnostic="the worker died with SIGSEGV during this case; last output: one")
    second["diagnostic"] = "the base said this"
    base_edit = write(os.path.join(workdir, "edit_base.json"), json.dumps(edited))
    first["diagnostic"] = "the worker died with SIGSEGV during this case; last output: other"
    second["diagnostic"] = "the new run says that"
    head_edit = write(os.path.join(workdir, "edit_head.json"), json.dumps(edited))
    proc = taplib.run(binary, "diff", base_edit, head_edit)
    counts = counts_of(proc.stdout)
    tap.ok(proc.returncode == 0 and counts["changed"] == 1 and first["id"] not in proc.stdout and
           re.search(re.escape(second["id"]) + r": .*the new run says that\n +was: the base said "
                     r"this\n", proc.stdout),
           "a crash's last output is not a change; another diagnostic is, shown with what it was",
           proc.stdout[-600:])

    # Cases added and removed: the same environment, other layouts; none regressed.
    c, d = runs["layouts_a"], runs["layouts_b"]
    proc = taplib.run(binary, "diff", c, d)
    counts = counts_of(proc.stdout)
    expected = classify(taplib.load_report(c), taplib.load_report(d))
    tap.ok(proc.returncode == 0 and counts == expected and counts["added"] > 0 and
           counts["removed"] > 0 and counts["regressed"] == 0,
           "cases of other layouts are added and removed, exit status 0", [counts, expected])
    tap.ok(re.search(r"\nadded \(\d+\):\n  \S+\.fortran\S*: pass", proc.stdout) and
           re.search(r"\nremoved \(\d+\):\n  \S+\.contiguous\S*: was ", proc.stdout),
           "added and removed cases are listed with their outcomes", proc.stdout[-600:])

    not_json = write(os.path.join(workdir, "not_json.json"), "this is not JSON\n")
    other = dict(a, schema_version=3)
    v3 = write(os.path.join(workdir, "v3.json"), json.dumps(other))
    not_report = write(os.path.join(workdir, "other.json"), json.dumps({"cases": []}))
    for path, what in ((not_json, "not JSON"), (v3, "schema version 3"),
                       (not_report, "not an interopcheck report")):
        proc = taplib.run(binary, "diff", base, path)
        tap.ok(proc.returncode == 2 and path in proc.stderr, f"diff refuses a file that is {what}",
               f"status {proc.returncode}\n{proc.stderr}")
    proc = taplib.run(binary, "diff", base)
    tap.ok(proc.returncode == 2 and "two report files" in proc.stderr,
           "diff with one file is a usage error", proc.stderr)
    check_strict_reader(tap, binary, workdir, base, a)


def check_strict_reader(tap, binary, workdir, base, a):
    """The report reader is strict (ic_report.h): schema_version is the integer 2 and nothing
    like it, and a syntax error is placed by line and column."""
    for version, why in ((1.5, '"schema_version" is 1.5, not an integer'),
                         (2.5, '"schema_version" is 2.5, not an integer'),
                         ("2", '"schema_version" is a string, not a number'),
                         (True, '"schema_version" is a boolean, not a number'),
                         (None, '"schema_version" is null, not a number')):
        path = write(os.path.join(workdir, "version.json"),
                     json.dumps(dict(a, schema_version=version)))
        proc = taplib.run(binary, "diff", base, path)
        tap.ok(proc.returncode == 2 and path in proc.stderr and why in proc.stderr,
               f"diff refuses schema_version {json.dumps(version)}, saying why",
               f"status {proc.returncode}\n{proc.stderr}")
    # json.dumps writes the float 2.0 as "2.0": the number 2, which the schema's "const": 2
    # accepts, so the reader does too.
    path = write(os.path.join(workdir, "version_2_0.json"),
                 json.dumps(dict(a, schema_version=2.0)))
    with open(path, encoding="utf-8") as handle:
        written = '"schema_version": 2.0' in handle.read()
    proc = taplib.run(binary, "diff", base, path)
    counts = counts_of(proc.stdout) or {}
    tap.ok(written and proc.returncode == 0 and counts.get("unchanged") == len(a["cases"]),
           "schema_version written as 2.0 is the number 2: read",
           f"{proc.returncode} {proc.stderr}")

    text = json.dumps(a, indent=1).split("\n")
    text[2] = text[2].rstrip(",") + "x,"  # line 3: a stray letter after a number
    broken = write(os.path.join(workdir, "syntax.json"), "\n".join(text))
    column = len(text[2]) - 1  # the letter, counted from 1
    proc = taplib.run(binary, "report", broken)
    tap.ok(proc.returncode == 2 and f"syntax error at line 3, column {column}" in proc.stderr,
           "a syntax error names its line and column", f"{proc.returncode} {proc.stderr}")
    trailing = write(os.path.join(workdir, "trailing.json"), json.dumps(a) + "\n{}\n")
    proc = taplib.run(binary, "merge", base, trailing, "-o", os.path.join(workdir, "never.json"))
    tap.ok(proc.returncode == 2 and "line 2, column 1" in proc.stderr,
           "a second JSON value after the report is an error, not ignored", proc.stderr)


# --- Merged reports -------------------------------------------------------------------------

def check_merge(tap, binary, workdir, runs):
    merged_path = os.path.join(workdir, "merged.json")
    proc = taplib.run(binary, "merge", runs["a"], runs["b"], "-o", merged_path)
    tap.ok(proc.returncode == 0 and os.path.exists(merged_path), "merge: exit status 0, written",
           f"status {proc.returncode}\n{proc.stderr}")
    merged = taplib.load_report(merged_path)
    a, b = taplib.load_report(runs["a"]), taplib.load_report(runs["b"])
    errors = taplib.schema_errors(merged)
    tap.ok(not errors, "the merged report validates against the schema", "\n".join(errors[:20]))
    envs = merged.get("environments", [])
    ids = [e["id"] for e in envs]
    tap.ok(len(ids) == 2 and len(set(ids)) == 2 and
           all(re.fullmatch(r"[a-z0-9_-]+", i) for i in ids),
           "two environments with distinct ids", ids)
    tap.ok(len(ids) == 2 and "numpy" in ids[0] and ids[0].endswith("ica") and
           ids[1].endswith("icb") and "torch" not in ids[0],
           "ids are made of what differs: numpy's versions, not torch's", ids)
    tap.ok(len(envs) == 2 and envs[0]["environment"] == a["environment"] and
           envs[1]["environment"] == b["environment"] and envs[0]["run"] == a["run"] and
           envs[1]["tool"] == b["tool"],
           "each environment keeps its run's tool, run and environment")
    tap.ok(merged["environment"] == a["environment"] and merged["run"] == a["run"],
           "the top-level environment and run are the first run's")
    tap.ok(len(merged["cases"]) == len(a["cases"]) + len(b["cases"]) and
           [c["environment"] for c in merged["cases"]] ==
           [ids[0]] * len(a["cases"]) + [ids[1]] * len(b["cases"]),
           "every case of both runs, tagged with its environment")
    stripped = [{k: v for k, v in c.items() if k != "environment"} for c in merged["cases"]]
    tap.ok(stripped == a["cases"] + b["cases"], "the cases are otherwise unchanged")
    summary = merged["summary"]
    totals_ok = summary["total"] == len(merged["cases"]) and all(
        summary["outcomes"][o] == a["summary"]["outcomes"][o] + b["summary"]["outcomes"][o]
        for o in summary["outcomes"])
    tap.ok(totals_ok, "the totals add up over both environments", summary["outcomes"])
    cells = [(p, c["producer"], c["consumer"], c["device"], c["environment"])
             for p, entry in summary["protocols"].items() for c in entry["cells"]]
    tap.ok(len(cells) == len(set(cells)) and {c[4] for c in cells} == set(ids),
           "one summary cell per (protocol, producer, consumer, device, environment)")
    counted = {}
    for c in merged["cases"]:
        key = (c["protocol"], c["producer"], c["consumer"], c["device"], c["environment"])
        counted.setdefault(key, {}).setdefault(c["outcome"], 0)
        counted[key][c["outcome"]] += 1
    cells_ok = all(
        {o: n for o, n in cell["outcomes"].items() if n} ==
        counted.get((p, cell["producer"], cell["consumer"], cell["device"], cell["environment"]))
        and cell["total"] == sum(cell["outcomes"].values())
        for p, entry in summary["protocols"].items() for cell in entry["cells"])
    per_protocol_ok = all(
        entry["outcomes"][o] == sum(cell["outcomes"][o] for cell in entry["cells"])
        for entry in summary["protocols"].values() for o in entry["outcomes"])
    tap.ok(cells_ok and per_protocol_ok, "cell and protocol counts match the cases")

    # Merging a merged report: its environments carry over.
    merged2_path = os.path.join(workdir, "merged2.json")
    proc = taplib.run(binary, "merge", merged_path, runs["stock"], "-o", merged2_path)
    merged2 = taplib.load_report(merged2_path) if proc.returncode == 0 else {}
    ids2 = [e["id"] for e in merged2.get("environments", [])]
    errors = taplib.schema_errors(merged2) if merged2 else ["not written"]
    tap.ok(proc.returncode == 0 and not errors and ids2[:2] == ids and len(ids2) == 3 and
           len(set(ids2)) == 3,
           "merging a merged report keeps its environments and ids", [ids2, errors[:5]])
    tap.ok(merged2 and merged2["summary"]["total"] == len(merged["cases"]) + len(
        taplib.load_report(runs["stock"])["cases"]), "... and its totals add up")

    # The same environment twice: ids made unique.
    same_path = os.path.join(workdir, "same.json")
    proc = taplib.run(binary, "merge", runs["stock"], runs["stock"], "-o", same_path)
    same_ids = [e["id"] for e in taplib.load_report(same_path)["environments"]] \
        if proc.returncode == 0 else []
    tap.ok(len(same_ids) == 2 and same_ids[1] == same_ids[0] + "-2",
           "two runs of one environment: the second id gets -2", same_ids)

    not_json = write(os.path.join(workdir, "merge_not_json.json"), "[1, 2")
    v3 = write(os.path.join(workdir, "merge_v3.json"), json.dumps(dict(a, schema_version=3)))
    refused = os.path.join(workdir, "refused.json")
    for path, what in ((not_json, "not JSON"), (v3, "of schema version 3")):
        proc = taplib.run(binary, "merge", runs["a"], path, "-o", refused)
        tap.ok(proc.returncode == 2 and path in proc.stderr and not os.path.exists(refused),
               f"merge refuses an input that is {what}, writing nothing",
               f"status {proc.returncode}\n{proc.stderr}")
    proc = taplib.run(binary, "merge", runs["a"], runs["b"])
    tap.ok(proc.returncode == 2 and "-o" in proc.stderr, "merge without -o is a usage error",
           proc.stderr)

    # Diffs of merged reports: aligned by (environment, id) where the ids match.
    base_path = os.path.join(workdir, "merged_base.json")
    head_path = os.path.join(workdir, "merged_head.json")
    other_path = os.path.join(workdir, "merged_other.json")
    taplib.run(binary, "merge", runs["a"], runs["stock"], "-o", base_path)
    taplib.run(binary, "merge", runs["a2"], runs["stock"], "-o", head_path)
    taplib.run(binary, "merge", runs["b"], runs["stock"], "-o", other_path)
    base, head = taplib.load_report(base_path), taplib.load_report(head_path)
    base_ids = [e["id"] for e in base["environments"]]
    tap.ok(base_ids == [e["id"] for e in head["environments"]],
           "the same environments merged again get the same ids", base_ids)
    expected = classify(base, head, key=lambda c: (c["environment"], c["id"]))
    proc = taplib.run(binary, "diff", base_path, head_path)
    tap.ok(proc.returncode == 1 and counts_of(proc.stdout) == expected and
           expected["regressed"] > 0,
           "diff of merged reports: by (environment, id), exit status 1 on a regression",
           [counts_of(proc.stdout), expected, proc.stderr])
    tap.ok(f"\nenvironment {base_ids[0]}:\n" in proc.stdout and
           f"\n  [{base_ids[0]}] " in proc.stdout and f"[{base_ids[1]}]" not in
           proc.stdout.split("\nregressed (")[-1],
           "the versions per environment, and changes tagged with their environment",
           proc.stdout[:1500])
    proc = taplib.run(binary, "diff", base_path, head_path, "--format", "markdown")
    tap.ok(proc.returncode == 1 and "| environment | case |" in proc.stdout and
           counts_of(proc.stdout) == expected,
           "Markdown diff of merged reports has an environment column", proc.stdout[:1500])

    proc = taplib.run(binary, "diff", base_path, other_path)
    only = [i for i in base_ids if i not in [e["id"] for e in
                                             taplib.load_report(other_path)["environments"]]]
    tap.ok(proc.returncode == 0 and len(only) == 1 and
           f"the environment {only[0]} is only in the base report" in proc.stdout,
           "environments in one report only are named and not compared",
           f"{proc.returncode}\n{proc.stdout[:1500]}\n{proc.stderr}")
    proc = taplib.run(binary, "diff", merged_path, same_path)
    tap.ok(proc.returncode == 2 and "environments differ" in proc.stderr,
           "merged reports without an environment in common: exit status 2",
           f"{proc.returncode}\n{proc.stderr}")
    proc = taplib.run(binary, "diff", base_path, runs["a"])
    tap.ok(proc.returncode == 2 and "merged" in proc.stderr,
           "a merged report against a single run: exit status 2", proc.stderr)


def main(tap, args):
    binary = args[0]
    with tempfile.TemporaryDirectory() as workdir:
        check_expectations(tap, binary, workdir)
        runs = {}
        overrides = {"a": ("ica", "int16"), "b": ("icb", "uint16"), "a2": ("ica", "uint16")}
        for name, (tag, dtype) in overrides.items():
            runs[name] = os.path.join(workdir, f"run_{name}.json")
            run_report(binary, runs[name], probe_dir=numpy_override(workdir, tag, dtype))
        runs["stock"] = os.path.join(workdir, "run_stock.json")
        run_report(binary, runs["stock"])
        runs["layouts_a"] = os.path.join(workdir, "layouts_a.json")
        runs["layouts_b"] = os.path.join(workdir, "layouts_b.json")
        run_report(binary, runs["layouts_a"], "--layout", "contiguous,flat")
        run_report(binary, runs["layouts_b"], "--layout", "flat,fortran")
        missing = [name for name, path in runs.items() if not os.path.exists(path)]
        if missing:
            tap.ok(False, "the runs to compare wrote their reports", missing)
            return
        check_diff(tap, binary, workdir, runs)
        check_merge(tap, binary, workdir, runs)


if __name__ == "__main__":
    taplib.main(main)
