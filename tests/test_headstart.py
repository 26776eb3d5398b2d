"""The head start: `onboard harvest`'s `git status` begins before Click is imported,
is used only for the tree the command resolves, and is stopped (SIGTERM, so
git removes its index.lock) whenever it is not used; ``proc.start`` under it."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from onboard import headstart, proc
from onboard import workspace as ws_mod
from onboard.crash import EXIT_INTERRUPT, EXIT_USAGE, run_cli
from onboard.entry import _cli
from onboard.errors import ProcError, ProcTimeout
from onboard.scope import JOURNAL, scope_of
from onboard.workflows import harvest as hv

COMMIT = "cf30153c4c131c8164ee7798e5022d810682e2cb"


def _repo(root: Path, text: str) -> Path:
    (root / "torch").mkdir(parents=True)
    (root / "torch" / "a.py").write_text(text)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "Import"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    return root


def _workspace(root: Path, checkout: Path, *, kind: str = ws_mod.REFERENCE) -> Path:
    root.mkdir()
    ws_mod.save(
        ws_mod.Workspace(
            root=root, torch_version="2.13.0+cpu", commit=COMMIT, commit_kind="release",
            build_prefix=None, python=sys.executable, checkout=os.path.relpath(checkout, root),
            checkout_kind=kind,
        )
    )  # fmt: skip
    return root


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace (the current folder) whose checkout has two TODOs."""
    repo = _repo(tmp_path / "pytorch", "# TODO: first\nx = 1  # FIXME: second\n")
    root = _workspace(tmp_path / "ws", repo)
    monkeypatch.chdir(root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return root


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


_TRACED = textwrap.dedent(
    """
    import sys
    events = []

    def hook(event, args):
        if event == "import" and args[0] == "click":
            events.append("click imported")
        elif event == "subprocess.Popen":
            argv = [str(a) for a in args[1]]
            name = argv[0].rsplit("/", 1)[-1]
            if name == "git":
                argv = argv[2:] if argv[1] == "-C" else argv
                name = f"git {argv[1]}"
            events.append(name)

    sys.addaudithook(hook)
    from onboard.entry import main
    try:
        main(sys.argv[1:])
    finally:
        sys.stderr.write("EVENTS " + json.dumps(events) + "\\n")
    """
).replace("import sys\n", "import json, sys\n", 1)


def _traced(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    run = subprocess.run(
        [sys.executable, "-c", _TRACED, *args], cwd=cwd, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    line = next(ln for ln in run.stderr.splitlines() if ln.startswith("EVENTS "))
    return run, json.loads(line.removeprefix("EVENTS "))


def test_plain_harvest_starts_git_status_before_click_loads(ws: Path) -> None:
    run, events = _traced(["harvest", "--json", "--offline"], ws)
    assert run.returncode == 0, run.stderr
    # Started ahead, and that one is the one used: no second `git status`. (The
    # first run searches the tree: ripgrep after that.)
    assert events[:2] == ["git status", "click imported"] and events.count("git status") == 1
    first = json.loads(run.stdout)
    assert sorted(i["text"] for i in first["items"]) == ["FIXME: second", "TODO: first"]
    for _ in range(200):  # the detached copy writes the cache after answering
        run, events = _traced(["harvest", "--json", "--offline"], ws)
        if json.loads(run.stdout)["summary"]["cache"] == "tree":
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the result was never cached")
    assert events == ["git status", "click imported"]
    assert json.loads(run.stdout)["items"] == first["items"]


def test_a_warm_run_in_a_clone_asks_git_only_for_its_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blame ages and history come from the cache too: one git call in all."""
    repo = _repo(tmp_path / "pytorch", "# TODO: first\n")
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "2nd"],
                   check=True)  # fmt: skip
    root = _workspace(tmp_path / "ws", repo, kind=ws_mod.CLONE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    run, events = _traced(["harvest", "--json"], root)
    assert run.returncode == 0, run.stderr
    assert "git blame" in events and json.loads(run.stdout)["items"][0]["blame"]["age_days"] >= 0
    for _ in range(200):
        run, events = _traced(["harvest", "--json"], root)
        data = json.loads(run.stdout)
        if data["summary"]["cache"] == "tree":
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the result was never cached")
    assert events == ["git status", "click imported"]
    assert data["items"][0]["blame"]["age_days"] >= 0


def test_options_that_choose_the_tree_leave_it_to_the_command(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = (tmp_path / "pytorch").resolve()
    assert headstart._harvest_root(["harvest"]) == checkout
    assert headstart._harvest_root(["harvest", "--json", "--tag", "TODO", "-v"]) == checkout
    for args in (
        [],
        ["where", "add"],
        ["--version"],
        ["harvest", "--repo", str(checkout)],
        ["harvest", f"--workspace={ws}"],
        ["harvest", "--no-cache"],
        ["harvest", "--searcher", "git"],
        ["harvest", "show", "abcd"],
        ["harvest", "--help"],
    ):
        assert headstart._harvest_root(args) is None, args
    # A run that died in the workspace is rolled back by the command first.
    scope_of(ws).mkdir(exist_ok=True)
    (scope_of(ws) / JOURNAL).write_text("{}")
    assert headstart._harvest_root(["harvest"]) is None
    (scope_of(ws) / JOURNAL).unlink()
    # Outside any workspace, and with a broken one: no guess, no error.
    monkeypatch.chdir(tmp_path)
    assert headstart._harvest_root(["harvest"]) is None
    monkeypatch.chdir(ws)
    (ws / ws_mod.CONFIG_NAME).write_text("{not json")
    assert headstart._harvest_root(["harvest"]) is None


def test_a_head_start_for_another_tree_is_stopped_and_never_used(ws: Path, tmp_path: Path) -> None:
    other = _repo(tmp_path / "other", "# HACK: elsewhere\n")
    with headstart.begin(["harvest"]):
        (ahead,) = headstart._started.values()
        result = hv.harvest(repo=str(other), cache=tmp_path / "cache", enrich_results=False)
        assert headstart._started == {}
        assert ahead.pid is not None and _gone(ahead.pid)
    assert result.scan.target.root == other.resolve()
    assert [i.text for i in result.items] == ["HACK: elsewhere"]


def test_a_head_start_the_command_never_takes_is_stopped(ws: Path, tmp_path: Path) -> None:
    """Bad arguments end the run before harvest asks for the tree's state."""
    seen: list[int] = []

    @contextlib.contextmanager
    def watched(args: list[str]) -> Iterator[None]:
        with headstart.begin(args):
            seen.extend(p.pid for p in headstart._started.values() if p.pid is not None)
            yield

    assert run_cli(_cli, ["harvest", "--limit", "-1"], head_start=watched) == EXIT_USAGE
    assert len(seen) == 1 and _gone(seen[0]) and headstart._started == {}
    assert not (tmp_path / "pytorch" / ".git" / "index.lock").exists()


def test_ctrl_c_during_the_head_start_is_an_interrupt(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    @contextlib.contextmanager
    def interrupted(args: list[str]) -> Iterator[None]:
        raise KeyboardInterrupt
        yield  # pragma: no cover

    assert run_cli(_cli, ["harvest", "--json"], head_start=interrupted) == EXIT_INTERRUPT
    out, err = capsys.readouterr()
    assert "Interrupted." in err and json.loads(out)["error"]["kind"] == "Interrupted"


def test_started_commands_answer_like_run(tmp_path: Path) -> None:
    running = proc.start(["sh", "-c", "echo out; echo err >&2; exit 3"], check=False)
    result = running.result()
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert running.result() is result  # asked again: the same answer
    with pytest.raises(ProcError) as failed:
        proc.start(["sh", "-c", "exit 4"], what="the step").result()
    assert "the step failed (exit 4)" in failed.value.message
    slow = proc.start(["sleep", "30"], timeout=0.3)
    with pytest.raises(ProcTimeout):
        slow.result()
    assert _gone(slow.pid)


def test_stopping_a_started_command_lets_it_clean_up(tmp_path: Path) -> None:
    """SIGTERM first (git removes its index.lock on it), not SIGKILL."""
    lock = tmp_path / "index.lock"
    ready = tmp_path / "ready"
    script = (
        f"trap 'rm -f {lock}; exit 143' TERM; touch {lock}; touch {ready}; "
        "while :; do sleep 0.05; done"
    )
    running = proc.start(["sh", "-c", script])
    for _ in range(200):
        if ready.exists():
            break
        time.sleep(0.01)
    assert lock.exists()
    running.stop()
    assert not lock.exists() and _gone(running.pid)
    running.stop()  # stopping again is harmless


def test_a_deadline_does_not_poll_for_the_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a timeout, Popen waits for a child's exit by sleeping in steps that double
    from 1 ms; the deadline is a timer instead, and the exit is waited for as it comes."""
    import threading

    slept: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda s: (slept.append(s), real_sleep(s))[1])
    # The pipes close 50 ms before the exit, as a child's do a moment before it ends.
    result = proc.run(["sh", "-c", "exec >&- 2>&-; sleep 0.05; exit 7"], timeout=30, check=False)
    assert result.returncode == 7 and slept == []
    assert threading.active_count() == 1  # the timer is gone: a later fork is safe
