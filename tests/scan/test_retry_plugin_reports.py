"""A rerun plugin's report belongs to the test it names, not to the last test that ran (issue 7, retry24).

pytest-retry 1.7.0 and flaky 3.8.1 print their report of failed attempts after the last test ran
("\\ttest_x failed on attempt 1! Retrying!" + traceback + "\\ttest_x passed on attempt 2!"; "test_x
failed (2 runs remaining out of 3)." + class, value and traceback entries + "test_x passed 1 out of the
required 1 times. Success!"). pytest-rerunfailures under --rerun-show-tracebacks tells a failing test's
earlier attempts again under "RERUN x.py::t" after its FAILURES report, and under pytest-xdist reports a
test that crashed its worker as that worker's "RERUN" right after "[gw0] node down". The logs are real
captures (fixtures/regenerate.py, sections retry24 and healthy23).
"""

from __future__ import annotations

import pytest

from analyzer.verdict import decide
from tests.scan.test_attribution import scan
from tests.scan.test_engine_helpers import ENGINES
from tests.scan.test_retries_and_fallbacks import body

SPAWN_RESULT = "test_gpu_flaky.py::test_spawn_result"
# pytest-retry's and flaky's reports say "test_kernel_stuck" (item.name); -v printed its node id before them
KERNEL_STUCK = "test_gpu_flaky.py::test_kernel_stuck"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["negative/retry24-pytest-retry-v", "negative/retry24-flaky-v"])
def test_a_timeout_in_an_attempt_a_retry_passed_is_that_tests_notice(engine, name):
    findings = scan({"job.log": body(name)}, engine=engine)
    assert [(f.rule, f.severity.value, f.test) for f in findings] == [
        ("pytest-timeout", "notice", KERNEL_STUCK)]
    assert findings[0].message.endswith(f"during {KERNEL_STUCK}, which passed on rerun")
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_test_that_failed_every_attempt_is_an_error_naming_it(engine):
    findings = scan({"job.log": body("crash/retry24-pytest-retry-broken-v")}, engine=engine)
    errors = {(f.rule, f.test) for f in findings if f.severity.value == "error"}
    assert errors == {("queue-empty-uncaught", SPAWN_RESULT), ("pytest-test-outcome", SPAWN_RESULT)}
    # the other tests' failed attempts in the same report stay notices of their own tests
    assert ("pytest-timeout", "notice", KERNEL_STUCK) in {
        (f.rule, f.severity.value, f.test) for f in findings}
    assert decide(findings)[1] == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failure_told_in_the_report_and_again_for_its_rerun_is_one_error(engine):
    findings = scan({"job.log": body("crash/healthy23-rerunfailures-tracebacks-broken-v")}, engine=engine)
    empties = [f for f in findings if f.rule == "queue-empty-uncaught"]
    assert [(f.severity.value, f.test) for f in empties] == [
        ("error", "test_flaky_dist.py::test_worker_result")]
    assert "(seen 3 times)" in empties[0].message  # the FAILURES report and the two RERUN reports


# healthy23's real pytest 9.2.0 -n 2 -v --reruns 2 run (pytest-xdist 3.8.0, pytest-rerunfailures 16.7) where
# test_fused_adam_step abort()s its worker on every try, the faulthandler stacks cut to their first frame and
# the middle try left out. gw0 went down after another worker's report, so no line before it names the test;
# the RERUN right after it does (xdist names the test only for the last try: "crashed while running").
EVERY_TRY_ABORTS = """\
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0 -- /tmp/healthy23/venv/bin/python
rootdir: /tmp/healthy23/suites/crash
plugins: retry-1.7.0, rerunfailures-16.7, xdist-3.8.0, timeout-2.4.0, hypothesis-6.170.27
created: 2/2 workers
2 workers [9 items]

scheduling tests via LoadScheduling

test_kernels.py::test_softmax_rows[1]
[gw0] [ 11%] PASSED test_kernels.py::test_softmax_rows[1]
test_kernels.py::test_softmax_rows[3]
test_kernels.py::test_softmax_rows[2]
[gw1] [ 22%] PASSED test_kernels.py::test_softmax_rows[3]
[gw0] [ 33%] PASSED test_kernels.py::test_softmax_rows[2] Fatal Python error: Aborted

Thread 0x00007f2fa9bff6c0 (most recent call first):
  File "/tmp/healthy23/venv/lib/python3.11/site-packages/execnet/gateway_base.py", line 534 in read

Current thread 0x00007f2faafbbb80 (most recent call first):
  File "/tmp/healthy23/suites/crash/test_kernels.py", line 19 in test_fused_adam_step

test_kernels.py::test_softmax_rows[4]
[gw1] [ 44%] PASSED test_kernels.py::test_softmax_rows[4]
test_kernels.py::test_fused_adam_step
test_kernels.py::test_layernorm_eps
[gw1] [ 55%] PASSED test_kernels.py::test_layernorm_eps
[gw0] node down: Not properly terminated
[gw0] [ 66%] RERUN test_kernels.py::test_fused_adam_step

replacing crashed worker gw0

  File "/tmp/healthy23/venv/lib/python3.11/site-packages/execnet/gateway_base.py", line 411 in _perform_spawn

test_kernels.py::test_fused_adam_step
[gw1] node down: Not properly terminated
[gw1] [ 88%] RERUN test_kernels.py::test_fused_adam_step

replacing crashed worker gw1
Fatal Python error: Aborted

Thread 0x00007f08e6bff6c0 (most recent call first):
  File "/tmp/healthy23/venv/lib/python3.11/site-packages/execnet/gateway_base.py", line 534 in read

Current thread 0x00007f08e7e1eb80 (most recent call first):
  File "/tmp/healthy23/suites/crash/test_kernels.py", line 19 in test_fused_adam_step

test_kernels.py::test_fused_adam_step
[gw2] node down: Not properly terminated
[gw2] [ 88%] FAILED test_kernels.py::test_fused_adam_step

replacing crashed worker gw2

test_kernels.py::test_matmul_dtype[fp16]
[gw4] [100%] PASSED test_kernels.py::test_matmul_dtype[fp16]

=================================== FAILURES ===================================
_______________________________ test_kernels.py ________________________________
[gw2] linux -- Python 3.11.7 /tmp/healthy23/venv/bin/python
worker 'gw2' crashed while running 'test_kernels.py::test_fused_adam_step'
=========================== short test summary info ============================
FAILED test_kernels.py::test_fused_adam_step - worker 'gw2' crashed while run...
==================== 1 failed, 8 passed, 2 rerun in 55.47s =====================
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_each_lost_worker_of_a_test_that_crashes_every_rerun_names_it(engine):
    findings = scan({"job.log": EVERY_TRY_ABORTS}, engine=engine)
    downs = [(f.line, f.severity.value, f.test) for f in findings if f.rule == "xdist-node-down"]
    assert downs == [(28, "error", "test_kernels.py::test_fused_adam_step"),
                     (36, "error", "test_kernels.py::test_fused_adam_step")]
