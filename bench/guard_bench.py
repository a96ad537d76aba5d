"""Benchmark the guard against its goals, each measured side by side in one run; prints numbers.

1. Output throughput through the guard vs coreutils ``tee``: the same flood (``--mib`` MiB of
   /dev/zero on stdout and the same on stderr, at once), logs to a temp dir, the console once
   /dev/null and once a pipe read by ``cat`` (as the runner reads a step's output).
   Goal: the guard within 1.2x of tee's time. Each round also times the guard without its private
   copy of the logs (the path a file system without ``O_TMPFILE`` takes: one page-cache write per
   chunk, as tee makes), so the copy's share of the time shows, and prints the load average.
2. The guard's own CPU while the command is quiet (``sleep``): goal under 1% of one core.
3. Deadline -> guard returns, for a tree of three and of ``--processes`` (16) Python processes that
   ignore SIGTERM, stack dumps included; and the runner's cancel (SIGINT) -> guard returns for the
   16-process tree, the guard in its own process as the CLI runs it. Goals: kill grace + under 1 s
   (the cancel caps the grace to 3 s and must end well inside the runner's 7.5 s before SIGTERM).
4. Total time of a whole guarded run (``python -m analyzer run -- cat LOG``: start-up, pump, the live
   scan, the report) vs ``cat LOG | tee``, on ``--total-mib`` MiB of a realistic test-heavy log
   (``logshapes.write_tests_repeated``; ``--total-shape`` picks another), and how long after the
   command's end the report was written; beside it, the same log scanned alone, in the same round: the
   live scan has one core beside the pump, so the guard cannot end before a scan of its log could.
   Goal: within 1.2x of tee. ``--total-only`` runs just this. Each round also times the pump alone
   (``supervise()`` on ``cat LOG`` in this process, no live scan) and prints the load average, as the
   machine may be shared; ``--total-shape tests-repeated,gpu-job`` runs one shape after the other.
5. ``--runner-cancel``: the CLI as the action runs it (``python -m analyzer run``), on a tree of
   ``--processes`` Python processes of every kind (``tests/bin/mixed_stuck_tree.py``: ignoring SIGTERM,
   in new sessions, double-forked orphans, default handlers), ended by ``--timeout`` and by GitHub's
   cancel as actions/runner sends it (src/Runner.Sdk/ProcessInvoker.cs: SIGINT, SIGTERM 7.5 s later,
   then SIGKILL 2.5 s after that), once in the strongest containment the host allows and once in the
   process scan an unprivileged runner user gets (the CLI's main() with that containment forced).
   Prints the time to return (a deadline's counted from the command's own start, which it prints),
   the stack dumps, whether report.json was written, and the tree's survivors. Goal: kill grace (for
   a cancel, capped at 3 s) + under 1 s, so a cancel returns before the runner's SIGTERM.

Usage: python bench/guard_bench.py [--mib 512] [--quiet-s 10] [--kill-grace 1] [--processes 16]
       [--deadline-only] [--throughput-only] [--total-mib 512] [--total-rounds 3]
       [--total-engines auto,python] [--total-only] [--runner-cancel]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple, Tuple

ROOT = Path(__file__).resolve().parents[1]
# The guard timed in this process is this checkout's, as is the CLI the subprocesses run (cwd=ROOT), not
# whichever tree an editable install points at.
sys.path.insert(0, str(ROOT))

from analyzer.supervise import guard as guard_module  # noqa: E402
from analyzer.supervise.guard import CANCEL_KILL_GRACE_S, GuardOptions, supervise  # noqa: E402

IGNORE_SIGTERM = ROOT / "tests" / "bin" / "ignore_sigterm.py"
DRIVER = ROOT / "tests" / "supervise" / "guard_driver.py"
MIXED_TREE = ROOT / "tests" / "bin" / "mixed_stuck_tree.py"
RUNNER_SIGTERM_AFTER_S = 7.5  # after SIGINT (actions/runner ProcessInvoker.CancelAndKillProcessTree)
RUNNER_SIGKILL_AFTER_S = 10.0  # SIGTERM's own 2.5 s (ProcessInvoker.cs _sigtermTimeout), then Kill()


def flood_command(mib: int) -> str:
    return f"head -c {mib}M /dev/zero & head -c {mib}M /dev/zero >&2; wait"


def time_tee(mib: int, workdir: str, console: str = "null") -> float:
    # One tee per stream, as the guard has one pump per stream.
    to = ">/dev/null" if console == "null" else "| cat >/dev/null"
    script = (
        f"cd {workdir} && rm -f err.fifo && mkfifo err.fifo && "
        f"{{ tee tee-err.log <err.fifo {to} & T=$!; }} && "
        f"({flood_command(mib)}) 2>err.fifo | tee tee-out.log {to}; wait $T"
    )
    for name in ("out", "err"):  # fresh files, as the guard writes (no truncate-and-rewrite flush)
        if os.path.exists(f"{workdir}/tee-{name}.log"):
            os.unlink(f"{workdir}/tee-{name}.log")
    start = time.monotonic()
    subprocess.run(["bash", "-c", script], check=True)
    took = time.monotonic() - start
    sizes = [os.path.getsize(f"{workdir}/tee-{name}.log") for name in ("out", "err")]
    assert sizes == [mib << 20] * 2, sizes
    return took


class _ConsoleToNull:
    """Point fds 1 and 2 at /dev/null (or a pipe read by ``cat``, as the runner reads a step) meanwhile."""

    def __init__(self, console: str = "null") -> None:
        self.console = console
        self.reader = None

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.saved = (os.dup(1), os.dup(2))
        if self.console == "pipe":
            read_end, sink = os.pipe()
            self.reader = subprocess.Popen(["cat"], stdin=read_end, stdout=subprocess.DEVNULL)
            os.close(read_end)
        else:
            sink = os.open(os.devnull, os.O_WRONLY)
        os.dup2(sink, 1)
        os.dup2(sink, 2)
        os.close(sink)
        return self

    def __exit__(self, *exc):
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        for fd in self.saved:
            os.close(fd)
        if self.reader is not None:
            self.reader.wait()


class GuardTiming(NamedTuple):
    wall_s: float
    user_s: float  # the guard's own CPU: every thread of this process (the pumps, the watch, the end)
    system_s: float
    end_s: float  # wall of the end's log checks (``_restore_log``: compare with the copy, link it in)


def time_guard(mib: int, workdir: str, console: str = "null", private_copy: bool = True) -> GuardTiming:
    """Wall s of ``supervise()`` on the flood, the guard's CPU and its end; without ``private_copy`` the
    guard keeps no copy of its logs, as on a file system without ``O_TMPFILE`` (``_private_copy`` -1)."""
    log_dir = os.path.join(workdir, "guard")
    shutil.rmtree(log_dir, ignore_errors=True)
    keeps_copy, restores = guard_module._private_copy, guard_module._restore_log
    if not private_copy:
        guard_module._private_copy = lambda dir_fd: -1
    end = [0.0]

    def timed_restore(*args):
        started = time.monotonic()
        try:
            return restores(*args)
        finally:
            end[0] += time.monotonic() - started

    guard_module._restore_log = timed_restore
    try:
        with _ConsoleToNull(console):
            before = resource.getrusage(resource.RUSAGE_SELF)
            start = time.monotonic()
            result = supervise(GuardOptions(argv=("bash", "-c", flood_command(mib)), log_dir=log_dir,
                                            echo=True))
            took = time.monotonic() - start
            after = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        guard_module._private_copy, guard_module._restore_log = keeps_copy, restores
    sizes = [os.path.getsize(path) for path in (result.stdout_path, result.stderr_path)]
    assert sizes == [mib << 20] * 2 and result.command.exit_code == 0, (sizes, result.command)
    return GuardTiming(took, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime, end[0])


def quiet_cpu(seconds: float, workdir: str) -> float:
    """The guard's own CPU (all its threads, not its children) as a percentage of one core."""
    before = os.times()
    start = time.monotonic()
    supervise(GuardOptions(argv=("sleep", str(seconds)), log_dir=os.path.join(workdir, "quiet"), echo=False))
    wall = time.monotonic() - start
    after = os.times()
    cpu = (after.user - before.user) + (after.system - before.system)
    return 100.0 * cpu / wall


