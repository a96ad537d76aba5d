"""``--cache-dir``: run objects, job lists and completed jobs' logs, so nothing is downloaded twice.

Layout, one directory per API host and repository (GHES and github.com never mix)::

    DIR/<host>/<owner>/<repo>/runs/<run_id>.json            the run object
    DIR/<host>/<owner>/<repo>/runs/<run_id>/jobs-<mode>.json  a job list (latest, all, attempt-N)
    DIR/<host>/<owner>/<repo>/logs/<job_id>.log             a completed job's whole log
    DIR/<host>/<owner>/<repo>/logs/<job_id>.gone            GitHub said the log is gone (expired)

Run objects and job lists are refreshed whenever the API answers (a run can be re-run); a log is
stored only once its job completed and its whole body arrived, and is then never fetched again.
Nothing here holds a token: only GitHub's JSON answers and log bodies are written.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Optional
from urllib.parse import urlsplit

from ..errors import InputError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _safe(part: str) -> str:
    return _UNSAFE.sub("_", part).strip(".") or "_"


class Cache:
    """Files under ``root`` for one API host and repository; ``root=None`` keeps nothing."""

    def __init__(self, root: Optional[str], api_url: str, owner_repo: str) -> None:
        self.enabled = root is not None
        parts = urlsplit(api_url)
        owner, _, repo = owner_repo.partition("/")
        host = _safe(parts.netloc + parts.path.replace("/", "_"))
        self.base = os.path.join(root or "", host, _safe(owner), _safe(repo))

    def run_path(self, run_id: int) -> str:
        return os.path.join(self.base, "runs", f"{run_id}.json")

    def jobs_path(self, run_id: int, mode: str) -> str:
        return os.path.join(self.base, "runs", str(run_id), f"jobs-{_safe(mode)}.json")

    def log_path(self, job_id: int) -> str:
        return os.path.join(self.base, "logs", f"{job_id}.log")

    def read_json(self, path: str) -> Optional[Any]:
        if not self.enabled or not os.path.isfile(path):
            return None
        try:
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return None  # a damaged entry is as good as none: the API is asked again

    def write_json(self, path: str, data: Any) -> None:
        if not self.enabled:
            return
        self._makedirs(path)
        part = path + ".part"
        try:
            with open(part, "w", encoding="utf-8") as handle:
                json.dump(data, handle)
            os.replace(part, path)
        except OSError as err:
            raise InputError(f"--cache-dir: cannot write {path}: {err.strerror or err}") from None

    def gone_path(self, job_id: int) -> str:
        return os.path.join(self.base, "logs", f"{job_id}.gone")

    def is_gone(self, job_id: int) -> bool:
        return self.enabled and os.path.isfile(self.gone_path(job_id))

    def mark_gone(self, job_id: int) -> None:
        """Remember that GitHub expired this log: it never comes back, so offline says the same."""
        if self.enabled:
            self.write_json(self.gone_path(job_id), {"job_id": job_id, "log": "gone"})

    def has_log(self, job_id: int) -> bool:
        return self.enabled and os.path.isfile(self.log_path(job_id))

    def prepare_log(self, job_id: int) -> str:
        path = self.log_path(job_id)
        self._makedirs(path)
        return path

    @staticmethod
    def _makedirs(path: str) -> None:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError as err:
            raise InputError(
                f"--cache-dir: cannot create {os.path.dirname(path)}: {err.strerror or err}"
            ) from None
