"""The calls `onboard pr --open` makes on the upstream repository: who the token is,
the upstream's default branch, finding, opening and updating a draft pull request.

Every failure becomes ``GitHubUnavailable`` with the next step for it (a token
to make, a limit to wait for, an option to check), never the token itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from onboard.github import answers
from onboard.github.client import CHECK_API_URL, GitHubUnavailable, connect
from onboard.github.rest import utc
from onboard.github.token import Token
from onboard.jsonable import spec
from onboard.redact import redact


@dataclass(frozen=True)
class PullInfo:
    number: int
    title: str
    state: str
    url: str  # the html page
    head: str  # "owner:branch"
    base: str
    draft: bool
    # False: GitHub refused it for this fork. Not in this JSON: `onboard pr`'s own
    # answer carries it (workflows/pr/publish.py).
    maintainer_can_modify: bool = field(default=True, metadata=spec(omit=True))


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
            self._gh = connect(self._token.value, self.api_url, 30)
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


def _pr_error(exc: Exception, *, what: str, api_url: str, token: Token) -> Exception:
    """A PyGithub/requests failure as one paragraph with its next step."""
    from github import GithubException

    problem = answers.malformed(exc)
    if problem is not None:
        return GitHubUnavailable(
            redact(answers.not_github(api_url, what, problem), token.value),
            next_step=CHECK_API_URL.removesuffix("then run the command again.")
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
        when = f" The limit resets at {utc(reset)}." if reset else ""
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
