"""A healthy step that prints a CI system's end-of-job words in its config or docs scans clean.

Jobs print their own config (``cat``, ``grep -n``) and docs, whose comments quote CircleCI's
no-output timeout and Buildkite's cancel comment. Those words sit behind a comment marker, a
``grep -n`` line number or inside a sentence; CircleCI writes its own line alone, as the step's
last. The steps run under a real bash; CircleCI itself cannot run here, so the failing step prints
CircleCI's line the way CircleCI writes it (alone, last) and exits as its step does.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from analyzer.verdict import decide
from tests.scan.test_attribution import scan, summary
from tests.scan.test_engine_helpers import ENGINES

CONFIG = """\
# CircleCI ends a step that prints nothing for no_output_timeout:
#   Too long with no output (exceeded 10m0s): context deadline exceeded
no_output_timeout: 30m
# Buildkite's agent writes this before it sends the command SIGTERM:
#   # Received cancellation signal, interrupting
timeout_in_minutes: 60
"""
HEALTHY_STEP = """
grep -n "no_output_timeout\\|Too long\\|cancellation" config.yml
cat config.yml
echo "A step silent for 10m ends with: Too long with no output (exceeded 10m0s): context deadline exceeded"
echo "tests: 12 passed"
"""
TIMED_OUT_STEP = """
echo "tests: 3 passed, waiting for the all_reduce of rank 1"
echo "Too long with no output (exceeded 10m0s): context deadline exceeded"
exit 1
"""


def bash_step(where: Path, script: str) -> str:
    (where / "config.yml").write_text(CONFIG)
    proc = subprocess.run(["bash", "-e", "-c", script], cwd=str(where), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=60)
    return proc.stdout.decode("utf-8", "backslashreplace")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_config_and_docs_quoting_the_wordings_scan_clean(tmp_path, engine):
    log = bash_step(tmp_path, HEALTHY_STEP)
    assert "2:#   Too long with no output" in log and "\n#   # Received cancellation signal" in log
    findings = scan({"job.log": log}, engine=engine)
    assert [s for s in summary(findings) if s[1] in ("error", "warning")] == []
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_circlecis_own_line_at_the_end_of_a_step_is_an_error(tmp_path, engine):
    log = bash_step(tmp_path, TIMED_OUT_STEP)
    findings = scan({"job.log": log}, engine=engine)
    assert [(s[0], s[1], s[2]) for s in summary(findings)] == [("circleci-no-output", "error", 2)]
    assert decide(findings)[1] == 1
