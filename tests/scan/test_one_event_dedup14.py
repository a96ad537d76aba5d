"""A launcher a test runs: its CalledProcessError and torchrun's root cause are one event; a rank's
own exception is the failure its peer's "Connection closed by peer" saw, with no launcher's report.

fixtures/torch/torchrun-segv-under-pytest-q.log (pytest 9.2 -q, torch 2.13 CPU gloo): test_two_ranks runs
torchrun with subprocess.run(check=True); rank 1 segfaults. pytest prints the CalledProcessError in
FAILURES, then the captured torchrun output with the ChildFailedError report 49 lines later.
fixtures/torch/popen-ranks-raise-peer-closed.log: two ranks started with Popen (as Lightning's ddp
launcher does, which prints no report): rank 1 raises ValueError, rank 0's all_reduce then fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
LAUNCHED = Path(__file__).resolve().parents[2] / "fixtures" / "torch" / "torchrun-segv-under-pytest-q.log"
POPEN = LAUNCHED.with_name("popen-ranks-raise-peer-closed.log")


def _errors(findings):
    return [f for f in findings if f.severity is Severity.ERROR]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_launched_torchruns_called_process_error_is_its_root_cause_told_again(engine):
    findings = scan_paths([str(LAUNCHED)], BUILTIN, engine=engine)
    root, failed = _errors(findings)
    assert root.rule == "torchrun-root-cause" and root.test == "test_launch.py::test_two_ranks"
    assert "rank 1" in root.message and "SIGSEGV" in root.message and "rank_segv.py:9" in root.message
    assert "subprocess.CalledProcessError" in root.excerpt  # told, with its line
    assert failed.rule == "pytest-test-outcome" and failed.test == root.test
    assert not [f for f in findings if f.rule == "subprocess-called-process-error"]


def test_a_called_process_error_with_no_launcher_report_stays_its_own_error(tmp_path):
    # the launched command printed no ChildFailedError report (a plain script): nothing tells the error
    text = [line for line in LAUNCHED.read_text(encoding="utf-8").split("\n") if not line.startswith("#!")]
    first = next(i for i, line in enumerate(text) if line.endswith("Root Cause (first observed failure):"))
    log = tmp_path / "no-report.log"
    log.write_text("\n".join(text[:first] + text[first + 8:]), encoding="utf-8")
    rules = [f.rule for f in _errors(scan_paths([str(log)], BUILTIN))]
    assert "torchrun-root-cause" not in rules
    assert "subprocess-called-process-error" in rules


@pytest.mark.parametrize("engine", ENGINES)
def test_a_ranks_own_exception_is_the_failure_its_lost_peer_saw(engine):
    findings = scan_paths([str(POPEN)], BUILTIN, engine=engine)
    (raised,) = _errors(findings)
    assert raised.rule == "rank-raised" and "rank 1 raised ValueError" in raised.message
    assert "popen_rank.py:10" in raised.message and "launcher" not in raised.message  # no report here
    (peer,) = [f for f in findings if f.rule == "gloo-peer-closed"]
    assert peer.severity is Severity.WARNING and "collateral: rank 0" in peer.message


def test_a_lost_peer_with_no_other_ranks_failure_stays_an_error(tmp_path):
    # rank 1 vanished without a word (the OOM killer): rank 0's lost peer is the only trace of it
    text = [line for line in POPEN.read_text(encoding="utf-8").split("\n") if not line.startswith("#!")]
    log = tmp_path / "vanished.log"
    log.write_text("\n".join(line for line in text if "[rank1]:" not in line), encoding="utf-8")
    (peer,) = _errors(scan_paths([str(log)], BUILTIN))
    assert peer.rule == "gloo-peer-closed"
