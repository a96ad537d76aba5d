"""A small GitHub REST client: JSON pages, `Link` pagination, rate limits, and job logs streamed to disk.

What GitHub does that this relies on (docs.github.com/en/rest: "Using pagination in the REST API",
"Rate limits for the REST API", and rest/actions/workflow-jobs "Download job logs for a workflow
run"; the job objects' ``run_id``, ``run_attempt``, ``head_sha`` and ``runner_name`` are from there too):

- list endpoints answer one page and a ``Link`` header whose ``rel="next"`` URL is followed exactly as
  given (GitHub writes ``/repositories/{id}/...`` there, and may send fewer items than ``per_page``);
- a 403 or 429 with ``retry-after`` (seconds) or with ``x-ratelimit-remaining: 0`` and
  ``x-ratelimit-reset`` (UTC epoch seconds) is a rate limit; any other 403 is a refusal;
- ``/actions/jobs/{id}/logs`` answers 302 to a short-lived URL on another host (blob storage). That
  host gets no ``Authorization`` header: the redirect is followed by hand with a fresh request.

The token lives only in the request headers; every message this module raises passes through
``_scrub`` so neither the token nor a signed log URL can reach stderr, a report or the cache.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple
from urllib.parse import urljoin, urlsplit

import requests

from ..errors import AnalyzerError

DEFAULT_API_URL = "https://api.github.com"
USER_AGENT = "gpu-hang-guard (+https://github.com/org/gpu-hang-guard)"
API_VERSION = "2022-11-28"
PER_PAGE = 100
MAX_PAGES = 10_000  # a Link chain that never ends is a server bug, not a reason to loop forever
CHUNK_BYTES = 1024 * 1024
REDIRECTS = (301, 302, 303, 307, 308)
RETRIED_STATUSES = (500, 502, 503, 504)


class GitHubError(AnalyzerError):
    """The API refused or failed in a way the user must act on; one line, exit 2."""


class Unreachable(GitHubError):
    """The API could not be reached after bounded retries; ``gh`` then answers from its cache."""


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying: rate-limit waits are capped per wait and in number."""

    rate_limit_retries: int = 5
    max_wait_s: float = 60.0
    network_retries: int = 3
    backoff_s: float = 0.5  # doubled after each failed try
    download_tries: int = 3  # a log that ends short is asked for again (its URL expires in a minute)
    timeout_s: float = 60.0  # connect and read, per request


def token_from_env(environ: Dict[str, str]) -> str:
    """``GH_TOKEN``, else ``GITHUB_TOKEN`` (the gh CLI's order); ``GitHubError`` when neither is set."""
    for name in ("GH_TOKEN", "GITHUB_TOKEN"):
        value = environ.get(name, "").strip()
        if value:
            return value
    raise GitHubError(
        "no token: set GH_TOKEN or GITHUB_TOKEN (a token that can read the repository's Actions)"
    )


def api_url_from_env(environ: Dict[str, str], given: Optional[str]) -> str:
    """``--api-url``, else ``$GITHUB_API_URL`` (set on runners, GHES too), else api.github.com."""
    url = given or environ.get("GITHUB_API_URL") or DEFAULT_API_URL
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise GitHubError(f"--api-url {url!r}: not an http(s) URL such as {DEFAULT_API_URL}")
    return url.rstrip("/")


def _without_query(url: str) -> str:
    # A blob-storage URL carries its signature in the query: name the place, never the credential.
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


