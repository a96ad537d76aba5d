"""unittest's class and module fixtures as attribution reads them: a failed ``setUpClass`` is reported as
a test of that name, written after what the fixture printed (``setUpClass (mod.Class) ... ERROR``), and
without ``-v`` its ``E`` counts in ``errors=`` but not in "Ran N tests".

The logs are fixtures/pytest/attrib13-unittest-setupclass-*: real runs of ``python -m unittest [-v]``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Kind
from analyzer.scan._engine_wrap import wrap_width
from analyzer.scan.letters import verdict_letters
from tests.scan.test_attribution import scan
from tests.scan.test_engine_helpers import ENGINES
from tests.test_fixtures import _regenerate_module

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pytest"
SETUP_CLASS = "setUpClass (test_fixtures13.BrokenSetup)"


def _body(name: str) -> str:
    """The log a runner saved: the fixture without its header."""
    _, body = _regenerate_module().split_fixture((FIXTURES / name).read_text(encoding="utf-8"))
    return "\n".join(body) + "\n"


@pytest.mark.parametrize("engine", ENGINES)
def test_an_event_before_a_fixtures_line_is_that_fixtures_even_where_the_log_looks_cut(engine: str) -> None:
    # Saved by `2>&1 | tee`, the run's one longest line (the child's TimeoutExpired) ends a word right before
    # the fixture's line. That alone no longer reads as a terminal's cut (wrap14); a note cut at the same
    # width above the run, going on in lower case, does: the join of the longest line would hide the
    # fixture's line.
    log = _body("attrib13-unittest-setupclass-v-file.log")
    width = max(len(line) for line in log.splitlines())
    note = "copied from a terminal as wide as the run's longest line, so that this note is cut in a word " * 3
    start = next(i for i in range(len(note)) if note[i + width - 1].isalpha() and note[i + width].isalpha())
    text = note[start:]
    log = text[:width] + "\n" + text[width:width + 30] + "\n" + log
    assert wrap_width(log.encode()) == width, "the log does not look cut: this test proves nothing"
    timeouts = [f for f in scan({"run.log": log}, engine) if f.kind is Kind.TIMEOUT]
    assert [(f.severity.value, f.test) for f in timeouts] == [("error", SETUP_CLASS)]


def test_fixture_errors_are_letters_that_ran_n_tests_does_not_count() -> None:
    verdict = "Ran 4 tests in 0.348s\n\nFAILED (failures=1, errors=1, skipped=1)"
    assert verdict_letters(verdict) == {"F": 1, "E": 1, "s": 1, ".": 1}
    assert verdict_letters(verdict, fixture_errors=1) == {"F": 1, "E": 1, "s": 1, ".": 2}
    assert verdict_letters(verdict, fixture_errors=2) is None  # more fixtures than errors: not this run


@pytest.mark.parametrize("engine", ENGINES)
def test_without_v_the_kth_e_is_the_kth_error_reported(engine: str) -> None:
    log = _body("attrib13-unittest-setupclass-plain.log")
    findings = {f.kind: f for f in scan({"run.log": log}, engine) if f.kind in (Kind.TIMEOUT, Kind.CRASH)}
    assert (findings[Kind.TIMEOUT].severity.value, findings[Kind.TIMEOUT].test) == ("error", SETUP_CLASS)
    # the letter after the child's crash is a ".": the test that printed it passed (which one, no line says)
    assert (findings[Kind.CRASH].severity.value, findings[Kind.CRASH].test) == ("notice", None)
