"""The pieces a build plan is made of: a variable with its reason, a check, one step's share.

Each step of the plan (build type, CUDA, MAX_JOBS, compiler cache, version,
requirements, pre-flight) takes what it needs and returns a ``Part``: the
variables it sets, in order, and what it noted or checked. ``plan()`` joins
the parts in the order of its steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Choice:
    """One value the plan sets (``value`` None: the variable is removed), and why."""

    name: str
    value: str | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "reason": self.reason}


@dataclass(frozen=True)
class Check:
    """One pre-flight check: what was found, and for a failure the fix."""

    name: str
    ok: bool
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "detail": self.detail, "fix": self.fix or None}


@dataclass(frozen=True)
class Part:
    """One step's share of the plan: the variables it sets (in order), its notes and checks."""

    env: tuple[Choice, ...] = ()
    notes: tuple[str, ...] = ()
    checks: tuple[Check, ...] = ()
