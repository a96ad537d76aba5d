"""pytest node ids with no path ("::PosixTests::test_sigint PASSED": a module outside the rootdir, as
``pytest --pyargs`` runs an installed package's tests), and GitHub workflow commands, which also start a
line with "::" and are never a test."""

import pytest

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
