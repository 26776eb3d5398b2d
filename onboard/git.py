"""The git adapter: small named functions, plain types out.

Plumbing goes through ``proc.run(["git", ...])`` (argument lists, no prompts);
GitPython is used where it adds something (fetch progress) and is imported
lazily so the CLI starts without it. Each command's helpers are grouped under
a header comment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from onboard import proc
from onboard.errors import OnboardError


def git(
    repo: str | os.PathLike[str] | None,
    *args: str,
    check: bool = True,
    timeout: float | None = 120,
    extra_env: Mapping[str, str] | None = None,
    what: str | None = None,
    next_step: str | None = None,
) -> proc.Result:
    argv: list[str] = ["git"]
    if repo is not None:
        argv += ["-C", os.fspath(repo)]
    argv += list(args)
    return proc.run(
        argv,
        check=check,
        timeout=timeout,
        extra_env=extra_env,
        what=what or f"`git {args[0] if args else ''}`",
        next_step=next_step,
    )


def out(repo: str | os.PathLike[str] | None, *args: str, **kwargs: object) -> str:
    return git(repo, *args, **kwargs).stdout.strip()  # type: ignore[arg-type]


def get_root(path: str | os.PathLike[str]) -> Path:
    result = git(path, "rev-parse", "--show-toplevel", check=False)
    if result.returncode != 0:
        raise OnboardError(
            f"{path} is not inside a git repository.",
            next_step="Pass --repo with the path of your PyTorch checkout, or run "
            "`onboard setup DIR` to make one.",
        )
    return Path(result.stdout.strip())


def is_repo(path: str | os.PathLike[str]) -> bool:
    return Path(path).is_dir() and git(path, "rev-parse", "--git-dir", check=False).returncode == 0


def head_sha(repo: str | os.PathLike[str]) -> str | None:
    result = git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False)
    return result.stdout.strip() or None


def current_branch(repo: str | os.PathLike[str]) -> str | None:
    """The branch name, or None when HEAD is detached."""
    result = git(repo, "symbolic-ref", "-q", "--short", "HEAD", check=False)
    return result.stdout.strip() or None


def status_porcelain(repo: str | os.PathLike[str], *, untracked: bool = True) -> list[str]:
    args = ["status", "--porcelain=v1"]
    if not untracked:
        args.append("--untracked-files=no")
    return [ln for ln in out(repo, *args).splitlines() if ln.strip()]


def is_dirty(repo: str | os.PathLike[str], *, untracked: bool = False) -> bool:
    return bool(status_porcelain(repo, untracked=untracked))


def rev_parse(repo: str | os.PathLike[str], rev: str) -> str | None:
    result = git(repo, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}", check=False)
    return result.stdout.strip() or None


def changed_files(repo: str | os.PathLike[str], a: str, b: str) -> list[str]:
    return [p for p in out(repo, "diff", "--name-only", a, b).splitlines() if p]


def log_subjects(repo: str | os.PathLike[str], revs: Sequence[str]) -> list[str]:
    return out(repo, "log", "--format=%s", *revs).splitlines()
