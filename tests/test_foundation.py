"""The adapters every command stands on: proc, workspace config, redaction, render."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from fixtures.events import Holders, gone

from onboard import proc, redact, workspace
from onboard.cache import Row, matches, read_valid, writable_cache_dir
from onboard.errors import NoWorkspace, OnboardError, ProcError, ProcTimeout


def test_run_captures_and_checks(tmp_path: Path) -> None:
    result = proc.run(
        [sys.executable, "-c", "print('hi'); import sys; print('e', file=sys.stderr)"], cwd=tmp_path
    )
    assert result.ok and result.stdout.strip() == "hi" and result.stderr.strip() == "e"
    with pytest.raises(ProcError) as info:
        proc.run(
            [sys.executable, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(4)"],
            what="the probe",
        )
    err = info.value
    assert err.returncode == 4
    assert "the probe failed (exit 4): boom" in err.paragraph()
    assert "return code: 4" in err.details() and "    boom" in err.details()


def test_run_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, time;"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
        f"open({str(marker)!r}, 'w').write(str(p.pid)); time.sleep(60)"
    )
    with pytest.raises(ProcTimeout):
        proc.run([sys.executable, "-c", code], timeout=2)
    child = int(marker.read_text())
    # The grandchild went with its parent: no orphan keeps running.
    assert gone(child, 5)


def test_missing_executable_is_one_clear_error() -> None:
    with pytest.raises(OnboardError) as info:
        proc.run(["onboard-no-such-tool-xyz"])
    assert "was not found on PATH" in info.value.paragraph()


def test_background_work_yields_the_cores_it_and_its_children() -> None:
    # A child that starts a grandchild, as nvcc starts cicc: both must be lowered.
    code = (
        "import os, subprocess, sys; print(os.nice(0));"
        "subprocess.run([sys.executable, '-c', 'import os; print(os.nice(0))'])"
    )
    niced = proc.run([sys.executable, "-c", code], background=True).stdout.split()
    plain = proc.run([sys.executable, "-c", code]).stdout.split()
    base = os.nice(0)
    assert plain == [str(base)] * 2
    assert niced == [str(min(19, base + proc.BACKGROUND_NICE))] * 2
    autogroup = Path("/proc/self/autogroup")
    if autogroup.is_file():
        # Where the kernel shares the CPU between sessions first, the session's own
        # group is lowered too (each command is a session of its own).
        read = "print(open('/proc/self/autogroup').read().split()[-1])"
        got = proc.run([sys.executable, "-c", read], background=True).stdout.strip()
        assert got == str(proc.BACKGROUND_NICE)
    with pytest.raises(OnboardError) as info:  # still its own error, not nice's exit 127
        proc.run(["onboard-no-such-tool-xyz"], background=True)
    assert "was not found on PATH" in info.value.paragraph()


def _environment_of(start: Any, fifo: Path) -> tuple[Any, list[str]]:
    """A child started by ``start(argv)`` and the environment it has once it runs (it
    writes it to ``fifo``, which our read waits on)."""
    os.mkfifo(fifo)
    child = start(["sh", "-c", f"env > {shlex.quote(str(fifo))}; exec sleep 300"])
    with open(fifo, encoding="utf-8") as fh:
        return child, fh.read().splitlines()


def _running(pid: int) -> bool:
    """Alive and not a zombie (a released child is reaped only later)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def test_every_kind_of_child_carries_the_runs_token(tmp_path: Path) -> None:
    with proc.reaping():
        token = f"{proc.RUN_ENV}={os.environ[proc.RUN_ENV]}"
        own = set()
        started = []
        for name, start in (("run", proc.start), ("child", proc.Child), ("own", proc.Passthrough)):
            child, env = _environment_of(start, tmp_path / name)
            started.append(child)
            assert token in env, name
            # and a token of its own, which stopping it follows to what left its group
            own |= {e for e in env if e.startswith("ONBOARD_CHILD=")}
        assert len(own) == 3
        running, child, passthrough = started
        child.stop()
        passthrough.stop()
    assert gone(running.pid)  # the end of the run stopped it


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads Linux's /proc")
def test_a_released_child_works_on_after_a_normal_end_not_an_interrupted_one() -> None:
    with proc.reaping() as reaper:
        kept = proc.Child(["sh", "-c", "sleep 300 & wait"])
        kept.release()
        reaper.finished = True
    assert _running(kept.pid)
    with pytest.raises(KeyboardInterrupt), proc.reaping():
        stopped = proc.Child(["sleep", "300"])
        stopped.release()
        raise KeyboardInterrupt
    assert gone(stopped.pid)
    os.killpg(kept.pid, signal.SIGKILL)


def test_stream_reports_signal_death_shell_style(tmp_path: Path) -> None:
    lines: list[str] = []
    code = f"print('a', flush=True); import os, signal; os.kill(os.getpid(), {int(signal.SIGSEGV)})"
    status = proc.stream(
        [sys.executable, "-c", code], on_line=lines.append, log_path=tmp_path / "log"
    )
    assert status == 128 + signal.SIGSEGV
    assert lines == ["a"] and (tmp_path / "log").read_text() == "a\n"


