"""A handled event in pytest's report of a test is named by the test's node id, not the report's header.

pytest heads each report of ``-rA``/``-rP`` (PASSES) and of FAILURES with the test's name without its
file (``____ RendezvousTCPTest.test_dns_timeout ____``); the short summary, the ``-v`` lines and xdist's
lines spell the node id (``PASSED test_store.py::RendezvousTCPTest::test_dns_timeout``). Before, an event
in a passing test's report was attributed to the bare header name (pytest 9.2.0 ``-rA`` over torch's
test_store.py: ``RendezvousTCPTest.test_dns_timeout``).
"""

from __future__ import annotations

import pytest

from analyzer.scan import engine as engine_module
from analyzer.scan.attribution import header_tail, node_ids_ending
from tests.scan.test_attribution import scan, summary
from tests.scan.test_engine_helpers import ENGINES

SEP = "=" * 30


def _passes_log(header: str, summary_ids, progress_ids=()) -> str:
    lines = ["%s test session starts %s" % (SEP, SEP)]
    lines += ["%s PASSED" % node for node in progress_ids]
    lines += [
        "%s PASSES %s" % (SEP, SEP),
        "%s %s %s" % ("_" * 20, header, "_" * 20),
        "%s Captured stderr call %s" % ("-" * 20, "-" * 20),
        "[E1201 12:18:12.230747353 TCPStore.cpp:328] [c10d] TCP client failed to connect/validate to host"
        " dnsnotexist:23456 - timed out (try=1, timeout=1000ms): The client socket has timed out after 1000ms"
        " while trying to connect to (dnsnotexist, 23456).",
        "%s short test summary info %s" % (SEP, SEP),
    ]
    lines += ["PASSED %s" % node for node in summary_ids]
    lines.append("%s %d passed in 3.20s %s" % (SEP, max(1, len(summary_ids)), SEP))
    return "\n".join(lines) + "\n"


TORCH_STORE = _passes_log(
    "RendezvousTCPTest.test_dns_timeout",
    ["test_store.py::RendezvousTCPTest::test_common_errors",
     "test_store.py::RendezvousTCPTest::test_dns_timeout",
     "test_store.py::TCPStoreTest::test_dns_timeout"],
)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("read_size", [engine_module.READ_SIZE, 7])
def test_a_handled_event_in_a_passes_report_names_the_node_id(engine, read_size, monkeypatch):
    monkeypatch.setattr(engine_module, "READ_SIZE", read_size)
    (finding,) = scan({"job.log": TORCH_STORE}, engine=engine)
    assert summary([finding]) == [
        ("c10d-client-connect-timeout", "notice", 5, "test_store.py::RendezvousTCPTest::test_dns_timeout")
    ]
    assert finding.message.endswith(
        " during test_store.py::RendezvousTCPTest::test_dns_timeout, which passed"
    )


def test_the_node_id_of_a_parametrized_test_with_spaces_and_dots_is_found():
    node = "tests/dist/test_x.py::test_store[gloo over tcp.v2]"
    log = _passes_log("test_store[gloo over tcp.v2]", [node])
    (finding,) = scan({"job.log": log})
    assert finding.test == node


def test_only_what_follows_the_event_names_it_so_any_window_reads_the_same():
    # -v's lines come before the report: a window that ended before the event no longer holds them.
    node = "tests/dist/test_x.py::test_store[gloo]"
    log = _passes_log("test_store[gloo]", [], [node])
    (finding,) = scan({"job.log": log})
    assert finding.test == "test_store[gloo]"


def test_a_name_two_files_share_stays_the_headers_own():
    log = _passes_log("test_store[nccl]", ["a/test_one.py::test_store[nccl]",
                                           "b/test_two.py::test_store[nccl]"])
    (finding,) = scan({"job.log": log})
    assert (finding.severity.value, finding.test) == ("notice", "test_store[nccl]")


def test_a_method_of_the_same_name_in_a_class_is_not_the_module_level_test():
    assert node_ids_ending(b"PASSED t.py::TestD::test_y\nPASSED t.py::test_y \n", header_tail("test_y")) == {
        "t.py::test_y"
    }
    assert node_ids_ending(b"PASSED t.py::test_y_slow\n", header_tail("test_y")) == set()
    assert header_tail("TestC.test_y[p.q]") == b"::TestC::test_y[p.q]"
