"""Generated log shapes for the scan benchmark and the pipeline memory test.

Every shape is a real GPU-CI log's shape, not a best case for the scanner:
- ``gpu-job``: the NCCL_DEBUG=INFO job of ``scan_bench.write_log`` (few test lines);
- ``tests-unique`` / ``tests-repeated``: 40% of the lines are pytest ``-v`` result lines (plain and
  xdist ``[gw3] [ 45%] PASSED ...``, ANSI-coloured), about 2.5 million test lines per GiB, between NCCL
  INFO chatter and ``\\r`` progress bars. ``unique`` gives every test line its own id; ``repeated``
  cycles through 3,000 ids, as reruns of flaky tests and concatenated shards do. A few real failures
  are planted inside tests (a FAILED test with its assertion, a segfault, an atexit exception);
- ``short-lines``: 5 million lines of a few bytes (per-line overhead);
- ``long-lines``: a few lines of 50 MiB each (window handling);
- ``tracebacks``: a job that logs every retried failure with its traceback (``logger.warning(...,
  exc_info=True)``), frames of a few hundred library files at random lines, so nearly every frame line is
  new; one uncaught CUDA error at the end (per-line cost of the lines every failure log is made of);
- ``archive``: a GitHub "Download log archive" zip of 200 jobs, each a job file plus step files.

Each writer takes a path and a size in bytes (approximate) and returns the number of planted events.
"""

from __future__ import annotations

import os
import random
import zipfile
from typing import Callable, Dict, Iterator, List

TIMESTAMP = "2024-01-09T10:{m:02d}:{s:02d}.{f:07d}Z "
REPEATED_IDS = 3000
TEST_SHARE = 0.40

_OUTCOMES = ("\x1b[32mPASSED\x1b[0m",) * 18 + ("\x1b[33mSKIPPED\x1b[0m", "\x1b[33mXFAIL\x1b[0m")
_NOISE = (
    "gpu-node-3:4121:4188 [{r}] NCCL INFO Channel {c:02d}/32 : {r}[{r}] -> {p}[{p}] via P2P/IPC/read",
    "gpu-node-3:4121:4188 [{r}] NCCL INFO Using network IB, timeout 1800s, retry count 7",
    "gpu-node-3:4121:4188 [{r}] NCCL INFO comm 0x7f3a{c:04x} rank {r} nranks 8 cudaDev {r} - Init COMPLETE",
    "step {c} loss 0.{c:04d} lr 1.0e-04 timeout=1800 timed_out=False exitcode: 0 grad_norm 0.31",
    "\x1b[1m\x1b[31mwarning\x1b[0m: test_timeout_is_respected uses a deprecated fixture (seed {c})",
)
_PROGRESS = "\r".join(
    f"{p:3d}%|{'#' * (p // 5):<20}| {p}/100 [00:{p % 60:02d}<00:10]" for p in range(0, 101, 4)
)

# Failures planted inside tests: (lines printed while the test runs, outcome word).
_PLANTED_IN_TEST = (
    (
        [
            "    def test_handoff():",
            ">       assert False",
            "E       assert False",
        ],
        "\x1b[31mFAILED\x1b[0m",
    ),
    (
        [
            "Fatal Python error: Segmentation fault",
            "",
            "Current thread 0x00007f3a2c1d0e50 (most recent call first):",
            '  File "/work/tests/distributed/test_ddp.py", line 88 in test_all_reduce',
        ],
        "\x1b[31mFAILED\x1b[0m",
    ),
)
_PLANTED_AT_EXIT = [
    "Exception ignored in atexit callback: <function _shutdown_workers at 0x7f3a2c1d0e50>",
    "Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.11/site-packages/torch/distributed/elastic/agent.py", line 12, '
    "in _shutdown_workers",
    "RuntimeError: distributed checkpoint workers timed out",
]


