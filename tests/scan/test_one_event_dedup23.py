"""One event, one finding: the leftovers of issue 7, section 3 that dedup23 took.

- torch's MultiProcessTestCase logs a timed-out rank's stack as "Process 1 timed out with traceback:" and
  the faulthandler dump the rank sent (fixtures/torch/dedup23-mp-timeout-traceback.log, captured from
  torch 2.13.0). The line is the harness's timeout, not a multiprocessing worker's "Process NAME:" header,
  and the dump says where the rank hung: its event listener thread (the dump's "Current thread") waits in
  torch, the thread that hangs runs the test's code.
- IPython numbers a traceback's source lines and points at the current one with an arrow ("----> 4     raise
  torch.cuda.OutOfMemoryError(...)"; fixtures/crash/dedup23-ipython-cuda-oom.log, IPython 9.19.1): the
  source line quotes the wording, the event is the exception line at the traceback's end.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MP_TIMEOUT_TRACEBACK = FIXTURES / "torch" / "dedup23-mp-timeout-traceback.log"
IPYTHON_OOM = FIXTURES / "crash" / "dedup23-ipython-cuda-oom.log"
# The same harness on a loaded machine: the rank was still starting its listener thread when its stack
# was asked for, so no frame of the test's code is in the dump (a capture of the test in
# fixtures/regenerate.py's dedup23 section with a 6 s TIMEOUT_OVERRIDE; glog prefixes dropped, paths
# shortened; the harness's line ends in a space).
STILL_STARTING = """\
Process 1 timed out with traceback:{space}

Current thread 0x00007f92aff696c0 (most recent call first):
  File "/venv/lib/python3.11/site-packages/torch/testing/_internal/common_distributed.py",\
 line 1018 in _event_listener
  File "/usr/lib/python3.11/threading.py", line 982 in run
  File "/usr/lib/python3.11/threading.py", line 1045 in _bootstrap_inner
  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap

Thread 0x00007f92d5c23b80 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 327 in wait
  File "/usr/lib/python3.11/threading.py", line 629 in wait
  File "/usr/lib/python3.11/threading.py", line 969 in start
  File "/venv/lib/python3.11/site-packages/torch/testing/_internal/common_distributed.py", line 1031 in _run
  File "/usr/lib/python3.11/multiprocessing/process.py", line 108 in run
  File "/usr/lib/python3.11/multiprocessing/process.py", line 314 in _bootstrap
  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 135 in _main
  File "/usr/lib/python3.11/multiprocessing/spawn.py", line 122 in spawn_main
  File "<string>", line 1 in <module>

Timing out after 6 seconds and killing subprocesses.
"""


def _errors(path: Path, engine: str = "auto"):
    return [f for f in scan_paths([str(path)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_harness_line_of_a_timed_out_ranks_stack_is_one_finding_the_timeout(engine):
    text = MP_TIMEOUT_TRACEBACK.read_text(encoding="utf-8").split("\n")
    line = next(n for n, row in enumerate(text, 1) if row.endswith("Process 1 timed out with traceback: "))
    on_it = [f for f in _errors(MP_TIMEOUT_TRACEBACK, engine) if f.line == line]
    assert [f.rule for f in on_it] == ["torch-mp-test-timeout"]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_timeout_names_the_frame_of_the_test_the_rank_hung_in_not_its_listener_thread(engine):
    found = [f for f in _errors(MP_TIMEOUT_TRACEBACK, engine) if "Process 1 timed out" in f.message]
    assert len(found) == 1
    assert " at test_mp_hang.py:11 during test_allreduce_hangs" in found[0].message


@pytest.mark.parametrize("engine", ENGINES)
def test_a_dump_with_no_frame_of_the_users_names_no_site_not_the_spawn_bootstrap(tmp_path, engine):
    log = tmp_path / "starting.log"
    log.write_text(STILL_STARTING.format(space=" "))
    found = _errors(log, engine)
    assert [(f.rule, f.line) for f in found] == [("torch-mp-test-timeout", 1), ("torch-mp-test-timeout", 20)]
    assert " at " not in found[0].message


@pytest.mark.parametrize("engine", ENGINES)
def test_an_ipython_tracebacks_event_is_its_exception_line_not_the_source_line_its_arrow_points_at(engine):
    text = IPYTHON_OOM.read_text(encoding="utf-8").split("\n")
    line = text.index("OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB") + 1
    found = _errors(IPYTHON_OOM, engine)
    assert [(f.rule, f.line) for f in found] == [("cuda-out-of-memory", line)]
    assert "seen 2 times" not in found[0].message  # the source line is no telling of the event


@pytest.mark.parametrize("engine", ENGINES)
def test_a_numbered_line_that_is_no_source_is_still_read(tmp_path, engine):
    log = tmp_path / "numbered.log"
    # not source: a count, then an exception's own line (no statement before the quote)
    log.write_text("     12 RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert [f.rule for f in _errors(log, engine)] == ["cuda-error"]
