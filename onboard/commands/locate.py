"""`onboard locate`: from an error to the PyTorch line that raised it."""

from __future__ import annotations

import sys
from typing import Any

import click

from onboard.commands._common import (
    DashDashCommand,
    after_dashes,
    common_options,
    python_option,
    reporter,
    workspace_option,
)


@click.command("locate", cls=DashDashCommand)
@click.argument("message", required=False)
@click.option(
    "--timeout",
    type=float,
    default=600.0,
    show_default=True,
    help="Seconds the command after `--` may run.",
)
@click.option("--refresh", is_flag=True, help="Rebuild the cached check index.")
@workspace_option
@python_option
@common_options
def locate(
    message: str | None,
    timeout: float,
    refresh: bool,
    workspace: str | None,
    python: str | None,
    as_json: bool,
    verbose: bool,
) -> int:
    """Find the PyTorch source line behind an error.

    \b
    onboard locate -- python repro.py     run it; walk the raised error down to the check
    onboard locate "MESSAGE"              find the TORCH_CHECK / raise sites that print it
    some_command 2>&1 | onboard locate -  read a traceback or log from stdin

    Exit status: 0 for a sure answer (the line the binary or the traceback named, or
    one message match of high confidence); 1 when nothing matched or the answer is
    uncertain (the candidates are shown with their confidence and blind spots).
    """
    from onboard.commands._common import finish
    from onboard.errors import BadInput
    from onboard.views import locate as view
    from onboard.workflows.locate import locate as run_locate

    command = after_dashes()
    kwargs: dict[str, Any] = {}
    if command is not None:
        if message is not None:
            raise BadInput(
                f"Both a message ({message!r}) and a command after `--` were given.",
                next_step="Run either `onboard locate -- python repro.py` or "
                '`onboard locate "MESSAGE"`.',
            )
        kwargs["command"] = command
    elif message == "-":
        stdin = sys.stdin  # click.get_text_stream is typed differently across click 8.x
        if stdin.isatty():
            raise BadInput(
                "`onboard locate -` reads a traceback from stdin, but nothing is piped in.",
                next_step="Pipe the output in (`python repro.py 2>&1 | onboard locate -`) or "
                'pass the message itself: `onboard locate "MESSAGE"`.',
            )
        kwargs["text"] = stdin.read()
    elif message is not None:
        kwargs["message"] = message
    else:
        raise BadInput(
            "Nothing to locate: no command, message or `-` was given.",
            next_step='Run `onboard locate -- python repro.py`, `onboard locate "MESSAGE"` or '
            "`some_command 2>&1 | onboard locate -`.",
        )
    result = run_locate(
        workspace=workspace,
        python=python,
        refresh=refresh,
        timeout=timeout,
        reporter=reporter(as_json, verbose),
        **kwargs,
    )
    return finish(result, view.render, as_json, verbose)
