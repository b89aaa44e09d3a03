"""The harness as a pytest suite: one test per case of an interopcheck report, asserting that the
harness reaches interopcheck's verdict (harness_cases.py says how, and what it leaves out).

    HARNESS_REPORT=run.json python -m pytest bench/test_harness.py -q -p no:cacheprovider

HARNESS_LIBRARIES (comma-separated) narrows the libraries; the default is harness_cases'.
A case that interopcheck failed on a check the harness does not make, and whose verdicts
differ, is an xfail naming that check: counted in pytest's summary, never a silent pass.
"""
import os

import pytest

import harness_cases

REPORT = os.environ.get("HARNESS_REPORT")
if not REPORT:
    pytest.skip("HARNESS_REPORT names no interopcheck report", allow_module_level=True)
_report = harness_cases.read_report(REPORT)
_libraries = os.environ.get("HARNESS_LIBRARIES")
CASES, _ = harness_cases.select(
    _report, tuple(_libraries.split(",")) if _libraries else harness_cases.LIBRARIES)
SEED = harness_cases.run_seed(_report)
# Each library is imported once for the whole session, as a user's conftest would.
PROBES = harness_cases.Probes()


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_same_verdict(case):
    verdict, why = harness_cases.run_case(PROBES, case, SEED)
    expected = harness_cases.VERDICTS[case["outcome"]]
    if verdict != expected and harness_cases.beyond_harness(case):
        pytest.xfail(harness_cases.beyond_harness(case))
    assert verdict == expected, f"interopcheck {case['outcome']}, harness {verdict}: {why}"
