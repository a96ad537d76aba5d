"""Benchmark the guard against its goals, each measured side by side in one run; prints numbers.

1. Output throughput through the guard vs coreutils ``tee``: the same flood (``--mib`` MiB of
   /dev/zero on stdout and the same on stderr, at once), console to /dev/null, logs to a temp dir.
   Goal: the guard within 1.2x of tee's time.
2. The guard's own CPU while the command is quiet (``sleep``): goal under 1% of one core.
3. Deadline -> guard returns, for a tree of three Python processes that ignore SIGTERM, stack dumps
   included. Goal: kill grace + under 1 s.

Usage: python bench/guard_bench.py [--mib 512] [--quiet-s 10] [--kill-grace 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from analyzer.supervise.guard import GuardOptions, supervise

ROOT = Path(__file__).resolve().parents[1]
IGNORE_SIGTERM = ROOT / "tests" / "bin" / "ignore_sigterm.py"


def flood_command(mib: int) -> str:
    return f"head -c {mib}M /dev/zero & head -c {mib}M /dev/zero >&2; wait"


def time_tee(mib: int, workdir: str) -> float:
    # One tee per stream, as the guard has one pump per stream.
    script = (
        f"cd {workdir} && rm -f err.fifo && mkfifo err.fifo && "
        "{ tee tee-err.log >/dev/null <err.fifo & T=$!; } && "
        f"({flood_command(mib)}) 2>err.fifo | tee tee-out.log >/dev/null; wait $T"
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
    """Point fds 1 and 2 at /dev/null while the guard echoes (the bench's own prints come after)."""

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.saved = (os.dup(1), os.dup(2))
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
        return self

    def __exit__(self, *exc):
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        for fd in self.saved:
            os.close(fd)


def time_guard(mib: int, workdir: str) -> float:
    log_dir = os.path.join(workdir, "guard")
    with _ConsoleToNull():
        start = time.monotonic()
        result = supervise(GuardOptions(argv=("bash", "-c", flood_command(mib)), log_dir=log_dir, echo=True))
        took = time.monotonic() - start
    sizes = [os.path.getsize(path) for path in (result.stdout_path, result.stderr_path)]
    assert sizes == [mib << 20] * 2 and result.command.exit_code == 0, (sizes, result.command)
    return took


def quiet_cpu(seconds: float, workdir: str) -> float:
    """The guard's own CPU (all its threads, not its children) as a percentage of one core."""
    before = os.times()
    start = time.monotonic()
    supervise(GuardOptions(argv=("sleep", str(seconds)), log_dir=os.path.join(workdir, "quiet"), echo=False))
    wall = time.monotonic() - start
    after = os.times()
    cpu = (after.user - before.user) + (after.system - before.system)
    return 100.0 * cpu / wall


def deadline_to_exit(kill_grace: float, workdir: str):
    script = (
        "import subprocess, sys\n"
        f"kids = [subprocess.Popen([sys.executable, {str(IGNORE_SIGTERM)!r}]) for _ in range(2)]\n"
        f"exec(open({str(IGNORE_SIGTERM)!r}).read())\n"
    )
    timeout = 2.0
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
    text = (Path(result.command.log_dir) / "stacks.txt").read_text()
    native = text.count(" (native frames): ")
    return after_deadline, f"{text.count('=== pid ') - native} Python + {native} native stack dumps", result


def _median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=512, help="MiB per stream (default 512: 1 GiB in all)")
    parser.add_argument("--quiet-s", type=float, default=10.0)
    parser.add_argument("--kill-grace", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=5, help="throughput rounds (min and median)")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="guard-bench-")
    try:
        tee_times, guard_times = [], []
        for _ in range(args.rounds):  # alternate so both see the same machine state
            tee_times.append(time_tee(args.mib, workdir))
            guard_times.append(time_guard(args.mib, workdir))
        total_mb = 2 * args.mib * (1 << 20) / 1e6
        print(f"throughput ({2 * args.mib} MiB: {args.mib} MiB on stdout + {args.mib} MiB on stderr at once,"
              f" {args.rounds} interleaved rounds; the machine is shared, so the median is the number)")
        for name, times in (("coreutils tee", tee_times), ("guard", guard_times)):
            print(f"  {name:<13}: min {min(times):5.2f} s  median {_median(times):5.2f} s"
                  f"  {total_mb / _median(times):6.0f} MB/s")
        ratio = _median(guard_times) / _median(tee_times)
        print(f"  guard / tee (medians): {ratio:.2f}x  (goal <= 1.2x) {'OK' if ratio <= 1.2 else 'MISSED'}")
        cpu = quiet_cpu(args.quiet_s, workdir)
        print(f"quiet command ({args.quiet_s:g} s of sleep): guard CPU {cpu:.3f}% of a core"
              f"  (goal < 1%) {'OK' if cpu < 1 else 'MISSED'}")
        extra, stacks, result = deadline_to_exit(args.kill_grace, workdir)
        beyond = extra - args.kill_grace
        print(f"deadline -> return, 3 processes ignoring SIGTERM, kill grace {args.kill_grace:g} s: "
              f"{extra:.2f} s = grace + {beyond:.2f} s, {stacks}, "
              f"exit {result.command.exit_code}  (goal grace + < 1 s) {'OK' if beyond < 1 else 'MISSED'}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
