"""`onboard setup --from-wheel`, the IDE merge, the workspace checks, bad input.

The torch probe is real but runs once per module (``probed`` below) and is
handed to the workflow, so each test does not pay for a child interpreter
importing torch; the tests about the probe itself (no torch) run it for real.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from fixtures.pytorch_repo import git as git_cmd
from opsource_helpers import installed_commit, installed_version

from onboard import git, ide, torchenv, workspace
from onboard.crash import run_cli
from onboard.errors import BadInput, OnboardError
from onboard.jsonable import to_json
from onboard.report import Reporter
from onboard.workflows import reference_tree, verify
from onboard.workflows.setup import SetupRequest, SetupResult, setup


@pytest.fixture(scope="module")
def probed() -> torchenv.TorchEnv:
    return torchenv.probe()


@pytest.fixture
def fast_probe(probed: torchenv.TorchEnv, monkeypatch: pytest.MonkeyPatch) -> torchenv.TorchEnv:
    """Serve the module's real probe for the default interpreter."""
    real = torchenv.probe

    def probe(python: str | None = None, **kwargs: object) -> torchenv.TorchEnv:
        if python in (None, sys.executable, probed.python.executable):
            return probed
        return real(python, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(torchenv, "probe", probe)
    return probed


# What setup answered when it made `wheel_ws` (its --json object).
WHEEL_RESULT: dict[str, Any] = {}


@pytest.fixture(scope="module")
def wheel_setup(
    tmp_path_factory: pytest.TempPathFactory, probed: torchenv.TorchEnv
) -> tuple[Path, SetupResult, list[str]]:
    """One --from-wheel workspace for the read-only tests of this module, with what
    setup returned and said while working."""
    root = tmp_path_factory.mktemp("wheel") / "ws"
    mp = pytest.MonkeyPatch()
    mp.setattr(torchenv, "probe", lambda python=None, **kw: probed)
    reporter = Reporter()
    try:
        result = setup(SetupRequest(dest=root, from_wheel=True), reporter)
        WHEEL_RESULT.update(to_json(result))
    finally:
        mp.undo()
    return root, result, reporter.messages


@pytest.fixture(scope="module")
def wheel_ws(wheel_setup: tuple[Path, SetupResult, list[str]]) -> Path:
    return wheel_setup[0]


def test_one_count_of_the_reference_trees_files(
    wheel_setup: tuple[Path, SetupResult, list[str]],
) -> None:
    _root, result, messages = wheel_setup
    assert result.reference is not None
    files = result.reference["files"]
    assert f"building the reference tree from the wheel ({files} files)" in messages
    assert any(a.endswith(f"({files} files)") for a in result.actions)


# ---------------------------------------------------------------------------
# the reference tree


def test_reference_tree_has_pytorch_paths(wheel_ws: Path, probed: torchenv.TorchEnv) -> None:
    tree = wheel_ws / "pytorch"
    for rel in (
        "aten/src/ATen/native/native_functions.yaml",
        "aten/src/ATen/native/tags.yaml",
        "tools/autograd/derivatives.yaml",
        "aten/src/ATen/core/Tensor.h",
        "aten/src/ATen/templates/Functions.h",
        "build/aten/src/ATen/core/TensorBody.h",  # generated: where the binary names it
        "c10/core/TensorImpl.h",
        "torch/csrc/autograd/variable.h",
        "torch/library.h",
        "torch/nn/functional.py",
        "torchgen/gen.py",
        "version.txt",
    ):
        assert (tree / rel).is_file(), rel
    for absent in ("torch/include", "torch/lib", "torchgen/packaged", "torch/bin"):
        assert not (tree / absent).exists(), absent
    assert not list((tree / "torch").rglob("*.so"))
    assert (tree / "version.txt").read_text().strip() == installed_version().split("+")[0]
    # The same file the wheel ships, byte for byte.
    assert probed.torch is not None
    site = probed.torch.package_dir.parent
    wheel_yaml = site / "torchgen/packaged/ATen/native/native_functions.yaml"
    assert (
        tree / "aten/src/ATen/native/native_functions.yaml"
    ).read_bytes() == wheel_yaml.read_bytes()


def test_reference_tree_headers_have_the_binarys_line_numbers(
    wheel_ws: Path, probed: torchenv.TorchEnv
) -> None:
    """The wheel wraps installed headers in a one-line guard; the tree drops it,
    so `path:line` from the binary's __FILE__ strings lands on the right line."""
    assert probed.torch is not None
    installed = probed.torch.package_dir / "include" / "ATen" / "InferSize.h"
    assert installed.read_text().splitlines()[0].startswith("#if !defined(TORCH_STABLE_ONLY)")
    lines = (wheel_ws / "pytorch/aten/src/ATen/InferSize.h").read_text().splitlines()
    assert lines[0] == "#pragma once"
    # torch.ones(6).view(-1, -1) reports "Exception raised from infer_size_impl at
    # .../aten/src/ATen/InferSize.h:30" on 2.13.0.
    assert 'TORCH_CHECK(!infer_dim, "only one dimension can be inferred")' in lines[29]
    assert not any("TORCH_STABLE_ONLY" in line for line in lines[-3:])


def test_reference_tree_is_one_clean_commit(wheel_ws: Path, probed: torchenv.TorchEnv) -> None:
    tree = wheel_ws / "pytorch"
    assert int(git_cmd("-C", tree, "rev-list", "--count", "HEAD")) == 1
    assert git.status.status_porcelain(tree) == []  # .vscode is excluded, nothing else changed
    message = git.history.commit_message(tree)
    found = reference_tree.trailers(message)
    assert found["Onboard-Torch-Version"] == installed_version()
    assert found["Onboard-Torch-Commit"] == installed_commit()
    assert "pybind11" in found["Onboard-Vendored-Includes"]
    author = git.core.out(tree, "log", "-1", "--format=%an <%ae> %at")
    assert author == "onboard <onboard@localhost> 946684800"
    tracked = git.core.out(tree, "ls-files").splitlines()
    # No kernels: a wheel ships headers and codegen templates, not ATen's .cpp/.cu.
    assert not [
        p for p in tracked if p.startswith("aten/src/ATen/native/") and p.endswith((".cpp", ".cu"))
    ]
    assert len(tracked) > 5000


def test_reference_workspace_config(wheel_ws: Path, probed: torchenv.TorchEnv) -> None:
    ws = workspace.load(wheel_ws)
    assert ws.checkout_kind == workspace.REFERENCE and ws.is_reference
    assert ws.commit == installed_commit()
    assert ws.torch_version == installed_version()
    assert ws.build_prefix == probed.build_prefix.prefix
    assert ws.python == probed.python.executable
    assert ws.extra["reference"]["vendored_includes"]
    noxfile = (wheel_ws / "noxfile.py").read_text()
    assert "from onboard.tasks.workspace import *" in noxfile


def test_ide_files_map_the_build_prefix(wheel_ws: Path, probed: torchenv.TorchEnv) -> None:
    checkout = wheel_ws / "pytorch"
    launch = json.loads((checkout / ".vscode/launch.json").read_text())
    configs = {c["name"]: c for c in launch["configurations"]}
    debugpy = configs[ide.DEBUGPY_NAME]
    assert debugpy["type"] == "debugpy" and debugpy["justMyCode"] is False
    # Python 3.11+: a script saved in the checkout's root still imports the installed torch
    safe = ide.safe_path_supported(probed.python.version)
    assert ("PYTHONSAFEPATH" in debugpy["env"]) is safe
    cpp = configs[ide.CPPDBG_NAME]
    assert cpp["type"] == "cppdbg" and cpp["request"] == "attach"
    assert cpp["program"] == probed.python.executable
    prefix = probed.build_prefix.prefix
    assert prefix == "/__w/pytorch/pytorch"
    assert cpp["sourceFileMap"] == {
        prefix: {"editorPath": str(checkout), "useForBreakpoints": True}
    }
    settings = json.loads((checkout / ".vscode/settings.json").read_text())
    assert settings["python.defaultInterpreterPath"] == probed.python.executable
    assert str(checkout) in settings["python.analysis.extraPaths"]
    gdb = (wheel_ws / "onboard.gdb").read_text().splitlines()
    assert f"set substitute-path {prefix} {checkout}" in gdb
    assert "/.vscode/" in (checkout / ".git/info/exclude").read_text().splitlines()
    # and setup says where not to keep scripts (their folder goes first on sys.path)
    said = WHEEL_RESULT["debugging"]["python"]
    assert f"out of {checkout}'s root folder" in said
    assert ("PYTHONSAFEPATH=1" in said) is safe


def test_verify_checks_pass_in_process(wheel_ws: Path, fast_probe: torchenv.TorchEnv) -> None:
    result = verify.run_checks(workspace.load(wheel_ws))
    by_name = {c.name: c for c in result.checks}
    assert result.ok, to_json(result)
    assert by_name["checkout is the installed commit"].status == verify.PASSED
    prefix = by_name["build prefix maps to real files"]
    assert prefix.status == verify.PASSED
    assert "headers" in prefix.detail  # says it only checked headers on a reference tree
    assert by_name["settings.json"].status == verify.PASSED
    assert by_name["launch.json"].status == verify.PASSED
    assert by_name["gdb substitute-path"].status == verify.PASSED


def test_verify_fails_on_a_broken_mapping(
    wheel_ws: Path, tmp_path: Path, fast_probe: torchenv.TorchEnv
) -> None:
    ws = workspace.load(wheel_ws)
    # IDE files that map another prefix than the binary's: a real mismatch.
    other = dataclasses.replace(ws, build_prefix="/somewhere/else")
    by_name = {c.name: c for c in verify.run_checks(other).checks}
    assert by_name["launch.json"].status == verify.FAILED
    assert "/somewhere/else" in by_name["launch.json"].detail
    assert by_name["gdb substitute-path"].status == verify.FAILED
    # A checkout without the files the binary names fails the prefix and commit checks.
    (tmp_path / "pytorch").mkdir()
    empty = dataclasses.replace(ws, root=tmp_path)
    result = verify.run_checks(empty)
    again = {c.name: c for c in result.checks}
    assert not result.ok
    assert again["build prefix maps to real files"].status == verify.FAILED
    assert again["checkout is the installed commit"].status == verify.FAILED


def test_verify_accepts_added_checks(
    wheel_ws: Path, monkeypatch: pytest.MonkeyPatch, fast_probe: torchenv.TorchEnv
) -> None:
    def extra_check(ctx: verify.VerifyContext) -> verify.Check:
        return verify.Check("an added check", verify.NOT_CHECKED, f"for {ctx.ws.root.name}")

    monkeypatch.setattr(verify, "CHECKS", [*verify.CHECKS])
    verify.check(extra_check)
    result = verify.run_checks(workspace.load(wheel_ws))
    assert result.checks[-1] == verify.Check("an added check", verify.NOT_CHECKED, "for ws")
    assert result.ok  # "not checked" is not a failure


# ---------------------------------------------------------------------------
# re-runs (one copy of the workspace, changed step by step)


def test_rerun_checks_merges_and_never_touches_a_dirty_tree(
    wheel_ws: Path, tmp_path: Path, fast_probe: torchenv.TorchEnv
) -> None:
    copy = tmp_path / "ws"
    shutil.copytree(wheel_ws, copy, symlinks=True)
    # 1. The first re-run re-points the moved copy's IDE files at itself (a merge,
    #    with backups of what was there); the tree itself is kept.
    result = setup(SetupRequest(dest=copy, from_wheel=True))
    assert result.state == "unchanged"
    assert git.refs.head_sha(copy / "pytorch") == git.refs.head_sha(wheel_ws / "pytorch")
    backups = sorted((copy / "pytorch/.vscode").glob("*.onboard-backup*"))
    again = setup(SetupRequest(dest=copy, from_wheel=True))
    assert again.state == "unchanged"
    assert all(f.action == "unchanged" for f in again.ide_files)
    assert sorted((copy / "pytorch/.vscode").glob("*.onboard-backup*")) == backups
    assert {c.status for c in verify.run_checks(workspace.load(copy)).checks} == {verify.PASSED}

    # 2. The user's own JSONC launch.json is merged on the next run, with a backup.
    launch = copy / "pytorch/.vscode/launch.json"
    launch.write_text(USER_LAUNCH)
    merged = setup(SetupRequest(dest=copy, from_wheel=True))
    action = {a.path.name: a for a in merged.ide_files}["launch.json"]
    assert action.action == "merged" and action.backup is not None
    assert action.backup.read_text() == USER_LAUNCH
    names = [c["name"] for c in json.loads(launch.read_text())["configurations"]]
    assert names == ["My script", ide.DEBUGPY_NAME, ide.CPPDBG_NAME]
    assert git.status.status_porcelain(copy / "pytorch") == []  # backups stay out of git status

    # 3. The user's own commit on `reference` and a dirty tree: torch did not change,
    #    so nothing is rebuilt and nothing of theirs is touched (exit 0).
    edited = copy / "pytorch/torch/nn/functional.py"
    edited.write_text(edited.read_text() + "\n# my change\n")
    onboards = git.refs.head_sha(copy / "pytorch")
    git.core.git(copy / "pytorch", "commit", "-q", "--amend", "--allow-empty", "-m", "mine")
    mine = git.refs.head_sha(copy / "pytorch")
    again = setup(SetupRequest(dest=copy, from_wheel=True))
    assert again.state == "unchanged" and again.ok
    assert again.reference is not None and again.reference["commit"] == onboards
    assert any("your work, left as it is" in n for n in again.notes)
    assert git.refs.head_sha(copy / "pytorch") == mine
    assert edited.read_text().endswith("# my change\n")


@pytest.mark.slow
def test_rerun_rebuilds_a_missing_reference_tree(
    wheel_ws: Path, tmp_path: Path, fast_probe: torchenv.TorchEnv
) -> None:
    copy = tmp_path / "ws"
    copy.mkdir()
    shutil.copy2(wheel_ws / "onboard.json", copy / "onboard.json")
    result = setup(SetupRequest(dest=copy, from_wheel=True))
    assert result.state == "resumed"
    assert git.refs.head_sha(copy / "pytorch") == git.refs.head_sha(wheel_ws / "pytorch")
    assert not [p for p in copy.iterdir() if "partial" in p.name]


# ---------------------------------------------------------------------------
# IDE merge


USER_LAUNCH = """{
    // my own configurations: keep them
    "version": "0.2.0",
    "configurations": [
        {"name": "My script", "type": "debugpy", "request": "launch", "program": "train.py",},
        {"name": "onboard: an old onboard config", "type": "cppdbg", "request": "attach"},
    ],
    "compounds": [],
}
"""
USER_SETTINGS = """{
    // editor taste
    "editor.rulers": [100],
    "python.analysis.extraPaths": ["/opt/mine"],
}
"""


@pytest.mark.parametrize(
    ("version", "safe"), [("3.10.14", False), ("3.11.7", True), ("3.13.1", True)]
)
def test_debugpy_config_keeps_the_script_folder_off_sys_path(version: str, safe: bool) -> None:
    (debugpy, _cpp) = ide.launch_configurations(
        "/py/bin/python", None, Path("/ws/pytorch"), None, python_version=version
    )
    assert debugpy["env"].get("PYTHONSAFEPATH") == ("1" if safe else None)
    assert debugpy["env"]["TORCH_SHOW_CPP_STACKTRACES"] == "1"


def test_ide_merge_keeps_the_users_variables_in_onboards_config(tmp_path: Path) -> None:
    folder = tmp_path / ".vscode"
    folder.mkdir()
    mine = {"name": ide.DEBUGPY_NAME, "type": "debugpy", "env": {"CUDA_VISIBLE_DEVICES": "1"}}
    (folder / "launch.json").write_text(json.dumps({"configurations": [mine]}))
    ide.write_vscode(
        folder, checkout=tmp_path / "pytorch", python="/py/bin/python", prefix=None,
        torch_dir=None, python_version="3.11.7",
    )  # fmt: skip
    launch = json.loads((folder / "launch.json").read_text())
    (debugpy,) = [c for c in launch["configurations"] if c["name"] == ide.DEBUGPY_NAME]
    assert debugpy["env"] == {
        "CUDA_VISIBLE_DEVICES": "1",
        "TORCH_SHOW_CPP_STACKTRACES": "1",
        "PYTHONSAFEPATH": "1",
    }


def test_ide_merge_keeps_user_jsonc(tmp_path: Path) -> None:
    folder = tmp_path / ".vscode"
    folder.mkdir()
    (folder / "launch.json").write_text(USER_LAUNCH)
    (folder / "settings.json").write_text(USER_SETTINGS)
    checkout = tmp_path / "pytorch"
    actions = ide.write_vscode(
        folder,
        checkout=checkout,
        python="/py/bin/python",
        prefix="/__w/pytorch/pytorch",
        torch_dir=tmp_path / "site/torch",
    )
    assert [a.action for a in actions] == ["merged", "merged"]
    launch = json.loads((folder / "launch.json").read_text())
    names = [c["name"] for c in launch["configurations"]]
    assert names == ["My script", ide.DEBUGPY_NAME, ide.CPPDBG_NAME]  # old onboard one replaced
    assert launch["compounds"] == []
    settings = json.loads((folder / "settings.json").read_text())
    assert settings["editor.rulers"] == [100]
    assert settings["python.analysis.extraPaths"] == ["/opt/mine", str(checkout)]
    assert settings["python.defaultInterpreterPath"] == "/py/bin/python"
    # The originals, comments and all, are kept as backups.
    assert (folder / "launch.json.onboard-backup").read_text() == USER_LAUNCH
    assert (folder / "settings.json.onboard-backup").read_text() == USER_SETTINGS
    # Running again changes nothing and makes no new backup.
    again = ide.write_vscode(
        folder,
        checkout=checkout,
        python="/py/bin/python",
        prefix="/__w/pytorch/pytorch",
        torch_dir=tmp_path / "site/torch",
    )
    assert [a.action for a in again] == ["unchanged", "unchanged"]
    assert len(list(folder.glob("*.onboard-backup*"))) == 2


def test_ide_unparseable_user_file_is_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / ".vscode"
    folder.mkdir()
    broken = '{ "configurations": [ {"name": "half written" '
    (folder / "launch.json").write_text(broken)
    actions = ide.write_vscode(folder, checkout=tmp_path, python="/py", prefix="/p", torch_dir=None)
    launch_action = actions[1]
    assert launch_action.action == "side-file"
    assert (folder / "launch.json").read_text() == broken
    assert launch_action.path == folder / "launch.onboard.json"
    assert (
        json.loads(launch_action.path.read_text())["configurations"][1]["name"] == ide.CPPDBG_NAME
    )
    assert "left untouched" in launch_action.message


# ---------------------------------------------------------------------------
# bad input


def test_non_empty_folder_that_is_not_a_workspace_is_refused(tmp_path: Path) -> None:
    dest = tmp_path / "stuff"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    with pytest.raises(BadInput, match="not an onboard workspace"):
        setup(SetupRequest(dest=dest, from_wheel=True))
    assert [p.name for p in dest.iterdir()] == ["notes.txt"]


def test_from_wheel_rejects_checkout_options(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="--from-wheel"):
        setup(SetupRequest(dest=tmp_path / "ws", from_wheel=True, commit="a" * 40))
    assert not (tmp_path / "ws").exists()


def test_python_without_torch(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    dest = tmp_path / "ws"
    with pytest.raises(OnboardError, match="no usable torch") as info:
        setup(SetupRequest(dest=dest, from_wheel=True, python=str(python)))
    assert f"`{python} -m pip install torch`" in (info.value.next_step or "")
    assert f"`onboard doctor --python {python}`" in (info.value.next_step or "")
    assert not dest.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["_home", "venv"]


def test_unknown_commit_asks_for_commit(
    tmp_path: Path, probed: torchenv.TorchEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    unknown = dataclasses.replace(probed, commit=torchenv.classify("2.13.0", "Unknown"))
    monkeypatch.setattr(torchenv, "probe", lambda python=None, **kw: unknown)
    with pytest.raises(OnboardError, match="does not say which commit") as info:
        setup(SetupRequest(dest=tmp_path / "ws"))
    assert "`onboard setup DIR --commit SHA`" in (info.value.next_step or "")
    assert not (tmp_path / "ws").exists()


# ---------------------------------------------------------------------------
# the command line


@pytest.mark.slow
def test_cli_from_wheel_json(
    tmp_path: Path, fast_probe: torchenv.TorchEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "ws"
    code = run_cli(_cli(), ["setup", str(dest), "--from-wheel", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    data = json.loads(out)
    assert data["ok"] is True and data["state"] == "created"
    assert data["checkout_kind"] == "reference"
    assert data["commit"] == installed_commit()
    assert data["debugging"]["cpp"].startswith("needs a full checkout")
    assert data["reference"]["files"] > 5000
    assert {f["action"] for f in data["ide_files"]} == {"created"}


def test_cli_refusal_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x.txt").write_text("")
    code = run_cli(_cli(), ["setup", str(tmp_path), "--from-wheel", "--json"])
    captured = capsys.readouterr()
    assert code == 2
    assert json.loads(captured.out)["error"]["kind"] == "BadInput"
    assert "not an onboard workspace" in captured.err


def _cli() -> click.Command:
    from onboard.cli import cli

    return cli


# ---------------------------------------------------------------------------
# QA regressions


def test_workspace_folder_gets_the_users_umask(wheel_ws: Path) -> None:
    # Built in a staging folder and renamed into place; mkdtemp's 0700 must not stick.
    import os
    import stat

    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(wheel_ws.stat().st_mode) == 0o777 & ~umask


def test_unwritable_destination_is_bad_input_and_leaves_nothing(
    tmp_path: Path, fast_probe: torchenv.TorchEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from onboard import staging

    def read_only(parent: Path, name: str) -> Path:
        raise OSError(errno.EROFS, "Read-only file system", str(parent / name))

    monkeypatch.setattr(staging, "make", read_only)
    dest = tmp_path / "ws"
    with pytest.raises(BadInput, match="Read-only file system") as info:
        setup(SetupRequest(dest=dest, from_wheel=True))
    assert "onboard setup NEW_DIR --from-wheel" in (info.value.next_step or "")
    assert not dest.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".ws.")]  # no lock, no staging


def test_a_link_that_cannot_be_renamed_is_named_not_blamed_on_disk_space(
    tmp_path: Path, fast_probe: torchenv.TorchEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from onboard import staging

    def not_a_dir(parent: Path, prefix: str) -> Path:
        raise OSError(errno.ENOTDIR, "Not a directory", str(parent / prefix))

    monkeypatch.setattr(staging, "make", not_a_dir)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "gone")  # dangling: not followed
    with pytest.raises(BadInput, match="is a symbolic link") as info:
        setup(SetupRequest(dest=link, from_wheel=True))
    assert f"`onboard setup {tmp_path / 'gone'} --from-wheel`" in (info.value.next_step or "")
    assert "Free some space" not in info.value.paragraph()
    monkeypatch.undo()
    plain = tmp_path / "plain"
    monkeypatch.setattr(staging, "make", not_a_dir)
    with pytest.raises(OnboardError) as other:
        setup(SetupRequest(dest=plain, from_wheel=True))
    assert "Free some space" not in other.value.paragraph()  # only for ENOSPC/EDQUOT


@pytest.mark.slow
def test_setup_into_a_linked_empty_folder(tmp_path: Path, fast_probe: torchenv.TorchEnv) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    reporter = Reporter()
    result = setup(SetupRequest(dest=link, from_wheel=True), reporter)
    assert (real / "onboard.json").is_file() and link.is_symlink()
    # One count of the tree's files, while working and in the summary.
    files = result.reference["files"] if result.reference else None
    assert f"building the reference tree from the wheel ({files} files)" in reporter.messages


def test_python_that_is_not_a_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "repro.py"
    script.write_text("print(1)\n")  # mode 0644: exec fails with EACCES
    code = run_cli(_cli(), ["setup", str(tmp_path / "ws"), "--from-wheel", "--python", str(script)])
    err = capsys.readouterr().err
    assert code == 1 and "bug in onboard" not in err
    assert f"There is no Python interpreter at {script}" in err
    assert not (tmp_path / "ws").exists()


def test_reference_workspace_advice_keeps_from_wheel(
    wheel_ws: Path, fast_probe: torchenv.TorchEnv
) -> None:
    ws = workspace.load(wheel_ws)
    assert ws.setup_command == f"onboard setup {wheel_ws} --from-wheel"
    # The limitation's fix is a new folder, not this workspace's path.
    assert "onboard setup NEW_DIR" in (ws.limitation("Building PyTorch") or "")
    assert str(wheel_ws) not in (ws.limitation("Building PyTorch") or "")
    with pytest.raises(BadInput) as info:
        setup(
            SetupRequest(dest=wheel_ws)
        )  # without --from-wheel: refused, and told the exact command
    assert f"`onboard setup {wheel_ws} --from-wheel` to refresh" in (info.value.next_step or "")


def test_verify_names_the_fix_for_missing_ide_files(tmp_path: Path) -> None:
    ws = workspace.Workspace(
        root=tmp_path, torch_version="2.13.0+cpu", commit=None, commit_kind="release",
        build_prefix="/__w/pytorch/pytorch", python=sys.executable,
        checkout_kind=workspace.REFERENCE,
    )  # fmt: skip
    checks = verify.ide_files(verify.VerifyContext(ws))
    assert isinstance(checks, list)
    failed = [c for c in checks if c.status == verify.FAILED]
    assert len(failed) == 3  # settings.json, launch.json, onboard.gdb: all missing
    for c in failed:
        assert f"`onboard setup {tmp_path} --from-wheel` rewrites" in c.detail
