"""Folders built beside their destination and renamed into place.

``onboard setup`` builds a workspace (or a checkout) in a hidden sibling
folder, ``.NAME.onboard-partial-XXXXXXXX``, and renames it into place at the
end, so a failure or Ctrl-C leaves nothing behind. A run killed outright
(SIGKILL, a power cut) cannot clean up, so each staging folder holds an
owner file the run keeps ``flock``-ed: the next run that can take that lock
knows the owner is dead and removes the folder. Folders from onboard
versions without an owner file are removed once they are a day old.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from onboard import lock

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

OWNER = ".onboard-owner"
MARK = ".onboard-partial-"
LEGACY_AGE = 24 * 3600.0


@dataclass
class Staging:
    path: Path
    fd: int | None

    def release(self) -> None:
        """Drop the owner lock; the folder itself was renamed or removed by the caller."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def placed(self, final: Path) -> None:
        """The folder now lives at ``final``: remove the owner file it carried there."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(final / OWNER)
        self.release()


def prefix(name: str) -> str:
    return f".{name}{MARK}"


def make(parent: Path, name: str) -> Staging:
    """A fresh hidden folder in ``parent`` owned by this process. Unlike
    ``tempfile.mkdtemp`` (mode 0700) it gets the user's umask, since it becomes
    the workspace itself."""
    for _ in range(100):
        path = parent / f"{prefix(name)}{secrets.token_hex(4)}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "no free staging name", str(parent / prefix(name)))
    fd = None
    if fcntl is not None:
        try:
            fd = os.open(path / OWNER, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            if fd is not None:
                os.close(fd)
            shutil.rmtree(path, ignore_errors=True)
            raise
    return Staging(path, fd)


def _owner_alive(folder: Path) -> bool | None:
    """True/False when the folder has an owner file, None when it has none."""
    owner = folder / OWNER
    if fcntl is None or not owner.exists():
        return None
    return lock.is_held(owner)


def sweep(parent: Path, name: str) -> list[Path]:
    """Remove the staging folders of ``name`` in ``parent`` whose runs are dead."""
    removed: list[Path] = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefix(name)) or entry.is_symlink() or not entry.is_dir():
            continue
        alive = _owner_alive(entry)
        if alive is None:
            with contextlib.suppress(OSError):
                alive = time.time() - entry.stat().st_mtime < LEGACY_AGE
        if alive is False:
            shutil.rmtree(entry, ignore_errors=True)
            if not entry.exists():
                removed.append(entry)
    return removed
