"""The many-jobs summary, text and JSON of a crafted matrix, committed so a format change shows in review.

``UPDATE_GOLDEN=1 python -m pytest tests/gh/test_golden.py`` re-blesses them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from analyzer.gh.combine import ScannedJob, combine
from analyzer.model import Finding, JobFacts, Kind, Severity
from analyzer.report.json_report import render_json
from analyzer.report.multi_markdown import render_many_markdown, render_many_text

GOLDEN = Path(__file__).parent / "golden"
ATEXIT = """Exception ignored in atexit callback: <function _prepare_to_exit at 0x7fae5bbfe2a0>
Traceback (most recent call last):
  File "/tmp/ghg-fixtures/atexit/train.py", line 5, in _prepare_to_exit
    raise RuntimeError("process group was destroyed twice")
RuntimeError: process group was destroyed twice"""


def _job(name, attempt, runner, conclusion, findings=(), run_id=9001, sha="c0ffee", log="scanned"):
    facts = JobFacts(
        run_id=run_id,
        attempt=attempt,
        job_id=run_id * 10 + attempt * 100 + len(name),
        name=name,
        runner=runner,
        head_sha=sha,
    )
    return ScannedJob(facts=facts, conclusion=conclusion, findings=tuple(findings), log=log)


def _finding(kind, rule, message, excerpt="", test=None, path="job.log", line=8):
    return Finding(
        kind=kind,
        rule=rule,
        severity=Severity.ERROR,
        path=path,
        line=line,
        message=message,
        excerpt=excerpt,
        test=test,
    )


def matrix_report():
    atexit = _finding(
        Kind.ATEXIT_EXCEPTION,
        "atexit-callback-ignored",
        "RuntimeError: process group was destroyed twice raised in atexit callback "
        "`_prepare_to_exit`; Python exits 0 anyway",
        ATEXIT,
    )
    timeout = _finding(
        Kind.TIMEOUT,
        "pytest-timeout",
        "pytest-timeout failed a test after 300s",
        "E       Failed: Timeout (>300.0s) from pytest-timeout.",
        test="tests/gpu/test_nccl.py::test_all_reduce",
    )
    stuck = _finding(
        Kind.UNKILLABLE_PROCESS,
        "guard-unkillable-process",
        "pid 4242 survived SIGKILL in D state (wchan nv_wait)",
        path="",
        line=0,
    )
    jobs = [
        _job("gpu-tests (1)", 1, "gpu-a", "failure", [timeout]),
        _job("gpu-tests (1)", 2, "gpu-b", "success"),
        _job("gpu-tests (2)", 1, "gpu-c", "success", [atexit]),
        _job("gpu-tests (3)", 1, "gpu-d", "failure", [stuck]),
        _job("gpu-tests (4)", 1, "gpu-e", "failure", log="gone"),
        _job("lint", 1, "cpu-1", "success"),
    ]
    baseline = [_job("gpu-tests (2)", 1, "gpu-a", "failure", [atexit], run_id=8000, sha="base")]
    return combine(jobs, baseline=baseline)


RENDERERS = {
    "md": lambda r: render_many_markdown(r, report_path="merged.json"),
    "txt": render_many_text,
    "json": render_json,
}


@pytest.mark.parametrize("ext", sorted(RENDERERS))
def test_golden(ext):
    text = RENDERERS[ext](matrix_report())
    path = GOLDEN / f"matrix.{ext}"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")
