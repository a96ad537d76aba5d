"""A GitHub REST API on loopback, answering the way GitHub does, for the ``gh`` tests.

Two real HTTP servers (pytest-httpserver, i.e. werkzeug on 127.0.0.1): ``api`` answers runs, job
lists and the logs endpoint; ``blobs``, on another port, stands for the blob storage the logs endpoint
redirects to (a 302 with a signed, short-lived URL) and fails any request that carries an
``Authorization`` header, as the token must never reach it.

What is copied from GitHub's behaviour (REST docs "Using pagination in the REST API", "Workflow
jobs", "Download job logs for a workflow run"):

- list pages hold fewer items than ``per_page`` asked for, and ``Link: <...>; rel="next"`` points at
  ``/repositories/{id}/actions/runs/{run}/jobs?...&page=N``, not the ``/repos/{owner}/{repo}`` form;
- job logs are served by the redirect target, each line prefixed with the runner's timestamp
  (``2024-01-01T00:00:00.0000000Z ``) and the body starting with a UTF-8 BOM.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

from pytest_httpserver import HTTPServer, URIPattern
from werkzeug.wrappers import Request, Response

REPO = "acme/gpu"
REPO_ID = 4242
TOKEN = "ghs_s3cretTOKENvalue0123456789abcdef"
PAGE_SIZE = 2  # smaller than the per_page=100 the client asks for
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
STAMP = "2024-01-01T00:00:00.0000000Z "
BOM = "\ufeff"


def github_framed(text: str) -> bytes:
    """A log body as the logs endpoint serves it: BOM, then every line timestamped."""
    lines = text.splitlines()
    return (BOM + "".join(f"{STAMP}{line}\n" for line in lines)).encode("utf-8")


def fixture_log(name: str) -> bytes:
    """A real fixture without its ``#!`` header, GitHub-framed (already-framed fixtures kept as they are)."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#!"))
    if body.lstrip().startswith("20") and "Z " in body.splitlines()[0]:
        return (BOM + body + "\n").encode("utf-8")
    return github_framed(body)


PASSING_LOG = github_framed(
    "##[group]Run python -m pytest tests/gpu\n"
    "============================= test session starts ==============================\n"
    "tests/gpu/test_ops.py::test_matmul PASSED\n"
    "tests/gpu/test_ops.py::test_timeout_handling PASSED\n"
    "============================== 2 passed in 3.10s ===============================\n"
)


@dataclass
class Job:
    id: int
    name: str
    run_id: int
    attempt: int = 1
    conclusion: Optional[str] = "success"
    status: str = "completed"
    runner: Optional[str] = "gpu-runner-1"
    log: Optional[bytes] = None  # None: the logs endpoint answers ``log_status``
    log_status: int = 410

    def to_api(self, head_sha: str) -> Dict[str, object]:
        return {
            "id": self.id,
            "run_id": self.run_id,
            "run_attempt": self.attempt,
            "name": self.name,
            "status": self.status,
            "conclusion": self.conclusion,
            "head_sha": head_sha,
            "runner_name": self.runner,
            "labels": ["self-hosted", "gpu"],
        }


@dataclass
class Run:
    id: int
    head_sha: str
    attempts: int = 1
    jobs: List[Job] = field(default_factory=list)


