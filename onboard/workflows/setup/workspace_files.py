"""The files around the checkout: VS Code and gdb files that map the binary's build
paths to the checkout, the workspace's noxfile, and its config (``onboard.json``)."""

from __future__ import annotations

from pathlib import Path

from onboard import files, git, ide, torchenv, workspace
from onboard.jsonable import to_json
from onboard.shell import quote
from onboard.workflows.setup.layout import CHECKOUT_DIR, GDB_FILE, NOXFILE
from onboard.workflows.setup.request import SetupJob
from onboard.workflows.setup.result import SetupResult


def write(req: SetupJob, env: torchenv.TorchEnv, at: Path, result: SetupResult) -> None:
    """IDE files, gdb file, noxfile and onboard.json, written under ``at`` with
    paths that name the final location ``req.root``."""
    assert env.torch is not None
    final_checkout = req.root / CHECKOUT_DIR
    repo = at / CHECKOUT_DIR
    prefix = env.build_prefix.prefix
    actions = ide.write_vscode(
        repo / ".vscode",
        checkout=final_checkout,
        python=env.python.executable,
        prefix=prefix,
        torch_dir=env.torch.package_dir,
        again=f"onboard setup {quote(req.root)}" + (" --from-wheel" if req.from_wheel else ""),
        python_version=env.python.version,
    )
    # The files name the final paths, not the staging folder they were written in.
    result.ide_files = [
        ide.FileAction(
            _relocate(a.path, at, req.root),
            a.action,
            _relocate(a.backup, at, req.root) if a.backup else None,
            a.message.replace(str(at), str(req.root)),
        )
        for a in actions
    ]
    if git.repository.add_exclude(repo, "/.vscode/"):
        result.actions.append("added /.vscode/ to .git/info/exclude (kept out of git status)")
    gdb_path = at / GDB_FILE
    files.write_text(gdb_path, ide.gdb_script(prefix, final_checkout, req.root / GDB_FILE))
    result.gdb_file = req.root / GDB_FILE
    result.noxfile = req.root / NOXFILE
    result.actions += _write_noxfile(at / NOXFILE, req.root, result)
    result.debugging = _debugging(result, env)
    workspace.save(_config(req, env, at, result))


def _config(
    req: SetupJob, env: torchenv.TorchEnv, at: Path, result: SetupResult
) -> workspace.Workspace:
    """The workspace's onboard.json: what later commands read about this setup."""
    assert env.torch is not None
    return workspace.Workspace(
        root=at,
        torch_version=result.torch_version,
        commit=result.commit,
        commit_kind=result.commit_kind,
        build_prefix=env.build_prefix.prefix,
        python=env.python.executable,
        checkout=CHECKOUT_DIR,
        checkout_kind=req.kind,
        remote=req.remote,
        tag=result.tag,
        notes=tuple(result.notes),
        extra={
            "head": result.head,
            "target": req.commit or env.commit.sha,
            "installed_git_version": env.torch.git_version,
            "installed_commit_kind": env.commit.kind,
            "has_debug_info": env.has_debug_info,
            "torch_dir": str(env.torch.package_dir),
            "ide": {
                "settings": str(result.ide_files[0].path),
                "launch": str(result.ide_files[1].path),
                "gdb": str(result.gdb_file),
            },
            "reference": result.reference,
            "fetch": to_json(result.fetch),
        },
    )


def _relocate(path: Path, at: Path, root: Path) -> Path:
    try:
        return root / path.relative_to(at)
    except ValueError:
        return path


def _write_noxfile(path: Path, root: Path, result: SetupResult) -> list[str]:
    from onboard.render import render

    text = render(
        "setup/noxfile.py.j2",
        torch_version=result.torch_version,
        commit=result.commit or "unknown",
        root=str(root),
    )
    if path.exists():
        old = path.read_text(encoding="utf-8", errors="replace")
        if old == text:
            return []
        code = [ln for ln in old.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        ours = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        if code != ours:
            backup = ide.free_backup(path)
            files.write_text(backup, old)
            files.write_text(path, text)
            return [f"noxfile.py had your changes: backed up to {backup.name}, then regenerated"]
    files.write_text(path, text)
    return ["wrote noxfile.py (sessions from onboard.tasks.workspace)"]


def _debugging(result: SetupResult, env: torchenv.TorchEnv) -> dict[str, str]:
    python = (
        "works now: the debugpy launch config (justMyCode off) stops at breakpoints in the "
        "checkout's torch/*.py, mapped to the installed torch"
    )
    if result.commit_kind == "override":
        python += " (the checkout is not the installed commit: lines may differ)"
    # A script saved in the checkout's root imports the checkout's torch/, which
    # has no compiled libraries (importing it fails with an OSError naming
    # torch/lib/libtorch_global_deps.so).
    checkout = result.workspace / CHECKOUT_DIR
    python += (
        f"; keep the scripts you run out of {checkout}'s root folder (e.g. in "
        f"{result.workspace}): a script saved there imports the checkout's torch/, which has "
        "no compiled libraries, instead of the installed torch"
    )
    if ide.safe_path_supported(env.python.version):
        python += (
            " (the debugpy config sets PYTHONSAFEPATH=1, so debugging one from there still "
            "uses the installed torch; debugpy 1.8.22 honours it, older releases may not)"
        )
    else:
        python += f" (Python {env.python.version} has no PYTHONSAFEPATH to prevent it)"
    prefix = env.build_prefix.prefix
    if result.checkout_kind == workspace.REFERENCE:
        cpp = (
            "needs a full checkout and a debug build: a reference tree has headers but no "
            ".cpp/.cu sources (`onboard setup NEW_DIR`, then `onboard build`)"
        )
    elif env.has_debug_info:
        cpp = (
            f"the libraries carry debug info: attach with the cppdbg config or "
            f"`gdb -x {quote(result.workspace / GDB_FILE)}`; {prefix} maps to the checkout"
        )
    elif env.has_debug_info is False:
        cpp = (
            "the installed libraries have no DWARF debug info (a release wheel): gdb shows C++ "
            "function names but cannot step into C++ source lines; `onboard build` makes a "
            "debug build of this checkout that can"
        )
    else:
        cpp = (
            "unknown: onboard could not read the torch libraries to tell whether they have "
            "debug info"
        )
    if not prefix:
        cpp += "; no build prefix was found, so no source mapping was written"
    return {"python": python, "cpp": cpp}
