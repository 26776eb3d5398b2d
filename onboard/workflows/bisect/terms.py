"""git bisect's names for the two states (``git bisect terms``), and which one a verdict marks."""

from __future__ import annotations

from dataclasses import dataclass

from onboard.workflows.bisect.runner import PASS, SKIP


@dataclass(frozen=True)
class Terms:
    """git's names for the two states, and which one the repro passes in."""

    old: str = "good"
    new: str = "bad"

    @property
    def fix(self) -> bool:
        # Custom terms are for finding a fix: the repro fails at the old bound
        # and passes at the new one (`--term-old broken --term-new fixed`).
        return (self.old, self.new) != ("good", "bad")

    @property
    def old_state(self) -> str:
        return "fails" if self.fix else "passes"

    def mark(self, verdict: str) -> str:
        if verdict == SKIP:
            return "skip"
        passes = verdict == PASS
        return (
            (self.new if passes else self.old) if self.fix else (self.old if passes else self.new)
        )

    def git_terms(self) -> tuple[str | None, str | None]:
        return (self.old, self.new) if self.fix else (None, None)
