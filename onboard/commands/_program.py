"""What `trace` and `graph` share: how to run the program (given after `--` or with -c)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import click

from onboard.commands._common import (
    after_dashes,
    finish,
    python_option,
    reporter,
    workspace_option,
)


@dataclass(frozen=True)
class ProgramOptions:
    """How to run the program: what program_options parsed (the program itself is
    the DashDashCommand's words after `--`)."""

    code: str | None
    timeout: float
    workspace_build: bool
    workspace: str | None
    python: str | None


def program_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """-c, --timeout, --workspace-build, --workspace and --python, handed to the
    command as one ``program: ProgramOptions``."""

    @click.option(
        "-c",
        "code",
        metavar="CODE",
        default=None,
        help="Run CODE (torch is imported for it) instead of a program after `--`.",
    )
    @click.option(
        "--timeout",
        type=float,
        metavar="SECONDS",
        default=300.0,
        show_default=True,
        help="Seconds the program may run; then it is stopped with everything it started.",
    )
    @click.option(
        "--workspace-build",
        is_flag=True,
        help="Run it with the workspace's own build (`onboard build`), not the installed torch.",
    )
    @workspace_option
    @python_option(
        help="The interpreter to run the program with (default: the one named after `--`; "
        "with -c, the one running onboard)."
    )
    @functools.wraps(func)
    def wrapper(
        *args: Any,
        code: str | None,
        timeout: float,
        workspace_build: bool,
        workspace: str | None,
        python: str | None,
        **kwargs: Any,
    ) -> Any:
        program = ProgramOptions(code, timeout, workspace_build, workspace, python)
        return func(*args, program=program, **kwargs)

    return wrapper


def run_program(
    workflow: Callable[..., Any],
    view: Callable[..., None],
    program: ProgramOptions,
    as_json: bool,
    verbose: bool,
    **options: Any,
) -> int:
    """Run the program after `--` (or -c) under ``workflow`` with the command's own
    ``options``, print its result with ``view``, and exit 1 when the program itself
    failed."""
    result = workflow(
        after_dashes(), reporter=reporter(as_json, verbose), **asdict(program), **options
    )
    return finish(result, view, as_json, verbose)
