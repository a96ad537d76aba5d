"""A test failure's one-line reason, in full: pytest's short summary cuts it to the terminal's width
("FAILED t.py::test_x - RuntimeError: worker ex..."), the test's report shows it whole; a test with several
failed subtests is one failure that says how many failed.

Real runs of pytest (``-q``, ``-q -s``, ``-v``, ``--tb=short``) at 80 columns and of
``python -m unittest [-v]``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.scan.test_attribution import pytest_log, scan
from tests.scan.test_engine_helpers import ENGINES
from tests.test_fixtures import _regenerate_module

# The suite fixtures/pytest/attrib12-* were captured from (fixtures/regenerate.py).
SUITE = _regenerate_module().ATTRIB12_SUITE
FULL = {
    "test_uses_store": "ConnectionRefusedError: could not reach the rendezvous store at node-17:29500 "
                       "after 3 attempts",
    "test_worker_exit": "RuntimeError: worker process 4 exited unexpectedly while the parent waited for "
                        "its result",
    "test_child_fail": "Failed: child /usr/bin/python -c 'import sys; sys.exit(3)' exited with 3 "
                       "instead of 0",
    "Ranks::test_gather": "AssertionError: 2 not less than 2 : rank 2 gathered a tensor of the wrong shape "
                          "from a peer",
    "Ranks::test_single": "AssertionError: 1 != 2",
}
# pytest 9 reports each failed subTest (SUBFAILED); pytest 8, the last for Python 3.9, only a test's first.
SUBTESTS_REPORTED = int(pytest.__version__.split(".")[0]) >= 9
if SUBTESTS_REPORTED:
    FULL["Ranks::test_gather"] = "3 subtests failed, first: " + FULL["Ranks::test_gather"]


def messages(log: str, engine: str) -> dict:
    found = scan({"job.log": log}, engine=engine)
    return {f.test: f.message for f in found if f.kind.value == "test-failure"}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [["-q"], ["-q", "-s"], ["-v"], ["-q", "--tb=short"]])
def test_a_reason_the_summary_cut_is_told_in_full_from_the_report(tmp_path, engine, options):
    log = pytest_log(tmp_path, "test_reasons.py", SUITE, options)
    assert "FAILED test_reasons.py::test_worker_exit - RuntimeError: worker process 4 exi" in log
    assert "..." in log.split("short test summary info")[1]
    found = messages(log, engine)
    for test, reason in FULL.items():
        assert found[f"test_reasons.py::{test}"] == f"test_reasons.py::{test} failed: {reason}"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cut_reason_no_report_shows_stays_cut(tmp_path, engine):
    # --tb=no prints no report: the summary's is the only reason there is.
    log = pytest_log(tmp_path, "test_reasons.py", SUITE, ["-q", "--tb=no", "-rfE"])
    found = messages(log, engine)
    assert found["test_reasons.py::test_worker_exit"].endswith("...")
    assert found["test_reasons.py::Ranks::test_gather"].startswith(
        "test_reasons.py::Ranks::test_gather failed: " + FULL["Ranks::test_gather"][:26])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("verbose", [["-v"], []])
def test_unittest_says_how_many_subtests_failed(tmp_path: Path, engine, verbose):
    (tmp_path / "test_reasons.py").write_text(textwrap.dedent(SUITE))
    env = dict(os.environ, COLUMNS="80")
    proc = subprocess.run([sys.executable, "-m", "unittest", *verbose, "test_reasons"], cwd=str(tmp_path),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, env=env)
    log = proc.stdout.decode("utf-8", "replace")
    # Python 3.11 names the method in the class part too: "(test_reasons.Ranks.test_gather)"
    assert len(re.findall(r"FAIL: test_gather \(test_reasons\.Ranks(?:\.test_gather)?\) \(rank=", log)) == 3
    found = {f.message for f in scan({"job.log": log}, engine=engine) if f.kind.value == "test-failure"}
    assert "test_gather (test_reasons.Ranks) failed: 3 subtests failed, first: AssertionError: 2 not less " \
           "than 2 : rank 2 gathered a tensor of the wrong shape from a peer" in found
    assert "test_single (test_reasons.Ranks) failed: AssertionError: 1 != 2" in found
