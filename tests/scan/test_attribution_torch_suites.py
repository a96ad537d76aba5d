"""Attribution in the shape torch's own suites give their logs, run for real with pytest.

torch names its tests ``TestClass.test_what_it_checks``: under ``-rA`` pytest heads each report with
that name, filled to the terminal width (80 columns in CI) with at least one underscore a side, so a
long name gets ``_ TestClass.test_name _`` rather than ``____ test_y ____``. The report under such a
header belongs to that test: a wording a passing test provoked and checked there (a DataLoader worker
killed by a signal, a store that timed out) is a notice, and the same wording in a failing test's
report is still an error naming that test. Both run pytest for real on a tiny test file.

unittest ``-v`` prints a test with a docstring (torch's DataLoader tests have many) on two lines: the
id alone, then the docstring's first line ending in `` ... `` and the outcome. The output between them
is that test's, not the one before it: a handled event there is a notice, a failing test's event an
error naming it. Those run unittest for real.

pytest prints a test's node id again while it runs: ``--setup-show`` after the fixtures' SETUP lines,
pytest 9 for each subtest report and once more with the outcome (torch's subTest-heavy suites under
pytest 9: ``::test_x`` then ``::test_x PASSED``). The line again is the same test, so an event before it
(a fixture's loader losing a worker on purpose) is that test's, and its outcome is the one the later line
carries: not a test that never reported.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from analyzer.scan import engine as engine_module
from analyzer.verdict import decide
from tests.scan.test_attribution import pytest_log, scan, summary
from tests.scan.test_engine_helpers import ENGINES

# Long enough that pytest's 80-column header keeps one underscore a side.
CLASS = "TestDataLoaderPersistentWorkersWithLongNames"
HANDLED = f'''
    import sys


    class {CLASS}:
        def test_worker_killed_by_signal_is_reported_to_the_main_process(self):
            # What the loader raises when a worker dies; the test expects it.
            print("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.", file=sys.stderr)
'''
BROKEN = '''
        def test_loader_raises_timeout_when_the_worker_sleeps_for_too_long(self):
            print("RuntimeError: DataLoader worker (pid 4343) is killed by signal: Killed.", file=sys.stderr)
            assert False, "the loader did not raise"
'''
PASSING = CLASS + ".test_worker_killed_by_signal_is_reported_to_the_main_process"
PASSING_ID = "test_torch_like.py::" + PASSING.replace(".", "::")
FAILING = "test_torch_like.py::" + CLASS + "::test_loader_raises_timeout_when_the_worker_sleeps_for_too_long"


def torch_like_run(tmp_path: Path, source: str) -> str:
    return pytest_log(tmp_path, "test_torch_like.py", source)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_handled_event_under_a_long_passing_header_is_a_notice(tmp_path, engine):
    log = torch_like_run(tmp_path, HANDLED)
    assert "\n_ " + PASSING + " _\n" in log and " 1 passed in " in log
    findings = scan({"job.log": log}, engine=engine)
    assert [s for s in summary(findings) if s[1] != "notice"] == []
    # named by the node id -rA's short summary spells for the header
    assert [(s[0], s[3]) for s in summary(findings)] == [("dataloader-worker-killed", PASSING_ID)]
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_the_same_event_under_a_long_failing_header_is_an_error_naming_it(tmp_path, engine):
    log = torch_like_run(tmp_path, HANDLED + BROKEN)
    header = "\n_ " + FAILING.split("::", 1)[1].replace("::", ".") + " _\n"
    assert header in log and " 1 failed, 1 passed " in log
    findings = scan({"job.log": log}, engine=engine)
    worker = [(s[1], s[3]) for s in summary(findings) if s[0] == "dataloader-worker-killed"]
    # The failing test's report comes first (FAILURES), the passing one's after it (PASSES).
    assert worker == [("error", FAILING), ("notice", PASSING_ID)]
    assert ("pytest-test-outcome", "error") in {(s[0], s[1]) for s in summary(findings)}
    assert decide(findings)[1] == 1


UNITTEST_HEAD = """
    import sys
    import unittest


    class TestLoader(unittest.TestCase):
