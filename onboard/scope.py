"""Where a workspace keeps its lock and its transaction journal.

Apart from ``transaction`` so that a command that only reads a workspace can
ask "did a run die here mid-way?" (one ``stat``) without importing the
machinery that rolls such a run back.
"""

from __future__ import annotations

from pathlib import Path

JOURNAL = "journal.json"
SCOPE_DIR = ".onboard"  # inside a workspace root


def scope_of(ws_root: Path) -> Path:
    """The folder holding a workspace's lock and journal."""
    return Path(ws_root) / SCOPE_DIR


def unsettled(scope: Path) -> bool:
    """Whether a run's journal is still on disk there (it died mid-way)."""
    return (scope / JOURNAL).exists()
