"""A guarded pytest's stderr read against its stdout: pytest ``-s`` prints its test lines on stdout while
the code under test logs its warnings and tracebacks on stderr, and the guard keeps the two in two logs.
Each stderr event is set in the test that stdout showed running when its line arrived (the guard's byte
clocks), so an event a passing test handled is a notice and one in a failing test an error naming it.
Real pytest runs with a real torch TCPStore timing out; ``no_process_left_behind`` (autouse) proves that
nothing is left alive.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest

from analyzer.scan.attribution import passed_through, running_test
from tests.supervise.conftest import no_process_left_behind  # noqa: F401 - autouse in this module too
from tests.supervise.test_guard_torchrun import require_torch

# A passing test that expects the store's timeout and logs it (on stderr, with its traceback, as torch's
# store tests do), and a failing one that logs the same timeout and raises it: one wording, two tests.
STORE_SUITE = """
    import datetime
    import logging
    import sys
    import time

    import torch.distributed as dist

    log = logging.getLogger("store")
    log.addHandler(logging.StreamHandler(sys.stderr))


    def _store():
        # world_size 2 and no client joins: the server times out waiting for clients.
        return dist.TCPStore("127.0.0.1", 0, 2, True, timeout=datetime.timedelta(seconds=1))


    def test_store_times_out_as_expected():
        print("starting a store", flush=True)
        try:
            _store()
        except dist.DistStoreError:
            log.exception("expected: the store timed out")
        time.sleep(0.2)  # its teardown: the PASSED comes well after the event


    def test_store_times_out_and_fails():
        print("starting a store", flush=True)
        time.sleep(0.2)
        try:
            _store()
        except dist.DistStoreError:
            log.exception("the store timed out")
            time.sleep(0.2)  # FAILED comes well after the event (the two pipes are timed to ACROSS_SLACK_S)
            raise
