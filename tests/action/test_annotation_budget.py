"""The annotation budget of a ``uses:`` step is shared: the guard annotates only into the slots left.

actions/runner ``ExecutionContext.cs``: an embedded (composite) step's issues go to a collector shared
with its parent (``AddIssue``, lines 864-866) and are added to the ``uses:`` step's record when it
completes (``Complete``, lines 535-540), after the issues the runner put there directly, such as
``ActionRunner.cs`` line 235's "Unexpected input(s)" warning; only the first 10 of each type are kept
(``_maxCountPerIssueType``, line 144, checked at line 838). So what the action's own steps and the runner
emit first takes slots the guard's findings cannot have, and the guard is told how many are left
(``--annotation-slots``).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from analyzer.model import Finding, Kind, Report, Severity, Verdict
from analyzer.report.github import render_annotations

from .harness import parse_commands


def _finding(severity: Severity, i: int, kind: Kind = Kind.SIGNAL_EXIT) -> Finding:
    return Finding(kind=kind, rule="worker-signal", severity=severity, path="logs/job.txt", line=10 + i,
                   message=f"worker {i} exit -15 (SIGTERM)", excerpt="x")


def _report(errors: int, warnings: int) -> Report:
    findings = [_finding(Severity.ERROR, i) for i in range(errors)]
    findings += [_finding(Severity.WARNING, 100 + i) for i in range(warnings)]
    return Report(verdict=Verdict.FAIL, exit_status=1, findings=tuple(findings))


def _count(text: str, name: str) -> int:
    return sum(1 for c in parse_commands(text) if c.name == name)


@pytest.mark.parametrize("warning_slots", [0, 1, 8, 10])
def test_warnings_fill_exactly_the_slots_left_and_the_notice_counts_the_rest(warning_slots):
    text = render_annotations(_report(2, 12), slots={Severity.WARNING: warning_slots})
    assert _count(text, "warning") == warning_slots
    assert _count(text, "error") == 2
    [notice] = [c for c in parse_commands(text) if c.name == "notice"]
    assert notice.data.startswith(f"{12 - warning_slots} more findings (")


def test_exactly_the_slots_left_annotates_all_and_adds_no_notice():
    text = render_annotations(_report(1, 9), slots={Severity.WARNING: 9})
    assert _count(text, "warning") == 9 and _count(text, "notice") == 0


def test_the_root_cause_keeps_the_first_slot_of_its_type():
    findings = [_finding(Severity.ERROR, i) for i in range(12)]
    cause = Finding(kind=Kind.ATEXIT_EXCEPTION, rule="atexit-exception", severity=Severity.ERROR,
                    path="logs/job.txt", line=1, message="RuntimeError in atexit callback", excerpt="x")
    report = Report(verdict=Verdict.FAIL, exit_status=1, findings=(cause,) + tuple(findings))  # ranked
    errors = [c for c in parse_commands(render_annotations(report, slots={Severity.ERROR: 1}))
              if c.name == "error"]
    assert [e.data for e in errors] == ["RuntimeError in atexit callback"]


def test_cli_flag_reaches_the_renderer_and_a_bad_value_is_one_line(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("".join(f"worker {i} exited with exit code -9 (SIGKILL)\n" for i in range(15)))
    ok = subprocess.run([sys.executable, "-m", "analyzer", "scan", "--format", "github",
                         "--annotation-slots", "error=3,warning=3", str(log)],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode in (0, 1), ok.stderr
    commands = parse_commands(ok.stdout)
    assert sum(c.name == "error" for c in commands) <= 3 and sum(c.name == "warning" for c in commands) <= 3
    bad = subprocess.run([sys.executable, "-m", "analyzer", "scan", "--annotation-slots", "error=-1",
                          str(log)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1, bad.stderr
    assert "--annotation-slots" in bad.stderr
