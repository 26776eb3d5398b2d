"""What commands share: --json and -v, --workspace, --python, the words after `--`,
and the parameter type of every path a command takes."""

from __future__ import annotations

import functools
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


def common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    @click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON object on stdout, nothing else."
    )
    @click.option("-v", "--verbose", is_flag=True, help="Show more detail.")
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper


def workspace_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--workspace",
        "workspace",
        type=PathParam(file_okay=False),
        envvar="ONBOARD_WORKSPACE",
        help="The onboard workspace (default: found by walking up from the current folder).",
    )(func)


_PYTHON_HELP = "The interpreter whose torch to inspect (default: the one running onboard)."


def python_option(func: Callable[..., Any] | None = None, *, help: str = _PYTHON_HELP) -> Any:
    """``@python_option`` or ``@python_option(help=...)`` where the interpreter
    does more than get inspected (bisect runs the repro with it)."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        # A path or a name on PATH (`python3.12`): no existence check here.
        return click.option(
            "--python", "python", type=PathParam(), default=None, help=help,
            callback=_interpreter_path,
        )(f)  # fmt: skip

    return decorate(func) if func is not None else decorate


def _interpreter_path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A value with a slash is a path, from the current folder as the shell takes it
    (children run elsewhere: the probe in an empty folder); a bare name stays a name,
    for PATH. Not resolved: a venv's python is a symlink that must stay one."""
    import os

    if value and os.sep in value:
        return os.path.abspath(os.path.expanduser(value))
    return value


class Finished(Protocol):
    """What a command prints and exits with: every workflow's result."""

    @property
    def exit_code(self) -> int: ...

    def to_json(self) -> dict[str, Any]: ...


def finish(result: Finished, view: Callable[..., None], as_json: bool, verbose: bool) -> int:
    """Print ``result`` (its JSON, or ``view(result, console, verbose)``) and return the
    exit code the command ends with."""
    from onboard.console import emit_view

    emit_view(result, view, as_json=as_json, verbose=verbose)
    return int(result.exit_code)


def reporter(as_json: bool, verbose: bool) -> Any:
    from onboard.console import RichReporter

    return RichReporter(verbose=verbose, quiet=as_json)


def check_api_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--api-url must be an http(s) URL with a host (PyGithub crashes on anything else)."""
    from urllib.parse import urlsplit

    if value is None:
        return value
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise click.BadParameter(
            f"{value!r} is not an http(s) URL; use https://api.github.com or, for GitHub "
            "Enterprise, https://HOST/api/v3.",
        )
    return value
