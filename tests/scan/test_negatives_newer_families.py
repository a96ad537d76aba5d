"""A passing test suite that makes glibc abort a child on purpose scans clean; a failing one does not.

Suites of native extensions test their own crash handling: a test runs a child that frees a block
twice, checks that glibc aborted it (SIGABRT, "free(): double free detected in tcache 2" on its
stderr) and passes. Under ``pytest -rA`` the child's words are in the passing test's report, so the
scan must call them a notice of that test. The same child in a test that expected it to live is a
failure: the heap corruption is an error naming the test. Both run pytest for real; the child is a
real Python process calling glibc's malloc and free through ctypes, so no compiler is needed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from analyzer.verdict import decide
from tests.scan.test_attribution import pytest_log, scan, summary
from tests.scan.test_engine_helpers import ENGINES

CHILD = ("import ctypes; libc = ctypes.CDLL(None); libc.malloc.restype = ctypes.c_void_p;"
         " libc.free.argtypes = [ctypes.c_void_p]; p = libc.malloc(32); libc.free(p); libc.free(p)")
SUITE = '''
    import signal
    import subprocess
    import sys

    CHILD = {child!r}


    def run_child():
        proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
        sys.stderr.write(proc.stderr)  # the report shows what the assertion reads
        return proc


    def test_double_free_aborts_the_child():
        proc = run_child()
        assert proc.returncode == -signal.SIGABRT
        assert "double free detected" in proc.stderr
'''
FAILING = '''

    def test_child_survives():
        assert run_child().returncode == 0
'''
WORDING = "free(): double free detected in tcache 2"


def suite_run(tmp_path: Path, source: str) -> str:
    return pytest_log(tmp_path, "test_heap_checks.py", source.format(child=CHILD))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_child_aborted_on_purpose_in_a_passing_test_is_a_notice(tmp_path, engine):
    log = suite_run(tmp_path, SUITE)
    assert "\n" + WORDING + "\n" in log and " 1 passed in " in log
    findings = scan({"job.log": log}, engine=engine)
    assert [s for s in summary(findings) if s[1] != "notice"] == []
    assert [(s[0], s[3]) for s in summary(findings)] == [
        ("glibc-heap-corruption", "test_heap_checks.py::test_double_free_aborts_the_child")]
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_the_same_abort_in_a_failing_test_is_an_error_naming_it(tmp_path, engine):
    log = suite_run(tmp_path, SUITE + FAILING)
    assert " 1 failed, 1 passed " in log
    findings = scan({"job.log": log}, engine=engine)
    heap = [(s[1], s[3]) for s in summary(findings) if s[0] == "glibc-heap-corruption"]
    # The failing test's report comes first (FAILURES), the passing one's after it (PASSES).
    assert heap == [("error", "test_heap_checks.py::test_child_survives"),
                    ("notice", "test_heap_checks.py::test_double_free_aborts_the_child")]
    assert decide(findings)[1] == 1


UNITTEST_SUITE = '''
    import subprocess
    import sys
    import unittest

    CHILD = {child!r}


    class HeapChecks(unittest.TestCase):
        def test_child_survives(self):
            # The child inherits stderr: glibc's words continue unittest's "test_m (mod.Class) ... " line.
            self.assertEqual(subprocess.run([sys.executable, "-c", CHILD]).returncode, 0)


    if __name__ == "__main__":
        unittest.main(verbosity=2)
'''


@pytest.mark.parametrize("engine", ENGINES)
def test_an_abort_continuing_unittests_progress_line_is_an_error_of_the_failing_test(tmp_path, engine):
    (tmp_path / "heap_checks.py").write_text(textwrap.dedent(UNITTEST_SUITE.format(child=CHILD)))
    proc = subprocess.run(
        [sys.executable, "heap_checks.py"],
        cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
    )
    log = proc.stdout.decode("utf-8", "backslashreplace")
    assert proc.returncode == 1 and ") ... " + WORDING in log, log
    findings = scan({"job.log": log}, engine=engine)
    heap = [(s[1], s[2], s[3]) for s in summary(findings) if s[0] == "glibc-heap-corruption"]
    assert heap == [("error", 1, "test_child_survives (__main__.HeapChecks)")]
    assert decide(findings)[1] == 1
