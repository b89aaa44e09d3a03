"""A small TAP producer for interopcheck's Python integration tests.

Each check prints "ok N - name" or "not ok N - name" at once (so a test that dies midway keeps
what it printed), details go out as "# " comments, and finish() prints the plan and returns
the exit status. Meson runs these scripts with protocol 'tap'.
"""
import json
import os
import re
import subprocess
import sys


class Tap:
    def __init__(self):
        self.count = 0
        self.failed = 0

    def ok(self, condition, name, detail=None):
        self.count += 1
        if not condition:
            self.failed += 1
        print(f"{'' if condition else 'not '}ok {self.count} - {name}", flush=True)
        if not condition and detail is not None:
            for line in str(detail).splitlines()[:40]:
                print(f"#   {line}", flush=True)
        return bool(condition)

    def skip(self, reason):
        self.count += 1
        print(f"ok {self.count} # SKIP {reason}", flush=True)

    def diag(self, text):
        for line in str(text).splitlines():
            print(f"# {line}", flush=True)

    def finish(self):
        print(f"1..{self.count}", flush=True)
        return 1 if self.failed else 0


def run(binary, *args, env=None, timeout=600):
    """Runs the interopcheck binary; returns the CompletedProcess (text mode)."""
    full_env = dict(os.environ)
    full_env.pop("INTEROPCHECK_PROBE_PATH", None)
    if env:
        full_env.update(env)
    return subprocess.run([binary, *args], capture_output=True, text=True, env=full_env,
                          timeout=timeout)


def run_with_test_probes(binary, out, *args):
    """Runs a selection with the test probes of tests/probes loaded, writing the report to
    `out`; returns the CompletedProcess."""
    probes = os.path.join(source_root(), "tests", "probes")
    return run(binary, "--probe-dir", probes, *args, "-o", out)


def run_failing_selection(tap, binary, out, why, *args):
    """Runs a selection with the test probes that must fail (exit status 1, `why`), and returns
    its valid report, its cases by id and an expecter of them."""
    proc = run_with_test_probes(binary, out, *args)
    tap.ok(proc.returncode == 1, f"exit status 1: {why}",
           f"status {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    report = load_valid_report(tap, out)
    cases = cases_by_id(report)
    return report, cases, case_expecter(tap, cases)


def check_findings(tap, binary, report_path, report, culprit, rules, side):
    """The findings of `culprit` under `rules` are exactly those, all charged to `side`, and
    each one's reproducer reproduces."""
    findings = [f for f in report["findings"] if f["culprit"] == culprit and f["rule"] in rules]
    tap.ok(sorted(f["rule"] for f in findings) == sorted(rules) and
           all(f["side"] == side for f in findings),
           f"the findings of {culprit}: {', '.join(sorted(rules))}, the {side}'s", findings)
    for finding in findings:
        check_reproduces(tap, binary, report_path, finding)


def check_reproduces(tap, binary, report_path, finding):
    """Runs a finding's reproducer: it must end REPRODUCED (`repro --run` exits 0 when it ran
    and reproduced)."""
    proc = run(binary, "repro", report_path, finding["id"], "--run", "--timeout", "120")
    tap.ok(proc.returncode == 0 and re.search(r"^REPRODUCED", proc.stdout, re.M) is not None,
           f"... its reproducer reproduces it ({finding['id']})",
           f"status {proc.returncode}\n{proc.stdout[-1500:]}\n{proc.stderr[-800:]}")


RULE_TOKEN = re.compile(r"\[(?:warning: |note: )?([a-z_]+\.[a-z0-9_]+)\]")


def record_rules(report):
    """Appends every rule id the report shows fired (a case's or a check's rule, and the
    [rule] citations in notes, warnings included) to the file named by $IC_RULES_FIRED, which
    the rules coverage test (test_rules.py) reads after the suite."""
    path = os.environ.get("IC_RULES_FIRED")
    if not path:
        return
    fired = set()
    for case in report.get("cases", []):
        if case.get("rule"):
            fired.add(case["rule"])
        for check in case.get("checks", {}).values():
            if check.get("rule"):
                fired.add(check["rule"])
            fired.update(RULE_TOKEN.findall(check.get("note", "")))
        fired.update(RULE_TOKEN.findall(case.get("diagnostic", "")))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.writelines(f"{rule}\n" for rule in sorted(fired))


def load_report(path):
    with open(path, encoding="utf-8") as handle:
        report = json.load(handle)
    record_rules(report)
    return report


def cases_by_id(report):
    return {case["id"]: case for case in report["cases"]}


def source_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def schema_errors(report):
    """Validation errors of a report against reports/schema (jsonschema, draft 2020-12)."""
    import jsonschema

    path = os.path.join(source_root(), "reports", "schema", "interopcheck-report-v2.schema.json")
    with open(path, encoding="utf-8") as handle:
        schema = json.load(handle)
    validator = jsonschema.Draft202012Validator(schema,
                                                format_checker=jsonschema.FormatChecker())
    return [f"{e.json_path}: {e.message[:200]}" for e in validator.iter_errors(report)]


def load_valid_report(tap, path):
    """The report at `path` (load_report), after one check: it validates against reports/schema."""
    report = load_report(path)
    errors = schema_errors(report)
    tap.ok(not errors, "the report validates against reports/schema", "\n".join(errors[:20]))
    return report


def case_expecter(tap, cases):
    """expect(case_id, outcome, name, rule=None, text=None, checks=None): one check, named
    "CASE_ID: name", that the case of `cases` (cases_by_id) has `outcome` and, where given,
    cites `rule`, has `text` in its diagnostic and gives its checks the statuses of `checks`
    ({check: status})."""

    def expect(case_id, outcome, name, rule=None, text=None, checks=None):
        case = cases.get(case_id, {})
        good = case.get("outcome") == outcome
        if rule is not None:
            good = good and case.get("rule") == rule
        if text is not None:
            good = good and text in case.get("diagnostic", "")
        for check, status in (checks or {}).items():
            good = good and case.get("checks", {}).get(check, {}).get("status") == status
        tap.ok(good, f"{case_id}: {name}", case)

    return expect


def main(test):
    tap = Tap()
    try:
        test(tap, sys.argv[1:])
    except Exception as exc:  # a broken test must show as a failure, not vanish
        import traceback

        tap.ok(False, f"the test itself raised {type(exc).__name__}", traceback.format_exc())
    sys.exit(tap.finish())
