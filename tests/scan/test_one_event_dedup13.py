"""A process pool's worker that segfaults, and a gloo timeout a rank caught: one event, one finding.

fixtures/crash/pool-worker-segv-pytest-q.log (pytest 9.2 -q): a ProcessPoolExecutor worker segfaults in
test_shards (faulthandler's stack, before any progress letter) and pool.map raises BrokenProcessPool in
FAILURES, 86 lines later: the pool's view of that death. fixtures/torch/torchrun-caught-timeout-retry.log
(torch 2.13, gloo, two ranks): rank 0 logs its caught all_reduce timeout at WARNING, retries, and dies of
"Application timeout caused pair closure", which gloo signals on every pair when an operation timed out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES, error_findings

BUILTIN = load_catalogue()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
POOL_SEGV = FIXTURES / "crash" / "pool-worker-segv-pytest-q.log"
CAUGHT_TIMEOUT = FIXTURES / "torch" / "torchrun-caught-timeout-retry.log"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pool_workers_segfault_tells_the_broken_pool_it_caused(engine):
    findings = scan_paths([str(POOL_SEGV)], BUILTIN, engine=engine)
    crash, failed = error_findings(findings)
    assert crash.rule == "fatal-python-error" and crash.test == "test_pool.py::test_shards"
    assert "Segmentation fault" in crash.message and "at test_pool.py:7" in crash.message
    assert "BrokenProcessPool" in crash.message  # told, with its line
    assert failed.rule == "pytest-test-outcome" and failed.test == crash.test
    assert not [f for f in findings if f.rule == "broken-process-pool"]


def test_a_broken_pool_with_no_crash_in_the_log_stays_its_own_error(tmp_path):
    # a worker SIGKILLed (the OOM killer) prints nothing: the pool's view is the only trace of it
    text = POOL_SEGV.read_text(encoding="utf-8").split("\n")
    kept = [line for line in text if not line.startswith("#!")]
    first = kept.index("Fatal Python error: Segmentation fault")
    last = next(i for i, line in enumerate(kept) if line.startswith("Extension modules: "))
    log = tmp_path / "killed.log"
    log.write_text("\n".join(kept[:first] + kept[last + 1:]), encoding="utf-8")
    findings = scan_paths([str(log)], BUILTIN)
    assert [f.rule for f in error_findings(findings)] == ["broken-process-pool", "pytest-test-outcome"]


def test_a_crash_of_another_test_does_not_tell_a_broken_pool(tmp_path):
    log = tmp_path / "two.log"
    log.write_text(
        "test_a.py::test_native Fatal Python error: Segmentation fault\n"
        "\n"
        "test_b.py::test_pool FAILED\n"
        "E   concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated"
        " abruptly while the future was running or pending.\n",
        encoding="utf-8",
    )
    rules = sorted(f.rule for f in error_findings(scan_paths([str(log)], BUILTIN)))
    assert "broken-process-pool" in rules and "fatal-python-error" in rules


@pytest.mark.parametrize("engine", ENGINES)
def test_a_caught_gloo_timeout_is_the_cause_the_pair_closure_death_tells(engine):
    findings = scan_paths([str(CAUGHT_TIMEOUT)], BUILTIN, engine=engine)
    (root,) = error_findings(findings)
    assert root.rule == "torchrun-root-cause"
    assert "rank 0 raised RuntimeError: Application timeout caused pair closure" in root.message
    assert "gloo: timed out after 2000 ms waiting for a recv operation to complete (line 11)" in root.message
    assert not [f for f in findings if f.rule == "gloo-timeout"]


def test_a_warning_record_does_not_echo_another_writers_rank_traceback(tmp_path):
    # Python logging writes a record and its traceback in one write: with torchrun's "[rank0]:" prefix on
    # the traceback and none on the record, the traceback is the rank's own, not the record's.
    body = [
        "WARNING sync: retrying",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/w/train.py", line 18, in <module>',
        "[rank0]:     dist.all_reduce(t)",
        "[rank0]: RuntimeError: Application timeout caused pair closure",
    ]
    log = tmp_path / "rank.log"
    log.write_text("\n".join(body + ["rank 1: done"]) + "\n", encoding="utf-8")
    assert [f.rule for f in error_findings(scan_paths([str(log)], BUILTIN))] == ["gloo-pair-closure"]
    log.write_text("\n".join([b.replace("[rank0]: ", "") for b in body] + ["rank 1: done"]) + "\n",
                   encoding="utf-8")
    # the record's own traceback: caught, went on
    assert error_findings(scan_paths([str(log)], BUILTIN)) == []
