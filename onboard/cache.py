"""onboard's cache folder and its JSON files.

Everything cached (the build prefix of a library, harvest's per-file scan,
where/locate's indexes, bisect's release venvs) lives under
``$XDG_CACHE_HOME/onboard`` (default ``~/.cache/onboard``). A cache can
always be rebuilt, so failing to read or write one only costs time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def cache_dir(*parts: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "onboard", *parts)


def read_json(path: Path) -> dict[str, Any]:
    """The file's JSON object, or {} when it is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json(path: Path, data: dict[str, Any], *, compact: bool = False) -> None:
    """Replace the file atomically (readers never see half a file); errors are ignored."""
    from onboard import files

    separators = (",", ":") if compact else None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Beside the target, removed on any failure (a full disk included).
        files.write_bytes(path, json.dumps(data, separators=separators).encode(), journal=False)
    except OSError:
        pass