def stubborn_tree(processes: int) -> str:
    """A Python command with ``processes - 1`` children, all ignoring SIGTERM, as a stuck job's ranks."""
    return (
        "import subprocess, sys\n"
        f"kids = [subprocess.Popen([sys.executable, {str(IGNORE_SIGTERM)!r}])"
        f" for _ in range({processes - 1})]\n"
        f"exec(open({str(IGNORE_SIGTERM)!r}).read())\n"
    )


def deadline_to_exit(kill_grace: float, workdir: str, processes: int = 3):
    script = stubborn_tree(processes)
    timeout = 2.0 + processes * 0.1  # every process up before the clock runs out
    start = time.monotonic()
    result = supervise(
        GuardOptions(
            argv=(sys.executable, "-c", script),
            log_dir=os.path.join(workdir, "deadline"),
            timeout_s=timeout,
            kill_grace_s=kill_grace,
            echo=False,
        )
    )
    after_deadline = time.monotonic() - start - timeout
    return after_deadline, _dumps(result.command.log_dir), result


def _dumps(log_dir: str) -> str:
    text = (Path(log_dir) / "stacks.txt").read_text()
    native = text.count(" (native frames): ")
    failed = text.count("(py-spy: ")
    cut = text.count("(py-spy: abandoned: ") + text.count("(py-spy: not taken: ")
    return (f"{text.count('=== pid ') - native} Python + {native} native stack dumps ({failed} failed, "
            f"of them {cut} natives past their share)")


