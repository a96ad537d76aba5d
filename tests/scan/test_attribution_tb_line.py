"""pytest ``--tb=line`` as attribution reads it: its FAILURES section has no report header per test, and
what a failed test printed ("Captured stderr call") comes before that test's crash line
("/abs/test_x.py:13: AssertionError: ..."), so an event there is the test whose crash line comes next: the
k-th crash line of the section is the k-th FAILED line of the short summary.

The log is fixtures/pytest/attrib14-tb-line-child-crashes: a real run of ``pytest -q --tb=line``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Kind
from tests.scan.test_attribution import scan
from tests.scan.test_engine_helpers import ENGINES
from tests.test_fixtures import _regenerate_module

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "pytest" / "attrib14-tb-line-child-crashes.log"
FIRST = "test_tb_line14.py::test_a_segv_fails"
SECOND = "test_tb_line14.py::test_b_segv_fails"


def _body() -> str:
    """The log the runner saved: the fixture without its header."""
    _, body = _regenerate_module().split_fixture(FIXTURE.read_text(encoding="utf-8"))
    return "\n".join(body) + "\n"


def _crashes(log: str, engine: str) -> list:
    return [(f.severity.value, f.test) for f in scan({"run.log": log}, engine) if f.kind is Kind.CRASH]


@pytest.mark.parametrize("engine", ENGINES)
def test_each_childs_crash_is_the_test_whose_crash_line_follows_it(engine: str) -> None:
    assert _crashes(_body(), engine) == [("error", FIRST), ("error", SECOND)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_passes_section_between_failures_and_summary_is_skipped(engine: str) -> None:
    # -rA prints its PASSES section (a passing test's captured output under its header) after FAILURES
    log = _body().replace(
        "=========================== short test summary info",
        "===================================== PASSES =====================================\n"
        "________________________________ test_between_ok _______________________________\n"
        "=========================== short test summary info", 1)
    assert _crashes(log, engine) == [("error", FIRST), ("error", SECOND)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_summary_that_does_not_count_the_crash_lines_names_no_test(engine: str) -> None:
    # one FAILED line for two crash lines: which crash line is whose the log does not say
    lines = [line for line in _body().split("\n") if not line.endswith("FAILED " + SECOND + " - "
                                                                        "AssertionError: worker exited w...")]
    crashes = _crashes("\n".join(lines), engine)
    assert all(test is None for _, test in crashes), crashes
