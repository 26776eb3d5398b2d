"""Files a run writes and folders it creates, journalled before each change
(``onboard.files`` calls ``before_write`` for every write under an open transaction)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from onboard.transaction.entries import of_kind, sha256
from onboard.transaction.record import Journal


class FileSteps(Journal):
    def before_write(self, path: Path, data: bytes) -> None:
        """``path`` is about to hold ``data``: keep a copy of what it held first (once
        per run), and the digest of what onboard wrote, which a rollback compares
        before it puts the copy back."""
        if self.owns(path):
            return
        path = Path(os.path.abspath(path))
        for entry in of_kind(self.entries, "file"):
            if entry["path"] == str(path):
                entry["sha"] = sha256(data)
                self.save()
                return
        backup = None
        if path.exists():
            self.backups.mkdir(parents=True, exist_ok=True)
            backup = self.backups / f"{len(self.entries)}-{path.name}"
            shutil.copy2(path, backup)
        self.record(
            {
                "kind": "file",
                "path": str(path),
                "sha": sha256(data),
                "backup": str(backup) if backup else None,
            }
        )

    def make_dirs(self, folder: Path) -> None:
        """``mkdir -p``, journalling each folder it creates."""
        folder = Path(os.path.abspath(folder))
        missing = []
        probe = folder
        while not probe.exists():
            missing.append(probe)
            probe = probe.parent
        for path in reversed(missing):
            self.record({"kind": "dir", "path": str(path)})
            path.mkdir()
