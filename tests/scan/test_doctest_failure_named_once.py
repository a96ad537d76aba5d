"""A failed doctest (pytest --doctest-modules) is one finding: its report header says "[doctest] x.scale"
(_pytest/doctest.py ``DoctestItem.reportinfo``, :388 in pytest 9.2.0) and its summary line names the node
id ``x.py::x.scale``; the two were two errors of one failure. Real pytest runs, both engines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
MODULE = '''
def scale(x):
    """Scale a gradient.

    >>> scale(2)
    4
    """
    return x * 3


def test_ok():
    assert scale(1) == 3
'''


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [(), ("-v",), ("-q",)])
def test_a_failed_doctest_is_one_finding_naming_its_node_id(tmp_path, engine, options):
    (tmp_path / "grads.py").write_text(MODULE)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--doctest-modules", *options,
               "grads.py"]
    proc = subprocess.run(command, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=120)
    log = Path(tmp_path / "run.log")
    log.write_bytes(proc.stdout)
    assert "[doctest] grads.scale" in log.read_text()
    errors = [f for f in scan_paths([str(log)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]
    assert [(f.rule, f.test) for f in errors] == [("pytest-test-outcome", "grads.py::grads.scale")]
