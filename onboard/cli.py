"""The command line: parse, call a workflow, print its result. Nothing else.

Commands load lazily so that ``onboard --help`` imports neither torch nor
GitPython nor PyGithub (measured by ``nox -s bench``).
"""

from __future__ import annotations

import importlib

import click

from onboard import __version__

# name -> "module:attribute"; each module imports only click at top level.
COMMANDS: dict[str, str] = {
    "ab": "onboard.commands.ab:ab",
    "bisect": "onboard.commands.bisect:bisect",
    "blame": "onboard.commands.blame:blame",
    "build": "onboard.commands.build:build",
    "doctor": "onboard.commands.doctor:doctor",
    "harvest": "onboard.commands.harvest:harvest",
    "locate": "onboard.commands.locate:locate",
    "where": "onboard.commands.where:where",
    "trace": "onboard.commands.trace:trace",
    "graph": "onboard.commands.graph:graph",
    "new-op": "onboard.commands.new_op:new_op",
    "pr": "onboard.commands.pr:pr",
    "recover": "onboard.commands.recover:recover",
    "reviews": "onboard.commands.reviews:reviews",
    "setup": "onboard.commands.setup:setup",
    "stuck": "onboard.commands.stuck:stuck",
    "verify": "onboard.commands.verify:verify",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="onboard")
def cli() -> None:
    """From "I use PyTorch" to reading, debugging and changing PyTorch's source,
    for the exact torch you have installed.

    Start with `onboard doctor`, then `onboard setup DIR --from-wheel` (offline)
    or `onboard setup DIR` (a checkout of the installed commit from GitHub).
    """
