"""onboard's own scaffold text in a change: parts new-op left to write, and its markers.

A branch made by `onboard new-op` starts with placeholders (an identity
kernel, ``self: grad``, a placeholder REFERENCE) marked ``TODO(onboard new-op)``
(``onboard.workflows.newop.placeholders``). They compile and pass their own
checks, so a pull request could carry them unnoticed. The commits are read, not
the working tree: an uncommitted fix is not in the pull request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from onboard import git
from onboard.workflows.newop import manifest as manifests
from onboard.workflows.newop.placeholders import MARKER, Unwritten, unwritten

if TYPE_CHECKING:
    from onboard.workflows.pr.change import Change
    from onboard.workspace import Workspace

MARKER_LEFT = f"a {MARKER} line (onboard's note to you, not PyTorch's)"


def leftovers(change: Change, ws: Workspace | None) -> list[Unwritten]:
    """The scaffold placeholders and marker lines the change's last commit still has."""
    paths = change.existing_paths
    if not paths:
        return []

    def read(rel: str) -> str | None:
        if rel not in paths:
            return None
        shown = git.core.git(change.repo, "show", f"{change.head}:{rel}", check=False)
        return shown.stdout if shown.ok else None

    found: list[Unwritten] = []
    if ws is not None:
        for name in manifests.names(ws.root):
            manifest = manifests.load(ws.root, name)
            if not manifest.is_practice and set(manifest.files.values()) & set(paths):
                found += unwritten(change.repo, manifest, read)
    covered = {u.location for u in found}
    listed = git.core.git(
        change.repo, "grep", "-n", "-F", MARKER, change.head, "--", *paths, check=False
    )
    for row in listed.stdout.splitlines():
        # <rev>:<path>:<line>:<text>
        _rev, rel, line, _text = (row.split(":", 3) + ["", "", ""])[:4]
        where = f"{rel}:{line}"
        if line.isdigit() and where not in covered:
            found.append(Unwritten(MARKER_LEFT, where))
    return found
