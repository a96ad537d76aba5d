"""Red-team pass 26 of the guard, with both containments: real programs from tests/bin; the autouse
check in conftest proves nothing is left alive afterwards."""

from __future__ import annotations

import pytest

from analyzer.model import Kind

from .conftest import CONTAINMENTS, in_containment, program


@pytest.fixture(params=CONTAINMENTS)
def guard(request, guard):
    return in_containment(guard, request.param)


def test_a_command_whose_main_thread_exited_is_still_diagnosed_and_ended(guard):
    # Its leader a zombie, the command was taken for gone: the process scan never signalled it (it
    # outlived the guard, exit_code None) and the hang was "in an unknown place (the command was gone
    # before it could be inspected)".
    result, _ = guard(program("main_thread_exits.py"), timeout_s=1.5, kill_grace_s=1.0)
    command = result.command
    assert command.timed_out and command.exit_code == 143, command
    hang = result.findings[0]
    assert hang.kind is Kind.HANG
    assert "main_thread_exits.py` (pid " in hang.message and ", state S" in hang.message, hang.message
