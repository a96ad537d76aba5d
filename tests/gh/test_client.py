"""The REST client against real loopback servers: pages, rate limits, errors, the log redirect."""

from __future__ import annotations

import os
import socket
from typing import List

import pytest
from werkzeug.wrappers import Response

from analyzer.gh.client import Client, GitHubError, RetryPolicy, Unreachable, api_url_from_env, token_from_env

from .fakegh import REPO, TOKEN, FakeGitHub, Job, Run, _json, fixture_log


class Sleeps:
    """An injected sleep that records the waits instead of sleeping."""

    def __init__(self) -> None:
        self.waits: List[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def client(github: FakeGitHub, sleeps: Sleeps, now: float = 1_700_000_000.0) -> Client:
    return Client(github.api_url, TOKEN, sleep=sleeps, clock=lambda: now)


def seven_jobs(github: FakeGitHub) -> Run:
    log = fixture_log("atexit/py312.log")
    return github.add(Run(7, "abc123", jobs=[Job(i, f"gpu ({i})", 7, log=log) for i in range(1, 8)]))


def test_pages_follow_link_next_as_given(github):
    seven_jobs(github)
    jobs = client(github, Sleeps()).get_pages(
        f"repos/{REPO}/actions/runs/7/jobs?per_page=100", "jobs", "jobs"
    )
    assert [j["id"] for j in jobs] == [1, 2, 3, 4, 5, 6, 7]
    # Four pages of two: the first by /repos/, the rest exactly where Link pointed (/repositories/).
    assert (
        github.paths()
        == ["/repos/acme/gpu/actions/runs/7/jobs"] + ["/repositories/4242/actions/runs/7/jobs"] * 3
    )
    assert [r.args.get("page") for r in github.requests] == [None, "2", "3", "4"]
    assert all(r.args.get("per_page") == "100" for r in github.requests)


def test_every_api_request_carries_bearer_token_and_user_agent(github):
    seven_jobs(github)
    client(github, Sleeps()).get_json(f"repos/{REPO}/actions/runs/7", "run 7")
    request = github.requests[0]
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert request.headers["User-Agent"].startswith("gpu-hang-guard")


def test_retry_after_is_waited_then_retried(github):
    seven_jobs(github)
    answers = [_json({"message": "secondary rate limit"}, 429, {"retry-after": "3"})] * 2

    github.before = lambda request: answers.pop() if answers else None
    sleeps = Sleeps()
    run = client(github, sleeps).get_json(f"repos/{REPO}/actions/runs/7", "run 7")
    assert run["head_sha"] == "abc123"
    assert sleeps.waits == [3.0, 3.0]
    assert len(github.requests) == 3


def test_ratelimit_remaining_zero_waits_until_reset(github):
    seven_jobs(github)
    now = 1_700_000_000.0
    answers = [
        _json(
            {"message": "API rate limit exceeded"},
            403,
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(now) + 42)},
        )
    ]
    github.before = lambda request: answers.pop() if answers else None
    sleeps = Sleeps()
    client(github, sleeps, now).get_json(f"repos/{REPO}/actions/runs/7", "run 7")
    assert sleeps.waits == [42.0]


def test_a_wait_over_a_minute_is_one_line_error(github):
    seven_jobs(github)
    now = 1_700_000_000.0
    github.before = lambda request: _json(
        {"message": "API rate limit exceeded"},
        403,
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(now) + 3600)},
    )
    sleeps = Sleeps()
    with pytest.raises(GitHubError, match=r"rate limited by GitHub for 3600s more"):
        client(github, sleeps, now).get_json(f"repos/{REPO}/actions/runs/7", "run 7")
    assert sleeps.waits == []


def test_at_most_five_rate_limit_retries(github):
    seven_jobs(github)
    github.before = lambda request: _json({"message": "slow down"}, 429, {"retry-after": "1"})
    sleeps = Sleeps()
    with pytest.raises(GitHubError, match="still rate limited after 5 retries"):
        client(github, sleeps).get_json(f"repos/{REPO}/actions/runs/7", "run 7")
    assert sleeps.waits == [1.0] * 5
    assert len(github.requests) == 6


def test_other_403_is_a_refusal_not_a_rate_limit(github):
    seven_jobs(github)
    github.before = lambda request: _json({"message": "Resource not accessible by integration"}, 403)
    sleeps = Sleeps()
    with pytest.raises(GitHubError, match="run 7: 403 FORBIDDEN: forbidden for this token"):
        client(github, sleeps).get_json(f"repos/{REPO}/actions/runs/7", "run 7")
    assert sleeps.waits == [] and len(github.requests) == 1


