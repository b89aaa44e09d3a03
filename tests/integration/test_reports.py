"""Integration test of the CI reports: the JUnit XML and the Markdown summary of real runs, and
every output format (JSON, JUnit, Markdown) fed hostile library text.

Reports come from `interopcheck report RUN.json --junit F --markdown F`; while that command is
not there, and for a Markdown cap smaller than its default, from tests/integration/
write_reports.c, a harness that calls the same writers and that the build puts next to this
test's binary directory (build/tests/write_reports).

Usage: test_reports.py INTEROPCHECK_BINARY
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import taplib

FFFD = "\ufffd"
# What XML 1.0 and HTML must not carry, which the writers replace with U+FFFD.
UNWANTED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff]")
FAILING = ("fail", "crash", "timeout")
SKIPPED = ("unsupported", "xfail", "waived")
# The marks of the outcome table (src/core/ic_result.h), which the dashboard shows too.
MARKDOWN_MARKS = {"pass": "\u2713", "fail": "\u2717", "error": "!", "xpass": "+",
                  "expected": "\u2248", "unsupported": "\u2013"}
JUNIT_MESSAGE_CAP = 1000  # src/report/ic_report_junit.c
MARKDOWN_DIAGNOSTIC_CAP = 1000  # src/report/ic_report_markdown.c
DIAGNOSTIC_MAX = 1200  # IC_DIAGNOSTIC_MAX, src/core/ic_result.h
TEXT_FIELD_CAP = 8 * 1024  # IC_TEXT_FIELD_CAP, src/core/ic_text.h: one library string, stored whole
TEXT_SCRIPT_CAP = 64 * 1024  # IC_TEXT_SCRIPT_CAP: a reproducer, kept whole or not at all
# What a terminal acts on rather than shows (IC_ESCAPE_TERMINAL escapes all of it): C0 controls
# but tab and LF, DEL, C1 controls, the line separators and the bidirectional controls.
TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                             "\u202a-\u202e\u2066-\u2069]")


def probes_dir():
    return os.path.join(taplib.source_root(), "tests", "probes")


def load_hostile():
    """HOSTILE, MEGA and STDERR_BYTES of the hostile probe, without importing numpy."""
    sys.path.insert(0, os.path.join(taplib.source_root(), "probes"))
    sys.path.insert(0, probes_dir())
    try:
        import hostile_text
    finally:
        del sys.path[:2]
    return hostile_text


# --- Writing the reports -------------------------------------------------------------------

class Writers:
    def __init__(self, tap, binary):
        self.tap = tap
        self.binary = binary
        self.harness = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(binary))),
                                    "tests", "write_reports")
        self.command = None  # whether `interopcheck report` works, once known

    def write(self, report_path, stem, max_bytes=None, full_report=None, use_command=True):
        """Writes STEM.xml and STEM.md for report_path; returns (junit, markdown, process)."""
        junit, markdown = stem + ".xml", stem + ".md"
        if use_command and max_bytes is None and full_report is None and self.command is not False:
            proc = taplib.run(self.binary, "report", report_path, "--junit", junit,
                              "--junit-cases", "--junit-unsupported", "--markdown", markdown)
            if proc.returncode == 0:
                if self.command is None:
                    self.tap.diag("reports written by `interopcheck report`")
                self.command = True
                return junit, markdown, proc
            if "not written yet" not in proc.stderr:
                self.tap.ok(False, "`interopcheck report` writes JUnit and Markdown",
                            proc.stdout + proc.stderr)
            self.command = False
            self.tap.diag("`interopcheck report` is not there yet: the writers run through "
                          "the write_reports harness")
        args = [self.harness, report_path, "--junit", junit, "--markdown", markdown]
        if max_bytes is not None:
            args += ["--max", str(max_bytes)]
        if full_report is not None:
            args += ["--full-report", full_report]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
        return junit, markdown, proc


# --- Reading the JUnit ---------------------------------------------------------------------

def parse_junit(tap, path, what):
    """Parses strictly (no recovery) and validates against tests/schemas/junit.xsd."""
    from lxml import etree

    schema_path = os.path.join(taplib.source_root(), "tests", "schemas", "junit.xsd")
    schema = etree.XMLSchema(etree.parse(schema_path))
    parser = etree.XMLParser(recover=False, huge_tree=True, resolve_entities=False)
    try:
        doc = etree.parse(path, parser)
    except etree.XMLSyntaxError as exc:
        tap.ok(False, f"{what}: the JUnit file is well-formed XML", exc)
        return None
    tap.ok(True, f"{what}: the JUnit file is well-formed XML")
    valid = schema.validate(doc)
    tap.ok(valid, f"{what}: the JUnit file validates against tests/schemas/junit.xsd",
           "\n".join(str(e) for e in list(schema.error_log)[:20]))
    return doc


def junit_name(case):
    name = f"{case['device']}.{case['dtype']}.{case['layout']}"
    return name + (f".{case['variant']}" if case.get("variant") else "")


def junit_classname(case):
    env = case.get("environment")
    return ".".join(["interopcheck"] + ([env] if env else []) +
                    [case["protocol"], case["producer"], case["consumer"]])


def xml_safe(text):
    return UNWANTED.sub(FFFD, text)


def check_junit(tap, report, path, what):
    doc = parse_junit(tap, path, what)
    if doc is None:
        return
    root = doc.getroot()
    cases = report["cases"]
    outcomes = [c["outcome"] for c in cases]
    findings = report.get("findings", [])
    broke = [f for f in findings if set(f["outcomes"]) & {"crash", "timeout"}]
    expect = {"tests": len(cases) + max(len(findings), 1),
              "failures": outcomes.count("fail") + len(findings) - len(broke),
              "errors": sum(o in ("error", "crash", "timeout") for o in outcomes) + len(broke),
              "skipped": sum(o in SKIPPED for o in outcomes)}
    got = {k: int(root.get(k, -1)) for k in expect}
    tap.ok(got == expect, f"{what}: the totals of <testsuites> are the findings' and the cases'",
           (got, expect))
    check_junit_findings(tap, report, root, what)

    bad_suites = []
    seen = {}
    for suite in root.iter("testsuite"):
        if suite.get("name") == "interopcheck.findings":
            continue
        testcases = suite.findall("testcase")
        counted = {"tests": len(testcases),
                   "failures": sum(1 for t in testcases if t.find("failure") is not None),
                   "errors": sum(1 for t in testcases if t.find("error") is not None),
                   "skipped": sum(1 for t in testcases if t.find("skipped") is not None)}
        said = {k: int(suite.get(k, -1)) for k in counted}
        names = {t.get("classname") for t in testcases}
        if said != counted or names != {suite.get("name")}:
            bad_suites.append((suite.get("name"), said, counted, names))
        for t in testcases:
            seen[(t.get("classname"), t.get("name"))] = t
    tap.ok(not bad_suites, f"{what}: every <testsuite>'s counts match its testcases, and one "
           "suite holds one protocol and pair", bad_suites[:5])
    keys = [(junit_classname(c), junit_name(c)) for c in cases]
    missing = [k for k in keys if k not in seen]
    tap.ok(len(seen) == len(cases) and not missing,
           f"{what}: one <testcase> per case, classname interopcheck.PROTOCOL.PRODUCER.CONSUMER, "
           "name DEVICE.DTYPE.LAYOUT[.VARIANT]", (len(seen), len(cases), missing[:5]))

    wrong = []
    for case, key in zip(cases, keys):
        t = seen.get(key)
        if t is None:
            continue
        outcome = case["outcome"]
        diagnostic = xml_safe(case.get("diagnostic", ""))
        failure, error, skipped = t.find("failure"), t.find("error"), t.find("skipped")
        if outcome == "pass":
            ok = len(t) == 0
        elif outcome == "fail":
            message = failure.get("message", "") if failure is not None else ""
            ok = (failure is not None and
                  failure.get("type") == (case.get("rule") or outcome) and
                  (message.endswith(diagnostic) or "bytes cut]" in message) and
                  len(message.encode()) <= JUNIT_MESSAGE_CAP + 40 and
                  diagnostic[:200] in (failure.text or ""))
        elif outcome in ("crash", "timeout"):
            message = error.get("message", "") if error is not None else ""
            ok = (error is not None and failure is None and error.get("type") == outcome and
                  (message.endswith(diagnostic) or "bytes cut]" in message) and
                  diagnostic[:200] in (error.text or ""))
        elif outcome == "error":
            ok = error is not None and diagnostic[:200] in (error.text or "")
        elif outcome == "unsupported":
            message = skipped.get("message", "") if skipped is not None else ""
            ok = (skipped is not None and message.startswith("unsupported: ") and
                  (message == "unsupported: " + diagnostic or "bytes cut]" in message) and
                  len(message.encode()) <= JUNIT_MESSAGE_CAP)
        elif outcome in ("xfail", "waived"):
            reason = xml_safe(case.get("expectation", {}).get("reason", ""))
            ok = (skipped is not None and skipped.get("message", "").startswith(outcome) and
                  reason in skipped.get("message", ""))
        elif outcome == "xpass":
            out = t.find("system-out")
            ok = out is not None and "xpass" in (out.text or "") and failure is None
        else:
            ok = False
        if not ok:
            wrong.append((case["id"], outcome, etree_text(t)))
    tap.ok(not wrong, f"{what}: failures carry rule and diagnostic, unsupported cases are "
           "skipped with their reason, errors are <error>", wrong[:3])

    props_bad = []
    env_of = {e["id"]: e for e in report.get("environments", [])}
    for suite in root.iter("testsuite"):
        first = suite.find("testcase")
        case = next((c for c in cases if (junit_classname(c), junit_name(c)) ==
                     (first.get("classname"), first.get("name"))), None) if first is not None \
            else None
        if case is None:
            continue
        scope = env_of.get(case.get("environment"), report)
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        libs = {lib["name"]: lib.get("version") for lib in scope["environment"]["libraries"]}
        want = {"interopcheck.version": scope["tool"]["version"],
                "python.version": scope["environment"]["python"]["version"]}
        for lib in (case["producer"], case["consumer"]):
            if libs.get(lib):
                want[f"library.{lib}.version"] = libs[lib]
        if any(props.get(k) != xml_safe(v) for k, v in want.items()):
            props_bad.append((suite.get("name"), props, want))
    tap.ok(not props_bad, f"{what}: each suite's properties give the tool, Python and library "
           "versions", props_bad[:2])
    return doc


def check_junit_findings(tap, report, root, what):
    """The findings suite: a testcase per finding, an <error> for one that crashed or hung,
    else a <failure> typed by its rule, the reproducer in the body."""
    suites = [s for s in root.iter("testsuite") if s.get("name") == "interopcheck.findings"]
    findings = report.get("findings", [])
    if not tap.ok(len(suites) == 1, f"{what}: one suite of findings", len(suites)):
        return
    testcases = {t.get("name"): t for t in suites[0].findall("testcase")}
    wrong = []
    for f in findings:
        t = testcases.get(f["id"])
        broke = bool(set(f["outcomes"]) & {"crash", "timeout"})
        element = t.find("error" if broke else "failure") if t is not None else None
        if (element is None or t.get("classname") != f"interopcheck.findings.{f['culprit']}" or
                element.get("type") != f["rule"] or
                (f.get("reproducer") and xml_safe(f["reproducer"])[:300] not in element.text)):
            wrong.append((f["id"], etree_text(t) if t is not None else None))
    tap.ok(not wrong and (len(testcases) == len(findings) or (not findings and
                                                               len(testcases) == 1)),
           f"{what}: a testcase per finding, typed by its rule, its reproducer in the body",
           wrong[:3])


def etree_text(element):
    from lxml import etree

    return etree.tostring(element, encoding="unicode")[:600]


# --- Reading the Markdown ------------------------------------------------------------------

def render_markdown(text):
    """HTML as GitHub would make it, near enough: CommonMark with GFM tables and strikethrough
    (markdown-it-py), parsed into an lxml tree."""
    from lxml import html
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").enable("table").enable("strikethrough").render(text)
    return html.fromstring("<div>" + rendered + "</div>")


def split_row(line):
    """Cells of a table row the way GFM splits it: a backslash escapes the next character."""
    cells, cell, i = [], "", 0
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            cell += body[i:i + 2]
            i += 2
            continue
        if ch == "|":
            cells.append(cell)
            cell = ""
        else:
            cell += ch
        i += 1
    if cell.strip():
        cells.append(cell)
    return cells


def table_shapes_ok(text):
    """Every row of every table has as many cells as its header."""
    bad = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[:\-|]+$", lines[i + 1]):
            width = len(split_row(lines[i]))
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                if len(split_row(lines[i])) != width:
                    bad.append(lines[i][:200])
                i += 1
        else:
            i += 1
    return bad


def markdown_cell_text(text):
    """What a diagnostic renders as in a Markdown cell: line breaks are <br> (no text), tabs are
    spaces, characters HTML reports as errors are U+FFFD."""
    text = UNWANTED.sub(FFFD, text.replace("\t", " "))
    return re.sub(r"\r\n|\r|\n", "", text)


def cell_marker(outcomes):
    """The most severe outcome's mark; passes beside unsupported cases read as passing."""
    if any(outcomes.get(o) for o in FAILING):
        return MARKDOWN_MARKS["fail"]
    if outcomes.get("error"):
        return MARKDOWN_MARKS["error"]
    if outcomes.get("xpass"):
        return MARKDOWN_MARKS["xpass"]
    if outcomes.get("xfail") or outcomes.get("waived"):
        return MARKDOWN_MARKS["expected"]
    if outcomes.get("pass"):
        return MARKDOWN_MARKS["pass"]
    return MARKDOWN_MARKS["unsupported"]


