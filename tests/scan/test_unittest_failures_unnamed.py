"""A unittest verdict that counts failures no line names has its own rule id, ``unittest-failures-unnamed``.

verdict25 made that finding under ``pytest-test-outcome`` (the id of pytest's outcome lines): a user who
re-graded or ignored pytest's outcomes changed unittest's too, and every reporter called a unittest run's
verdict a pytest outcome. The log is verdict25's real capture (CPython 3.9 ``python -m unittest``: an
unexpected success that only a "u" names); each reporter is run by the CLI, as a user runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LOG = REPO / "fixtures" / "without-v" / "verdict25-unittest-unexpected-success-py39.log"
RULE = "unittest-failures-unnamed"
MESSAGE = ("unittest's verdict says FAILED (expected failures=1, unexpected successes=1), but the log names"
           " none of those tests")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analyzer", *args], cwd=str(REPO), capture_output=True,
                          text=True, timeout=120)


def test_json_names_the_unittest_rule():
    proc = _cli("--format", "json", str(LOG))
    assert proc.returncode == 1, proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    assert [(f["rule"], f["kind"], f["severity"], f["line"], f["test"], f["message"]) for f in findings] == [
        (RULE, "test-failure", "error", 11, None, MESSAGE)]


def test_github_annotation_names_the_unittest_rule():
    proc = _cli("--format", "github", str(LOG))
    assert proc.stdout.splitlines() == [
        f"::error file={LOG},line=11,title=gpu-hang-guard%3A test-failure [{RULE}]::{MESSAGE}"]


@pytest.mark.parametrize("format_", ["markdown", "text"])
def test_summary_names_the_unittest_rule(format_):
    out = _cli("--format", format_, str(LOG)).stdout
    assert RULE in out and MESSAGE in out
    assert "pytest-test-outcome" not in out


def test_ignoring_pytest_outcomes_keeps_unittests_verdict(tmp_path):
    config = tmp_path / "gpu-hang-guard.yml"
    config.write_text("ignore:\n  rules: [pytest-test-outcome]\n")
    proc = _cli("--config", str(config), "--format", "json", str(LOG))
    assert [f["rule"] for f in json.loads(proc.stdout)["findings"]] == [RULE]


def test_the_unittest_rule_is_graded_and_ignored_by_its_own_id(tmp_path):
    # (then the failed step's exit status speaks for itself: ci-step-failed, as for any failed step that
    # no error explains)
    config = tmp_path / "gpu-hang-guard.yml"
    config.write_text(f"severity:\n  {RULE}: warning\n")
    proc = _cli("--config", str(config), "--format", "json", str(LOG))
    rules = [(f["rule"], f["severity"]) for f in json.loads(proc.stdout)["findings"]]
    assert (RULE, "warning") in rules and (RULE, "error") not in rules
    config.write_text(f"ignore:\n  rules: [{RULE}]\n")
    proc = _cli("--config", str(config), "--format", "json", str(LOG))
    assert RULE not in [f["rule"] for f in json.loads(proc.stdout)["findings"]]
