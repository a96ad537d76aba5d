"""A plain run's progress letters glued to a child's line are cut off it, and real text keeps its letters.

unittest without ``-v`` (and pytest ``-q -s``) prints one of ``. E F s x u`` per test and no newline, so
the first line a test's child prints next starts with them: ``.Process worker-3:``, ``._queue.Empty``,
``Fsubprocess.CalledProcessError: ...``, ``.EException in thread worker-1:``. Real unittest, real child.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.clean import clean_line
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()


@pytest.mark.parametrize("raw, text", [
    ("._queue.Empty", "_queue.Empty"),
    (".Process worker-3:", "Process worker-3:"),
    ("..Traceback (most recent call last):", "Traceback (most recent call last):"),
    ("E.Fatal Python error: Aborted", "Fatal Python error: Aborted"),
    (".EException in thread worker-1:", "Exception in thread worker-1:"),
    ("Fsubprocess.CalledProcessError: Command 'x' returned non-zero exit status 3.",
     "subprocess.CalledProcessError: Command 'x' returned non-zero exit status 3."),
    ("..subprocess.TimeoutExpired: Command 'x' timed out after 1 seconds",
     "subprocess.TimeoutExpired: Command 'x' timed out after 1 seconds"),
    ("..ERROR: Unexpected bus error encountered in worker.",
     "ERROR: Unexpected bus error encountered in worker."),
    # the child's own logger prefix comes after the letter, and is cut in turn
    (".[E1202 07:55:04.236188280 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed",
     "Gloo connectFullMesh failed"),
    ("2024-01-09T18:41:23.1248260Z sEProcess worker-1:", "Process worker-1:"),
])
def test_progress_glued_to_a_childs_line_is_cut(raw, text):
    assert clean_line(raw.encode())[0] == text


@pytest.mark.parametrize("raw", [
    "F0325 12:00:00.123456 1234 main.cc:12] Check failed: ok",  # glog FATAL (the rule reads its F)
    "Error: Process completed with exit code 1.",
    "Fatal Python error: Segmentation fault",
    "ERROR: test_x (mod.Class)",
    "FAILED tests/test_x.py::test_y - assert False",
    "FAIL: test_x (mod.Class)",
    "EOFError: Ran out of input",
    "Exception ignored in atexit callback: <function f at 0x7f>",
    "EXCEPTION occurred: CUBLAS failure 13",
    "x86_64-linux-gnu-gcc: fatal error: Killed signal terminated program cc1plus",
    "x_train.shape: (100, 3)",
    "sys.exit(1)",
    "user@host:~$ python x.py",
    "....F..s.                                                                [ 50%]",  # pytest -q progress
    "..F",
    ".cc:563] Read error [2401:db00::1]:8835: Connection reset by peer",  # a terminal cut the line before it
    ".killed child: <Process name='Process-3' exitcode=-SIGKILL>",  # no line shape: rules read it unanchored
    "...",
    "... (3 lines elided)",
])
def test_real_text_that_starts_with_a_progress_letter_keeps_it(raw):
    assert clean_line(raw.encode())[0] == raw


def test_a_long_run_of_progress_is_cut_where_it_ends():
    # unittest prints its dots on one line to the end of the run: a child's line may follow thousands.
    assert clean_line(("." * 5000 + "Process worker-3:").encode())[0] == "Process worker-3:"
    thread = "Exception in thread worker-1:"
    assert clean_line(("." * 5000 + "E" + thread).encode())[0] == thread


@pytest.mark.parametrize("raw", ["E" * 300_000 + " Segmentation fault", "E" + "s" * 300_000 + ": Killed"])
def test_a_line_of_progress_letters_costs_one_pass(raw):
    # The cut is looked for only near the end of the run: looked for everywhere, each place tried read the
    # rest of the run again (300,000 letters: hours), and any line a command prints reaches here.
    assert clean_line(raw.encode())[0] == raw


PLAIN_SUITE = """
    import multiprocessing
    import unittest


    def _raise():
        raise RuntimeError("shard 3 is corrupt")


    class LoaderTests(unittest.TestCase):
        def test_a_config_loads(self):
            self.assertTrue(True)

        def test_b_child_loads_its_shard(self):
            child = multiprocessing.Process(target=_raise, name="worker-3")
            child.start()
            child.join(60)
            self.assertEqual(child.exitcode, 0)


    if __name__ == "__main__":
        unittest.main()
"""


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("plain")
    (work / "test_loader.py").write_text(textwrap.dedent(PLAIN_SUITE))
    proc = subprocess.run([sys.executable, "-m", "unittest", "test_loader"], cwd=str(work),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert proc.returncode == 1
    log = work / "step.log"
    log.write_bytes(proc.stdout)
    assert b"\n.Process worker-3:\n" in b"\n" + proc.stdout  # what this test is about
    return log


@pytest.mark.parametrize("engine", ENGINES)
def test_a_childs_traceback_behind_a_progress_dot_is_found(plain_run, engine):
    findings = scan_paths([str(plain_run)], BUILTIN, engine=engine)
    lines = plain_run.read_bytes().split(b"\n")
    (child,) = [f for f in findings if f.rule == "mp-process-traceback"]
    assert lines[child.line - 1] == b".Process worker-3:"
    assert child.severity is Severity.ERROR  # the run failed: FAILED (failures=1)