"""
UNITTEST_PLAIN = """
        def test_a_plain(self):
            pass
"""
UNITTEST_BROKEN_FIRST = """
        def test_a_broken(self):
            self.fail("not the loader")
"""
UNITTEST_HANDLED = """
        def test_b_worker_kill_is_reported(self):
            \"\"\"Check that the loader reports a worker killed by a signal.\"\"\"
            print("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.", file=sys.stderr)
"""
UNITTEST_FAILING = """
        def test_c_worker_kill_fails_the_test(self):
            \"\"\"Check that the loader survives its worker.\"\"\"
            print("RuntimeError: DataLoader worker (pid 4343) is killed by signal: Killed.", file=sys.stderr)
            self.fail("the loader died with its worker")
"""
UNITTEST_TAIL = """

    if __name__ == "__main__":
        unittest.main()
"""


def unittest_run(tmp_path: Path, *methods: str) -> str:
    """The log of ``python test_loader.py -v`` over the class made of ``methods``."""
    body = "".join(textwrap.dedent(m).replace("\n", "\n    ") for m in methods)
    source = textwrap.dedent(UNITTEST_HEAD) + body
    (tmp_path / "test_loader.py").write_text(source + textwrap.dedent(UNITTEST_TAIL))
    proc = subprocess.run([sys.executable, "test_loader.py", "-v"], cwd=str(tmp_path), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=120)
    return proc.stdout.decode("utf-8", "backslashreplace")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_handled_event_of_a_unittest_with_a_docstring_is_its_notice(tmp_path, engine):
    log = unittest_run(tmp_path, UNITTEST_PLAIN, UNITTEST_HANDLED)
    assert "\nCheck that the loader reports a worker killed by a signal. ... " in log and "\nOK" in log
    findings = scan({"job.log": log}, engine=engine)
    assert summary(findings) == [("dataloader-worker-killed", "notice", 3,
                                  "test_b_worker_kill_is_reported (__main__.TestLoader)")]
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failing_unittest_with_a_docstring_keeps_its_event_an_error(tmp_path, engine):
    # Before: a docstring's test was not seen to start, so the handled event went to the failed test
    # before it (an error), and the failing test's event to the passed test before it (a notice).
    log = unittest_run(tmp_path, UNITTEST_BROKEN_FIRST, UNITTEST_HANDLED, UNITTEST_FAILING)
    assert "FAILED (failures=2)" in log
    findings = scan({"job.log": log}, engine=engine)
    worker = [(s[1], s[3]) for s in sorted(summary(findings), key=lambda s: s[2])
              if s[0] == "dataloader-worker-killed"]
    assert worker == [("notice", "test_b_worker_kill_is_reported (__main__.TestLoader)"),
                      ("error", "test_c_worker_kill_fails_the_test (__main__.TestLoader)")]
    assert decide(findings)[1] == 1


SETUP_SHOW = """
    import sys

    import pytest


    @pytest.fixture
    def loader():
        # The loader loses a worker while it starts, on purpose; the tests check what happens next.
        print("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.", file=sys.stderr)
        return "loader"


    def test_loader_recovers_from_a_killed_worker(loader):
        assert loader == "loader"
"""
SETUP_SHOW_FAILING = """

    def test_loader_gives_up(loader):
        assert loader == "a new loader"
