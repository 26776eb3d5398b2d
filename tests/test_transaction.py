"""The pieces under the workspace's safety: files, lock, transaction, signals, reaping.

The fault matrix (test_workspace_safety.py) runs whole commands; these tests
pin each mechanism on its own, in process, including the failures a command
cannot easily be made to hit (a full disk mid-write, a bug that deletes a
ref, a grandchild that leaves onboard's process group).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fixtures.user_state import UserState, git

from onboard import cache, files, journalling, lock, proc, signals, transaction
from onboard.errors import BadInput, OnboardError, ProcTimeout
from onboard.report import Reporter


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "ws" / "pytorch"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "reference")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "switch", "-q", "-c", "mine")
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "mine")
    (repo / "b.txt").write_text("stashed\n")
    git(repo, "stash", "push", "-q")
    return repo


def _enospc_after(monkeypatch: pytest.MonkeyPatch, n_bytes: int) -> None:
    real = os.write
    written = [0]

    def write(fd: int, data: bytes) -> int:
        if written[0] + len(data) > n_bytes:
            raise OSError(errno.ENOSPC, "No space left on device")
        written[0] += len(data)
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)


def test_a_full_disk_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    target = folder / "onboard.json"
    target.write_text("old\n")
    _enospc_after(monkeypatch, 3)
    with pytest.raises(OSError) as info:
        files.write_text(target, "new content\n")
    assert info.value.errno == errno.ENOSPC
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in folder.iterdir()) == ["onboard.json"]
    paragraph = files.os_error(info.value, doing="writing the config")
    assert paragraph.exit_code == 1 and "Free some space" in (paragraph.next_step or "")


def test_a_cache_write_on_a_full_disk_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cache" / "index.json"
    _enospc_after(monkeypatch, 10)
    cache.write_json(path, {"ops": ["x" * 1000]})  # a cache may fail: it only costs time
    assert list(path.parent.iterdir()) == []


def test_a_read_only_folder_is_bad_usage() -> None:
    exc = OSError(errno.EROFS, "Read-only file system", "/ws/onboard.json")
    err = files.os_error(exc, doing="writing the config")
    assert isinstance(err, BadInput) and "/ws/onboard.json" in err.message


# --------------------------------------------------------------------------
# the lock


_HOLD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from onboard import lock
    with lock.acquire(Path(sys.argv[1]), command="new-op my_frac"):
        print("held", flush=True)
        time.sleep(30)
    """
)


def test_a_second_writer_waits_then_names_the_holder(tmp_path: Path) -> None:
    path = tmp_path / ".onboard" / "lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        started = time.monotonic()
        with pytest.raises(lock.LockBusy) as info, lock.acquire(path, command="verify", wait=0.3):
            pass
        assert time.monotonic() - started >= 0.3  # it waited before giving up
        assert f"pid {holder.pid}" in info.value.message
        assert "`new-op my_frac`" in info.value.message
        assert "ONBOARD_LOCK_WAIT" in (info.value.next_step or "")
    finally:
        holder.kill()
        holder.wait()
    # The kernel drops a dead holder's lock: never stale.
    with lock.acquire(path, command="verify", wait=0):
        assert lock.is_held(path)
    assert not lock.is_held(path)


