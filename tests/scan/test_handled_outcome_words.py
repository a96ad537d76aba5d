"""An event inside a test that reported an outcome other than a failure is worded by that outcome: "which
passed", "which failed as expected" (pytest's ``XFAIL``, unittest's ``expected failure``), "which was
skipped" (pytest's ``SKIPPED``, unittest's ``skipped 'reason'``), a skip that comes after the test's own
output (``pytest.skip`` / ``self.skipTest`` once a child crashed).

Real runs of ``sys.executable``: each test starts a child that segfaults (faulthandler's report on the
inherited stdout, so it lands between the test's progress line and its outcome), then passes, fails as
expected or skips. Expectations were written from what each test does, before the scan.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest

from tests.scan.test_attribution import scan
from tests.scan.test_attribution_letters import run_suite
from tests.scan.test_engine_helpers import ENGINES

CRASH_LINE = "Fatal Python error: Segmentation fault"
CHILD = """
import subprocess, sys

def crash_a_child():
    subprocess.run([sys.executable, "-X", "faulthandler", "-c", "import ctypes; ctypes.string_at(0)"])
    sys.stdout.flush()
"""
PYTEST_SUITE = CHILD + """
import pytest

def test_a_pass():
    crash_a_child()

@pytest.mark.xfail(reason="the child crashes", strict=True)
def test_b_xfail():
    crash_a_child()
    assert False, "the child crashed"

def test_c_skip():
    crash_a_child()
    pytest.skip("no GPU here")
"""
UNITTEST_SUITE = CHILD + """
import unittest

class T(unittest.TestCase):
    def test_a_pass(self):
        crash_a_child()

    @unittest.expectedFailure
    def test_b_xfail(self):
        crash_a_child()
        self.fail("the child crashed")

    def test_c_skip(self):
        crash_a_child()
        self.skipTest("no GPU here")

if __name__ == "__main__":
    unittest.main()
"""
ENDINGS = ["which passed", "which failed as expected", "which was skipped"]


def _crash_messages(log: str, engine: str) -> Dict[int, tuple]:
    return {f.line: (f.severity.value, f.test, f.message) for f in scan({"job.log": log}, engine=engine)
            if f.rule == "fatal-python-error"}


def _crash_lines(log: str) -> List[int]:
    return [n for n, line in enumerate(log.splitlines(), 1) if CRASH_LINE in line]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [["-v", "-s"], ["-v", "-s", "-rA"], ["-v", "-s", "--color=yes"]])
def test_pytest_events_say_how_their_test_ended(tmp_path, engine, options):
    log = run_suite(tmp_path, "test_outcomes.py", textwrap.dedent(PYTEST_SUITE),
               ["-m", "pytest", "-p", "no:cacheprovider"] + options + ["test_outcomes.py"])
    assert "1 passed, 1 skipped, 1 xfailed" in re.sub("\x1b\\[[0-9;]*m", "", log), log
    found = _crash_messages(log, engine)
    lines = _crash_lines(log)
    assert len(lines) == 3 and sorted(found) == lines, (found, log)
    for line, test, ending in zip(lines, ["test_a_pass", "test_b_xfail", "test_c_skip"], ENDINGS):
        severity, named, message = found[line]
        assert (severity, named) == ("notice", "test_outcomes.py::" + test), message
        assert message.endswith(f" during test_outcomes.py::{test}, {ending}"), message


@pytest.mark.parametrize("engine", ENGINES)
def test_unittest_events_say_how_their_test_ended(tmp_path, engine):
    log = run_suite(tmp_path, "test_outcomes_u.py", textwrap.dedent(UNITTEST_SUITE),
                    ["test_outcomes_u.py", "-v"])
    assert "OK (skipped=1, expected failures=1)" in log, log
    found = _crash_messages(log, engine)
    lines = _crash_lines(log)
    assert len(lines) == 3 and sorted(found) == lines, (found, log)
    for line, test, ending in zip(lines, ["test_a_pass", "test_b_xfail", "test_c_skip"], ENDINGS):
        severity, named, message = found[line]
        assert (severity, named) == ("notice", f"{test} (__main__.T)"), message
        assert message.endswith(f" during {test} (__main__.T), {ending}"), message


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fixture, line, test", [
    # pytest -v -s over a unittest file's expectedFailure (its bare "XFAIL" after the child's report)
    ("negative/expected-failures-pytest.log", 19,
     "test_known_bugs.py::KnownBugs::test_null_read_in_loader_is_fixed"),
    # unittest -v: "... " then the child's report, then "expected failure" alone
    ("negative/expected-failures-unittest.log", 12, "test_null_read_in_loader_is_fixed (__main__.KnownBugs)"),
    # pytest-isolate's own suite, pytest -v: "XFAIL (pytest-isolate r...) [ 18%]" after the child's report
    ("negative/healthy25-pytest-isolate-suite-v.log", 21, "tests/test_isolate.py::test_isolate_segfault"),
])
def test_captured_expected_failures_say_so(engine, fixture, line, test):
    # (scanned as committed, header included, as tests/test_fixtures.py does: its lines are the file's)
    log = (FIXTURES / fixture).read_text(encoding="utf-8")
    severity, named, message = _crash_messages(log, engine)[line]
    assert (severity, named) == ("notice", test), message
    assert message.endswith(f" during {test}, which failed as expected"), message
