"""Ranking: findings that explain. Logs go through the real engine and the real built-in catalogue.

Log snippets are cut from the fixtures (fixtures/torch, fixtures/multiprocessing, fixtures/pytest) so
the wordings are real; each test changes only what it is about.
"""

from __future__ import annotations

import io
import time
from typing import Dict, List, Sequence

import pytest

from analyzer.model import Finding, Kind, Severity
from analyzer.rules.config import parse_config, parse_yaml
from analyzer.rules.loader import apply_config, load_catalogue
from analyzer.rules.model import Catalogue
from analyzer.scan import scan_sources
from analyzer.scan.match import Match
from analyzer.scan.rank import format_message, rank_findings
from analyzer.scan.sources import Source

BUILTIN = load_catalogue()
RULES = {rule.id: rule for rule in BUILTIN.rules}

TORCHRUN = """\
rank 1: all_reduce ok, sum=8.0 timeout=1800
[rank1]: Traceback (most recent call last):
[rank1]:   File "/tmp/ghg-fixtures/torch/train_fail.py", line 13, in main
[rank1]:     raise RuntimeError("loss is NaN at step 3")
[rank1]: RuntimeError: loss is NaN at step 3
rank 0: all_reduce ok, sum=8.0 timeout=1800
@CLOSING@
@FAILED@
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train_fail.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-30_22:40:00
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 27600)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 27600
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-30_22:40:00
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 27601)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""
TORCHRUN = TORCHRUN.replace(
    "@CLOSING@",
    "W1130 22:40:00.577000 27418 torch/distributed/elastic/multiprocessing/api.py:1028] "
    "Sending process 27600 closing signal SIGTERM",
).replace(
    "@FAILED@",
    "E1130 22:40:00.596000 27418 torch/distributed/elastic/multiprocessing/api.py:1002] "
    "failed (exitcode: 1) local_rank: 1 (pid: 27601) of binary: /tmp/torchvenv/bin/python",
)

MP_TERMINATE = """\
Process Worker-1:
Traceback (most recent call last):
  File "/usr/lib/python3.11/multiprocessing/process.py", line 314, in _bootstrap
    self.run()
