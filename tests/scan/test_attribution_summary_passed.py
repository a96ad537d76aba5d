"""A passing pytest ``-q -rA`` run names the test whose ``.`` follows an event: its short summary lists a
"PASSED id" line per ``.`` in the order they were written (``analyzer.scan.letters``).

Real runs: pytest 9 over a suite whose tests print a child's crash and a caught timeout on purpose, with
``-s`` (the output lands between the letters). Without ``-rA``, with output that looks like letters, or
with one PASSED line too many or too few, no test is named (the run's verdict still says it passed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.scan.letters import ProgressLetters
from tests.scan.test_attribution import scan
from tests.scan.test_attribution_letters import CRASH_LINE, TIMEOUT_LINE, line_of, run
from tests.scan.test_engine_helpers import ENGINES

PYTEST = ["-m", "pytest", "-p", "no:cacheprovider"]


def events(log: str, engine: str) -> dict:
    return {f.line: (f.severity.value, f.test, f.message) for f in scan({"job.log": log}, engine=engine)
            if f.rule != "pytest-test-outcome"}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("report", [["-rA"], ["-rp"], ["-rA", "--color=yes"]])
def test_a_passing_runs_event_names_the_test_its_summary_lists_for_that_dot(tmp_path, engine, report):
    log = run(tmp_path, PYTEST + ["-q", "-s"] + report + ["test_events.py"], broken=0)
    assert "4 passed" in log and "PASSED" in log and "::test_child_crash_expected " not in log
    found = events(log, engine)
    severity, test, message = found[line_of(log, CRASH_LINE)]
    assert (severity, test) == ("notice", "test_events.py::test_child_crash_expected")
    assert message.endswith(" during test_events.py::test_child_crash_expected, which passed")
    assert found[line_of(log, TIMEOUT_LINE)][:2] == ("notice", "test_events.py::test_timeout_handled")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failing_runs_passed_test_is_named_too(tmp_path, engine):
    log = run(tmp_path, PYTEST + ["-q", "-s", "-rA", "test_events.py"], broken=1)
    assert "1 failed, 3 passed" in log
    found = events(log, engine)
    assert found[line_of(log, CRASH_LINE)][:2] == ("notice", "test_events.py::test_child_crash_expected")


@pytest.mark.parametrize("engine", ENGINES)
def test_without_the_summary_or_with_letters_that_do_not_add_up_no_test_is_named(tmp_path, engine):
    log = run(tmp_path, PYTEST + ["-q", "-s", "test_events.py"], broken=0)
    severity, test, message = events(log, engine)[line_of(log, CRASH_LINE)]
    assert (severity, test) == ("notice", None) and "during the test run, which passed" in message
    # a passing test that writes dots: the letters outnumber the PASSED lines
    (tmp_path / "test_dots.py").write_text('import sys\n\ndef test_dots():\n    sys.stdout.write("..")\n')
    log = run(tmp_path, PYTEST + ["-q", "-s", "-rA", "test_events.py", "test_dots.py"], broken=0)
    assert "5 passed" in log
    severity, test, _ = events(log, engine)[line_of(log, CRASH_LINE)]
    assert (severity, test) == ("notice", None)


def test_the_summary_is_read_wherever_the_windows_end(tmp_path: Path):
    log = run(tmp_path, PYTEST + ["-q", "-s", "-rA", "test_events.py"], broken=0).encode()
    crash = line_of(log.decode(), CRASH_LINE)
    verdict = len(log.splitlines())
    cuts = [i + 1 for i, byte in enumerate(log) if byte == 10][:-1]
    for cut in cuts:
        letters = ProgressLetters()
        letters.feed(log[:cut], 1)
        letters.feed(log[cut:], 1 + log.count(b"\n", 0, cut))
        outcome = letters.outcome_after(crash, verdict, "4 passed")
        assert outcome is not None and outcome[1] == ".", cut
        assert letters.passed_test(verdict, 0, "", outcome[2]) == "test_events.py::test_child_crash_expected"
    # a rerun (R) or a dot the summary does not list: no test
    assert letters.passed_test(verdict, 0, "", 5) is None
    letters.regions[0].counts["R"] = 1
    assert letters.passed_test(verdict, 0, "", outcome[2]) is None
