"""Reading git state takes no lock another writer needs (GIT_OPTIONAL_LOCKS=0), and a
git command refused for a lock file names that file, who holds it, and what to do."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from onboard import git
from onboard.errors import OnboardError


def _git(repo: Path, *args: str, **kwargs: object) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, **kwargs
    )  # type: ignore[call-overload]
    return str(done.stdout)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "my repo"
    root.mkdir()
    for name in ("a.py", "b.py"):
        (root / name).write_text(f"# {name}\n", encoding="utf-8")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "first")
    return root


def _index_identity(repo: Path) -> tuple[int, int]:
    st = (repo / ".git" / "index").stat()
    return st.st_ino, st.st_mtime_ns


def test_reading_git_state_never_rewrites_the_index(repo: Path) -> None:
    # A newer mtime with the same content: a `git status` that may take optional locks
    # refreshes its stat cache and writes the index back (under index.lock).
    for name in ("a.py", "b.py"):
        os.utime(repo / name, ns=(time.time_ns() + 5_000_000_000,) * 2)
    before = _index_identity(repo)
    assert git.status.status_porcelain(repo) == []
    assert git.status.changes_since(repo, git.refs.head_sha(repo) or "") == {}
    state = git.status.start_tree_state(repo).result()
    assert state is not None and state.changed == {}
    assert _index_identity(repo) == before
    # the same state read by git itself, with optional locks, does rewrite it (the check
    # above can fail)
    _git(repo, "status", "--porcelain")
    assert _index_identity(repo) != before


def test_a_stale_lock_is_named_with_the_command_that_removes_it(repo: Path) -> None:
    lock = repo / ".git" / "index.lock"
    lock.write_text("")
    (repo / "a.py").write_text("# changed\n", encoding="utf-8")
    with pytest.raises(OnboardError) as exc:
        git.history.stage_paths(repo, ["a.py"])
    err = exc.value
    assert str(lock) in err.message
    assert "no git process" in (err.next_step or "").lower()
    removal = f"rm -f {shlex.quote(str(lock))}"
    assert removal in (err.next_step or "")
    subprocess.run(shlex.split(removal), check=True)  # runnable as printed (a space in it)
    assert not lock.exists()
    git.history.stage_paths(repo, ["a.py"])  # and then the command works


@pytest.fixture
def committing(repo: Path, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A `git commit -a` whose editor is open: it holds index.lock meanwhile."""
    opened = tmp_path / "editor-open"
    os.mkfifo(opened)
    (repo / "a.py").write_text("# to commit\n", encoding="utf-8")
    editor = f"sh -c 'echo open > {shlex.quote(str(opened))}; exec sleep 300' --"
    holder = subprocess.Popen(
        ["git", "-C", str(repo), "commit", "-a"],
        env={**os.environ, "GIT_EDITOR": editor},
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    with open(opened, encoding="utf-8") as fh:  # until the editor runs
        assert fh.read().strip() == "open"
    assert (repo / ".git" / "index.lock").exists()
    yield holder
    os.killpg(holder.pid, signal.SIGKILL)
    holder.wait()


def test_a_held_lock_names_the_git_process_holding_it(
    repo: Path, committing: subprocess.Popen[bytes]
) -> None:
    lock = repo / ".git" / "index.lock"
    (repo / "b.py").write_text("# changed\n", encoding="utf-8")
    with pytest.raises(OnboardError) as exc:
        git.history.stage_paths(repo, ["b.py"])
    err = exc.value
    assert str(lock) in err.message
    assert f"pid {committing.pid}" in err.message and "git" in err.message
    assert "wait" in (err.next_step or "").lower()
    assert "rm " not in (err.next_step or "")  # never remove a lock a live git holds
    # reading state meanwhile works, and takes nothing from the commit
    assert git.status.status_porcelain(repo, untracked=False) != []


def _racily_clean(repo: Path) -> list[str]:
    """Tracked files no older than the index, to the second: git cannot trust their
    cached stat (git's Documentation/technical/racy-git.txt), so a read-only `git
    status`, which writes no index back, re-reads each of them on every call."""
    index_second = (repo / ".git" / "index").stat().st_mtime_ns // 1_000_000_000
    racy, path = [], ""
    for line in _git(repo, "ls-files", "--debug").splitlines():
        if not line.startswith(" "):
            path = line
        elif line.strip().startswith("mtime:") and (
            int(line.split()[1].split(":")[0]) >= index_second
        ):
            racy.append(path)
    return racy


def test_a_tree_just_written_is_refreshed_past_its_racy_second(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    # Start just past the top of a second (by the kernel's coarse clock, which stamps
    # files and trails time.time() by up to a tick), so that the files, the commit and
    # an immediate refresh all fall within it, as for a tree written just before setup
    # refreshes.
    now = time.time()
    time.sleep(int(now) + 1.05 - now)
    for n in range(50):
        (root / f"f{n}.py").write_text(f"# {n}\n", encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "tree")
    assert _racily_clean(root)  # as the tree was written: every file in the index's second
    git.status.refresh_index(root)
    assert _racily_clean(root) == []
