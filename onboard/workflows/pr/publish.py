"""`onboard pr --open`: push the branch to the contributor's fork, then open
(or update) a draft PR on the upstream repository.

Order matters so that nothing is left half done: every check that can fail
without side effects (fork remote, token, GET /user, GET /repos/upstream,
looking for an open PR) runs before the push; the PR is created only after the
branch is on the fork; re-running pushes nothing new and updates the same PR.

The token never reaches git's config, a URL, an argument list or a log: for
an https fork on the API's host it is handed to git through a credential
helper given in the environment (GIT_CONFIG_COUNT/KEY/VALUE), which reads it
from an environment variable; ssh and local remotes get no token at all.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from onboard import git
from onboard.errors import OnboardError, ProcTimeout
from onboard.github.pulls import PullRequests
from onboard.github.token import Token, web_host
from onboard.redact import redact
from onboard.report import Reporter
from onboard.workflows.pr.change import Change, is_upstream, owner_repo

TOKEN_ENV_FOR_GIT = "ONBOARD_GIT_PUSH_TOKEN"
# Answers `get` with the token from the environment; ignores store/erase, so
# nothing is ever saved by a credential store.
CREDENTIAL_HELPER = (
    '!f() { test "$1" = get || exit 0; echo username=x-access-token; '
    f'printf "password=%s\\n" "${TOKEN_ENV_FOR_GIT}"; }}; f'
)

REMINDERS = (
    "Sign the CLA: the EasyCLA check on the PR links to the form (once per GitHub account).",
    "First-time contributors: a maintainer must approve before CI runs on your PR; say so "
    "in a comment if nobody has after a day or two.",
    "Mark the PR ready for review when CI is green; after approval, merge with a comment "
    "`@pytorchmergebot merge`.",
)


@dataclass(frozen=True)
class Published:
    remote: str
    remote_url: str  # redacted
    head: str  # "user:branch"
    base: str
    number: int
    url: str
    action: str  # "created" / "updated"
    pushed: str  # git's summary of the push ("new branch", "fast-forward", "up to date")
    # False: GitHub refused to let maintainers edit the branch (a fork an organisation
    # owns), and the pull request was opened without it.
    maintainer_can_modify: bool = True


def choose_fork_remote(repo: Path, explicit: str | None, upstream_repo: str) -> tuple[str, str]:
    found = git.remote.remotes(repo)
    add_hint = (
        f"Fork {upstream_repo} on GitHub, then `git remote add fork "
        f"https://github.com/<your-user>/{upstream_repo.split('/')[-1]}.git` and run "
        "`onboard pr --open` again (or pass --fork-remote NAME)."
    )
    if explicit is not None:
        if explicit not in found:
            have = ", ".join(sorted(found)) or "none"
            raise OnboardError(
                f"There is no remote `{explicit}` in {repo} (remotes: {have}).", next_step=add_hint
            )
        return explicit, found[explicit]
    if "fork" in found:
        return "fork", found["fork"]
    if "origin" in found and not is_upstream(found["origin"], upstream_repo):
        return "origin", found["origin"]
    why = (
        f"`origin` points at {upstream_repo} itself"
        if "origin" in found
        else "the checkout has no `fork` or `origin` remote"
    )
    raise OnboardError(
        f"No fork to push the branch to: {why}, and pull requests from outside "
        f"contributors come from a fork.",
        next_step=add_hint,
    )


def credential_env(url: str, token: Token, api_url: str) -> dict[str, str] | None:
    """Environment for `git push` over https to the API's own host; None otherwise
    (ssh/local remotes need no token, and a token never goes to another host)."""
    parts = urlsplit(url) if "://" in url else None
    if parts is None or parts.scheme != "https":
        return None
    if (parts.hostname or "").lower() != web_host(api_url):
        return None
    n = int(os.environ.get("GIT_CONFIG_COUNT", "0") or 0)
    return {
        "GIT_CONFIG_COUNT": str(n + 2),
        # An empty helper first resets the user's helpers for this push, so no
        # credential store is asked to save the token.
        f"GIT_CONFIG_KEY_{n}": "credential.helper",
        f"GIT_CONFIG_VALUE_{n}": "",
        f"GIT_CONFIG_KEY_{n + 1}": "credential.helper",
        f"GIT_CONFIG_VALUE_{n + 1}": CREDENTIAL_HELPER,
        TOKEN_ENV_FOR_GIT: token.value,
    }


DEFAULT_PUSH_TIMEOUT_S = 60.0


def push(
    change: Change,
    remote: str,
    url: str,
    token: Token,
    api_url: str,
    *,
    idle_timeout: float = DEFAULT_PUSH_TIMEOUT_S,
    on_line: Callable[[str], None] | None = None,
) -> str:
    env = credential_env(url, token, api_url)
    shown = redact(url, token.value)
    try:
        result = git.remote.push_branch(
            change.repo,
            remote,
            change.branch,
            idle_timeout=idle_timeout,
            on_line=on_line,
            extra_env=env,
        )
    except ProcTimeout:
        raise OnboardError(
            f"`git push {remote}` ({shown}) printed nothing for {idle_timeout:g} s "
            "(--push-timeout) and was stopped: the remote took the connection but never "
            "answered. Nothing was opened on GitHub.",
            next_step="Check the fork's URL (`git remote -v`) and your network or proxy, then "
            "run `onboard pr --open` again; on a slow link allow more quiet time with "
            f"`onboard pr --open --push-timeout {max(300, int(idle_timeout) * 5)}`.",
        ) from None
    text = redact(result.stdout, token.value)
    if result.returncode == 0:
        return _push_summary(text)
    if "[rejected]" in text or "non-fast-forward" in text or "fetch first" in text:
        raise OnboardError(
            f"`git push {remote}` was rejected: the branch `{change.branch}` on {shown} has "
            "commits that yours does not (you rewrote your branch, or pushed from elsewhere). "
            "Nothing was opened on GitHub.",
            next_step=f"If your local branch is the one to keep, run `git push --force-with-lease "
            f"{remote} {change.branch}` yourself, then `onboard pr --open` again.",
        )
    last = [ln for ln in text.strip().splitlines() if ln.strip()]
    raise OnboardError(
        f"`git push {remote}` ({shown}) failed (exit {result.returncode}): "
        f"{last[-1] if last else 'no output'}. Nothing was opened on GitHub.",
        next_step="Check that the fork exists and that you can push to it (for https, the "
        "token needs the `public_repo` scope; for ssh, your key), then run "
        "`onboard pr --open` again.",
    )


def _push_summary(porcelain: str) -> str:
    # `--porcelain` lines: "<flag>\t<from>:<to>\t<summary>"; flag "=" up to date, "*" new.
    for line in porcelain.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[1].startswith(("HEAD:", "refs/")):
            flag = parts[0].strip() or " "
            return {"=": "up to date", "*": "new branch", " ": "fast-forward", "+": "forced"}.get(
                flag, parts[2]
            )
    return "pushed"


def publish(
    change: Change,
    *,
    title: str,
    body: str,
    token: Token,
    api_url: str,
    upstream_repo: str,
    fork_remote: str | None,
    reporter: Reporter,
    push_timeout: float = DEFAULT_PUSH_TIMEOUT_S,
) -> Published:
    remote, url = choose_fork_remote(change.repo, fork_remote, upstream_repo)
    shown_url = redact(url, token.value)
    client = PullRequests(token, api_url=api_url, upstream_repo=upstream_repo)
    reporter.step(f"checking the token and {upstream_repo} on {api_url}")
    login = client.login()
    default_branch = client.upstream_default_branch()
    base = _pr_base(change, default_branch)
    parsed = owner_repo(url)
    owner = parsed[1] if parsed and parsed[0] == web_host(api_url) else login
    head = f"{owner}:{change.branch}"
    existing = client.find_open(head)
    with reporter.task(f"pushing {change.branch} to {remote} ({shown_url})") as task:
        pushed = push(
            change,
            remote,
            url,
            token,
            api_url,
            idle_timeout=push_timeout,
            # git's own meter ("Writing objects:  40% (2/5)"), one line at a time
            on_line=lambda line: task.update(detail=redact(line.strip(), token.value)[:80]),
        )
    if existing is not None:
        reporter.step(f"updating the open pull request #{existing.number}")
        info = client.update(existing.number, title=title, body=body)
        action = "updated"
    else:
        reporter.step(f"opening a draft pull request {head} -> {upstream_repo}:{base}")
        info = client.create_draft(base=base, head=head, title=title, body=body)
        action = "created"
        if not info.maintainer_can_modify:
            reporter.step(
                "GitHub refused to let maintainers edit the branch (a fork an organisation "
                "owns); the pull request was opened without it"
            )
    return Published(
        remote=remote,
        remote_url=shown_url,
        head=head,
        base=base,
        number=info.number,
        url=info.url,
        action=action,
        pushed=pushed,
        maintainer_can_modify=info.maintainer_can_modify,
    )


def _pr_base(change: Change, default_branch: str) -> str:
    """The branch the PR merges into: the branch part of a remote base like
    `origin/main`, else the upstream's default branch."""
    remote, _, branch = change.base.partition("/")
    if branch and remote in git.remote.remotes(change.repo):
        return branch
    return default_branch
