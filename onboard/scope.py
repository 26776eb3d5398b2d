"""Where a workspace keeps its lock and its transaction journals.

Apart from ``transaction`` so that a command that only reads a workspace can
ask "did a run die here mid-way?" (one folder listing) without importing the
machinery that rolls such a run back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

CONFIG_NAME = "onboard.json"  # a workspace's root holds it
JOURNAL = "journal.json"  # the journal of the run holding the lock
SCOPE_DIR = ".onboard"  # inside a workspace root


def scope_of(ws_root: Path) -> Path:
    """The folder holding a workspace's lock and journals."""
    return Path(ws_root) / SCOPE_DIR


def journals(scope: Path) -> list[Path]:
    """The journals in ``scope``: the lock holder's ``journal.json`` and those of
    runs it started (``journal.PID-N.json``, a workspace nox session under
    ``onboard verify``), nested ones first, so they are undone first."""
    try:
        names = [
            entry.name
            for entry in os.scandir(scope)
            if entry.name.startswith("journal") and entry.name.endswith(".json")
        ]
    except OSError:
        return []
    return [Path(scope) / name for name in sorted(names, key=lambda n: (n == JOURNAL, n))]


def unsettled(scope: Path) -> bool:
    """Whether a run's journal is still on disk there (it died mid-way, or runs now)."""
    return bool(journals(scope))


def interrupted_note(scope: Path) -> str | None:
    """One line for a command that only reads: a run died here and was not yet
    recovered (None when there is none, or while its writer still runs)."""
    from onboard import lock

    paths = journals(scope)
    if not paths or lock.is_held(Path(scope) / "lock"):
        return None
    try:
        data = json.loads(paths[-1].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    header = data if isinstance(data, dict) else {}
    command, pid = header.get("command"), header.get("pid")
    what = f"`onboard {command}`" if isinstance(command, str) else "an onboard run"
    who = f" (pid {pid})" if isinstance(pid, int) else ""
    return (
        f"{what}{who} stopped before it finished in {Path(scope).parent}; nothing was undone "
        "yet: `onboard recover` (or the next writing command there) undoes what is still its own."
    )
