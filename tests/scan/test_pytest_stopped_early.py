"""pytest -x / --maxfail=N: the run stops at the first failure, and says so; the finding is that failure.

Real output of pytest 7.4.4 and 8.3.5 (CPython 3.11; the two print the same lines, their version and
times aside): "!!!!!! stopping after 1 failures !!!!!!" after a failed test is no event of its own, and
with a module that cannot be imported "Interrupted: 1 error during collection" follows it: the finding
names the module (pytest-collection-interrupted, which tells pytest-collection-error).
"""

from __future__ import annotations

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths

STOPPED_AFTER_A_FAILURE = """============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.3.5, pluggy-1.7.0
rootdir: /w/proj
collected 4 items

tests/test_a_train.py .F

=================================== FAILURES ===================================
________________________________ test_grad_norm ________________________________

    def test_grad_norm():
>       assert 2 + 2 == 5, "grad norm exploded"
E       AssertionError: grad norm exploded
E       assert (2 + 2) == 5

tests/test_a_train.py:6: AssertionError
=========================== short test summary info ============================
FAILED tests/test_a_train.py::test_grad_norm - AssertionError: grad norm expl...
!!!!!!!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!!!!!!!!
========================= 1 failed, 1 passed in 0.13s ==========================
"""

STOPPED_AT_COLLECTION = """============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.3.5, pluggy-1.7.0
rootdir: /w/proj
collected 4 items / 1 error

==================================== ERRORS ====================================
___________________ ERROR collecting tests/test_c_broken.py ____________________
ImportError while importing test module '/w/proj/tests/test_c_broken.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
/root/.pyenv/versions/3.11.7/lib/python3.11/importlib/__init__.py:126: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
tests/test_c_broken.py:1: in <module>
    import add_path  # noqa: F401  (a module the CI image lacks)
E   ModuleNotFoundError: No module named 'add_path'
=========================== short test summary info ============================
ERROR tests/test_c_broken.py
!!!!!!!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!!!!!!!!
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.67s ===============================
"""


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue()


def _findings(tmp_path, catalogue, text, version):
    path = tmp_path / "pytest.log"
    path.write_text(text.replace("pytest-8.3.5,", "pytest-%s," % version))
    return [f for f in scan_paths([str(path)], catalogue) if f.severity is not Severity.NOTICE]


@pytest.mark.parametrize("version", ["7.4.4", "8.3.5"])
def test_stopping_after_a_failure_is_that_failure(tmp_path, catalogue, version):
    (finding,) = _findings(tmp_path, catalogue, STOPPED_AFTER_A_FAILURE, version)
    assert (finding.rule, finding.line, finding.test) == (
        "pytest-test-outcome", 18, "tests/test_a_train.py::test_grad_norm")


@pytest.mark.parametrize("version", ["7.4.4", "8.3.5"])
def test_stopping_at_a_collection_error_names_the_module(tmp_path, catalogue, version):
    (finding,) = _findings(tmp_path, catalogue, STOPPED_AT_COLLECTION, version)
    assert (finding.rule, finding.line) == ("pytest-collection-interrupted", 19)
    assert "pytest could not collect tests/test_c_broken.py" in finding.message
