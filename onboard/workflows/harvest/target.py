"""Where to harvest: ``--repo PATH``, else the workspace checkout, else the git repo around cwd."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from onboard import workspace as ws_mod
from onboard.errors import BadInput, OnboardError
from onboard.shell import quote


@dataclass(frozen=True)
class Target:
    root: Path
    ws: ws_mod.Workspace | None  # the workspace whose checkout this is, if any
    kind: str  # "reference" / "clone" / "checkout" (a repo not made by onboard)

    def url(
        self, path: str, line: int | None = None, changes: Mapping[str, str] | None = None
    ) -> str | None:
        """The file at the installed commit on GitHub: none for a file only this checkout
        has (a new-op branch's), no line anchor for one changed here (its lines moved).
        ``changes``: what differs from that commit (``links.local_changes``), else asked."""
        if self.ws is None:
            return None
        if changes is None:
            from onboard.workflows.opsource.paths import SourceMap

            changes = SourceMap(self.ws).local_changes()
        change = changes.get(path)
        if change == "added":
            return None
        return self.ws.github_url(path, line if change is None else None)


def resolve_target(workspace: str | None, repo: str | None) -> Target:
    """``--repo PATH``, else the workspace checkout, else the git repo around cwd."""
    if repo:
        root = Path(repo).expanduser().resolve()
        if not root.is_dir():
            raise BadInput(
                f"--repo {repo}: no such folder.",
                next_step="Pass the path of a PyTorch checkout (or the checkout inside an "
                "onboard workspace).",
            )
        ws = _workspace_quietly(workspace)
        if ws is not None and ws.checkout_path.resolve() != root:
            ws = None
        return Target(root, ws, _kind(ws))
    ws = ws_mod.find(workspace)
    if ws is not None:
        root = ws.checkout_path
        if not root.is_dir():
            raise OnboardError(
                f"The workspace {ws.root} has no checkout at {root}.",
                next_step=f"Run `onboard setup {quote(ws.root)} --from-wheel` (offline) to rebuild "
                "it.",
            )
        return Target(root.resolve(), ws, _kind(ws))
    from onboard import git

    try:
        root = git.repository.get_root(Path.cwd())
    except OnboardError:
        raise OnboardError(
            f"No onboard workspace and no git repository around {Path.cwd()}: nothing to harvest.",
            next_step="Run `onboard setup DIR --from-wheel` (offline, seconds) and run "
            "`onboard harvest` inside DIR, or pass --repo PATH of a PyTorch checkout.",
        ) from None
    return Target(root.resolve(), None, "checkout")


def _workspace_quietly(explicit: str | None) -> ws_mod.Workspace | None:
    try:
        return ws_mod.find(explicit)
    except OnboardError:
        return None


def _kind(ws: ws_mod.Workspace | None) -> str:
    if ws is None:
        return "checkout"
    return "reference" if ws.is_reference else "clone"
