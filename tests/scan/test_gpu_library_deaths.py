"""GPU library failures outside Python's own wording, each told once and named for what failed.

A program's CUDA check that prints the library's status and then calls assert() dies of SIGABRT, and the
shell reports "Aborted (core dumped)": the status, the assert and the shell's line are one event, told by
the status (merzlab/QUICK#98, fixtures/quoted/cusolver-status-then-assert.log; darknet's check_error,
fixtures/quoted/cuda-no-device-darknet-assert.log). The MPS allocator's out-of-memory error is not a CUDA
one (lllyasviel/Fooocus#1139).
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
# bash's report of a process that glibc's assert() aborted (the line the quoted excerpts end before)
SHELL_ABORTED = "Aborted (core dumped)\n"


def _body(name: str) -> str:
    return "".join(line for line in (QUOTED / name).read_text().splitlines(True) if not line.startswith("#!"))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name, rule, first", [
    ("cusolver-status-then-assert.log", "cuda-library-status", "CUSOLVER_STATUS_INTERNAL_ERROR"),
    ("cuda-no-device-darknet-assert.log", "cuda-error-string", "> CUDA Error: no CUDA-capable device"),
])
def test_a_status_its_assert_and_the_shells_abort_are_one_finding(tmp_path, engine, name, rule, first):
    log = tmp_path / "run.log"
    log.write_text(_body(name) + SHELL_ABORTED)
    findings = [f for f in scan_paths([str(log)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]
    (finding,) = findings
    lines = log.read_text().split("\n")
    assert finding.rule == rule
    assert lines[finding.line - 1].startswith(first)
    assert "a C assert() failed at " in finding.message


@pytest.mark.parametrize("engine", ENGINES)
def test_the_abort_alone_after_a_status_is_still_its_own_crash(tmp_path, engine):
    # Without the assert between them nothing says the status killed the process: two findings.
    log = tmp_path / "run.log"
    log.write_text("CUSOLVER_STATUS_INTERNAL_ERROR \n" + SHELL_ABORTED)
    rules = sorted(f.rule for f in scan_paths([str(log)], BUILTIN, engine=engine))
    assert rules == ["crash-core-dumped", "cuda-library-status"]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_mps_allocators_oom_is_named_mps(engine):
    (finding,) = scan_paths([str(QUOTED / "mps-backend-oom-fooocus.log")], BUILTIN, engine=engine)
    assert finding.rule == "cuda-out-of-memory"
    assert finding.message == "MPS backend out of memory (tried to allocate 6.25 MB)"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cut_cuda_oom_exception_line_is_the_oom(engine):
    (finding,) = scan_paths([str(QUOTED / "vllm-cuda-out-of-cut-mid-word.log")], BUILTIN, engine=engine)
    assert (finding.rule, finding.message) == ("cuda-out-of-memory", "CUDA out of memory")