def _stamp(n: int) -> str:
    return TIMESTAMP.format(m=(n // 60) % 60, s=n % 60, f=(n * 7919) % 10**7)


def _test_id(n: int) -> str:
    return f"tests/distributed/test_mod{n // 500:04d}.py::test_case_{n}[nccl-{n % 8}]"


def _test_lines(size: int, unique: bool, seed: int) -> Iterator[str]:
    """Lines of a test-heavy pytest -v log, about ``size`` bytes, with failures planted inside tests."""
    rng = random.Random(seed)
    written = 0
    n = 0
    next_plant = size // 16  # eight planted failures per log, whatever its size
    while written < size:
        n += 1
        ident = _test_id(n if unique else n % REPEATED_IDS)
        if rng.random() < TEST_SHARE:
            worker = n % 8
            if n % 3 == 0:
                line = f"[gw{worker}] [{n % 100:3d}%] {_OUTCOMES[n % 20]} {ident}"
            else:
                line = f"{ident} {_OUTCOMES[n % 20]} [{n % 100:3d}%]"
        elif rng.random() < 0.02:
            line = _PROGRESS
        else:
            line = _NOISE[n % len(_NOISE)].format(r=n % 8, p=(n + 1) % 8, c=n % 4096)
        if written >= next_plant:
            next_plant += size // 8
            body, outcome = _PLANTED_IN_TEST[(n // 7) % len(_PLANTED_IN_TEST)]
            yield _stamp(n) + f"{ident} \n"
            for text in body:
                yield _stamp(n) + text + "\n"
            line = f"{ident} {outcome} [{n % 100:3d}%]"
        text = _stamp(n) + line + "\n"
        written += len(text)
        yield text
    verdict = "=========== 8 failed, 2499992 passed in 9342.01s (2:35:42) ==========="
    yield _stamp(n) + "\x1b[31m" + verdict + "\x1b[0m\n"
    for text in _PLANTED_AT_EXIT:
        yield _stamp(n) + text + "\n"


def _write_lines(path: str, lines: Iterator[str]) -> None:
    buf: List[str] = []
    with open(path, "wb") as f:
        for line in lines:
            buf.append(line)
            if len(buf) >= 4096:
                f.write("".join(buf).encode())
                buf.clear()
        f.write("".join(buf).encode())


def write_tests_unique(path: str, size: int, seed: int = 11) -> int:
    """Test-heavy log, every test line with its own id."""
    _write_lines(path, _test_lines(size, unique=True, seed=seed))
    return 9


def write_tests_repeated(path: str, size: int, seed: int = 13) -> int:
    """Test-heavy log, 3,000 ids repeated over and over."""
    _write_lines(path, _test_lines(size, unique=False, seed=seed))
    return 9


def write_short_lines(path: str, size: int, seed: int = 17) -> int:
    """Five million (or ``size`` bytes' worth, whichever is less) lines of a few bytes, one planted crash."""
    del seed
    count = min(5_000_000, max(1, size // 6))
    chunk = "".join(f"ok {i % 10}\n" for i in range(10000))
    with open(path, "wb") as f:
        for _ in range(count // 10000):
            f.write(chunk.encode())
        f.write(b"Fatal Python error: Segmentation fault\n")
    return 1


def write_long_lines(path: str, size: int, seed: int = 19) -> int:
    """Lines of 50 MiB (as many as fit in ``size``, at least one), each ending in a real error."""
    del seed
    line_size = 50 << 20
    unit = ("0123456789abcdef" * 4096).encode()
    events = max(1, size // line_size)
    with open(path, "wb") as f:
        for i in range(events):
            f.write(_stamp(i).encode())
            written = 0
            while written < line_size:
                f.write(unit)
                written += len(unit)
            f.write(b" CUDA error: an illegal memory access was encountered\n")
    return events


_LIBRARY_FILES = [
    f"/opt/conda/lib/python3.11/site-packages/{package}/{module}.py"
    for package in ("torch/distributed", "torch/nn/modules", "torch/utils/data", "transformers", "accelerate",
                    "urllib3", "requests", "fsspec", "datasets", "huggingface_hub")
    for module in ("__init__", "api", "utils", "module", "dataloader", "store", "connection", "sessions",
                   "core", "file_download", "distributed_c10d", "retry", "adapters", "modeling_utils")
]
_FRAME_SOURCES = (
    "return self._call_impl(*args, **kwargs)",
    'raise ConnectionError(err, request=request)',
    "response = self._make_request(conn, method, url, **kwargs)",
    'store.set(f"rank_{rank}", b"ready")',
    "batch = next(self._iter)",
    "out = forward_call(*args, **kwargs)",
)


def _traceback_lines(size: int, seed: int) -> Iterator[str]:
    rng = random.Random(seed)
    written = n = 0
    while written < size:
        lines = [f"WARNING:trainer:step {n}: fetching shard {rng.randrange(4096)} failed, retrying in 1s",
                 "Traceback (most recent call last):"]
        for _ in range(rng.randint(5, 30)):
            func = rng.choice(("forward", "_call_impl", "send", "urlopen", "get", "_next_data", "set"))
            lines.append(f'  File "{rng.choice(_LIBRARY_FILES)}", line {rng.randint(1, 3000)}, in {func}')
            lines.append("    " + rng.choice(_FRAME_SOURCES))
        lines.append("ConnectionResetError: [Errno 104] Connection reset by peer")
        for line in lines:
            text = _stamp(n) + line + "\n"
            written += len(text)
            yield text
        n += 1
    yield _stamp(n) + "Traceback (most recent call last):\n"
    yield _stamp(n) + '  File "/w/train.py", line 88, in <module>\n'
    yield _stamp(n) + "RuntimeError: CUDA error: an illegal memory access was encountered\n"


def write_tracebacks(path: str, size: int, seed: int = 29) -> int:
    """Retried failures logged with their tracebacks, then one uncaught CUDA error."""
    _write_lines(path, _traceback_lines(size, seed))
    return 1


def write_gpu_job(path: str, size: int, seed: int = 7) -> int:
    """The NCCL-heavy job log of scan_bench.py."""
    from scan_bench import write_log  # same folder; imported late so this module stays standalone

    return write_log(path, size, seed)


def write_archive(path: str, size: int, seed: int = 23, jobs: int = 200) -> int:
    """A GitHub run-log zip of ``jobs`` jobs (``N_job.txt`` plus ``job/N_step.txt``), ``size`` in all."""
    per_job = max(4096, size // jobs)
    scratch = path + ".job.tmp"
    planted = 0
    try:
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            for job in range(jobs):
                name = f"test (ubuntu-gpu, 3.{9 + job % 4}, shard {job})"
                _write_lines(scratch, _test_lines(per_job, unique=job % 2 == 0, seed=seed + job))
                planted += 9
                archive.write(scratch, f"{job}_{name}.txt")
                archive.write(scratch, f"{name}/4_Run tests.txt")
                setup = _stamp(0) + "Current runner version: '2.321.0'\n"
                archive.writestr(f"{name}/1_Set up job.txt", setup)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)
    return planted


SHAPES: Dict[str, Callable[..., int]] = {
    "gpu-job": write_gpu_job,
    "tests-unique": write_tests_unique,
    "tests-repeated": write_tests_repeated,
    "short-lines": write_short_lines,
    "long-lines": write_long_lines,
    "tracebacks": write_tracebacks,
    "archive": write_archive,
}
