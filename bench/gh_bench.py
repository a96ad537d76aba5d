"""Benchmark ``gh``: fetch MB/s, scan MB/s and peak RSS for large job logs from a loopback GitHub.

A threaded HTTP server on 127.0.0.1 answers like GitHub (run object, one page of jobs, the logs
endpoint's 302 to a second path standing for blob storage) and streams each job's log, generated on
the fly: GitHub-framed noisy lines (BOM, timestamps), an atexit traceback at the end. The log is never
held in memory on either side, so the peak RSS printed is the analyzer's own: it must stay that of
one scan (the issue's goal: under 200 MiB on a 300 MB log) whatever the number of jobs.

    python bench/gh_bench.py --mb 300 --jobs 1
    python bench/gh_bench.py --mb 50 --jobs 6 --workers 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "ghs_benchTOKEN"
STAMP = b"2024-01-01T00:00:00.0000000Z "
NOISE = [
    b"tests/gpu/test_ops.py::test_matmul[float16-256] PASSED                     [ 41%]",
    b"[rank3]:[I1201 08:00:00.123456 ProcessGroupNCCL.cpp:2291] NCCL_DEBUG INFO comm 0x55 rank 3 nranks 8",
    b"\x1b[32mINFO\x1b[0m step 1200 loss=0.2143 lr=3.0e-4 timeout=1800 tokens/s=51234",
    b"Downloading shard 17/64: 100%|##########| 1.2G/1.2G [00:03<00:00, 402MB/s]",
]
TAIL = [
    b"Exception ignored in atexit callback: <function _prepare_to_exit at 0x7fae5bbfe2a0>",
    b"Traceback (most recent call last):",
    b'  File "/work/train.py", line 5, in _prepare_to_exit',
    b'    raise RuntimeError("process group was destroyed twice")',
    b"RuntimeError: process group was destroyed twice",
]


def _block() -> bytes:
    return b"".join(STAMP + line + b"\n" for line in NOISE * 256)


def log_size(mb: int) -> int:
    block = len(_block())
    tail = sum(len(STAMP) + len(line) + 1 for line in TAIL)
    return 3 + (mb * 1024 * 1024 // block) * block + tail


def log_chunks(mb: int) -> Iterator[bytes]:
    block = _block()
    yield b"\xef\xbb\xbf"
    for _ in range(mb * 1024 * 1024 // len(block)):
        yield block
    yield b"".join(STAMP + line + b"\n" for line in TAIL)


def serve(mb: int, jobs: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep the benchmark's output clean
            pass

        def _json(self, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            path = self.path.split("?")[0]
            if path.startswith("/blob/"):
                if "Authorization" in self.headers:
                    self.send_error(400, "token sent to the log host")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(log_size(mb)))
                self.end_headers()
                for chunk in log_chunks(mb):
                    self.wfile.write(chunk)
                return
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self.send_error(401)
                return
            if path == "/repos/bench/gpu/actions/runs/1":
                self._json({"id": 1, "head_sha": "abc", "run_attempt": 1})
            elif path == "/repos/bench/gpu/actions/runs/1/jobs":
                self._json(
                    {
                        "total_count": jobs,
                        "jobs": [
                            {
                                "id": 100 + i,
                                "run_id": 1,
                                "run_attempt": 1,
                                "name": f"gpu ({i})",
                                "status": "completed",
                                "conclusion": "success",
                                "head_sha": "abc",
                                "runner_name": f"gpu-{i}",
                            }
                            for i in range(jobs)
                        ],
                    }
                )
            elif re.match(r"^/repos/bench/gpu/actions/jobs/\d+/logs$", path):
                self.send_response(302)
                self.send_header("Location", f"/blob/{path.split('/')[-2]}?sig=x")
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self.send_error(404)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=100, help="size of each job's log in MiB (default 100)")
    parser.add_argument("--jobs", type=int, default=2, help="number of jobs (default 2)")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--engine", default="auto")
    args = parser.parse_args()

    server = serve(args.mb, args.jobs)
    api = f"http://127.0.0.1:{server.server_address[1]}"
    env = dict(os.environ, GH_TOKEN=TOKEN)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "report.json")
        began = time.monotonic()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "analyzer",
                "gh",
                "bench/gpu",
                "--run",
                "1",
                "--api-url",
                api,
                "--workers",
                str(args.workers),
                "--engine",
                args.engine,
                "--json",
                out,
                "--format",
                "json",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        wall = time.monotonic() - began
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        server.shutdown()
        if proc.returncode not in (0, 1):
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        report = json.load(open(out, encoding="utf-8"))
    times = next(d["text"] for d in report["diagnostics"] if d["title"] == "Fetch and scan")
    fetched, fetch_s = map(float, re.search(r"fetched ([\d.]+) MiB in ([\d.]+)s", times).groups())
    scanned, scan_s = map(float, re.search(r"scanned ([\d.]+) MiB in ([\d.]+)s", times).groups())
    found = sum(1 for f in report["findings"] if f["rule"].startswith("atexit"))
    print(f"jobs={args.jobs} log={args.mb} MiB each workers={args.workers} engine={args.engine}")
    print(
        f"fetch: {fetched:.0f} MiB in {fetch_s:.2f}s = {fetched / max(fetch_s, 1e-9):.1f} MiB/s "
        "(wall, downloads overlap scans)"
    )
    print(
        f"scan:  {scanned:.0f} MiB in {scan_s:.2f}s = {scanned / max(scan_s, 1e-9):.1f} MiB/s "
        "(one log at a time)"
    )
    print(
        f"peak RSS of the analyzer: {peak_mib:.0f} MiB; total wall {wall:.1f}s; "
        f"atexit findings {found}/{args.jobs}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
