"""The guard over a real torchrun (gloo on CPU): the rank that never arrived is named, nothing survives.

torch is not a dependency of the package. .ci/run installs the CPU build (`pip install torch==2.13.0`)
into its Python 3.11 environment and sets GHG_REQUIRE_TORCH=1, so there this test must run; where torch
is missing and nobody asked for it, it is skipped and says why.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

from analyzer.model import Kind

from .conftest import BIN


def require_torch() -> None:
    # find_spec, not import: torch runs in the guarded workers, never in the test process.
    if importlib.util.find_spec("torch") is None:
        if os.environ.get("GHG_REQUIRE_TORCH") == "1":
            pytest.fail("GHG_REQUIRE_TORCH=1 but torch is not importable (pip install torch==2.13.0)")
        pytest.skip("torch is not installed (pip install torch==2.13.0 to run this test)")


def test_torchrun_worker_that_never_reaches_the_collective_is_named(guard):
    require_torch()
    argv = (sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
            str(BIN / "torch_hung_rank.py"))
    # The idle clock starts over with every byte, so a slow torch import on a busy machine cannot
    # fire it early; the ranks go quiet only once rank 0 waits in all_reduce and rank 1 spins.
    result, took = guard(argv, idle_timeout_s=6.0, timeout_s=120.0, kill_grace_s=3.0)
    command = result.command
    assert command.timed_out and command.timeout_reason == "idle", command
    assert command.unkillable_pids == ()
    hang = result.findings[0]
    assert hang.kind is Kind.HANG
    # torchrun starts each worker in its own session: found through the guard's token, not the group.
    assert hang.message.startswith("hung in `rank_one_never_arrives` (torch_hung_rank.py:"), hang.message
    assert "waiting in `all_reduce`" in hang.message  # rank 0, the one left waiting
    stdout = open(result.stdout_path, "rb").read()
    assert b"rank 0 up" in stdout and b"rank 1 up" in stdout
    assert took < 120.0
