"""The fault matrix: nothing the user made is lost, whatever arrives when.

Each writing command (setup create, setup re-run with torch unchanged or
changed, new-op, verify, bisect, pr) runs as a real process
(tests/fixtures/onboard_driver.py) in a workspace holding the user's work
(tests/fixtures/user_state.py): a branch with commits checked out or a
detached HEAD, another branch, a stash entry, untracked and ignored files,
IDE files with the user's keys. Each runs normally, with SIGINT or SIGTERM at
chosen points (before and after the work is complete), killed outright, and
against a second run at the same time. Afterwards every ref, stash entry,
file and key of the user's is still there, no onboard process, lock or
journal is left, and the exit code says what happened.

The wider sweep (every point x every signal) is marked slow.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.events import read_until
from fixtures.onboard_runs import (
    DRIVER,
    NEW_TORCH,
    Onboard,
    Run,
    assert_nothing_left,
    at,
    finish,
)
from fixtures.user_state import UserState, git, give_user_work, marked_processes

from onboard import lock
from onboard.scope import JOURNAL, SCOPE_DIR

# ---------------------------------------------------------------------------
# setup re-run, torch unchanged: nothing to rebuild, whatever is checked out


@pytest.mark.parametrize("detached", [False, True])
def test_setup_rerun_keeps_the_users_work(ws: Path, onboard: Onboard, detached: bool) -> None:
    repo = ws / "pytorch"
    give_user_work(repo, detached=detached)
    before = UserState.capture(repo)
    run = onboard("setup", str(ws), "--from-wheel", "--json")
    assert run.returncode == 0, run.stderr
    assert run.json()["state"] == "unchanged"
    before.assert_kept(UserState.capture(repo))
    assert_nothing_left(ws, onboard)


@pytest.mark.parametrize(
    ("point", "code"),
    [
        ("files.write_bytes:1:INT", 130),  # mid-way through onboard's files
        ("workspace.save:1:TERM:before", 130),  # the last write, not done yet
        ("transaction.Transaction.commit:1:TERM:before", 0),  # held back, then complete
        ("signals.work_complete:1:INT", 0),  # after the work is complete: kept, exit 0
    ],
)
def test_setup_rerun_interrupted(ws: Path, onboard: Onboard, point: str, code: int) -> None:
    repo = ws / "pytorch"
    give_user_work(repo)
    before = UserState.capture(repo)
    config = (ws / "onboard.json").read_bytes()
    run = onboard("setup", str(ws), "--from-wheel", **at(point))
    assert run.returncode == code, run.stderr
    before.assert_kept(UserState.capture(repo))
    if code == 130:
        assert "Interrupted." in run.stderr
        assert (ws / "onboard.json").read_bytes() == config  # rolled back exactly
    else:
        assert "after the work was complete" in run.stderr
    assert_nothing_left(ws, onboard)


# ---------------------------------------------------------------------------
# setup re-run, torch changed: a new reference commit, the user's branch stays


def test_setup_rerun_with_a_new_torch_keeps_the_branch_and_says_how_to_rebase(
    ws: Path, onboard: Onboard
) -> None:
    repo = ws / "pytorch"
    old_reference = git(repo, "rev-parse", "reference")
    give_user_work(repo)
    before = UserState.capture(repo)
    run = onboard("setup", str(ws), "--from-wheel", "--json", ONBOARD_TEST_TORCH_VERSION=NEW_TORCH)
    assert run.returncode == 0, run.stderr
    result = run.json()
    assert result["state"] == "resumed" and result["torch_version"] == NEW_TORCH
    before.assert_kept(UserState.capture(repo), moved_refs=("refs/heads/reference",))
    new_reference = git(repo, "rev-parse", "reference")
    assert git(repo, "rev-parse", "reference~1") == old_reference  # a child, not a new repo
    assert git(repo, "rev-parse", "onboard/reference-2.13.0+cpu") == old_reference
    assert git(repo, "rev-parse", f"onboard/reference-{NEW_TORCH}") == new_reference
    # The printed rebase command runs as printed and moves only the user's branch.
    notes = [str(n) for n in result["notes"]]  # type: ignore[union-attr]
    note = next(n for n in notes if "rebase" in n)
    command = note[note.index("`git ") + 1 : note.rindex("`")]
    subprocess.run(command.split(), check=True, capture_output=True)
    assert git(repo, "rev-parse", "mine~2") == new_reference
    assert_nothing_left(ws, onboard)


def test_setup_rerun_with_a_new_torch_fast_forwards_a_clean_reference(
    ws: Path, onboard: Onboard
) -> None:
    repo = ws / "pytorch"
    old_reference = git(repo, "rev-parse", "reference")
    run = onboard("setup", str(ws), "--from-wheel", ONBOARD_TEST_TORCH_VERSION=NEW_TORCH)
    assert run.returncode == 0, run.stderr
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "reference"
    assert git(repo, "rev-parse", "HEAD~1") == old_reference
    assert git(repo, "status", "--porcelain") == ""
    assert (repo / "version.txt").read_text() == "2.14.0\n"


@pytest.mark.parametrize(
    "point",
    [
        "workflows.reference_tree.add_commit:1:INT",  # the new commit exists, no ref moved yet
        "git.worktree.merge_ff_only:1:TERM",  # reference and the work tree moved
        "workspace.save:1:INT:before",
    ],
)
def test_setup_rerun_with_a_new_torch_interrupted_rolls_back(
    ws: Path, onboard: Onboard, point: str
) -> None:
    repo = ws / "pytorch"
    before = UserState.capture(repo)
    config = (ws / "onboard.json").read_bytes()
    run = onboard(
        "setup", str(ws), "--from-wheel", ONBOARD_TEST_TORCH_VERSION=NEW_TORCH, **at(point)
    )
    assert run.returncode == 130, run.stderr
    now = UserState.capture(repo)
    assert now.refs == before.refs  # no tag, no reference move, no refs/onboard/ left
    assert (now.branch, now.head) == (before.branch, before.head)
    assert git(repo, "status", "--porcelain") == ""  # the work tree went back too
    assert (ws / "onboard.json").read_bytes() == config
    assert_nothing_left(ws, onboard)


# ---------------------------------------------------------------------------
# new-op


@pytest.mark.parametrize("detached", [False, True])
def test_new_op_on_top_of_the_users_work(ws: Path, onboard: Onboard, detached: bool) -> None:
    repo = ws / "pytorch"
    give_user_work(repo, detached=detached)
    before = UserState.capture(repo)
    run = onboard("new-op", "my_frac", "--workspace", str(ws))
    assert run.returncode == 0, run.stderr
    before.assert_kept(UserState.capture(repo), head_may_move=True)
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "onboard/new-op-my_frac"
    assert git(repo, "rev-parse", "HEAD~1") == before.head
    assert_nothing_left(ws, onboard)


@pytest.mark.parametrize(
    ("point", "code"),
    [
        ("transaction.Transaction.switch_new_branch:1:INT", 130),
        ("workflows.newop.apply._write_file:2:TERM", 130),
        ("git.history.commit_index:1:INT", 130),  # the commit object exists, the branch not moved
        ("git.refs.update_ref:1:TERM", 130),  # the branch holds the scaffold commit
        ("signals.work_complete:1:TERM", 0),
    ],
)
@pytest.mark.parametrize("detached", [False, True])
def test_new_op_interrupted(
    ws: Path, onboard: Onboard, point: str, code: int, detached: bool
) -> None:
    repo = ws / "pytorch"
    give_user_work(repo, detached=detached)
    before = UserState.capture(repo)
    run = onboard("new-op", "my_frac", "--workspace", str(ws), **at(point))
    assert run.returncode == code, run.stderr
    now = UserState.capture(repo)
    if code == 130:
        before.assert_kept(now)
        assert "refs/heads/onboard/new-op-my_frac" not in now.refs
        assert not (repo / "aten/src/ATen/native/MyFrac.cpp").exists()
        assert not (ws / ".onboard/newop/my_frac.json").exists()
        again = onboard("new-op", "my_frac", "--workspace", str(ws))  # nothing in the way
        assert again.returncode == 0, again.stderr
    else:
        before.assert_kept(now, head_may_move=True)
        assert now.branch == "onboard/new-op-my_frac"
        assert (ws / ".onboard/newop/my_frac.json").is_file()
    assert_nothing_left(ws, onboard)


def test_new_op_killed_outright_is_rolled_back_by_the_next_run(ws: Path, onboard: Onboard) -> None:
    repo = ws / "pytorch"
    give_user_work(repo)
    before = UserState.capture(repo)
    run = onboard(
        "new-op",
        "my_frac",
        "--workspace",
        str(ws),
        **at("workflows.newop.apply._write_file:3:KILL"),
    )
    assert run.returncode == -signal.SIGKILL
    assert (ws / SCOPE_DIR / JOURNAL).exists()  # nothing could clean up
    assert UserState.capture(repo).branch == "onboard/new-op-my_frac"
    again = onboard("new-op", "my_frac", "--workspace", str(ws))
    assert again.returncode == 0, again.stderr
    assert "stopped before it finished: undoing what is still its own" in again.stderr
    before.assert_kept(UserState.capture(repo), head_may_move=True)
    assert git(repo, "rev-parse", "HEAD~1") == before.head
    assert_nothing_left(ws, onboard)


def test_two_new_ops_at_once_one_waits_and_refuses(ws: Path, onboard: Onboard) -> None:
    repo = ws / "pytorch"
    give_user_work(repo)
    before = UserState.capture(repo)
    first = onboard.hold(
        "transaction.Transaction.switch_new_branch:1", "new-op", "my_a", "--workspace", str(ws)
    )
    first.wait()
    assert lock.is_held(ws / SCOPE_DIR / "lock")
    second = onboard("new-op", "my_b", "--workspace", str(ws), ONBOARD_LOCK_WAIT="0.5")
    assert second.returncode == 1
    assert "Another onboard is working in the workspace" in second.stderr
    assert f"pid {first.process.pid}" in second.stderr and "new-op my_a" in second.stderr
    first.release()
    assert finish(first.process).returncode == 0
    now = UserState.capture(repo)
    before.assert_kept(now, head_may_move=True)
    assert now.branch == "onboard/new-op-my_a"
    assert "refs/heads/onboard/new-op-my_b" not in now.refs
    assert git(repo, "status", "--porcelain") == "?? notes.txt"  # the user's, and only that
    assert_nothing_left(ws, onboard)


# ---------------------------------------------------------------------------
# verify


def test_two_verifies_at_once_queue_instead_of_crashing(ws: Path, onboard: Onboard) -> None:
    give_user_work(ws / "pytorch")
    before = UserState.capture(ws / "pytorch")
    runs = [
        onboard.start("verify", "--workspace", str(ws), "--json", ONBOARD_LOCK_WAIT="300")
        for _ in range(2)
    ]
    results = [finish(r) for r in runs]
    for run in results:
        assert run.returncode in (0, 1), run.stderr
        checks = run.json()["checks"]
        assert not [c for c in checks if "crashed" in c["detail"]]  # type: ignore[index]
    before.assert_kept(UserState.capture(ws / "pytorch"))
    assert_nothing_left(ws, onboard)


def test_ctrl_c_during_verify_leaves_no_process_behind(ws: Path, onboard: Onboard) -> None:
    before = UserState.capture(ws / "pytorch")
    run = onboard.start("verify", "--workspace", str(ws))
    # Until verify's nox session (a grandchild, in a session of its own) runs its checks.
    read_until(run, "started: ")
    run.send_signal(signal.SIGINT)
    result = finish(run, timeout=60)
    assert result.returncode == 130, result.stderr
    before.assert_kept(UserState.capture(ws / "pytorch"))
    assert_nothing_left(ws, onboard)


def _read_only(ws: Path, onboard: Onboard, *args: str) -> Run:
    """Run onboard with ``ws`` mounted read-only (a bind mount in a mount namespace
    of its own: a real EROFS, for root too, and nothing leaks out)."""
    if shutil.which("unshare") is None:
        pytest.fail("util-linux `unshare` is needed to mount a folder read-only in a test")
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" && shift && exec "$@"'
    process = subprocess.Popen(
        ["unshare", "-rm", "sh", "-c", script, "sh", str(ws), sys.executable, str(DRIVER), *args],
        env=onboard.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    return finish(process)


@pytest.mark.parametrize(
    "args", [("verify", "--workspace", "{ws}"), ("setup", "{ws}", "--from-wheel")]
)
def test_a_read_only_workspace_is_bad_usage_not_a_bug(
    ws: Path, onboard: Onboard, args: tuple[str, ...]
) -> None:
    before = UserState.capture(ws / "pytorch")
    run = _read_only(ws, onboard, *(a.format(ws=ws) for a in args))
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr and "Read-only file system" in run.stderr
    assert "onboard cannot write" in run.stderr
    before.assert_kept(UserState.capture(ws / "pytorch"))


# ---------------------------------------------------------------------------
# setup create


def test_setup_create_interrupted_leaves_nothing(tmp_path: Path, onboard: Onboard) -> None:
    parent = tmp_path / "parent"
    parent.mkdir()
    (parent / "mine.txt").write_text("the user's\n")
    for point in ("workflows.reference_tree.build:1:INT", "files.write_bytes:2:TERM"):
        run = onboard("setup", str(parent / "ws"), "--from-wheel", **at(point))
        assert run.returncode == 130, run.stderr
        assert sorted(p.name for p in parent.iterdir()) == ["mine.txt"]
    assert_nothing_left(parent / "ws", onboard)


def test_setup_create_killed_is_swept_by_the_next_run(tmp_path: Path, onboard: Onboard) -> None:
    tmp_path = tmp_path / "parent"
    tmp_path.mkdir()
    dest = tmp_path / "ws"
    run = onboard("setup", str(dest), "--from-wheel", **at("workflows.reference_tree.build:1:KILL"))
    assert run.returncode == -signal.SIGKILL
    debris = [p for p in tmp_path.iterdir() if "onboard-partial" in p.name]
    assert len(debris) == 1 and not dest.exists()
    again = onboard("setup", str(dest), "--from-wheel")
    assert again.returncode == 0, again.stderr
    assert f"removed {debris[0].name}" in again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ws"]


def test_two_setups_of_one_folder_at_once(tmp_path: Path, onboard: Onboard) -> None:
    tmp_path = tmp_path / "parent"
    tmp_path.mkdir()
    dest = tmp_path / "ws"
    first = onboard.hold("workflows.reference_tree.build:1", "setup", str(dest), "--from-wheel")
    first.wait()
    assert [p for p in tmp_path.iterdir() if "onboard-partial" in p.name]
    second = onboard("setup", str(dest), "--from-wheel", ONBOARD_LOCK_WAIT="0.5")
    assert second.returncode == 1 and f"pid {first.process.pid}" in second.stderr
    first.release()
    assert finish(first.process).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ws"]
    queued = onboard("setup", str(dest), "--from-wheel", "--json")
    assert queued.returncode == 0 and queued.json()["state"] == "unchanged"


# ---------------------------------------------------------------------------
# bisect and pr in the user's checkout


def _bisect_history(repo: Path) -> tuple[str, str, Path]:
    """Four commits on `buggy` after `mine`; the third breaks value.txt."""
    git(repo, "switch", "-q", "-c", "buggy", "mine")
    for n, value in enumerate(("1", "1", "2", "2"), start=1):
        (repo / "value.txt").write_text(value + "\n")
        (repo / "step.txt").write_text(f"{n}\n")
        git(repo, "add", "value.txt", "step.txt")
        git(repo, "commit", "-q", "-m", f"step {n}")
    git(repo, "switch", "-q", "mine")
    repro = repo.parent / "repro.py"
    repro.write_text(
        "import pathlib, sys\n"
        f"sys.exit(0 if pathlib.Path({str(repo)!r}, 'value.txt').read_text() == '1\\n' else 1)\n"
    )
    return git(repo, "rev-parse", "buggy~3"), git(repo, "rev-parse", "buggy"), repro


@pytest.mark.parametrize("point", [None, "git.bisect.mark:1:INT", "git.bisect.mark:2:TERM"])
def test_bisect_in_the_users_checkout(ws: Path, onboard: Onboard, point: str | None) -> None:
    repo = ws / "pytorch"
    give_user_work(repo)
    good, bad, repro = _bisect_history(repo)
    before = UserState.capture(repo)
    args = ["bisect", str(repro), "--good", good, "--bad", bad, "--repo", str(repo), "--json"]
    run = onboard(*args, **(at(point) if point else {}))
    assert run.returncode == (0 if point is None else 130), run.stderr
    if point is None:
        culprit = run.json()["commits"]["culprit"]  # type: ignore[index]
        assert culprit["subject"] == "step 3"
    before.assert_kept(UserState.capture(repo))
    assert not (repo / ".git" / "BISECT_START").exists()
    assert_nothing_left(ws, onboard)


@pytest.mark.parametrize("point", [None, "files.write_bytes:1:INT"])
def test_pr_draft_in_the_users_checkout(ws: Path, onboard: Onboard, point: str | None) -> None:
    repo = ws / "pytorch"
    give_user_work(repo)
    before = UserState.capture(repo)
    run = onboard("pr", "--workspace", str(ws), **(at(point) if point else {}))
    assert run.returncode == (0 if point is None else 130), run.stderr
    assert (ws / "PR_DRAFT.md").exists() == (point is None)
    before.assert_kept(UserState.capture(repo))
    assert_nothing_left(ws, onboard)


def test_verify_names_the_rebase_for_work_on_an_older_reference_tree(
    ws: Path, onboard: Onboard
) -> None:
    from onboard.workflows import reference_tree, verify

    repo = ws / "pytorch"
    give_user_work(repo)
    run = onboard("setup", str(ws), "--from-wheel", ONBOARD_TEST_TORCH_VERSION=NEW_TORCH)
    assert run.returncode == 0, run.stderr
    found = reference_tree.trailers(git(repo, "log", "-1", "--format=%B", "mine~2"))
    detail = verify._reference_drift(repo, found, NEW_TORCH, "f" * 40)
    assert detail.startswith("HEAD is on the reference tree of torch 2.13.0+cpu")
    command = detail[detail.index("`git ") + 1 : detail.rindex("`")]
    subprocess.run(command.split(), check=True, capture_output=True)
    assert git(repo, "rev-parse", "mine~2") == git(repo, "rev-parse", "reference")


def _cmdlines(mark: str) -> list[str]:
    lines = []
    for pid in marked_processes(mark):
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return lines


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_verify_mid_compile_stops_every_compiler(
    ws: Path, onboard: Onboard, sig: signal.Signals
) -> None:
    assert onboard("new-op", "my_frac", "--workspace", str(ws)).returncode == 0
    run = onboard.start("verify", "--workspace", str(ws))
    deadline = time.monotonic() + 600
    # Looked at again until a compiler runs: it is started by the nox session (no hold
    # point of the driver's reaches there) and nothing it prints marks that moment.
    while not any(
        "_compile_child" in c or "nvcc" in c or "cc1plus" in c for c in _cmdlines(onboard.mark)
    ):
        assert time.monotonic() < deadline and run.poll() is None, finish(run).stderr
        time.sleep(0.2)
    run.send_signal(sig)
    result = finish(run, timeout=120)
    assert result.returncode == 130, result.stderr
    assert_nothing_left(ws, onboard)


def test_harvest_into_a_closed_pipe_ends_quietly_with_zero(ws: Path, onboard: Onboard) -> None:
    shell = (
        f'"{sys.executable}" "{DRIVER}" harvest --workspace "{ws}" --limit 500 | head -1; '
        'echo "status=${PIPESTATUS[0]}"'
    )
    out = subprocess.run(["bash", "-c", shell], env=onboard.env(), capture_output=True, text=True)
    assert out.stdout.splitlines()[-1] == "status=0", out.stderr
    assert "Traceback" not in out.stderr and "Broken pipe" not in out.stderr


@pytest.mark.parametrize(
    "point",
    [
        "git.status.start_tree_state:1:TERM",  # `git status` started, the cache not yet read
        "git.status.start_tree_state:1:INT",
        "git.status.PendingState.result:1:TERM:before",  # harvest about to wait for it
        "git.status.PendingStatus.result:1:INT:before",
        "git.status.PendingState.result:1:INT",  # git answered, the tree not yet searched
    ],
)
def test_harvest_interrupted_around_its_git_status(ws: Path, onboard: Onboard, point: str) -> None:
    """The `git status` harvest runs while it reads its cache is stopped with the run: no
    process left, no index.lock (git would refuse every later command in the checkout)."""
    run = onboard("harvest", "--json", cwd=ws, **at(point))
    assert run.returncode == 130, run.stderr
    assert "Interrupted." in run.stderr and "Traceback" not in run.stderr
    assert json.loads(run.stdout)["error"]["kind"] == "Interrupted"
    assert not (ws / "pytorch" / ".git" / "index.lock").exists()
    assert_nothing_left(ws, onboard)
    again = onboard("harvest", "--json", cwd=ws)
    assert again.returncode == 0, again.stderr
