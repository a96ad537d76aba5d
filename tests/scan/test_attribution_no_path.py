"""pytest node ids with no path ("::PosixTests::test_sigint PASSED": a module outside the rootdir, as
``pytest --pyargs`` runs an installed package's tests), and GitHub workflow commands, which also start a
line with "::" and are never a test."""

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from analyzer.scan.attribution import header_tail, node_ids_ending, parse_progress, running_test


@pytest.mark.parametrize("line, test, finished", [
    (b"::PosixTests::test_sigint PASSED", "::PosixTests::test_sigint", True),
    (b"::test_child_abort_is_handled Fatal Python error: Aborted", "::test_child_abort_is_handled", False),
    (b"::T::test_x[a b] FAILED", "::T::test_x[a b]", True),
    (b"::ProcessPoolForkserverExecutorDeadlockTest::test_shutdown_deadlock_pickle ",
     "::ProcessPoolForkserverExecutorDeadlockTest::test_shutdown_deadlock_pickle", False),
    (b"2024-01-09T18:41:23.1398960Z ::TestWorker::test_starts PASSED", "::TestWorker::test_starts", True),
])
def test_a_no_path_node_id_starts_a_progress_line(line, test, finished):
    assert parse_progress(line) == (test, finished, False, False)


@pytest.mark.parametrize("line", [
    b"::group::Run tests", b"::endgroup::", b"::error file=a.py,line=3::boom", b"::error::boom",
    b"::warning title=w::x", b"::notice::n", b"::debug::d", b"::add-mask::secret", b"::stop-commands::tok",
    b"::tok::", b"::pause-logging::", b"::set-output name=x::1", b"::save-state name=x::1", b"::echo::on",
    b"::add-matcher::m.json", b"::remove-matcher owner=o::", b"2024-01-09T18:41:23.1Z ::group::pytest",
    b"::ffff:10.0.0.1 connected", b"::1 port 80", b"::std::vector<int> v", b"x ::test_y PASSED",
    # the runner matches a command's name ignoring case (examples/inject.py's "::ERROR::...")
    b"::ERROR::injected upper-case command", b"::Warning file=a.py::w", b"::EndGroup:: x",
])
def test_a_workflow_command_or_other_double_colon_is_no_test(line):
    assert parse_progress(line) is None


def test_the_test_running_is_named_after_workflow_commands():
    before = b"::group::Run pytest\n::TestW::test_a PASSED\n::error::x\n::TestW::test_hangs \n"
    assert running_test(before, True) == "::TestW::test_hangs"
    assert running_test(b"::TestW::test_a PASSED\n::group::x\n::endgroup::\n", True) is None


def test_a_report_header_takes_the_no_path_id_an_r_line_spells():
    buf = (b"::PosixTests::test_sigint FAILED\n"
           b"2024-01-09T18:41:23.1Z FAILED ::PosixTests::test_sigint - AssertionError: x\n"
           b"::group::PosixTests::test_sigint\n")
    assert node_ids_ending(buf, header_tail("PosixTests.test_sigint")) == {"::PosixTests::test_sigint"}
    tail = header_tail("PosixTests.test_sigint")
    assert node_ids_ending(b"::group::x ::PosixTests::test_sigint\n", tail) == set()


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
# Real C++ stack lines quoted in public issues (fixtures/quoted: the NCCL watchdog's frames, an ASan
# report's, xla's terminal-wrapped frames, one of whose rows starts "::metrics::Counter*)").
CPP_FIXTURES = ["quoted/nccl-watchdog-pg0-allgather-base-cookbook.log",
                "quoted/asan-heap-buffer-overflow-details.log", "quoted/xla-xrt-check-failed-e-line.log"]
# A frame of C++'s global operator as ASan prints it when symbolized so, and as a wrapped row starts.
CPP_OPERATOR_LINES = [
    b"    #1 0x7f2d2e7fa868 in ::operator new(unsigned long) (libclang_rt.asan-x86_64.so+0x117868)",
    b"::operator new(unsigned long) (libclang_rt.asan-x86_64.so+0x117868)",
    b"::operator delete(void*)",
]


def _cpp_lines():
    lines = list(CPP_OPERATOR_LINES)
    for name in CPP_FIXTURES:
        body = (FIXTURES / name).read_bytes().split(b"\n")
        lines += [line for line in body if b"::" in line and not line.startswith(b"#!")]
    return lines


def test_cpp_frames_are_no_progress_lines_and_most_are_not_even_parsed():
    from analyzer.scan.attribution import _may_be_progress

    lines = _cpp_lines()
    assert len(lines) > 10
    assert [line for line in lines if parse_progress(line) is not None] == []
    # "c10d::ProcessGroupNCCL::watchdogHandler()": "::" after a name's letter starts no node id, so the
    # line is not cleaned and parsed at all (a "::" after a blank or a template's ">" still is).
    watchdog = (FIXTURES / CPP_FIXTURES[0]).read_bytes().split(b"\n")
    frames = [line for line in watchdog if line.startswith(b"frame #")]
    assert len(frames) == 3 and not any(_may_be_progress(line) for line in frames)
    assert not _may_be_progress(b"frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x1a0 (0x7f in x.so)")
    assert not _may_be_progress(b"    #3 0x7f21bfa4a068 in c10::DefaultCPUAllocator::allocate(unsigned long)")


def test_a_log_of_cpp_frames_names_no_test_and_starts_none():
    from analyzer.scan.attribution import _last_progress, running_test

    log = b"\n".join(_cpp_lines()) + b"\n"
    assert _last_progress(log, len(log)) is None
    assert running_test(log, True) is None
    # behind a test that passed, the frames start no other test
    before = b"::TestW::test_a PASSED\n" + log
    assert running_test(before, True) is None


@pytest.mark.parametrize("name", CPP_FIXTURES)
def test_a_fixture_of_cpp_frames_names_no_test(name):
    from analyzer.rules.loader import load_catalogue
    from analyzer.scan import scan_paths

    findings = scan_paths([str(FIXTURES / name)], load_catalogue(), engine="python")
    assert findings and all(f.test is None for f in findings)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([
    b"::", b":", b"TestW", b"test_a", b" ", b"\t", b"[rank0]:", b"**", b"_", b"c10d", b"std", b"1",
    b" PASSED", b"operator", b" new(unsigned long)", b"2024-01-09T18:41:23.1Z ", b"[p]", b"<", b"*", b".",
    b"x.py",
]), max_size=8))
@example([b"[rank0]:", b"::", b"TestW", b"::", b"test_a", b" PASSED"])
@example([b"**", b"::", b"test_a", b"**", b" PASSED"])
def test_the_word_check_lets_through_every_line_the_parser_reads(pieces):
    # _may_be_progress rejects a line before cleaning and parsing it: it may let through lines that do
    # not parse, never reject one that does.
    from unittest import mock

    from analyzer.scan import attribution

    line = b"".join(pieces)
    with mock.patch.object(attribution, "_may_be_progress", lambda raw: True):
        unchecked = attribution.parse_progress(line)
    if unchecked is not None:
        assert attribution._may_be_progress(line), (line, unchecked)
