"""The guard says when the kernel's OOM killer struck: a real OOM kill inside a memory cgroup with a
small limit, and the kernel's own counter and log formats.

The OOM kill is real (the kernel kills the program, nothing is simulated); it needs a memory cgroup
this user may create and limit (root, or a delegated cgroup v2 subtree), and is skipped where there is
none: no other way to make the kernel's OOM killer act without endangering the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator, Optional, Tuple

import pytest

from analyzer.model import GUARD_OOM_KILL_RULE, Severity
from analyzer.supervise import diagnosis
from analyzer.supervise.oom import (
    CGROUP_SCOPE,
    HOST_SCOPE,
    KERNEL_LOG_SCOPE,
    OomKills,
    cgroup_counter_paths,
    read_oom_kill,
)

from .conftest import program
from .test_guard_torchrun import require_torch

LIMIT = 64 << 20

# Each file as the kernel writes it (Documentation/admin-guide/cgroup-v2.rst "memory.events",
# cgroup-v1/memory.rst "memory.oom_control", /proc/vmstat), copied from this machine's and a v2 host's.
MEMORY_EVENTS = "low 0\nhigh 0\nmax 1843\noom 3\noom_kill 2\noom_group_kill 0\n"
OOM_CONTROL_V1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"
VMSTAT = "pgmajfault 8123\noom_kill 7\nnuma_pte_updates 0\n"


@pytest.mark.parametrize(
    "text, count", [(MEMORY_EVENTS, 2), (OOM_CONTROL_V1, 1), (VMSTAT, 7), ("oom 3\n", None)]
)
def test_reads_the_kill_count_of_every_counter_file(tmp_path, text, count):
    path = tmp_path / "counter"
    path.write_text(text)
    assert read_oom_kill(str(path)) == count


def test_an_unreadable_counter_is_no_count(tmp_path):
    assert read_oom_kill(str(tmp_path / "absent")) is None


def test_counter_files_follow_the_cgroups_proc_self_cgroup_names():
    hybrid = "12:memory:/docker/abc\n4:pids:/docker/abc\n0::/docker/abc\n"
    assert cgroup_counter_paths(hybrid) == [
        "/sys/fs/cgroup/memory/docker/abc/memory.oom_control",
        "/sys/fs/cgroup/docker/abc/memory.events",
        "/sys/fs/cgroup/unified/docker/abc/memory.events",
    ]
    v2 = cgroup_counter_paths("0::/system.slice/runner.service\n", ["/sys/fs/cgroup/gpu-hang-guard-1"])
    assert v2[0] == "/sys/fs/cgroup/gpu-hang-guard-1/memory.events"  # the guard's own cgroup first
    assert "/sys/fs/cgroup/system.slice/runner.service/memory.events" in v2
    assert cgroup_counter_paths("garbage\n\n1:cpu\n") == []


def test_a_kill_in_the_jobs_cgroup_fails_a_failed_command_and_warns_on_a_passing_one():
    kills = OomKills(1, CGROUP_SCOPE, ((4242, "pt_main_thread"),))
    failed = diagnosis.oom_kills(kills, command_failed=True)
    assert failed.severity is Severity.ERROR and failed.rule == GUARD_OOM_KILL_RULE
    assert "pt_main_thread, pid 4242" in failed.message and CGROUP_SCOPE in failed.message
    assert diagnosis.oom_kills(kills, command_failed=False).severity is Severity.WARNING


def test_a_host_wide_kill_only_counts_against_a_command_that_failed():
    kills = OomKills(2, HOST_SCOPE)
    assert diagnosis.oom_kills(kills, command_failed=False) is None  # another job's, as likely
    assert "2 processes on this host" in diagnosis.oom_kills(kills, command_failed=True).message
    logged = OomKills(1, KERNEL_LOG_SCOPE, ((7, "python"),))
    assert diagnosis.oom_kills(logged, command_failed=False).severity is Severity.WARNING


def _own_memory_cgroup() -> Optional[Tuple[Path, str, Optional[str]]]:
    """(this process's memory cgroup dir, its limit file, its swap limit file) on v1, else v2."""
    text = Path("/proc/self/cgroup").read_text()
    for line in text.splitlines():
        _, controllers, where = line.split(":", 2)
        if "memory" in controllers.split(","):
            return Path("/sys/fs/cgroup/memory" + where.rstrip("/")), "memory.limit_in_bytes", \
                "memory.memsw.limit_in_bytes"
    for line in text.splitlines():
        if line.startswith("0::/"):
            for mount in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                base = Path(mount + line[3:].rstrip("/"))
                try:
                    enabled = (base / "cgroup.subtree_control").read_text().split()
                except OSError:
                    continue
                if "memory" in enabled:
                    return base, "memory.max", "memory.swap.max"
    return None


@pytest.fixture
def small_memory_cgroup() -> Iterator[Path]:
    """A child memory cgroup limited to LIMIT bytes, swap included; its cgroup.procs path."""
    found = _own_memory_cgroup()
    if found is None:
        pytest.skip("no memory cgroup here: the OOM killer cannot be made to act safely")
    base, limit_file, swap_file = found
    child = base / f"ghg-oom-test-{uuid.uuid4().hex[:8]}"
    try:
        child.mkdir()
    except OSError as err:
        pytest.skip(f"cannot create a memory cgroup in {base} ({err.strerror}): needs root or delegation")
    try:
        (child / limit_file).write_text(str(LIMIT))
        if (child / swap_file).exists():
            (child / swap_file).write_text(str(LIMIT) if swap_file.startswith("memory.memsw") else "0")
        yield child / "cgroup.procs"
    finally:
        for _ in range(50):
            try:
                child.rmdir()
                break
            except OSError:  # the victim is still being torn down
                time.sleep(0.1)


@pytest.mark.parametrize("containment", ["auto", "process-scan"])
def test_a_command_the_oom_killer_killed_fails_on_that(guard, small_memory_cgroup, containment):
    result, _ = guard(program("exhaust_memory.py", str(small_memory_cgroup), "self"), containment=containment)
    assert result.command.exit_code == 137
    oom = [f for f in result.findings if f.rule == GUARD_OOM_KILL_RULE]
    assert len(oom) == 1 and oom[0].severity is Severity.ERROR, result.findings
    assert "OOM killer killed 1 process" in oom[0].message
    if os.access("/dev/kmsg", os.R_OK):  # the kernel log names the victim
        victim = Path(result.stdout_path).read_text().split()[0]
        assert f"pid {victim})" in oom[0].message


def test_a_command_that_passed_after_a_child_was_killed_is_no_error(guard, small_memory_cgroup):
    result, _ = guard(program("exhaust_memory.py", str(small_memory_cgroup), "child"))
    assert result.command.exit_code == 0
    assert all(f.severity is not Severity.ERROR for f in result.findings), result.findings
    # Counted in the guard's own cgroup (v2: a child cgroup's kills count in its parents) it is a
    # warning; counted only host-wide (v1 counts a cgroup's own kills), anyone's, so nothing.
    assert all(f.severity is Severity.WARNING for f in result.findings if f.rule == GUARD_OOM_KILL_RULE)


def _guarded_report(tmp_path: Path, *command: str) -> dict:
    subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"),
         "--json", str(tmp_path / "r.json"), "--timeout", "120s", "--", *command],
        capture_output=True, timeout=180,
    )
    return json.loads((tmp_path / "r.json").read_text())


