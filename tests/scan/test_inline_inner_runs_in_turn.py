"""Two in-process inner runs (pytester's ``runpytest``, no "running:" line) in one outer test under
``pytest -v -s``: the second run's start stands on its own line right after the first run's verdict, with
no progress line between, so it runs in the same test. Before, its events named no test (and, after a
subprocess run, its failures were read as the log's own).

The log is fixtures/negative/attrib14-two-inline-runs-v-s: a real pytest 9.2.0 run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scan.test_attribution import scan
from tests.scan.test_engine_helpers import ENGINES
from tests.test_fixtures import _regenerate_module

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "negative" / "attrib14-two-inline-runs-v-s.log"
OUTER = "test_inline14.py::test_two_sessions"


def _body() -> str:
    _, body = _regenerate_module().split_fixture(FIXTURE.read_text(encoding="utf-8"))
    return "\n".join(body) + "\n"


@pytest.mark.parametrize("engine", ENGINES)
def test_the_second_inline_runs_events_are_the_outer_tests(engine: str) -> None:
    findings = [f for f in scan({"run.log": _body()}, engine) if f.rule == "cuda-error"]
    assert findings, "no CUDA error found: this test proves nothing"
    assert {(f.severity.value, f.test) for f in findings} == {("notice", OUTER)}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_run_after_the_outer_runs_own_verdict_is_the_logs_own(engine: str) -> None:
    # the same run again after the outer verdict (a CI step running pytest twice): the second run's inner
    # runs are again the outer test's, and nothing is read as the log's own failure
    body = _body()
    lines = [line for line in body.split("\n") if "##[" not in line and "shell: " not in line
             and "python -m pytest" not in line]
    twice = "\n".join(lines) + "\n" + "\n".join(lines)
    findings = scan({"run.log": twice}, engine)
    assert findings and all(f.severity.value == "notice" and f.test == OUTER for f in findings), \
        [(f.rule, f.severity.value, f.test) for f in findings]
