"""`onboard setup --remote ... --commit SHA` against real git servers on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.git_server import GitDaemon, SilentServer, closed_port_url
from fixtures.pytorch_repo import RepoInfo
from fixtures.pytorch_repo import git as git_cmd

from onboard import git, ide, torchenv, workspace
from onboard.crash import run_cli
from onboard.errors import BadInput, OnboardError
from onboard.report import Reporter
from onboard.workflows import verify
from onboard.workflows.setup import SetupRequest, setup


@pytest.fixture(scope="module")
def probed() -> torchenv.TorchEnv:
    return torchenv.probe()


@pytest.fixture(autouse=True)
def fast_probe(probed: torchenv.TorchEnv, monkeypatch: pytest.MonkeyPatch) -> torchenv.TorchEnv:
    monkeypatch.setattr(torchenv, "probe", lambda python=None, **kw: probed)
    return probed


@pytest.fixture
def served(pytorch_repo: RepoInfo, git_daemon: GitDaemon) -> tuple[RepoInfo, str]:
    return pytorch_repo, git_daemon.serve(pytorch_repo.path, "repo")


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if "onboard-partial" in p.name)


def test_depth_one_checkout_at_sha_with_ide_files(
    served: tuple[RepoInfo, str], tmp_path: Path, probed: torchenv.TorchEnv
) -> None:
    repo, url = served
    sha = repo.commits[10]
    reporter = Reporter()
    result = setup(SetupRequest(dest=tmp_path / "ws", remote=url, commit=sha), reporter)
    checkout = tmp_path / "ws" / "pytorch"
    assert result.state == "created" and result.ok
    assert git.refs.head_sha(checkout) == sha
    assert int(git_cmd("-C", checkout, "rev-list", "--count", "HEAD")) == 1
    assert (checkout / ".git" / "shallow").is_file()
    assert git.refs.current_branch(checkout) is None  # detached
    assert git.status.status_porcelain(checkout) == []
    assert git.remote.remote_url(checkout) == url
    assert (checkout / "aten/src/ATen/native/native_functions.yaml").is_file()
    # Progress went through the reporter; the fetch counted objects.
    assert any(m.startswith(f"fetching {sha[:12]} from {url}") for m in reporter.messages)
    assert result.fetch is not None and result.fetch.objects > 0
    assert result.fetch.bytes_received and result.fetch.bytes_received > 0
    # IDE and debugger files.
    launch = json.loads((checkout / ".vscode/launch.json").read_text())
    cpp = {c["name"]: c for c in launch["configurations"]}[ide.CPPDBG_NAME]
    assert cpp["sourceFileMap"][probed.build_prefix.prefix]["editorPath"] == str(checkout)
    assert (tmp_path / "ws/onboard.gdb").read_text().count("set substitute-path") == 1
    ws = workspace.load(tmp_path / "ws")
    assert ws.checkout_kind == workspace.CLONE and ws.commit == sha and ws.remote == url
    assert ws.commit_kind == "override"
    # The release wheel has no DWARF: say what works and what needs a build.
    assert "no DWARF" in result.debugging["cpp"] and "onboard build" in result.debugging["cpp"]
    assert "not the installed torch's commit" in " ".join(result.notes)
    # verify: HEAD is what was asked for (and says it is not the installed one).
    checks = {c.name: c for c in verify.run_checks(ws).checks}
    commit_check = checks["checkout is the installed commit"]
    assert commit_check.status == verify.PASSED and "--commit" in commit_check.detail
    assert checks["launch.json"].status == verify.PASSED


def test_tag_name_as_commit(served: tuple[RepoInfo, str], tmp_path: Path) -> None:
    repo, url = served
    result = setup(SetupRequest(dest=tmp_path / "ws", remote=url, commit="v2.13.0"))
    assert result.head == repo.tags["v2.13.0"]


def test_local_path_remote_and_reference(served: tuple[RepoInfo, str], tmp_path: Path) -> None:
    repo, url = served
    sha = repo.commits[5]
    result = setup(
        SetupRequest(dest=tmp_path / "ws", remote=url, commit=sha, reference=str(repo.path))
    )
    checkout = tmp_path / "ws/pytorch"
    alternates = (checkout / ".git/objects/info/alternates").read_text()
    assert str(repo.path / ".git" / "objects") in alternates
    assert git.refs.head_sha(checkout) == sha
    assert any("--reference" in n for n in result.notes)


def test_commit_the_remote_lacks_is_named(served: tuple[RepoInfo, str], tmp_path: Path) -> None:
    _repo, url = served
    missing = "0123456789abcdef0123456789abcdef01234567"
    with pytest.raises(OnboardError) as info:
        setup(SetupRequest(dest=tmp_path / "ws", remote=url, commit=missing))
    assert missing in info.value.message
    assert "does not have commit" in info.value.message
    assert not (tmp_path / "ws").exists()
    assert _leftovers(tmp_path) == []


def test_closed_port_fails_fast_and_leaves_nothing(tmp_path: Path) -> None:
    dest = tmp_path / "ws"
    with pytest.raises(OnboardError) as info:
        setup(SetupRequest(dest=dest, remote=closed_port_url(), commit="a" * 40, fetch_timeout=30))
    assert "--from-wheel" in (info.value.next_step or "")
    assert "--remote" in (info.value.next_step or "")
    assert not dest.exists()
    assert _leftovers(tmp_path) == []


def test_silent_server_is_bounded_by_fetch_timeout(tmp_path: Path) -> None:
    with SilentServer() as server:
        with pytest.raises(OnboardError, match="sent nothing for 1 s") as info:
            setup(
                SetupRequest(
                    dest=tmp_path / "ws", remote=server.url(), commit="a" * 40, fetch_timeout=1
                )
            )
        assert server.accepted >= 1  # git really connected and then waited
    assert "--fetch-timeout" in (info.value.next_step or "")
    assert not (tmp_path / "ws").exists()
    assert _leftovers(tmp_path) == []


def test_abbreviated_sha_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="abbreviated"):
        setup(SetupRequest(dest=tmp_path / "ws", remote=closed_port_url(), commit="cf30153"))


def test_rerun_resumes_and_moves_a_clean_checkout(
    served: tuple[RepoInfo, str], tmp_path: Path
) -> None:
    repo, url = served
    dest = tmp_path / "ws"
    setup(SetupRequest(dest=dest, remote=url, commit=repo.commits[3]))
    same = setup(SetupRequest(dest=dest, remote=url, commit=repo.commits[3]))
    assert same.state == "unchanged"
    assert all(f.action == "unchanged" for f in same.ide_files)
    moved = setup(SetupRequest(dest=dest, remote=url, commit=repo.commits[12]))
    assert moved.state == "resumed"
    assert git.refs.head_sha(dest / "pytorch") == repo.commits[12]
    assert workspace.load(dest).commit == repo.commits[12]
    # An interrupted first run (checkout gone) is made again.
    import shutil

    shutil.rmtree(dest / "pytorch")
    again = setup(SetupRequest(dest=dest, remote=url, commit=repo.commits[12]))
    assert again.state == "resumed" and git.refs.head_sha(dest / "pytorch") == repo.commits[12]
    assert (dest / "pytorch/.vscode/launch.json").is_file()


def test_dirty_checkout_is_never_touched(served: tuple[RepoInfo, str], tmp_path: Path) -> None:
    repo, url = served
    dest = tmp_path / "ws"
    setup(SetupRequest(dest=dest, remote=url, commit=repo.commits[3]))
    edited = dest / "pytorch/torch/nn/functional.py"
    edited.write_text("# my work in progress\n")
    (dest / "pytorch/my_notes.txt").write_text("untracked, also mine\n")
    again = setup(SetupRequest(dest=dest, remote=url, commit=repo.commits[12]))
    # The new commit is fetched and tagged; HEAD and the user's files stay.
    assert again.ok and again.commit == repo.commits[12]
    assert git.refs.head_sha(dest / "pytorch") == repo.commits[3]
    assert edited.read_text() == "# my work in progress\n"
    assert (dest / "pytorch/my_notes.txt").read_text() == "untracked, also mine\n"
    note = next(n for n in again.notes if "HEAD stays" in n)
    tag = f"onboard/commit-{repo.commits[12][:12]}"
    assert "uncommitted changes" in note and f"checkout --detach {tag}" in note
    assert git.refs.rev_parse(dest / "pytorch", tag) == repo.commits[12]


def test_switching_kind_is_refused(served: tuple[RepoInfo, str], tmp_path: Path) -> None:
    repo, url = served
    dest = tmp_path / "ws"
    setup(SetupRequest(dest=dest, remote=url, commit=repo.commits[3]))
    with pytest.raises(BadInput, match="already holds a git checkout"):
        setup(SetupRequest(dest=dest, from_wheel=True))


def test_nightly_follows_the_main_sha_in_the_subject(
    pytorch_repo: RepoInfo,
    git_daemon: GitDaemon,
    tmp_path: Path,
    probed: torchenv.TorchEnv,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dataclasses

    main_sha = pytorch_repo.commits[7]
    # A nightly-branch commit whose subject names the main commit (tools/nightly.py's format).
    work = pytorch_repo.path
    git.core.git(work, "checkout", "-q", "-b", "nightly", main_sha)
    git.core.git(
        work, "commit", "-q", "--allow-empty", "-m", f"2025-01-02 nightly release ({main_sha})"
    )
    nightly_sha = git.refs.head_sha(work)
    assert nightly_sha
    url = git_daemon.serve(work, "repo")
    assert probed.torch is not None
    nightly_torch = dataclasses.replace(
        probed.torch, version="2.14.0.dev20250102+cpu", git_version=nightly_sha
    )
    nightly_env = dataclasses.replace(
        probed,
        commit=torchenv.classify(nightly_torch.version, nightly_sha),
        torch=nightly_torch,
    )
    monkeypatch.setattr(torchenv, "probe", lambda python=None, **kw: nightly_env)
    result = setup(SetupRequest(dest=tmp_path / "ws", remote=url))
    assert result.commit_kind == "nightly"
    assert result.head == main_sha
    assert git.refs.head_sha(tmp_path / "ws/pytorch") == main_sha
    assert any(nightly_sha[:12] in n for n in result.notes)


def test_cli_json_and_exit_codes(
    served: tuple[RepoInfo, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from onboard.cli import cli

    repo, url = served
    code = run_cli(
        cli, ["setup", str(tmp_path / "ws"), "--remote", url, "--commit", repo.head, "--json"]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["head"] == repo.head and data["checkout_kind"] == "clone"
    assert data["fetch"]["objects"] > 0
    code = run_cli(
        cli, ["setup", str(tmp_path / "ws2"), "--remote", url, "--commit", "f" * 40, "--json"]
    )
    captured = capsys.readouterr()
    assert code == 1
    assert json.loads(captured.out)["error"]["kind"] == "OnboardError"
    assert "f" * 40 in captured.err


@pytest.mark.slow
def test_subprocess_setup_then_nox_verify(tmp_path: Path) -> None:
    """The real thing end to end: `python -m onboard setup --from-wheel`, then the
    workspace's own `nox -s verify`, then `onboard verify --json`."""
    env = dict(os.environ)
    dest = tmp_path / "ws"
    done = subprocess.run(
        [sys.executable, "-m", "onboard", "setup", str(dest), "--from-wheel", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["checkout_kind"] == "reference"
    nox = subprocess.run(
        [sys.executable, "-m", "nox", "-f", str(dest / "noxfile.py"), "-s", "verify"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert nox.returncode == 0, nox.stdout + nox.stderr
    assert "passed, 0 failed" in nox.stdout
    report = json.loads((dest / ".onboard/verify.json").read_text())
    assert report["ok"] is True
    cli = subprocess.run(
        [sys.executable, "-m", "onboard", "verify", "--workspace", str(dest), "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert cli.returncode == 0, cli.stderr
    report = json.loads(cli.stdout)
    assert report["counts"]["failed"] == 0
    setup_checks = {
        "checkout is the installed commit",
        "settings.json",
        "launch.json",
        "gdb substitute-path",
        "build prefix maps to real files",
    }
    passed = {c["name"] for c in report["checks"] if c["status"] == "passed"}
    assert setup_checks <= passed  # other commands' checks may add more
    # Break the mapping: verify must fail with exit 1.
    (dest / "onboard.gdb").write_text("# emptied\n")
    broken = subprocess.run(
        [sys.executable, "-m", "onboard", "verify", "--workspace", str(dest), "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert broken.returncode == 1
    failed = [c["name"] for c in json.loads(broken.stdout)["checks"] if c["status"] == "failed"]
    assert failed == ["gdb substitute-path"]


def test_submodule_pinned_below_a_shallow_fetch_is_retried_without_depth(
    pytorch_repo: RepoInfo,
    git_daemon: GitDaemon,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pytorch#186004: a submodule pinned at a commit a depth-1 fetch cannot reach.

    The submodule's server refuses unadvertised shas (a plain bare repo spoken to
    with protocol v0, as older servers do), and the pin is not a branch tip, so
    `--depth 1` fails and onboard must fetch that submodule's history.
    """
    sub = tmp_path / "sub"
    git.repository.init_repo(sub)
    for i in range(3):
        (sub / "kernel.h").write_text(f"// revision {i}\n")
        git.core.git(sub, "add", "kernel.h")
        git.core.git(sub, "commit", "-q", "-m", f"revision {i}")
    pinned = git.refs.rev_parse(sub, "HEAD~2")
    assert pinned
    served_sub = git_daemon.root / "sub.git"
    git.core.git(None, "clone", "-q", "--bare", str(sub), str(served_sub))  # no fetch-by-sha
    work = pytorch_repo.path
    git.core.git(work, "submodule", "add", "-q", git_daemon.url("sub.git"), "third_party/sub")
    git.core.git(work / "third_party/sub", "checkout", "-q", pinned)
    git.core.git(work, "add", "third_party/sub")
    git.core.git(work, "commit", "-q", "-m", "Add a submodule pinned below its tip")
    head = git.refs.head_sha(work)
    assert head
    url = git_daemon.serve(work, "repo")
    # Protocol v0 for every git onboard runs: unadvertised wants are refused.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "protocol.version")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "0")
    reporter = Reporter()
    result = setup(
        SetupRequest(dest=tmp_path / "ws", remote=url, commit=head, with_submodules=True), reporter
    )
    assert result.ok, result.problems
    checkout = tmp_path / "ws/pytorch"
    assert git.refs.head_sha(checkout / "third_party/sub") == pinned
    assert (checkout / "third_party/sub/kernel.h").read_text() == "// revision 0\n"
    assert any("fetched without --depth" in n for n in result.notes)
    # the main checkout stays shallow
    assert int(git_cmd("-C", checkout, "rev-list", "--count", "HEAD")) == 1
