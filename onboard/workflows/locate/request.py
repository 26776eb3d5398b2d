"""What `onboard locate` was asked (``LocateRequest``, as the command parsed it) and
what it read from that (``LocateInput``): a command to run, a message, or a pasted
traceback or log."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from onboard.errors import BadInput
from onboard.workflows.locate.result import COMMAND, MESSAGE, STDIN
from onboard.workflows.program import ProgramOptions

RUN_TIMEOUT = 600.0

_USAGE = (
    'Run `onboard locate -- python repro.py`, `onboard locate "MESSAGE"` or '
    "`some_command 2>&1 | onboard locate -`."
)


@dataclass(frozen=True, kw_only=True)
class LocateRequest(ProgramOptions):
    """`onboard locate`: exactly one of ``command`` (argv to run, for at most ``timeout``
    seconds), ``message`` (an error message; ``-`` reads a traceback or log from stdin)
    or ``text`` (a traceback or log). ``refresh`` rebuilds the cached check index."""

    message: str | None = None
    text: str | None = None
    refresh: bool = False
    timeout: float = RUN_TIMEOUT


@dataclass(frozen=True)
class LocateInput:
    """``mode``: COMMAND (``argv`` is run, for ``timeout`` seconds), MESSAGE or STDIN
    (``text`` is read)."""

    mode: str
    argv: tuple[str, ...] = ()
    text: str = ""
    timeout: float = RUN_TIMEOUT

    @classmethod
    def read(cls, request: LocateRequest) -> LocateInput:
        """The one thing ``request`` gave (stdin read for a message of ``-``), checked."""
        command, message, text = _one_of(request)
        if command is not None:
            argv = list(command)
            if not argv:
                raise BadInput(
                    "No command was given after `--`.",
                    next_step="Run `onboard locate -- python repro.py`.",
                )
            if request.python and argv[0] in ("python", "python3"):
                argv[0] = request.python
            return cls(COMMAND, argv=tuple(argv), timeout=request.timeout)
        raw = message if message is not None else text
        assert raw is not None
        if not raw.strip():
            raise BadInput(
                "The message is empty." if message is not None else "Nothing was read from stdin.",
                next_step='Pass the error text (`onboard locate "mat1 and mat2 shapes cannot be '
                'multiplied (2x3 and 4x5)"`) or pipe a traceback into `onboard locate -`.',
            )
        return cls(MESSAGE if message is not None else STDIN, text=raw, timeout=request.timeout)


def _one_of(request: LocateRequest) -> tuple[list[str] | None, str | None, str | None]:
    """The command, message or text to locate (stdin read for ``-``); exactly one."""
    command = list(request.command) if request.command is not None else None
    message, text = request.message, request.text
    if command is not None and message is not None:
        raise BadInput(
            f"Both a message ({message!r}) and a command after `--` were given.",
            next_step="Run either `onboard locate -- python repro.py` or "
            '`onboard locate "MESSAGE"`.',
        )
    if message == "-":
        if sys.stdin.isatty():
            raise BadInput(
                "`onboard locate -` reads a traceback from stdin, but nothing is piped in.",
                next_step="Pipe the output in (`python repro.py 2>&1 | onboard locate -`) or "
                'pass the message itself: `onboard locate "MESSAGE"`.',
            )
        message, text = None, sys.stdin.read()
    given = [x for x in (command, message, text) if x is not None]
    if not given:
        raise BadInput("Nothing to locate: no command, message or `-` was given.", next_step=_USAGE)
    if len(given) != 1:
        raise BadInput(
            "Give exactly one of: a command after `--`, a message, or `-` to read a traceback "
            "from stdin.",
            next_step=_USAGE,
        )
    return command, message, text
