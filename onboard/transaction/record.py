"""The journal on disk: one run's entries, written down before each change is made.

The journal lives in the scope folder, so a run that dies (SIGKILL, power loss)
leaves it for the next writer or ``onboard recover`` (``recovery.py``). What is
journalled is made by ``file_steps`` and ``git_steps``; ``undo.py`` and
``audit.py`` read it back.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path

from onboard import files
from onboard.report import Reporter
from onboard.scope import JOURNAL
from onboard.transaction.entries import IDENTITY_PREFIX, Entry

BACKUPS = "tx-backup"


class Journal:
    """One run's entries and where they are kept. ``identity`` is the reflog message
    onboard's own ref moves carry (``git.core.acting_as``), so that the audit can tell
    them from the user's."""

    def __init__(
        self, scope: Path, command: str, reporter: Reporter, *, journal_name: str = JOURNAL
    ) -> None:
        self.scope = scope
        self.command = command
        self.reporter = reporter
        self.journal_name = journal_name
        self.run_id = secrets.token_hex(4)
        self.identity = f"{IDENTITY_PREFIX}{self.run_id}] {command}"
        self.started = time.time()
        self.entries: list[Entry] = []
        self.committed = False
        self.notes: list[str] = []  # what a rollback or audit did or kept, for the user

    @property
    def journal_path(self) -> Path:
        return self.scope / self.journal_name

    @property
    def backups(self) -> Path:
        """Where this run keeps the files it replaces, until it ends."""
        return self.scope / BACKUPS / self.run_id

    def save(self) -> None:
        data = {
            "version": 2,
            "pid": os.getpid(),
            "run": self.run_id,
            "command": self.command,
            "started": self.started,
            "committed": self.committed,
            "entries": self.entries,
        }
        files.write_text(self.journal_path, json.dumps(data, indent=1))

    def record(self, entry: Entry) -> Entry:
        """Write ``entry`` down (before the change it describes is made)."""
        self.entries.append(entry)
        self.save()
        return entry

    def owns(self, path: Path) -> bool:
        """The transaction's own files (journals, backups, the lock): never journalled."""
        path = Path(os.path.abspath(path))
        if path.parent == self.scope:
            return path.name.startswith("journal") or path.name == "lock"
        return (self.scope / BACKUPS) in path.parents
