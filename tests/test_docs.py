"""The README and docs/ stay true.

- docs/commands.md is exactly what the commands say (`nox -s docs` writes it).
- Every command has a guide page (docs/guide/NAME.md) naming every option.
- The README is a landing page: short, its links lead somewhere, its
  commands parse, and it names the test command CI runs.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from fixtures.suggestions import parse_error

from onboard import cli_reference
from onboard.cli import COMMANDS, cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
GUIDES = ROOT / "docs" / "guide"

# Documented once, for every command, in the reference's header.
COMMON = {"--json", "--verbose", "--workspace"}


def _options(command: click.Command) -> set[str]:
    """The option names --help shows (an old spelling kept for scripts is not shown)."""
    from onboard.commands.options import ShownOnce

    found = set()
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            opts = param.opts[:1] if isinstance(param, ShownOnce) else param.opts
            found.update(o for o in opts if o.startswith("--") and o != "--help")
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            found |= _options(sub)
    return found


def test_the_command_reference_is_what_the_commands_say() -> None:
    written = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    assert written == cli_reference.render(), "docs/commands.md is stale: run `nox -s docs`"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_is_in_the_commands_guide(name: str) -> None:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    guide = GUIDES / f"{name}.md"
    assert guide.is_file(), f"`onboard {name}` has no guide page {guide}"
    text = guide.read_text(encoding="utf-8")
    missing = sorted(o for o in _options(command) - COMMON if o not in text)
    assert not missing, f"`onboard {name}` options missing from {guide.name}: {missing}"


def test_the_readme_is_a_landing_page() -> None:
    assert len(README.splitlines()) <= 250
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        assert (ROOT / target).exists(), f"the README links to {target}, which is not there"


def test_every_command_the_readme_shows_parses() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    shown = [
        line.split("#", 1)[0].strip()
        for block in blocks
        for line in block.splitlines()
        if line.strip().startswith("onboard ")
    ]
    assert len(shown) >= 4
    assert [(c, parse_error(c)) for c in shown if parse_error(c)] == []


def test_the_readme_names_the_test_command_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "nox -s tests" in README and "nox -s tests" in ci
