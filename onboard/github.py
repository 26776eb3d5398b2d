"""GitHub behind a small interface (the ghstack github.py idea).

PyGithub is imported only when a client is made, so `onboard --help` and the
offline paths never load it. Results are plain frozen dataclasses; failures
are ``GitHubUnavailable`` (an ``OnboardError``) with ONE sentence that says
what happened (no token, token rejected, rate limit, no network) and never
the token itself. Tests point ``api_url`` at a loopback server
(tests/fixtures/github_api.py).

Two clients: ``GitHub`` (issues, for `onboard harvest`; errors as one
sentence, since harvest goes on without enrichment) and ``PullRequests``
(what `onboard pr --open` needs; errors with a next step).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from onboard import github_answers as answers
from onboard.errors import OnboardError
from onboard.github_token import (  # noqa: F401 (github's public names, as before)
    DEFAULT_API_URL,
    TOKEN_ENV,
    Token,
    find_token,
    gh_hosts_file,
    web_host,
)
from onboard.redact import redact

DEFAULT_REPO = "pytorch/pytorch"
# PyTorch's labels for issues a newcomer can take (see the "good first issue"
# and "actionable" label descriptions on pytorch/pytorch).
NEWCOMER_LABELS = ("good first issue", "actionable")


class GitHubUnavailable(OnboardError):
    """GitHub could not be asked (no token, rejected, rate limited, offline)."""


@dataclass(frozen=True)
class IssueInfo:
    number: int
    title: str
    state: str  # open / closed
    labels: tuple[str, ...]
    url: str  # the html page
    is_pull: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "title": self.title,
            "state": self.state,
            "labels": list(self.labels),
            "url": self.url,
            "is_pull": self.is_pull,
        }


@dataclass(frozen=True)
class PullInfo:
    number: int
    title: str
    state: str
    url: str  # the html page
    head: str  # "owner:branch"
    base: str
    draft: bool
    maintainer_can_modify: bool = True  # False: GitHub refused it for this fork

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "title": self.title,
            "state": self.state,
            "url": self.url,
            "head": self.head,
            "base": self.base,
            "draft": self.draft,
        }


def _client(token: str, api_url: str, timeout: int) -> Any:
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
        self._gh = _client(token, self.api_url, timeout)
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
                next_step=_CHECK_API_URL,
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
        when = f"; it resets at {_utc(reset)}" if reset else ""
        return f"GitHub's API rate limit is used up{when}."
    if status == 404:
        return f"{repo_name}: not found on {api_url} (404 {message or 'Not Found'})."
    return f"GitHub answered {status}: {message or exc}."


def _utc(epoch: str) -> str:
    import datetime as dt

    try:
        return dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc).strftime("%H:%M UTC")
    except (ValueError, OSError):
        return epoch


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


def _fork_collab_refused(exc: Any) -> bool:
    """GitHub's 422 for ``maintainer_can_modify`` on a fork it cannot grant that for
    (``{"field": "fork_collab", "message": "Fork collab can't be granted by ..."}``)."""
    if getattr(exc, "status", None) != 422:
        return False
    data = exc.data if isinstance(getattr(exc, "data", None), dict) else {}
    said = str(data).lower()
    return "fork_collab" in said or "fork collab" in said or "maintainer_can_modify" in said


def _pull_info(pull: Any) -> PullInfo:
    head = answers.text(answers.obj_field(pull, "head"), "label")
    if ":" not in head:
        raise answers.Malformed(f"a pull request whose head {head!r} is not OWNER:BRANCH")
    return PullInfo(
        number=answers.number(pull, "number"),
        title=answers.text(pull, "title", empty_ok=True),
        state=answers.text(pull, "state"),
        url=answers.text(pull, "html_url"),
        head=head,
        base=answers.text(answers.obj_field(pull, "base"), "ref"),
        draft=bool(answers.field(pull, "draft")),  # absent on old GitHub Enterprise servers
    )


# --- onboard pr: token lookup, pull requests ---
# (this section belongs to `onboard pr`; it reuses GitHubUnavailable,
# PullInfo and _pull_info from above and adds the token from gh's config
# file, and errors that name the next step for each failure)


class PullRequests:
    """The calls `onboard pr --open` makes on the upstream repository.

    Retries and pacing are off: a rate limit or an outage is told at once
    (re-running is safe) instead of sleeping until the limit resets.
    """

    def __init__(self, token: Token, *, api_url: str, upstream_repo: str) -> None:
        self.api_url = api_url.rstrip("/")
        self.upstream_repo = upstream_repo
        self._token = token
        self._gh: Any = None
        self._repo: Any = None

    def _client(self) -> Any:
        if self._gh is None:
            self._gh = _client(self._token.value, self.api_url, 30)
        return self._gh

    def _call(self, what: str, fn: Any) -> Any:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - translated, or re-raised unchanged
            raise _pr_error(exc, what=what, api_url=self.api_url, token=self._token) from None

    def login(self) -> str:
        """GET /user: the token works; the login names the fork's owner."""
        what = "checking the token (GET /user)"
        return str(self._call(what, lambda: answers.login(self._client().get_user())))

    def upstream_default_branch(self) -> str:
        """GET /repos/{owner}/{repo}: the upstream is visible; its default branch."""

        def get() -> str:
            repo = self._client().get_repo(self.upstream_repo)
            branch = answers.matching(
                answers.text(repo, "default_branch"), answers.BRANCH_RE, "default_branch"
            )
            self._repo = repo
            return branch

        return str(self._call(f"reading {self.upstream_repo}", get))

    def _upstream(self) -> Any:
        if self._repo is None:
            self.upstream_default_branch()
        return self._repo

    def find_open(self, head: str) -> PullInfo | None:
        def find() -> PullInfo | None:
            for pull in self._upstream().get_pulls(state="open", head=head):
                return _pull_info(pull)
            return None

        result: PullInfo | None = self._call(f"looking for an open pull request from {head}", find)
        return result

    def create_draft(self, *, base: str, head: str, title: str, body: str) -> PullInfo:
        """A draft pull request that maintainers may edit; GitHub refuses that for a fork
        an organisation owns (422, field ``fork_collab``: PyGithub#1921), and then it is
        asked again without it (``PullInfo.maintainer_can_modify`` False)."""

        def create(can_modify: bool) -> PullInfo:
            pull = self._upstream().create_pull(
                base=base, head=head, title=title, body=body,
                draft=True, maintainer_can_modify=can_modify,
            )  # fmt: skip
            return replace(_pull_info(pull), maintainer_can_modify=can_modify)

        def create_either() -> PullInfo:
            from github import GithubException

            try:
                return create(True)
            except GithubException as exc:
                if not _fork_collab_refused(exc):
                    raise
            return create(False)

        result: PullInfo = self._call(f"opening a draft pull request from {head}", create_either)
        return result

    def update(self, number: int, *, title: str, body: str) -> PullInfo:
        def edit() -> PullInfo:
            pull = self._upstream().get_pull(number)
            pull.edit(title=title, body=body)
            return _pull_info(pull)

        result: PullInfo = self._call(f"updating pull request #{number}", edit)
        return result


