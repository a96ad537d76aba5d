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


CONTINUED = """\
tests/test_config.py::test_config_loads PASSED                           [100%]

==================================== ERRORS ====================================
_____________________ ERROR collecting tests/test_food.py ______________________
tests/test_food.py:1: in <module>
    import add_path
E   ModuleNotFoundError: No module named 'add_path'
____________________ ERROR collecting tests/test_loader.py _____________________
E     File "/work/tests/test_loader.py", line 1
E       def test_loader(:
E                       ^
E   SyntaxError: invalid syntax
=========================== short test summary info ============================
ERROR tests/test_food.py
ERROR tests/test_loader.py
========================= 1 passed, 2 errors in 0.61s ==========================
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_module_reported_right_after_another_is_a_failure_of_its_own(tmp_path, engine):
    # pytest -v --continue-on-collection-errors (fixtures/crash/pytest-collection-errors-continued): the
    # second "ERROR collecting" report is no inner run printed in the first module's report.
    log = tmp_path / "pytest.log"
    log.write_text(CONTINUED)
    findings = scan_paths([str(log)], BUILTIN, engine=engine)
    assert [(f.rule, f.line, f.test) for f in findings] == [
        ("pytest-collection-error", 4, "tests/test_food.py"),
        ("pytest-collection-error", 8, "tests/test_loader.py"),
    ]
