"""Writing files: whole or not at all, and undoable inside a transaction.

Every file onboard writes for the user (workspace config, IDE files, the
noxfile, a scaffold, a manifest, caches) goes through ``write_text`` /
``write_bytes``: the data goes to a temporary file beside the target, which
replaces the target in one rename, and the temporary file is removed on any
failure (a full disk included), so a reader never sees half a file and no
``*.tmp`` is left behind. While a transaction is open (onboard/transaction/),
the write is also journalled first (``journalling.file_journal``), so a rollback
restores the file it replaced or removes the file it created.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path

from onboard import journalling
from onboard.errors import BadInput, OnboardError

# errno values that describe the user's disk or permissions, not a bug.
READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
FULL = (errno.ENOSPC, errno.EDQUOT)


def write_bytes(path: Path, data: bytes, *, mode: int | None = None, journal: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically; inside a transaction the write
    is journalled unless ``journal`` is False (caches: rebuilt, never restored)."""
    path = Path(path)
    tx = journalling.file_journal() if journal else None
    if tx is not None:
        tx.before_write(path, data)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            elif path.exists():
                os.fchmod(fd, path.stat().st_mode & 0o7777)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: Path, text: str, *, mode: int | None = None, journal: bool = True) -> None:
    write_bytes(path, text.encode("utf-8"), mode=mode, journal=journal)


def with_line_endings_of(old: bytes, new: str) -> bytes:
    """``new`` (an edit of ``old`` read as text: its lines end in LF) as bytes that keep
    ``old``'s line endings: the lines before and after the edited part keep their own
    (CRLF or LF), the edited lines take the file's most common one."""
    was = old.splitlines(keepends=True)
    now = new.encode("utf-8").splitlines(keepends=True)
    crlf = old.count(b"\r\n")
    usual = b"\r\n" if crlf > old.count(b"\n") - crlf else b"\n"

    def bare(line: bytes) -> bytes:
        return line.rstrip(b"\r\n")

    def kept(o: bytes, n: bytes) -> bytes:  # a line as it was, ended as it was (or usual)
        ending = o[len(bare(o)) :] or (usual if n != bare(n) else b"")
        return bare(n) + ending

    head = 0
    while head < min(len(was), len(now)) and bare(was[head]) == bare(now[head]):
        head += 1
    tail = 0
    while tail < min(len(was), len(now)) - head and bare(was[-1 - tail]) == bare(now[-1 - tail]):
        tail += 1
    cut_was, cut_now = len(was) - tail, len(now) - tail
    before = [kept(o, n) for o, n in zip(was[:head], now[:head], strict=True)]
    middle = [bare(n) + (usual if n != bare(n) else b"") for n in now[head:cut_now]]
    after = [kept(o, n) for o, n in zip(was[cut_was:], now[cut_now:], strict=True)]
    return b"".join(before + middle + after)


def make_dirs(folder: Path) -> None:
    """``mkdir -p`` (journalled inside a transaction: a rollback removes what it made)."""
    tx = journalling.file_journal()
    if tx is not None:
        tx.make_dirs(Path(folder))
    else:
        Path(folder).mkdir(parents=True, exist_ok=True)


def os_error(exc: OSError, *, doing: str, next_step: str | None = None) -> OnboardError:
    """An OSError from the user's disk as one paragraph: read-only or not ours
    (bad usage, exit 2), full (exit 1), a name too long (exit 2), else exit 1."""
    where = f" ({exc.filename})" if exc.filename else ""
    if exc.errno in READ_ONLY:
        return BadInput(
            f"onboard cannot write while {doing}: {exc.strerror}{where}.",
            next_step=next_step
            or "Make that folder writable (or run as its owner), or work in one you can write.",
        )
    if exc.errno in FULL:
        return OnboardError(
            f"The disk is full while {doing}: {exc.strerror}{where}; nothing half-written was "
            "kept.",
            next_step=next_step or "Free some space on that disk, then run the command again.",
        )
    if exc.errno == errno.ENAMETOOLONG:
        return BadInput(
            f"A file name is too long for this file system while {doing}{where}.",
            next_step=next_step or "Use a shorter name or a shorter folder path.",
        )
    return OnboardError(
        f"A file operation failed while {doing}: {exc.strerror or exc}{where}.",
        next_step=next_step or "Check the path and its permissions, then run the command again.",
    )
