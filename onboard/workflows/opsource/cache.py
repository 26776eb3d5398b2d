"""Per-tree JSON caches under ``XDG_CACHE_HOME/onboard/opsource/``.

Each reader names the shape of its entries (``onboard.cache.matches``): an
entry of another shape is rebuilt, silently, like a missing one.

A cache entry is keyed by what it was built from (the tree's commit, the
checkout path, a format version) and carries a fingerprint of the tree's
folders (their mtimes), so adding or removing a file, or moving to another
commit, rebuilds it; an in-place edit of a file is caught when that file is
shown (its line text is read live).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from onboard.cache import cache_dir, read_valid, writable_cache_dir, write_json

FORMAT = 3


def cache_root() -> Path:
    """Where entries are written (a private temp folder when the cache is read-only)."""
    return writable_cache_dir("opsource")


def read_roots() -> list[Path]:
    """Where entries are looked for: the cache folder first, even read-only."""
    return list(dict.fromkeys([cache_dir("opsource"), cache_root()]))


def key(*parts: object) -> str:
    text = "\0".join(str(p) for p in (FORMAT, *parts))
    return hashlib.sha1(text.encode()).hexdigest()[:20]


def folder_fingerprint(folders: Iterable[Path]) -> str:
    """A hash of the mtimes of ``folders`` (missing ones count as -1)."""
    digest = hashlib.sha1()
    for folder in folders:
        try:
            stamp = folder.stat().st_mtime_ns
        except OSError:
            stamp = -1
        digest.update(f"{folder}\0{stamp}\n".encode())
    return digest.hexdigest()


def load(name: str, shape: Any = object) -> dict[str, Any] | None:
    """The entry ``name`` when it exists and has ``shape`` (``onboard.cache.matches``);
    one that does not (another format, a hand edit) is treated as missing, so the
    caller rebuilds it and ``store`` replaces it."""
    for root in read_roots():
        data = read_valid(root / name, shape)
        if data:
            return data
    return None


def store(name: str, data: dict[str, Any]) -> None:
    write_json(cache_root() / name, data, compact=True)


def cached(
    name: str,
    valid: Callable[[dict[str, Any]], bool],
    build: Callable[[], dict[str, Any]],
    shape: Any = object,
) -> tuple[dict[str, Any], bool]:
    """(data, was_warm): the stored entry when it has ``shape`` and ``valid``
    accepts it, else a fresh build."""
    data = load(name, shape)
    if data is not None and valid(data):
        return data, True
    data = build()
    store(name, data)
    return data, False
