"""One run's transaction: every change is written down before it is made, and at
the end the work is kept (``commit``) or what is still the run's own is undone
(``rollback``); both end with the ref audit.

The steps live by what they change: the journal itself (``record``), files
(``file_steps``), git (``git_steps``); reading it back is ``undo`` and ``audit``.
"""

from __future__ import annotations

import contextlib
import os
import shutil

from onboard.transaction import audit, undo
from onboard.transaction.file_steps import FileSteps
from onboard.transaction.git_steps import HeadSteps, RefSteps
from onboard.transaction.record import BACKUPS

__all__ = ["BACKUPS", "Transaction"]


class Transaction(FileSteps, HeadSteps, RefSteps):
    """The journal of one run; ``commit`` keeps its work, ``rollback`` undoes
    what is still its own (``undo.py``); both end with the ref audit."""

    def commit(self) -> None:
        """The run's work is complete: keep it, audit the user's refs, drop the journal."""
        if self.committed:
            return
        self.committed = True
        self.save()
        audit.audit(self, rolled_back=False)
        self.forget()

    def rollback(self) -> None:
        undo.rollback(self)
        audit.audit(self, rolled_back=True)
        self.forget()

    def forget(self) -> None:
        for note in self.notes:
            self.reporter.step(note)
        shutil.rmtree(self.backups, ignore_errors=True)
        with contextlib.suppress(OSError):  # another run's backups, or none
            (self.scope / BACKUPS).rmdir()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.journal_path)
