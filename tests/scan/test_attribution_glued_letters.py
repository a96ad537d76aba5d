"""Under pytest ``-q -s`` a test's output lands right after the letter before it: a skip's ``s`` then what
the next test printed reads ``.srank 1 starting``, which the letters take for a word's start and drop, so
the run's letters no longer add up to its verdict and no event is named. Those glued letters count when,
all taken for letters, they add up exactly (``ProgressLetters.outcome_after``).

Real runs: pytest 9 over a suite whose passing test prints, then has a child segfault on purpose, right
after a silent test and a silent skip. A word glued after a dot that is no letter ("skipping cleanup")
beside a real glued ``s`` makes both readings disagree with the verdict: nothing is named.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

from analyzer.scan.letters import ProgressLetters
from tests.scan.test_attribution import scan
from tests.scan.test_engine_helpers import ENGINES

CRASH_LINE = "Fatal Python error: Segmentation fault"
TEST = "test_glued.py::test_b_child_crash_expected"
SUITE = """
    import os, subprocess, sys

    import pytest

    def test_0_pass():
        pass

    def test_a_skip():
        pytest.skip("no CUDA device")

    def test_b_child_crash_expected():
        print("rank 1 starting")
        code = "import ctypes; ctypes.string_at(0)"
        assert subprocess.run([sys.executable, "-X", "faulthandler", "-c", code]).returncode == -11

    def test_c_pass_prints():
        print("C_OUTPUT")

    def test_d_maybe_fails():
        assert os.environ.get("A16_FAIL") != "1", "reduced sum wrong"
"""


def run(tmp_path: Path, argv: List[str], *, fail: bool, c_output: str = "done") -> str:
    (tmp_path / "test_glued.py").write_text(textwrap.dedent(SUITE).replace("C_OUTPUT", c_output))
    env = dict(os.environ, COLUMNS="80", PYTHONUNBUFFERED="1", A16_FAIL="1" if fail else "0")
    env.pop("PYTEST_ADDOPTS", None)
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"] + argv + ["test_glued.py"]
    proc = subprocess.run(argv, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=120, env=env)
    return proc.stdout.decode("utf-8", "replace")


def crash(log: str, engine: str) -> tuple:
    found = [(f.severity.value, f.test) for f in scan({"job.log": log}, engine=engine)
             if f.rule == "fatal-python-error"]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fail", [False, True])
@pytest.mark.parametrize("report", [["-rA"], ["-rA", "-x"]])
def test_a_skips_s_glued_to_the_next_tests_output_still_counts(tmp_path, engine, fail, report):
    log = run(tmp_path, ["-q", "-s"] + report, fail=fail)
    assert log.startswith(".srank 1 starting\n") and ("1 failed" in log) is fail
    assert crash(log, engine) == ("notice", TEST)


@pytest.mark.parametrize("engine", ENGINES)
def test_without_the_summary_the_glued_letters_say_the_test_passed(tmp_path, engine):
    log = run(tmp_path, ["-q", "-s"], fail=True)
    assert log.startswith(".srank 1 starting\n") and "1 failed" in log
    assert crash(log, engine) == ("notice", None)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fail", [False, True])
def test_a_glued_word_that_is_no_letter_beside_one_that_is_names_nothing(tmp_path, engine, fail):
    log = run(tmp_path, ["-q", "-s", "-rA"], fail=fail, c_output="skipping cleanup")
    assert log.startswith(".srank 1 starting\n") and "\n.skipping cleanup\n" in log
    assert crash(log, engine) == ("notice" if not fail else "error", None)


def test_glued_letters_are_kept_where_they_were_written():
    letters = ProgressLetters()
    log = b".srank 1 starting\nFatal Python error: Segmentation fault\n.done\n..\n" \
          b"===== 4 passed, 1 skipped in 0.5s =====\n"
    letters.feed(log, 1)
    (region,) = letters.regions
    assert region.rows == [(1, "."), (3, "."), (4, "..")] and region.glued == [(0, "s")]
    assert letters.outcome_after(2, 5, "4 passed, 1 skipped in 0.5s") == (3, ".", 2, {".": 4, "s": 1})
    # a verdict with no skip: the glued s was a word's start, and the letters add up without it
    assert letters.outcome_after(2, 5, "4 passed in 0.5s") == (3, ".", 2, {".": 4})
    assert letters.outcome_after(2, 5, "5 passed in 0.5s") is None