def test_git_never_prompts() -> None:
    env = proc.environ()
    assert env["GIT_TERMINAL_PROMPT"] == "0"


def _ws(root: Path) -> workspace.Workspace:
    return workspace.Workspace(
        root=root,
        torch_version="2.13.0+cpu",
        commit="cf30153c4c131c8164ee7798e5022d810682e2cb",
        commit_kind="release",
        build_prefix="/__w/pytorch/pytorch",
        python=sys.executable,
        checkout_kind=workspace.REFERENCE,
        tag="v2.13.0",
    )


def test_workspace_round_trip_and_discovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _ws(tmp_path.resolve())
    workspace.save(ws)
    assert json.loads(ws.config_path.read_text())["schema"] == workspace.SCHEMA
    nested = tmp_path / "pytorch" / "aten" / "src"
    nested.mkdir(parents=True)
    found = workspace.find(start=nested)
    assert found == ws
    monkeypatch.setenv("ONBOARD_WORKSPACE", str(tmp_path))
    assert workspace.find(start=Path("/")) == ws
    assert found is not None and found.limitation("Kernel bodies")
    assert found.github_url("aten/src/ATen/native/UnaryOps.cpp", 12) == (
        "https://github.com/pytorch/pytorch/blob/cf30153c4c131c8164ee7798e5022d810682e2cb/"
        "aten/src/ATen/native/UnaryOps.cpp#L12"
    )


def test_workspace_missing_and_broken(tmp_path: Path) -> None:
    assert workspace.find(start=tmp_path) is None
    with pytest.raises(NoWorkspace) as info:
        workspace.require(start=tmp_path)
    assert "onboard setup" in info.value.paragraph()
    (tmp_path / workspace.CONFIG_NAME).write_text("{not json")
    with pytest.raises(OnboardError, match="not valid JSON"):
        workspace.load(tmp_path)


def test_redact_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    token = "ghp_" + "A1b2" * 9
    assert token not in redact.redact(f"push https://x:{token}@github.com/a/b failed {token}")
    monkeypatch.setenv("GITHUB_TOKEN", "plain-secret-value")
    assert "plain-secret-value" not in redact.redact("Authorization: token plain-secret-value")


# --- cache files: checked on read -------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "shape", "ok"),
    [
        ({"a": "x", "b": [1, 2]}, {"a": str, "b": [int]}, True),
        ({"a": "x", "b": [1, "2"]}, {"a": str, "b": [int]}, False),
        ({"a": "x"}, {"a": str, "b": [int]}, False),  # a required key is missing
        ({"a": "x"}, {"a": str, "b?": [int]}, True),  # an optional one may be
        ({"a": "x", "b": None}, {"a": str, "b?": [int]}, False),
        ({"a": True}, {"a": int}, False),  # JSON true is not a number
        ({"a": 3}, {"a": float}, True),
        ({"m": {"k": ["f.cpp", 3]}}, {"m": {str: Row(str, int)}}, True),
        ({"m": {"k": ["f.cpp", 3, 4]}}, {"m": {str: Row(str, int)}}, False),
        ({"m": {"k": ["f.cpp", "3"]}}, {"m": {str: Row(str, int)}}, False),
        ({"s": None}, {"s": ({"path": str}, None)}, True),
        ({"s": {"path": 1}}, {"s": ({"path": str}, None)}, False),
        ({"x": [[1], "two"]}, {"x": [object]}, True),
        ([], {"a": str}, False),
    ],
)
def test_matches_checks_the_shape_of_json(data: object, shape: object, ok: bool) -> None:
    assert matches(data, shape) is ok


def test_read_valid_treats_another_shape_as_missing(tmp_path: Path) -> None:
    path = tmp_path / "entry.json"
    path.write_text('{"prefix": "/b", "method": "scan", "source_paths": "not a list"}')
    assert read_valid(path, {"prefix": str, "method": str, "source_paths": [str]}) == {}
    path.write_text('{"prefix": "/b", "method": "scan", "source_paths": ["a.cpp"]}')
    assert read_valid(path, {"prefix": str, "source_paths": [str]})["prefix"] == "/b"
    assert read_valid(tmp_path / "missing.json", {"prefix": str}) == {}


def test_writable_cache_dir_falls_back_to_a_private_temp_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert writable_cache_dir("opsource") == tmp_path / "cache" / "onboard" / "opsource"
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a-file" / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    fallback = writable_cache_dir("opsource")
    assert fallback == tmp_path / "tmp" / f"onboard-{os.getuid()}" / "cache" / "opsource"
    assert fallback.parent.parent.stat().st_mode & 0o777 == 0o700
    # a folder of that name that someone else could write is never used
    (tmp_path / "tmp" / f"onboard-{os.getuid()}").chmod(0o777)
    other = writable_cache_dir("opsource")
    assert other.parent.name.startswith("onboard-cache-") and other != fallback


