"""`onboard reviews` (and `onboard reviews sync`): past pull requests and review
comments on the files you are changing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from onboard.commands import options
from onboard.commands._common import reporter

_SYNC = "onboard.reviews.sync"


class SyncWord(click.Command):
    """`onboard reviews sync [TARGETS]`: a first word `sync` fills the cache instead of
    answering (everything else is the same command; name a file `./sync` if you must)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] == "sync":
            ctx.meta[_SYNC] = True
            args = args[1:]
        return super().parse_args(ctx, args)


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
@options.history()
@options.output()
def reviews(targets: tuple[str, ...], md: bool, as_json: bool, verbose: bool, **parsed: Any) -> int:
    """What PyTorch's reviewers said about the files of an OP or the FILEs named (with
    none: the files your branch changes): the landed pull requests that changed them
    (newest first), who approved them, who may approve them now
    (.github/merge_rules.yaml, specific rules first; CODEOWNERS only notifies), and
    the review comments on those files, by reviewer and thread, each with its diff
    hunk, whether that code is still there at the installed commit, and a link.

    `onboard reviews sync [OP | FILE]...` fetches all of that while online and keeps
    it; everything then works with --offline. Nobody is ever mentioned or asked
    for review.

    Exit status: 0 answered (notes say what was missing), 1 no history, every
    request to GitHub for it failed, or a sync that could not fetch everything
    (what it fetched is kept), 2 bad arguments.

    \b
    Examples:
      onboard reviews trunc
      onboard reviews aten/src/ATen/native/cpu/UnaryOpsKernel.cpp --reviewer ngimel
      onboard reviews sync trunc          # then: onboard reviews trunc --offline
      onboard reviews trunc --md > prior-art.md
    """
    check_modes(as_json, md)
    from onboard.views import reviews as view
    from onboard.workflows.reviews.request import ReviewsRequest
    from onboard.workflows.reviews.run_reviews import reviews as run

    sync = bool(click.get_current_context().meta.get(_SYNC))
    if sync and (parsed["offline"] or md):
        raise click.UsageError("`reviews sync` fetches and keeps: drop --offline and --md.")
    request = ReviewsRequest(targets=targets, sync=sync, **parsed)
    result = run(request, reporter(as_json or md, verbose))
    render = view.sync if sync else view.render
    return show(result, render, md=md, as_json=as_json, verbose=verbose)
