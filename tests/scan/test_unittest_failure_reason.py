"""A unittest failure names its one-line reason, as a pytest one does from its short summary.

unittest prints no summary line per test: its report ("FAIL: test_m (mod.Class)", a separator, the
traceback) ends in the exception, and with a chained exception the last traceback's is what failed the
test. Real unittest runs (CPython's runner, the interpreter running these tests).
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

SUITE = """
    import unittest


    class TestCheckpoint(unittest.TestCase):
        def test_shapes_match(self):
            self.assertEqual([4, 8], [4, 16])

        def test_load_retries(self):
            try:
                {}["rank1.pt"]
            except KeyError:
                raise RuntimeError("checkpoint shard of rank 1 is missing")

        def test_passes(self):
            pass


    if __name__ == "__main__":
        unittest.main(verbosity=2)
"""


@pytest.fixture(scope="module")
def run_log(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("reason")
    (work / "test_ckpt.py").write_text(textwrap.dedent(SUITE))
    proc = subprocess.run([sys.executable, "test_ckpt.py"], cwd=str(work), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=120)
    assert proc.returncode == 1
    log = work / "run.log"
    log.write_bytes(proc.stdout)
    assert b"During handling of the above exception, another exception occurred:" in proc.stdout
    return log


@pytest.mark.parametrize("engine", ENGINES)
def test_each_failed_unittest_test_names_the_exception_its_report_ends_in(run_log, engine):
    failures = {
        f.test: f.message for f in scan_paths([str(run_log)], BUILTIN, engine=engine)
        if f.kind is Kind.TEST_FAILURE and f.severity is Severity.ERROR
    }
    shapes = "test_shapes_match (__main__.TestCheckpoint)"
    retries = "test_load_retries (__main__.TestCheckpoint)"
    assert failures == {
        shapes: f"{shapes} failed: AssertionError: Lists differ: [4, 8] != [4, 16]",
        retries: f"{retries} failed: RuntimeError: checkpoint shard of rank 1 is missing",
    }
