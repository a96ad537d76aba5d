"""A test that runs pytest in its own process (pytester's ``runpytest``) under ``pytest -s``: the inner
session's start is printed on the outer run's progress line (``test_outer.py ===== test session starts``),
with no pytester ``running:`` line before it. Before, that inner run was read as the log's own, its failing
verdict as the run's, and every inner run after it as the exit path (pytest-xdist 3.8.0's own
acceptance tests under ``-s``: 27 errors). The logs here come from a real pytest run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.scan.test_attribution import scan, summary

OUTER = '''
pytest_plugins = "pytester"

INNER = """
def test_kernel():
    raise RuntimeError("CUDA error: an illegal memory access was encountered")
"""


def test_inner_failure_is_reported(pytester):
    pytester.makepyfile(test_inner=INNER)
    pytester.runpytest().assert_outcomes(failed=1)
    pytester.runpytest().assert_outcomes(failed=1)


def test_other():
    pass
'''

BROKEN = '''

def test_broken():
    assert 1 == 2
'''


def _pytest(where: Path, source: str) -> str:
    (where / "test_outer.py").write_text(textwrap.dedent(source))
    env = dict(os.environ, COLUMNS="80")
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "test_outer.py"],
        cwd=str(where), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, env=env,
    )
    return proc.stdout.decode("utf-8", "backslashreplace")


def test_inner_runs_of_a_passing_outer_run_are_notices(tmp_path):
    log = _pytest(tmp_path, OUTER)
    assert "\ntest_outer.py ===" in log and " 2 passed in " in log
    found = summary(scan({"job.log": log}))
    assert found and all(s[1] == "notice" for s in found), found


def test_the_same_inner_runs_of_a_failing_outer_run_stay_errors(tmp_path):
    log = _pytest(tmp_path, OUTER + BROKEN)
    assert " 1 failed, 2 passed in " in log
    found = summary(scan({"job.log": log}))
    assert ("cuda-error", "error") in [(s[0], s[1]) for s in found], found


LOGS = Path(__file__).resolve().parent / "logs"


def test_a_verdict_with_no_start_of_its_own_keeps_the_inner_runs_events_waiting_for_the_outer_verdict():
    # pytest 9.2.0's own testing/test_capture.py (-k "test_capturing_basic_api or test_capturing_unicode
    # or test_collect_capturing or test_libedit_workaround") under `python -m pytest -q -s -rA -p pytester`,
    # exit 0 (captured by a helper session, /tmp/healthy4; its temp dirs as they were). An inner run's
    # "Interrupted: 1 error during collection" waits for the outer quiet run's verdict; a pexpect child's
    # "no tests ran" printed with no session start before it is no run's verdict and must not drop it.
    log = (LOGS / "pytest-capture-quiet-s-inner-runs.log").read_text()
    assert "Interrupted: 1 error during collection" in log and log.rstrip().endswith("deselected in 1.75s")
    findings = scan({"job.log": log})
    assert [f for f in findings if f.severity.value == "error"] == []
    assert ("pytest-collection-interrupted", "notice") in {(f.rule, f.severity.value) for f in findings}
