"""Two real loopback servers per test: the API and, on another port, the log host it redirects to."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest
from pytest_httpserver import HTTPServer

from .fakegh import TOKEN, FakeGitHub

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    api = HTTPServer(host="127.0.0.1", threaded=True)
    blobs = HTTPServer(host="127.0.0.1", threaded=True)
    api.start()
    blobs.start()
    try:
        yield FakeGitHub(api, blobs)
    finally:
        for server in (api, blobs):
            server.clear()
            if server.is_running():
                server.stop()


def run_cli(
    args: List[str], env: Optional[Dict[str, str]] = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """``python -m analyzer ARGS`` as a real process, with the token in its environment."""
    full = {k: v for k, v in os.environ.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN", "GITHUB_API_URL")}
    full["GH_TOKEN"] = TOKEN
    full.update(env or {})
    full = {k: v for k, v in full.items() if v is not None}
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        cwd=str(ROOT),
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
