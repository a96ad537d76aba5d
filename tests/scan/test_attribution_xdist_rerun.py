"""Under pytest-xdist a test's start line and its worker's report are apart, with other workers' reports
between them: an event in the test is judged by that worker's report, however many lines later.

Real windows of pytest 9.2.0 -n 2 -v runs with pytest-rerunfailures 16.7 (--reruns 2), the faulthandler
stacks cut to their first frames: test_fused_adam_step aborts its worker on its first try and passes on the
rerun (a notice), or aborts on every try (an error).
"""

from __future__ import annotations

import pytest

from tests.scan.test_attribution import scan
from tests.scan.test_engine_helpers import ENGINES

HEAD = """\
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0 -- /tmp/healthy23/venv/bin/python
rootdir: /tmp/healthy23/suites/crash
plugins: rerunfailures-16.7, xdist-3.8.0, timeout-2.4.0
created: 2/2 workers
2 workers [9 items]

scheduling tests via LoadScheduling

test_kernels.py::test_softmax_rows[1]
test_kernels.py::test_softmax_rows[3]
[gw0] [ 11%] PASSED test_kernels.py::test_softmax_rows[1]
[gw1] [ 22%] PASSED test_kernels.py::test_softmax_rows[3]
test_kernels.py::test_layernorm_eps
test_kernels.py::test_fused_adam_step Fatal Python error: Aborted

Current thread 0x00007f847bc79b80 (most recent call first):
  File "/tmp/healthy23/suites/crash/test_kernels.py", line 23 in test_fused_adam_step
  File "/tmp/healthy23/venv/lib/python3.11/site-packages/_pytest/python.py", line 187 in pytest_pyfunc_call

[gw1] [ 55%] PASSED test_kernels.py::test_layernorm_eps
test_kernels.py::test_matmul_dtype[fp16]
[gw1] [ 66%] PASSED test_kernels.py::test_matmul_dtype[fp16]
[gw0] node down: Not properly terminated
[gw0] [ 77%] RERUN test_kernels.py::test_fused_adam_step

replacing crashed worker gw0

test_kernels.py::test_matmul_dtype[fp32]
[gw1] [ 88%] PASSED test_kernels.py::test_matmul_dtype[fp32]
test_kernels.py::test_fused_adam_step
"""
PASSED_ON_RERUN = HEAD + """\
[gw2] [ 88%] PASSED test_kernels.py::test_fused_adam_step
test_kernels.py::test_matmul_dtype[bf16]
[gw2] [100%] PASSED test_kernels.py::test_matmul_dtype[bf16]

========================= 9 passed, 1 rerun in 35.14s ==========================
"""
FAILED_EVERY_RERUN = HEAD + """\
[gw2] node down: Not properly terminated
[gw2] [ 88%] FAILED test_kernels.py::test_fused_adam_step

replacing crashed worker gw2

test_kernels.py::test_matmul_dtype[bf16]
[gw4] [100%] PASSED test_kernels.py::test_matmul_dtype[bf16]

=================================== FAILURES ===================================
_______________________________ test_kernels.py ________________________________
[gw2] linux -- Python 3.11.7 /tmp/healthy23/venv/bin/python
worker 'gw2' crashed while running 'test_kernels.py::test_fused_adam_step'
=========================== short test summary info ============================
FAILED test_kernels.py::test_fused_adam_step - worker 'gw2' crashed while run...
==================== 1 failed, 8 passed, 2 rerun in 55.47s =====================
"""
TEST = "test_kernels.py::test_fused_adam_step"


def _crash(log: str, engine: str):
    return [f for f in scan({"job.log": log}, engine=engine) if f.rule == "fatal-python-error"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_crash_whose_test_passed_on_its_rerun_on_another_worker_is_a_notice(engine):
    [crash] = _crash(PASSED_ON_RERUN, engine)
    assert (crash.severity.value, crash.test, crash.line) == ("notice", TEST, 15)
    assert crash.message.endswith(" during %s, which passed on rerun" % TEST)
    # the worker it took down is no failure either: the run's verdict handled it
    found = scan({"job.log": PASSED_ON_RERUN}, engine=engine)
    assert [f.rule for f in found if f.severity.value == "error"] == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_crash_whose_test_failed_every_rerun_stays_an_error(engine):
    found = scan({"job.log": FAILED_EVERY_RERUN}, engine=engine)
    errors = {(f.rule, f.test) for f in found if f.severity.value == "error"}
    assert ("pytest-test-outcome", TEST) in errors
    assert all(f.severity.value == "error" for f in found if f.test == TEST)


# pytest-rerunfailures 16.7's "rerun test summary info" under --rerun-show-tracebacks (pytest 9.2.0 -v -rR),
# its tracebacks cut to their last frame: each "RERUN x.py::t" heads a failed attempt, and the test's
# final outcome ends its attempts.
RERUN_SUMMARY = """\
test_flaky_dist.py::test_barrier_hang RERUN                              [ 57%]
test_flaky_dist.py::test_barrier_hang PASSED                             [ 57%]
test_flaky_dist.py::test_worker_result RERUN                             [ 71%]
test_flaky_dist.py::test_worker_result RERUN                             [ 71%]
test_flaky_dist.py::test_worker_result FAILED                            [ 71%]

=================================== FAILURES ===================================
______________________________ test_worker_result ______________________________

/root/.pyenv/versions/3.11.7/lib/python3.11/multiprocessing/queues.py:114: Empty
=========================== rerun test summary info ============================
RERUN test_flaky_dist.py::test_barrier_hang
attempt = 1

    @pytest.mark.timeout(2)
    def test_barrier_hang(attempt):
        if _fails_now("test_barrier_hang", attempt, 1):
>           time.sleep(10)
E           Failed: Timeout (>2.0s) from pytest-timeout.

test_flaky_dist.py:39: Failed
PASSED test_flaky_dist.py::test_barrier_hang
RERUN test_flaky_dist.py::test_worker_result
RERUN test_flaky_dist.py::test_worker_result
attempt = 2

                    if not self._poll(timeout):
>                       raise Empty
E                       _queue.Empty

/root/.pyenv/versions/3.11.7/lib/python3.11/multiprocessing/queues.py:114: Empty
FAILED test_flaky_dist.py::test_worker_result
==================== 1 failed, 1 passed, 3 rerun in 12.82s =====================
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_rerun_reports_traceback_is_its_tests_judged_by_the_tests_final_outcome(engine):
    found = {f.rule: f for f in scan({"job.log": RERUN_SUMMARY}, engine=engine)}
    timeout, empty = found["pytest-timeout"], found["queue-empty-uncaught"]
    assert (timeout.severity.value, timeout.test) == ("notice", "test_flaky_dist.py::test_barrier_hang")
    assert timeout.message.endswith(" during test_flaky_dist.py::test_barrier_hang, which passed on rerun")
    assert (empty.severity.value, empty.test) == ("error", "test_flaky_dist.py::test_worker_result")

