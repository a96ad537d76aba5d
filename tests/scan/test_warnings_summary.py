"""pytest's warnings summary names the tests that warned by node id, one alone on its line, after every test
ran: those lines are not tests starting.

torch's test_store.py under pytest 9.2.0 ``-s -q`` (TORCH_CPP_LOG_LEVEL=INFO) prints the c10d timeout it
provokes on no test's lines; the run's passing verdict says it was handled. But the warnings summary
before that verdict lists ``test_store.py::LibUvTCPStoreTest::test_init_pg_and_rpc_with_same_socket``,
which was read as a test still running, so the verdict was taken for an inner run's and the timeout
stayed an error. The logs here come from a real pytest run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.scan.test_attribution import scan, summary

TESTS = '''
import subprocess
import sys
import warnings


def test_child_crash_is_expected():
    code = "import ctypes; ctypes.string_at(0)"
    proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code])
    assert proc.returncode == -11


def test_old_api_warns():
    warnings.warn(UserWarning("the old store API is deprecated"))
'''

BROKEN = '''

def test_store_roundtrip():
    assert b"value" == b"other"
'''


def _pytest(where: Path, source: str, *args: str) -> str:
    (where / "test_w.py").write_text(textwrap.dedent(source))
    env = dict(os.environ, COLUMNS="80")
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args, "test_w.py"],
        cwd=str(where), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, env=env,
    )
    return proc.stdout.decode("utf-8", "backslashreplace")


@pytest.mark.parametrize("args", [("-s", "-q"), ("-s",)])
def test_an_event_of_a_passing_run_with_warnings_is_a_notice(tmp_path, args):
    log = _pytest(tmp_path, TESTS, *args)
    assert "\ntest_w.py::test_old_api_warns\n" in log and "2 passed, 1 warning in " in log
    found = summary(scan({"job.log": log}))
    assert [(s[0], s[1]) for s in found] == [("fatal-python-error", "notice")], found


def test_the_same_event_of_a_failing_run_is_its_first_tests_under_q(tmp_path):
    # -q: the crash comes before the first letter, nothing of pytest's before it: the first test's output,
    # and its letter says it passed (analyzer.scan.letters)
    log = _pytest(tmp_path, TESTS + BROKEN, "-s", "-q")
    assert "1 failed, 2 passed, 1 warning in " in log
    found = summary(scan({"job.log": log}))
    assert ("fatal-python-error", "notice") in [(s[0], s[1]) for s in found], found


def test_the_same_event_of_a_failing_run_stays_an_error_when_its_test_failed(tmp_path):
    log = _pytest(tmp_path, TESTS.replace("-11", "0") + BROKEN, "-s", "-q")
    assert "2 failed, 1 passed, 1 warning in " in log
    found = summary(scan({"job.log": log}))
    assert ("fatal-python-error", "error") in [(s[0], s[1]) for s in found], found


def test_the_same_event_of_a_failing_run_is_a_notice_when_its_letter_says_it_passed(tmp_path):
    # -s: after "test_w.py " the crash, then ".", ".", "F": the letters account for the verdict (a warning
    # writes none), and the one after the crash is its test's dot (analyzer.scan.letters)
    log = _pytest(tmp_path, TESTS + BROKEN, "-s")
    assert "1 failed, 2 passed, 1 warning in " in log
    found = summary(scan({"job.log": log}))
    assert ("fatal-python-error", "notice") in [(s[0], s[1]) for s in found], found
