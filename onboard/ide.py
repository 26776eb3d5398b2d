"""VS Code and gdb files that make the debugger land in the checkout.

The installed binary names its sources under the CI build prefix
(``/__w/pytorch/pytorch/aten/src/...``, docs/pytorch-facts.md "Identifying the
installed build"); cppdbg's ``sourceFileMap`` and gdb's ``set substitute-path``
map that prefix to the checkout. debugpy's ``pathMappings`` maps the installed
``torch/`` package to the checkout's ``torch/``, so a breakpoint set in the
checkout's Python file stops the torch that actually runs.

User files are JSONC (comments, trailing commas): they are read with json5
and MERGED: the user's keys and configurations stay, onboard's own
configurations (by name) are replaced, the original is backed up before the
first change, and a file that cannot be parsed is left untouched (ours goes
next to it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onboard import files

NAME_PREFIX = "onboard: "
DEBUGPY_NAME = "onboard: Python file (debugpy, steps into torch)"
CPPDBG_NAME = "onboard: C++ attach to Python (gdb)"
BACKUP_SUFFIX = ".onboard-backup"


@dataclass(frozen=True)
class FileAction:
    """What happened to one IDE file."""

    path: Path  # the file that now holds onboard's settings
    action: str  # created / merged / unchanged / side-file (user file unparseable)
    backup: Path | None = None
    message: str = ""


def settings(python: str, checkout: Path) -> dict[str, Any]:
    return {
        "python.defaultInterpreterPath": python,
        "python.analysis.extraPaths": [str(checkout)],
    }


def safe_path_supported(python_version: str | None) -> bool:
    """Python 3.11+ honours PYTHONSAFEPATH (and -P)."""
    try:
        major, minor = (int(p) for p in (python_version or "").split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (3, 11)


def launch_configurations(
    python: str,
    prefix: str | None,
    checkout: Path,
    torch_dir: Path | None,
    python_version: str | None = None,
) -> list[dict[str, Any]]:
    env = {"TORCH_SHOW_CPP_STACKTRACES": "1"}
    if safe_path_supported(python_version):
        # A script saved in the checkout's root would otherwise import the
        # checkout's uncompiled torch/ (its folder goes first on sys.path).
        env["PYTHONSAFEPATH"] = "1"
    debugpy: dict[str, Any] = {
        "name": DEBUGPY_NAME,
        "type": "debugpy",
        "request": "launch",
        "program": "${file}",
        "console": "integratedTerminal",
        "python": python,
        # Without this, debugpy skips library frames: torch itself.
        "justMyCode": False,
        # The C++ side of a Python exception (docs/pytorch-facts.md: TORCH_SHOW_CPP_STACKTRACES).
        "env": env,
    }
    if torch_dir is not None:
        debugpy["pathMappings"] = [
            {"localRoot": str(checkout / "torch"), "remoteRoot": str(torch_dir)}
        ]
    cppdbg: dict[str, Any] = {
        "name": CPPDBG_NAME,
        "type": "cppdbg",
        "request": "attach",
        "program": python,
        "processId": "${command:pickProcess}",
        "MIMode": "gdb",
        "setupCommands": [
            {
                "description": "Enable pretty-printing for gdb",
                "text": "-enable-pretty-printing",
                "ignoreFailures": True,
            }
        ],
    }
    if prefix:
        cppdbg["sourceFileMap"] = {prefix: {"editorPath": str(checkout), "useForBreakpoints": True}}
    return [debugpy, cppdbg]


def merge_settings(existing: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    merged = dict(existing)
    for key, value in ours.items():
        if isinstance(value, list) and isinstance(merged.get(key), list):
            merged[key] = [*merged[key], *(v for v in value if v not in merged[key])]
        else:
            merged[key] = value
    return merged


def merge_launch(existing: dict[str, Any], ours: list[dict[str, Any]]) -> dict[str, Any]:
    merged = dict(existing)
    merged.setdefault("version", "0.2.0")
    theirs: list[Any] = []
    old_ours: list[Any] = []
    for c in merged.get("configurations") or []:
        mine = isinstance(c, dict) and str(c.get("name", "")).startswith(NAME_PREFIX)
        (old_ours if mine else theirs).append(c)
    # Variables the user added to one of onboard's configurations stay (ours are set).
    old_env = {str(c.get("name")): c.get("env") for c in old_ours}
    fresh = []
    for config in ours:
        added = old_env.get(str(config.get("name")))
        if isinstance(added, dict) and isinstance(config.get("env"), dict):
            config = {**config, "env": {**added, **config["env"]}}
        fresh.append(config)
    merged["configurations"] = [*theirs, *fresh]
    return merged


def read_jsonc(path: Path) -> Any:
    import json5

    return json5.loads(path.read_text(encoding="utf-8"))


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=4) + "\n"


def free_backup(path: Path) -> Path:
    """``path`` + the backup suffix, numbered past any backup already there."""
    candidate = path.with_name(path.name + BACKUP_SUFFIX)
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}{BACKUP_SUFFIX}.{n}")
        n += 1
    return candidate


def write_merged(
    path: Path, merge: Any, fresh: dict[str, Any], *, again: str = "onboard setup WS"
) -> FileAction:
    """Create ``path`` from ``fresh``, or merge into the user's file with ``merge``."""
    files.make_dirs(path.parent)
    if not path.exists():
        files.write_text(path, _dump(fresh))
        return FileAction(path, "created")
    original = path.read_text(encoding="utf-8", errors="replace")
    try:
        existing = read_jsonc(path)
        if not isinstance(existing, dict):
            raise ValueError("the top level is not an object")
    except Exception as exc:  # noqa: BLE001 - json5 raises ValueError and others
        side = path.with_name(f"{path.stem}.onboard{path.suffix}")
        files.write_text(side, _dump(fresh))
        return FileAction(
            side,
            "side-file",
            message=f"{path} could not be parsed ({exc}); it was left untouched and onboard's "
            f"settings were written to {side.name}: copy them over, or fix the file and run "
            f"`{again}` again to merge them.",
        )
    merged = merge(existing, fresh)
    text = _dump(merged)
    if text == original:
        return FileAction(path, "unchanged")
    backup = free_backup(path)
    files.write_text(backup, original)
    files.write_text(path, text)
    return FileAction(
        path,
        "merged",
        backup,
        f"merged into your {path.name} (your settings and configurations kept; comments "
        f"are not carried into the merged file: the original is at {backup.name})",
    )


def write_vscode(
    folder: Path,
    *,
    checkout: Path,
    python: str,
    prefix: str | None,
    torch_dir: Path | None,
    again: str = "onboard setup WS",
    python_version: str | None = None,
) -> list[FileAction]:
    """Write or merge ``folder/settings.json`` and ``folder/launch.json``; their
    contents name ``checkout`` (the final path, when ``folder`` is still staged).
    ``again`` is the command that merges them once a broken file is fixed."""
    actions = [
        write_merged(
            folder / "settings.json", merge_settings, settings(python, checkout), again=again
        ),
    ]
    ours = launch_configurations(python, prefix, checkout, torch_dir, python_version)
    actions.append(
        write_merged(
            folder / "launch.json",
            lambda existing, fresh: merge_launch(existing, fresh["configurations"]),
            {"version": "0.2.0", "configurations": ours},
            again=again,
        )
    )
    return actions


def gdb_script(prefix: str | None, checkout: Path, gdb_file: Path) -> str:
    from onboard.render import render

    return render(
        "setup/onboard.gdb.j2", prefix=prefix, checkout=str(checkout), gdb_file=str(gdb_file)
    )