def cancel_to_exit(kill_grace: float, workdir: str, processes: int):
    """Seconds from the runner's SIGINT to the guard's return, the guard in its own process."""
    log_dir = os.path.join(workdir, "cancel")
    options = {"argv": [sys.executable, "-c", stubborn_tree(processes)], "log_dir": log_dir,
               "kill_grace_s": kill_grace, "echo": True}
    result_path = os.path.join(workdir, "cancel.json")
    proc = subprocess.Popen([sys.executable, str(DRIVER), json.dumps(options), result_path],
                            stdout=subprocess.PIPE, cwd=str(ROOT))
    try:
        for _ in range(processes):
            proc.stdout.readline()  # "ignoring SIGTERM" from each
        started = time.monotonic()
        proc.send_signal(2)  # SIGINT, as the runner's cancel
        proc.wait(timeout=60)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with open(result_path) as handle:
        command = json.load(handle)["command"]
    return took, _dumps(log_dir), command


def _median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


# -- 4. total time of a guarded run: pump + live scan + report ------------------------------------------

def time_tee_cat(log: str, workdir: str) -> float:
    out = os.path.join(workdir, "tee-total.log")
    if os.path.exists(out):
        os.unlink(out)
    start = time.monotonic()
    subprocess.run(["bash", "-c", 'cat "$1" | tee "$2" >/dev/null', "_", log, out], check=True)
    took = time.monotonic() - start
    assert os.path.getsize(out) == os.path.getsize(log)
    return took


def time_pump_cat(log: str, workdir: str) -> float:
    """Wall s of ``supervise()`` on ``cat LOG`` in this process, no live scan: the pump, the private copy
    and the end (the logs compared with the copy, the copy linked in), console to /dev/null."""
    log_dir = os.path.join(workdir, "pump-total")
    with _ConsoleToNull("null"):
        start = time.monotonic()
        result = supervise(GuardOptions(argv=("cat", log), log_dir=log_dir, echo=True))
        took = time.monotonic() - start
    assert os.path.getsize(result.stdout_path) == os.path.getsize(log) and result.command.exit_code == 0
    return took


