"""Fixtures for the supervisor tests: run real programs under the guard, and prove nothing is left.

The autouse ``no_process_left_behind`` check runs after every test here: any living process that
this test started (directly, through the guard, or through a guard in a subprocess) is a failure.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

from analyzer.supervise.guard import GuardOptions, Supervision, supervise

BIN = Path(__file__).resolve().parents[1] / "bin"
DRIVER = Path(__file__).resolve().parent / "guard_driver.py"
TEST_TAG_ENV = "GHG_SUPERVISE_TEST_TAG"


def program(name: str, *args: str) -> Tuple[str, ...]:
    """argv that runs ``tests/bin/NAME`` with this interpreter."""
    return (sys.executable, str(BIN / name), *args)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return ""


def tagged_processes(tag: str) -> List[Tuple[int, str]]:
    """(pid, state) of living (non-zombie) processes whose environment holds ``TEST_TAG_ENV=tag``."""
    needle = f"\0{TEST_TAG_ENV}={tag}\0".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = b"\0" + handle.read()
        except OSError:
            continue
        state = _state(int(entry))
        if needle in environ and state not in ("Z", "X", ""):
            found.append((int(entry), state))
    return found


def reap_children() -> None:
    """Collect adopted orphans (this process is a subreaper once the guard ran in it)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return "?"


def alive(pid: int) -> bool:
    return _state(pid) not in ("Z", "X", "")


@pytest.fixture(autouse=True)
def no_process_left_behind(monkeypatch) -> Iterator[None]:
    # Other suites on this machine run guards too, so a tree token alone does not say "ours": every
    # process this test starts inherits a tag unique to the test, and the guard passes it on.
    tag = uuid.uuid4().hex
    monkeypatch.setenv(TEST_TAG_ENV, tag)
    yield
    reap_children()
    left = tagged_processes(tag)
    if left:
        left = [(pid, state, _cmdline(pid)) for pid, state in left]
        for pid, *_ in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.2)
        reap_children()
        pytest.fail(f"processes started by this test were still alive after it: {left}")


# The strongest containment here (a cgroup, as root) and the one unprivileged runners get.
CONTAINMENTS = ("auto", "process-scan")


def in_containment(guard, containment: str):
    """``guard`` with ``containment`` unless a test asks for another (for a module's ``guard`` override)."""

    def run(argv, **options):
        options.setdefault("containment", containment)
        return guard(argv, **options)

    return run


@pytest.fixture
def guard(tmp_path):
    """Run argv under the guard (echo off) and return (Supervision, wall seconds it took)."""

    def run(argv, **options) -> Tuple[Supervision, float]:
        options.setdefault("echo", False)
        options.setdefault("log_dir", str(tmp_path / "logs"))
        start = time.monotonic()
        result = supervise(GuardOptions(argv=tuple(argv), **options))
        return result, time.monotonic() - start

    return run
