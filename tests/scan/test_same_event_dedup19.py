"""One event, one finding: the leftovers of issue 7, section 3 that dedup19 took.

- A logger's line and the traceback it logged under it are one event however long the traceback runs:
  vLLM's "Error in chat completion stream generator." and the EngineDeadError its traceback ends in 14
  lines on (fixtures/quoted/vllm-stream-generator-long-traceback-engine-dead.log, vllm#21466).
- gunicorn's halt ("Reason: Worker failed to boot.") names why: the exception of the worker's logged
  "Exception in worker process" traceback above it, and tells the CI step's exit line after it
  (fixtures/crash/gunicorn-halted-worker-failed-to-boot.log, gunicorn 27.0.1).
The runs these stand for are measured in /tmp/dedup19 (README.txt).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
GUNICORN = FIXTURES / "crash" / "gunicorn-halted-worker-failed-to-boot.log"
VLLM = FIXTURES / "quoted" / "vllm-stream-generator-long-traceback-engine-dead.log"
API = "(APIServer pid=104) ERROR 12-17 09:16:13 [async_llm.py:480] "
DEAD = ("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above)"
        " for the root cause.")
FRAMES = [
    '  File "/vllm/v1/engine/async_llm.py", line 439, in output_handler',
    "    outputs = await engine_core.get_output_async()",
    "              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    '  File "/vllm/v1/engine/core_client.py", line 846, in get_output_async',
    "    raise self._format_exception(outputs) from None",
]


def _errors(path: Path, engine: str):
    return [f for f in scan_paths([str(path)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_logged_line_and_the_long_traceback_under_it_are_one_event(engine):
    errors = _errors(VLLM, engine)
    assert [(f.rule, f.line) for f in errors] == [("vllm-engine-dead", 20)]
    assert "Error in chat completion stream generator" in errors[0].message


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("between", [0, 3, 12])
def test_other_processes_lines_inside_the_logged_traceback_do_not_split_it(tmp_path, engine, between):
    workers = [f"(Worker_TP{n % 4} pid={224 + n}) INFO 12-17 09:16:13 [multiproc_executor.py:599] WorkerProc"
               " shutting down." for n in range(between)]
    lines = [API + "AsyncLLM output_handler failed.", API + "Traceback (most recent call last):", *workers,
             *(API + frame for frame in FRAMES * 2), API + DEAD]
    log = tmp_path / "api.log"
    log.write_text("\n".join(lines) + "\n")
    errors = _errors(log, engine)
    assert [(f.rule, f.line) for f in errors] == [("vllm-engine-dead", len(lines))]
    assert "AsyncLLM output_handler failed" in errors[0].message


@pytest.mark.parametrize("engine", ENGINES)
def test_a_traceback_ending_elsewhere_leaves_a_later_engine_death_its_own(tmp_path, engine):
    lines = [API + "AsyncLLM output_handler failed.", API + "Traceback (most recent call last):",
             *(API + frame for frame in FRAMES), API + "ValueError: Unexpected tool call delta",
             *(f'INFO:     10.0.0.7:5124{n} - "POST /v1/chat/completions HTTP/1.1" 200 OK' for n in range(9)),
             API + DEAD]
    log = tmp_path / "api.log"
    log.write_text("\n".join(lines) + "\n")
    errors = _errors(log, engine)
    expected = [("vllm-exception-logged", 1), ("vllm-engine-dead", len(lines))]
    assert [(f.rule, f.line) for f in errors] == expected


@pytest.mark.parametrize("engine", ENGINES)
def test_gunicorns_halt_names_the_exception_its_worker_failed_to_boot_with(engine):
    errors = _errors(GUNICORN, engine)
    assert [(f.rule, f.line) for f in errors] == [("gunicorn-halted", 51)]
    assert "RuntimeError: model weights not found: /models/llama/consolidated.00.pth" in errors[0].message


@pytest.mark.parametrize("engine", ENGINES)
def test_gunicorns_halt_without_a_traceback_says_only_its_reason(tmp_path, engine):
    log = tmp_path / "gunicorn.log"
    log.write_text("[2026-12-07 01:41:27 +0000] [28829] [ERROR] Worker (pid:28830) exited with code 3.\n"
                   "[2026-12-07 01:41:27 +0000] [28829] [ERROR] Shutting down: Master\n"
                   "[2026-12-07 01:41:27 +0000] [28829] [ERROR] Reason: Worker failed to boot.\n")
    errors = _errors(log, engine)
    plain = "gunicorn shut down: Worker failed to boot"
    assert [(f.rule, f.message) for f in errors] == [("gunicorn-halted", plain)]


GUNICORN_BIN = os.environ.get("GUNICORN_BIN", "/tmp/healthy19/venv/bin/gunicorn")


@pytest.mark.skipif(not os.path.exists(GUNICORN_BIN), reason="no gunicorn (GUNICORN_BIN) on this machine")
def test_under_the_guard_gunicorns_halt_is_the_one_finding(tmp_path):
    (tmp_path / "bootoom.py").write_text(
        "def _load():\n    raise OSError(\"[Errno 2] No such file or directory: '/models/bert/model.bin'\")\n"
        "_load()\n")
    report = tmp_path / "report.json"
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root}
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"), "--json", str(report),
         "--", GUNICORN_BIN, "-w", "1", "-b", "127.0.0.1:0", "bootoom:app"],
        cwd=str(tmp_path), env=env, capture_output=True, timeout=120,
    )
    assert proc.returncode == 3
    findings = json.loads(report.read_text())["findings"]
    assert [f["rule"] for f in findings] == ["gunicorn-halted"]
    assert "OSError: [Errno 2] No such file or directory" in findings[0]["message"]
