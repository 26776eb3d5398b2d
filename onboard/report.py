"""How workflows tell the user what is happening, without knowing about a terminal.

Workflows take a ``Reporter``; the CLI passes a rich one (progress on
stderr), tests pass ``Reporter()`` which records the messages.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO


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

    def check_started(self, name: str) -> None:
        """One of several checks that run side by side begins."""
        self.messages.append(f"started: {name}")

    def check_finished(self, name: str, status: str, seconds: float) -> None:
        """...and ends: passed / failed / not checked / done, after ``seconds``."""
        self.messages.append(f"{status}: {name} ({seconds:.1f} s)")


# How a LineReporter writes a check's start and end, so that the onboard process
# reading a child's output (`onboard verify` reading `nox -s verify`) can show them.
CHECK_LINE = re.compile(
    r"^onboard: (?P<status>started|passed|failed|not checked|done): (?P<name>.+?)"
    r"(?: \((?P<seconds>\d+(?:\.\d+)?) s\))?$"
)


@dataclass
class LineReporter(Reporter):
    """Plain lines on a stream (a nox session's output): steps and each check's start and end."""

    stream: TextIO = field(default_factory=lambda: sys.stdout)
    output_gone: bool = False  # the reader closed the stream: lines go nowhere now

    def _line(self, text: str) -> None:
        if self.output_gone:
            return
        try:
            self.stream.write(f"onboard: {text}\n")
            self.stream.flush()
        except BrokenPipeError:
            # Not raised into the worker thread reporting: the run is stopped instead,
            # like an interrupt (``outputs``).
            from onboard.proc import outputs

            self.output_gone = True
            outputs.gone()

    def step(self, message: str) -> None:
        super().step(message)
        self._line(message)

    def check_started(self, name: str) -> None:
        super().check_started(name)
        self._line(f"started: {name}")

    def check_finished(self, name: str, status: str, seconds: float) -> None:
        super().check_finished(name, status, seconds)
        self._line(f"{status}: {name} ({seconds:.1f} s)")
