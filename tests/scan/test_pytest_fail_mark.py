"""What a failed test raised, behind pytest's "E" mark, is read as the line it is.

pytest's failure report shows the exception with "E" and the failing source line's indentation before
each of its lines (``E   subprocess.TimeoutExpired: Command '...' timed out after 1 seconds``), so rules
anchored at a line's start read it once the mark is cut. Real pytest, real timeout.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.clean import clean_line
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()


@pytest.mark.parametrize("raw, text", [
    ("E   subprocess.TimeoutExpired: Command 'x' timed out after 1 seconds",
     "subprocess.TimeoutExpired: Command 'x' timed out after 1 seconds"),
    ("E       RuntimeError: DataLoader worker (pid 12) is killed by signal: Killed.",
     "RuntimeError: DataLoader worker (pid 12) is killed by signal: Killed."),
    ("E   AssertionError: assert 1 == 2", "AssertionError: assert 1 == 2"),
])
def test_pytests_fail_mark_is_cut(raw, text):
    assert clean_line(raw.encode())[0] == text


@pytest.mark.parametrize("raw", [
    "E   ",
    "E  two spaces are no mark",
    "ERROR: test_x (mod.Class)",
    "E0325 12:00:00.123456 1234 main.cc:12]",  # glog's E, a prefix only with a message after it
])
def test_lookalikes_of_the_mark_keep_it(raw):
    assert clean_line(raw.encode())[0] == raw.rstrip()  # blanks after the last word are no wording


SUITE = """
    import subprocess
    import sys


    def test_worker_answers_in_time():
        subprocess.run([sys.executable, "-c", "import time; time.sleep(10)"], timeout=0.5)


    def test_config_loads():
        assert True
"""


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("failmark")
    (work / "test_worker.py").write_text(textwrap.dedent(SUITE))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_worker.py"],
                          cwd=str(work), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert proc.returncode == 1
    log = work / "step.log"
    log.write_bytes(proc.stdout)
    assert re.search(rb"\nE {3,}subprocess\.TimeoutExpired: Command ", proc.stdout)  # what this test is about
    return log


@pytest.mark.parametrize("engine", ENGINES)
def test_the_timeout_a_failed_test_raised_is_found_and_names_the_test(failed_run, engine):
    findings = scan_paths([str(failed_run)], BUILTIN, engine=engine)
    lines = failed_run.read_bytes().split(b"\n")
    (timeout,) = [f for f in findings if f.rule == "subprocess-timeout-uncaught"]
    assert re.match(rb"E {3,}subprocess\.TimeoutExpired: ", lines[timeout.line - 1])
    assert timeout.severity is Severity.ERROR
    assert timeout.test == "test_worker.py::test_worker_answers_in_time"
    assert findings[0] == timeout  # the cause ranks before the test's failure