"""
HANDLED = "test_store.py::test_store_times_out_as_expected"
FAILED = "test_store.py::test_store_times_out_and_fails"


def guarded_pytest(tmp_path: Path, *pytest_args: str, suite: str = STORE_SUITE) -> Tuple[int, Dict[str, Any]]:
    (tmp_path / "test_store.py").write_text(textwrap.dedent(suite))
    pytest_command = (sys.executable, "-m", "pytest", *pytest_args, "-p", "no:cacheprovider", "test_store.py")
    return guarded(tmp_path, *pytest_command)


def guarded(tmp_path: Path, *command: str) -> Tuple[int, Dict[str, Any]]:
    """``command`` run under the guard in ``tmp_path``: its status and the JSON report."""
    require_torch()  # the suites' TCPStore is torch's (installed by .ci/run for its Python 3.11 run)
    # CI and BUILD_NUMBER change how pytest cuts its short summary (_pytest/terminal.py running_on_ci).
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "BUILD_NUMBER")}
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"),
         "--json", str(tmp_path / "r.json"), "--timeout", "150s", "--", *command],
        cwd=str(tmp_path), capture_output=True, timeout=180, env=env,
    )
    return proc.returncode, json.loads((tmp_path / "r.json").read_text())


def on_stderr(report: Dict[str, Any], rule: str) -> List[Dict[str, Any]]:
    return [f for f in report["findings"] if f["rule"] == rule and f["path"].endswith("stderr.log")]


def test_a_stderr_event_is_set_in_the_test_stdout_showed_running(tmp_path):
    # Before: one "c10d store: timed out ... (seen 2 times)" error on stderr.log:8 in no test: the
    # handled timeout and the failing one folded together, as stderr shows no test lines.
    code, report = guarded_pytest(tmp_path, "-v", "-s")
    assert code == 1, report["findings"]
    found = sorted((f["line"], f["severity"], f["test"]) for f in on_stderr(report, "c10d-store-timeout"))
    assert found == [(8, "notice", HANDLED), (16, "error", FAILED)], report["findings"]
    notice = next(f for f in on_stderr(report, "c10d-store-timeout") if f["severity"] == "notice")
    assert notice["message"].endswith(f"during {HANDLED}, which passed"), notice["message"]
    first = report["findings"][0]
    assert first["severity"] == "error" and first["test"] == FAILED, report["findings"]


def test_an_outcome_on_the_line_the_event_arrived_during_counts(tmp_path):
    # Before: an error "c10d store timed out ... during test_store.py::test_store_times_out_quietly": the
    # rest of stdout's line cut where the event arrived (" PASSED") was dropped as no line of its own.
    # The passing test prints nothing on stdout: pytest -v -s writes its outcome on the test's own line,
    # "test_store.py::test_store_times_out_as_expected PASSED", which had begun before the event arrived.
    code, report = guarded_pytest(tmp_path, "-v", "-s", suite=PASSING_STORE_SUITE)
    assert code == 0, report["findings"]
    found = [(f["severity"], f["test"]) for f in report["findings"] if f["path"].endswith("stderr.log")]
    # On a loaded machine the pump may time the line after the next test's start: it is then named after
    # that test and handled only because every test from the earlier point on passed (ACROSS_SLACK_S).
    assert found and {severity for severity, _ in found} == {"notice"}, report["findings"]
    assert {test for _, test in found} <= {HANDLED, "test_store.py::test_after_it"}, report["findings"]
    assert f"{HANDLED} PASSED".encode() in (tmp_path / "logs" / "stdout.log").read_bytes()


def test_without_test_lines_on_stdout_the_stderr_events_stay_errors(tmp_path):
    # pytest -s -q names no running test on stdout: nothing to set the events in, and the run's verdict
    # reports a failure, so nothing demotes them (the failing test's timeout must not become a notice).
    code, report = guarded_pytest(tmp_path, "-s", "-q")
    assert code == 1, report["findings"]
    found = on_stderr(report, "c10d-store-timeout")
    assert found and all(f["severity"] == "error" for f in found), report["findings"]
    assert b"1 failed, 1 passed" in (tmp_path / "logs" / "stdout.log").read_bytes()


# Passing runs whose stdout names no running test (pytest -s, -q): a store timeout a test handled, logged on
# stderr; and, in ATEXIT_CONFTEST, an atexit callback that raises after pytest's verdict (the
# project's first failure: the process still exits 0).
PASSING_STORE_SUITE = """
    import datetime
    import sys
    import time

    import torch.distributed as dist


    def test_store_times_out_as_expected():
        try:
            dist.TCPStore("127.0.0.1", 0, 2, True, timeout=datetime.timedelta(seconds=1))
        except dist.DistStoreError as err:
            print(f"expected: {err}", file=sys.stderr, flush=True)
        # PASSED, the next test and the verdict come well after the event: within ACROSS_SLACK_S of
        # stdout's verdict the two pipes' order is unknown, and the guard then keeps the event an error
        # (an atexit error printed right after a verdict must stay one).
        time.sleep(0.3)


    def test_after_it():
        assert True
"""
ATEXIT_CONFTEST = """
    import atexit


    def _shutdown():
        raise RuntimeError("could not shut down the process group")


    atexit.register(_shutdown)
