"""The workspace: a folder made by `onboard setup` that every later command finds.

It holds ``onboard.json`` (this config), the checkout (``pytorch/``) and a
generated ``noxfile.py`` whose sessions live in ``onboard.tasks``. Found from
``--workspace``, then ``ONBOARD_WORKSPACE``, then by walking up from the
current folder.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from onboard.errors import BadInput, NoWorkspace, OnboardError
from onboard.jsonable import to_json
from onboard.scope import CONFIG_NAME

SCHEMA = 1

# checkout kinds
CLONE = "clone"  # a git checkout of the commit (usually depth 1)
REFERENCE = "reference"  # a git-tracked tree rebuilt from the installed wheel's files


class NotAWorkspace(BadInput, NoWorkspace):
    """--workspace or ONBOARD_WORKSPACE names a folder that is not a workspace (exit 2)."""


@dataclass(frozen=True)
class Workspace:
    root: Path
    torch_version: str
    commit: str | None  # the installed torch's source commit (40 hex) when known
    commit_kind: str  # release / nightly / local / unknown / override
    build_prefix: str | None  # e.g. /__w/pytorch/pytorch
    python: str  # the probed interpreter
    checkout: str = "pytorch"  # relative to root
    checkout_kind: str = CLONE
    remote: str | None = None
    tag: str | None = None
    notes: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def checkout_path(self) -> Path:
        return self.root / self.checkout

    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_NAME

    @property
    def is_reference(self) -> bool:
        return self.checkout_kind == REFERENCE

    def limitation(self, what: str) -> str | None:
        """The sentence a command prints when the reference tree cannot show ``what``."""
        if not self.is_reference:
            return None
        # A workspace never switches kind (setup refuses), so the full checkout
        # has to go in a new folder.
        return (
            f"{what} needs a full checkout: this workspace holds the reference tree rebuilt "
            "from the installed wheel (Python sources, headers and yaml; no .cpp/.cu files). "
            "Get one in a new folder with `onboard setup NEW_DIR` (or `onboard setup NEW_DIR "
            "--remote <url or mirror>`)."
        )

    @property
    def setup_command(self) -> str:
        """The command that checks and repairs this workspace (keeps its kind)."""
        from onboard.shell import quote

        return f"onboard setup {quote(self.root)}" + (" --from-wheel" if self.is_reference else "")

    def github_url(self, path: str, line: int | None = None) -> str | None:
        if not self.commit:
            return None
        anchor = f"#L{line}" if line else ""
        return f"https://github.com/pytorch/pytorch/blob/{self.commit}/{path}{anchor}"

    def json_extra(self) -> dict[str, object]:
        return {"schema": SCHEMA}


def save(ws: Workspace) -> Path:
    from onboard import files

    data = to_json(ws)
    data.pop("root")
    files.write_text(ws.config_path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    return ws.config_path


# setup refuses a non-empty folder without a config, so deleting a broken one
# does not let `onboard setup` repair it in place.
_BROKEN_CONFIG_FIX = (
    "Fix the file by hand, or make a new workspace with `onboard setup NEW_DIR --from-wheel` "
    "(offline) or `onboard setup NEW_DIR`."
)
# What `save` always writes (the fields without a default).
_REQUIRED = ("torch_version", "commit", "commit_kind", "build_prefix", "python")


def load(root: Path) -> Workspace:
    path = root / CONFIG_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NoWorkspace(
            f"{root} is not an onboard workspace (no {CONFIG_NAME}).",
            next_step="Create one with `onboard setup DIR --from-wheel` (offline) or "
            "`onboard setup DIR`.",
        ) from None
    except ValueError as exc:
        raise OnboardError(
            f"The workspace config {path} is not valid JSON ({exc}).",
            next_step=_BROKEN_CONFIG_FIX,
        ) from exc
    missing = [name for name in _REQUIRED if not isinstance(data, dict) or name not in data]
    text_fields = ("torch_version", "python", "commit_kind", "checkout", "checkout_kind")
    if missing or not all(isinstance(data.get(k, ""), str) for k in text_fields):
        raise OnboardError(
            f"The workspace config {path} is not one onboard wrote ("
            + (f"missing {', '.join(missing)}" if missing else "wrong value types")
            + ").",
            next_step=_BROKEN_CONFIG_FIX,
        )
    data.pop("schema", None)
    data["notes"] = tuple(data.get("notes") or ())
    known = {f for f in Workspace.__dataclass_fields__ if f != "root"}
    extra = {k: v for k, v in data.items() if k not in known}
    kwargs = {k: v for k, v in data.items() if k in known}
    ws = Workspace(root=root.resolve(), **kwargs)
    if extra:
        ws = replace(ws, extra={**ws.extra, **extra})
    return ws


def find(
    explicit: str | os.PathLike[str] | None = None,
    start: Path | None = None,
    *,
    writing: bool = False,
) -> Workspace | None:
    """The workspace named by ``explicit`` / ONBOARD_WORKSPACE, or the one above ``start``.

    ``writing``: the command will change the workspace, so a run that died
    there is recovered first (under the lock) and the command plans from
    whole state; a command that only reads is told about it in one line."""
    folder = locate(explicit, start)
    return _opened(folder, writing=writing) if folder is not None else None


def locate(
    explicit: str | os.PathLike[str] | None = None, start: Path | None = None
) -> Path | None:
    """The folder ``find`` opens, not opened (no rollback of a run that died there)."""
    named = explicit or os.environ.get("ONBOARD_WORKSPACE")
    if named:
        folder = Path(named).expanduser().resolve()
        if not (folder / CONFIG_NAME).is_file():
            # Named by the user: bad input (exit 2), and say where the name came from.
            # (Click hands ONBOARD_WORKSPACE in as --workspace's value.)
            from_env = os.environ.get("ONBOARD_WORKSPACE") == named
            source = "ONBOARD_WORKSPACE" if from_env else "--workspace"
            state = "does not exist" if not folder.exists() else f"has no {CONFIG_NAME}"
            raise NotAWorkspace(
                f"{source} names {folder}, which is not an onboard workspace (it {state}).",
                next_step=(
                    "Unset ONBOARD_WORKSPACE or point it at the folder `onboard setup DIR` made"
                    if from_env
                    else "Pass the folder `onboard setup DIR` made"
                )
                + ", or create one with `onboard setup DIR --from-wheel` (offline) or "
                "`onboard setup DIR`.",
            )
        return folder
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_NAME).is_file():
            return folder
    return None


def _opened(folder: Path, *, writing: bool = False) -> Workspace:
    """Load a workspace a command is about to use (see ``find``)."""
    from onboard.scope import interrupted_note, scope_of, unsettled

    if unsettled(scope_of(folder)):
        if writing:
            from onboard.transaction import settle

            settle(scope_of(folder))
        else:
            note = interrupted_note(scope_of(folder))
            if note:
                sys.stderr.write(f"note: {note}\n")
    return load(folder)


def load_for_writing(root: Path) -> Workspace:
    """``load`` for a command that will change the workspace (``find``'s ``writing``)."""
    return _opened(root, writing=True)


def require(
    explicit: str | os.PathLike[str] | None = None,
    start: Path | None = None,
    *,
    writing: bool = False,
) -> Workspace:
    ws = find(explicit, start, writing=writing)
    if ws is None:
        raise NoWorkspace(
            f"No onboard workspace was found in {(start or Path.cwd())} or any folder above it.",
            next_step="Run `onboard setup DIR --from-wheel` (offline, seconds) or "
            "`onboard setup DIR` first, then run this command inside DIR or pass --workspace DIR.",
        )
    return ws
