"""What commands share: --json and -v, --workspace, --python, and the words after `--`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click


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
        type=click.Path(file_okay=False, path_type=str),
        envvar="ONBOARD_WORKSPACE",
        help="The onboard workspace (default: found by walking up from the current folder).",
    )(func)


_PYTHON_HELP = "The interpreter whose torch to inspect (default: the one running onboard)."


def python_option(func: Callable[..., Any] | None = None, *, help: str = _PYTHON_HELP) -> Any:
    """``@python_option`` or ``@python_option(help=...)`` where the interpreter
    does more than get inspected (bisect runs the repro with it)."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        return click.option("--python", "python", type=str, default=None, help=help)(f)

    return decorate(func) if func is not None else decorate


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


_AFTER_DASH = "onboard.after_dash"


class DashCommand(click.Command):
    """Keeps everything after the first `--` (a program to run, pip's arguments) untouched
    by option parsing: a typo'd option before it is an error, never passed on."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            ctx.meta[_AFTER_DASH] = args[cut + 1 :]
            args = args[:cut]
        return super().parse_args(ctx, args)


def after_dash() -> list[str] | None:
    """The words after `--` of the running DashCommand; None when there was no `--`."""
    found = click.get_current_context().meta.get(_AFTER_DASH)
    return list(found) if found is not None else None
