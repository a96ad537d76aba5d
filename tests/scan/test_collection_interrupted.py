"""A pytest session interrupted by collection errors and the modules it could not collect are one finding.

pytest reports each module it could not import ("____ ERROR collecting tests/test_food.py ____" and its
traceback, then "ERROR tests/test_food.py" in the short summary) and ends the session with "Interrupted:
1 error during collection" before any test ran: one event, told by the Interrupted line.
"""

from __future__ import annotations

import pytest

from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()


COLLECTION = """\
==================================== ERRORS ====================================
_____________________ ERROR collecting tests/test_food.py ______________________
tests/test_food.py:1: in <module>
    import add_path
E   ModuleNotFoundError: No module named 'add_path'
=========================== short test summary info ============================
ERROR tests/test_food.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.05s ===============================
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_collection_error_and_the_interrupted_session_are_one_finding(tmp_path, engine):
    # pytest 9.0.3's wording (fixtures/crash/pytest-collection-errors-interrupted has the whole run)
    log = tmp_path / "pytest.log"
    log.write_text(COLLECTION)
    (finding,) = scan_paths([str(log)], BUILTIN, engine=engine)
    assert (finding.rule, finding.line) == ("pytest-collection-interrupted", 8)
    assert "; pytest could not collect tests/test_food.py: none of its tests ran (line 2)" in finding.message
