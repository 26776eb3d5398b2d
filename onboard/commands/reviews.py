"""`onboard reviews` (and `onboard reviews sync`): past pull requests and review
comments on the files you are changing."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import click

from onboard.commands._common import (
    PathParam,
    check_api_url,
    common_options,
    reporter,
    workspace_option,
)

_SYNC = "onboard.reviews.sync"


class SyncWord(click.Command):
    """`onboard reviews sync [TARGETS]`: a first word `sync` fills the cache instead of
    answering (everything else is the same command; name a file `./sync` if you must)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] == "sync":
            ctx.meta[_SYNC] = True
            args = args[1:]
        return super().parse_args(ctx, args)


def check_since(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
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


def check_owner_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return value
    owner, _, name = value.partition("/")
    if not owner or not name or "/" in name or any(c.isspace() for c in value):
        raise click.BadParameter(f"{value!r} is not OWNER/NAME (like pytorch/pytorch).")
    return value


@dataclass(frozen=True)
class HistoryOptions:
    """Where to read, how far back, and how to ask GitHub: what ``history_options``
    parsed, handed to the workflow as keyword arguments (``asdict``)."""

    workspace: str | None
    repo: str | None
    since: str | None
    offline: bool
    refresh: bool
    api_url: str
    upstream: str | None


def history_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """What `reviews` and `blame` share, handed to the command as one
    ``history: HistoryOptions`` (and ``md``)."""

    @functools.wraps(func)
    def wrapper(
        *args: Any,
        workspace: str | None,
        repo: str | None,
        since: str | None,
        offline: bool,
        refresh: bool,
        api_url: str,
        upstream: str | None,
        **kwargs: Any,
    ) -> Any:
        history = HistoryOptions(workspace, repo, since, offline, refresh, api_url, upstream)
        return func(*args, history=history, **kwargs)

    options: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
        click.option(
            "--since",
            callback=check_since,
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
        click.option(
            "--api-url",
            default="https://api.github.com",
            show_default=True,
            callback=check_api_url,
            help="GitHub API root (GitHub Enterprise: https://HOST/api/v3). The token "
            "comes from GH_TOKEN / GITHUB_TOKEN (or gh's hosts.yml) and is never printed.",
        ),
        click.option(
            "--upstream-repo",
            "upstream",
            default=None,
            callback=check_owner_name,
            help="OWNER/NAME whose pull requests these are (default pytorch/pytorch).",
        ),
        click.option(
            "--repo",
            type=PathParam(file_okay=False),
            default=None,
            help="The checkout to read (default: the workspace's, else the git repository "
            "around the current folder).",
        ),
        workspace_option,
        click.option("--md", is_flag=True, help="Print Markdown (for a PR description)."),
    ]
    decorated: Callable[..., Any] = wrapper
    for option in reversed(options):
        decorated = option(decorated)
    return decorated


def check_modes(as_json: bool, md: bool) -> None:
    if as_json and md:
        raise click.UsageError("--json and --md each print the whole answer: pick one.")


def show(result: Any, view: Callable[..., None], *, md: bool, as_json: bool, verbose: bool) -> int:
    """Print the answer (Markdown, JSON or text drawn by ``view``); its exit code."""
    from onboard.commands._common import finish

    if md:
        click.echo(result.markdown(), nl=False)
        return int(result.exit_code)
    return finish(result, view, as_json, verbose)


@click.command("reviews", cls=SyncWord)
@click.argument("targets", nargs=-1, metavar="[OP | FILE]...")
@click.option(
    "--reviewer", metavar="LOGIN", default=None, help="Only what this reviewer said and approved."
)
@click.option(
    "--limit",
    type=click.IntRange(min=1, max=200),
    default=20,
    show_default=True,
    help="At most this many pull requests (each costs two API requests once).",
)
@click.option(
    "--base", default=None, help="With no OP or FILE: the branch's base (default origin/main)."
)
@history_options
@common_options
def reviews(
    targets: tuple[str, ...],
    reviewer: str | None,
    limit: int,
    base: str | None,
    history: HistoryOptions,
    md: bool,
    as_json: bool,
    verbose: bool,
) -> int:
    """What PyTorch's reviewers said about the files of an OP or the FILEs named (with
    none: the files your branch changes): the landed pull requests that changed them
    (newest first), who approved them, who may approve them now
    (.github/merge_rules.yaml, specific rules first; CODEOWNERS only notifies), and
    the review comments on those files, by reviewer and thread, each with its diff
    hunk, whether that code is still there at the installed commit, and a link.

    `onboard reviews sync [OP | FILE]...` fetches all of that while online and keeps
    it; everything then works with --offline. Nobody is ever mentioned or asked
    for review.

    \b
    Examples:
      onboard reviews trunc
      onboard reviews aten/src/ATen/native/cpu/UnaryOpsKernel.cpp torch/_refs/__init__.py
      onboard reviews --reviewer ngimel --since 2024-01-01 --json
      onboard reviews sync trunc          # then: onboard reviews trunc --offline
      onboard reviews trunc --md > prior-art.md

    Exit status: 0 answered (notes say what was missing), 1 no history or a sync
    that could not fetch everything (what it fetched is kept), 2 bad arguments.
    """
    check_modes(as_json, md)
    from onboard.views import reviews as view

    if click.get_current_context().meta.get(_SYNC):
        if history.offline or md:
            raise click.UsageError("`reviews sync` fetches and keeps: drop --offline and --md.")
        from onboard.workflows.reviews.run_reviews import sync

        options = {k: v for k, v in asdict(history).items() if k != "offline"}
        synced = sync(
            list(targets), limit=limit, base=base, reporter=reporter(as_json, verbose), **options
        )
        return show(synced, view.sync, md=False, as_json=as_json, verbose=verbose)
    from onboard.workflows.reviews.run_reviews import reviews as run

    result = run(
        list(targets), reviewer=reviewer, limit=limit, base=base,
        reporter=reporter(as_json or md, verbose), **asdict(history),
    )  # fmt: skip
    return show(result, view.render, md=md, as_json=as_json, verbose=verbose)
