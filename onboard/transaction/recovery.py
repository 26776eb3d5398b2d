"""A run that died (SIGKILL, a power cut) left its journal: recover it, or say so.

Only a writer recovers, holding the scope's lock (so the journal's owner is
known to be dead): ``begin`` does it first thing, and ``onboard recover``
does nothing else. A command that only reads (where, locate, doctor, trace,
harvest) never rolls anything back; it says in one line that a run was
interrupted (``scope.interrupted_note``) and goes on.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from onboard.report import Reporter
from onboard.scope import journals
from onboard.transaction.journal import parse
from onboard.transaction.steps import Transaction


@dataclass
class Recovered:
    """One interrupted run found in a scope, and what its recovery did."""

    journal: str
    command: str
    pid: object
    undone: bool  # its rollback ran (False: unreadable journal, or its work was complete)
    notes: list[str] = field(default_factory=list)
    set_aside: str | None = None  # where an unreadable journal was moved


def _read(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except (OSError, ValueError):
        return None


def recover(scope: Path, reporter: Reporter) -> list[Recovered]:
    """Roll back every run whose journal is still in ``scope`` (call with its lock held)."""
    found: list[Recovered] = []
    for path in journals(scope):
        try:
            found.append(_recover_one(scope, path, reporter))
        except FileNotFoundError:
            continue
    return found


def _recover_one(scope: Path, path: Path, reporter: Reporter) -> Recovered:
    data = _read(path)
    header, entries, bad = parse(data)
    command = header.get("command")
    if not isinstance(command, str) or not isinstance(data, dict):
        aside = path.with_name(f"{path.name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}")
        os.replace(path, aside)
        note = (
            f"the journal of an interrupted onboard run ({path}) could not be read, so nothing "
            f"was undone from it; it is kept as {aside} (check `git status` in the checkout)"
        )
        reporter.step(note)
        return Recovered(path.name, "?", None, False, [note], str(aside))
    tx = Transaction(scope, command, reporter, journal_name=path.name)
    if isinstance(header.get("run"), str):
        tx.run_id = header["run"]
    tx.entries = entries
    pid = header.get("pid", "?")
    if header.get("committed") is True:
        tx.forget()  # its work was complete; only the journal was left
        return Recovered(path.name, command, pid, False)
    if bad:
        tx.notes.append(
            f"{bad} entries of its journal were damaged and were left alone (nothing of theirs "
            "was undone)"
        )
    reporter.step(
        f"an earlier `onboard {command}` (pid {pid}) stopped before it finished: undoing what "
        "is still its own"
    )
    tx.rollback()
    return Recovered(path.name, command, pid, True, list(tx.notes))