def matrix_parts(tables, title, wrong):
    """The matrix titled `title`: its header texts and its body rows by their first cell's
    text; None, noted in `wrong`, when there is none."""
    table = tables.get(title)
    if table is None:
        wrong.append(("no matrix", title))
        return None
    header = [th.text_content().strip() for th in table.iter("th")]
    return header, {tr[0].text_content().strip(): tr for tr in table.iter("tr")
                    if tr[0].tag == "td"}


def check_markdown_matrices(tap, report, tables, what):
    """A matrix per protocol and device: each cell's marker and passed/total."""
    wrong = []
    for protocol, summary in report["summary"]["protocols"].items():
        for cell in summary["cells"]:
            title = f"{protocol} on {cell['device']}"
            parts = matrix_parts(tables, title, wrong)
            if parts is None:
                continue
            header, rows = parts
            if cell["consumer"] not in header or cell["producer"] not in rows:
                wrong.append(("no row or column", title, cell["producer"], cell["consumer"]))
                continue
            counts = cell["outcomes"]
            passed = counts.get("pass", 0) + counts.get("xpass", 0)
            want = f"{cell_marker(counts)} {passed}/{cell['total']}"
            got = rows[cell["producer"]][header.index(cell["consumer"])].text_content().strip()
            if got != want:
                wrong.append((title, cell["producer"], cell["consumer"], got, want))
    tap.ok(not wrong, f"{what}: a matrix per protocol and device, each cell marker and "
           "passed/total", wrong[:5])


