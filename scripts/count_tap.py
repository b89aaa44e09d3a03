"""Counts TAP results in Meson's testlog.json and prints "N passed, N failed".

Every "ok" and "not ok" line of every TAP test counts once ("# SKIP" lines are counted and
reported as skipped, neither passed nor failed; "# TODO" failures do not count as failed). A test
program whose Meson result is not OK, SKIP or EXPECTEDFAIL (it failed, crashed, or was killed at
its timeout) and printed no "not ok" line counts as one failure, whatever it printed before: a
test killed after a hundred "ok" lines must not read as "0 failed".
"""
import json
import re
import sys

TAP_LINE = re.compile(r"^(not ok|ok)\b(.*)$")


def main(path):
    passed = failed = skipped = 0
    broken = []
    with open(path, encoding="utf-8") as log:
        for line in log:
            entry = json.loads(line)
            counted = failed_here = 0
            for out in (entry.get("stdout") or "").splitlines():
                match = TAP_LINE.match(out)
                if not match:
                    continue
                counted += 1
                directive = match.group(2).upper()
                if match.group(1) == "ok" and "# SKIP" in directive:
                    skipped += 1
                elif match.group(1) == "ok":
                    passed += 1
                elif "# TODO" not in directive:
                    failed += 1
                    failed_here += 1
            if entry.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL") and failed_here == 0:
                failed += 1
                broken.append(f"{entry.get('name')} ({entry.get('result')}, "
                              f"{counted} TAP lines)")
    if broken:
        print("tests that did not end OK: " + ", ".join(str(b) for b in broken))
    if skipped:
        print(f"{skipped} skipped (not counted as passed)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
