"""onboard is never alone in the repository: the user's own git runs between and
during its steps. Whatever the user did, every byte and ref they made is there
afterwards; onboard's own leftovers are removed, or named with the command
that removes them.

Each test runs the real CLI in processes of its own (tests/fixtures/onboard_runs.py)
in a small --from-wheel workspace holding the user's work (tests/fixtures/user_state.py),
and plays the second actor with plain `git` between or during onboard's steps.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fixtures.events import read_until
from fixtures.onboard_runs import Onboard, assert_nothing_left, at, finish
from fixtures.user_state import UserState, git, give_user_work

from onboard import lock
from onboard.scope import JOURNAL, SCOPE_DIR, journals

BRANCH = "onboard/new-op-my_frac"
KILLED_AT = {
    # three of the scaffold's files written on onboard's branch, nothing committed
    "dirty": "workflows.newop.apply._write_file:3:KILL",
    # the scaffold committed on onboard's branch; the run had not finished
    "committed": "git.refs.update_ref:1:KILL",
}


@dataclass(frozen=True)
class Tree:
    """Everything in a checkout that is not in a commit, byte for byte, with
    HEAD, every ref and the stash: what a rollback must not take from the user."""

    branch: str | None
    head: str
    refs: dict[str, str]
    stash: tuple[str, ...]
    files: dict[str, bytes | None]  # changed, untracked and ignored paths

    @classmethod
    def capture(cls, repo: Path) -> Tree:
        state = UserState.capture(repo)
        listing = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain=v1", "-z", "--ignored", "-uall"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        files: dict[str, bytes | None] = {}
        for entry in filter(None, listing.split("\0")):
            path = repo / entry[3:]
            files[entry[3:]] = path.read_bytes() if path.is_file() else None
        return cls(state.branch, state.head, state.refs, state.stash, files)


def _status(repo: Path) -> set[str]:
    """`git status` entries, their status columns intact (``git()`` strips output)."""
    raw = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain=v1", "-z"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return set(filter(None, raw.split("\0")))


def _kill_new_op(ws: Path, onboard: Onboard, when: str) -> None:
    run = onboard("new-op", "my_frac", "--workspace", str(ws), **at(KILLED_AT[when]))
    assert run.returncode == -signal.SIGKILL, run.stderr
    assert (ws / SCOPE_DIR / JOURNAL).exists()
    assert git(ws / "pytorch", "symbolic-ref", "--short", "HEAD") == BRANCH


def _user_acts(repo: Path, action: str) -> None:
    """What the user does after onboard died: their git, their editor."""
    if action.startswith("back"):
        git(repo, "switch", "-q", "mine")
    elif action.startswith("other"):
        git(repo, "switch", "-q", "other")
    mine = repo / "torch" / "my_module_1.py"
    mine.write_text(mine.read_text() + f"# the user's edit after onboard died ({action})\n")
    (repo / "later.txt").write_text("written by the user after onboard died\n")
    if action.endswith("commit"):
        git(repo, "commit", "-q", "-m", f"the user's commit ({action})", "torch/my_module_1.py")


def _commands_in(text: str) -> list[str]:
    return [part for i, part in enumerate(text.split("`")) if i % 2 and part.startswith("git ")]


@pytest.mark.parametrize("when", sorted(KILLED_AT))
@pytest.mark.parametrize(
    "action", ["back_edit", "back_commit", "other_edit", "stay_edit", "stay_commit"]
)
def test_a_dead_runs_rollback_keeps_what_the_user_did_since(
    ws: Path, onboard: Onboard, when: str, action: str
) -> None:
    repo = ws / "pytorch"
    give_user_work(repo)
    _kill_new_op(ws, onboard, when)
    _user_acts(repo, action)
    theirs = Tree.capture(repo)

    # A command that only reads says so in one line, and changes nothing.
    doctor = onboard("doctor", "--workspace", str(ws))
    assert doctor.returncode in (0, 1), doctor.stderr
    assert "stopped before it finished" in doctor.stderr
    assert "onboard recover" in doctor.stderr
    assert Tree.capture(repo) == theirs
    assert journals(ws / SCOPE_DIR)

    run = onboard("recover", "--workspace", str(ws), "--json")
    assert run.returncode == 0, run.stderr
    (recovered,) = run.json()["runs"]  # type: ignore[misc]
    notes = " ".join(recovered["notes"])
    now = Tree.capture(repo)

    # Every ref and stash entry of the user's, and HEAD where the user put it.
    assert (now.branch, now.head, now.stash) == (theirs.branch, theirs.head, theirs.stash)
    for ref, sha in theirs.refs.items():
        if ref != f"refs/heads/{BRANCH}":
            assert now.refs.get(ref) == sha, ref
    # Every byte of the user's edits and files.
    for path in ("torch/my_module_1.py", "later.txt", "notes.txt", "train.log"):
        assert now.files.get(path) == theirs.files.get(path), path
    if action.startswith("stay"):
        # The user works on onboard's branch now: it stays, and is named.
        assert now.refs.get(f"refs/heads/{BRANCH}") == theirs.refs[f"refs/heads/{BRANCH}"]
        assert BRANCH in notes and f"branch -D {BRANCH}" in notes
    else:
        # onboard's branch was still exactly onboard's: gone, as are its files.
        assert f"refs/heads/{BRANCH}" not in now.refs
        expected = {" M torch/my_module_1.py", "?? later.txt", "?? notes.txt"}
        if action.endswith("commit"):
            expected.discard(" M torch/my_module_1.py")
        assert _status(repo) == expected
    assert not journals(ws / SCOPE_DIR)
    assert not lock.is_held(ws / SCOPE_DIR / "lock")


def test_the_commands_a_kept_branch_note_names_run_as_printed(ws: Path, onboard: Onboard) -> None:
    repo = ws / "pytorch"
    give_user_work(repo)
    _kill_new_op(ws, onboard, "committed")
    _user_acts(repo, "stay_commit")
    run = onboard("recover", "--workspace", str(ws), "--json")
    notes = " ".join(run.json()["runs"][0]["notes"])  # type: ignore[index]
    (command,) = [c for c in _commands_in(notes) if "branch -D" in c]
    git(repo, "switch", "-q", "mine")
    subprocess.run(shlex.split(command), check=True, capture_output=True)
    assert f"refs/heads/{BRANCH}" not in UserState.capture(repo).refs


def test_the_next_writer_recovers_by_the_same_rules(ws: Path, onboard: Onboard) -> None:
    repo = ws / "pytorch"
    give_user_work(repo)
    _kill_new_op(ws, onboard, "dirty")
    _user_acts(repo, "back_edit")
    theirs = Tree.capture(repo)
    git(repo, "stash", "-q")  # new-op wants a clean tree: the user stashes their edit
    run = onboard("new-op", "my_other", "--workspace", str(ws))
    assert run.returncode == 0, run.stderr
    assert "stopped before it finished: undoing what is still its own" in run.stderr
    git(repo, "switch", "-q", "mine")
    git(repo, "stash", "pop", "-q")
    now = Tree.capture(repo)
    assert (
        now.head == theirs.head
        and now.files["torch/my_module_1.py"] == (theirs.files["torch/my_module_1.py"])
    )
    assert f"refs/heads/{BRANCH}" not in now.refs


# ---------------------------------------------------------------------------
# the user's git during a run


@pytest.mark.parametrize("where", ["checkout", "worktree"])
def test_a_commit_made_while_verify_runs_stays_on_its_branch(
    ws: Path, onboard: Onboard, where: str, tmp_path: Path
) -> None:
    repo = ws / "pytorch"
    give_user_work(repo)
    worktree = tmp_path / "wt"
    if where == "worktree":
        git(repo, "worktree", "add", "-q", str(worktree), "other")
    run = onboard.hold("transaction.Transaction.watch:1", "verify", "--workspace", str(ws))
    run.wait()  # verify is watching the checkout: its journal says so
    assert journals(ws / SCOPE_DIR)
    target, branch = (repo, "mine") if where == "checkout" else (worktree, "other")
    (target / "during.txt").write_text("committed while onboard verify ran\n")
    git(target, "add", "during.txt")
    git(target, "commit", "-q", "-m", "during verify")
    moved = git(target, "rev-parse", "HEAD")
    run.release()
    result = finish(run.process)
    assert result.returncode in (0, 1), result.stderr
    assert "restored" not in result.stderr
    assert git(repo, "rev-parse", f"refs/heads/{branch}") == moved
    assert_nothing_left(ws, onboard)


# ---------------------------------------------------------------------------
# the user's own operation in progress


def _conflict(repo: Path, operation: str) -> str:
    """Leave ``operation`` stopped halfway in ``repo``; returns its name in the refusal."""
    f = repo / "conflict.txt"
    git(repo, "switch", "-q", "-c", "theirs", "mine")
    f.write_text("theirs\n")
    git(repo, "add", "conflict.txt")
    git(repo, "commit", "-q", "-m", "theirs")
    git(repo, "switch", "-q", "mine")
    f.write_text("mine\n")
    git(repo, "add", "conflict.txt")
    git(repo, "commit", "-q", "-m", "mine")
    steps = {
        "rebase": (["rebase", "theirs"], "rebase"),
        "merge": (["merge", "theirs"], "merge"),
        "cherry-pick": (["cherry-pick", "theirs"], "cherry-pick"),
        "bisect": (["bisect", "start", "HEAD", "HEAD~3"], "bisect"),
    }
    if operation == "am":
        patch = subprocess.run(
            ["git", "-C", str(repo), "format-patch", "-1", "--stdout", "theirs"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["git", "-C", str(repo), "am"], input=patch, capture_output=True)
        return "am"
    if operation == "revert":
        # Reverting "mine" under a later change of the same line stops on a conflict.
        f.write_text("edited again\n")
        git(repo, "commit", "-q", "-am", "again")
        subprocess.run(
            ["git", "-C", str(repo), "revert", "--no-edit", "HEAD~1"], capture_output=True
        )
        return "revert"
    args, name = steps[operation]
    subprocess.run(["git", "-C", str(repo), *args], capture_output=True)
    return name


@pytest.mark.parametrize("operation", ["rebase", "merge", "cherry-pick", "revert", "am", "bisect"])
def test_no_writer_starts_inside_the_users_own_operation(
    ws: Path, onboard: Onboard, operation: str
) -> None:
    repo = ws / "pytorch"
    give_user_work(repo)
    name = _conflict(repo, operation)
    theirs = Tree.capture(repo)
    # git's own advice for abandoning it, as `git status` gives it
    status = subprocess.run(
        ["git", "-C", str(repo), "status"], capture_output=True, text=True, check=True
    ).stdout
    (abandon,) = set(re.findall(r'use "git ([a-z-]+ --abort|bisect reset)"', status))
    run = onboard("new-op", "my_frac", "--workspace", str(ws))
    assert run.returncode == 1, run.stderr
    assert "is in progress in" in run.stderr and name in run.stderr
    assert f"git -C {repo} {name}" in run.stderr  # how to finish or abort it, runnable
    assert f"`git -C {repo} {abandon}`" in run.stderr
    assert Tree.capture(repo) == theirs
    assert_nothing_left(ws, onboard)


# ---------------------------------------------------------------------------
# signals a terminal sends, and the user's hooks


@pytest.mark.parametrize(
    "point", ["workflows.newop.apply._write_file:2:HUP", "git.refs.update_ref:1:QUIT"]
)
def test_a_closed_terminal_rolls_new_op_back(ws: Path, onboard: Onboard, point: str) -> None:
    repo = ws / "pytorch"
    give_user_work(repo)
    before = UserState.capture(repo)
    run = onboard("new-op", "my_frac", "--workspace", str(ws), **at(point))
    assert run.returncode == 130, run.stderr
    before.assert_kept(UserState.capture(repo))
    assert f"refs/heads/{BRANCH}" not in UserState.capture(repo).refs
    assert_nothing_left(ws, onboard)


def test_a_closed_terminal_during_verify_leaves_no_process(ws: Path, onboard: Onboard) -> None:
    run = onboard.start("verify", "--workspace", str(ws))
    read_until(run, "started: ")  # the workspace's nox session runs its checks
    run.send_signal(signal.SIGHUP)
    assert finish(run, timeout=60).returncode == 130
    assert_nothing_left(ws, onboard)


def _failing_hook(repo: Path, tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    hook = hooks / "post-checkout"
    hook.write_text("#!/bin/sh\necho 'lfs: smudge filter failed' >&2\nexit 1\n")
    hook.chmod(0o755)
    git(repo, "config", "core.hooksPath", str(hooks))


def test_a_failing_post_checkout_hook_is_named_not_taken_for_a_failed_switch(
    ws: Path, onboard: Onboard, tmp_path: Path
) -> None:
    repo = ws / "pytorch"
    give_user_work(repo)
    _failing_hook(repo, tmp_path)
    before = UserState.capture(repo)
    interrupted = onboard(
        "new-op", "my_frac", "--workspace", str(ws), **at("workflows.newop.apply._write_file:2:INT")
    )
    assert interrupted.returncode == 130, interrupted.stderr
    assert "lfs: smudge filter failed" in interrupted.stderr
    before.assert_kept(UserState.capture(repo))
    assert_nothing_left(ws, onboard)
    run = onboard("new-op", "my_frac", "--workspace", str(ws), "--json")
    assert run.returncode == 0, run.stderr
    notes = " ".join(run.json()["notes"])  # type: ignore[arg-type]
    assert "post-checkout hook" in notes and "lfs: smudge filter failed" in notes
    assert git(repo, "symbolic-ref", "--short", "HEAD") == BRANCH
    assert_nothing_left(ws, onboard)


# ---------------------------------------------------------------------------
# a damaged journal, and line endings


@pytest.mark.parametrize(
    "text", ['{"entries": "x"}', "[]", '{"command": 5}', "\x00\x01 not json", '{"command": "x"']
)
def test_a_damaged_journal_is_no_bug(ws: Path, onboard: Onboard, text: str) -> None:
    (ws / SCOPE_DIR).mkdir(exist_ok=True)
    (ws / SCOPE_DIR / JOURNAL).write_text(text)
    doctor = onboard("doctor", "--workspace", str(ws))
    assert doctor.returncode in (0, 1), doctor.stderr
    assert "Traceback" not in doctor.stderr
    run = onboard("recover", "--workspace", str(ws), "--json")
    assert run.returncode == 0, run.stderr
    (found,) = run.json()["runs"]  # type: ignore[misc]
    assert found["set_aside"] and Path(found["set_aside"]).read_text() == text
    assert onboard("new-op", "my_frac", "--workspace", str(ws)).returncode == 0


def test_damaged_entries_are_left_alone_and_said(ws: Path, onboard: Onboard) -> None:
    kept = ws / "pytorch" / "kept.txt"
    kept.write_text("not onboard's\n")
    journal = {
        "command": "new-op x",
        "pid": 1,
        "committed": False,
        "entries": [{"kind": "file", "path": str(kept)}, {"kind": "nonsense"}, 7],
    }
    (ws / SCOPE_DIR).mkdir(exist_ok=True)
    (ws / SCOPE_DIR / JOURNAL).write_text(json.dumps(journal))
    run = onboard("recover", "--workspace", str(ws), "--json")
    assert run.returncode == 0, run.stderr
    assert "3 entries of its journal were damaged" in " ".join(run.json()["runs"][0]["notes"])  # type: ignore[index]
    assert kept.read_text() == "not onboard's\n"


def test_a_rolled_back_file_keeps_its_exact_bytes_under_autocrlf(
    ws: Path, onboard: Onboard
) -> None:
    repo = ws / "pytorch"
    give_user_work(repo)
    git(repo, "config", "core.autocrlf", "true")  # set after checkout: files stay LF on disk
    yaml = next(repo.rglob("native_functions.yaml"))
    before = yaml.read_bytes()
    assert b"\r\n" not in before
    _kill_new_op(ws, onboard, "committed")
    run = onboard("recover", "--workspace", str(ws))
    assert run.returncode == 0, run.stderr
    assert yaml.read_bytes() == before
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "mine"


def test_recover_with_nothing_to_do_says_so(ws: Path, onboard: Onboard) -> None:
    run = onboard("recover", "--workspace", str(ws))
    assert run.returncode == 0 and "Nothing to recover" in run.stdout, run.stderr


def test_recover_removes_the_worktree_of_an_ab_killed_outright(
    ws: Path, onboard: Onboard, tmp_path: Path
) -> None:
    repo = ws / "pytorch"
    script = tmp_path / "bench.py"
    script.write_text("print('x')\n")
    run = onboard(
        "ab",
        str(script),
        "--a",
        "installed",
        "--b",
        "commit:HEAD",
        "--workspace",
        str(ws),
        **at("git.worktree.add:1:KILL"),
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    listed = git(repo, "worktree", "list", "--porcelain")
    assert listed.count("worktree ") == 2  # the checkout, and the dead run's
    mine = tmp_path / "my-worktree"
    git(repo, "worktree", "add", "-q", "--detach", str(mine))  # the user's own: kept
    result = onboard("recover", "--workspace", str(ws), "--json")
    assert result.returncode == 0, result.stderr
    assert len(result.json()["swept"]) >= 1  # type: ignore[arg-type]
    trees = git(repo, "worktree", "list", "--porcelain")
    assert trees.count("worktree ") == 2 and str(mine) in trees
    assert not list((ws / ".onboard" / "ab").glob("run-*"))


# ---------------------------------------------------------------------------
# onboard itself killed outright while a program of the user's runs

# A program that starts a child the ordinary way (it keeps the environment), forks
# one more that leaves the session and drops its whole environment, writes the
# three pids down, and waits.
_RUNS_ON = """\
import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "300"])
pid = os.fork()
if pid == 0:
    os.setsid()
    os.execve("/bin/sleep", ["sleep", "301"], {})
