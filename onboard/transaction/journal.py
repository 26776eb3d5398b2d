"""The journal: one run's entries, on disk, written down before each change is made.

The journal lives in the scope folder, so a run that dies (SIGKILL, power loss)
leaves it for the next writer or ``onboard recover`` (``recovery.py``). A
journal is read back by that later run, possibly of another onboard version,
possibly damaged: an entry whose shape is wrong (``SHAPES``) is never acted on
(it is reported), so a bad journal can make onboard undo less, never undo the
wrong thing.

What is journalled is made by ``steps.py``; ``undo.py`` and ``audit.py`` read
it back.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any, Protocol

from onboard import files
from onboard.report import Reporter
from onboard.scope import JOURNAL

Entry = dict[str, Any]
ZERO = "0" * 40
# The name onboard's git commands give in the reflog (GIT_REFLOG_ACTION:
# "onboard[RUN] COMMAND"); the audit tells onboard's ref moves from the user's by it.
IDENTITY_PREFIX = "onboard["


class Journalled(Protocol):
    """What rollback and audit read of a run and write back: its entries, and
    the notes that tell the user what was undone, restored or kept."""

    command: str
    entries: list[Entry]
    notes: list[str]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha(path: Path) -> str | None:
    """sha256 of a file's bytes; None when it is missing or not a file."""
    try:
        return sha256(path.read_bytes())
    except OSError:
        return None


_STR = (str,)
_OPT_STR = (str, type(None))

# kind -> field -> accepted types
SHAPES: dict[str, dict[str, tuple[type, ...]]] = {
    # HEAD, every ref and the stash of a repository as the user left them
    "repo": {"repo": _STR, "branch": _OPT_STR, "head": _OPT_STR, "refs": (dict,), "stash": (list,)},
    # a ref this run created; ``values``: where this run put it (None: any value is ours)
    "ref": {"repo": _STR, "ref": _STR, "values": (list, type(None))},
    # an existing ref this run moved from ``old`` to ``new``
    "moved": {"repo": _STR, "ref": _STR, "old": _STR, "new": _STR},
    # HEAD detached at ``sha`` by this run
    "head": {"repo": _STR, "sha": _STR},
    # a ref this run deleted (it pointed at ``old``)
    "deleted": {"repo": _STR, "ref": _STR, "old": _STR},
    # a git command this run ran that deletes refs or stash entries
    "git": {"repo": _STR, "args": (list,)},
    # a file this run wrote: ``sha`` (sha256) of what it wrote, ``backup`` of what was there
    "file": {"path": _STR, "sha": _STR, "backup": _OPT_STR},
    # a folder this run created
    "dir": {"path": _STR},
    # a whole tree this run put in place (a new checkout); ``state``: its git state then
    "tree": {"path": _STR},
    # a `git bisect` this run started; ``ref``: where it began (the reset goes back
    # there); ``mark``: BISECT_START as git wrote it (``git.bisect.start_mark``)
    "bisect": {"repo": _STR, "ref": _STR},
}


def well_formed(entry: object) -> bool:
    if not isinstance(entry, dict):
        return False
    shape = SHAPES.get(entry.get("kind"))  # type: ignore[arg-type]
    if shape is None:
        return False
    return all(isinstance(entry.get(name), types) for name, types in shape.items())


def of_kind(entries: list[Entry], kind: str, repo: str | None = None) -> list[Entry]:
    return [e for e in entries if e["kind"] == kind and (repo is None or e.get("repo") == repo)]


def parse(data: object) -> tuple[dict[str, Any], list[Entry], int]:
    """(the journal's header fields, its well-formed entries, how many were not)."""
    if not isinstance(data, dict):
        return {}, [], 0
    header = {k: v for k, v in data.items() if k != "entries"}
    raw = data.get("entries")
    if not isinstance(raw, list):
        return header, [], 0
    good = [e for e in raw if well_formed(e)]
    return header, good, len(raw) - len(good)


# -- the journal on disk ------------------------------------------------------

BACKUPS = "tx-backup"


class Journal:
    """One run's entries and where they are kept. ``identity`` is the reflog message
    onboard's own ref moves carry (``journalling.reflog_name``), so that the audit can
    tell them from the user's."""

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
