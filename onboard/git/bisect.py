"""`git bisect` as documented (git-bisect(1)): start, mark, log, reset, and whether one
is in progress in a work tree."""

from __future__ import annotations

from onboard import proc
from onboard.git import core, repository
from onboard.git.core import PathLike


def in_progress(repo: PathLike) -> bool:
    # git itself decides "bisecting" from BISECT_START (git-bisect.sh / builtin/bisect.c),
    # kept in the work tree's own git folder (per worktree, like HEAD).
    return (repository.git_dir(repo) / "BISECT_START").exists()


def start_mark(repo: PathLike) -> dict[str, object] | None:
    """What identifies the bisect in progress in ``repo``: BISECT_START's text (where
    `git bisect reset` returns: a branch, or a commit) and the file itself (a bisect
    started again has a new one); None when none is in progress."""
    path = repository.git_dir(repo) / "BISECT_START"
    try:
        st = path.stat()
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return {"text": text, "ino": st.st_ino, "mtime_ns": st.st_mtime_ns}


def start(
    repo: PathLike,
    new: str | None = None,
    old: str | None = None,
    *,
    first_parent: bool,
    term_old: str | None = None,
    term_new: str | None = None,
) -> proc.Result:
    """``git bisect start``; without bounds it waits for them (marked one by one later)."""
    args = ["bisect", "start"]
    if term_old and term_new:
        args += [f"--term-old={term_old}", f"--term-new={term_new}"]
    if first_parent:
        args.append("--first-parent")
    args += [r for r in (new, old) if r]
    return core.git(repo, *args, check=False, timeout=None)


def mark(repo: PathLike, term: str, rev: str | None = None) -> proc.Result:
    """``git bisect <term> [rev]``: the answer (next commit, or the result) is in stdout."""
    return core.git(repo, "bisect", term, *([rev] if rev else []), check=False, timeout=None)


def log(repo: PathLike) -> str:
    return core.git(repo, "bisect", "log", check=False).stdout


def reset(repo: PathLike, target: str) -> proc.Result:
    return core.git(repo, "bisect", "reset", target, check=False, timeout=None)
