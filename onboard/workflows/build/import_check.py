"""After the build: prove the build is the torch in use, then point the IDE at it.

The checks run in a fresh interpreter (the build venv's python, started from
outside the checkout so the current folder cannot shadow anything), the way
spin re-imports a package after building it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard import git, proc, torchenv
from onboard.errors import OnboardError
from onboard.jsonable import spec
from onboard.shell import quote


@dataclass(frozen=True)
class PostCheck:
    name: str = field(metadata=spec(omit=True))  # the key it is listed under
    ok: bool
    detail: str


@dataclass(frozen=True)
class Imported:
    """What the fresh interpreter imported (None: ``import torch`` failed)."""

    file: str | None
    version: str | None
    git_version: str | None
    # In JSON one "libraries" {path: has debug info}, in this order (json_extra).
    libraries: tuple[str, ...] = field(metadata=spec(omit=True))
    debug_info: dict[str, bool | None] = field(metadata=spec(omit=True))
    error: str | None = None

    def json_extra(self) -> dict[str, object]:
        return {"libraries": {lib: self.debug_info.get(lib) for lib in self.libraries}}


def import_torch(venv_python: Path, *, cwd: Path) -> Imported:
    env = proc.environ(drop=("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"))
    try:
        data = proc.ask_child(
            str(venv_python), "_built_torch_child.py", options=["-s"], cwd=cwd, env=env,
            timeout=300, what="Importing the built torch",
        ).data  # fmt: skip
    except proc.NoAnswer as exc:
        result = exc.result
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-6:])
        return Imported(None, None, None, (), {}, error=tail or f"exit {result.returncode}")
    libs = tuple(data["libraries"])
    return Imported(
        data["file"],
        data["version"],
        data["git_version"],
        libs,
        {lib: torchenv.has_debug_info(Path(lib)) for lib in libs},
    )


def _inside(path: str, folder: Path) -> bool:
    try:
        Path(path).resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False


def post_checks(
    venv_python: Path, checkout: Path, *, cwd: Path
) -> tuple[Imported, tuple[PostCheck, ...]]:
    imported = import_torch(venv_python, cwd=cwd)
    if imported.error is not None:
        return imported, (
            PostCheck(
                "import torch", False, f"`import torch` failed in {venv_python}: {imported.error}"
            ),
        )
    checks = []
    assert imported.file is not None
    inside = _inside(imported.file, checkout)
    checks.append(
        PostCheck(
            "torch.__file__ in the checkout",
            inside,
            imported.file
            + ("" if inside else f" is not under {checkout}: another torch shadows the build"),
        )
    )
    head = git.refs.head_sha(checkout)
    same = bool(head) and imported.git_version == head
    checks.append(
        PostCheck(
            "torch.version.git_version == HEAD",
            same,
            f"{imported.git_version}"
            + (
                ""
                if same
                else f" != checkout HEAD {head} (torch/version.py is stale: an incremental "
                "build does not regenerate it; rebuild with CMAKE_FRESH=1)"
            ),
        )
    )
    with_dwarf = [lib for lib, has in imported.debug_info.items() if has]
    checks.append(
        PostCheck(
            "debug info (.debug_info)",
            bool(with_dwarf),
            (
                f"in {', '.join(Path(lib).name for lib in with_dwarf)}"
                if with_dwarf
                else f"none of {', '.join(Path(lib).name for lib in imported.libraries) or 'them'} "
                "carries DWARF: gdb and VS Code cannot show C++ source lines"
            ),
        )
    )
    return imported, tuple(checks)


# --- IDE -------------------------------------------------------------------------


@dataclass(frozen=True)
class IdeChange:
    path: str
    action: str  # linked / present / unchanged / created / merged / side-file / missing
    detail: str = ""


def link_compile_commands(checkout: Path) -> IdeChange:
    """``build/compile_commands.json`` at the checkout root, where clangd and VS Code look."""
    target = checkout / "compile_commands.json"
    source = checkout / "build" / "compile_commands.json"
    if target.is_symlink():
        if os.readlink(target) in ("build/compile_commands.json", str(source)):
            return IdeChange(str(target), "unchanged", "already links build/compile_commands.json")
        return IdeChange(str(target), "present", f"a link to {os.readlink(target)} (yours, kept)")
    if target.exists():
        # PyTorch's setup.py writes the merged file here itself (create_compile_commands).
        return IdeChange(str(target), "present", "written by the build (kept)")
    if not source.is_file():
        return IdeChange(str(target), "missing", "the build wrote no build/compile_commands.json")
    target.symlink_to(Path("build") / "compile_commands.json")
    if git.repository.is_repo(checkout):  # a link git should not offer to commit
        git.repository.add_exclude(checkout, "/compile_commands.json")
    return IdeChange(str(target), "linked", "-> build/compile_commands.json")


def point_launch_at(checkout: Path, venv_python: Path) -> IdeChange:
    """Onboard's own launch.json configurations run the venv's python; the user's stay."""
    from onboard import ide

    path = checkout / ".vscode" / "launch.json"
    python = str(venv_python)

    def merge(existing: dict[str, Any], fresh: dict[str, Any]) -> dict[str, Any]:
        merged = dict(existing)
        configs = []
        ours_seen = False
        for config in merged.get("configurations") or []:
            if isinstance(config, dict) and str(config.get("name", "")).startswith(ide.NAME_PREFIX):
                ours_seen = True
                config = dict(config)
                if config.get("type") == "debugpy" or "python" in config:
                    config["python"] = python
                if config.get("type") == "cppdbg":
                    config["program"] = python
            configs.append(config)
        if not ours_seen:
            configs += fresh["configurations"]
        merged["configurations"] = configs
        merged.setdefault("version", "0.2.0")
        return merged

    fresh = {
        "version": "0.2.0",
        # The build's own __FILE__ paths are the checkout's: no prefix to map.
        "configurations": ide.launch_configurations(python, None, checkout, None),
    }
    try:
        # A build's workspace is a full checkout (setup without --from-wheel).
        action = ide.write_merged(
            path, merge, fresh, again=f"onboard setup {quote(checkout.parent)}"
        )
    except OSError as exc:
        raise OnboardError(
            f"Could not update {path}: {exc}.",
            next_step=f"Set onboard's launch configurations' interpreter to {python} by hand.",
        ) from exc
    return IdeChange(str(action.path), action.action, action.message or f"python: {python}")
