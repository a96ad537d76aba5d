"""Test attribution: which test an event happened in, how that test ended, and what that makes of it.

The logs are written the way pytest 8 (``-v``, ``-s``, ``-rA``, xdist) and unittest (``-v``, Python
3.8 and 3.11+ spellings) print them; the events are the catalogue's own wordings. Every scenario runs
through the whole pipeline (real engine, real catalogue) on both engines and in tiny read windows, so
attribution that depends on where a window happens to end shows up as a failure.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Sequence

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from analyzer.model import Finding, Kind, Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import LogScan, combine, scan_sources
from analyzer.scan import engine as engine_module
from analyzer.scan.attribution import parse_progress
from analyzer.scan.sources import Source
from analyzer.verdict import decide
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()

HANG = Finding(
    kind=Kind.HANG, rule="guard-timeout", severity=Severity.ERROR, path="guard-logs/stacks.txt", line=0,
    message="hung in wait (threading.py:320) for 10m",
)

# pytest -v -s: a test whose child the test expects to abort, then passes. (pytest ends a node id
# with a space; the lines here do not, which attribution must not care about.)
HANDLED_IN_PASSING_TEST = """\
============================= test session starts ==============================
collected 2 items

tests/test_fh.py::test_child_abort
Fatal Python error: Aborted

PASSED
tests/test_fh.py::test_other PASSED                                      [100%]

============================== 2 passed in 0.31s ===============================
"""

CRASH_IN_FAILED_TEST = """\
============================= test session starts ==============================
tests/test_dist.py::test_warmup PASSED                                   [ 50%]
tests/test_dist.py::test_handoff
CUDA error: an illegal memory access was encountered
FAILED

=================================== FAILURES ===================================
_________________________________ test_handoff _________________________________

    def test_handoff():
>       assert False
E       assert False

tests/test_dist.py:9: AssertionError
=========================== short test summary info ============================
FAILED tests/test_dist.py::test_handoff - assert False
========================= 1 failed, 1 passed in 0.52s ==========================
"""

ONLY_A_FAILED_TEST = """\
tests/test_x.py::test_ok PASSED                                          [ 50%]
tests/test_x.py::test_y FAILED                                           [100%]
=========================== short test summary info ============================
FAILED tests/test_x.py::test_y - AssertionError: 3 != 4
========================= 1 failed, 1 passed in 0.02s ==========================
"""

# Two test runs in one step: the first one's interpreter segfaults at exit, after its verdict.
EXIT_PATH_THEN_A_GREEN_RUN = """\
tests/test_a.py::test_a PASSED                                           [100%]
============================== 1 passed in 0.10s ===============================
Fatal Python error: Segmentation fault
tests/test_b.py::test_b PASSED                                           [100%]
============================== 1 passed in 0.10s ===============================
"""

# pytest -rA on pytest-timeout's own kind of test: an inner pytester run, printed in PASSES.
INNER_RUN_IN_A_PASSING_TEST = """\
tests/test_pt.py::test_timeout PASSED                                    [100%]

==================================== PASSES ====================================
_________________________________ test_timeout _________________________________
----------------------------- Captured stdout call -----------------------------
============================= test session starts ==============================
collected 1 item

test_timeout.py F                                                        [100%]

=================================== FAILURES ===================================
__________________________________ test_sleep __________________________________
Fatal Python error: Aborted
=========================== short test summary info ============================
FAILED test_timeout.py::test_sleep - Failed: Timeout >1.0s
============================== 1 failed in 1.02s ===============================
=========================== short test summary info ============================
PASSED tests/test_pt.py::test_timeout
============================== 1 passed in 1.50s ===============================
"""

UNITTEST_HANDLED = """\
test_abort_child (__main__.FaultHandlerTest) ...
Fatal Python error: Aborted

ok
test_other (__main__.FaultHandlerTest.test_other) ... ok

----------------------------------------------------------------------
Ran 2 tests in 0.020s

OK
"""

UNITTEST_FAILED = """\
test_a (m.T.test_a) ... FAIL

======================================================================
FAIL: test_a (m.T.test_a)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/w/m.py", line 3, in test_a
    self.assertEqual(1, 2)
AssertionError: 1 != 2

