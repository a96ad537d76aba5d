"""A unittest run killed before its report: the outcomes it printed among C++ log lines name the failures.

``fixtures/torch/unittest-glog-killed`` is a real capture (fixtures/regenerate.py): ``python
test_store_glog.py -v`` with ``TORCH_CPP_LOG_LEVEL=INFO``, ended by GNU timeout before unittest printed
any report; c10d's C++ log lines sit between each test's id and its outcome, so only "FAIL" / "ERROR"
(alone on their line) say which tests failed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BUILTIN = load_catalogue()


def _errors(path: Path, engine: str = "python"):
    return [f for f in scan_paths([str(path)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_killed_unittest_run_names_the_tests_whose_outcome_came_after_cpp_log_lines(engine):
    errors = _errors(FIXTURES / "torch/unittest-glog-killed.log", engine)
    assert [(f.rule, f.test, f.message) for f in errors] == [
        ("unittest-test-outcome", "test_b_value_mismatch (__main__.StoreTest)",
         "test_b_value_mismatch (__main__.StoreTest) failed"),
        ("unittest-test-outcome", "test_c_missing_key (__main__.StoreTest)",
         "test_c_missing_key (__main__.StoreTest) failed"),
        ("test-never-finished", "test_e_barrier_never_reached (__main__.StoreTest)",
         "test_e_barrier_never_reached (__main__.StoreTest) never finished: the log ends while it ran, with"
         " no outcome and no verdict after it"),
    ]
    assert [f.excerpt for f in errors[:2]] == ["FAIL", "ERROR"]


def test_a_failed_tests_report_header_stays_where_its_finding_points():
    # The same run's bare "ERROR" after the test's own output comes first; the "ERROR: test_m" report
    # (with its traceback after it) is where the one finding of that test points.
    path = FIXTURES / "crash/dist-failures-unexpected-unittest.log"
    failures = [f for f in _errors(path) if f.kind.value == "test-failure"]
    assert [(f.rule, f.line) for f in failures] == [
        ("unittest-test-failed", 67), ("unittest-test-failed", 78)]
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[17 - 1].endswith("Z ERROR") and lines[64 - 1].endswith("Z ERROR")
