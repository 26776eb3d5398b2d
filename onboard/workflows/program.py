"""The user's program, as a command was asked to run it (trace, graph, stuck, locate,
doctor: ``onboard COMMAND -- python repro.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class ProgramOptions:
    """``command``: the words after `--` (None when there was no `--`);
    ``python``: the interpreter given with --python (None: the one the command names,
    else the one running onboard); ``workspace``: the workspace given with --workspace
    (None: found by walking up from the current folder).

    Each workflow's request adds what else it was asked (``TraceRequest`` ...)."""

    command: Sequence[str] | None = None
    python: str | None = None
    workspace: str | None = None


def run_through(
    argv: list[str],
    env: dict[str, str],
    timeout: float | None,
    quiet_stdout: bool,
    notes: list[str],
    what: str,
) -> int:
    """Run a program whose output goes straight to the terminal (onto stderr with
    ``quiet_stdout``: a --json answer stays alone on stdout), stopped after ``timeout``
    seconds (then ``what`` is said to be read up to then, in ``notes``), with what it
    left running stopped and named in ``notes``; its exit status (`compile`, `memory`)."""
    import time

    from onboard import proc

    child = proc.Passthrough(argv, stdout_to_stderr=quiet_stdout, extra_env=env)
    deadline = time.monotonic() + timeout if timeout else None
    try:
        while child.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                notes.append(
                    f"The program ran past --timeout {timeout:g} s and was stopped; {what} "
                    "up to then is read."
                )
                break
            time.sleep(0.02)
    finally:
        code = child.stop()
        left = child.end()
        if left:
            notes.append(proc.left_note(left, "the program"))
    return code


def passed_through(code: int | None) -> int:
    """onboard's exit status for a program's own: itself, 128+N when signal N ended it,
    1 when it never ran."""
    if code is None:
        return 1
    return 128 - code if code < 0 else code