with open(sys.argv[1] + ".part", "w") as fh:
    fh.write(f"{os.getpid()} {child.pid} {pid}\\n")
os.replace(sys.argv[1] + ".part", sys.argv[1])
time.sleep(300)
"""


def _mechanism(asked: str) -> str:
    """What a run asked for ``asked`` uses on this machine (a cgroup only where one can
    be written here)."""
    from onboard.proc import contain

    if asked == contain.SESSION:
        return asked
    contain.decide_again()
    return contain.mechanism()[0]


def _killed_mid_trace(onboard: Onboard, tmp_path: Path, asked: str) -> list[int]:
    """`onboard trace -- python prog.py` SIGKILLed while the program runs; its pids."""
    from fixtures.events import gone

    script = tmp_path / "prog.py"
    script.write_text(_RUNS_ON)
    pidfile = tmp_path / "pids"
    run = onboard.start(
        "trace", "--", sys.executable, str(script), str(pidfile), ONBOARD_CONTAINMENT=asked
    )
    for _ in range(1200):
        if pidfile.exists() or run.poll() is not None:
            break
        time.sleep(0.1)
    assert pidfile.exists(), finish(run).stderr
    program, child, detached = (int(p) for p in pidfile.read_text().split())
    # Without a cgroup, the run's record learns what the program started as it goes:
    # the kill comes once it names the one that left the session.
    for _ in range(1200):
        if _recorded(detached) or _mechanism(asked) == "cgroup":
            break
        time.sleep(0.1)
    run.send_signal(signal.SIGKILL)
    assert finish(run).returncode == -signal.SIGKILL
    # The program itself dies with onboard (PR_SET_PDEATHSIG).
    assert gone(program, 30)
    return [child, detached]


def _recorded(pid: int) -> bool:
    from onboard.proc.records import runs_dir

    for path in runs_dir().glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            if pid in [e["pid"] for e in json.loads(path.read_text())["processes"]]:
                return True
    return False


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


@pytest.mark.parametrize("asked", ["cgroup", "session"])
def test_the_next_command_stops_what_a_killed_run_left_running(
    onboard: Onboard, tmp_path: Path, asked: str
) -> None:
    child, detached = _killed_mid_trace(onboard, tmp_path, asked)
    try:
        assert _running(child)  # the dead run's, still running
        after = onboard("--version")
        assert after.returncode == 0, after.stderr
        assert "was killed before it ended and left" in after.stderr
        assert f"pid {child}, `sleep 300`" in after.stderr
        assert not _running(child)
        # The one that dropped its environment and session: in the run's cgroup, or
        # (without one) in the record as the run learnt it.
        assert f"pid {detached}, `sleep 301`" in after.stderr
        assert not _running(detached)
        again = onboard("--version")
        assert "was killed before it ended" not in again.stderr  # the record is gone
    finally:
        for pid in (child, detached):  # (a failed test leaves neither running)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_recover_stops_what_a_killed_run_left_running_and_says_so(
    onboard: Onboard, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    child, detached = _killed_mid_trace(onboard, tmp_path, "cgroup")
    try:
        run = onboard("recover", "--repo", str(repo), "--json")
        assert run.returncode == 0, run.stderr
        (stopped,) = run.json()["stopped"]  # type: ignore[misc]
        assert child in [p["pid"] for p in stopped["stopped"]]
        assert not _running(child)
        text = onboard("recover", "--repo", str(repo))
        assert "Nothing to recover" in text.stdout  # swept once, and its record went
    finally:
        for pid in (child, detached):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------------------
# `onboard bisect` killed outright: its bisect is ended, a bisect of the user's never


def _killed_mid_bisect(info_path: Path, first: str, tmp_path: Path) -> None:
    """`onboard bisect` SIGKILLed while its first step's repro runs."""
    from fixtures.events import Fifo

    tmp_path.mkdir(exist_ok=True)
    runs = tmp_path / "runs.txt"
    started = Fifo(tmp_path / "started")
    repro = tmp_path / "repro.py"
    # The pre-flight's two runs end at once; the first step's run waits to be killed.
    repro.write_text(
        "import os, sys, time\n"
        f"with open({str(runs)!r}, 'a') as fh:\n    fh.write(f'{{os.getpid()}}\\n')\n"
        f"with open({str(started)!r}, 'w') as fh:\n    fh.write(f'{{os.getpid()}}\\n')\n"
        f"time.sleep(60 if len(open({str(runs)!r}).read().split()) > 2 else 0)\n"
        # the fixture's regression module, from the checkout the repro runs against
        "import torch._onboard_regression as r\n"
        "sys.exit(0 if r.check() else 1)\n"
    )
    run = subprocess.Popen(
        [sys.executable, "-m", "onboard", "bisect", str(repro), "--good", first,
         "--repo", str(info_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        start_new_session=True,
    )  # fmt: skip
    try:
        for n in (1, 2, 3):
            started.line(f"the repro's run {n}", process=run)
    finally:
        started.close()
    assert (info_path / ".git" / "BISECT_START").exists()  # really mid-bisect
    run.send_signal(signal.SIGKILL)
    assert finish(run).returncode == -signal.SIGKILL
    assert (info_path / ".git" / "BISECT_START").exists()  # what SIGKILL leaves


def _head(repo: Path) -> tuple[str, str]:
    branch = subprocess.run(
        ["git", "-C", str(repo), "symbolic-ref", "-q", "--short", "HEAD"],
        capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    return git(repo, "rev-parse", "HEAD"), branch


def test_recover_ends_the_bisect_a_killed_onboard_bisect_left(
    pytorch_repo_factory: Callable[..., Any], tmp_path: Path, onboard: Onboard
) -> None:
    info = pytorch_repo_factory(commits=24, regression_at=15, seed_from_wheel=False)
    before = _head(info.path)
    assert before[1]  # on a branch: the reset must come back to it, not detached
    _killed_mid_bisect(info.path, info.commits[0], tmp_path)
    assert _head(info.path) != before  # detached at the step's commit
    run = onboard("recover", "--repo", str(info.path), "--json")
    assert run.returncode == 0, run.stderr
    notes = " ".join(run.json()["runs"][0]["notes"])  # type: ignore[index]
    assert "ended the `git bisect`" in notes and before[1] in notes
    assert _head(info.path) == before
    assert not list((info.path / ".git").glob("BISECT_*"))
    assert git(info.path, "status", "--porcelain", "--untracked-files=no") == ""


def test_recover_leaves_a_bisect_the_user_started_alone(
    pytorch_repo_factory: Callable[..., Any], tmp_path: Path, onboard: Onboard
) -> None:
    info = pytorch_repo_factory(commits=24, regression_at=15, seed_from_wheel=False)
    _killed_mid_bisect(info.path, info.commits[0], tmp_path)
    # The user ends onboard's bisect and starts one of their own on the same branch.
    git(info.path, "bisect", "reset")
    git(info.path, "bisect", "start", "HEAD", info.commits[0])
    theirs = (info.path / ".git" / "BISECT_LOG").read_text(), _head(info.path)
    run = onboard("recover", "--repo", str(info.path), "--json")
    assert run.returncode == 0, run.stderr
    notes = " ".join(run.json()["runs"][0]["notes"])  # type: ignore[index]
    assert "left the bisect in progress" in notes
    assert ((info.path / ".git" / "BISECT_LOG").read_text(), _head(info.path)) == theirs


def test_the_next_bisect_ends_the_one_a_killed_onboard_bisect_left(
    pytorch_repo_factory: Callable[..., Any], tmp_path: Path
) -> None:
    info = pytorch_repo_factory(commits=24, regression_at=15, seed_from_wheel=False)
    before = _head(info.path)
    _killed_mid_bisect(info.path, info.commits[0], tmp_path / "killed")
    repro = tmp_path / "again.py"
    repro.write_text(
        "import sys, torch._onboard_regression as r\nsys.exit(0 if r.check() else 1)\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "onboard", "bisect", str(repro), "--good", info.commits[0],
         "--repo", str(info.path), "--json"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr  # not refused as "a bisect is in progress"
    assert "stopped before it finished" in run.stderr
    assert json.loads(run.stdout)["commits"]["culprit"]["sha"] == info.regression_sha
    assert _head(info.path) == before
