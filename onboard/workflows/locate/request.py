"""What `onboard locate` was given to read: a command to run, a message, or a pasted
traceback or log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from onboard.errors import BadInput
from onboard.workflows.locate.result import COMMAND, MESSAGE, STDIN

RUN_TIMEOUT = 600.0


def check_one_input(*given: object) -> None:
    """Exactly one of a command, a message or a pasted log."""
    if len([x for x in given if x is not None]) != 1:
        raise BadInput(
            "Give exactly one of: a command after `--`, a message, or `-` to read a traceback "
            "from stdin.",
            next_step='Run `onboard locate -- python repro.py`, `onboard locate "MESSAGE"` or '
            "`some_command 2>&1 | onboard locate -`.",
        )


@dataclass(frozen=True)
class LocateRequest:
    """``mode``: COMMAND (``argv`` is run, for ``timeout`` seconds), MESSAGE or STDIN
    (``text`` is read)."""

    mode: str
    argv: tuple[str, ...] = ()
    text: str = ""
    timeout: float = RUN_TIMEOUT

    @classmethod
    def read(
        cls,
        *,
        command: Sequence[str] | None,
        message: str | None,
        text: str | None,
        python: str | None,
        timeout: float,
    ) -> LocateRequest:
        """One of ``command``, ``message`` or ``text`` (``check_one_input``), checked."""
        if command is not None:
            argv = list(command)
            if not argv:
                raise BadInput(
                    "No command was given after `--`.",
                    next_step="Run `onboard locate -- python repro.py`.",
                )
            if python and argv[0] in ("python", "python3"):
                argv[0] = python
            return cls(COMMAND, argv=tuple(argv), timeout=timeout)
        raw = message if message is not None else text
        assert raw is not None
        if not raw.strip():
            raise BadInput(
                "The message is empty." if message is not None else "Nothing was read from stdin.",
                next_step='Pass the error text (`onboard locate "mat1 and mat2 shapes cannot be '
                'multiplied (2x3 and 4x5)"`) or pipe a traceback into `onboard locate -`.',
            )
        return cls(MESSAGE if message is not None else STDIN, text=raw, timeout=timeout)
