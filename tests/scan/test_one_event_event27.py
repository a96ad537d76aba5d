"""One line told in the words of two rules that name one another is one event, and so is everything a
finding that tells one of them reaches (issue 7, event27).

JAX raises the status a failed CUDA call left as "XlaRuntimeError: INTERNAL: CUDA error: Failed to end stream
capture: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: ...": cuda-error, cuda-runtime-error-name and
xla-runtime-status-error each read that line.
fixtures/quoted/event27-xla-cuda-stream-capture-warp-unload-jax.log is the real paste
(google-deepmind/mujoco_warp#350): five errors for one failed capture before.
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
LOG = QUOTED / "event27-xla-cuda-stream-capture-warp-unload-jax.log"
RAISE = ("XlaRuntimeError: INTERNAL: CUDA error: Failed to end stream capture:"
         " CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: operation failed due to a previous error during capture")


def _errors(findings):
    return [f for f in findings if f.severity is Severity.ERROR]


@pytest.mark.parametrize("engine", ENGINES)
def test_warps_error_tells_the_xla_lines_and_the_raise_on_theirs(engine):
    (finding,) = _errors(scan_paths([str(LOG)], BUILTIN, engine=engine))
    lines = LOG.read_text().split("\n")
    assert lines[finding.line - 1].startswith("Warp CUDA error 900: ")
    assert finding.rule == "cuda-failure-code"
    for told in ("CUDA error: Failed to destroy CUDA graph", "CUDA error: Failed to end stream capture"):
        assert told in finding.message


def test_the_raise_alone_is_one_finding(tmp_path):
    log = tmp_path / "jax.log"
    log.write_text(RAISE + "\n")
    (finding,) = _errors(scan_paths([str(log)], BUILTIN, engine="python"))
    assert finding.rule == "xla-runtime-status-error"


def test_a_pytest_summary_line_keeps_the_test_and_its_error_apart(tmp_path):
    # pytest-test-outcome and cuda-error name neither one another: the test failed, and why, are two findings
    log = tmp_path / "summary.log"
    log.write_text("FAILED tests/test_capture.py::test_step - " + RAISE + "\n")
    rules = sorted(f.rule for f in _errors(scan_paths([str(log)], BUILTIN, engine="python")))
    assert "pytest-test-outcome" in rules and len(rules) == 2


def test_two_statuses_far_apart_stay_two_events(tmp_path):
    log = tmp_path / "two.log"
    filler = ["step %d" % n for n in range(20)]
    oom = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8"
    log.write_text("\n".join([RAISE, *filler, oom]) + "\n")
    findings = _errors(scan_paths([str(log)], BUILTIN, engine="python"))
    assert [f.line for f in findings] == [1, 22]
