"""The guard's copy of a log takes the log's name at the end: swapped in, never a rename over it (guard13).

On ext4 a rename over an existing file first writes out the renamed file's delayed blocks (auto_da_alloc):
for a 512 MiB log that held the guard 0.2-0.3 s after the command ended. The swap must still be atomic
(the name always holds a whole log), leave no temporary name behind, and fall back to a rename where the
file system cannot swap.
"""

from __future__ import annotations

import os
import sys

import pytest

from analyzer.supervise import guard


def _copy_with(dir_fd: int, data: bytes) -> int:
    """A private copy (unlinked ``O_TMPFILE``) holding ``data``; a read-only view of it."""
    copy = guard._private_copy(dir_fd)
    if copy < 0:
        pytest.skip("no O_TMPFILE on this file system")
    os.write(copy, data)
    view = guard._reopen_read_only(copy)
    os.close(copy)
    return view


@pytest.fixture
def log_dir(tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    yield tmp_path, fd
    os.close(fd)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux's")
def test_two_names_swap_and_a_missing_one_changes_nothing(log_dir):
    path, fd = log_dir
    (path / "a").write_bytes(b"A")
    (path / "b").write_bytes(b"B")
    assert guard._exchange(fd, "a", "b")
    assert (path / "a").read_bytes() == b"B" and (path / "b").read_bytes() == b"A"
    assert not guard._exchange(fd, "a", "missing")
    assert sorted(p.name for p in path.iterdir()) == ["a", "b"] and (path / "a").read_bytes() == b"B"


@pytest.mark.parametrize("exchange", [True, False], ids=["swapped", "renamed"])
def test_the_copy_replaces_what_the_command_left_and_no_other_name_remains(log_dir, monkeypatch, exchange):
    path, fd = log_dir
    if not exchange:
        monkeypatch.setattr(guard, "_exchange", lambda *args: False)  # a file system that cannot swap
    (path / "stdout.log").write_bytes(b"what the command rewrote\n")
    (path / "elsewhere").write_bytes(b"the command's decoy\n")
    os.symlink("elsewhere", path / "stderr.log")
    for name in ("stdout.log", "stderr.log"):
        view = _copy_with(fd, f"printed on {name}\n".encode())
        try:
            assert guard._link_in(fd, name, view)
        finally:
            os.close(view)
    assert (path / "stdout.log").read_bytes() == b"printed on stdout.log\n"
    assert not (path / "stderr.log").is_symlink()
    assert (path / "stderr.log").read_bytes() == b"printed on stderr.log\n"
    assert (path / "elsewhere").read_bytes() == b"the command's decoy\n"  # a link's target is not touched
    assert sorted(p.name for p in path.iterdir()) == ["elsewhere", "stderr.log", "stdout.log"]


def test_a_log_the_command_removed_gets_the_copy(log_dir):
    path, fd = log_dir
    view = _copy_with(fd, b"every byte\n")
    try:
        assert guard._link_in(fd, "stdout.log", view)
    finally:
        os.close(view)
    assert (path / "stdout.log").read_bytes() == b"every byte\n"
    assert [p.name for p in path.iterdir()] == ["stdout.log"]


def test_a_big_log_past_the_compared_part_is_swapped_in_and_the_copy_is_the_log(log_dir, monkeypatch):
    # Past COMPARE_BYTES the copy goes in unread (_restore_log); a small bound stands in for 256 MiB.
    path, fd = log_dir
    monkeypatch.setattr(guard, "COMPARE_BYTES", 4096)
    monkeypatch.setattr(guard, "CHUNK_COPY_BYTES", 4096)
    data = b"x" * 10_000 + b"\n"
    (path / "stdout.log").write_bytes(data[:-2] + b"!\n")  # rewritten past the compared part
    view = _copy_with(fd, data)
    try:
        assert guard._restore_log(fd, "stdout.log", view) == ""  # unannounced: only the first part was read
        assert os.fstat(view).st_ino == os.stat(path / "stdout.log").st_ino
    finally:
        os.close(view)
    assert (path / "stdout.log").read_bytes() == data
    assert [p.name for p in path.iterdir()] == ["stdout.log"]


def test_a_directory_planted_at_the_last_moment_is_kept_aside_not_a_crash(log_dir, monkeypatch):
    # _restore_log moves a directory at the log's name aside first; one planted after that (a leftover
    # process of the command) is swapped out with the copy and must not make the guard raise.
    path, fd = log_dir
    (path / "stdout.log").mkdir()
    (path / "stdout.log" / "inside").write_bytes(b"the command's\n")
    view = _copy_with(fd, b"every byte\n")
    try:
        linked = guard._link_in(fd, "stdout.log", view)
    finally:
        os.close(view)
    if not linked:  # no swap here, and a file cannot be renamed over a directory
        assert (path / "stdout.log").is_dir()
        return
    assert (path / "stdout.log").read_bytes() == b"every byte\n"
    aside = [p for p in path.iterdir() if p.name.startswith("stdout.log.put-there-by-the-command-")]
    assert len(aside) == 1 and (aside[0] / "inside").read_bytes() == b"the command's\n"
    assert sorted(p.name for p in path.iterdir()) == sorted(["stdout.log", aside[0].name])
