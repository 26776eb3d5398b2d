"""Disk space: what a checkout or a reference tree needs, checked before any work."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from onboard.errors import OnboardError
from onboard.units import human_bytes
from onboard.workflows import checkout as checkout_mod
from onboard.workflows import reference_tree
from onboard.workflows.setup.request import SetupJob

# A reference tree's pack is ~25% of the sources at zlib level 1 (23 MiB for
# the 92 MB of the 2.13.0 wheel); the checked-out files are the sources.
REFERENCE_PACK_RATIO = 0.3


def check(req: SetupJob, tree: reference_tree.TreePlan | None) -> dict[str, Any]:
    """Enough free space under ``req.root`` for ``tree`` (None: a depth-1 clone), or an error."""
    if tree is not None:
        need = int(tree.total_bytes * (1 + REFERENCE_PACK_RATIO) * checkout_mod.MARGIN)
        return _check_free(req.root, need, "The reference tree")
    need = checkout_mod.disk_estimate(
        with_submodules=req.with_submodules, reference=req.reference is not None
    )
    return _check_free(req.root, need, "A depth-1 PyTorch checkout")


def _check_free(path: Path, need: int, what: str) -> dict[str, Any]:
    probe_at = path
    while not probe_at.exists():
        probe_at = probe_at.parent
    free = shutil.disk_usage(probe_at).free
    if free < need:
        raise OnboardError(
            f"{what} needs about {human_bytes(need)} of disk, and only "
            f"{human_bytes(free)} is free at {probe_at}.",
            next_step="Free some space or pick a folder on another disk; "
            "`onboard setup DIR --from-wheel` needs far less (about 150 MB).",
        )
    return {"needed_bytes": need, "free_bytes": free, "checked_at": str(probe_at)}
