"""Without ``-v``, the letters pytest and unittest write after each test say how the test that printed an
event ended (``analyzer.scan.letters``), when they account for the run's verdict exactly.

Real runs: pytest 9 ``-q -s`` and ``-s`` and ``python -m unittest`` over suites whose passing tests print
events on purpose while another test fails. A test whose output looks like letters (``....`` before its
``F``) makes the letters outnumber the verdict: nothing is believed, every event stays an error.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.scan import letters as letters_module
from analyzer.scan.letters import ProgressLetters, speaker, verdict_letters
from tests.scan.test_attribution import scan, summary
from tests.scan.test_engine_helpers import ENGINES

TIMEOUT_LINE = "subprocess.TimeoutExpired: Command"
CRASH_LINE = "Fatal Python error: Segmentation fault"
SUITE = """
    import subprocess, sys, traceback

    def test_warm_up():
        assert True

    def test_timeout_handled():
        try:
            subprocess.run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
        except subprocess.TimeoutExpired:
            traceback.print_exc(file=sys.stdout)
            sys.stdout.flush()

    def test_child_crash_expected():
        code = "import ctypes; ctypes.string_at(0)"
        proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code])
        assert proc.returncode == EXPECTED

    def test_config():
        assert BROKEN == 0
"""
# The twin's extra test: its output ends in dots, then it fails ("....F").
DOTS = """
    def test_retry_dots():
        sys.stdout.write("....")
        sys.stdout.flush()
        assert False, "retries exhausted"
