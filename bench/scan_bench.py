"""Benchmark the whole scan against ``LC_ALL=C grep -E -c`` on the log shapes of real GPU CI.

Usage: ``python bench/scan_bench.py [--size 1G] [--shapes gpu-job,tests-unique,...] [--giant 256M]
[--keep DIR] [--repeat N]``

The shapes are in ``bench/logshapes.py``: the NCCL-heavy job log written here (``write_log``), two
test-heavy logs (40% pytest ``-v`` lines, unique and repeated ids), 5 million short lines, 50 MiB
lines, and a GitHub run archive of 200 jobs; plus a single ``--giant`` line of ``\\r`` progress bar.

For each shape, in one run and each in its own subprocess (wall time, and the child's peak RSS polled
from ``/proc``): grep with the same patterns, and the whole scan as a user runs it,
``python -m analyzer --format json --engine E LOG``, with each available engine, as ratios to grep.
The patterns are the real catalogue's (``load_catalogue()``) when it loads, translated to POSIX ERE for
grep (named groups and ``(?:`` become plain groups, ``\\d``/``\\s``/``\\w`` become bracket classes, lazy
quantifiers become greedy, caseless rules get ``[xX]`` brackets, ``^`` anchors are dropped because every
raw line starts with a timestamp); a rule using syntax ERE lacks (lookaround, backreferences) is given
to grep as its literal alternatives. grep reads the archive's members extracted (it cannot unzip); the
scanner reads the zip itself and inflates it.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import List, Optional, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SENTINELS = [
    r"Segmentation fault",
    r"Fatal Python error: \w+",
    r"Exception ignored in atexit callback",
    r"Error in atexit\._run_exitfuncs",
    r"Watchdog caught collective operation timeout",
    r"Timeout \(>\d+(\.\d+)?s\) from pytest-timeout",
    r"\+\+\++ Timeout \+\+\++",
    r"terminated with signal SIG[A-Z]+",
    r"exitcode\s*: -\d+",
    r"CUDA error: an illegal memory access",
    r"CUDA out of memory",
    r"terminate called after throwing an instance of",
    r"\*\*\* Received signal \d+ \*\*\*",
    r"has timed out after \d+ minutes",
]


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip().upper())
    if m is None:
        raise SystemExit(f"--size {text}: expected a number with an optional K, M or G suffix")
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


# ---------------------------------------------------------------------------------------------- log


def _ts(rng: random.Random, second: int) -> str:
    clock = f"{(second // 3600) % 24:02d}:{(second // 60) % 60:02d}:{second % 60:02d}"
    return f"2024-01-09T{clock}.{rng.randrange(10**7):07d}Z "


def _noise_block(rng: random.Random, approx: int) -> bytes:
    """About ``approx`` bytes of healthy log lines (no true positive)."""
    out: List[str] = []
    size = 0
    second = 0
    while size < approx:
        second += 1
        ts = _ts(rng, second)
        r = rng.random()
        host = f"gpu-node-{rng.randrange(8)}:{rng.randrange(1000, 9999)}:{rng.randrange(1000, 9999)}"
        if r < 0.925:
            choice = rng.randrange(6) if rng.random() < 0.02 else rng.choice((0, 0, 0, 2, 3, 5))
            rank = rng.randrange(8)
            if choice == 0:
                peer = (rank + 1) % 8
                body = (
                    f"{host} [{rank}] NCCL INFO Channel {rng.randrange(32):02d}/32 : "
                    f"{rank}[{rank}] -> {peer}[{peer}] via P2P/IPC/read"
                )
            elif choice == 1:
                body = f"{host} [{rank}] NCCL INFO NCCL_IB_TIMEOUT set by environment to 22."
            elif choice == 2:
                body = (
                    f"{host} [{rank}] NCCL INFO comm 0x{rng.randrange(1 << 32):x} rank {rank} nranks 8 "
                    f"cudaDev {rank} busId {rng.randrange(1 << 20):x} - Init COMPLETE"
                )
            elif choice == 3:
                timeout = rng.choice((1800, 600, 3600))
                body = f"{host} [{rank}] NCCL INFO Using network IB, timeout {timeout}s, retry count 7"
            elif choice == 4:
                body = (
                    f"{host} [{rank}] NCCL INFO ProcessGroupNCCL initialized with options: "
                    "TIMEOUT(ms): 1800000 USE_HIGH_PRIORITY_STREAM: 0"
                )
            else:
                body = f"{host} [{rank}] NCCL INFO Connected all rings, timeout handling enabled"
        elif r < 0.927:
            name = rng.choice(
                (
                    "test_timeout_is_respected",
                    "test_sigterm_handling",
                    "test_allreduce",
                    "test_segfault_guard",
                    "test_oom_retry",
                )
            )
            status = rng.choice(("\x1b[32mPASSED\x1b[0m", "\x1b[32mPASSED\x1b[0m", "\x1b[33mSKIPPED\x1b[0m"))
            test = f"tests/distributed/test_collectives.py::{name}[{rng.randrange(64)}]"
            body = f"{test} {status} [{rng.randrange(100):3d}%]"
        elif r < 0.97:
            tail = " exitcode: 0" if rng.random() < 0.1 else ""
            body = (
                f"step {second} loss {rng.random() * 4:.4f} lr 1.0e-04 timeout=1800 timed_out=False{tail} "
                f"grad_norm {rng.random():.3f}"
            )
        elif r < 0.98:
            total = rng.randrange(50, 400)
            states = [
                f"{100 * i // total:3d}%|{'#' * (20 * i // total):<20}| {i}/{total} "
                f"[00:{i % 60:02d}<00:10, 9.{i % 10}it/s]"
                for i in range(0, total, 7)
            ]
            body = "\r".join(states)
        elif r < 0.985:
            fields = ", ".join(f'"metric_{i}": {rng.random():.6f}' for i in range(rng.randrange(50, 400)))
            body = "{" + fields + "}"
        else:
            body = (
                "caught subprocess.TimeoutExpired while polling the health endpoint; retrying (attempt 2/5)"
            )
        line = ts + body + "\n"
        out.append(line)
        size += len(line)
    return "".join(out).encode()


PLANTED = [
    "Fatal Python error: Segmentation fault\n",
    "Exception ignored in atexit callback: <function _prepare_to_exit at 0x7f3a2c1d0e50>\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.11/site-packages/torch/distributed/elastic/agent.py", line 12, '
    "in _prepare_to_exit\n"
    "RuntimeError: distributed checkpoint workers timed out\n",
    "[rank3]:[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=4411, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
    "ran for 600081 milliseconds before timing out.\n",
    "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGTERM\n",
    "+++++++++++++++++++++++++++++++++++ Timeout ++++++++++++++++++++++++++++++++++++\n",
]


def write_log(path: str, size: int, seed: int = 7) -> int:
    """Write ``size`` bytes (about) of noise with PLANTED events spread through it; return planted count."""
    rng = random.Random(seed)
    blocks = [_noise_block(rng, 4 << 20) for _ in range(3)]
    every = max(1, size // (4 << 20) // 8)  # about eight planted events whatever the size
    planted = 0
    written = 0
    with open(path, "wb") as f:
        i = 0
        while written < size:
            block = blocks[i % len(blocks)]
            f.write(block)
            written += len(block)
            if i % every == every // 2:
                event = PLANTED[planted % len(PLANTED)]
                data = "".join(_ts(rng, i) + line + "\n" for line in event.splitlines()).encode()
                f.write(data)
                written += len(data)
                planted += 1
            i += 1
    return planted


def write_giant(path: str, size: int) -> None:
    """One line of ``size`` bytes: a progress bar redrawn with ``\\r``, then one real error."""
    unit = "".join(
        f"\r{p:3d}%|{'#' * (p // 5):<20}| {p}/100 [00:{p % 60:02d}<00:10]" for p in range(100)
    ).encode()
    with open(path, "wb") as f:
        f.write(b"2024-01-09T10:00:00.0000000Z ")
        written = 0
        while written < size:
            f.write(unit)
            written += len(unit)
        f.write(b"\rFatal Python error: Segmentation fault\n")


# ------------------------------------------------------------------------------------ patterns


def load_patterns() -> Tuple[str, List[Tuple[str, bool, Tuple[str, ...]]]]:
    """(label, [(pattern, ignore_case, literals)]): the real catalogue when it loads, else SENTINELS."""
    sys.path.insert(0, ROOT)
    try:
        from analyzer.rules.loader import load_catalogue

        catalogue = load_catalogue()
    except Exception as err:  # no catalogue yet, or a broken one: the sentinel set still measures
        print(f"(catalogue not loaded: {type(err).__name__}: {err}; using the {len(SENTINELS)} sentinels)")
        return "sentinels", [(p, False, ()) for p in SENTINELS]
    out = []
    for rule in catalogue.rules:
        out.append((rule.start if rule.is_block else rule.pattern, rule.ignore_case, tuple(rule.literals)))
    return f"catalogue ({len(out)} rules)", out


_UNSUPPORTED = re.compile(r"\(\?[=!>]|\(\?<[=!]|\\[1-9]|\\[pPXAZzGK]|[*+?}]\+|\(\?[a-zA-OQ-Z]")


def to_ere(pattern: str, ignore_case: bool) -> Optional[str]:
    """Translate a Python regex to POSIX ERE for GNU grep, or None when ERE cannot express it."""
    if _UNSUPPORTED.search(pattern):
        return None
    out: List[str] = []
    i = 0
    in_class = False
    classes = {
        "d": "[0-9]",
        "D": "[^0-9]",
        "s": "[[:space:]]",
        "S": "[^[:space:]]",
        "w": "[[:alnum:]_]",
        "W": "[^[:alnum:]_]",
    }
    in_class_map = {"d": "0-9", "s": "[:space:]", "w": "[:alnum:]_"}
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if in_class:
                if nxt in in_class_map:
                    out.append(in_class_map[nxt])
                elif nxt in "]\\^-":
                    return None
                else:
                    out.append(nxt)
            elif nxt in classes:
                out.append(classes[nxt])
            elif nxt in "bB<>":
                out.append("\\" + nxt)
            elif nxt == "t":
                out.append("\t")
            elif nxt.isalnum():
                return None
            else:
                out.append("\\" + nxt)
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            if pattern[i + 1 : i + 2] == "^":
                out.append("^")
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                out.append("]")
                i += 1
            i += 1
            continue
        if c == "(" and pattern.startswith("(?P<", i):
            i = pattern.index(">", i) + 1
            out.append("(")
            continue
        if c == "(" and pattern.startswith("(?:", i):
            out.append("(")
            i += 3
            continue
        if c in "*+?}" and pattern[i + 1 : i + 2] == "?":
            out.append(c)
            i += 2
            continue
        if c == "^":
            # Log lines carry a timestamp before the text rules see, so anchors are dropped.
            i += 1
            continue
        if ignore_case and c.isalpha():
            out.append(f"[{c.lower()}{c.upper()}]")
        else:
            out.append(c)
        i += 1
    return "".join(out)


def grep_patterns(rules: Sequence[Tuple[str, bool, Tuple[str, ...]]]) -> Tuple[List[str], int]:
    """ERE patterns for grep, and how many rules fell back to their literals."""
    from analyzer.scan._engine_literals import pattern_requirement

    out: List[str] = []
    fallbacks = 0
    for pattern, ignore_case, literals in rules:
        ere = to_ere(pattern, ignore_case)
        if ere is not None and _grep_accepts(ere):
            out.append(ere)
            continue
        fallbacks += 1
        alts = literals
        if not alts:
            req = pattern_requirement(pattern, ignore_case)
            alts = req.alternatives if req is not None else ()
        for alt in alts:
            out.append(to_ere(re.escape(alt), ignore_case) or re.escape(alt))
    return out, fallbacks


def _grep_accepts(ere: str) -> bool:
    proc = subprocess.run(["grep", "-E", "-e", ere], input=b"", capture_output=True, env={"LC_ALL": "C"})
    return proc.returncode in (0, 1)


# ---------------------------------------------------------------------------------- measuring


def measure(
    argv: Sequence[str], env: Optional[dict] = None, ok_status: Sequence[int] = (0, 1)
) -> Tuple[float, float, str]:
    """Run ``argv``; return (wall seconds, peak RSS in MiB of that child, stdout).

    Peak RSS is the child's own ``VmHWM`` from ``/proc``, polled while it runs: ``ru_maxrss`` from
    ``wait4`` would report at least this (big) parent's size, because Linux carries the parent's
    high-water mark through fork and exec.
    """
    start = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(list(argv), stdout=out, env=env, cwd=ROOT)
        peak_kib = 0
        status_path = f"/proc/{proc.pid}/status"
        while proc.poll() is None:
            peak_kib = max(peak_kib, _vm_hwm_kib(status_path))
            time.sleep(0.01)
        wall = time.monotonic() - start
        out.seek(0)
        text = out.read().decode().strip()
    if proc.returncode not in ok_status:
        raise SystemExit(f"{argv[0]} failed with status {proc.returncode}")
    return wall, peak_kib / 1024.0, text


def _vm_hwm_kib(status_path: str) -> int:
    try:
        with open(status_path) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:  # the child just exited
        pass
    return 0


# The scanner as an installed package runs: with its bytecode cached (a developer shell that sets
# PYTHONDONTWRITEBYTECODE would charge every run the compile of every module).
SCANNER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _warm_bytecode() -> None:
    subprocess.run(_scanner_argv("auto", os.devnull), env=SCANNER_ENV, stdout=subprocess.DEVNULL, cwd=ROOT)


def _scanner_argv(engine: str, path: str) -> List[str]:
    """The whole scan as a user runs it: CLI, rules, engine, ranking and the JSON report."""
    return [sys.executable, "-m", "analyzer", "--format", "json", "--engine", engine, path]


def _findings(stdout: str) -> str:
    import json

    try:
        report = json.loads(stdout)
    except ValueError:
        return "bad json"
    severities = [f["severity"] for f in report["findings"]]
    return f"{severities.count('error')}e/{severities.count('warning')}w/{severities.count('notice')}n"


def _grep_target(shape: str, path: str, tmp: str) -> List[str]:
    """What grep reads: the log itself, or for the archive its members extracted (grep cannot unzip)."""
    if shape != "archive":
        return [path]
    out = os.path.join(tmp, "archive-extracted")
    if not os.path.isdir(out):
        import zipfile

        with zipfile.ZipFile(path) as archive:
            archive.extractall(out)
    return ["-r", out]


def _shape_size(shape: str, size: int) -> int:
    if shape == "short-lines":
        return 5_000_000 * 6
    if shape == "long-lines":
        return 3 * (50 << 20)
    return size


def main(argv: Optional[Sequence[str]] = None) -> int:
    from logshapes import SHAPES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1G", help="size of each sized shape (default 1G)")
    parser.add_argument(
        "--shapes",
        default=",".join(SHAPES),
        help=f"comma-separated shapes to measure (default all: {','.join(SHAPES)})",
    )
    parser.add_argument(
        "--giant", default="256M", help="size of the single-line progress bar (default 256M; 0 skips)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs of each command; the best time is shown")
    parser.add_argument("--keep", help="write the logs here and keep them (default: a temp dir, deleted)")
    args = parser.parse_args(argv)
    size = parse_size(args.size)
    giant = parse_size(args.giant)
    shapes = [s for s in args.shapes.split(",") if s]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        raise SystemExit(f"--shapes: unknown shape(s) {', '.join(unknown)}; known: {', '.join(SHAPES)}")

    sys.path.insert(0, ROOT)
    from analyzer.scan._engine_prefilter import hyperscan_available

    label, rules = load_patterns()
    eres, fallbacks = grep_patterns(rules)
    tmp = args.keep or tempfile.mkdtemp(prefix="scan-bench-")
    os.makedirs(tmp, exist_ok=True)
    engines = ["hyperscan", "python"] if hyperscan_available() else ["python"]
    grep_env = {"LC_ALL": "C", "PATH": os.environ.get("PATH", "")}
    print(f"patterns: {label}; grep gets {len(eres)} ERE patterns ({fallbacks} rules as literals)")
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print("scanner = the whole `python -m analyzer --format json --engine E LOG`; peak = its VmHWM")
    print("findings: errors/warnings/notices in the report; grep: matching lines")
    try:
        pattern_file = os.path.join(tmp, "patterns.ere")
        with open(pattern_file, "w") as f:
            f.write("\n".join(eres) + "\n")
        print(f"\n{'shape':<15} {'MB':>6} {'command':<22} {'wall s':>8} {'MB/s':>7} {'x grep':>7} "
              f"{'peak MiB':>9} {'findings':>12}")
        _warm_bytecode()
        for shape in shapes:
            suffix = ".zip" if shape == "archive" else ".log"
            log = os.path.join(tmp, shape + suffix)
            if not os.path.exists(log):
                SHAPES[shape](log, _shape_size(shape, size))
            actual = os.path.getsize(log)
            target = _grep_target(shape, log, tmp)
            read_bytes = _tree_size(target[-1])
            subprocess.run(["cat", log], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
            grep = _best(args.repeat, ["grep", "-E", "-c", "-f", pattern_file, *target], grep_env)
            grep_count = sum(int(x.rsplit(":", 1)[-1]) for x in grep[2].splitlines()) if grep[2] else 0
            print(f"{shape:<15} {actual / 1e6:6.0f} {'grep -E -c':<22} {grep[0]:8.2f} "
                  f"{read_bytes / 1e6 / grep[0]:7.0f} {1.0:7.2f} {grep[1]:9.1f} {grep_count:>12}")
            for engine in engines:
                wall, rss, out = _best(args.repeat, _scanner_argv(engine, log), SCANNER_ENV, ok_status=(0, 1))
                print(f"{'':<15} {'':>6} {'scan ' + engine:<22} {wall:8.2f} {read_bytes / 1e6 / wall:7.0f} "
                      f"{wall / grep[0]:7.2f} {rss:9.1f} {_findings(out):>12}")
        if giant:
            gpath = os.path.join(tmp, "giant.log")
            write_giant(gpath, giant)
            gsize = os.path.getsize(gpath)
            print(f"\nsingle line of {gsize / 2**20:.0f} MiB (\\r progress bar, one error at its end):")
            for engine in engines:
                wall, rss, out = _best(1, _scanner_argv(engine, gpath), SCANNER_ENV, ok_status=(0, 1))
                print(f"scan {engine:<10} {wall:8.2f} s  peak {rss:6.1f} MiB  findings {_findings(out)}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _tree_size(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def _best(
    repeat: int, argv: Sequence[str], env: Optional[dict] = None, ok_status: Sequence[int] = (0, 1)
) -> Tuple[float, float, str]:
    runs = [measure(argv, env, ok_status) for _ in range(max(1, repeat))]
    return min(runs, key=lambda r: r[0])


if __name__ == "__main__":
    sys.exit(main())
