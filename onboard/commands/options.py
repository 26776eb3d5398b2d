"""Every option more than one command takes, each defined once.

As pip's ``cli/cmdoptions.py`` does: each name below is a ``click.option`` with its
flags, type, default and help already given; a command lists the ones it takes
(``@options.workspace()``) and, where the option means something more for it, says
so in its own words (``@options.python(help=...)``). An option only one command
takes is written once, in that command's module.

The parsed values reach the workflow by the same names, as the fields of its
request (``BisectRequest(**parsed)``): a command never lists its options a
second time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import partial
from typing import Any

import click

from onboard.commands._common import PathParam

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

GITHUB_API = "https://api.github.com"


def together(*decorators: Decorator) -> Decorator:
    """Several options as one decorator, listed (and shown in --help) in this order."""

    def apply(func: Callable[..., Any]) -> Callable[..., Any]:
        for decorate in reversed(decorators):
            func = decorate(func)
        return func

    return apply


# --- types -------------------------------------------------------------------------


class Seconds(click.ParamType):
    """A duration in seconds: a finite number greater than 0 (``1.5``, ``600``).

    Every ``--timeout`` takes this, so ``--timeout -1``, ``0``, ``nan`` and ``inf`` are
    bad usage (exit 2) everywhere, not a limit that is already past or never reached.
    """

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import math

        if isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
        else:
            try:
                number = float(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a number of seconds (e.g. 30 or 1.5).", param, ctx)
        if not math.isfinite(number) or number <= 0:
            self.fail(f"{value!r} is not a duration: give a number of seconds above 0.", param, ctx)
        return number


class ShownOnce(click.Option):
    """An option with more than one spelling that --help shows by its first only: the
    others keep old scripts working (``--markdown`` for ``--md``)."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        spellings = self.opts
        self.opts = spellings[:1]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = spellings


# --- callbacks: what Click's types cannot say --------------------------------------


def _interpreter_path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A value with a slash is a path, from the current folder as the shell takes it
    (children run elsewhere: the probe in an empty folder); a bare name stays a name,
    for PATH. Not resolved: a venv's python is a symlink that must stay one."""
    if value and os.sep in value:
        return os.path.abspath(os.path.expanduser(value))
    return value


def http_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
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


def owner_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A GitHub repository as OWNER/NAME."""
    if value is None:
        return value
    owner, _, name = value.partition("/")
    if not owner or not name or "/" in name or any(c.isspace() for c in value):
        raise click.BadParameter(f"{value!r} is not OWNER/NAME (like pytorch/pytorch).")
    return value


def _day(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return value
    import datetime as dt

    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
        raise click.BadParameter(f"{value!r} is not a date; give YYYY-MM-DD (e.g. 2024-01-01).")
    try:
        dt.date.fromisoformat(value.strip())
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a day of the calendar.") from None
    return value.strip()


# --- every command ----------------------------------------------------------------

as_json = partial(
    click.option,
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object on stdout, nothing else.",
)
verbose = partial(click.option, "-v", "--verbose", is_flag=True, help="Show more detail.")


def output() -> Decorator:
    """--json and -v, which every command takes."""
    return together(as_json(), verbose())


# --- how long, and in which form ---------------------------------------------------

# Each command gives its own default (None: no limit) and says what is timed.
timeout = partial(click.option, "--timeout", type=Seconds(), metavar="SECONDS")

# `--markdown` is the spelling harvest had; it still works, unlisted.
md = partial(click.option, "--md", "--markdown", "md", cls=ShownOnce, is_flag=True)

# --- where onboard looks ------------------------------------------------------------

workspace = partial(
    click.option,
    "--workspace",
    "workspace",
    type=PathParam(file_okay=False),
    envvar="ONBOARD_WORKSPACE",
    help="The onboard workspace (default: found by walking up from the current folder).",
)
# A path or a name on PATH (`python3.12`): no existence check here.
python = partial(
    click.option,
    "--python",
    "python",
    type=PathParam(),
    default=None,
    callback=_interpreter_path,
    help="The interpreter whose torch to inspect (default: the one running onboard).",
)
# The help says which checkout, and where it is found, for the command.
repo = partial(click.option, "--repo", type=PathParam(file_okay=False), default=None)

# --- GitHub -------------------------------------------------------------------------

api_url = partial(
    click.option,
    "--api-url",
    default=GITHUB_API,
    show_default=True,
    callback=http_url,
    help="GitHub API root (GitHub Enterprise: https://HOST/api/v3). The token comes from "
    "GH_TOKEN / GITHUB_TOKEN (or gh's hosts.yml) and is never printed.",
)

# --- the user's program: trace and graph ----------------------------------------------


def launch() -> Decorator:
    """How `trace` and `graph` run the program (given after `--` or with -c)."""
    return together(
        click.option(
            "-c",
            "code",
            metavar="CODE",
            default=None,
            help="Run CODE (torch is imported for it) instead of a program after `--`.",
        ),
        timeout(
            default=300.0,
            show_default=True,
            help="Seconds the program may run; then it is stopped with everything it started.",
        ),
        click.option(
            "--workspace-build",
            is_flag=True,
            help="Run it with the workspace's own build (`onboard build`), not the installed "
            "torch.",
        ),
        workspace(),
        python(
            help="The interpreter to run the program with (default: the one named after `--`; "
            "with -c, the one running onboard)."
        ),
    )


# --- past pull requests and reviews: reviews and blame ---------------------------------


def history() -> Decorator:
    """Where `reviews` and `blame` read, how far back, how they ask GitHub, and --md."""
    return together(
        click.option(
            "--since",
            callback=_day,
            metavar="YYYY-MM-DD",
            default=None,
            help="How far back: history is fetched to this day (default: two years before "
            "the checkout's commit) and older pull requests are left out.",
        ),
        click.option(
            "--offline",
            is_flag=True,
            help="Send nothing over the network: answer from git and the cache.",
        ),
        click.option(
            "--refresh",
            is_flag=True,
            help="Ask GitHub again about kept answers (an unchanged one answers 304, free).",
        ),
        api_url(),
        click.option(
            "--upstream-repo",
            "upstream",
            default=None,
            callback=owner_name,
            help="OWNER/NAME whose pull requests these are (default pytorch/pytorch).",
        ),
        repo(
            help="The checkout to read (default: the workspace's, else the git repository "
            "around the current folder)."
        ),
        workspace(),
        md(help="Print Markdown (for a PR description)."),
    )