"""


def pytest_s_run(tmp_path: Path, source: str, *options: str) -> str:
    """The log of ``pytest -v -s OPTIONS`` over ``source`` (the tests' own output inline)."""
    return pytest_log(tmp_path, "test_inline.py", source, ("-v", "-s", *options))


@pytest.mark.parametrize("engine", ENGINES)
def test_an_event_before_the_test_line_is_printed_again_is_that_tests_notice(tmp_path, engine):
    # Before: the second node id line ended the first one's time, so the test "never reported" and its
    # handled event was an error.
    log = pytest_s_run(tmp_path, SETUP_SHOW, "--setup-show")
    test = "test_inline.py::test_loader_recovers_from_a_killed_worker"
    assert log.count(test) >= 2 and " 1 passed in " in log
    findings = scan({"job.log": log}, engine=engine)
    assert [(s[0], s[1], s[3]) for s in summary(findings)] == [("dataloader-worker-killed", "notice", test)]
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_the_same_event_in_a_test_that_then_fails_is_an_error_naming_it(tmp_path, engine):
    log = pytest_s_run(tmp_path, SETUP_SHOW + SETUP_SHOW_FAILING, "--setup-show")
    assert " 1 failed, 1 passed in " in log
    findings = scan({"job.log": log}, engine=engine)
    worker = [(s[1], s[3]) for s in sorted(summary(findings), key=lambda s: s[2])
              if s[0] == "dataloader-worker-killed"]
    assert worker == [("notice", "test_inline.py::test_loader_recovers_from_a_killed_worker"),
                      ("error", "test_inline.py::test_loader_gives_up")]
    assert decide(findings)[1] == 1


SUBTESTS = """
    import sys
    import unittest


    class TestWorkers(unittest.TestCase):
        def test_worker_killed_in_each_start_method(self):
            for method in ("fork", "spawn"):
                with self.subTest(start_method=method):
                    print("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.",
                          file=sys.stderr)
"""


@pytest.mark.skipif(int(pytest.__version__.split(".")[0]) < 9, reason="pytest reports subtests from 9.0")
@pytest.mark.parametrize("engine", ENGINES)
def test_an_event_in_a_subtest_is_the_passing_tests_notice(tmp_path, engine):
    log = pytest_s_run(tmp_path, SUBTESTS)
    test = "test_inline.py::TestWorkers::test_worker_killed_in_each_start_method"
    assert log.count(test) >= 2 and "SUBPASSED" in log and " 1 passed, 2 subtests passed in " in log
    findings = scan({"job.log": log}, engine=engine)
    assert {(s[0], s[1], s[3]) for s in summary(findings)} == {("dataloader-worker-killed", "notice", test)}
    assert decide(findings)[1] == 0


SUBTEST_FAILS = """
    import unittest


    class TestWorkers(unittest.TestCase):
        def test_each_start_method(self):
            for method in ("fork", "spawn"):
                with self.subTest(start_method=method):
                    self.assertEqual(method, "fork")
"""


@pytest.mark.skipif(int(pytest.__version__.split(".")[0]) < 9, reason="pytest reports subtests from 9.0")
@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_unittest_subtest_is_its_tests_failure(tmp_path, engine):
    # pytest 9.2 can report the TestCase itself PASSED; SUBFAILED is then the only sign of the failure.
    (tmp_path / "test_inline.py").write_text(textwrap.dedent(SUBTEST_FAILS))
    env = dict(os.environ, COLUMNS="80")
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_inline.py"],
                          cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
                          env=env)
    log = proc.stdout.decode("utf-8", "backslashreplace")
    test = "test_inline.py::TestWorkers::test_each_start_method"
    assert proc.returncode == 1 and "SUBFAILED(start_method='spawn') " + test in log
    findings = scan({"job.log": log}, engine=engine)
    assert ("pytest-test-outcome", "error", test) in {(s[0], s[1], s[3]) for s in summary(findings)}
    assert decide(findings)[1] == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_a_docstring_tests_two_start_lines_in_two_windows_are_still_its_start(tmp_path, engine, monkeypatch):
    # The engine's first window ends right after "test_b_... (__main__.TestLoader...)", the docstring's
    # line begins the next one. Before: that start was missed there, so the handled event went to the
    # failed test before it, an error.
    log = unittest_run(tmp_path, UNITTEST_BROKEN_FIRST, UNITTEST_HANDLED)
    head = next(line for line in log.split("\n") if line.startswith("test_b_worker_kill_is_reported ("))
    assert log.count(head + "\n") == 1 and "FAILED (failures=1)" in log
    cut = log.index(head + "\n") + len(head) + 1
    monkeypatch.setattr(engine_module, "READ_SIZE", cut + 3)
    findings = scan({"job.log": log}, engine=engine)
    worker = [(s[1], s[3]) for s in summary(findings) if s[0] == "dataloader-worker-killed"]
    assert worker == [("notice", "test_b_worker_kill_is_reported (__main__.TestLoader)")]
    assert decide(findings)[1] == 1  # test_a_broken failed
