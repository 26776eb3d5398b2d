"""What `trace` and `graph` share: the program after `--` and how to run it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

PROGRAM = "onboard.program"


class ProgramCommand(click.Command):
    """Keeps everything after `--` as the program to run, untouched by option parsing."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            ctx.meta[PROGRAM] = args[cut + 1 :]
            args = args[:cut]
        return super().parse_args(ctx, args)


def program() -> list[str] | None:
    found = click.get_current_context().meta.get(PROGRAM)
    return list(found) if found is not None else None


def program_options(func: Callable[..., Any]) -> Callable[..., Any]:
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
        default=300.0,
        show_default=True,
        help="Seconds the program may run; then it is stopped with everything it started.",
    )
    @click.option(
        "--workspace-build",
        is_flag=True,
        help="Run it with the workspace's own build (`onboard build`) instead of the installed torch.",  # noqa: E501
    )
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper
