"""What the findings of recall21's real windows say: the signal MPICH's hydra names in its frame (its
"EXIT CODE" is the raw wait status of a rank a signal ended), and TensorFlow 2's graph-execution OOM told
once, on the exception's line, with the allocation that failed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUOTED = ROOT / "fixtures" / "quoted"


def _errors(path: Path) -> list:
    proc = subprocess.run([sys.executable, "-m", "analyzer", "--format", "json", str(path)], cwd=str(ROOT),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return [f for f in json.loads(proc.stdout)["findings"] if f["severity"] == "error"]


@pytest.mark.parametrize(
    "fixture, told",
    [
        ("mpich-bad-termination-exit-9-jukebox", "terminated badly: killed by signal 9 (SIGKILL)"),
        ("mpich-bad-termination-exit-134-jetson", "killed by signal 6 (SIGABRT), core dumped"),
        ("mpich-bad-termination", "terminated badly: killed by signal 9 (SIGKILL)"),
        ("mpich-killed-by-signal-11-rank0-montepython", "terminated badly: killed by signal 11 (SIGSEGV)"),
    ],
)
def test_mpich_frame_names_the_signal_that_ended_the_rank(fixture, told):
    (finding,) = [f for f in _errors(QUOTED / (fixture + ".log")) if f["rule"] == "mpich-bad-termination"]
    assert told in finding["message"]
    assert "BAD TERMINATION" in finding["excerpt"]


def test_tf_graph_execution_oom_is_one_finding_on_the_exception_line():
    path = QUOTED / "tf-graph-execution-oom-celery-fair.log"
    lines = path.read_text().splitlines()
    (finding,) = _errors(path)
    assert finding["rule"] == "tf-graph-execution-oom"
    assert lines[finding["line"] - 1].endswith("ResourceExhaustedError: Graph execution error:")
    told = "TensorFlow ran out of memory: OOM when allocating tensor with shape[16,64,64,64]"
    assert finding["message"] == told