_CHECK_API_URL = (
    "Check --api-url (https://api.github.com, or https://HOST/api/v3 for GitHub Enterprise) "
    "and any proxy between you and GitHub (HTTPS_PROXY), then run the command again."
)


def _pr_error(exc: Exception, *, what: str, api_url: str, token: Token) -> Exception:
    """A PyGithub/requests failure as one paragraph with its next step."""
    from github import GithubException

    problem = answers.malformed(exc)
    if problem is not None:
        return GitHubUnavailable(
            redact(answers.not_github(api_url, what, problem), token.value),
            next_step=_CHECK_API_URL.removesuffix("then run the command again.")
            + "then run `onboard pr --open` again (re-running is safe: a branch already pushed "
            "is reused, and an open pull request is updated, not duplicated).",
        )
    if not isinstance(exc, GithubException):
        if isinstance(exc, OSError) or type(exc).__module__.startswith(("requests", "urllib3")):
            refused = "Connection refused" in str(exc)
            reason = "Connection refused" if refused else type(exc).__name__
            return GitHubUnavailable(
                f"Could not reach the GitHub API at {api_url} while {what} ({reason}).",
                next_step="Check the network (or --api-url for GitHub Enterprise) and run the "
                "command again; nothing was opened on GitHub.",
            )
        return exc
    status = exc.status
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    data = exc.data if isinstance(exc.data, dict) else {}
    message = redact(str(data.get("message") or ""), token.value)
    if status == 401:
        return GitHubUnavailable(
            f"GitHub rejected the token from {token.source} (401 {message or 'Bad credentials'}) "
            f"while {what}: it is wrong, expired or revoked. Nothing was pushed.",
            next_step="Make a new one (`gh auth login`, then `export GH_TOKEN=$(gh auth token)`, "
            "or a classic token with the `public_repo` scope) and run the command again.",
        )
    if status in (403, 429) and (
        headers.get("x-ratelimit-remaining") == "0" or "rate limit" in message.lower()
    ):
        reset = headers.get("x-ratelimit-reset")
        when = f" The limit resets at {_utc(reset)}." if reset else ""
        return GitHubUnavailable(
            f"GitHub's API rate limit was hit while {what} ({status} {message}).{when}",
            next_step="Wait for the reset and run the command again; nothing is left half done "
            "(a branch already pushed is reused).",
        )
    if status == 403:
        return GitHubUnavailable(
            f"GitHub refused {what} (403 {message or 'Forbidden'}): the token from "
            f"{token.source} lacks the permission.",
            next_step="Use a classic token with the `public_repo` scope (or a fine-grained one "
            "allowed to open pull requests on the upstream) and run the command again.",
        )
    if status == 404:
        return GitHubUnavailable(
            f"GitHub answered 404 while {what}: the repository does not exist on this server "
            f"or the token from {token.source} cannot see it.",
            next_step="Check --upstream-repo (default pytorch/pytorch) and --api-url, then run "
            "the command again.",
        )
    errors = data.get("errors") if isinstance(data.get("errors"), list) else []
    details = "; ".join(
        redact(str(e.get("message") or e), token.value) if isinstance(e, dict) else str(e)
        for e in errors or []
    )
    return GitHubUnavailable(
        f"GitHub answered {status} while {what}: {message or 'no message'}"
        + (f" ({details})" if details else "")
        + ".",
        next_step="Fix what GitHub names and run the command again (re-running is safe: an "
        "open pull request for the branch is updated, not duplicated).",
    )
