"""What `onboard new-op NAME` was asked."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class NewOpRequest:
    """``name``: the op. ``kind``: ``unary`` or ``binary`` (None: unary, or the kind of
    ``like``; the command's choice is the one check of it). ``like``: an existing op whose
    family to copy. ``dry_run``: the diff only. ``reveal``: for an existing op, how PyTorch
    writes it (nothing written). ``workspace``: as everywhere."""

    name: str
    kind: str | None = None
    like: str | None = None
    dry_run: bool = False
    reveal: bool = False
    workspace: str | None = None
