"""The open transaction, as the two doors that change things see it.

Every file onboard writes goes through ``files`` and every git command through
``git.core``. While a transaction is open (onboard/transaction/), both tell it of
each change before it is made, so that a rollback can undo it:

- ``files`` hands each write and each folder it makes to the innermost open
  transaction that is still recording (``file_journal``);
- ``git.core`` hands each git command to every open transaction that is
  recording (``git_journals``: they journal the commands that can delete refs
  or stash entries), and names the innermost one in git's reflog
  (``reflog_name``), so that the audit tells onboard's ref moves from the user's.

All of it is one context variable, ``OPEN``, set only by ``opened``, which
``transaction.begin`` opens around its block. A context variable, not a module
global: the transaction belongs to the code that runs in its block. A thread
started there begins without it (Python gives a new thread an empty context);
the threads onboard runs while a transaction is open only read (verify's checks,
setup's torch probe), and one that writes must run in ``contextvars.copy_context()``
to be journalled.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class Recorder(Protocol):
    """What an open transaction is to ``files`` and ``git.core``: it writes each
    change down before it is made (onboard/transaction/steps.py)."""

    identity: str  # its name in git's reflog: "onboard[RUN] COMMAND"

    def before_write(self, path: Path, data: bytes) -> None: ...

    def make_dirs(self, folder: Path) -> None: ...

    def before_git(self, repo: str | os.PathLike[str] | None, args: list[str]) -> None: ...


@dataclass
class Open:
    """One open transaction; ``outer``: the one it was opened inside (a nested run)."""

    journal: Recorder
    outer: Open | None
    # False once the transaction is ending (its commit or rollback): what it then
    # does is its own undo, not new work to journal. Its name stays in the reflog.
    recording: bool = True

    def chain(self) -> Iterator[Open]:
        """This transaction, then those it runs inside (innermost first)."""
        here: Open | None = self
        while here is not None:
            yield here
            here = here.outer


OPEN: ContextVar[Open | None] = ContextVar("onboard_open_transaction", default=None)


@contextlib.contextmanager
def opened(journal: Recorder) -> Iterator[Open]:
    """``journal`` is the open transaction for the block (inside any already open)."""
    here = Open(journal, OPEN.get())
    token = OPEN.set(here)
    try:
        yield here
    finally:
        OPEN.reset(token)


def file_journal() -> Recorder | None:
    """Where a file write is journalled: the innermost open transaction still recording."""
    here = OPEN.get()
    return next((o.journal for o in here.chain() if o.recording), None) if here else None


def git_journals() -> list[Recorder]:
    """Every open transaction still recording, innermost first: each journals the git
    commands that can delete its user's refs."""
    here = OPEN.get()
    return [o.journal for o in here.chain() if o.recording] if here else []


def reflog_name() -> str | None:
    """The innermost open transaction's name, for git's reflog (None: none is open)."""
    here = OPEN.get()
    return here.journal.identity if here else None
