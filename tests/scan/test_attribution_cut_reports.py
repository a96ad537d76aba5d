"""A pytest run cut inside its FAILURES or ERRORS section (a job killed, a log cut) names its failures by
their report headers: pytest writes a "____ test_y ____" report there only for a test that failed, and the
short summary and verdict that would say so never came (``LogState._headers_failed``).

Real runs: pytest 9 over a suite with a failing test, an erroring fixture and a passing test that prints, its
log cut at every line. A header names its test's failure from its line on, once: the summary and -v lines
that name it too make no second one; a passing test's report (PASSES) and a report headed by a file alone
(xdist's crash report before its line) name none. xdist's crash report, from the committed capture. A cut
run's headers stay failures when another run follows in the log and passes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scan.test_attribution import pytest_log, scan
from tests.scan.test_engine_helpers import ENGINES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

SUITE = """
    import pytest


    @pytest.fixture
    def store():
        raise ConnectionRefusedError("could not reach the rendezvous store")


    def test_a_pass_prints():
        print("rank 0 ready")


    def test_b_fail():
        loss = float("nan")
        assert loss == loss, "loss diverged to nan"


    def test_c_store(store):
        pass
"""


def failures(log: str, engine: str = "python") -> dict:
    return {f.test: f.message for f in scan({"job.log": log}, engine=engine)
            if f.kind.value == "test-failure"}


def cut_at(log: str, lines: int) -> str:
    return "\n".join(log.splitlines()[:lines]) + "\n"


def header_line(log: str, name: str) -> int:
    return next(n for n, line in enumerate(log.splitlines(), 1)
                if line.startswith("_") and line.rstrip("_").rstrip().endswith(" " + name))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [["-q"], ["-q", "-rA"], ["-q", "--tb=short"], ["-x", "-q", "-rA"]])
def test_a_run_cut_after_a_report_header_names_that_test_as_failed(tmp_path, engine, options):
    log = pytest_log(tmp_path, "test_cut.py", SUITE, options)
    full = failures(log, engine)
    assert "test_cut.py::test_b_fail" in full and not any("::" not in str(t) for t in full), full
    b_header = header_line(log, "test_b_fail")
    verdict = next(n for n, line in enumerate(log.splitlines(), 1) if " failed" in line and " in " in line)
    for lines in range(b_header - 1, verdict):
        found = failures(cut_at(log, lines), engine)
        b_found = [t for t in found if t.endswith("test_b_fail")]
        if lines < b_header:  # (ERRORS, before FAILURES, names test_c_store's error)
            assert b_found == [], (lines, found)
            continue
        assert len(b_found) == 1, (lines, found)
        if "FAILED test_cut.py::test_b_fail" not in cut_at(log, lines):  # only the header says so
            assert b_found == ["test_b_fail"]
            reported = any(line.startswith("E ") and line.endswith(" AssertionError: loss diverged to nan")
                           for line in cut_at(log, lines).splitlines())
            assert found["test_b_fail"] == ("test_b_fail failed: AssertionError: loss diverged to nan"
                                            if reported else "test_b_fail failed"), (lines, found)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_errors_sections_header_is_that_tests_error_and_a_passes_one_no_failure(tmp_path, engine):
    log = pytest_log(tmp_path, "test_cut.py", SUITE, ["-q", "-rA"])
    lines = log.splitlines()
    errors = next(n for n, line in enumerate(lines, 1) if "= ERRORS =" in line)
    c_header = header_line(log, "ERROR at setup of test_c_store")
    assert errors < c_header
    found = failures(cut_at(log, c_header + 1), engine)
    assert found == {"test_c_store": "test_c_store failed"}, found
    # under PASSES a report is a passing test's: the log cut there names no failure it did not name before
    passes = next(n for n, line in enumerate(lines, 1) if "= PASSES =" in line)
    a_header = header_line(log, "test_a_pass_prints")
    assert passes < a_header
    assert set(failures(cut_at(log, a_header + 2), engine)) == {"test_c_store", "test_b_fail"}


@pytest.mark.parametrize("engine", ENGINES)
def test_xdists_crash_report_names_the_test_its_file_header_stands_for(engine):
    text = (FIXTURES / "pytest" / "attrib16-xdist-crash-killed.log").read_text()
    body = [line for line in text.splitlines() if not line.startswith("#! ")]
    crash = next(n for n, line in enumerate(body, 1) if "crashed while running" in line)
    assert body[crash - 3].endswith(" test_shapes16.py " + "_" * 31)  # the file's header, then "[gw0] linux"
    for lines, named in ((crash - 2, False), (crash - 1, False), (crash, True)):
        found = failures("\n".join(body[:lines]) + "\n", engine)
        assert ("test_shapes16.py::test_e_worker_dies" in found) is named, (lines, found)
        assert not any(str(t).endswith(".py") for t in found), found
        if named:
            assert found["test_shapes16.py::test_e_worker_dies"] == (
                "test_shapes16.py::test_e_worker_dies failed: worker 'gw0' crashed while running"
                " 'test_shapes16.py::test_e_worker_dies'")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cut_runs_headers_stay_failures_when_another_run_follows_and_passes(tmp_path, engine):
    log = pytest_log(tmp_path, "test_cut.py", SUITE, ["-rA"])
    summary = next(n for n, line in enumerate(log.splitlines(), 1) if "short test summary info" in line)
    cut = cut_at(log, summary + 1)  # a step's first command, killed after its summary's first line
    assert cut.endswith("PASSED test_cut.py::test_a_pass_prints\n")
    again = pytest_log(tmp_path, "test_ok.py", "def test_ok():\n    pass\n", ["-rA"])
    assert "test session starts" in again and "1 passed" in again
    found = failures(cut + again, engine)
    assert set(found) == {"test_c_store", "test_b_fail"}, found
    # the second run's verdict judges its own tests only: without the cut run before it, nothing failed
    assert failures(again, engine) == {}


SUBTESTS = """
    def test_each(subtests):
        for i in range(3):
            with subtests.test(msg="custom message", i=i):
                assert i == 0
"""


@pytest.mark.skipif(int(pytest.__version__.split(".")[0]) < 9,
                    reason="the subtests fixture is built into pytest from 9.0, which needs Python 3.10")
@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_subtests_report_is_its_tests_failure_once(tmp_path, engine):
    log = pytest_log(tmp_path, "test_sub.py", SUBTESTS, ["-v"])
    header = header_line(log, "test_each [custom message] (i=1)")
    assert "test_sub.py::test_each FAILED" in log  # pytest 9's own line for the test, before the reports
    assert set(failures(cut_at(log, header + 1), engine)) == {"test_sub.py::test_each"}
    log = pytest_log(tmp_path, "test_sub.py", SUBTESTS, ["-q"])
    header = header_line(log, "test_each [custom message] (i=1)")
    assert set(failures(cut_at(log, header + 1), engine)) == {"test_each [custom message] (i=1)"}
