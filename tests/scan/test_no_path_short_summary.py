"""pytest's -rf short summary of a run whose node ids have no path ("FAILED ::TestX::test_y - reason": a
test file outside --rootdir, or ``pytest --pyargs pkg.mod``; pyargs25) names each failed test with its
reason, as "FAILED x.py::TestX::test_y - reason" does. Under --tb=no no report header names them, so the
summary's lines are all the log says. A passing test's output of C++ frames ("c10d::...::watchdogHandler()")
and a workflow command ("::error::...") names no test. Real pytest runs of the interpreter running the
tests (pytest 9.2.0 on CPython 3.11, 8.4.2 on 3.9), both engines.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from analyzer.model import WORKFLOW_COMMANDS, Kind, Severity
from analyzer.rules.loader import example_matches, load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
SUITE = """
    class TestAllReduce:
        def test_ring_sum(self):
            assert 1 + 1 == 3, "ring sum off by one"

        def test_tree_sum(self):
            pass


    def test_barrier_times_out():
        raise TimeoutError("barrier not reached in 5 s")


    def test_prints_cpp_frames_and_commands():
        print("    #3 0x7f21bfa4a068 in c10d::ProcessGroupNCCL::watchdogHandler() (libtorch_cuda.so+0x9d068)")
        print("::operator new(unsigned long)")
        print("::error::boom")
        print("::ERROR::not a test")
"""
# Written from the run's verdict (2 failed) and its summary, before the scanner was changed.
EXPECTED = [
    ("::TestAllReduce::test_ring_sum", "AssertionError: ring sum off by one"),
    ("::test_barrier_times_out", "TimeoutError: barrier not reached in 5 s"),
]


def _log(where: Path, options: tuple) -> Path:
    tests, rootdir = where / "tests", where / "rootdir"
    tests.mkdir()
    rootdir.mkdir()
    (tests / "test_pathless.py").write_text(textwrap.dedent(SUITE))
    env = dict(os.environ, COLUMNS="80")
    for name in ("PYTEST_ADDOPTS", "CI", "BUILD_NUMBER"):  # pytest cuts a reason to the width on CI
        env.pop(name, None)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *options, "--rootdir",
               str(rootdir), str(tests / "test_pathless.py")]
    proc = subprocess.run(command, cwd=str(rootdir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=120, env=env)
    log = where / "run.log"
    log.write_bytes(proc.stdout)
    return log


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [
    ("-rf", "--tb=no"), ("-q", "-rf", "--tb=no"), ("-rf", "--tb=no", "-s"), ("-rfE", "--tb=line", "-s"),
    ("-rf",),
])
def test_each_failed_test_of_a_no_path_summary_is_one_finding_with_its_reason(tmp_path, engine, options):
    log = _log(tmp_path, options)
    text = log.read_text()
    assert "2 failed, 2 passed" in text and "FAILED ::test_barrier_times_out - " in text
    findings = scan_paths([str(log)], BUILTIN, engine=engine)
    errors = [f for f in findings if f.severity is Severity.ERROR]
    assert sorted((f.rule, f.test) for f in errors) == [
        ("pytest-test-outcome", test) for test, _ in EXPECTED]
    for test, reason in EXPECTED:
        (finding,) = [f for f in errors if f.test == test]
        assert finding.kind is Kind.TEST_FAILURE
        assert reason in finding.message
    # the passing test's C++ frames and workflow commands name no test and start none
    assert {f.test for f in findings} <= {test for test, _ in EXPECTED}


@pytest.mark.parametrize("command", sorted(WORKFLOW_COMMANDS))
def test_no_workflow_command_is_a_no_path_test_in_the_summary(command):
    # The rule spells the runner's command names out (the catalogue is data); this keeps them the ones
    # model.py lists, in any case, as the runner matches them.
    (rule,) = [r for r in BUILTIN.rules if r.id == "pytest-test-outcome"]
    for name in (command, command.upper(), command.title()):
        assert not example_matches(rule, f"FAILED ::{name}::boom")
    assert example_matches(rule, f"FAILED ::{command.replace('-', '_')}_ok::boom")