----------------------------------------------------------------------
Ran 1 test in 0.001s

FAILED (failures=1)
"""

# Three unittest scripts run by one shell step: the first one's test kills its interpreter.
UNITTEST_CRASH_THEN_GREEN = """\
test_x (a.T) ...
Fatal Python error: Segmentation fault

test_y (b.T) ... ok

----------------------------------------------------------------------
Ran 1 test in 0.100s

OK
"""

XDIST_CRASH = """\
[gw0] [ 50%] PASSED tests/test_n.py::test_alloc
Fatal Python error: Segmentation fault
[gw1] [100%] PASSED tests/test_n.py::test_other
============================== 2 passed in 0.81s ===============================
"""

PYTEST_STUCK = """\
============================= test session starts ==============================
test_hang.py::test_timeout PASSED                                        [ 50%]
test_hang.py::test_all_reduce_hangs
"""


def _sources(logs: Dict[str, str]) -> List[Source]:
    return [
        Source(display_path=path, opener=lambda text=text: io.BytesIO(text.encode("utf-8")))
        for path, text in logs.items()
    ]


def scan(logs: Dict[str, str], engine: str = "python", guard: Sequence[Finding] = ()) -> List[Finding]:
    return scan_sources(_sources(logs), BUILTIN, guard_findings=guard, engine=engine)


def summary(findings: Sequence[Finding]) -> List[tuple]:
    return [(f.rule, f.severity.value, f.line, f.test) for f in findings]


def pytest_log(where: Path, name: str, source: str, options: Sequence[str] = ("-v", "-rA")) -> str:
    """The log of a real ``pytest OPTIONS`` over ``source`` (written to ``where/name``), stdout and
    stderr on one pipe, at the 80 columns a CI terminal has."""
    (where / name).write_text(textwrap.dedent(source))
    env = dict(os.environ, COLUMNS="80")
    # pytest cuts a short-summary reason to the width only off CI (running_on_ci: CI or BUILD_NUMBER set)
    for name_ in ("PYTEST_ADDOPTS", "CI", "BUILD_NUMBER"):
        env.pop(name_, None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "-p", "no:cacheprovider", name],
        cwd=str(where), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, env=env,
    )
    return proc.stdout.decode("utf-8", "backslashreplace")


# A test that never reported, then another that passed, then a stray outcome word: the stray word
# belongs to the test after, not to the one the crash happened in.
NEVER_REPORTED_THEN_A_STRAY_OK = """\
tests/test_b.py::test_three
Fatal Python error: Segmentation fault
tests/test_a.py::test_one PASSED                                         [ 10%]
ok
tests/test_a.py::test_two
CUDA error: an illegal memory access was encountered
"""

SCENARIOS = {
    "never-reported-then-stray-ok": NEVER_REPORTED_THEN_A_STRAY_OK,
    "handled-in-passing-test": HANDLED_IN_PASSING_TEST,
    "crash-in-failed-test": CRASH_IN_FAILED_TEST,
    "only-a-failed-test": ONLY_A_FAILED_TEST,
    "exit-path-then-green": EXIT_PATH_THEN_A_GREEN_RUN,
    "inner-run": INNER_RUN_IN_A_PASSING_TEST,
    "unittest-handled": UNITTEST_HANDLED,
    "unittest-failed": UNITTEST_FAILED,
    "unittest-crash-then-green": UNITTEST_CRASH_THEN_GREEN,
    "xdist-crash": XDIST_CRASH,
}


def test_an_event_in_a_test_that_then_passed_is_a_notice_naming_the_test():
    (finding,) = scan({"job.log": HANDLED_IN_PASSING_TEST})
    assert summary([finding]) == [("fatal-python-error", "notice", 5, "tests/test_fh.py::test_child_abort")]
    assert finding.message.endswith(" during tests/test_fh.py::test_child_abort, which passed")
    assert decide([finding])[1] == 0


def test_an_event_in_a_failed_test_names_it_and_the_test_failure_ranks_after_it():
    findings = scan({"job.log": CRASH_IN_FAILED_TEST})
    assert summary(findings) == [
        ("cuda-error", "error", 4, "tests/test_dist.py::test_handoff"),
        ("pytest-test-outcome", "error", 16, "tests/test_dist.py::test_handoff"),
    ]
    crash, failed = findings
    assert crash.message.endswith(" during tests/test_dist.py::test_handoff")
    assert failed.kind is Kind.TEST_FAILURE
    assert failed.message == "tests/test_dist.py::test_handoff failed: assert False"


def test_a_log_whose_only_problem_is_a_failed_test_fails_naming_it():
    findings = scan({"job.log": ONLY_A_FAILED_TEST})
    assert summary(findings) == [("pytest-test-outcome", "error", 2, "tests/test_x.py::test_y")]
    assert findings[0].message == "tests/test_x.py::test_y failed: AssertionError: 3 != 4"
    assert decide(findings)[1] == 1


def test_an_exit_path_event_stays_an_error_even_when_a_green_run_follows():
    (finding,) = scan({"job.log": EXIT_PATH_THEN_A_GREEN_RUN})
    assert summary([finding]) == [("fatal-python-error", "error", 3, None)]


def test_an_inner_run_belongs_to_the_outer_test_its_failures_are_not_the_logs():
    (finding,) = scan({"job.log": INNER_RUN_IN_A_PASSING_TEST})
    # Named by the node id the short summary spells, not by the report header's bare name.
    assert summary([finding]) == [("fatal-python-error", "notice", 13, "tests/test_pt.py::test_timeout")]


def test_an_inner_verdict_is_not_the_outer_verdict_a_guard_hang_reads():
    (hang,) = scan({"stdout.log": INNER_RUN_IN_A_PASSING_TEST}, guard=[HANG])[:1]
    assert "(1 passed in 1.50s)" in hang.message


def test_an_inner_run_killed_before_its_verdict_does_not_swallow_the_outer_one():
    # pytest-timeout's thread method ends the inner run with os._exit: no inner verdict.
    log = (
        "tests/test_pt.py::test_thread PASSED                                     [100%]\n"
        "==================================== PASSES ====================================\n"
        "_________________________________ test_thread __________________________________\n"
        "----------------------------- Captured stdout call -----------------------------\n"
        "============================= test session starts ==============================\n"
        "test_thread.py \n"
        "+++++++++++++++++++++++++++++++++++ Timeout ++++++++++++++++++++++++++++++++++++\n"
        '  File "/tmp/pt/test_thread.py", line 8, in test_foo\n'
        "+++++++++++++++++++++++++++++++++++ Timeout ++++++++++++++++++++++++++++++++++++\n"
        "=========================== short test summary info ============================\n"
        "PASSED tests/test_pt.py::test_thread\n"
        "============================== 1 passed in 2.01s ===============================\n"
        "Exception ignored in atexit callback: <function f at 0x7f3a2c1b0e00>\n"
        "RuntimeError: boom\n"
    )
    findings = scan({"job.log": log})
    assert summary(findings) == [
        ("atexit-callback-ignored", "error", 13, None),
        ("pytest-timeout-dump", "notice", 7, "tests/test_pt.py::test_thread"),
    ]
    (hang,) = scan({"job.log": log}, guard=[HANG])[1:2]
    assert "(1 passed in 2.01s)" in hang.message


def test_unittest_verbose_lines_attribute_and_their_outcome_handles():
    (finding,) = scan({"job.log": UNITTEST_HANDLED})
    assert summary([finding]) == [
        ("fatal-python-error", "notice", 2, "test_abort_child (__main__.FaultHandlerTest)")
    ]


def test_a_unittest_failure_header_is_a_test_failure_in_both_spellings():
    findings = scan({"job.log": UNITTEST_FAILED})
    assert summary(findings) == [("unittest-test-failed", "error", 4, "test_a (m.T)")]
    assert findings[0].message == "test_a (m.T) failed: AssertionError: 1 != 2"  # its report's traceback


def test_a_test_that_never_reported_an_outcome_keeps_its_event_an_error():
    (finding,) = scan({"job.log": UNITTEST_CRASH_THEN_GREEN})
    assert summary([finding]) == [("fatal-python-error", "error", 2, "test_x (a.T)")]


def test_after_its_test_passed_an_event_is_handled_only_if_the_run_lived_to_its_verdict():
    log = "tests/t.py::test_a PASSED                   [100%]\nFatal Python error: Aborted\n"
    (died,) = scan({"job.log": log})
    assert summary([died]) == [("fatal-python-error", "error", 2, "tests/t.py::test_a")]
    (lived,) = scan({"job.log": log + "========= 1 passed in 0.10s =========\n"})
    assert summary([lived]) == [("fatal-python-error", "notice", 2, "tests/t.py::test_a")]


def test_an_outcome_word_after_the_next_test_started_is_not_the_crashed_tests():
    findings = scan({"job.log": NEVER_REPORTED_THEN_A_STRAY_OK})
    assert summary(findings) == [
        ("fatal-python-error", "error", 2, "tests/test_b.py::test_three"),
        ("cuda-error", "error", 6, "tests/test_a.py::test_two"),
    ]


def test_xdist_lines_say_nothing_about_the_lines_after_them():
    (finding,) = scan({"job.log": XDIST_CRASH})
    assert summary([finding]) == [("fatal-python-error", "error", 2, None)]


def test_the_guard_hang_records_the_running_test():
    (finding,) = scan({"stdout.log": PYTEST_STUCK}, guard=[HANG])
    assert finding.test == "test_hang.py::test_all_reduce_hangs"
    assert "while test test_hang.py::test_all_reduce_hangs was running (started at stdout.log:3" in (
        finding.message
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_attribution_is_the_same_on_both_engines_and_in_tiny_windows(name, engine, monkeypatch):
    expected = scan({"job.log": SCENARIOS[name]}, engine="python")
    assert scan({"job.log": SCENARIOS[name]}, engine=engine) == expected
    monkeypatch.setattr(engine_module, "READ_SIZE", 7)
    assert scan({"job.log": SCENARIOS[name]}, engine=engine) == expected


# -- bounded state: folding, the cap, live events, clocks -----------------------------------------


def test_distinct_findings_are_capped_per_rule_and_the_drop_is_said():
    from analyzer.scan.state import MAX_PER_RULE

    log = "".join(f"Fatal Python error: Segmentation fault in worker {n}\n" for n in range(MAX_PER_RULE + 50))
    findings = scan({"job.log": log})
    crashes = [f for f in findings if f.rule == "fatal-python-error"]
    (note,) = [f for f in findings if f.kind is Kind.SCAN_INCOMPLETE]
    assert len(crashes) == MAX_PER_RULE and findings[-1] == note
    assert (note.severity, note.path) == (Severity.WARNING, "job.log")
    assert "50 more distinct findings of fatal-python-error were not kept" in note.message


def test_repeats_fold_as_they_come_and_count():
    log = "Fatal Python error: Aborted\n" * 5000
    (finding,) = scan({"job.log": log})
    assert finding.message.endswith("(seen 5000 times)") and finding.line == 1


def test_a_live_scan_reports_each_event_once_as_it_is_first_seen():
    seen: List[Finding] = []
    (source,) = _sources({"job.log": CRASH_IN_FAILED_TEST + "Fatal Python error: Aborted\n" * 3})
    scan_one = LogScan(source, BUILTIN, engine="python", on_event=seen.append)
    scan_one.run()
    assert [(f.rule, f.line, f.test) for f in seen] == [
        ("cuda-error", 4, "tests/test_dist.py::test_handoff"),
        ("pytest-test-outcome", 16, "tests/test_dist.py::test_handoff"),
        ("fatal-python-error", 18, None),
    ]
    findings = combine([scan_one.result()], BUILTIN)
    assert [f.rule for f in findings] == ["cuda-error", "fatal-python-error", "pytest-test-outcome"]


def test_line_clocks_order_two_logs_by_arrival():
    logs = {
        "stdout.log": "setup\nCUDA error: unspecified launch failure\n",
        "stderr.log": "Fatal Python error: Aborted\n",
    }
    in_order = scan({"stdout.log": logs["stdout.log"], "stderr.log": logs["stderr.log"]})
    assert [f.path for f in in_order] == ["stdout.log", "stderr.log"]
    clocks = {"stdout.log": lambda line: 10.0 + line, "stderr.log": lambda line: 5.0}
    by_time = scan_sources(_sources(logs), BUILTIN, engine="python", line_clocks=clocks)
    assert [f.path for f in by_time] == ["stderr.log", "stdout.log"]


# -- property: attribution never depends on where a read window ends --------------------------------

LINES = [
    "tests/test_a.py::test_one ",
    "tests/test_a.py::test_one PASSED                                        [ 10%]",
    "tests/test_a.py::test_two FAILED                                        [ 20%]",
    "tests/test_b.py::test_three[p-1] ",
    "[gw1] [ 30%] PASSED tests/test_b.py::test_three[p-1]",
    "PASSED",
    "FAILED",
    "test_x (m.T) ... ",
    "test_x (m.T) ... ok",
    "ok",
    "FAIL: test_x (m.T)",
    "Fatal Python error: Aborted",
    "Fatal Python error: Segmentation fault",
    "Current thread 0x00007f3a2c1d0e50 (most recent call first):",
    '  File "/w/x.py", line 3 in f',
    "CUDA error: an illegal memory access was encountered",
    "=================================== FAILURES ===================================",
    "==================================== PASSES ====================================",
    "_________________________________ test_two _________________________________",
    "============================= test session starts ==============================",
    "=========================== short test summary info ============================",
    "FAILED tests/test_a.py::test_two - assert False",
    "============================== 2 passed in 0.10s ===============================",
    "========================= 1 failed, 1 passed in 0.52s ==========================",
    "Ran 2 tests in 0.020s",
    "OK",
    "",
    "noise line",
]
TEST_LOGS = st.lists(st.sampled_from(LINES), max_size=40).map(lambda lines: "".join(x + "\n" for x in lines))


@settings(max_examples=100, deadline=None)
@given(log=TEST_LOGS, size=st.sampled_from([7, 64, 301]))
# Found by hypothesis: a crash in a test whose own xdist report (PASSED) is the next line was handled in
# small windows only; in one window the report was read as another test's start.
@example(
    log="tests/test_b.py::test_three[p-1] \nFatal Python error: Aborted\n"
        "[gw1] [ 30%] PASSED tests/test_b.py::test_three[p-1]\nFAIL: test_x (m.T)\n",
    size=7,
)
# Found by hypothesis: a log ending in a FAILURES section named its header's test by the node id after it
# only when that id was in the log's last window (it was looked for once the log had ended).
@example(
    log="=================================== FAILURES ===================================\n"
        "_________________________________ test_two _________________________________\n"
        "FAILED tests/test_a.py::test_two - assert False\ntests/test_a.py::test_one \n",
    size=7,
)
def test_random_test_logs_attribute_the_same_in_any_window_and_on_both_engines(log, size):
    expected = scan({"job.log": log}, engine="python")
    for engine in ENGINES:
        assert scan({"job.log": log}, engine=engine) == expected
    saved = engine_module.READ_SIZE
    engine_module.READ_SIZE = size
    try:
        for engine in ENGINES:
            assert scan({"job.log": log}, engine=engine) == expected
    finally:
        engine_module.READ_SIZE = saved


# A parametrize id with spaces: the node id runs to its closing bracket, in the -v line and the summary.
SPACED_IDS = """
    import sys

    import pytest


    @pytest.mark.parametrize("backend", ["gloo over tcp", "nccl"])
    def test_store(backend):
        if backend == "nccl":
            sys.stderr.write("Fatal Python error: Aborted\\n")
            return
        assert backend == "nccl", "store closed"
