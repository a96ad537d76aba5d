"""A window of a pytest ``-rA`` log that starts inside the run, as people paste and as a scrollback keeps.

Such a window loses the ``=== PASSES ===`` or ``=== FAILURES ===`` line above its first report, and may
start inside an inner (pytester) run's summary. A report under a section the log does not show is judged
by the run's verdict and summary: a test the summary does not name as failed, in a run whose verdict
came, passed; with no verdict, how it ended is unknown and its events stay errors. Failures listed by a
short summary the log starts in count only if no report header follows it (one that does was an inner
run's). Run for real: pytest on this machine, and the healthy suites captured in ``fixtures/negative``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

from analyzer.model import Severity
from tests.scan.test_attribution import scan
from tests.scan.test_engine_helpers import ENGINES

REPO = Path(__file__).resolve().parents[2]
# Healthy runs of suites that test timeouts and crashes on purpose, pytest -v -rA (fixtures/regenerate.py).
HEALTHY_SUITES = (
    "pytest-timeout-suite",
    "torch-test-store-pytest",
    "pytest-runner-terminal-suite",
    "pytest-rerunfailures-suite",
    "pytest-faulthandler-suite",
)
# A window may start at an inner run's own report, which no log can tell from the outer one's.
MAX_ALARMING_SHARE = 0.03
REPORT_HEADER = re.compile(r"_{3,} .+ _{3,}\s*$")

SUITE = '''
    import faulthandler
    import subprocess
    import sys

    ABORT = "import faulthandler, os; faulthandler.enable(); os.abort()"


    def run_aborting_child():
        child = subprocess.run([sys.executable, "-c", ABORT], stderr=subprocess.PIPE, text=True)
        print(child.stderr)
        return child.returncode


    def test_child_abort_is_reported():
        assert run_aborting_child() == -6


    def test_child_abort_breaks_the_test():
        run_aborting_child()
        assert False, "the child was not supposed to abort"
'''


def body_lines(path: Path) -> List[str]:
    text = path.read_text(encoding="utf-8", errors="backslashreplace")
    return [line for line in text.splitlines(True) if not line.startswith("#!")]


def errors_of(text: str, engine: str = "hyperscan") -> List[tuple]:
    findings = scan({"window.log": text}, engine=engine)
    return [(f.rule, f.line, f.test) for f in findings if f.severity is Severity.ERROR]


def window_at(lines: List[str], needle: str) -> str:
    start = next(i for i, line in enumerate(lines) if needle in line and REPORT_HEADER.search(line))
    return "".join(lines[start:])


@pytest.fixture(scope="module")
def suite_log(tmp_path_factory) -> List[str]:
    where = tmp_path_factory.mktemp("suite")
    (where / "test_children.py").write_text(textwrap.dedent(SUITE))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-rA", "-p", "no:cacheprovider", "test_children.py"],
        cwd=str(where), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
    )
    log = proc.stdout.decode("utf-8", "backslashreplace")
    assert proc.returncode == 1 and "Fatal Python error: Aborted" in log, log
    return log.splitlines(True)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_window_starting_at_a_passed_tests_report_gives_its_events_to_a_passed_test(suite_log, engine):
    window = window_at(suite_log, " test_child_abort_is_reported ")
    assert "=== PASSES ===" not in window and "Fatal Python error: Aborted" in window
    errors = errors_of(window, engine)
    assert errors and all(test != "test_child_abort_is_reported" for _, _, test in errors), errors
    assert {test for _, _, test in errors} == {"test_children.py::test_child_abort_breaks_the_test"}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_window_starting_at_a_failed_tests_report_keeps_its_failure(suite_log, engine):
    window = window_at(suite_log, " test_child_abort_breaks_the_test ")
    assert "=== FAILURES ===" not in window
    tests = {test for _, _, test in errors_of(window, engine)}
    assert tests == {"test_children.py::test_child_abort_breaks_the_test"}


def test_a_report_cut_before_the_runs_verdict_keeps_its_events_errors(suite_log):
    window = window_at(suite_log, " test_child_abort_is_reported ")
    cut = window[: window.index("short test summary info")]
    cut = cut[: cut.rindex("\n", 0, cut.rindex("\n")) + 1]  # and the === line above it
    assert "passed" not in cut.splitlines()[-1]
    assert any(rule == "fatal-python-error" for rule, _, _ in errors_of(cut))


def test_windows_of_healthy_suites_starting_at_a_report_raise_no_alarm():
    alarming, windows = [], 0
    for name in HEALTHY_SUITES:
        lines = body_lines(REPO / "fixtures" / "negative" / f"{name}.log")
        for start, line in enumerate(lines):
            if not REPORT_HEADER.search(line):
                continue
            windows += 1
            errors = errors_of("".join(lines[start:]))
            if errors:
                alarming.append((name, start + 1, errors[:2]))
    assert windows > 300
    assert len(alarming) <= MAX_ALARMING_SHARE * windows, alarming
