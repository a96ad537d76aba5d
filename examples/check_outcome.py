"""Checks what the action reported for one example against what the self-test expects.

Used by .github/workflows/self-test.yml after each `uses: ./` step (which runs with continue-on-error),
and by tests/action on this machine. Reads the expectations and the action's outputs from the
environment; exits 1 with one line per mismatch.
"""

import json
import os
import sys


def check(env) -> list:
    problems = []
    expected_outcome = "success" if env["EXPECT_VERDICT"] == "pass" else "failure"
    if env.get("OUTCOME", expected_outcome) != expected_outcome:
        problems.append(f"step outcome {env.get('OUTCOME')!r}, expected {expected_outcome!r}")
    if env["VERDICT"] != env["EXPECT_VERDICT"]:
        problems.append(f"verdict {env['VERDICT']!r}, expected {env['EXPECT_VERDICT']!r}")
    if env["EXIT_CODE"] != env["EXPECT_EXIT_CODE"]:
        problems.append(f"exit-code {env['EXIT_CODE']!r}, expected {env['EXPECT_EXIT_CODE']!r}")
    try:
        with open(env["REPORT"], encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as exc:
        return problems + [f"report {env['REPORT']!r} unreadable: {exc}"]
    if str(len(report["findings"])) != env["FINDINGS"]:
        problems.append(f"findings output {env['FINDINGS']!r} but the report has {len(report['findings'])}")
    kind = env.get("EXPECT_KIND", "")
    if kind and kind not in {f["kind"] for f in report["findings"]}:
        problems.append(f"no finding of kind {kind!r} in the report")
    text = env.get("EXPECT_TEXT", "")
    if text and text not in json.dumps(report):
        problems.append(f"{text!r} appears nowhere in the report")
    return problems


def main() -> int:
    problems = check(os.environ)
    for problem in problems:
        print(f"::error title=self-test::{problem}")
    if not problems:
        print("self-test: the action reported what was expected")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
