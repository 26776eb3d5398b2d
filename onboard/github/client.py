"""PyGithub's client, made the one way onboard makes it, and what its failures become.

PyGithub is imported only when a client is made, so `onboard --help` and the
offline paths never load it. Failures are ``GitHubUnavailable`` (an
``OnboardError``) with ONE sentence that says what happened (no token, token
rejected, rate limit, no network) and never the token itself. Tests point
``api_url`` at a loopback server (tests/fixtures/github_api.py).
"""

from __future__ import annotations

from typing import Any

from onboard.errors import OnboardError


class GitHubUnavailable(OnboardError):
    """GitHub could not be asked (no token, rejected, rate limited, offline)."""


def connect(token: str, api_url: str, timeout: int) -> Any:
    try:
        from github import Auth, Github
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise GitHubUnavailable("PyGithub is not installed (`pip install PyGithub`).") from exc
    from urllib.parse import urlsplit

    parts = urlsplit(api_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise GitHubUnavailable(
            f"The GitHub API URL {api_url!r} is not an http(s) URL with a host.",
            next_step="Pass --api-url https://api.github.com, or https://HOST/api/v3 for "
            "GitHub Enterprise.",
        )
    # No retry loop and no pacing: a rate limit or a dead network must come
    # back as one line now, not after minutes of backoff.
    return Github(
        auth=Auth.Token(token),
        base_url=api_url.rstrip("/"),
        timeout=timeout,
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
        per_page=50,
        lazy=True,  # get_repo() makes no request; get_issue() still does
    )


CHECK_API_URL = (
    "Check --api-url (https://api.github.com, or https://HOST/api/v3 for GitHub Enterprise) "
    "and any proxy between you and GitHub (HTTPS_PROXY), then run the command again."
)
