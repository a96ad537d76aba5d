"""A red-team pass over the guard (session 7): what a broken or hostile test command really does.

Each test runs a real program from tests/bin and checks one promise the README's "What the guard
guarantees" section makes; the autouse check in conftest proves nothing is left alive afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import CONTAINMENTS, in_containment, program


@pytest.fixture(params=CONTAINMENTS)
def guard(request, guard):
    return in_containment(guard, request.param)


# -- the logs are complete, even when the command deletes the log dir -----------------------------------

@pytest.mark.parametrize("mode", ["exit", "hang"])
def test_a_command_that_deletes_the_log_dir_still_leaves_every_byte_in_it(guard, tmp_path, mode):
    # `git clean -xdf` or a suite's cleanup of its work dir takes ./guard-logs with it: the guard's
    # descriptors still hold every byte, so the logs (and the evidence of a hang) must be there again.
    logs = tmp_path / "logs"
    result, _ = guard(program("delete_log_dir.py", str(logs), mode), log_dir=str(logs),
                      timeout_s=1.5 if mode == "hang" else None, kill_grace_s=1.0)
    assert Path(result.stdout_path).parent == logs
    assert (logs / "stdout.log").read_bytes() == b"before the cleanup\nafter the cleanup\n"
    assert (logs / "stderr.log").read_bytes() == b"Fatal Python error: Segmentation fault\n"
    if mode == "hang":
        assert result.command.timed_out
        assert "delete_log_dir.py" in (logs / "stacks.txt").read_text()
        assert (logs / "processes.txt").exists()
    assert any("log dir was deleted" in d.title for d in result.diagnostics), result.diagnostics


# -- the logs are complete, even when the command rewrites them in place -----------------------------------

@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_command_that_rewrites_its_log_in_place_cannot_erase_what_it_printed(guard, tmp_path, stream):
    logs = tmp_path / "logs"
    result, _ = guard(program("rewrite_own_log.py", str(logs), stream), log_dir=str(logs))
    crash = b"Fatal Python error: Segmentation fault\n"
    log = (logs / f"{stream}.log").read_bytes()
    assert log == (crash + b"done\n" if stream == "stdout" else crash)
    assert any(d.title == f"{stream}.log was rewritten during the run; the guard restored its own copy"
               for d in result.diagnostics), result.diagnostics


def test_an_untouched_log_is_left_as_the_guard_wrote_it_and_says_nothing(guard, tmp_path):
    logs = tmp_path / "logs"
    result, _ = guard(("sh", "-c", "echo out; echo err >&2"), log_dir=str(logs))
    assert (logs / "stdout.log").read_bytes() == b"out\n" and (logs / "stderr.log").read_bytes() == b"err\n"
    assert not [d for d in result.diagnostics if "during the run" in d.title]
    assert sorted(p.name for p in logs.iterdir()) == ["stderr.log", "stdout.log"]


@pytest.mark.parametrize("how", ["fifo", "directory", "symlink"])
def test_whatever_the_command_puts_in_place_of_its_log_the_log_is_put_back(guard, tmp_path, how):
    logs = tmp_path / "logs"
    result, _ = guard(program("replace_own_log.py", str(logs), how), log_dir=str(logs))
    log = logs / "stdout.log"
    assert log.is_file() and not log.is_symlink()
    assert log.read_bytes() == b"Fatal Python error: Segmentation fault\n"
    assert any(d.title == "stdout.log was replaced during the run; the guard restored its own copy"
               for d in result.diagnostics), result.diagnostics


def test_evidence_the_command_rewrites_during_the_kill_grace_is_written_again(guard, tmp_path):
    logs = tmp_path / "logs"
    result, _ = guard(program("tamper_evidence.py", str(logs)), log_dir=str(logs), timeout_s=1.0,
                      kill_grace_s=1.0)
    assert b"evidence rewritten" in (logs / "stdout.log").read_bytes()  # the attack ran
    assert "tamper_evidence.py" in (logs / "stacks.txt").read_text()
    assert "tamper_evidence.py" in (logs / "processes.txt").read_text()
    titles = [d.title for d in result.diagnostics]
    assert "stacks.txt was changed during the run; the guard wrote it again" in titles, titles