def test_a_build_prefix_cache_of_the_wrong_shape_is_scanned_again(
    isolated_home: Path, torch_wheel_dir: Path
) -> None:
    from onboard import torchenv

    lib = torchenv.find_library(torch_wheel_dir)
    assert lib is not None
    first = torchenv.scan_build_prefix(lib)
    (cached,) = (isolated_home / ".cache" / "onboard").glob("prefix-*.json")
    cached.write_text(json.dumps({"prefix": 7, "method": "x", "source_paths": 3}))
    assert torchenv.scan_build_prefix(lib) == first
    assert json.loads(cached.read_text())["prefix"] == first.prefix


def test_sealed_files_hold_what_was_written_and_nothing_else(tmp_path: Path) -> None:
    from onboard.cache import read_sealed, write_sealed

    path = tmp_path / "sealed.json"
    shape = {"version": int}
    body = {"rows": [[1, "a"], [2, "b\nc"]]}  # a newline inside a value stays escaped
    write_sealed(path, {"version": 3}, body)
    sealed = read_sealed(path, shape)
    assert sealed is not None and sealed.header["version"] == 3 and sealed.body() == body
    assert read_sealed(path, {"version": str}) is None  # the header is shape-checked
    top, raw = path.read_bytes().split(b"\n", 1)
    path.write_bytes(top + b"\n" + raw.replace(b'"a"', b'"A"'))  # a hand edit
    edited = read_sealed(path, shape)
    assert edited is not None and edited.body() is None
    for garbage in (b"", b"{}", b"not json\n{}", b'{"version": 3}\n{}', b"[1]\n[2]"):
        path.write_bytes(garbage)
        found = read_sealed(path, shape)
        assert found is None or found.body() is None
    assert read_sealed(tmp_path / "missing.json", shape) is None


def test_status_lists_the_files_of_untracked_folders_as_git_does(tmp_path: Path) -> None:
    from onboard import git

    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@e"], ["config", "user.name", "t"]):
        proc.run(["git", "-C", str(repo), *args])
    (repo / ".gitignore").write_text("*.pyc\nbuild/\n")
    (repo / "kept.py").write_text("x = 1\n")
    proc.run(["git", "-C", str(repo), "add", "."])
    proc.run(["git", "-C", str(repo), "commit", "-qm", "init"])
    (repo / "kept.py").write_text("x = 2\n")
    (repo / "new" / "deep").mkdir(parents=True)
    (repo / "new" / "a.py").write_text("# TODO: a\n")
    (repo / "new" / "deep" / "b.py").write_text("# TODO: b\n")
    (repo / "new" / "deep" / "c.pyc").write_bytes(b"ignored")
    (repo / "[odd]").mkdir()  # a folder name that is a glob pattern
    (repo / "[odd]" / "d.py").write_text("")
    (repo / "o").mkdir()  # what "[odd]" would match as a glob
    (repo / "o" / "e.py").write_text("")
    (repo / "build").mkdir()
    (repo / "build" / "gen.py").write_text("")
    found = git.status.start_status_v2(repo).result()
    assert found is not None
    head, paths = found
    assert head == git.refs.head_sha(repo)
    everything = proc.run(
        ["git", "-C", str(repo), "status", "--porcelain=v2", "-z", "--untracked-files=all"]
    ).stdout
    expected = sorted(
        e.split(" ")[-1] if e[0] == "1" else e[2:] for e in everything.split("\0") if e
    )
    assert sorted(paths) == expected == [
        "[odd]/d.py", "kept.py", "new/a.py", "new/deep/b.py", "o/e.py",
    ]  # fmt: skip


def test_work_left_for_after_the_run_starts_only_once_it_has_answered(tmp_path: Path) -> None:
    # A detached copy is a fork: it holds the pipes this process holds, so the end of
    # a pipe made before is the end of every copy, whether one was made or not.
    done = tmp_path / "done"
    copies = Holders()
    with proc.reaping() as reaper:
        proc.detach_after_run(lambda: done.write_text("written"))
        assert not done.exists()  # not while the run is still answering
        reaper.finished = True
    copies.wait("the detached copy")  # (or this process wrote it, where it cannot fork)
    assert done.read_text() == "written"

    skipped = tmp_path / "skipped"
    copies = Holders()
    with proc.reaping():  # interrupted: `finished` is never set
        proc.detach_after_run(lambda: skipped.write_text("written"))
    copies.wait("a copy that should not have been made")
    assert not skipped.exists()

    nested = tmp_path / "nested"
    after_outer = Holders()
    with proc.reaping() as outer:
        after_inner = Holders()
        with proc.reaping() as inner:  # a block inside the run is not its end
            proc.detach_after_run(lambda: nested.write_text("written"))
            inner.finished = True
        after_inner.wait("a copy that should not have been made yet")
        assert not nested.exists()
        outer.finished = True
    after_outer.wait("the detached copy")
    assert nested.read_text() == "written"
