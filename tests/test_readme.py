"""The README stays true: every command has its section, naming every option."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from onboard.cli import COMMANDS, cli

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def _section(name: str) -> str:
    match = re.search(rf"^### onboard {re.escape(name)}\b.*?(?=^### |^## |\Z)", README, re.S | re.M)
    assert match, f"README has no `### onboard {name}` section"
    return match.group(0)


# Documented once, for every command, under "The path".
COMMON = {"--json", "--verbose", "--workspace"}


def _options(command: click.Command) -> set[str]:
    found = set()
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            found.update(o for o in param.opts if o.startswith("--") and o != "--help")
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            found |= _options(sub)
    return found


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_is_in_the_commands_section(name: str) -> None:
    ctx = click.Context(cli)
    command = cli.get_command(ctx, name)
    assert command is not None
    section = _section(name)
    missing = sorted(o for o in _options(command) - COMMON if o not in section)
    assert not missing, f"`onboard {name}` options missing from its README section: {missing}"


def test_readme_names_the_test_command_ci_runs() -> None:
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert "nox -s tests" in README and "nox -s tests" in ci
    for common in COMMON:
        assert f"`{common}" in _path_section() or common == "--verbose"


def _path_section() -> str:
    match = re.search(r"^## The path.*?(?=^## )", README, re.S | re.M)
    assert match
    return match.group(0)
