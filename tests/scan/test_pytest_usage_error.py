"""pytest that refuses its command line (an option of a plugin the runner lacks) runs no test and exits 4:
the scan must say so, and a green suite whose test checks such a refusal must stay green. Real pytest runs.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from analyzer.model import Kind, Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()

CHECKS_A_REFUSAL = """
    import subprocess
    import sys


    def test_an_unknown_option_is_refused():
        command = [sys.executable, "-m", "pytest", "--no-such-option"]
        proc = subprocess.run(command, capture_output=True, text=True)
        print("\\n" + proc.stderr)
        assert proc.returncode == 4
"""


def _pytest_log(tmp_path: Path, *args: str) -> Path:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    proc = subprocess.run(command, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=120)
    log = tmp_path / "job.log"
    log.write_bytes(proc.stdout)
    return log


@pytest.mark.parametrize("engine", ENGINES)
def test_an_unknown_option_is_an_error_naming_it(tmp_path, engine):
    log = _pytest_log(tmp_path, "--cov=train", str(tmp_path))
    (finding,) = scan_paths([str(log)], BUILTIN, engine=engine)
    assert (finding.rule, finding.kind, finding.severity, finding.line) == (
        "pytest-usage-error", Kind.CRASH, Severity.ERROR, 1)
    assert finding.message.endswith(": unrecognized arguments: --cov=train")


def test_a_passing_test_that_checks_a_refusal_stays_green(tmp_path):
    (tmp_path / "test_cli.py").write_text(textwrap.dedent(CHECKS_A_REFUSAL))
    log = _pytest_log(tmp_path, "-v", "-s", str(tmp_path))
    assert "ERROR: usage: " in log.read_text() and " 1 passed" in log.read_text()
    findings = scan_paths([str(log)], BUILTIN, engine="python")
    assert [(f.rule, f.severity) for f in findings] == [("pytest-usage-error", Severity.NOTICE)]
