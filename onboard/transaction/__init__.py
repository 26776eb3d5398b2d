"""The workspace transaction: every writing command goes through it.

    with transaction.begin(transaction.scope_of(ws.root), command="new-op my_frac") as tx:
        tx.watch(checkout)                      # HEAD, refs and stash as the user left them
        tx.switch_new_branch(checkout, branch)  # journalled before it happens
        files.write_text(path, text)            # journalled: created, or replaced (backed up)
        ...                                     # leaving the block commits

Inside the block, ``files`` and ``git.core`` hand each change to ``tx`` before
making it: ``begin`` opens ``journalling.opened(tx)``, the one place that sets
the open transaction (onboard/journalling.py). The journal and its entries are
``journal.py``; the steps that write them, and ``Transaction``, ``steps.py``.

What it guarantees (docs/safety.md tells it for users):

- **One writer.** The block holds the scope's lock (``lock.py``): a second
  writer waits a little, then refuses naming the holder. A writer does not
  start while the user's own rebase, merge, cherry-pick, revert, am or bisect
  is in progress in a watched repository.
- **Undo only what is still onboard's.** Any exception, Ctrl-C, SIGTERM or
  SIGHUP inside the block rolls back what the journal says this run did,
  each step only while the thing is still exactly as this run left it
  (``undo.py``); what the user changed meanwhile is kept, and the notes say
  what was left and the command that removes it.
- **The audit guards against onboard, not the user.** A ref or stash entry
  the run did not declare, that onboard moved or deleted, goes back; what
  the user's own git did during the run stays (``audit.py``).
- **SIGKILL too.** The journal is on disk (written before each action), so
  the next writer in the scope, holding the lock and thus knowing its owner
  is dead, recovers it first (``recovery.py``), with the same rules;
  ``onboard recover`` does only that. Commands that only read never roll back.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

from onboard import files, git, journalling, lock, proc, signals
from onboard.report import Reporter
from onboard.scope import CONFIG_NAME, JOURNAL, interrupted_note, scope_of, unsettled
from onboard.transaction.journal import BACKUPS
from onboard.transaction.recovery import Recovered, recover
from onboard.transaction.steps import Transaction

__all__ = [
    "BACKUPS",
    "JOURNAL",
    "Recovered",
    "Transaction",
    "begin",
    "in_workspace",
    "interrupted_note",
    "nox_session",
    "recover",
    "scope_for_repo",
    "scope_of",
    "settle",
]


def scope_for_repo(repo: Path) -> Path:
    """A repository's scope: its workspace's when it is a workspace checkout,
    else a folder in its git dir (bisect or pr on a clone of the user's)."""
    here = Path(repo).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_NAME).is_file():
            return scope_of(folder)
    return git.repository.git_dir(repo) / "onboard"


def _make_scope(scope: Path) -> None:
    """The scope folder, ignoring itself: where a workspace is also a git work
    tree, onboard's lock and journal never show in ``git status``."""
    if scope.is_dir():
        return
    try:
        scope.mkdir(parents=True, exist_ok=True)
        files.write_text(scope / ".gitignore", "*\n", journal=False)
    except OSError:
        pass  # lock.acquire says what is wrong with the folder


class _StderrReporter(Reporter):
    def step(self, message: str) -> None:
        super().step(message)
        sys.stderr.write(f"> {message}\n")


def settle(scope: Path) -> None:
    """Before a writing command plans from a workspace: recover a run that died
    there, under the lock, so it never plans from half-made state. Costs one
    folder listing otherwise; when another run holds the lock, that run owns
    the journal and this does nothing (the command's own ``begin`` waits)."""
    if not unsettled(scope):
        return
    with (
        contextlib.suppress(lock.LockBusy),
        signals.handlers(),
        lock.acquire(scope / "lock", command="recover", wait=0) as held,
        signals.critical(),
    ):
        if held.fd is not None:
            recover(scope, _StderrReporter())


@contextlib.contextmanager
def begin(
    scope: Path,
    *,
    command: str,
    what: str | None = None,
    reporter: Reporter | None = None,
    final: bool = True,
) -> Iterator[Transaction]:
    """Lock ``scope``, journal the block's writes, commit at its end or roll back.

    ``final``: the block's commit is the end of the command's work, so a
    signal arriving afterwards no longer interrupts it (``signals``)."""
    reporter = reporter or Reporter()
    scope = Path(os.path.abspath(scope))
    _make_scope(scope)
    with signals.handlers(), lock.acquire(scope / "lock", command=command, what=what) as held:
        nested = held.fd is None  # inside a run that holds the lock (it owns any journal)
        if not nested:
            with signals.critical():
                recover(scope, reporter)
        name = f"journal.{os.getpid()}-{secrets.token_hex(2)}.json" if nested else JOURNAL
        tx = Transaction(scope, command, reporter, journal_name=name)
        # The block's file writes and git commands go to ``tx`` before they are made
        # (onboard/journalling.py: one context variable, set here and only here).
        with journalling.opened(tx) as open_tx:
            try:
                yield tx
            except BaseException:
                # Its rollback is not new work to journal; git still names the run.
                open_tx.recording = False
                with signals.critical():
                    tx.rollback()
                raise
            open_tx.recording = False
            # A signal arriving from here on finds the work complete: it is kept
            # and reported as done (when this is the command's last step).
            with signals.critical():
                tx.commit()
                if final:
                    signals.work_complete()


def in_workspace(
    root: Path, *, command: str, reporter: Reporter | None = None, final: bool = True
) -> contextlib.AbstractContextManager[Transaction]:
    """``begin`` on a workspace's own scope (what most commands want)."""
    return begin(
        scope_of(root),
        command=command,
        what=f"the workspace {root}",
        reporter=reporter,
        final=final,
    )


@contextlib.contextmanager
def nox_session(root: Path, *, command: str) -> Iterator[Transaction]:
    """A workspace nox session (``nox -s verify``, ``nox -s build``), run by hand
    or by onboard: the same signal policy, child reaping and lock as the CLI."""
    # reaping inside the transaction: on an interrupt the session's children
    # (compilers) are stopped before the rollback undoes what they were writing.
    with (
        signals.handlers(),
        begin(scope_of(root), command=command, what=f"the workspace {root}", final=False) as tx,
        proc.reaping(),
    ):
        yield tx
