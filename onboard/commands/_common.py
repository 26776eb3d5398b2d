"""What commands share besides their options (``options.py``): the words after `--`,
the parameter type of every path a command takes, and the reporter."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Protocol

import click

_AFTER_DASHES = "onboard.after_dashes"


class DashDashCommand(click.Command):
    """Keeps everything after `--` apart, untouched by option parsing: a command to run
    (locate, doctor) or arguments for another tool (build's pip). A typo'd option before
    `--` stays an error."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            ctx.meta[_AFTER_DASHES] = args[cut + 1 :]
            args = args[:cut]
        return super().parse_args(ctx, args)


def after_dashes() -> list[str] | None:
    """What followed `--` on the command line (None when there was no `--`)."""
    value = click.get_current_context().meta.get(_AFTER_DASHES)
    return list(value) if value is not None else None


class PathParam(click.Path):
    """``click.Path`` for every path argument and option of every command.

    Refuses, as bad usage (exit 2), what cannot be a path: an empty or
    whitespace-only value (`onboard setup "$WS"` with WS unset would otherwise
    make the current folder a workspace) and a name longer than the file system
    takes. URLs pass through (``--remote``, ``--find-links`` take either).
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("path_type", str)
        super().__init__(**kwargs)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from onboard.pathnames import is_blank, long_name

        if isinstance(value, str):
            if is_blank(value):
                self.fail(
                    f"{value!r} is not a path: it is empty (an unset shell variable, as in "
                    '"$WS", expands to nothing). Give the path itself.',
                    param,
                    ctx,
                )
            problem = long_name(value)
            if problem:
                self.fail(f"{problem}. Give a shorter path.", param, ctx)
        return super().convert(value, param, ctx)


class Finished(Protocol):
    """What a command prints and exits with: every workflow's result."""

    @property
    def exit_code(self) -> int: ...


def finish(result: Finished, view: Callable[..., None], as_json: bool, verbose: bool) -> int:
    """Print ``result`` (its JSON, or ``view(result, console, verbose)``) and return the
    exit code the command ends with."""
    from onboard import cache
    from onboard.console import emit_view

    emit_view(result, view, as_json=as_json, verbose=verbose)
    for note in cache.take_notes():  # on stderr: a --json answer stays alone on stdout
        sys.stderr.write(f"note: {note}\n")
    return int(result.exit_code)


def reporter(as_json: bool, verbose: bool) -> Any:
    from onboard.console import RichReporter

    return RichReporter(verbose=verbose, quiet=as_json)