"""


def stderr_findings(report: Dict[str, Any]) -> List[Tuple[str, str]]:
    return sorted((f["rule"], f["severity"]) for f in report["findings"] if f["path"].endswith("stderr.log"))


@pytest.mark.parametrize("verbosity", ["-q", ""])
def test_a_stderr_event_inside_a_passing_run_that_names_no_test_is_handled(tmp_path, verbosity):
    # Before: an error "c10d store timed out" on stderr.log failed this green run (pytest -s and -q show
    # no running test on stdout to set it in); the run's passing verdict judges it, as in one log.
    code, report = guarded_pytest(tmp_path, "-s", *verbosity.split(), suite=PASSING_STORE_SUITE)
    assert code == 0, report["findings"]
    found = [f for f in report["findings"] if f["path"].endswith("stderr.log")]
    assert found and {f["severity"] for f in found} == {"notice"}, report["findings"]
    assert all("which passed (2 passed" in f["message"] for f in found), report["findings"]


def test_an_atexit_error_after_a_passing_verdict_stays_an_error(tmp_path):
    (tmp_path / "test_store.py").write_text(textwrap.dedent(PASSING_STORE_SUITE))
    (tmp_path / "conftest.py").write_text(textwrap.dedent(ATEXIT_CONFTEST))
    code, report = guarded(tmp_path, sys.executable, "-m", "pytest", "-s", "-q", "-p", "no:cacheprovider",
                           "test_store.py")
    assert code == 1, report["findings"]
    found = stderr_findings(report)
    assert ("atexit-callback-ignored", "error") in found, report["findings"]
    assert ("c10d-store-timeout", "notice") in found, report["findings"]


def test_a_later_passing_run_does_not_handle_the_exit_path_of_the_one_before(tmp_path):
    # Two runs in one step, as a shell step runs several suites: the first run's atexit error came after
    # its verdict and before the second run began; the second run's verdict says nothing of it.
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "test_store.py").write_text(textwrap.dedent(PASSING_STORE_SUITE))
    (first / "conftest.py").write_text(textwrap.dedent(ATEXIT_CONFTEST))
    run = f"{shlex.quote(sys.executable)} -m pytest -s -q -p no:cacheprovider test_store.py"
    code, report = guarded(tmp_path, "bash", "-c", f"(cd first && {run}); sleep 0.5; cd second && {run}")
    assert code == 1, report["findings"]
    atexit_errors = [f for f in report["findings"] if f["rule"] == "atexit-callback-ignored"]
    assert [f["severity"] for f in atexit_errors] == ["error"], report["findings"]


@pytest.mark.parametrize("before, from_start, expected", [
    (b"collected 2 items\n\nt.py::test_a starting\n", True, "t.py::test_a"),  # -v -s: output after the id
    (b"t.py::test_a PASSED\nt.py::test_b ", True, "t.py::test_b"),
    (b"t.py::test_a starting\nPASSED\n", True, None),  # -s: its bare outcome, between tests
    (b"t.py::test_a PASSED [ 50%]\n", True, None),
    (b"t.py::test_a starting\nPASSED\n==== 1 passed in 0.1s ====\n", True, None),  # after the verdict
    (b"starting a store\n.starting a store\n", True, None),  # -q names no test
    (b"y.py::test_cut starting\nt.py::test_b output\n", False, "t.py::test_b"),
    (b"::test_cut starting\n", False, None),  # only a cut line: it says nothing
    (b"[gw0] [ 50%] PASSED t.py::test_a\n", True, None),  # xdist's report of a test run elsewhere
])
def test_which_test_stdout_showed_running(before: bytes, from_start: bool, expected: Optional[str]):
    assert running_test(before, from_start) == expected


@pytest.mark.parametrize("after, running, test, expected", [
    ([b"more output", b"PASSED", b""], "t.py::a", "t.py::a", True),
    ([b"FAILED", b""], "t.py::a", "t.py::a", False),
    # the event was timed after test b began: a's outcome came in between, and both must have passed
    ([b"PASSED", b"t.py::b starting", b"PASSED", b""], "t.py::a", "t.py::b", True),
    ([b"FAILED", b"t.py::b starting", b"PASSED", b""], "t.py::a", "t.py::b", False),
    ([b"PASSED", b"t.py::b starting", b"FAILED", b""], "t.py::a", "t.py::b", False),
    ([b"t.py::b PASSED", b""], None, "t.py::b", True),  # between tests, then b
    ([b"t.py::a output", b"t.py::c starting", b"PASSED", b""], "t.py::a", "t.py::a", False),
    ([b"output", b"PASSED"], "t.py::a", "t.py::a", None),  # an outcome still being written: unsaid
    ([b"==== 2 passed in 0.1s ====", b""], "t.py::a", "t.py::a", None),  # a verdict is no outcome
])
def test_whether_the_tests_around_a_stderr_event_passed(
    after: Sequence[bytes], running: Optional[str], test: str, expected: Optional[bool]
):
    assert passed_through(after, running, test) is expected


def test_a_byte_clock_stays_bounded_and_keeps_its_newest_point():
    from analyzer.guarded import _CLOCK_POINTS, _ByteClock

    clock = _ByteClock()
    for index in range(3 * _CLOCK_POINTS):
        clock.add(10 * (index + 1), float(index))
        assert len(clock.times) <= _CLOCK_POINTS
        # the bytes that just came have a time: the stderr line the scan is on was among them
        assert clock.arrival(10 * index + 5) == (10 * (index + 1), float(index))
    assert clock.bytes_by(-1.0) == 0 and clock.bytes_by(1e9) == 30 * _CLOCK_POINTS
