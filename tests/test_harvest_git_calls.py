"""What a warm `onboard harvest` asks git: its `git status` alone (once), in a
reference tree and in a clone, whose blame ages and history come from the
cache too. Seen from outside, with an audit hook on every process started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from onboard import workspace as ws_mod

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


# The command's process with a hook that notes every git it starts ("git status").
_TRACED = textwrap.dedent(
    """
    import json, sys
    started = []

    def hook(event, args):
        if event == "subprocess.Popen":
            argv = [str(a) for a in args[1]]
            if argv[0].rsplit("/", 1)[-1] == "git":
                argv = argv[3:] if argv[1] == "-C" else argv[1:]
                started.append(f"git {argv[0]}")

    sys.addaudithook(hook)
    from onboard.entry import main
    try:
        main(sys.argv[1:])
    finally:
        sys.stderr.write("STARTED " + json.dumps(started) + "\\n")
    """
)


def _traced(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    run = subprocess.run(
        [sys.executable, "-c", _TRACED, *args], cwd=cwd, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    line = next(ln for ln in run.stderr.splitlines() if ln.startswith("STARTED "))
    return run, json.loads(line.removeprefix("STARTED "))


def _until_cached(args: list[str], cwd: Path) -> tuple[dict[str, object], list[str]]:
    """The first run that answers from the cache (the command writes a new result
    from a detached copy of itself after answering)."""
    for _ in range(200):
        run, started = _traced(args, cwd)
        assert run.returncode == 0, run.stderr
        data = json.loads(run.stdout)
        if data["summary"]["cache"] == "tree":
            return data, started
        time.sleep(0.05)
    raise AssertionError("the result was never cached")


@pytest.fixture
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def test_a_warm_run_asks_git_only_for_its_status(tmp_path: Path, xdg: None) -> None:
    repo = _repo(tmp_path / "pytorch", "# TODO: first\nx = 1  # FIXME: second\n")
    root = _workspace(tmp_path / "ws", repo)
    run, started = _traced(["harvest", "--json", "--offline"], root)
    assert run.returncode == 0, run.stderr
    assert started.count("git status") == 1
    first = json.loads(run.stdout)
    assert sorted(i["text"] for i in first["items"]) == ["FIXME: second", "TODO: first"]
    data, started = _until_cached(["harvest", "--json", "--offline"], root)
    assert started == ["git status"]
    assert data["items"] == first["items"]


def test_a_warm_run_in_a_clone_asks_git_only_for_its_status(tmp_path: Path, xdg: None) -> None:
    """Blame ages and history come from the cache too: one git call in all."""
    repo = _repo(tmp_path / "pytorch", "# TODO: first\n")
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "2nd"],
                   check=True)  # fmt: skip
    root = _workspace(tmp_path / "ws", repo, kind=ws_mod.CLONE)
    run, started = _traced(["harvest", "--json"], root)
    assert run.returncode == 0, run.stderr
    assert "git blame" in started and json.loads(run.stdout)["items"][0]["blame"]["age_days"] >= 0
    data, started = _until_cached(["harvest", "--json"], root)
    assert started == ["git status"]
    items = data["items"]
    assert isinstance(items, list) and items[0]["blame"]["age_days"] >= 0