def test_the_shells_report_of_the_kill_is_the_same_finding(tmp_path, small_memory_cgroup):
    # Before: two errors, the shell's "Killed" and the guard's OOM kill; one death, one finding.
    victim = f"{sys.executable} {program('exhaust_memory.py')[1]} {small_memory_cgroup} self"
    report = _guarded_report(tmp_path, "bash", "-c", f"{victim}; exit 3")
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert [f["rule"] for f in errors] == [GUARD_OOM_KILL_RULE], report["findings"]
    assert "the log tells it: the shell reports that" in errors[0]["message"], errors[0]["message"]
    assert "Killed" in errors[0]["excerpt"]


def test_the_kernels_own_line_of_the_kill_is_the_same_finding(tmp_path, small_memory_cgroup):
    # Before: two errors, the kernel's "Memory cgroup out of memory: Killed process N" line that the step
    # printed from dmesg after the failure, and the guard's OOM kill (dedup9).
    if subprocess.run(["dmesg"], capture_output=True).returncode != 0:
        pytest.skip("the kernel log cannot be read here (dmesg)")
    victim = f"{sys.executable} {program('exhaust_memory.py')[1]} {small_memory_cgroup} self"
    script = f"{victim}; status=$?; dmesg | grep 'out of memory: Killed process' | tail -n 1; exit $status"
    report = _guarded_report(tmp_path, "bash", "-c", script)
    errors = [f for f in report["findings"] if f["severity"] in ("error", "warning")]
    assert [f["rule"] for f in errors] == [GUARD_OOM_KILL_RULE], report["findings"]
    assert "the log tells it: the kernel's OOM killer killed" in errors[0]["message"], errors[0]["message"]


def test_a_dataloader_worker_the_oom_killer_killed_is_one_finding_that_says_so(tmp_path, small_memory_cgroup):
    require_torch()
    command = program("dataloader_worker_exhausts_memory.py", str(small_memory_cgroup))
    report = _guarded_report(tmp_path, *command)
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert [f["rule"] for f in errors] == [GUARD_OOM_KILL_RULE], report["findings"]
    assert "DataLoader worker" in errors[0]["message"] and "killed by signal: Killed" in errors[0]["message"]