def check_markdown_side_by_side(tap, report, tables, what):
    """A merged report: a matrix per protocol and device, a row per pair, a column per
    environment, each cell's marker and passed/total in its environment's column, and the rows
    whose cells differ marked (the test's merged report has such a row)."""
    envs = [e["id"] for e in report["environments"]]
    wrong, marked = [], 0
    for protocol, summary in report["summary"]["protocols"].items():
        by_device = {}
        for cell in summary["cells"]:
            by_device.setdefault(cell["device"], {}).setdefault(
                (cell["producer"], cell["consumer"]), {})[cell["environment"]] = cell
        for device, pairs in by_device.items():
            title = f"{protocol} on {device}, environment by environment"
            parts = matrix_parts(tables, title, wrong)
            if parts is None:
                continue
            header, rows = parts
            if header[1:1 + len(envs)] != envs:
                wrong.append(("columns", title, header))
                continue
            for (producer, consumer), cells in pairs.items():
                row = rows.get(f"{producer} \u2192 {consumer}")
                if row is None:
                    wrong.append(("no row", title, producer, consumer))
                    continue
                want = []
                for env in envs:
                    cell = cells.get(env)
                    if cell is None:
                        want.append("")
                        continue
                    counts = cell["outcomes"]
                    passed = counts.get("pass", 0) + counts.get("xpass", 0)
                    want.append(f"{cell_marker(counts)} {passed}/{cell['total']}")
                got = [row[1 + i].text_content().strip() for i in range(len(envs))]
                mark = row[1 + len(envs)].text_content().strip()
                differs = len(set(want)) > 1
                marked += differs
                if got != want or (mark == "\u2260") != differs:
                    wrong.append((title, producer, consumer, got, want, mark))
    tap.ok(not wrong and marked > 0,
           f"{what}: a matrix per protocol and device with the environments side by side, each "
           f"cell's marker and passed/total, the {marked} rows that differ marked", wrong[:5])


def check_markdown(tap, report, path, what, listed_all=True):
    with open(path, "rb") as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        tap.ok(False, f"{what}: the Markdown is valid UTF-8", exc)
        return None
    tree = render_markdown(text)
    outcomes = [c["outcome"] for c in report["cases"]]
    parts = [f"{outcomes.count(o)} {o}" for o in
             ("pass", "fail", "unsupported", "crash", "timeout", "error", "xfail", "xpass",
              "waived") if outcomes.count(o)]
    totals = f"**{len(outcomes)} cases:** " + " \u00b7 ".join(parts)
    tap.ok(totals in text, f"{what}: the totals line counts every outcome", totals)
    tap.ok(not table_shapes_ok(text), f"{what}: every table row has its header's cell count",
           table_shapes_ok(text)[:3])

    # Matrices: a table per protocol, device (and environment), each cell marker passed/total.
    tables = {}
    for heading in tree.iter("h3"):
        table = heading.getnext()
        if table is not None and table.tag == "p":  # a side-by-side matrix's count of rows
            table = table.getnext()
        if table is not None and table.tag == "table":
            tables[heading.text_content()] = table
    wrong = []
    if "environments" in report and len(report["environments"]) > 1:
        check_markdown_side_by_side(tap, report, tables, what)
    else:
        check_markdown_matrices(tap, report, tables, what)

    check_markdown_findings(tap, report, tree, what, listed_all)

    # The errors and unexpected passes: every such case with its rule and diagnostic (the
    # failing cases are the findings').
    merged = "environments" in report
    rows = {}
    for table in tree.iter("table"):
        heading = table.getprevious()
        if heading is None or not heading.text_content().startswith(
                ("Failures", "Errors", "Unexpected passes")):
            continue
        for tr in table.iter("tr"):
            tds = tr.findall("td")
            if tds:
                key = tuple(td.text_content().strip() for td in tds[:2 if merged else 1])
                rows[key] = [td.text_content() for td in tds]
    listed = [c for c in report["cases"] if c["outcome"] in ("error", "xpass")]
    bad = []
    for case in listed:
        key = (case["id"], case["environment"]) if merged else (case["id"],)
        row = rows.get(key)
        if row is None:
            if listed_all:
                bad.append(("missing", case["id"]))
            continue
        outcome, rule, diagnostic = row[2 if merged else 1:][:3]
        want = markdown_cell_text(case.get("diagnostic", ""))
        if (outcome.strip() != case["outcome"] or rule.strip() != case.get("rule", "") or
                (case["outcome"] != "xpass" and diagnostic.strip() != want.strip() and
                 "bytes cut]" not in diagnostic)):
            bad.append((case["id"], row, want))
    tap.ok(not bad and (not listed_all or len(rows) == len(listed)),
           f"{what}: the lists of errors and unexpected passes have each case, its rule and its "
           "diagnostic",
           (len(rows), len(listed), bad[:3]))
    return text, tree


