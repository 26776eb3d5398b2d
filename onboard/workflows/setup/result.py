"""What `onboard setup` made or checked, and its JSON (the keys scripts rely on)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onboard import ide
from onboard.jsonable import spec
from onboard.workflows.checkout import FetchStats
from onboard.workflows.setup.layout import CHECKOUT_DIR

if TYPE_CHECKING:
    from onboard import torchenv
    from onboard.workflows.setup.request import SetupJob


@dataclass
class SetupResult:
    """What `onboard setup` made. JSON keys: the fields, then ``ok``: workspace,
    checkout, checkout_kind (clone/reference), commit (the torch source commit),
    commit_kind, head (the checkout's git HEAD), tag, remote, torch_version, python,
    build_prefix, has_debug_info, state (created/resumed/unchanged), actions, ide_files
    [{path, action, backup, message}], gdb_file, noxfile, fetch {objects,
    bytes_received, fetched} or null, reference {files, bytes, generated_headers,
    vendored_includes} or null, disk {needed_bytes, free_bytes}, debugging {python,
    cpp}, notes, problems, seconds, ok."""

    workspace: Path
    checkout: Path
    checkout_kind: str
    commit: str | None
    commit_kind: str
    head: str | None
    tag: str | None
    remote: str | None
    torch_version: str
    python: str
    build_prefix: str | None
    has_debug_info: bool | None
    state: str  # created / resumed / unchanged
    actions: list[str] = field(default_factory=list)
    ide_files: list[ide.FileAction] = field(default_factory=list)
    gdb_file: Path | None = None
    noxfile: Path | None = None
    fetch: FetchStats | None = None
    reference: dict[str, Any] | None = None
    disk: dict[str, Any] = field(default_factory=dict)
    debugging: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = field(default=0.0, metadata=spec(digits=2))

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def json_extra(self) -> dict[str, object]:
        return {"ok": self.ok}


def begin(req: SetupJob, env: torchenv.TorchEnv, state: str) -> SetupResult:
    """A result for ``req`` from the probe of the installed torch, before any checkout work."""
    assert env.torch is not None
    return SetupResult(
        workspace=req.root,
        checkout=req.root / CHECKOUT_DIR,
        checkout_kind=req.kind,
        commit=env.commit.sha,
        commit_kind=env.commit.kind,
        head=None,
        tag=env.commit.tag,
        remote=req.remote,
        torch_version=env.torch.version,
        python=env.python.executable,
        build_prefix=env.build_prefix.prefix,
        has_debug_info=env.has_debug_info,
        state=state,
    )
