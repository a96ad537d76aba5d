"""A retry plugin's report names pytest's item ("test_ring_sum[2]", ``item.name``); under -v pytest printed
the test's node id only before the report, so the findings under it name that id.

pytest-retry 1.7.0 (retry_plugin.py ``RetryManager``: "\\t<item.name> failed on attempt 1! Retrying!") and
flaky 3.8.1 (_flaky_plugin.py: "<item.name> failed (1 runs remaining out of 2).") print the item's name,
which for a class's parametrized test is neither its node id nor a report header's "TestC.test_y[p]".
The logs are fixtures/negative/names25-* (real runs, fixtures/regenerate.py ``# names25:``) and retry24's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.attribution import node_ids_of_item
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RING = "test_collectives.py::TestAllReduce::test_ring_sum[{}]"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("log", ["names25-pytest-retry-v-class-param", "names25-flaky-v-class-param"])
def test_a_retried_class_test_is_named_by_the_node_id_printed_before_the_report(engine, log):
    findings = scan_paths([str(FIXTURES / "negative" / f"{log}.log")], BUILTIN, engine=engine)
    assert [(f.rule, f.severity, f.test) for f in findings] == [
        ("cuda-error", Severity.NOTICE, RING.format(2)), ("cuda-error", Severity.NOTICE, RING.format(4))]
    assert all(f.message.endswith(f"during {f.test}, which passed on rerun") for f in findings)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("log", ["negative/retry24-pytest-retry-v", "negative/retry24-flaky-v",
                                 "crash/retry24-pytest-retry-broken-v"])
def test_a_retried_module_test_is_named_by_its_node_id(engine, log):
    findings = scan_paths([str(FIXTURES / f"{log}.log")], BUILTIN, engine=engine)
    timeouts = [f.test for f in findings if f.rule == "pytest-timeout"]
    assert timeouts == ["test_gpu_flaky.py::test_kernel_stuck"]


LINES = (b"t.py::test_a[1] PASSED\n"
         b"t.py::TestC::test_b[2] RETRY\n"
         b"u.py::test_b[2]_slow PASSED\n"
         b"t.py::TestC::test_b[2] PASSED\n")


def test_node_ids_of_item_reads_module_and_class_tests():
    assert node_ids_of_item(LINES, b"test_a[1]") == {"t.py::test_a[1]"}
    assert node_ids_of_item(LINES, b"test_b[2]") == {"t.py::TestC::test_b[2]"}  # not u.py's test_b[2]_slow


def test_node_ids_of_item_stops_at_end_and_sees_two_classes():
    assert node_ids_of_item(LINES, b"test_b[2]", end=LINES.index(b"t.py::TestC")) == set()
    two = LINES + b"t.py::TestD::test_b[2] PASSED\n"
    assert node_ids_of_item(two, b"test_b[2]") == {"t.py::TestC::test_b[2]", "t.py::TestD::test_b[2]"}
    assert node_ids_of_item(b"x.py:12: test_b[2]\n", b"test_b[2]") == set()
