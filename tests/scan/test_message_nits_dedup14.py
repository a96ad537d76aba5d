"""Three messages seen on real logs that said too much or the wrong thing (issue 7 section 3).

An NCCL watchdog timeout listed its work twice when "Timeout at NCCL work: 1" or the blocking-wait
line told it again; a c10d connect timeout said "(its traceback follows)" when torch elastic's error
record (JSON) followed; zsh's crash report kept the progress bar glued after the command.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
QUOTED = Path(__file__).resolve().parents[2] / "fixtures" / "quoted"


def _first_error(name, engine="auto"):
    findings = scan_paths([str(QUOTED / name)], BUILTIN, engine=engine)
    return next(f for f in findings if f.severity is Severity.ERROR)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_nccl_timeout_told_again_with_nothing_new_lists_its_work_once(engine):
    finding = _first_error("nccl-timeout-at-work-then-watchdog-same-event.log", engine)
    assert finding.rule == "nccl-watchdog-timeout"
    assert finding.message.count("NCCL watchdog: collective") == 1
    assert "last enqueued work" not in finding.message
    assert "Timeout at NCCL work: 1," in finding.excerpt  # the line is still shown


def test_a_blocking_wait_line_of_the_same_work_is_shown_not_retold():
    finding = _first_error("nccl-watchdog-blocking-wait-diffusers.log")
    assert finding.message.count("SeqNum=2521") == 1
    assert "the same event, told again" in finding.excerpt


def test_a_told_line_that_names_another_work_still_says_so():
    # "Timeout at NCCL work: 8, last enqueued NCCL work: 10": the enqueued work is news
    finding = _first_error("nccl-watchdog-ray-workerdict-prefix.log")
    assert "(last enqueued work 10)" in finding.message


def test_a_connect_timeout_followed_by_elastics_error_record_says_so():
    finding = _first_error("c10d-client-socket-then-error-handler-json.log")
    assert "(torch elastic's error record follows)" in finding.message
    assert "traceback follows" not in finding.message.lower()
    other = _first_error("c10d-client-socket-timeout-then-traceback-torch24.log")
    assert other.message.endswith("(its Traceback follows)")


def test_a_zsh_report_glued_to_a_progress_bar_names_only_the_command():
    finding = _first_error("zsh-bus-error-glued-progress.log")
    assert finding.message == "the shell reports that python died: bus error"
