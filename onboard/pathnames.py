"""Whether a path the user named can be a file or folder name at all.

Two things no path can be: empty or only spaces (an unset variable, as in
`onboard setup "$WS"`, turned the current folder into a workspace), and one
with a name longer than the file system takes (`File name too long` halfway
through a run). The CLI's path type and the workflows that add to a name the
user gave (setup's hidden staging folder beside DIR) both ask here.
"""

from __future__ import annotations

import os
from pathlib import Path

# POSIX's NAME_MAX on ext4, xfs, btrfs, tmpfs, APFS; used when the file
# system cannot be asked (nothing of the path exists yet).
FALLBACK_NAME_MAX = 255


def is_blank(value: str) -> bool:
    return not value.strip()


def name_max(path: str | os.PathLike[str]) -> int:
    """The longest name (in bytes) the file system under ``path`` takes."""
    probe = Path(path).expanduser().absolute()
    for folder in (probe, *probe.parents):
        try:
            if folder.is_dir():
                return int(os.pathconf(folder, "PC_NAME_MAX"))
        except (OSError, ValueError):  # ENAMETOOLONG itself, EACCES, no such variable
            continue
    return FALLBACK_NAME_MAX


def long_name(value: str, *, extra: int = 0) -> str | None:
    """Why ``value`` cannot be made (a name in it is too long), or None.

    ``extra``: bytes a workflow adds to the last name (a suffix of its own).
    URLs (``scheme://``) are not file names and are never refused here.
    """
    if "://" in value:
        return None
    parts = [p for p in Path(value).expanduser().parts if p not in ("/", "")]
    if not parts:
        return None
    limit = name_max(value)
    for i, part in enumerate(parts):
        size = len(os.fsencode(part)) + (extra if i == len(parts) - 1 else 0)
        if size > limit:
            shown = part if len(part) <= 24 else part[:21] + "..."
            added = f" plus the {extra} onboard adds to it" if i == len(parts) - 1 and extra else ""
            return (
                f"the name `{shown}` in it is {len(os.fsencode(part))} bytes long{added}, and the "
                f"file system takes at most {limit} bytes a name"
            )
    return None
