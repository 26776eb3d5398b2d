"""What `onboard stuck` answers: one or more snapshots of the program (every
process, every thread), the waits recognised in each, and how the program ended."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from onboard.jsonable import spec
from onboard.workflows.stuck.model import Diagnosis, Picture

if TYPE_CHECKING:
    pass


@dataclass
class Snapshot:
    reason: str  # why it was taken: no progress, Ctrl-\, SIGUSR1, --timeout, asked for
    # seconds since the program started (or since onboard attached)
    after: float = field(metadata=spec(key="after_seconds", digits=2))
    # how long taking it took, all processes together
    seconds: float = field(default=0.0, metadata=spec(digits=3))
    pictures: list[Picture] = field(default_factory=list, metadata=spec(key="processes"))
    skipped: list[str] = field(default_factory=list)  # processes not read, and why
    diagnoses: list[Diagnosis] = field(default_factory=list)

    @property
    def tools(self) -> list[str]:
        return sorted({p.tool for p in self.pictures if p.tool})

    @property
    def paused(self) -> float | None:
        """The longest time one process was seen stopped while it was read."""
        values = [p.paused for p in self.pictures if p.paused is not None]
        return max(values) if values else None

    def json_extra(self) -> dict[str, Any]:
        paused = self.paused
        return {"tools": self.tools, "paused_seconds": None if paused is None else round(paused, 3)}


@dataclass
class StuckResult:
    mode: str  # "run" (a program onboard started) / "pid" (one already running)
    target: str  # the command, or "PID (command line)"
    program_exit: int | None = None  # the program's exit status, when it ended
    ended: str = ""  # how the run ended, in words
    interrupted: bool = False  # Ctrl-C after a snapshot
    commit: str | None = None
    workspace: str | None = None
    snapshots: list[Snapshot] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # snapshots already shown as they were taken
    printed: int = field(default=0, metadata=spec(omit=True))

    @property
    def exit_code(self) -> int:
        """0: a snapshot was taken (the answer), or the program ran to a clean end;
        130: Ctrl-C; 1 otherwise (it failed before any snapshot)."""
        if self.interrupted:
            return 130
        if self.snapshots or self.program_exit == 0:
            return 0
        return 1

    def json_extra(self) -> dict[str, Any]:
        return {"ok": self.exit_code == 0}
