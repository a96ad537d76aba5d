"""Runs cut while a test runs name that test (issue 7 section 1): unittest -v killed after "test_c_hangs
(mod.Class.test_c_hangs) ... " and that test's own output, and pytest-xdist -n 2 -v killed after a worker
crashed and was replaced, before any FAILURES section.

Real runs, killed by SIGTERM or SIGKILL once their output shows a chosen line (as a cancelled CI job
is). The xdist case needs pytest-xdist in this Python and is skipped without it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

from tests.scan.test_attribution import scan
from tests.scan.test_engine_helpers import ENGINES

UNITTEST_SUITE = """
    import time
    import unittest


    class TestAll(unittest.TestCase):
        def test_a_pass(self):
            pass

        def test_b_fail(self):
            self.assertEqual(1 + 1, 3, "reduced sum wrong")

        def test_c_hangs(self):
            print("rank 0 waiting for peers", flush=True)
            time.sleep(60)

        def test_d_last(self):
            pass
"""
XDIST_SUITE = """
    import os
    import time


    def test_a_pass():
        pass


    def test_b_fails():
        assert 1 + 1 == 3, "reduced sum wrong"


    def test_c_crashes_worker():
        os._exit(1)


    def test_d_hangs():
        time.sleep(60)


    def test_e_last():
        pass
"""


def killed(tmp_path: Path, name: str, suite: str, argv: List[str], mark: str, after: int, sig: int) -> str:
    """Run ``argv`` over ``suite`` (written to ``name``) and send ``sig`` once its output shows ``mark``
    and ``after`` lines more; the output up to then."""
    (tmp_path / name).write_text(textwrap.dedent(suite))
    env = dict(os.environ, COLUMNS="80", PYTHONUNBUFFERED="1")
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.Popen([sys.executable] + argv, cwd=str(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env)
    data, left = [], None
    assert proc.stdout is not None
    for line in proc.stdout:
        data.append(line)
        if left is None and mark.encode() in line:
            left = after
        elif left is not None:
            left -= 1
        if left is not None and left <= 0:
            proc.send_signal(sig)
            break
    data.append(proc.stdout.read())
    proc.wait(timeout=60)
    return b"".join(data).decode("utf-8", "replace")


def errors(log: str, engine: str) -> List[tuple]:
    return [(f.rule, f.test) for f in scan({"job.log": log}, engine=engine) if f.severity.value == "error"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_unittest_run_cut_mid_test_names_the_running_test(tmp_path, engine, sig):
    argv = ["-m", "unittest", "-v", "ut_cut"]
    log = killed(tmp_path, "ut_cut.py", UNITTEST_SUITE, argv, "... FAIL", 1, sig)
    # "test_c_hangs (ut_cut.TestAll.test_c_hangs) ... " from Python 3.11 on, "(ut_cut.TestAll)" before
    last = log.rstrip().rsplit("\n", 1)[-1]
    assert last.startswith("test_c_hangs (ut_cut.TestAll"), log
    assert last.endswith(") ... rank 0 waiting for peers"), log
    found = errors(log, engine)
    assert ("test-never-finished", "test_c_hangs (ut_cut.TestAll)") in found
    assert [test for _, test in found] == ["test_b_fail (ut_cut.TestAll)", "test_c_hangs (ut_cut.TestAll)"]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_xdist_run_killed_after_replacing_a_crashed_worker_names_its_test(tmp_path, engine):
    pytest.importorskip("xdist")
    argv = ["-m", "pytest", "-p", "no:cacheprovider", "-p", "no:benchmark", "-n", "2", "-v", "test_x.py"]
    log = killed(tmp_path, "test_x.py", XDIST_SUITE, argv, "replacing crashed worker", 1, signal.SIGTERM)
    assert "= FAILURES =" not in log and "FAILED test_x.py::test_c_crashes_worker" in log
    tests = {test for _, test in errors(log, engine)}
    assert "test_x.py::test_c_crashes_worker" in tests and None not in tests
