"""Without -v no line names the test an event happened in: the same line printed by two tests (each test's
child segfaults, as in pytest-isolate's own suite under ``-q``, healthy25) is two events, told apart by the
progress letters between them, while one test printing the line twice stays one event "(seen 2 times)".

Real runs of ``sys.executable`` (pytest ``-q -s``, with and without ``-rA``; unittest without ``-v``, its
letters on stderr); expectations written from what each test does, before the scan.
"""

from __future__ import annotations

import textwrap
from typing import List

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
    sys.stderr.flush()
"""
PYTEST_SUITE = CHILD + """
import pytest

def test_a_once():
    crash_a_child()

def test_b_twice():
    crash_a_child()
    crash_a_child()

@pytest.mark.xfail(reason="the child crashes", strict=True)
def test_c_xfail():
    crash_a_child()
    assert False
"""
UNITTEST_SUITE = CHILD + """
import unittest

class T(unittest.TestCase):
    def test_a_once(self):
        crash_a_child()

    def test_b_twice(self):
        crash_a_child()
        crash_a_child()

    @unittest.expectedFailure
    def test_c_xfail(self):
        crash_a_child()
        self.fail("the child crashed")

if __name__ == "__main__":
    unittest.main()
"""


def _told(log: str, engine: str) -> List[tuple]:
    lines = [n for n, line in enumerate(log.splitlines(), 1) if CRASH_LINE in line]
    assert len(lines) == 4, log
    found = sorted((f.line, f.severity.value, f.message) for f in scan({"job.log": log}, engine=engine)
                   if f.rule == "fatal-python-error")
    # one per test: test_a's, test_b's first (its second folded into it), test_c's
    assert [line for line, _, _ in found] == [lines[0], lines[1], lines[3]], (found, log)
    assert all(severity == "notice" for _, severity, _ in found), found
    return [message for _, _, message in found]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [["-q", "-s"], ["-q", "-s", "-rA"], ["-s"]])
def test_pytest_two_tests_same_crash_line_are_two_events(tmp_path, engine, options):
    log = run_suite(tmp_path, "test_twice.py", textwrap.dedent(PYTEST_SUITE),
               ["-m", "pytest", "-p", "no:cacheprovider"] + options + ["test_twice.py"])
    assert "2 passed, 1 xfailed" in log, log
    messages = _told(log, engine)
    assert ["seen" in message for message in messages] == [False, True, False], messages
    assert "(seen 2 times)" in messages[1], messages


@pytest.mark.parametrize("engine", ENGINES)
def test_unittest_two_tests_same_crash_line_are_two_events(tmp_path, engine):
    log = run_suite(tmp_path, "test_twice_u.py", textwrap.dedent(UNITTEST_SUITE), ["test_twice_u.py"])
    assert "OK (expected failures=1)" in log, log
    messages = _told(log, engine)
    assert ["seen" in message for message in messages] == [False, True, False], messages
    assert "(seen 2 times)" in messages[1], messages
