"""Which jobs of a run, their logs fetched by a bounded pool, each scanned as a stream from disk.

Downloads run in up to ``workers`` threads, each streaming one log to a file; scans run one at a time
in the calling thread as logs arrive, so peak memory is that of one scan whatever the number of jobs.
With a cache (``--cache-dir``) run objects and job lists are refreshed when the API answers and read
back when it cannot be reached; completed jobs' logs are kept and never fetched again.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..model import Finding, JobFacts
from .cache import Cache
from .client import PER_PAGE, Client, GitHubError, Unreachable
from .combine import LOG_GONE, ScannedJob

DEFAULT_WORKERS = 8
ScanFn = Callable[[str], List[Finding]]
Notify = Callable[[str], None]


@dataclass(frozen=True)
class Selection:
    """Which executions of a run's jobs: the latest (default), one attempt, or all; and a name glob."""

    attempt: Optional[int] = None
    all_attempts: bool = False
    job_glob: Optional[str] = None

    def mode(self) -> str:
        if self.attempt is not None:
            return f"attempt-{self.attempt}"
        return "all" if self.all_attempts else "latest"

    def matches(self, name: str) -> bool:
        # fnmatchcase: case-sensitive on every OS; matrix names hold "[", so the glob is the user's.
        return self.job_glob is None or fnmatch.fnmatchcase(name, self.job_glob)


@dataclass
class Totals:
    """What the fetch cost, reported apart from what the scan cost."""

    jobs: int = 0
    from_cache: int = 0
    gone: int = 0
    fetched_bytes: int = 0
    scanned_bytes: int = 0
    fetch_s: float = 0.0
    scan_s: float = 0.0

    def describe(self) -> str:
        mb = 1024 * 1024
        return (
            f"{self.jobs} job logs ({self.from_cache} from the cache, {self.gone} gone); "
            f"fetched {self.fetched_bytes / mb:.1f} MiB in {self.fetch_s:.2f}s; "
            f"scanned {self.scanned_bytes / mb:.1f} MiB in {self.scan_s:.2f}s"
        )