ValueError: shard 7 is corrupt
Worker-2 still alive after join(timeout=2.0); calling terminate()
Worker-2 exitcode: -15
"""

PYTEST_GREEN = """\
============================= test session starts ==============================
test_hang.py::test_timeout PASSED                                        [ 50%]
test_hang.py::test_sigterm_handling PASSED                               [100%]
============================== 2 passed in 0.01s ===============================
"""

PYTEST_STUCK = """\
============================= test session starts ==============================
test_hang.py::test_timeout PASSED                                        [ 50%]
test_hang.py::test_all_reduce_hangs \
"""

HANG = Finding(
    kind=Kind.HANG,
    rule="guard-timeout",
    severity=Severity.ERROR,
    path="guard-logs/stacks.txt",
    line=0,
    message="hung in wait (threading.py:320) for 10m",
    excerpt="Thread 0x1 (idle): wait (threading.py:320)",
)


def scan(
    logs: Dict[str, str], catalogue: Catalogue = BUILTIN, guard: Sequence[Finding] = ()
) -> List[Finding]:
    sources = [
        Source(display_path=path, opener=lambda text=text: io.BytesIO(text.encode("utf-8")))
        for path, text in logs.items()
    ]
    return scan_sources(sources, catalogue, guard_findings=guard, engine="python")


def configured(text: str) -> Catalogue:
    return apply_config(BUILTIN.rules, parse_config(parse_yaml(text, "ci.yml"), "ci.yml"))


def summary(findings: Sequence[Finding]) -> List[tuple]:
    return [(f.rule, f.severity.value, f.line) for f in findings]


# -- root cause and collateral --------------------------------------------------------------------


def test_torchrun_root_cause_first_and_the_killed_rank_is_collateral():
    findings = scan({"job.log": TORCHRUN})
    assert summary(findings) == [
        ("torchrun-root-cause", "error", 22),
        ("torchrun-signal-exit", "warning", 18),
    ]
    root, killed = findings
    assert root.kind is Kind.WORKER_FAILURE
    assert killed.message == (
        "torchrun: worker pid 27600 died with exit code -15 (Signal 15 (SIGTERM) received by PID 27600); "
        "collateral: it followed the shutdown at line 7 (torchrun sent SIGTERM to worker 27600); "
        f"root cause at line 22: {root.message[:119]}\u2026"
    )


def test_a_rank_traceback_is_attached_to_that_rank_failure():
    root = scan({"job.log": TORCHRUN})[0]
    assert root.message == (
        "torchrun: the first observed failure (root cause) was worker pid 27601, exit code 1; "
        "rank 1 raised RuntimeError: loss is NaN at step 3"
    )
    report, attached = root.excerpt.split("\n--- traceback of rank 1 (job.log:2) ---\n")
    assert (
        report.startswith("Root Cause (first observed failure):") and "exitcode  : 1 (pid: 27601)" in report
    )
    assert attached.splitlines()[0] == "[rank1]: Traceback (most recent call last):"
    assert attached.splitlines()[-1] == "[rank1]: RuntimeError: loss is NaN at step 3"


def test_another_rank_traceback_is_not_attached():
    findings = scan({"job.log": TORCHRUN.replace("[rank1]:", "[rank3]:")})
    assert "raised" not in findings[0].message and "--- traceback" not in findings[0].excerpt


def test_multiprocessing_terminate_makes_the_signal_exit_collateral():
    findings = scan({"mp.log": MP_TERMINATE})
    assert summary(findings) == [
        ("mp-process-traceback", "error", 1),
        ("process-exitcode-signal", "warning", 7),
    ]
    assert findings[1].message == (
        "a process exited with code -15: killed by signal 15; collateral: it followed the shutdown at line 6 "
        "(a parent called terminate() on its workers); root cause at line 1: worker process Worker-1 died "
        "with ValueError: shard 7 is corrupt"
    )


def test_a_signal_exit_before_the_shutdown_is_not_collateral():
    log = "Worker-2 exitcode: -15\nWorker-2 still alive after join(timeout=2.0); calling terminate()\n"
    assert summary(scan({"mp.log": log})) == [("process-exitcode-signal", "error", 1)]


def test_a_shutdown_in_another_log_does_not_make_collateral():
    logs = {
        "a.log": "Worker-2 still alive after join(timeout=2.0); calling terminate()\n",
        "b.log": "Worker-2 exitcode: -15\n",
    }
    assert summary(scan(logs)) == [("process-exitcode-signal", "error", 1)]


def test_collateral_with_no_root_cause_keeps_its_severity_so_the_run_still_fails():
    findings = scan({"mp.log": "calling terminate()\nWorker-2 exitcode: -9\n"})
    assert summary(findings) == [("process-exitcode-signal", "error", 2)]
    assert findings[0].message.endswith(
        "; it followed the shutdown at line 1 (a parent called terminate() on its workers), "
        "but no other failure was found"
    )


def test_a_guard_hang_is_the_root_cause_the_collateral_points_at():
    findings = scan({"stderr.log": "calling terminate()\nWorker-2 exitcode: -15\n"}, guard=[HANG])
    assert summary(findings) == [("guard-timeout", "error", 0), ("process-exitcode-signal", "warning", 2)]
    assert findings[1].message.endswith(
        "root cause at guard-logs/stacks.txt: hung in wait (threading.py:320) for 10m"
    )


def test_root_cause_rule_outranks_earlier_errors_then_time_then_severity():
    log = (
        # a warning
        "2024-01-09T18:41:23.1234567Z UserWarning: CUDA initialization: Unexpected error from"
        " cudaGetDeviceCount(). Error 804: forward compatibility was attempted on non supported HW\n"
        "Fatal Python error: Segmentation fault\n" + TORCHRUN  # error, earliest
    )
    findings = scan({"job.log": log})
    assert [f.rule for f in findings] == [
        "torchrun-root-cause",
        "fatal-python-error",
        "cuda-init-warning",
        "torchrun-signal-exit",
    ]
    assert [f.severity for f in findings] == [
        Severity.ERROR,
        Severity.ERROR,
        Severity.WARNING,
        Severity.WARNING,
    ]


def test_errors_in_time_order_and_guard_findings_after_the_log_errors():
    log = "Fatal Python error: Aborted\nCUDA error: an illegal memory access was encountered\n"
    findings = scan({"stderr.log": log}, guard=[HANG])
    assert [f.rule for f in findings] == ["fatal-python-error", "cuda-error", "guard-timeout"]


def test_after_a_guard_kill_signal_exits_before_the_logs_last_error_come_after_the_hang():
    log = "Worker-2 exitcode: -15\nFatal Python error: Aborted\n"
    findings = scan({"stderr.log": log}, guard=[HANG])
    assert [f.rule for f in findings] == ["fatal-python-error", "guard-timeout", "process-exitcode-signal"]
    assert all(f.severity is Severity.ERROR for f in findings)


def test_a_sigterm_death_after_the_logs_last_error_is_the_guards_kill_told_by_its_finding():
    log = "Fatal Python error: Aborted\nWorker-2 exitcode: -15\n"
    findings = scan({"stderr.log": log}, guard=[HANG])
    assert [f.rule for f in findings] == ["fatal-python-error", "guard-timeout"]
    assert "; the log tells the guard's kill: " in findings[1].message
    assert findings[1].message.endswith("(stderr.log:2)")


# -- one finding per event ------------------------------------------------------------------------


def test_a_block_is_one_finding_whose_excerpt_is_the_whole_block():
    log = (
        "Exception ignored in atexit callback <function _prepare_to_exit at 0x7f3a2c1b0e00>:\n"
        "Traceback (most recent call last):\n"
        '  File "/tmp/x.py", line 5, in _prepare_to_exit\n'
        '    raise RuntimeError("process group was destroyed twice")\n'
        "RuntimeError: process group was destroyed twice\n"
    )
    (finding,) = scan({"py313.log": log})
    assert finding.kind is Kind.ATEXIT_EXCEPTION and finding.line == 1
    assert finding.message == (
        "RuntimeError: process group was destroyed twice raised in atexit callback _prepare_to_exit; "
        "Python exits 0 anyway"
    )
    assert finding.excerpt == log.rstrip("\n")


def test_the_same_event_in_two_jobs_logs_is_two_findings():
    # A job log and its own step logs are never both read (analyzer.scan.sources skips the job file),
    # so two logs with the same failure are two jobs that failed, each worth its own finding.
    line = "2024-01-09T18:41:23.1234567Z Fatal Python error: Segmentation fault\n"
    findings = scan({"logs.zip!1_test (3.9).txt": "setup\n" + line, "logs.zip!2_test (3.12).txt": line})
    assert summary(findings) == [("fatal-python-error", "error", 2), ("fatal-python-error", "error", 1)]
    assert [f.path for f in findings] == ["logs.zip!1_test (3.9).txt", "logs.zip!2_test (3.12).txt"]


def test_a_rank_traceback_is_attached_only_from_the_failures_own_log():
    other_job = (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/w/train.py", line 13, in main\n'
        "[rank1]: RuntimeError: loss is NaN at step 3\n"
    )
    without_traceback = "".join(x for x in TORCHRUN.splitlines(True) if not x.startswith("[rank1]:"))
    findings = scan({"a.log": other_job, "b.log": without_traceback})
    root = next(f for f in findings if f.rule == "torchrun-root-cause")
    assert root.path == "b.log" and "loss is NaN" not in root.message and "loss is NaN" not in root.excerpt


def test_the_same_error_from_every_rank_is_one_finding_with_a_count():
    log = "".join(f"[rank{n}]: CUDA error: an illegal memory access was encountered\n" for n in range(4))
    findings = scan({"job.log": log})
    assert summary(findings) == [("cuda-error", "error", 1)]
    assert findings[0].message == (
        "CUDA error: an illegal memory access was encountered (seen 4 times: ranks 0, 1, 2, 3)")


def test_repeats_differing_only_in_an_address_fold_but_different_events_do_not():
    log = (
        "Exception ignored in atexit callback: <function f at 0x7f00>\nRuntimeError: a\n"
        "Exception ignored in atexit callback: <function f at 0x7f99>\nRuntimeError: a\n"
        "Exception ignored in atexit callback: <function f at 0x7f99>\nRuntimeError: b\n"
    )
    findings = scan({"x.log": log})
    assert [(f.line, f.message) for f in findings] == [
        (1, "RuntimeError: a raised in atexit callback f; Python exits 0 anyway (seen 2 times)"),
        (5, "RuntimeError: b raised in atexit callback f; Python exits 0 anyway"),
    ]


# -- hangs: at exit or in a test -----------------------------------------------------------------


def test_a_guard_hang_after_the_verdict_is_a_hang_at_interpreter_exit():
    (finding,) = scan({"stdout.log": PYTEST_GREEN}, guard=[HANG])
    assert finding.message == (
        "hung in wait (threading.py:320) for 10m after the test run printed its verdict "
        "(2 passed in 0.01s): a hang at interpreter exit (atexit handlers, non-daemon threads or "
        "child processes), not a test timeout"
    )
    assert (finding.kind, finding.path, finding.line, finding.excerpt) == (
        HANG.kind,
        HANG.path,
        0,
        HANG.excerpt,
    )


def test_a_unittest_verdict_counts_too():
    (finding,) = scan({"stdout.log": "....\nRan 4 tests in 0.120s\n\nOK\n"}, guard=[HANG])
    assert "after the test run printed its verdict (Ran 4 tests in 0.120s)" in finding.message


def test_a_guard_hang_during_a_test_names_the_test():
    (finding,) = scan({"stdout.log": PYTEST_STUCK}, guard=[HANG])
    assert finding.message == (
        "hung in wait (threading.py:320) for 10m; while test test_hang.py::test_all_reduce_hangs was running "
        "(started at stdout.log:3; it never reported an outcome)"
    )


def test_a_verdict_followed_by_a_new_test_run_is_not_the_end():
    (finding,) = scan({"stdout.log": PYTEST_GREEN + PYTEST_STUCK}, guard=[HANG])
    assert "verdict" not in finding.message
    assert (
        "while test test_hang.py::test_all_reduce_hangs was running (started at stdout.log:7"
        in finding.message
    )


def test_a_guard_hang_with_every_test_finished_and_no_verdict_is_left_as_it_is():
    log = PYTEST_GREEN.splitlines(keepends=True)[1]
    (finding,) = scan({"stdout.log": log}, guard=[HANG])
    assert finding == HANG


def test_a_log_timeout_after_the_verdict_is_described_as_a_hang_at_exit():
    after = PYTEST_GREEN + "Timeout (0:00:05)!\nThread 0x00007f (most recent call first):\n"
    before = "Timeout (0:00:05)!\nThread 0x00007f (most recent call first):\n" + PYTEST_GREEN
    (late,) = scan({"stderr.log": after})
    (early,) = scan({"stderr.log": before})
    assert late.kind is Kind.TIMEOUT and late.rule == "faulthandler-timeout"
    assert late.message.endswith(
        "; after the test run printed its verdict (2 passed in 0.01s): a hang at "
        "interpreter exit (atexit handlers, non-daemon threads or child processes), "
        "not a test timeout"
    )
    assert "verdict" not in early.message


# -- configuration: severities and ignores -------------------------------------------------------


def test_a_severity_override_applies_to_log_rules_and_guard_findings():
    catalogue = configured("severity: {fatal-python-error: notice, guard-timeout: warning}\n")
    findings = scan({"x.log": "Fatal Python error: Aborted\n"}, catalogue, guard=[HANG])
    assert summary(findings) == [("guard-timeout", "warning", 0), ("fatal-python-error", "notice", 1)]


def test_ignored_rules_drop_log_and_guard_findings():
    catalogue = configured("ignore: {rules: [fatal-python-error, guard-timeout]}\n")
    log = "Fatal Python error: Aborted\nCUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert [f.rule for f in scan({"x.log": log}, catalogue, guard=[HANG])] == ["cuda-out-of-memory"]


def test_ignored_paths_match_the_whole_reported_path_or_the_file_name():
    line = "Fatal Python error: Aborted\n"
    logs = {"logs.zip!build/3_Flaky.txt": line, "logs.zip!test/2_Run tests.txt": line.replace("Ab", "ab")}
    assert [f.path for f in scan(logs, configured("ignore: {paths: ['*!build/*']}\n"))] == [
        "logs.zip!test/2_Run tests.txt"
    ]
    assert [f.path for f in scan(logs, configured("ignore: {paths: ['2_Run*']}\n"))] == [
        "logs.zip!build/3_Flaky.txt"
    ]


def test_ignored_paths_do_not_drop_the_guard_findings():
    findings = scan(
        {"x.log": "Fatal Python error: Aborted\n"}, configured("ignore: {paths: ['*']}\n"), guard=[HANG]
    )
    assert findings == [HANG]


def test_ignored_lines_match_the_cleaned_line_optionally_per_rule():
    log = "2024-01-09T18:41:23.1234567Z Fatal Python error: Aborted\nCUDA error: unspecified launch failure\n"
    catalogue = configured("ignore: {lines: ['^Fatal Python error: Abort']}\n")
    assert [f.rule for f in scan({"x.log": log}, catalogue)] == ["cuda-error"]
    catalogue = configured("ignore: {lines: [{pattern: 'Abort|launch', rules: [cuda-error]}]}\n")
    assert [f.rule for f in scan({"x.log": log}, catalogue)] == ["fatal-python-error"]


def test_an_ignored_line_pattern_is_searched_in_every_line_of_a_block():
    log = (
        "Exception ignored in atexit callback: <function f at 0x7f>\nwandb.errors.CommError: upload failed\n"
    )
    assert scan({"x.log": log}, configured("ignore: {lines: ['^wandb\\.errors']}\n")) == []
    assert len(scan({"x.log": log}, configured("ignore: {lines: ['^nothing']}\n"))) == 1


def test_an_ignore_line_pattern_that_times_out_ignores_nothing_and_stops_costing_time():
    log = "".join(f"CUDA error: {'a' * 40}! {n}\n" for n in range(20))
    catalogue = configured("match_timeout: 50ms\nignore: {lines: ['(a|aa)+$']}\n")
    started = time.monotonic()
    findings = scan({"x.log": log}, catalogue)
    assert len(findings) == 20 and all(f.rule == "cuda-error" for f in findings)
    assert time.monotonic() - started < 30  # generous; without the timeout one search takes years


def test_a_catastrophic_user_rule_is_cut_off_by_the_timeout_and_the_scan_goes_on():
    catalogue = configured(
        "match_timeout: 50ms\n"
        "rules:\n"
        "  - {id: slow-rule, kind: hang, severity: error, message: slow, doc: d, pattern: '^(a|aa)+$'}\n"
        "  - {id: our-deadlock, kind: hang, severity: error, message: 'deadlock in {where}', doc: d,"
        " pattern: 'DEADLOCK in (?P<where>\\w+)'}\n"
    )
    log = (
        "".join(f"{'a' * 40}!\n" for _ in range(50)) + "DEADLOCK in allreduce\nFatal Python error: Aborted\n"
    )
    started = time.monotonic()
    findings = scan({"x.log": log}, catalogue)
    # Whether slow-rule also spends its whole-scan match_budget (a scan-incomplete warning) depends on
    # the machine's speed; either way the other rules keep matching.
    findings = [f for f in findings if f.kind is not Kind.SCAN_INCOMPLETE]
    assert [(f.rule, f.message) for f in findings] == [
        ("our-deadlock", "deadlock in allreduce"),
        ("fatal-python-error", "Fatal Python error: Aborted"),
    ]
    assert time.monotonic() - started < 30


# -- messages ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template, groups, expected",
    [
        ("worker {pid} died", {"pid": "12"}, "worker 12 died"),
        ("worker {pid} died", {}, "worker ? died"),
        ("worker {pid} died", {"pid": None}, "worker ? died"),
        ("ended with {code_exit}", {"code": "-15"}, "ended with exit -15 (SIGTERM)"),
        ("ended with {code_exit}", {"code": "137"}, "ended with exit 137 (SIGKILL)"),
        ("ended with {code_exit}", {"code": "lots"}, "ended with lots"),
        ("ended with {code_exit}", {}, "ended with ?"),
        ("a {x} b", {"x": "two\nlines"}, "a two lines b"),
        ("{x}", {"x": "y" * 500}, "y" * 199 + "\u2026"),
        ("broken {x", {"x": "1"}, "broken {x"),
        ("{{literal}} {x}", {"x": "1"}, "{literal} 1"),
        ("aborted on rank {rank}{reason:: {}}", {"rank": "1", "reason": "NCCL error"},
         "aborted on rank 1: NCCL error"),
        ("aborted on rank {rank}{reason:: {}}", {"rank": "1"}, "aborted on rank 1"),
        ("aborted on rank {rank}{reason:: {}}", {"rank": "1", "reason": ""}, "aborted on rank 1"),
        ("exited{code_exit: with {}}", {"code": "-9"}, "exited with exit -9 (SIGKILL)"),
        ("killed by {code_wstatus}", {"code": "9"}, "killed by signal 9 (SIGKILL)"),
        ("killed by {code_wstatus}", {"code": "134"}, "killed by signal 6 (SIGABRT), core dumped"),
        ("ended{code_wstatus:: {}|}", {}, "ended"),
        ("a{x: ({}) {}}", {"x": "1"}, "a (1) {}"),
        ("ctest: {test:test {}|a test} hit its timeout", {"test": "t1"}, "ctest: test t1 hit its timeout"),
        ("ctest: {test:test {}|a test} hit its timeout", {}, "ctest: a test hit its timeout"),
    ],
)
def test_format_message_never_raises(template, groups, expected):
    assert format_message(template, groups) == expected


def test_matches_built_by_hand_rank_the_same_way():
    """The contract with the engine is only Match; seq, not arrival order, is time."""
    rule = RULES["cuda-error"]
    later = Match(rule, "a.log", 9, 9, "CUDA error: b", "CUDA error: b", seq=5, groups={"error": "b"})
    earlier = Match(rule, "a.log", 3, 3, "CUDA error: a", "CUDA error: a", seq=2, groups={"error": "a"})
    findings = rank_findings([later, earlier], BUILTIN)
    assert [(f.line, f.message) for f in findings] == [(3, "CUDA error: a"), (9, "CUDA error: b")]
