"""What a scaffold was made with, kept in the workspace for `onboard verify`.

``<workspace>/.onboard/newop/<name>.json``: the family, the files, the branch
and the mode (``new-op``, or ``practice`` on an existing op, with what the
judge needs: the installed commit, the dtypes that reach the kernel, what was
taken out). It lives outside the checkout so that the scaffold commit holds
only PyTorch files; verify falls back to the defaults when it is missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onboard import files
from onboard.jsonable import to_json
from onboard.workflows.newop.family import Family, default
from onboard.workflows.newop.plan import op_files

NEW_OP = "new-op"
PRACTICE = "practice"


@dataclass(frozen=True)
class Manifest:
    name: str
    family: Family
    files: dict[str, str]  # role -> repo path
    branch: str
    mode: str = NEW_OP
    practice: dict[str, Any] = field(default_factory=dict)

    @property
    def is_practice(self) -> bool:
        return self.mode == PRACTICE


def folder(ws_root: Path) -> Path:
    return ws_root / ".onboard" / "newop"


def save(ws_root: Path, manifest: Manifest) -> Path:
    path = folder(ws_root) / f"{manifest.name}.json"
    files.make_dirs(path.parent)
    files.write_text(path, json.dumps(to_json(manifest), indent=2, sort_keys=True) + "\n")
    return path


def load(ws_root: Path, name: str) -> Manifest:
    path = folder(ws_root) / f"{name}.json"
    try:
        data = json.loads(path.read_text("utf-8"))
        return Manifest(
            name=data["name"],
            family=Family.from_json(data["family"]),
            files=dict(data["files"]),
            branch=data["branch"],
            mode=data.get("mode", NEW_OP),
            practice=dict(data.get("practice") or {}),
        )
    except (OSError, ValueError, KeyError, TypeError):
        files = op_files(name)
        files["header"] = default("unary").header
        return Manifest(name, default("unary"), files, f"onboard/new-op-{name}")


def names(ws_root: Path) -> list[str]:
    base = folder(ws_root)
    if not base.is_dir():
        return []
    return sorted(p.stem for p in base.glob("*.json"))