class Fetcher:
    """Runs, job lists and logs of one repository, through ``client`` and ``cache``."""

    def __init__(
        self,
        client: Client,
        cache: Cache,
        owner_repo: str,
        workers: int = DEFAULT_WORKERS,
        warn: Notify = lambda line: None,
        progress: Optional[Notify] = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.owner_repo = owner_repo
        self.workers = max(1, workers)
        self.warn = warn
        self.progress = progress
        self.totals = Totals()
        self._lock = threading.Lock()
        self._offline: Optional[Unreachable] = None

    # -- run objects and job lists --------------------------------------------------------------

    def _api_or_cache(self, call: Callable[[], Any], path: str, what: str) -> Any:
        try:
            if self._offline is not None:
                raise self._offline  # once unreachable, the rest comes from the cache without waiting
            data = call()
        except Unreachable as err:
            self._offline = err
            cached = self.cache.read_json(path)
            if cached is None:
                missing = (
                    f"and --cache-dir holds no {what}"
                    if self.cache.enabled
                    else "(no --cache-dir to fall back on)"
                )
                raise GitHubError(f"{err}; {missing}") from None
            return cached
        self.cache.write_json(path, data)
        return data

    def run(self, run_id: int) -> Dict[str, Any]:
        what = f"run {run_id} of {self.owner_repo}"
        run = self._api_or_cache(
            lambda: self.client.get_json(f"repos/{self.owner_repo}/actions/runs/{run_id}", what),
            self.cache.run_path(run_id),
            what,
        )
        if not isinstance(run, dict) or not isinstance(run.get("id"), int):
            raise GitHubError(f"{what}: the answer is not a workflow run object")
        return run

    def job_list(self, run: Dict[str, Any], selection: Selection) -> List[Dict[str, Any]]:
        run_id = int(run["id"])
        base = f"repos/{self.owner_repo}/actions/runs/{run_id}"
        if selection.attempt is not None:
            attempts = int(run.get("run_attempt") or 1)
            if not 1 <= selection.attempt <= attempts:
                raise GitHubError(f"--attempt {selection.attempt}: run {run_id} has attempts 1 to {attempts}")
            path = f"{base}/attempts/{selection.attempt}/jobs?per_page={PER_PAGE}"
        else:
            path = f"{base}/jobs?filter={'all' if selection.all_attempts else 'latest'}&per_page={PER_PAGE}"
        mode = selection.mode()
        what = f"the {mode} job list of run {run_id}"
        jobs = self._api_or_cache(
            lambda: self.client.get_pages(path, "jobs", what), self.cache.jobs_path(run_id, mode), what
        )
        if not all(isinstance(job, dict) and isinstance(job.get("id"), int) for job in jobs):
            raise GitHubError(f"{what}: an item of the list is not a job object")
        seen = set()
        picked = []
        for job in jobs:
            # Per-attempt lists also hold the jobs a "Re-run failed jobs" carried over: one each.
            if job["id"] in seen or not selection.matches(job.get("name", "")):
                continue
            seen.add(job["id"])
            picked.append(job)
        picked.sort(key=lambda j: (j.get("name", ""), j.get("run_attempt") or 0, j["id"]))
        return picked

    # -- logs -------------------------------------------------------------------------------------

    def _fetch(self, job: Dict[str, Any], scratch: str) -> Tuple[Optional[str], bool]:
        """The path of the job's whole log (None when gone) and whether it came from the cache."""
        job_id = int(job["id"])
        if self.cache.has_log(job_id):
            return self.cache.log_path(job_id), True
        if self.cache.is_gone(job_id):
            return None, True
        completed = job.get("status") == "completed"
        dest = (
            self.cache.prepare_log(job_id)
            if self.cache.enabled and completed
            else os.path.join(scratch, f"{job_id}.log")
        )
        try:
            if self._offline is not None:
                raise self._offline
            ok = self.client.download_log(self.owner_repo, job_id, dest)
        except Unreachable as err:
            raise GitHubError(f"{err}; and the log of job {job_id} is not in the cache") from None
        if ok:
            with self._lock:
                self.totals.fetched_bytes += os.path.getsize(dest)
        elif completed:
            self.cache.mark_gone(job_id)
        return (dest if ok else None), False

    def scan_jobs(
        self, run: Dict[str, Any], jobs: Sequence[Dict[str, Any]], scan: ScanFn
    ) -> List[ScannedJob]:
        """Each job of ``run`` with the findings of its log (``log="gone"`` when GitHub expired it)."""
        out: List[Optional[ScannedJob]] = [None] * len(jobs)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="gpu-hang-guard-gh-") as scratch:
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                futures: Dict[Future, int] = {
                    pool.submit(self._fetch, job, scratch): i for i, job in enumerate(jobs)
                }
                try:
                    for done, future in enumerate(as_completed(futures), 1):
                        index = futures[future]
                        path, cached = future.result()
                        self.totals.fetch_s = time.monotonic() - started
                        out[index] = self._scan_one(run, jobs[index], path, cached, scan)
                        self._show(done, len(jobs))
                except BaseException:
                    for future in futures:
                        future.cancel()
                    raise
        return [job for job in out if job is not None]

    def _scan_one(
        self, run: Dict[str, Any], job: Dict[str, Any], path: Optional[str], cached: bool, scan: ScanFn
    ) -> ScannedJob:
        facts = facts_of(run, job)
        self.totals.jobs += 1
        if path is None:
            self.totals.gone += 1
            status = job.get("status") or "unknown"
            why = "expired on GitHub" if status == "completed" else f"the job is {status}, no log yet"
            self.warn(f"warning: the log of job {facts.job_id} ({facts.name}) is gone ({why}); not scanned")
            return ScannedJob(facts=facts, conclusion=job.get("conclusion"), log=LOG_GONE)
        if cached:
            self.totals.from_cache += 1
        size = os.path.getsize(path)
        began = time.monotonic()
        findings = scan(path)
        self.totals.scan_s += time.monotonic() - began
        self.totals.scanned_bytes += size
        # A scratch file is deleted after the run: name the job, not a path nobody can open.
        label = path if self.cache.enabled and path.startswith(self.cache.base) else f"job-{facts.job_id}.log"
        return ScannedJob(
            facts=facts,
            conclusion=job.get("conclusion"),
            findings=tuple(dataclasses.replace(f, path=label) if f.path == path else f for f in findings),
        )

    def _show(self, done: int, total: int) -> None:
        if self.progress is not None:
            mib = self.totals.fetched_bytes / (1024 * 1024)
            self.progress(f"{done}/{total} jobs fetched and scanned, {mib:.1f} MiB downloaded")


def facts_of(run: Dict[str, Any], job: Dict[str, Any]) -> JobFacts:
    """A job's facts from its REST object, the run filling what the job leaves out."""
    return JobFacts(
        run_id=int(job.get("run_id") or run["id"]),
        attempt=int(job.get("run_attempt") or run.get("run_attempt") or 1),
        job_id=int(job["id"]),
        name=str(job.get("name", "")),
        runner=job.get("runner_name") or None,
        head_sha=job.get("head_sha") or run.get("head_sha"),
    )
