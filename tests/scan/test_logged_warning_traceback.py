"""A traceback right under a logging WARNING record (python-logged-warning-traceback): logged and carried on
past when the program goes on printing, its last words when the log ends there. Real CPython programs."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List, Tuple

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths

CATALOGUE = load_catalogue()

# A results queue read with a timeout, as a harness waits for a worker's result: _queue.Empty uncaught is
# the result that never came (result-queue-empty-uncaught's wording).
PROGRAM = """
    import logging
    import queue
    import sys

    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s", stream=sys.stdout)
    log = logging.getLogger("harness")
    results = queue.Queue()
    if sys.argv[1] == "logged":
        try:
            results.get(timeout=0.1)
        except queue.Empty:
            log.warning("no result yet, asking the worker again", exc_info=True)
        print("the worker answered the second time", flush=True)
    else:
        log.warning("HF_HOME is not set, using the default cache")
        sys.stdout.flush()
        results.get(timeout=0.1)
"""


def errors(tmp_path: Path, mode: str) -> Tuple[List[Tuple[str, int]], str]:
    program = tmp_path / "harness.py"
    program.write_text(textwrap.dedent(PROGRAM))
    proc = subprocess.run([sys.executable, str(program), mode], capture_output=True, timeout=60)
    log = tmp_path / f"{mode}.log"
    log.write_bytes(proc.stdout + proc.stderr)
    found = [(f.rule, f.line) for f in scan_paths([str(log)], CATALOGUE) if f.severity is Severity.ERROR]
    return found, log.read_text()


def test_a_traceback_logged_at_warning_and_carried_on_past_is_no_error(tmp_path):
    found, text = errors(tmp_path, "logged")
    assert "WARNING harness: no result yet" in text and "Traceback (most recent call last):" in text
    assert found == [], text


def test_an_uncaught_traceback_after_an_unrelated_warning_that_ends_the_log_is_an_error(tmp_path):
    # Before: the marker took the crash under the WARNING line for a logged one, and the log passed.
    found, text = errors(tmp_path, "uncaught")
    lines = text.splitlines()
    assert lines[0].startswith("WARNING harness: HF_HOME")
    assert lines[1] == "Traceback (most recent call last):"
    assert found and all(line > 1 for _, line in found), (found, text)
