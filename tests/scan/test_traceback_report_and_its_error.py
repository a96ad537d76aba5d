"""A traceback's report and the error its last line is are one event, one finding.

threading prints "Exception in thread worker-1:", then the traceback, then the exception; multiprocessing
prints "Process worker-3:" the same way. When a rule knows that last line too (``_queue.Empty``, a CUDA
error, a gloo timeout) the report says who died and the rule what happened: one finding, told by the
rule that says what happened, naming the thread or process. Real threads and processes.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from analyzer.model import Kind, Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()

LOADER = """
    import multiprocessing
    import queue
    import threading


    def prefetch():
        queue.Queue().get(timeout=0.2)  # the producer never sent a batch


    def child():
        queue.Queue().get(timeout=0.2)


    if __name__ == "__main__":
        worker = threading.Thread(target=prefetch, name="worker-1")
        worker.start()
        worker.join()
        process = multiprocessing.Process(target=child, name="worker-3")
        process.start()
        process.join()
        print("loader done", flush=True)
"""


@pytest.fixture(scope="module")
def loader_log(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("ender")
    (work / "loader.py").write_text(textwrap.dedent(LOADER))
    proc = subprocess.run([sys.executable, "loader.py"], cwd=str(work), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=120)
    log = work / "loader.log"
    log.write_bytes(proc.stdout)
    text = proc.stdout.decode()
    assert "Exception in thread worker-1:" in text and "Process worker-3:" in text
    assert text.count("_queue.Empty") == 2  # what this test is about
    return log


@pytest.mark.parametrize("engine", ENGINES)
def test_each_report_and_the_empty_queue_it_ends_in_are_one_finding(loader_log, engine):
    findings = scan_paths([str(loader_log)], BUILTIN, engine=engine)
    lines = loader_log.read_text().split("\n")
    # The two empty queues read alike on no test's lines: one event seen twice (state's fold), and the
    # second report ends in that repeat.
    (finding,) = findings
    assert (finding.rule, lines[finding.line - 1]) == ("queue-empty-uncaught", "_queue.Empty")
    assert "; thread worker-1 died with _queue.Empty (line 1)" in finding.message
    assert "; worker process worker-3 died with _queue.Empty (line " in finding.message
    assert finding.message.endswith("(seen 2 times)")
    assert (finding.kind, finding.severity) == (Kind.TIMEOUT, Severity.ERROR)
    assert finding.excerpt.count("Exception in thread worker-1:") == 1  # the reports' lines are kept
    assert finding.excerpt.count("Process worker-3:") == 1


def test_a_report_whose_error_no_rule_knows_stays_the_reports(tmp_path):
    log = tmp_path / "thread.log"
    log.write_text("Exception in thread worker-1:\nTraceback (most recent call last):\n"
                   '  File "/srv/loader.py", line 9, in run\n    raise KeyError("vocab_size")\n'
                   "KeyError: 'vocab_size'\n")
    (finding,) = scan_paths([str(log)], BUILTIN, engine="python")
    assert (finding.rule, finding.line) == ("thread-exception-uncaught", 1)


def test_an_error_on_another_line_than_the_reports_end_is_its_own(tmp_path):
    log = tmp_path / "thread.log"
    log.write_text("Exception in thread worker-1:\nTraceback (most recent call last):\n"
                   '  File "/srv/loader.py", line 9, in run\n    raise KeyError("vocab_size")\n'
                   "KeyError: 'vocab_size'\n_queue.Empty\n")
    assert sorted(f.rule for f in scan_paths([str(log)], BUILTIN, engine="python")) == [
        "queue-empty-uncaught", "thread-exception-uncaught"]



def test_an_atexit_report_and_the_error_it_ends_in_stay_two_findings(tmp_path):
    # bench/logshapes.py's planted atexit failure: that the run exits 0 after it is the atexit finding's
    log = tmp_path / "atexit.log"
    log.write_text("Exception ignored in atexit callback: <function _shutdown_workers at 0x7f3a2c1d0e50>\n"
                   "Traceback (most recent call last):\n"
                   '  File "/opt/conda/lib/python3.11/site-packages/torch/distributed/elastic/agent.py",'
                   " line 12, in _shutdown_workers\nRuntimeError: distributed checkpoint workers timed out\n")
    rules = sorted(f.rule for f in scan_paths([str(log)], BUILTIN, engine="python"))
    assert rules == ["atexit-callback-ignored", "workers-timed-out"]


RANK_NAMED = """
    import threading


    def watchdog():
        raise RuntimeError("NCCL communicator was aborted on rank 1.")


    if __name__ == "__main__":
        thread = threading.Thread(target=watchdog, name="nccl-watchdog")
        thread.start()
        thread.join()
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_report_ending_in_an_error_that_names_a_rank_is_still_one_finding(tmp_path, engine):
    # The report names a thread and its last line a rank: two identities, but one line, one event.
    (tmp_path / "watchdog.py").write_text(textwrap.dedent(RANK_NAMED))
    proc = subprocess.run([sys.executable, "watchdog.py"], cwd=str(tmp_path), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=120)
    log = tmp_path / "watchdog.log"
    log.write_bytes(proc.stdout)
    assert b"Exception in thread nccl-watchdog" in proc.stdout
    (finding,) = scan_paths([str(log)], BUILTIN, engine=engine)
    assert finding.rule == "nccl-communicator-aborted"
    assert "; thread nccl-watchdog died with RuntimeError: NCCL communicator" in finding.message