"""


def run(tmp_path: Path, argv: List[str], *, broken: int = 1, expected: int = -11, dots: bool = False) -> str:
    text = textwrap.dedent(SUITE).replace("BROKEN", str(broken)).replace("EXPECTED", str(expected))
    if dots:
        text += textwrap.dedent(DOTS)
    return run_suite(tmp_path, "test_events.py", text, argv)


def run_suite(tmp_path: Path, name: str, text: str, argv: List[str]) -> str:
    """The output of ``python ARGV`` run in ``tmp_path`` beside ``text`` saved as ``name``, at 80 columns."""
    (tmp_path / name).write_text(text)
    env = dict(os.environ, COLUMNS="80", PYTHONUNBUFFERED="1")
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run([sys.executable] + argv, cwd=str(tmp_path), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=120, env=env)
    return proc.stdout.decode("utf-8", "replace")


def line_of(log: str, text: str) -> int:
    return next(n for n, line in enumerate(log.splitlines(), 1) if text in line and not line.startswith("E "))


def severities(log: str, engine: str) -> dict:
    return {line: severity for rule, severity, line, _ in summary(scan({"job.log": log}, engine=engine))
            if rule != "pytest-test-outcome"}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", [["-q", "-s"], ["-s"], ["-s", "--color=yes", "--tb=short"]])
def test_events_of_passing_tests_are_notices_when_another_test_failed(tmp_path, engine, mode):
    log = run(tmp_path, ["-m", "pytest", "-p", "no:cacheprovider"] + mode + ["test_events.py"])
    # (no line names a test)
    assert "1 failed" in log and "3 passed" in log and "::test_timeout_handled " not in log
    found = scan({"job.log": log}, engine=engine)
    events = {line: (severity, test) for rule, severity, line, test in summary(found)
              if rule != "pytest-test-outcome"}
    assert events[line_of(log, TIMEOUT_LINE)] == ("notice", None)
    assert events[line_of(log, CRASH_LINE)] == ("notice", None)
    timeout = next(f for f in found if f.line == line_of(log, TIMEOUT_LINE))
    assert "during a test that passed (its progress letter at line " in timeout.message
    assert ("pytest-test-outcome", "error") in {(f.rule, f.severity.value) for f in found}


def test_the_pure_python_engine_finds_the_letters_without_hyperscan(tmp_path, monkeypatch):
    # --engine python is the column that must run where Hyperscan does not: its letters' hints are re's.
    log = run(tmp_path, ["-m", "pytest", "-p", "no:cacheprovider", "-q", "-s", "test_events.py"])

    def no_hyperscan():
        raise AssertionError("the python engine asked for Hyperscan's hints")

    monkeypatch.setattr(letters_module, "_hint_database", no_hyperscan)
    assert severities(log, "python")[line_of(log, TIMEOUT_LINE)] == "notice"


@pytest.mark.parametrize("engine", ENGINES)
def test_an_event_of_the_test_that_failed_stays_an_error(tmp_path, engine):
    # The crash's own test fails (it expected the child to exit 0): the letter after the crash is its F.
    log = run(tmp_path, ["-m", "pytest", "-p", "no:cacheprovider", "-q", "-s", "test_events.py"],
              broken=0, expected=0)
    assert "1 failed, 3 passed" in log
    found = severities(log, engine)
    assert found[line_of(log, CRASH_LINE)] == "error"
    assert found[line_of(log, TIMEOUT_LINE)] == "notice"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", [["-q", "-s"], ["-s"]])
def test_an_event_before_the_kth_f_is_the_kth_failure_reports_test(tmp_path, engine, mode):
    # Two tests fail (the crash's own, then test_config): the letter after the crash is the first F, and
    # the first failure reported is its test's; with output that looks like letters, no test is named.
    for dots, test in ((False, "test_events.py::test_child_crash_expected"), (True, None)):
        log = run(tmp_path, ["-m", "pytest", "-p", "no:cacheprovider"] + mode + ["test_events.py"],
                  broken=1, expected=0, dots=dots)
        assert ("3 failed" if dots else "2 failed, 2 passed") in log
        events = {line: (severity, name) for rule, severity, line, name
                  in summary(scan({"job.log": log}, engine=engine)) if rule != "pytest-test-outcome"}
        assert events[line_of(log, CRASH_LINE)] == ("error", test)
        assert events[line_of(log, TIMEOUT_LINE)] == ("error" if dots else "notice", None)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", [["-q", "-s"], ["-s"]])
def test_output_that_looks_like_letters_leaves_every_event_an_error(tmp_path, engine, mode):
    log = run(tmp_path, ["-m", "pytest", "-p", "no:cacheprovider"] + mode + ["test_events.py"], dots=True)
    assert "2 failed, 3 passed" in log and "....F" in log
    found = severities(log, engine)
    assert found[line_of(log, TIMEOUT_LINE)] == "error"
    assert found[line_of(log, CRASH_LINE)] == "error"


UNITTEST_SUITE = """
    import subprocess, sys, traceback, unittest

    class Cases(unittest.TestCase):
        def test_a_warm_up(self):
            pass

        def test_b_child_crash_expected(self):
            code = "import ctypes; ctypes.string_at(0)"
            proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code])
            self.assertEqual(proc.returncode, -11)

        def test_c_config(self):
            self.assertEqual(1, 0)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_unittest_without_v_letters_say_the_crash_was_handled(tmp_path, engine):
    (tmp_path / "test_cases.py").write_text(textwrap.dedent(UNITTEST_SUITE))
    proc = subprocess.run([sys.executable, "-m", "unittest", "test_cases"], cwd=str(tmp_path),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
                          env=dict(os.environ, PYTHONUNBUFFERED="1"))
    log = proc.stdout.decode("utf-8", "replace")
    assert "FAILED (failures=1)" in log and " ... " not in log
    assert severities(log, engine)[line_of(log, CRASH_LINE)] == "notice"


def test_letters_are_counted_against_the_verdict_line_by_line():
    # A window cut anywhere reads the same rows: feed the same log whole and a line at a time.
    log = (b"%s test session starts %s\ncollected 3 items\n\ntest_x.py Fatal Python error: Aborted\n\n"
           b".FProcess SpawnProcess-1:\nRuntimeError: lost\n.\n\n%s FAILURES %s\nE   assert 0\n") % (
               b"=" * 29, b"=" * 30, b"=" * 35, b"=" * 35)
    whole, pieces = ProgressLetters(), ProgressLetters()
    whole.feed(log, 1)
    for n, line in enumerate(log.splitlines(keepends=True), 1):
        pieces.feed(line, n)
    for letters in (whole, pieces):
        assert letters.passed_after(4, 12, "1 failed, 2 passed") == 6
        assert letters.passed_after(6, 12, "1 failed, 2 passed") == 8
        assert letters.passed_after(4, 12, "2 failed, 1 passed") is None  # the counts disagree