def test_work_the_holder_starts_runs_inside_its_lock(tmp_path: Path) -> None:
    path = tmp_path / ".onboard" / "lock"
    child = (
        "import sys\nfrom pathlib import Path\nfrom onboard import lock\n"
        "with lock.acquire(Path(sys.argv[1]), command='nox -s verify', wait=0) as h:\n"
        "    print('inherited' if h.fd is None else 'own')\n"
    )
    with lock.acquire(path, command="verify"), lock.acquire(path, command="again"):
        out = proc.run([sys.executable, "-c", child, str(path)]).stdout
    assert out.strip() == "inherited"
    # Without the holder's token in its environment, the same child is refused.
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        refused = subprocess.run(
            [sys.executable, "-c", child, str(path)], capture_output=True, text=True
        )
        assert refused.returncode != 0 and "LockBusy" in refused.stderr
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_in_a_read_only_folder_is_bad_usage(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        path = Path("/proc/onboard-test/lock")  # not creatable, even for root
    else:
        (tmp_path / "ro").mkdir(mode=0o555)
        path = tmp_path / "ro" / ".onboard" / "lock"
    with pytest.raises(OnboardError), lock.acquire(path, command="setup"):
        pass


# --------------------------------------------------------------------------
# the transaction


def _scope(repo: Path) -> Path:
    return repo.parent / ".onboard"


def test_a_failure_rolls_back_exactly_what_the_run_did(repo: Path) -> None:
    before = UserState.capture(repo)
    (repo / "notes.txt").write_text("mine\n")
    existing = repo.parent / "onboard.json"
    existing.write_text("{}\n")
    with pytest.raises(RuntimeError), transaction.begin(_scope(repo), command="t") as tx:
        tx.watch(repo)
        tx.switch_new_branch(repo, "onboard/new-op-x")
        files.make_dirs(repo / "aten" / "new")
        files.write_text(repo / "aten" / "new" / "X.cpp", "// new\n")
        files.write_text(existing, '{"changed": true}\n')
        files.write_text(repo / "a.txt", "edited\n")
        raise RuntimeError("boom")
    after = UserState.capture(repo)
    before.assert_kept(after)
    assert "refs/heads/onboard/new-op-x" not in after.refs
    assert not (repo / "aten").exists()
    assert existing.read_text() == "{}\n" and (repo / "notes.txt").read_text() == "mine\n"
    assert git(repo, "status", "--porcelain") == "?? notes.txt"
    assert not (_scope(repo) / transaction.JOURNAL).exists()


def test_the_audit_puts_back_a_users_ref_a_bug_deleted(repo: Path) -> None:
    from onboard import git as adapter

    before = UserState.capture(repo)
    reporter = Reporter()
    with transaction.begin(_scope(repo), command="t", reporter=reporter) as tx:
        tx.watch(repo)
        # What a bug might do, through onboard's own git adapter.
        adapter.core.git(repo, "branch", "-q", "-D", "reference")
        adapter.core.git(repo, "stash", "drop", "-q")
        adapter.core.git(repo, "update-ref", "refs/heads/mine", "HEAD~1")
    before.assert_kept(UserState.capture(repo))
    assert any("restored refs/heads/reference" in m for m in reporter.messages)
    assert any("restored refs/heads/mine" in m for m in reporter.messages)
    assert any("restored stash entry" in m for m in reporter.messages)


def test_the_audit_leaves_what_the_users_own_git_did_meanwhile(repo: Path) -> None:
    reporter = Reporter()
    with transaction.begin(_scope(repo), command="t", reporter=reporter) as tx:
        tx.watch(repo)
        # The user, in another terminal, while onboard runs.
        git(repo, "branch", "-q", "-D", "reference")
        git(repo, "stash", "drop", "-q")
        (repo / "new.txt").write_text("mine\n")
        git(repo, "add", "new.txt")
        git(repo, "commit", "-q", "-m", "my commit during the run")
    now = UserState.capture(repo)
    assert "refs/heads/reference" not in now.refs
    assert now.stash == ()
    assert git(repo, "log", "-1", "--format=%s") == "my commit during the run"
    assert not [m for m in reporter.messages if "restored" in m]


def test_a_created_file_the_user_changed_meanwhile_is_kept(repo: Path) -> None:
    path = repo.parent / "PR_DRAFT.md"
    tx = transaction.Transaction(_scope(repo), "t", Reporter())
    _scope(repo).mkdir()
    with journalling.opened(tx):
        files.write_text(path, "onboard's draft\n")
    path.write_text("the user edited it\n")
    tx.rollback()
    assert path.read_text() == "the user edited it\n"
    assert any("kept" in note and "changed after" in note for note in tx.notes)


def test_a_journal_left_by_a_killed_run_is_rolled_back_first(repo: Path) -> None:
    scope = _scope(repo)
    scope.mkdir()
    before = git_snapshot(repo)
    git(repo, "branch", "onboard/new-op-y")  # what the dead run made
    created = repo / "Y.cpp"
    created.write_text("// half\n")
    import hashlib

    journal = {
        "pid": 999999,
        "command": "new-op y",
        "committed": False,
        "entries": [
            {"kind": "repo", "repo": str(repo), **before},
            {
                "kind": "ref",
                "repo": str(repo),
                "ref": "refs/heads/onboard/new-op-y",
                "values": [git(repo, "rev-parse", "HEAD")],
            },
            {
                "kind": "file",
                "path": str(created),
                "backup": None,
                "sha": hashlib.sha256(b"// half\n").hexdigest(),
            },
        ],
    }
    (scope / transaction.JOURNAL).write_text(json.dumps(journal))
    reporter = Reporter()
    with transaction.begin(scope, command="next", reporter=reporter):
        pass
    assert "refs/heads/onboard/new-op-y" not in UserState.capture(repo).refs
    assert not created.exists()
    assert any("`onboard new-op y` (pid 999999) stopped" in m for m in reporter.messages)


def git_snapshot(repo: Path) -> dict[str, object]:
    from onboard import git as git_adapter

    return git_adapter.refs.snapshot(repo)


def test_signals_inside_a_critical_section_wait_for_its_end() -> None:
    signals.reset()
    order = []
    with pytest.raises(KeyboardInterrupt), signals.handlers():
        with signals.critical():
            os.kill(os.getpid(), signal.SIGINT)
            # Python runs the handler between two bytecodes, not inside kill(); a sleep
            # is cut short by it (had it raised here, no line would follow). No event
            # says "the handler has run": this is the moment it runs in.
            time.sleep(0.05)
            order.append("git finished")
        order.append("not reached")
    assert order == ["git finished"]
    signals.reset()
    with signals.handlers():
        signals.work_complete()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler runs here, as above
    assert signals.late_signal() == signal.SIGTERM
    signals.reset()


# --------------------------------------------------------------------------
# children


_ESCAPE = textwrap.dedent(
    """
    import subprocess, sys, time
    # A grandchild in a session of its own: a process-group kill misses it.
    subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        start_new_session=True,
        stdout=subprocess.DEVNULL if sys.argv[1] == "detach" else None,
        stderr=subprocess.DEVNULL if sys.argv[1] == "detach" else None,
    )
    print("started", flush=True)
    if sys.argv[1] == "hang":
        time.sleep(600)
    """
)


def test_a_stopped_child_takes_its_escaped_descendants_along() -> None:
    # The grandchild holds the pipe proc.run reads: without stopping it too,
    # onboard would wait the grandchild's 600 s.
    with proc.reaping():
        token = os.environ[proc.RUN_ENV]
        with pytest.raises(ProcTimeout):
            proc.run([sys.executable, "-c", _ESCAPE, "hang"], timeout=3)
        assert proc.marked(token) == []


def test_nothing_started_under_onboard_outlives_it() -> None:
    with proc.reaping():
        token = os.environ[proc.RUN_ENV]
        out = proc.run([sys.executable, "-c", _ESCAPE, "detach"], timeout=60)
        assert out.stdout == "started\n"
        # the grandchild runs on after its parent exited (exec'd, marked, before "started")
        assert proc.marked(token)
    assert proc.marked(token) == []


def test_a_closed_pipe_ends_with_zero(tmp_path: Path) -> None:
    script = (
        "import sys\nfrom onboard.crash import run_cli\nimport click\n"
        "@click.command()\ndef lots():\n"
        "    for i in range(200000):\n        click.echo(f'line {i}')\n"
        "sys.exit(run_cli(lots, []))\n"
    )
    shell = f'{sys.executable} -c "$SCRIPT" | head -1; echo "status=${{PIPESTATUS[0]}}"'
    out = subprocess.run(
        ["bash", "-c", shell], env={**os.environ, "SCRIPT": script}, capture_output=True, text=True
    )
    assert out.stdout.splitlines() == ["line 0", "status=0"]
    assert "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr
