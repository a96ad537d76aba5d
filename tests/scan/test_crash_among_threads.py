"""A crash dumped by faulthandler among other threads, and a crashed pytest-xdist worker: where, which test.

faulthandler dumps every thread of the process, newest first, a blank line between the blocks; the thread
that crashed is "Current thread" (Python/traceback.c, _Py_DumpTracebackThreads), often the last one. A
pytest-xdist worker runs such a thread of its own (execnet's receiver), and its -v log shows only when each
test started on any worker: the crash's own stack says which test it was.
``fixtures/crash/pytest-xdist-worker-segfault`` is a real pytest-xdist -n 3 run (fixtures/regenerate.py).
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
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

# A worker thread starts after the main thread, so faulthandler dumps it first; the main thread crashes.
CRASHING = textwrap.dedent("""\
    import ctypes
    import faulthandler
    import threading
    import time

    faulthandler.enable()
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()


    def load_weights():
        ctypes.string_at(0)


    load_weights()
""")


@pytest.fixture(scope="module")
def crash_log(tmp_path_factory):
    work = tmp_path_factory.mktemp("crash")
    (work / "train.py").write_text(CRASHING)
    run = subprocess.run([sys.executable, "train.py"], cwd=work, capture_output=True, text=True, timeout=60)
    assert run.returncode == -11
    assert run.stderr.index("\nThread 0x") < run.stderr.index("\nCurrent thread 0x")
    log = work / "job.log"
    log.write_text(run.stderr)
    return log


@pytest.mark.parametrize("engine", ENGINES)
def test_the_crash_site_is_read_in_the_thread_that_crashed(crash_log, engine):
    (finding,) = scan_paths([str(crash_log)], BUILTIN, engine=engine)
    assert finding.message == "Fatal Python error: Segmentation fault at train.py:11"
    assert "Current thread 0x" in finding.excerpt and 'train.py", line 11 in load_weights' in finding.excerpt


@pytest.mark.parametrize("engine", ENGINES)
def test_a_crashed_xdist_worker_is_one_finding_naming_its_test_and_crash_site(engine):
    log = FIXTURES / "crash" / "pytest-xdist-worker-segfault.log"
    errors = [f for f in scan_paths([str(log)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]
    crashed, failed = errors
    test = "test_kernels.py::test_kernel_segfault"
    assert (crashed.rule, crashed.test, failed.rule, failed.test) == (
        "xdist-worker-crashed", test, "pytest-test-outcome", test)
    # The last start line before the crash is another worker's test ("test_after[5]"): the stack says which.
    assert crashed.message == (
        "pytest-xdist worker gw1 crashed while running test_kernels.py::test_kernel_segfault; pytest-xdist"
        " worker gw1 went down: Not properly terminated (line 91); Fatal Python error: Segmentation fault"
        " (line 41) at test_kernels.py:12 during test_kernels.py::test_kernel_segfault"
    )