def test_only_the_last_event_before_an_unframed_runs_first_letter_is_its_first_tests():
    # pytest -q -s prints nothing before the first test's output: a crash the job printed before the run
    # (line 1, then the shell's report at 2) is not the first test's; the test's own event (3) is.
    log = b"Fatal Python error: Segmentation fault\nSegmentation fault (core dumped)\nTimeoutExpired\n..F\n"
    letters = ProgressLetters()
    letters.feed(log + b"%s FAILURES %s\n" % (b"=" * 35, b"=" * 35), 1)
    assert letters.passed_after(3, 6, "1 failed, 2 passed") == 4
    assert letters.passed_after(1, 6, "1 failed, 2 passed", next_event=2) is None
    assert letters.passed_after(2, 6, "1 failed, 2 passed", next_event=3) is None


def test_letters_behind_a_launchers_prefix_are_that_processs_run():
    # torchrun --tee writes its prefix again before each piece of a line it read (a real run here:
    # "[default0]:..[default0]:F"); docker compose interleaves services, each behind its own name.
    sep = b"=" * 35
    tee = b"[default0]:TimeoutExpired\n[default0]:..[default0]:F\n[default0]:%s FAILURES %s\n" % (sep, sep)
    letters = ProgressLetters()
    letters.feed(tee, 1)
    assert [r.rows for r in letters.regions] == [[(2, "..F")]]
    assert letters.passed_after(1, 9, "1 failed, 2 passed", who=speaker("[default0]:TimeoutExpired")) == 2
    compose = (b"\x1b[36mtests-1  | \x1b[0mTimeoutExpired\n\x1b[33mdb-1     | \x1b[0mFATAL: terminating\n"
               b"\x1b[36mtests-1  | \x1b[0m.\n\x1b[36mtests-1  | \x1b[0m.F\n"
               b"\x1b[36mtests-1  | \x1b[0m%s FAILURES %s\n" % (sep, sep))
    letters = ProgressLetters()
    letters.feed(compose, 1)
    assert letters.passed_after(1, 9, "1 failed, 2 passed", who=speaker("tests-1  | TimeoutExpired")) == 3
    db = speaker("db-1     | FATAL: terminating")
    assert letters.passed_after(2, 9, "1 failed, 2 passed", who=db) is None
    # a prefix the run's own letters do not carry is a test's child's: the run's letters tell
    letters = ProgressLetters()
    letters.feed(b"[rank1]: Traceback\n.F\n%s FAILURES %s\n" % (sep, sep), 1)
    assert letters.passed_after(1, 9, "1 failed, 1 passed", who=speaker("[rank1]: Traceback")) == 2


def test_verdict_letters_read_pytest_and_unittest_counts():
    counts = verdict_letters("1 failed, 4 passed, 1 skipped, 2 deselected, 3 warnings")
    assert counts == {"F": 1, ".": 4, "s": 1}
    assert verdict_letters("Ran 5 tests in 0.8s\n\nFAILED (failures=1, errors=1, skipped=1)") == {
        "F": 1, "E": 1, "s": 1, ".": 2}
    assert verdict_letters("1 failed, 2 passed, 3 subtests passed") is None


ROW_TOKENS = [
    b"\n", b".", b"F", b"E", b"s", b"x", b"u", b"R", b"X", b"=====", b"-----", b"step", b"Fatal", b"Error",
    b"2024-01-09T18:41:23.1412660Z ", b"\x1b[32m", b"\x1b[0m", b"tests/test_x.py ", b"created: 2/2 workers",
    b"1 worker [7 items]", b" [ 45%]", b"Z ", b".py ", b"a", b" ", b"tests-1  | ", b"| ", b"[default0]:",
    b"[rank1]: ", b"]:", b"\x1b[36mdb-1     | \x1b[0m",
]


@pytest.mark.parametrize("engine", ENGINES)
def test_rows_are_found_wherever_a_line_starting_with_one_would_be(engine):
    # The rows are looked for only where a literal that starts them is (Hyperscan's pass, or re's and
    # bytes.find's): the same rows as trying every line.
    every_line = re.compile(rb"(?m)^" + letters_module._ROW_TEXT)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.sampled_from(ROW_TOKENS), max_size=40).map(b"".join))
    def check(buf):
        expected = [(m.start(), m.group()) for m in every_line.finditer(buf)]
        found = letters_module._rows(buf, engine == "hyperscan")
        assert [(start, m.group()) for start, m in found] == expected

    check()


