"""A child's traceback header glued to unittest's line: it still opens the traceback, under that test.

``fixtures/multiprocessing/unittest-glued-process-header`` is a real capture (fixtures/regenerate.py):
under ``python -m unittest -v`` each test's forked multiprocessing worker raises, so its "Process
Process-N:" continues unittest's "test_m (mod.Class) ... " line, and for a test with a docstring the
docstring's line ("Workers load their shard. ... Process Process-2:").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.clean import clean_line
from tests.scan.test_engine_helpers import ENGINES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BUILTIN = load_catalogue()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_workers_traceback_glued_to_the_tests_line_is_read_with_that_tests_id(engine):
    findings = scan_paths([str(FIXTURES / "multiprocessing/unittest-glued-process-header.log")], BUILTIN,
                          engine=engine)
    workers = [(f.line, f.severity, f.test) for f in findings if f.rule == "mp-process-traceback"]
    assert workers == [
        (10, Severity.ERROR, "test_b_worker (test_shard_loader.ShardLoaderTest)"),
        (21, Severity.ERROR, "test_c_worker_doc (test_shard_loader.ShardLoaderTest)"),
        (31, Severity.NOTICE, "test_d_corrupt_shard_reported (test_shard_loader.ShardLoaderTest)"),
    ]


def test_a_docstring_line_is_cut_only_before_a_childs_block_header():
    assert clean_line(b"Workers load their shard. ... Process Process-2:\n")[0] == "Process Process-2:"
    assert clean_line(b"Checks the pool ... Exception in thread Thread-1 (worker):")[0] == \
        "Exception in thread Thread-1 (worker):"
    assert clean_line(b"Loads shards ... Traceback (most recent call last):")[0] == \
        "Traceback (most recent call last):"
    # any other text after " ... " is the line's own: a status a rule anchors on must not appear from it
    assert clean_line(b"Retrying the download ... Killed")[0] == "Retrying the download ... Killed"
    started = "Waiting ... Process Process-2: started"
    assert clean_line(started.encode())[0] == started
