"""Evidence: py-spy dumps of real processes, the nvidia-smi snapshot (GPU mocked), durations, tokens."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from analyzer.supervise import diagnosis, snapshot, workflow

from .conftest import program

HERE = Path(__file__).resolve().parent


def test_py_spy_names_the_main_threads_innermost_frame_of_a_real_process():
    proc = subprocess.Popen(program("threads_hang.py"), stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"threads up\n"
        [dump] = snapshot.dump_stacks([proc.pid], 10.0)
        assert dump.error == ""
        frames = dump.main_thread_frames()
        innermost = frames[0]
        # The body's lines (print, loop, sleep): where in it the sample lands is up to the scheduler.
        assert (innermost.function, os.path.basename(innermost.file)) == (
            "main_thread_waits_forever", "threads_hang.py")
        assert innermost.line in (15, 16, 17)
        assert os.path.isabs(innermost.file)  # --full-filenames: a path the user can open
        assert innermost.describe() == f"`main_thread_waits_forever` (threads_hang.py:{innermost.line})"
        assert "background_spin" in dump.text  # the other thread is in the dump, not in the name
    finally:
        proc.kill()
        proc.wait()


def test_a_hang_inside_the_standard_library_is_named_by_the_users_own_frame_first():
    proc = subprocess.Popen(program("event_wait.py"), stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"waiting\n"
        [dump] = snapshot.dump_stacks([proc.pid], 10.0)
        frames = dump.main_thread_frames()
        assert frames[0].in_library and not frames[-1].in_library
        where = snapshot.Frame.where(frames)
        assert re.fullmatch(
            r"`wait_for_peers` \(event_wait\.py:8\), waiting in `(Condition\.)?wait` \(threading\.py:\d+\)",
            where,
        ), where
    finally:
        proc.kill()
        proc.wait()


def test_frame_where_without_library_frames_names_the_innermost():
    own = snapshot.Frame("train_step", "/w/train.py", 3)
    caller = snapshot.Frame("<module>", "/w/train.py", 9)
    assert snapshot.Frame.where([own, caller]) == "`train_step` (train.py:3)"
    library = snapshot.Frame("recv", "/usr/lib/python3.11/socket.py", 1)
    assert snapshot.Frame.where([library]) == "`recv` (socket.py:1)"
    assert snapshot.Frame.where([]) == "an unknown place"


def test_py_spy_on_a_process_that_is_gone_reports_why():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    [dump] = snapshot.dump_stacks([proc.pid], 10.0)
    assert dump.text == "" and dump.error
    assert dump.main_thread_frames() == ()


def test_parser_falls_back_to_the_thread_whose_id_is_the_pid():
    # Recorded from a real py-spy 0.4 dump of a child frozen mid-start-up (no thread name shown).
    text = (
        "Process 4242: python -c pass\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
        "Thread 4243 (idle)\n    other (x.py:1)\n"
        "Thread 4242 (idle)\n    ABCMeta.__new__ (<frozen abc>:106)\n    <module> (<frozen os>:29)\n"
    )
    frames = snapshot.StackDump(4242, text).main_thread_frames()
    assert [f.describe() for f in frames] == [
        "`ABCMeta.__new__` (<frozen abc>:106)", "`<module>` (<frozen os>:29)"]


def test_nvidia_smi_samples_parse():  # MOCKED GPU: recorded-format samples, see samples/README.md
    apps = (
        "4242, GPU-5c1e3a04-8f2d-4b7e-9a61-0c2f6d1e7a10, 40960\n"
        "31337, GPU-9d7b0e55-1c3a-4f08-b2e4-6a5d8c9f0b21, [N/A]\n"
    )
    snap = snapshot.parse_nvidia_smi((HERE / "samples" / "nvidia-smi-gpus.csv").read_text(), apps)
    assert [(g.index, g.memory_used_mib, g.memory_total_mib, g.utilization_pct) for g in snap.gpus] == [
        ("0", 61442, 81559, 100), ("1", 4, 81559, 0), ("2", None, None, None)]
    assert snap.gpus[2].name == "NVIDIA H100 80GB HBM3 MIG 1g.10gb"
    text = snap.render([4242])
    assert "pid 4242 on GPU 0: 40960 MiB" in text
    assert "Other compute processes: pid 31337 (? MiB)" in text


def test_gpu_snapshot_of_a_real_timeout_names_the_trees_pids(guard, tmp_path, monkeypatch):
    # MOCKED GPU: a fake nvidia-smi on PATH; everything else (timeout, tree, matching) is real.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nvidia-smi").symlink_to(HERE / "fake_nvidia_smi.py")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SMI_TAG", uuid.uuid4().hex)
    result, _ = guard(program("hang_main.py"), timeout_s=1.0, kill_grace_s=1.0)
    gpu = (Path(result.command.log_dir) / "gpu.txt").read_text()
    assert re.search(r"^0\s+61442\s+81559\s+100\s+NVIDIA H100", gpu, re.M), gpu
    holders = re.findall(r"pid (\d+) on GPU 0: 40960 MiB", gpu)
    assert holders and all(int(pid) != os.getpid() for pid in holders)
    assert "pid 999999 (1024 MiB)" in gpu
    assert "GPU snapshot (nvidia-smi)" in [d.title for d in result.diagnostics]


def test_no_nvidia_smi_no_gpu_file(guard, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # py-spy is found next to the interpreter or not at all
    result, _ = guard(program("hang_main.py"), timeout_s=0.5, kill_grace_s=1.0)
    assert not (Path(result.command.log_dir) / "gpu.txt").exists()
    assert result.command.timed_out


def test_stop_commands_lines_and_when_they_apply():
    token = workflow.stop_token()
    assert re.fullmatch(r"ghg-[0-9a-f]{32}", token) and token != workflow.stop_token()
    assert workflow.stop_line(token) == f"\n::stop-commands::{token}\n".encode()
    assert workflow.resume_line(token) == f"\n::{token}::\n".encode()
    assert workflow.should_stop_commands({"GITHUB_ACTIONS": "true"}, False)
    assert not workflow.should_stop_commands({"GITHUB_ACTIONS": "true"}, True)
    assert not workflow.should_stop_commands({}, False)


def test_snapshot_helpers_are_bounded_by_their_timeout(tmp_path, monkeypatch):
    # A py-spy that never answers (a stand-in script) is killed at the deadline.
    slow = tmp_path / "py-spy"
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(0o755)
    monkeypatch.setattr(snapshot, "find_tool", lambda name: str(slow))
    start = time.monotonic()
    [dump] = snapshot.dump_stacks([os.getpid()], 0.5)
    assert time.monotonic() - start < 5
    assert dump.error == "timed out"


def test_many_late_helpers_are_ended_together_not_one_after_another(tmp_path, monkeypatch):
    # 16 py-spy that outlive the deadline and are slow to go on SIGTERM, as real ones starved of the CPU
    # by a hung tree of 16 processes of 300 spinning threads each were (measured: the guard 20 s past
    # its 3 s bound, in _Helper.finish). A stand-in script, as the machine cannot starve py-spy on cue.
    # Each late helper had its own 0.3 s SIGTERM wait and an unbounded one after SIGKILL: 16 x 0.3 s.
    slow = tmp_path / "py-spy"
    slow.write_text("#!/bin/sh\ntrap '' TERM\nexec sleep 30\n")  # an ignored SIGTERM stays so over exec
    slow.chmod(0o755)
    monkeypatch.setattr(snapshot, "find_tool", lambda name: str(slow))
    helpers = []
    start = time.monotonic()
    dumps = snapshot.dump_stacks([os.getpid()] * 16, 0.5, helpers)
    took = time.monotonic() - start
    assert [dump.error for dump in dumps] == ["timed out"] * 16
    assert took < 0.5 + 8 * snapshot._HELPER_TERM_WAIT_S, took  # half the 16 waits one after another took
    for pid in helpers:  # every stand-in is gone (SIGKILL), none left running
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


def _echoing_py_spy(tmp_path, monkeypatch, slow_pid=None):
    """A stand-in py-spy that prints the pid it was asked for (argv: dump MODE --full-filenames --pid PID);
    the dump of ``slow_pid`` ends 0.5 s after the others."""
    echo = tmp_path / "py-spy"
    slow = f'[ "$5" = {slow_pid} ] && sleep 0.5\n' if slow_pid else ""
    echo.write_text(f'#!/bin/sh\n{slow}echo "asked for $5"\n')
    echo.chmod(0o755)
    monkeypatch.setattr(snapshot, "find_tool", lambda name: str(echo))


def _slow_starts(monkeypatch, seconds):
    """Each helper start takes ``seconds`` more, as fork and exec did on 2 loaded CPUs (20-50 ms each).

    Returns the threads that started helpers and the most starts seen under way at one moment.
    """
    start = snapshot._Helper.__init__
    threads = set()
    in_flight = [0]
    most_in_flight = [0]
    lock = threading.Lock()

    def slow(self, *args, **kwargs):
        with lock:
            threads.add(threading.get_ident())
            in_flight[0] += 1
            most_in_flight[0] = max(most_in_flight[0], in_flight[0])
        time.sleep(seconds)
        with lock:
            in_flight[0] -= 1
        start(self, *args, **kwargs)

    monkeypatch.setattr(snapshot._Helper, "__init__", slow)
    return threads, most_in_flight


def test_helpers_start_at_once_and_each_dump_keeps_its_pid(tmp_path, monkeypatch):
    # Started in a loop, 16 starts of 0.1 s each took 1.6 s before the first dump could be waited for.
    # Overlapping starts are counted rather than timed: a wall-clock bound failed on a loaded CI machine.
    _echoing_py_spy(tmp_path, monkeypatch)
    threads, most_in_flight = _slow_starts(monkeypatch, 0.1)
    pids = list(range(1000, 1016))
    helpers = []
    dumps = snapshot.dump_stacks(pids, 5.0, helpers)
    assert [dump.pid for dump in dumps] == pids
    assert [dump.text.strip() for dump in dumps] == [f"asked for {pid}" for pid in pids]
    assert len(helpers) == 16 and len(threads) > 1
    assert most_in_flight[0] > 1


def test_helpers_start_one_after_another_where_no_thread_can_start(tmp_path, monkeypatch):
    _echoing_py_spy(tmp_path, monkeypatch)

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(snapshot.threading.Thread, "start", refuse)
    helpers = []
    plain, native = snapshot.dump_all([2000, 2001], [2002], 5.0, helpers)
    assert [(dump.pid, dump.text.strip()) for dump in plain + native] == [
        (pid, f"asked for {pid}") for pid in (2000, 2001, 2002)
    ]
    assert len(helpers) == 3


@pytest.mark.parametrize(
    "euid, scope, sudo, prefix",
    [
        (0, 1, "/usr/bin/sudo", []),  # root may trace anything Yama allows
        (1000, None, "/usr/bin/sudo", []),  # no Yama: same-user ptrace works
        (1000, 0, "/usr/bin/sudo", []),
        (1000, 1, "/usr/bin/sudo", ["/usr/bin/sudo", "-n"]),  # hosted runners: sibling ptrace refused
        (1000, 1, None, []),  # no sudo: py-spy tries, and the dump records why it failed
    ],
)
def test_py_spy_goes_through_sudo_only_where_yama_forbids_sibling_ptrace(euid, scope, sudo, prefix):
    # Pure decision; this machine has no Yama (and runs as root), so a runner's setting is spelled out.
    assert snapshot.privilege_prefix(euid, scope, sudo) == prefix


def test_torchruns_agent_caught_polling_the_rendezvous_is_not_where_the_hang_is():
    # The agent's real dump (samples/README.md) next to its two ranks' main threads: rank 0 waits in
    # the collective, rank 1 never arrives. CI once named the agent's store call instead of rank 1.
    agent = snapshot.StackDump(4100, (HERE / "samples" / "py-spy-torchrun-agent-polling.txt").read_text())
    assert agent.main_thread_frames()[0].function == "_BackendRendezvousStateHolder._sanitize"
    rank0 = snapshot.StackDump(4104, (
        'Thread 4104 (idle): "MainThread"\n'
        "    all_reduce (torch/distributed/distributed_c10d.py:3252)\n"
        "    <module> (torch_hung_rank.py:22)\n"))
    rank1 = snapshot.StackDump(4105, (
        'Thread 4105 (idle): "MainThread"\n'
        "    rank_one_never_arrives (torch_hung_rank.py:14)\n"
        "    <module> (torch_hung_rank.py:21)\n"))
    chosen, where = diagnosis.where_it_hung(4100, (), (agent, rank0, rank1))
    assert chosen is rank1, where
    assert where == "`rank_one_never_arrives` (torch_hung_rank.py:14) (pid 4105)"


@pytest.mark.parametrize("slow_pid", [None, 2000])
@pytest.mark.parametrize("cap, natives", [(None, [2002, 2001]), (2, [2002, 2001]), (1, [2002])])
def test_a_native_dump_starts_only_where_the_plain_one_asks_for_it(tmp_path, monkeypatch, cap, natives,
                                                                   slow_pid):
    # slow_pid 2000: the command's plain dump is read after 2001's, while the last place is kept for it;
    # once it needs none, 2001 gets that place (CI once lost 2001's native when the dumps ended so).
    _echoing_py_spy(tmp_path, monkeypatch, slow_pid)
    helpers = []
    asked = []

    def needs_native(dump):
        asked.append((dump.pid, dump.text.strip()))
        return dump.pid == 2001

    plain, native = snapshot.dump_all([2000, 2001, 2002], [2002], 5.0, helpers, None, [2000, 2001],
                                      needs_native, cap)
    assert [(dump.pid, dump.text.strip()) for dump in plain] == [
        (pid, f"asked for {pid}") for pid in (2000, 2001, 2002)]
    assert [dump.pid for dump in native] == natives
    # Decided on the plain dump, once each, and never for the pid whose native started at once.
    assert sorted(asked) == ([] if cap == 1 else [(2000, "asked for 2000"), (2001, "asked for 2001")])
    assert len(helpers) == 3 + len(natives)


def test_the_first_process_keeps_its_place_for_a_native_dump(tmp_path, monkeypatch):
    # Its plain dump ends last, yet the one native dump is the first pid's (the command's), not 2001's.
    echo = tmp_path / "py-spy"
    slow_first = '[ "$5" = 2000 ] && [ "$2" = --nonblocking ] && sleep 0.5\n'
    echo.write_text(f'#!/bin/sh\n{slow_first}echo "asked for $5"\n')
    echo.chmod(0o755)
    monkeypatch.setattr(snapshot, "find_tool", lambda name: str(echo))
    plain, native = snapshot.dump_all([2000, 2001], (), 5.0, [], None, [2000, 2001], lambda d: True, 1)
    assert [dump.pid for dump in native] == [2000]
    assert [dump.text.strip() for dump in plain + native] == [f"asked for {p}" for p in (2000, 2001, 2000)]


def _slow_py_spy(tmp_path, monkeypatch, native_s, plain_s_for):
    """A stand-in py-spy whose native dumps take ``native_s`` and whose plain dump of pid
    ``plain_s_for[0]`` takes ``plain_s_for[1]``; each prints the mode and pid it was asked for."""
    script = tmp_path / "py-spy"  # one process (no shell's child left when the helper is killed)
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys, time\n"
        "mode, pid = sys.argv[2], sys.argv[5]\n"
        f"slow = {plain_s_for[1]} if pid == '{plain_s_for[0]}' else 0\n"
        f"time.sleep({native_s} if mode == '--native' else slow)\n"
        "print(mode, pid)\n")
    script.chmod(0o755)
    monkeypatch.setattr(snapshot, "find_tool", lambda name: str(script))


def test_native_dumps_past_their_share_are_abandoned_and_say_so_while_plain_dumps_keep_the_bound(
        tmp_path, monkeypatch):
    # Pid 3001's native dump would take 5 s, its share is 0.4 s; pid 3002's plain dump ends after the
    # share, so its native dump is not started. Pid 3000's plain dump is there, slow or not.
    _slow_py_spy(tmp_path, monkeypatch, 5, (3002, 0.8))
    start = time.monotonic()
    plain, native = snapshot.dump_all([3000, 3001, 3002], (), 4.0, [], None, [3000, 3001, 3002],
                                      lambda dump: dump.pid != 3000, None, 0.4)
    took = time.monotonic() - start
    assert [(d.pid, d.text.strip(), d.error) for d in plain] == [
        (3000, "--nonblocking 3000", ""), (3001, "--nonblocking 3001", ""), (3002, "--nonblocking 3002", "")]
    assert [(d.pid, d.error) for d in native] == [
        (3001, "abandoned: no result within the 0.4s the deadline leaves native stacks"),
        (3002, "not taken: its plain dump was read after the 0.4s the deadline leaves native stacks")]
    assert 0.8 <= took < 3.0, took  # the slow plain dump was waited for, the 5 s native was not


def test_without_a_share_native_dumps_have_the_whole_bound(tmp_path, monkeypatch):
    _slow_py_spy(tmp_path, monkeypatch, 0.5, (0, 0))
    plain, native = snapshot.dump_all([3000], (), 4.0, [], None, [3000], lambda dump: True, None)
    assert [(d.pid, d.text.strip(), d.error) for d in native] == [(3000, "--native 3000", "")]


def test_a_native_dump_past_its_share_is_kept_while_a_plain_dump_still_runs(tmp_path, monkeypatch):
    # Share 0.2 s, native 0.6 s, pid 3001's plain dump 1.2 s: ending the native at 0.2 s would gain nothing.
    _slow_py_spy(tmp_path, monkeypatch, 0.6, (3001, 1.2))
    plain, native = snapshot.dump_all([3000, 3001], (), 4.0, [], None, [3000, 3001],
                                      lambda dump: dump.pid == 3000, None, 0.2)
    assert [(d.pid, d.text.strip()) for d in plain] == [
        (3000, "--nonblocking 3000"), (3001, "--nonblocking 3001")]
    assert [(d.pid, d.text.strip(), d.error) for d in native] == [(3000, "--native 3000", "")]


def test_plain_dumps_run_a_few_at_once_and_one_not_started_within_the_bound_says_so(tmp_path, monkeypatch):
    # One place: pid 3000's dump takes 30 s, so pid 3001's never starts within the 1 s bound. All at
    # once (issue 8 item 6), 17 dumps on 2 loaded CPUs were all still running at the bound: none taken.
    _slow_py_spy(tmp_path, monkeypatch, 0, (3000, 30))
    helpers: list = []
    plain, _ = snapshot.dump_all([3000, 3001], (), 1.0, helpers, parallel=1, each_s=0.1)
    assert [(d.pid, d.text.strip(), d.error) for d in plain] == [
        (3000, "", "timed out"), (3001, "", snapshot.PLAIN_NOT_STARTED.format(share="1s"))]
    assert len(helpers) == 1  # the second py-spy was never started
    assert not any(os.path.exists(f"/proc/{pid}") for pid in helpers)  # ended and reaped


def test_a_dump_far_slower_than_the_others_gives_its_place_to_one_waiting(tmp_path, monkeypatch):
    # Pid 3000's dump is quick, 3001's takes 30 s (a thousand threads, a target in D state): past three
    # times the slowest finished one (and each_s) it is ended and 3002 gets its place. No finished
    # dump, no cut: under load every dump is slow alike (the test above).
    _slow_py_spy(tmp_path, monkeypatch, 0, (3001, 30))
    plain, _ = snapshot.dump_all([3000, 3001, 3002], (), 20.0, [], parallel=1, each_s=0.1)
    assert [(d.pid, d.text.strip()) for d in plain] == [
        (3000, "--nonblocking 3000"), (3001, ""), (3002, "--nonblocking 3002")]
    assert plain[1].error.startswith("cut after ") and plain[1].error.endswith(
        "past three times the slowest finished dump: its place went to one waiting"), plain[1].error
