"""What `onboard locate` answers: the verdict, the line that raised and the chain down
to it, or the ranked candidate sites, with how sure it is and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onboard.jsonable import spec, to_json
from onboard.workflows.opsource import compiled, confidence
from onboard.workflows.opsource.chain import Layer
from onboard.workflows.opsource.paths import SourceLoc

# What was read: a command run, a message, a log from stdin.
COMMAND = "command"
MESSAGE = "message"
STDIN = "stdin"

FOUND = "found"  # the binary named the site, or a torch frame raised it
MATCHED = "matched"  # message-only: ranked candidate sites
NO_MATCH = "no_match"
NOT_TORCH = "not_torch"
NO_ERROR = "no_error"
COMMAND_FAILED = "command_failed"  # the command failed before any exception reached Python
IMPORT_FAILED = "import_failed"  # an extension would not load: the doctor's analysis


@dataclass(frozen=True)
class Candidate:
    location: SourceLoc
    macro: str
    function: str | None
    pieces: tuple[str, ...]
    coverage: float = field(metadata=spec(digits=3))
    raises: str = "RuntimeError"  # the Python exception (or warning) the site arrives as
    score: float = 0.0
    tied: bool = field(default=False, metadata=spec(key="tied_with_best"))  # ranks as the best
    reasons: tuple[str, ...] = ()  # why it ranks lower than its text alone would say


@dataclass(frozen=True)
class Warned:
    """A warning torch raised, where (Triggered internally at) and what it said."""

    location: SourceLoc = field(metadata=spec(omit=True))  # its keys join (json_extra)
    category: str | None
    message: str | None

    def json_extra(self) -> dict[str, Any]:
        return to_json(self.location)  # its keys join the warning's


@dataclass
class LocateResult:
    mode: str  # COMMAND / MESSAGE / STDIN
    verdict: str
    exc_type: str | None = None
    message: str | None = None
    command: list[str] | None = None
    command_exit: int | None = None
    check: SourceLoc | None = None  # the line that raised, when known exactly
    check_function: str | None = None
    chain: list[Layer] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    candidates_total: int = 0  # every site that matched, shown or not
    confidence: str = confidence.NONE
    blind_spots: list[str] = field(default_factory=list)
    diagnosis: list[Any] = field(default_factory=list)  # doctor findings for a failed import
    # A reference tree without the site: the message's text in the compiled libraries.
    compiled: list[compiled.CompiledText] = field(default_factory=list)
    warnings: list[Warned] = field(default_factory=list)
    python_frames: list[SourceLoc] = field(default_factory=list)
    explanation: str | None = None
    next_step: str | None = None
    limitations: list[str] = field(default_factory=list)  # what the answer could not see
    notes: list[str] = field(default_factory=list)  # what onboard did beside the answer
    commit: str | None = None
    warm: dict[str, bool] = field(default_factory=dict, metadata=spec(key="cache_warm"))

    @property
    def exit_code(self) -> int:
        """0 only for a sure answer: the line the binary or traceback named, or one
        message match of high confidence. Everything else (nothing found, an
        uncertain match, a command that did not fail in torch) is 1."""
        return 0 if self.verdict in (FOUND, MATCHED) and self.confidence in _SURE else 1

    def json_extra(self) -> dict[str, Any]:
        return {"ok": self.exit_code == 0}


_SURE = (confidence.CERTAIN, confidence.HIGH)
