"""Red-team pass 23 of the guard: real misbehaving programs and test suites run through the real CLI,
each test failing before its fix. ``no_process_left_behind`` (autouse, from tests/supervise) proves
that nothing a test started is left alive afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import pytest

from analyzer.scan.attribution import event_handled
from tests.supervise.conftest import no_process_left_behind  # noqa: F401 - autouse in this module too

# py-spy names a method with its class only on Python 3.11+ (co_qualname): before that the guard
# makes up no test id from a stack.
QUALIFIED_STACKS = sys.version_info >= (3, 11)


def guard(cwd: Path, *args: str, timeout: float = 180) -> Tuple[int, Dict[str, Any], str]:
    """``python -m analyzer run --json r.json ARGS`` in ``cwd``: (exit status, report, console text)."""
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(cwd / "logs"),
         "--json", str(cwd / "r.json"), *args],
        cwd=str(cwd), capture_output=True, timeout=timeout,
    )
    console = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    return proc.returncode, json.loads((cwd / "r.json").read_text()), console


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def hang_of(report: Dict[str, Any]) -> Dict[str, Any]:
    return next(f for f in report["findings"] if f["kind"] == "hang")


# -- 1. the hang finding names the running test when no line of the log names it ------------------

SUITE = """
    import subprocess
    import sys
    import threading
    import time
    import unittest


    def test_passes():
        pass


    def test_all_reduce_hangs():
        print("entering all_reduce", flush=True)
        time.sleep(600)


    def test_worker_hangs():
        # The test waits for a worker that hangs: the worker is where it hangs, the test is the parent's.
        print("starting the worker", flush=True)
        subprocess.run([sys.executable, "-c", "import time; time.sleep(600)"])


    def test_waits_for_an_event():
        threading.Event().wait(600)


    def test_runs_an_inner_suite(tmp_path):
        # As pytester's runpytest_subprocess does: the inner run's hung test belongs to this one.
        (tmp_path / "test_inner.py").write_text("import time\\ndef test_inner():\\n    time.sleep(600)\\n")
        subprocess.run([sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider", str(tmp_path)])


    class TestStore(unittest.TestCase):
        def test_wait_hangs(self):
            print("waiting for the key", flush=True)
            time.sleep(600)
"""


@pytest.mark.parametrize("runner, test", [
    # pytest -s without -v prints "test_suite.py .entering all_reduce": no line names the test.
    (("-m", "pytest", "-s", "-p", "no:cacheprovider", "test_suite.py::test_passes",
      "test_suite.py::test_all_reduce_hangs"), "test_suite.py::test_all_reduce_hangs"),
    (("-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_suite.py::test_worker_hangs"),
     "test_suite.py::test_worker_hangs"),
    (("-m", "pytest", "-s", "-p", "no:cacheprovider", "test_suite.py::TestStore"),
     "test_suite.py::TestStore::test_wait_hangs"),
    (("-m", "pytest", "-s", "-p", "no:cacheprovider", "test_suite.py::test_runs_an_inner_suite"),
     "test_suite.py::test_runs_an_inner_suite"),
    # unittest without -v prints nothing per test.
    (("-m", "unittest", "test_suite.TestStore"), "test_wait_hangs (test_suite.TestStore)"),
])
def test_the_hang_names_the_test_its_stack_shows_when_no_line_named_it(tmp_path, runner, test):
    # Before: "hung in `test_all_reduce_hangs` (test_suite.py:14) for 8s" with "test": null; under
    # pytest -s, -q or xdist, and plain unittest, the log never names the running test.
    write(tmp_path / "test_suite.py", SUITE)
    code, report, console = guard(
        tmp_path, "--idle-timeout", "8s", "--timeout", "150s", "--kill-grace", "2s", "--",
        sys.executable, *runner,
    )
    assert code == 124, console
    hang = hang_of(report)
    assert hang["rule"] == "guard-idle-timeout", hang
    expected: Optional[str] = test if QUALIFIED_STACKS else None
    assert hang["test"] == expected, hang
    if expected is not None:
        assert expected in hang["message"], hang["message"]


WORKERS = """
    import subprocess
    import sys

    # As pytest-xdist's controller: no test of its own, one pytest per worker; the worker that only
    # waits on an event starts first, so it comes first in tree order.
    common = [sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider"]
    waiting = subprocess.Popen(common + ["test_suite.py::test_waits_for_an_event"])
    hung = subprocess.Popen(common + ["test_suite.py::test_all_reduce_hangs"])
    waiting.wait()
    hung.wait()
"""


def test_the_hang_names_the_test_of_the_worker_where_it_hangs(tmp_path):
    # Before (the first test in tree order): test_waits_for_an_event, a worker idle in Event.wait,
    # while the message said "hung in `test_all_reduce_hangs` (pid N)".
    write(tmp_path / "test_suite.py", SUITE)
    controller = write(tmp_path / "controller.py", WORKERS)
    code, report, console = guard(
        tmp_path, "--idle-timeout", "8s", "--timeout", "150s", "--kill-grace", "2s", "--",
        sys.executable, str(controller),
    )
    assert code == 124, console
    hang = hang_of(report)
    assert hang["message"].startswith("hung in `test_all_reduce_hangs`"), hang["message"]
    expected = "test_suite.py::test_all_reduce_hangs" if QUALIFIED_STACKS else None
    assert hang["test"] == expected, hang


# -- 2. --abort-on ends a stuck run, not a suite that handled the event and went on -------------------

# What torch's TCPStore raises when too few clients join (torch 2.13, produced for real with
# TCPStore(world_size=2, wait_for_workers=True, timeout=1 s)); a store test expects it and passes.
STORE_TIMEOUT = (
    "torch.distributed.DistStoreError: Timed out after 2 seconds waiting for clients. 1/2 clients joined."
)

HANDLING_SUITE = """
    import sys
    import time

    import pytest


    def test_store_times_out_waiting_for_clients():
        print("starting a store with world_size=2", flush=True)  # ends the -v -s progress line
        time.sleep(0.2)
        # The test expects the store's timeout and logs it (on {stream}), as torch's store tests do.
        print({line!r}, file=sys.{stream}, flush=True)


    @pytest.mark.parametrize("step", range(3))
    def test_training_step(step):
        time.sleep(1.5)  # the suite goes on well past --abort-grace
"""


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_abort_on_leaves_a_suite_that_handled_the_event_and_went_on(tmp_path, stream):
    # Before: "aborted after 5.8s on c10d store: timed out after 2 seconds waiting for clients" while
    # test_training_step[1] ran, exit 124, though the test that printed it had PASSED.
    write(tmp_path / "test_handled.py", HANDLING_SUITE.format(line=STORE_TIMEOUT, stream=stream))
    code, report, console = guard(
        tmp_path, "--abort-on", "timeout", "--abort-grace", "1s", "--timeout", "150s", "--",
        sys.executable, "-m", "pytest", "-v", "-s", "-p", "no:cacheprovider", "test_handled.py",
    )
    assert report["command"]["timeout_reason"] is None, report["findings"]
    assert not [f for f in report["findings"] if f["rule"] == "guard-aborted"], report["findings"]
    assert b"4 passed" in (tmp_path / "logs" / "stdout.log").read_bytes()
    # The event on stderr is set in the test stdout showed running (test_guarded_across.py): a notice.
    assert code == 0, (console, report["findings"])


@pytest.mark.parametrize("after, test, expected", [
    ([b"\x1b[32mPASSED\x1b[0m", b""], "t.py::a", True),  # pytest -s --color=yes, after the test's output
    ([b"PASSED [ 50%]", b""], "t.py::a", True),
    ([b"ok", b""], "m (t.C)", True),  # unittest -v after a test that printed
    ([b"FAILED", b""], "t.py::a", False),  # a failed test did not handle the event
    ([b"ERROR: retrying", b"PASSED", b""], "t.py::a", True),  # the test's own output is no outcome
    ([b"t.py::a ", b"PASSED", b""], "t.py::a", True),  # the same test's line again, then its outcome
    ([b"\x1b[1mt.py::b \x1b[0m", b""], "t.py::a", False),  # another test began, no pass came first
    ([b"[gw1] [ 50%] PASSED t.py::b", b""], "t.py::a", False),  # another worker's test
    ([b"more output", b"PASSED"], "t.py::a", False),  # an outcome still being written
    ([b"==== 3 passed in 2.10s ====", b""], "t.py::a", False),  # a verdict: the run may hang at exit
    # the other log, from the line in force when the event arrived: its first test's outcome
    ([b"t.py::a started", b"output", b""], None, False),
    ([b"collected 2 items", b"t.py::a PASSED", b""], None, True),
    ([b"t.py::a \x1b[31mFAILED\x1b[0m", b""], None, False),
])
def test_what_says_a_test_handled_an_abort_event(after, test, expected):
    assert event_handled(after, test) is expected


STUCK_SUITE = """
    import sys
    import time


    def test_store_times_out_and_the_test_hangs():
        print({line!r}, file=sys.{stream}, flush=True)
        time.sleep(600)


    def test_never_reached():
        pass
"""


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_abort_on_still_ends_a_test_that_hangs_after_the_event(tmp_path, stream):
    write(tmp_path / "test_stuck.py", STUCK_SUITE.format(line=STORE_TIMEOUT, stream=stream))
    code, report, console = guard(
        tmp_path, "--abort-on", "timeout", "--abort-grace", "1s", "--timeout", "150s", "--kill-grace", "2s",
        "--", sys.executable, "-m", "pytest", "-v", "-s", "-p", "no:cacheprovider", "test_stuck.py",
    )
    assert code == 124, console
    assert report["command"]["timeout_reason"] == "aborted", report["findings"]
    hang = hang_of(report)
    assert hang["rule"] == "guard-aborted" and "waiting for clients" in hang["message"], hang
    assert f"{stream}.log:" in hang["message"], hang["message"]
    assert hang["test"] == "test_stuck.py::test_store_times_out_and_the_test_hangs", hang


# -- 3. where a pool hangs: in the parent's map, not in an idle worker -----------------------------

POOL_PROGRAM = """
    import ctypes
    import multiprocessing


    def work(i):
        if i == 3:
            ctypes.string_at(0)  # the worker segfaults; Pool starts a new one and map() waits forever
        return i * i


    def main():
        with multiprocessing.get_context("fork").Pool(2) as pool:
            print("pool up", flush=True)
            pool.map(work, range(8))  # line 15


    if __name__ == "__main__":
        main()
"""


def test_a_pool_whose_worker_died_hangs_in_the_parents_map_not_in_an_idle_worker(tmp_path):
    # Before: "hung in `main` (prog.py:13), waiting in `Connection._recv` (connection.py:395) (pid N)":
    # an idle worker waiting for its next task, and the line where the pool forked it (the parent's
    # stack a forked child carries below BaseProcess._bootstrap).
    prog = write(tmp_path / "prog.py", POOL_PROGRAM)
    code, report, console = guard(
        tmp_path, "--idle-timeout", "5s", "--timeout", "150s", "--kill-grace", "2s", "--", sys.executable,
        str(prog),
    )
    assert code == 124, console
    hang = hang_of(report)
    assert hang["message"].startswith("hung in `main` (prog.py:15), waiting in "), hang["message"]
    assert any(f["rule"] == "fatal-python-error" for f in report["findings"]), report["findings"]


HANDLED_THEN_STUCK_SUITE = """
    import sys
    import time


    def test_store_times_out_waiting_for_clients():
        print({handled!r}, file=sys.stderr, flush=True)


    def test_watchdog_fires_and_the_rank_hangs():
        time.sleep(0.5)  # a watchdog fires its timeout after the collective began, never at once
        print({fatal!r}, file=sys.stderr, flush=True)
        time.sleep(600)
"""
WATCHDOG = (
    "[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=5, NumelOut=5, Timeout(ms)=600000) ran for "
    "600061 milliseconds before timing out."
)


def test_abort_on_still_ends_a_later_stuck_test_after_a_handled_event_on_stderr(tmp_path):
    # stderr shows no test lines, so both events happened in no test as the scan sees them: a
    # withdrawn first trigger must not keep the second from ending the run. (Lines of the other log
    # that came within the line clock's step, 50 ms, before an event are read as after it: a test
    # that passed that close before a fatal event would withdraw it, hence the watchdog's delay.)
    write(tmp_path / "test_two.py", HANDLED_THEN_STUCK_SUITE.format(handled=STORE_TIMEOUT, fatal=WATCHDOG))
    code, report, console = guard(
        tmp_path, "--abort-on", "timeout", "--abort-grace", "1s", "--timeout", "60s", "--kill-grace", "2s",
        "--", sys.executable, "-m", "pytest", "-v", "-s", "-p", "no:cacheprovider", "test_two.py",
    )
    assert code == 124, console
    assert report["command"]["timeout_reason"] == "aborted", report["findings"]
    hang = hang_of(report)
    assert "NCCL watchdog" in hang["message"] and "stderr.log:2" in hang["message"], hang["message"]


FAILING_SUITE = HANDLING_SUITE.replace(
    "flush=True)\n", "flush=True)\n        assert False, 'no client joined'\n", 1
)


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_abort_on_ends_a_suite_whose_test_failed_on_the_event(tmp_path, stream):
    # A test that fails on the event did not handle it: the process group is broken for what follows,
    # and the user asked to stop there. A suite that goes on after it is still ended after the grace.
    write(tmp_path / "test_failing.py", FAILING_SUITE.format(line=STORE_TIMEOUT, stream=stream))
    code, report, console = guard(
        tmp_path, "--abort-on", "timeout", "--abort-grace", "1s", "--timeout", "150s", "--kill-grace", "2s",
        "--", sys.executable, "-m", "pytest", "-v", "-s", "-p", "no:cacheprovider", "test_failing.py",
    )
    assert code == 124, console
    assert report["command"]["timeout_reason"] == "aborted", report["findings"]
    assert "waiting for clients" in hang_of(report)["message"]


# -- 4. a cancel while the scan is behind still reports what the scan had seen ------------------------

def test_a_scan_cut_inside_a_window_hands_in_the_events_it_had_seen(tmp_path):
    # Measured: SIGINT 5 s into a flood of "[rankN]: RuntimeError: CUDA error: an illegal memory access"
    # lines with 16 stuck ranks gave only "the live scan of stdout.log was cut short ... it read
    # 13,628,626 of 220,523,042 bytes": the scan, cut inside a window, handed in nothing, and the CUDA
    # error it had seen on line 1 was not in the report. Here the window is held open by the event
    # callback, so the cut finds it inside one every time.
    import os
    import threading
    import time

    from analyzer.guarded import _collect, _LiveLog
    from analyzer.model import Severity
    from analyzer.rules.loader import load_catalogue
    from analyzer.scan import pipeline

    path = tmp_path / "stdout.log"
    path.write_bytes(b"RuntimeError: CUDA error: an illegal memory access was encountered\nstep 2\n")
    catalogue = load_catalogue()
    entered, release = threading.Event(), threading.Event()

    def on_event(finding) -> None:
        entered.set()
        release.wait(60)

    log = _LiveLog(str(path), os.open(str(path), os.O_RDONLY), catalogue,
                   pipeline.engine_for(catalogue, "python"), on_event)
    log.follow.offer(path.stat().st_size, time.monotonic())
    try:
        assert entered.wait(60)
        outcome = _collect({"stdout": log}, 0.0, lambda: True, Severity.WARNING)["stdout"]
    finally:
        release.set()
        log.thread.join(60)
    assert outcome.result is None and outcome.incomplete is not None
    assert [(f.rule, f.line) for f in outcome.seen] == [("cuda-error", 1)]


def test_an_abort_event_is_not_placed_in_a_log_whose_scan_is_behind_it(tmp_path):
    # stdout's scan lags (held inside a window here, as a flood of test lines holds it): stderr's fatal
    # event arrived after "t.py::test_old PASSED", which stdout's scan has not counted yet. Before, the
    # reading of stdout started at the last line it had counted, took test_old's PASSED for the running
    # test's, and withdrew the abort of a run that was stuck.
    import os
    import threading
    import time

    from analyzer.guarded import _event_offsets, _LiveLog
    from analyzer.rules.loader import load_catalogue
    from analyzer.scan import pipeline

    catalogue = load_catalogue()
    out, err = tmp_path / "stdout.log", tmp_path / "stderr.log"
    first = b"RuntimeError: CUDA error: an illegal memory access was encountered\n"  # holds stdout's scan
    out.write_bytes(first + b"t.py::test_old PASSED\nt.py::test_stuck \n")
    err.write_bytes(STORE_TIMEOUT.encode() + b"\n")
    entered, release = threading.Event(), threading.Event()
    seen = []

    def hold(finding) -> None:
        entered.set()
        release.wait(60)

    logs = {
        "stdout": _LiveLog(str(out), os.open(str(out), os.O_RDONLY), catalogue,
                           pipeline.engine_for(catalogue, "python"), hold),
        "stderr": _LiveLog(str(err), os.open(str(err), os.O_RDONLY), catalogue,
                           pipeline.engine_for(catalogue, "python"), seen.append),
    }
    try:
        logs["stdout"].follow.offer(len(first), time.monotonic())
        assert entered.wait(60)
        logs["stdout"].follow.offer(out.stat().st_size, time.monotonic())  # arrives; stays unread
        time.sleep(0.2)  # the stderr line arrives a line-clock step later (not an assertion)
        logs["stderr"].follow.offer(err.stat().st_size, time.monotonic())
        deadline = time.monotonic() + 60
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
        assert seen, "the stderr scan never saw the store timeout"
        offsets = _event_offsets(logs, seen[0])
    finally:
        release.set()
        for log in logs.values():
            log.follow.finish()
            log.thread.join(60)
    assert offsets == {str(err): 0}, offsets
