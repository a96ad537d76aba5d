"""A parametrize id may hold "::" (``test_group_barrier[tp::0]``, a process group's name): its report
header ("____ test_group_barrier[tp::0] ____") is a header's name, not a node id, so it is matched with the
node id the log spells elsewhere and the failure is one finding. It was two: the header's name was taken for
a node id (it holds "::"), and ``x.py::test_y[tp::0]``'s header form was cut at the id's "::".
Real pytest runs of the interpreter running the tests, both engines (blind pass of names25).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
SUITE = """
    import pytest


    @pytest.mark.parametrize("group", ["tp::0", "dp 1"], ids=["tp::0", "dp 1"])
    def test_group_barrier(group):
        assert group != "tp::0", f"barrier timed out on {group}"


    class TestOuter:
        @pytest.mark.parametrize("rank", ["a::b"])
        def test_shard(self, rank):
            assert rank == "c", "shard size mismatch"
"""
BARRIER = "test_groups.py::test_group_barrier[tp::0]"
SHARD = "test_groups.py::TestOuter::test_shard[a::b]"


def _log(where: Path, options: tuple) -> Path:
    (where / "test_groups.py").write_text(textwrap.dedent(SUITE))
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *options, "test_groups.py"]
    proc = subprocess.run(command, cwd=str(where), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=120)
    log = where / "run.log"
    log.write_bytes(proc.stdout)
    return log


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [(), ("-v",), ("-q",), ("-rA",)])
def test_a_failure_whose_parametrize_id_holds_colons_is_one_finding(tmp_path, engine, options):
    log = _log(tmp_path, options)
    assert "2 failed, 1 passed" in log.read_text()
    errors = [f for f in scan_paths([str(log)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]
    assert sorted((f.rule, f.test) for f in errors) == [
        ("pytest-test-outcome", SHARD), ("pytest-test-outcome", BARRIER)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_header_whose_id_holds_colons_is_named_by_the_node_id_after_it(tmp_path, engine):
    log = _log(tmp_path, ("-rN",))  # no summary: the headers alone name the failures
    errors = [f for f in scan_paths([str(log)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]
    assert sorted(f.test for f in errors) == ["TestOuter.test_shard[a::b]", "test_group_barrier[tp::0]"]