@pytest.mark.parametrize("short_line", [0, 10 ** 9])
def test_short_lines_find_the_rows_long_lines_do(monkeypatch, short_line):
    # Without Hyperscan, a window of short lines is skimmed in its bytes' classes (``translate``), a window
    # of long ones with re's "\n" hint: each way (forced here) finds the rows that trying every line finds.
    every_line = re.compile(rb"(?m)^" + letters_module._ROW_TEXT)
    monkeypatch.setattr(letters_module, "_SHORT_LINE", short_line)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.sampled_from(ROW_TOKENS + [b"\nsx", b"\nFa", b"\n.r", b"\nuz", b"\nE"]),
                    max_size=40).map(b"".join))
    def check(buf):
        expected = [(m.start(), m.group()) for m in every_line.finditer(buf)]
        found = letters_module._rows(buf, False)
        assert [(start, m.group()) for start, m in found] == expected

    check()


def test_a_window_of_short_lines_is_skimmed_in_classes():
    # 5-byte lines ("ok 1") take the translated skim on their own: its rows are the ones "^" finds.
    buf = b"ok 1\n" * 40 + b"..F\nsleeping\nsx\n=====\n\x1b[32m.\nFatal\n" + b"ok 2\n" * 40
    assert buf.count(b"\n") * letters_module._SHORT_LINE > len(buf)
    starts = list(letters_module._line_starts(buf))
    expected = [m.start() + 1 for m in re.finditer(rb"\n" + letters_module._FIRST, buf)]
    assert starts == expected and len(starts) == 4


@pytest.mark.parametrize("row", [
    b"2024-01-09T18:41:23.1412660Z ..F", b"tests/test_x.py ..F", b"tests-1  | ..F", b"[rank1]: ..F",
    b"[rank1]:..F",
])
def test_re_finds_a_row_that_starts_at_its_hints_first_byte(row):
    # Without Hyperscan each hint's pass starts where bytes.find puts its first byte ("Z", ".", "|", "]"):
    # a row whose hint starts at that very byte, on a line neither the first nor the last, is still found.
    buf = b"ok 1\n" + row + b"\nok 2\n"
    found = [(start, m.group("run")) for start, m in letters_module._rows(buf, False)]
    assert found == [(5, b"..F")]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("header", [b"created: 2/2 workers", b"2 workers [7 items]"])
def test_an_xdist_header_inside_the_window_is_found(engine, header):
    # xdist's header lines are found by their word "worker" alone (no hint of the letters holds them)
    buf = b"ok 1\n" + header + b"\nok 2\n"
    found = [(start, m.group("xdist")) for start, m in letters_module._rows(buf, engine == "hyperscan")]
    assert found == [(5, header)]


def test_the_hints_find_every_row_start_that_a_line_anchored_pattern_finds():
    # HYPERSCAN_HINTS look for a row after "\n" or a timestamp's "Z " instead of at "^" (cheaper for
    # Hyperscan): every line that "^" with an optional timestamp marks must still be tried.
    import random
    import re

    from analyzer.scan import letters
    from analyzer.scan._engine_prefilter import hyperscan_available
    from analyzer.scan._hyperscan import match_ends

    if not hyperscan_available() or letters._hint_database() is None:
        pytest.skip("hyperscan is not installed here")
    anchored = re.compile(rb"^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z )?" + letters._ROW_START, re.M)
    tokens = [b"\n", b"2024-01-09T10:00:01.0007919Z ", b"\x1b[32m", b"\x1b[0m", b".", b"F", b"Fa", b"E\n",
              b"s", b"=", b"-", b"x ", b"u", b"R", b"Z ", b"7Z ", b"word", b" "]
    rng = random.Random(3)
    for _ in range(300):
        buf = b"".join(rng.choice(tokens) for _ in range(rng.randrange(1, 60)))
        tried = {0, buf.rfind(b"\n", 0, len(buf) - 1) + 1}
        tried |= {buf.rfind(b"\n", 0, end - 1) + 1 for end, _ in
                  match_ends(letters._hint_database(), letters._SCRATCH, buf)}
        marked = {buf.rfind(b"\n", 0, m.start()) + 1 for m in anchored.finditer(buf)}
        assert marked <= tried, buf