def check_markdown_findings(tap, report, tree, what, listed_all):
    """The findings table: one row per finding, severity, cases, culprit, rule and id."""
    rows = {}
    for table in tree.iter("table"):
        heading = table.getprevious()
        while heading is not None and heading.tag == "p":
            heading = heading.getprevious()
        if heading is None or not heading.text_content().startswith("Findings ("):
            continue
        for tr in table.iter("tr"):
            tds = [td.text_content().strip() for td in tr.findall("td")]
            if tds:
                rows[tds[4]] = tds
    findings = report.get("findings", [])
    bad = [f["id"] for f in findings
           if rows.get(f["id"], [None])[:4] != [f["severity"], str(f["count"]), f["culprit"],
                                                 f["rule"]]]
    tap.ok(not bad and (not listed_all or len(rows) == len(findings)),
           f"{what}: the findings table has every finding, its severity, cases, culprit and rule",
           (len(rows), len(findings), bad[:3]))


def check_markdown_is_inert(tap, text, tree, what, known_ids):
    """Library text cannot make markup: the only elements are the writer's own."""
    allowed = {"div", "h2", "h3", "p", "br", "table", "thead", "tbody", "tr", "th", "td",
               "strong", "code", "a", "details", "summary", "pre"}
    tags = {el.tag for el in tree.iter()}
    tap.ok(tags <= allowed, f"{what}: no element but the writer's own (no script, img, em, "
           "lists, quotes, headings from text)", sorted(tags - allowed))
    strong = [el.text_content() for el in tree.iter("strong")]
    tap.ok(all(re.fullmatch(r"[a-z0-9_]+|\u2717 \d+/\d+|\d+ cases:|Cut to stay within \d+ bytes:",
                            s) for s in strong),
           f"{what}: bold text is only the writer's (producers, failing cells, totals)",
           [s for s in strong if not re.fullmatch(r"[a-z0-9_]+|\u2717 \d+/\d+|\d+ cases:", s)][:3])
    headings = [el.text_content() for el in tree.iter("h2", "h3")]
    tap.ok(all(re.match(r"interopcheck: |[a-z_]+ on [a-z]+|Findings \(|Errors \(|"
                        r"Unexpected passes \(", h) for h in headings),
           f"{what}: headings are only the writer's", headings[:5])
    # Code spans outside the reproducers' blocks (whose script is the writer's own, fenced);
    # the one sentence on how to get a reproducer names the command.
    codes = [el.text_content() for el in tree.iter("code")
             if el.getparent().tag != "pre"
             and el.text_content() != "interopcheck repro REPORT FINDING"]
    tap.ok(all(re.fullmatch(r"[a-z0-9_.\-]+", c) for c in codes),
           f"{what}: code spans are only the writer's ids", [c for c in codes if not
                                                            re.fullmatch(r"[a-z0-9_.\-]+", c)][:3])
    links = [el.get("href") for el in tree.iter("a")]
    tap.ok(all(h and not h.startswith("javascript") for h in links) and len(links) <= 1,
           f"{what}: no link but the pointer to the full report", links)


# --- The checks ----------------------------------------------------------------------------

def check_real_run(tap, writers, workdir):
    """numpy and torch over every protocol: a few thousand cases, real failures."""
    out = os.path.join(workdir, "real.json")
    proc = taplib.run(writers.binary, "--producer", "numpy,torch", "--consumer",
                      "numpy,torch,interopcheck", "-o", out, "-q")
    if not tap.ok(proc.returncode in (0, 1) and os.path.exists(out),
                  "a numpy x torch run writes its report", proc.stdout + proc.stderr):
        return None
    report = taplib.load_report(out)
    junit, markdown, wproc = writers.write(out, os.path.join(workdir, "real"))
    if not tap.ok(wproc.returncode == 0 and os.path.exists(junit) and os.path.exists(markdown),
                  "JUnit and Markdown are written for it", wproc.stdout + wproc.stderr):
        return report
    check_junit(tap, report, junit, "real run")
    result = check_markdown(tap, report, markdown, "real run")
    if result:
        check_markdown_is_inert(tap, result[0], result[1], "real run", None)
    return report


