"""The command line: parse, call a workflow, print its result. Nothing else.

Commands load lazily so that ``onboard --help`` imports neither torch nor
GitPython nor PyGithub (measured by ``nox -s bench``).
"""

from __future__ import annotations

import difflib
import importlib
from typing import NamedTuple

import click

from onboard import __version__


class CommandInfo(NamedTuple):
    """Where a command lives ("module:attribute") and its line in `onboard --help`.

    As pip's ``commands_dict``: the summary is here, not taken from the command's
    docstring, so that listing the commands imports none of them.
    """

    target: str
    summary: str


# Each module imports only click at top level. A summary fits an 80-column
# `onboard --help` (tests/test_cli_help.py).
COMMANDS: dict[str, CommandInfo] = {
    "ab": CommandInfo(
        "onboard.commands.ab:ab", "Run a script on two torches and compare, with its noise."
    ),
    "bisect": CommandInfo(
        "onboard.commands.bisect:bisect", "Find the commit or release where a repro breaks."
    ),
    "blame": CommandInfo(
        "onboard.commands.blame:blame", "Who last changed these lines, in which PR, and its review."
    ),
    "build": CommandInfo(
        "onboard.commands.build:build", "Build the workspace's checkout, then check it."
    ),
    "compile": CommandInfo(
        "onboard.commands.compile:compile_", "What torch.compile did: breaks, recompiles, cost."
    ),
    "memory": CommandInfo(
        "onboard.commands.memory:memory", "Memory that grows every step: its line and holder."
    ),
    "doctor": CommandInfo(
        "onboard.commands.doctor:doctor", "What torch is here, and what is wrong with it."
    ),
    "harvest": CommandInfo(
        "onboard.commands.harvest:harvest", "TODO/FIXME comments, ranked as first tasks."
    ),
    "locate": CommandInfo(
        "onboard.commands.locate:locate", "From an error to the PyTorch line behind it."
    ),
    "where": CommandInfo(
        "onboard.commands.where:where", "Where an op lives, from Python down to its kernel."
    ),
    "tests": CommandInfo(
        "onboard.commands.tests:tests_", "Which of PyTorch's tests cover my change; run them."
    ),
    "trace": CommandInfo(
        "onboard.commands.trace:trace", "The ops a program ran, nested, with their kernels."
    ),
    "graph": CommandInfo(
        "onboard.commands.graph:graph", "The autograd graph a program leaves, to its formulas."
    ),
    "new-op": CommandInfo(
        "onboard.commands.new_op:new_op", "Scaffold a structured ATen op on a new branch."
    ),
    "pr": CommandInfo("onboard.commands.pr:pr", "The branch as a pull request in PyTorch's form."),
    "recover": CommandInfo(
        "onboard.commands.recover:recover", "Undo what an interrupted run left; keep the rest."
    ),
    "reviews": CommandInfo(
        "onboard.commands.reviews:reviews", "Past pull requests and review comments on these files."
    ),
    "setup": CommandInfo(
        "onboard.commands.setup:setup", "A workspace: PyTorch's source at the installed commit."
    ),
    "stuck": CommandInfo(
        "onboard.commands.stuck:stuck", "Where each thread of a hung program waits, and why."
    ),
    "verify": CommandInfo(
        "onboard.commands.verify:verify", "Check the workspace (its `nox -s verify`)."
    ),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        info = COMMANDS.get(cmd_name)
        if info is None:
            return None
        module_name, attr = info.target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        command.short_help = info.summary
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name in COMMANDS or name.startswith("-") or ctx.resilient_parsing:
            return super().resolve_command(ctx, args)
        close = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        ctx.fail(f"No such command {name!r}.{hint}")

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The list in `onboard --help`, from COMMANDS: no command module is imported."""
        rows = [(name, COMMANDS[name].summary) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="onboard")
def cli() -> None:
    """From "I use PyTorch" to reading, debugging and changing PyTorch's source,
    for the exact torch you have installed.

    Start with `onboard doctor`, then `onboard setup DIR --from-wheel` (offline)
    or `onboard setup DIR` (a checkout of the installed commit from GitHub).
    """
