"""PyTorch's test/run_test.py re-runs a test that failed or crashed in a new process (run_test_retries).

It prints "Got exit code -6 (SIGABRT)" and "Retrying single test...", runs pytest on that test alone, and,
once it passes, "Test succeeeded in new process, continuing with the rest of the tests". At the end of the
file it lists the tests that failed and then passed ("The following tests failed and then succeeded when
run in a new process[...]"): the job passes, so their events were handled by the re-run (notices). A test
it lists as failed consistently, or a log cut before the list, keeps its errors.

The logs are cut from real runs of that loop (fixtures/regenerate.py's RUN_TEST_LIKE, pytest 9.2).
"""

from __future__ import annotations

from tests.scan.test_attribution import scan, summary

FIRST_RUN = """\
Executing python -m pytest -v -x -p no:cacheprovider test_flaky_abort.py
============================= test session starts ==============================
collecting ... collected 3 items

test_flaky_abort.py::test_before PASSED                                  [ 33%]
test_flaky_abort.py::test_aborts_once Fatal Python error: Aborted

Current thread 0x00007f851be44b80 (most recent call first):
  File "/tmp/ghg-fixtures/run_test/test_flaky_abort.py", line 12 in test_aborts_once
  File "<frozen runpy>", line 198 in _run_module_as_main

Extension modules: markupsafe._speedups (total: 1)
Got exit code -6 (SIGABRT)
Retrying single test...
Executing python -m pytest -v -x -p no:cacheprovider test_flaky_abort.py::test_aborts_once
============================= test session starts ==============================
collecting ... collected 1 item

test_flaky_abort.py::test_aborts_once PASSED                             [100%]

============================== 1 passed in 9.10s ===============================
Test succeeeded in new process, continuing with the rest of the tests
Executing python -m pytest -v -x -p no:cacheprovider test_flaky_abort.py --deselect test_flaky_abort.py::t\
est_aborts_once
============================= test session starts ==============================
collecting ... collected 3 items / 2 deselected / 1 selected

test_flaky_abort.py::test_after PASSED                                   [100%]

======================= 1 passed, 2 deselected in 8.64s ========================
"""
LISTED = ("The following tests failed and then succeeded when run in a new process"
          "['test_flaky_abort.py::test_aborts_once']\n")
TEST = "test_flaky_abort.py::test_aborts_once"


def test_a_crash_its_rerun_passed_is_a_notice_naming_the_test():
    findings = scan({"ci.log": FIRST_RUN + LISTED})
    assert summary(findings) == [
        ("fatal-python-error", "notice", 6, TEST),
        ("process-exitcode-signal", "notice", 13, TEST),
    ]
    assert findings[0].message.endswith("during %s, which passed" % TEST)


def test_a_log_cut_before_the_list_keeps_the_crash_an_error():
    findings = scan({"ci.log": FIRST_RUN})
    assert [(f.rule, f.severity.value, f.test) for f in findings if f.severity.value == "error"] == [
        ("fatal-python-error", "error", TEST),
    ]


def test_a_list_of_other_tests_leaves_this_crash_an_error():
    other = LISTED.replace(TEST, "test_flaky_abort.py::test_after")
    findings = scan({"ci.log": FIRST_RUN + other})
    assert ("fatal-python-error", "error", 6, TEST) in summary(findings)


def test_tests_that_failed_consistently_stay_errors():
    consistent = "The following tests failed consistently: ['%s']\n" % TEST
    findings = scan({"ci.log": FIRST_RUN + consistent})
    assert ("fatal-python-error", "error", 6, TEST) in summary(findings)


FAILED_FIRST = """\
test_flaky_assert.py::test_before PASSED                                 [ 33%]
test_flaky_assert.py::test_fails_once FAILED                             [ 66%]

=================================== FAILURES ===================================
_______________________________ test_fails_once ________________________________
E       AssertionError: store timed out after 30s waiting for rank 1

test_flaky_assert.py:12: AssertionError
=========================== short test summary info ============================
FAILED test_flaky_assert.py::test_fails_once - AssertionError: store timed out ...
!!!!!!!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!!!!!!!!
========================= 1 failed, 1 passed in 5.66s ==========================
Got exit code 1
Retrying single test...
============================= test session starts ==============================
test_flaky_assert.py::test_fails_once PASSED                             [100%]

============================== 1 passed in 5.60s ===============================
Test succeeeded in new process, continuing with the rest of the tests
The following tests failed and then succeeded when run in a new process['test_flaky_assert.py::test_fai\
ls_once']
"""


def test_a_failure_its_rerun_passed_is_a_notice():
    findings = scan({"ci.log": FAILED_FIRST})
    assert [(f.rule, f.severity.value, f.line, f.test) for f in findings] == [
        ("pytest-test-outcome", "notice", 2, "test_flaky_assert.py::test_fails_once"),
    ]
    assert findings[0].message == "test_flaky_assert.py::test_fails_once failed, then passed when re-run"


def test_a_list_spelled_from_the_repository_root_names_the_same_test():
    # run_test.py lists node ids from the repository's root; pytest -v, run in test/, prints them from there
    # (pytorch/test-infra's log-classifier fixture gha_timeout.txt: "...in a new process['test/test_xpu_...")
    listed = LISTED.replace("['", "['test/")
    findings = scan({"ci.log": FIRST_RUN + listed})
    assert [(f.rule, f.severity.value) for f in findings] == [
        ("fatal-python-error", "notice"), ("process-exitcode-signal", "notice"),
    ]
