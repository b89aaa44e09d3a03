"""Findings on the pinned library set: what `interopcheck --all` reports, and whether each
reproducer reproduces.

One --all run of the real libraries; then
  - every failing, crashing and timed-out case names a finding the report holds, and each
    finding's patterns match exactly its cases among those with a verdict;
  - the findings come to a few dozen, most severe first;
  - every finding has a reproducer, and `interopcheck repro --run` of each says the problem
    still shows (exit status 0): a reproducer that does not reproduce is a bug in the finding;
  - the verdicts that used to be the tool's own mistakes stay fixed (issue 8's list).
"""
import concurrent.futures
import functools
import json
import os
import re
import tempfile

import taplib

FAILING = ("fail", "crash", "timeout")


def observed(case):
    if case["outcome"] in ("xfail", "waived"):
        return case.get("expectation", {}).get("observed")
    return case["outcome"]


@functools.lru_cache(maxsize=None)
def compile_pattern(pattern):
    """ic_expect_match as one regular expression, matched against "." + the case id: parts
    joined by '.', '*' and '?' within a part, '**' any run of whole parts (none included).
    (A regular expression per pattern, not a matcher per part: the matrix has 200 000 cases
    and every finding's patterns meet each of them.)"""
    regex = ""
    for part in pattern.split("."):
        if part == "**":
            regex += r"(?:\.[^.]+)*"
        else:
            regex += r"\." + "".join("[^.]*" if ch == "*" else "[^.]" if ch == "?"
                                      else re.escape(ch) for ch in part)
    return re.compile(regex + r"\Z")


def matches(pattern, case_id):
    return compile_pattern(pattern).match("." + case_id) is not None


def check_patterns(tap, report, by_finding):
    wrong = []
    # A pattern may take in unsupported and error cases: only the others, and each finding's
    # own, are looked at.
    judged = [(case, "." + case["id"]) for case in report["cases"]
              if case["outcome"] not in ("unsupported", "error")]
    for finding in report["findings"]:
        members = by_finding.get(finding["id"], set())
        hit = re.compile("|".join(compile_pattern(p).pattern for p in finding["cases"])).match
        for case_id in members:
            if not hit("." + case_id):
                wrong.append(f"{finding['id']}: misses {case_id}")
        for case, dotted in judged:
            if case["id"] not in members and hit(dotted):
                wrong.append(f"{finding['id']}: takes in {case['id']} ({case['outcome']})")
        if len(wrong) > 20:
            break
    tap.ok(not wrong, "each finding's patterns match its cases and no other case with a verdict",
           "\n".join(wrong[:20]))


def check_verdicts(tap, cases):
    """The tester's own mistakes of issue 8, by what each looked like."""
    def where(pred):
        return [c["id"] for c in cases.values() if pred(c)][:5]

    bad = where(lambda c: c["outcome"] == "fail" and c.get("checks", {}).get("zero_copy", {})
                .get("status") == "fail" and c.get("variant") is None
                and c["protocol"] == "dlpack" and c.get("side") == "consumer")
    tap.ok(not bad, "a DLPack consumer that copies under copy=None is not failed", bad)
    copied = where(lambda c: c.get("checks", {}).get("zero_copy", {}).get("rule")
                   == "exchange.copy_allowed")
    tap.ok(copied, "... it passes, with the note exchange.copy_allowed", copied)
    bad = where(lambda c: c["protocol"] == "array" and c.get("rule") == "exchange.refusal")
    tap.ok(not bad, "__array__ refusals are not held to BufferError", bad)
    bad = where(lambda c: c["protocol"].startswith("dlpack") and c.get("side") == "consumer"
                and c.get("rule") == "exchange.refusal")
    tap.ok(not bad, "DLPack consumers are only advised BufferError: another refusal is not "
           "failed", bad)
    noted = where(lambda c: c["outcome"] == "unsupported" and c.get("checks", {})
                  .get("import", {}).get("rule") == "dlpack.consumer_refusal")
    tap.ok(noted, "... it is unsupported, with the note dlpack.consumer_refusal", noted)
    bad = where(lambda c: c.get("rule") == "exchange.refusal" and c.get("side") == "producer"
                and "unexpected keyword argument 'max_version'" in c.get("diagnostic", ""))
    tap.ok(not bad, "a producer's TypeError for max_version is the spec's fallback signal, not "
           "a refusal", bad)
    retry = where(lambda c: c.get("rule") == "dlpack.consumer_retry" and c.get("side") ==
                  "consumer")
    tap.ok(retry, "... the consumer that did not ask again is charged (dlpack.consumer_retry)",
           retry)
    bad = where(lambda c: c["layout"] == "fortran" and c["protocol"] == "buffer"
                and c["consumer"] in ("pyarrow", "py_bytes", "py_bytearray")
                and c.get("rule") == "exchange.contents")
    tap.ok(not bad, "untyped imports of Fortran-ordered arrays are compared as laid out", bad)
    bad = where(lambda c: c["layout"] == "empty" and c.get("checks", {}).get("readonly", {})
                .get("status") == "fail")
    tap.ok(not bad, "read-only is not judged on empty arrays", bad)
    bad = where(lambda c: c["outcome"] == "pass" and c.get("checks")
                and all(ch["status"] != "pass" for ch in c["checks"].values()))
    tap.ok(not bad, "no case whose checks were all skipped passes", bad)
    bad = where(lambda c: c["outcome"] == "pass" and c["protocol"] == "array"
                and c.get("checks", {}).get("export", {}).get("status") != "pass")
    tap.ok(not bad, "no __array__ case passes without __array__ being judged", bad)
    mlx = where(lambda c: c["id"].startswith("buffer.mlx.mlx.") and c.get("rule")
                == "exchange.round_trip")
    tap.ok(mlx, "MLX that cannot import its own buffer export is a failure (round_trip)", mlx)
    hidden = where(lambda c: c["id"].startswith("dlpack.paddle.jax.")
                   and "jax" in c.get("checks", {}).get("import", {}).get("note", ""))
    tap.ok(hidden, "what JAX raised after paddle's broken export is recorded", hidden)
    bad = where(lambda c: c.get("rule") and c["outcome"] in FAILING and not c.get("side"))
    tap.ok(not bad, "every failure names its side", bad)