"""


def test_a_parametrize_id_with_spaces_is_named_whole(tmp_path):
    findings = scan({"job.log": pytest_log(tmp_path, "test_spaced.py", SPACED_IDS)})
    failed = [f for f in findings if f.kind is Kind.TEST_FAILURE]
    assert [(f.test, f.message) for f in failed] == [(
        "test_spaced.py::test_store[gloo over tcp]",
        "test_spaced.py::test_store[gloo over tcp] failed: AssertionError: store closed",
    )]
    # the handled abort in the passing twin stays a notice of that twin
    handled = [(f.rule, f.severity.value) for f in findings if f not in failed]
    assert handled == [("fatal-python-error", "notice")]


@pytest.mark.parametrize(
    "raw, test",
    [
        # Markdown's bold cut out of the middle by cleaning joins ".py" and "::": the cheap word check
        # before cleaning (``_may_be_progress``) must see through it.
        (b"**tests/test_a.py**::test_x PASSED", "tests/test_a.py::test_x"),
        (b"__tests/test_a.py::test_x__ PASSED", "tests/test_a.py::test_x"),
        (b"2024-01-09T10:00:00.0000000Z tests/test_a.py::test_x FAILED", "tests/test_a.py::test_x"),
        (b"[gw1] [ 50%] PASSED tests/test_a.py::test_x", "tests/test_a.py::test_x"),
        (b"0:00:01 load avg: 1.00 [ 1/3] test_os", "test_os"),
        (b"test_m (mod.C) ... ok", "test_m (mod.C)"),
        # A traceback's code line ends in ")" (the docstring needle) and holds "**": no progress line.
        (b"    out = forward_call(*args, **kwargs)", None),
    ],
)
def test_progress_words_checked_before_cleaning(raw, test):
    parsed = parse_progress(raw)
    assert (parsed[0] if parsed else None) == test


def test_a_node_id_in_the_runners_echo_of_the_script_is_no_test_starting():
    # A terminal copy of a GitHub job log cuts the echoed command ("python -m pytest tests/t.py::test_a")
    # so that the node id is a row of its own inside ##[group]Run ... ##[endgroup]. Read as test_a
    # starting, the outer session's own start counted as one inside test_a, and test_a's PASSED was taken
    # for its inner session's (inner15's fixture at 80 columns).
    from analyzer.scan.attribution import _last_progress

    echo = b"##[group]Run python -m pytest -v -s\ntests/t.py::test_a\nshell: bash -e {0}\n"
    run = b"##[endgroup]\n== test session starts ==\ntests/t.py::test_a \n"
    assert _last_progress(echo, len(echo)) is None
    found = _last_progress(echo + run, len(echo + run))
    assert found is not None and found[0] == len(echo) + run.index(b"tests/t.py")
    # The same row with no script echo around it is a test starting.
    alone = b"tests/t.py::test_a\n"
    assert _last_progress(alone, len(alone)) is not None


# Pieces of lines that _parse_at reads as progress lines or unittest docstring heads, and of lines it
# does not: Markdown's markers between the bytes of a word, a code line ending in ")".
_LINE_PIECES = st.sampled_from([
    b"tests/t.py::test_a", b".py", b"::", b"[gw0] [ 50%] PASSED ", b"[g", b"w", b"] test_os", b"]", b" test",
    b" ...", b" ok", b"test_m (mod.C)", b"test_m", b" (", b"(", b")", b"*", b"**", b"_", b"__", b" ", b"x",
    b".", b"\r", b"2024-01-09T10:00:00.0000000Z ", b"0:00:01 load avg: 1.00 [ 1/3]",
    b"forward_call(**kwargs)",
])


@given(st.lists(_LINE_PIECES, max_size=8), st.lists(_LINE_PIECES, max_size=4))
@example([b"test_m (mod.C)"], [b"Docstring", b" ...", b" ok"])
@example([b"**", b"tests/t.py", b"**", b"::test_a PASSED"], [])
@example([b"test_m", b" _", b"_", b"(mod.C)"], [b"doc", b" ...", b" ok"])
@example([b"::", b"_"], [])
@example([b"**", b"::", b"_"], [])
@settings(max_examples=300, deadline=None)
def test_a_line_that_parses_is_never_rejected_unread(head, doc):
    # _last_progress rejects a candidate line with one C search (_MAY_PARSE) before _parse_at: it must
    # let through every candidate that _parse_at reads as a progress line or a docstring head. A no-path
    # needle's candidate ("::_", "x ::t") skips that search (pyargs25 left "::" out of _MAY_PARSE for
    # speed); a line no needle finds ("**::_") is no candidate.
    from analyzer.scan.attribution import _MAY_PARSE, NEEDLES, NO_PATH_NEEDLES, _parse_at

    line = b"".join(head)
    buf = line + b"\n" + b"".join(doc) + b"\n"
    found_by = [needle for needle in NEEDLES if needle in b"\n" + line + b"\n"]
    if found_by and _parse_at(buf, 0, len(line)) is not None:
        by_no_path_needle = any(needle in NO_PATH_NEEDLES for needle in found_by)
        assert by_no_path_needle or _MAY_PARSE.search(buf, 0, len(line)) is not None


@given(st.lists(st.sampled_from([b" FAILURES =", b" FAILURES", b" =", b"=", b"\n", b"x" * 7]), max_size=30),
       st.lists(st.integers(min_value=0, max_value=400), max_size=12))
@example([b"x" * 7, b" FAILURES =", b" FAILURES =", b"\n"], [0, 5, 18, 29, 7])
@settings(max_examples=200, deadline=None)
def test_failures_header_read_forward_is_the_one_read_back(pieces, queries):
    # TestTracker._failures_before reads pytest's " FAILURES =" forward once per window; what it answers
    # for each match (in line order, or not) is the last one rfind finds before it.
    from analyzer.scan.attribution import FAILURES_NEEDLE, TestTracker

    buf = b"".join(pieces) + b"\n"
    tracker = TestTracker()
    tracker.at(buf, 0, 1)  # takes the window
    for lo in sorted(q % (len(buf) + 1) for q in queries) + [q % (len(buf) + 1) for q in queries]:
        assert tracker._failures_before(buf, lo) == buf.rfind(FAILURES_NEEDLE, 0, lo)


@given(st.lists(st.one_of(_LINE_PIECES, st.sampled_from([b"*", b"_", b"\n", b"[", b"]", b" ", b"(", b"g"])),
                max_size=24),
       st.integers(min_value=0, max_value=300), st.integers(min_value=0, max_value=300))
@example([b"] ", b"_", b"test"], 0, 300)
@example([b" *", b"(", b"\n"], 0, 300)
@example([b"::", b"TestC"], 0, 300)
@example([b"g", b"::", b"TestC"], 0, 300)
@example([b"\n", b"_", b"::", b"TestC"], 0, 300)
@settings(max_examples=500, deadline=None)
def test_a_span_may_parse_where_the_pattern_matches_it(pieces, start, end):
    # TestTracker.idle_through reads a span of many lines for _MAY_PARSE's words with the Markdown marks
    # deleted (perf27): it must say what the pattern's search of the span says, or where a no-path node
    # id may start ("::" at a line's start or after a blank: pyargs25's needles, which _MAY_PARSE leaves out).
    from analyzer.scan.attribution import _MAY_PARSE, _may_parse_within

    buf = b"".join(pieces)
    start, end = min(start, len(buf)), min(end, len(buf))
    no_path = re.search(rb"(?:\A|[\n ])::", buf[start:end].translate(None, b"*_")) is not None
    assert _may_parse_within(buf, start, end) is (_MAY_PARSE.search(buf, start, end) is not None or no_path)


@given(st.lists(st.one_of(_LINE_PIECES, st.sampled_from([b"\n", b")\n", b")\r\n", b" FAILED", b"\n\n"])),
                max_size=30),
       st.integers(min_value=0, max_value=400), st.integers(min_value=0, max_value=400), st.booleans())
@example([b"test_m (mod.C)", b")\n", b"Doc", b" ...", b" ok", b"\n"], 0, 400, False)
@example([b"tests/t.py::test_a", b"\n", b"forward_call(**kwargs)", b")\n"], 19, 400, True)
@example([b"x", b"\n", b"test_m", b"_", b"_", b"(mod.C)", b")\n", b"doc", b" ...", b" ok"], 1, 400, True)
@settings(max_examples=500, deadline=None)
def test_a_span_without_a_may_parse_word_holds_no_progress_line(pieces, floor, hi, floor_at_newline):
    # TestTracker.at skips _last_progress on a span where _may_parse_within finds no word (perf28): the
    # span runs from where it read to (a line start, or the "\n" before one) to a line's end, and every
    # line _last_progress parses lies within it.
    from analyzer.scan.attribution import _last_progress, _may_parse_within

    buf = b"".join(pieces) + b"\n"
    floor = buf.rfind(b"\n", 0, min(floor, len(buf)))
    floor = floor if floor_at_newline and floor != -1 else floor + 1
    hi = buf.find(b"\n", max(floor, min(hi, len(buf) - 1)))
    if not _may_parse_within(buf, floor, hi):
        assert _last_progress(buf, hi, floor) is None
