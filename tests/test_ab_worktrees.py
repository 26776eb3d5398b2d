"""`onboard ab` killed outright (SIGKILL) leaves its temporary worktree registered;
the next `ab` (or ``sweep_dead_worktrees``, for `onboard recover`) removes it, and
only it: never a worktree the user made, nor one a running `ab` still uses."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_ab import SCRIPT, fake_torch, script, ws  # noqa: F401 (pytest fixtures)

from onboard import git, workspace
from onboard.workflows.ab import compare
from onboard.workflows.ab.worktrees import sweep_dead_worktrees


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _registered(repo: Path) -> list[Path]:
    """The worktrees git lists, read with git itself (not onboard's adapter)."""
    rows = _git(repo, "worktree", "list", "--porcelain").splitlines()
    return [Path(r.split(" ", 1)[1]) for r in rows if r.startswith("worktree ")]


@pytest.fixture
def killed_ab(ws: workspace.Workspace, tmp_path: Path) -> Path:  # noqa: F811
    """Run `onboard ab --a commit:HEAD` and SIGKILL it while its script runs: the
    worktree it made for A, left registered."""
    ready = tmp_path / "ready"
    os.mkfifo(ready)
    held = tmp_path / "held.py"
    held.write_text(
        f"import time\nopen({str(ready)!r}, 'w').write('running')\ntime.sleep(300)\n",
        encoding="utf-8",
    )
    ab = subprocess.Popen(
        [sys.executable, "-m", "onboard", "ab", str(held), "--a", "commit:HEAD",
         "--workspace", str(ws.root)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    with open(ready, encoding="utf-8") as fh:  # until the script runs (a FIFO: an event)
        assert fh.read() == "running"
    os.killpg(ab.pid, 9)  # ab and its script, as a closed laptop lid or the OOM killer would
    ab.wait()
    left = [p for p in _registered(ws.checkout_path) if p != ws.checkout_path]
    assert len(left) == 1 and left[0].is_dir(), "the killed ab should have left its worktree"
    return left[0]


@contextlib.contextmanager
def _live_run(parent: Path) -> Iterator[Path]:
    """A run folder as a running ab holds it: its owner file locked by a live process."""
    run = parent / "run-live0000"
    run.mkdir(parents=True)
    fd = os.open(run / ".onboard-owner", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield run
    finally:
        os.close(fd)


def test_a_dead_abs_worktree_is_removed_and_no_other(
    ws: workspace.Workspace,  # noqa: F811
    killed_ab: Path,
    tmp_path: Path,
) -> None:
    checkout = ws.checkout_path
    head = _git(checkout, "rev-parse", "HEAD").strip()
    mine = tmp_path / "my worktree"
    _git(checkout, "worktree", "add", "--detach", str(mine), head)
    # one the user made inside onboard's folder, with no owner file: not onboard's
    theirs = ws.root / ".onboard" / "ab" / "my-own"
    _git(checkout, "worktree", "add", "--detach", str(theirs), head)
    with _live_run(ws.root / ".onboard" / "ab") as run:
        alive = run / "worktree-A"
        _git(checkout, "worktree", "add", "--detach", str(alive), head)
        removed = sweep_dead_worktrees(checkout)
        assert removed == [killed_ab]
        assert sorted(_registered(checkout)) == sorted([checkout, mine, theirs, alive])
        assert not killed_ab.exists() and not killed_ab.parent.exists()
        assert mine.is_dir() and theirs.is_dir() and alive.is_dir()
        assert sweep_dead_worktrees(checkout) == []


def test_the_next_ab_removes_it_and_says_so(
    ws: workspace.Workspace,  # noqa: F811
    killed_ab: Path,
    script: Path,  # noqa: F811
) -> None:
    result = compare(script, ws=ws, python=sys.executable, a="commit:HEAD", rounds=1)
    assert _registered(ws.checkout_path) == [ws.checkout_path]
    assert not killed_ab.exists()
    assert any(str(killed_ab) in note for note in result.notes)
    assert git.worktree.list_all(ws.checkout_path) == [ws.checkout_path]