def check_outcomes_run(tap, writers, workdir):
    """badlib: crash, timeout and error besides pass, fail and unsupported; then the same
    report with expectations applied the way ic_expect does (xfail, xpass, waived)."""
    out = os.path.join(workdir, "outcomes.json")
    proc = taplib.run(writers.binary, "--probe-dir", probes_dir(), "--producer", "badlib,numpy",
                      "--consumer", "badlib,numpy", "--protocol", "dlpack", "--layout",
                      "contiguous,scalar", "--dtype",
                      "float32,int8,int16,uint8,float64,int32,complex64", "--timeout", "3",
                      "-j", "2", "-o", out, "-q")
    if not tap.ok(os.path.exists(out), "a badlib run writes its report", proc.stderr):
        return
    report = taplib.load_report(out)
    seen = {c["outcome"] for c in report["cases"]}
    tap.ok({"pass", "fail", "unsupported", "crash", "timeout", "error"} <= seen,
           "the badlib run has every outcome a run gives", seen)
    junit, markdown, wproc = writers.write(out, os.path.join(workdir, "outcomes"))
    if tap.ok(wproc.returncode == 0, "JUnit and Markdown are written for it", wproc.stderr):
        check_junit(tap, report, junit, "badlib run")
        check_markdown(tap, report, markdown, "badlib run")

    expected = apply_expectations(report)
    path = os.path.join(workdir, "expected.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(expected, handle)
    junit, markdown, wproc = writers.write(path, os.path.join(workdir, "expected"),
                                           use_command=False)
    if tap.ok(wproc.returncode == 0, "JUnit and Markdown of a report with expectations",
              wproc.stderr):
        check_junit(tap, expected, junit, "with expectations")
        check_markdown(tap, expected, markdown, "with expectations")


def apply_expectations(report):
    """A copy in which the first fail, crash and pass cases carry expectations, as
    `--expect` leaves them (ic_expect.h): fail -> xfail, crash -> waived, pass -> xpass."""
    report = copy.deepcopy(report)
    done = set()
    for case in report["cases"]:
        new = {"fail": "xfail", "crash": "waived", "pass": "xpass"}.get(case["outcome"])
        if not new or new in done:
            continue
        done.add(new)
        case["expectation"] = {"pattern": case["id"].rsplit(".", 1)[0] + ".*",
                               "reason": f"known <{new}> | `reason` **here**",
                               "link": "https://example.invalid/issue/1",
                               "observed": case["outcome"]}
        case["outcome"] = new
    recount(report)
    return report


def recount(report):
    """Summary counts from the cases, as ic_report_recount does."""
    names = ["pass", "fail", "unsupported", "crash", "timeout", "error", "xfail", "xpass",
             "waived"]
    summary = report["summary"]
    summary["outcomes"] = {n: 0 for n in names}
    for proto in summary["protocols"].values():
        proto["outcomes"] = {n: 0 for n in names}
        for cell in proto["cells"]:
            cell["outcomes"] = {n: 0 for n in names}
    for case in report["cases"]:
        summary["outcomes"][case["outcome"]] += 1
        proto = summary["protocols"][case["protocol"]]
        proto["outcomes"][case["outcome"]] += 1
        for cell in proto["cells"]:
            if (cell["producer"], cell["consumer"], cell["device"], cell.get("environment")) == \
                    (case["producer"], case["consumer"], case["device"], case.get("environment")):
                cell["outcomes"][case["outcome"]] += 1


def check_merged(tap, writers, report, workdir):
    """A merged report (ic_merge.h): two environments of the same run. Suites and matrices are
    per environment, and the same case id in both stays two testcases."""
    merged = copy.deepcopy(report)
    first = {"tool": report["tool"], "run": report["run"], "environment": report["environment"]}
    merged["environments"] = [dict(id="x86_64-cpu", **first), dict(id="x86_64-cuda", **first)]
    cases = []
    for env in ("x86_64-cpu", "x86_64-cuda"):
        for case in report["cases"]:
            cases.append(dict(case, environment=env))
    # one pass of the second environment made unsupported: a cell that differs between them
    flipped = next(c for c in cases if c["environment"] == "x86_64-cuda" and
                   c["outcome"] == "pass")
    flipped["outcome"] = "unsupported"
    flipped["diagnostic"] = "made unsupported in one environment, for the side-by-side view"
    merged["cases"] = cases
    for proto in merged["summary"]["protocols"].values():
        proto["cells"] = [dict(cell, environment=env) for env in ("x86_64-cpu", "x86_64-cuda")
                          for cell in proto["cells"]]
    recount(merged)
    merged["summary"]["total"] = len(cases)
    path = os.path.join(workdir, "merged.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(merged, handle)
    junit, markdown, wproc = writers.write(path, os.path.join(workdir, "merged"),
                                           use_command=False)
    if tap.ok(wproc.returncode == 0, "JUnit and Markdown of a merged report", wproc.stderr):
        check_junit(tap, merged, junit, "merged")
        check_markdown(tap, merged, markdown, "merged")


def check_cap(tap, writers, report_path, report, workdir):
    """A small cap cuts what does not fit, says how much is left out, and points to the full
    report; a cap too small for the totals is refused."""
    findings = report.get("findings", [])
    for cap in (2000, 20000):
        stem = os.path.join(workdir, f"cap{cap}")
        pointer = "https://ci.example.invalid/jobs/1/artifacts/run.json"
        junit, markdown, proc = writers.write(report_path, stem, max_bytes=cap,
                                              full_report=pointer)
        if not tap.ok(proc.returncode == 0, f"max {cap}: written", proc.stderr):
            continue
        with open(markdown, "rb") as handle:
            raw = handle.read()
        text = raw.decode("utf-8")
        tap.ok(len(raw) <= cap, f"max {cap}: the summary is {len(raw)} bytes, within the cap")
        shown = len(re.findall(r"^\| `(harmful|nonconformant|documented)`", text, re.M))
        match = re.search(r"(\d+) of (\d+) findings", text)
        cut = int(match.group(1)) if match else 0
        tap.ok(shown + cut == len(findings) and (not match or int(match.group(2)) ==
                                                 len(findings)),
               f"max {cap}: every finding is shown or counted as left out "
               f"({shown} of {len(findings)} shown)", text[-600:])
        tap.ok(text.rstrip().endswith(f"[the full report](<{pointer}>).") and
               ("**Cut to stay within" in text) == (cap == 2000),
               f"max {cap}: the last line points to the full report"
               f"{', after saying what was cut' if cap == 2000 else ''}", text[-300:])
        tree = render_markdown(text)
        links = [a.get("href") for a in tree.iter("a")]
        tap.ok(links == [pointer], f"max {cap}: the pointer renders as a link", links)
    stem = os.path.join(workdir, "tiny")
    junit, markdown, proc = writers.write(report_path, stem, max_bytes=100)
    tap.ok(proc.returncode != 0 and "cannot hold even the totals" in proc.stderr and
           not os.path.exists(markdown),
           "a cap too small for the totals is an error and writes nothing", proc.stderr)


def run_bytes(binary, *args):
    """Runs the binary; returns (status, stdout and stderr as bytes), for terminal checks that
    must see the bytes as they are."""
    env = dict(os.environ)
    env.pop("INTEROPCHECK_PROBE_PATH", None)
    proc = subprocess.run([binary, *args], capture_output=True, env=env, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


def check_terminal(tap, raw, what, shown=None):
    """What a command printed holds nothing a terminal would act on: it is UTF-8, and control
    characters and ANSI sequences are escapes. `shown` is an escaped text it must hold, so the
    library text was shown, not dropped."""
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        tap.ok(False, f"{what}: the terminal output is UTF-8", exc)
        return
    unsafe = sorted({hex(ord(ch)) for ch in TERMINAL_UNSAFE.findall(text)})
    tap.ok(not unsafe, f"{what}: the terminal output holds no raw ESC or control character",
           unsafe)
    if shown is not None:
        tap.ok(shown in text, f"{what}: the library's text is shown escaped ({shown!r})",
               text[-1500:])


def strings_of(value, path=""):
    """Every (path, string) of a JSON value, member names included."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield f"{path}.{key} (name)", key
            yield from strings_of(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from strings_of(item, f"{path}[{i}]")
    elif isinstance(value, str):
        yield path, value


def over_caps(report):
    """The strings of a report over what it may hold: a reproducer TEXT_SCRIPT_CAP bytes, any
    other string TEXT_FIELD_CAP."""
    return [(path, len(text.encode())) for path, text in strings_of(report)
            if len(text.encode()) > (TEXT_SCRIPT_CAP if path.endswith(".reproducer")
                                     else TEXT_FIELD_CAP)]


def check_hostile(tap, writers, workdir):
    hostile = load_hostile()
    out = os.path.join(workdir, "hostile.json")
    # Not quiet: the findings lines quote the library's messages on the terminal.
    status, terminal = run_bytes(writers.binary, "--probe-dir", probes_dir(), "--producer",
                                 "hostile_text,numpy", "--consumer",
                                 "hostile_text,numpy,interopcheck", "--protocol", "dlpack", "-o",
                                 out)
    if not tap.ok(status in (0, 1) and os.path.exists(out),
                  "a run with the hostile library writes its report",
                  terminal.decode(errors="replace")[-3000:]):
        return
    check_terminal(tap, terminal, "hostile run", shown="ctl:\\x01\\x02\\x07\\x08\\x0b\\x0c\\x0e"
                   "\\x1b[31m\\x1f\\x7f\\u0080\\u0085\\u009f")
    size = os.path.getsize(out)

    # JSON: strict UTF-8, strict JSON, the schema, and the text kept (capped).
    with open(out, "rb") as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8", errors="strict")

        def no_constants(name):
            raise ValueError(f"non-JSON constant {name}")

        def no_duplicates(pairs):
            keys = [k for k, _ in pairs]
            if len(keys) != len(set(keys)):
                raise ValueError(f"duplicate keys {keys}")
            return dict(pairs)

        report = json.loads(text, parse_constant=no_constants, object_pairs_hook=no_duplicates)
        tap.ok(True, "hostile JSON: strict UTF-8 and strict JSON")
    except ValueError as exc:
        tap.ok(False, "hostile JSON: strict UTF-8 and strict JSON", exc)
        return
    errors = taplib.schema_errors(report)
    tap.ok(not errors, "hostile JSON: the report validates against reports/schema",
           "\n".join(errors[:10]))
    tap.ok(size < 4 * 1024 * 1024, f"hostile JSON: {size} bytes, though refusals and notes "
           "carry megabytes")
    over = over_caps(report)
    tap.ok(not over, f"hostile JSON: no string over {TEXT_FIELD_CAP} bytes (a reproducer "
           f"{TEXT_SCRIPT_CAP})", over[:5])
    library = next((lib for lib in report["environment"]["libraries"]
                    if lib["name"] == "hostile_text"), {})
    call = library.get("calls", {}).get("dlpack", {}).get("export", "")
    call_match = re.search(r" \u2026 \[(\d+) bytes cut\]$", call)
    call_full = hostile.CALL.encode()
    call_kept = len(call[:call_match.start()].encode()) if call_match else 0
    tap.ok(call_match and len(call.encode()) <= TEXT_FIELD_CAP and
           int(call_match.group(1)) == len(call_full) - call_kept and
           call_full.startswith(call[:call_match.start()].encode()),
           f"hostile JSON: a {len(call_full)}-byte call of load() is capped where it enters, "
           f"to {len(call.encode())} bytes with a marker that counts the rest", repr(call[-80:]))
    refused = [f["id"] for f in report.get("findings", [])
               if f.get("culprit") == "hostile_text" and not f.get("reproducer") and
               "more than the 65536 a report keeps" in (f.get("reproducer_error") or "")]
    tap.ok(refused, "hostile JSON: a reproducer longer than a report keeps is refused whole, "
           "and the finding says why", [(f["id"], f.get("reproducer_error"))
                                        for f in report.get("findings", [])])
    cases = taplib.cases_by_id(report)
    shown = hostile.HOSTILE.replace("\ud800", FFFD)

    def diag(case_id):
        return cases.get(case_id, {}).get("diagnostic", "")

    refusal = "dlpack.hostile_text.numpy.cpu.int8.contiguous"
    tap.ok(cases.get(refusal, {}).get("outcome") == "unsupported" and
           diag(refusal).endswith("BufferError: " + shown),
           "hostile JSON: a BufferError's text is kept whole, the lone surrogate as U+FFFD",
           repr(diag(refusal)))
    failure = "dlpack.hostile_text.numpy.cpu.int16.contiguous"
    tap.ok(cases.get(failure, {}).get("outcome") == "fail" and
           "with ValueError" in diag(failure) and (": " + shown + ";") in diag(failure),
           "hostile JSON: a ValueError's text is kept whole in the failure",
           repr(diag(failure)))
    long_refusal = diag("dlpack.hostile_text.numpy.cpu.int32.contiguous")
    tap.ok(long_refusal.startswith("hostile_text refused") and "\u00e9" * 50 in long_refusal and
           len(long_refusal.encode()) < DIAGNOSTIC_MAX,
           f"hostile JSON: a 4 MB refusal is cut to {len(long_refusal.encode())} bytes")
    note = diag("dlpack.hostile_text.numpy.cpu.bool.contiguous")
    tap.ok(note == "hostile_text has no bool arrays: " + shown,
           "hostile JSON: a hostile note is the unsupported reason, whole, its lone surrogate "
           "as U+FFFD", repr(note))
    mega_note = diag("dlpack.hostile_text.numpy.cpu.float16.contiguous")
    intro = "hostile_text has no float16 arrays: "
    full = (intro + hostile.MEGA.replace("\ud800", "")).encode()
    match = re.search(r" \u2026 \[(\d+) bytes cut\]$", mega_note)
    kept = len(mega_note[:match.start()].encode()) if match else 0
    # The note was capped where it entered (the probe's info, TEXT_FIELD_CAP bytes with its
    # own marker); the diagnostic quotes that and counts what it leaves out of it.
    tap.ok(match and 0 < int(match.group(1)) and
           kept + int(match.group(1)) <= len(intro.encode()) + TEXT_FIELD_CAP and
           len(mega_note.encode()) < DIAGNOSTIC_MAX and full.startswith(
               mega_note[:match.start()].encode()),
           "hostile JSON: a 4 MB note, capped where it entered, is cut on a character with a "
           "marker that counts the rest", repr(mega_note[-80:]))
    crash = diag("dlpack.numpy.hostile_text.cpu.int64.contiguous")
    # The quote of the output, whether the case was the pair's first crash (run in a worker)
    # or a later one (run in a forked copy, whose diagnostic adds an aside after the quote):
    # which of the pair's int64 cases crashes first depends on how the two workers share them.
    def quote(text):
        return text.split("; last output: ", 1)[-1].split("; it was a copy of the worker")[0]

    quoted = quote(crash)
    tap.ok(cases.get("dlpack.numpy.hostile_text.cpu.int64.contiguous", {}).get("outcome") ==
           "crash" and "SIGSEGV" in crash and "<script>alert(4)</script>" in quoted and
           FFFD + FFFD + "<script>" in quoted and quoted.endswith("end"),
           "hostile JSON: a dead worker's raw stderr is kept, invalid bytes as U+FFFD and the "
           "cut character at its end removed", repr(crash[-160:]))
    # After the pair's first crash its other int64 cases run in forked copies, whose
    # diagnostics go on after the quote: the cut character is left out there too.
    others = [diag(i) for i, c in cases.items()
              if i.startswith("dlpack.numpy.hostile_text.cpu.int64.") and c["outcome"] == "crash"]
    forked = [d for d in others if "; it was a copy of the worker" in d]
    tap.ok(forked and all(quote(d) == quoted for d in others),
           f"hostile JSON: every crash of the pair quotes the same output, the {len(forked)} "
           f"of {len(others)} in forked copies too",
           [repr(quote(d)[-40:]) for d in others if quote(d) != quoted])
    version = [lib.get("version") for lib in report["environment"]["libraries"]
               if lib["name"] == "hostile_text"]
    tap.ok(version == ["0.1+<b>|`v`|</b>"], "hostile JSON: the library's version as it gave it",
           version)

    junit, markdown, wproc = writers.write(out, os.path.join(workdir, "hostile"))
    if not tap.ok(wproc.returncode == 0, "hostile: JUnit and Markdown are written",
                  wproc.stderr):
        return

    # JUnit: well-formed, valid, nothing raw that XML forbids, the text round-trips.
    with open(junit, "rb") as handle:
        xml_raw = handle.read()
    tap.ok(b"<script" not in xml_raw and b"]]>" not in xml_raw and b"<img" not in xml_raw,
           "hostile JUnit: no raw markup and no ]]> in the file")
    tap.ok(not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]", xml_raw),
           "hostile JUnit: no control character but tab and LF in the file")
    tap.ok(len(xml_raw) < 4 * 1024 * 1024, f"hostile JUnit: {len(xml_raw)} bytes")
    doc = check_junit(tap, report, junit, "hostile")
    if doc is not None:
        by_key = {(t.get("classname"), t.get("name")): t for t in doc.iter("testcase")}
        t = by_key.get(("interopcheck.dlpack.hostile_text.numpy", "cpu.int16.contiguous"))
        failure = t.find("failure") if t is not None else None
        want = xml_safe(diag("dlpack.hostile_text.numpy.cpu.int16.contiguous"))
        tap.ok(failure is not None and failure.get("message").endswith(want) and
               want in failure.text,
               "hostile JUnit: the failure's message and body hold the diagnostic, characters "
               "XML forbids as U+FFFD", etree_text(t) if t is not None else "no testcase")
        t = by_key.get(("interopcheck.dlpack.hostile_text.numpy", "cpu.float16.contiguous"))
        skipped = t.find("skipped") if t is not None else None
        message = skipped.get("message") if skipped is not None else ""
        tap.ok(message.endswith("bytes cut]") and len(message.encode()) <= JUNIT_MESSAGE_CAP,
               f"hostile JUnit: a long reason is capped at {len(message.encode())} bytes with "
               "the marker", message[-100:])
        t = by_key.get(("interopcheck.dlpack.numpy.hostile_text", "cpu.int64.contiguous"))
        error = t.find("error") if t is not None else None
        tap.ok(error is not None and "<script>alert(4)</script>" in error.text,
               "hostile JUnit: a crash (an <error>) keeps its raw output, which reads back as "
               "text")

    # Markdown: tables keep their shape, nothing renders as markup, the text reads back.
    result = check_markdown(tap, report, markdown, "hostile")
    if result:
        text, tree = result
        check_markdown_is_inert(tap, text, tree, "hostile", set(cases))
        tap.ok(os.path.getsize(markdown) <= 1000 * 1000, "hostile Markdown: within the default cap")
        libraries = next((p.text_content() for p in tree.iter("p")
                          if p.text_content().startswith("interopcheck ")), "")
        tap.ok("hostile_text 0.1+<b>|`v`|</b>" in libraries,
               "hostile Markdown: the library's version reads as it gave it", libraries)
    check_huge_message(tap, writers, out, report, workdir)


def check_huge_message(tap, writers, report_path, report, workdir):
    """A report file that carries megabytes of one library message, control characters and
    all, in a case's diagnostic, a finding's, a library's version and error, a gap's reason and
    a finding's reproducer: every view of it, and every report made from it, grows by a few
    capped copies at most, and the terminal shows it escaped."""
    unit = "\x1b[31m\x01\x9b" + "\u00e9" * 40 + "\n"
    huge = unit * (8 * 1000 * 1000 // len(unit.encode()))  # 8 MB
    crafted = copy.deepcopy(report)
    failing = next(c for c in crafted["cases"] if c["outcome"] == "fail")
    failing["diagnostic"] = huge
    crafted["findings"][0]["diagnostic"] = huge
    crafted["findings"][0]["reproducer"] = huge
    library = next(lib for lib in crafted["environment"]["libraries"]
                   if lib["name"] == "hostile_text")
    library["version"] = library["error"] = huge
    gap = next(g for p in crafted["summary"]["protocols"].values() for g in p["gaps"])
    gap["reason"] = huge
    crafted_path = os.path.join(workdir, "huge.json")
    with open(crafted_path, "w", encoding="utf-8") as handle:
        json.dump(crafted, handle, ensure_ascii=False)

    sizes = {}
    for name, path in (("plain", report_path), ("huge", crafted_path)):
        stem = os.path.join(workdir, f"views_{name}")
        proc = taplib.run(writers.binary, "report", path, "--html", stem + ".html", "--junit",
                          stem + ".xml", "--junit-cases", "--junit-unsupported", "--markdown",
                          stem + ".md")
        merged = stem + "_merged.json"
        merge = taplib.run(writers.binary, "merge", path, report_path, "-o", merged)
        if not tap.ok(proc.returncode == 0 and merge.returncode == 0,
                      f"{name} report: its views and a merge are written",
                      proc.stderr + merge.stderr):
            return
        sizes[name] = {kind: os.path.getsize(stem + suffix) for kind, suffix in
                       (("dashboard", ".html"), ("JUnit", ".xml"), ("Markdown", ".md"),
                        ("merged JSON", "_merged.json"))}
    # Five capped copies of the message (JSON escapes a control character in six bytes), in
    # every JUnit suite that names the library's version; the message itself is 8 MB.
    limits = {"dashboard": 512 * 1024, "JUnit": 1024 * 1024, "Markdown": 64 * 1024,
              "merged JSON": 512 * 1024}
    for kind, limit in limits.items():
        grown = sizes["huge"][kind] - sizes["plain"][kind]
        tap.ok(grown <= limit, f"an 8 MB message: the {kind} grows by {grown} bytes "
               f"(at most {limit}), to {sizes['huge'][kind]}", sizes)
    merged = taplib.load_report(os.path.join(workdir, "views_huge_merged.json"))
    over = over_caps(merged)
    tap.ok(not over, "an 8 MB message: a report made from the file holds no string over the "
           "caps", over[:5])
    finding_id = crafted["findings"][0]["id"]
    finding = next((f for f in merged.get("findings", []) if f["id"] == finding_id), {})
    repro = taplib.run(writers.binary, "repro", crafted_path, finding_id)
    tap.ok(finding and not finding.get("reproducer") and repro.returncode == 2 and
           "bytes, more than the 65536 a report keeps" in repro.stderr,
           "an 8 MB reproducer in the file is dropped, never cut, and `repro` says why",
           f"{repro.returncode} {repro.stderr[:500]}")
    status, terminal = run_bytes(writers.binary, "diff", report_path, crafted_path)
    check_terminal(tap, terminal, "diff of an 8 MB message", shown="\\x1b[31m\\x01\\u009b")
    tap.ok(len(terminal) < 64 * 1024, f"diff of an 8 MB message: {len(terminal)} bytes printed")


def check_one_core(tap, writers, workdir):
    """On two cores the findings and the dashboard are collected by a second thread's pass over
    the cases while the JSON is written; pinned to one core, by the JSON's own pass
    (src/cli/ic_cmd_run.c, ic_run_write_json). Both give the same findings and the same
    dashboard cases: the same ids, outcomes, rules and severities in the same order."""
    if not shutil.which("taskset") or len(os.sched_getaffinity(0)) < 2:
        tap.skip("needs taskset and two usable cores")
        return
    found = {}
    for mode, prefix in (("two cores", []), ("one core", ["taskset", "-c", "0"])):
        out = os.path.join(workdir, f"cores-{mode.split()[0]}.json")
        proc = subprocess.run(
            prefix + [writers.binary, "--probe-dir", probes_dir(), "--producer",
                      "leaklib,writelib,numpy,rolib", "--consumer",
                      "numpy,writelib,rolib,interopcheck", "--protocol", "dlpack,array_interface",
                      "--dtype", "int32,float32", "-o", out, "-q"],
            capture_output=True, text=True, timeout=600)
        if not tap.ok(proc.returncode == 1 and os.path.exists(out),
                      f"a run with findings on {mode} writes its report", proc.stderr):
            return
        report = taplib.load_report(out)
        with open(os.path.splitext(out)[0] + ".html", encoding="utf-8") as handle:
            data = json.loads(re.search(r'<script[^>]*id="ic-data"[^>]*>(.*?)</script>',
                                        handle.read(), re.S).group(1))
        columns = {name: data["cases"][name] for name in ("cell", "dtype", "layout", "variant",
                                                             "outcome", "severity", "rule")}
        found[mode] = ([(f["id"], f["count"], f["cases"], f["side"], f["rule"])
                        for f in report["findings"]], columns, len(report["cases"]))
    two, one = found["two cores"], found["one core"]
    tap.ok(two[0] and two[0] == one[0],
           f"the same {len(two[0])} findings whether collected beside the JSON or in its pass",
           (two[0], one[0]))
    tap.ok(two[2] == one[2] and len(two[1]["outcome"]) == two[2] and two[1] == one[1],
           f"and the same dashboard cases ({two[2]}: outcomes, rules, severities, in order)")


def test(tap, args):
    binary = args[0]
    writers = Writers(tap, binary)
    if not os.path.exists(writers.harness):
        tap.ok(False, "the write_reports harness is built", writers.harness)
        return
    with tempfile.TemporaryDirectory() as workdir:
        report = check_real_run(tap, writers, workdir)
        check_outcomes_run(tap, writers, workdir)
        check_one_core(tap, writers, workdir)
        if report is not None:
            check_merged(tap, writers, report, workdir)
            check_cap(tap, writers, os.path.join(workdir, "real.json"), report, workdir)
        check_hostile(tap, writers, workdir)


if __name__ == "__main__":
    taplib.main(test)