class Client:
    """GitHub REST calls for one token; safe to share between threads (one session per thread).

    ``sleep`` and ``clock`` (epoch seconds) are injectable so tests can check rate-limit waits fast.
    ``on_bytes`` is called with each chunk size a log download writes (progress).
    """

    def __init__(
        self,
        api_url: str,
        token: str,
        policy: RetryPolicy = RetryPolicy(),
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        on_bytes: Optional[Callable[[int], None]] = None,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self._token = token
        self.policy = policy
        self._sleep = sleep
        self._clock = clock
        self._on_bytes = on_bytes
        self._local = threading.local()

    # -- plumbing -------------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            session.headers.update(
                {
                    "Authorization": f"Bearer {self._token}",
                    "Accept": "application/vnd.github+json",
                    "X-GitHub-Api-Version": API_VERSION,
                    "User-Agent": USER_AGENT,
                }
            )
            self._local.session = session
        return session

    def url(self, path: str) -> str:
        return path if "://" in path else f"{self.api_url}/{path.lstrip('/')}"

    def _describe(self, url: str) -> str:
        path = urlsplit(url).path
        base = urlsplit(self.api_url).path.rstrip("/")
        return path[len(base) :] if base and path.startswith(base) else path

    def _rate_limit_wait(self, resp: requests.Response) -> Optional[float]:
        """Seconds to wait before retrying a rate-limited answer; None when it is no rate limit."""
        if resp.status_code not in (403, 429):
            return None
        retry_after = resp.headers.get("retry-after")
        if retry_after is not None:
            try:
                return max(0.0, float(retry_after))
            except ValueError:
                return None
        if resp.headers.get("x-ratelimit-remaining") == "0":
            try:
                return max(0.0, float(resp.headers.get("x-ratelimit-reset", "")) - self._clock())
            except ValueError:
                return None
        return None

    def request(self, url: str, allow_redirects: bool = True, stream: bool = False) -> requests.Response:
        """GET ``url`` (absolute, or a path under the API) with the token, retrying rate limits and
        network errors within the policy. Returns the response whatever its status (after retries);
        raises ``Unreachable`` when the network never answered, ``GitHubError`` for a wait too long.
        """
        url = self.url(url)
        rate_limited = 0
        network_failures = 0
        while True:
            try:
                resp = self._session().get(
                    url, allow_redirects=allow_redirects, stream=stream, timeout=self.policy.timeout_s
                )
            except requests.RequestException as err:
                network_failures += 1
                if network_failures > self.policy.network_retries:
                    raise Unreachable(
                        self._scrub(f"cannot reach {self._describe_host(url)}: {_reason(err)}")
                    ) from None
                self._sleep(self.policy.backoff_s * 2 ** (network_failures - 1))
                continue
            wait = self._rate_limit_wait(resp)
            if wait is not None:
                resp.close()
                rate_limited += 1
                where = self._describe(url)
                if wait > self.policy.max_wait_s:
                    raise GitHubError(
                        f"GET {where}: rate limited by GitHub for {wait:.0f}s more "
                        f"(over the {self.policy.max_wait_s:.0f}s this waits); try again later"
                    )
                if rate_limited > self.policy.rate_limit_retries:
                    raise GitHubError(
                        f"GET {where}: still rate limited after {self.policy.rate_limit_retries} retries"
                    )
                self._sleep(wait)
                continue
            if resp.status_code in RETRIED_STATUSES and network_failures < self.policy.network_retries:
                resp.close()
                network_failures += 1
                self._sleep(self.policy.backoff_s * 2 ** (network_failures - 1))
                continue
            return resp

    def _describe_host(self, url: str) -> str:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}"

    def _fail(self, resp: requests.Response, what: str) -> GitHubError:
        message = ""
        try:
            body = resp.json()
            if isinstance(body, dict) and isinstance(body.get("message"), str):
                message = body["message"]
        except ValueError:
            pass
        status = f"{resp.status_code} {resp.reason or ''}".strip()
        if resp.status_code == 401:
            hint = "the token was refused (GH_TOKEN / GITHUB_TOKEN)"
        elif resp.status_code == 404:
            hint = "not found, or not visible to this token"
        elif resp.status_code == 403:
            hint = "forbidden for this token"
        else:
            hint = " ".join(message.split())[:200] or "unexpected answer"
        return GitHubError(self._scrub(f"{what}: {status}: {hint}"))

    # -- JSON -------------------------------------------------------------------------------------

    def get_json(self, path: str, what: str) -> Any:
        """The JSON body of ``path``; ``what`` names the object in errors ("run 42 of o/r")."""
        resp = self.request(path)
        if resp.status_code != 200:
            raise self._fail(resp, what)
        try:
            return resp.json()
        except ValueError:
            raise GitHubError(f"{what}: the answer is not JSON") from None

    def get_pages(self, path: str, key: str, what: str) -> List[Dict[str, Any]]:
        """Every item under ``key`` across the pages of a list endpoint, following ``Link: rel="next"``."""
        items: List[Dict[str, Any]] = []
        url: Optional[str] = self.url(path)
        seen = set()
        while url is not None:
            if url in seen or len(seen) >= MAX_PAGES:
                raise GitHubError(f"{what}: the pages link back to one already read ({self._describe(url)})")
            seen.add(url)
            resp = self.request(url)
            if resp.status_code != 200:
                raise self._fail(resp, what)
            try:
                page = resp.json()[key]
            except (ValueError, KeyError, TypeError):
                raise GitHubError(f"{what}: the answer holds no {key!r} list") from None
            items.extend(page)
            following = resp.links.get("next", {}).get("url")
            url = urljoin(url, following) if following else None
        return items

    # -- logs -------------------------------------------------------------------------------------

    def download_log(self, owner_repo: str, job_id: int, dest: str) -> bool:
        """Stream the log of job ``job_id`` to ``dest``; False when GitHub says it is gone (404, 410).

        ``dest`` appears only once the whole body arrived (written to ``dest + ".part"`` first): a
        body that ends short of its ``Content-Length`` or breaks off is asked for again from the logs
        endpoint, at most ``download_tries`` times, then raises ``GitHubError``; a truncated log is
        never left where a scan would read it.
        """
        what = f"log of job {job_id}"
        endpoint = f"repos/{owner_repo}/actions/jobs/{job_id}/logs"
        problem = ""
        for _ in range(self.policy.download_tries):
            resp = self.request(endpoint, allow_redirects=False, stream=True)
            if resp.status_code in (404, 410):
                resp.close()
                return False
            if resp.status_code in REDIRECTS and resp.headers.get("Location"):
                location = urljoin(self.url(endpoint), resp.headers["Location"])
                resp.close()
                try:
                    # A fresh request, not the session: the log host must never see the token.
                    body = requests.get(
                        location,
                        headers={"User-Agent": USER_AGENT, "Accept-Encoding": "identity"},
                        stream=True,
                        timeout=self.policy.timeout_s,
                    )
                except requests.RequestException as err:
                    problem = f"{_without_query(location)}: {_reason(err)}"
                    continue
                if body.status_code != 200:
                    # 403/404 there: the signed URL expired before we read it; ask for a new one.
                    problem = f"{_without_query(location)}: {body.status_code} {body.reason or ''}".strip()
                    body.close()
                    continue
            elif resp.status_code == 200:
                body = resp  # some servers (GHES, proxies) answer the log directly
            else:
                raise self._fail(resp, what)
            ok, problem = self._save(body, dest)
            if ok:
                return True
        raise GitHubError(
            self._scrub(f"{what}: download failed {self.policy.download_tries} times ({problem})")
        )

    def _save(self, resp: requests.Response, dest: str) -> Tuple[bool, str]:
        part = dest + ".part"
        expected = resp.headers.get("Content-Length")
        written = 0
        try:
            with open(part, "wb") as handle:
                for chunk in _chunks(resp):
                    handle.write(chunk)
                    written += len(chunk)
                    if self._on_bytes is not None:
                        self._on_bytes(len(chunk))
        except requests.RequestException as err:
            _remove(part)
            return False, f"connection dropped after {written:,} bytes ({_reason(err)})"
        except OSError as err:
            _remove(part)
            raise GitHubError(f"{dest}: cannot write: {err.strerror or err}") from None
        finally:
            resp.close()
        if expected is not None and expected.isdigit() and written != int(expected):
            _remove(part)
            return False, f"body ended after {written:,} of {int(expected):,} bytes"
        os.replace(part, dest)
        return True, ""


def _chunks(resp: requests.Response) -> Iterator[bytes]:
    for chunk in resp.iter_content(CHUNK_BYTES):
        if chunk:
            yield chunk


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


_ERRNO = re.compile(r"\[Errno -?\d+\][^'\")]*")


def _reason(err: BaseException) -> str:
    """A short reason for a requests error, without the URL and query it may quote."""
    name = type(err).__name__
    text = str(err)
    errno = _ERRNO.search(text)
    if errno:
        return errno.group().strip()
    if "(" in text and "Caused by" in text:
        text = text.split("Caused by", 1)[1].strip(" ()")
    text = " ".join(text.split())
    if "?" in text:
        text = text.split("?", 1)[0] + "?..."
    return f"{name}: {text[:200]}" if text else name
