"""One event, one finding, across the ranks of a job and the lines of one GPU fault (issue 7, section 3).

fixtures/torch/torchrun-ranks-same-assert.log (torch 2.13 CPU gloo, torchrun --tee 3, unbuffered): every rank
of four fails the same assert at the same line, their "[rankN]: " tracebacks interleaved; torchrun's report
names rank 0. fixtures/torch/torchrun-ranks-two-raises.log: ranks 0 and 1 fail the assert, ranks 2 and 3
raise ValueError at another line. fixtures/quoted/nvrm-xid-13-per-sm-journal.log: one Xid 13 fault logged
per SM (3dem/relion#436). The torchrun runs these stand for are measured in /tmp/dedup17 (README.txt).
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
SAME = FIXTURES / "torch" / "torchrun-ranks-same-assert.log"
TWO = FIXTURES / "torch" / "torchrun-ranks-two-raises.log"
XID = FIXTURES / "quoted" / "nvrm-xid-13-per-sm-journal.log"


def _errors(findings):
    return [f for f in findings if f.severity is Severity.ERROR]


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1) if text in line)


@pytest.mark.parametrize("engine", ENGINES)
def test_every_rank_raising_the_same_assert_is_the_root_causes_one_failure(engine):
    errors = _errors(scan_paths([str(SAME)], BUILTIN, engine=engine))
    assert [f.rule for f in errors] == ["torchrun-root-cause"]
    lines = [_line_of(SAME, f"[rank{rank}]: AssertionError: ") for rank in (1, 2, 3)]
    assert errors[0].message.endswith(
        "rank 0 raised AssertionError: expected a batch of 8, got 4; ranks 1, 2, 3 raised it too"
        " (lines %d, %d, %d)" % tuple(lines))


@pytest.mark.parametrize("engine", ENGINES)
def test_two_raises_at_two_lines_are_two_findings_each_naming_its_ranks(engine):
    errors = _errors(scan_paths([str(TWO)], BUILTIN, engine=engine))
    assert sorted(f.rule for f in errors) == ["rank-raised", "torchrun-root-cause"]
    root = next(f for f in errors if f.rule == "torchrun-root-cause")
    raised = next(f for f in errors if f.rule == "rank-raised")
    assert "AssertionError" in root.message and "rank 1 raised it too" in root.message
    assert "ValueError" not in root.message
    assert raised.message.startswith("rank 2 (pid ") and "ValueError: shard 2 is corrupt" in raised.message
    assert raised.message.endswith("; rank 3 raised it too (line %d)" % _line_of(TWO, "[rank3]: ValueError"))
    assert raised.line == _line_of(TWO, "[rank2]: ValueError")


def test_another_exception_type_at_the_same_line_is_a_failure_of_its_own(tmp_path):
    # The same log with rank 3's exception line read as another type: that rank's own failure.
    text = SAME.read_text(encoding="utf-8").replace(
        "[rank3]: AssertionError: expected a batch of 8", "[rank3]: RuntimeError: expected a batch of 8")
    log = tmp_path / "ranks.log"
    log.write_text(text, encoding="utf-8")
    errors = _errors(scan_paths([str(log)], BUILTIN, engine="python"))
    assert sorted(f.rule for f in errors) == ["rank-raised", "torchrun-root-cause"]
    raised = next(f for f in errors if f.rule == "rank-raised")
    assert raised.message.startswith("rank 3 (pid ") and "raised it too" not in raised.message
    assert "; ranks 1, 2 raised it too" in next(f for f in errors if f.rule != "rank-raised").message


@pytest.mark.parametrize("engine", ENGINES)
def test_one_xid_fault_logged_per_sm_is_one_finding(engine):
    findings = scan_paths([str(XID)], BUILTIN, engine=engine)
    assert [(f.rule, f.line) for f in findings] == [("gpu-xid-error", _line_of(XID, "0x5067b0=0x9"))]
    assert findings[0].message.endswith("; 5 more lines of it (lines %s)" % ", ".join(
        str(_line_of(XID, marker)) for marker in ("0x50c730", "(GPC 1, TPC 0, SM 1): Illegal",
                                                  "(GPC 1, TPC 0, SM 1): Multiple", "0x50c7b0",
                                                  "(GPC 1, TPC 2, SM 0)")))


def test_another_xid_number_on_the_device_is_its_own_finding(tmp_path):
    # leptonai/gpud#46 (components/accelerator/nvidia/error/xid/README.md): an Xid 13 fault, then the
    # context switch timeout (Xid 109) on the same GPU 5 s later.
    log = tmp_path / "dmesg.log"
    log.write_text(
        "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>,"
        " Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter\n"
        "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>,"
        " Graphics SM Global Exception on (GPC 7, TPC 7, SM 0): Multiple Warp Errors\n"
        "[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch"
        " 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005\n"
    )
    findings = scan_paths([str(log)], BUILTIN, engine="python")
    assert [(f.rule, f.line) for f in findings] == [("gpu-xid-error", 1), ("gpu-xid-error", 3)]
    assert "(line 2)" in findings[0].message and "109" not in findings[0].message


def test_a_long_run_of_one_faults_lines_is_counted_not_quoted(tmp_path):
    log = tmp_path / "kern.log"
    log.write_text("".join(
        f"[82659.{7000 + n}] NVRM: Xid (PCI:0000:41:00): 13, Graphics SM Warp Exception on (GPC {n // 8}, TPC"
        f" {n % 8}, SM 0): Illegal Instruction Encoding\n" for n in range(60)))
    findings = scan_paths([str(log)], BUILTIN, engine="python")
    assert [(f.rule, f.line) for f in findings] == [("gpu-xid-error", 1)]
    assert "; 57 more lines of it (lines 4, 5, 6" in findings[0].message
    assert len(findings[0].message) < 1500 and findings[0].excerpt.count("\n") < 10
