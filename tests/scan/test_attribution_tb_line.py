"""pytest ``--tb=line`` as attribution reads it: its FAILURES section has no report header per test, and
what a failed test printed ("Captured stderr call") comes before that test's crash line
("/abs/test_x.py:13: AssertionError: ..."), so an event there is the test whose crash line comes next: the
k-th crash line of the section is the k-th FAILED line of the short summary.

The log is fixtures/pytest/attrib14-tb-line-child-crashes: a real run of ``pytest -q --tb=line``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Kind
from tests.scan.test_attribution import scan
from tests.scan.test_engine_helpers import ENGINES
from tests.test_fixtures import _regenerate_module

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "pytest" / "attrib14-tb-line-child-crashes.log"
FIRST = "test_tb_line14.py::test_a_segv_fails"
SECOND = "test_tb_line14.py::test_b_segv_fails"


def _body() -> str:
    """The log the runner saved: the fixture without its header."""
    _, body = _regenerate_module().split_fixture(FIXTURE.read_text(encoding="utf-8"))
    return "\n".join(body) + "\n"


def _crashes(log: str, engine: str) -> list:
    return [(f.severity.value, f.test) for f in scan({"run.log": log}, engine) if f.kind is Kind.CRASH]


@pytest.mark.parametrize("engine", ENGINES)
def test_each_childs_crash_is_the_test_whose_crash_line_follows_it(engine: str) -> None:
    assert _crashes(_body(), engine) == [("error", FIRST), ("error", SECOND)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_passes_section_between_failures_and_summary_is_skipped(engine: str) -> None:
    # -rA prints its PASSES section (a passing test's captured output under its header) after FAILURES
    log = _body().replace(
        "=========================== short test summary info",
        "===================================== PASSES =====================================\n"
        "________________________________ test_between_ok _______________________________\n"
        "=========================== short test summary info", 1)
    assert _crashes(log, engine) == [("error", FIRST), ("error", SECOND)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_summary_that_does_not_count_the_crash_lines_names_no_test(engine: str) -> None:
    # one FAILED line for two crash lines: which crash line is whose the log does not say
    lines = [line for line in _body().split("\n") if not line.endswith("FAILED " + SECOND + " - "
                                                                        "AssertionError: worker exited w...")]
    crashes = _crashes("\n".join(lines), engine)
    assert all(test is None for _, test in crashes), crashes


RANK_FIXTURE = FIXTURE.with_name("attrib18-tb-line-rank-prefix.log")


@pytest.mark.parametrize("engine", ENGINES)
def test_behind_torchruns_rank_prefix_each_crash_is_still_its_tests(engine: str) -> None:
    # a real torchrun --tee 3 run: "[rank0]:" before the FAILURES line, each crash line and the summary
    _, body = _regenerate_module().split_fixture(RANK_FIXTURE.read_text(encoding="utf-8"))
    assert _crashes("\n".join(body) + "\n", engine) == [("error", FIRST), ("error", SECOND)]


# kubectl logs --prefix (kubectl/pkg/cmd/logs/logs.go, addPrefixIfNeeded: "[pod/NAME/CONTAINER] "), and
# journald's short-precise stamp, host and program, whose time goes on from line to line
PREFIXES = {
    "kubectl": lambda i: "[pod/trainer-7d9f8/pytest] ",
    "journald": lambda i: "Dec 07 01:01:%02d.%06d gpu-node-3 python3[4242]: " % (16 + i // 20, 1000 * i),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("prefix", sorted(PREFIXES))
def test_behind_a_collectors_prefix_each_crash_is_still_its_tests(engine: str, prefix: str) -> None:
    lines = [line.split("Z ", 1)[1] if line[:2] == "20" else line for line in _body().split("\n") if line]
    log = "".join(PREFIXES[prefix](i) + line + "\n" for i, line in enumerate(lines))
    assert _crashes(log, engine) == [("error", FIRST), ("error", SECOND)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_summary_behind_another_prefix_names_no_test(engine: str) -> None:
    # the section behind one rank's prefix, the summary behind another's: not that section's summary
    lines = [line.split("Z ", 1)[1] for line in _body().split("\n") if line[:2] == "20"]
    cut = next(i for i, line in enumerate(lines) if "short test summary info" in line)
    log = "".join(("[rank0]:" if i < cut else "[rank1]:") + line + "\n" for i, line in enumerate(lines))
    assert [test for _, test in _crashes(log, engine)] in ([None], [None, None])
