"""What `onboard stuck` answers: one or more snapshots of the program (every
process, every thread), the waits recognised in each, and how the program ended."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from onboard.workflows.stuck.model import Diagnosis, Picture

if TYPE_CHECKING:
    pass


@dataclass
class Snapshot:
    reason: str  # why it was taken: no progress, Ctrl-\, SIGUSR1, --timeout, asked for
    after: float  # seconds since the program started (or since onboard attached)
    pictures: list[Picture] = field(default_factory=list)
    diagnoses: list[Diagnosis] = field(default_factory=list)
    seconds: float = 0.0  # how long taking it took, all processes together
    skipped: list[str] = field(default_factory=list)  # processes not read, and why

    @property
    def tools(self) -> list[str]:
        return sorted({p.tool for p in self.pictures if p.tool})

    @property
    def paused(self) -> float | None:
        """The longest time one process was seen stopped while it was read."""
        values = [p.paused for p in self.pictures if p.paused is not None]
        return max(values) if values else None

    def to_json(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "after_seconds": round(self.after, 2),
            "seconds": round(self.seconds, 3),
            "tools": self.tools,
            "paused_seconds": None if self.paused is None else round(self.paused, 3),
            "processes": [p.to_json() for p in self.pictures],
            "skipped": self.skipped,
            "diagnoses": [d.to_json() for d in self.diagnoses],
        }


@dataclass
class StuckResult:
    mode: str  # "run" (a program onboard started) / "pid" (one already running)
    target: str  # the command, or "PID (command line)"
    snapshots: list[Snapshot] = field(default_factory=list)
    program_exit: int | None = None  # the program's exit status, when it ended
    ended: str = ""  # how the run ended, in words
    interrupted: bool = False  # Ctrl-C after a snapshot
    commit: str | None = None
    workspace: str | None = None
    notes: list[str] = field(default_factory=list)
    printed: int = 0  # snapshots already shown as they were taken

    @property
    def exit_code(self) -> int:
        """0: a snapshot was taken (the answer), or the program ran to a clean end;
        130: Ctrl-C; 1 otherwise (it failed before any snapshot)."""
        if self.interrupted:
            return 130
        if self.snapshots or self.program_exit == 0:
            return 0
        return 1

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.exit_code == 0,
            "mode": self.mode,
            "target": self.target,
            "program_exit": self.program_exit,
            "ended": self.ended,
            "interrupted": self.interrupted,
            "commit": self.commit,
            "workspace": self.workspace,
            "snapshots": [s.to_json() for s in self.snapshots],
            "notes": self.notes,
        }
