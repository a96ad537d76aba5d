"""Benchmark the log scanner against ``LC_ALL=C grep -E -c`` on a realistic GPU CI log.

Usage: ``python bench/scan_bench.py [--size 1G] [--giant 256M] [--keep DIR] [--repeat N]``

It writes, into a temporary directory deleted afterwards:
- a log of ``--size`` bytes shaped like a GPU job with ``NCCL_DEBUG=INFO``: GitHub timestamps on every
  line, NCCL INFO chatter full of innocent "timeout" words, coloured pytest output, ``\\r`` progress
  bars, long JSON lines, training chatter (``timeout=1800 timed_out=False exitcode: 0``) and a few
  planted true positives (a segfault, an atexit traceback, an NCCL watchdog timeout, a killed worker);
- a single line of ``--giant`` bytes of ``\\r`` progress bar (peak-memory case).

Then, in one run and each in its own subprocess (wall time, and peak RSS from ``os.wait4``): grep with
the same patterns, and the scanner's ``iter_matches`` with each available engine. The patterns are the
real catalogue's (``load_catalogue()``) when it loads, translated to POSIX ERE for grep (named groups and
``(?:`` become plain groups, ``\\d``/``\\s``/``\\w`` become bracket classes, lazy quantifiers become greedy,
caseless rules get ``[xX]`` brackets, ``^`` anchors are dropped because every raw line starts with a
timestamp); a rule using syntax ERE lacks (lookaround, backreferences) is
given to grep as its literal alternatives. Without a catalogue, a 14-pattern sentinel set is used by
both. grep counts matching lines, the scanner counts matches; both counts are printed as a sanity check.
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


def measure(argv: Sequence[str], env: Optional[dict] = None) -> Tuple[float, float, str]:
    """Run ``argv``; return (wall seconds, peak RSS in MiB of that child, stdout).

    Peak RSS is the child's own ``VmHWM`` from ``/proc``, polled while it runs: ``ru_maxrss`` from
    ``wait4`` would report at least this (big) parent's size, because Linux carries the parent's
    high-water mark through fork and exec.
    """
    start = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(list(argv), stdout=out, env=env)
        peak_kib = 0
        status_path = f"/proc/{proc.pid}/status"
        while proc.poll() is None:
            peak_kib = max(peak_kib, _vm_hwm_kib(status_path))
            time.sleep(0.01)
        wall = time.monotonic() - start
        out.seek(0)
        text = out.read().decode().strip()
    if proc.returncode != 0:
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


SCAN_CHILD = """
import sys
sys.path.insert(0, {root!r})
from analyzer.scan.engine import iter_matches
from analyzer.scan.sources import iter_sources
engine, path, label = sys.argv[1], sys.argv[2], sys.argv[3]
if label == "sentinels":
    import regex
    from analyzer.model import Kind, Severity
    from analyzer.rules.model import Catalogue, Rule
    pats = {sentinels!r}
    catalogue = Catalogue(rules=tuple(
        Rule(id="s%d" % i, kind=Kind.CRASH, severity=Severity.ERROR, message="m", doc="d", pattern=p,
             pattern_re=regex.compile(p)) for i, p in enumerate(pats)))
else:
    from analyzer.rules.loader import load_catalogue
    catalogue = load_catalogue()
total = events = 0
for match in iter_matches(iter_sources([path]), catalogue, engine):
    total += 1
    events += match.rule.marker is None
print("%d/%d" % (total, events))
"""


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1G", help="size of the realistic log (default 1G)")
    parser.add_argument(
        "--giant", default="256M", help="size of the single-line progress bar (default 256M; 0 skips)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs of each command; the best time is shown")
    parser.add_argument("--keep", help="write the logs here and keep them (default: a temp dir, deleted)")
    args = parser.parse_args(argv)
    size = parse_size(args.size)
    giant = parse_size(args.giant)

    sys.path.insert(0, ROOT)
    from analyzer.scan._engine_prefilter import hyperscan_available

    label, rules = load_patterns()
    eres, fallbacks = grep_patterns(rules)
    tmp = args.keep or tempfile.mkdtemp(prefix="scan-bench-")
    os.makedirs(tmp, exist_ok=True)
    try:
        log = os.path.join(tmp, "big.log")
        t0 = time.monotonic()
        planted = write_log(log, size)
        actual = os.path.getsize(log)
        print(
            f"log: {actual / 1e6:.0f} MB, {planted} planted events, written in {time.monotonic() - t0:.1f}s"
        )
        print(f"patterns: {label}; grep gets {len(eres)} ERE patterns ({fallbacks} rules as literals)")
        print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
        pattern_file = os.path.join(tmp, "patterns.ere")
        with open(pattern_file, "w") as f:
            f.write("\n".join(eres) + "\n")
        subprocess.run(["cat", log], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
        engines = ["hyperscan", "python"] if hyperscan_available() else ["python"]
        child = SCAN_CHILD.format(root=ROOT, sentinels=SENTINELS)
        rows = []
        grep_wall = _best(
            args.repeat,
            ["grep", "-E", "-c", "-f", pattern_file, log],
            {"LC_ALL": "C", "PATH": os.environ.get("PATH", "")},
        )
        rows.append(("grep -E -c", grep_wall))
        for engine in engines:
            rows.append(
                (
                    f"scanner --engine {engine}",
                    _best(args.repeat, [sys.executable, "-c", child, engine, log, label]),
                )
            )
        print("\ncount: grep's matching lines; the scanner's matches / those that are not markers")
        print(f"{'command':<26} {'wall s':>8} {'MB/s':>8} {'x grep':>7} {'peak MiB':>9} {'count':>12}")
        for name, (wall, rss, out) in rows:
            speed = actual / 1e6 / wall
            print(f"{name:<26} {wall:8.2f} {speed:8.0f} {wall / grep_wall[0]:7.2f} {rss:9.1f} {out:>12}")
        if giant:
            gpath = os.path.join(tmp, "giant.log")
            write_giant(gpath, giant)
            gsize = os.path.getsize(gpath)
            print(f"\nsingle line of {gsize / 2**20:.0f} MiB (\\r progress bar, one error at its end):")
            for engine in engines:
                wall, rss, out = _best(1, [sys.executable, "-c", child, engine, gpath, label])
                print(f"scanner --engine {engine:<10} {wall:8.2f} s  peak {rss:6.1f} MiB  matches {out}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _best(repeat: int, argv: Sequence[str], env: Optional[dict] = None) -> Tuple[float, float, str]:
    runs = [measure(argv, env) for _ in range(max(1, repeat))]
    return min(runs, key=lambda r: r[0])


if __name__ == "__main__":
    sys.exit(main())