class _CpuByRole:
    """CPU seconds (user + system) of a guarded run's processes, sampled from ``/proc`` every 20 ms: the
    guard, its live scanner (forked twice from the guard, so the same command line and no parent in the
    tree) and the command's processes. A process's last sample may miss up to 20 ms of its CPU."""

    _TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, guard: subprocess.Popen) -> None:
        self._guard = guard
        self._cmdline = Path(f"/proc/{guard.pid}/cmdline").read_bytes()
        self._born = int(Path(f"/proc/{guard.pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[19])
        self._tree = {guard.pid}
        self._cpu = {}  # pid -> (role, seconds)
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while self._guard.poll() is None:
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    self._look(int(entry))
            time.sleep(0.02)

    def _look(self, pid: int) -> None:
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes() if pid not in self._cpu else b""
        except OSError:
            return
        ppid, seconds = int(stat[1]), (int(stat[11]) + int(stat[12])) / self._TICK
        role = self._cpu.get(pid, (None, 0.0))[0]
        if role is None and int(stat[19]) < self._born:
            return  # older than the guard: not of this run, whatever its parent or command line now
        if role is None:
            if pid == self._guard.pid:
                role = "guard"
            elif ppid in self._tree:
                role = "scanner" if cmdline == self._cmdline else "command"
            elif cmdline == self._cmdline:
                role = "scanner"
            else:
                return
            self._tree.add(pid)
        self._cpu[pid] = (role, seconds)

    def totals(self) -> dict:
        self._thread.join()
        totals = {"guard": 0.0, "scanner": 0.0, "command": 0.0}
        for role, seconds in self._cpu.values():
            totals[role] += seconds
        return totals


def time_guarded_cat(log: str, workdir: str, engine: str):
    """(wall s of the whole CLI run, s from the command's end to the guard's exit, the JSON report, CPU
    seconds by role: ``_CpuByRole``)."""
    log_dir = os.path.join(workdir, f"total-{engine}")
    ended = os.path.join(workdir, "command-ended")
    report = os.path.join(workdir, "total.json")
    command = ["sh", "-c", 'cat "$1"; date +%s.%N > "$2"', "_", log, ended]
    start = time.monotonic()
    with open(os.devnull, "wb") as null:
        guard = subprocess.Popen(
            [sys.executable, "-m", "analyzer", "run", "--engine", engine, "--log-dir", log_dir,
             "--json", report, "--", *command],
            stdout=null, cwd=str(ROOT),
        )
        cpu = _CpuByRole(guard)
        guard.wait()
    took = time.monotonic() - start
    exited = time.time()
    with open(ended) as handle:
        after_end = exited - float(handle.read())
    assert os.path.getsize(os.path.join(log_dir, "stdout.log")) == os.path.getsize(log)
    with open(report) as handle:
        return took, after_end, json.load(handle), cpu.totals()


SLOW_CAT = """
import os, sys, time
rate, limit, start, sent = float(sys.argv[2]) * 1e6, float(sys.argv[3]) * 1e6, time.monotonic(), 0
with open(sys.argv[1], "rb") as log:
    for chunk in iter(lambda: log.read(1 << 20), b""):
        if sent >= limit:
            break
        os.write(1, chunk)
        sent += len(chunk)
        time.sleep(max(0.0, sent / rate - (time.monotonic() - start)))
"""


def report_after_paced_output(log: str, workdir: str, engine: str, rate_mb_s: float, mb: float) -> float:
    """From the end of a command printing ``mb`` MB of ``log`` at ``rate_mb_s``, to the guard's exit."""
    ended = os.path.join(workdir, "paced-ended")
    script = f'{sys.executable} -c "$1" "$2" "$3" "$4"; date +%s.%N > "$5"'
    paced = ["sh", "-c", script, "_", SLOW_CAT, log, str(rate_mb_s), str(mb), ended]
    log_dir = os.path.join(workdir, "paced")
    with open(os.devnull, "wb") as null:
        subprocess.run(
            [sys.executable, "-m", "analyzer", "run", "--engine", engine, "--log-dir", log_dir, "--", *paced],
            stdout=null, cwd=str(ROOT), check=False,
        )
    exited = time.time()
    with open(ended) as handle:
        return exited - float(handle.read())


def cancel_during_flood(log: str, workdir: str, engine: str, after_s: float = 3.0):
    """SIGINT to a guard whose scan lags a flood: (seconds to exit, exit status, the scan-incomplete text)."""
    report = os.path.join(workdir, "cancel.json")
    proc = subprocess.Popen(
        [sys.executable, "-m", "analyzer", "run", "--engine", engine, "--log-dir",
         os.path.join(workdir, "cancel"), "--json", report, "--", "sh", "-c", 'cat "$1"; sleep 99', "_", log],
        stdout=subprocess.DEVNULL, cwd=str(ROOT),
    )
    time.sleep(after_s)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    status = proc.wait(60)
    took = time.monotonic() - sent
    with open(report) as handle:
        findings = json.load(handle)["findings"]
    incomplete = [f["message"] for f in findings if f["kind"] == "scan-incomplete"]
    return took, status, incomplete[0] if incomplete else "scan complete"


def total_time(mib: int, rounds: int, workdir: str, engines, shape: str) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import logshapes

    log = os.path.join(workdir, f"{shape}.log")
    getattr(logshapes, f"write_{shape.replace('-', '_')}")(log, mib << 20)
    size_mb = os.path.getsize(log) / 1e6
    print(f"total time of a guarded run ({size_mb:.0f} MB {shape} log through `cat`, console to /dev/null,"
          f" {rounds} interleaved rounds; the machine is shared, so the median is the number)")
    tee_times, pump_times, loads = [], [], []
    by_engine = {engine: ([], [], []) for engine in engines}
    scan_times = {engine: [] for engine in engines}
    scan_cpu = {engine: [] for engine in engines}
    findings = {}
    for _ in range(rounds):
        loads.append(os.getloadavg()[0])
        tee_times.append(time_tee_cat(log, workdir))
        pump_times.append(time_pump_cat(log, workdir))
        for engine in engines:
            wall, cpu = scan_alone(log, engine)
            scan_times[engine].append(wall)
            scan_cpu[engine].append(cpu)
        for engine in engines:
            took, after_end, report, cpu = time_guarded_cat(log, workdir, engine)
            by_engine[engine][0].append(took)
            by_engine[engine][1].append(after_end)
            by_engine[engine][2].append(cpu)
            findings[engine] = [(f["rule"], f["line"]) for f in report["findings"]]
            incomplete = [f for f in report["findings"] if f["kind"] == "scan-incomplete"]
            assert not incomplete, incomplete
    tee = _median(tee_times)
    print(f"  load average (1 min) at each round's start: {', '.join(f'{load:.2f}' for load in loads)}")
    print(f"  cat | tee      : min {min(tee_times):5.2f} s  median {tee:5.2f} s  {size_mb / tee:6.0f} MB/s")
    pump = _median(pump_times)
    print(f"  pump alone     : min {min(pump_times):5.2f} s  median {pump:5.2f} s  {size_mb / pump:6.0f} MB/s"
          f"  {pump / tee:.2f}x tee (the guard without its live scan: the pump, the private copy, the end)")
    for engine, (times, after, cpus) in by_engine.items():
        ratio = _median(times) / tee
        print(f"  guard ({engine:<9}): min {min(times):5.2f} s  median {_median(times):5.2f} s"
              f"  {size_mb / _median(times):6.0f} MB/s  {ratio:.2f}x tee (goal <= 1.2x) "
              f"{'OK' if ratio <= 1.2 else 'MISSED'};  report written {_median(after):.2f} s after the"
              f" command ended; {len(findings[engine])} findings")
        # The live scan runs on one core beside the pump: the guard cannot end before it has scanned.
        alone = _median(scan_times[engine])
        print(f"    the same scan alone ({engine}, `python -m analyzer --format json LOG`): median"
              f" {alone:.2f} s = {alone / tee:.2f}x tee, the floor of the guard's time")
        spent = {role: _median([cpu[role] for cpu in cpus]) for role in cpus[0]}
        print(f"    CPU (median, user + system): live scanner {spent['scanner']:.2f} s (the scan alone"
              f" {_median(scan_cpu[engine]):.2f} s), guard (pump, report) {spent['guard']:.2f} s, command"
              f" {spent['command']:.2f} s, on {os.cpu_count()} CPUs")
    if len(findings) > 1:
        same = len({tuple(f) for f in findings.values()}) == 1
        print(f"  identical findings on every engine: {'yes' if same else 'NO'}")
    for engine in engines:
        for rate, mb in ((10.0, 50.0), (40.0, 200.0)):
            after = report_after_paced_output(log, workdir, engine, rate, mb)
            print(f"  {mb:g} MB paced at {rate:g} MB/s, {engine}: report {after:.2f} s after the end")
        took, status, incomplete = cancel_during_flood(log, workdir, engine)
        print(f"  SIGINT 3 s into the flood, {engine}: exit {status} {took:.2f} s later (runner's window:"
              f" 10 s); {incomplete}")


def scan_alone(log: str, engine: str) -> Tuple[float, float]:
    """Wall and CPU (user + system) seconds of ``python -m analyzer --format json --engine ENGINE LOG``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "analyzer", "--format", "json", "--engine", engine, log],
                   stdout=subprocess.DEVNULL, check=False, cwd=ROOT)
    took = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def throughput(args, workdir: str, console: str) -> None:
    tee_times, guard_runs, bare_runs, loads = [], [], [], []
    for _ in range(args.rounds):  # alternate so all see the same machine state
        loads.append(os.getloadavg()[0])
        tee_times.append(time_tee(args.mib, workdir, console))
        guard_runs.append(time_guard(args.mib, workdir, console))
        bare_runs.append(time_guard(args.mib, workdir, console, private_copy=False))
    total_mb = 2 * args.mib * (1 << 20) / 1e6
    where = "/dev/null" if console == "null" else "a pipe read by cat"
    print(f"throughput ({2 * args.mib} MiB: {args.mib} MiB on stdout + {args.mib} MiB on stderr at once,"
          f" console {where}, {args.rounds} interleaved rounds at load"
          f" {' '.join(f'{load:.1f}' for load in loads)}; the machine is shared, so the median is the"
          f" number)")
    guard_times = [run.wall_s for run in guard_runs]
    bare_times = [run.wall_s for run in bare_runs]
    for name, times in (("coreutils tee", tee_times), ("guard", guard_times), ("guard, no copy", bare_times)):
        print(f"  {name:<14}: min {min(times):5.2f} s  median {_median(times):5.2f} s"
              f"  {total_mb / _median(times):6.0f} MB/s")
    # Where the guard's time goes: its own CPU in user space (Python) and in the kernel (the page-cache
    # copies of its writes), and the end's log checks, by median over the rounds.
    for name, runs in (("guard", guard_runs), ("guard, no copy", bare_runs)):
        print(f"  {name:<14}: own CPU user {_median([run.user_s for run in runs]):5.2f} s"
              f"  system {_median([run.system_s for run in runs]):5.2f} s"
              f" (each round {' '.join(f'{run.system_s:.2f}' for run in runs)});"
              f" the end's log checks {_median([run.end_s for run in runs]):5.2f} s")
    ratio = _median(guard_times) / _median(tee_times)
    print(f"  guard / tee (medians): {ratio:.2f}x  (goal <= 1.2x) {'OK' if ratio <= 1.2 else 'MISSED'};"
          f" without the private copy {_median(bare_times) / _median(tee_times):.2f}x")


def deadline_and_cancel(args, workdir: str) -> None:
    for processes in (3, args.processes):
        extra, stacks, result = deadline_to_exit(args.kill_grace, workdir, processes)
        beyond = extra - args.kill_grace
        print(f"deadline -> return, {processes} processes ignoring SIGTERM, kill grace "
              f"{args.kill_grace:g} s: {extra:.2f} s = grace + {beyond:.2f} s, {stacks}, "
              f"exit {result.command.exit_code}, "
              f"{result.command.containment}  (goal grace + < 1 s) {'OK' if beyond < 1 else 'MISSED'}")
    took, stacks, command = cancel_to_exit(args.kill_grace, workdir, args.processes)
    beyond = took - args.kill_grace
    print(f"SIGINT (runner cancel) -> return, {args.processes} processes ignoring SIGTERM, kill grace "
          f"{args.kill_grace:g} s: {took:.2f} s = grace + {beyond:.2f} s, {stacks}, exit "
          f"{command['exit_code']}  (goal grace + < 1 s, and < {RUNNER_SIGTERM_AFTER_S:g} s) "
          f"{'OK' if beyond < 1 and took < RUNNER_SIGTERM_AFTER_S else 'MISSED'}")


def _survivors(marker: str) -> list:
    """Pids of the processes whose command line names ``marker`` (the tree's script), zombies left out."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != b"Z":
            pids.append(int(entry))
    return pids


# The CLI with the containment an unprivileged runner user gets (no cgroup may be made): the same
# main(), only open_containment told to take the process scan.
PROCESS_SCAN_CLI = (
    "import sys\n"
    "from analyzer.supervise import containment, guard\n"
    "opened = containment.open_containment\n"
    "guard.open_containment = lambda token, preference='auto': opened(token, containment.PROCESS_SCAN)\n"
    "from analyzer.cli import main\n"
    "sys.exit(main())\n"
)


def runner_cancel_run(workdir: str, processes: int, kill_grace: float, how: str, scan: bool):
    """One CLI run on the mixed tree, ended by ``how`` ("timeout" or "cancel"); returns what it did."""
    log_dir = tempfile.mkdtemp(prefix=f"{how}-", dir=workdir)
    timeout = 3.0 + processes * 0.15
    entry = ["-c", PROCESS_SCAN_CLI] if scan else ["-m", "analyzer"]
    argv = [sys.executable, *entry, "run", "--kill-grace", f"{kill_grace:g}", "--log-dir", log_dir,
            "--json", os.path.join(log_dir, "report.json"), "--format", "json"]
    if how == "timeout":
        argv += ["--timeout", f"{timeout:g}"]
    argv += ["--", sys.executable, str(MIXED_TREE), str(processes)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("GITHUB_ACTIONS", None)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=log_dir,
                            env=env, start_new_session=True)
    up = threading.Event()
    command_started = []

    def read() -> None:
        for line in proc.stdout:
            if line.startswith(b"started "):
                command_started.append(float(line.split()[1]))
            if line.strip() == f"{processes} up".encode():
                up.set()
        up.set()

    threading.Thread(target=read, daemon=True).start()
    started = time.monotonic()
    sent = []
    if not up.wait(60):
        raise RuntimeError("the tree never came up")
    up_at = time.monotonic()
    if how == "timeout":
        # The deadline: the guard starts its clock just before the command, which says when it began.
        origin = (command_started[0] if command_started else started) + timeout
        proc.wait(timeout=120)
    else:
        origin = up_at
        proc.send_signal(signal.SIGINT)
        sent.append("SIGINT")
        ladder = ((signal.SIGTERM, RUNNER_SIGTERM_AFTER_S), (signal.SIGKILL, RUNNER_SIGKILL_AFTER_S))
        for signum, at in ladder:
            try:
                proc.wait(timeout=max(0.0, origin + at - time.monotonic()))
                break
            except subprocess.TimeoutExpired:
                proc.send_signal(signum)
                sent.append(signal.Signals(signum).name)
        proc.wait()
    took = time.monotonic() - origin
    time.sleep(0.3)
    left = _survivors(str(MIXED_TREE))
    for pid in left:  # never leave the bench's tree behind for the next run
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    report = os.path.join(log_dir, "report.json")
    containment = "-"
    if os.path.exists(report):
        with open(report) as handle:
            containment = json.load(handle).get("command", {}).get("containment", "-")
    stacks = _dumps(log_dir) if os.path.exists(os.path.join(log_dir, "stacks.txt")) else "no stacks.txt"
    return {"took": took, "status": proc.returncode, "sent": sent, "survivors": len(left),
            "report": os.path.exists(report), "containment": containment, "stacks": stacks}


def runner_cancel(args, workdir: str) -> None:
    for scan in (False, True):
        for how in ("timeout", "cancel"):
            got = runner_cancel_run(workdir, args.processes, args.kill_grace, how, scan)
            grace = args.kill_grace if how == "timeout" else min(args.kill_grace, CANCEL_KILL_GRACE_S)
            beyond = got["took"] - grace
            ok = beyond < 1 and not got["survivors"] and got["report"] and got["sent"][1:] == []
            what = "deadline" if how == "timeout" else "SIGINT (runner cancel)"
            print(f"{what} -> return, CLI, {args.processes} mixed processes, kill grace "
                  f"{grace:g} s: {got['took']:.2f} s = grace + {beyond:.2f} s, exit {got['status']}, "
                  f"signals sent {','.join(got['sent']) or '-'}, "
                  f"report.json {'yes' if got['report'] else 'NO'}, "
                  f"{got['containment']}, {got['stacks']}, survivors {got['survivors']}  "
                  f"(goal grace + < 1 s) {'OK' if ok else 'MISSED'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=512, help="MiB per stream (default 512: 1 GiB in all)")
    parser.add_argument("--quiet-s", type=float, default=10.0)
    parser.add_argument("--kill-grace", type=float, default=1.0)
    parser.add_argument("--processes", type=int, default=16, help="processes in the stuck tree (default 16)")
    parser.add_argument("--rounds", type=int, default=5, help="throughput rounds (min and median)")
    parser.add_argument("--total-mib", type=int, default=512, help="MiB of log for the total-time run")
    parser.add_argument("--total-rounds", type=int, default=3)
    parser.add_argument("--total-engines", default="auto,python", help="engines for the total-time run")
    parser.add_argument("--total-shape", default="tests-repeated",
                        help="bench/logshapes.py shapes, comma-separated (tests-repeated,gpu-job)")
    parser.add_argument("--total-only", action="store_true", help="run only the total-time comparison")
    parser.add_argument("--deadline-only", action="store_true", help="only the deadline and cancel timings")
    parser.add_argument("--throughput-only", action="store_true", help="only the guard-vs-tee throughput")
    parser.add_argument("--runner-cancel", action="store_true",
                        help="only the CLI on a mixed stuck tree: --timeout and GitHub's cancel, "
                        "each containment")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="guard-bench-")
    try:
        if args.total_only:
            engines = args.total_engines.split(",")
            for shape in args.total_shape.split(","):
                total_time(args.total_mib, args.total_rounds, workdir, engines, shape)
            return 0
        if args.runner_cancel:
            runner_cancel(args, workdir)
            return 0
        if args.deadline_only:
            deadline_and_cancel(args, workdir)
            return 0
        for console in ("null", "pipe"):
            throughput(args, workdir, console)
        if args.throughput_only:
            return 0
        cpu = quiet_cpu(args.quiet_s, workdir)
        print(f"quiet command ({args.quiet_s:g} s of sleep): guard CPU {cpu:.3f}% of a core"
              f"  (goal < 1%) {'OK' if cpu < 1 else 'MISSED'}")
        deadline_and_cancel(args, workdir)
        engines = args.total_engines.split(",")
        for shape in args.total_shape.split(","):
            total_time(args.total_mib, args.total_rounds, workdir, engines, shape)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