class FakeGitHub:
    """Register runs, then point ``--api-url`` at ``api_url``. Records every request it saw."""

    def __init__(self, api: HTTPServer, blobs: HTTPServer) -> None:
        self.api = api
        self.blobs = blobs
        self.runs: Dict[int, Run] = {}
        self.requests: List[Request] = []
        self.blob_requests: List[Request] = []
        self.authorized_blob_requests = 0
        self.lock = threading.Lock()
        self.cut_next: Dict[int, int] = {}  # job id -> how many more downloads break off mid-body
        self.before: Optional[Callable[[Request], Optional[Response]]] = None  # rate limits, errors
        api.expect_request(_Any(), method="GET").respond_with_handler(self._api)
        blobs.expect_request(_Any(), method="GET").respond_with_handler(self._blob)

    @property
    def api_url(self) -> str:
        return self.api.url_for("").rstrip("/")

    def add(self, run: Run) -> Run:
        self.runs[run.id] = run
        return run

    def paths(self) -> List[str]:
        return [r.path for r in self.requests]

    # -- the API server -------------------------------------------------------------------------

    def _api(self, request: Request) -> Response:
        with self.lock:
            self.requests.append(request)
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return _json({"message": "Bad credentials"}, 401)
        if not request.headers.get("User-Agent"):
            return _json({"message": "Request forbidden by administrative rules."}, 403)
        if self.before is not None:
            answer = self.before(request)
            if answer is not None:
                return answer
        parts = request.path.strip("/").split("/")
        # /repos/acme/gpu/actions/... or /repositories/4242/actions/... (the Link form)
        if parts[:3] == ["repos", *REPO.split("/")]:
            rest = parts[3:]
        elif parts[:2] == ["repositories", str(REPO_ID)]:
            rest = parts[2:]
        else:
            return _json({"message": "Not Found"}, 404)
        if rest[:2] == ["actions", "runs"] and len(rest) >= 3:
            run = self.runs.get(int(rest[2]))
            if run is None:
                return _json({"message": "Not Found"}, 404)
            if len(rest) == 3:
                return _json({"id": run.id, "head_sha": run.head_sha, "run_attempt": run.attempts})
            if rest[3:] == ["jobs"]:
                mode = request.args.get("filter", "latest")
                jobs = run.jobs if mode == "all" else _latest(run.jobs)
                return self._page(request, run, jobs, f"actions/runs/{run.id}/jobs")
            if len(rest) == 6 and rest[3] == "attempts" and rest[5] == "jobs":
                number = int(rest[4])
                # An attempt's list also holds the jobs "Re-run failed jobs" carried over.
                jobs = _latest([j for j in run.jobs if j.attempt <= number])
                return self._page(request, run, jobs, f"actions/runs/{run.id}/attempts/{number}/jobs")
        if rest[:2] == ["actions", "jobs"] and rest[3:] == ["logs"]:
            job = self._job(int(rest[2]))
            if job is None:
                return _json({"message": "Not Found"}, 404)
            if job.log is None:
                return _json({"message": "Not Found" if job.log_status == 404 else "Gone"}, job.log_status)
            location = self.blobs.url_for(f"/logs/{job.id}.txt") + "?sv=2021&sig=SIGNEDsecretSIGNATURE"
            return Response(status=302, headers={"Location": location})
        return _json({"message": "Not Found"}, 404)

    def _page(self, request: Request, run: Run, jobs: List[Job], path: str) -> Response:
        page = int(request.args.get("page", "1"))
        chunk = jobs[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        headers = {}
        if page * PAGE_SIZE < len(jobs):
            query = "&".join(f"{k}={v}" for k, v in request.args.items() if k != "page")
            base = self.api.url_for(f"/repositories/{REPO_ID}/{path}")
            headers["Link"] = f'<{base}?{query}&page={page + 1}>; rel="next", <{base}?page=99>; rel="last"'
        body = {"total_count": len(jobs), "jobs": [j.to_api(run.head_sha) for j in chunk]}
        return _json(body, 200, headers)

    def _job(self, job_id: int) -> Optional[Job]:
        for run in self.runs.values():
            for job in run.jobs:
                if job.id == job_id:
                    return job
        return None

    # -- the blob server ------------------------------------------------------------------------

    def _blob(self, request: Request) -> Response:
        with self.lock:
            self.blob_requests.append(request)
            if "Authorization" in request.headers:
                self.authorized_blob_requests += 1
                return Response("<Error>token sent to the log host</Error>", status=400)
        job = self._job(int(request.path.rsplit("/", 1)[1].split(".")[0]))
        if job is None or job.log is None:
            return Response("BlobNotFound", status=404)
        with self.lock:
            cuts = self.cut_next.get(job.id, 0)
            if cuts:
                self.cut_next[job.id] = cuts - 1
        if cuts:
            # Announce the whole body, send half: the connection closes short of Content-Length.
            half = job.log[: len(job.log) // 2]
            return Response(
                iter([half]),  # an iterable body, so werkzeug does not recount the length
                status=200,
                headers={"Content-Length": str(len(job.log)), "Connection": "close"},
            )
        return Response(job.log, status=200, content_type="text/plain; charset=utf-8")


class _Any(URIPattern):
    """A URI matcher that accepts every path."""

    def match(self, uri: str) -> bool:
        return True


def _latest(jobs: List[Job]) -> List[Job]:
    """Each job name's latest execution (``filter=latest``)."""
    best: Dict[str, Job] = {}
    for job in jobs:
        if job.name not in best or job.attempt > best[job.name].attempt:
            best[job.name] = job
    return sorted(best.values(), key=lambda j: j.id)


def _json(body: object, status: int = 200, headers: Optional[Dict[str, str]] = None) -> Response:
    return Response(json.dumps(body), status=status, headers=headers or {}, content_type="application/json")