def run_reproducers(tap, binary, path, report):
    """`interopcheck repro REPORT ID --run` for every finding, two at a time, on a copy of the
    report without its cases (repro reads the findings and the environment; the whole report
    is 100 MB, read again for each finding)."""
    slim = path + ".findings.json"
    with open(slim, "w", encoding="utf-8") as handle:
        json.dump(dict(report, cases=[]), handle)

    def reproduce(finding):
        if "reproducer" not in finding:
            return f"{finding['id']}: no reproducer ({finding.get('reproducer_error')})"
        proc = taplib.run(binary, "repro", slim, finding["id"], "--run", "--timeout", "120",
                          timeout=300)
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            return f"{finding['id']}: exit {proc.returncode}: {' | '.join(tail)}"
        return None

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        failed = [why for why in pool.map(reproduce, report["findings"]) if why]
    tap.ok(not failed, f"all {len(report['findings'])} reproducers reproduce "
                       "(interopcheck repro --run exits 0)", "\n".join(failed))


def test(tap, args):
    binary = args[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "all.json")
        proc = taplib.run(binary, "--all", "-o", path, timeout=1800)
        tap.ok(proc.returncode == 1, "--all on the pinned set: exit status 1 (cases failed)",
               proc.stderr[-2000:])
        report = taplib.load_report(path)
        errors = taplib.schema_errors(report)
        tap.ok(not errors, "the report validates against reports/schema", "\n".join(errors[:10]))
        cases = taplib.cases_by_id(report)
        findings = {f["id"]: f for f in report["findings"]}
        by_finding = {}
        orphans = []
        for case in report["cases"]:
            if observed(case) in FAILING:
                if case.get("finding") not in findings:
                    orphans.append(case["id"])
                by_finding.setdefault(case.get("finding"), set()).add(case["id"])
        tap.ok(not orphans, "every failing case names a finding of the report", orphans[:10])
        counts = {fid: len(ids) for fid, ids in by_finding.items()}
        tap.ok(all(counts.get(fid) == f["count"] for fid, f in findings.items()),
               "each finding counts its cases")
        tap.ok(10 <= len(findings) <= 80,
               f"{len(findings)} findings for {sum(counts.values())} failing cases: a few dozen")
        order = ["harmful", "nonconformant", "documented", "note"]
        ranks = [order.index(f["severity"]) for f in report["findings"]]
        tap.ok(ranks == sorted(ranks), "findings come most severe first")
        tap.ok(all(f["culprit"] and f["rule"] and f["side"] for f in report["findings"]),
               "every finding names its culprit library, its side and its rule")
        documented = [f for f in report["findings"] if f["severity"] == "documented"]
        tap.ok(documented and all(f.get("documented", "").startswith("https://")
                                  for f in documented),
               "a documented deviation keeps its class and its library's link", documented[:1])
        lent = [f["id"] for f in report["findings"]
                if f.get("documented") and f["severity"] != "documented"]
        lent += [c["id"] for c in report["cases"]
                 if c.get("documented") and c.get("severity") != "documented"]
        tap.ok(not lent, "a library's link to its documentation goes only with a failure of the "
               "documented class, on a finding or a case", lent[:10])
        check_patterns(tap, report, by_finding)
        check_verdicts(tap, cases)
        run_reproducers(tap, binary, path, report)


if __name__ == "__main__":
    taplib.main(test)
