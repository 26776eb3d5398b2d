"""The change a PR would carry: the branch, its base, its commits and files.

The change is everything since the merge-base with the upstream branch, as
GitHub computes a PR's diff; uncommitted work is listed, never included.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from onboard import git
from onboard.errors import BadInput, OnboardError

# Branches a PR must not come from: pytorch/pytorch's own (viable/strict is the
# branch CI advances to green commits; nightly holds the nightly builds).
PROTECTED_BRANCHES = frozenset({"main", "master", "viable/strict", "nightly"})
DEFAULT_BASES = ("origin/main", "upstream/main", "main")
_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>[^/].*)$")  # git@host:o/r


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    body: str
    author: str = ""  # "Name <email>"


@dataclass(frozen=True)
class ChangedFile:
    status: str  # git's letter: A added, M modified, D deleted, R renamed, ...
    path: str


@dataclass(frozen=True)
class Change:
    repo: Path
    branch: str
    base: str  # the ref it was measured against ("origin/main")
    merge_base: str
    head: str
    commits: tuple[Commit, ...]
    files: tuple[ChangedFile, ...]
    uncommitted: tuple[str, ...] = field(default=())  # `git status --porcelain` lines

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]

    @property
    def existing_paths(self) -> list[str]:
        """Changed paths still present at HEAD (what a linter can look at)."""
        return [f.path for f in self.files if f.status != "D"]


def resolve_repo(repo: str | os.PathLike[str] | None, workspace_checkout: Path | None) -> Path:
    """--repo, else the workspace checkout, else the git repository around cwd."""
    if repo is not None:
        return git.repository.named_root(
            repo,
            next_step="Pass the path of your PyTorch checkout (the git clone your branch is in).",
        )
    if workspace_checkout is not None:
        return git.repository.get_root(workspace_checkout)
    return git.repository.get_root(Path.cwd())


def default_branches(repo: Path) -> set[str]:
    names = set(PROTECTED_BRANCHES)
    for remote in ("origin", "upstream"):
        head = git.remote.remote_head_branch(repo, remote)
        if head:
            names.add(head)
    return names


def owner_repo(url: str) -> tuple[str, str, str] | None:
    """(host, owner, repo) of a GitHub-style remote URL; None for local paths."""
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme == "file" or not parts.hostname:
            return None
        host, path = parts.hostname.lower(), parts.path
    else:
        match = _SCP_LIKE.match(url)
        if not match or os.path.exists(url):
            return None
        host, path = match.group("host").lower(), match.group("path")
    bits = [b for b in path.strip("/").split("/") if b]
    if len(bits) < 2:
        return None
    return host, bits[-2], bits[-1].removesuffix(".git")


def is_upstream(url: str, upstream_repo: str) -> bool:
    parsed = owner_repo(url)
    return parsed is not None and f"{parsed[1]}/{parsed[2]}".lower() == upstream_repo.lower()


def pick_base(
    repo: Path,
    base: str | None,
    fallback_commit: str | None = None,
    upstream_repo: str = "pytorch/pytorch",
) -> str:
    """``--base``, else origin/main, upstream/main, main, then the workspace's commit.

    When `origin` is visibly the contributor's fork and `upstream/main`
    exists, upstream/main goes first: a fork's main is often stale, and
    measuring against it would sweep upstream commits into the change.
    """
    if base is not None:
        if git.refs.rev_parse(repo, base) is None:
            raise BadInput(  # an argument that cannot work: exit 2, like bisect's --good
                f"--base {base} is not a commit or branch in {repo}.",
                next_step="Fetch it first (`git fetch origin main`) or pass another --base.",
            )
        return base
    candidates = list(DEFAULT_BASES)
    urls = git.remote.remotes(repo)
    origin = urls.get("origin")
    if (
        origin
        and owner_repo(origin)
        and not is_upstream(origin, upstream_repo)
        and "upstream" in urls
    ):
        candidates.remove("upstream/main")
        candidates.insert(0, "upstream/main")
    for candidate in candidates:
        if git.refs.rev_parse(repo, candidate) is not None:
            return candidate
    # A workspace checkout made by `onboard setup` is fetched by sha, so it has
    # no origin/main; the installed torch's commit is where the branch began.
    if fallback_commit and git.refs.rev_parse(repo, fallback_commit) is not None:
        return fallback_commit
    raise OnboardError(
        f"{repo} has none of {', '.join(DEFAULT_BASES)} to measure the change against.",
        next_step="Run `git fetch origin main` (or `git remote add upstream "
        "https://github.com/pytorch/pytorch.git && git fetch upstream main`), or pass --base REF.",
    )


def collect(
    repo: Path,
    *,
    base: str | None = None,
    fallback_commit: str | None = None,
    upstream_repo: str = "pytorch/pytorch",
) -> Change:
    branch = git.refs.current_branch(repo)
    if branch is None:
        raise OnboardError(
            f"HEAD is detached in {repo}, so there is no branch to open a pull request from.",
            next_step="Create one for your change with `git switch -c my-fix` and run "
            "`onboard pr` again.",
        )
    if branch in default_branches(repo):
        raise OnboardError(
            f"You are on `{branch}`, a default branch; a pull request comes from a branch of "
            "its own, never from the branch it merges into.",
            next_step="Move your commits to a new branch with `git switch -c my-fix` "
            "(then reset the default branch if you committed there) and run `onboard pr` again.",
        )
    head = git.refs.head_sha(repo)
    if head is None:
        raise OnboardError(
            f"Branch `{branch}` in {repo} has no commits yet.",
            next_step="Commit your change, then run `onboard pr` again.",
        )
    base_ref = pick_base(repo, base, fallback_commit, upstream_repo)
    if base_ref == branch:
        raise OnboardError(
            f"You are on `{branch}`, the branch the change is measured against; a pull request "
            "comes from a branch of its own.",
            next_step="Move your commits to a new branch with `git switch -c my-fix` and run "
            "`onboard pr` again.",
        )
    merge_base = git.refs.merge_base(repo, base_ref, head)
    if merge_base is None:
        raise OnboardError(
            f"`{branch}` shares no history with {base_ref}, so GitHub could not make a pull "
            "request of it.",
            next_step="Start the branch from the upstream branch (`git switch -c my-fix "
            "origin/main`) and move your commits there (`git cherry-pick`), or pass --base.",
        )
    # Not git.status.status_porcelain: its strip() would eat the first line's leading
    # status column (" M" worktree vs "M " index).
    status = git.core.git(repo, "status", "--porcelain=v1").stdout
    uncommitted = tuple(ln for ln in status.splitlines() if ln.strip())
    commits = tuple(Commit(*c) for c in git.history.commits_between(repo, merge_base, head))
    if not commits:
        hint = (
            " Your work is still uncommitted: commit it (`git commit -a`) first."
            if uncommitted
            else ""
        )
        raise OnboardError(
            f"`{branch}` has no commits since it left {base_ref} ({merge_base[:12]}).{hint}",
            next_step="Commit your change on this branch and run `onboard pr` again.",
        )
    files = tuple(
        ChangedFile(s, p) for s, p in git.history.diff_name_status(repo, merge_base, head)
    )
    return Change(
        repo=repo,
        branch=branch,
        base=base_ref,
        merge_base=merge_base,
        head=head,
        commits=commits,
        files=files,
        uncommitted=uncommitted,
    )


def authors_easycla_cannot_match(change: Change) -> list[str]:
    """Commit authors that EasyCLA cannot tie to a GitHub account (it checks
    every commit's author email): git's "(none)" fallback, @localhost, none."""
    odd = []
    for commit in change.commits:
        email = commit.author.rpartition("<")[2].rstrip(">").strip()
        unknown = not email or "@" not in email or email.endswith(("@localhost", "(none)"))
        if unknown and commit.author not in odd:
            odd.append(commit.author)
    return odd
