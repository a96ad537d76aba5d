"""A log that ends in traceback frames vLLM logged at ERROR, pasted without their exception line (recall34).

vLLM logs a caught exception with logger.exception behind its prefix on every line (vllm/logger.py's
format "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s" and NewLineFormatter, which
repeats the prefix on each line of the record). The cleaner cuts that prefix, level and all, so a paste
that keeps only frames (vllm-project/vllm#39774, #17462) has nothing left that says error but the level.
Real runs: a CPython process logs a real exception that way; the test keeps its lines as a paste does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths

BUILTIN = load_catalogue()
RULE = "traceback-ends-log"

LOGS = """
import logging
import sys

class NewLineFormatter(logging.Formatter):
    # vllm/logger.py: every line of a record carries the record's prefix
    def format(self, record):
        msg = logging.Formatter.format(self, record)
        if record.message != "":
            prefix = msg.split(record.message)[0]
            msg = msg.replace("\\n", "\\n" + prefix)
        return msg

handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(NewLineFormatter("%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s",
                                      "%m-%d %H:%M:%S"))
log = logging.getLogger("vllm")
log.addHandler(handler)
log.setLevel(logging.INFO)

def init_device(rank):
    return open_comm(rank)

def open_comm(rank):
    raise RuntimeError("NCCL error: unhandled system error")

log.info("Starting to load model")
try:
    init_device(0)
except RuntimeError:
    CALL
"""


def _run(tmp_path: Path, how: str, keep) -> Path:
    """Run the program logging at ``how``, keep the lines ``keep`` selects, write them as a log."""
    call = 'log.exception("Worker failed")' if how == "exception" else 'log.info("stack", stack_info=True)'
    program = tmp_path / "worker.py"  # a file, so the frames show their code lines
    program.write_text(LOGS.replace("CALL", call))
    out = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    path = tmp_path / "paste.log"
    path.write_text("\n".join(keep(lines)) + "\n")
    return path


def _findings(path: Path):
    return [f for f in scan_paths([path], BUILTIN) if f.severity is Severity.ERROR]


def _frames_only(lines):
    """A paste's window: from the first frame to the last code line, no head, no exception line."""
    first = next(i for i, line in enumerate(lines) if '  File "' in line)
    last = max(i for i, line in enumerate(lines) if "raise RuntimeError" in line)
    return lines[first:last + 1]


def test_frames_logged_at_error_cut_before_the_exception_are_the_death(tmp_path):
    path = _run(tmp_path, "exception", _frames_only)
    assert all(line.startswith("ERROR ") for line in path.read_text().splitlines())
    found = _findings(path)
    assert [f.rule for f in found] == [RULE]
    assert found[0].line == len(path.read_text().splitlines())


def test_the_same_frames_with_a_line_after_them_are_no_death(tmp_path):
    after = "INFO 01-01 00:00:00 [api.py:1] ready"
    path = _run(tmp_path, "exception", lambda lines: _frames_only(lines) + [after])
    assert _findings(path) == []


def test_a_stack_logged_at_info_is_no_death(tmp_path):
    # logging's stack_info: the same frames, at INFO, the last words of the paste
    def stack(lines):
        first = next(i for i, line in enumerate(lines) if '  File "' in line)
        return lines[first:]
    path = _run(tmp_path, "info", stack)
    assert path.read_text().splitlines()[-1].startswith("INFO ")
    assert _findings(path) == []


def test_one_frame_at_error_is_not_enough(tmp_path):
    path = _run(tmp_path, "exception", lambda lines: _frames_only(lines)[-2:])
    assert _findings(path) == []
