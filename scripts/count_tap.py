"""Counts TAP results in Meson's testlog.json and prints "N passed, N failed".

Every "ok" and "not ok" line of every TAP test counts once ("# SKIP" lines are counted and
reported as skipped, neither passed nor failed; "# TODO" failures do not count as failed). A test program that
printed no TAP line at all, or whose Meson result is not OK/SKIP, counts as one failure, so a
crashed test binary can never hide behind a missing count.
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
            counted = 0
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
            if entry.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL") and counted == 0:
                failed += 1
                broken.append(entry.get("name"))
    if broken:
        print("tests without TAP results: " + ", ".join(str(b) for b in broken))
    if skipped:
        print(f"{skipped} skipped (not counted as passed)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
