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
