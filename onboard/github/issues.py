"""The issues of one repository, for `onboard harvest` (the ghstack github.py idea).

Results are plain frozen dataclasses; every failure is one redacted sentence
(``GitHubUnavailable``), since harvest goes on without enrichment.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from onboard.github import answers
from onboard.github.client import CHECK_API_URL, GitHubUnavailable, connect
from onboard.github.rest import utc
from onboard.github.token import DEFAULT_API_URL
from onboard.redact import redact

DEFAULT_REPO = "pytorch/pytorch"
# PyTorch's labels for issues a newcomer can take (see the "good first issue"
# and "actionable" label descriptions on pytorch/pytorch).
NEWCOMER_LABELS = ("good first issue", "actionable")


@dataclass(frozen=True)
class IssueInfo:
    number: int
    title: str
    state: str  # open / closed
    labels: tuple[str, ...]
    url: str  # the html page
    is_pull: bool = False


class GitHub:
    """Issues of one repository on one GitHub API (github.com, GHE, a test server)."""

    def __init__(
        self,
        token: str | None,
        *,
        api_url: str = DEFAULT_API_URL,
        repo: str = DEFAULT_REPO,
        timeout: int = 10,
    ) -> None:
        if not token:
            raise GitHubUnavailable(
                "No GitHub token: set GITHUB_TOKEN or GH_TOKEN (a read-only token is enough).",
            )
        self.api_url = api_url.rstrip("/")
        self.repo_name = repo
        self._token = token
        self._gh = connect(token, self.api_url, timeout)
        self._repo: Any = None

    # -- reads ----------------------------------------------------------

    def _repository(self) -> Any:
        if self._repo is None:
            self._repo = self._call(lambda: self._gh.get_repo(self.repo_name))
        return self._repo

    def issue(self, number: int) -> IssueInfo:
        repo = self._repository()
        return self._call(lambda: _issue_info(repo.get_issue(number)))

    def issues_with_labels(
        self, labels: Iterable[str] = NEWCOMER_LABELS, *, state: str = "open", limit: int = 30
    ) -> list[IssueInfo]:
        """Open issues carrying ANY of ``labels`` (the API ANDs a label list,
        so each label is asked for on its own), pull requests left out."""
        repo = self._repository()
        seen: dict[int, IssueInfo] = {}
        for label in labels:

            def page(label: str = label) -> list[IssueInfo]:
                found = []
                for issue in repo.get_issues(state=state, labels=[label]):
                    info = _issue_info(issue)
                    if info.is_pull:
                        continue
                    found.append(info)
                    if len(found) >= limit:
                        break
                return found

            for info in self._call(page):
                seen.setdefault(info.number, info)
        return sorted(seen.values(), key=lambda i: -i.number)[:limit]

    # -- errors ---------------------------------------------------------

    def _call(self, fn: Any) -> Any:
        return _call(fn, self.api_url, self.repo_name, self._token)


def _call(fn: Any, api_url: str, repo_name: str, token: str) -> Any:
    """Run one PyGithub interaction; every failure becomes one redacted sentence."""
    from github import GithubException

    try:
        return fn()
    except Exception as exc:
        problem = answers.malformed(exc)  # first: PyGithub's own IncompletableObject is one too
        if problem is not None:
            raise GitHubUnavailable(
                redact(answers.not_github(api_url, f"reading {repo_name}", problem), token),
                next_step=CHECK_API_URL,
            ) from None
        if isinstance(exc, GithubException):
            raise GitHubUnavailable(redact(_explain(exc, api_url, repo_name), token)) from None
        # requests' ConnectionError is an OSError; it wraps others in its own types.
        if isinstance(exc, OSError) or type(exc).__module__.startswith(("requests", "urllib3")):
            raise GitHubUnavailable(f"Could not reach {api_url} ({type(exc).__name__}).") from None
        raise


def _explain(exc: Any, api_url: str, repo_name: str) -> str:
    status = getattr(exc, "status", None)
    headers = {k.lower(): v for k, v in (getattr(exc, "headers", None) or {}).items()}
    data = getattr(exc, "data", None)
    message = data.get("message", "") if isinstance(data, dict) else ""
    if isinstance(data, dict):
        details = [
            str(e.get("message") or e.get("code") or "")
            for e in data.get("errors") or []
            if isinstance(e, dict)
        ]
        details = [d for d in details if d]
        if details:
            message = f"{message}: {'; '.join(details)}" if message else "; ".join(details)
    if status == 401:
        return f"GitHub rejected the token (401 {message or 'Bad credentials'})."
    if status in (403, 429) and (
        headers.get("x-ratelimit-remaining") == "0" or "rate limit" in message.lower()
    ):
        reset = headers.get("x-ratelimit-reset")
        when = f"; it resets at {utc(reset)}" if reset else ""
        return f"GitHub's API rate limit is used up{when}."
    if status == 404:
        return f"{repo_name}: not found on {api_url} (404 {message or 'Not Found'})."
    return f"GitHub answered {status}: {message or exc}."


def _issue_info(issue: Any) -> IssueInfo:
    url = answers.text(issue, "html_url")
    return IssueInfo(
        number=answers.number(issue, "number"),
        title=answers.text(issue, "title", empty_ok=True),
        state=answers.text(issue, "state"),
        labels=tuple(answers.text(label, "name") for label in answers.list_of(issue, "labels")),
        url=url,
        # Not `issue.pull_request`: on a listed issue without that key PyGithub
        # fetches the issue again to "complete" it, one request per issue.
        is_pull="/pull/" in url,
    )
