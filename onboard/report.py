"""How workflows tell the user what is happening, without knowing about a terminal.

Workflows take a ``Reporter``; the CLI passes a rich one (progress on
stderr), tests pass ``Reporter()`` which records the messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


class Task:
    """One progress bar: ``update(completed=, total=, detail=)``."""

    def update(
        self, *, completed: float | None = None, total: float | None = None, detail: str = ""
    ) -> None:
        return None


@dataclass
class Reporter:
    """The silent reporter; it keeps the messages so tests can read them."""

    messages: list[str] = field(default_factory=list)
    verbose: bool = False

    def step(self, message: str) -> None:
        """A phase begins ("fetching cf30153 from origin")."""
        self.messages.append(message)

    def detail(self, message: str) -> None:
        """Shown with -v only."""
        self.messages.append(message)

    @contextmanager
    def task(self, description: str, total: float | None = None) -> Iterator[Task]:
        self.messages.append(description)
        yield Task()
