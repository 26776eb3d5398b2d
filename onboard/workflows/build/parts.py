"""The pieces a build plan is made of: a variable with its reason, a check, one step's share.

Each step of the plan (build type, CUDA, MAX_JOBS, compiler cache, version,
requirements, pre-flight) takes what it needs and returns a ``Part``: the
variables it sets, in order, and what it noted or checked. ``plan()`` joins
the parts in the order of its steps.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from onboard.jsonable import spec


class _Named(Protocol):
    @property
    def name(self) -> str: ...


def by_name(items: Iterable[_Named]) -> dict[str, Any]:
    """Choices and checks as JSON shows them: an object keyed by their names."""
    return {c.name: c for c in items}


@dataclass(frozen=True)
class Choice:
    """One value the plan sets (``value`` None: the variable is removed), and why."""

    name: str = field(metadata=spec(omit=True))  # the key it is listed under
    value: str | None
    reason: str


@dataclass(frozen=True)
class Check:
    """One pre-flight check: what was found, and for a failure the fix."""

    name: str = field(metadata=spec(omit=True))  # the key it is listed under
    ok: bool
    detail: str
    fix: str = field(default="", metadata=spec(empty=None))


@dataclass(frozen=True)
class Part:
    """One step's share of the plan: the variables it sets (in order), its notes and checks."""

    env: tuple[Choice, ...] = ()
    notes: tuple[str, ...] = ()
    checks: tuple[Check, ...] = ()