def test_401_and_404(github):
    seven_jobs(github)
    bad = Client(github.api_url, "ghs_wrong", sleep=Sleeps())
    with pytest.raises(GitHubError, match="401 UNAUTHORIZED: the token was refused"):
        bad.get_json(f"repos/{REPO}/actions/runs/7", "run 7 of acme/gpu")
    with pytest.raises(
        GitHubError, match="run 8 of acme/gpu: 404 NOT FOUND: not found, or not visible to this token"
    ):
        client(github, Sleeps()).get_json(f"repos/{REPO}/actions/runs/8", "run 8 of acme/gpu")


def test_log_redirect_is_fetched_without_the_token(github, tmp_path):
    run = seven_jobs(github)
    dest = tmp_path / "1.log"
    assert client(github, Sleeps()).download_log(REPO, 1, str(dest)) is True
    assert dest.read_bytes() == run.jobs[0].log
    assert dest.read_bytes().startswith(b"\xef\xbb\xbf2024-01-01T00:00:00.0000000Z ")
    assert len(github.blob_requests) == 1
    assert "Authorization" not in github.blob_requests[0].headers
    assert github.authorized_blob_requests == 0


@pytest.mark.parametrize("status", [404, 410])
def test_gone_logs_are_false_not_errors(github, tmp_path, status):
    github.add(Run(9, "def", jobs=[Job(90, "gpu", 9, log=None, log_status=status)]))
    dest = tmp_path / "90.log"
    assert client(github, Sleeps()).download_log(REPO, 90, str(dest)) is False
    assert not dest.exists()


def test_a_body_cut_short_is_asked_for_again(github, tmp_path):
    run = seven_jobs(github)
    github.cut_next[3] = 2
    dest = tmp_path / "3.log"
    assert client(github, Sleeps()).download_log(REPO, 3, str(dest)) is True
    assert dest.read_bytes() == run.jobs[2].log
    # Each try goes back to the logs endpoint for a fresh URL: three asks, three blob reads.
    assert github.paths().count("/repos/acme/gpu/actions/jobs/3/logs") == 3
    assert len(github.blob_requests) == 3


def test_a_body_always_cut_short_fails_and_leaves_no_file(github, tmp_path):
    seven_jobs(github)
    github.cut_next[4] = 99
    dest = tmp_path / "4.log"
    with pytest.raises(GitHubError, match="log of job 4: download failed 3 times"):
        client(github, Sleeps()).download_log(REPO, 4, str(dest))
    assert os.listdir(tmp_path) == []


def test_unreachable_api_after_bounded_retries():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    sleeps = Sleeps()
    dead = Client(f"http://127.0.0.1:{port}", TOKEN, policy=RetryPolicy(network_retries=3), sleep=sleeps)
    with pytest.raises(Unreachable, match=f"cannot reach http://127.0.0.1:{port}"):
        dead.get_json(f"repos/{REPO}/actions/runs/7", "run 7")
    assert sleeps.waits == [0.5, 1.0, 2.0]


def test_server_errors_are_retried_then_reported(github):
    seven_jobs(github)
    github.before = lambda request: Response("oops", status=502)
    sleeps = Sleeps()
    with pytest.raises(GitHubError, match="run 7: 502 BAD GATEWAY"):
        client(github, sleeps).get_json(f"repos/{REPO}/actions/runs/7", "run 7")
    assert len(sleeps.waits) == 3


def test_token_and_api_url_from_environment():
    assert token_from_env({"GH_TOKEN": "a", "GITHUB_TOKEN": "b"}) == "a"
    assert token_from_env({"GITHUB_TOKEN": "b"}) == "b"
    with pytest.raises(GitHubError, match="no token: set GH_TOKEN or GITHUB_TOKEN"):
        token_from_env({"GH_TOKEN": " "})
    assert api_url_from_env({}, None) == "https://api.github.com"
    assert (
        api_url_from_env({"GITHUB_API_URL": "https://ghe.example/api/v3/"}, None)
        == "https://ghe.example/api/v3"
    )
    assert (
        api_url_from_env({"GITHUB_API_URL": "https://ghe.example/api/v3"}, "http://127.0.0.1:9")
        == "http://127.0.0.1:9"
    )
    with pytest.raises(GitHubError, match="--api-url 'ftp://x': not an http"):
        api_url_from_env({}, "ftp://x")


def test_error_text_never_holds_the_token(github):
    seven_jobs(github)
    # A server that echoes the Authorization header back in its error message.
    github.before = lambda request: _json({"message": f"bad: {request.headers.get('Authorization')}"}, 500)
    with pytest.raises(GitHubError) as caught:
        client(github, Sleeps()).get_json(f"repos/{REPO}/actions/runs/7", "run 7")
    assert TOKEN not in str(caught.value) and "***" in str(caught.value)
